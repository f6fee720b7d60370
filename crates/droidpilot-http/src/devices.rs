//! Device endpoints: the pool (list, add, remove) and one device's screen and input
//! (screenshot, hierarchy, representation, one action). Manual actions on a device that a
//! task holds are refused unless forced, so a person cannot silently derail a running task.

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
use crate::device::exec::ExecError;
use crate::device::pool::{DeviceSummary, PoolError};
use crate::device::sim::{SimConfig, SimDevice};
use crate::device::{Device, DeviceError};
use crate::domain::Action;
use crate::screen::{Screen, ScreenRepresentation};
use crate::service;

fn device(s: &AppState, id: &str) -> Result<std::sync::Arc<dyn Device>, ApiError> {
    Ok(service::devices::device(s, id)?)
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeviceList {
    pub devices: Vec<DeviceSummary>,
}

/// Every pooled device with its state: available, leased, offline or quarantined. On a
/// database several instances share, the whole farm: each device with its `instance`, and
/// `local` true for this instance's own.
#[utoipa::path(get, path = "/v1/devices", tag = "devices", responses((status = 200, body = DeviceList)))]
pub async fn list_devices(State(s): State<AppState>) -> Json<DeviceList> {
    Json(DeviceList {
        devices: service::devices::farm_devices(&s).await,
    })
}

/// One device.
#[utoipa::path(get, path = "/v1/devices/{id}", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = DeviceSummary), (status = 404, body = ErrorResponse)))]
pub async fn get_device(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<DeviceSummary>, ApiError> {
    if let Some(mut d) = s.pool.summary(&id) {
        d.instance = s.membership.as_ref().map(|m| m.me.name.clone());
        return Ok(Json(d));
    }
    match super::cluster::remote_summary_of(&s, &id).await {
        Some(d) => Ok(Json(d)),
        None => Err(PoolError::NotFound(id).into()),
    }
}

/// The body of `POST /v1/devices`: exactly one of the fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddDevice {
    address: Option<String>,
    serial: Option<String>,
    sim: Option<String>,
}

/// How to add a device (the schema of `AddDevice`: exactly one field).
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // documentation only; `AddDevice` is what is parsed
pub enum AddDeviceRequest {
    Address(AddByAddress),
    Serial(AddBySerial),
    Sim(AddSim),
}

/// A network phone (`adb tcpip 5555`), `adb connect`ed: `host:port` with an IPv4 address
/// or a host name, and a port 1–65535.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct AddByAddress {
    #[schema(
        example = "192.168.1.20:5555",
        max_length = 259,
        pattern = "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$"
    )]
    address: String,
}

/// A phone the adb server already lists (`adb devices`): USB serials, emulators.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct AddBySerial {
    #[schema(
        example = "emulator-5554",
        pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
    )]
    serial: String,
}

/// A virtual phone: re-adds a configured `[[devices.sim]]` by its serial, or creates one
/// with the default settings.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct AddSim {
    #[schema(example = "sim-2", pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")]
    sim: String,
}

fn invalid(field: &str, message: String, hint: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_device",
        format!("field `{field}`: {message}"),
        hint,
    )
}

const ADD_HINT: &str = "Send exactly one of {\"address\": \"192.168.1.20:5555\"} (a network phone), {\"serial\": \"<a serial from adb devices>\"} or {\"sim\": \"sim-2\"} (a virtual phone).";

/// A serial-like name: an ASCII letter or digit, then letters, digits, `.`, `_`, `:`, `-`.
/// Nothing a shell or a command line could read as an option, a path or a substitution.
fn is_serial_like(v: &str, max: usize) -> bool {
    v.len() <= max
        && v.starts_with(|c: char| c.is_ascii_alphanumeric())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// `host:port` with a port 1–65535 and an IPv4 address or an RFC 1123 host name.
fn valid_address(v: &str) -> Result<(), String> {
    let (host, port) = v
        .rsplit_once(':')
        .ok_or_else(|| format!("`{v}` is not host:port"))?;
    let port_ok = !port.starts_with('0')
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    if !port_ok {
        return Err(format!("the port `{port}` is not a number 1–65535"));
    }
    // RFC 1123 labels; an IPv4 address is one such name.
    let is_name = host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if is_name {
        Ok(())
    } else {
        Err(format!("`{host}` is not an IPv4 address or a host name"))
    }
}

/// Add a device: connect a network phone (`address`), pool a phone the adb server lists
/// (`serial`), or add a virtual phone (`sim`).
#[utoipa::path(post, path = "/v1/devices", tag = "devices", request_body = AddDeviceRequest,
    responses((status = 201, body = DeviceSummary), (status = 400, description = "Malformed JSON", body = ErrorResponse),
              (status = 409, description = "Already in the pool", body = ErrorResponse),
              (status = 422, description = "Not exactly one of address, serial and sim, or one that is malformed; a serial the adb server does not list (`unknown_serial`); no phone answers at the address (`device_unreachable`); or the ADB backend is not configured", body = ErrorResponse),
              (status = 502, description = "The adb server refused (adb connect failed)", body = ErrorResponse),
              (status = 503, description = "The adb server does not answer", body = ErrorResponse),
              (status = 504, description = "The adb server timed out", body = ErrorResponse)))]
pub async fn add_device(
    State(s): State<AppState>,
    Json(req): Json<AddDevice>,
) -> Result<(StatusCode, Json<DeviceSummary>), ApiError> {
    let summary = match req {
        AddDevice {
            address: Some(a),
            serial: None,
            sim: None,
        } => {
            valid_address(&a).map_err(|m| invalid("address", m, ADD_HINT))?;
            s.pool.add(&a).await.map_err(|e| unreachable(&a, e))?
        }
        AddDevice {
            address: None,
            serial: Some(serial),
            sim: None,
        } => add_serial(&s, &serial).await?,
        AddDevice {
            address: None,
            serial: None,
            sim: Some(serial),
        } => add_sim(&s, &serial).await?,
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "give exactly one of `address`, `serial` and `sim`",
                ADD_HINT,
            ));
        }
    };
    Ok((StatusCode::CREATED, Json(summary)))
}

/// A phone that does not answer at the address the caller gave is the caller's to fix
/// (a 422 naming the address), not a server failure; other errors keep their status.
fn unreachable(address: &str, e: PoolError) -> ApiError {
    match e {
        PoolError::Device(d @ (DeviceError::Disconnected { .. } | DeviceError::Timeout { .. })) => {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "device_unreachable",
                format!("no phone answered at `{address}`: {d}"),
                "Check that the phone is on, reachable from this host at that address, and has wireless debugging on (`adb tcpip 5555`, or pair it); `adb connect host:port` run on this host must work.",
            )
        }
        other => other.into(),
    }
}

/// Pools a serial the adb server lists; any other is refused with the list.
async fn add_serial(s: &AppState, serial: &str) -> Result<DeviceSummary, ApiError> {
    if !is_serial_like(serial, 128) {
        return Err(invalid(
            "serial",
            format!("`{serial}` is not an adb serial (letters, digits, `.`, `_`, `:`, `-`)"),
            "Copy a serial from `adb devices`.",
        ));
    }
    let listed = s.pool.adb_serials().await?;
    if !listed.iter().any(|l| l == serial) {
        // The serial is in the body, not the path: a body naming what does not exist is 422.
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_serial",
            format!(
                "the adb server does not list `{serial}`; it lists: [{}]",
                listed.join(", ")
            ),
            "Plug the phone in and accept the debugging prompt, or add a network phone with {\"address\": \"host:port\"}.",
        ));
    }
    Ok(s.pool.add(serial).await?)
}

/// Adds a virtual phone: the configured one with this serial, or a default one.
async fn add_sim(s: &AppState, serial: &str) -> Result<DeviceSummary, ApiError> {
    if !is_serial_like(serial, 64) {
        return Err(invalid(
            "sim",
            format!(
                "`{serial}` is not a usable serial (letters, digits, `.`, `_`, `:`, `-`; at most 64)"
            ),
            "Name the virtual phone like `sim-2`.",
        ));
    }
    if s.pool.summary(serial).is_some() {
        return Err(PoolError::Duplicate(serial.to_string()).into());
    }
    let cfg = s
        .config
        .devices
        .sim
        .iter()
        .find(|c| c.serial == serial)
        .cloned()
        .unwrap_or_else(|| SimConfig {
            serial: serial.to_string(),
            ..SimConfig::default()
        });
    let sim = SimDevice::new(cfg)?;
    Ok(s.pool.add_device(std::sync::Arc::new(sim), "sim").await?)
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
    s.frames.forget(&id);
    Ok(StatusCode::NO_CONTENT)
}

fn busy_check(s: &AppState, id: &str, force: bool) -> Result<(), ApiError> {
    Ok(service::devices::busy_check(s, id, force)?)
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotParams {
    /// `png` (default) or `jpeg` (`jpg` also).
    #[param(pattern = "^(png|jpeg|jpg)$")]
    format: Option<String>,
    /// Scale factor in (0, 1] (default 1).
    #[param(exclusive_minimum = 0, maximum = 1)]
    scale: Option<f32>,
    /// JPEG quality 1–100 (default 80).
    #[param(minimum = 1, maximum = 100)]
    quality: Option<u8>,
}

/// The current screen as PNG, or JPEG with `?format=jpeg&scale=0.5`. JPEGs come through
/// the live-view frame cache: a phone is captured at most once per `[dashboard]
/// frame_interval_ms` (500 ms), however many clients poll it.
#[utoipa::path(get, path = "/v1/devices/{id}/screenshot", tag = "devices", params(("id" = String, Path), ScreenshotParams),
    responses((status = 200, description = "PNG, or JPEG with `format=jpeg`", content((Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"))),
              (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
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
    let dev = device(&s, &id)?;
    if format != "png" {
        let jpeg = s.frames.jpeg(&id, dev.as_ref(), scale, quality).await;
        return match jpeg {
            Ok(bytes) => {
                Ok(([(header::CONTENT_TYPE, "image/jpeg")], Body::from(bytes)).into_response())
            }
            Err(super::frames::FrameError::Device(e)) => Err(e.into()),
            Err(super::frames::FrameError::Encode(e)) => Err(ApiError::internal(e)),
        };
    }
    let shot = dev.screenshot().await?;
    if scale == 1.0 {
        return Ok((
            [(header::CONTENT_TYPE, "image/png")],
            Body::from(shot.png()?),
        )
            .into_response());
    }
    let rgba = shot.rgba()?;
    let (bytes, ct) = tokio::task::spawn_blocking(move || {
        crate::service::images::encode(&rgba, shot.width, shot.height, scale, false, quality)
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

/// Reads the screen the way an agent does (`service::devices::read_screen`).
async fn read_screen(
    dev: &dyn Device,
) -> Result<(Screen, ScreenRepresentation, crate::domain::ScreenSize), ApiError> {
    Ok(service::devices::read_screen(dev).await?)
}

/// How `GET /v1/devices/{id}/screen` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScreenFormat {
    /// The JSON document (compact text, actionable elements with selectors).
    #[default]
    Json,
    /// The indented tree as text, one line per node:
    /// `[0.0.1] Button "Continue" @btn_continue {clickable}`.
    Tree,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ScreenParams {
    /// `json` (default) or `tree` (text/plain, the tree format).
    #[serde(default)]
    #[param(value_type = Option<ScreenFormat>)]
    format: ScreenFormat,
    /// Read the screenshot with OCR (Tesseract) too: text the UI tree lacks (a canvas,
    /// an image of text, a page without nodes) becomes elements with `source: "ocr"`,
    /// text on a tree node enriches it (`source: "merged"`). About half a second for a
    /// new screen; cached per screenshot.
    #[serde(default)]
    ocr: bool,
}

/// The screen as agents see it: the compact text, actionable elements with selectors; with
/// `?format=tree`, the whole tree as text (`text/plain`), one line per node; with
/// `?ocr=true`, the screenshot's text read by OCR merged in (each element's `source`).
#[utoipa::path(get, path = "/v1/devices/{id}/screen", tag = "devices", params(("id" = String, Path), ScreenParams),
    responses(
        (status = 200, description = "The JSON document (`format=json`), or the tree as text (`format=tree`)",
         content((service::devices::ScreenDocument = "application/json"), (String = "text/plain"))),
        (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn screen(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(p): Query<ScreenParams>,
) -> Result<Response, ApiError> {
    let dev = device(&s, &id)?;
    let ocr = p.ocr.then_some(s.runner.ocr.as_ref());
    let (screen, doc) = service::devices::screen_document(&id, dev.as_ref(), ocr).await?;
    Ok(match p.format {
        ScreenFormat::Json => Json(doc).into_response(),
        ScreenFormat::Tree => (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            screen.tree_text(doc.screen.activity.as_deref()),
        )
            .into_response(),
    })
}

/// Installed apps, each with what it can do: written once per app version by the
/// configured model (`description_source: model`), else the app's label (`label`).
#[utoipa::path(get, path = "/v1/devices/{id}/apps", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = Vec<crate::apps::DescribedApp>), (status = 404, body = ErrorResponse)))]
pub async fn apps(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<crate::apps::DescribedApp>>, ApiError> {
    let apps = device(&s, &id)?.installed_apps().await?;
    Ok(Json(s.apps.describe(apps).await))
}

/// Every string resource of an installed app, per locale (`""` is its default
/// `values/`), read from its APK's `resources.arsc`: what replay uses to find a label a
/// script names in another language than the phone shows. 501 where the device backend
/// cannot read an app's APK; 422 when the app is not installed.
#[utoipa::path(get, path = "/v1/devices/{id}/apps/{package}/strings", tag = "devices",
    params(("id" = String, Path), ("package" = String, Path, description = "An installed app's package (`com.example.shop`).")),
    responses((status = 200, body = crate::device::AppStrings), (status = 400, body = ErrorResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse), (status = 501, body = ErrorResponse),
        (status = 502, body = ErrorResponse), (status = 503, body = ErrorResponse), (status = 504, body = ErrorResponse)))]
pub async fn app_strings(
    State(s): State<AppState>,
    Path((id, package)): Path<(String, String)>,
) -> Result<Json<crate::device::AppStrings>, ApiError> {
    if !crate::domain::action::is_package_name(&package) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_package",
            format!("`{package}` is not an Android package name"),
            "Use the package as GET /v1/devices/{id}/apps lists it, e.g. com.android.settings.",
        ));
    }
    Ok(Json(device(&s, &id)?.app_strings(&package).await?))
}

/// Where the phone is and what it shows besides the tree: locale, language, country,
/// time zone, whether the soft keyboard is shown, and the visible windows (top first,
/// each with its package, type and bounds).
#[utoipa::path(get, path = "/v1/devices/{id}/context", tag = "devices", params(("id" = String, Path)),
    responses((status = 200, body = service::devices::PhoneContext), (status = 404, body = ErrorResponse), (status = 503, body = ErrorResponse)))]
pub async fn context(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<service::devices::PhoneContext>, ApiError> {
    Ok(Json(
        service::devices::phone_context(device(&s, &id)?.as_ref()).await?,
    ))
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

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ActParams {
    /// Act even though a task holds the device.
    #[serde(default)]
    force: bool,
    /// Extra parts of a failure's error object, comma-separated. `screen_state` adds the
    /// current screen (about 5 KB) to an `element_not_found` or other action failure.
    #[param(pattern = "^(screen_state)?(,(screen_state)?)*$")]
    include: Option<String>,
}

/// The extras `?include=` may ask for.
const INCLUDES: &[&str] = &["screen_state"];

impl ActParams {
    /// Whether `?include=screen_state` was given; an unknown part is refused by name.
    fn screen_state(&self) -> Result<bool, ApiError> {
        let mut screen_state = false;
        for part in self.include.iter().flat_map(|s| s.split(',')) {
            match part.trim() {
                "" => {}
                "screen_state" => screen_state = true,
                other => {
                    let near = crate::domain::action::closest(other, INCLUDES.iter().copied())
                        .map(|s| format!(" (did you mean `{s}`?)"))
                        .unwrap_or_default();
                    return Err(ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_query",
                        format!("`include` has unknown part `{other}`{near}"),
                        format!("`include` takes: {}.", INCLUDES.join(", ")),
                    ));
                }
            }
        }
        Ok(screen_state)
    }
}

/// Execute one action on the device. Body: an action object such as
/// `{"action": "tap", "selector": "#btn_send"}` or, with pixels read off a screenshot,
/// `{"action": "tap", "pixel": [540, 1200]}`. A failure carries `error_type`
/// (`element_not_found`, `invalid_selector`, `invalid_target`, `action_failed`, `timeout`,
/// `permission_denied`) and the selector; `?include=screen_state` adds the current screen.
#[utoipa::path(post, path = "/v1/devices/{id}/actions", tag = "devices", params(("id" = String, Path), ActParams),
    request_body(content = Action, description = "One action; see docs/api.md \"Actions\". Targets: `coordinate` [x, y] in [0, 1], `pixel` [x, y] in pixels, `element` (or `element_id`), `selector`. Unknown fields are refused by name.",
        example = json!({"action": "tap", "pixel": [540, 1200]})),
    responses((status = 200, body = ActionResult), (status = 400, description = "Unknown `include` part", body = ErrorResponse), (status = 404, body = ErrorResponse), (status = 409, body = ErrorResponse),
              (status = 422, description = "Invalid action or selector, pixel outside the screen, element not found", body = ErrorResponse), (status = 502, body = ErrorResponse), (status = 504, body = ErrorResponse)))]
pub async fn act(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ActParams>,
    Json(body): Json<Value>,
) -> Result<Json<ActionResult>, Response> {
    let err = |e: ApiError| e.into_response();
    let with_screen = q.screen_state().map_err(err)?;
    let dev = device(&s, &id).map_err(err)?;
    busy_check(&s, &id, q.force).map_err(err)?;
    let action = service::devices::device_action_with(&body, &s.actions.current())
        .map_err(|e| err(e.into()))?;
    let acted = service::devices::act_on_device(&s, dev.as_ref(), &action)
        .await
        .map_err(|e| err(e.into()))?;
    match acted.result {
        Ok(out) => Ok(Json(ActionResult {
            action: acted.action,
            detail: out.detail,
            duration_ms: acted.duration_ms,
        })),
        Err(e) => Err(action_error(e, with_screen.then_some(dev.as_ref())).await),
    }
}

/// Parses one action a caller sends straight to a device (`service::devices::device_action`).
pub(crate) fn device_action(body: &Value) -> Result<Action, ApiError> {
    Ok(service::devices::device_action(body)?)
}

/// The HTTP status of a failed action: the caller's mistakes are 4xx, the phone's 5xx.
fn action_status(e: &ExecError) -> StatusCode {
    match e {
        ExecError::ElementNotFound { .. }
        | ExecError::InvalidSelector { .. }
        | ExecError::OffScreen { .. }
        | ExecError::NotADeviceAction(_) => StatusCode::UNPROCESSABLE_ENTITY,
        ExecError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        ExecError::Device(_) if e.error_type() == "permission_denied" => StatusCode::FORBIDDEN,
        ExecError::Device(d) => ApiError::from(d.clone()).status,
    }
}

/// The action error object: the one error shape plus `error_type` and `selector`, and
/// the current screen of `screen_of` as `screen_state` when the caller asked for it, to
/// recover without another request.
pub(crate) async fn action_error(e: ExecError, screen_of: Option<&dyn Device>) -> Response {
    let status = action_status(&e);
    // `error_type` keeps the four kinds agents know; `code` says which mistake it was.
    let code = match &e {
        ExecError::Device(d) if status.is_client_error() => d.code(),
        _ => e.error_type(),
    };
    let mut body = json!({"error": {
        "code": code,
        "error_type": e.error_type(),
        "message": e.to_string(),
        "hint": e.hint(),
        "selector": e.selector(),
    }});
    if let Some(dev) = screen_of {
        body["error"]["screen_state"] = json!(read_screen(dev).await.ok().map(|(_, r, _)| r));
    }
    (status, axum::Json(body)).into_response()
}
