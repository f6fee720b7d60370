//! The HTTP boundary's one error type. Every failure the API returns, including axum's
//! own rejections, 404, 405, 413 and panics, leaves as
//! `{"error": {"code": "…", "message": "…", "hint": "…"}}`.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::TaskSpecError;
use crate::store::StoreError;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub hint: String,
}

/// The JSON body of every error response.
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable (`task_not_found`, `invalid_json`, …).
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl ApiError {
    pub fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            what,
            "Check the path; the API is under /v1 and documented at /docs.",
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            message,
            "This is a bug or an infrastructure failure; the server log has details (search for the request id).",
        )
    }

    /// The body for a status that arrived without one of ours (405, 408, 413 from a
    /// layer): a code and a hint chosen by status.
    pub fn from_status(status: StatusCode, original: &str) -> Self {
        let (code, hint) = match status {
            StatusCode::NOT_FOUND => (
                "not_found",
                "Check the path; the API is under /v1 and documented at /docs.",
            ),
            StatusCode::METHOD_NOT_ALLOWED => (
                "method_not_allowed",
                "This path exists but not with this method; see /docs for the allowed methods.",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "payload_too_large",
                "Send a smaller body, or raise server.body_limit_bytes in the configuration.",
            ),
            StatusCode::REQUEST_TIMEOUT => (
                "request_timeout",
                "The request took longer than server.request_timeout_secs; retry, or raise the limit.",
            ),
            StatusCode::UNAUTHORIZED => (
                "unauthorized",
                "Send `Authorization: Bearer <token>` with a token from server.tokens.",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "unsupported_media_type",
                "Send the body as JSON with `Content-Type: application/json`.",
            ),
            StatusCode::SERVICE_UNAVAILABLE => (
                "unavailable",
                "The server is starting or stopping; retry shortly.",
            ),
            s if s.is_server_error() => (
                "internal_error",
                "This is a bug or an infrastructure failure; the server log has details (search for the request id).",
            ),
            _ => ("bad_request", "See /docs for the request format."),
        };
        let reason = status.canonical_reason().unwrap_or("error");
        let message = match original.trim() {
            "" => reason.to_string(),
            t if t.len() <= 500 => t.to_string(),
            _ => reason.to_string(),
        };
        Self::new(status, code, message, hint)
    }
}

impl ApiError {
    /// The JSON body, `{"error": {code, message, hint}}`.
    pub fn body(&self) -> ErrorResponse {
        ErrorResponse {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
                hint: self.hint.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        (self.status, axum::Json(self.body())).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = r.status();
        let (code, hint) = match &r {
            JsonRejection::JsonSyntaxError(_) => (
                "invalid_json",
                "The body is not valid JSON; check quotes, commas and brackets at the position given.",
            ),
            JsonRejection::JsonDataError(_) => (
                "invalid_request",
                "A field is missing, unknown or of the wrong type; the message names it. See /docs for the schema.",
            ),
            JsonRejection::MissingJsonContentType(_) => (
                "unsupported_media_type",
                "Send `Content-Type: application/json`.",
            ),
            _ if status == StatusCode::PAYLOAD_TOO_LARGE => (
                "payload_too_large",
                "Send a smaller body, or raise server.body_limit_bytes in the configuration.",
            ),
            _ => ("invalid_request", "See /docs for the request format."),
        };
        Self::new(status, code, r.body_text(), hint)
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_path",
            r.body_text(),
            "An id in the path is malformed; task ids are UUIDs as returned by POST /v1/tasks.",
        )
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            r.body_text(),
            "Check the query parameters against /docs.",
        )
    }
}

impl From<crate::run::interaction::AnswerError> for ApiError {
    fn from(e: crate::run::interaction::AnswerError) -> Self {
        let e_msg = e.to_string();
        match e {
            crate::run::interaction::AnswerError::NoOpenQuestion(id) => Self::new(
                StatusCode::CONFLICT,
                "no_open_question",
                format!("task {id} is not waiting for an answer"),
                "Answer only after a `task.ask_user` event; its `prompt_id` names the question.",
            ),
            // 409: the request is well formed, but the task's state moved on (another
            // question is open), as with a stale version; the message names the current one.
            crate::run::interaction::AnswerError::WrongPrompt {
                current, question, ..
            } => Self::new(
                StatusCode::CONFLICT,
                "wrong_prompt",
                e_msg,
                format!(
                    "The open question is \"{question}\"; answer it with prompt_id `{current}`, or omit prompt_id to answer the open question."
                ),
            ),
            crate::run::interaction::AnswerError::EmptyAnswer { options } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
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
            crate::run::interaction::AnswerError::Store(s) => s.into(),
        }
    }
}

impl From<TaskSpecError> for ApiError {
    fn from(e: TaskSpecError) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_task",
            e.to_string(),
            "Fix the named field; a minimal task is {\"instruction\": \"open Settings and turn on Wi-Fi\"}.",
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::TaskNotFound(id) => Self::new(
                StatusCode::NOT_FOUND,
                "task_not_found",
                format!("task {id} not found"),
                "List tasks with GET /v1/tasks; ids are returned by POST /v1/tasks.",
            ),
            StoreError::ScriptNotFound(id) => Self::new(
                StatusCode::NOT_FOUND,
                "script_not_found",
                format!("script {id} not found"),
                "List scripts with GET /v1/scripts; ids are returned by POST /v1/scripts.",
            ),
            StoreError::ScriptVersionNotFound { id, version } => Self::new(
                StatusCode::NOT_FOUND,
                "script_version_not_found",
                format!("script {id} has no version {version}"),
                "GET /v1/scripts/{id}/versions lists the versions it has.",
            ),
            StoreError::AlreadyFinished { id, status } => Self::new(
                StatusCode::CONFLICT,
                "task_finished",
                format!("task {id} is already {status}"),
                "Only queued, running or waiting tasks can be cancelled.",
            ),
            StoreError::StepNotFound { task, n } => Self::new(
                StatusCode::NOT_FOUND,
                "step_not_found",
                format!("task {task} has no step {n}"),
                "Steps are numbered from 1; GET /v1/tasks/{id}/steps lists them.",
            ),
            StoreError::AlreadyAnswered(p) => Self::new(
                StatusCode::CONFLICT,
                "already_answered",
                format!("question `{p}` was already answered (or timed out)"),
                "Each question takes one answer; watch the task's events for the next `task.ask_user`.",
            ),
            StoreError::InterventionNotFound(p) => Self::new(
                StatusCode::NOT_FOUND,
                "question_not_found",
                format!("no question `{p}`"),
                "Use the prompt_id from the `task.ask_user` event.",
            ),
            StoreError::NotEnded { id, status } => Self::new(
                StatusCode::CONFLICT,
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
                StatusCode::CONFLICT,
                "wrong_status",
                format!("task {id} is {status}, not {expected}"),
                "Check the task's status with GET /v1/tasks/{id}.",
            ),
            StoreError::InvalidCursor(m) => Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_cursor",
                m,
                "Omit `cursor` to start from the newest task.",
            ),
            other if other.is_transient() => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
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

impl From<crate::script::ScriptError> for ApiError {
    fn from(e: crate::script::ScriptError) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            e.code,
            format!("{}: {}", e.path, e.message),
            e.hint,
        )
    }
}
