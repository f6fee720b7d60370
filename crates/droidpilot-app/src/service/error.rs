//! The application's one error: a stable `code`, a `message` for people, a `hint` saying
//! what to do, and a `kind` that says whose move it is. Front ends map it: HTTP to a
//! status and `{"error": {code, message, hint}}` (`server::error`), MCP to a tool error
//! with the same three fields (`mcp::server::reply`). Domain, store, pool, device and
//! run errors convert into it here, once, so both front ends refuse alike.

use crate::device::DeviceError;
use crate::device::pool::PoolError;
use crate::domain::TaskSpecError;
use crate::run::interaction::AnswerError;
use crate::run::takeover::TakeOverError;
use crate::store::StoreError;

/// What kind of failure an `AppError` is; HTTP turns it into a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A malformed query or parameter (400).
    BadRequest,
    /// The caller may not do this (403).
    Forbidden,
    /// What the request names does not exist (404).
    NotFound,
    /// The request is well formed but the state does not allow it now (409).
    Conflict,
    /// A field is invalid or names something unusable (422).
    Invalid,
    /// A bug or an infrastructure failure (500).
    Internal,
    /// The device cannot do this (501).
    NotImplemented,
    /// The device or the adb server refused (502).
    BadGateway,
    /// A dependency (database, device) does not answer now (503).
    Unavailable,
    /// A dependency took too long (504).
    Timeout,
}

/// A failed use case, in the words every front end shows.
#[derive(Debug, Clone, PartialEq)]
pub struct AppError {
    pub kind: ErrorKind,
    /// Stable and machine-readable (`task_not_found`, `invalid_agent`, …).
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for AppError {}

impl AppError {
    pub fn new(
        kind: ErrorKind,
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            code,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A caller's field that cannot be used (422).
    pub fn invalid(
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self::new(ErrorKind::Invalid, code, message, hint)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            ErrorKind::Internal,
            "internal_error",
            message,
            "This is a bug or an infrastructure failure; the server log has details (search for the request id).",
        )
    }
}

impl From<AnswerError> for AppError {
    fn from(e: AnswerError) -> Self {
        let e_msg = e.to_string();
        match e {
            AnswerError::NoOpenQuestion(id) => Self::new(
                ErrorKind::Conflict,
                "no_open_question",
                format!("task {id} is not waiting for an answer"),
                "Answer only after a `task.ask_user` event; its `prompt_id` names the question.",
            ),
            // 409: the request is well formed, but the task's state moved on (another
            // question is open), as with a stale version; the message names the current one.
            AnswerError::WrongPrompt {
                current, question, ..
            } => Self::new(
                ErrorKind::Conflict,
                "wrong_prompt",
                e_msg,
                format!(
                    "The open question is \"{question}\"; answer it with prompt_id `{current}`, or omit prompt_id to answer the open question."
                ),
            ),
            AnswerError::EmptyAnswer { options } => Self::invalid(
                "invalid_answer",
                e_msg,
                if options.is_empty() {
                    "Send the text to give back to the agent in `answer`.".to_string()
                } else {
                    format!(
                        "Answer with one of: {}, or with free text.",
                        options.join(", ")
                    )
                },
            ),
            AnswerError::Store(s) => s.into(),
        }
    }
}

impl From<TaskSpecError> for AppError {
    fn from(e: TaskSpecError) -> Self {
        Self::invalid(
            "invalid_task",
            e.to_string(),
            "Fix the named field; a minimal task is {\"instruction\": \"open Settings and turn on Wi-Fi\"}.",
        )
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        use ErrorKind::{BadRequest, Conflict, NotFound, Unavailable};
        match e {
            StoreError::TaskNotFound(id) => Self::new(
                NotFound,
                "task_not_found",
                format!("task {id} not found"),
                "List tasks with GET /v1/tasks; ids are returned by POST /v1/tasks.",
            ),
            StoreError::ScriptNotFound(id) => Self::new(
                NotFound,
                "script_not_found",
                format!("script {id} not found"),
                "List scripts with GET /v1/scripts; ids are returned by POST /v1/scripts.",
            ),
            StoreError::WorkspaceNotFound(id) => Self::new(
                NotFound,
                "workspace_not_found",
                format!("workspace {id} not found"),
                "List workspaces with GET /v1/workspaces; ids are returned by POST /v1/workspaces.",
            ),
            StoreError::WorkspaceVersionNotFound { id, version } => Self::new(
                NotFound,
                "workspace_version_not_found",
                format!("workspace {id} has no version {version}"),
                "GET /v1/workspaces/{id}/versions lists the versions it has.",
            ),
            StoreError::FlowRunNotFound(id) => Self::new(
                NotFound,
                "flow_run_not_found",
                format!("flow run {id} not found"),
                "List flow runs with GET /v1/flow-runs; ids are returned by POST /v1/flow-runs.",
            ),
            StoreError::ScriptVersionNotFound { id, version } => Self::new(
                NotFound,
                "script_version_not_found",
                format!("script {id} has no version {version}"),
                "GET /v1/scripts/{id}/versions lists the versions it has.",
            ),
            StoreError::AlreadyFinished { id, status } => Self::new(
                Conflict,
                "task_finished",
                format!("task {id} is already {status}"),
                "Only queued, running or waiting tasks can be cancelled.",
            ),
            StoreError::StepNotFound { task, n } => Self::new(
                NotFound,
                "step_not_found",
                format!("task {task} has no step {n}"),
                "Steps are numbered from 1; GET /v1/tasks/{id}/steps lists them.",
            ),
            StoreError::AlreadyAnswered(p) => Self::new(
                Conflict,
                "already_answered",
                format!("question `{p}` was already answered (or timed out)"),
                "Each question takes one answer; watch the task's events for the next `task.ask_user`.",
            ),
            StoreError::InterventionNotFound(p) => Self::new(
                NotFound,
                "question_not_found",
                format!("no question `{p}`"),
                "Use the prompt_id from the `task.ask_user` event.",
            ),
            StoreError::NotEnded { id, status } => Self::new(
                Conflict,
                "task_not_ended",
                format!("task {id} is {status}: only an ended task can be deleted"),
                format!(
                    "Cancel it first (POST /v1/tasks/{id}/cancel), then delete it once it has ended."
                ),
            ),
            StoreError::WrongStatus {
                id,
                status,
                expected,
            } => Self::new(
                Conflict,
                "wrong_status",
                format!("task {id} is {status}, not {expected}"),
                "Check the task's status with GET /v1/tasks/{id}.",
            ),
            StoreError::InvalidCursor(m) => Self::new(
                BadRequest,
                "invalid_cursor",
                m,
                "Omit `cursor` to start from the newest task.",
            ),
            other if other.is_transient() => Self::new(
                Unavailable,
                "database_unavailable",
                format!("the database does not answer: {other}"),
                "Try again shortly; if it lasts, check that the database server is up (storage.database_url).",
            ),
            // The database's own words stay in the server log: they can quote the
            // request's data and name the schema.
            other => {
                tracing::error!(error = %other, "store call failed");
                Self::internal("the database could not complete the request")
            }
        }
    }
}

impl From<crate::script::ScriptError> for AppError {
    fn from(e: crate::script::ScriptError) -> Self {
        Self::invalid(e.code, format!("{}: {}", e.path, e.message), e.hint)
    }
}

impl From<PoolError> for AppError {
    fn from(e: PoolError) -> Self {
        let kind = match &e {
            PoolError::NotFound(_) => ErrorKind::NotFound,
            PoolError::Duplicate(_) | PoolError::NoneAvailable(_) => ErrorKind::Conflict,
            PoolError::NoAdb => ErrorKind::Invalid,
            PoolError::Device(d) => return d.clone().into(),
        };
        Self::new(kind, e.code(), e.to_string(), e.hint())
    }
}

impl From<DeviceError> for AppError {
    fn from(e: DeviceError) -> Self {
        let kind = match &e {
            DeviceError::Disconnected { .. } | DeviceError::HierarchyUnavailable(_) => {
                ErrorKind::Unavailable
            }
            DeviceError::Timeout { .. } => ErrorKind::Timeout,
            DeviceError::InvalidInput(_) | DeviceError::AppNotFound(_) => ErrorKind::Invalid,
            DeviceError::Unsupported(_) => ErrorKind::NotImplemented,
            DeviceError::CommandFailed { .. } | DeviceError::Protocol(_) => ErrorKind::BadGateway,
        };
        Self::new(kind, e.code(), e.to_string(), e.hint())
    }
}

impl From<TakeOverError> for AppError {
    fn from(e: TakeOverError) -> Self {
        let message = e.to_string();
        match e {
            TakeOverError::NotRunning { .. } => Self::new(
                ErrorKind::Conflict,
                "task_not_running",
                message,
                "Only a running task can be paused; GET /v1/tasks/{id} shows its status.",
            ),
            TakeOverError::Ending { .. } => Self::new(
                ErrorKind::Conflict,
                "task_not_running",
                message,
                "GET /v1/tasks/{id} shows its final status in a moment; in a cluster, send the pause to the instance that runs it.",
            ),
            TakeOverError::NotPaused { pending: true, .. } => Self::new(
                ErrorKind::Conflict,
                "task_not_paused",
                message,
                "Wait for the task's `task.paused` event (GET /v1/tasks/{id}/events), then send it.",
            ),
            TakeOverError::NotPaused { .. } => Self::new(
                ErrorKind::Conflict,
                "task_not_paused",
                message,
                "Pause the task first (POST /v1/tasks/{id}/pause) and wait for `task.paused`.",
            ),
            TakeOverError::NoDevice { .. } => Self::new(
                ErrorKind::Unavailable,
                "device_unavailable",
                message,
                "The phone does not answer; check GET /v1/devices, or cancel the task.",
            ),
            TakeOverError::Store(s) => s.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_their_codes_and_say_whose_move_it_is() {
        let id = crate::domain::TaskId::new();
        let e = AppError::from(StoreError::TaskNotFound(id));
        assert_eq!((e.kind, e.code), (ErrorKind::NotFound, "task_not_found"));
        assert!(e.hint.contains("GET /v1/tasks"), "{e:?}");
        let e = AppError::from(StoreError::InvalidCursor("bad".into()));
        assert_eq!((e.kind, e.code), (ErrorKind::BadRequest, "invalid_cursor"));
        let e = AppError::from(PoolError::NotFound("sim-9".into()));
        assert_eq!((e.kind, e.code), (ErrorKind::NotFound, "device_not_found"));
    }
}
