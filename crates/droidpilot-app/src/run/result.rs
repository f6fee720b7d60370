//! The result of a finished task in the shape a backend coordinator expects (seed 004):
//! `task_id`, `status` (`success` | `failed` | `timeout` | `error`), `steps_taken`,
//! `actions_executed` (the list of actions), `completion_reason`, plus a count of the
//! actions, a reason code (`CompletionCode`: `max_steps_exceeded`, `device_unreachable`…),
//! our own id, the answer, tokens and cost.
//! Webhooks send it, and handlers can return it for finished tasks.
//!
//! Status mapping (every terminal `TaskStatus` maps to one coordinator status):
//!
//! | TaskStatus    | status    | why |
//! | ------------- | --------- | --- |
//! | `succeeded`   | `success` | the agent finished and said it succeeded |
//! | `failed`      | `failed`  | the agent gave up, got stuck, or the device was lost |
//! | `incomplete`  | `failed`  | `max_steps` ran out: the work was tried and not done |
//! | `timed_out`   | `timeout` | `timeout_seconds` ran out |
//! | `cancelled`   | `error`   | stopped from outside; the task's outcome is unknown, so a coordinator should not treat it as the agent failing |
//! | `interrupted` | `error`   | the server stopped under the task; same reasoning |
//!
//! Queued, running and waiting tasks have no result yet: building one is refused with
//! [`NotFinished`] rather than inventing a fifth status the coordinator does not know.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{Step, StepStatus, Task, TaskId, TaskStatus};

/// The coordinator's four outcomes.
// The name (`as_str`) is derived.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CoordinatorStatus {
    Success,
    Failed,
    Timeout,
    Error,
}

impl CoordinatorStatus {
    /// The coordinator status of a terminal task status; `None` while the task is still
    /// queued, running or waiting for a person.
    pub fn from_task_status(s: TaskStatus) -> Option<Self> {
        match s {
            TaskStatus::Succeeded => Some(Self::Success),
            TaskStatus::Failed | TaskStatus::Incomplete => Some(Self::Failed),
            TaskStatus::TimedOut => Some(Self::Timeout),
            TaskStatus::Cancelled | TaskStatus::Interrupted => Some(Self::Error),
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::WaitingForUser
            | TaskStatus::Paused => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a task ended, as a code (seed 004's reasons `max_steps_exceeded` and
/// `device_unreachable` among them).
// The name (`as_str`) is derived.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CompletionCode {
    /// The agent finished and said it succeeded.
    Completed,
    /// The agent gave up, got stuck, or a step failed for good.
    AgentFailed,
    /// `max_steps` ran out before the agent finished.
    MaxStepsExceeded,
    /// `timeout_seconds` ran out.
    Timeout,
    /// The phone dropped and did not come back, or could not be read.
    DeviceUnreachable,
    /// `max_tokens` or `max_cost_usd` ran out (the reason names which).
    BudgetExceeded,
    Cancelled,
    /// The server stopped under the task.
    Interrupted,
}

impl CompletionCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The code of an ended task: by its status, and for a failure by its reason (the
    /// runner starts a lost device's reason with `device_unreachable`, a spent budget's
    /// with `budget_exceeded`).
    pub fn of(task: &Task) -> Option<Self> {
        let reason_is = |code: Self| {
            task.reason
                .as_deref()
                .is_some_and(|r| r.starts_with(code.as_str()))
        };
        Some(match task.status {
            TaskStatus::Succeeded => Self::Completed,
            TaskStatus::Incomplete => Self::MaxStepsExceeded,
            TaskStatus::TimedOut => Self::Timeout,
            TaskStatus::Cancelled => Self::Cancelled,
            TaskStatus::Interrupted => Self::Interrupted,
            TaskStatus::Failed if reason_is(Self::DeviceUnreachable) => Self::DeviceUnreachable,
            TaskStatus::Failed if reason_is(Self::BudgetExceeded) => Self::BudgetExceeded,
            TaskStatus::Failed => Self::AgentFailed,
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::WaitingForUser
            | TaskStatus::Paused => return None,
        })
    }
}

/// Actions that operate the phone. Waiting, finishing, asking a person, MCP tools and
/// custom actions do not count as "actions executed" for the coordinator.
pub const DEVICE_ACTIONS: [&str; 10] = [
    "tap",
    "long_press",
    "double_tap",
    "swipe",
    "scroll",
    "type",
    "clear",
    "key",
    "launch_app",
    "open_url",
];

/// Whether a recorded step executed an action on the device successfully.
pub fn is_executed_device_action(step: &Step) -> bool {
    step.outcome.status == StepStatus::Ok
        && step
            .action
            .as_ref()
            .is_some_and(|a| DEVICE_ACTIONS.contains(&a.name()))
}

/// A finished task, as the coordinator reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CoordinatorResult {
    /// The caller's `task_id` when it gave one, otherwise our id.
    pub task_id: String,
    pub status: CoordinatorStatus,
    /// Steps recorded (every observe → decide → act pass, including `finish`).
    pub steps_taken: u32,
    /// Seed 004's list of the actions executed: each step's device action (tap, swipe,
    /// type, key, launch_app…) that completed, in order, as recorded (text typed into a
    /// password field reads `••••`), with `action_type` beside `action`.
    #[schema(value_type = Vec<Object>)]
    pub actions_executed: Vec<serde_json::Value>,
    /// How many: the length of `actions_executed`.
    pub actions_executed_count: u32,
    /// Why the task ended, in words; starts with the code for `max_steps_exceeded` and
    /// `device_unreachable`, as seed 004's coordinator reads them.
    pub completion_reason: String,
    /// Why the task ended, as a code.
    pub reason: CompletionCode,
    /// Our id for the task (for `/v1/tasks/{id}` and its trajectory).
    pub id: TaskId,
    /// Our finer-grained status (`succeeded`, `incomplete`, `cancelled`…).
    pub task_status: TaskStatus,
    /// The agent's answer, when it finished with one.
    pub answer: Option<String>,
    pub session_id: Option<String>,
    /// The device that ran the task.
    pub device_id: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, what the providers served from their prompt cache.
    pub tokens_cached: u64,
    pub cost_usd: f64,
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Asked for the result of a task that has not ended.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "task {id} is {status} and has no result yet; wait for `task.finished` or poll GET /v1/tasks/{id}"
)]
pub struct NotFinished {
    pub id: TaskId,
    pub status: TaskStatus,
}

impl CoordinatorResult {
    /// Builds the result from a task and its recorded steps (`Store::steps`).
    pub fn new(task: &Task, steps: &[Step]) -> Result<Self, NotFinished> {
        let status = CoordinatorStatus::from_task_status(task.status).ok_or(NotFinished {
            id: task.id,
            status: task.status,
        })?;
        // The task row counts steps as they are committed; the step list is the same
        // data, so the larger of the two covers a caller that passed a partial list.
        let steps_taken = task.steps.max(steps.len() as u32);
        let actions_executed: Vec<serde_json::Value> = steps
            .iter()
            .filter(|s| is_executed_device_action(s))
            .filter_map(|s| s.action.as_ref())
            .filter_map(|a| serde_json::to_value(a).ok())
            .map(|mut v| {
                if let Some(m) = v.as_object_mut()
                    && let Some(name) = m.get("action").cloned()
                {
                    m.insert("action_type".into(), name);
                }
                v
            })
            .collect();
        let reason = CompletionCode::of(task).unwrap_or(CompletionCode::AgentFailed);
        let text = task
            .reason
            .clone()
            .unwrap_or_else(|| task.status.as_str().to_string());
        let completion_reason = match reason {
            CompletionCode::MaxStepsExceeded | CompletionCode::DeviceUnreachable
                if !text.starts_with(reason.as_str()) =>
            {
                format!("{}: {text}", reason.as_str())
            }
            _ => text,
        };
        Ok(Self {
            task_id: task
                .spec
                .external_id
                .clone()
                .unwrap_or_else(|| task.id.to_string()),
            status,
            steps_taken,
            actions_executed_count: actions_executed.len() as u32,
            actions_executed,
            completion_reason,
            reason,
            id: task.id,
            task_status: task.status,
            answer: task.answer.clone(),
            session_id: task.spec.session_id.clone(),
            device_id: task.assigned_device.clone(),
            tokens_in: task.tokens_in,
            tokens_out: task.tokens_out,
            tokens_cached: task.tokens_cached,
            cost_usd: task.cost_usd,
            started_at: task.started_at,
            finished_at: task.finished_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewTask, StepOutcome, StepTimings, TaskSpec};
    use serde_json::{Value, json};

    fn task(status: TaskStatus, external: Option<&str>) -> Task {
        let spec = TaskSpec::parse(NewTask {
            ai_prompt: Some("open Clock".into()),
            task_id: external.map(String::from),
            session_id: Some("s-9".into()),
            ..Default::default()
        })
        .unwrap();
        Task {
            id: TaskId::new(),
            status,
            spec,
            assigned_device: Some("sim-1".into()),
            created_at: chrono::Utc::now(),
            started_at: Some(chrono::Utc::now()),
            finished_at: Some(chrono::Utc::now()),
            reason: Some("done".into()),
            answer: Some("07:30".into()),
            steps: 4,
            tokens_in: 100,
            tokens_out: 20,
            tokens_cached: 64,
            recording: Vec::new(),
            cost_usd: 0.5,
            cancel_requested: false,
            model_calls: 0,
        }
    }

    fn step(id: TaskId, n: u32, action: Value, status: &str) -> Step {
        Step {
            task_id: id,
            n,
            started_at: chrono::Utc::now(),
            thinking: None,
            action: Some(
                crate::domain::ActionParser::lenient()
                    .parse(&action)
                    .unwrap(),
            ),
            raw: None,
            rejected: None,
            outcome: StepOutcome {
                status: serde_json::from_value(json!(status)).unwrap(),
                error: None,
                screen_changed: None,
                detail: None,
            },
            screen: None,
            screenshot: None,
            timings: StepTimings::default(),
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            cost_usd: 0.0,
            model_calls: 0,
            replay: None,
            calls: Vec::new(),
            annotations: Vec::new(),
            by: None,
        }
    }

    #[test]
    fn counts_only_successful_device_actions() {
        let t = task(TaskStatus::Succeeded, Some("coord-7"));
        let steps = vec![
            step(
                t.id,
                1,
                json!({"action": "launch_app", "package": "com.android.deskclock"}),
                "ok",
            ),
            step(t.id, 2, json!({"action": "tap", "element": 3}), "failed"),
            step(t.id, 3, json!({"action": "wait", "ms": 100}), "ok"),
            step(t.id, 4, json!({"action": "finish", "success": true}), "ok"),
        ];
        let r = CoordinatorResult::new(&t, &steps).unwrap();
        assert_eq!(r.task_id, "coord-7");
        assert_eq!(r.status, CoordinatorStatus::Success);
        assert_eq!((r.steps_taken, r.actions_executed_count), (4, 1));
        assert_eq!(
            r.actions_executed,
            vec![
                json!({"action": "launch_app", "action_type": "launch_app", "package": "com.android.deskclock"})
            ],
            "seed 004: the list of the actions executed"
        );
        assert_eq!(r.completion_reason, "done");
        assert_eq!(r.reason, CompletionCode::Completed);
        let v = serde_json::to_value(&r).unwrap();
        // The webhook's payload: the tokens and what a prompt cache served of them.
        assert_eq!(
            (&v["tokens_in"], &v["tokens_cached"]),
            (&json!(100), &json!(64))
        );
        for k in [
            "task_id",
            "status",
            "steps_taken",
            "actions_executed",
            "completion_reason",
        ] {
            assert!(v.get(k).is_some(), "{k} missing from {v}");
        }
        assert_eq!(v["status"], "success");
    }

    #[test]
    fn max_steps_and_a_lost_device_are_named_as_seed_004_does() {
        let mut t = task(TaskStatus::Incomplete, None);
        t.reason = Some("reached max_steps (5) without the agent finishing".into());
        let r = CoordinatorResult::new(&t, &[]).unwrap();
        assert_eq!(
            (r.status, r.reason),
            (CoordinatorStatus::Failed, CompletionCode::MaxStepsExceeded)
        );
        assert!(
            r.completion_reason
                .starts_with("max_steps_exceeded: reached"),
            "{}",
            r.completion_reason
        );
        let mut t = task(TaskStatus::Failed, None);
        t.reason = Some(
            "device_unreachable: device sim-1 disconnected and did not come back within 30 s."
                .into(),
        );
        let r = CoordinatorResult::new(&t, &[]).unwrap();
        assert_eq!(r.reason, CompletionCode::DeviceUnreachable);
        assert_eq!(
            serde_json::to_value(r).unwrap()["reason"],
            "device_unreachable"
        );
        let mut t = task(TaskStatus::Failed, None);
        t.reason = Some("budget_exceeded: max_tokens (250) reached: 262 tokens spent".into());
        assert_eq!(
            CoordinatorResult::new(&t, &[]).unwrap().reason,
            CompletionCode::BudgetExceeded
        );
        let mut t = task(TaskStatus::Failed, None);
        t.reason = Some("stuck: the screen did not change".into());
        assert_eq!(
            CoordinatorResult::new(&t, &[]).unwrap().reason,
            CompletionCode::AgentFailed
        );
    }

    #[test]
    fn our_id_when_the_caller_gave_none() {
        let t = task(TaskStatus::Failed, None);
        let r = CoordinatorResult::new(&t, &[]).unwrap();
        assert_eq!(r.task_id, t.id.to_string());
        assert_eq!(r.steps_taken, 4, "falls back to the task's own count");
    }

    /// Webhooks send `reason` by serde and the failure reasons start with `as_str`: the
    /// two must be the same names.
    #[test]
    fn completion_code_names_are_the_wire_names() {
        for (c, name) in [
            (CompletionCode::Completed, "completed"),
            (CompletionCode::AgentFailed, "agent_failed"),
            (CompletionCode::MaxStepsExceeded, "max_steps_exceeded"),
            (CompletionCode::Timeout, "timeout"),
            (CompletionCode::DeviceUnreachable, "device_unreachable"),
            (CompletionCode::BudgetExceeded, "budget_exceeded"),
            (CompletionCode::Cancelled, "cancelled"),
            (CompletionCode::Interrupted, "interrupted"),
        ] {
            assert_eq!(c.as_str(), name);
            assert_eq!(serde_json::to_value(c).unwrap(), name);
        }
    }

    #[test]
    fn every_status_maps_and_unfinished_tasks_are_refused() {
        let want = [
            (TaskStatus::Succeeded, Some("success")),
            (TaskStatus::Failed, Some("failed")),
            (TaskStatus::Incomplete, Some("failed")),
            (TaskStatus::TimedOut, Some("timeout")),
            (TaskStatus::Cancelled, Some("error")),
            (TaskStatus::Interrupted, Some("error")),
            (TaskStatus::Queued, None),
            (TaskStatus::Running, None),
            (TaskStatus::WaitingForUser, None),
            (TaskStatus::Paused, None),
        ];
        assert_eq!(
            want.len(),
            <TaskStatus as strum::VariantArray>::VARIANTS.len()
        );
        for (s, c) in want {
            assert_eq!(
                CoordinatorStatus::from_task_status(s).map(|c| c.as_str()),
                c,
                "{s}"
            );
            assert_eq!(s.is_terminal(), c.is_some(), "{s}");
            let r = CoordinatorResult::new(&task(s, None), &[]);
            match c {
                Some(c) => assert_eq!(serde_json::to_value(r.unwrap().status).unwrap(), c),
                None => assert!(r.unwrap_err().to_string().contains("no result yet")),
            }
        }
    }
}
