//! The queue: submitting and cancelling tasks, and ending one outside a runner. Each
//! publishes its event on the bus (persisted first), so the event stream tells the whole
//! story from `task.queued` on. The queue wakes its scheduler itself (a task was queued,
//! a task that held a phone ended), so no caller has to.

use std::sync::Arc;

use tokio::sync::Notify;

use super::events::EventBus;
use super::finish::{Ending, end_task};
use super::scheduler::RunningTasks;
use super::stop::StopSignal;
use crate::domain::{Task, TaskEvent, TaskId, TaskSpec};
use crate::store::notify::Control;
use crate::store::{CancelOutcome, StoreError};

/// The task queue of one core: its bus, the running tasks a cancel signals, and the
/// scheduler's wake-up.
#[derive(Clone)]
pub struct Queue {
    bus: EventBus,
    running: Arc<RunningTasks>,
    wake: Arc<Notify>,
}

impl Queue {
    /// `wake` is the scheduler's (`Scheduler::wake`).
    pub fn new(bus: EventBus, running: Arc<RunningTasks>, wake: Arc<Notify>) -> Self {
        Self { bus, running, wake }
    }

    /// Persists a new task as `queued`, publishes `task.queued` and wakes the scheduler.
    pub async fn submit(&self, spec: TaskSpec) -> Result<Task, StoreError> {
        let task = self.bus.store().create_task(spec).await?;
        let queued = TaskEvent::Queued {
            task_id: task.id,
            priority: task.spec.priority,
            instruction: task.spec.instruction.clone(),
        };
        self.bus.publish(&task.id.to_string(), queued).await?;
        self.wake.notify_one();
        Ok(task)
    }

    /// Cancels a task: at once when it is queued or waiting for an answer, and promptly
    /// when it runs (its runner is signalled and drops what it waits on, a model call or
    /// a device wait). A runner on another instance of a shared database is signalled by
    /// its instance, told over `Control::Cancel`; every runner also reads the stored flag
    /// once a second at a step boundary, should the notification be lost.
    pub async fn cancel(&self, id: TaskId) -> Result<(Task, CancelOutcome), StoreError> {
        let bus = &self.bus;
        let (task, outcome) = bus.store().cancel_task(id).await?;
        // A task waiting for an answer is cancelled at once, but its runner still waits on
        // the question (and holds the phone): it is woken too. A running task is relayed
        // even when a signal was found here: it may be this instance's claim that lost the
        // race to another's (a signal is registered before the claim).
        let here = self.running.signal(id, StopSignal::Cancel);
        if (!here || outcome == CancelOutcome::Requested)
            && let Some(peers) = bus.peers()
            && let Err(e) = peers.send(Control::Cancel { task: id }).await
        {
            tracing::warn!(task = %id, error = %e, "could not relay a cancel; the runner reads the stored flag within about a second");
        }
        let task = match outcome {
            CancelOutcome::Cancelled => end_task(bus, id, Ending::Stored(Box::new(task))).await?,
            CancelOutcome::Requested => {
                let event = TaskEvent::CancelRequested {
                    task_id: id,
                    status: task.status,
                    reason: task.reason.clone(),
                };
                bus.publish(&id.to_string(), event).await?;
                task
            }
        };
        Ok((task, outcome))
    }

    /// Ends a task no runner holds (an MCP session's task whose phone was let go) and
    /// wakes the scheduler: the phone it held may be what a queued task waits for.
    pub async fn end(&self, id: TaskId, ending: Ending) -> Result<Task, StoreError> {
        let ended = end_task(&self.bus, id, ending).await;
        self.wake.notify_one();
        ended
    }
}
