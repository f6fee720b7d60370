//! `stop_app` and `clear_app_data`: custom actions for what a Maestro flow does to an app
//! (`stopApp`, `killApp`, `clearState`, `launchApp` with its default `stopApp` and
//! `clearState`): `am force-stop` and `pm clear` over ADB, the virtual phone's own reset.
//! Registered by the core on every runner: `{"action": "clear_app_data", "package": "com.x"}`.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::middleware::CustomActionHandler;
use crate::device::Device;

pub const STOP: &str = "stop_app";
pub const CLEAR: &str = "clear_app_data";

/// Stops an app (`clear: false`) or clears its data (`clear: true`).
pub struct AppControl {
    pub clear: bool,
}

/// The action's arguments.
pub fn args(package: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("package".into(), json!(package));
    m
}

#[async_trait]
impl CustomActionHandler for AppControl {
    async fn run(&self, device: &dyn Device, args: &Map<String, Value>) -> Result<Value, String> {
        let package = args
            .get("package")
            .and_then(Value::as_str)
            .filter(|p| crate::domain::action::is_package_name(p))
            .ok_or("`package` must be a package name such as com.example.app")?;
        let r = match self.clear {
            true => device.clear_app_data(package).await,
            false => device.stop_app(package).await,
        };
        r.map_err(|e| format!("{e}. {}", e.hint()))?;
        Ok(json!({"package": package, "cleared": self.clear}))
    }
}
