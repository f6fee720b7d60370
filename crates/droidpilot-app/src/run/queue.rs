//! Queue operations: the service functions the task endpoints call. Each publishes its
//! event on the bus (persisted first), so the event stream tells the whole story from
//! `task.queued` on.

use super::events::EventBus;
use super::runner::StopSignal;
use super::scheduler::RunningTasks;
use crate::domain::{Task, TaskEvent, TaskId, TaskSpec};
use crate::store::notify::Control;
use crate::store::{CancelOutcome, StoreError};

/// Persists a new task as `queued` and publishes `task.queued`.
pub async fn submit(bus: &EventBus, spec: TaskSpec) -> Result<Task, StoreError> {
    let task = bus.store().create_task(spec).await?;
    let queued = TaskEvent::Queued {
        task_id: task.id,
        priority: task.spec.priority,
        instruction: task.spec.instruction.clone(),
    };
    bus.publish(&task.id.to_string(), queued).await?;
    Ok(task)
}

/// Cancels a task: at once when it is queued or waiting for an answer, and promptly when
/// it runs (its runner is signalled and drops what it waits on, a model call or a device
/// wait). A runner on another instance of a shared database is signalled by its
/// instance, told over `Control::Cancel`; every runner also reads the stored flag once a
/// second at a step boundary, should the notification be lost.
pub async fn cancel(
    bus: &EventBus,
    running: &RunningTasks,
    id: TaskId,
) -> Result<(Task, CancelOutcome), StoreError> {
    let (task, outcome) = bus.store().cancel_task(id).await?;
    // A task waiting for an answer is cancelled at once, but its runner still waits on
    // the question (and holds the phone): it is woken too. A running task is relayed even
    // when a signal was found here: it may be this instance's claim that lost the race to
    // another's (a signal is registered before the claim).
    let here = running.signal(id, StopSignal::Cancel);
    if (!here || outcome == CancelOutcome::Requested)
        && let Some(peers) = bus.peers()
        && let Err(e) = peers.send(Control::Cancel { task: id }).await
    {
        tracing::warn!(task = %id, error = %e, "could not relay a cancel; the runner reads the stored flag within about a second");
    }
    let event = match outcome {
        CancelOutcome::Cancelled => TaskEvent::finished(&task),
        CancelOutcome::Requested => TaskEvent::CancelRequested {
            task_id: id,
            status: task.status,
            reason: task.reason.clone(),
        },
    };
    bus.publish(&id.to_string(), event).await?;
    Ok((task, outcome))
}
