//! Live streams: SSE resume by `since` and `Last-Event-ID`, the WebSocket protocol.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::common::{TestApp, error_of, spawn_app};

/// Reads SSE events (type, id, data) until the server closes the stream.
async fn read_sse(resp: reqwest::Response) -> Vec<(String, i64, Value)> {
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), resp.text())
        .await
        .expect("stream ends after task.finished")
        .unwrap();
    parse_sse(&body)
}

fn parse_sse(body: &str) -> Vec<(String, i64, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let (mut kind, mut id, mut data) = (None, None, None);
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    kind = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(v).ok();
                }
            }
            Some((kind?, id.unwrap_or(-1), data?))
        })
        .collect()
}

async fn new_task(app: &TestApp) -> String {
    let t: Value = app
        .post_json("/v1/tasks", &json!({"instruction": "stream me"}))
        .await
        .json()
        .await
        .unwrap();
    t["id"].as_str().unwrap().to_string()
}

async fn cancel(app: &TestApp, id: &str) {
    app.client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn sse_replays_and_ends_after_finish() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    cancel(&app, &id).await;
    let events = read_sse(app.get(&format!("/v1/tasks/{id}/events")).await).await;
    let kinds: Vec<(&str, i64)> = events.iter().map(|(k, s, _)| (k.as_str(), *s)).collect();
    assert_eq!(kinds, vec![("task.queued", 1), ("task.finished", 2)]);
    assert_eq!(events[1].2["payload"]["status"], "cancelled");
    assert_eq!(events[1].2["stream"], id.as_str());
}

#[tokio::test]
async fn sse_resumes_with_since_and_last_event_id() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    cancel(&app, &id).await;
    let by_query = read_sse(app.get(&format!("/v1/tasks/{id}/events?since=1")).await).await;
    assert_eq!(by_query.iter().map(|e| e.1).collect::<Vec<_>>(), vec![2]);
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}/events")))
        .header("Last-Event-ID", "1")
        .send()
        .await
        .unwrap();
    let by_header = read_sse(r).await;
    assert_eq!(by_header.iter().map(|e| e.1).collect::<Vec<_>>(), vec![2]);
}

#[tokio::test]
async fn sse_delivers_live_events() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    let resp = app.get(&format!("/v1/tasks/{id}/events")).await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("task.queued"));
    // The cancel happens after the client connected: it arrives live.
    cancel(&app, &id).await;
    let mut rest = String::new();
    while let Some(chunk) = tokio::time::timeout(std::time::Duration::from_secs(5), body.next())
        .await
        .unwrap()
    {
        rest.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let events = parse_sse(&rest);
    assert_eq!(events.last().map(|e| e.0.as_str()), Some("task.finished"));
}

#[tokio::test]
async fn sse_errors_use_the_shape() {
    let app = spawn_app().await;
    let (status, code, _, _) = error_of(
        app.get("/v1/tasks/01a1ffb2-747e-7756-9ab6-b6911e673bb6/events")
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "task_not_found"));
    let id = new_task(&app).await;
    let (status, code, _, _) =
        error_of(app.get(&format!("/v1/tasks/{id}/events?since=abc")).await).await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));
}

#[tokio::test]
async fn answer_without_a_question_is_a_conflict() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    let (status, code, _, hint) = error_of(
        app.post_json(&format!("/v1/tasks/{id}/answer"), &json!({"answer": "yes"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "no_open_question"));
    assert!(hint.contains("task.ask_user"));
    let (status, code, _, _) = error_of(
        app.post_json(&format!("/v1/tasks/{id}/answer"), &json!({"answr": "yes"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_request"));
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws_connect(app: &TestApp) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/v1/ws", app.addr))
        .await
        .expect("websocket upgrade");
    ws
}

async fn ws_send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

async fn ws_recv(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(5), ws.next())
            .await
            .expect("a message in time")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

#[tokio::test]
async fn websocket_subscribe_replay_and_cancel() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    let mut ws = ws_connect(&app).await;
    ws_send(&mut ws, json!({"type": "subscribe", "tasks": [id]})).await;
    let mut got = [ws_recv(&mut ws).await, ws_recv(&mut ws).await];
    got.sort_by_key(|v| v["type"].as_str().unwrap_or_default().to_string());
    assert_eq!(got[0]["type"], "event");
    assert_eq!(got[0]["event"]["type"], "task.queued");
    assert_eq!(got[1]["type"], "subscribed");

    ws_send(&mut ws, json!({"type": "cancel", "task_id": id})).await;
    let mut types = Vec::new();
    for _ in 0..2 {
        let v = ws_recv(&mut ws).await;
        types.push(match v["type"].as_str().unwrap() {
            "event" => v["event"]["type"].as_str().unwrap().to_string(),
            other => other.to_string(),
        });
    }
    types.sort();
    assert_eq!(types, vec!["cancelled", "task.finished"]);

    ws_send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(ws_recv(&mut ws).await["type"], "pong");
}

#[tokio::test]
async fn websocket_since_skips_what_the_client_has() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    cancel(&app, &id).await;
    let mut ws = ws_connect(&app).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "tasks": [id], "since": {id.clone(): 1}}),
    )
    .await;
    let mut events = Vec::new();
    for _ in 0..2 {
        let v = ws_recv(&mut ws).await;
        if v["type"] == "event" {
            events.push(v["event"]["seq"].as_i64().unwrap());
        }
    }
    assert_eq!(events, vec![2]);
}

#[tokio::test]
async fn websocket_bad_messages_get_errors_not_disconnects() {
    let app = spawn_app().await;
    let mut ws = ws_connect(&app).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "tasks": ["01a1ffb2-747e-7756-9ab6-b6911e673bb6"]}),
    )
    .await;
    let v = ws_recv(&mut ws).await;
    assert_eq!(
        (v["type"].as_str(), v["error"]["code"].as_str()),
        (Some("error"), Some("task_not_found"))
    );
    ws.send(Message::Text("not json".into())).await.unwrap();
    let v = ws_recv(&mut ws).await;
    assert_eq!(v["error"]["code"], "invalid_message");
    assert!(v["error"]["hint"].as_str().unwrap().contains("subscribe"));
    ws_send(&mut ws, json!({"type": "fly"})).await;
    assert_eq!(ws_recv(&mut ws).await["error"]["code"], "invalid_message");
    ws_send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(
        ws_recv(&mut ws).await["type"],
        "pong",
        "the session survives bad messages"
    );
}

#[tokio::test]
async fn sse_resumed_at_or_past_the_end_of_a_finished_task_closes() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    cancel(&app, &id).await;
    // seq 2 is `task.finished`: the client has everything, the stream ends empty.
    for since in ["2", "7"] {
        let events = read_sse(
            app.get(&format!("/v1/tasks/{id}/events?since={since}"))
                .await,
        )
        .await;
        assert!(events.is_empty(), "since={since}: {events:?}");
        let r = app
            .client
            .get(app.url(&format!("/v1/tasks/{id}/events")))
            .header("Last-Event-ID", since)
            .send()
            .await
            .unwrap();
        assert!(read_sse(r).await.is_empty(), "Last-Event-ID: {since}");
    }
}

#[tokio::test]
async fn sse_refuses_a_last_event_id_that_is_not_a_seq() {
    let app = spawn_app().await;
    let id = new_task(&app).await;
    let r = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}/events")))
        .header("Last-Event-ID", "abc")
        .send()
        .await
        .unwrap();
    let (status, code, message, _) = error_of(r).await;
    assert_eq!((status, code.as_str()), (400, "invalid_last_event_id"));
    assert!(message.contains("abc"), "{message}");
}

#[tokio::test]
async fn websocket_subscribe_says_which_tasks_are_finished() {
    let app = spawn_app().await;
    let (done, live) = (new_task(&app).await, new_task(&app).await);
    cancel(&app, &done).await;
    let mut ws = ws_connect(&app).await;
    ws_send(
        &mut ws,
        json!({"type": "subscribe", "tasks": [done, live], "since": {done.clone(): 2, live.clone(): 1}}),
    )
    .await;
    let v = ws_recv(&mut ws).await;
    assert_eq!(v["type"], "subscribed");
    assert_eq!(v["finished"], json!([done]));
}

#[tokio::test]
async fn websocket_subscriptions_add_up() {
    let app = spawn_app().await;
    let (a, b) = (new_task(&app).await, new_task(&app).await);
    let mut ws = ws_connect(&app).await;
    for id in [&a, &b] {
        ws_send(
            &mut ws,
            json!({"type": "subscribe", "tasks": [id], "since": {id.clone(): 1}}),
        )
        .await;
        assert_eq!(ws_recv(&mut ws).await["type"], "subscribed");
    }
    for id in [&a, &b] {
        cancel(&app, id).await;
    }
    let mut finished = Vec::new();
    while finished.len() < 2 {
        let v = ws_recv(&mut ws).await;
        if v["event"]["type"] == "task.finished" {
            finished.push(v["event"]["stream"].as_str().unwrap().to_string());
        }
    }
    finished.sort();
    let mut want = vec![a, b];
    want.sort();
    assert_eq!(
        finished, want,
        "the second subscribe did not replace the first"
    );
}

#[tokio::test]
async fn websocket_binary_frames_get_an_error() {
    let app = spawn_app().await;
    let mut ws = ws_connect(&app).await;
    ws.send(Message::Binary(vec![1, 2, 3].into()))
        .await
        .unwrap();
    let v = ws_recv(&mut ws).await;
    assert_eq!(v["error"]["code"], "binary_not_supported");
    assert!(v["error"]["hint"].as_str().unwrap().contains("text"));
    ws_send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(ws_recv(&mut ws).await["type"], "pong");
}

#[tokio::test]
async fn websocket_oversized_message_closes_with_1009() {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    let app = spawn_app().await;
    let mut ws = ws_connect(&app).await;
    let ids: Vec<String> = (0..2000)
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    ws_send(&mut ws, json!({"type": "subscribe", "tasks": ids})).await;
    let close = loop {
        let msg = tokio::time::timeout(std::time::Duration::from_secs(5), ws.next())
            .await
            .expect("the server answers the oversized message")
            .expect("a close frame before the end")
            .expect("a clean close, not a dropped connection");
        if let Message::Close(frame) = msg {
            break frame.expect("the close frame says why");
        }
    };
    assert_eq!(close.code, CloseCode::Size);
    assert!(close.reason.contains("64 KiB"), "{}", close.reason);
}

/// The session reads in small pieces (a 4 KiB buffer); a message near the 64 KiB limit
/// still arrives whole and is answered.
#[tokio::test]
async fn websocket_message_just_under_the_limit_is_read_whole() {
    let app = spawn_app().await;
    let mut ws = ws_connect(&app).await;
    let ids: Vec<String> = (0..1500)
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    let msg = json!({"type": "subscribe", "tasks": ids});
    let len = msg.to_string().len();
    assert!((50 * 1024..64 * 1024).contains(&len), "{len} bytes");
    ws_send(&mut ws, msg).await;
    // Parsed whole: the answer is about its first (unknown) task, not a malformed message.
    let reply = ws_recv(&mut ws).await;
    assert_eq!(reply["error"]["code"], "task_not_found", "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&ids[0])),
        "{reply}"
    );
    ws_send(&mut ws, json!({"type": "ping"})).await;
    loop {
        if ws_recv(&mut ws).await["type"] == "pong" {
            break;
        }
    }
}

#[tokio::test]
async fn websocket_catch_up_on_many_streams_sends_every_event_once_in_order() {
    // 60 finished tasks, ~180 events replayed at once: the session sends what is waiting
    // in bursts (64 per write), and nothing in a burst may be lost, doubled or reordered.
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for _ in 0..60 {
        let id = new_task(&app).await;
        cancel(&app, &id).await;
        ids.push(id);
    }
    let mut ws = ws_connect(&app).await;
    ws_send(&mut ws, json!({"type": "subscribe", "tasks": ids})).await;
    let mut seqs: std::collections::HashMap<String, Vec<i64>> = Default::default();
    let mut finished = 0;
    let mut total = 0;
    while finished < ids.len() {
        let v = ws_recv(&mut ws).await;
        if v["type"] != "event" {
            continue;
        }
        total += 1;
        let stream = v["event"]["stream"].as_str().unwrap().to_string();
        seqs.entry(stream)
            .or_default()
            .push(v["event"]["seq"].as_i64().unwrap());
        if v["event"]["type"] == "task.finished" {
            finished += 1;
        }
    }
    assert!(total > 64, "only {total} events: no burst was tested");
    for id in &ids {
        let got = &seqs[id];
        let want: Vec<i64> = (1..=got.len() as i64).collect();
        assert_eq!(got, &want, "task {id}");
    }
}
