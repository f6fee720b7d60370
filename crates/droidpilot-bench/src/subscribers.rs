//! The WebSocket part of `droidpilot bench runner`: subscribers on the real `/v1/ws`
//! endpoint, served by the product's own accept loop and router over the level's core on a
//! loopback port, each watching one of the level's tasks as a dashboard tab does.
//!
//! The clients run on a thread of their own (a current-thread runtime), so their CPU time
//! is measured apart from the server's and taken out of the server's share. Lag is the
//! receipt time minus the event's `created_at` (stamped just before its commit), by the
//! wall clock; a subscriber is done at its task's `task.finished`.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::core::Core;
use crate::device::sim::cpu::thread_cpu;
use crate::domain::TaskId;
use droidpilot_http::app;
use droidpilot_http::listen::{ConnLimits, serve};
use droidpilot_http::state::AppState;

/// The subscribers of one level and the server they are connected to.
pub struct Subscribers {
    clients: std::thread::JoinHandle<Received>,
    server: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

/// What the subscribers received.
#[derive(Debug, Default)]
pub struct Received {
    pub lags: Vec<Duration>,
    /// Subscribers that failed (connect, protocol) or did not see their task finish.
    pub failed: usize,
    pub first_error: Option<String>,
    /// CPU time of the clients' thread: the subscribers' own cost, not the server's.
    pub client_cpu: Duration,
}

impl Subscribers {
    /// Serves `core` on a loopback port and connects `n` subscribers, the i-th watching
    /// `tasks[i % tasks.len()]`; returns once every one is subscribed. Each gives up
    /// `timeout` after the connections are made.
    pub async fn connect(
        core: Arc<Core>,
        tasks: &[TaskId],
        n: usize,
        timeout: Duration,
    ) -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot bind a loopback port: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let limits = ConnLimits::from_config(&core.config.server);
        let (stop, stopped) = watch::channel(false);
        let router = app(AppState::new(core, stopped.clone()));
        let mut until = stopped;
        // Not on the core's tracker: `finish` stops and awaits it.
        let server = tokio::spawn(serve(listener, router, limits, async move {
            let _ = until.wait_for(|s| *s).await;
        }));
        let url = format!("ws://{addr}/v1/ws");
        let tasks = tasks.to_vec();
        let (ready, connected) = oneshot::channel();
        let clients = std::thread::Builder::new()
            .name("bench-subscribers".into())
            .spawn(move || client_thread(url, tasks, n, timeout, ready))
            .map_err(|e| format!("cannot start the subscribers' thread: {e}"))?;
        let outcome = connected
            .await
            .unwrap_or_else(|_| Err("the subscribers' thread ended early".into()));
        let subscribers = Self {
            clients,
            server,
            stop,
        };
        match outcome {
            Ok(()) => Ok(subscribers),
            Err(e) => {
                subscribers.finish().await;
                Err(e)
            }
        }
    }

    /// Waits for every subscriber to see its task finish (or give up), then stops the
    /// server.
    pub async fn finish(self) -> Received {
        let clients = self.clients;
        let received = tokio::task::spawn_blocking(move || clients.join())
            .await
            .ok()
            .and_then(|r| r.ok())
            .unwrap_or_else(|| Received {
                first_error: Some("the subscribers' thread panicked".into()),
                ..Received::default()
            });
        let _ = self.stop.send(true);
        let _ = self.server.await;
        received
    }
}

/// The clients' thread: connects and subscribes all `n` (reporting on `ready`), then
/// collects their lags.
fn client_thread(
    url: String,
    tasks: Vec<TaskId>,
    n: usize,
    timeout: Duration,
    ready: oneshot::Sender<Result<(), String>>,
) -> Received {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot build the subscribers' runtime: {e}")));
            return Received::default();
        }
    };
    let cpu0 = thread_cpu();
    let mut out = rt.block_on(async move {
        let mut handles = Vec::with_capacity(n);
        let n = if tasks.is_empty() { 0 } else { n };
        for i in 0..n {
            match subscribe(&url, tasks[i % tasks.len()]).await {
                Ok(rx) => handles.push(tokio::spawn(receive(rx))),
                Err(e) => {
                    let _ = ready.send(Err(format!("subscriber {i}: {e}")));
                    return Received::default();
                }
            }
        }
        let _ = ready.send(Ok(()));
        let deadline = tokio::time::Instant::now() + timeout;
        let mut out = Received::default();
        for h in handles {
            let err = match tokio::time::timeout_at(deadline, h).await {
                Ok(Ok(Ok(lags))) => {
                    out.lags.extend(lags);
                    continue;
                }
                Ok(Ok(Err(e))) => e,
                Ok(Err(e)) => e.to_string(),
                Err(_) => "its task did not finish in time".to_string(),
            };
            out.failed += 1;
            out.first_error.get_or_insert(err);
        }
        out
    });
    out.client_cpu = thread_cpu().saturating_sub(cpu0);
    out
}

type WsRead = futures::stream::SplitStream<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
>;

/// Connects, subscribes to `task` and waits for `subscribed`: from then on every event of
/// the task reaches the returned stream.
async fn subscribe(url: &str, task: TaskId) -> Result<WsRead, String> {
    // A small read buffer, as the server's: tungstenite zero-fills its free space before
    // every read, and the clients' thread shares the cores with the server.
    let config = WebSocketConfig::default().read_buffer_size(4 * 1024);
    let (ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let (mut tx, mut rx) = ws.split();
    let subscribe = serde_json::json!({"type": "subscribe", "tasks": [task]});
    tx.send(Message::text(subscribe.to_string()))
        .await
        .map_err(|e| e.to_string())?;
    match rx.next().await {
        Some(Ok(Message::Text(t))) if t.contains("\"subscribed\"") => {}
        other => return Err(format!("unexpected reply {other:?}")),
    }
    // The write half is not needed again; dropping it does not close the connection.
    drop(tx);
    Ok(rx)
}

/// Lags of the events received, until the task's `task.finished`.
async fn receive(mut rx: WsRead) -> Result<Vec<Duration>, String> {
    let mut lags = Vec::new();
    while let Some(msg) = rx.next().await {
        let now = chrono::Utc::now();
        let text = match msg.map_err(|e| e.to_string())? {
            Message::Text(t) => t,
            Message::Close(_) => break,
            _ => continue,
        };
        // Read without a full parse: the subscriber's own cost is not what is measured.
        let Some(at) = field(&text, "\"created_at\":\"") else {
            continue;
        };
        let at = chrono::DateTime::parse_from_rfc3339(at).map_err(|e| e.to_string())?;
        lags.push(now.signed_duration_since(at).to_std().unwrap_or_default());
        if text.contains("\"type\":\"task.finished\"") {
            return Ok(lags);
        }
    }
    Err("the connection ended before the task finished".into())
}

/// The string value after `key` (up to the next quote).
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    let len = text[start..].find('"')?;
    Some(&text[start..start + len])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_field_is_read_without_parsing_the_message() {
        let m = r#"{"type":"event","event":{"stream":"t","created_at":"2026-01-01T00:00:00.5Z"}}"#;
        assert_eq!(
            super::field(m, "\"created_at\":\""),
            Some("2026-01-01T00:00:00.5Z")
        );
        assert_eq!(super::field(m, "\"nope\":\""), None);
    }
}
