//! `/v1/scripts`: store, list, version, record and run scripts. Thin handlers: the
//! document is checked by `script::Script`, recording is `script::record`, a run is an
//! ordinary task with agent kind `script` (submitted like `POST /v1/tasks`).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path};
use super::state::AppState;
use super::tasks::PageParams;
use crate::domain::{Task, TaskId};
use crate::script::{Script, ScriptId, ScriptPage, ScriptRecord, ScriptSource};
use crate::service;
use crate::service::scripts::RunScript;

/// Record a finished task's successful steps as a script.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromTask {
    #[schema(value_type = String, format = Uuid)]
    pub from_task: TaskId,
    /// The script's name (default: the task's instruction).
    pub name: Option<String>,
}

/// The body of `POST /v1/scripts`, for the OpenAPI document only (the handler reads a
/// `Value` to tell the two apart by `from_task` and name the field that is wrong).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum CreateScriptBody {
    Script(Script),
    FromTask(FromTask),
}

/// Store a script: a script document, or `{"from_task": ID}` to record one from a
/// finished task (coordinates become selectors, `expect` comes from the next screen).
#[utoipa::path(
    post, path = "/v1/scripts", tag = "scripts",
    request_body(content = CreateScriptBody, description = "A Script document, or FromTask"),
    responses(
        (status = 201, description = "Stored as version 1", body = ScriptRecord),
        (status = 404, description = "Unknown task", body = ErrorResponse),
        (status = 409, description = "The task has not finished", body = ErrorResponse),
        (status = 422, description = "Invalid script (the message names the field), a custom action the server does not define, or nothing to record", body = ErrorResponse),
    )
)]
pub async fn create_script(
    State(s): State<AppState>,
    Json(body): Json<Value>,
) -> Result<(StatusCode, HeaderMap, Json<ScriptRecord>), ApiError> {
    let (script, source) = if body.get("from_task").is_some() {
        let req: FromTask =
            serde_json::from_value(body).map_err(|e| invalid_body(e.to_string()))?;
        (
            record(&s, &req).await?,
            ScriptSource::Task {
                task_id: req.from_task,
            },
        )
    } else {
        (Script::from_json(&body)?, ScriptSource::Uploaded)
    };
    service::scripts::check_custom(&s, &script)?;
    let rec = s.store.create_script(&script, source).await?;
    Ok((StatusCode::CREATED, location(&rec), Json(rec)))
}

async fn record(s: &AppState, req: &FromTask) -> Result<Script, ApiError> {
    let task = s.store.get_task(req.from_task).await?;
    if !task.status.is_terminal() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "task_not_finished",
            format!(
                "task {} is {}; a script is recorded from a finished task",
                task.id, task.status
            ),
            "Wait for task.finished (GET /v1/tasks/{id}/events), then record it.",
        ));
    }
    let steps = s.store.steps(task.id).await?;
    let mut script =
        crate::script::record::from_steps(&task.spec.instruction, &steps).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "nothing_to_record",
                format!("task {}: {e}", task.id),
                "Record a task that ran device actions successfully (taps, typing, launches).",
            )
        })?;
    if let Some(n) = req.name.as_ref().filter(|n| !n.trim().is_empty()) {
        script.name = n.clone();
    }
    Ok(script)
}

fn invalid_body(message: String) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_script",
        message,
        "Send a script document ({\"name\", \"goal\", \"steps\"}) or {\"from_task\": ID}; see docs/scripts.md \"The script document\".",
    )
}

fn location(rec: &ScriptRecord) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/scripts/{}", rec.id)) {
        h.insert(header::LOCATION, v);
    }
    h
}

/// The latest version of each script, newest first, one page at a time.
#[utoipa::path(
    get, path = "/v1/scripts", tag = "scripts", params(PageParams),
    responses((status = 200, body = ScriptPage), (status = 400, description = "Bad parameter or cursor", body = ErrorResponse))
)]
pub async fn list_scripts(
    State(s): State<AppState>,
    Query(p): Query<PageParams>,
) -> Result<Json<ScriptPage>, ApiError> {
    let limit = super::tasks::page_limit(p.limit)?;
    Ok(Json(
        s.store.list_scripts(p.cursor.as_deref(), limit).await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct VersionParam {
    /// A version (default: the latest).
    #[param(minimum = 1)]
    version: Option<u32>,
}

/// One script: the latest version, or `?version=N`.
#[utoipa::path(
    get, path = "/v1/scripts/{id}", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)"), VersionParam),
    responses((status = 200, body = ScriptRecord), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse))
)]
pub async fn get_script(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
    Query(p): Query<VersionParam>,
) -> Result<Json<ScriptRecord>, ApiError> {
    Ok(Json(s.store.script(id, p.version).await?))
}

/// Store an edited script as its next version (the earlier ones are kept).
#[utoipa::path(
    put, path = "/v1/scripts/{id}", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)")),
    request_body = Script,
    responses((status = 200, description = "The new version", body = ScriptRecord), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse))
)]
pub async fn update_script(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
    Json(body): Json<Value>,
) -> Result<Json<ScriptRecord>, ApiError> {
    let script = Script::from_json(&body)?;
    service::scripts::check_custom(&s, &script)?;
    Ok(Json(
        s.store
            .add_script_version(id, &script, ScriptSource::Uploaded)
            .await?,
    ))
}

/// Delete a script with all its versions.
#[utoipa::path(
    delete, path = "/v1/scripts/{id}", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)")),
    responses((status = 204, description = "Deleted"), (status = 404, body = ErrorResponse))
)]
pub async fn delete_script(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
) -> Result<StatusCode, ApiError> {
    s.store.delete_script(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every version of a script, oldest first (healed versions say where they came from).
#[utoipa::path(
    get, path = "/v1/scripts/{id}/versions", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)")),
    responses((status = 200, body = Vec<ScriptRecord>), (status = 404, body = ErrorResponse))
)]
pub async fn script_versions(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
) -> Result<Json<Vec<ScriptRecord>>, ApiError> {
    Ok(Json(s.store.script_versions(id).await?))
}

/// Run a script on a phone: 201 with the task (watch it like any task).
#[utoipa::path(
    post, path = "/v1/scripts/{id}/run", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)")),
    request_body = RunScript,
    responses(
        (status = 201, description = "Queued", body = Task),
        (status = 404, body = ErrorResponse),
        (status = 422, description = "Unknown or missing input, an app the device lacks, a bad field", body = ErrorResponse),
    )
)]
pub async fn run_script(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
    Json(req): Json<RunScript>,
) -> Result<(StatusCode, HeaderMap, Json<Task>), ApiError> {
    let task = service::scripts::run_script(&s, id, req).await?;
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/tasks/{}", task.id)) {
        h.insert(header::LOCATION, v);
    }
    Ok((StatusCode::CREATED, h, Json(task)))
}

impl From<crate::script::maestro::MaestroError> for ApiError {
    fn from(e: crate::script::maestro::MaestroError) -> Self {
        let status = if e.code == "not_exportable" {
            StatusCode::CONFLICT
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
        ApiError::new(
            status,
            e.code,
            format!("{}: {}", e.location, e.message),
            e.hint,
        )
    }
}

/// Import a Maestro flow (YAML body): stored as a new script (source `maestro`). A
/// command that does not map is refused, naming its line.
#[utoipa::path(
    post, path = "/v1/scripts/import", tag = "scripts",
    request_body(content = String, content_type = "application/yaml", description = "A Maestro flow"),
    responses(
        (status = 201, description = "Stored as version 1", body = ScriptRecord),
        (status = 415, description = "Not YAML", body = ErrorResponse),
        (status = 422, description = "A command that does not map, or invalid YAML (the message names the line)", body = ErrorResponse),
    )
)]
pub async fn import_script(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: String,
) -> Result<(StatusCode, HeaderMap, Json<ScriptRecord>), ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if ![
        "application/yaml",
        "application/x-yaml",
        "text/yaml",
        "text/x-yaml",
    ]
    .iter()
    .any(|t| ct.starts_with(t))
    {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("expected a Maestro flow as YAML, got content-type `{ct}`"),
            "Send the flow with `Content-Type: application/yaml` (curl --data-binary @flow.yaml -H 'content-type: application/yaml').",
        ));
    }
    let script = crate::script::maestro::import(&body)?;
    let rec = s
        .store
        .create_script(&script, ScriptSource::Maestro)
        .await?;
    Ok((StatusCode::CREATED, location(&rec), Json(rec)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// `json` (default) or `maestro` (YAML).
    format: Option<ExportFormat>,
    /// A version (default: the latest).
    #[param(minimum = 1)]
    version: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    Json,
    Maestro,
}

/// A script as a file: the JSON document, or a Maestro flow (409 when a step has no
/// Maestro equivalent, naming it; a custom step is written as its primitives under a
/// comment naming the action).
#[utoipa::path(
    get, path = "/v1/scripts/{id}/export", tag = "scripts",
    params(("id" = String, Path, description = "Script id (UUID)"), ExportParams),
    responses(
        (status = 200, description = "The script document (JSON) or a Maestro flow (application/yaml)", body = Script),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "A step Maestro cannot express", body = ErrorResponse),
    )
)]
pub async fn export_script(
    State(s): State<AppState>,
    Path(id): Path<ScriptId>,
    Query(p): Query<ExportParams>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let rec = s.store.script(id, p.version).await?;
    Ok(match p.format.unwrap_or(ExportFormat::Json) {
        ExportFormat::Json => Json(rec.script).into_response(),
        ExportFormat::Maestro => {
            let yaml = service::scripts::export_maestro(&s, &rec.script)?;
            ([(header::CONTENT_TYPE, "application/yaml")], yaml).into_response()
        }
    })
}
