//! The chain agent (`"kind": "chain"`, seed 000): each step's observation passes through
//! several agents in order, e.g. a pre-processor, the main agent and a validator. Each
//! agent sees what the ones before it proposed (their thinking and action, pinned after
//! the task as guidance) and answers with an action of its own: it may keep the proposal
//! or override it. The last agent's action is the chain's. Every hand-over is a `Switch`
//! annotation on the step (stored, and published as `step.annotated`), and every agent's
//! model calls are counted with the step.

use async_trait::async_trait;

use super::context::AgentContext;
use super::{Agent, AgentError, Decision};
use crate::domain::Annotation;

pub struct ChainAgent {
    agents: Vec<Box<dyn Agent>>,
}

impl ChainAgent {
    pub fn new(agents: Vec<Box<dyn Agent>>) -> Self {
        Self { agents }
    }
}

/// What the agents before this one proposed, as guidance for the next.
fn proposals_text(done: &[(String, Decision)]) -> String {
    let mut s = String::from(
        "Earlier agents in this chain proposed (keep the proposal or choose better):\n",
    );
    for (who, d) in done {
        let action = serde_json::to_string(&d.action).unwrap_or_default();
        let thinking = d.thinking.trim();
        if thinking.is_empty() {
            s.push_str(&format!("- {who}: {action}\n"));
        } else {
            s.push_str(&format!("- {who}: {action} (because: {thinking})\n"));
        }
    }
    s
}

#[async_trait]
impl Agent for ChainAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        let mut done: Vec<(String, Decision)> = Vec::with_capacity(self.agents.len());
        let mut notes = Vec::new();
        for agent in &mut self.agents {
            let who = agent.describe();
            let mut c = ctx.clone();
            if let Some((from, prev)) = done.last() {
                notes.push(Annotation::Switch {
                    from: from.clone(),
                    to: who.clone(),
                    proposed: serde_json::to_string(&prev.action).ok(),
                });
                let p = proposals_text(&done);
                c.guidance = Some(match &ctx.guidance {
                    Some(g) => format!("{g}\n\n{p}"),
                    None => p,
                });
            }
            let d = agent.next(&c).await?;
            done.push((who, d));
        }
        let (_, mut last) = done.pop().expect("a chain holds at least two agents");
        for (_, d) in &done {
            last.absorb(&d.calls);
            // Every agent's self-corrections count toward the step budget.
            last.retries += d.retries;
        }
        let mut all = notes;
        for (_, d) in &mut done {
            all.append(&mut d.annotations);
        }
        all.append(&mut last.annotations);
        last.annotations = all;
        Ok(last)
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.agents.iter().map(|a| a.describe()).collect();
        format!("chain({})", names.join(" → "))
    }

    fn wants_device_context(&self) -> bool {
        self.agents.iter().any(|a| a.wants_device_context())
    }

    fn replan_when_stuck(&mut self, why: &str) -> bool {
        let mut any = false;
        for a in &mut self.agents {
            any |= a.replan_when_stuck(why);
        }
        any
    }
}
