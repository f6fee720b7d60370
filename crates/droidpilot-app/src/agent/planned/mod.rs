//! The planned agent (`"kind": "planned"`): seed 002's planning agent + fast agent, as a
//! wrapper around any acting agent (navigator or vision, any provider).
//!
//! At each decision, top to bottom:
//! 1. **learn**: failed steps since the last decision (the runner already retried each
//!    once on a fresh screen, so a recorded failure is "failed twice") and the stuck
//!    detector's findings go into the failure context; each failure counts toward
//!    re-planning;
//! 2. **collect** a plan that arrived in the background: it becomes the guidance the
//!    acting agent reads, pinned right after the task in every prompt;
//! 3. **plan**: at the first step, in the background (the acting agent does not wait);
//!    again when the progress checker says "not progressing", when `failure_threshold`
//!    failures piled up since the last plan (a wrong-task verdict counts three), or when
//!    the stuck detector escalated; and in the final `last_resort_steps` steps, with
//!    failures since the last plan, once, *blocking*;
//! 4. **check progress** every `progress_every` steps (the acting model, asked "is this
//!    getting anywhere?");
//! 5. **act**: the acting agent decides with the guidance and the last failures (the
//!    first step after a plan that recommends split-screen, seed 002's `splitScreen`,
//!    puts its two apps side by side instead: the `split_screen` action, once);
//! 6. **verify**: a claimed success is checked against the screen by the verifier; a
//!    rejection goes back as "NOT done: <reason>" (the runner records the rejected
//!    finish) and the task goes on.
//!
//! Every role's answer is an `Annotation` on the step (and a `step.annotated` event),
//! and every call a `ModelCall` with its role. A planner that fails or times out never
//! fails the task. The background plan is a spawned task owned by the agent: dropping
//! the agent (the task ended) aborts it.

pub mod roles;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::task::AbortOnDropHandle;
use utoipa::ToSchema;

use super::context::{AgentContext, Note};
use super::{Agent, AgentError, Decision, ProducedScript};
use crate::domain::{Action, Annotation, ModelCall, Plan, PlanTrigger};
use crate::llm::{ChatModel, PriceTable};
use roles::{PlanInput, RoleResult};

/// The planned agent's knobs (`agent.planning`), with seed 002's values as defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PlanningOptions {
    /// Ask the progress checker every this many steps (0 = never).
    pub progress_every: u32,
    /// Failures since the last plan that trigger a recovery plan.
    pub failure_threshold: u32,
    /// In the final this-many steps, with failures since the last plan, wait for a plan.
    pub last_resort_steps: u32,
    /// A plan that takes longer is given up (the task goes on without it).
    pub planner_timeout_secs: u64,
    /// Check a claimed success with the verifier.
    pub verify_finish: bool,
    /// Failure strings the acting agent is reminded of (seed 002: the last 3).
    pub failures_shown: usize,
}

impl Default for PlanningOptions {
    fn default() -> Self {
        Self {
            progress_every: 3,
            failure_threshold: 3,
            last_resort_steps: 5,
            planner_timeout_secs: 90,
            verify_finish: true,
            failures_shown: 3,
        }
    }
}

/// The models around the acting agent.
#[derive(Clone)]
pub struct Roles {
    pub planner: Arc<dyn ChatModel>,
    /// The progress checker and the completion verifier (seed 002: the fast model).
    pub checker: Arc<dyn ChatModel>,
    pub prices: PriceTable,
}

/// A plan being computed in the background.
struct Pending {
    trigger: PlanTrigger,
    job: AbortOnDropHandle<RoleResult<Plan>>,
}

pub struct PlannedAgent {
    fast: Box<dyn Agent>,
    roles: Roles,
    opts: PlanningOptions,
    plan: Option<Plan>,
    pending: Option<Pending>,
    /// Seed 002's failure context, oldest first.
    failures: Vec<String>,
    failures_since_plan: u32,
    /// The step the planner was last asked at.
    last_consult: Option<u32>,
    last_progress_check: u32,
    last_resort_done: bool,
    /// The stuck detector escalated; re-plan at the next decision.
    stuck: Option<String>,
    /// The plan's split-screen recommendation was acted on (once per task).
    split_started: bool,
    /// History steps and notes already learned from.
    learned_step: u32,
    learned_stuck: u32,
}

impl PlannedAgent {
    pub fn new(fast: Box<dyn Agent>, roles: Roles, opts: PlanningOptions) -> Self {
        Self {
            fast,
            roles,
            opts,
            plan: None,
            split_started: false,
            pending: None,
            failures: Vec::new(),
            failures_since_plan: 0,
            last_consult: None,
            last_progress_check: 0,
            last_resort_done: false,
            stuck: None,
            learned_step: 0,
            learned_stuck: 0,
        }
    }

    /// Counts a failure toward re-planning and keeps its description for the planner.
    fn fail(&mut self, description: String, weight: u32, notes: &mut Vec<Annotation>) {
        self.failures_since_plan += weight;
        notes.push(Annotation::Failure {
            description: description.clone(),
            count: self.failures_since_plan,
        });
        self.failures.push(description);
    }

    /// Step 1: what went wrong since the last decision.
    fn learn(&mut self, ctx: &AgentContext, notes: &mut Vec<Annotation>) {
        let new: Vec<_> = ctx
            .history
            .steps()
            .filter(|r| r.step > self.learned_step)
            .cloned()
            .collect();
        for r in new {
            self.learned_step = r.step;
            // A rejected finish was counted when the verifier rejected it.
            if r.failed && !matches!(r.action, Action::Finish { .. }) {
                let what = serde_json::to_string(&r.action).unwrap_or_default();
                self.fail(
                    format!("Step {} {what} failed: {}", r.step, r.outcome),
                    1,
                    notes,
                );
            }
        }
        let stuck: Vec<(u32, String)> = ctx
            .history
            .notes()
            .filter_map(|n| match n {
                Note::Stuck { step, why, .. } if *step > self.learned_stuck => {
                    Some((*step, why.clone()))
                }
                _ => None,
            })
            .collect();
        for (step, why) in stuck {
            self.learned_stuck = step;
            self.fail(format!("Step {step}: stuck ({why})"), 1, notes);
        }
    }

    /// Step 2: a finished background plan becomes the guidance.
    fn collect(&mut self, notes: &mut Vec<Annotation>, calls: &mut Vec<ModelCall>) {
        if !self.pending.as_ref().is_some_and(|p| p.job.is_finished()) {
            return;
        }
        let p = self.pending.take().expect("checked above");
        let trigger = p.trigger;
        // Finished, so this does not wait.
        let joined = futures::FutureExt::now_or_never(p.job);
        self.take_plan(trigger, joined, notes, calls);
    }

    fn take_plan(
        &mut self,
        trigger: PlanTrigger,
        joined: Option<Result<RoleResult<Plan>, tokio::task::JoinError>>,
        notes: &mut Vec<Annotation>,
        calls: &mut Vec<ModelCall>,
    ) {
        let (result, made) = match joined {
            Some(Ok(r)) => r,
            Some(Err(e)) => (Err(format!("the planner task failed: {e}")), Vec::new()),
            None => (Err("the planner did not answer".into()), Vec::new()),
        };
        calls.extend(made);
        match result {
            Ok(plan) => {
                self.failures_since_plan = 0;
                notes.push(Annotation::Plan {
                    trigger,
                    plan: plan.clone(),
                });
                self.plan = Some(plan);
            }
            Err(error) => {
                tracing::warn!(?trigger, %error, "planner failed; going on without a new plan");
                notes.push(Annotation::PlanFailed { trigger, error });
            }
        }
    }

    /// Starts a plan in the background (none starts while one is in flight).
    fn launch(&mut self, trigger: PlanTrigger, ctx: &AgentContext, notes: &mut Vec<Annotation>) {
        if self.pending.is_some() {
            return;
        }
        let step = ctx.observation.step_count + 1;
        self.last_consult = Some(step);
        let input = PlanInput::new(ctx, &self.failures, self.plan.as_ref());
        let (model, prices) = (self.roles.planner.clone(), self.roles.prices.clone());
        let timeout = Duration::from_secs(self.opts.planner_timeout_secs.max(1));
        let job = tokio::spawn(async move {
            match tokio::time::timeout(timeout, roles::plan(model, prices, input)).await {
                Ok(r) => r,
                Err(_) => (
                    Err(format!("timed out after {}s", timeout.as_secs())),
                    Vec::new(),
                ),
            }
        });
        notes.push(Annotation::PlanRequested {
            trigger,
            blocking: trigger == PlanTrigger::LastResort,
        });
        self.pending = Some(Pending {
            trigger,
            job: AbortOnDropHandle::new(job),
        });
    }

    /// Step 3: whether a (re-)plan is due, and the blocking last resort.
    async fn plan_if_due(
        &mut self,
        ctx: &AgentContext,
        notes: &mut Vec<Annotation>,
        calls: &mut Vec<ModelCall>,
    ) {
        let step = ctx.observation.step_count + 1;
        if self.last_consult.is_none() {
            self.launch(PlanTrigger::Initial, ctx, notes);
        }
        if self.stuck.take().is_some() {
            self.launch(PlanTrigger::Stuck, ctx, notes);
        }
        let since = step.saturating_sub(self.last_consult.unwrap_or(0));
        if self.failures_since_plan >= self.opts.failure_threshold.max(1) && since >= 3 {
            self.launch(PlanTrigger::StepFailures, ctx, notes);
        }
        let final_steps = step + self.opts.last_resort_steps > ctx.observation.max_steps;
        if final_steps && self.failures_since_plan > 0 && !self.last_resort_done {
            self.last_resort_done = true;
            self.launch(PlanTrigger::LastResort, ctx, notes);
            // Wait for whichever plan is in flight: with few steps left, acting without
            // guidance is wasteful.
            if let Some(p) = self.pending.take() {
                let joined = p.job.await;
                self.take_plan(p.trigger, Some(joined), notes, calls);
            }
        }
    }

    /// Step 4: every `progress_every` steps, is the agent getting anywhere?
    async fn check_progress(
        &mut self,
        ctx: &AgentContext,
        notes: &mut Vec<Annotation>,
        calls: &mut Vec<ModelCall>,
    ) {
        let every = self.opts.progress_every;
        let taken = ctx.observation.step_count;
        if every == 0 || taken < every || taken - self.last_progress_check < every {
            return;
        }
        self.last_progress_check = taken;
        let (answer, made) =
            roles::check_progress(self.roles.checker.as_ref(), &self.roles.prices, ctx).await;
        calls.extend(made);
        match answer {
            Ok(p) => {
                notes.push(Annotation::Progress {
                    progressing: p.progressing,
                    reason: p.reason.clone(),
                });
                if !p.progressing {
                    let msg = format!("Progress check (step {}): {}", taken + 1, p.reason);
                    self.fail(msg, 1, notes);
                    self.launch(PlanTrigger::ProgressStall, ctx, notes);
                }
            }
            Err(e) => tracing::warn!(error = %e, "progress check failed; skipped"),
        }
    }

    /// The acting agent's context: the plan's guidance and the last failures.
    fn guided(&self, ctx: &AgentContext) -> AgentContext {
        let mut g = String::new();
        if let Some(p) = &self.plan {
            g.push_str(&p.guidance_text());
        }
        let shown = self.opts.failures_shown;
        if shown > 0 && !self.failures.is_empty() {
            g.push_str("\nCONTEXT - Previous issues:\n");
            for f in &self.failures[self.failures.len().saturating_sub(shown)..] {
                g.push_str(&format!("- {f}\n"));
            }
        }
        let mut c = ctx.clone();
        if !g.is_empty() {
            c.guidance = Some(match &ctx.guidance {
                Some(other) => format!("{other}\n\n{g}"),
                None => g,
            });
        }
        c
    }

    /// Step 6: a claimed success is checked on the screen it was claimed on.
    async fn verify(
        &mut self,
        ctx: &AgentContext,
        d: &Decision,
        notes: &mut Vec<Annotation>,
        calls: &mut Vec<ModelCall>,
    ) {
        let Action::Finish {
            success: true,
            reason,
            answer,
        } = &d.action
        else {
            return;
        };
        if !self.opts.verify_finish {
            return;
        }
        let claim = [reason.as_deref(), answer.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" — ");
        let (answer, made) =
            roles::verify_finish(self.roles.checker.as_ref(), &self.roles.prices, ctx, &claim)
                .await;
        calls.extend(made);
        let v = match answer {
            Ok(v) => v,
            // A verifier that cannot answer does not hold the task hostage.
            Err(e) => {
                tracing::warn!(error = %e, "completion verifier failed; the finish stands");
                return;
            }
        };
        let wrong_task = !v.done && roles::is_wrong_task(&v.reason);
        notes.push(Annotation::Verdict {
            accepted: v.done,
            reason: v.reason.clone(),
            wrong_task,
        });
        if !v.done {
            let step = ctx.observation.step_count + 1;
            let weight = if wrong_task { 3 } else { 1 };
            self.fail(
                format!("Step {step}: finish rejected: {}", v.reason),
                weight,
                notes,
            );
        }
    }
}

impl PlannedAgent {
    /// The plan recommends split-screen (seed 002's `splitScreen`): the next step puts
    /// the two apps side by side (the `split_screen` action), once per task.
    fn start_split(&mut self) -> Option<Decision> {
        let rec = self.plan.as_ref()?.split_screen.as_ref()?;
        if self.split_started {
            return None;
        }
        self.split_started = true;
        let name = crate::run::split_screen::NAME.to_string();
        let args = crate::run::split_screen::args(&rec.top, &rec.bottom);
        Some(Decision::local(Action::Custom(
            crate::domain::action::CustomAction { name, args },
        )))
    }
}

#[async_trait]
impl Agent for PlannedAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        let (mut notes, mut calls) = (Vec::new(), Vec::new());
        self.learn(ctx, &mut notes);
        self.collect(&mut notes, &mut calls);
        self.check_progress(ctx, &mut notes, &mut calls).await;
        self.plan_if_due(ctx, &mut notes, &mut calls).await;
        if let Some(mut d) = self.start_split() {
            d.absorb(&calls);
            d.annotations = notes;
            return Ok(d);
        }
        let mut d = self.fast.next(&self.guided(ctx)).await?;
        self.verify(ctx, &d, &mut notes, &mut calls).await;
        d.absorb(&calls);
        notes.append(&mut d.annotations);
        d.annotations = notes;
        Ok(d)
    }

    fn describe(&self) -> String {
        let p = self.roles.planner.config();
        format!(
            "planned({}) planner {}:{}",
            self.fast.describe(),
            p.provider.id(),
            p.model
        )
    }

    fn resume(&mut self, committed: &[crate::domain::Step]) {
        self.fast.resume(committed);
    }

    fn take_script(&mut self, finished_ok: bool, reason: Option<&str>) -> Option<ProducedScript> {
        self.fast.take_script(finished_ok, reason)
    }

    fn wants_device_context(&self) -> bool {
        true
    }

    fn replan_when_stuck(&mut self, why: &str) -> bool {
        self.stuck = Some(why.to_string());
        true
    }
}
