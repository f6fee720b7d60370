//! Device endpoints: the pool (list, add, remove) and one device's screen and input
//! (screenshot, hierarchy, representation, one action). Manual actions on a device that a
//! task holds are refused unless forced, so a person cannot silently derail a running task.

use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path, Query};
use super::state::AppState;
use crate::device::exec::{self, ExecContext, ExecError};
use crate::device::pool::{DeviceState, DeviceSummary, PoolError};
use crate::device::{AppInfo, Device, DeviceError};
use crate::domain::{Action, ActionParser, LinearTransform};
use crate::screen::{ReprOptions, Screen, ScreenRepresentation};

impl From<PoolError> for ApiError {
    fn from(e: PoolError) -> Self {
        let status = match &e {
            PoolError::NotFound(_) => StatusCode::NOT_FOUND,
            PoolError::Duplicate(_) => StatusCode::CONFLICT,
            PoolError::NoneAvailable(_) => StatusCode::CONFLICT,
            PoolError::NoAdb => StatusCode::UNPROCESSABLE_ENTITY,
            PoolError::Device(d) => return d.clone().into(),
        };
        ApiError::new(status, e.code(), e.to_string(), e.hint())
    }
}

impl From<DeviceError> for ApiError {
    fn from(e: DeviceError) -> Self {
        let status = match &e {
            DeviceError::Disconnected { .. } => StatusCode::SERVICE_UNAVAILABLE,
            DeviceError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            DeviceError::HierarchyUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            DeviceError::InvalidInput(_) | DeviceError::AppNotFound(_) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            DeviceError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
            DeviceError::CommandFailed { .. } | DeviceError::Protocol(_) => StatusCode::BAD_GATEWAY,
        };
        ApiError::new(status, e.code(), e.to_string(), e.hint())
    }
}

fn device(s: &AppState, id: &str) -> Result<std::sync::Arc<dyn Device>, ApiError> {
    s.pool
        .get(id)
        .ok_or_else(|| PoolError::NotFound(id.to_string()).into())
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeviceList {
    pub devices: Vec<DeviceSummary>,
}

/// Every pooled device with its state: available, leased, offline or quarantined.
#[utoipa::path(get, path = "/v1/devices", tag = "devices", responses((status = 200, body = DeviceList)))]
pub async fn list_devices(State(s): State<AppState>) -> Json<DeviceList> {
    Json(DeviceList {
        devices: s.pool.list(),
    })
}

/// One device.
#[utoipa::path(get, path = "/v1/devices/{id}", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = DeviceSummary), (status = 404, body = ErrorResponse)))]
pub async fn get_device(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<DeviceSummary>, ApiError> {
    Ok(Json(s.pool.summary(&id).ok_or(PoolError::NotFound(id))?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddDevice {
    /// `host:port` of a phone with `adb tcpip` (it is `adb connect`ed), or a serial the
    /// adb server already lists.
    pub address: String,
}

/// Add a device: connect a network phone (`host:port`) or pool a known serial.
#[utoipa::path(post, path = "/v1/devices", tag = "devices", request_body = AddDevice,
    responses((status = 201, body = DeviceSummary), (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse), (status = 502, body = ErrorResponse)))]
pub async fn add_device(
    State(s): State<AppState>,
    Json(req): Json<AddDevice>,
) -> Result<(StatusCode, Json<DeviceSummary>), ApiError> {
    let address = req.address.trim();
    if address.is_empty()
        || address.len() > 200
        || address.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_address",
            format!("`{address}` is not a device address"),
            "Give `host:port` (e.g. 192.168.1.20:5555) or a serial from `adb devices`.",
        ));
    }
    Ok((StatusCode::CREATED, Json(s.pool.add(address).await?)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ForceParam {
    /// Act even though a task holds the device.
    #[serde(default)]
    force: bool,
}

/// Remove a device from the pool (a network phone is also disconnected).
#[utoipa::path(delete, path = "/v1/devices/{id}", tag = "devices", params(("id" = String, Path), ForceParam),
    responses((status = 204), (status = 404, body = ErrorResponse), (status = 409, description = "A task holds the device", body = ErrorResponse)))]
pub async fn remove_device(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ForceParam>,
) -> Result<StatusCode, ApiError> {
    busy_check(&s, &id, q.force)?;
    s.pool.remove(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn busy_check(s: &AppState, id: &str, force: bool) -> Result<(), ApiError> {
    let summary = s
        .pool
        .summary(id)
        .ok_or_else(|| PoolError::NotFound(id.to_string()))?;
    if summary.state == DeviceState::Leased && !force {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "device_busy",
            format!(
                "device {id} is running task {}",
                summary.lease_owner.unwrap_or_default()
            ),
            "Cancel the task first (POST /v1/tasks/{id}/cancel), or add ?force=true if you really mean to interfere.",
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotParams {
    /// `png` (default) or `jpeg`.
    format: Option<String>,
    /// Scale factor in (0, 1] (default 1).
    scale: Option<f32>,
    /// JPEG quality 1–100 (default 80).
    quality: Option<u8>,
}

/// The current screen as PNG, or JPEG with `?format=jpeg&scale=0.5`.
#[utoipa::path(get, path = "/v1/devices/{id}/screenshot", tag = "devices", params(("id" = String, Path), ScreenshotParams),
    responses((status = 200, content_type = "image/png", body = Vec<u8>), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn screenshot(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(p): Query<ScreenshotParams>,
) -> Result<Response, ApiError> {
    let format = p.format.clone().unwrap_or_else(|| "png".into());
    let format = format.as_str();
    let scale = p.scale.unwrap_or(1.0);
    let bad = |m: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            m,
            "Use format=png|jpeg, 0 < scale ≤ 1, 1 ≤ quality ≤ 100.",
        )
    };
    if !matches!(format, "png" | "jpeg" | "jpg") {
        return Err(bad(format!("format `{format}` is not png or jpeg")));
    }
    if !(scale > 0.0 && scale <= 1.0) {
        return Err(bad(format!("scale {scale} is outside (0, 1]")));
    }
    let quality = p.quality.unwrap_or(80);
    if !(1..=100).contains(&quality) {
        return Err(bad(format!("quality {quality} is outside 1..=100")));
    }
    let shot = device(&s, &id)?.screenshot().await?;
    if format == "png" && scale == 1.0 {
        return Ok((
            [(header::CONTENT_TYPE, "image/png")],
            Body::from(shot.png()?),
        )
            .into_response());
    }
    let rgba = shot.rgba()?;
    let jpeg = format != "png";
    let (bytes, ct) = tokio::task::spawn_blocking(move || {
        super::images::encode(&rgba, shot.width, shot.height, scale, jpeg, quality)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
    .map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, ct)], Body::from(bytes)).into_response())
}

/// The UI hierarchy as uiautomator XML.
#[utoipa::path(get, path = "/v1/devices/{id}/hierarchy", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, content_type = "application/xml", body = String), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn hierarchy(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let xml = device(&s, &id)?.hierarchy().await?;
    // Password fields' text and content-desc are masked here as in every parsed view.
    let xml = crate::screen::redact::mask_password_xml(&xml)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "hierarchy_invalid",
                "the UI dump has password fields but is not well-formed XML, so it cannot be masked",
                "Retry after the screen settles; a truncated dump means uiautomator was interrupted.",
            )
        })?
        .into_owned();
    Ok((
        [(header::CONTENT_TYPE, "application/xml; charset=utf-8")],
        xml,
    )
        .into_response())
}

/// Reads the screen the way an agent does: what it shows and what can be acted on.
async fn read_screen(
    dev: &dyn Device,
) -> Result<(Screen, ScreenRepresentation, crate::domain::ScreenSize), ApiError> {
    let (info, xml, app) = tokio::join!(dev.info(), dev.hierarchy(), dev.current_app());
    let info = info?;
    let opts = ReprOptions {
        activity: app.ok().and_then(|a| a.activity),
        screen: Some(info.screen),
        ..Default::default()
    };
    let screen = Screen::from_xml(&xml?, &opts).map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            e.code(),
            e.to_string(),
            e.hint(),
        )
    })?;
    let repr = screen.representation(&opts);
    Ok((screen, repr, info.screen))
}

/// The screen as agents see it: the compact text, actionable elements with selectors.
#[utoipa::path(get, path = "/v1/devices/{id}/screen", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = ScreenRepresentation), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn screen(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ScreenRepresentation>, ApiError> {
    Ok(Json(read_screen(device(&s, &id)?.as_ref()).await?.1))
}

/// Installed apps.
#[utoipa::path(get, path = "/v1/devices/{id}/apps", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = Vec<AppInfo>), (status = 404, body = ErrorResponse)))]
pub async fn apps(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<AppInfo>>, ApiError> {
    Ok(Json(device(&s, &id)?.installed_apps().await?))
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ActionResult {
    /// The action as executed (canonical form).
    #[schema(value_type = Object)]
    pub action: Value,
    /// What it did (the pixel point tapped, the swipe path…).
    #[schema(value_type = Object)]
    pub detail: Value,
    pub duration_ms: u64,
}

/// Execute one action on the device, as an agent would. Body: an action object such as
/// `{"action": "tap", "selector": "#btn_send"}`. A failure carries `error_type`
/// (`element_not_found`, `action_failed`, `timeout`, `permission_denied`), the selector and
/// the current screen, for recovery.
#[utoipa::path(post, path = "/v1/devices/{id}/actions", tag = "devices", params(("id" = String, Path), ForceParam),
    request_body(content = Object, description = "One action; see README \"Actions\""),
    responses((status = 200, body = ActionResult), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse),
              (status = 422, description = "Invalid action, or element not found", body = ErrorResponse), (status = 504, body = ErrorResponse)))]
pub async fn act(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ForceParam>,
    Json(body): Json<Value>,
) -> Result<Json<ActionResult>, Response> {
    let dev = device(&s, &id).map_err(IntoResponse::into_response)?;
    busy_check(&s, &id, q.force).map_err(IntoResponse::into_response)?;
    let action = ActionParser::new().parse(&body).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            e.code(),
            e.to_string(),
            e.hint(),
        )
        .into_response()
    })?;
    if matches!(
        action,
        Action::Finish { .. } | Action::AskUser { .. } | Action::McpCall { .. } | Action::Custom(_)
    ) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "not_a_device_action",
            format!(
                "`{}` is part of a task, not something a device does",
                action.name()
            ),
            "Submit a task (POST /v1/tasks) to use finish, ask_user and mcp_call.",
        )
        .into_response());
    }
    let start = Instant::now();
    let (screen, _, size) = read_screen(dev.as_ref())
        .await
        .map_err(IntoResponse::into_response)?;
    let ctx = ExecContext {
        screen: Some(&screen),
        size,
        transform: &LinearTransform,
    };
    match exec::execute(dev.as_ref(), &action, &ctx).await {
        Ok(out) => Ok(Json(ActionResult {
            action: serde_json::to_value(&action).unwrap_or(Value::Null),
            detail: out.detail,
            duration_ms: start.elapsed().as_millis() as u64,
        })),
        Err(e) => Err(action_error(dev.as_ref(), e).await),
    }
}

/// The action error object: the one error shape plus `error_type`, `selector` and the
/// current `screen_state`, so a caller can recover without another request.
async fn action_error(dev: &dyn Device, e: ExecError) -> Response {
    let status = match e.error_type() {
        "element_not_found" => StatusCode::UNPROCESSABLE_ENTITY,
        "timeout" => StatusCode::GATEWAY_TIMEOUT,
        "permission_denied" => StatusCode::FORBIDDEN,
        _ if matches!(&e, ExecError::Device(d) if d.is_disconnect()) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        _ => StatusCode::BAD_GATEWAY,
    };
    let screen_state = read_screen(dev).await.ok().map(|(_, r, _)| r);
    let body = json!({"error": {
        "code": e.error_type(),
        "error_type": e.error_type(),
        "message": e.to_string(),
        "hint": e.hint(),
        "selector": e.selector(),
        "screen_state": screen_state,
    }});
    (status, axum::Json(body)).into_response()
}
