//! Take-over endpoints: pause a running task, act on its phone while it is paused, resume
//! it. The use cases are `service::takeover`'s (the state machine
//! `run::takeover`'s); these handlers parse, call them and map their errors.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::devices::{action_error, device_action};
use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path};
use super::scope::Caller;
use super::state::AppState;
use crate::domain::{Intervention, Task, TaskId};
use crate::service;

/// Who is pausing or resuming (optional; `anonymous` when absent).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ByRequest {
    /// A name for the person, shown in events and interventions (1–64 characters).
    #[schema(min_length = 1, max_length = 64, example = "alice")]
    pub by: Option<String>,
}

/// The longest name a person may give.
const MAX_BY: usize = 64;

/// A person's name as given: 1–64 characters, no control characters.
pub(crate) fn checked_by(by: Option<String>) -> Result<Option<String>, ApiError> {
    match by {
        Some(b)
            if b.trim().is_empty()
                || b.chars().count() > MAX_BY
                || b.chars().any(char::is_control) =>
        {
            Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "field `by` must be 1–64 characters with no control characters",
                "Give a short name such as {\"by\": \"alice\"}, or leave `by` out.",
            ))
        }
        b => Ok(b.map(|b| b.trim().to_string())),
    }
}

/// An optional `{"by": …}` body: none at all is fine.
pub(crate) fn by_body(body: &Bytes) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let req: ByRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            format!("invalid body: {e}"),
            "Send no body, or {\"by\": \"alice\"}.",
        )
    })?;
    checked_by(req.by)
}

/// Pause a running task (take-over). The runner holds at its next step boundary (the step
/// in flight finishes first); then the task is `paused` and `task.paused` is published.
/// Manual actions are accepted from then on.
#[utoipa::path(
    post, path = "/v1/tasks/{id}/pause", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)")),
    request_body(content = Option<ByRequest>, description = "Optional: who pauses"),
    responses(
        (status = 202, description = "Pause requested; the task as it stands (`task.paused` follows)", body = Task),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The task is not running (`task_not_running`)", body = ErrorResponse),
        (status = 422, description = "A bad body", body = ErrorResponse),
    )
)]
pub async fn pause_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    caller: Option<Extension<Caller>>,
    body: Bytes,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let by = Caller::by(caller.as_deref(), by_body(&body)?);
    let task = service::takeover::pause(&s, id, by).await?;
    Ok((StatusCode::ACCEPTED, Json(task)))
}

/// Resume a paused task: it is `running` again, `task.resumed` is published, and the
/// agent's next prompt says what the person did meanwhile. Withdraws a pause the runner
/// has not reached yet.
#[utoipa::path(
    post, path = "/v1/tasks/{id}/resume", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)")),
    request_body(content = Option<ByRequest>, description = "Optional: who resumes"),
    responses(
        (status = 200, description = "Resumed", body = Task),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The task is not paused (`task_not_paused`)", body = ErrorResponse),
        (status = 422, description = "A bad body", body = ErrorResponse),
    )
)]
pub async fn resume_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    caller: Option<Extension<Caller>>,
    body: Bytes,
) -> Result<Json<Task>, ApiError> {
    let by = Caller::by(caller.as_deref(), by_body(&body)?);
    Ok(Json(service::takeover::resume(&s, id, by).await?))
}

/// What a manual action did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ManualActionResult {
    /// The action as recorded (text typed into a password field is `••••`).
    #[schema(value_type = Object)]
    pub action: Value,
    /// What it did (the pixel point tapped, the swipe path…).
    #[schema(value_type = Object)]
    pub detail: Value,
    pub duration_ms: u64,
    /// The `manual_action` intervention it was stored as.
    pub intervention: Intervention,
}

/// Run one action on a paused task's phone, as a person. The body is an action object as
/// for `POST /v1/devices/{id}/actions`, plus an optional `by`. It is recorded as the
/// trajectory's next step (with `by`), stored as a `manual_action` intervention and
/// published as `task.intervention`; a failed action is recorded too and answers with the
/// action error shape.
#[utoipa::path(
    post, path = "/v1/tasks/{id}/actions", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)")),
    request_body(content = Object, description = "One action plus an optional `by`; see docs/api.md \"Actions\" and \"Take-over\".",
        example = json!({"action": "tap", "pixel": [540, 1200], "by": "alice"})),
    responses(
        (status = 200, body = ManualActionResult),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The task is not paused (`task_not_paused`)", body = ErrorResponse),
        (status = 422, description = "Invalid action, pixel outside the screen, element not found", body = ErrorResponse),
        (status = 502, body = ErrorResponse), (status = 503, body = ErrorResponse), (status = 504, body = ErrorResponse),
    )
)]
pub async fn task_action(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    caller: Option<Extension<Caller>>,
    Json(mut body): Json<Value>,
) -> Result<Json<ManualActionResult>, Response> {
    let err = |e: ApiError| e.into_response();
    let by = match body.as_object_mut().and_then(|m| m.remove("by")) {
        None | Some(Value::Null) => None,
        Some(Value::String(b)) => Some(b),
        Some(_) => return Err(err(checked_by(Some(String::new())).unwrap_err())),
    };
    let by = Caller::by(caller.as_deref(), checked_by(by).map_err(err)?);
    let action = device_action(&body).map_err(err)?;
    let acted = service::takeover::act(&s, id, &action, by)
        .await
        .map_err(|e| err(e.into()))?;
    match acted.result {
        Ok(out) => Ok(Json(ManualActionResult {
            action: acted.action,
            detail: out.detail,
            duration_ms: acted.duration_ms,
            intervention: acted.intervention,
        })),
        Err(e) => Err(action_error(e, None).await),
    }
}
