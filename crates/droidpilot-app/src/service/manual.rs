//! A step taken outside the agent loop: a person's action on a paused task (take-over,
//! over HTTP and from the dashboard: `service::takeover::act`) or an MCP client's action
//! on its session task (the MCP device tools). This is the one entry all of them use; it
//! runs the step through the run layer's `Runner::manual_step`, so it is observed, run
//! and recorded like the loop's own steps.

use crate::core::Core;
use crate::device::{Device, DeviceError};
use crate::domain::{Action, TaskId};
pub use crate::run::runner::ManualDone;

/// Reads `device`'s screen, runs `action` and records it as step `number()` of
/// `task_id` (None: not recorded), taken `by` a person when named.
pub async fn manual_step(
    core: &Core,
    device: &dyn Device,
    task_id: TaskId,
    action: &Action,
    by: Option<String>,
    number: impl FnOnce() -> Option<u32>,
) -> Result<ManualDone, DeviceError> {
    (core.runner)
        .manual_step(device, task_id, action, by, number)
        .await
}
