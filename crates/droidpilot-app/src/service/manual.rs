//! A step taken outside the agent loop (an MCP client's action on its session task): the
//! application's entry to `Runner::manual_step`, the one path take-over, MCP and the
//! dashboard share, so such a step is observed, run and recorded like the loop's own.

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
