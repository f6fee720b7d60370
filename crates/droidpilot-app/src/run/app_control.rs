//! `stop_app` and `clear_app_data`: custom actions for what a Maestro flow does to an app
//! (`stopApp`, `killApp`, `clearState`, `launchApp` with its default `stopApp` and
//! `clearState`): `am force-stop` and `pm clear` over ADB, the virtual phone's own reset.
//! Registered by the core on every runner: `{"action": "clear_app_data", "package": "com.x"}`.
//!
//! `"launch": true` then launches the app (`Device::launch_app`), in the same step: what
//! `launchApp` does. The runner settles after it as after `launch_app` (`launches`), so
//! the screen is read once, the launched app's; as two steps, the step between them read
//! the launcher, which nothing decides on (a sixth of a suite's time on a phone whose
//! dump takes 2 s).

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::middleware::CustomActionHandler;
use crate::device::Device;
use crate::domain::{Action, AppRef};

pub const STOP: &str = "stop_app";
pub const CLEAR: &str = "clear_app_data";

/// Stops an app (`clear: false`) or clears its data (`clear: true`).
pub struct AppControl {
    pub clear: bool,
}

/// The action's arguments; `launch`: launch the app afterwards.
pub fn args(package: &str, launch: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("package".into(), json!(package));
    if launch {
        m.insert("launch".into(), json!(true));
    }
    m
}

/// Whether `action` is one of these that launches the app afterwards: it changes the
/// screen as `launch_app` does, so the runner settles after it.
pub fn launches(action: &Action) -> bool {
    matches!(action, Action::Custom(c)
        if (c.name == STOP || c.name == CLEAR) && c.args.get("launch") == Some(&json!(true)))
}

#[async_trait]
impl CustomActionHandler for AppControl {
    async fn run(&self, device: &dyn Device, args: &Map<String, Value>) -> Result<Value, String> {
        let package = args
            .get("package")
            .and_then(Value::as_str)
            .filter(|p| crate::domain::action::is_package_name(p))
            .ok_or("`package` must be a package name such as com.example.app")?;
        let launch = match args.get("launch") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("`launch` must be true or false".into()),
        };
        let r = match self.clear {
            true => device.clear_app_data(package).await,
            false => device.stop_app(package).await,
        };
        r.map_err(|e| format!("{e}. {}", e.hint()))?;
        if launch {
            let app = AppRef::Package(package.to_string());
            device
                .launch_app(&app)
                .await
                .map_err(|e| format!("{e}. {}", e.hint()))?;
        }
        Ok(json!({"package": package, "cleared": self.clear, "launched": launch}))
    }
}
