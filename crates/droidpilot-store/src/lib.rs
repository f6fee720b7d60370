//! Persistence behind one `Store` trait: tasks, steps, artifacts, events, interventions,
//! scripts, stored workspaces and devices. Callers hold an `Arc<dyn Store>` from
//! `location::open`, which picks the backend from the configured location:
//! `sqlite::SqliteStore` (one file, the default) or `postgres::PostgresStore` (a server
//! several instances share). Both pass the same suite (`tests/store.rs`).

pub mod cluster;
mod commit;
mod cursor;
pub mod location;
pub mod migrate;
pub mod notify;
pub mod patient;
mod pg_text;
pub mod postgres;
mod postgres_cluster;
mod postgres_workspaces;
pub mod row;
pub mod sqlite;
mod step_row;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use droidpilot_core::domain::{
    FlowRun, FlowRunId, FlowRunPage, Intervention, Step, StoredWorkspace, Task, TaskId, TaskSpec,
    TaskStatus, WorkspaceId, WorkspacePage, WorkspaceVersion,
};
use droidpilot_core::script::{Script, ScriptId, ScriptPage, ScriptRecord, ScriptSource};

pub use commit::{EventSeqs, StepCommit};
pub use location::{StorageConfig, StoreLocation, open, redact_url};
pub use patient::PatientStore;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use step_row::StepRow;

/// The artifacts a task's stored `recording` column names (its MP4 segments); an
/// unreadable column names none.
pub(crate) fn recording_artifacts(json: Option<&str>) -> Vec<String> {
    let segments: Vec<droidpilot_core::domain::RecordingSegment> = json
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default();
    segments.into_iter().map(|s| s.sha256).collect()
}

/// A task's status as a backend read it (`None`: no such task): parsed, or the error that
/// says which. Both backends read it this way before a cancel or a delete.
pub(crate) fn stored_status(id: TaskId, status: Option<String>) -> Result<TaskStatus, StoreError> {
    status
        .ok_or(StoreError::TaskNotFound(id))?
        .parse()
        .map_err(StoreError::Corrupt)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("task {0} not found")]
    TaskNotFound(TaskId),
    #[error("task {id} is already {status}")]
    AlreadyFinished { id: TaskId, status: TaskStatus },
    #[error("task {task} has no step {n}")]
    StepNotFound { task: TaskId, n: u32 },
    #[error("no open question `{0}`")]
    InterventionNotFound(String),
    #[error("question `{0}` was already answered")]
    AlreadyAnswered(String),
    #[error("task {id} is {status}: it has not ended")]
    NotEnded { id: TaskId, status: TaskStatus },
    #[error("task {id} is {status}, not {expected}")]
    WrongStatus {
        id: TaskId,
        status: TaskStatus,
        expected: &'static str,
    },
    #[error("script {0} not found")]
    ScriptNotFound(droidpilot_core::script::ScriptId),
    #[error("script {id} has no version {version}")]
    ScriptVersionNotFound {
        id: droidpilot_core::script::ScriptId,
        version: u32,
    },
    #[error("workspace {0} not found")]
    WorkspaceNotFound(droidpilot_core::domain::WorkspaceId),
    #[error("workspace {id} has no version {version}")]
    WorkspaceVersionNotFound {
        id: droidpilot_core::domain::WorkspaceId,
        version: u32,
    },
    #[error("flow run {0} not found")]
    FlowRunNotFound(droidpilot_core::domain::FlowRunId),
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Opening a server failed: why, and what to check. `url` (password hidden) is for
    /// callers that do not already name the database.
    #[error("cannot connect: {reason}; {hint}")]
    Connect {
        url: String,
        reason: String,
        hint: &'static str,
    },
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StoreError {
    /// A file write that belongs with a store commit (an artifact beside its step) failed:
    /// reported as an I/O error of the store, which `is_transient` treats as retryable.
    pub fn io(context: impl std::fmt::Display, source: &std::io::Error) -> Self {
        StoreError::Database(sqlx::Error::Io(std::io::Error::new(
            source.kind(),
            format!("{context}: {source}"),
        )))
    }

    /// The database did not answer (connection lost or refused, pool timed out, server
    /// shutting down or starting): the same call may succeed later. Never a caller's
    /// mistake nor a constraint.
    pub fn is_transient(&self) -> bool {
        let StoreError::Database(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            // Class 08 (connection exception), 57P01..03 (admin/crash shutdown, cannot
            // connect now).
            sqlx::Error::Database(d) => d
                .code()
                .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
            _ => false,
        }
    }
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
    /// The event: `type` and `payload` on the wire.
    #[serde(flatten)]
    pub event: droidpilot_core::domain::TaskEvent,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl StoredEvent {
    /// The event's name, its `type` on the wire.
    pub fn kind(&self) -> &str {
        self.event.kind()
    }
}

/// A content-addressed file under the data directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Artifact {
    pub sha256: String,
    /// `screenshot`, `hierarchy`, …
    pub kind: String,
    pub media_type: String,
    /// Relative to the data directory.
    pub path: String,
    pub bytes: u64,
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
        event: droidpilot_core::domain::TaskEvent,
    ) -> Result<StoredEvent, StoreError>;
    /// Events of a stream with `seq > since`, oldest first, at most `limit`.
    async fn events_since(
        &self,
        stream: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// Queued tasks in run order: highest priority first, then oldest.
    async fn queued_tasks(&self, limit: u32) -> Result<Vec<Task>, StoreError>;
    /// Moves a queued task to `running` on `device`. False when it was no longer queued
    /// (cancelled meanwhile, or taken by another scheduler).
    async fn start_task(&self, id: TaskId, device: &str) -> Result<bool, StoreError>;
    /// Replaces a task's stored `agent` object: a replay action whose text went into a
    /// password field is masked once it has run.
    async fn set_task_agent(&self, id: TaskId, agent: &serde_json::Value)
    -> Result<(), StoreError>;
    /// Replaces a task's screen recording (its segments, stored as artifacts beforehand);
    /// deleting the task deletes those artifacts unless a step shows them.
    async fn set_task_recording(
        &self,
        id: TaskId,
        segments: &[droidpilot_core::domain::RecordingSegment],
    ) -> Result<(), StoreError>;
    /// Moves a task between non-terminal states (`running` ⇄ `waiting_for_user`).
    async fn set_task_status(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
    ) -> Result<Task, StoreError>;
    /// Ends a task. A task that already ended keeps its first ending (returns WrongStatus).
    async fn finish_task(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
        answer: Option<&str>,
    ) -> Result<Task, StoreError>;
    /// Commits a step and adds its tokens and cost to the task's totals, atomically. A
    /// step number already committed is left as it is (not recorded or counted twice), so
    /// a commit whose reply was lost can be retried.
    async fn append_step(&self, step: &Step) -> Result<(), StoreError>;
    /// Commits a step (when there is one), its artifact rows and its events in one
    /// transaction, the events with consecutive `seq`s. A step already committed is left
    /// as it is and nothing else is written (None), as with `append_step`: a commit whose
    /// reply was lost can be retried without recording or publishing anything twice.
    /// Without a step (or events), it is never None.
    async fn commit_step(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError>;
    async fn steps(&self, id: TaskId) -> Result<Vec<Step>, StoreError>;
    async fn step(&self, id: TaskId, n: u32) -> Result<Step, StoreError>;
    /// Records a content-addressed file; recording the same hash twice is a no-op.
    async fn put_artifact(&self, a: &Artifact) -> Result<(), StoreError>;
    async fn artifact(&self, sha256: &str) -> Result<Option<Artifact>, StoreError>;
    async fn create_intervention(&self, iv: &Intervention) -> Result<(), StoreError>;
    /// Records the answer to an open question.
    async fn answer_intervention(
        &self,
        id: &str,
        answer: &str,
        by: &str,
    ) -> Result<Intervention, StoreError>;
    async fn interventions(&self, task: TaskId) -> Result<Vec<Intervention>, StoreError>;
    /// At start-up: tasks left running (or waiting on a person) by a previous process.
    /// With `requeue`, they go back to the queue; otherwise they become `interrupted`.
    async fn recover_running(&self, requeue: bool, reason: &str)
    -> Result<Vec<TaskId>, StoreError>;
    /// Stores a new script as version 1.
    async fn create_script(
        &self,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError>;
    /// Stores the next version of a script; the earlier versions are kept.
    async fn add_script_version(
        &self,
        id: ScriptId,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError>;
    /// One version, or the latest when `version` is None.
    async fn script(&self, id: ScriptId, version: Option<u32>) -> Result<ScriptRecord, StoreError>;
    /// The latest version of each script, newest script first.
    async fn list_scripts(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<ScriptPage, StoreError>;
    /// Every version of a script, oldest first.
    async fn script_versions(&self, id: ScriptId) -> Result<Vec<ScriptRecord>, StoreError>;
    /// Deletes every version.
    async fn delete_script(&self, id: ScriptId) -> Result<(), StoreError>;
    /// Deletes an ended task with its steps, events and interventions, and the rows of
    /// the screenshots no other step shows; returns those, for the caller to remove
    /// their files. A task that has not ended is refused (`NotEnded`).
    async fn delete_task(&self, id: TaskId) -> Result<Vec<Artifact>, StoreError>;
    /// Tasks that ended before `before`, oldest first, at most `limit` (retention).
    async fn ended_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError>;
    /// Deletes at most `limit` artifact rows created before `before` (steps that showed
    /// them keep no screenshot) and returns them, for the caller to remove their files.
    async fn delete_artifacts_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<Vec<Artifact>, StoreError>;
    /// Stores a flow run, or replaces the stored one with the same id (its results as
    /// they stand).
    async fn save_flow_run(&self, run: &FlowRun) -> Result<(), StoreError>;
    async fn flow_run(&self, id: FlowRunId) -> Result<FlowRun, StoreError>;
    /// Flow runs, newest first, one page at a time.
    async fn list_flow_runs(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<FlowRunPage, StoreError>;
    /// Runs stored as `running`, oldest first (at start-up, those a stopped process left).
    async fn running_flow_runs(&self) -> Result<Vec<FlowRun>, StoreError>;
    // ---- Stored Maestro workspaces, versioned like scripts ----
    /// Stores a new workspace as version 1: the draft's id, version and time are set here.
    async fn create_workspace(
        &self,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError>;
    /// Stores the next version of a workspace (the draft's id, version and time are set
    /// here); the earlier versions are kept.
    async fn add_workspace_version(
        &self,
        id: WorkspaceId,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError>;
    /// One version with its files, or the latest when `version` is None.
    async fn workspace(
        &self,
        id: WorkspaceId,
        version: Option<u32>,
    ) -> Result<StoredWorkspace, StoreError>;
    /// Every version of a workspace (without the files' text), oldest first.
    async fn workspace_versions(
        &self,
        id: WorkspaceId,
    ) -> Result<Vec<WorkspaceVersion>, StoreError>;
    /// The latest version of each workspace, newest workspace first.
    async fn list_workspaces(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<WorkspacePage, StoreError>;
    /// Deletes every version.
    async fn delete_workspace(&self, id: WorkspaceId) -> Result<(), StoreError>;
    /// Flushes and closes (WAL checkpoint) for a clean shutdown.
    async fn close(&self);

    // ---- App knowledge (`apps`) ----
    /// The description stored for `package` at `version` (`""` when the phone gives
    /// none), None when there is none.
    async fn app_description(
        &self,
        package: &str,
        version: &str,
    ) -> Result<Option<String>, StoreError>;
    /// Stores the description `model` wrote for `package` at `version`, replacing one
    /// stored before for the same pair.
    async fn put_app_description(
        &self,
        package: &str,
        version: &str,
        description: &str,
        model: &str,
    ) -> Result<(), StoreError>;

    // ---- Several instances on one database (issue 16) ----
    /// The instance rows, cross-instance claims and farm-wide devices of a shared
    /// database; None on a store only one host uses (SQLite). A wrapper returns its inner
    /// store's.
    fn cluster(&self) -> Option<&dyn cluster::ClusterStore> {
        None
    }

    /// Notifications between the instances sharing this database (`run::relay`); None
    /// where one process is the only writer (SQLite). A wrapper returns its inner store's.
    fn notifier(&self) -> Option<notify::Notifier> {
        None
    }
}
