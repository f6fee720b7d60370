//! Events: every event droidpilot publishes, as one typed enum. This module owns the event
//! names (`task.queued`, `step.executed`, `device.online`…); nothing else spells them.
//!
//! On the wire an event is `{"type": <name>, "payload": {…}}` (beside the stream, `seq`
//! and `created_at` of the stored event), which is what `#[serde(tag = "type", content =
//! "payload")]` produces; its schema is in the OpenAPI components as `TaskEvent`. An event
//! whose type this build does not know (a row written by another version), or whose
//! payload does not fit its type, reads as `Other`, with its type and payload kept as
//! they were: never an error.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::flow_run::{FlowResult, FlowRunId, FlowRunStatus};
use super::{StepOutcome, StepTimings, Task, TaskId, TaskStatus};

/// What the runner did when its stuck detector fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StuckResponse {
    /// Told the agent it seems stuck, in its next prompt.
    Diagnose,
    /// Asked the agent's planner for a new plan before asking a person.
    Replan,
    /// Asked a person how to go on.
    AskUser,
    /// Ended the task as failed.
    Abort,
}

/// Why a task carries on (`task.resumed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResumeCause {
    /// The server restarted and requeued the task.
    #[default]
    Restart,
    /// A person resumed it after pausing it.
    TakeOver,
}

/// One event on a task's stream, or on the `devices` stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", content = "payload")]
pub enum TaskEvent {
    /// The task was accepted and waits for a phone.
    #[serde(rename = "task.queued")]
    Queued {
        task_id: TaskId,
        priority: i32,
        instruction: String,
    },
    /// A runner took the task on a phone.
    #[serde(rename = "task.started")]
    Started {
        task_id: TaskId,
        device: Option<String>,
        agent: String,
    },
    /// The task carries on at `from_step`: after a restart (`cause: restart`), or after a
    /// person's take-over (`cause: take_over`, with who resumed it and how many actions
    /// they took meanwhile).
    #[serde(rename = "task.resumed")]
    Resumed {
        task_id: TaskId,
        from_step: u32,
        #[serde(default)]
        cause: ResumeCause,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        manual_actions: Option<u32>,
    },
    /// A person paused the task (take-over): the runner holds before `step` and the phone
    /// takes the person's actions (`POST /v1/tasks/{id}/actions`) until they resume it.
    #[serde(rename = "task.paused")]
    Paused {
        task_id: TaskId,
        step: u32,
        by: Option<String>,
    },
    /// A person acted on the paused task's phone, or the runner saw the screen change with
    /// no agent action to explain it: the intervention as stored.
    #[serde(rename = "task.intervention")]
    Intervention {
        task_id: TaskId,
        intervention: super::Intervention,
    },
    /// The task was left `running` by a stopping server, to be requeued at the next start.
    #[serde(rename = "task.suspended")]
    Suspended { task_id: TaskId, reason: String },
    /// A task a previous process left running was queued again.
    #[serde(rename = "task.requeued")]
    Requeued {
        task_id: TaskId,
        status: TaskStatus,
        reason: String,
    },
    /// A cancel was asked for a running task; it ends at its next step.
    #[serde(rename = "task.cancel_requested")]
    CancelRequested {
        task_id: TaskId,
        status: TaskStatus,
        reason: Option<String>,
    },
    /// The task's phone stopped answering; the runner waits for it to come back.
    #[serde(rename = "task.device_lost")]
    DeviceLost {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        device: String,
        error: String,
    },
    /// The task's phone answers again.
    #[serde(rename = "task.device_back")]
    DeviceBack {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        device: String,
    },
    /// The agent asked a person; answer with `prompt_id`.
    #[serde(rename = "task.ask_user")]
    AskUser {
        task_id: TaskId,
        prompt_id: String,
        question: String,
        options: Option<Vec<String>>,
        timeout_secs: u64,
    },
    /// A person answered the agent's question.
    #[serde(rename = "task.answered")]
    Answered {
        task_id: TaskId,
        prompt_id: String,
        answer: String,
        by: String,
    },
    /// Nobody answered in time.
    #[serde(rename = "task.answer_timeout")]
    AnswerTimeout {
        task_id: TaskId,
        prompt_id: String,
        by: String,
    },
    /// The question was closed unanswered (`by`: `cancelled`, `shutdown`).
    #[serde(rename = "task.question_closed")]
    QuestionClosed {
        task_id: TaskId,
        prompt_id: String,
        by: String,
    },
    /// The task ended, whoever ended it (runner, cancel, queue timeout, restart): the
    /// task's final record.
    #[serde(rename = "task.finished")]
    Finished(TaskFinished),
    /// The task produced a script (recorded with `"record": true`, or healed by AI in
    /// the middle during a replay), stored as `script_id` at `version`.
    #[serde(rename = "script.saved")]
    ScriptSaved {
        task_id: TaskId,
        #[schema(value_type = String)]
        script_id: super::task::ScriptId,
        version: u32,
        /// `recorded` or `healed`.
        how: String,
    },
    /// A `record_video` task's screen recording ended (with the task, a cancel or a
    /// suspension): the segments stored (also `Task::recording`) and, as warnings, what
    /// went wrong (a recording that fails never fails its task).
    #[serde(rename = "task.recording")]
    Recording {
        task_id: TaskId,
        segments: Vec<super::task::RecordingSegment>,
        /// Empty when the whole run was recorded.
        problems: Vec<String>,
    },
    /// The screen was read for a step.
    #[serde(rename = "step.observed")]
    StepObserved {
        task_id: TaskId,
        step: u32,
        summary: String,
        app: Option<String>,
        has_modal: bool,
        sensitive: bool,
        screenshot: Option<String>,
        elements: usize,
    },
    /// The agent chose a step's action.
    #[serde(rename = "step.decided")]
    StepDecided {
        task_id: TaskId,
        step: u32,
        thinking: Option<String>,
        #[schema(value_type = Option<Object>)]
        action: Option<Value>,
        retries: u32,
    },
    /// A step was recorded (its action ran, failed or was rejected).
    #[serde(rename = "step.executed")]
    StepExecuted {
        task_id: TaskId,
        step: u32,
        #[schema(value_type = Option<Object>)]
        action: Option<Value>,
        outcome: StepOutcome,
        timings: StepTimings,
        tokens_in: u64,
        tokens_out: u64,
        /// Of `tokens_in`, what the providers served from their prompt cache (priced
        /// at the cached rate in `cost_usd`).
        #[serde(default)]
        tokens_cached: u64,
        cost_usd: f64,
        screenshot: Option<String>,
        #[serde(default)]
        model_calls: u32,
        /// Script replays: which script step, selector and fallback.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<super::ReplayInfo>,
        /// The person who took the step during a take-over; absent for the agent's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// The time the task has left, about, after this step (`domain::eta`); absent
        /// before an agent step has a duration.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        eta: Option<super::Estimate>,
    },
    /// A role beside the agent said something about a step: a plan arrived, the progress
    /// checker answered, the completion verifier judged a finish… Published before the
    /// step's `step.executed`, and stored with the step.
    #[serde(rename = "step.annotated")]
    StepAnnotated {
        task_id: TaskId,
        step: u32,
        annotation: super::Annotation,
    },
    /// The navigator's target was located by the grounding model: its answer's confidence
    /// was below the agent's `grounding_below`, or its target was not on the screen.
    /// Published with the step (which carries the same as a `grounding_fallback`
    /// annotation), before its `step.executed`.
    #[serde(rename = "agent.grounding_fallback")]
    GroundingFallback {
        task_id: TaskId,
        step: u32,
        reason: super::GroundingReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confidence: Option<f64>,
        /// The target as the navigator named it.
        before: String,
        /// Where the grounding model put it.
        after: String,
    },
    /// The runner's stuck detector fired: the same screen, or the same element tapped,
    /// too many times in a row. `response` says what the runner did about it.
    #[serde(rename = "step.stuck")]
    StepStuck {
        task_id: TaskId,
        step: u32,
        why: String,
        response: StuckResponse,
    },
    /// A model call failed transiently and is tried again after `delay_ms`.
    #[serde(rename = "model.retry")]
    ModelRetry {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<TaskId>,
        step: u32,
        attempt: u32,
        delay_ms: u64,
        cause: String,
    },
    /// A device action failed transiently and is tried again after `delay_ms` (on a
    /// fresh observation, so a target that moved is found again).
    #[serde(rename = "action.retry")]
    ActionRetry {
        task_id: TaskId,
        step: u32,
        /// The attempt that failed, from 1.
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    /// A pool event (on the `devices` stream).
    #[serde(rename = "device.online")]
    DeviceOnline { id: String },
    #[serde(rename = "device.offline")]
    DeviceOffline { id: String, reason: String },
    #[serde(rename = "device.quarantined")]
    DeviceQuarantined { id: String, reason: String },
    #[serde(rename = "device.removed")]
    DeviceRemoved { id: String },
    /// A flow run selected its flows and starts them (on the run's own stream, its id).
    #[serde(rename = "flow_run.started")]
    FlowRunStarted {
        run_id: FlowRunId,
        flows: u32,
        shards: u32,
    },
    /// One flow of a run passed, failed (after its retries), was skipped or cancelled.
    #[serde(rename = "flow_run.flow_finished")]
    FlowFinished { run_id: FlowRunId, flow: FlowResult },
    /// The run ended: the last event of its stream.
    #[serde(rename = "flow_run.finished")]
    FlowRunFinished {
        run_id: FlowRunId,
        status: FlowRunStatus,
        passed: u32,
        failed: u32,
        skipped: u32,
        duration_ms: u64,
    },
    /// An event this build does not know (written by another version), kept as stored.
    /// Only `from_parts` makes one (so it is not in the schema: clients should skip types
    /// they do not know, as this server does).
    #[serde(untagged, skip_deserializing)]
    Other {
        #[serde(rename = "type")]
        kind: String,
        #[schema(value_type = Object)]
        payload: Value,
    },
}

/// The payload of `task.finished`: the same fields whoever publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskFinished {
    pub task_id: TaskId,
    pub status: TaskStatus,
    pub reason: Option<String>,
    /// Events stored before the payload was unified may lack the fields below.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub steps: u32,
    #[serde(default)]
    pub tokens_in: u64,
    #[serde(default)]
    pub tokens_out: u64,
    /// Of `tokens_in`, what the providers served from their prompt cache.
    #[serde(default)]
    pub tokens_cached: u64,
    #[serde(default)]
    pub cost_usd: f64,
}

impl TaskFinished {
    /// The event for a task's final record.
    pub fn of(task: &Task) -> Self {
        Self {
            task_id: task.id,
            status: task.status,
            reason: task.reason.clone(),
            answer: task.answer.clone(),
            steps: task.steps,
            tokens_in: task.tokens_in,
            tokens_out: task.tokens_out,
            tokens_cached: task.tokens_cached,
            cost_usd: task.cost_usd,
        }
    }
}

impl TaskEvent {
    /// The name of `task.finished`, for those who label things with it (webhooks).
    pub const FINISHED: &'static str = "task.finished";

    /// `task.finished` for a task's final record.
    pub fn finished(task: &Task) -> Self {
        TaskEvent::Finished(TaskFinished::of(task))
    }

    /// The event's name, its `type` on the wire.
    pub fn kind(&self) -> &str {
        use TaskEvent::*;
        match self {
            Queued { .. } => "task.queued",
            Started { .. } => "task.started",
            Resumed { .. } => "task.resumed",
            Paused { .. } => "task.paused",
            Intervention { .. } => "task.intervention",
            Suspended { .. } => "task.suspended",
            Requeued { .. } => "task.requeued",
            CancelRequested { .. } => "task.cancel_requested",
            DeviceLost { .. } => "task.device_lost",
            DeviceBack { .. } => "task.device_back",
            AskUser { .. } => "task.ask_user",
            Answered { .. } => "task.answered",
            AnswerTimeout { .. } => "task.answer_timeout",
            QuestionClosed { .. } => "task.question_closed",
            Finished(_) => Self::FINISHED,
            ScriptSaved { .. } => "script.saved",
            Recording { .. } => "task.recording",
            StepObserved { .. } => "step.observed",
            StepDecided { .. } => "step.decided",
            StepExecuted { .. } => "step.executed",
            StepAnnotated { .. } => "step.annotated",
            GroundingFallback { .. } => "agent.grounding_fallback",
            StepStuck { .. } => "step.stuck",
            ModelRetry { .. } => "model.retry",
            ActionRetry { .. } => "action.retry",
            DeviceOnline { .. } => "device.online",
            DeviceOffline { .. } => "device.offline",
            DeviceQuarantined { .. } => "device.quarantined",
            DeviceRemoved { .. } => "device.removed",
            FlowRunStarted { .. } => "flow_run.started",
            FlowFinished { .. } => "flow_run.flow_finished",
            FlowRunFinished { .. } => "flow_run.finished",
            Other { kind, .. } => kind,
        }
    }

    /// Whether this ends its task's stream.
    pub fn is_finished(&self) -> bool {
        matches!(self, TaskEvent::Finished(_))
    }

    /// Whether this is a completion verifier catching a false claim: a `step.executed`
    /// whose action is `finish` and whose outcome records that an `on_finish` hook
    /// rejected it (the runner then goes on, and the agent reads "NOT done"). No verifier
    /// ships in the runner yet (the `planned` agent brings one), so today this matches
    /// only `on_finish` hooks a caller installed; `droidpilot eval` counts it.
    pub fn is_verifier_rejection(&self) -> bool {
        let TaskEvent::StepExecuted {
            action: Some(action),
            outcome,
            ..
        } = self
        else {
            return false;
        };
        let finish = super::ActionParser::lenient()
            .parse(action)
            .is_ok_and(|a| a.is_terminal());
        let rejected = outcome
            .detail
            .as_ref()
            .is_some_and(|d| d.get("rejected").is_some());
        finish && rejected && outcome.status == super::StepStatus::Failed
    }

    /// The payload alone, as stored beside the type.
    pub fn payload(&self) -> Value {
        if let TaskEvent::Other { payload, .. } = self {
            return payload.clone();
        }
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => m.remove("payload").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// Reads a stored type and payload back. A type this build does not know, or a
    /// payload that does not fit its type, reads as `Other`: never an error.
    pub fn from_parts(kind: &str, payload: Value) -> Self {
        let tagged = serde_json::json!({"type": kind, "payload": payload});
        match serde_json::from_value::<TaskEvent>(tagged) {
            Ok(ev) => ev,
            Err(_) => TaskEvent::Other {
                kind: kind.to_string(),
                payload,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn executed(action: Value, status: crate::domain::StepStatus, detail: Value) -> TaskEvent {
        TaskEvent::StepExecuted {
            task_id: TaskId::new(),
            step: 3,
            action: Some(action),
            outcome: StepOutcome {
                status,
                error: None,
                screen_changed: None,
                detail: Some(detail),
            },
            timings: StepTimings::default(),
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            cost_usd: 0.0,
            screenshot: None,
            model_calls: 0,
            replay: None,
            by: None,
            eta: None,
        }
    }

    /// `step.executed` and `task.finished` carry what a prompt cache served of the
    /// input tokens; a payload stored before they did reads as none.
    #[test]
    fn token_events_carry_the_cached_input() {
        let mut ev = executed(
            json!({"action": "back"}),
            crate::domain::StepStatus::Ok,
            json!({}),
        );
        if let TaskEvent::StepExecuted {
            tokens_in,
            tokens_cached,
            ..
        } = &mut ev
        {
            (*tokens_in, *tokens_cached) = (1000, 768);
        }
        let p = ev.payload();
        assert_eq!(
            (&p["tokens_in"], &p["tokens_cached"]),
            (&json!(1000), &json!(768))
        );
        let mut old = p.clone();
        old.as_object_mut().unwrap().remove("tokens_cached");
        match TaskEvent::from_parts("step.executed", old) {
            TaskEvent::StepExecuted { tokens_cached, .. } => assert_eq!(tokens_cached, 0),
            other => panic!("{other:?}"),
        }
        let finished: TaskFinished = serde_json::from_value(json!({
            "task_id": TaskId::new(), "status": "succeeded", "reason": null,
            "tokens_in": 1000, "tokens_cached": 768}))
        .unwrap();
        assert_eq!(finished.tokens_cached, 768);
        let p = TaskEvent::Finished(finished).payload();
        assert_eq!(p["tokens_cached"], 768);
    }

    #[test]
    fn a_verifier_rejection_is_a_failed_finish_that_records_why() {
        use crate::domain::StepStatus::{Failed, Ok};
        let finish = json!({"action": "finish", "success": true});
        let why = json!({"success": true, "rejected": "the alarm list has no 7:30"});
        assert!(executed(finish.clone(), Failed, why.clone()).is_verifier_rejection());
        // An accepted finish, a failed tap and other events are not.
        let accepted = executed(finish, Ok, json!({"success": true}));
        assert!(!accepted.is_verifier_rejection());
        let tap = json!({"action": "tap", "target": {"element": 3}});
        assert!(!executed(tap, Failed, why).is_verifier_rejection());
        let other = TaskEvent::DeviceOnline { id: "sim-1".into() };
        assert!(!other.is_verifier_rejection());
    }

    #[test]
    fn the_wire_is_type_beside_payload() {
        let ev = TaskEvent::DeviceOffline {
            id: "sim-1".into(),
            reason: "gone".into(),
        };
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"type": "device.offline", "payload": {"id": "sim-1", "reason": "gone"}})
        );
        assert_eq!(ev.kind(), "device.offline");
        assert_eq!(ev.payload(), json!({"id": "sim-1", "reason": "gone"}));
        assert_eq!(TaskEvent::from_parts(ev.kind(), ev.payload()), ev);
    }

    #[test]
    fn unknown_or_misshapen_events_are_kept_raw() {
        for (kind, payload) in [
            ("task.teleported", json!({"to": "mars"})),
            ("device.online", json!({"nope": 1})),
        ] {
            let ev = TaskEvent::from_parts(kind, payload.clone());
            assert_eq!(
                ev,
                TaskEvent::Other {
                    kind: kind.into(),
                    payload: payload.clone()
                }
            );
            assert_eq!(ev.kind(), kind);
            assert_eq!(ev.payload(), payload);
            assert_eq!(
                serde_json::to_value(&ev).unwrap(),
                json!({"type": kind, "payload": payload})
            );
        }
    }

    #[test]
    fn an_old_short_task_finished_still_reads_as_finished() {
        let id = TaskId::new();
        let ev = TaskEvent::from_parts(
            "task.finished",
            json!({"task_id": id, "status": "timed_out", "reason": "no phone"}),
        );
        assert!(ev.is_finished(), "{ev:?}");
    }
}
