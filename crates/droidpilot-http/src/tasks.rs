//! Task endpoints. Each handler parses, calls one use case (`service::tasks`) or store
//! read, and maps the error.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path, Query};
use super::state::AppState;
use crate::domain::{NewTask, Task, TaskId, TaskStatus, TaskSummary};
use crate::service;
use crate::store::{CancelOutcome, TaskFilter};

/// Submit a task. It is validated, stored as `queued` and returned.
#[utoipa::path(
    post, path = "/v1/tasks", tag = "tasks",
    request_body = NewTask,
    responses(
        (status = 201, description = "Queued", body = Task, headers(("Location" = String, description = "The task's URL"))),
        (status = 400, description = "Malformed JSON", body = ErrorResponse),
        (status = 413, description = "Body too large", body = ErrorResponse),
        (status = 415, description = "Not JSON", body = ErrorResponse),
        (status = 422, description = "A field is missing or invalid, or the agent's model needs a key the server lacks (`missing_model_key`)", body = ErrorResponse),
    )
)]
pub async fn create_task(
    State(s): State<AppState>,
    Json(req): Json<NewTask>,
) -> Result<(StatusCode, HeaderMap, Json<Task>), ApiError> {
    let task = service::tasks::submit(&s, req).await?;
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/tasks/{}", task.id)) {
        h.insert(header::LOCATION, v);
    }
    Ok((StatusCode::CREATED, h, Json(task)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Only tasks with this status.
    status: Option<TaskStatus>,
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// `next_cursor` from the previous page.
    #[param(min_length = 1)]
    cursor: Option<String>,
}

/// A page of task summaries, newest first.
#[derive(Debug, serde::Serialize, serde::Deserialize, ToSchema)]
pub struct TaskSummaryPage {
    pub tasks: Vec<TaskSummary>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// The paging query of the lists that take nothing else (scripts, workspaces, flow
/// runs): a page size and the cursor of the previous page.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PageParams {
    /// Page size, 1–500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// `next_cursor` from the previous page.
    #[param(min_length = 1)]
    pub cursor: Option<String>,
}

impl PageParams {
    /// The cursor, an empty one refused as a bad query.
    pub(super) fn cursor(&self) -> Result<Option<&str>, ApiError> {
        match self.cursor.as_deref() {
            Some("") => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "`cursor` is empty",
                "Pass `next_cursor` from the previous page, or leave it out.",
            )),
            c => Ok(c),
        }
    }
}

/// A list's page size: 1–500, 50 when absent.
pub(super) fn page_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit {limit} is outside 1..=500"),
            "Use a limit between 1 and 500 and follow `next_cursor` for more.",
        ));
    }
    Ok(limit)
}

/// List tasks, newest first, one page at a time. Each item is a summary (the agent's
/// kind and action count, no action list, metadata or webhook URL); `GET /v1/tasks/{id}`
/// returns the whole task.
#[utoipa::path(
    get, path = "/v1/tasks", tag = "tasks", params(ListParams),
    responses((status = 200, body = TaskSummaryPage), (status = 400, description = "Bad parameter or cursor", body = ErrorResponse))
)]
pub async fn list_tasks(
    State(s): State<AppState>,
    Query(p): Query<ListParams>,
) -> Result<Json<TaskSummaryPage>, ApiError> {
    let limit = page_limit(p.limit)?;
    let page = s
        .store
        .list_tasks(TaskFilter {
            status: p.status,
            limit,
            cursor: p.cursor,
        })
        .await?;
    let default_kind = serde_json::to_value(s.config.agent.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Ok(Json(TaskSummaryPage {
        tasks: page
            .tasks
            .iter()
            .map(|t| TaskSummary::new(t, &default_kind))
            .collect(),
        next_cursor: page.next_cursor,
    }))
}

/// One task with its summary: status, steps, tokens, cost, reason.
#[utoipa::path(
    get, path = "/v1/tasks/{id}", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = Task), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse))
)]
pub async fn get_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<Task>, ApiError> {
    Ok(Json(s.store.get_task(id).await?))
}

/// Delete an ended task: its steps, events, questions and manual actions, and the
/// screenshots no other task's steps show (rows and files). A task that has not ended is
/// refused (409 `task_not_ended`): cancel it first. Needs an `admin` token.
#[utoipa::path(
    delete, path = "/v1/tasks/{id}", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The task has not ended (`task_not_ended`)", body = ErrorResponse),
    )
)]
pub async fn delete_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<axum::http::StatusCode, ApiError> {
    let gone = s.store.delete_task(id).await?;
    let files = gone.len();
    let freed = s.artifacts.remove_files(gone).await;
    tracing::info!(task = %id, files, freed, "task deleted");
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// The result of a cancel request.
#[derive(Debug, serde::Serialize, serde::Deserialize, ToSchema)]
pub struct CancelResponse {
    /// `cancelled` (done now) or `requested` (the runner stops at the next step).
    pub outcome: String,
    pub task: Task,
}

/// Cancel a task. A queued or waiting task is cancelled at once (200); a running one stops
/// at its next step boundary (202).
#[utoipa::path(
    post, path = "/v1/tasks/{id}/cancel", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses(
        (status = 200, description = "Cancelled", body = CancelResponse),
        (status = 202, description = "Cancellation requested", body = CancelResponse),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "Already finished", body = ErrorResponse),
    )
)]
pub async fn cancel_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<(StatusCode, Json<CancelResponse>), ApiError> {
    let (task, outcome) = service::tasks::cancel(&s, id).await?;
    Ok(match outcome {
        CancelOutcome::Cancelled => (
            StatusCode::OK,
            Json(CancelResponse {
                outcome: "cancelled".into(),
                task,
            }),
        ),
        CancelOutcome::Requested => (
            StatusCode::ACCEPTED,
            Json(CancelResponse {
                outcome: "requested".into(),
                task,
            }),
        ),
    })
}

/// An answer to the agent's question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The text given back to the agent (one of the offered options, or free text); not empty.
    pub answer: String,
    /// Which question; the task's open question when omitted. An id that is not the open
    /// question is refused (409, `wrong_prompt`) with the open question's id.
    pub prompt_id: Option<String>,
}

/// Answer the question a task is waiting on (`task.ask_user`).
#[utoipa::path(
    post, path = "/v1/tasks/{id}/answer", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    request_body = AnswerRequest,
    responses(
        (status = 200, description = "Recorded and delivered", body = crate::domain::Intervention),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "No open question, already answered, or `prompt_id` is not the open question (the error names the open one)", body = ErrorResponse),
        (status = 422, description = "An empty answer", body = ErrorResponse),
    )
)]
pub async fn answer_task(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    caller: Option<axum::Extension<super::scope::Caller>>,
    Json(req): Json<AnswerRequest>,
) -> Result<Json<crate::domain::Intervention>, ApiError> {
    // A named token is who answered.
    let by = super::scope::Caller::by(caller.as_deref(), None);
    let by = by.as_deref().unwrap_or("rest");
    let prompt = req.prompt_id.as_deref();
    Ok(Json(
        service::tasks::answer(&s, id, prompt, &req.answer, by).await?,
    ))
}

/// Every recorded step of a task, in order.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/steps", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = Vec<crate::domain::Step>), (status = 404, body = ErrorResponse))
)]
pub async fn list_steps(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<Vec<crate::domain::Step>>, ApiError> {
    Ok(Json(s.store.steps(id).await?))
}

/// The task's interventions, in order: questions asked and their answers, a person's
/// manual actions during a take-over, screen changes nobody in droidpilot caused.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/interventions", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = Vec<crate::domain::Intervention>), (status = 404, body = ErrorResponse))
)]
pub async fn list_interventions(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<Vec<crate::domain::Intervention>>, ApiError> {
    s.store.get_task(id).await?;
    Ok(Json(s.store.interventions(id).await?))
}

/// The screenshot a step was decided on.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/steps/{n}/screenshot", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)"), ("n" = u32, Path, description = "Step number, from 1")),
    responses((status = 200, content_type = "image/png", body = Vec<u8>), (status = 404, body = ErrorResponse))
)]
pub async fn step_screenshot(
    State(s): State<AppState>,
    Path((id, n)): Path<(TaskId, u32)>,
) -> Result<axum::response::Response, ApiError> {
    let step = s.store.step(id, n).await?;
    let none = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no_screenshot",
            format!("step {n} of task {id} has no screenshot"),
            "The screen was secure (black) or the capture failed; the step's `screen` field says which.",
        )
    };
    artifact_response(&s, step.screenshot, none).await
}

/// Debug mode: the UI hierarchy XML a step was decided on, kept when the server runs with
/// `[runner] debug_artifacts = true`.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/steps/{n}/hierarchy", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)"), ("n" = u32, Path, description = "Step number, from 1")),
    responses((status = 200, content_type = "application/xml", body = String), (status = 404, body = ErrorResponse))
)]
pub async fn step_hierarchy(
    State(s): State<AppState>,
    Path((id, n)): Path<(TaskId, u32)>,
) -> Result<axum::response::Response, ApiError> {
    let step = s.store.step(id, n).await?;
    let none = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no_hierarchy",
            format!("step {n} of task {id} kept no hierarchy"),
            "Hierarchies are kept only while the server runs with `[runner] debug_artifacts = true` (or the tree could not be read at that step).",
        )
    };
    artifact_response(&s, step.screen.and_then(|sc| sc.hierarchy), none).await
}

/// A step's stored artifact `sha` as the body, with its media type; `none` when the step
/// kept none or the artifact is gone.
async fn artifact_response(
    s: &AppState,
    sha: Option<String>,
    none: impl Fn() -> ApiError,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let sha = sha.ok_or_else(&none)?;
    let (art, bytes) = s
        .artifacts
        .get(&sha)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or_else(&none)?;
    Ok(([(header::CONTENT_TYPE, art.media_type)], bytes).into_response())
}

impl From<crate::run::trajectory::TrajectoryError> for ApiError {
    fn from(e: crate::run::trajectory::TrajectoryError) -> Self {
        use crate::run::trajectory::TrajectoryError as T;
        match e {
            T::Store(s) => s.into(),
            other => ApiError::internal(other.to_string()),
        }
    }
}

/// The whole run as JSON: the task summary and every step with its action, thinking,
/// outcome, timings and screenshot name.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/trajectory", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = crate::run::trajectory::Trajectory), (status = 404, body = ErrorResponse))
)]
pub async fn trajectory(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<crate::run::trajectory::Trajectory>, ApiError> {
    Ok(Json(
        crate::run::trajectory::Trajectory::build(s.store.as_ref(), id).await?,
    ))
}

/// The time the task has left, about: the median duration of its agent's steps so far
/// (paused time is in none) times the steps still expected (what is left of a replay's
/// or script's list; for a model agent as many again as so far, never past `max_steps`).
/// `estimate` is null once the task has ended and before its first step; `on_hold` while
/// it is paused or waits for an answer. Each `step.executed` event carries the same as `eta`.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/estimate", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = crate::domain::TaskEstimate), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse))
)]
pub async fn estimate(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<crate::domain::TaskEstimate>, ApiError> {
    let task = s.store.get_task(id).await?;
    let steps = s.store.steps(id).await?;
    Ok(Json(crate::domain::TaskEstimate::of(&task, &steps)))
}

/// Where the task's time went: per phase (screen, model, action, settle, overhead) the
/// sum, mean and max over its steps, in ms.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/metrics", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = crate::run::metrics::PhaseSummary), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse))
)]
pub async fn metrics(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<crate::run::metrics::PhaseSummary>, ApiError> {
    s.store.get_task(id).await?;
    let steps = s.store.steps(id).await?;
    Ok(Json(crate::run::metrics::PhaseSummary::of(&steps)))
}

/// The task's steps as CSV, one row per step: number, start, action, status, error, the
/// timings (ms), tokens, cost and screenshot name.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/steps.csv", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400, body = ErrorResponse), (status = 404, body = ErrorResponse))
)]
pub async fn steps_csv(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    s.store.get_task(id).await?;
    let steps = s.store.steps(id).await?;
    let disposition = format!("attachment; filename=\"{id}-steps.csv\"");
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        crate::run::metrics::steps_csv(&steps),
    )
        .into_response())
}

/// The run as a `.tar.gz` holding `{id}/trajectory.json` and `{id}/screenshots/NNNN.png`
/// (what `droidpilot export` writes into a directory).
#[utoipa::path(
    get, path = "/v1/tasks/{id}/export", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, content_type = "application/gzip", body = Vec<u8>), (status = 404, body = ErrorResponse))
)]
pub async fn export(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let bytes = crate::run::trajectory::export_archive(s.store.as_ref(), &s.artifacts, id).await?;
    let disposition = format!("attachment; filename=\"{id}.tar.gz\"");
    Ok((
        [
            (header::CONTENT_TYPE, "application/gzip".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}

/// The result in the coordinator's terms: `task_id` (yours, when you gave one), `status`
/// (success, failed, timeout, error), `steps_taken`, `actions_executed` (the list of the
/// actions), `actions_executed_count`, `completion_reason`, `reason` (a code).
#[utoipa::path(
    get, path = "/v1/tasks/{id}/result", tag = "tasks", params(("id" = String, Path, description = "Task id (UUID)")),
    responses((status = 200, body = crate::run::result::CoordinatorResult), (status = 404, body = ErrorResponse),
              (status = 409, description = "The task has not finished", body = ErrorResponse))
)]
pub async fn result(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
) -> Result<Json<crate::run::result::CoordinatorResult>, ApiError> {
    let task = s.store.get_task(id).await?;
    let steps = s.store.steps(id).await?;
    crate::run::result::CoordinatorResult::new(&task, &steps)
        .map(Json)
        .map_err(|nf| {
            ApiError::new(
                StatusCode::CONFLICT,
                "task_not_finished",
                format!("task {} is still {}", nf.id, nf.status),
                "Wait for `task.finished` (GET /v1/tasks/{id}/events), then ask again.",
            )
        })
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct GifParams {
    /// Frame width in pixels, 64–1080 (default 360; never wider than the screenshots).
    #[param(minimum = 64, maximum = 1080)]
    width: Option<u32>,
    /// How long each frame shows, 100–10000 ms (default 800).
    #[param(minimum = 100, maximum = 10000)]
    frame_ms: Option<u32>,
}

/// The run as an animated GIF: one frame per step screenshot (at most 120, evenly
/// spread), scaled to `width`, with each step's tap point or swipe drawn in red.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/replay.gif", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)"), GifParams),
    responses(
        (status = 200, content_type = "image/gif", body = Vec<u8>),
        (status = 400, description = "A bad `width` or `frame_ms`", body = ErrorResponse),
        (status = 404, description = "No such task, or no step has a screenshot (`no_screenshots`)", body = ErrorResponse),
    )
)]
pub async fn replay_gif(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    Query(p): Query<GifParams>,
) -> Result<axum::response::Response, ApiError> {
    use super::replay_gif::{StepFrame, render};
    use axum::response::IntoResponse;
    let width = p.width.unwrap_or(360);
    let frame_ms = p.frame_ms.unwrap_or(800);
    if !(64..=1080).contains(&width) || !(100..=10_000).contains(&frame_ms) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("width {width} or frame_ms {frame_ms} is out of range"),
            "Use 64 ≤ width ≤ 1080 and 100 ≤ frame_ms ≤ 10000.",
        ));
    }
    let steps = s.store.steps(id).await?;
    let frames: Vec<StepFrame> = step_frames(&s, &steps)
        .await
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    if frames.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_screenshots",
            format!("task {id} has no step screenshots to animate"),
            "Screenshots are kept for steps whose screen was not secure; wait for the task's first step.",
        ));
    }
    let gif = tokio::task::spawn_blocking(move || render(frames, width, frame_ms))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(ApiError::internal)?;
    let disposition = format!("inline; filename=\"{id}.gif\"");
    Ok((
        [
            (header::CONTENT_TYPE, "image/gif".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        gif,
    )
        .into_response())
}

/// The steps the replay shows (`replay_gif::pick`) that have a stored PNG screenshot,
/// each with its frame to draw.
async fn step_frames<'a>(
    s: &AppState,
    steps: &'a [crate::domain::Step],
) -> Vec<(&'a crate::domain::Step, super::replay_gif::StepFrame)> {
    let mut frames = Vec::new();
    for step in super::replay_gif::pick(steps) {
        let Some(sha) = &step.screenshot else {
            continue;
        };
        if let Ok(Some((art, png))) = s.artifacts.get(sha).await
            && art.media_type == "image/png"
        {
            let detail = step.outcome.detail.clone();
            frames.push((step, super::replay_gif::StepFrame { png, detail }));
        }
    }
    frames
}

/// What `replay.mp4` is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VideoSource {
    /// The step screenshots, with the taps and swipes drawn.
    Steps,
    /// The phone's screen recording (`record_video`), as recorded: no marks drawn.
    Recording,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct Mp4Params {
    /// Video width in pixels of the step video, 64–1080 (default 360; never wider than
    /// the screenshots; rounded down to even). The recording is served at its own size.
    #[param(minimum = 64, maximum = 1080)]
    width: Option<u32>,
    /// `steps` or `recording`; by default the recording when the task has one and no
    /// `width` is given, else the steps.
    #[param(value_type = Option<VideoSource>)]
    source: Option<VideoSource>,
}

/// The run as an H.264 MP4. `source=recording`: the phone's own screen recording of a
/// `record_video` task (its segments joined into one file), at the phone's frame times,
/// with no tap marks. `source=steps`: the GIF's frames (step screenshots, at most 120,
/// with each tap or swipe drawn in red), each held for the real time until the next step
/// (0.2–5 s; the last 2 s). Answers single `Range` requests (206), so a `<video>` can seek.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/replay.mp4", tag = "tasks",
    params(("id" = String, Path, description = "Task id (UUID)"), Mp4Params),
    responses(
        (status = 200, content_type = "video/mp4", body = Vec<u8>),
        (status = 206, description = "The byte range asked for", content_type = "video/mp4", body = Vec<u8>),
        (status = 400, description = "A bad `width` or `source`, or `width` with `source=recording`", body = ErrorResponse),
        (status = 404, description = "No such task", body = ErrorResponse),
        (status = 409, description = "No step has a screenshot yet (`no_screenshots`), or no recording is stored (`no_recording`), or its segments cannot be joined (`recording_segments_differ`)", body = ErrorResponse),
        (status = 416, description = "The range starts past the video's end"),
    )
)]
pub async fn replay_mp4(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    Query(p): Query<Mp4Params>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let width = p.width.unwrap_or(360);
    if !(64..=1080).contains(&width) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("width {width} is out of range"),
            "Use 64 ≤ width ≤ 1080.",
        ));
    }
    let task = s.store.get_task(id).await?;
    let name = format!("{id}.mp4");
    let source = p
        .source
        .unwrap_or(if task.recording.is_empty() || p.width.is_some() {
            VideoSource::Steps
        } else {
            VideoSource::Recording
        });
    if source == VideoSource::Recording {
        if p.width.is_some() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "`width` applies to the step video, not the recording",
                "Leave out `width` with `source=recording` (the recording is served at the phone's size), or ask for `source=steps`.",
            ));
        }
        let video = super::replay_mp4::recording(&s, &task).await?;
        return Ok(super::replay_mp4::respond(video, &headers, &name));
    }
    if let Some(video) = s.replays.get(id, width) {
        return Ok(super::replay_mp4::respond(video, &headers, &name));
    }
    let video = bytes::Bytes::from(render_mp4(&s, id, width).await?);
    if task.status.is_terminal() {
        s.replays.put(id, width, video.clone());
    }
    Ok(super::replay_mp4::respond(video, &headers, &name))
}

/// Encodes a task's replay video from its step screenshots.
async fn render_mp4(s: &AppState, id: TaskId, width: u32) -> Result<Vec<u8>, ApiError> {
    let steps = s.store.steps(id).await?;
    let picked = step_frames(s, &steps).await;
    if picked.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "no_screenshots",
            format!("task {id} has no step screenshots to record yet"),
            "Screenshots are kept for steps whose screen was not secure; wait for the task's first step.",
        ));
    }
    let (shown, frames): (Vec<_>, Vec<_>) = picked.into_iter().unzip();
    let ms = super::replay_mp4::durations(&shown);
    let frames: Vec<_> = frames.into_iter().zip(ms).collect();
    tokio::task::spawn_blocking(move || super::replay_mp4::render(frames, width))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(ApiError::internal)
}
