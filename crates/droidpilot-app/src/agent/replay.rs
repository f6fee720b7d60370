//! `ReplayAgent`: returns a fixed list of actions in order, then `finish`. No model;
//! used to replay a recorded flow and to drive the runner in tests. A scripted run fails
//! at the first step that fails (after the runner's retries) unless `on_error` says
//! `continue`, and a resumed run carries on after the actions its committed steps ran.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::context::Note;
use super::{Agent, AgentContext, AgentError, Decision};
use crate::domain::{Action, Step};

/// What a replay does when one of its actions fails.
// The list of names (`strum::VariantNames`) is derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    ToSchema,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OnError {
    /// End the task as failed, naming the step and the error.
    #[default]
    Fail,
    /// Record the failed step and go on with the next action.
    Continue,
}

pub struct ReplayAgent {
    actions: std::vec::IntoIter<Action>,
    on_error: OnError,
    /// The step whose action was done again after the phone dropped during it.
    redone: Option<u32>,
    /// The texts of the actions marked `"secret": true`.
    secrets: Vec<String>,
    /// How many actions the list had, and the index of the one returned last.
    total: usize,
    last: Option<usize>,
}

impl ReplayAgent {
    /// A replay that fails at the first failed step (`on_error: fail`).
    pub fn new(actions: Vec<Action>) -> Self {
        Self {
            total: actions.len(),
            last: None,
            actions: actions.into_iter(),
            on_error: OnError::Fail,
            redone: None,
            secrets: Vec::new(),
        }
    }

    /// Texts the runner masks in what it records (`Agent::secrets`).
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.secrets = secrets;
        self
    }

    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = on_error;
        self
    }
}

#[async_trait]
impl Agent for ReplayAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        // The phone dropped during the last step's action and came back: that action may
        // not have run, and skipping it would replay the rest against the wrong screen.
        let dropped = ctx.history.notes().find_map(|n| match n {
            Note::DeviceDropped { step, action } if *step == ctx.observation.step_count => {
                Some((*step, action.clone()))
            }
            _ => None,
        });
        if let Some((step, action)) = dropped
            && self.redone != Some(step)
        {
            self.redone = Some(step);
            return Ok(Decision::local(action));
        }
        let next = self.actions.next();
        self.last = next.is_some().then(|| self.total - self.actions.len() - 1);
        let action = next.unwrap_or(Action::Finish {
            success: true,
            reason: Some("replay complete".into()),
            answer: None,
        });
        Ok(Decision::local(action))
    }

    fn describe(&self) -> String {
        "replay".into()
    }

    fn fails_on_failed_action(&self) -> bool {
        self.on_error == OnError::Fail
    }

    fn plays_fixed_actions(&self) -> bool {
        true
    }

    fn secrets(&self) -> Vec<String> {
        self.secrets.clone()
    }

    fn fixed_action_index(&self) -> Option<usize> {
        self.last
    }

    /// Every committed step that carries an action took one action from the list (a
    /// failed one too: the live run went on after it), so that many are skipped. The
    /// step in flight when the process died was not committed and runs again.
    fn resume(&mut self, committed: &[Step]) {
        let done = committed.iter().filter(|s| s.action.is_some()).count();
        if done > 0 {
            self.actions.nth(done - 1);
        }
    }
}
