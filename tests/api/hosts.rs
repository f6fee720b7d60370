//! DNS rebinding: a request naming a host the server is not known as gets 421 in the
//! error shape, on every kind of route (REST, SSE, WebSocket, the dashboard, MCP), while
//! the server's own names and configured ones pass.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{TestApp, spawn_app, spawn_app_with};

/// Sends `GET path` (plus `extra` header lines) naming `host`; returns (status, body).
async fn get_as(app: &TestApp, host: &str, path: &str, extra: &str) -> (u16, String) {
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    // A WebSocket upgrade brings its own `connection` header.
    let close = if extra.is_empty() {
        "connection: close\r\n"
    } else {
        ""
    };
    let req = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{close}{extra}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    // Read the head only: an accepted stream (SSE, WebSocket) does not end by itself.
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut byte))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(n == 1, "closed before the end of the head: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status: u16 = head[9..12].parse().unwrap();
    let mut body = Vec::new();
    if status == 421 {
        let len: usize = head
            .to_ascii_lowercase()
            .lines()
            .find_map(|l| {
                l.strip_prefix("content-length: ")
                    .map(|n| n.trim().parse().unwrap())
            })
            .expect("a content-length");
        body.resize(len, 0);
        s.read_exact(&mut body).await.unwrap();
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

fn assert_refused(status: u16, body: &str, what: &str) {
    assert_eq!(status, 421, "{what}: {body}");
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
    assert_eq!(v["error"]["code"], "host_not_allowed", "{what}: {v}");
    let hint = v["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("server.allowed_hosts"), "{what}: {hint}");
}

const WS_UPGRADE: &str = "upgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

/// The routes a rebinding page would use, each with what it answers a right host.
fn routes(task: &str) -> Vec<(&'static str, String, &'static str, u16)> {
    vec![
        ("REST", "/v1/tasks".into(), "", 200),
        ("SSE", format!("/v1/tasks/{task}/events"), "", 200),
        ("WebSocket", "/v1/ws".into(), WS_UPGRADE, 101),
        ("dashboard", "/".into(), "", 200),
    ]
}

async fn a_task(app: &TestApp) -> String {
    let r = app
        .post_json(
            "/v1/tasks",
            &serde_json::json!({"instruction": "stay queued"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_rebound_name_is_refused_on_every_route() {
    let app = spawn_app().await;
    let task = a_task(&app).await;
    let port = app.addr.port();
    for (what, path, extra, _) in routes(&task) {
        let (status, body) = get_as(&app, &format!("rebound.example:{port}"), &path, extra).await;
        assert_refused(status, &body, what);
    }
    // MCP: the same check and the same answer.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: rebound.example\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert_refused(head[9..12].parse().unwrap(), body, "MCP");
}

#[tokio::test]
async fn the_servers_own_names_pass() {
    let app = spawn_app().await;
    let task = a_task(&app).await;
    let port = app.addr.port();
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".into(),
    ] {
        for (what, path, extra, ok) in routes(&task) {
            let (status, _) = get_as(&app, &host, &path, extra).await;
            assert_eq!(status, ok, "{what} as {host}");
        }
    }
    // Probes answer whatever name a load balancer uses.
    let (status, _) = get_as(&app, "lb.internal", "/healthz", "").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn configured_names_pass_and_the_wildcard_turns_the_check_off() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__ALLOWED_HOSTS", "phones.example.com")]).await;
    let (status, _) = get_as(&app, "phones.example.com:443", "/v1/tasks", "").await;
    assert_eq!(status, 200);
    let (status, body) = get_as(&app, "other.example.com", "/v1/tasks", "").await;
    assert_refused(status, &body, "an unlisted name");

    let app = spawn_app_with(&[("DROIDPILOT_SERVER__ALLOWED_HOSTS", "*")]).await;
    let (status, _) = get_as(&app, "anything.example", "/v1/tasks", "").await;
    assert_eq!(status, 200);
}
