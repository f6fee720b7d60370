//! The device tools: reading the screen (no lease needed: reading never fights over a
//! phone) and acting on it (leased for the session first; each action recorded as a step
//! of the session task through `service::manual_step`, the path take-over uses too).
//! Parsing and screen reading are the application's (`service::devices::{device_action,
//! read_screen}`), as for HTTP, so an action means the same over MCP as over HTTP.

use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::McpServer;
use super::reply::{ToolError, ToolResult, json_result, parse, take_device_id};
use super::tools::{ImageFormat, ReadElementArgs, ScreenshotArgs};
use crate::domain::Action;
use crate::screen::ScreenRepresentation;
use crate::service;
use crate::service::devices::{device_action, read_screen};
use droidpilot_app::device::Device;
use droidpilot_app::device::scroll_find::{Found, NOT_FOUND_HINT, Next, ScrollToFind};

impl McpServer {
    fn device(&self, id: &str) -> Result<Arc<dyn Device>, ToolError> {
        Ok(service::devices::device(&self.core, id)?)
    }

    pub(super) async fn read_screen(&self, args: Map<String, Value>) -> ToolResult {
        let a: super::tools::DeviceArgs = parse("read_screen", args)?;
        let (_, repr, size) = read_screen(self.device(&a.device_id)?.as_ref()).await?;
        let mut r = CallToolResult::success(vec![ContentBlock::text(screen_text(&repr, size))]);
        r.structured_content = serde_json::to_value(&repr).ok();
        Ok(r)
    }

    pub(super) async fn read_element(&self, args: Map<String, Value>) -> ToolResult {
        let a: ReadElementArgs = parse("read_element", args)?;
        let (_, repr, _) = read_screen(self.device(&a.device_id)?.as_ref()).await?;
        let els = &repr.actionable_elements;
        let found = match (a.element, a.selector.as_deref()) {
            (Some(id), _) => els.iter().find(|e| e.element_id == id),
            (None, Some(sel)) => els
                .iter()
                .find(|e| e.selector == sel || e.alternative_selectors.iter().any(|s| s == sel)),
            (None, None) => {
                return Err(ToolError::arguments(
                    "read_element",
                    "give `element` (an id from read_screen) or `selector`",
                ));
            }
        };
        let el = found.ok_or_else(|| {
            ToolError::new(
                "element_not_found",
                "no such element on the current screen",
                format!(
                    "The screen has {} actionable elements; read_screen lists their ids and selectors.",
                    els.len()
                ),
            )
        })?;
        json_result(el)
    }

    pub(super) async fn screenshot(&self, args: Map<String, Value>) -> ToolResult {
        let a: ScreenshotArgs = parse("screenshot", args)?;
        let scale = a.scale.unwrap_or(0.5);
        if !(scale > 0.0 && scale <= 1.0) {
            return Err(ToolError::arguments(
                "screenshot",
                format!("field `scale`: {scale} is outside (0, 1]"),
            ));
        }
        let quality = a.quality.unwrap_or(70);
        if !(1..=100).contains(&quality) {
            return Err(ToolError::arguments(
                "screenshot",
                format!("field `quality`: {quality} is outside 1..=100"),
            ));
        }
        let jpeg = a.format.unwrap_or(ImageFormat::Jpeg) == ImageFormat::Jpeg;
        let shot = self.device(&a.device_id)?.screenshot().await?;
        let (width, height) = (shot.width, shot.height);
        let rgba = shot.rgba()?;
        let (bytes, mime) = tokio::task::spawn_blocking(move || {
            crate::service::images::encode(&rgba, width, height, scale, jpeg, quality)
        })
        .await
        .map_err(|e| ToolError::new("internal_error", e.to_string(), "This is a bug."))?
        .map_err(|e| ToolError::new("internal_error", e, "This is a bug."))?;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let size = image_size(width, height, scale);
        let mut result = CallToolResult::success(vec![
            ContentBlock::image(data, mime),
            ContentBlock::text(size.describe()),
        ]);
        result.structured_content = Some(json!(size));
        Ok(result)
    }

    pub(super) async fn list_apps(&self, args: Map<String, Value>) -> ToolResult {
        let a: super::tools::DeviceArgs = parse("list_apps", args)?;
        json_result(&self.device(&a.device_id)?.installed_apps().await?)
    }

    /// One action tool: the arguments are the action's fields plus `device_id`.
    pub(super) async fn act(&self, name: &str, mut args: Map<String, Value>) -> ToolResult {
        let device_id = take_device_id(name, &mut args)?;
        args.insert("action".into(), Value::String(name.to_string()));
        let action = device_action(&Value::Object(args))?;
        let started = std::time::Instant::now();
        let (detail, step, task, shown) = self.act_recorded(&device_id, &action).await?;
        json_result(&json!({
            "ok": true,
            "device_id": device_id,
            "action": shown,
            "detail": detail,
            "duration_ms": started.elapsed().as_millis() as u64,
            "session_task": task,
            "step": step,
        }))
    }

    /// Leases (or renews) the device for this session, observes the screen, runs the
    /// action and records it as the next step of the session task, failed or not. Also
    /// returns the action as it may be echoed: a `type` into a password field (or any
    /// `type`, when the screen could not be read) with its text as `••••`.
    async fn act_recorded(
        &self,
        device_id: &str,
        action: &Action,
    ) -> Result<(Value, Option<u32>, crate::domain::TaskId, Action), ToolError> {
        let used = self.session.use_device(device_id).await?;
        let session = &self.session;
        let mut step = None;
        let number = || {
            step = session.next_step(device_id, used.task);
            step
        };
        let dev = used.device.as_ref();
        let done = service::manual_step(&self.core, dev, used.task, action, None, number).await?;
        if let Err(e) = &done.recorded {
            tracing::warn!(task = %used.task, error = %e, "could not record an MCP action");
        }
        Ok((done.result?.detail, step, used.task, done.shown))
    }

    /// Scrolls until the selector matches something on screen, recording each scroll
    /// (the loop is `device::scroll_find`, shared with the runner).
    pub(super) async fn scroll_to_find(&self, args: Map<String, Value>) -> ToolResult {
        let mut args = args;
        let device_id = take_device_id("scroll_to_find", &mut args)?;
        // The tool's fields past `device_id` are the runner's action's, parsed by it.
        let request: ScrollToFind = serde_json::from_value(Value::Object(args))
            .map_err(|e| ToolError::arguments("scroll_to_find", e))?;
        let request = request.checked().map_err(|e| {
            ToolError::new(
                "invalid_selector",
                e,
                "Check the selector against read_screen's selectors.",
            )
        })?;
        let mut search = request.start();
        let (found, repr) = loop {
            let dev = self.session_device(&device_id).await?;
            let (screen, repr, _) = read_screen(dev.as_ref()).await?;
            match search.next(&screen) {
                Next::Scroll(scroll) => {
                    self.act_recorded(&device_id, &scroll).await?;
                }
                Next::Done(found) => break (found, repr),
            };
        };
        let Found::At { swipes, bounds } = found else {
            let why = found.why_not(&request.selector).unwrap_or_default();
            return Err(ToolError::new("element_not_found", why, NOT_FOUND_HINT));
        };
        // The match may be a label inside the row that acts: the smallest actionable
        // element around it.
        let el = (repr.actionable_elements.iter())
            .filter(|e| e.bounds.contains(bounds.center()))
            .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()))
            .cloned();
        json_result(&json!({
            "found": true, "swipes": swipes, "bounds": bounds, "element": el,
        }))
    }

    /// The device, leased for this session (scroll_to_find acts, so it needs the lease).
    async fn session_device(&self, id: &str) -> Result<Arc<dyn Device>, ToolError> {
        self.session.acquire(Some(id), None).await?;
        self.device(id)
    }
}

/// `read_screen`'s text: the app, the compact view, then each element's id and selector.
fn screen_text(r: &ScreenRepresentation, size: crate::domain::ScreenSize) -> String {
    let mut s = format!(
        "{} | screen {}x{}{}\n\n{}\n",
        r.summary,
        size.width,
        size.height,
        r.activity
            .as_deref()
            .map(|a| format!(" | activity {a}"))
            .unwrap_or_default(),
        r.elements
    );
    if !r.actionable_elements.is_empty() {
        s.push_str("\nActionable elements (element id: selector):\n");
        for e in &r.actionable_elements {
            s.push_str(&format!(
                "[{}] {} \"{}\": {}\n",
                e.element_id, e.kind, e.text, e.selector
            ));
        }
    }
    s
}

/// A screenshot's size beside the screen's, so a point read off the picture can be
/// turned into the screen pixels `tap`'s `pixel` takes.
#[derive(Debug, serde::Serialize)]
pub(super) struct ImageSize {
    width: u32,
    height: u32,
    scale: f32,
    screen: ScreenPixels,
}

#[derive(Debug, serde::Serialize)]
struct ScreenPixels {
    width: u32,
    height: u32,
}

/// The size `service::images::encode` gives a `width`×`height` screen at `scale`.
pub(super) fn image_size(width: u32, height: u32, scale: f32) -> ImageSize {
    let side = |n: u32| ((n as f32 * scale).round() as u32).max(1);
    ImageSize {
        width: side(width),
        height: side(height),
        scale,
        screen: ScreenPixels { width, height },
    }
}

impl ImageSize {
    /// One line for the model.
    pub(super) fn describe(&self) -> String {
        format!(
            "This image is {}x{} pixels, {} of the {}x{} screen. For tap's `pixel`, divide a point's x and y on this image by {} (or give `coordinate` as fractions of the screen).",
            self.width, self.height, self.scale, self.screen.width, self.screen.height, self.scale
        )
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn a_half_size_screenshot_says_how_to_get_back_to_screen_pixels() {
        let s = super::image_size(1080, 2400, 0.5);
        assert_eq!((s.width, s.height), (540, 1200));
        assert_eq!(
            s.describe(),
            "This image is 540x1200 pixels, 0.5 of the 1080x2400 screen. For tap's `pixel`, divide a point's x and y on this image by 0.5 (or give `coordinate` as fractions of the screen)."
        );
    }
}
