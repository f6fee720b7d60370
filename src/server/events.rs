//! Live streams: `GET /v1/tasks/{id}/events` (Server-Sent Events, resumable with
//! `?since=` or `Last-Event-ID`) and `GET /v1/ws` (one WebSocket for many tasks, which
//! also takes answers and cancels). Both read from `EventFeed`, so a slow client gets a
//! `lagged` notice and then every event; it never slows a runner.

use std::collections::HashSet;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use super::error::{ApiError, ErrorResponse};
use super::extract::{Path, Query};
use super::state::AppState;
use crate::domain::TaskId;
use crate::run::events::{DEVICES_STREAM, EventFeed, FeedItem, Filter};
use crate::run::queue;
use crate::store::StoredEvent;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SinceParams {
    /// Deliver events with `seq` greater than this (0 = from the start).
    since: Option<i64>,
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
    responses((status = 200, content_type = "text/event-stream", description = "event: <type>, id: <seq>, data: the stored event as JSON", body = String),
              (status = 404, body = ErrorResponse))
)]
pub async fn task_events(
    State(s): State<AppState>,
    Path(id): Path<TaskId>,
    Query(p): Query<SinceParams>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    s.store.get_task(id).await?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let since = p.since.unwrap_or(0).max(last_event_id.unwrap_or(0)).max(0);
    let stream_name = id.to_string();
    let mut feed = s
        .bus
        .feed(Filter::Streams(HashSet::from([stream_name.clone()])));
    feed.resume(&stream_name, since).await?;
    let stream = futures::stream::unfold(
        (feed, s.shutdown.clone(), false),
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
/// client → `{"type":"subscribe","tasks":[id…]|"all":true,"since":{id:seq}}`,
/// `{"type":"answer","task_id","prompt_id"?,"answer"}`, `{"type":"cancel","task_id"}`,
/// `{"type":"ping"}`; server → `{"type":"event","event":{…}}`, `{"type":"lagged","missed":n}`,
/// `{"type":"subscribed"|"answered"|"cancelled"|"pong",…}`, `{"type":"error","error":{code,message,hint}}`.
#[utoipa::path(
    get, path = "/v1/ws", tag = "events",
    responses((status = 101, description = "Switching to the WebSocket protocol described above"), (status = 400, body = ErrorResponse))
)]
pub async fn websocket(State(s): State<AppState>, ws: WebSocketUpgrade) -> Response {
    ws.max_message_size(64 * 1024)
        .on_upgrade(move |socket| ws_session(socket, s))
        .into_response()
}

async fn ws_session(socket: WebSocket, s: AppState) {
    let (mut sink, mut source) = socket.split();
    let mut feed: EventFeed = s.bus.feed(Filter::Streams(HashSet::new()));
    let mut shutdown = s.shutdown.clone();
    loop {
        let out: Option<Value> = tokio::select! {
            msg = source.next() => match msg {
                Some(Ok(Message::Text(t))) => Some(handle_client(&s, &mut feed, t.as_str()).await),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => None, // binary, ping and pong frames need no answer from us
            },
            item = feed.next() => match item {
                Ok(Some(FeedItem::Event(ev))) => Some(json!({"type": "event", "event": &*ev})),
                Ok(Some(FeedItem::Lagged { missed })) => Some(json!({"type": "lagged", "missed": missed})),
                Ok(None) => break,
                Err(e) => Some(error_json("internal_error", &e.to_string(), "Reconnect and subscribe with `since` to resume.")),
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

/// Resolves once the server starts shutting down (or its state is gone).
async fn stopped(rx: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns is not Send; drop it here rather than hold it in a
    // caller's select! arm.
    let _ = rx.wait_for(|stopping| *stopping).await.map(|_| ());
}

fn error_json(code: &str, message: &str, hint: &str) -> Value {
    json!({"type": "error", "error": {"code": code, "message": message, "hint": hint}})
}

async fn handle_client(s: &AppState, feed: &mut EventFeed, text: &str) -> Value {
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
    match msg {
        ClientMessage::Ping => json!({"type": "pong"}),
        ClientMessage::Subscribe {
            tasks,
            all,
            devices,
            since,
        } => {
            if all {
                feed.watch_all();
            }
            let mut streams: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
            if devices {
                streams.push(DEVICES_STREAM.to_string());
            }
            for t in &tasks {
                if let Err(e) = s.store.get_task(*t).await {
                    let e = ApiError::from(e);
                    return error_json(e.code, &e.message, &e.hint);
                }
            }
            for stream in &streams {
                feed.add_stream(stream);
                let from = since.get(stream).copied().unwrap_or(0).max(0);
                if let Err(e) = feed.resume(stream, from).await {
                    return error_json("internal_error", &e.to_string(), "Retry the subscription.");
                }
            }
            json!({"type": "subscribed", "tasks": tasks, "all": all, "devices": devices})
        }
        ClientMessage::Answer {
            task_id,
            prompt_id,
            answer,
        } => match s
            .prompts
            .answer(&s.bus, task_id, prompt_id.as_deref(), &answer, "websocket")
            .await
        {
            Ok(iv) => json!({"type": "answered", "task_id": task_id, "prompt_id": iv.id}),
            Err(e) => {
                let e = ApiError::from(e);
                error_json(e.code, &e.message, &e.hint)
            }
        },
        ClientMessage::Cancel { task_id } => match queue::cancel(&s.bus, &s.running, task_id).await
        {
            Ok((task, _)) => {
                json!({"type": "cancelled", "task_id": task_id, "status": task.status})
            }
            Err(e) => {
                let e = ApiError::from(e);
                error_json(e.code, &e.message, &e.hint)
            }
        },
    }
}
