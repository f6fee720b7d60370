//! The chain agent (`"kind": "chain"`, seed 000): each step's observation passes through
//! several agents in order, e.g. a pre-processor, the main agent and a validator.
//!
//! How the step's action is chosen is the chain's `decide`:
//! - `last` (default): each agent sees what the ones before it proposed (their thinking
//!   and action, pinned after the task as guidance) and answers with an action of its
//!   own: it may keep the proposal or override it. The last agent's action is the
//!   chain's. Every hand-over is a `Switch` annotation.
//! - `majority`: every proposing agent answers on its own; the action most of them mean
//!   is taken (`consensus::majority`; a tie goes to the chain's `tie` rule).
//! - `judge`: every proposing agent answers on its own; the agent with `"role": "judge"`
//!   is shown the proposals and picks one by its number.
//!
//! An agent with `"role": "filter"` proposes nothing: it returns an `ObservationEdit`
//! (elements to drop, a note), and the agents after it get the changed observation.
//! Proposals, the choice and each change are annotations on the step (stored, and
//! published as `step.annotated`), and every agent's model calls count with the step.

use async_trait::async_trait;

use super::consensus::{ChainRole, RoleModel, majority, meaning};
use super::context::AgentContext;
use super::{Agent, AgentError, Decision};
use crate::domain::{Annotation, ChainDecide, ConsensusOutcome, ModelCall, Proposal, TieRule};

/// One agent of a chain.
pub enum Member {
    Propose(Box<dyn Agent>),
    /// A judge or a filter: one question to its model at each step.
    Role(RoleModel),
}

impl Member {
    fn describe(&self) -> String {
        match self {
            Member::Propose(a) => a.describe(),
            Member::Role(r) => r.describe(),
        }
    }
}

pub struct ChainAgent {
    members: Vec<Member>,
    decide: ChainDecide,
    tie: TieRule,
}

impl ChainAgent {
    /// A chain whose agents all propose and whose last agent's action is taken.
    pub fn new(agents: Vec<Box<dyn Agent>>) -> Self {
        Self::with_members(
            agents.into_iter().map(Member::Propose).collect(),
            ChainDecide::Last,
            TieRule::Last,
        )
    }

    pub fn with_members(members: Vec<Member>, decide: ChainDecide, tie: TieRule) -> Self {
        Self {
            members,
            decide,
            tie,
        }
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

/// What one pass through the chain gathered before the choice.
#[derive(Default)]
struct Pass {
    /// The proposals, in chain order: (who, decision).
    done: Vec<(String, Decision)>,
    notes: Vec<Annotation>,
    /// The filters' and the judge's calls.
    calls: Vec<ModelCall>,
}

impl ChainAgent {
    /// Runs the filters and the proposing agents in order; `ctx` becomes the
    /// observation as the last filter left it.
    async fn propose(&mut self, ctx: &mut AgentContext) -> Result<Pass, AgentError> {
        let mut pass = Pass::default();
        let last_wins = self.decide == ChainDecide::Last;
        for (i, m) in self.members.iter_mut().enumerate() {
            let who = format!("agents[{i}] {}", m.describe());
            match m {
                Member::Role(r) if r.role == ChainRole::Filter => {
                    let a = r.filter(ctx).await.map_err(|e| pass.charge(e))?;
                    a.value.apply(ctx, &who);
                    pass.notes.push(Annotation::ObservationChanged {
                        by: who,
                        dropped: a.value.drop.clone(),
                        note: a.value.note.clone(),
                    });
                    pass.calls.extend(a.calls);
                }
                Member::Role(_) => {}
                Member::Propose(agent) => {
                    let mut c = ctx.clone();
                    if last_wins && let Some((from, prev)) = pass.done.last() {
                        pass.notes.push(Annotation::Switch {
                            from: from.clone(),
                            to: who.clone(),
                            proposed: serde_json::to_string(&prev.action).ok(),
                        });
                        let p = proposals_text(&pass.done);
                        c.guidance = Some(match &ctx.guidance {
                            Some(g) => format!("{g}\n\n{p}"),
                            None => p,
                        });
                    }
                    let d = agent.next(&c).await.map_err(|e| pass.charge(e))?;
                    pass.done.push((who, d));
                }
            }
        }
        Ok(pass)
    }

    /// Which proposal is taken, and the annotation that says how (none for `last`).
    async fn choose(
        &mut self,
        original: &AgentContext,
        seen: &AgentContext,
        pass: &mut Pass,
    ) -> Result<(usize, Option<Annotation>), AgentError> {
        let n = pass.done.len();
        let proposals = || {
            (pass.done.iter())
                .map(|(who, d)| Proposal {
                    agent: who.clone(),
                    action: serde_json::to_string(&d.action).unwrap_or_default(),
                    thinking: d.thinking.trim().to_string(),
                })
                .collect::<Vec<_>>()
        };
        match self.decide {
            ChainDecide::Last => Ok((n - 1, None)),
            ChainDecide::Majority => {
                let o = &original.observation;
                let size = o.screenshot.as_ref().and_then(|s| s.dimensions());
                let meanings: Vec<String> = (pass.done.iter())
                    .map(|(_, d)| meaning(&d.action, &o.screen, size))
                    .collect();
                let (i, votes, tie) = majority(&meanings, self.tie);
                let note = Annotation::Consensus {
                    decide: ChainDecide::Majority,
                    proposals: proposals(),
                    chosen: i as u32 + 1,
                    outcome: if tie {
                        ConsensusOutcome::Tie
                    } else {
                        ConsensusOutcome::Majority
                    },
                    votes,
                    tie_rule: tie.then_some(self.tie),
                    judge: None,
                    judge_answer: None,
                };
                Ok((i, Some(note)))
            }
            ChainDecide::Judge => {
                let (j, judge) = (self.members.iter().enumerate())
                    .find_map(|(j, m)| match m {
                        Member::Role(r) if r.role == ChainRole::Judge => Some((j, r)),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        AgentError::Spec(super::SpecError::new(
                            "decide",
                            "a judge chain needs an agent with \"role\": \"judge\"",
                        ))
                    })?;
                let a = judge
                    .judge(seen, &pass.done)
                    .await
                    .map_err(|e| pass.charge(e))?;
                pass.calls.extend(a.calls);
                let chosen = &pass.done[a.value].1;
                let votes = (pass.done.iter())
                    .filter(|(_, d)| d.action == chosen.action)
                    .count() as u32;
                let note = Annotation::Consensus {
                    decide: ChainDecide::Judge,
                    proposals: proposals(),
                    chosen: a.value as u32 + 1,
                    outcome: ConsensusOutcome::Judge,
                    votes,
                    tie_rule: None,
                    judge: Some(format!("agents[{j}] {}", judge.describe())),
                    judge_answer: Some(a.raw.trim().to_string()),
                };
                Ok((a.value, Some(note)))
            }
        }
    }
}

impl Pass {
    /// An unusable answer's error, charged with every call this step made before it.
    fn charge(&self, e: AgentError) -> AgentError {
        let AgentError::Parse {
            error,
            raw,
            attempts,
            mut calls,
            ..
        } = e
        else {
            return e;
        };
        let mut all: Vec<ModelCall> = self
            .done
            .iter()
            .flat_map(|(_, d)| d.calls.clone())
            .collect();
        all.extend(self.calls.iter().cloned());
        all.append(&mut calls);
        let sum = super::CallSum::of(&all);
        AgentError::Parse {
            error,
            raw,
            attempts,
            usage: sum.usage,
            cost: sum.cost,
            calls: all,
        }
    }
}

#[async_trait]
impl Agent for ChainAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        let mut seen = ctx.clone();
        let mut pass = self.propose(&mut seen).await?;
        let (i, consensus) = self.choose(ctx, &seen, &mut pass).await?;
        let Pass {
            mut done,
            notes,
            calls,
        } = pass;
        let (_, mut chosen) = done.remove(i);
        chosen.absorb(&calls);
        for (_, d) in &done {
            chosen.absorb(&d.calls);
            // Every agent's self-corrections count toward the step budget.
            chosen.retries += d.retries;
        }
        let mut all = notes;
        for (_, d) in &mut done {
            all.append(&mut d.annotations);
        }
        all.append(&mut chosen.annotations);
        all.extend(consensus);
        chosen.annotations = all;
        Ok(chosen)
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.members.iter().map(|m| m.describe()).collect();
        let how = match self.decide {
            ChainDecide::Last => "",
            ChainDecide::Majority => " by majority",
            ChainDecide::Judge => " by judge",
        };
        format!("chain({}){how}", names.join(" → "))
    }

    fn wants_device_context(&self) -> bool {
        self.members.iter().any(|m| match m {
            Member::Propose(a) => a.wants_device_context(),
            Member::Role(_) => false,
        })
    }

    fn replan_when_stuck(&mut self, why: &str) -> bool {
        let mut any = false;
        for m in &mut self.members {
            if let Member::Propose(a) = m {
                any |= a.replan_when_stuck(why);
            }
        }
        any
    }
}
