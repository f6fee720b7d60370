//! Connection and stream limits before authentication, over real sockets: a per-client
//! connection limit that counts WebSockets and SSE streams, a total limit that closes an
//! idle unauthenticated connection first to make room, a cap on streams per token, and a
//! new-connection rate per client that only connections which fail pay.
//! Functional only: what is refused and what is served, never how fast.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{TestApp, spawn_app_with};

const TOKEN: &str = "test-token-0123456789";
const OTHER: &str = "other-token-0123456789";

/// Sends a request and reads its response head: (status, head).
async fn send_head(s: &mut TcpStream, req: &str) -> (u16, String) {
    s.write_all(req.as_bytes()).await.unwrap();
    read_head(s).await
}

async fn read_head(s: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut byte))
            .await
            .expect("the server answers within 10 s")
            .unwrap_or(0);
        assert_eq!(
            n,
            1,
            "closed before the end of a head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    (head[9..12].parse().unwrap(), head.to_ascii_lowercase())
}

/// The body of a response whose head was read (it has a content-length).
async fn read_body(s: &mut TcpStream, head: &str) -> Value {
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("a content-length")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

fn auth(token: Option<&str>) -> String {
    token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default()
}

async fn get(app: &TestApp, s: &mut TcpStream, path: &str, token: Option<&str>) -> (u16, String) {
    let req = format!(
        "GET {path} HTTP/1.1\r\nhost: {}\r\n{}\r\n",
        app.addr,
        auth(token)
    );
    send_head(s, &req).await
}

/// A queued task (no devices): its SSE stream stays open.
async fn queued_task(app: &TestApp, token: Option<&str>) -> String {
    let mut rb = app
        .client
        .post(app.url("/v1/tasks"))
        .json(&serde_json::json!({"instruction": "stay queued"}));
    if let Some(t) = token {
        rb = rb.bearer_auth(t);
    }
    let v: Value = rb.send().await.unwrap().json().await.unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// A queued task submitted with `connection: close`, the connection read until the server
/// has closed it.
async fn queued_task_closed(app: &TestApp, token: Option<&str>) -> String {
    let body = r#"{"instruction": "stay queued"}"#;
    let req = format!(
        "POST /v1/tasks HTTP/1.1\r\nhost: {}\r\n{}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        app.addr,
        auth(token),
        body.len()
    );
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = send_head(&mut s, &req).await;
    assert_eq!(status, 201, "{head}");
    let task = read_body(&mut s, &head).await;
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection")
        .ok();
    task["id"].as_str().unwrap().to_string()
}

async fn open_sse(app: &TestApp, task: &str, token: Option<&str>) -> (u16, String, TcpStream) {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = get(app, &mut s, &format!("/v1/tasks/{task}/events"), token).await;
    (status, head, s)
}

async fn open_ws(app: &TestApp, token: Option<&str>) -> (u16, String, TcpStream) {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let req = format!(
        "GET /v1/ws HTTP/1.1\r\nhost: {}\r\n{}upgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        app.addr,
        auth(token)
    );
    let (status, head) = send_head(&mut s, &req).await;
    (status, head, s)
}

/// A connection the server admits: it answers a probe on it.
async fn admitted(app: &TestApp) -> TcpStream {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let (status, _) = get(app, &mut s, "/healthz", None).await;
    assert_eq!(status, 200);
    let mut rest = [0u8; 512];
    let _ = s.read(&mut rest).await.unwrap();
    s
}

/// What a connection refused at accept reads: a 429 or 503 in the error shape, then EOF.
async fn refused(app: &TestApp) -> (u16, Value) {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = read_head(&mut s).await;
    let body = read_body(&mut s, &head).await;
    assert!(head.contains("retry-after: "), "{head}");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest))
        .await
        .expect("closed after the refusal");
    (status, body)
}

/// Retries until a fresh connection is served (a closed one frees its place when the
/// server notices, a moment later).
async fn served_again(app: &TestApp) {
    for _ in 0..100 {
        let mut s = TcpStream::connect(app.addr).await.unwrap();
        let req = format!("GET /healthz HTTP/1.1\r\nhost: {}\r\n\r\n", app.addr);
        s.write_all(req.as_bytes()).await.unwrap();
        let mut buf = [0u8; 12];
        if s.read_exact(&mut buf).await.is_ok() && &buf == b"HTTP/1.1 200" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("a new connection is never served after one closed");
}

#[tokio::test]
async fn one_client_gets_429_beyond_its_connection_limit() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__MAX_CONNECTIONS_PER_IP", "3")]).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(admitted(&app).await);
    }
    let (status, body) = refused(&app).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "too_many_connections");
    let hint = body["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("server.max_connections_per_ip"), "{hint}");
    drop(held.pop());
    served_again(&app).await;
}

#[tokio::test]
async fn websockets_and_sse_streams_count_toward_the_client_limit() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__MAX_CONNECTIONS_PER_IP", "3")]).await;
    // The test's HTTP client keeps its connection: one of the three.
    let task = queued_task(&app, None).await;
    let (status, _, ws) = open_ws(&app, None).await;
    assert_eq!(status, 101);
    let (status, _, sse) = open_sse(&app, &task, None).await;
    assert_eq!(status, 200);
    let (status, body) = refused(&app).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("too_many_connections"))
    );
    // Closing the WebSocket gives its place back.
    drop(ws);
    served_again(&app).await;
    drop(sse);
}

#[tokio::test]
async fn when_full_an_idle_unauthenticated_connection_is_closed_first() {
    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__MAX_CONNECTIONS", "3"),
        ("DROIDPILOT_SERVER__TOKENS", TOKEN),
    ])
    .await;
    // Submitted on a connection the server closes after answering (read to its end), so
    // no third idle connection competes for room: which of two idle ones is older depends
    // on when each connection's task last ran, which a loaded machine reorders.
    let task = queued_task_closed(&app, Some(TOKEN)).await;
    // An authenticated client, idle between requests.
    let mut client = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = get(&app, &mut client, "/v1/tasks", Some(TOKEN)).await;
    assert_eq!(status, 200);
    let _ = read_body(&mut client, &head).await;
    // A stream in progress, and a connection whose request was refused.
    let (status, _, _sse) = open_sse(&app, &task, Some(TOKEN)).await;
    assert_eq!(status, 200);
    let mut stranger = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = get(&app, &mut stranger, "/v1/tasks", None).await;
    assert_eq!(status, 401);
    let _ = read_body(&mut stranger, &head).await;

    // All three places are taken: a newcomer is served, and the stranger made room.
    let mut newcomer = TcpStream::connect(app.addr).await.unwrap();
    let (status, head) = get(&app, &mut newcomer, "/v1/tasks", Some(TOKEN)).await;
    assert_eq!(status, 200);
    let _ = read_body(&mut newcomer, &head).await;
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stranger.read_to_end(&mut rest))
        .await
        .expect("the unauthenticated connection is closed")
        .ok();
    assert!(rest.is_empty());
    let (status, _) = get(&app, &mut client, "/v1/tasks", Some(TOKEN)).await;
    assert_eq!(
        status, 200,
        "the authenticated idle connection still serves"
    );
}

#[tokio::test]
async fn full_of_streams_a_newcomer_gets_503_until_one_closes() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__MAX_CONNECTIONS", "2")]).await;
    // The HTTP client's idle connection is closed for the second stream.
    let task = queued_task(&app, None).await;
    let (_, _, sse) = open_sse(&app, &task, None).await;
    let (status, _, _ws) = open_ws(&app, None).await;
    assert_eq!(status, 101);
    let (status, body) = refused(&app).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("server_busy"))
    );
    drop(sse);
    served_again(&app).await;
}

#[tokio::test]
async fn a_token_beyond_its_stream_cap_gets_429() {
    let tokens = format!("{TOKEN},{OTHER}");
    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__TOKENS", tokens.as_str()),
        ("DROIDPILOT_SERVER__MAX_STREAMS_PER_TOKEN", "2"),
    ])
    .await;
    let task = queued_task(&app, Some(TOKEN)).await;
    let (status, _, first) = open_sse(&app, &task, Some(TOKEN)).await;
    assert_eq!(status, 200);
    let (status, _, _ws) = open_ws(&app, Some(TOKEN)).await;
    assert_eq!(status, 101);
    for (what, (status, head, mut s)) in [
        ("SSE", open_sse(&app, &task, Some(TOKEN)).await),
        ("WebSocket", open_ws(&app, Some(TOKEN)).await),
    ] {
        assert_eq!(status, 429, "{what}");
        let body = read_body(&mut s, &head).await;
        assert_eq!(body["error"]["code"], "too_many_streams", "{what}");
        let hint = body["error"]["hint"].as_str().unwrap();
        assert!(hint.contains("server.max_streams_per_token"), "{hint}");
    }
    // Another token has its own cap; a refused token does not take from anyone's.
    let (status, _, _other) = open_sse(&app, &task, Some(OTHER)).await;
    assert_eq!(status, 200);
    for _ in 0..3 {
        let (status, _, _) = open_sse(&app, &task, Some("wrong-token-0123456789")).await;
        assert_eq!(status, 401);
    }
    let (status, _, _other2) = open_sse(&app, &task, Some(OTHER)).await;
    assert_eq!(status, 200);
    // A closed stream gives its place back.
    drop(first);
    for attempt in 0.. {
        let (status, _, s) = open_sse(&app, &task, Some(TOKEN)).await;
        if status == 200 {
            drop(s);
            break;
        }
        assert!(attempt < 100, "the closed stream's place never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A fresh connection from `source` with one `GET /v1/tasks?limit=1` (the token, if any)
/// that it then closes: the status and, for an error, the body.
async fn one_get_from(app: &TestApp, source: [u8; 4], token: Option<&str>) -> (u16, Value) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::from((source, 0)))
        .unwrap();
    let mut s = socket.connect(app.addr).await.unwrap();
    let req = format!(
        "GET /v1/tasks?limit=1 HTTP/1.1\r\nhost: {}\r\n{}connection: close\r\n\r\n",
        app.addr,
        auth(token)
    );
    // A connection refused at accept may be closed before the request is written.
    let _ = s.write_all(req.as_bytes()).await;
    let (status, head) = read_head(&mut s).await;
    let body = if status >= 400 {
        assert!(
            status != 429 || head.contains("retry-after: "),
            "a 429 says when to retry: {head}"
        );
        read_body(&mut s, &head).await
    } else {
        Value::Null
    };
    (status, body)
}

#[tokio::test]
async fn a_client_whose_connections_are_refused_is_held_to_a_connection_rate_others_are_not() {
    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__TOKENS", TOKEN),
        ("DROIDPILOT_SERVER__CONNECTION_BURST_PER_IP", "5"),
        // One token back every 100 s: none during the test.
        ("DROIDPILOT_SERVER__CONNECTION_RATE_PER_IP", "0.01"),
    ])
    .await;
    // A client whose requests succeed opens as many fresh connections as it likes.
    for _ in 0..20 {
        let (status, body) = one_get_from(&app, [127, 0, 0, 1], Some(TOKEN)).await;
        assert_eq!(status, 200, "{body}");
    }
    // One whose requests are refused has its burst, then is refused at accept.
    for _ in 0..5 {
        let (status, body) = one_get_from(&app, [127, 0, 0, 2], None).await;
        assert_eq!(status, 401, "{body}");
    }
    let (status, body) = one_get_from(&app, [127, 0, 0, 2], Some(TOKEN)).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "too_many_new_connections");
    let hint = body["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("server.connection_rate_per_ip"), "{hint}");
    // The limit is per client: the first one is still served.
    let (status, body) = one_get_from(&app, [127, 0, 0, 1], Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
}
