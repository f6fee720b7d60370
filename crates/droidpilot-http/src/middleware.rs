//! Cross-cutting request handling that is ours rather than tower-http's: bearer-token
//! authentication (an `Authorization` header, or for a browser's WebSocket the
//! `Sec-WebSocket-Protocol` header, see [`websocket_token`]), rewriting any non-JSON error into the one error shape, and HTTP
//! metrics.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

use super::error::ApiError;
use super::state::AppState;

/// The API's documentation (Swagger UI and the spec it reads). It holds no secret, so it
/// is public unless `server.public_docs = false`.
fn is_docs_path(path: &str) -> bool {
    path == "/openapi.json" || path == "/docs" || path.starts_with("/docs/")
}

/// Whether a request may pass without a token.
fn is_public(state: &AppState, path: &str) -> bool {
    // Probes must work for orchestrators that hold no token.
    super::openapi::PUBLIC_OPERATIONS.contains(&path)
        || (state.config.server.public_docs && is_docs_path(path))
        // The dashboard's page and files hold no data; what they fetch needs the token.
        || super::dashboard::is_dashboard_path(path)
}

/// The subprotocol a browser's WebSocket offers beside its token, and the one the server
/// accepts (`new WebSocket(url, ["droidpilot.bearer." + token, "droidpilot"])`).
pub const WS_PROTOCOL: &str = "droidpilot";
/// The prefix of the subprotocol that carries the token.
const WS_BEARER_PREFIX: &str = "droidpilot.bearer.";

/// Whether a request asks to become a WebSocket (`Upgrade: websocket` on a GET).
fn is_websocket_upgrade(req: &Request) -> bool {
    req.method() == axum::http::Method::GET
        && req
            .headers()
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"))
}

/// A browser cannot set `Authorization` on a WebSocket, and a token in the URL would end
/// up in logs and history, so an upgrade request may carry it as a subprotocol:
/// `Sec-WebSocket-Protocol: droidpilot.bearer.<token>, droidpilot`. Only on upgrade
/// requests. The token's entry is removed from the header, so the handler (which accepts
/// `droidpilot`) never sees or echoes it; the header is marked sensitive, never logged.
fn websocket_token(req: &mut Request) -> Option<String> {
    if !is_websocket_upgrade(req) {
        return None;
    }
    let value = req
        .headers()
        .get(header::SEC_WEBSOCKET_PROTOCOL)?
        .to_str()
        .ok()?
        .to_string();
    let (tokens, rest): (Vec<&str>, Vec<&str>) = value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .partition(|p| p.starts_with(WS_BEARER_PREFIX));
    let token = tokens.first()?.strip_prefix(WS_BEARER_PREFIX)?.to_string();
    let headers = req.headers_mut();
    match HeaderValue::from_str(&rest.join(", ")) {
        Ok(mut v) if !rest.is_empty() => {
            v.set_sensitive(true);
            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
        }
        _ => {
            headers.remove(header::SEC_WEBSOCKET_PROTOCOL);
        }
    }
    Some(token)
}

/// The token in an `Authorization` value. The scheme name is case-insensitive
/// (RFC 7235 §2.1): `Bearer`, `bearer` and `BEARER` are the same scheme.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Requires `Authorization: Bearer <token>` when tokens are configured.
pub async fn auth(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Taken off the header whether or not tokens are configured: it never reaches a handler.
    let ws_token = websocket_token(&mut req);
    if state.token_digests.is_empty() || is_public(&state, req.uri().path()) {
        return next.run(req).await;
    }
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token)
        .map(str::to_string)
        .or(ws_token);
    let grant = presented
        .as_deref()
        .and_then(|t| token_index(&state.token_digests, t))
        .and_then(|i| state.token_grants.get(i).cloned());
    if let Some(caller) = grant {
        // The token's scope against the route (`scope.rs`): 403 naming the scope needed.
        let needed = super::scope::required(req.method(), req.uri().path());
        let what = format!("{} {}", req.method(), req.uri().path());
        if let Err(e) = caller.allows(needed, &what) {
            return e.into_response();
        }
        req.extensions_mut().insert(caller);
        return next.run(req).await;
    }
    let message = if presented.is_some() {
        "the bearer token is not valid"
    } else {
        "authentication required"
    };
    let mut resp = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        message,
        "Send `Authorization: Bearer <token>` with one of the tokens in server.tokens (a browser's WebSocket: the subprotocols `droidpilot.bearer.<token>, droidpilot`).",
    )
    .into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"droidpilot\""),
    );
    resp
}

/// Which configured token (by the index of its SHA-256 digest) `token` is. Comparing
/// fixed-size digests in constant time (`subtle`), every one of them, keeps the
/// comparison's time independent of how much of the token matched and of which token
/// it was.
fn token_index(digests: &[[u8; 32]], token: &str) -> Option<usize> {
    let d: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    let mut found = None;
    for (i, k) in digests.iter().enumerate() {
        if bool::from(k.ct_eq(&d)) {
            found = Some(i);
        }
    }
    found
}

/// Turns any error response that is not already JSON (405 from the router, 413 and 408
/// from tower-http layers, a caught panic) into the one error shape.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut out = ApiError::from_status(status, &text).into_response();
    // Keep headers that matter to clients (Allow on 405, request id, WWW-Authenticate).
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out
}

/// Counts requests and records latency by route template (not raw path, so ids do not
/// explode the label set).
pub async fn http_metrics(req: Request<Body>, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    metrics::counter!("droidpilot_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status).increment(1);
    metrics::histogram!("droidpilot_http_request_duration_seconds", "method" => method, "route" => route).record(start.elapsed().as_secs_f64());
    resp
}

/// The panic handler for `CatchPanicLayer`: a 500 in the one error shape, never the
/// panic message (it may hold request data).
pub fn panic_response(_err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::internal("the server hit an internal error while handling this request")
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(t: &str) -> [u8; 32] {
        Sha256::digest(t.as_bytes()).into()
    }

    /// Only the whole token matches, and each token finds its own grant: one that differs
    /// in its last character, a prefix, or a longer token is refused.
    #[test]
    fn a_token_matches_only_itself() {
        let digests = [digest("ci-token-123"), digest("viewer-token")];
        assert_eq!(token_index(&digests, "ci-token-123"), Some(0));
        assert_eq!(token_index(&digests, "viewer-token"), Some(1));
        for wrong in [
            "ci-token-124",
            "ci-token-12",
            "ci-token-1234",
            "",
            "CI-TOKEN-123",
        ] {
            assert_eq!(token_index(&digests, wrong), None, "{wrong}");
        }
        assert_eq!(token_index(&[], "ci-token-123"), None);
    }
}
