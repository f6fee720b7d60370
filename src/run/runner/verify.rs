//! The verify phase: stuck detection over what the agent did and what the screen did.
//! Stuck once: a diagnostic in the next prompt; still stuck: ask a person (or fail);
//! nothing helps: fail.

use std::ops::ControlFlow::{Break as Stop, Continue};

use serde_json::json;

use super::observe::Observed;
use super::record::{StepDraft, Then};
use super::state::RunState;
use super::{Break, End, Phase, Runner};
use crate::agent::Decision;
use crate::agent::context::Note;
use crate::domain::action::TargetField;
use crate::domain::{Action, TaskStatus};
use crate::run::stuck::Stuck;

impl Runner {
    /// Checks the step for being stuck and sets what the agent's history keeps of it.
    /// `outcome` is the act phase's account of the step.
    pub(super) async fn verify_phase(
        &self,
        st: &mut RunState<'_>,
        decision: &Decision,
        obs: &Observed,
        mut outcome: String,
        draft: &mut StepDraft,
    ) -> Phase<()> {
        let n = st.counter.current();
        // A script replay bounds its own waits and retries; an unchanged screen while it
        // waits for an element is not being stuck.
        let verdict = match decision.replay {
            Some(_) => Stuck::No,
            None => st.stuck.observe(obs.layout, tap_target(&decision.action)),
        };
        match verdict {
            Stuck::No => {}
            Stuck::Diagnose(why) => {
                draft.notes.push(Note::McpResult {
                    step: n,
                    tool: "droidpilot".into(),
                    result: format!(
                        "You seem stuck: {why}. Try something different: go back, scroll, or pick another element."
                    ),
                    is_error: true,
                });
                outcome.push_str(" (stuck: diagnostic sent)");
            }
            Stuck::Escalate(why) if self.cfg.ask_user_when_stuck => {
                draft.detail(json!({"stuck": why}));
                draft.remember(n, decision, outcome);
                return Ok(Stop(Break::Commit(Then::AskStuck(why))));
            }
            Stuck::Escalate(why) => {
                let end = End::new(TaskStatus::Failed, format!("stuck: {why}"));
                return Ok(Stop(Break::End(end)));
            }
            Stuck::Abort(why) => {
                let end = End::new(TaskStatus::Failed, format!("stuck: {why}"));
                return Ok(Stop(Break::Commit(Then::End(end))));
            }
        }
        draft.remember(n, decision, outcome);
        Ok(Continue(()))
    }
}

/// The element a tap-like action aimed at, for "the same element tapped N times".
fn tap_target(action: &Action) -> Option<String> {
    match action {
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
    }
}
