//! `ReplayAgent`: returns a fixed list of actions in order, then `finish`. No model;
//! used to replay a recorded flow and to drive the runner in tests.

use async_trait::async_trait;

use super::{Agent, AgentContext, AgentError, Decision};
use crate::domain::Action;

pub struct ReplayAgent {
    actions: std::vec::IntoIter<Action>,
}

impl ReplayAgent {
    pub fn new(actions: Vec<Action>) -> Self {
        Self {
            actions: actions.into_iter(),
        }
    }
}

#[async_trait]
impl Agent for ReplayAgent {
    async fn next(&mut self, _ctx: &AgentContext) -> Result<Decision, AgentError> {
        let action = self.actions.next().unwrap_or(Action::Finish {
            success: true,
            reason: Some("replay complete".into()),
            answer: None,
        });
        Ok(Decision::local(action))
    }
    fn describe(&self) -> String {
        "replay".into()
    }
}
