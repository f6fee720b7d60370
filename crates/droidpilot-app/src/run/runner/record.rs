//! The record and publish phases: a step on its way to the store (`StepDraft`, the one
//! place that builds a `Step` and its `step.executed` payload), the step as stored
//! (`Runner::record_phase`) and `Runner::publish_phase`, the one place a step is
//! committed, published and remembered; then what follows it (`Runner::follow`).

use std::time::Instant;

use serde_json::{Value, json};

use super::observe::Observed;
use super::state::RunState;
use super::{End, Fatal, Runner};
use crate::agent::Decision;
use crate::agent::context::{Note, StepRecord};
use crate::device::{Device, DeviceError};
use crate::domain::{
    Action, Annotation, CoordinateTransform, ScreenSize, Step, StepOutcome, StepScreen, StepStatus,
    StepTimings, TaskEvent, TaskId,
};
use crate::screen::Screen;
use crate::store::StoreError;

/// What the loop does once a step is committed.
pub(super) enum Then {
    /// Next step, with a fresh observation.
    Next,
    /// Next step, deciding on this observation again.
    Reuse(Box<Observed>),
    End(End),
    /// The device dropped: wait for it, then go on.
    Reconnect(DeviceError),
    /// Stuck after a diagnostic: ask a person how to go on (`ask.rs`).
    AskStuck(String),
}

/// When a step began: the monotonic clock for its timings, the wall clock for the record.
#[derive(Clone, Copy)]
pub(super) struct StepStart {
    pub instant: Instant,
    pub at: chrono::DateTime<chrono::Utc>,
}

impl StepStart {
    pub fn now() -> Self {
        Self {
            instant: Instant::now(),
            at: chrono::Utc::now(),
        }
    }
}

/// A step being built by the phases, plus what the agent's history keeps of it.
pub(super) struct StepDraft {
    pub step: Step,
    start: Instant,
    /// The history entry, pushed once the step is committed (None: the agent's history
    /// does not show this step).
    pub memory: Option<StepRecord>,
    /// Notes for the agent's next prompts, pushed after `memory`.
    pub notes: Vec<Note>,
    /// Keeps text typed into a password field out of the recorded action.
    guard: Option<PasswordGuard>,
    /// The agent's secrets (`Agent::secrets`): masked wherever they show in the step.
    secrets: Vec<String>,
    /// The index of the replay action this step took (`Agent::fixed_action_index`).
    pub fixed_index: Option<usize>,
    /// The text the action typed into a password field (the guard masked it).
    typed_password: Option<String>,
    /// The device action's failed attempts that were tried again (`act.rs`).
    pub retries: Vec<super::act::Retry>,
    /// The operator's custom actions: their secret parameters are masked.
    pub custom: Option<std::sync::Arc<crate::run::extend::ActionsConfig>>,
}

/// The screen a step acts on, to recognise a `type` into a password field: such text is
/// recorded (stored, published, exported) as `••••`, so the secret reaches the device and
/// nothing else.
pub(super) struct PasswordGuard {
    pub screen: std::sync::Arc<Screen>,
    pub size: ScreenSize,
    pub transform: std::sync::Arc<dyn CoordinateTransform>,
}

impl PasswordGuard {
    /// `action` with the text it types into a password field replaced by `••••`, and
    /// that text (to scrub it from the model's raw reply too). None: nothing to hide.
    fn redact(&self, action: &Action) -> Option<(Action, String)> {
        let Action::Type { text, .. } = action else {
            return None;
        };
        let masked = self
            .screen
            .mask_typed(action, self.size, &*self.transform)?;
        Some((masked, text.clone()))
    }
}

/// `s` with every occurrence of `secret` masked (a no-op for an empty secret).
fn scrub(s: &mut Option<String>, secret: &str) {
    if let Some(s) = s
        .as_mut()
        .filter(|s| !secret.is_empty() && s.contains(secret))
    {
        *s = s.replace(secret, crate::screen::REDACTED);
    }
}

impl StepDraft {
    /// `start` is when the step began (before observing), for its overhead and start time.
    /// The screen record keeps the actionable elements (selectors, alternatives, bounds)
    /// and the screen size, so a finished task can be turned into a script whose
    /// coordinates become selectors (`script::record`).
    pub fn new(
        task_id: TaskId,
        n: u32,
        start: StepStart,
        obs: &Observed,
        size: ScreenSize,
    ) -> Self {
        let r = &obs.repr;
        let step = Step {
            task_id,
            n,
            started_at: start.at,
            thinking: None,
            action: None,
            raw: None,
            rejected: None,
            outcome: outcome(StepStatus::Ok, None, None, None),
            screen: Some(StepScreen {
                summary: r.summary.clone(),
                app: r.app_package.clone(),
                activity: r.activity.clone(),
                has_modal: r.has_modal,
                sensitive: obs.sensitive,
                layout_hash: obs.layout.map(|h| format!("{h:016x}")),
                hierarchy: obs.hierarchy_sha.clone(),
                size: Some([size.width, size.height]),
                elements: r.actionable_elements.clone(),
            }),
            screenshot: obs.screenshot_sha.clone(),
            timings: StepTimings {
                screenshot_ms: obs.screenshot_ms,
                hierarchy_ms: obs.hierarchy_ms,
                ..Default::default()
            },
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            cost_usd: 0.0,
            model_calls: 0,
            replay: None,
            calls: Vec::new(),
            annotations: Vec::new(),
            by: None,
        };
        Self {
            step,
            start: start.instant,
            memory: None,
            notes: Vec::new(),
            guard: None,
            secrets: Vec::new(),
            fixed_index: None,
            typed_password: None,
            retries: Vec::new(),
            custom: None,
        }
    }

    /// Values never to record: a `type` holding one is recorded as `••••`, and any other
    /// place of the step holding one gets it masked when it is committed.
    pub fn hide(&mut self, secrets: Vec<String>) {
        self.secrets = secrets;
    }

    /// Recorded actions of this step hide what is typed into `guard`'s password fields.
    pub fn guard_passwords(&mut self, guard: PasswordGuard) {
        self.guard = Some(guard);
    }

    /// Takes in what the agent decided (thinking, action, usage, model time).
    pub fn decided(&mut self, d: &Decision) {
        self.step.thinking = Some(d.thinking.clone()).filter(|t| !t.is_empty());
        self.step.raw = Some(d.raw.clone()).filter(|r| !r.is_empty());
        self.set_action(&d.action);
        self.step.tokens_in = d.usage.input_tokens;
        self.step.tokens_out = d.usage.output_tokens;
        self.step.tokens_cached = d.usage.cached_input_tokens;
        self.step.cost_usd = d.cost.unwrap_or(0.0);
        self.step.model_calls = d.model_calls;
        self.step.replay = d.replay.clone();
        self.step.calls = d.calls.clone();
        self.step.annotations.extend(d.annotations.iter().cloned());
        self.step.timings.inference_ms = d.model_time.as_millis() as u64;
    }

    /// What the calls behind an unusable answer used: a rejected step counts them like
    /// an accepted one (tokens, cost, calls).
    pub fn unusable_calls(
        &mut self,
        usage: crate::llm::Usage,
        cost: Option<f64>,
        calls: Vec<crate::domain::ModelCall>,
    ) {
        self.step.tokens_in = usage.input_tokens;
        self.step.tokens_out = usage.output_tokens;
        self.step.tokens_cached = usage.cached_input_tokens;
        self.step.cost_usd = cost.unwrap_or(0.0);
        self.step.model_calls = calls.len() as u32;
        self.step.calls = calls;
    }

    /// The action as it ran (middleware may have rewritten it).
    /// Text typed into a password field is masked in the action, and scrubbed from the
    /// thinking and the model's raw reply.
    pub fn set_action(&mut self, a: &Action) {
        if let Some(masked) = self.mask_custom(a) {
            return self.set_action(&masked);
        }
        let redacted = self.guard.as_ref().and_then(|g| g.redact(a));
        self.typed_password = redacted.as_ref().map(|(_, text)| text.clone());
        match redacted.or_else(|| self.redact_secret(a)) {
            Some((masked, secret)) => {
                scrub(&mut self.step.raw, &secret);
                scrub(&mut self.step.thinking, &secret);
                self.step.action = Some(masked);
            }
            None => self.step.action = Some(a.clone()),
        }
        for secret in &self.secrets {
            scrub(&mut self.step.raw, secret);
            scrub(&mut self.step.thinking, secret);
        }
    }

    /// A configured custom action with its secret parameters as `••••` (their values
    /// then masked anywhere in the step). None: nothing to hide.
    fn mask_custom(&mut self, a: &Action) -> Option<Action> {
        let Action::Custom(c) = a else { return None };
        let def = self.custom.as_ref()?.custom(&c.name)?;
        let values = def.secret_values(&c.args);
        if values.is_empty() {
            return None;
        }
        self.secrets.extend(values);
        Some(Action::Custom(crate::domain::action::CustomAction {
            name: c.name.clone(),
            args: def.masked_args(&c.args),
        }))
    }

    /// A `type` whose text holds one of the agent's secrets, as `••••`.
    fn redact_secret(&self, a: &Action) -> Option<(Action, String)> {
        let Action::Type {
            text,
            target,
            clear_first,
        } = a
        else {
            return None;
        };
        self.secrets
            .iter()
            .any(|s| text.contains(s.as_str()))
            .then(|| {
                let masked = Action::Type {
                    text: crate::screen::REDACTED.into(),
                    target: target.clone(),
                    clear_first: *clear_first,
                };
                (masked, text.clone())
            })
    }

    /// The recorded action as JSON (for events, whose payload stays JSON).
    pub fn action_json(&self) -> Option<Value> {
        self.step
            .action
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok())
    }

    pub fn ok(&mut self, screen_changed: Option<bool>, detail: Option<Value>) {
        self.step.outcome = outcome(StepStatus::Ok, None, screen_changed, detail);
    }

    pub fn failed(&mut self, error: impl Into<String>, detail: Option<Value>) {
        self.step.outcome = outcome(StepStatus::Failed, Some(error.into()), None, detail);
    }

    pub fn skipped(&mut self, reason: &str) {
        self.step.outcome = outcome(
            StepStatus::Skipped,
            None,
            None,
            Some(json!({"reason": reason})),
        );
    }

    /// A model answer that could not be used: its raw text is kept as the thinking and as
    /// `raw`, and the action it sent (when the reply holds a JSON object) as `rejected`.
    pub fn rejected(&mut self, error: String, raw: &str) {
        self.step.thinking = Some(raw.chars().take(4000).collect());
        self.step.raw = Some(raw.to_string()).filter(|r| !r.is_empty());
        self.step.rejected = sent_action(raw);
        self.step.outcome = outcome(StepStatus::Rejected, Some(error), None, None);
    }

    /// The action that failed and was replaced by a recovery hook, kept in the detail.
    pub fn replaced(&mut self, original: &Action, error: &str) {
        let replaced = json!({"action": original, "error": error});
        match &mut self.step.outcome.detail {
            Some(Value::Object(m)) => {
                m.insert("replaced".into(), replaced);
            }
            d => *d = Some(json!({"replaced": replaced, "detail": d.take()})),
        }
    }

    pub fn detail(&mut self, detail: Value) {
        self.step.outcome.detail = Some(detail);
    }

    /// The agent's history keeps this step as `outcome`.
    pub fn remember(&mut self, n: u32, decision: &Decision, outcome: String) {
        self.remember_as(n, decision, decision.action.clone(), outcome);
    }

    /// `remember`, with the action as it ran (rewritten by a hook) instead of as decided.
    /// A secret stays out of the history too (a recovery model reads it).
    pub fn remember_as(&mut self, n: u32, decision: &Decision, action: Action, outcome: String) {
        let action = self
            .redact_secret(&action)
            .map_or(action, |(masked, _)| masked);
        self.memory = Some(StepRecord {
            step: n,
            thinking: decision.thinking.clone(),
            action,
            outcome,
            failed: false,
        });
    }
}

/// `step` with every secret masked wherever it shows (the screen's texts after a secret
/// was typed into a plain field, an error, a detail): the step as JSON, masked, read back.
fn mask_secrets(step: &mut Step, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    let Ok(mut json) = serde_json::to_string(&*step) else {
        return;
    };
    let mut hit = false;
    for s in secrets {
        // As JSON writes it: a quote or a backslash in the secret is escaped there.
        let written = serde_json::to_string(s).unwrap_or_default();
        let inner = written.trim_matches('"');
        if !inner.is_empty() && json.contains(inner) {
            json = json.replace(inner, crate::screen::REDACTED);
            hit = true;
        }
    }
    if hit && let Ok(masked) = serde_json::from_str(&json) {
        *step = masked;
    }
}

/// The JSON object a rejected reply sent: the whole reply, or its first `{…}` span.
fn sent_action(raw: &str) -> Option<Value> {
    let object = |s: &str| {
        serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
    };
    object(raw.trim()).or_else(|| object(&raw[raw.find('{')?..=raw.rfind('}')?]))
}

fn outcome(
    status: StepStatus,
    error: Option<String>,
    screen_changed: Option<bool>,
    detail: Option<Value>,
) -> StepOutcome {
    StepOutcome {
        status,
        error,
        screen_changed,
        detail,
    }
}

/// A step as it is stored, with its events and what the agent's history keeps of it:
/// the record phase's work, for the publish phase.
pub(super) struct Recorded {
    step: Step,
    events: Vec<TaskEvent>,
    memory: Option<StepRecord>,
    notes: Vec<Note>,
    fixed_index: Option<usize>,
    typed_password: Option<String>,
}

impl Runner {
    /// The record phase: the draft becomes the step as it is stored (every secret
    /// masked, its overhead timed) and its events (`step.annotated`…, `step.executed`).
    pub(super) fn record_phase(&self, draft: StepDraft) -> Recorded {
        let StepDraft {
            mut step,
            start,
            memory,
            notes,
            secrets,
            fixed_index,
            typed_password,
            ..
        } = draft;
        mask_secrets(&mut step, &secrets);
        let events = sealed(&mut step, start);
        Recorded {
            step,
            events,
            memory,
            notes,
            fixed_index,
            typed_password,
        }
    }

    /// The publish phase: commits the step and its events in one transaction (then
    /// delivered to subscribers), masks a typed password in the stored task, counts the
    /// step and its spending, and hands it to the agent's history.
    pub(super) async fn publish_phase(
        &self,
        st: &mut RunState<'_>,
        r: Recorded,
    ) -> Result<(), Fatal> {
        let Recorded {
            step,
            events,
            memory,
            notes,
            fixed_index,
            typed_password,
        } = r;
        let mut events = events;
        if let Some(TaskEvent::StepExecuted { eta, .. }) = events.last_mut() {
            *eta = st.estimate_with(&step);
        }
        self.write(st.stream(), &step, events).await?;
        if let (Some(i), Some(text)) = (fixed_index, typed_password) {
            self.mask_stored_action(st.task(), i, &text).await?;
        }
        st.step_published(&step, memory, notes);
        Ok(())
    }

    /// What follows a published step (`Then`). Returns the task's end when one follows.
    pub(super) async fn follow(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        then: Then,
    ) -> Result<Option<End>, Fatal> {
        match then {
            Then::Next => {}
            Then::Reuse(obs) => st.reuse_screen(*obs),
            Then::End(end) => return Ok(Some(end)),
            Then::Reconnect(e) => self.reconnect(st, device, &e).await?,
            Then::AskStuck(why) => return self.ask_stuck(st, why).await,
        }
        Ok(None)
    }

    /// A replay action that typed into a password field, masked in the stored task now
    /// that it has run (a resume carries on after it): the action at `index` if it typed
    /// `text`, else every unmarked `type` of that text (the list is the caller's).
    async fn mask_stored_action(
        &self,
        task: &crate::domain::Task,
        index: usize,
        text: &str,
    ) -> Result<(), StoreError> {
        let Some(mut agent) = task.spec.agent.clone() else {
            return Ok(());
        };
        if !crate::agent::secrets::mask_typed_action(&mut agent, index, text) {
            return Ok(());
        }
        self.bus.store().set_task_agent(task.id, &agent).await
    }

    /// Commits the step with its events in one transaction, then broadcasts them.
    async fn write(
        &self,
        stream: &str,
        step: &Step,
        events: Vec<TaskEvent>,
    ) -> Result<(), StoreError> {
        self.bus.commit(stream, Some(step), &[], events).await?;
        metrics::counter!("droidpilot_steps_total", "status" => step.outcome.status.as_str())
            .increment(1);
        metrics::histogram!("droidpilot_step_overhead_ms").record(step.timings.overhead_ms);
        Ok(())
    }
}

/// Times the step's overhead (what its phases' own timings leave of its whole time) and
/// builds its events: each annotation as `step.annotated`, then `step.executed`.
fn sealed(step: &mut Step, step_start: Instant) -> Vec<TaskEvent> {
    let t = &step.timings;
    let total = step_start.elapsed().as_secs_f64() * 1000.0;
    step.timings.overhead_ms = (total
        - (t.screenshot_ms + t.hierarchy_ms + t.inference_ms + t.action_ms + t.settle_ms) as f64)
        .max(0.0);
    let mut events: Vec<TaskEvent> = step
        .annotations
        .iter()
        .map(|a| TaskEvent::StepAnnotated {
            task_id: step.task_id,
            step: step.n,
            annotation: a.clone(),
        })
        .collect();
    events.extend(step.annotations.iter().filter_map(|a| match a {
        Annotation::GroundingFallback {
            reason,
            confidence,
            before,
            after,
        } => Some(TaskEvent::GroundingFallback {
            task_id: step.task_id,
            step: step.n,
            reason: *reason,
            confidence: *confidence,
            before: before.clone(),
            after: after.clone(),
        }),
        _ => None,
    }));
    events.push(executed_event(step));
    events
}

/// What became of an action taken outside the loop: its detail, or the error and detail.
pub type ManualOutcome = Result<Value, (String, Value)>;

/// An action taken outside the loop (an MCP client's action on its session task), to be
/// recorded as step `n` of `task_id`.
pub(super) struct ManualStep<'a> {
    pub task_id: TaskId,
    pub n: u32,
    pub start: StepStart,
    /// The screen it acted on.
    pub obs: &'a Observed,
    pub size: ScreenSize,
    pub action: &'a Action,
    pub outcome: ManualOutcome,
    /// The person who took it (a take-over); None for an MCP client's action.
    pub by: Option<String>,
}

impl Runner {
    /// Records a step taken outside the loop: built by `StepDraft` from the screen it
    /// acted on, as the loop's steps are (text typed into a password field masked), then
    /// committed and published by `record`.
    pub(super) async fn record_manual(&self, m: ManualStep<'_>) -> Result<Step, StoreError> {
        let mut draft = StepDraft::new(m.task_id, m.n, m.start, m.obs, m.size);
        if let Some(screen) = &m.obs.screen {
            draft.guard_passwords(PasswordGuard {
                screen: screen.clone(),
                size: m.size,
                transform: self.transform.clone(),
            });
        }
        draft.set_action(m.action);
        match m.outcome {
            Ok(detail) => draft.ok(None, Some(detail)),
            Err((error, detail)) => draft.failed(error, Some(detail)),
        }
        let StepDraft {
            mut step, start, ..
        } = draft;
        step.by = m.by;
        let events = sealed(&mut step, start);
        self.write(&m.task_id.to_string(), &step, events).await?;
        Ok(step)
    }
}

/// The `step.executed` event of a recorded step.
fn executed_event(step: &Step) -> TaskEvent {
    TaskEvent::StepExecuted {
        task_id: step.task_id,
        step: step.n,
        action: step
            .action
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok()),
        outcome: step.outcome.clone(),
        timings: step.timings.clone(),
        tokens_in: step.tokens_in,
        tokens_out: step.tokens_out,
        tokens_cached: step.tokens_cached,
        cost_usd: step.cost_usd,
        screenshot: step.screenshot.clone(),
        model_calls: step.model_calls,
        replay: step.replay.clone(),
        by: step.by.clone(),
        eta: None,
    }
}
