//! The phone panel's endpoints: taking a free phone by hand (a hold for one browser
//! session, every action recorded as a step of its control task), the recording of those
//! steps as a script, and the inspector's view of any phone's screen. The use cases are
//! `service::remote`'s and `service::devices::inspect`'s; these parse and map.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::devices::{action_error, device_action};
use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path, Query};
use super::scope::Caller;
use super::state::AppState;
use super::takeover::by_body;
use crate::domain::TaskId;
use crate::screen::inspect::{Inspection, SelectorTest};
use crate::script::Script;
use crate::service;
use crate::service::remote::Control;

/// Take a free phone by hand: it is leased for this caller (shown to everyone as `<by>
/// in the dashboard`) until released, or until nobody acts or keeps it alive for `[dashboard]
/// control_ttl_secs`. Each action is recorded as a step of the hold's task.
#[utoipa::path(
    post, path = "/v1/devices/{id}/control", tag = "devices",
    params(("id" = String, Path)),
    request_body(content = Option<super::takeover::ByRequest>, description = "Optional: who takes it"),
    responses(
        (status = 201, body = Control),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "A task, an MCP session or another page holds the phone (`device_busy`), or it is offline", body = ErrorResponse),
        (status = 422, description = "A bad body", body = ErrorResponse),
    )
)]
pub async fn take(
    State(s): State<AppState>,
    Path(id): Path<String>,
    caller: Option<Extension<Caller>>,
    body: Bytes,
) -> Result<(StatusCode, Json<Control>), ApiError> {
    let by = Caller::by(caller.as_deref(), by_body(&body)?);
    let c = s.controls.acquire(&s.core, &id, by).await?;
    Ok((StatusCode::CREATED, Json(c)))
}

/// Keep a hold alive (the open page calls this while it shows the phone).
#[utoipa::path(
    post, path = "/v1/devices/{id}/control/{control_id}", tag = "devices",
    params(("id" = String, Path), ("control_id" = String, Path)),
    responses((status = 200, body = Control),
              (status = 409, description = "This hold is gone (`device_not_held`): released, lapsed, or never this caller's", body = ErrorResponse)))]
pub async fn keep_alive(
    State(s): State<AppState>,
    Path((id, control_id)): Path<(String, String)>,
) -> Result<Json<Control>, ApiError> {
    Ok(Json(s.controls.keep_alive(&s, &id, &control_id).await?))
}

/// Release a hold: the phone is free again and the hold's task finished.
#[utoipa::path(
    delete, path = "/v1/devices/{id}/control/{control_id}", tag = "devices",
    params(("id" = String, Path), ("control_id" = String, Path)),
    responses((status = 204), (status = 409, description = "This hold is gone (`device_not_held`)", body = ErrorResponse)))]
pub async fn release(
    State(s): State<AppState>,
    Path((id, control_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    match s.controls.release(&s, &id, &control_id).await {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(service::remote::not_held(&s, &id).into()),
    }
}

/// What an action on a held phone did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ControlActionResult {
    /// The action as recorded (text typed into a password field is `••••`).
    #[schema(value_type = Object)]
    pub action: Value,
    /// What it did (the pixel point tapped, the swipe path…).
    #[schema(value_type = Object)]
    pub detail: Value,
    pub duration_ms: u64,
    /// The hold's task and the step the action was recorded as.
    #[schema(value_type = String, format = Uuid)]
    pub task_id: TaskId,
    pub step: Option<u32>,
}

/// Run one action on a held phone, recorded as the next step of the hold's task with who
/// took it. The body is an action object as for `POST /v1/devices/{id}/actions`; a
/// failed action is recorded too and answers with the action error shape.
#[utoipa::path(
    post, path = "/v1/devices/{id}/control/{control_id}/actions", tag = "devices",
    params(("id" = String, Path), ("control_id" = String, Path)),
    request_body(content = Object, description = "One action; see docs/api.md \"Actions\".",
        example = json!({"action": "tap", "pixel": [540, 1200]})),
    responses(
        (status = 200, body = ControlActionResult),
        (status = 409, description = "This hold is gone (`device_not_held`)", body = ErrorResponse),
        (status = 422, description = "Invalid action, pixel outside the screen, element not found", body = ErrorResponse),
        (status = 502, body = ErrorResponse), (status = 503, body = ErrorResponse), (status = 504, body = ErrorResponse),
    )
)]
pub async fn act(
    State(s): State<AppState>,
    Path((id, control_id)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Result<Json<ControlActionResult>, Response> {
    let err = |e: ApiError| e.into_response();
    let action = device_action(&body).map_err(err)?;
    let (done, task_id) =
        (s.controls.act(&s, &id, &control_id, &action).await).map_err(|e| err(e.into()))?;
    let step = done.recorded.ok().flatten().map(|st| st.n);
    match done.result {
        Ok(out) => Ok(Json(ControlActionResult {
            action: serde_json::to_value(&done.shown).unwrap_or(Value::Null),
            detail: out.detail,
            duration_ms: done.duration_ms,
            task_id,
            step,
        })),
        Err(e) => Err(action_error(e, None).await),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct RecordingParams {
    /// The first step of the recording (1-based; default 1).
    #[param(minimum = 1)]
    from: Option<u32>,
    /// The script's name.
    #[param(max_length = 200)]
    name: Option<String>,
}

/// The steps of a hold's task from `from` as a script, recorded as scripts are from
/// finished tasks (a tap becomes the selector of the element it hit, with its
/// alternatives and an `expect` from the next screen). Store it with `POST /v1/scripts`.
#[utoipa::path(
    get, path = "/v1/devices/{id}/control/{control_id}/recording", tag = "devices",
    params(("id" = String, Path), ("control_id" = String, Path), RecordingParams),
    responses((status = 200, body = Script),
              (status = 400, description = "`from` = 0 or a name over 200 characters (`invalid_query`)", body = ErrorResponse),
              (status = 409, description = "This hold is gone (`device_not_held`)", body = ErrorResponse),
              (status = 422, description = "Nothing recorded yet (`nothing_to_record`)", body = ErrorResponse)))]
pub async fn recording(
    State(s): State<AppState>,
    Path((id, control_id)): Path<(String, String)>,
    Query(q): Query<RecordingParams>,
) -> Result<Json<Script>, ApiError> {
    if q.from == Some(0) {
        return Err(query_error(
            "from=0: steps are numbered from 1",
            "Use from=1 (the default) or the first step you want recorded.",
        ));
    }
    if let Some(name) = q.name.as_deref().filter(|n| n.chars().count() > 200) {
        return Err(query_error(
            format!(
                "name is {} characters long; at most 200",
                name.chars().count()
            ),
            "Give the script a shorter name.",
        ));
    }
    let from = q.from.unwrap_or(1);
    let script = (s.controls)
        .recording(&s, &id, &control_id, from, q.name)
        .await?;
    Ok(Json(script))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct InspectParams {
    /// A selector to test on the same screen (its matches come back in `tested`).
    #[param(min_length = 1, max_length = 500)]
    selector: Option<String>,
}

/// The inspector's view of a phone's screen.
#[derive(Debug, Serialize, ToSchema)]
pub struct InspectResult {
    #[serde(flatten)]
    pub screen: Inspection,
    /// `?selector=` tested on this screen.
    pub tested: Option<SelectorTest>,
}

/// Every visible node of the phone's current screen with its bounds and attributes, the
/// selector droidpilot recommends for it and alternatives, each with the nodes it matches
/// now. Reading never needs the phone to be free.
#[utoipa::path(
    get, path = "/v1/devices/{id}/inspect", tag = "devices",
    params(("id" = String, Path), InspectParams),
    responses((status = 200, body = InspectResult), (status = 400, description = "An empty selector or one over 500 characters (`invalid_query`)", body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn inspect(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InspectParams>,
) -> Result<Json<InspectResult>, ApiError> {
    if let Some(sel) = q.selector.as_deref() {
        let len = sel.chars().count();
        if !(1..=500).contains(&len) {
            return Err(query_error(
                format!("selector is {len} characters long; 1 to 500"),
                "Pass a selector such as `#btn_send` or `text=\"Send\"`, or leave `selector` out.",
            ));
        }
    }
    let dev = service::devices::device(&s, &id)?;
    let (screen, tested) = service::devices::inspect(dev.as_ref(), q.selector.as_deref()).await?;
    Ok(Json(InspectResult { screen, tested }))
}

/// A query parameter outside what the OpenAPI document allows: 400 `invalid_query`.
fn query_error(message: impl Into<String>, hint: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message, hint)
}
