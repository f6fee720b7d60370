//! One agent loop per task: observe → decide → act → settle → verify → record → publish,
//! until the agent finishes, the step budget or time runs out, or someone cancels.
//!
//! Every step is committed (`Store::append_step`) before the next one starts, and the
//! loop resumes from the last committed step, so a crash or a device that drops loses at
//! most the step in flight. Failures are sorted by who can fix them: a target that is not
//! on screen is retried after re-observing; a model that times out is asked again; a
//! device that disconnects is waited for; anything else ends the task with a reason a
//! person can act on.
//!
//! This module owns the `Runner`, the loop and the step (`Runner::step`, which reads top to
//! bottom like the phases). Each phase is a method in its own file that takes the value
//! the phase before handed it (act hands settle an `Acted`, settle hands verify the
//! step's outcome) and returns its own, or a `Break` (commit the step now, redo it, or end
//! the task); the step is recorded and published in one place, `record_phase` then
//! `publish_phase` (`record.rs`). Hooks (`run::hooks`) are called at the boundary, before
//! decide, around act, on a claimed finish and on a failed action.

mod act;
mod ask;
mod budget;
mod config;
mod decide;
mod extend;
mod manual;
mod observe;
mod reconnect;
mod record;
mod remember;
mod settle;
mod stale;
mod state;
mod verify;
mod video;

use std::ops::ControlFlow;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::watch;

use super::stop::StopSignal;
pub use config::{AskTimeoutPolicy, RunnerConfig};
pub use manual::{ManualDone, outcome_detail};
pub use record::ManualOutcome;
use record::StepStart;

use super::artifacts::ArtifactStore;
use super::events::EventBus;
use super::finish::{Ending, end_task};
use super::hooks::{
    AfterTakeOver, CustomActionHook, MiddlewareHook, RunHook, RunHooks, StepRef, TakenOver,
};
use super::interaction::Prompts;
use super::mcp::McpRegistry;
use super::middleware::{ActionMiddleware, CustomActionHandler};
use super::stop::unless_stopped;
use super::takeover::TakeOvers;
use crate::agent::context::Note;
use crate::agent::{Agent, AgentError, ProducedScript};
use crate::device::Device;
use crate::device::pool::DevicePool;
use crate::domain::TaskEvent;
use crate::domain::{CoordinateTransform, LinearTransform, Task, TaskId, TaskStatus};
use crate::screen::ReprOptions;
use crate::script::ScriptSource;
use crate::store::StoreError;
use observe::Observed;
use record::{PasswordGuard, StepDraft, Then};
use state::RunState;

/// Everything the loop needs besides the task, its device and its agent.
#[derive(Clone)]
pub struct Runner {
    pub bus: EventBus,
    pub prompts: Arc<Prompts>,
    pub artifacts: ArtifactStore,
    pub cfg: RunnerConfig,
    pub mcp: McpRegistry,
    /// Called at every hook point, in order (middleware and custom actions are hooks too).
    pub hooks: RunHooks,
    pub transform: Arc<dyn CoordinateTransform>,
    pub repr: ReprOptions,
    /// The pool that reconnects a dropped device while the runner waits (`with_pool`);
    /// without one, the runner reconnects its device on the pool's default policy.
    pub pool: Option<DevicePool>,
    /// Pause / manual actions / resume of the tasks this runner runs (`run::takeover`):
    /// the take-over hook the boundary asks after `hooks`.
    pub takeovers: Arc<TakeOvers>,
    /// Describes the installed apps in the agents' device context (`with_apps`); without
    /// it they are listed by label.
    pub apps: Option<crate::apps::AppKnowledge>,
    /// OCR merged into observations of the devices that want it (`ocr`, `observe`).
    pub ocr: Arc<crate::ocr::Ocr>,
    /// The operator's `[actions]`: custom actions and HTTP hooks (`run::extend`).
    pub actions: Arc<crate::run::extend::LiveActions>,
    /// The longest segment of a `record_video` task's recording (`video`), in seconds.
    pub record_segment_secs: u64,
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

/// Why a phase cut the step short.
enum Break {
    /// Record the step as it stands, then do this.
    Commit(Then),
    /// Nothing to record (a cancel, a device that came back): back to the boundary.
    Redo,
    /// The task ends without recording this step.
    End(End),
}

/// A phase's result: its value, or a `Break`.
type Phase<T> = Result<ControlFlow<Break, T>, Fatal>;

/// Unwraps a phase's value, or leaves the phases: a commit breaks out of the labelled
/// block `$phases` with what follows the step, to record it as it stands; a redo or an
/// end leaves `Runner::step` at once.
macro_rules! phase {
    ($phases:lifetime, $e:expr) => {
        match $e? {
            ControlFlow::Continue(v) => v,
            ControlFlow::Break(Break::Commit(then)) => break $phases then,
            ControlFlow::Break(Break::Redo) => return Ok(None),
            ControlFlow::Break(Break::End(e)) => return Ok(Some(e)),
        }
    };
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
            hooks: RunHooks::default(),
            transform: Arc::new(LinearTransform),
            repr: ReprOptions::default(),
            pool: None,
            takeovers: Arc::new(TakeOvers::default()),
            apps: None,
            ocr: Arc::new(crate::ocr::Ocr::new(Default::default())),
            actions: Arc::default(),
            record_segment_secs: 180,
        }
    }

    /// Records `record_video` tasks in segments of at most `secs` seconds.
    pub fn with_record_segments(mut self, secs: u64) -> Self {
        self.record_segment_secs = secs;
        self
    }

    /// Lists the installed apps to agents with what each can do (`apps`).
    pub fn with_apps(mut self, apps: crate::apps::AppKnowledge) -> Self {
        self.apps = Some(apps);
        self
    }

    /// Turns points into pixels with `t` (on every path through this runner).
    pub fn with_transform(mut self, t: Arc<dyn CoordinateTransform>) -> Self {
        self.transform = t;
        self
    }

    /// Waits on `pool` for a dropped device instead of reconnecting it itself.
    pub fn with_pool(mut self, pool: DevicePool) -> Self {
        self.pool = Some(pool);
        self
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
        self.hooks.push(Arc::new(CustomActionHook {
            name: name.to_string(),
            handler,
        }));
        Ok(())
    }

    /// Adds middleware around every device action, in order.
    pub fn with_middleware(self, m: Arc<dyn ActionMiddleware>) -> Self {
        self.with_hook(Arc::new(MiddlewareHook(m)))
    }

    /// Adds a hook, called after the ones added before it.
    pub fn with_hook(mut self, hook: Arc<dyn RunHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Makes `id` pausable from now on (the scheduler calls it before the claim; `run`
    /// again, which keeps the same control).
    pub fn register_takeover(&self, id: TaskId) {
        let max_pause = std::time::Duration::from_secs(self.cfg.max_pause_secs);
        self.takeovers.register(id, self.bus.clone(), max_pause);
    }

    /// Runs `task` (already `running` in the store) to its end and returns it as stored.
    /// `task` is as read after its claim: its step count and cancel flag are trusted, not
    /// read again; `stop` was registered before the claim, so no cancel falls between.
    pub async fn run(
        &self,
        task: Task,
        device: Arc<dyn Device>,
        mut agent: Box<dyn Agent>,
        stop: watch::Receiver<StopSignal>,
    ) -> Result<Task, StoreError> {
        let id = task.id;
        // Written with the first step's writes, not waited for: the stream keeps its
        // order, and a failed write surfaces at the stream's next commit.
        let started = TaskEvent::Started {
            task_id: id,
            device: task.assigned_device.clone(),
            agent: agent.describe(),
        };
        self.bus
            .commit_soon(&id.to_string(), async { Ok(Vec::new()) }, vec![started]);
        // A task that asked for OCR has it on its device's observations while it runs.
        let _ocr = crate::agent::spec::asks_ocr(task.spec.agent.as_ref())
            .then(|| self.ocr.ask(device.serial()));
        self.register_takeover(id);
        let recording = self.start_recording(&task, &device).await;
        // A panic anywhere in the loop (an agent, a hook, a bug) ends this task, not the
        // process's hold on it: the task fails with the panic's message.
        agent.give_app_strings(crate::agent::appstrings::AppStringsSource::new(
            device.clone(),
        ));
        let looping = self.run_loop(&task, device.as_ref(), agent.as_mut(), stop);
        let ran = std::panic::AssertUnwindSafe(looping).catch_unwind().await;
        self.takeovers.unregister(id);
        if let Some(rec) = recording
            && let Err(e) = self.finish_recording(&task, rec).await
        {
            tracing::warn!(task = %id, error = %e, "the screen recording could not be stored");
        }
        let end = match ran {
            Ok(Ok(end)) => end,
            // A write that failed (after `PatientStore`'s retries) ends the task here:
            // left `running`, it would outlive its timeout on a phone already released.
            Ok(Err(Fatal::Store(e))) => store_failed(id, &e),
            // The code seed 004's coordinator reads (`run::result::CompletionCode`).
            Ok(Err(Fatal::Device(msg))) => {
                End::new(TaskStatus::Failed, format!("device_unreachable: {msg}"))
            }
            Err(panic) => End::new(TaskStatus::Failed, panicked(&*panic)),
        };
        if end.status == TaskStatus::Incomplete {
            tracing::warn!(task = %id, "task reached max_steps without finishing");
        }
        if end.suspended {
            return self.suspend(id, &end.reason).await;
        }
        let ok = end.status == TaskStatus::Succeeded;
        if let Some(produced) = agent.take_script(ok, Some(&end.reason)) {
            self.save_script(id, produced).await?;
        }
        self.finish(id, end).await
    }

    /// Stores a script the agent produced (a new one, or a healed version of the one it
    /// replayed) and says so on the task's stream.
    async fn save_script(&self, id: TaskId, p: ProducedScript) -> Result<(), StoreError> {
        // A recording's custom steps meet the same check as a stored document: a secret
        // parameter's value written out by the model is never stored.
        let table = self.actions.current();
        if let Err(e) = crate::run::extend::scripts::check(&p.script, &table.custom) {
            tracing::warn!(task = %id, path = %e.path, code = e.code, "recorded script not saved");
            return Ok(());
        }
        let store = self.bus.store();
        let (rec, how) = match p.healed_from {
            Some((script_id, from_version)) => {
                let source = ScriptSource::Healed {
                    task_id: id,
                    from_version,
                };
                let rec = match store
                    .add_script_version(script_id, &p.script, source.clone())
                    .await
                {
                    // Deleted while the task ran: keep the healed script as a new one.
                    Err(StoreError::ScriptNotFound(_)) => {
                        store.create_script(&p.script, source).await?
                    }
                    other => other?,
                };
                (rec, "healed")
            }
            None => (
                store
                    .create_script(&p.script, ScriptSource::Navigator { task_id: id })
                    .await?,
                "recorded",
            ),
        };
        tracing::info!(task = %id, script = %rec.id, version = rec.version, how, "script saved");
        self.bus
            .publish(
                &id.to_string(),
                TaskEvent::ScriptSaved {
                    task_id: id,
                    script_id: rec.id,
                    version: rec.version,
                    how: how.into(),
                },
            )
            .await?;
        Ok(())
    }

    /// The loop: at each boundary, stop or go on; each pass is one step.
    async fn run_loop(
        &self,
        task: &Task,
        device: &dyn Device,
        agent: &mut dyn Agent,
        stop: watch::Receiver<StopSignal>,
    ) -> Result<End, Fatal> {
        let app = agent.required_app().map(str::to_string);
        if let Err(e) = required_app(device, app.as_deref()).await {
            let reason = format!("{}: {e}. {}", e.code(), e.hint());
            return Ok(End::new(TaskStatus::Failed, reason));
        }
        let replay = agent.fails_on_failed_action();
        let mut st = RunState::resume(self, task, device, replay, stop).await?;
        loop {
            if let Some(end) = self.boundary(&mut st).await? {
                return Ok(end);
            }
            if let Some(end) = self.step(&mut st, device, agent).await? {
                return Ok(end);
            }
        }
    }

    /// One step, phase by phase: observe → decide → act → settle → verify → record →
    /// publish, each phase handing the next its value. A phase may cut the step short
    /// (`Break`): a commit records the step as it stands, a redo goes back to the
    /// boundary with nothing recorded. Returns the task's end when one follows.
    async fn step(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        agent: &mut dyn Agent,
    ) -> Result<Option<End>, Fatal> {
        let start = StepStart::now();
        let Some(obs) = self.observe_phase(st, device).await? else {
            return Ok(None);
        };
        let mut draft = self.draft(st, agent, start, &obs);
        if agent.wants_device_context() {
            self.refresh_apps(st, device).await;
        }
        let then = 'phases: {
            let decision = phase!('phases, self.decide_phase(st, agent, &obs, &mut draft).await);
            draft.fixed_index = agent.fixed_action_index();
            let act = self.act_phase(st, device, &decision, &obs, &mut draft);
            let acted = phase!('phases, act.await);
            let outcome = phase!('phases, self.settle_phase(st, device, acted, &mut draft).await);
            let verify = self.verify_phase(st, agent, &decision, &obs, outcome, &mut draft);
            phase!('phases, verify.await);
            Then::Next
        };
        let recorded = self.record_phase(draft);
        self.publish_phase(st, recorded).await?;
        self.follow(st, device, then).await
    }

    /// The step's draft, on the observed screen: the agent's secrets and the screen's
    /// password fields are kept out of what it records.
    fn draft(
        &self,
        st: &RunState<'_>,
        agent: &dyn Agent,
        start: StepStart,
        obs: &Observed,
    ) -> StepDraft {
        let mut draft = StepDraft::new(st.task().id, st.step(), start, obs, st.size());
        draft.hide(agent.secrets());
        draft.custom = Some(self.actions.current());
        if let Some(screen) = &obs.screen {
            draft.guard_passwords(PasswordGuard {
                screen: screen.clone(),
                size: st.size(),
                transform: self.transform.clone(),
            });
        }
        draft
    }

    /// The step boundary: hooks that hold the loop (take-over), then a stop, a cancel,
    /// the deadline or the step budget end the task.
    async fn boundary(&self, st: &mut RunState<'_>) -> Result<Option<End>, Fatal> {
        if let Some(end) = self.take_over(st).await? {
            return Ok(Some(end));
        }
        match *st.stop().signal.borrow_and_update() {
            StopSignal::Cancel => {
                return Ok(Some(End::new(
                    TaskStatus::Cancelled,
                    "cancelled by request",
                )));
            }
            StopSignal::Shutdown => {
                return Ok(Some(End::new(
                    TaskStatus::Interrupted,
                    "the server shut down while the task ran (its committed steps are kept); resubmit it, or set scheduler.resume_interrupted = true so the next start resumes such tasks",
                )));
            }
            StopSignal::Suspend => return Ok(Some(End::suspended())),
            StopSignal::None => {}
        }
        let task = st.task();
        // `task` was read after the claim; later cancels arrive as a signal, or in the
        // store's flag, read at most once per poll interval.
        let flagged = task.cancel_requested
            || (st.cancel_poll_due() && self.bus.store().get_task(task.id).await?.cancel_requested);
        if flagged {
            return Ok(Some(End::new(
                TaskStatus::Cancelled,
                "cancelled by request",
            )));
        }
        if st.stop().past_deadline() {
            return Ok(Some(End::new(
                TaskStatus::TimedOut,
                format!(
                    "the task ran longer than timeout_seconds ({})",
                    task.spec.timeout_seconds
                ),
            )));
        }
        let max_steps = task.spec.max_steps;
        if st.budget_used() >= max_steps {
            return Ok(Some(End::new(
                TaskStatus::Incomplete,
                format!("reached max_steps ({max_steps}) without the agent finishing"),
            )));
        }
        Ok(st
            .budget_exceeded(&self.cfg)
            .map(|why| End::new(TaskStatus::Failed, why)))
    }

    /// Asks the boundary hooks, then the take-over hook (`run::takeover`), whether a
    /// person holds the loop, and records what they hand back (`hooks::TakenOver`): their
    /// steps counted, the held time off the timeout, their actions told to the agent.
    /// Returns the task's end when they finished or cancelled it. A stop ends the hold
    /// (the boundary then ends the task).
    async fn take_over(&self, st: &mut RunState<'_>) -> Result<Option<End>, Fatal> {
        let at = st.at();
        let asking = async {
            let taken = match self.hooks.is_empty() {
                true => None,
                false => self.hooks.at_boundary(at).await?,
            };
            if taken
                .as_ref()
                .is_some_and(|t| t.then != AfterTakeOver::Resume)
            {
                return Ok(taken);
            }
            let person = self.takeovers.hold(at).await?;
            Ok::<_, StoreError>(TakenOver::both(taken, person))
        };
        let Some(asked) = unless_stopped(&mut st.stop().signal, asking).await else {
            return Ok(None);
        };
        let Some(t) = asked? else {
            return Ok(None);
        };
        let acted = (!t.actions.is_empty()).then(|| Note::PersonActed {
            step: at.step,
            by: t.by.unwrap_or_default(),
            actions: t.actions,
        });
        st.took_over(t.held, t.steps, acted);
        Ok(match t.then {
            AfterTakeOver::Resume => None,
            AfterTakeOver::Finish {
                success,
                reason,
                answer,
            } => {
                let status = match success {
                    true => TaskStatus::Succeeded,
                    false => TaskStatus::Failed,
                };
                Some(End {
                    answer,
                    ..End::new(status, reason)
                })
            }
            AfterTakeOver::Cancel { reason } => Some(End::new(TaskStatus::Cancelled, reason)),
        })
    }

    /// Ends a task whose runner panicked outside its loop (the scheduler catches it): the
    /// task fails with the panic's message.
    pub(crate) async fn fail_panicked(
        &self,
        id: TaskId,
        panic: Box<dyn std::any::Any + Send>,
    ) -> Result<Task, StoreError> {
        let reason = panicked(&*panic);
        drop(panic);
        self.finish(id, End::new(TaskStatus::Failed, reason)).await
    }

    /// Stores the ending and publishes `task.finished` (`run::finish`). A task ended
    /// meanwhile (a cancel while waiting for an answer ends it at once) keeps its first
    /// ending.
    async fn finish(&self, id: crate::domain::TaskId, end: End) -> Result<Task, StoreError> {
        let ending = Ending::Now {
            status: end.status,
            reason: end.reason,
            answer: end.answer,
        };
        end_task(&self.bus, id, ending).await
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
}

impl RunState<'_> {
    /// The step the loop is at, for hooks.
    fn at(&self) -> StepRef {
        StepRef {
            task: self.task().id,
            step: self.step(),
        }
    }
}

/// The ending of a task whose record could not be written. The database's own message
/// goes to the log only: it may quote the data it refused.
fn store_failed(id: TaskId, e: &StoreError) -> End {
    tracing::error!(task = %id, error = %e, "a write of the task failed; ending it");
    let why = if e.is_transient() {
        "the database did not answer"
    } else {
        "the database refused a write"
    };
    End::new(
        TaskStatus::Failed,
        format!("the task's record could not be saved ({why}); the server log has the details"),
    )
}

/// The reason a task whose runner panicked ends with: the panic's message.
fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    tracing::error!(panic = %msg, "a task's runner panicked; the task fails");
    format!(
        "the runner panicked: {msg}. This is a bug in droidpilot or in one of its hooks or agents; the task's committed steps are kept"
    )
}

/// Checks, before the first step, that the device has the app the agent needs. A device
/// that cannot list its apps is not refused here: the first step shows what is wrong.
async fn required_app(device: &dyn Device, app: Option<&str>) -> Result<(), AgentError> {
    let Some(app) = app else {
        return Ok(());
    };
    match device.installed_apps().await {
        Ok(apps) if !apps.iter().any(|a| a.package == app) => Err(AgentError::AppNotInstalled {
            app: app.to_string(),
            device: device.serial().to_string(),
        }),
        Ok(_) => Ok(()),
        Err(e) => {
            tracing::warn!(app, error = %e, "could not list the device's apps");
            Ok(())
        }
    }
}
