//! The remaining-time estimate of a running task (seed 003's ETA): the median time of the
//! agent's steps so far times the steps it is still expected to take. Time a person held
//! the task paused is in no step's timings, so it never counts.
//!
//! The steps still expected: a fixed list (a replay's actions and its finish, a script's
//! steps) says how many are left; for a model agent nobody knows, and counting to
//! `max_steps` (what the dashboard did) overstates a short task many times over, so the
//! estimate assumes the task is halfway (as many steps again as taken so far, at least
//! one, never past `max_steps`): the median guess for a horizon known only by what has
//! passed.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::StepTimings;

/// How long a running task still has to go, about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Estimate {
    /// Milliseconds left: `step_ms` × `remaining_steps`.
    pub remaining_ms: u64,
    /// Steps still expected.
    pub remaining_steps: u32,
    /// The median of the agent's steps' durations so far (ms), paused time not counted.
    pub step_ms: u64,
    /// Where `remaining_steps` comes from.
    pub basis: EtaBasis,
}

/// Where an estimate's remaining steps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EtaBasis {
    /// The agent plays a fixed list: what is left of it.
    Planned,
    /// A model agent: as many steps again as taken so far (at most to `max_steps`).
    SoFar,
}

/// A step's own duration: its captures (taken together, so the longer one), the model,
/// the action, the settle and droidpilot's overhead.
pub fn step_ms(t: &StepTimings) -> u64 {
    t.screenshot_ms.max(t.hierarchy_ms)
        + t.inference_ms
        + t.action_ms
        + t.settle_ms
        + t.overhead_ms.max(0.0).round() as u64
}

/// The estimate after `durations` (the agent's steps so far, ms) of a task with at most
/// `max_steps` steps whose agent plays `planned` steps in all when it plays a fixed list.
/// None before the first step.
pub fn estimate(durations: &[u64], planned: Option<u32>, max_steps: u32) -> Option<Estimate> {
    if durations.is_empty() {
        return None;
    }
    let mut sorted = durations.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    let median = match sorted.len() % 2 {
        1 => sorted[mid],
        _ => (sorted[mid - 1] + sorted[mid]) / 2,
    };
    let done = u32::try_from(durations.len()).unwrap_or(u32::MAX);
    let (remaining_steps, basis) = match planned {
        Some(total) => (total.saturating_sub(done), EtaBasis::Planned),
        None => (
            done.max(1).min(max_steps.saturating_sub(done)),
            EtaBasis::SoFar,
        ),
    };
    Some(Estimate {
        remaining_ms: median.saturating_mul(u64::from(remaining_steps)),
        remaining_steps,
        step_ms: median,
        basis,
    })
}

/// The steps a fixed-list agent plays in all, from a task's `agent` object: a replay's
/// actions and its finish, a script's steps. None for a model agent.
pub fn planned_steps(agent: Option<&serde_json::Value>) -> Option<u32> {
    let a = agent?;
    let n = match a.get("kind").and_then(|k| k.as_str()) {
        Some("replay") => a.get("actions")?.as_array()?.len() + 1,
        Some("script") => a.get("script")?.get("steps")?.as_array()?.len(),
        _ => return None,
    };
    u32::try_from(n).ok()
}

/// `GET /v1/tasks/{id}/estimate`: the time a task has left, from its committed steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskEstimate {
    pub task_id: super::TaskId,
    pub status: super::TaskStatus,
    /// Paused or waiting for an answer: nothing runs, so the time left holds.
    pub on_hold: bool,
    /// None once the task has ended, and before its agent's first step.
    pub estimate: Option<Estimate>,
}

impl TaskEstimate {
    /// The estimate of `task` after `steps` (a person's steps do not count).
    pub fn of(task: &super::Task, steps: &[super::Step]) -> Self {
        let durations: Vec<u64> = steps
            .iter()
            .filter(|s| s.by.is_none())
            .map(|s| step_ms(&s.timings))
            .collect();
        let planned = planned_steps(task.spec.agent.as_ref());
        let ended = task.status.is_terminal();
        Self {
            task_id: task.id,
            status: task.status,
            on_hold: matches!(
                task.status,
                super::TaskStatus::Paused | super::TaskStatus::WaitingForUser
            ),
            estimate: (!ended)
                .then(|| estimate(&durations, planned, task.spec.max_steps))
                .flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_step_times_the_steps_left() {
        // A slow outlier does not drag the median.
        let e = estimate(&[1000, 1200, 9000], Some(5), 50).unwrap();
        assert_eq!(
            (e.step_ms, e.remaining_steps, e.remaining_ms),
            (1200, 2, 2400)
        );
        assert_eq!(e.basis, EtaBasis::Planned);
        // A model agent: as many again as so far, not to max_steps.
        let e = estimate(&[1000, 3000], None, 50).unwrap();
        assert_eq!((e.step_ms, e.remaining_steps), (2000, 2));
        assert_eq!(e.basis, EtaBasis::SoFar);
        let near_limit = estimate(&[10; 9], None, 10).unwrap();
        assert_eq!(near_limit.remaining_steps, 1, "never past max_steps");
        assert_eq!(estimate(&[], None, 10), None);
    }

    #[test]
    fn a_fixed_lists_length_from_the_agent_object() {
        let replay = serde_json::json!({"kind": "replay", "actions": [{"action": "home"}, {"action": "back"}]});
        assert_eq!(planned_steps(Some(&replay)), Some(3));
        let script = serde_json::json!({"kind": "script", "script": {"steps": [{}, {}, {}, {}]}});
        assert_eq!(planned_steps(Some(&script)), Some(4));
        let nav = serde_json::json!({"kind": "navigator"});
        assert_eq!(planned_steps(Some(&nav)), None);
    }
}
