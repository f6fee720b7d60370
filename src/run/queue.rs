//! Queue operations: the service functions the task endpoints call. Each records its
//! event in the same place the runner will, so the event stream tells the whole story
//! from `task.queued` on.

use serde_json::json;

use crate::domain::{Task, TaskId, TaskSpec};
use crate::store::{CancelOutcome, Store, StoreError};

/// Persists a new task as `queued` and records `task.queued`.
pub async fn submit(store: &dyn Store, spec: TaskSpec) -> Result<Task, StoreError> {
    let task = store.create_task(spec).await?;
    store
        .append_event(
            &task.id.to_string(),
            "task.queued",
            &json!({"task_id": task.id, "priority": task.spec.priority}),
        )
        .await?;
    Ok(task)
}

/// Cancels a task: at once when it is not running, at the next step boundary when it is.
pub async fn cancel(store: &dyn Store, id: TaskId) -> Result<(Task, CancelOutcome), StoreError> {
    let (task, outcome) = store.cancel_task(id).await?;
    let kind = match outcome {
        CancelOutcome::Cancelled => "task.finished",
        CancelOutcome::Requested => "task.cancel_requested",
    };
    store
        .append_event(
            &id.to_string(),
            kind,
            &json!({"task_id": id, "status": task.status}),
        )
        .await?;
    Ok((task, outcome))
}
