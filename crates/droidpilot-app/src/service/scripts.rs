//! Script use cases: running a stored script on a phone (a task with agent kind
//! `script`, the script embedded whole so the task stands alone); checking a script's
//! custom steps against the server's custom actions, and its Maestro export.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::error::AppError;
use crate::core::Core;
use crate::domain::{NewTask, Task, TaskSpec};
use crate::script::{Script, ScriptId, ScriptRecord};

/// Run a script: a task with agent kind `script`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunScript {
    /// Values for the script's `${inputs}`. A secret input's value is held in memory
    /// for the run only: never stored with the task, its steps or events.
    #[serde(default)]
    pub inputs: BTreeMap<String, String>,
    /// Run on this device (else any available one).
    pub device_id: Option<String>,
    /// A version (default: the latest).
    pub version: Option<u32>,
    /// Recover failed steps with a model (AI in the middle); `provider`, `model` and
    /// `base_url` choose it, like a navigator's.
    #[serde(default)]
    pub recovery: bool,
    #[schema(value_type = Option<String>)]
    pub provider: Option<Value>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The recovery model's server, by name (`[agent.servers.NAME]`).
    pub server: Option<String>,
    #[schema(minimum = 1, maximum = 1000)]
    pub max_steps: Option<u32>,
    #[schema(minimum = 1, maximum = 86400)]
    pub timeout_seconds: Option<u64>,
    pub priority: Option<i32>,
    pub webhook_url: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// Refuses a script whose `custom` steps the server cannot run with the custom actions
/// in force (`run::extend::scripts::check`). Used wherever a script is stored.
pub fn check_custom(core: &Core, script: &Script) -> Result<(), AppError> {
    let table = core.actions.current();
    Ok(crate::run::extend::scripts::check(script, &table.custom)?)
}

/// A script as a Maestro flow, each `custom` step written as its primitives under the
/// definitions in force (refused, naming the step, when one cannot be).
pub fn export_maestro(
    core: &Core,
    script: &Script,
) -> Result<String, crate::script::maestro::MaestroError> {
    let table = core.actions.current();
    crate::script::maestro::export_with(script, &|call| {
        crate::run::extend::scripts::expand(call, &table)
    })
}

/// Checks a run request (inputs, the device's apps, the agent) and queues its task. Used
/// by `POST /v1/scripts/{id}/run` and the MCP tool `run_script`.
pub async fn run_script(core: &Core, id: ScriptId, req: RunScript) -> Result<Task, AppError> {
    let rec = core.store.script(id, req.version).await?;
    crate::script::vars::bind_inputs(&rec.script.inputs, &req.inputs)?;
    if let (Some(app), Some(dev)) = (&rec.script.app, &req.device_id) {
        check_installed(core, dev, app).await?;
    }
    let spec = TaskSpec::parse(task_request(&rec, req))?;
    let spec = super::tasks::ready(core, spec).await?;
    Ok(core.queue.submit(spec).await?)
}

/// The task a run submits: the script embedded whole, so the task stands alone.
fn task_request(rec: &ScriptRecord, req: RunScript) -> NewTask {
    let mut agent = json!({
        "kind": "script", "script": rec.script, "script_id": rec.id.to_string(),
        "script_version": rec.version, "inputs": req.inputs,
    });
    if req.recovery {
        agent["recovery"] = json!(true);
    }
    // A model named without `recovery` is refused by the agent spec, with a hint to set it.
    let model = [
        ("provider", req.provider),
        ("model", req.model.map(Value::from)),
        ("base_url", req.base_url.map(Value::from)),
        ("server", req.server.map(Value::from)),
    ];
    for (k, v) in model {
        if let Some(v) = v {
            agent[k] = v;
        }
    }
    NewTask {
        instruction: Some(rec.script.goal.clone()),
        device_id: req.device_id,
        agent: Some(agent),
        max_steps: req.max_steps.or(Some(default_max_steps(&rec.script))),
        timeout_seconds: req.timeout_seconds,
        priority: req.priority,
        webhook_url: req.webhook_url,
        metadata: req.metadata,
        ..Default::default()
    }
}

/// Room for each step's waits, dismissals and recoveries.
fn default_max_steps(script: &Script) -> u32 {
    (script.steps.len() as u32 * 4 + 10).min(crate::domain::task::MAX_STEPS_LIMIT)
}

async fn check_installed(s: &Core, device_id: &str, app: &str) -> Result<(), AppError> {
    let Some(dev) = s.pool.get(device_id) else {
        return Ok(()); // check_runnable names the unknown device.
    };
    let apps = dev.installed_apps().await?;
    if apps.iter().any(|a| a.package == app) {
        return Ok(());
    }
    Err(AppError::invalid(
        "app_not_installed",
        format!("device {device_id} does not have {app}, which the script runs in"),
        "Install the app on the device, or run the script on another one (GET /v1/devices/{id}/apps lists a device's apps).",
    ))
}
