//! Asking a person, written once: the agent's `ask_user` action (a phase) and the
//! question the runner asks itself when the agent stays stuck after a diagnostic.

use std::ops::ControlFlow::{Break as Stop, Continue};

use serde_json::json;

use super::record::{StepDraft, Then};
use super::state::RunState;
use super::{Break, End, Fatal, Phase, Runner};
use crate::agent::context::Note;
use crate::domain::TaskStatus;
use crate::run::interaction::AskOutcome;
use crate::run::runner::AskTimeoutPolicy;

impl Runner {
    /// The task waits for an answer (`run::interaction`) or the timeout; a stop or the
    /// task's deadline closes the question. Returns the prompt id and the outcome.
    async fn ask(
        &self,
        st: &mut RunState<'_>,
        question: &str,
        options: Option<Vec<String>>,
    ) -> Result<(String, AskOutcome), Fatal> {
        let timeout = self.cfg.ask_timeout();
        let task = st.task().id;
        let stop = st.stop();
        let deadline = stop.deadline();
        let asked = self
            .prompts
            .ask(
                &self.bus,
                task,
                question,
                options,
                timeout,
                &mut stop.signal,
                Some(deadline),
            )
            .await?;
        Ok(asked)
    }

    /// The `ask_user` action: the answer (or "(no answer)", or the end of the task under
    /// the `fail` timeout policy) goes back to the agent.
    pub(super) async fn ask_user_phase(
        &self,
        st: &mut RunState<'_>,
        question: &str,
        options: Option<Vec<String>>,
        draft: &mut StepDraft,
    ) -> Phase<String> {
        let (prompt_id, outcome) = self.ask(st, question, options).await?;
        let answer = match outcome {
            // The boundary ends the task; the step is not recorded.
            AskOutcome::Stopped => return Ok(Stop(Break::Redo)),
            AskOutcome::Answered { answer, by } => {
                draft.detail(json!({"prompt_id": prompt_id, "answer": answer, "by": by}));
                answer
            }
            AskOutcome::TimedOut => {
                draft.failed("no answer in time", Some(json!({"prompt_id": prompt_id})));
                if self.cfg.ask_user_timeout_policy == AskTimeoutPolicy::Fail {
                    let secs = self.cfg.ask_user_timeout_secs;
                    let why = format!("nobody answered \"{question}\" within {secs} s");
                    let end = End::new(TaskStatus::Failed, why);
                    return Ok(Stop(Break::Commit(Then::End(end))));
                }
                "(no answer)".to_string()
            }
        };
        draft.notes.push(Note::UserAnswer {
            step: st.step(),
            question: question.to_string(),
            answer: answer.clone(),
        });
        Ok(Continue(format!("the user answered: {answer}")))
    }

    /// Stuck after a diagnostic (the step is already committed): ask how to go on. An
    /// answer resets the stuck detector; silence ends the task.
    pub(super) async fn ask_stuck(
        &self,
        st: &mut RunState<'_>,
        why: String,
    ) -> Result<Option<End>, Fatal> {
        let q = format!(
            "I seem to be stuck ({why}) on: \"{}\". How should I continue?",
            st.task().spec.instruction
        );
        let (_, outcome) = self.ask(st, &q, None).await?;
        match outcome {
            AskOutcome::Stopped => Ok(None),
            AskOutcome::Answered { answer, .. } => {
                st.stuck_answered(q, answer);
                Ok(None)
            }
            AskOutcome::TimedOut => Ok(Some(End::new(
                TaskStatus::Failed,
                format!("stuck ({why}) and nobody answered"),
            ))),
        }
    }
}
