//! Live streams: `GET /v1/tasks/{id}/events` (Server-Sent Events, resumable with
//! `?since=` or `Last-Event-ID`) and `GET /v1/ws` (one WebSocket for many tasks, which
//! also takes answers and cancels). Both read from `EventFeed`, so a slow client gets a
//! `lagged` notice and then every event; it never slows a runner.

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{FutureExt, SinkExt, Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ErrorResponse};
use super::extract::{Path, Query};
use super::state::AppState;
use crate::domain::TaskId;
use crate::run::events::{DEVICES_STREAM, EventFeed, FeedItem, Filter};
use crate::store::StoredEvent;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SinceParams {
    /// Deliver events with `seq` greater than this (0 = from the start).
    pub(crate) since: Option<i64>,
}

/// One Server-Sent Event of a task's stream (`text/event-stream`: `id:`, `event:` and
/// `data:` lines, a blank line between events; lines starting with `:` are keep-alive
/// comments, every 15 s). `event: lagged` (data `{"missed": n}`, no id) says the client
/// fell behind and the missed events follow; `event: error` carries the error shape.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only: the schema of the SSE body
pub struct SseEvent {
    /// The event's `seq`, for `Last-Event-ID`.
    #[schema(pattern = "^[0-9]+$", example = "1")]
    id: Option<String>,
    /// The event type: `task.queued`, `step.executed`, …, `task.finished`, or `lagged`, `error`.
    #[schema(example = "task.queued")]
    event: Option<String>,
    /// The stored event as JSON: `stream`, `seq`, `type`, `payload`, `created_at`.
    #[schema(
        example = "{\"stream\":\"0196…\",\"seq\":1,\"type\":\"task.queued\",\"payload\":{},\"created_at\":\"…\"}"
    )]
    data: String,
}

fn sse_event(ev: &StoredEvent) -> Event {
    Event::default()
        .id(ev.seq.to_string())
        .event(ev.event.kind())
        .data(serde_json::to_string(ev).unwrap_or_else(|_| "{}".into()))
}

/// A task's events as Server-Sent Events: stored events after `since`, then live ones.
/// The stream ends after `task.finished`. Each event's `id` is its `seq`, so a
/// reconnecting browser resumes with `Last-Event-ID` by itself.
#[utoipa::path(
    get, path = "/v1/tasks/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Task id (UUID)"), SinceParams,
           ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this seq (wins over `since` when larger)")),
    responses((status = 200, content_type = "text/event-stream", description = "The task's events, then live ones; ends after `task.finished`", body = SseEvent),
              (status = 400, description = "A bad `since` or `Last-Event-ID`", body = ErrorResponse),
              (status = 404, body = ErrorResponse))
)]
pub async fn task_events(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    Query(p): Query<SinceParams>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    s.store.get_task(id).await?;
    let last_event_id = last_event_id(&headers)?;
    let since = p.since.unwrap_or(0).max(last_event_id.unwrap_or(0)).max(0);
    let stream_name = id.to_string();
    let mut feed = s
        .bus
        .feed(Filter::Streams(HashSet::from([stream_name.clone()])));
    feed.resume(&stream_name, since).await?;
    // Checked after `resume`, so a `task.finished` published meanwhile is either replayed
    // or arrives live; only a stream the client already has to its end stops here.
    let done = has_everything(&s, id, since).await?;
    let stream = futures::stream::unfold(
        (feed, s.shutdown.clone(), done),
        |(mut feed, mut shutdown, done)| async move {
            if done {
                return None;
            }
            let item = tokio::select! {
                item = feed.next() => item,
                _ = stopped(&mut shutdown) => return None,
            };
            let (event, last) = match item {
                Ok(Some(FeedItem::Event(ev))) => (sse_event(&ev), ev.event.is_finished()),
                Ok(Some(FeedItem::Lagged { missed })) => (
                    Event::default()
                        .event("lagged")
                        .data(json!({"missed": missed}).to_string()),
                    false,
                ),
                Ok(None) => return None,
                Err(e) => {
                    let body = json!({"error": {"code": "internal_error", "message": e.to_string(), "hint": "Reconnect with Last-Event-ID to resume."}});
                    (Event::default().event("error").data(body.to_string()), true)
                }
            };
            Some((Ok(event), (feed, shutdown, last)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// `Last-Event-ID` as a seq; a value that is not one is the client's mistake, said so.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let parsed = v.to_str().ok().and_then(|v| v.trim().parse::<i64>().ok());
    match parsed {
        Some(seq) => Ok(Some(seq)),
        None => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_last_event_id",
            format!(
                "Last-Event-ID `{}` is not an event seq",
                String::from_utf8_lossy(v.as_bytes())
            ),
            "Send the `id` of the last event received (an integer), or omit the header to start from the beginning.",
        )),
    }
}

/// Whether a client resuming after `since` already has the whole of a finished task's
/// stream: the task is finished and the event at `since` is its last (`task.finished`),
/// or `since` is past the end. `task.finished` is always a task stream's last event.
async fn has_everything(s: &AppState, id: TaskId, since: i64) -> Result<bool, ApiError> {
    if since <= 0 || !s.store.get_task(id).await?.status.is_terminal() {
        return Ok(false);
    }
    let at = s.store.events_since(&id.to_string(), since - 1, 1).await?;
    Ok(match at.first() {
        Some(ev) => matches!(ev.event, crate::domain::TaskEvent::Finished(_)),
        // Past the end. A finished task's last event may still be on its way (the status
        // is stored first); its seq is one past the stored end, which `since` covers.
        None => true,
    })
}

/// What a WebSocket client may send.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientMessage {
    /// Watch some tasks (`tasks`), or everything (`all: true`); `since` maps a task id to
    /// the last seq the client has; `devices: true` adds pool events.
    Subscribe {
        #[serde(default)]
        tasks: Vec<TaskId>,
        #[serde(default)]
        all: bool,
        #[serde(default)]
        devices: bool,
        /// Flow runs' streams (`flow_run.*` events).
        #[serde(default)]
        flow_runs: Vec<crate::domain::FlowRunId>,
        #[serde(default)]
        since: std::collections::HashMap<String, i64>,
    },
    Answer {
        task_id: TaskId,
        prompt_id: Option<String>,
        answer: String,
    },
    Cancel {
        task_id: TaskId,
    },
    Ping,
}

/// One WebSocket for dashboards and coordinators. Protocol (JSON text frames):
/// client → `{"type":"subscribe","tasks":[id…]|"all":true,"flow_runs":[id…],"since":{id:seq}}`,
/// `{"type":"answer","task_id","prompt_id"?,"answer"}`, `{"type":"cancel","task_id"}`,
/// `{"type":"ping"}`; server → `{"type":"event","event":{…}}`, `{"type":"lagged","missed":n}`,
/// `{"type":"subscribed"|"answered"|"cancelled"|"pong",…}`, `{"type":"error","error":{code,message,hint}}`.
/// Subscriptions add up (send several to watch many tasks); `subscribed.finished` lists the
/// subscribed tasks that have already finished. Messages are JSON text frames of at most
/// 64 KiB: a binary frame gets an error, a larger message closes the session with 1009.
#[utoipa::path(
    get, path = "/v1/ws", tag = "events",
    responses((status = 101, description = "Switching to the WebSocket protocol described above"),
              (status = 426, description = "Not a WebSocket upgrade request", body = ErrorResponse))
)]
pub async fn websocket(
    State(s): State<AppState>,
    caller: Option<axum::Extension<super::scope::Caller>>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let caller = caller.map(|axum::Extension(c)| c);
    let ws = match ws {
        Ok(ws) => ws,
        Err(r) => return upgrade_required(r),
    };
    // A browser offering `droidpilot` (beside its token, which the auth layer took off)
    // gets it back; a client that offers no subprotocol gets none.
    ws.max_message_size(WS_MAX_MESSAGE)
        .read_buffer_size(WS_READ_BUFFER)
        .protocols([super::middleware::WS_PROTOCOL])
        .on_upgrade(move |socket| ws_session(socket, s, caller))
        .into_response()
}

/// The largest WebSocket message a client may send. A larger one closes the session with
/// 1009 (message too big); subscribe to many tasks in several messages (they add up) or
/// with `"all": true`.
pub const WS_MAX_MESSAGE: usize = 64 * 1024;

/// The read buffer of a session. tungstenite zero-fills the buffer's free space before
/// every read attempt, and a session tries one each time it is woken to send events: with
/// the default 128 KiB that memset was ~4% of the server's CPU with 1,000 subscribers.
/// Clients send small messages; a larger one (up to `WS_MAX_MESSAGE`) still arrives, over
/// several reads.
const WS_READ_BUFFER: usize = 4 * 1024;

/// The answer to a plain HTTP request on the WebSocket endpoint.
fn upgrade_required(r: WebSocketUpgradeRejection) -> Response {
    let mut resp = ApiError::new(
        StatusCode::UPGRADE_REQUIRED,
        "websocket_upgrade_required",
        format!("/v1/ws speaks only WebSocket: {}", r.body_text()),
        "Connect with a WebSocket client (GET with `Connection: Upgrade`, `Upgrade: websocket`); for one task's events over plain HTTP use GET /v1/tasks/{id}/events (SSE).",
    )
    .into_response();
    resp.headers_mut()
        .insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    resp
}

/// `caller`: the token's grant (None when the server has no tokens): a `read` token may
/// subscribe but not answer or cancel.
async fn ws_session(socket: WebSocket, s: AppState, caller: Option<super::scope::Caller>) {
    let (mut sink, mut source) = socket.split();
    let mut feed: EventFeed = s.bus.feed(Filter::Streams(HashSet::new()));
    let mut shutdown = s.shutdown.clone();
    loop {
        let out: Option<Value> = tokio::select! {
            msg = source.next() => match msg {
                Some(Ok(Message::Text(t))) => Some(handle_client(&s, caller.as_ref(), &mut feed, t.as_str()).await),
                Some(Ok(Message::Binary(_))) => Some(error_json(
                    "binary_not_supported",
                    "binary frames are not part of this protocol",
                    "Send each message as a JSON text frame, e.g. {\"type\": \"ping\"}.",
                )),
                Some(Err(e)) => {
                    if let Some(close) = close_for(&e) {
                        let _ = sink.send(Message::Close(Some(close))).await;
                    }
                    break;
                }
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => None, // ping and pong frames need no answer from us
            },
            item = feed.next() => match item {
                Ok(Some(item)) => match send_burst(&mut sink, &mut feed, item).await {
                    Ok(()) => None,
                    Err(_) => break,
                },
                Ok(None) => break,
                Err(e) => Some(feed_error(&e)),
            },
            _ = stopped(&mut shutdown) => {
                let _ = sink.send(Message::Close(None)).await;
                break;
            }
        };
        if let Some(v) = out
            && sink
                .send(Message::Text(v.to_string().into()))
                .await
                .is_err()
        {
            break;
        }
    }
}

/// The most feed items one write carries, so a busy feed still flushes often.
const WS_BURST: usize = 64;

/// Sends `first` and the feed items already waiting behind it (a step's commit publishes
/// several events at once) with one flush, so a burst costs one write to the socket, not
/// one per event.
async fn send_burst(
    sink: &mut futures::stream::SplitSink<WebSocket, Message>,
    feed: &mut EventFeed,
    first: FeedItem,
) -> Result<(), axum::Error> {
    sink.feed(feed_frame(&first)).await?;
    for _ in 1..WS_BURST {
        // `next` is cancel-safe: an item that is not ready yet stays for the next call.
        match feed.next().now_or_never() {
            Some(Ok(Some(item))) => sink.feed(feed_frame(&item)).await?,
            Some(Err(e)) => {
                sink.feed(Message::Text(feed_error(&e).to_string().into()))
                    .await?;
                break;
            }
            Some(Ok(None)) | None => break,
        }
    }
    sink.flush().await
}

/// A feed item as the session sends it, serialized straight from the event (no
/// intermediate `Value`: this runs once per event per subscriber).
fn feed_frame(item: &FeedItem) -> Message {
    #[derive(serde::Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Frame<'a> {
        Event { event: &'a StoredEvent },
        Lagged { missed: u64 },
    }
    let frame = match item {
        FeedItem::Event(ev) => Frame::Event { event: ev },
        FeedItem::Lagged { missed } => Frame::Lagged { missed: *missed },
    };
    let text = serde_json::to_string(&frame).unwrap_or_else(|e| feed_error(&e).to_string());
    Message::Text(text.into())
}

fn feed_error(e: &dyn std::fmt::Display) -> Value {
    error_json(
        "internal_error",
        &e.to_string(),
        "Reconnect and subscribe with `since` to resume.",
    )
}

/// The close frame for a read error a client can act on: a message over the limit is
/// 1009 with the limit in the reason. Others (the peer vanished) get none.
fn close_for(e: &axum::Error) -> Option<CloseFrame> {
    use std::error::Error as _;
    let mut source: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(err) = source {
        if let Some(tungstenite::Error::Capacity(c)) = err.downcast_ref::<tungstenite::Error>() {
            return Some(CloseFrame {
                code: close_code::SIZE,
                reason: format!(
                    "message too big ({c}); the limit is {} KiB: subscribe in several messages",
                    WS_MAX_MESSAGE / 1024
                )
                .into(),
            });
        }
        source = err.source();
    }
    None
}

/// Resolves once the server starts shutting down (or its state is gone).
pub(crate) async fn stopped(rx: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; drop it here rather than hold it in a
    // caller's select! arm.
    let _ = rx.wait_for(|stopping| *stopping).await.map(|_| ());
}

fn error_json(code: &str, message: &str, hint: &str) -> Value {
    json!({"type": "error", "error": {"code": code, "message": message, "hint": hint}})
}

async fn handle_client(
    s: &AppState,
    caller: Option<&super::scope::Caller>,
    feed: &mut EventFeed,
    text: &str,
) -> Value {
    let msg: ClientMessage = match serde_json::from_str(text) {
        Ok(m) => m,
        Err(e) => {
            return error_json(
                "invalid_message",
                &format!("cannot read this message: {e}"),
                "Send JSON like {\"type\": \"subscribe\", \"tasks\": [\"<task id>\"]}; types: subscribe, answer, cancel, ping.",
            );
        }
    };
    let acts = match &msg {
        ClientMessage::Answer { .. } => Some("answering over the WebSocket"),
        ClientMessage::Cancel { .. } => Some("cancelling over the WebSocket"),
        _ => None,
    };
    if let (Some(what), Some(c)) = (acts, caller)
        && let Err(e) = c.allows(super::scope::Scope::Operate, what)
    {
        return error_json(e.code, &e.message, &e.hint);
    }
    match msg {
        ClientMessage::Ping => json!({"type": "pong"}),
        ClientMessage::Subscribe {
            tasks,
            all,
            devices,
            flow_runs,
            since,
        } => {
            if all {
                feed.watch_all();
            }
            let mut streams: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
            if devices {
                streams.push(DEVICES_STREAM.to_string());
            }
            for r in &flow_runs {
                if let Err(e) = s.store.flow_run(*r).await {
                    let e = ApiError::from(e);
                    return error_json(e.code, &e.message, &e.hint);
                }
                streams.push(r.to_string());
            }
            // Finished tasks send nothing live: saying so spares a client that resumed at
            // their end from waiting for a `task.finished` it already has.
            let mut finished = Vec::new();
            for t in &tasks {
                match s.store.get_task(*t).await {
                    Ok(task) if task.status.is_terminal() => finished.push(*t),
                    Ok(_) => {}
                    Err(e) => {
                        let e = ApiError::from(e);
                        return error_json(e.code, &e.message, &e.hint);
                    }
                }
            }
            for stream in &streams {
                feed.add_stream(stream);
                let from = since.get(stream).copied().unwrap_or(0).max(0);
                if let Err(e) = feed.resume(stream, from).await {
                    return error_json("internal_error", &e.to_string(), "Retry the subscription.");
                }
            }
            json!({"type": "subscribed", "tasks": tasks, "finished": finished, "all": all, "devices": devices, "flow_runs": flow_runs})
        }
        ClientMessage::Answer {
            task_id,
            prompt_id,
            answer,
        } => match s
            .prompts
            .answer(
                &s.bus,
                task_id,
                prompt_id.as_deref(),
                &answer,
                caller
                    .and_then(|c| c.name.as_deref())
                    .unwrap_or("websocket"),
            )
            .await
        {
            Ok(iv) => json!({"type": "answered", "task_id": task_id, "prompt_id": iv.id}),
            Err(e) => {
                let e = ApiError::from(e);
                error_json(e.code, &e.message, &e.hint)
            }
        },
        ClientMessage::Cancel { task_id } => {
            match crate::service::tasks::cancel(s, task_id).await {
                Ok((task, _)) => {
                    json!({"type": "cancelled", "task_id": task_id, "status": task.status})
                }
                Err(e) => {
                    let e = ApiError::from(e);
                    error_json(e.code, &e.message, &e.hint)
                }
            }
        }
    }
}
