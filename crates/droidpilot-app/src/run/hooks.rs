//! `RunHook`: the points where later work plugs into the runner without editing its loop.
//! A hook is called with the step it is about and may change what happens next:
//!
//! | point | called | may |
//! | --- | --- | --- |
//! | `at_boundary` | before each step starts | hold the loop (take-over), then hand back what the person did |
//! | `before_decide` | with the agent's context | add guidance (a planner) |
//! | `before_act` | with the action about to run | rewrite it or skip it (middleware) |
//! | `run_action` | for a custom action | run it on the device (custom actions) |
//! | `after_act` | with the action's result | watch progress |
//! | `on_finish` | when the agent claims to be done | reject the claim with a reason the agent reads |
//! | `on_failure` | when an action failed after its retries | replace it, skip it, or end the task |
//!
//! Every method has a default that changes nothing, so a hook implements only its points.
//! `RunHooks` is the ordered list the runner holds; the existing `ActionMiddleware` and
//! `CustomActionHandler` are adapted into hooks here. Take-over is an `at_boundary` hook:
//! it holds the loop while a person has the phone and hands back a `TakenOver` (the steps
//! they took, what they did, whether the task resumes, finishes or is cancelled), which
//! the runner records. The server's take-over (`run::takeover::TakeOvers`, driven over
//! HTTP and the dashboard) is one; `TakeOver` here is a bare pause/resume for embedders.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::middleware::{ActionMiddleware, CustomActionHandler, Verdict};
use crate::agent::context::AgentContext;
use crate::device::Device;
use crate::device::exec::ExecError;
use crate::domain::{Action, TaskId};
use crate::screen::ScreenRepresentation;
use crate::store::StoreError;

/// Which step a hook is called about. `step` is the number the agent and the events use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRef {
    pub task: TaskId,
    pub step: u32,
}

/// What the agent said when it claimed to be done.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishClaim<'a> {
    pub success: bool,
    pub reason: Option<&'a str>,
    pub answer: Option<&'a str>,
    /// The screen the agent saw when it finished.
    pub screen: &'a ScreenRepresentation,
}

/// A completion verifier's word on a finish.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FinishVerdict {
    #[default]
    Accept,
    /// Not done: the task goes on and the agent reads "NOT done: <reason>".
    Reject(String),
}

/// What to do about an action that failed after its retries.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Recovery {
    /// The usual handling: report the failure to the agent (a replay ends).
    #[default]
    Fail,
    /// Run this action instead, once.
    Replace(Action),
    /// Record the step as skipped with this reason and go on.
    Skip(String),
    /// End the task as failed with this reason.
    Abort(String),
}

/// What a person did while a hook held the loop at a step boundary: handed back to the
/// runner, which records it (the steps counted, the held time off the timeout, the
/// actions told to the agent, then resume, finish or cancel).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TakenOver {
    /// Steps the person took, each already recorded as the trajectory's next step from
    /// the boundary's number on (`service::manual_step`): numbered like the agent's, but
    /// not part of its `max_steps`.
    pub steps: u32,
    /// How long the loop was held: not counted toward the task's timeout.
    pub held: Duration,
    /// What the person did, one line per action, for the agent's next prompt.
    pub actions: Vec<String>,
    /// Who handed the task back.
    pub by: Option<String>,
    /// What the loop does next.
    pub then: AfterTakeOver,
}

/// What the loop does once a person hands a held task back.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AfterTakeOver {
    /// The agent goes on from the screen the person left.
    #[default]
    Resume,
    /// The person finished the task: it ends `succeeded` (or `failed`) with this reason
    /// and answer, as the agent's own `finish` would.
    Finish {
        success: bool,
        reason: String,
        answer: Option<String>,
    },
    /// The person cancelled the task: it ends `cancelled` with this reason.
    Cancel { reason: String },
}

impl TakenOver {
    /// A hold of `held` in which the person did nothing but resume.
    pub fn held(held: Duration) -> Self {
        Self {
            held,
            ..Self::default()
        }
    }

    /// Two holds at the same boundary, in order, as one (either may be None).
    pub fn both(first: Option<TakenOver>, then: Option<TakenOver>) -> Option<TakenOver> {
        match (first, then) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        }
    }

    /// `later` (a later hook's hold at the same boundary) added to this one: steps and
    /// held time summed, actions in order, its `by` and `then` win.
    fn and(mut self, later: TakenOver) -> Self {
        self.steps += later.steps;
        self.held += later.held;
        self.actions.extend(later.actions);
        self.by = later.by.or(self.by);
        self.then = later.then;
        self
    }
}

#[async_trait]
pub trait RunHook: Send + Sync {
    /// At the step boundary, before anything else: returning later holds the loop there,
    /// and a hold hands back what the person did meanwhile (None: nothing held). A
    /// cancel or shutdown does not wait for it. A store error (the hook could not record
    /// the pause) ends the task as any failed write does.
    async fn at_boundary(&self, at: StepRef) -> Result<Option<TakenOver>, StoreError> {
        let _ = at;
        Ok(None)
    }
    async fn before_decide(&self, at: StepRef, ctx: &mut AgentContext) {
        let _ = (at, ctx);
    }
    async fn before_act(&self, at: StepRef, action: Action) -> Verdict {
        let _ = at;
        Verdict::Run(action)
    }
    /// Runs a custom action this hook owns; None when it is not this hook's.
    async fn run_action(
        &self,
        device: &dyn Device,
        name: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<Value, String>> {
        let _ = (device, name, args);
        None
    }
    /// `outcome` is `Ok(detail)` or `Err(message)`.
    async fn after_act(&self, at: StepRef, action: &Action, outcome: &Result<Value, String>) {
        let _ = (at, action, outcome);
    }
    async fn on_finish(&self, at: StepRef, claim: &FinishClaim<'_>) -> FinishVerdict {
        let _ = (at, claim);
        FinishVerdict::Accept
    }
    async fn on_failure(&self, at: StepRef, action: &Action, error: &ExecError) -> Recovery {
        let _ = (at, action, error);
        Recovery::Fail
    }
}

/// The hooks a runner calls, in the order they were added.
#[derive(Clone, Default)]
pub struct RunHooks(Vec<Arc<dyn RunHook>>);

impl RunHooks {
    pub fn push(&mut self, hook: Arc<dyn RunHook>) {
        self.0.push(hook);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each hook in turn; their holds add up. A hold that ends the task (finish,
    /// cancel) is the last: the hooks after it are not asked.
    pub async fn at_boundary(&self, at: StepRef) -> Result<Option<TakenOver>, StoreError> {
        let mut taken = None;
        for h in &self.0 {
            taken = TakenOver::both(taken, h.at_boundary(at).await?);
            if taken
                .as_ref()
                .is_some_and(|t| t.then != AfterTakeOver::Resume)
            {
                break;
            }
        }
        Ok(taken)
    }

    pub async fn before_decide(&self, at: StepRef, ctx: &mut AgentContext) {
        for h in &self.0 {
            h.before_decide(at, ctx).await;
        }
    }

    /// Each hook sees the action the previous one let through; the first skip wins.
    pub async fn before_act(&self, at: StepRef, mut action: Action) -> Verdict {
        for h in &self.0 {
            match h.before_act(at, action).await {
                Verdict::Run(a) => action = a,
                skip @ Verdict::Skip(_) => return skip,
            }
        }
        Verdict::Run(action)
    }

    pub async fn run_action(
        &self,
        device: &dyn Device,
        name: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<Value, String>> {
        for h in &self.0 {
            if let Some(r) = h.run_action(device, name, args).await {
                return Some(r);
            }
        }
        None
    }

    pub async fn after_act(&self, at: StepRef, action: &Action, outcome: &Result<Value, String>) {
        for h in &self.0 {
            h.after_act(at, action, outcome).await;
        }
    }

    /// The first rejection wins.
    pub async fn on_finish(&self, at: StepRef, claim: &FinishClaim<'_>) -> FinishVerdict {
        for h in &self.0 {
            if let v @ FinishVerdict::Reject(_) = h.on_finish(at, claim).await {
                return v;
            }
        }
        FinishVerdict::Accept
    }

    /// The first hook that does something other than `Fail` wins.
    pub async fn on_failure(&self, at: StepRef, action: &Action, error: &ExecError) -> Recovery {
        for h in &self.0 {
            match h.on_failure(at, action, error).await {
                Recovery::Fail => {}
                r => return r,
            }
        }
        Recovery::Fail
    }
}

/// `ActionMiddleware` as a hook: `before` is `before_act`, `after` is `after_act`.
pub struct MiddlewareHook(pub Arc<dyn ActionMiddleware>);

#[async_trait]
impl RunHook for MiddlewareHook {
    async fn before_act(&self, at: StepRef, action: Action) -> Verdict {
        self.0.before(at.task, at.step, action).await
    }
    async fn after_act(&self, at: StepRef, action: &Action, outcome: &Result<Value, String>) {
        self.0.after(at.task, at.step, action, outcome).await;
    }
}

/// One registered custom action as a hook (`Runner::register_action`).
pub struct CustomActionHook {
    pub name: String,
    pub handler: Arc<dyn CustomActionHandler>,
}

#[async_trait]
impl RunHook for CustomActionHook {
    async fn run_action(
        &self,
        device: &dyn Device,
        name: &str,
        args: &Map<String, Value>,
    ) -> Option<Result<Value, String>> {
        if name != self.name {
            return None;
        }
        Some(self.handler.run(device, args).await)
    }
}

/// A bare take-over for embedders: `pause` holds every task this hook is on at its next
/// step boundary until `resume`, and hands back the time held (a person acting on the
/// phone meanwhile is not recorded). The step in flight finishes first; a cancel still
/// ends a paused task.
pub struct TakeOver {
    paused: watch::Sender<bool>,
    holding: watch::Sender<Option<StepRef>>,
}

impl Default for TakeOver {
    fn default() -> Self {
        Self {
            paused: watch::Sender::new(false),
            holding: watch::Sender::new(None),
        }
    }
}

impl TakeOver {
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// The step a task is being held before (None while nothing is held).
    pub fn holding(&self) -> watch::Receiver<Option<StepRef>> {
        self.holding.subscribe()
    }
}

#[async_trait]
impl RunHook for TakeOver {
    async fn at_boundary(&self, at: StepRef) -> Result<Option<TakenOver>, StoreError> {
        let mut paused = self.paused.subscribe();
        if !*paused.borrow_and_update() {
            return Ok(None);
        }
        let began = Instant::now();
        self.holding.send_replace(Some(at));
        let _ = paused.wait_for(|p| !p).await;
        self.holding.send_replace(None);
        Ok(Some(TakenOver::held(began.elapsed())))
    }
}
