//! Device use cases: the farm's phones, one phone by id, reading its screen the way an
//! agent does, and one action sent straight to it (not part of a task).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::error::{AppError, ErrorKind};
use crate::core::Core;
use crate::device::Device;
use crate::device::exec::{self, ExecContext, ExecError, ExecOutcome};
use crate::device::pool::{DeviceState, DeviceSummary, PoolError};
use crate::domain::{Action, ActionParser, ScreenSize};
use crate::screen::inspect::{Inspection, SelectorTest};
use crate::screen::{ReprOptions, Screen, ScreenRepresentation};
use crate::store::cluster::FarmDevice;

/// A pooled device by id.
pub fn device(core: &Core, id: &str) -> Result<Arc<dyn Device>, AppError> {
    core.pool
        .get(id)
        .ok_or_else(|| PoolError::NotFound(id.to_string()).into())
}

/// Refuses to act on (or remove) a device a task or an MCP session holds, unless forced.
pub fn busy_check(core: &Core, id: &str, force: bool) -> Result<(), AppError> {
    let summary = core
        .pool
        .summary(id)
        .ok_or_else(|| PoolError::NotFound(id.to_string()))?;
    if summary.state == DeviceState::Leased && !force {
        return Err(AppError::new(
            ErrorKind::Conflict,
            "device_busy",
            format!(
                "device {id} is held by {}",
                summary.holder().unwrap_or_default()
            ),
            "Cancel the task first (POST /v1/tasks/{id}/cancel) or wait for the MCP session to release the device, or add ?force=true if you really mean to interfere.",
        ));
    }
    Ok(())
}

/// Reads the screen the way an agent does: what it shows and what can be acted on.
pub async fn read_screen(
    dev: &dyn Device,
) -> Result<(Screen, ScreenRepresentation, ScreenSize), AppError> {
    let (info, xml, app) = tokio::join!(dev.info(), dev.hierarchy(), dev.current_app());
    let info = info?;
    let opts = ReprOptions {
        activity: app.ok().and_then(|a| a.activity),
        screen: Some(info.screen),
        ..Default::default()
    };
    let screen = Screen::from_xml(&xml?, &opts)
        .map_err(|e| AppError::new(ErrorKind::Unavailable, e.code(), e.to_string(), e.hint()))?;
    let repr = screen.representation(&opts);
    Ok((screen, repr, info.screen))
}

/// The screen document of `GET /v1/devices/{id}/screen`: what an agent sees, with seed
/// 004's `SemanticUITree` identity beside it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct ScreenDocument {
    /// This screen's id: its content hash (the tree's layout with its texts' digits),
    /// 16 hex digits; the same screen read again has the same id.
    pub screen_id: String,
    /// The device it was read from.
    pub device_id: String,
    /// The foreground app's label (`Settings`), when the phone names its apps' labels.
    pub app_name: Option<String>,
    #[serde(flatten)]
    pub screen: ScreenRepresentation,
}

/// Reads `dev`'s screen as a `ScreenDocument` (the apps' labels read beside it), with
/// OCR's words merged in when given an engine (`read_screen_ocr`).
pub async fn screen_document(
    id: &str,
    dev: &dyn Device,
    ocr: Option<&crate::ocr::Ocr>,
) -> Result<(Screen, ScreenDocument), AppError> {
    let read = async {
        match ocr {
            Some(o) => read_screen_ocr(dev, o).await,
            None => read_screen(dev).await,
        }
    };
    let (read, apps) = tokio::join!(read, dev.installed_apps());
    let (screen, repr, _) = read?;
    let app_name = repr.app_package.as_ref().and_then(|pkg| {
        apps.ok()?
            .into_iter()
            .find(|a| &a.package == pkg)?
            .label
            .filter(|l| !l.is_empty())
    });
    let doc = ScreenDocument {
        screen_id: format!("{:016x}", crate::screen::content_hash(&screen.tree).0),
        device_id: id.to_string(),
        app_name,
        screen: repr,
    };
    Ok((screen, doc))
}

/// Where the phone is and what it shows besides the screen's tree: what an agent is told
/// beside its screen (`GET /v1/devices/{id}/context`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct PhoneContext {
    /// BCP 47 (`en-US`), from `persist.sys.locale`.
    pub locale: Option<String>,
    /// The locale's language (`en`).
    pub language: Option<String>,
    /// ISO 3166 alpha-2, lower case (`us`), from the SIM.
    pub country: Option<String>,
    /// IANA (`Europe/Berlin`), from `persist.sys.timezone`.
    pub timezone: Option<String>,
    /// Whether the soft keyboard is shown (`dumpsys input_method`); None when the phone
    /// does not say.
    pub keyboard_visible: Option<bool>,
    /// The visible windows, top first, each with its package (`dumpsys window windows`).
    pub windows: Vec<crate::device::ActiveWindow>,
}

/// Reads the phone's context: its locale, time zone and country, the keyboard and the
/// visible windows.
pub async fn phone_context(dev: &dyn Device) -> Result<PhoneContext, AppError> {
    let (locale, windows) = tokio::join!(dev.locale(), dev.window_state());
    let (l, w) = (locale?, windows?);
    let language = l
        .locale
        .as_deref()
        .and_then(|t| t.split(['-', '_']).next())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase);
    Ok(PhoneContext {
        locale: l.locale,
        language,
        country: l.country,
        timezone: l.timezone,
        keyboard_visible: w.keyboard_shown,
        windows: w.windows,
    })
}

/// `read_screen` with OCR's words merged in (`ocr`, `screen::ocr`): text the tree lacks
/// becomes elements with `source: "ocr"`. OCR that cannot run is a 503 with how to
/// install it; a black (secure) screenshot has nothing to read, so the tree's screen.
pub async fn read_screen_ocr(
    dev: &dyn Device,
    ocr: &crate::ocr::Ocr,
) -> Result<(Screen, ScreenRepresentation, ScreenSize), AppError> {
    let (read, shot) = tokio::join!(read_screen(dev), dev.screenshot());
    let (screen, repr, size) = read?;
    let shot = shot?;
    if shot.is_black() {
        return Ok((screen, repr, size));
    }
    let png = shot.png()?;
    let boxes = ocr
        .read(&png, &crate::ocr::screenshot_key(&png))
        .await
        .map_err(|e| {
            AppError::new(
                ErrorKind::Unavailable,
                "ocr_unavailable",
                e.to_string(),
                e.hint(),
            )
        })?;
    let (screen, _) = screen.with_ocr(&boxes.boxes);
    let opts = ReprOptions {
        activity: repr.activity.clone(),
        screen: Some(size),
        ..Default::default()
    };
    let repr = screen.representation(&opts);
    Ok((screen, repr, size))
}

/// The screen as the inspector shows it (`screen::inspect`): every visible node with its
/// bounds, attributes, recommended selector and alternatives with what each matches, and
/// `selector` tested on the same screen when given.
pub async fn inspect(
    dev: &dyn Device,
    selector: Option<&str>,
) -> Result<(Inspection, Option<SelectorTest>), AppError> {
    let (screen, _, size) = read_screen(dev).await?;
    let mut found = crate::screen::inspect::inspect(&screen);
    // The device's size, not the furthest window's edge, is what the bounds are in.
    (found.width, found.height) = (size.width as i32, size.height as i32);
    let tested = selector.map(|s| crate::screen::inspect::test_selector(&screen, s));
    Ok((found, tested))
}

/// Parses one action a caller sends straight to a device, refusing the ones that belong
/// to a task (finish, ask_user, mcp_call, custom).
pub fn device_action(body: &Value) -> Result<Action, AppError> {
    device_action_with(body, &Default::default())
}

/// `device_action`, also taking the operator's custom actions (`[[actions.custom]]`),
/// their arguments checked against their parameters.
pub fn device_action_with(
    body: &Value,
    actions: &crate::run::extend::ActionsConfig,
) -> Result<Action, AppError> {
    let action = actions
        .parser()
        .parse(body)
        .map_err(|e| AppError::invalid(e.code(), e.caller_message(), e.hint()))?;
    if let Action::Custom(c) = &action
        && let Some(def) = actions.custom(&c.name)
    {
        def.bind(&c.args).map_err(|e| {
            let hint = format!(
                "Send {{\"action\": \"{}\", …}} with {}.",
                def.name,
                def.signature()
            );
            AppError::invalid("invalid_action", e, hint)
        })?;
        return Ok(action);
    }
    let action = ActionParser::new()
        .parse(body)
        .map_err(|e| AppError::invalid(e.code(), e.caller_message(), e.hint()))?;
    if matches!(
        action,
        Action::Finish { .. } | Action::AskUser { .. } | Action::McpCall { .. } | Action::Custom(_)
    ) {
        return Err(AppError::invalid(
            "not_a_device_action",
            format!(
                "`{}` is part of a task, not something a device does",
                action.name()
            ),
            "Submit a task (POST /v1/tasks) to use finish, ask_user and mcp_call.",
        ));
    }
    Ok(action)
}

/// What an action sent straight to a device did.
pub struct DeviceActed {
    /// The action as executed, canonical, with text typed into a password field as `••••`.
    pub action: Value,
    pub result: Result<ExecOutcome, ExecError>,
    pub duration_ms: u64,
}

/// Runs one action on `dev` (of `core`'s pool) against its current screen. Fails when
/// the screen cannot be read; a failed action is returned in `result`.
pub async fn act_on_device(
    core: &Core,
    dev: &dyn Device,
    action: &Action,
) -> Result<DeviceActed, AppError> {
    let start = Instant::now();
    if let Action::Custom(c) = action {
        return custom_on_device(core, dev, c, start).await;
    }
    let (screen, _, size) = read_screen(dev).await?;
    // The runner's coordinate transform: a REST point lands where a task's would.
    let transform = core.runner.transform.as_ref();
    let ctx = ExecContext {
        screen: Some(&screen),
        size,
        transform,
    };
    let result = exec::execute(dev, action, &ctx).await;
    if matches!(action, Action::Rotate { .. }) && result.is_ok() {
        core.pool.refresh_screen(dev).await;
    }
    // Text typed into a password field is not echoed (nor logged, nor stored).
    let shown = screen.mask_typed(action, size, transform);
    Ok(DeviceActed {
        action: serde_json::to_value(shown.as_ref().unwrap_or(action)).unwrap_or(Value::Null),
        result,
        duration_ms: start.elapsed().as_millis() as u64,
    })
}

/// An operator's custom action sent straight to a device: its primitives run through
/// the runner's transform; secret parameters are not echoed.
async fn custom_on_device(
    core: &Core,
    dev: &dyn Device,
    c: &crate::domain::action::CustomAction,
    start: Instant,
) -> Result<DeviceActed, AppError> {
    let actions = core.actions.current();
    let Some(def) = actions.custom(&c.name) else {
        return Err(AppError::invalid(
            "not_a_device_action",
            format!("`{}` is not a custom action of this server", c.name),
            "The server's [[actions.custom]] changed; list them again.",
        ));
    };
    let result = def.run(dev, &c.args, core.runner.transform.as_ref()).await;
    let result = result.map(|detail| ExecOutcome { detail }).map_err(|f| {
        f.cause.unwrap_or_else(|| {
            ExecError::Device(crate::device::DeviceError::CommandFailed {
                command: c.name.clone(),
                exit_code: 1,
                stderr: f.message,
            })
        })
    });
    let mut shown = def.masked_args(&c.args);
    shown.insert("action".into(), Value::String(c.name.clone()));
    Ok(DeviceActed {
        action: Value::Object(shown),
        result,
        duration_ms: start.elapsed().as_millis() as u64,
    })
}

/// The state another instance stored for its phone; an unknown one reads as offline.
fn state_of(s: &str) -> DeviceState {
    s.parse().unwrap_or(DeviceState::Offline)
}

/// A phone of another instance as the device list shows it; offline when its owner is
/// dead.
pub fn remote_summary(f: &FarmDevice) -> DeviceSummary {
    DeviceSummary {
        id: f.id.clone(),
        backend: f.backend.clone(),
        model: f.model.clone(),
        state: if f.owner_live {
            state_of(&f.state)
        } else {
            DeviceState::Offline
        },
        screen: None,
        lease_owner: None,
        consecutive_failures: 0,
        last_error: (!f.owner_live).then(|| format!("instance `{}` is down", f.instance)),
        instance: Some(f.instance.clone()),
        local: false,
    }
}

/// Every phone of the farm: this instance's pool (marked with its name), then the other
/// instances' rows. On one host, the pool. If the database does not answer, the pool
/// alone (logged), so the local phones stay visible.
pub async fn farm_devices(s: &Core) -> Vec<DeviceSummary> {
    let mut local = s.pool.list();
    let (Some(m), Some(c)) = (&s.membership, s.store.cluster()) else {
        return local;
    };
    for d in &mut local {
        d.instance = Some(m.me.name.clone());
    }
    match c.farm_devices(m.cfg.dead_after()).await {
        Ok(rows) => local.extend(
            rows.iter()
                .filter(|f| f.instance != m.me.name)
                .map(remote_summary),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the farm's devices; listing this instance's only")
        }
    }
    local.sort_by(|a, b| (&a.id, &a.instance).cmp(&(&b.id, &b.instance)));
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another instance's stored state reads back as the same state; anything else (a
    /// newer instance's name this one does not know) as offline.
    #[test]
    fn stored_states_read_back_and_unknown_ones_are_offline() {
        for s in [
            DeviceState::Available,
            DeviceState::Leased,
            DeviceState::Offline,
            DeviceState::Quarantined,
        ] {
            assert_eq!(state_of(s.as_str()), s);
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(state_of("rebooting"), DeviceState::Offline);
        assert_eq!(state_of("Available"), DeviceState::Offline);
    }
}
