//! Stored Maestro workspaces: a folder of flows kept on the server and versioned like
//! scripts (a new upload, or a healed flow, is a new version; the old ones are kept).
//! `WorkspaceVersion` is what the API shows of one version (its files' paths and sizes,
//! and what config.yaml selects); `StoredWorkspace` adds the files' text, which is what a
//! flow run of that version runs.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::FlowRunId;

/// A workspace's id: a UUIDv7, shared by its versions (the list cursor relies on the order).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(transparent)]
#[schema(value_type = String, format = Uuid)]
pub struct WorkspaceId(pub Uuid);

impl WorkspaceId {
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for WorkspaceId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for WorkspaceId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

/// Where a version came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkspaceSource {
    /// Uploaded (`POST /v1/workspaces`, `POST /v1/workspaces/{id}/versions`).
    Uploaded,
    /// Written by a flow run that healed selectors (`heal`).
    Healed {
        #[schema(value_type = String, format = Uuid)]
        flow_run: FlowRunId,
    },
}

/// One file of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceFile {
    /// Relative to the workspace's root, `/`-separated.
    pub path: String,
    /// Its size in bytes (UTF-8).
    pub bytes: u64,
    /// A flow file (`*.yaml` / `*.yml` other than config.yaml), parsed at upload.
    pub flow: bool,
}

/// A flow `maestro test` would run, with what the flow's header says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceFlow {
    pub path: String,
    /// The header's `name`, else the file name without its extension.
    pub name: String,
    pub tags: Vec<String>,
}

/// What config.yaml (or its absence) selects, read at upload with no tags given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceSummary {
    /// The flows a run with no tags runs: `flowsOrder` first, then by path.
    pub flows: Vec<WorkspaceFlow>,
    /// Every tag some flow file has, sorted.
    pub tags: Vec<String>,
    /// config.yaml's `flows` globs (`*` when it gives none).
    pub globs: Vec<String>,
    /// config.yaml's `includeTags` / `excludeTags`.
    pub include_tags: Vec<String>,
    pub exclude_tags: Vec<String>,
    /// config.yaml's `executionOrder.flowsOrder`.
    pub flows_order: Vec<String>,
}

/// One version of a workspace, without the files' text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceVersion {
    pub id: WorkspaceId,
    pub version: u32,
    pub name: String,
    pub source: WorkspaceSource,
    pub created_at: DateTime<Utc>,
    /// Every file, by path.
    pub files: Vec<WorkspaceFile>,
    pub config: WorkspaceSummary,
}

/// One version with its files' text: what the store keeps and a flow run runs.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWorkspace {
    pub info: WorkspaceVersion,
    /// Path → text.
    pub files: BTreeMap<String, String>,
}

/// A version with its files' text (`GET /v1/workspaces/{id}/versions/{n}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceContents {
    #[serde(flatten)]
    pub info: WorkspaceVersion,
    /// Path → text.
    pub contents: BTreeMap<String, String>,
}

/// A page of workspaces (the latest version of each), newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkspacePage {
    pub workspaces: Vec<WorkspaceVersion>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// The stored workspace a flow run ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceRef {
    pub id: WorkspaceId,
    pub version: u32,
}
