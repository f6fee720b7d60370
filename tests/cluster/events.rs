//! Events, answers and cancels across instances: two real `droidpilot serve` processes on
//! one fresh database, A with phones `a-1`…`a-4`, B with `b-1`…`b-4`.
//! - 100 replay tasks submitted to A only are run by both, each exactly once;
//! - a WebSocket client on B (subscribed to everything) sees every event of every task,
//!   A's included, gapless per stream, and a second one resumes a task of A's with `since`;
//! - an answer sent to B (over its WebSocket) reaches the question of a task running on
//!   A, and a cancel sent to B (REST) stops a task running on A.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use sqlx::Connection;
use tokio_tungstenite::tungstenite::Message;

use crate::common::pg::FreshDb;
use crate::common::serve::{free_port, get, start, submit};

/// One instance's `config/local.toml`: its own phones, the shared database.
fn configure(dir: &Path, port: u16, db: &str, name: &str) {
    let sims: String = (1..=4)
        .map(|i| format!("[[devices.sim]]\nserial = \"{name}-{i}\"\nwidth = 540\nheight = 1200\n"))
        .collect();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\ndatabase_url = \"{db}\"\npool_size = 8\n\
             [devices.adb]\nenabled = false\n{sims}\
             [runner]\nstep_delay_ms = 20\nstuck_threshold = 1000\nsettle_timeout_ms = 200\n[scheduler]\npoll_ms = 50\n\
             [cluster]\ninstance = \"{name}\"\n"
        ),
    )
    .unwrap();
}

/// Polls `port` until `done(task)` holds for task `id`; returns the task.
async fn wait_task(port: u16, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut t = Value::Null;
    for _ in 0..1200 {
        t = get(port, &format!("/v1/tasks/{id}")).await;
        if done(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id}: {what} never happened: {t}");
}

fn terminal(t: &Value) -> bool {
    !matches!(
        t["status"].as_str().unwrap(),
        "queued" | "running" | "waiting_for_user" | "paused"
    )
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws_connect(port: u16, subscribe: Value) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/v1/ws"))
        .await
        .expect("the WebSocket opens");
    ws.send(Message::Text(subscribe.to_string().into()))
        .await
        .unwrap();
    loop {
        let m = next_json(&mut ws).await;
        if m["type"] == "subscribed" {
            return ws;
        }
        assert_ne!(m["type"], "error", "{m}");
    }
}

async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("a WebSocket message within 30 s")
            .expect("the WebSocket stays open")
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// (seq, type) of each event a WebSocket delivered, per stream, in delivery order.
type Seen = Arc<Mutex<HashMap<String, Vec<(i64, String)>>>>;

/// Collects every event `ws` delivers into `seen`; other messages (replies to commands
/// sent through `commands`) go to `replies`.
fn collect(
    mut ws: Ws,
    seen: Seen,
) -> (
    tokio::sync::mpsc::Sender<Value>,
    tokio::sync::mpsc::Receiver<Value>,
) {
    let (cmd_tx, mut cmd_rx) = tokio::sync::mpsc::channel::<Value>(8);
    let (reply_tx, reply_rx) = tokio::sync::mpsc::channel::<Value>(8);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                cmd = cmd_rx.recv() => match cmd {
                    Some(c) => ws.send(Message::Text(c.to_string().into())).await.unwrap(),
                    None => return,
                },
                m = ws.next() => {
                    let Some(Ok(Message::Text(t))) = m else { continue };
                    let m: Value = serde_json::from_str(t.as_str()).unwrap();
                    if m["type"] == "event" {
                        let e = &m["event"];
                        seen.lock().unwrap()
                            .entry(e["stream"].as_str().unwrap().to_string())
                            .or_default()
                            .push((e["seq"].as_i64().unwrap(), e["type"].as_str().unwrap().to_string()));
                    } else if reply_tx.send(m).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    (cmd_tx, reply_rx)
}

/// Each stored event (seq, type) per stream, read from the database itself.
async fn stored_events(url: &str) -> HashMap<String, Vec<(i64, String)>> {
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(String, i64, String)> =
        sqlx::query_as("SELECT stream, seq, type FROM events ORDER BY stream, seq")
            .fetch_all(&mut c)
            .await
            .unwrap();
    let _ = c.close().await;
    let mut out: HashMap<String, Vec<(i64, String)>> = HashMap::new();
    for (stream, seq, ty) in rows {
        out.entry(stream).or_default().push((seq, ty));
    }
    out
}

fn short_task(i: usize) -> Value {
    json!({"instruction": format!("short task {i}"), "agent": {"kind": "replay", "actions": [
        {"action": "wait", "ms": 1001}, {"action": "wait", "ms": 1002}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_answers_and_cancels_reach_across_instances() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (pa, pb) = (free_port(), free_port());
    configure(dir_a.path(), pa, &db.url, "a");
    configure(dir_b.path(), pb, &db.url, "b");
    // Both up before anything is submitted (start-up interrupts tasks left running).
    let a = start(dir_a.path(), pa).await;
    let b = start(dir_b.path(), pb).await;

    let seen: Seen = Arc::default();
    let ws_b = ws_connect(pb, json!({"type": "subscribe", "all": true})).await;
    let (cmd, mut replies) = collect(ws_b, seen.clone());

    // Pinned to A's phones: a long task to cancel from B, a question to answer from B.
    let swipes: Vec<Value> = (0..300)
        .map(|_| json!({"action": "swipe", "direction": "left"}))
        .collect();
    let long = submit(
        pa,
        json!({"instruction": "long", "max_steps": 400, "device_id": "a-1",
        "agent": {"kind": "replay", "actions": swipes}}),
    )
    .await;
    let ask = submit(pa, json!({"instruction": "ask", "device_id": "a-2", "agent": {"kind": "replay",
        "actions": [{"action": "ask_user", "question": "Which one?"}, {"action": "wait", "ms": 1003}]}}))
    .await;
    let mut ids = Vec::new();
    for i in 0..100 {
        ids.push(submit(pa, short_task(i)).await);
    }

    // The answer, sent to B over its WebSocket, reaches the runner on A.
    wait_task(pb, &ask, "waiting for an answer", |t| {
        t["status"] == "waiting_for_user"
    })
    .await;
    cmd.send(json!({"type": "answer", "task_id": ask, "answer": "the blue one"}))
        .await
        .unwrap();
    let reply = replies.recv().await.unwrap();
    assert_eq!(reply["type"], "answered", "{reply}");
    let t = wait_task(pb, &ask, "the end", terminal).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["assigned_device"], "a-2");
    let steps = get(pb, &format!("/v1/tasks/{ask}/steps")).await.to_string();
    assert!(
        steps.contains("the blue one"),
        "the runner on A got the answer: {steps}"
    );

    // The cancel, sent to B over REST, stops the runner on A.
    wait_task(pb, &long, "two steps", |t| t["steps"].as_u64() >= Some(2)).await;
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{pb}/v1/tasks/{long}/cancel"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let t = wait_task(pb, &long, "the end", terminal).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    assert!(t["steps"].as_u64().unwrap() < 300, "stopped early: {t}");

    // Every short task ran once, on one of the two instances, and both took some.
    let mut on = BTreeMap::<String, Vec<&String>>::new();
    for id in &ids {
        let t = wait_task(pa, id, "the end", terminal).await;
        assert_eq!(t["status"], "succeeded", "{t}");
        let device = t["assigned_device"].as_str().unwrap();
        on.entry(device[..1].to_string()).or_default().push(id);
    }
    let counts: Vec<(&String, usize)> = on.iter().map(|(k, v)| (k, v.len())).collect();
    assert_eq!(on.len(), 2, "both instances ran tasks: {counts:?}");

    // B's WebSocket saw each task's whole stream, gapless, in order, ending in its end.
    let all: Vec<&String> = ids.iter().chain([&ask, &long]).collect();
    for _ in 0..200 {
        let done = {
            let s = seen.lock().unwrap();
            all.iter().all(|id| {
                s.get(*id)
                    .is_some_and(|v| v.last().is_some_and(|(_, t)| t == "task.finished"))
            })
        };
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stored = stored_events(&db.url).await;
    let seen = seen.lock().unwrap().clone();
    for id in &all {
        let want = &stored[*id];
        assert_eq!(
            seen.get(*id),
            Some(want),
            "task {id}: B's WebSocket vs the table"
        );
        let started = want.iter().filter(|(_, t)| t == "task.started").count();
        assert_eq!(started, 1, "task {id} started once: {want:?}");
        let steps = get(pb, &format!("/v1/tasks/{id}/steps")).await;
        let ns: Vec<u64> = steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["n"].as_u64().unwrap())
            .collect();
        assert_eq!(
            ns,
            (1..=ns.len() as u64).collect::<Vec<_>>(),
            "task {id}: each step once"
        );
    }

    // A client on B resumes a task that ran on A from `since`.
    let on_a = on["a"][0];
    let mut ws = ws_connect(
        pb,
        json!({"type": "subscribe", "tasks": [on_a], "since": {on_a.as_str(): 2}}),
    )
    .await;
    let mut resumed = Vec::new();
    while resumed.len() < stored[on_a].len() - 2 {
        let m = next_json(&mut ws).await;
        if m["type"] == "event" {
            resumed.push((
                m["event"]["seq"].as_i64().unwrap(),
                m["event"]["type"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert_eq!(resumed, stored[on_a][2..].to_vec());

    drop((a, b));
    // The database is left to the throw-away cluster: `FreshDb::drop_now` hung here
    // (not understood yet; see the report of branch i16-bus).
    let _ = db;
}
