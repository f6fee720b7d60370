//! `/v1/workspaces`: stored Maestro workspaces, versioned like scripts
//! (`service::workspaces`). An upload is JSON (`name`, `files`) or a `.zip` body
//! (`Content-Type: application/zip`, the name in the query), read as `POST /v1/flow-runs`
//! reads one (`flow_runs::upload`); a version that does not import is refused naming the
//! file and line, and nothing is stored. A flow run names one with `workspace`.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path, Query};
use super::state::AppState;
use super::tasks::PageParams;
use crate::domain::{
    WorkspaceContents, WorkspaceId, WorkspacePage, WorkspaceSource, WorkspaceVersion,
};
use crate::service;
use crate::service::workspaces::{NewWorkspace, NewWorkspaceVersion};

/// The name of a `.zip` upload (a JSON body carries it as a field).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ZipName {
    /// The workspace's name (1–200 characters); with a `.zip` body only. Required for a
    /// new workspace; a new version keeps the latest name without it.
    #[param(min_length = 1, max_length = 200)]
    name: Option<String>,
}

/// An upload: the name (if given) and the files.
struct Upload {
    name: Option<String>,
    files: BTreeMap<String, String>,
}

/// Reads a JSON or `.zip` upload; `json` turns the JSON body into the same.
async fn read_upload<T: serde::de::DeserializeOwned>(
    s: &AppState,
    query: ZipName,
    req: Request,
    json: impl FnOnce(T) -> Upload,
) -> Result<Upload, ApiError> {
    let kind = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if matches!(
        kind.as_str(),
        "application/zip" | "application/x-zip-compressed"
    ) {
        let bytes = Bytes::from_request(req, s).await.map_err(|r| {
            ApiError::new(
                r.status(),
                "payload_too_large",
                r.body_text(),
                "Send a smaller .zip, or raise server.body_limit_bytes in the configuration.",
            )
        })?;
        let files = service::flow_runs::upload::files_from_zip(&bytes)?;
        return Ok(Upload {
            name: query.name,
            files,
        });
    }
    if query.name.is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            "`name` in the query: with a JSON body it is a field",
            "Put `name` in the JSON body; the query carries it only for a .zip upload.",
        ));
    }
    let Json(body) = Json::<T>::from_request(req, s).await?;
    Ok(json(body))
}

fn location(v: &WorkspaceVersion) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Ok(l) = HeaderValue::from_str(&format!("/v1/workspaces/{}/versions/{}", v.id, v.version))
    {
        h.insert(header::LOCATION, l);
    }
    h
}

/// Store a workspace as version 1: `{"name", "files": {path: text}}`, or a `.zip` of its
/// folder with `?name=`. Every flow file is parsed and config.yaml read; a workspace that
/// does not import is refused naming the file and line, and nothing is stored.
#[utoipa::path(
    post, path = "/v1/workspaces", tag = "workspaces", params(ZipName),
    request_body(content(
        (NewWorkspace = "application/json"),
        (Vec<u8> = "application/zip")
    ), description = "The workspace as files (JSON), or a .zip of its folder with the name in the query"),
    responses(
        (status = 201, description = "Stored as version 1", body = WorkspaceVersion),
        (status = 400, description = "A bad query parameter, or `name` in the query with a JSON body", body = ErrorResponse),
        (status = 413, description = "The body is larger than server.body_limit_bytes", body = ErrorResponse),
        (status = 415, description = "Neither `application/json` nor `application/zip`", body = ErrorResponse),
        (status = 422, description = "A flow or config.yaml refused (the message names the file and line), a path outside the workspace, a missing name", body = ErrorResponse),
    )
)]
pub async fn create_workspace(
    State(s): State<AppState>,
    Query(q): Query<ZipName>,
    req: Request,
) -> Result<(StatusCode, HeaderMap, Json<WorkspaceVersion>), ApiError> {
    let up = read_upload(&s, q, req, |b: NewWorkspace| Upload {
        name: Some(b.name),
        files: b.files,
    })
    .await?;
    let Some(name) = up.name else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_name",
            "a new workspace needs a `name`",
            "Add `?name=…` to a .zip upload.",
        ));
    };
    let v = service::workspaces::create(&s.core, &name, up.files).await?;
    Ok((StatusCode::CREATED, location(&v), Json(v)))
}

/// The latest version of each workspace, newest first, one page at a time.
#[utoipa::path(
    get, path = "/v1/workspaces", tag = "workspaces", params(PageParams),
    responses((status = 200, body = WorkspacePage), (status = 400, description = "Bad parameter or cursor", body = ErrorResponse))
)]
pub async fn list_workspaces(
    State(s): State<AppState>,
    Query(p): Query<PageParams>,
) -> Result<Json<WorkspacePage>, ApiError> {
    let limit = super::tasks::page_limit(p.limit)?;
    Ok(Json(s.store.list_workspaces(p.cursor()?, limit).await?))
}

/// A workspace's latest version: its files (paths and sizes) and what config.yaml
/// selects (flows in run order with their tags, every tag, the globs).
#[utoipa::path(
    get, path = "/v1/workspaces/{id}", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)")),
    responses((status = 200, body = WorkspaceVersion), (status = 404, body = ErrorResponse))
)]
pub async fn get_workspace(
    State(s): State<AppState>,
    Path(id): Path<WorkspaceId>,
) -> Result<Json<WorkspaceVersion>, ApiError> {
    Ok(Json(s.store.workspace(id, None).await?.info))
}

/// Delete a workspace with all its versions (flow runs that ran it keep their results).
#[utoipa::path(
    delete, path = "/v1/workspaces/{id}", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorResponse))
)]
pub async fn delete_workspace(
    State(s): State<AppState>,
    Path(id): Path<WorkspaceId>,
) -> Result<StatusCode, ApiError> {
    s.store.delete_workspace(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every version of a workspace, oldest first (healed versions say which run wrote them).
#[utoipa::path(
    get, path = "/v1/workspaces/{id}/versions", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)")),
    responses((status = 200, body = Vec<WorkspaceVersion>), (status = 404, body = ErrorResponse))
)]
pub async fn workspace_versions(
    State(s): State<AppState>,
    Path(id): Path<WorkspaceId>,
) -> Result<Json<Vec<WorkspaceVersion>>, ApiError> {
    Ok(Json(s.store.workspace_versions(id).await?))
}

/// Store a new version (every file of it, as JSON or a `.zip`); the earlier versions are
/// kept. Refused whole, naming the file and line, when it does not import.
#[utoipa::path(
    post, path = "/v1/workspaces/{id}/versions", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)"), ZipName),
    request_body(content(
        (NewWorkspaceVersion = "application/json"),
        (Vec<u8> = "application/zip")
    ), description = "The version's files (JSON), or a .zip of the folder"),
    responses(
        (status = 201, description = "The new version", body = WorkspaceVersion),
        (status = 400, description = "A bad query parameter", body = ErrorResponse),
        (status = 404, body = ErrorResponse),
        (status = 413, description = "The body is larger than server.body_limit_bytes", body = ErrorResponse),
        (status = 415, description = "Neither `application/json` nor `application/zip`", body = ErrorResponse),
        (status = 422, description = "A flow or config.yaml refused (the message names the file and line)", body = ErrorResponse),
    )
)]
pub async fn add_workspace_version(
    State(s): State<AppState>,
    Path(id): Path<WorkspaceId>,
    Query(q): Query<ZipName>,
    req: Request,
) -> Result<(StatusCode, HeaderMap, Json<WorkspaceVersion>), ApiError> {
    let up = read_upload(&s, q, req, |b: NewWorkspaceVersion| Upload {
        name: b.name,
        files: b.files,
    })
    .await?;
    let v = service::workspaces::add_version(
        &s.core,
        id,
        up.name.as_deref(),
        up.files,
        WorkspaceSource::Uploaded,
    )
    .await?;
    Ok((StatusCode::CREATED, location(&v), Json(v)))
}

/// One version with its files' text.
#[utoipa::path(
    get, path = "/v1/workspaces/{id}/versions/{n}", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)"), ("n" = u32, Path, minimum = 1, description = "Version, from 1")),
    responses((status = 200, body = WorkspaceContents), (status = 404, body = ErrorResponse))
)]
pub async fn workspace_version(
    State(s): State<AppState>,
    Path((id, n)): Path<(WorkspaceId, u32)>,
) -> Result<Json<WorkspaceContents>, ApiError> {
    let w = s.store.workspace(id, Some(n)).await?;
    Ok(Json(WorkspaceContents {
        info: w.info,
        contents: w.files,
    }))
}

/// One version as a `.zip` of its files (what `maestro test` takes once unzipped).
#[utoipa::path(
    get, path = "/v1/workspaces/{id}/versions/{n}/zip", tag = "workspaces",
    params(("id" = String, Path, description = "Workspace id (UUID)"), ("n" = u32, Path, minimum = 1, description = "Version, from 1")),
    responses(
        (status = 200, description = "The files, deflated", content_type = "application/zip", body = Vec<u8>),
        (status = 404, body = ErrorResponse)
    )
)]
pub async fn workspace_zip(
    State(s): State<AppState>,
    Path((id, n)): Path<(WorkspaceId, u32)>,
) -> Result<Response, ApiError> {
    let bytes = service::workspaces::zip(&s.core, id, n).await?;
    let disposition = format!("attachment; filename=\"workspace-{id}-v{n}.zip\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}
