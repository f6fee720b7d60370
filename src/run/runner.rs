//! One agent loop per task: observe → decide → act → settle → verify → record → publish,
//! until the agent finishes, the step budget or time runs out, or someone cancels.
//!
//! Every step is committed (`Store::append_step`) before the next one starts, and the
//! loop resumes from the last committed step, so a crash or a device that drops loses at
//! most the step in flight. Failures are sorted by who can fix them: a target that is not
//! on screen is retried after re-observing; a model that times out is asked again; a
//! device that disconnects is waited for; anything else ends the task with a reason a
//! person can act on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::artifacts::ArtifactStore;
use super::events::EventBus;
use super::interaction::{AskOutcome, Prompts};
use super::mcp::McpRegistry;
use super::middleware::{ActionMiddleware, CustomActionHandler, Verdict};
use super::stuck::{Stuck, StuckDetector};
use crate::agent::context::{AgentContext, History, Note, Observation, StepRecord};
use crate::agent::{Agent, AgentError, Decision};
use crate::device::exec::{self, ExecContext, ExecError};
use crate::device::{Device, DeviceError, ScreenshotData};
use crate::domain::action::TargetField;
use crate::domain::{
    Action, CoordinateTransform, LinearTransform, ScreenSize, Step, StepOutcome, StepStatus,
    StepTimings, Task, TaskEvent, TaskStatus,
};
use crate::llm::ImageData;
use crate::screen::{ReprOptions, Screen, ScreenRepresentation, layout_hash};
use crate::store::StoreError;

/// What to do when nobody answers `ask_user` in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskTimeoutPolicy {
    /// Tell the agent "no answer" and go on.
    #[default]
    Continue,
    /// End the task as failed.
    Fail,
}

/// The runner's knobs; `[runner]` in the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunnerConfig {
    /// Extra attempts for a failed action (re-observing before each).
    pub max_retries: u32,
    /// Backoff before each retry, in ms; the last value repeats.
    pub retry_backoff_ms: Vec<u64>,
    /// Extra attempts when the model call fails transiently (on top of the client's own retries).
    pub prediction_retries: u32,
    /// A fixed pause after each action has settled (0 = none).
    pub step_delay_ms: u64,
    /// The longest wait for the UI to change or go idle after an action.
    pub settle_timeout_ms: u64,
    pub settle_poll_ms: u64,
    /// Unchanged layouts (or repeated taps on one element) in a row that count as stuck.
    pub stuck_threshold: u32,
    /// When stuck persists after a diagnostic, ask the user before aborting.
    pub ask_user_when_stuck: bool,
    pub ask_user_timeout_secs: u64,
    pub ask_user_timeout_policy: AskTimeoutPolicy,
    /// How long a disconnected device is waited for before the task fails.
    pub reconnect_wait_secs: u64,
    pub mcp_timeout_secs: u64,
    /// Steps kept in the agent's history window.
    pub history_steps: usize,
    /// Model answers in a row that could not be used before the task fails.
    pub max_rejected_in_a_row: u32,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            max_retries: 2,
            retry_backoff_ms: vec![500, 1000, 2000],
            prediction_retries: 2,
            step_delay_ms: 0,
            settle_timeout_ms: 2000,
            settle_poll_ms: 100,
            stuck_threshold: 3,
            ask_user_when_stuck: true,
            ask_user_timeout_secs: 120,
            ask_user_timeout_policy: AskTimeoutPolicy::Continue,
            reconnect_wait_secs: 30,
            mcp_timeout_secs: 30,
            history_steps: 8,
            max_rejected_in_a_row: 3,
        }
    }
}

/// Why the loop stops early, sent by the scheduler. A cancel also aborts what the step
/// is waiting on (a model call, a device wait); a shutdown lets the step finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopSignal {
    #[default]
    None,
    /// Cancelled over REST or WebSocket.
    Cancel,
    /// The server is shutting down: finish the step, mark the task interrupted.
    Shutdown,
    /// The server is shutting down and resumes interrupted tasks at its next start:
    /// finish the step and leave the task `running`, as a crash would, so start-up
    /// requeues it (`scheduler.resume_interrupted`).
    Suspend,
}

/// Everything the loop needs besides the task, its device and its agent.
#[derive(Clone)]
pub struct Runner {
    pub bus: EventBus,
    pub prompts: Arc<Prompts>,
    pub artifacts: ArtifactStore,
    pub cfg: RunnerConfig,
    pub mcp: McpRegistry,
    pub middleware: Vec<Arc<dyn ActionMiddleware>>,
    pub custom: HashMap<String, Arc<dyn CustomActionHandler>>,
    pub transform: Arc<dyn CoordinateTransform>,
    pub repr: ReprOptions,
}

/// One observation: what the agent sees, plus what the runner keeps for acting on it.
#[derive(Clone)]
struct Observed {
    repr: ScreenRepresentation,
    screen: Option<Arc<Screen>>,
    png: Option<bytes::Bytes>,
    screenshot_sha: Option<String>,
    /// A black screenshot: a secure window (password, payment). The tree is all we have.
    sensitive: bool,
    layout: Option<u64>,
    screenshot_ms: u64,
    hierarchy_ms: u64,
}

/// How the loop ended.
struct End {
    status: TaskStatus,
    reason: String,
    answer: Option<String>,
    /// Left unfinished for the next start to resume (`StopSignal::Suspend`).
    suspended: bool,
}

impl End {
    fn new(status: TaskStatus, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
            answer: None,
            suspended: false,
        }
    }

    fn suspended() -> Self {
        Self {
            suspended: true,
            ..Self::new(
                TaskStatus::Running,
                "the server shut down while the task ran; the next start resumes it from its last committed step",
            )
        }
    }
}

/// A failure that ends the task (as opposed to one the loop recovers from).
#[derive(Debug, thiserror::Error)]
enum Fatal {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Device(String),
}

impl Runner {
    pub fn new(
        bus: EventBus,
        prompts: Arc<Prompts>,
        artifacts: ArtifactStore,
        cfg: RunnerConfig,
    ) -> Self {
        Self {
            bus,
            prompts,
            artifacts,
            cfg,
            mcp: McpRegistry::default(),
            middleware: Vec::new(),
            custom: HashMap::new(),
            transform: Arc::new(LinearTransform),
            repr: ReprOptions::default(),
        }
    }

    /// Registers a custom action: agents that emit `{"action": name, …}` get it run by
    /// `handler` on the task's device. Returns the parser that knows the name, for agents
    /// and REST callers that must accept it.
    pub fn register_action(
        &mut self,
        parser: &mut crate::domain::ActionParser,
        name: &str,
        handler: Arc<dyn CustomActionHandler>,
    ) -> Result<(), String> {
        parser.register(name)?;
        self.custom.insert(name.to_string(), handler);
        Ok(())
    }

    /// Adds middleware around every device action, in order.
    pub fn with_middleware(mut self, m: Arc<dyn ActionMiddleware>) -> Self {
        self.middleware.push(m);
        self
    }

    /// Runs `task` (already `running` in the store) to its end and returns it as stored.
    pub async fn run(
        &self,
        task: Task,
        device: Arc<dyn Device>,
        mut agent: Box<dyn Agent>,
        stop: watch::Receiver<StopSignal>,
    ) -> Result<Task, StoreError> {
        let id = task.id;
        let stream = id.to_string();
        self.bus
            .publish(
                &stream,
                TaskEvent::Started {
                    task_id: id,
                    device: task.assigned_device.clone(),
                    agent: agent.describe(),
                },
            )
            .await?;
        let end = match self
            .run_loop(&task, device.as_ref(), agent.as_mut(), stop)
            .await
        {
            Ok(end) => end,
            Err(Fatal::Store(e)) => return Err(e),
            Err(Fatal::Device(msg)) => End::new(TaskStatus::Failed, msg),
        };
        if end.status == TaskStatus::Incomplete {
            tracing::warn!(task = %id, "task reached max_steps without finishing");
        }
        if end.suspended {
            return self.suspend(id, &end.reason).await;
        }
        let finished = match self
            .bus
            .store()
            .finish_task(id, end.status, Some(&end.reason), end.answer.as_deref())
            .await
        {
            Ok(t) => t,
            // Ended meanwhile (a cancel while waiting for an answer ends the task at once,
            // and publishes `task.finished` itself): keep the first ending.
            Err(StoreError::WrongStatus { .. }) => return self.bus.store().get_task(id).await,
            Err(e) => return Err(e),
        };
        self.bus
            .publish(&stream, TaskEvent::finished(&finished))
            .await?;
        Ok(finished)
    }

    /// Leaves the task `running` (out of `waiting_for_user`) for the next start to requeue.
    async fn suspend(&self, id: crate::domain::TaskId, reason: &str) -> Result<Task, StoreError> {
        let store = self.bus.store();
        match store
            .set_task_status(id, TaskStatus::Running, Some(reason))
            .await
        {
            Ok(t) => {
                self.bus
                    .publish(
                        &id.to_string(),
                        TaskEvent::Suspended {
                            task_id: id,
                            reason: reason.to_string(),
                        },
                    )
                    .await?;
                Ok(t)
            }
            Err(StoreError::WrongStatus { .. }) => store.get_task(id).await,
            Err(e) => Err(e),
        }
    }

    async fn run_loop(
        &self,
        task: &Task,
        device: &dyn Device,
        agent: &mut dyn Agent,
        mut stop: watch::Receiver<StopSignal>,
    ) -> Result<End, Fatal> {
        let store = self.bus.store().clone();
        let stream = task.id.to_string();
        let started = Instant::now();
        let deadline = Duration::from_secs(task.spec.timeout_seconds);
        let max_steps = task.spec.max_steps;

        // Resume: rebuild the agent's history from what was committed.
        let mut history = History::new(self.cfg.history_steps);
        let committed = store.steps(task.id).await?;
        for s in &committed {
            if let Some(a) = s
                .action
                .as_ref()
                .and_then(|v| serde_json::from_value::<Action>(v.clone()).ok())
            {
                history.push_step(StepRecord {
                    step: s.n,
                    thinking: s.thinking.clone().unwrap_or_default(),
                    action: a,
                    outcome: s.outcome.status.to_string(),
                });
            }
        }
        let mut n = committed.len() as u32;
        if n > 0 {
            self.bus
                .publish(
                    &stream,
                    TaskEvent::Resumed {
                        task_id: task.id,
                        from_step: n + 1,
                    },
                )
                .await?;
        }

        let size = self.screen_size(device).await?;
        let mut cached: Option<Observed> = None;
        let mut stuck = StuckDetector::new(self.cfg.stuck_threshold);
        let mut rejected_in_a_row = 0u32;
        let mut diagnostic: Option<String> = None;

        loop {
            match *stop.borrow_and_update() {
                StopSignal::Cancel => {
                    return Ok(End::new(TaskStatus::Cancelled, "cancelled by request"));
                }
                StopSignal::Shutdown => {
                    return Ok(End::new(
                        TaskStatus::Interrupted,
                        "the server shut down while the task ran (its committed steps are kept); resubmit it, or set scheduler.resume_interrupted = true so the next start resumes such tasks",
                    ));
                }
                StopSignal::Suspend => return Ok(End::suspended()),
                StopSignal::None => {}
            }
            if store.get_task(task.id).await?.cancel_requested {
                return Ok(End::new(TaskStatus::Cancelled, "cancelled by request"));
            }
            if started.elapsed() >= deadline {
                return Ok(End::new(
                    TaskStatus::TimedOut,
                    format!(
                        "the task ran longer than timeout_seconds ({})",
                        task.spec.timeout_seconds
                    ),
                ));
            }
            if n >= max_steps {
                return Ok(End::new(
                    TaskStatus::Incomplete,
                    format!("reached max_steps ({max_steps}) without the agent finishing"),
                ));
            }
            n += 1;
            let step_start = Instant::now();
            let started_at = chrono::Utc::now();

            // observe
            let obs = match cached.take() {
                Some(o) => o,
                None => match unless_cancelled(&mut stop, self.observe(device, size)).await {
                    None => continue,
                    Some(Ok(o)) => o,
                    Some(Err(e)) if e.is_disconnect() => {
                        if let Some(back) =
                            unless_cancelled(&mut stop, self.await_reconnect(device, &stream, &e))
                                .await
                        {
                            back?;
                        }
                        n -= 1; // the step did not happen; redo it
                        continue;
                    }
                    Some(Err(e)) => {
                        return Err(Fatal::Device(format!(
                            "cannot observe the screen: {e}. {}",
                            e.hint()
                        )));
                    }
                },
            };
            self.bus
                .publish(
                    &stream,
                    TaskEvent::StepObserved {
                        task_id: task.id,
                        step: n,
                        summary: obs.repr.summary.clone(),
                        app: obs.repr.app_package.clone(),
                        has_modal: obs.repr.has_modal,
                        sensitive: obs.sensitive,
                        screenshot: obs.screenshot_sha.clone(),
                        elements: obs.repr.actionable_elements.len(),
                    },
                )
                .await?;

            // decide
            if let Some(d) = diagnostic.take() {
                history.push_note(Note::McpResult {
                    step: n - 1,
                    tool: "droidpilot".into(),
                    result: d,
                    is_error: true,
                });
            }
            let ctx = AgentContext {
                instruction: task.spec.instruction.clone(),
                observation: Observation {
                    screen: obs.repr.clone(),
                    screenshot: obs
                        .png
                        .as_ref()
                        .and_then(|b| ImageData::from_bytes(b.clone()).ok()),
                    step_count: n - 1,
                    max_steps,
                    elapsed: started.elapsed(),
                },
                history: history.clone(),
            };
            let deciding = self.decide_reporting(&stream, n, agent, &ctx);
            let Some(decided) = unless_cancelled(&mut stop, deciding).await else {
                continue;
            };
            let decided = decided?;
            let mut step = Step {
                task_id: task.id,
                n,
                started_at,
                thinking: None,
                action: None,
                outcome: StepOutcome {
                    status: StepStatus::Ok,
                    error: None,
                    screen_changed: None,
                    detail: None,
                },
                screen: Some(
                    json!({"summary": obs.repr.summary, "app": obs.repr.app_package, "activity": obs.repr.activity,
                                    "has_modal": obs.repr.has_modal, "sensitive": obs.sensitive, "layout_hash": obs.layout.map(|h| format!("{h:016x}"))}),
                ),
                screenshot: obs.screenshot_sha.clone(),
                timings: StepTimings {
                    screenshot_ms: obs.screenshot_ms,
                    hierarchy_ms: obs.hierarchy_ms,
                    ..Default::default()
                },
                tokens_in: 0,
                tokens_out: 0,
                cost_usd: 0.0,
            };
            let decision: Decision = match decided {
                Ok(d) => d,
                Err(AgentError::Parse {
                    error, raw, usage, ..
                }) => {
                    rejected_in_a_row += 1;
                    step.thinking = Some(raw.chars().take(4000).collect());
                    step.outcome = StepOutcome {
                        status: StepStatus::Rejected,
                        error: Some(error.to_string()),
                        screen_changed: None,
                        detail: None,
                    };
                    step.tokens_in = usage.input_tokens;
                    step.tokens_out = usage.output_tokens;
                    self.record(&stream, &mut step, step_start).await?;
                    if rejected_in_a_row >= self.cfg.max_rejected_in_a_row {
                        return Ok(End::new(
                            TaskStatus::Failed,
                            format!(
                                "the model's answers could not be used {rejected_in_a_row} times in a row: {error}"
                            ),
                        ));
                    }
                    cached = Some(obs);
                    continue;
                }
                Err(e) => {
                    let msg = format!("the model failed: {e}. {}", e.hint());
                    step.outcome = StepOutcome {
                        status: StepStatus::Failed,
                        error: Some(format!("{}: {e}", e.code())),
                        screen_changed: None,
                        detail: None,
                    };
                    self.record(&stream, &mut step, step_start).await?;
                    return Ok(End::new(TaskStatus::Failed, msg));
                }
            };
            rejected_in_a_row = 0;
            step.thinking = Some(decision.thinking.clone()).filter(|t| !t.is_empty());
            step.action = serde_json::to_value(&decision.action).ok();
            step.tokens_in = decision.usage.input_tokens;
            step.tokens_out = decision.usage.output_tokens;
            step.cost_usd = decision.cost.unwrap_or(0.0);
            step.timings.inference_ms = decision.model_time.as_millis() as u64;
            // Self-correction attempts count toward the budget.
            n += decision.retries.min(max_steps.saturating_sub(n));
            self.bus
                .publish(
                    &stream,
                    TaskEvent::StepDecided {
                        task_id: task.id,
                        step: n,
                        thinking: step.thinking.clone(),
                        action: step.action.clone(),
                        retries: decision.retries,
                    },
                )
                .await?;

            // act
            let action = decision.action.clone();
            let mut outcome_text: String;
            match &action {
                Action::Finish {
                    success,
                    reason,
                    answer,
                } => {
                    step.outcome.detail = Some(json!({"success": success}));
                    self.record(&stream, &mut step, step_start).await?;
                    let status = if *success {
                        TaskStatus::Succeeded
                    } else {
                        TaskStatus::Failed
                    };
                    let reason = reason.clone().unwrap_or_else(|| {
                        if *success {
                            "the agent finished the task".into()
                        } else {
                            "the agent gave up".into()
                        }
                    });
                    return Ok(End {
                        answer: answer.clone(),
                        ..End::new(status, reason)
                    });
                }
                Action::AskUser { question, options } => {
                    let timeout = Duration::from_secs(self.cfg.ask_user_timeout_secs);
                    let (prompt_id, outcome) = self
                        .prompts
                        .ask(
                            &self.bus,
                            task.id,
                            question,
                            options.clone(),
                            timeout,
                            &mut stop,
                        )
                        .await?;
                    let answer = match outcome {
                        // The loop's stop check ends the task; the step is not recorded.
                        AskOutcome::Stopped => continue,
                        AskOutcome::Answered { answer, by } => {
                            step.outcome.detail =
                                Some(json!({"prompt_id": prompt_id, "answer": answer, "by": by}));
                            answer
                        }
                        AskOutcome::TimedOut => {
                            step.outcome = StepOutcome {
                                status: StepStatus::Failed,
                                error: Some("no answer in time".into()),
                                screen_changed: None,
                                detail: Some(json!({"prompt_id": prompt_id})),
                            };
                            if self.cfg.ask_user_timeout_policy == AskTimeoutPolicy::Fail {
                                self.record(&stream, &mut step, step_start).await?;
                                return Ok(End::new(
                                    TaskStatus::Failed,
                                    format!(
                                        "nobody answered \"{question}\" within {} s",
                                        timeout.as_secs()
                                    ),
                                ));
                            }
                            "(no answer)".to_string()
                        }
                    };
                    history.push_note(Note::UserAnswer {
                        step: n,
                        question: question.clone(),
                        answer: answer.clone(),
                    });
                    outcome_text = format!("the user answered: {answer}");
                }
                Action::McpCall { tool, args } => {
                    let call = self.mcp.call(
                        tool,
                        args.clone(),
                        Duration::from_secs(self.cfg.mcp_timeout_secs),
                    );
                    let Some(r) = unless_cancelled(&mut stop, call).await else {
                        continue;
                    };
                    let text = match &r.content {
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    };
                    step.outcome = StepOutcome {
                        status: StepStatus::ok_unless(r.is_error),
                        error: r.is_error.then(|| text.clone()),
                        screen_changed: None,
                        detail: Some(json!({"tool": tool, "result": r.content})),
                    };
                    history.push_note(Note::McpResult {
                        step: n,
                        tool: tool.clone(),
                        result: text.chars().take(2000).collect(),
                        is_error: r.is_error,
                    });
                    outcome_text = if r.is_error {
                        "tool failed".into()
                    } else {
                        "tool returned".into()
                    };
                }
                _ => {
                    let (action, skipped) =
                        match self.run_middleware_before(task, n, action.clone()).await {
                            Verdict::Run(a) => (a, None),
                            Verdict::Skip(reason) => (action.clone(), Some(reason)),
                        };
                    if let Some(reason) = skipped {
                        step.outcome = StepOutcome {
                            status: StepStatus::Skipped,
                            error: None,
                            screen_changed: None,
                            detail: Some(json!({"reason": reason})),
                        };
                        outcome_text = format!("skipped: {reason}");
                    } else {
                        step.action = serde_json::to_value(&action).ok();
                        let act_start = Instant::now();
                        let acted = self.act(device, &action, obs.clone(), size);
                        let Some((result, latest)) = unless_cancelled(&mut stop, acted).await
                        else {
                            continue;
                        };
                        step.timings.action_ms = act_start.elapsed().as_millis() as u64;
                        let mw_outcome = result.clone().map_err(|e| e.to_string());
                        for m in &self.middleware {
                            m.after(task.id, n, &action, &mw_outcome).await;
                        }
                        match result {
                            Ok(detail) => {
                                let settle_start = Instant::now();
                                let settled = self.settle_after(device, &action, latest.layout);
                                let settled = unless_cancelled(&mut stop, settled).await;
                                step.timings.settle_ms = settle_start.elapsed().as_millis() as u64;
                                let changed = settled.flatten();
                                step.outcome = StepOutcome {
                                    status: StepStatus::Ok,
                                    error: None,
                                    screen_changed: changed,
                                    detail: Some(detail),
                                };
                                let delay = Duration::from_millis(self.cfg.step_delay_ms);
                                let cancelled = settled.is_none()
                                    || (self.cfg.step_delay_ms > 0
                                        && unless_cancelled(&mut stop, tokio::time::sleep(delay))
                                            .await
                                            .is_none());
                                if cancelled {
                                    // The action ran: keep its step, then the loop ends the task.
                                    self.record(&stream, &mut step, step_start).await?;
                                    continue;
                                }
                                outcome_text = match changed {
                                    Some(true) => "screen changed".into(),
                                    Some(false) => "no visible change".into(),
                                    None => "done".into(),
                                };
                            }
                            Err(e) if matches!(&e, ExecError::Device(d) if d.is_disconnect()) => {
                                step.outcome = StepOutcome {
                                    status: StepStatus::Failed,
                                    error: Some(e.to_string()),
                                    screen_changed: None,
                                    detail: None,
                                };
                                self.record(&stream, &mut step, step_start).await?;
                                history.push_step(StepRecord {
                                    step: n,
                                    thinking: decision.thinking.clone(),
                                    action: action.clone(),
                                    outcome: format!("failed: {e}"),
                                });
                                let de = DeviceError::Disconnected {
                                    serial: device.serial().to_string(),
                                };
                                if let Some(back) = unless_cancelled(
                                    &mut stop,
                                    self.await_reconnect(device, &stream, &de),
                                )
                                .await
                                {
                                    back?;
                                }
                                continue;
                            }
                            Err(e) => {
                                step.outcome = StepOutcome {
                                    status: StepStatus::Failed,
                                    error: Some(format!("{}: {e}", e.error_type())),
                                    screen_changed: None,
                                    detail: Some(
                                        json!({"hint": e.hint(), "selector": e.selector()}),
                                    ),
                                };
                                outcome_text = format!("failed: {e}. {}", e.hint());
                                if agent.fails_on_failed_action() {
                                    self.record(&stream, &mut step, step_start).await?;
                                    return Ok(failed_step_end(n, &action, &e));
                                }
                                // The retries re-observed; the next decision reuses that screen.
                                cached = Some(latest);
                            }
                        }
                    }
                }
            }

            // verify: stuck detection over what the agent did and what the screen did.
            let tapped = match &action {
                Action::Tap {
                    target: TargetField(t),
                }
                | Action::LongPress {
                    target: TargetField(t),
                    ..
                }
                | Action::DoubleTap {
                    target: TargetField(t),
                } => Some(serde_json::to_string(t).unwrap_or_default()),
                _ => None,
            };
            match stuck.observe(obs.layout, tapped) {
                Stuck::No => {}
                Stuck::Diagnose(why) => {
                    diagnostic = Some(format!(
                        "You seem stuck: {why}. Try something different: go back, scroll, or pick another element."
                    ));
                    outcome_text.push_str(" (stuck: diagnostic sent)");
                }
                Stuck::Escalate(why) => {
                    if self.cfg.ask_user_when_stuck {
                        step.outcome.detail = Some(json!({"stuck": why}));
                        self.record(&stream, &mut step, step_start).await?;
                        history.push_step(StepRecord {
                            step: n,
                            thinking: decision.thinking.clone(),
                            action: action.clone(),
                            outcome: outcome_text.clone(),
                        });
                        let q = format!(
                            "I seem to be stuck ({why}) on: \"{}\". How should I continue?",
                            task.spec.instruction
                        );
                        let timeout = Duration::from_secs(self.cfg.ask_user_timeout_secs);
                        let (_, outcome) = self
                            .prompts
                            .ask(&self.bus, task.id, &q, None, timeout, &mut stop)
                            .await?;
                        match outcome {
                            AskOutcome::Stopped => continue,
                            AskOutcome::Answered { answer, .. } => {
                                history.push_note(Note::UserAnswer {
                                    step: n,
                                    question: q,
                                    answer,
                                });
                                stuck.reset();
                                continue;
                            }
                            AskOutcome::TimedOut => {
                                return Ok(End::new(
                                    TaskStatus::Failed,
                                    format!("stuck ({why}) and nobody answered"),
                                ));
                            }
                        }
                    }
                    return Ok(End::new(TaskStatus::Failed, format!("stuck: {why}")));
                }
                Stuck::Abort(why) => {
                    self.record(&stream, &mut step, step_start).await?;
                    return Ok(End::new(TaskStatus::Failed, format!("stuck: {why}")));
                }
            }

            // record + publish
            history.push_step(StepRecord {
                step: n,
                thinking: decision.thinking.clone(),
                action,
                outcome: outcome_text,
            });
            self.record(&stream, &mut step, step_start).await?;
        }
    }

    /// Commits the step, then publishes `step.executed`.
    async fn record(
        &self,
        stream: &str,
        step: &mut Step,
        step_start: Instant,
    ) -> Result<(), StoreError> {
        let t = &step.timings;
        let total = step_start.elapsed().as_secs_f64() * 1000.0;
        step.timings.overhead_ms = (total
            - (t.screenshot_ms + t.hierarchy_ms + t.inference_ms + t.action_ms + t.settle_ms)
                as f64)
            .max(0.0);
        self.bus.store().append_step(step).await?;
        metrics::counter!("droidpilot_steps_total", "status" => step.outcome.status.as_str())
            .increment(1);
        metrics::histogram!("droidpilot_step_overhead_ms").record(step.timings.overhead_ms);
        self.bus
            .publish(
                stream,
                TaskEvent::StepExecuted {
                    task_id: step.task_id,
                    step: step.n,
                    action: step.action.clone(),
                    outcome: step.outcome.clone(),
                    timings: step.timings.clone(),
                    tokens_in: step.tokens_in,
                    tokens_out: step.tokens_out,
                    cost_usd: step.cost_usd,
                    screenshot: step.screenshot.clone(),
                },
            )
            .await?;
        Ok(())
    }

    async fn screen_size(&self, device: &dyn Device) -> Result<ScreenSize, Fatal> {
        device.info().await.map(|i| i.screen).map_err(|e| {
            Fatal::Device(format!(
                "cannot read the device's screen size: {e}. {}",
                e.hint()
            ))
        })
    }

    /// Screenshot, hierarchy and foreground activity, concurrently. Either capture may
    /// fail alone: a failed tree degrades to screenshot only, a black or failed screenshot
    /// to tree only (flagged sensitive). Only when both fail is it an error.
    async fn observe(
        &self,
        device: &dyn Device,
        size: ScreenSize,
    ) -> Result<Observed, DeviceError> {
        let shot = async {
            let t = Instant::now();
            (device.screenshot().await, t.elapsed().as_millis() as u64)
        };
        let tree = async {
            let t = Instant::now();
            (device.hierarchy().await, t.elapsed().as_millis() as u64)
        };
        let ((shot, screenshot_ms), (xml, hierarchy_ms), current) =
            tokio::join!(shot, tree, device.current_app());

        let mut sensitive = false;
        let mut png = None;
        let shot_err = match shot {
            Ok(s) if is_black(&s) => {
                sensitive = true;
                None
            }
            Ok(s) => match s.png() {
                Ok(p) => {
                    png = Some(p);
                    None
                }
                Err(e) => Some(e),
            },
            Err(e) => Some(e),
        };
        let mut opts = self.repr.clone();
        opts.screen = Some(size);
        opts.activity = current.ok().and_then(|c| c.activity);
        let (repr, screen, tree_err) = match xml.map(|x| Screen::from_xml(&x, &opts)) {
            Ok(Ok(screen)) => (screen.representation(&opts), Some(Arc::new(screen)), None),
            Ok(Err(parse)) => (
                degraded(&format!("{parse}"), &opts),
                None,
                Some(DeviceError::HierarchyUnavailable(parse.to_string())),
            ),
            Err(e) => (degraded(&e.to_string(), &opts), None, Some(e)),
        };
        if png.is_none() && screen.is_none() {
            // Nothing to act on. A disconnect anywhere wins, so the caller waits for it.
            let err = [tree_err, shot_err]
                .into_iter()
                .flatten()
                .find(|e| e.is_disconnect());
            return Err(err.unwrap_or_else(|| {
                DeviceError::HierarchyUnavailable(
                    "neither a screenshot nor a UI tree could be captured".into(),
                )
            }));
        }
        let screenshot_sha = match &png {
            Some(p) => Some(
                self.artifacts
                    .put("screenshot", "image/png", "png", p)
                    .await
                    .map_err(|e| DeviceError::Protocol(e.to_string()))?,
            ),
            None => None,
        };
        let layout = screen.as_ref().map(|s| layout_hash(&s.tree).0);
        Ok(Observed {
            repr,
            screen,
            png,
            screenshot_sha,
            sensitive,
            layout,
            screenshot_ms,
            hierarchy_ms,
        })
    }

    /// `decide`, publishing every retry its model calls make as `model.retry` (attempt,
    /// delay_ms, cause) while it runs, so a client sees why a step takes long.
    async fn decide_reporting(
        &self,
        stream: &str,
        n: u32,
        agent: &mut dyn Agent,
        ctx: &AgentContext,
    ) -> Result<Result<Decision, AgentError>, StoreError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let deciding = crate::llm::retry::with_retry_sink(tx, self.decide(agent, ctx));
        tokio::pin!(deciding);
        loop {
            tokio::select! {
                decided = &mut deciding => {
                    while let Ok(r) = rx.try_recv() {
                        self.publish_retry(stream, n, &r).await?;
                    }
                    return Ok(decided);
                }
                Some(r) = rx.recv() => self.publish_retry(stream, n, &r).await?,
            }
        }
    }

    async fn publish_retry(
        &self,
        stream: &str,
        n: u32,
        r: &crate::llm::retry::RetryNotice,
    ) -> Result<(), StoreError> {
        self.bus
            .publish(
                stream,
                TaskEvent::ModelRetry {
                    task_id: stream.parse().ok(),
                    step: n,
                    attempt: r.attempt,
                    delay_ms: r.delay_ms,
                    cause: r.cause.clone(),
                },
            )
            .await
            .map(|_| ())
    }

    /// Asks the agent, retrying transient model failures. An unreachable server is not
    /// asked again: the HTTP layer already spent its quick budget on it.
    async fn decide(
        &self,
        agent: &mut dyn Agent,
        ctx: &AgentContext,
    ) -> Result<Decision, AgentError> {
        let mut attempt = 0;
        loop {
            match agent.next(ctx).await {
                Err(AgentError::Llm(e))
                    if e.is_transient()
                        && !matches!(e, crate::llm::LlmError::Unreachable { .. })
                        && attempt < self.cfg.prediction_retries =>
                {
                    attempt += 1;
                    let delay = self.backoff(attempt - 1);
                    tracing::warn!(error = %e, attempt, "model call failed; asking again");
                    crate::llm::retry::report(
                        attempt,
                        delay,
                        format!("{e} (asking the agent again)"),
                    );
                    tokio::time::sleep(delay).await;
                }
                other => return other,
            }
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let b = &self.cfg.retry_backoff_ms;
        Duration::from_millis(b.get(attempt as usize).or(b.last()).copied().unwrap_or(500))
    }

    async fn run_middleware_before(&self, task: &Task, n: u32, mut action: Action) -> Verdict {
        for m in &self.middleware {
            match m.before(task.id, n, action).await {
                Verdict::Run(a) => action = a,
                skip @ Verdict::Skip(_) => return skip,
            }
        }
        Verdict::Run(action)
    }

    /// Executes with retries, re-observing before each retry so a target that moved is
    /// found again. Returns the result and the latest observation.
    async fn act(
        &self,
        device: &dyn Device,
        action: &Action,
        mut obs: Observed,
        size: ScreenSize,
    ) -> (Result<Value, ExecError>, Observed) {
        if let Action::Custom(c) = action {
            let r = match self.custom.get(&c.name) {
                Some(h) => h.run(device, &c.args).await.map_err(|e| {
                    ExecError::Device(DeviceError::CommandFailed {
                        command: c.name.clone(),
                        exit_code: 1,
                        stderr: e,
                    })
                }),
                None => Err(ExecError::NotADeviceAction(c.name.clone())),
            };
            return (r, obs);
        }
        let mut attempt = 0;
        loop {
            let ctx = ExecContext {
                screen: obs.screen.as_deref(),
                size,
                transform: self.transform.as_ref(),
            };
            match exec::execute(device, action, &ctx).await {
                Ok(o) => return (Ok(o.detail), obs),
                Err(e)
                    if e.is_retryable()
                        && !matches!(&e, ExecError::Device(d) if d.is_disconnect())
                        && attempt < self.cfg.max_retries =>
                {
                    tokio::time::sleep(self.backoff(attempt)).await;
                    attempt += 1;
                    match self.observe(device, size).await {
                        Ok(o) => obs = o,
                        Err(_) => return (Err(e), obs),
                    }
                }
                Err(e) => return (Err(e), obs),
            }
        }
    }

    /// `settle` for an action that is expected to change the screen; None otherwise.
    async fn settle_after(
        &self,
        device: &dyn Device,
        action: &Action,
        before: Option<u64>,
    ) -> Option<bool> {
        if action.expects_screen_change() {
            self.settle(device, before).await
        } else {
            None
        }
    }

    /// Waits until the layout differs from `before` and then holds still, or until the
    /// settle timeout. Returns whether it changed (None when it could not tell).
    async fn settle(&self, device: &dyn Device, before: Option<u64>) -> Option<bool> {
        let before = before?;
        let deadline = Instant::now() + Duration::from_millis(self.cfg.settle_timeout_ms);
        let poll = Duration::from_millis(self.cfg.settle_poll_ms.max(10));
        let mut last: Option<u64> = None;
        let mut changed = false;
        loop {
            if let Ok(xml) = device.hierarchy().await
                && let Ok(tree) = crate::screen::parse(&xml)
            {
                let h = layout_hash(&tree).0;
                if h != before {
                    changed = true;
                }
                // Idle: a change happened and the next read shows the same layout.
                if changed && last == Some(h) {
                    return Some(true);
                }
                last = Some(h);
            }
            if Instant::now() >= deadline {
                return Some(changed);
            }
            if !changed {
                // Nothing yet: poll again soon. After a change, the next read confirms idleness.
                tokio::time::sleep(poll).await;
            }
        }
    }

    /// A disconnected device: publish, then try to reconnect for up to
    /// `reconnect_wait_secs`; the loop resumes from the last committed step.
    async fn await_reconnect(
        &self,
        device: &dyn Device,
        stream: &str,
        err: &DeviceError,
    ) -> Result<(), Fatal> {
        self.bus
            .publish(
                stream,
                TaskEvent::DeviceLost {
                    task_id: stream.parse().ok(),
                    device: device.serial().to_string(),
                    error: err.to_string(),
                },
            )
            .await?;
        let deadline = Instant::now() + Duration::from_secs(self.cfg.reconnect_wait_secs);
        let mut delay = Duration::from_millis(200);
        loop {
            let _ = device.reconnect().await;
            if device.health().await.is_ok() {
                self.bus
                    .publish(
                        stream,
                        TaskEvent::DeviceBack {
                            task_id: stream.parse().ok(),
                            device: device.serial().to_string(),
                        },
                    )
                    .await?;
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Fatal::Device(format!(
                    "device {} disconnected and did not come back within {} s. {}",
                    device.serial(),
                    self.cfg.reconnect_wait_secs,
                    err.hint()
                )));
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(3));
        }
    }
}

/// A scripted run ends at its first failed step: the reason names the step and the error.
fn failed_step_end(n: u32, action: &Action, e: &ExecError) -> End {
    End::new(
        TaskStatus::Failed,
        format!(
            "step {n} ({}) failed: {}: {e}. {} (a replay with \"on_error\": \"continue\" goes on after a failed step)",
            action.name(),
            e.error_type(),
            e.hint()
        ),
    )
}

/// Runs `f` unless the task is cancelled first (`None` then): a cancel does not wait for
/// a model call's retries, an action's retries, a settle or a reconnect to end. The
/// caller goes back to the top of the loop, which ends the task.
async fn unless_cancelled<F: std::future::Future>(
    stop: &mut watch::Receiver<StopSignal>,
    f: F,
) -> Option<F::Output> {
    tokio::select! {
        r = f => Some(r),
        _ = cancelled(stop) => None,
    }
}

/// Resolves on a cancel; never when the sender is gone (nobody can cancel any more).
async fn cancelled(stop: &mut watch::Receiver<StopSignal>) {
    if stop.wait_for(|s| *s == StopSignal::Cancel).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The representation when no tree could be read: the agent acts from the screenshot.
fn degraded(why: &str, opts: &ReprOptions) -> ScreenRepresentation {
    ScreenRepresentation {
        app_package: None,
        activity: opts.activity.clone(),
        has_modal: false,
        elements: format!("(UI tree unavailable: {why}; act by coordinates on the screenshot)"),
        summary: "UI tree unavailable; screenshot only".into(),
        actionable_elements: Vec::new(),
    }
}

/// A secure window (FLAG_SECURE) captures as solid black. Only raw frames and small PNGs
/// are checked: a black PNG compresses to a few KiB, so a large one cannot be black and
/// is not decoded.
fn is_black(s: &crate::device::Screenshot) -> bool {
    let sample = |raw: &[u8]| {
        raw.chunks_exact(4)
            .step_by(97)
            .all(|p| p[0] < 8 && p[1] < 8 && p[2] < 8)
    };
    match &s.data {
        ScreenshotData::Rgba(raw) => !raw.is_empty() && sample(raw),
        ScreenshotData::Png(p) if p.len() < 64 * 1024 => s
            .rgba()
            .map(|raw| !raw.is_empty() && sample(&raw))
            .unwrap_or(false),
        ScreenshotData::Png(_) => false,
    }
}
