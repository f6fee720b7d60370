//! `split_screen`: the custom action that puts two apps side by side,
//! `{"action": "split_screen", "top": "Messages", "bottom": "Notes"}` (a label or a
//! package each). The virtual phone does it at once; over ADB it is the Android
//! version's own shell commands, refused where there are none (`device::adb::split`).
//! Registered by the core on every runner; the `split` agent's first step.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::middleware::CustomActionHandler;
use crate::device::Device;
use crate::domain::AppRef;

pub const NAME: &str = "split_screen";

pub struct SplitScreenAction;

/// The action's arguments.
pub fn args(top: &str, bottom: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("top".into(), json!(top));
    m.insert("bottom".into(), json!(bottom));
    m
}

/// An app as the task names it: a package name, or a label.
pub fn app_ref(app: &str) -> AppRef {
    match crate::domain::action::is_package_name(app) {
        true => AppRef::Package(app.to_string()),
        false => AppRef::Label(app.to_string()),
    }
}

#[async_trait]
impl CustomActionHandler for SplitScreenAction {
    async fn run(&self, device: &dyn Device, args: &Map<String, Value>) -> Result<Value, String> {
        let app = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("`{k}` must name an app (a label or a package)"))
        };
        let (top, bottom) = (app("top")?, app("bottom")?);
        device
            .split_screen(&app_ref(top), &app_ref(bottom))
            .await
            .map_err(|e| format!("{e}. {}", e.hint()))?;
        let windows = device.windows().await.map_err(|e| e.to_string())?;
        Ok(json!({"top": top, "bottom": bottom, "windows": windows}))
    }
}
