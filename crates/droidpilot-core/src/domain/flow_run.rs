//! Flow runs: a Maestro workspace run across the pool as `maestro test` would run it,
//! one ordinary `flow` task per flow (and per retry). `FlowRun` is what the store keeps
//! and the API returns: the run's options, its status and one `FlowResult` per selected
//! flow (status, phone, attempts, the failing step and its screenshot, duration).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{TaskId, TaskStatus};

/// A flow run's id: a UUIDv7, so ids sort by creation time (the list cursor relies on it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(transparent)]
#[schema(value_type = String, format = Uuid)]
pub struct FlowRunId(pub Uuid);

impl FlowRunId {
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for FlowRunId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for FlowRunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for FlowRunId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowRunStatus {
    /// Its flows are running (or waiting for phones).
    Running,
    /// Every flow passed.
    Passed,
    /// At least one flow failed (after its retries) or was skipped.
    Failed,
    /// Cancelled before every flow ran.
    Cancelled,
    /// The server stopped while it ran.
    Interrupted,
}

impl FlowRunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowRunStatus::Running => "running",
            FlowRunStatus::Passed => "passed",
            FlowRunStatus::Failed => "failed",
            FlowRunStatus::Cancelled => "cancelled",
            FlowRunStatus::Interrupted => "interrupted",
        }
    }

    pub fn is_terminal(self) -> bool {
        self != FlowRunStatus::Running
    }
}

/// Where one flow of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowStatus {
    /// Not started yet.
    Pending,
    /// A task runs it now.
    Running,
    Passed,
    /// Its last attempt failed.
    Failed,
    /// Not run: an earlier flow of `flowsOrder` failed with `continueOnFailure: false`.
    Skipped,
    /// The run was cancelled before it passed or failed.
    Cancelled,
}

impl FlowStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowStatus::Pending => "pending",
            FlowStatus::Running => "running",
            FlowStatus::Passed => "passed",
            FlowStatus::Failed => "failed",
            FlowStatus::Skipped => "skipped",
            FlowStatus::Cancelled => "cancelled",
        }
    }

    /// Passed, failed, skipped or cancelled: nothing more will happen to it.
    pub fn is_done(self) -> bool {
        !matches!(self, FlowStatus::Pending | FlowStatus::Running)
    }
}

/// One try at a flow: the task that ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FlowAttempt {
    pub task_id: TaskId,
    /// The phone it ran on.
    pub device: Option<String>,
    pub status: TaskStatus,
    /// The task's reason (a failure names the file, line and command).
    pub reason: Option<String>,
    /// From the task's start to its end.
    pub duration_ms: u64,
}

/// Why a flow failed: its last attempt's reason and the step it failed at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FlowFailure {
    /// The failing command with its file and line, and what was wrong.
    pub message: String,
    /// The task step the flow failed at (its last step).
    pub step: Option<u32>,
    /// That step's screenshot: `/v1/tasks/{id}/steps/{n}/screenshot`.
    pub screenshot: Option<String>,
}

/// One selected flow of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FlowResult {
    /// The flow file's path in the workspace.
    pub path: String,
    /// Its `name`, else the file name without extension (what `flowsOrder` names).
    pub name: String,
    /// Its `tags`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// In config.yaml's `flowsOrder`: run first, one after the other.
    #[serde(default)]
    pub ordered: bool,
    pub status: FlowStatus,
    /// The phone of its last attempt.
    pub device: Option<String>,
    /// Every try, oldest first (more than one when retried).
    #[serde(default)]
    pub attempts: Vec<FlowAttempt>,
    /// Why it failed (skipped and cancelled flows say why too).
    pub failure: Option<FlowFailure>,
    /// Time over all its attempts.
    pub duration_ms: Option<u64>,
}

impl FlowResult {
    /// A selected flow not started yet.
    pub fn pending(path: &str, name: &str, tags: Vec<String>, ordered: bool) -> Self {
        Self {
            path: path.to_string(),
            name: name.to_string(),
            tags,
            ordered,
            status: FlowStatus::Pending,
            device: None,
            attempts: Vec::new(),
            failure: None,
            duration_ms: None,
        }
    }
}

/// A run of a workspace's flows over the pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FlowRun {
    pub id: FlowRunId,
    pub status: FlowRunStatus,
    /// Why it ended as it did, in a line.
    pub reason: Option<String>,
    /// How many flows run at once, each on its own phone.
    pub shards: u32,
    /// The phones asked for (`devices`), one shard each; empty: any free phones.
    #[serde(default)]
    pub devices: Vec<String>,
    /// How many times a failed flow is run again.
    pub retries: u32,
    /// Tags given with the request (config.yaml's are added).
    #[serde(default)]
    pub include_tags: Vec<String>,
    #[serde(default)]
    pub exclude_tags: Vec<String>,
    /// The names of the `env` values given (the values stay with the flows' tasks).
    #[serde(default)]
    pub env: Vec<String>,
    /// config.yaml's `executionOrder.continueOnFailure`.
    pub continue_on_failure: bool,
    /// The stored workspace and version it ran; absent when the files came with the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<super::WorkspaceRef>,
    /// Every selected flow, `flowsOrder` first, then by path.
    pub flows: Vec<FlowResult>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// From creation to the end.
    pub duration_ms: Option<u64>,
}

impl FlowRun {
    /// How many flows are in `status`.
    pub fn count(&self, status: FlowStatus) -> usize {
        self.flows.iter().filter(|f| f.status == status).count()
    }
}

/// A page of flow runs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FlowRunPage {
    pub runs: Vec<FlowRun>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}
