//! Persistence behind one `Store` trait: tasks, steps, artifacts, events, interventions,
//! scripts and devices. Callers hold an `Arc<dyn Store>`, so a PostgreSQL backend can slot
//! in beside `sqlite::SqliteStore` without touching them.

pub mod sqlite;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{Task, TaskId, TaskSpec, TaskStatus};

pub use sqlite::SqliteStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("task {0} not found")]
    TaskNotFound(TaskId),
    #[error("task {id} is already {status}")]
    AlreadyFinished { id: TaskId, status: TaskStatus },
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A page of tasks, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TaskPage {
    pub tasks: Vec<Task>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub status: Option<TaskStatus>,
    pub limit: u32,
    pub cursor: Option<String>,
}

/// One persisted event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoredEvent {
    /// A task id, or `devices` for pool events.
    pub stream: String,
    /// Monotonic per stream, starting at 1.
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// What cancelling did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The task had not started (or was waiting on a person) and is now `cancelled`.
    Cancelled,
    /// The task is running; its runner will stop at the next step boundary.
    Requested,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Answers when the database does (for `/readyz`).
    async fn ping(&self) -> Result<(), StoreError>;
    async fn create_task(&self, spec: TaskSpec) -> Result<Task, StoreError>;
    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError>;
    async fn list_tasks(&self, filter: TaskFilter) -> Result<TaskPage, StoreError>;
    /// Cancels a queued or waiting task at once, or flags a running one.
    async fn cancel_task(&self, id: TaskId) -> Result<(Task, CancelOutcome), StoreError>;
    /// Appends an event with the next `seq` of its stream, atomically.
    async fn append_event(
        &self,
        stream: &str,
        kind: &str,
        payload: &serde_json::Value,
    ) -> Result<StoredEvent, StoreError>;
    /// Events of a stream with `seq > since`, oldest first, at most `limit`.
    async fn events_since(
        &self,
        stream: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// Flushes and closes (WAL checkpoint) for a clean shutdown.
    async fn close(&self);
}
