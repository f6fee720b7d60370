//! A cap on the streams (SSE, WebSocket) one token holds open at once
//! (`server.max_streams_per_token`; without tokens, all clients share one cap): the next
//! is answered 429 in the error shape. Streams live long and each holds a connection and
//! a feed, so one token holder cannot pile them up.
//!
//! The layer runs before the token check and keys by the token presented (a digest of it,
//! never the token), so it sees a browser WebSocket's token too (the token check takes it
//! off the request). A request the token check refuses releases its permit at once: only
//! valid tokens hold streams. A permit lives in an SSE response's body, or for a
//! WebSocket in its connection (`conns::ConnState::hold`), until the stream closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::conns::{ConnState, Guarded};
use super::error::ApiError;

/// The routes whose responses are streams.
const STREAM_ROUTES: &[&str] = &[
    "/v1/tasks/{id}/events",
    "/v1/flow-runs/{id}/events",
    "/v1/ws",
];

/// Open streams per token digest.
#[derive(Debug)]
pub struct StreamLimits {
    max_per_token: usize,
    /// With no tokens configured every client is the same one: a presented "token"
    /// means nothing and must not open a cap of its own.
    tokens_configured: bool,
    open: Mutex<HashMap<[u8; 32], usize>>,
}

/// One open stream; dropping it frees its place.
#[derive(Debug)]
pub struct StreamPermit {
    limits: Arc<StreamLimits>,
    key: [u8; 32],
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().expect("not poisoned");
        if let Some(n) = open.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl StreamLimits {
    pub fn new(max_per_token: usize, tokens_configured: bool) -> Arc<Self> {
        Arc::new(Self {
            max_per_token,
            tokens_configured,
            open: Mutex::new(HashMap::new()),
        })
    }

    fn acquire(self: &Arc<Self>, key: [u8; 32]) -> Option<StreamPermit> {
        let mut open = self.open.lock().expect("not poisoned");
        let n = open.entry(key).or_default();
        if *n >= self.max_per_token {
            return None;
        }
        *n += 1;
        Some(StreamPermit {
            limits: self.clone(),
            key,
        })
    }

    /// Who a request counts against: the digest of its token, or everyone's key.
    fn key(&self, headers: &HeaderMap) -> [u8; 32] {
        let presented = self
            .tokens_configured
            .then(|| presented_token(headers))
            .flatten();
        Sha256::digest(presented.unwrap_or_default().as_bytes()).into()
    }
}

/// The token in `Authorization: Bearer …` or a WebSocket's `droidpilot.bearer.…`
/// subprotocol, as the token check reads them.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim().to_string());
    bearer.or_else(|| {
        headers
            .get(header::SEC_WEBSOCKET_PROTOCOL)?
            .to_str()
            .ok()?
            .split(',')
            .find_map(|p| {
                p.trim()
                    .strip_prefix("droidpilot.bearer.")
                    .map(str::to_string)
            })
    })
}

/// Admits a stream request if its token has room, and keeps the permit with the stream.
pub async fn limit(State(limits): State<Arc<StreamLimits>>, req: Request, next: Next) -> Response {
    let is_stream = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| STREAM_ROUTES.contains(&p.as_str()));
    if !is_stream {
        return next.run(req).await;
    }
    let Some(permit) = limits.acquire(limits.key(req.headers())) else {
        return too_many(limits.max_per_token);
    };
    let conn = req.extensions().get::<Arc<ConnState>>().cloned();
    let resp = next.run(req).await;
    match resp.status() {
        StatusCode::SWITCHING_PROTOCOLS => {
            // Served outside our accept loop (a test harness), the permit just ends here.
            if let Some(conn) = conn {
                conn.hold(Box::new(permit));
            }
            resp
        }
        s if s.is_success() => resp.map(|b| Guarded::wrap(b, permit)),
        _ => resp,
    }
}

fn too_many(max: usize) -> Response {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_streams",
        format!("this token already holds {max} open streams (SSE and WebSocket)"),
        "Close streams you no longer read; one WebSocket can watch many tasks (subscribe to several, or `all`). An operator can raise server.max_streams_per_token.",
    )
    .into_response()
}
