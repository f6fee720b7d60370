//! `/v1/flow-runs`: run a Maestro workspace across the pool (`service::flow_runs`), list
//! and read runs, cancel one, its JUnit or HTML report, and its events as SSE. The
//! workspace comes as JSON (`files`: path → text, with the options) or as a `.zip` body
//! (`Content-Type: application/zip`) with the options in the query string.

use std::collections::{BTreeMap, HashSet};
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorResponse};
use super::extract::{Json, Path, Query};
use super::state::AppState;
use super::tasks::PageParams;
use crate::domain::{FlowRun, FlowRunId, FlowRunPage, TaskEvent};
use crate::run::events::{FeedItem, Filter};
use crate::service;
use crate::service::flow_runs::{NewFlowRun, ReportFormat};

/// The options of a `.zip` upload (a JSON body carries them as fields instead).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // documentation only: the handler reads the pairs itself
pub struct ZipParams {
    /// How many flows run at once (1–64; default 1). Not with `devices`.
    #[param(minimum = 1, maximum = 64)]
    shards: Option<u32>,
    /// Phones to run on, comma-separated, one shard each.
    devices: Option<String>,
    /// Runs of a failed flow again (0–5).
    #[param(minimum = 0, maximum = 5)]
    retries: Option<u32>,
    /// Tags, comma-separated.
    include_tags: Option<String>,
    exclude_tags: Option<String>,
    /// `KEY=VALUE`; repeat for more.
    env: Option<Vec<String>>,
    /// Each flow task's step budget (1–1000).
    #[param(minimum = 1, maximum = 1000)]
    max_steps: Option<u32>,
    /// Each flow task's timeout in seconds (1–86400).
    #[param(minimum = 1, maximum = 86400)]
    timeout_seconds: Option<u64>,
    /// AI in the middle with the server's model (`true`/`false`).
    recovery: Option<bool>,
    /// With `recovery`: healed flow files in each task's result.
    heal: Option<bool>,
}

fn bad_query(message: String, hint: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", message, hint)
}

/// Start a flow run: the workspace's flows (selected as `maestro test` selects them:
/// config.yaml's `flows` globs and tags, the request's tags), one `flow` task per flow,
/// over `shards` free phones or the `devices` named, `flowsOrder` first, failed flows
/// retried up to `retries` times. Everything is checked before anything runs.
#[utoipa::path(
    post, path = "/v1/flow-runs", tag = "flows", params(ZipParams),
    request_body(content(
        (NewFlowRun = "application/json"),
        (Vec<u8> = "application/zip")
    ), description = "The workspace as files (JSON), or a .zip of its folder with the options in the query"),
    responses(
        (status = 201, description = "Started; every flow pending", body = FlowRun),
        (status = 400, description = "A bad query parameter, or options in the query with a JSON body", body = ErrorResponse),
        (status = 415, description = "Neither `application/json` nor `application/zip`", body = ErrorResponse),
        (status = 422, description = "A flow or config.yaml refused (the message names the file and line), an unknown phone, a bad option", body = ErrorResponse),
    )
)]
pub async fn create_flow_run(
    State(s): State<AppState>,
    Query(pairs): Query<Vec<(String, String)>>,
    req: Request,
) -> Result<(StatusCode, HeaderMap, Json<FlowRun>), ApiError> {
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
    let body = match kind.as_str() {
        "application/zip" | "application/x-zip-compressed" => {
            let bytes = Bytes::from_request(req, &s).await.map_err(|r| {
                ApiError::new(
                    r.status(),
                    "payload_too_large",
                    r.body_text(),
                    "Send a smaller .zip, or raise server.body_limit_bytes in the configuration.",
                )
            })?;
            let mut body = zip_options(&pairs)?;
            body.files = service::flow_runs::upload::files_from_zip(&bytes)?;
            body
        }
        _ => {
            if let Some((k, _)) = pairs.first() {
                return Err(bad_query(
                    format!("`{k}` in the query: with a JSON body the options are its fields"),
                    "Put shards, devices, retries, tags and env in the JSON body; the query carries them only for a .zip upload.",
                ));
            }
            let Json(body) = Json::<NewFlowRun>::from_request(req, &s).await?;
            body
        }
    };
    let run = service::flow_runs::submit(&s.core, body).await?;
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/flow-runs/{}", run.id)) {
        h.insert(header::LOCATION, v);
    }
    Ok((StatusCode::CREATED, h, Json(run)))
}

/// The options of a `.zip` upload, from the query's pairs; an unknown one is refused by
/// name.
fn zip_options(pairs: &[(String, String)]) -> Result<NewFlowRun, ApiError> {
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    fn number<T: std::str::FromStr>(k: &str, v: &str, max: u64) -> Result<T, ApiError> {
        let n: u64 = v.parse().map_err(|_| {
            bad_query(
                format!("`{k}` is `{v}`, not a number"),
                "Give a whole number.",
            )
        })?;
        if n > max {
            return Err(bad_query(
                format!("`{k}` is {n}; at most {max}"),
                "See /docs for the range.",
            ));
        }
        v.parse()
            .map_err(|_| bad_query(format!("`{k}` is `{v}`"), "Give a whole number."))
    }
    fn flag(k: &str, v: &str) -> Result<bool, ApiError> {
        v.parse()
            .map_err(|_| bad_query(format!("`{k}` is `{v}`"), "Give true or false."))
    }
    let mut o = NewFlowRun::default();
    let mut env = BTreeMap::new();
    for (k, v) in pairs {
        match k.as_str() {
            "shards" => o.shards = Some(number(k, v, 64)?),
            "devices" => o.devices = list(v),
            "retries" => o.retries = number(k, v, 5)?,
            "include_tags" => o.include_tags = list(v),
            "exclude_tags" => o.exclude_tags = list(v),
            "max_steps" => o.max_steps = Some(number(k, v, 1000)?),
            "timeout_seconds" => o.timeout_seconds = Some(number(k, v, 86_400)?),
            "recovery" => o.recovery = flag(k, v)?,
            "heal" => o.heal = flag(k, v)?,
            "env" => {
                let (key, value) = v
                    .split_once('=')
                    .filter(|(k, _)| !k.trim().is_empty())
                    .ok_or_else(|| {
                        bad_query(
                            format!("env `{v}` is not KEY=VALUE"),
                            "Write `env=USER%3Dana`; repeat `env` for more.",
                        )
                    })?;
                env.insert(key.trim().to_string(), value.to_string());
            }
            other => {
                return Err(bad_query(
                    format!("unknown query parameter `{other}`"),
                    "Known: shards, devices, retries, include_tags, exclude_tags, env, max_steps, timeout_seconds, recovery, heal.",
                ));
            }
        }
    }
    if matches!(o.shards, Some(0))
        || matches!(o.max_steps, Some(0))
        || matches!(o.timeout_seconds, Some(0))
    {
        return Err(bad_query(
            "`shards`, `max_steps` and `timeout_seconds` start at 1".into(),
            "Give 1 or more.",
        ));
    }
    o.env = env;
    Ok(o)
}

/// Flow runs, newest first, one page at a time.
#[utoipa::path(
    get, path = "/v1/flow-runs", tag = "flows", params(PageParams),
    responses((status = 200, body = FlowRunPage), (status = 400, description = "Bad parameter or cursor", body = ErrorResponse))
)]
pub async fn list_flow_runs(
    State(s): State<AppState>,
    Query(p): Query<PageParams>,
) -> Result<Json<FlowRunPage>, ApiError> {
    let limit = super::tasks::page_limit(p.limit)?;
    Ok(Json(s.store.list_flow_runs(p.cursor()?, limit).await?))
}

/// A flow run: its options, status and each flow's result (status, phone, attempts with
/// their task ids, the failing step and its screenshot link, duration).
#[utoipa::path(
    get, path = "/v1/flow-runs/{id}", tag = "flows", params(("id" = String, Path, description = "Flow run id (UUID)")),
    responses((status = 200, body = FlowRun), (status = 404, body = ErrorResponse))
)]
pub async fn get_flow_run(
    State(s): State<AppState>,
    Path(id): Path<FlowRunId>,
) -> Result<Json<FlowRun>, ApiError> {
    Ok(Json(service::flow_runs::get(&s, id).await?))
}

/// Cancel a flow run: flows not started are cancelled, running flows' tasks stop at
/// their next step; the run ends `cancelled` once they have.
#[utoipa::path(
    post, path = "/v1/flow-runs/{id}/cancel", tag = "flows", params(("id" = String, Path, description = "Flow run id (UUID)")),
    responses(
        (status = 202, description = "Cancellation requested (or done, for a run no process drives)", body = FlowRun),
        (status = 404, body = ErrorResponse),
        (status = 409, description = "The run already ended", body = ErrorResponse),
    )
)]
pub async fn cancel_flow_run(
    State(s): State<AppState>,
    Path(id): Path<FlowRunId>,
) -> Result<(StatusCode, Json<FlowRun>), ApiError> {
    Ok((
        StatusCode::ACCEPTED,
        Json(service::flow_runs::cancel(&s, id).await?),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ReportParams {
    /// `junit` (JUnit XML, one testcase per flow) or `html` (one self-contained page).
    format: ReportFormat,
}

/// A flow run's report. JUnit XML has one `testcase` per flow; a failed flow's
/// `failure` message is its failing command with the file and line. The HTML page
/// embeds each failed flow's last screenshot.
#[utoipa::path(
    get, path = "/v1/flow-runs/{id}/report", tag = "flows",
    params(("id" = String, Path, description = "Flow run id (UUID)"), ReportParams),
    responses(
        (status = 200, description = "The report", content(
            (String = "application/xml"),
            (String = "text/html")
        )),
        (status = 404, body = ErrorResponse),
    )
)]
pub async fn flow_run_report(
    State(s): State<AppState>,
    Path(id): Path<FlowRunId>,
    Query(p): Query<ReportParams>,
) -> Result<Response, ApiError> {
    let (media, text) = service::flow_runs::report(&s, id, p.format).await?;
    let ext = if p.format == ReportFormat::Junit {
        "xml"
    } else {
        "html"
    };
    let disposition = format!("inline; filename=\"flow-run-{id}.{ext}\"");
    Ok((
        [
            (header::CONTENT_TYPE, media.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        text,
    )
        .into_response())
}

/// A flow run's events as Server-Sent Events: `flow_run.started`, one
/// `flow_run.flow_finished` per flow, `flow_run.finished` (the stream ends after it).
/// Resumable with `since` or `Last-Event-ID`. Each flow's task has its own stream
/// (`/v1/tasks/{id}/events`).
#[utoipa::path(
    get, path = "/v1/flow-runs/{id}/events", tag = "flows",
    params(("id" = String, Path, description = "Flow run id (UUID)"), super::events::SinceParams,
           ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this seq (wins over `since` when larger)")),
    responses((status = 200, content_type = "text/event-stream", description = "The run's events, then live ones", body = super::events::SseEvent),
              (status = 404, body = ErrorResponse))
)]
pub async fn flow_run_events(
    State(s): State<AppState>,
    Path(id): Path<FlowRunId>,
    Query(p): Query<super::events::SinceParams>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let run = s.store.flow_run(id).await?;
    let last = super::events::last_event_id(&headers)?;
    let since = p.since.unwrap_or(0).max(last.unwrap_or(0)).max(0);
    let stream_name = id.to_string();
    let mut feed = s
        .bus
        .feed(Filter::Streams(HashSet::from([stream_name.clone()])));
    feed.resume(&stream_name, since).await?;
    let done = run.status.is_terminal()
        && s.store
            .events_since(&stream_name, since, 1)
            .await?
            .is_empty();
    let stream = futures::stream::unfold(
        (feed, s.shutdown.clone(), done),
        |(mut feed, mut shutdown, done)| async move {
            if done {
                return None;
            }
            let item = tokio::select! {
                item = feed.next() => item,
                _ = super::events::stopped(&mut shutdown) => return None,
            };
            match item {
                Ok(Some(FeedItem::Event(ev))) => {
                    let last = matches!(ev.event, TaskEvent::FlowRunFinished { .. });
                    let e = Event::default()
                        .id(ev.seq.to_string())
                        .event(ev.event.kind())
                        .data(serde_json::to_string(&*ev).unwrap_or_default());
                    Some((Ok(e), (feed, shutdown, last)))
                }
                Ok(Some(FeedItem::Lagged { missed })) => Some((
                    Ok(Event::default()
                        .event("lagged")
                        .data(format!("{{\"missed\":{missed}}}"))),
                    (feed, shutdown, false),
                )),
                Ok(None) | Err(_) => None,
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
