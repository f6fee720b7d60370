//! The verify phase: stuck detection over what the agent did and what the screen did.
//! Stuck once: a diagnostic in the next prompt; still stuck: ask a person (or fail);
//! nothing helps: fail.

use std::ops::ControlFlow::{Break as Stop, Continue};

use serde_json::json;

use super::observe::Observed;
use super::record::{StepDraft, Then};
use super::state::RunState;
use super::{Break, End, Phase, Runner};
use crate::agent::context::Note;
use crate::agent::{Agent, Decision};
use crate::domain::{Action, Annotation, StuckResponse, TaskEvent, TaskStatus};
use crate::run::stuck::Stuck;
use crate::store::StoreError;

impl Runner {
    /// Checks the step for being stuck and sets what the agent's history keeps of it.
    /// `outcome` is the act phase's account of the step.
    pub(super) async fn verify_phase(
        &self,
        st: &mut RunState<'_>,
        agent: &mut dyn Agent,
        decision: &Decision,
        obs: &Observed,
        mut outcome: String,
        draft: &mut StepDraft,
    ) -> Phase<()> {
        let n = st.step();
        // A script replay bounds its own waits and retries; an unchanged screen while it
        // waits for an element is not being stuck. A fixed list of actions cannot use a
        // diagnostic or an answer: the detector (and its question) is for model agents.
        let fixed = decision.replay.is_some() || agent.plays_fixed_actions();
        let verdict = match fixed {
            true => Stuck::No,
            false => st.check_stuck(obs.content, &decision.action),
        };
        match verdict {
            Stuck::No => {}
            Stuck::Diagnose(why) => {
                self.stuck_event(st, &why, StuckResponse::Diagnose).await?;
                draft.notes.push(Note::Stuck {
                    step: n,
                    why,
                    escalated: false,
                });
                outcome.push_str(" (stuck: diagnostic sent)");
            }
            // A planner is consulted before a person (once per task).
            Stuck::Escalate(why) if st.may_replan() && agent.replan_when_stuck(&why) => {
                self.stuck_event(st, &why, StuckResponse::Replan).await?;
                st.replanning();
                draft.detail(json!({"stuck": why, "replanning": true}));
                draft.notes.push(Note::Stuck {
                    step: n,
                    why,
                    escalated: true,
                });
                outcome.push_str(" (stuck: re-planning)");
            }
            Stuck::Escalate(why) if self.cfg.ask_user_when_stuck => {
                self.stuck_event(st, &why, StuckResponse::AskUser).await?;
                draft.detail(json!({"stuck": why}));
                draft.remember(n, decision, outcome);
                return Ok(Stop(Break::Commit(Then::AskStuck(why))));
            }
            Stuck::Escalate(why) => {
                self.stuck_event(st, &why, StuckResponse::Abort).await?;
                let end = End::new(TaskStatus::Failed, format!("stuck: {why}"));
                return Ok(Stop(Break::End(end)));
            }
            Stuck::Abort(why) => {
                self.stuck_event(st, &why, StuckResponse::Abort).await?;
                let end = End::new(TaskStatus::Failed, format!("stuck: {why}"));
                return Ok(Stop(Break::Commit(Then::End(end))));
            }
        }
        // Text recorded masked (it may have gone to a password field) is not checked:
        // a mismatch would record it in clear.
        if let Action::Type { text, .. } = &decision.action
            && matches!(&draft.step.action, Some(Action::Type { text: kept, .. }) if kept == text)
        {
            st.typed(n, text.clone());
        }
        draft.remember(n, decision, outcome);
        Ok(Continue(()))
    }

    /// `step.stuck`: the detector fired at this step, and what the runner does about it.
    async fn stuck_event(
        &self,
        st: &RunState<'_>,
        why: &str,
        response: StuckResponse,
    ) -> Result<(), StoreError> {
        let ev = TaskEvent::StepStuck {
            task_id: st.task().id,
            step: st.step(),
            why: why.to_string(),
            response,
        };
        self.bus.publish(st.stream(), ev).await.map(drop)
    }

    /// Typed-text verification: the text the previous step typed must show in the focused
    /// field of this screen. A mismatch (an autocorrect, a dropped character, a field that
    /// took only part of it) is annotated on this step and told to the agent before it decides. Password
    /// fields (masked) and screens with no focused field (the form was submitted) are not
    /// checked.
    pub(super) fn check_typed(&self, st: &mut RunState<'_>, obs: &Observed, draft: &mut StepDraft) {
        let Some((typed_at, expected)) = st.take_typed() else {
            return;
        };
        let Some(screen) = &obs.screen else {
            return;
        };
        let Some(field) = screen
            .tree
            .nodes
            .iter()
            .find(|n| n.visible && n.focused && n.class.contains("EditText"))
        else {
            return;
        };
        if field.password || field.text.contains(expected.trim()) {
            return;
        }
        let actual = Some(field.text.clone()).filter(|t| !t.is_empty());
        draft.step.annotations.push(Annotation::TypedTextMismatch {
            expected: expected.clone(),
            actual: actual.clone(),
        });
        // Into the history now: this step's decision should already know.
        st.note(Note::McpResult {
            step: typed_at,
            tool: "droidpilot".into(),
            result: format!(
                "you typed \"{expected}\" but the field shows \"{}\"; check it and fix the text",
                actual.as_deref().unwrap_or("")
            ),
            is_error: true,
        });
    }
}
