//! The act phase: what the agent decided, carried out. `finish` (checked by the
//! `on_finish` hooks), `ask_user` (`ask.rs`) and `mcp_call` are handled by the runner;
//! anything else goes through the `before_act` hooks (middleware) to the device, with
//! retries that re-observe, then `after_act`, then `on_failure` when it failed. It hands
//! the settle phase an `Acted`: the device action that ran, or the step's outcome when
//! there is nothing to settle.

use std::ops::ControlFlow::{Break as Stop, Continue};
use std::time::{Duration, Instant};

use backon::BackoffBuilder;
use serde_json::{Value, json};

use super::observe::Observed;
use super::record::{StepDraft, Then};
use super::stale::Checked;
use super::state::RunState;
use super::{Break, End, Phase, Runner};
use crate::agent::Decision;
use crate::agent::context::Note;
use crate::device::exec::{self, ExecContext, ExecError};
use crate::device::{Device, DeviceError};
use crate::domain::{Action, ScreenSize, TaskStatus};
use crate::run::hooks::{FinishClaim, FinishVerdict, Recovery};
use crate::run::middleware::Verdict;
use crate::run::stop::unless_cancelled;

/// What one attempt at a device action left: the action that ran, its result, and the
/// latest observation (retries re-observe).
type Executed = (Action, Result<Value, ExecError>, Observed);

/// What the act phase hands to settle. (Moved once per step from act to settle, so the
/// large variant is not boxed.)
#[allow(clippy::large_enum_variant)]
pub(super) enum Acted {
    /// A device action that succeeded: settle waits for the screen it left.
    Ran(Ran),
    /// Nothing to settle (a tool call, an answer, a skipped or failed action): the
    /// outcome as the agent's history tells it.
    Told(String),
}

/// A device action that succeeded, for settle.
pub(super) struct Ran {
    /// The action as it ran (a hook may have rewritten or replaced it).
    pub action: Action,
    /// The latest observation before it ran (its retries re-observed).
    pub before: Observed,
    /// What it did (the point tapped, the swipe's path…).
    pub detail: Value,
    /// The action a recovery hook replaced, and its error, kept in the step's detail.
    pub replaced: Option<(Action, String)>,
}

/// A phase that tells the step's outcome, as an `Acted` with nothing to settle.
fn told(p: Phase<String>) -> Phase<Acted> {
    Ok(match p? {
        Continue(outcome) => Continue(Acted::Told(outcome)),
        Stop(b) => Stop(b),
    })
}

impl Runner {
    /// Carries out the decision: the device action that ran, for settle, or the outcome
    /// as the agent's history tells it.
    pub(super) async fn act_phase(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        decision: &Decision,
        obs: &Observed,
        draft: &mut StepDraft,
    ) -> Phase<Acted> {
        match &decision.action {
            Action::Finish {
                success,
                reason,
                answer,
            } => {
                let claim = FinishClaim {
                    success: *success,
                    reason: reason.as_deref(),
                    answer: answer.as_deref(),
                    screen: &obs.repr,
                };
                told(Ok(self.finish_claimed(st, decision, &claim, draft).await))
            }
            Action::AskUser { question, options } => told(
                self.ask_user_phase(st, question, options.clone(), draft)
                    .await,
            ),
            Action::McpCall { tool, args } => told(self.mcp_phase(st, tool, args, draft).await),
            _ => self.device_action(st, device, decision, obs, draft).await,
        }
    }

    /// A finish the agent's own verifier (a planned agent's `Verdict` annotation) and the
    /// `on_finish` hooks accept ends the task; a rejected one is recorded as failed and the
    /// agent reads "NOT done: <reason>".
    async fn finish_claimed(
        &self,
        st: &RunState<'_>,
        decision: &Decision,
        claim: &FinishClaim<'_>,
        draft: &mut StepDraft,
    ) -> std::ops::ControlFlow<Break, String> {
        let success = claim.success;
        draft.detail(json!({"success": success}));
        let verdict = match rejected_by_agent(decision) {
            Some(why) => FinishVerdict::Reject(why),
            None => self.hooks.on_finish(st.at(), claim).await,
        };
        if let FinishVerdict::Reject(why) = verdict {
            let detail = json!({"success": success, "rejected": why});
            draft.failed(format!("finish rejected: {why}"), Some(detail));
            draft.remember(st.step(), decision, format!("NOT done: {why}"));
            return Stop(Break::Commit(Then::Next));
        }
        let reason = claim.reason.map(str::to_string).unwrap_or_else(|| {
            match success {
                true => "the agent finished the task",
                false => "the agent gave up",
            }
            .into()
        });
        let status = match success {
            true => TaskStatus::Succeeded,
            false => TaskStatus::Failed,
        };
        Stop(Break::Commit(Then::End(End {
            answer: claim.answer.map(str::to_string),
            ..End::new(status, reason)
        })))
    }

    /// An MCP tool call; its result goes to the agent's notes either way.
    async fn mcp_phase(
        &self,
        st: &mut RunState<'_>,
        tool: &str,
        args: &Value,
        draft: &mut StepDraft,
    ) -> Phase<String> {
        let timeout = Duration::from_secs(self.cfg.mcp_timeout_secs);
        let call = self.mcp.call(tool, args.clone(), timeout);
        let Some(r) = unless_cancelled(st.stop(), call).await else {
            return Ok(Stop(Break::Redo));
        };
        let text = match &r.content {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let detail = Some(json!({"tool": tool, "result": r.content}));
        match r.is_error {
            true => draft.failed(text.clone(), detail),
            false => draft.ok(None, detail),
        }
        draft.notes.push(Note::McpResult {
            step: st.step(),
            tool: tool.to_string(),
            result: text.chars().take(2000).collect(),
            is_error: r.is_error,
        });
        Ok(Continue(
            match r.is_error {
                true => "tool failed",
                false => "tool returned",
            }
            .into(),
        ))
    }

    /// A device (or custom) action: hooks before, the action with its retries, hooks
    /// after, recovery hooks on failure.
    async fn device_action(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        decision: &Decision,
        obs: &Observed,
        draft: &mut StepDraft,
    ) -> Phase<Acted> {
        let at = st.at();
        let action = match self
            .ask_hooks(st, device, decision.action.clone(), obs, draft)
            .await
        {
            Ok(a) => a,
            Err(told) => return Ok(Continue(told)),
        };
        let action = match self.hooks.before_act(at, action).await {
            Verdict::Run(a) => a,
            Verdict::Skip(reason) => {
                draft.skipped(&reason);
                return Ok(Continue(Acted::Told(format!("skipped: {reason}"))));
            }
        };
        let checking = self.stale_check(device, action.clone(), obs, st.size(), draft);
        let (action, obs) = match unless_cancelled(st.stop(), checking).await {
            None => return Ok(Stop(Break::Redo)),
            Some(Checked::Act(a, o)) => (a, o),
            Some(Checked::Vanished(fresh)) => {
                return Ok(Continue(vanished(st, action, fresh, draft)));
            }
        };
        let executed = self.execute(st, device, action, obs, draft).await;
        let Some((action, result, latest)) = executed else {
            return Ok(Stop(Break::Redo));
        };
        let mut replaced = None;
        let executed = match result {
            Err(e) if !is_disconnect(&e) => match self.hooks.on_failure(at, &action, &e).await {
                Recovery::Fail => (action, Err(e), latest),
                Recovery::Replace(other) => {
                    let executed = self.execute(st, device, other, latest, draft).await;
                    let Some(executed) = executed else {
                        return Ok(Stop(Break::Redo));
                    };
                    replaced = Some((action, e.to_string()));
                    executed
                }
                Recovery::Skip(reason) => {
                    draft.skipped(&reason);
                    let outcome = format!("failed: {e}; skipped: {reason}");
                    return Ok(Continue(Acted::Told(outcome)));
                }
                Recovery::Abort(reason) => {
                    draft.failed(format!("{}: {e}", e.error_type()), None);
                    let end = End::new(TaskStatus::Failed, reason);
                    return Ok(Stop(Break::Commit(Then::End(end))));
                }
            },
            r => (action, r, latest),
        };
        let after = match &executed.1 {
            Err(e) if !is_disconnect(e) => self.observe(device, st.size()).await.ok(),
            _ => None,
        };
        let acted = self.acted(st, device, decision, executed, replaced, after, draft);
        Ok(acted)
    }

    /// What an executed action's result means for the step: settle after success (the
    /// settle phase keeps a replaced action in the detail it records), wait for a
    /// dropped device, or report the failure.
    #[allow(clippy::too_many_arguments)]
    fn acted(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        decision: &Decision,
        (action, result, before): Executed,
        replaced: Option<(Action, String)>,
        after: Option<Observed>,
        draft: &mut StepDraft,
    ) -> std::ops::ControlFlow<Break, Acted> {
        let failed = match result {
            Ok(detail) => {
                return Continue(Acted::Ran(Ran {
                    action,
                    before,
                    detail,
                    replaced,
                }));
            }
            Err(e) if is_disconnect(&e) => {
                draft.failed(e.to_string(), None);
                let n = st.step();
                draft.remember_as(n, decision, action.clone(), format!("failed: {e}"));
                draft.notes.push(Note::DeviceDropped { step: n, action });
                let serial = device.serial().to_string();
                let lost = DeviceError::Disconnected { serial };
                Stop(Break::Commit(Then::Reconnect(lost)))
            }
            Err(e) => self.action_failed(st, &action, e, before, after, draft),
        };
        if let Some((original, error)) = replaced {
            draft.replaced(&original, &error);
        }
        failed
    }

    /// Runs `action` (with retries) unless cancelled, timing it and calling the
    /// `after_act` hooks.
    async fn execute(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        action: Action,
        obs: Observed,
        draft: &mut StepDraft,
    ) -> Option<Executed> {
        draft.set_action(&action);
        let started = Instant::now();
        let acting = self.act(device, &action, obs, st.size());
        let (mut result, latest, retries) = unless_cancelled(st.stop(), acting).await?;
        draft.step.timings.action_ms += started.elapsed().as_millis() as u64;
        if !retries.is_empty() {
            self.publish_retries(st, &retries).await;
            if let Ok(Value::Object(detail)) = &mut result {
                detail.insert("retries".into(), json!(retries));
            }
            draft.retries.extend(retries);
        }
        if matches!(action, Action::Rotate { .. }) && result.is_ok() {
            self.turned(device).await;
            if let Ok(size) = self.screen_size(device).await {
                st.set_size(size);
            }
        }
        if !self.hooks.is_empty() {
            let outcome = result.clone().map_err(|e| e.to_string());
            self.hooks.after_act(st.at(), &action, &outcome).await;
        }
        self.tell_hooks(st, device, &result, &latest, draft).await;
        Some((action, result, latest))
    }

    /// A failed action the agent hears about; a replay ends at it. The screen captured
    /// after the failure (`after`) is named in the reason (its screenshot, stored as an
    /// artifact) and described in the detail, with the attempts and their errors.
    #[allow(clippy::too_many_arguments)]
    fn action_failed(
        &self,
        st: &mut RunState<'_>,
        action: &Action,
        e: ExecError,
        latest: Observed,
        after: Option<Observed>,
        draft: &mut StepDraft,
    ) -> std::ops::ControlFlow<Break, Acted> {
        let shot = after.as_ref().and_then(|o| o.screenshot_sha.clone());
        let seen = shot
            .as_ref()
            .map(|sha| format!(" (the screen after the failure: screenshot {sha})"))
            .unwrap_or_default();
        let detail = json!({
            "hint": e.hint(),
            "selector": e.selector(),
            "attempts": draft.retries.len() + 1,
            "retries": draft.retries,
            "after_failure": after.as_ref().map(|o| json!({
                "screenshot": o.screenshot_sha,
                "summary": o.repr.summary,
                "app": o.repr.app_package,
                "layout_hash": o.layout.map(|h| format!("{h:016x}")),
            })),
        });
        draft.failed(format!("{}: {e}{seen}", e.error_type()), Some(detail));
        if st.ends_on_failed_action() {
            let mut end = failed_step_end(st.step(), action, &e);
            end.reason.push_str(&seen);
            return Stop(Break::Commit(Then::End(end)));
        }
        let latest = after.unwrap_or(latest);
        // The retries re-observed; the next decision reuses that screen.
        st.reuse_screen(latest);
        Continue(Acted::Told(format!("failed: {e}. {}", e.hint())))
    }

    /// Executes with retries, re-observing before each retry so a target that moved is
    /// found again. Custom actions go to the hook that owns them, once. Returns the result
    /// and the latest observation.
    async fn act(
        &self,
        device: &dyn Device,
        action: &Action,
        mut obs: Observed,
        size: ScreenSize,
    ) -> (Result<Value, ExecError>, Observed, Vec<Retry>) {
        if let Action::Custom(c) = action {
            let configured = self.actions.current();
            let r = match configured.custom(&c.name) {
                Some(def) => Some(
                    (def.run(device, &c.args, self.transform.as_ref()).await)
                        .map_err(|f| f.message),
                ),
                None => self.hooks.run_action(device, &c.name, &c.args).await,
            };
            let r = match r {
                Some(r) => r.map_err(|e| {
                    ExecError::Device(DeviceError::CommandFailed {
                        command: c.name.clone(),
                        exit_code: 1,
                        stderr: e,
                    })
                }),
                None => Err(ExecError::NotADeviceAction(c.name.clone())),
            };
            return (r, obs, Vec::new());
        }
        let mut delays = self.cfg.action_retries().build();
        let mut retries = Vec::new();
        loop {
            let ctx = ExecContext {
                screen: obs.screen.as_deref(),
                size,
                transform: self.transform.as_ref(),
            };
            let e = match exec::execute(device, action, &ctx).await {
                Ok(o) => return (Ok(o.detail), obs, retries),
                Err(e) if e.is_retryable() && !is_disconnect(&e) => e,
                Err(e) => return (Err(e), obs, retries),
            };
            let Some(delay) = delays.next() else {
                return (Err(e), obs, retries);
            };
            retries.push(Retry {
                attempt: retries.len() as u32 + 1,
                delay_ms: delay.as_millis() as u64,
                error: format!("{}: {e}", e.error_type()),
            });
            tokio::time::sleep(delay).await;
            match self.observe(device, size).await {
                Ok(o) => obs = o,
                Err(_) => return (Err(e), obs, retries),
            }
        }
    }
}

/// A target the stale-screen check found gone: the action is recorded as not run, and
/// the next step decides on the fresh screen.
fn vanished(
    st: &mut RunState<'_>,
    action: Action,
    fresh: Observed,
    draft: &mut StepDraft,
) -> Acted {
    draft.set_action(&action);
    draft.skipped(
        "the screen changed while the action was decided and its target is gone; the next step decides on the fresh screen",
    );
    st.reuse_screen(fresh);
    Acted::Told("not done: the screen changed before acting and the target is gone".into())
}

impl Runner {
    /// The pool's view of a phone that turned: its new screen size.
    pub(super) async fn turned(&self, device: &dyn Device) {
        if let Some(pool) = &self.pool {
            pool.refresh_screen(device).await;
        }
    }
}

/// One failed attempt at a device action that was tried again: on the step (the
/// outcome's `detail.retries`) and as an `action.retry` event.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Retry {
    pub attempt: u32,
    pub delay_ms: u64,
    pub error: String,
}

impl Runner {
    /// Publishes a step's action retries (after the action, in order); a failed write
    /// is logged: the step's record keeps them too.
    async fn publish_retries(&self, st: &RunState<'_>, retries: &[Retry]) {
        let task_id = st.task().id;
        for r in retries {
            let ev = crate::domain::TaskEvent::ActionRetry {
                task_id,
                step: st.step(),
                attempt: r.attempt,
                delay_ms: r.delay_ms,
                error: r.error.clone(),
            };
            if let Err(e) = self.bus.publish(&task_id.to_string(), ev).await {
                tracing::warn!(task = %task_id, error = %e, "an action.retry event was not stored");
            }
        }
    }
}

fn is_disconnect(e: &ExecError) -> bool {
    matches!(e, ExecError::Device(d) if d.is_disconnect())
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

/// The reason an agent's own completion verifier rejected the finish it carries.
fn rejected_by_agent(d: &Decision) -> Option<String> {
    d.annotations.iter().find_map(|a| match a {
        crate::domain::Annotation::Verdict {
            accepted: false,
            reason,
            ..
        } => Some(reason.clone()),
        _ => None,
    })
}
