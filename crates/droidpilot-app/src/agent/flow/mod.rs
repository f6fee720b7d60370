//! The `flow` agent: runs a Maestro flow as an ordinary task, with Maestro's semantics,
//! no model. The design is the one `droidpilot_maestro`'s crate doc sets out.
//!
//! It is a sans-I/O interpreter: each call to `next` reads the observed screen, walks
//! the flow (a stack of `Frame`s: the flow's commands, a `runFlow`, a `repeat`, a
//! `retry`, an `onFlowComplete`) through the control flow and JavaScript that need no
//! device, and returns the next device action, so every leaf command is one or more
//! ordinary task steps (stored, streamed, exported) whose reasoning names the flow file,
//! line and command. Control flow, `${…}`, `evalScript` / `runScript` / `assertTrue`
//! and `copyTextFrom` run inside the agent (`droidpilot_maestro::expr`).
//!
//! Maestro's waits are one step each, done on the device by the `flow_check` custom
//! action (`run::flow_check`): a command whose element is not on the screen waits for it
//! up to Maestro's lookup timeout (17 s, 7 s when `optional`) by re-reading the screen;
//! `assertNotVisible` waits as long for it to go; `extendedWaitUntil` uses its own
//! timeout; `waitForAnimationToEnd` and `waitToSettleTimeoutMs` wait until two reads in a
//! row are equal. Elements are matched with Maestro's selector semantics
//! (`droidpilot_maestro::selector`), never the script matcher.
//!
//! A failure names the file, line and command; `optional: true` turns it into a warning,
//! `retry` reruns its commands, and `onFlowComplete` runs after a failure too. The task
//! finishes successfully only when the flow ran to its end.

pub mod ai;
pub mod program;
pub mod recover;
mod step;

use std::collections::BTreeMap;

use async_trait::async_trait;
use droidpilot_maestro::ast::{Command, CommandKind, Condition, EnvVar, FlowSource, Platform};
use droidpilot_maestro::expr::Scope;

use super::script::recover::Aitm;
use super::{Agent, AgentContext, AgentError, Decision, Meter};
use crate::domain::{Action, ReplayInfo};
use crate::llm::PriceTable;
use crate::run::flow_check::{self, Until};
use program::Program;

/// Maestro's element lookup timeout, and its timeout for an `optional` command and a
/// `when: visible` condition.
pub const LOOKUP_MS: u64 = 17_000;
pub const OPTIONAL_LOOKUP_MS: u64 = 7_000;
/// `waitForAnimationToEnd` without a `timeout` (Maestro's).
pub const ANIMATION_MS: u64 = 15_000;

/// Where a frame's commands came from, and what happens when they end.
#[derive(Debug, Clone)]
enum FrameKind {
    /// Inline commands (`runFlow: commands:`).
    Seq,
    /// A flow file's `onFlowStart` and commands; its `onFlowComplete` runs next.
    File {
        on_complete: Vec<Command>,
    },
    /// `onFlowComplete`, after the flow ended (with a failure, if it failed).
    Complete {
        failure: Option<String>,
    },
    Repeat {
        times: Option<u64>,
        done: u64,
        cond: Option<Box<Condition>>,
        checked: bool,
    },
    Retry {
        left: u32,
    },
}

#[derive(Debug, Clone)]
struct Frame {
    file: String,
    cmds: Vec<Command>,
    at: usize,
    kind: FrameKind,
    /// Variables a `runFlow` / `retry` `env` set, with their values before, restored
    /// when the frame ends (Maestro scopes them to the sub-flow).
    restore: Vec<(String, Option<String>)>,
}

/// What the current command has done so far (reset when the flow moves on).
#[derive(Debug, Default)]
struct Tries {
    /// Emitted actions for this command.
    emitted: u32,
    /// Waited for the command's element (or condition) once.
    waited: bool,
    /// The screen before the command's first tap, and where it tapped.
    before: Option<u64>,
    point: Option<[u32; 2]>,
    taps: u32,
    retried_tap: bool,
    settled: bool,
    scrolls: u32,
    /// Scrolls in a row that changed nothing (the end of the list).
    stale: u32,
    /// Questions AI in the middle was asked about this command.
    recoveries: u32,
}

/// One pass of the interpreter.
enum Run {
    /// Return this action as the step, described.
    Emit(Action),
    /// The command is done: move on.
    Done,
    /// Frames changed (entered or left): look again.
    Again,
}

pub struct FlowAgent {
    program: Program,
    scope: Scope,
    stack: Vec<Frame>,
    tries: Tries,
    /// The task's end, once known: Ok(summary) or Err(failure).
    ended: Option<Result<String, String>>,
    /// Commands that ran without a device step, and optional failures, told in the
    /// next step's reasoning.
    notes: Vec<String>,
    warnings: Vec<String>,
    commands_done: u32,
    started: bool,
    /// AI in the middle, when the task asked for it (`recovery: true`).
    aitm: Option<Aitm>,
    prices: PriceTable,
    /// A command whose element is missing, for AI in the middle (`recover.rs`).
    stuck: Option<recover::Stuck>,
    /// Commands AI in the middle gave a new selector, by (file, line).
    healed: BTreeMap<(String, usize), recover::Healed>,
    /// What AI in the middle did, for the finish reason.
    recovered: Vec<String>,
    /// The record of the step being returned, when AI in the middle played a part.
    replay_next: Option<ReplayInfo>,
    /// Write healed selectors back into the flow, in the task's result (`heal`).
    heal: bool,
    /// The model of the AI commands, when the flow has any.
    ai: Option<ai::AiModel>,
    /// An AI command waiting for its model call.
    ai_pending: Option<ai::AiAsk>,
    /// The stored script (imported from this flow) and version the task runs.
    origin: Option<(crate::script::ScriptId, u32)>,
    /// The healed flow as that script's next version, for the runner to store.
    produced: Option<super::ProducedScript>,
    /// Where the task reads an app's string resources; the foreground app's, read once
    /// a command's text was missing (`wants_strings`), for `step::translated`.
    strings: Option<super::appstrings::AppStringsSource>,
    loaded: Option<super::appstrings::Loaded>,
    wants_strings: bool,
}

impl FlowAgent {
    /// Reads the foreground app's string resources after a command's text was not on
    /// screen (once per app and task).
    async fn load_strings(&mut self, ctx: &AgentContext) {
        if !std::mem::take(&mut self.wants_strings) {
            return;
        }
        let (Some(source), Some(app)) = (self.strings.clone(), ctx.device.app.clone()) else {
            return;
        };
        if self
            .loaded
            .as_ref()
            .is_none_or(|l| l.strings.package != app)
        {
            self.loaded = source.load(&app).await;
        }
    }

    pub fn new(program: Program) -> Result<Self, AgentError> {
        let scope = Scope::new()
            .map_err(|e| AgentError::Spec(super::SpecError::new("flow", e.to_string())))?;
        Ok(Self {
            program,
            scope,
            stack: Vec::new(),
            tries: Tries::default(),
            ended: None,
            notes: Vec::new(),
            warnings: Vec::new(),
            commands_done: 0,
            started: false,
            aitm: None,
            prices: PriceTable::default(),
            stuck: None,
            healed: BTreeMap::new(),
            recovered: Vec::new(),
            replay_next: None,
            heal: false,
            ai: None,
            ai_pending: None,
            origin: None,
            produced: None,
            strings: None,
            loaded: None,
            wants_strings: false,
        })
    }

    /// AI in the middle for commands whose element is missing.
    pub fn with_recovery(mut self, aitm: Aitm, prices: PriceTable) -> Self {
        self.aitm = Some(aitm);
        self.prices = prices;
        self
    }

    /// The stored script this flow was imported as (id, version): a healed flow is
    /// stored as its next version.
    pub fn from_script(mut self, origin: Option<(crate::script::ScriptId, u32)>) -> Self {
        self.origin = origin;
        self
    }

    /// The model `assertWithAI` & co ask.
    pub fn with_model(mut self, ai: ai::AiModel) -> Self {
        self.ai = Some(ai);
        self
    }

    /// A command failed: a warning when it is `optional` (the flow goes on), else the
    /// flow's failure (`fail`).
    fn command_failed(&mut self, cmd: &Command, at: String, e: String) {
        if cmd.optional {
            self.warnings.push(format!("{at}: {e}"));
            self.notes
                .push(format!("optional {at} failed, going on: {e}"));
            self.advance();
        } else {
            self.fail(format!("{at}: {e}"));
        }
    }

    /// With `heal`, a flow that ran to its end with selectors AI in the middle found
    /// is written back with them (`heal.rs`), in the task's result.
    pub fn healing(mut self, heal: bool) -> Self {
        self.heal = heal;
        self
    }

    /// The task's answer when healing: `{"healed": {path: YAML}}`, and the commands
    /// that could not be written back, for the reason.
    fn healed_answer(&mut self) -> (Option<String>, String) {
        if !self.heal || self.healed.is_empty() {
            return (None, String::new());
        }
        let (files, missed) = recover::healed_files(self);
        let stored = self.store_healed(&files);
        let note = if missed.is_empty() {
            format!(
                "; healed flow files in the result: {}",
                files.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        } else {
            format!(
                "; not written back (the selector is not a plain text or id): {}",
                missed.join(", ")
            )
        };
        let answer = (!files.is_empty()).then(|| serde_json::json!({"healed": files}).to_string());
        (answer, format!("{note}{stored}"))
    }

    /// The healed entry flow as the next version of the script it came from (imported
    /// as a script again, its text kept); what happened, for the reason.
    fn store_healed(&mut self, files: &BTreeMap<String, String>) -> String {
        let (Some(origin), Some(text)) = (self.origin, files.get(&self.program.entry)) else {
            return String::new();
        };
        match crate::script::maestro::import(text) {
            Ok(script) => {
                self.produced = Some(super::ProducedScript {
                    script,
                    healed_from: Some(origin),
                });
                format!("; stored as the next version of script {}", origin.0)
            }
            Err(e) => format!("; not stored as script {}: {e}", origin.0),
        }
    }

    /// A command's element is missing after its wait: AI in the middle gets it next,
    /// when the task has a model and the command attempts left (never an `optional`
    /// one).
    fn stuck(
        &mut self,
        cmd: &Command,
        selector: &droidpilot_maestro::ast::Selector,
        message: &str,
    ) {
        if self.aitm.is_none() || cmd.optional || self.tries.recoveries >= recover::MAX_ATTEMPTS {
            return;
        }
        let file = self
            .stack
            .last()
            .map(|f| f.file.clone())
            .unwrap_or_default();
        self.stuck = Some(recover::Stuck {
            file,
            cmd: cmd.clone(),
            selector: selector.clone(),
            message: message.to_string(),
        });
    }

    /// The healed selector of the command at `line` of the current file, if any.
    fn healed_selector(&self, line: usize) -> Option<droidpilot_maestro::ast::Selector> {
        let file = self.stack.last()?.file.clone();
        self.healed.get(&(file, line)).map(|h| h.new.clone())
    }

    /// `-e` values, the entry flow's `env`, then its frame.
    fn start(&mut self) -> Result<(), String> {
        self.started = true;
        for (k, v) in self.program.env.clone() {
            self.scope.put(&k, Some(&v));
        }
        let entry = self.program.entry.clone();
        let flow = self.program.flows[&entry].clone();
        self.scope
            .define(&flow.header.env)
            .map_err(|e| format!("{entry}: env: {e}. {}", e.hint()))?;
        self.push_file(&entry, Vec::new());
        Ok(())
    }

    /// Enters a flow file: its `onFlowStart` and commands, then its `onFlowComplete`.
    fn push_file(&mut self, path: &str, restore: Vec<(String, Option<String>)>) {
        let flow = &self.program.flows[path];
        let mut cmds = flow.header.on_flow_start.clone();
        cmds.extend(flow.commands.iter().cloned());
        self.stack.push(Frame {
            file: path.to_string(),
            cmds,
            at: 0,
            kind: FrameKind::File {
                on_complete: flow.header.on_flow_complete.clone(),
            },
            restore,
        });
    }

    /// Sets a sub-flow's `env`, returning what to restore when it ends.
    fn scoped_env(&mut self, vars: &[EnvVar]) -> Result<Vec<(String, Option<String>)>, String> {
        let restore = vars
            .iter()
            .map(|v| (v.name.clone(), self.scope.var(&v.name).map(str::to_string)))
            .collect();
        self.scope
            .define(vars)
            .map_err(|e| format!("env: {e}. {}", e.hint()))?;
        Ok(restore)
    }

    fn pop(&mut self) -> Option<Frame> {
        let f = self.stack.pop()?;
        for (k, v) in f.restore.iter().rev() {
            self.scope.put(k, v.as_deref());
        }
        Some(f)
    }

    /// Moves past the current command.
    fn advance(&mut self) {
        if let Some(f) = self.stack.last_mut() {
            f.at += 1;
        }
        self.tries = Tries::default();
    }

    /// The current frame ran out of commands.
    fn end_frame(&mut self) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        if let FrameKind::Repeat { done, checked, .. } = &mut top.kind {
            *done += 1;
            *checked = false;
            top.at = 0;
            return;
        }
        let f = self.pop().expect("a frame");
        match f.kind {
            FrameKind::File { on_complete } if !on_complete.is_empty() => {
                self.stack.push(Frame {
                    file: f.file,
                    cmds: on_complete,
                    at: 0,
                    kind: FrameKind::Complete { failure: None },
                    restore: Vec::new(),
                });
            }
            FrameKind::Complete { failure: Some(e) } => self.finish_failed(e),
            _ => {}
        }
    }

    /// A command failed (not optional): a `retry` around it runs again, else the flow
    /// fails, after the `onFlowComplete` of every flow file it is in.
    fn fail(&mut self, msg: String) {
        self.tries = Tries::default();
        if let Some(i) = self
            .stack
            .iter()
            .rposition(|f| matches!(f.kind, FrameKind::Retry { left } if left > 0))
        {
            while self.stack.len() > i + 1 {
                self.pop();
            }
            let f = self.stack.last_mut().expect("the retry frame");
            if let FrameKind::Retry { left } = &mut f.kind {
                *left -= 1;
            }
            f.at = 0;
            self.notes.push(format!("{msg}; retrying"));
            return;
        }
        if let Some(f) = self
            .stack
            .iter()
            .rev()
            .find(|f| matches!(f.kind, FrameKind::Complete { .. }))
        {
            let first = match &f.kind {
                FrameKind::Complete { failure: Some(e) } => {
                    format!("{e}; then onFlowComplete failed: ")
                }
                _ => "onFlowComplete failed: ".into(),
            };
            self.stack.clear();
            self.finish_failed(format!("{first}{msg}"));
            return;
        }
        let mut cleanup: Vec<Command> = Vec::new();
        let mut file = String::new();
        while let Some(f) = self.pop() {
            if let FrameKind::File { on_complete } = f.kind {
                if file.is_empty() {
                    file = f.file.clone();
                }
                cleanup.extend(on_complete);
            }
        }
        if cleanup.is_empty() {
            self.finish_failed(msg);
        } else {
            self.stack.push(Frame {
                file,
                cmds: cleanup,
                at: 0,
                kind: FrameKind::Complete { failure: Some(msg) },
                restore: Vec::new(),
            });
        }
    }

    fn finish_failed(&mut self, msg: String) {
        self.stack.clear();
        self.ended = Some(Err(msg));
    }

    /// `when` / `while`: every part given must hold. `visible` / `notVisible` wait once
    /// (Maestro's 7 s) before they are false.
    fn condition(
        &mut self,
        c: &Condition,
        ctx: &AgentContext,
    ) -> Result<Result<bool, Action>, String> {
        if let Some(p) = c.platform
            && p != Platform::Android
        {
            return Ok(Ok(false));
        }
        if let Some(s) = &c.script
            && !self
                .scope
                .condition(s)
                .map_err(|e| format!("{e}. {}", e.hint()))?
        {
            return Ok(Ok(false));
        }
        for (sel, want) in [(&c.visible, true), (&c.not_visible, false)] {
            let Some(sel) = sel else { continue };
            let sel = self
                .scope
                .selector(sel)
                .map_err(|e| format!("{e}. {}", e.hint()))?;
            if step::present(ctx, &sel)? == want {
                continue;
            }
            if self.tries.waited {
                return Ok(Ok(false));
            }
            self.tries.waited = true;
            let until = if want {
                Until::Visible
            } else {
                Until::NotVisible
            };
            return Ok(Err(check_action(
                until,
                Some(&sel),
                OPTIONAL_LOOKUP_MS,
                false,
            )));
        }
        self.tries.waited = false;
        Ok(Ok(true))
    }

    /// A `repeat` frame at the top of an iteration: go on, or leave.
    fn repeat_check(&mut self, ctx: &AgentContext) -> Result<Option<Run>, String> {
        let Some(top) = self.stack.last() else {
            return Ok(None);
        };
        let FrameKind::Repeat {
            times,
            done,
            cond,
            checked,
        } = &top.kind
        else {
            return Ok(None);
        };
        if top.at != 0 || *checked {
            return Ok(None);
        }
        let (times, done, cond) = (*times, *done, cond.clone());
        let mut go = times.is_none_or(|t| done < t);
        if go && let Some(c) = &cond {
            match self.condition(c, ctx)? {
                Ok(b) => go = b,
                Err(wait) => return Ok(Some(Run::Emit(wait))),
            }
        }
        self.tries = Tries::default();
        if go {
            if let Some(Frame {
                kind: FrameKind::Repeat { checked, .. },
                ..
            }) = self.stack.last_mut()
            {
                *checked = true;
            }
            return Ok(None);
        }
        self.pop();
        Ok(Some(Run::Again))
    }

    /// Control flow: enter the command's frame (or skip it).
    fn control(&mut self, cmd: &Command, file: &str, ctx: &AgentContext) -> Result<Run, String> {
        match &cmd.kind {
            CommandKind::RunFlow(r) => {
                if let Some(w) = &r.when {
                    match self.condition(w, ctx)? {
                        Ok(true) => {}
                        Ok(false) => {
                            self.notes.push(format!(
                                "{file} line {}: runFlow skipped (its `when` does not hold)",
                                cmd.line
                            ));
                            return Ok(Run::Done);
                        }
                        Err(wait) => return Ok(Run::Emit(wait)),
                    }
                }
                self.advance();
                let restore = self.scoped_env(&r.env)?;
                self.enter(&r.source, file, FrameKind::Seq, restore);
                Ok(Run::Again)
            }
            CommandKind::Repeat(r) => {
                let times = match &r.times {
                    Some(a) => Some(
                        self.scope
                            .amount(a)
                            .map_err(|e| format!("times: {e}"))?
                            .max(0.0) as u64,
                    ),
                    None => None,
                };
                self.advance();
                self.stack.push(Frame {
                    file: file.to_string(),
                    cmds: r.commands.clone(),
                    at: 0,
                    kind: FrameKind::Repeat {
                        times,
                        done: 0,
                        cond: r.while_.clone().map(Box::new),
                        checked: false,
                    },
                    restore: Vec::new(),
                });
                Ok(Run::Again)
            }
            CommandKind::Retry(r) => {
                let n = self
                    .scope
                    .amount(&r.max_retries)
                    .map_err(|e| format!("maxRetries: {e}"))?;
                self.advance();
                let restore = self.scoped_env(&r.env)?;
                let left = n.clamp(0.0, 3.0) as u32;
                self.enter(&r.source, file, FrameKind::Retry { left }, restore);
                Ok(Run::Again)
            }
            _ => Ok(Run::Done),
        }
    }

    /// Pushes the frame of a `runFlow` / `retry` source.
    fn enter(
        &mut self,
        src: &FlowSource,
        file: &str,
        kind: FrameKind,
        restore: Vec<(String, Option<String>)>,
    ) {
        match src {
            FlowSource::Inline(cmds) => self.stack.push(Frame {
                file: file.to_string(),
                cmds: cmds.clone(),
                at: 0,
                kind,
                restore,
            }),
            FlowSource::File { path } => {
                let target = droidpilot_maestro::workspace::resolve(file, path);
                match kind {
                    FrameKind::Retry { .. } => {
                        let flow = &self.program.flows[&target];
                        let mut cmds = flow.header.on_flow_start.clone();
                        cmds.extend(flow.commands.iter().cloned());
                        self.stack.push(Frame {
                            file: target,
                            cmds,
                            at: 0,
                            kind,
                            restore,
                        });
                    }
                    _ => self.push_file(&target, restore),
                }
            }
        }
    }

    /// One pass: the next action, or the flow's end.
    fn pass(&mut self, ctx: &AgentContext) -> Result<Option<(Action, String)>, ()> {
        if self.ended.is_some() {
            return Err(());
        }
        if let Some(r) = self.repeat_check(ctx).transpose() {
            return match r {
                Ok(Run::Emit(a)) => Ok(Some((a, self.where_now("repeat while")))),
                Ok(_) => Ok(None),
                Err(e) => {
                    let at = self.where_now("repeat");
                    self.fail(format!("{at}: {e}"));
                    Ok(None)
                }
            };
        }
        let Some(top) = self.stack.last() else {
            let summary = format!("the flow ran to its end ({} commands)", self.commands_done);
            self.ended = Some(Ok(summary));
            return Err(());
        };
        let Some(cmd) = top.cmds.get(top.at).cloned() else {
            self.end_frame();
            return Ok(None);
        };
        let file = top.file.clone();
        let at = format!("{file} line {} ({})", cmd.line, step::describe(&cmd));
        let r = if cmd.is_control_flow() {
            self.control(&cmd, &file, ctx)
        } else {
            step::leaf(self, &cmd, ctx)
        };
        match r {
            Ok(Run::Emit(a)) => {
                self.tries.emitted += 1;
                Ok(Some((a, at)))
            }
            Ok(Run::Done) => {
                if !cmd.is_control_flow() {
                    self.commands_done += 1;
                }
                self.advance();
                Ok(None)
            }
            Ok(Run::Again) => Ok(None),
            // AI in the middle answers first (`next`).
            Err(_) if self.stuck.is_some() => Ok(None),
            Err(e) => {
                self.command_failed(&cmd, at, e);
                Ok(None)
            }
        }
    }

    fn where_now(&self, what: &str) -> String {
        let file = self
            .stack
            .last()
            .map_or(self.program.entry.clone(), |f| f.file.clone());
        format!("{file} ({what})")
    }

    /// The step: its reasoning (the notes, then where the flow is), its model calls and
    /// its record of AI in the middle.
    fn decide(&mut self, meter: Meter<'_>, action: Action, at: Option<String>) -> Decision {
        let mut thinking: Vec<String> = self.notes.drain(..).collect();
        thinking.extend(at);
        let raw = serde_json::to_string(&action).unwrap_or_default();
        let mut d = meter.decision(thinking.join("\n"), action, raw, 0);
        d.replay = self.replay_next.take();
        d
    }

    fn finish(&mut self) -> Action {
        match self.ended.clone() {
            Some(Ok(summary)) => {
                let warn = if self.warnings.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; optional commands that failed: {}",
                        self.warnings.join("; ")
                    )
                };
                let ai = if self.recovered.is_empty() {
                    String::new()
                } else {
                    format!("; AI recovery: {}", self.recovered.join("; "))
                };
                let (answer, healed) = self.healed_answer();
                Action::Finish {
                    success: true,
                    reason: Some(format!("{summary}{warn}{ai}{healed}")),
                    answer,
                }
            }
            Some(Err(e)) => Action::Finish {
                success: false,
                reason: Some(e),
                answer: None,
            },
            None => Action::Finish {
                success: false,
                reason: Some("the flow made no progress".into()),
                answer: None,
            },
        }
    }
}

#[async_trait]
impl Agent for FlowAgent {
    fn give_app_strings(&mut self, source: super::appstrings::AppStringsSource) {
        self.strings = Some(source);
    }

    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.load_strings(ctx).await;
        if !self.started
            && let Err(e) = self.start()
        {
            self.finish_failed(e);
        }
        let prices = self.prices.clone();
        // A flow's only model calls are AI-in-the-middle recoveries.
        let mut meter = Meter::for_role(&prices, crate::domain::ModelRole::Recovery);
        // Control flow, scripts and checks that need no device go round here; a flow
        // that loops without touching the device is stopped.
        for _ in 0..10_000 {
            if let Some(stuck) = self.stuck.take() {
                if let Some((action, info)) = recover::recover(self, &mut meter, ctx, stuck).await?
                {
                    self.replay_next = Some(info);
                    return Ok(self.decide(meter, action, None));
                }
                continue;
            }
            if let Some(ask) = self.ai_pending.take() {
                ai::run(self, &mut meter, ctx, ask).await?;
                continue;
            }
            match self.pass(ctx) {
                Ok(None) => continue,
                Ok(Some((action, at))) => return Ok(self.decide(meter, action, Some(at))),
                Err(()) => break,
            }
        }
        if self.ended.is_none() {
            self.finish_failed(
                "the flow ran 10 000 commands without a device step (a `repeat` that never ends?)"
                    .into(),
            );
        }
        let action = self.finish();
        Ok(self.decide(meter, action, None))
    }

    fn describe(&self) -> String {
        let name = self.program.flows[&self.program.entry].header.name.clone();
        format!(
            "flow \"{}\"",
            name.unwrap_or_else(|| self.program.entry.clone())
        )
    }

    /// A flow bounds its own waits; the stuck detector is for model agents.
    fn plays_fixed_actions(&self) -> bool {
        true
    }

    fn take_script(
        &mut self,
        finished_ok: bool,
        _reason: Option<&str>,
    ) -> Option<super::ProducedScript> {
        self.produced.take().filter(|_| finished_ok)
    }

    fn required_app(&self) -> Option<&str> {
        let app = self.program.flows[&self.program.entry]
            .header
            .app_id
            .as_deref()?;
        (!app.contains("${")).then_some(app)
    }
}

/// The `flow_check` action for a wait.
pub(crate) fn check_action(
    until: Until,
    sel: Option<&droidpilot_maestro::ast::Selector>,
    timeout_ms: u64,
    fail: bool,
) -> Action {
    Action::Custom(crate::domain::action::CustomAction {
        name: flow_check::NAME.into(),
        args: flow_check::args(until, sel, timeout_ms, fail, None),
    })
}

/// The `flow_check` action that waits for the screen to hold still, `seen` being the
/// content hash of the screen the step was decided on (its first equal read settles it).
pub(crate) fn settle_action(timeout_ms: u64, seen: Option<u64>) -> Action {
    Action::Custom(crate::domain::action::CustomAction {
        name: flow_check::NAME.into(),
        args: flow_check::args(Until::Settled, None, timeout_ms, false, seen),
    })
}
