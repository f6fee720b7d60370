//! Stored Maestro workspaces, versioned like scripts: upload one (files as JSON or a
//! `.zip`), add versions, read a version's files, download one as a `.zip`, delete, and
//! hand a flow run the files of the version it names.
//!
//! An upload is checked as a flow-run upload is (`flow_runs::upload`: paths that stay in
//! the workspace, the same caps) and imported once: every flow file is parsed
//! (`droidpilot_maestro::parse`, a refusal naming the file and line), config.yaml is read
//! and the workspace loaded as `maestro test` loads it with no tags given (every
//! `runFlow` file found). A version that does not import is refused whole and nothing is
//! stored. What is stored is the files' text as uploaded, which is what a run of that
//! version runs, and the summary read from it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use serde::Deserialize;
use utoipa::ToSchema;

use super::error::AppError;
use super::flow_runs::{NewFlowRun, upload};
use crate::core::Core;
use crate::domain::{
    StoredWorkspace, WorkspaceFile, WorkspaceFlow, WorkspaceId, WorkspaceRef, WorkspaceSource,
    WorkspaceSummary, WorkspaceVersion,
};
use crate::store::StoreError;
use droidpilot_maestro::workspace;

/// The longest name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// `POST /v1/workspaces` as JSON.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWorkspace {
    /// What to call it (1–200 characters).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The workspace as files: path (relative to its root, `/`-separated) → text.
    pub files: BTreeMap<String, String>,
}

/// `POST /v1/workspaces/{id}/versions` as JSON.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWorkspaceVersion {
    /// A new name (default: the latest version's).
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Every file of the new version (files not given are not kept from the last one).
    pub files: BTreeMap<String, String>,
}

fn invalid(message: impl Into<String>, hint: impl Into<String>) -> AppError {
    AppError::invalid("invalid_workspace", message, hint)
}

/// The name, trimmed, or the refusal of an empty or long one.
pub fn check_name(name: &str) -> Result<String, AppError> {
    let n = name.trim();
    // Counted before trimming, as the OpenAPI `maxLength` counts.
    if n.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(AppError::invalid(
            "invalid_name",
            format!(
                "`name` has {} characters ({} without the spaces around it); it takes 1 to {MAX_NAME_CHARS}",
                name.chars().count(),
                n.chars().count()
            ),
            "Name the workspace after the app or suite it tests, e.g. \"checkout smoke\".",
        ));
    }
    Ok(n.to_string())
}

/// A flow file as Maestro tells them: `*.yaml` / `*.yml` other than config.yaml.
fn is_flow_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    matches!(ext, "yaml" | "yml") && stem != "config"
}

/// Checks and imports an upload: the version to store (id and version set by the
/// store), or the first reason it cannot be imported.
pub fn import(
    name: &str,
    files: BTreeMap<String, String>,
    source: WorkspaceSource,
) -> Result<StoredWorkspace, AppError> {
    let name = check_name(name)?;
    let files = upload::check_files(files)?;
    let mut tags = BTreeSet::new();
    for (path, text) in files.iter().filter(|(p, _)| is_flow_file(p)) {
        let flow = droidpilot_maestro::parse::parse_flow(text).map_err(|e| refusal(e, path))?;
        tags.extend(flow.header.tags);
    }
    let ws = workspace::load(&files, &workspace::Options::default()).map_err(|e| {
        let at = e.location();
        invalid(format!("{at}: {}", e.message), e.hint)
    })?;
    let flows = ws
        .sequence
        .iter()
        .chain(&ws.flows)
        .map(|p| {
            let header = &ws.parsed[p].header;
            WorkspaceFlow {
                path: p.clone(),
                name: super::flow_runs::flow_name(p, header.name.as_deref()),
                tags: header.tags.clone(),
            }
        })
        .collect();
    let config = WorkspaceSummary {
        flows,
        tags: tags.into_iter().collect(),
        globs: if ws.config.flows.is_empty() {
            vec!["*".into()]
        } else {
            ws.config.flows.clone()
        },
        include_tags: ws.config.include_tags.clone(),
        exclude_tags: ws.config.exclude_tags.clone(),
        flows_order: ws.config.flows_order.clone(),
    };
    let listed = files
        .iter()
        .map(|(p, t)| WorkspaceFile {
            path: p.clone(),
            bytes: t.len() as u64,
            flow: is_flow_file(p),
        })
        .collect();
    let info = WorkspaceVersion {
        id: WorkspaceId::new(),
        version: 1,
        name,
        source,
        created_at: chrono::Utc::now(),
        files: listed,
        config,
    };
    Ok(StoredWorkspace { info, files })
}

fn refusal(e: droidpilot_maestro::error::ParseError, path: &str) -> AppError {
    let e = e.in_file(path);
    AppError::invalid(
        "invalid_workspace",
        format!("{}: {}", e.location(), e.message),
        e.hint,
    )
}

/// Stores an upload as a new workspace (version 1).
pub async fn create(
    core: &Core,
    name: &str,
    files: BTreeMap<String, String>,
) -> Result<WorkspaceVersion, AppError> {
    let draft = import(name, files, WorkspaceSource::Uploaded)?;
    Ok(core.store.create_workspace(draft).await?)
}

/// Stores an upload as the next version of `id` (named as the latest unless `name`).
pub async fn add_version(
    core: &Core,
    id: WorkspaceId,
    name: Option<&str>,
    files: BTreeMap<String, String>,
    source: WorkspaceSource,
) -> Result<WorkspaceVersion, AppError> {
    let name = match name {
        Some(n) => n.to_string(),
        None => core
            .store
            .workspace_versions(id)
            .await?
            .pop()
            .map_or_else(|| "workspace".to_string(), |v| v.name),
    };
    let draft = import(&name, files, source)?;
    Ok(core.store.add_workspace_version(id, draft).await?)
}

/// A version's files as a `.zip` (deflated, paths as stored).
pub async fn zip(core: &Core, id: WorkspaceId, version: u32) -> Result<Vec<u8>, AppError> {
    let stored = core.store.workspace(id, Some(version)).await?;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let failed = |e: &dyn std::fmt::Display| {
        AppError::new(
            super::error::ErrorKind::Internal,
            "zip_failed",
            format!("writing the .zip failed: {e}"),
            "Try again; GET /v1/workspaces/{id}/versions/{n} has the same files as JSON.",
        )
    };
    for (path, text) in &stored.files {
        w.start_file(path.as_str(), opts).map_err(|e| failed(&e))?;
        w.write_all(text.as_bytes()).map_err(|e| failed(&e))?;
    }
    Ok(w.finish().map_err(|e| failed(&e))?.into_inner())
}

/// A flow run that names a stored workspace gets that version's files; the version it
/// ran is returned for the run's record. A run with its own files is left as it is.
pub async fn resolve(core: &Core, req: &mut NewFlowRun) -> Result<Option<WorkspaceRef>, AppError> {
    let Some(id) = req.workspace else {
        if req.version.is_some() {
            return Err(AppError::invalid(
                "invalid_flow_run",
                "`version` without `workspace`",
                "Give the stored workspace's id as `workspace` with its `version`, or leave both out and send `files`.",
            ));
        }
        return Ok(None);
    };
    if !req.files.is_empty() {
        return Err(AppError::invalid(
            "invalid_flow_run",
            "give `workspace` or `files`, not both",
            "A stored workspace runs its stored files; upload changed files as a new version (POST /v1/workspaces/{id}/versions) first.",
        ));
    }
    if req.version == Some(0) {
        return Err(AppError::invalid(
            "invalid_flow_run",
            "`version` is 0; versions start at 1",
            "Leave `version` out to run the latest.",
        ));
    }
    let stored = core
        .store
        .workspace(id, req.version)
        .await
        .map_err(|e| match e {
            StoreError::WorkspaceNotFound(_) | StoreError::WorkspaceVersionNotFound { .. } => {
                AppError::invalid(
                    "unknown_workspace",
                    e.to_string(),
                    "GET /v1/workspaces lists the stored workspaces, GET /v1/workspaces/{id}/versions a workspace's versions.",
                )
            }
            e => e.into(),
        })?;
    req.files = stored.files;
    Ok(Some(WorkspaceRef {
        id,
        version: stored.info.version,
    }))
}
