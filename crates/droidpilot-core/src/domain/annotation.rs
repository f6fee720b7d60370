//! What the roles around an agent said about a step, and every model call a step made.
//!
//! A planned agent (`agent::planned`) has a planner, a progress checker and a completion
//! verifier beside the model that acts; a chain passes each step through several agents;
//! the runner checks typed text against the next screen. Each of these leaves an
//! `Annotation` on the step it happened at: it is stored with the step, published as its
//! own event (`step.annotated`), and shown in the trajectory. `ModelCall` is one call to a
//! model by one role, with its tokens, cost and latency, so the trajectory can say what
//! each role cost.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Why the planner was consulted (seed 002's five moments, and a stuck loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanTrigger {
    /// At the first step, in the background.
    Initial,
    /// The progress checker said the agent is not progressing.
    ProgressStall,
    /// Enough step failures since the last plan (a wrong-task verdict counts three).
    StepFailures,
    /// The runner's stuck detector escalated: the planner is asked before a person is.
    Stuck,
    /// The final steps, with failures since the last plan: the agent waits for it.
    LastResort,
}

/// One way to do the task, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Approach {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub steps_summary: Vec<String>,
    /// 0..=1.
    #[serde(default)]
    pub confidence: f64,
}

/// The planner's answer: 2–3 approaches and which to try first; a recovery plan also
/// says what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Plan {
    pub approaches: Vec<Approach>,
    /// Index into `approaches` (`recommended_index` is read too, as seed 002 names it).
    #[serde(default, alias = "recommended_index")]
    pub recommended: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<String>,
    /// Seed 002's `splitScreen` recommendation: the task is best done with two apps on
    /// screen at once (`split_screen`, or `splitScreen` as the seed names it).
    #[serde(
        default,
        alias = "splitScreen",
        skip_serializing_if = "Option::is_none"
    )]
    pub split_screen: Option<SplitRecommendation>,
}

/// Two apps the planner would have side by side, `top` above `bottom`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SplitRecommendation {
    pub top: String,
    pub bottom: String,
    #[serde(default)]
    pub reason: String,
}

impl Plan {
    /// The recommended approach (the first when the index is out of range).
    pub fn recommended(&self) -> Option<&Approach> {
        self.approaches
            .get(self.recommended)
            .or_else(|| self.approaches.first())
    }

    /// The guidance the acting agent reads (seed 002's `toGuidanceText`).
    pub fn guidance_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::from("STRATEGIC GUIDANCE (from planning agent):\n");
        if let Some(a) = self.recommended() {
            let _ = writeln!(s, "Recommended approach: {}\n{}", a.name, a.description);
            if !a.steps_summary.is_empty() {
                s.push_str("Steps:\n");
                for (i, step) in a.steps_summary.iter().enumerate() {
                    let _ = writeln!(s, "  {}. {step}", i + 1);
                }
            }
        }
        let rec = self.recommended().map(|a| a.name.as_str());
        let alts: Vec<&Approach> = self
            .approaches
            .iter()
            .filter(|a| Some(a.name.as_str()) != rec)
            .collect();
        if !alts.is_empty() {
            s.push_str("\nAlternative approaches if this fails:\n");
            for a in alts {
                let _ = writeln!(s, "- {}: {}", a.name, a.description);
            }
        }
        if let Some(d) = &self.diagnosis {
            let _ = writeln!(s, "\nDiagnosis: {d}");
        }
        if let Some(r) = &self.split_screen {
            let _ = writeln!(
                s,
                "\nSplit-screen: {} above {}{}. The phone shows both; act in the window of the app each step needs.",
                r.top,
                r.bottom,
                if r.reason.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.reason)
                }
            );
        }
        s
    }
}

/// What happened beside the action at one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Annotation {
    /// The planner was asked (in the background unless `blocking`).
    PlanRequested {
        trigger: PlanTrigger,
        blocking: bool,
    },
    /// A plan arrived and became the agent's guidance.
    Plan { trigger: PlanTrigger, plan: Plan },
    /// The planner failed or timed out; the task goes on without new guidance.
    PlanFailed { trigger: PlanTrigger, error: String },
    /// The progress checker's answer.
    Progress { progressing: bool, reason: String },
    /// The completion verifier's verdict on a claimed finish. `wrong_task`: the reason
    /// says the agent did something else.
    Verdict {
        accepted: bool,
        reason: String,
        #[serde(default)]
        wrong_task: bool,
    },
    /// Typed text did not show up in the field as typed.
    TypedTextMismatch {
        expected: String,
        actual: Option<String>,
    },
    /// A failure the planned agent counted (toward re-planning).
    Failure { description: String, count: u32 },
    /// The stale-screen check before acting found that the screen had changed since it
    /// was read and the action's target with it: `moved` (found again by its selector
    /// and acted on where it is now, as element `now`) or `vanished` (not acted on; the
    /// next step decides on the fresh screen).
    StaleScreen {
        outcome: StaleOutcome,
        /// The target as decided (`element 3`, `selector #send`).
        target: String,
        /// Its bounds on the screen the decision was made on.
        before: crate::domain::Bounds,
        /// Its bounds on the fresh screen (absent when it vanished).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<crate::domain::Bounds>,
        /// The element id it has on the fresh screen, when it was an element target.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        now: Option<u32>,
        /// How long the decision had taken (ms from the observation to the check).
        age_ms: u64,
    },
    /// A safety directive (`[[runner.safety_directives]]`) was added to the agent's
    /// prompt because the screen called for it.
    SafetyDirective {
        /// The directive's name (`payment`, `permission`, `delete`, `password`…).
        name: String,
        /// What the agent was told.
        directive: String,
    },
    /// A split-screen task (the `split` agent): which window this step was for, and
    /// what happened there: `split` (the first step, both apps put on screen), `acted`,
    /// `focused` (a tap that gave the window the focus before its key or typing),
    /// `finished`. An action outside its window is a rejected step instead.
    Window {
        /// `top`, `bottom`, or `both` (the `split` step).
        window: String,
        /// The window's app, as the task named it.
        app: String,
        event: String,
        /// What the window's agent answered (`finished`), or how its action was fitted
        /// to the window.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// An action hook (`[[actions.hooks]]`) was asked about the step's action before it
    /// ran (`decision`: `continue`, `skip`, `rewrite`, or `error` when the call failed),
    /// or told its outcome after (`told`, or `error`).
    ActionHook {
        /// The hook's URL, without credentials or query.
        hook: String,
        /// `before` or `after`.
        when: String,
        decision: String,
        /// A skip's reason, or what failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A rewrite's action as it ran (JSON text, secrets masked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
    },
    /// A chain passed the step from one agent to the next.
    Switch {
        from: String,
        to: String,
        /// What the previous agent proposed (its action as JSON text), if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proposed: Option<String>,
    },
    /// A chain with `decide` set to `majority` or `judge` chose among its agents'
    /// proposals: who proposed what, which was taken and why.
    Consensus {
        decide: ChainDecide,
        /// Every proposing agent's action, in chain order (numbered from 1 as `chosen`).
        proposals: Vec<Proposal>,
        /// The number (from 1) of the proposal taken.
        chosen: u32,
        /// `majority`: the most proposals meant that action; `tie`: no single action had
        /// the most (or none was proposed twice) and `tie_rule` chose; `judge`: the judge
        /// agent chose.
        outcome: ConsensusOutcome,
        /// How many proposals meant the action taken.
        votes: u32,
        /// The rule that chose on a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tie_rule: Option<TieRule>,
        /// The judge agent, and its answer as it wrote it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge_answer: Option<String>,
    },
    /// A chain's filter agent changed the observation the agents after it received.
    ObservationChanged {
        by: String,
        /// Element ids left out of the next agents' element list.
        dropped: Vec<u32>,
        /// A note added for them (after the task, with the guidance).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The navigator's target was located by the grounding model instead (also published
    /// as `agent.grounding_fallback`).
    GroundingFallback {
        reason: GroundingReason,
        /// The confidence the navigator gave its answer (0–1), when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confidence: Option<f64>,
        /// The target as the navigator named it (`element 3 "Send"`, a description).
        before: String,
        /// Where the grounding model put it: the point, and the element there if any.
        after: String,
    },
}

/// One chain agent's proposal at a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Proposal {
    /// The agent (`navigator openai:gpt-4o-mini`), with its place in the chain.
    pub agent: String,
    /// Its action, as JSON text.
    pub action: String,
    /// Its reasoning, if it gave any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thinking: String,
}

/// How a chain turns its agents' proposals into the step's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainDecide {
    /// Each agent sees the proposals before it; the last one's action is taken.
    #[default]
    Last,
    /// Every agent proposes on its own; the action most of them mean is taken.
    Majority,
    /// Every agent proposes; the chain's judge agent picks one.
    Judge,
}

/// What a majority chain takes when no action has the most proposals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TieRule {
    /// The last proposing agent's action (as `decide: last` would).
    #[default]
    Last,
    /// The first proposing agent's action.
    First,
}

/// How a consensus was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConsensusOutcome {
    Majority,
    Tie,
    Judge,
}

/// Why the navigator's target went to the grounding model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroundingReason {
    /// The navigator answered with a confidence below the agent's `grounding_below`.
    LowConfidence,
    /// The navigator's target is not on the screen (an unknown id, only a description).
    Unresolved,
}

/// What the stale-screen check did with a target that changed under the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StaleOutcome {
    /// Re-resolved: the action ran on the target where it is now.
    Moved,
    /// Gone from the fresh screen: the action did not run; the agent decides again.
    Vanished,
}

/// Who made a model call.
// Its name (`as_str`) is derived.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ModelRole {
    /// The agent that decides the action.
    Actor,
    Planner,
    Progress,
    Verifier,
    Grounder,
    /// A script's AI-in-the-middle recovery.
    Recovery,
    /// A chain's filter agent (changes the observation the next agents get).
    Filter,
    /// A chain's judge agent (picks one of the proposals).
    Judge,
}

impl ModelRole {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One call to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelCall {
    pub role: ModelRole,
    /// `provider:model`.
    pub model: String,
    /// Input tokens, the cached ones included.
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, those the provider served from its prompt cache (priced at the
    /// cached rate).
    #[serde(default)]
    pub tokens_cached: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub latency_ms: u64,
    /// Set when the call failed (its tokens are then zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            approaches: vec![
                Approach {
                    name: "Clock app".into(),
                    description: "Open Clock and add an alarm".into(),
                    steps_summary: vec!["Open Clock".into(), "Tap +".into()],
                    confidence: 0.8,
                },
                Approach {
                    name: "Search".into(),
                    description: "Search the launcher for alarms".into(),
                    steps_summary: vec![],
                    confidence: 0.3,
                },
            ],
            recommended: 0,
            diagnosis: Some("tapped the wrong tab".into()),
            split_screen: None,
        }
    }

    /// The planner may recommend split-screen, under the seed's name too.
    #[test]
    fn a_split_screen_recommendation_is_read_and_shown() {
        let p: Plan = serde_json::from_str(
            r#"{"approaches": [], "splitScreen": {"top": "Messages", "bottom": "Notes", "reason": "copy across"}}"#,
        )
        .unwrap();
        let r = p.split_screen.clone().unwrap();
        assert_eq!((r.top.as_str(), r.bottom.as_str()), ("Messages", "Notes"));
        assert!(
            p.guidance_text()
                .contains("Split-screen: Messages above Notes (copy across)")
        );
        assert!(plan().split_screen.is_none());
        assert!(!plan().guidance_text().contains("Split-screen"));
    }

    #[test]
    fn guidance_names_the_recommended_approach_its_steps_the_alternatives_and_the_diagnosis() {
        let g = plan().guidance_text();
        assert!(g.starts_with("STRATEGIC GUIDANCE"));
        assert!(g.contains("Recommended approach: Clock app\nOpen Clock and add an alarm"));
        assert!(g.contains("  1. Open Clock\n  2. Tap +"));
        assert!(g.contains("- Search: Search the launcher for alarms"));
        assert!(g.contains("Diagnosis: tapped the wrong tab"));
    }

    #[test]
    fn an_out_of_range_recommendation_falls_back_to_the_first_approach() {
        let mut p = plan();
        p.recommended = 7;
        assert_eq!(p.recommended().unwrap().name, "Clock app");
    }

    /// Model calls are recorded and summed by this name; it is serde's.
    #[test]
    fn model_role_names_are_the_wire_names() {
        for (r, name) in [
            (ModelRole::Actor, "actor"),
            (ModelRole::Planner, "planner"),
            (ModelRole::Progress, "progress"),
            (ModelRole::Verifier, "verifier"),
            (ModelRole::Grounder, "grounder"),
            (ModelRole::Recovery, "recovery"),
        ] {
            assert_eq!(r.as_str(), name);
            assert_eq!(serde_json::to_value(r).unwrap(), name);
        }
    }

    #[test]
    fn annotations_are_tagged_by_kind() {
        let a = Annotation::Verdict {
            accepted: false,
            reason: "wrong app".into(),
            wrong_task: true,
        };
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["kind"], "verdict");
        assert_eq!(serde_json::from_value::<Annotation>(v).unwrap(), a);
    }
}
