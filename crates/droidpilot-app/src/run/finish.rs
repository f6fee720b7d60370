//! Ending a task, written once: the final status stored (unless the store already ended
//! it in its own transaction: a cancel, a recovery) and `task.finished` published, with
//! `TaskFinished::of` the task as stored. The runner, the queue (a cancel, a session task
//! let go), the scheduler (a queue timeout, an agent that cannot be built) and recovery
//! (a restart, a dead instance) all end tasks here.

use super::events::EventBus;
use crate::domain::{Task, TaskEvent, TaskId, TaskStatus};
use crate::store::StoreError;

/// How a task ends.
#[derive(Debug)]
pub enum Ending {
    /// End it now: its status, the reason a person reads, the agent's answer if any.
    Now {
        status: TaskStatus,
        reason: String,
        answer: Option<String>,
    },
    /// The store already ended it (a cancel, a recovery): announce it as stored.
    Stored(Box<Task>),
}

impl Ending {
    /// Ends it now with `status` and `reason`, no answer.
    pub fn now(status: TaskStatus, reason: impl Into<String>) -> Self {
        Self::Now {
            status,
            reason: reason.into(),
            answer: None,
        }
    }
}

/// Ends task `id` and publishes `task.finished` (through the step commits' path: under
/// load it shares their transaction). A task that has already ended keeps its first
/// ending, announced by whoever ended it; it is returned as stored, and nothing is
/// published twice.
pub async fn end_task(bus: &EventBus, id: TaskId, ending: Ending) -> Result<Task, StoreError> {
    let task = match ending {
        Ending::Now {
            status,
            reason,
            answer,
        } => {
            let store = bus.store();
            match (store.finish_task(id, status, Some(&reason), answer.as_deref())).await {
                Ok(t) => t,
                Err(StoreError::WrongStatus { .. }) => return store.get_task(id).await,
                Err(e) => return Err(e),
            }
        }
        Ending::Stored(task) => *task,
    };
    let finished = vec![TaskEvent::finished(&task)];
    bus.commit(&id.to_string(), None, &[], finished).await?;
    Ok(task)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::domain::{NewTask, TaskSpec};
    use crate::store::SqliteStore;

    async fn queued(bus: &EventBus) -> Task {
        let spec = TaskSpec::parse(NewTask {
            instruction: Some("open Settings".into()),
            ..Default::default()
        })
        .unwrap();
        bus.store().create_task(spec).await.unwrap()
    }

    async fn finished_events(bus: &EventBus, id: TaskId) -> usize {
        let events = bus.store().events_since(&id.to_string(), 0, 100).await;
        let events = events.unwrap();
        events
            .iter()
            .filter(|e| e.kind() == "task.finished")
            .count()
    }

    #[tokio::test]
    async fn a_task_ends_once_and_is_announced_once() {
        let store = Arc::new(SqliteStore::in_memory().await.unwrap());
        let bus = EventBus::new(store, 64);
        let t = queued(&bus).await;
        bus.store().start_task(t.id, "sim-1").await.unwrap();
        let first = Ending::now(TaskStatus::Failed, "cannot build the agent");
        let ended = end_task(&bus, t.id, first).await.unwrap();
        assert_eq!(ended.status, TaskStatus::Failed);
        // A second ending (a session let go of a task already ended) keeps the first.
        let second = Ending::now(TaskStatus::Succeeded, "the MCP session ended");
        let kept = end_task(&bus, t.id, second).await.unwrap();
        assert_eq!(kept.status, TaskStatus::Failed);
        assert_eq!(kept.reason.as_deref(), Some("cannot build the agent"));
        assert_eq!(finished_events(&bus, t.id).await, 1);
    }

    #[tokio::test]
    async fn an_ending_the_store_made_is_announced_as_stored() {
        let store = Arc::new(SqliteStore::in_memory().await.unwrap());
        let bus = EventBus::new(store, 64);
        let t = queued(&bus).await;
        let (cancelled, _) = bus.store().cancel_task(t.id).await.unwrap();
        let ended = end_task(&bus, t.id, Ending::Stored(Box::new(cancelled)))
            .await
            .unwrap();
        assert_eq!(ended.status, TaskStatus::Cancelled);
        assert_eq!(finished_events(&bus, t.id).await, 1);
    }
}
