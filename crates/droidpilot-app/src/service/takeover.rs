//! Take-over use cases: pause a running task, act on its phone as a person while it is
//! paused, resume it. The state machine and its events are `run::takeover`'s; the
//! person's action is a step taken outside the loop, run and recorded by
//! `service::manual_step` as MCP's device tools are; these find the task's phone and
//! word the refusals.

use super::error::AppError;
use super::manual::manual_step;
use crate::core::Core;
use crate::domain::{Action, Task, TaskId};
use crate::run::takeover::{Acted, TakeOverError};

/// Asks the task's runner to hold at its next step boundary; the task as it stands.
pub async fn pause(core: &Core, id: TaskId, by: Option<String>) -> Result<Task, AppError> {
    Ok(core.runner.takeovers.pause(&core.bus, id, by).await?)
}

/// Resumes a paused task, or withdraws a pause the runner has not reached yet.
pub async fn resume(core: &Core, id: TaskId, by: Option<String>) -> Result<Task, AppError> {
    Ok(core.runner.takeovers.resume(&core.bus, id, by).await?)
}

/// Runs one action on a paused task's phone as a person (`by`), recorded through
/// `service::manual_step` as the trajectory's next step and as a `manual_action`
/// intervention. A failed action is recorded too and returned in `Acted::result`.
pub async fn act(
    core: &Core,
    id: TaskId,
    action: &Action,
    by: Option<String>,
) -> Result<Acted, AppError> {
    let task = core.store.get_task(id).await?;
    let device = (task.assigned_device.as_deref())
        .and_then(|d| core.pool.get(d))
        .ok_or(TakeOverError::NotPaused {
            id,
            status: task.status,
            pending: false,
        })?;
    let turn = core.runner.takeovers.turn(&core.bus, id, by).await?;
    let (n, by) = (turn.step(), Some(turn.by().to_string()));
    let done = manual_step(core, device.as_ref(), id, action, by, || Some(n))
        .await
        .map_err(|e| turn.device_gone(device.as_ref(), e))?;
    Ok(turn.record(&core.bus, action, done).await?)
}
