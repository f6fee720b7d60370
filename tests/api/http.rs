//! HTTP plumbing over real sockets: connection limits and timeouts, hyper's own error
//! responses, compression of errors, authentication details, the docs' access.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{error_of, spawn_app, spawn_app_with};

const TOKEN: &str = "test-token-0123456789";

/// Sends raw bytes and reads until the server closes the connection (bounded).
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("the server answers and closes");
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits a raw HTTP/1.1 response into (status, lower-cased head, body).
fn split_response(raw: &str) -> (u16, String, String) {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .expect("a complete response head");
    let status = head[9..12].parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn assert_error_shape(body: &str, code: &str) {
    let v: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("JSON body ({e}): {body:?}"));
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(
        v["error"]["hint"].as_str().is_some_and(|h| !h.is_empty()),
        "{v}"
    );
}

#[tokio::test]
async fn a_huge_uri_gets_414_in_the_error_shape() {
    let app = spawn_app().await;
    let cursor = "a".repeat(100_000);
    let req = format!("GET /v1/tasks?cursor={cursor} HTTP/1.1\r\nhost: x\r\n\r\n");
    let (status, head, body) = split_response(&raw_exchange(app.addr, req.as_bytes()).await);
    assert_eq!(status, 414);
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}", body.len())),
        "{head}"
    );
    assert_error_shape(&body, "uri_too_long");
}

#[tokio::test]
async fn huge_headers_get_431_in_the_error_shape() {
    let app = spawn_app().await;
    let big = "b".repeat(500_000);
    let req = format!("GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {big}\r\n\r\n");
    let (status, head, body) = split_response(&raw_exchange(app.addr, req.as_bytes()).await);
    assert_eq!(status, 431);
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_error_shape(&body, "headers_too_large");
    // The limit is the head's size, not how the kernel happens to split its bytes: a head
    // just over 400 KiB fits hyper's read buffer whole and was once served with 200.
    let just_over = "c".repeat(400 * 1024);
    let req = format!("GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {just_over}\r\n\r\n");
    let (status, _, body) = split_response(&raw_exchange(app.addr, req.as_bytes()).await);
    assert_eq!(status, 431);
    assert_error_shape(&body, "headers_too_large");
    // One just under it is served.
    let under = "d".repeat(390 * 1024);
    let req =
        format!("GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-big: {under}\r\n\r\n");
    let (status, _, _) = split_response(&raw_exchange(app.addr, req.as_bytes()).await);
    assert_eq!(status, 200);
    // Too many headers is the same status.
    let many: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
    let req = format!("GET /healthz HTTP/1.1\r\nhost: x\r\n{many}\r\n");
    let (status, _, body) = split_response(&raw_exchange(app.addr, req.as_bytes()).await);
    assert_eq!(status, 431);
    assert_error_shape(&body, "headers_too_large");
}

#[tokio::test]
async fn a_garbled_request_line_gets_400_in_the_error_shape() {
    let app = spawn_app().await;
    let (status, _, body) =
        split_response(&raw_exchange(app.addr, b"GET /\x01bad HTTP/1.1\r\nhost: x\r\n\r\n").await);
    assert_eq!(status, 400);
    assert_error_shape(&body, "bad_request");
}

/// Reads until the server closes the connection; panics if it has not within 10 s.
async fn closed_by_server(s: &mut TcpStream, why: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap_or_else(|_| panic!("{why}: still open after 10 s"))
        .ok();
    buf
}

#[tokio::test]
async fn slow_request_heads_are_closed_after_the_header_timeout() {
    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__HEADER_READ_TIMEOUT_SECS", "1"),
        ("DROIDPILOT_SERVER__IDLE_TIMEOUT_SECS", "60"),
    ])
    .await;
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(b"GET /v1/tas").await.unwrap();
    closed_by_server(&mut s, "half a request line").await;

    // A byte every 200 ms never completes the head: the clock runs from the first byte.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    let trickle = async {
        for b in b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: "
            .iter()
            .cycle()
        {
            if s.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), trickle)
        .await
        .expect("a trickling client is cut off long before 10 s");
}

#[tokio::test]
async fn idle_connections_live_until_the_idle_timeout_not_the_header_timeout() {
    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__HEADER_READ_TIMEOUT_SECS", "1"),
        ("DROIDPILOT_SERVER__IDLE_TIMEOUT_SECS", "3"),
    ])
    .await;
    let request = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n";
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let mut rest = [0u8; 4096];
    let _ = s.read(&mut rest).await.unwrap();
    // Idle for longer than the header timeout: the connection still serves.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.write_all(request).await.unwrap();
    s.read_exact(&mut head).await.unwrap();
    assert_eq!(
        &head, b"HTTP/1.1 200",
        "a keep-alive connection outlives the header timeout"
    );
    let _ = s.read(&mut rest).await.unwrap();
    closed_by_server(&mut s, "an idle keep-alive connection").await;

    // A silent connection is idle too.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    closed_by_server(&mut s, "a silent connection").await;

    // A WebSocket is not an HTTP head: quiet for longer than the header timeout, it lives.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/v1/ws", app.addr))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    use futures::{SinkExt, StreamExt};
    ws.send(tokio_tungstenite::tungstenite::Message::Text(
        r#"{"type":"ping"}"#.into(),
    ))
    .await
    .unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("a reply")
        .unwrap()
        .unwrap();
    assert!(reply.to_text().unwrap().contains("pong"));
}

async fn ws_without_upgrade(app: &crate::common::TestApp, gzip: bool) -> reqwest::Response {
    let mut rb = app.client.get(app.url("/v1/ws"));
    if gzip {
        rb = rb.header("accept-encoding", "gzip");
    }
    rb.send().await.unwrap()
}

#[tokio::test]
async fn websocket_rejection_is_plain_json_with_or_without_gzip() {
    let app = spawn_app().await;
    let r = ws_without_upgrade(&app, false).await;
    assert_eq!(r.headers()["upgrade"], "websocket");
    let (status, code, message, hint) = error_of(r).await;
    assert_eq!((status, code.as_str()), (426, "websocket_upgrade_required"));
    assert!(message.contains("/v1/ws"), "{message}");
    assert!(hint.contains("SSE"), "{hint}");

    let r = ws_without_upgrade(&app, true).await;
    assert_eq!(r.status(), 426);
    let gzipped = r
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v == "gzip");
    let bytes = r.bytes().await.unwrap();
    let body = if gzipped {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .expect("a gzip body decodes");
        s
    } else {
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    assert_error_shape(&body, "websocket_upgrade_required");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().is_ascii(),
        "the message is text, not compressed bytes: {v}"
    );
}

#[tokio::test]
async fn any_case_of_the_bearer_scheme_is_accepted() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__TOKENS", TOKEN)]).await;
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let r = app
            .client
            .get(app.url("/v1/tasks"))
            .header("authorization", format!("{scheme} {TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "scheme `{scheme}`");
    }
    let r = app
        .client
        .get(app.url("/v1/tasks"))
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(r).await.0,
        401,
        "another scheme is not a bearer token"
    );
}

#[tokio::test]
async fn docs_are_public_with_tokens_unless_configured_otherwise() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__TOKENS", TOKEN)]).await;
    assert_eq!(
        app.get("/docs/").await.status(),
        200,
        "Swagger UI opens without a token"
    );
    let spec: Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(
        spec["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(spec["security"][0]["bearer"], serde_json::json!([]));
    assert_eq!(
        app.get("/v1/tasks").await.status(),
        401,
        "the API still needs it"
    );

    let app = spawn_app_with(&[
        ("DROIDPILOT_SERVER__TOKENS", TOKEN),
        ("DROIDPILOT_SERVER__PUBLIC_DOCS", "false"),
    ])
    .await;
    assert_eq!(error_of(app.get("/openapi.json").await).await.0, 401);
    assert_eq!(error_of(app.get("/docs/").await).await.0, 401);
}

#[test]
fn the_spec_says_probes_are_public_and_everything_else_may_answer_401() {
    let spec: Value = serde_json::from_str(&droidpilot::server::openapi_json()).unwrap();
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(
            spec["paths"][probe]["get"]["security"],
            serde_json::json!([]),
            "{probe} needs no token"
        );
    }
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if path == "/healthz" || path == "/readyz" {
                continue;
            }
            assert!(
                op["responses"]["401"].is_object(),
                "{method} {path} documents 401"
            );
        }
    }
}

#[test]
fn the_spec_states_the_limits_the_server_enforces() {
    let spec: Value = serde_json::from_str(&droidpilot::server::openapi_json()).unwrap();
    let params = |path: &str, method: &str| -> Vec<Value> {
        spec["paths"][path][method]["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let param = |path: &str, method: &str, name: &str| -> Value {
        params(path, method)
            .into_iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path} has `{name}`"))["schema"]
            .clone()
    };
    // Task ids are UUIDs wherever they appear in a path.
    for (path, item) in spec["paths"].as_object().unwrap() {
        if !path.starts_with("/v1/tasks/{id}") {
            continue;
        }
        for (method, _) in item.as_object().unwrap() {
            assert_eq!(
                param(path, method, "id")["$ref"],
                "#/components/schemas/TaskId",
                "{method} {path}"
            );
            assert!(
                spec["paths"][path][method]["responses"]["400"].is_object(),
                "{method} {path}: a malformed id is a documented 400"
            );
        }
    }
    assert_eq!(spec["components"]["schemas"]["TaskId"]["format"], "uuid");
    let limit = param("/v1/tasks", "get", "limit");
    assert_eq!(
        (limit["minimum"].as_i64(), limit["maximum"].as_i64()),
        (Some(1), Some(500))
    );
    assert_eq!(limit["type"], "integer", "a query parameter is never null");
    let shot = "/v1/devices/{id}/screenshot";
    let quality = param(shot, "get", "quality");
    assert_eq!(
        (quality["minimum"].as_i64(), quality["maximum"].as_i64()),
        (Some(1), Some(100))
    );
    let scale = param(shot, "get", "scale");
    assert_eq!(
        (
            scale["exclusiveMinimum"].as_f64(),
            scale["maximum"].as_f64()
        ),
        (Some(0.0), Some(1.0))
    );
    assert!(spec["paths"][shot]["get"]["responses"]["200"]["content"]["image/jpeg"].is_object());
    for op in ["screenshot", "hierarchy", "screen", "apps", "context"] {
        let r = &spec["paths"][format!("/v1/devices/{{id}}/{op}")]["get"]["responses"];
        for status in ["502", "503", "504"] {
            assert!(r[status].is_object(), "{op} documents {status}");
        }
    }

    let new_task = &spec["components"]["schemas"]["NewTask"]["allOf"];
    let fields = &new_task[0]["properties"];
    assert_eq!(
        (
            fields["max_steps"]["minimum"].as_i64(),
            fields["max_steps"]["maximum"].as_i64()
        ),
        (Some(1), Some(1000))
    );
    assert_eq!(
        (
            fields["timeout_seconds"]["minimum"].as_i64(),
            fields["timeout_seconds"]["maximum"].as_i64()
        ),
        (Some(1), Some(86400))
    );
    let required: Vec<&Value> = new_task[1]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["required"][0])
        .collect();
    assert_eq!(
        required,
        vec!["instruction", "ai_prompt"],
        "one of the two is required"
    );

    let sse = &spec["paths"]["/v1/tasks/{id}/events"]["get"]["responses"]["200"]["content"];
    assert_eq!(
        sse["text/event-stream"]["schema"]["$ref"],
        "#/components/schemas/SseEvent"
    );
    assert!(
        spec["paths"]["/v1/tasks/{id}/answer"]["post"]["responses"]["415"].is_object(),
        "a body that is not JSON is a documented 415"
    );
}
