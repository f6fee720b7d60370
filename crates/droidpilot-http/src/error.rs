//! The HTTP boundary's one error type. Every failure the API returns, including axum's
//! own rejections, 404, 405, 413 and panics, leaves as
//! `{"error": {"code": "…", "message": "…", "hint": "…"}}`.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::service::error::{AppError, ErrorKind};
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

impl From<AppError> for ApiError {
    /// The application's error on the wire: its kind as a status, the same code,
    /// message and hint.
    fn from(e: AppError) -> Self {
        let status = match e.kind {
            ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
            ErrorKind::Forbidden => StatusCode::FORBIDDEN,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::NotImplemented => StatusCode::NOT_IMPLEMENTED,
            ErrorKind::BadGateway => StatusCode::BAD_GATEWAY,
            ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
        };
        Self::new(status, e.code, e.message, e.hint)
    }
}

/// Errors the handlers meet with `?`: mapped once, by the application (`service::error`).
macro_rules! through_app_error {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for ApiError {
            fn from(e: $t) -> Self {
                AppError::from(e).into()
            }
        }
    )*};
}

through_app_error!(
    crate::run::interaction::AnswerError,
    crate::domain::TaskSpecError,
    StoreError,
    crate::script::ScriptError,
    crate::device::pool::PoolError,
    crate::device::DeviceError,
    crate::run::takeover::TakeOverError,
);
