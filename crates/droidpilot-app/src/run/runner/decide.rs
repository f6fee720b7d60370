//! The decide phase: the agent's context (with hooks' guidance), the model call with its
//! transient failures retried and published as `model.retry`, and what an unusable or
//! failed answer does to the step.

use std::ops::ControlFlow::{Break as Stop, Continue};

use backon::BackoffBuilder;

use super::observe::Observed;
use super::record::{StepDraft, Then};
use super::state::RunState;
use super::{Break, End, Phase, Runner};
use crate::agent::context::{AgentContext, Observation, ScreenDiff};
use crate::agent::{Agent, AgentError, Decision};
use crate::device::Device;
use crate::domain::TaskEvent;
use crate::domain::TaskStatus;
use crate::llm::ImageData;
use crate::run::stop::unless_cancelled;
use crate::store::StoreError;

impl Runner {
    /// Asks the agent what to do on `obs`. An unusable answer is a rejected step (the
    /// task fails after `max_rejected_in_a_row`); a model that fails for good ends the task.
    pub(super) async fn decide_phase(
        &self,
        st: &mut RunState<'_>,
        agent: &mut dyn Agent,
        obs: &Observed,
        draft: &mut StepDraft,
    ) -> Phase<Decision> {
        let n = st.step();
        self.check_typed(st, obs, draft);
        let mut ctx = self.context(st, obs);
        self.safety(obs, &mut ctx, draft);
        st.saw(obs.repr.actionable_elements.clone());
        self.hooks.before_decide(st.at(), &mut ctx).await;
        let (stream, stop) = st.stream_and_stop();
        let deciding = self.decide_reporting(stream, n, agent, &ctx);
        let Some(decided) = unless_cancelled(stop, deciding).await else {
            return Ok(Stop(Break::Redo));
        };
        let d = match decided? {
            Ok(d) => d,
            Err(AgentError::Parse {
                error,
                raw,
                attempts,
                usage,
                cost,
                calls,
            }) => {
                // Its self-corrections count toward the budget, as an accepted answer's.
                let in_a_row = st.answer_rejected(attempts.saturating_sub(1));
                draft.rejected(error.to_string(), &raw);
                draft.unusable_calls(usage, cost, calls);
                let then = if in_a_row >= self.cfg.max_rejected_in_a_row {
                    Then::End(End::new(
                        TaskStatus::Failed,
                        format!(
                            "the model's answers could not be used {in_a_row} times in a row: {error}"
                        ),
                    ))
                } else {
                    Then::Reuse(Box::new(obs.clone()))
                };
                return Ok(Stop(Break::Commit(then)));
            }
            Err(e) => {
                draft.failed(format!("{}: {e}", e.code()), None);
                let msg = format!("the model failed: {e}. {}", e.hint());
                return Ok(Stop(Break::Commit(Then::End(End::new(
                    TaskStatus::Failed,
                    msg,
                )))));
            }
        };
        // Self-correction attempts count toward the budget (not the step's number).
        st.answer_used(d.retries);
        draft.decided(&d);
        // Written while the device acts (in order after `step.observed`).
        self.bus.commit_soon(
            st.stream(),
            async { Ok(Vec::new()) },
            vec![TaskEvent::StepDecided {
                task_id: st.task().id,
                step: n,
                thinking: draft.step.thinking.clone(),
                action: draft.action_json(),
                retries: d.retries,
            }],
        );
        Ok(Continue(d))
    }

    /// What the agent is given: the instruction, the screen, the history window.
    fn context(&self, st: &RunState<'_>, obs: &Observed) -> AgentContext {
        let mut device = st.device_ctx().clone();
        device.app = obs.repr.app_package.clone();
        device.activity = obs.repr.activity.clone();
        device.keyboard_visible = obs.screen.as_ref().is_some_and(|s| s.keyboard_visible());
        device.windows = obs.screen.as_deref().map(windows_in).unwrap_or_default();
        let diff = st
            .previous()
            .and_then(|before| ScreenDiff::between(before, &obs.repr.actionable_elements));
        let mut ctx = AgentContext::new(
            st.task().spec.instruction.clone(),
            Observation {
                screen: obs.repr.clone(),
                tree: obs.screen.clone(),
                screenshot: obs
                    .png
                    .as_ref()
                    .and_then(|b| ImageData::from_bytes(b.clone()).ok()),
                step_count: st.step() - 1,
                max_steps: st.task().spec.max_steps,
                elapsed: st.elapsed(),
            },
            st.history().clone(),
        );
        ctx.device = device;
        ctx.diff = diff;
        ctx.step_info = self.cfg.include_step_info;
        ctx
    }

    /// The safety directives this screen calls for: into the agent's context (after the
    /// screen's other per-step lines) and onto the step as annotations.
    fn safety(&self, obs: &Observed, ctx: &mut AgentContext, draft: &mut StepDraft) {
        let Some(screen) = &obs.screen else {
            return;
        };
        let table = &self.cfg.safety_directives;
        for d in crate::agent::safety::matching(table, screen, &obs.repr.actionable_elements) {
            ctx.safety.push(d.say.clone());
            draft
                .step
                .annotations
                .push(crate::domain::Annotation::SafetyDirective {
                    name: d.name.clone(),
                    directive: d.say.clone(),
                });
        }
    }

    /// Reads the installed apps and the locale for the agent's device context when the
    /// cached ones are older than `installed_apps_ttl_secs` (only for agents that read
    /// them). A device that cannot say leaves what was known.
    pub(super) async fn refresh_apps(&self, st: &mut RunState<'_>, device: &dyn Device) {
        let ttl = std::time::Duration::from_secs(self.cfg.installed_apps_ttl_secs);
        if !st.apps_due(ttl) {
            return;
        }
        match device.installed_apps().await {
            Ok(apps) => {
                let list = match &self.apps {
                    Some(k) => k
                        .describe(apps)
                        .await
                        .iter()
                        .map(crate::apps::DescribedApp::prompt_line)
                        .collect(),
                    None => apps
                        .into_iter()
                        .map(|a| match a.label {
                            Some(l) if !l.is_empty() => format!("{l} ({})", a.package),
                            _ => a.package,
                        })
                        .collect(),
                };
                st.learn_apps(list);
            }
            Err(e) => tracing::debug!(error = %e, "could not list the installed apps"),
        }
        match device.locale().await {
            Ok(l) => st.learn_locale(l),
            Err(e) => tracing::debug!(error = %e, "could not read the locale"),
        }
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
        // Debug mode's model log masks the task's secrets (`llm::debug_log`) and every
        // text typed so far: a password aimed at a field that was not found stays in the
        // history as typed. Texts under 4 characters would mask most of the log.
        let mut secrets = agent.secrets();
        secrets.extend(ctx.history.steps().filter_map(|r| match &r.action {
            crate::domain::Action::Type { text, .. } if text.chars().count() >= 4 => {
                Some(text.clone())
            }
            _ => None,
        }));
        let deciding = crate::llm::retry::with_retry_sink(tx, self.decide(agent, ctx));
        let deciding = crate::llm::debug_log::masking(secrets, deciding);
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

    /// Asks the agent, retrying transient model failures on `prediction_retries`. An
    /// unreachable server is not asked again: the HTTP layer already spent its quick
    /// budget on it.
    async fn decide(
        &self,
        agent: &mut dyn Agent,
        ctx: &AgentContext,
    ) -> Result<Decision, AgentError> {
        let mut delays = self.cfg.prediction_retries().build();
        let mut attempt = 0;
        loop {
            let e = match agent.next(ctx).await {
                Err(AgentError::Llm(e))
                    if e.is_transient()
                        && !matches!(e, crate::llm::LlmError::Unreachable { .. }) =>
                {
                    e
                }
                other => return other,
            };
            let Some(delay) = delays.next() else {
                return Err(AgentError::Llm(e));
            };
            attempt += 1;
            tracing::warn!(error = %e, attempt, "model call failed; asking again");
            crate::llm::retry::report(attempt, delay, format!("{e} (asking the agent again)"));
            tokio::time::sleep(delay).await;
        }
    }
}

/// The packages of the dump's windows (its top-level nodes), top first, each once.
fn windows_in(screen: &crate::screen::Screen) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for &r in screen.tree.roots.iter().rev() {
        let Some(n) = screen.tree.nodes.get(r) else {
            continue;
        };
        if !n.package.is_empty() && !out.contains(&n.package) {
            out.push(n.package.clone());
        }
    }
    out
}
