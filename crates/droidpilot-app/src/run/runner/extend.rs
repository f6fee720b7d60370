//! The operator's action hooks (`[[actions.hooks]]`, `run::extend::hook`) at the act
//! phase: asked before a device action (continue, skip, rewrite), told its outcome
//! after. Each answer is an `action_hook` annotation on the step, so it is stored with
//! the step and published as `step.annotated`.

use serde_json::Value;

use super::Runner;
use super::act::Acted;
use super::observe::Observed;
use super::record::StepDraft;
use super::state::RunState;
use crate::device::Device;
use crate::device::exec::ExecError;
use crate::domain::{Action, Annotation};
use crate::run::extend::hook::{Call, Decision, HookConfig, OnError};

fn note(draft: &mut StepDraft, h: &HookConfig, when: &str, decision: &str, reason: Option<String>) {
    let action = match decision {
        "rewrite" => draft.action_json().map(|a| a.to_string()),
        _ => None,
    };
    draft.step.annotations.push(Annotation::ActionHook {
        hook: h.shown(),
        when: when.into(),
        decision: decision.into(),
        reason,
        action,
    });
}

impl Runner {
    /// What the step is about, as a hook is told it (the action as recorded).
    fn hook_call<'a>(
        st: &RunState<'_>,
        device: &'a dyn Device,
        obs: &'a Observed,
        draft: &StepDraft,
    ) -> Call<'a> {
        Call {
            task_id: st.task().id.to_string(),
            device: device.serial(),
            step: st.step(),
            action: draft.action_json(),
            summary: &obs.repr.summary,
            app: obs.repr.app_package.as_deref(),
            activity: obs.repr.activity.as_deref(),
        }
    }

    /// The `before` hooks in order, each given the action the previous one let through.
    /// `Err`: the action does not run (skipped, a bad rewrite, a failed hook that fails
    /// closed), the step recorded as such.
    pub(super) async fn ask_hooks(
        &self,
        st: &RunState<'_>,
        device: &dyn Device,
        mut action: Action,
        obs: &Observed,
        draft: &mut StepDraft,
    ) -> Result<Action, Acted> {
        let cfg = self.actions.current();
        for h in cfg.hooks.iter().filter(|h| h.when.before()) {
            draft.set_action(&action);
            let answer = h.before(&Self::hook_call(st, device, obs, draft)).await;
            match answer {
                Ok(Decision::Continue) => note(draft, h, "before", "continue", None),
                Ok(Decision::Skip { reason }) => {
                    note(draft, h, "before", "skip", Some(reason.clone()));
                    draft.skipped(&format!("an action hook skipped it: {reason}"));
                    return Err(Acted::Told(format!("skipped by an action hook: {reason}")));
                }
                Ok(Decision::Rewrite { action: v }) => match rewritten(&cfg, &v) {
                    Ok(a) => {
                        draft.set_action(&a);
                        note(draft, h, "before", "rewrite", None);
                        action = a;
                    }
                    Err(e) => {
                        let e = format!("the action hook's rewrite cannot run: {e}");
                        note(draft, h, "before", "error", Some(e.clone()));
                        draft.failed(e.clone(), None);
                        return Err(Acted::Told(format!("failed: {e}")));
                    }
                },
                Err(e) => {
                    note(draft, h, "before", "error", Some(e.clone()));
                    if h.on_error == OnError::Fail {
                        let e = format!("an action hook failed, so the action did not run: {e}");
                        draft.failed(e.clone(), None);
                        return Err(Acted::Told(format!("failed: {e}")));
                    }
                }
            }
        }
        draft.set_action(&action);
        Ok(action)
    }

    /// The `after` hooks, told how the action went; a failed call is recorded only (the
    /// action has run).
    pub(super) async fn tell_hooks(
        &self,
        st: &RunState<'_>,
        device: &dyn Device,
        result: &Result<Value, ExecError>,
        obs: &Observed,
        draft: &mut StepDraft,
    ) {
        let cfg = self.actions.current();
        let outcome = result.clone().map_err(|e| e.to_string());
        for h in cfg.hooks.iter().filter(|h| h.when.after()) {
            let told = h
                .after(&Self::hook_call(st, device, obs, draft), &outcome)
                .await;
            match told {
                Ok(()) => note(draft, h, "after", "told", None),
                Err(e) => note(draft, h, "after", "error", Some(e)),
            }
        }
    }
}

/// A hook's rewritten action, parsed like any action (custom actions included); only
/// what a device does.
fn rewritten(cfg: &crate::run::extend::ActionsConfig, v: &Value) -> Result<Action, String> {
    let a = (cfg.parser().parse(v)).map_err(|e| format!("{} {}", e.caller_message(), e.hint()))?;
    match a {
        Action::Finish { .. } | Action::AskUser { .. } | Action::McpCall { .. } => Err(format!(
            "`{}` is not a device action; a hook may rewrite an action into another device action",
            a.name()
        )),
        a => Ok(a),
    }
}
