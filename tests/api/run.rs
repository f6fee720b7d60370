//! Tasks running end to end through the server on the virtual phone: model replies come
//! from wiremock in OpenAI's wire format, and the phone's own checker decides whether the
//! task really got done.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use droidpilot::device::sim::tasks::task as sim_task;
use droidpilot::device::sim::{SimConfig, SimDevice};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common::{TestApp, error_of, spawn_app_with, spawn_app_with_toml};

/// An app with no configured phones; tests add the `SimDevice`s they hold.
pub(crate) async fn bare_app(extra: &[(&str, &str)]) -> TestApp {
    let mut env = vec![
        ("DROIDPILOT_RUNNER__SETTLE_TIMEOUT_MS", "300"),
        ("DROIDPILOT_RUNNER__SETTLE_POLL_MS", "10"),
        ("DROIDPILOT_SCHEDULER__POLL_MS", "50"),
    ];
    env.extend_from_slice(extra);
    let app = spawn_app_with(&env).await;
    for d in app.pool.list() {
        app.pool.remove(&d.id).await.unwrap();
    }
    app
}

/// `bare_app` whose `[agent] allowed_base_urls` lists these model servers (a task may
/// name a base URL only when the operator allows it; no server key is sent there).
pub(crate) async fn app_for(models: &[&MockServer], extra: &[(&str, &str)]) -> TestApp {
    let allowed: Vec<String> = models.iter().map(|m| m.uri()).collect();
    let allowed = allowed.join(",");
    let mut env = vec![("DROIDPILOT_AGENT__ALLOWED_BASE_URLS", allowed.as_str())];
    env.extend_from_slice(extra);
    bare_app(&env).await
}

pub(crate) async fn add_phone(app: &TestApp, serial: &str, task: Option<&str>) -> Arc<SimDevice> {
    let cfg = SimConfig {
        serial: serial.into(),
        width: 540,
        height: 1200,
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(cfg).unwrap());
    if let Some(t) = task {
        phone.reset_to(&sim_task(t).unwrap());
    }
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    phone
}

/// Serves the given assistant replies in order (OpenAI Chat Completions shape); the
/// `status` list lets a test inject errors before a reply.
pub(crate) struct Script {
    replies: Vec<(u16, String)>,
    next: AtomicUsize,
    /// How long each reply takes (zero: at once).
    delay: std::time::Duration,
}

impl Respond for Script {
    fn respond(&self, _req: &Request) -> ResponseTemplate {
        let i = self
            .next
            .fetch_add(1, Ordering::SeqCst)
            .min(self.replies.len() - 1);
        let (status, content) = &self.replies[i];
        if *status != 200 {
            return ResponseTemplate::new(*status)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}}));
        }
        ResponseTemplate::new(200)
            .set_body_json(json!({
                "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_700_000_000, "model": "ui-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}
            }))
            .set_delay(self.delay)
    }
}

pub(crate) async fn model(replies: Vec<(u16, String)>) -> (MockServer, Arc<Script>) {
    model_paced(replies, std::time::Duration::ZERO).await
}

/// `model`, each reply taking `delay`, as a real model's does: work started beside the
/// decisions (a background plan) then lands while the task runs, however fast the
/// server's own part of a step is.
pub(crate) async fn model_paced(
    replies: Vec<(u16, String)>,
    delay: std::time::Duration,
) -> (MockServer, Arc<Script>) {
    let server = MockServer::start().await;
    let script = serve_replies(&server, replies, delay).await;
    (server, script)
}

/// Mounts `model_paced`'s replies on a server started earlier (one the app was
/// configured with before the replies were known).
pub(crate) async fn serve_replies(
    server: &MockServer,
    replies: Vec<(u16, String)>,
    delay: std::time::Duration,
) -> Arc<Script> {
    let script = Arc::new(Script {
        replies,
        next: AtomicUsize::new(0),
        delay,
    });
    struct Shared(Arc<Script>);
    impl Respond for Shared {
        fn respond(&self, r: &Request) -> ResponseTemplate {
            self.0.respond(r)
        }
    }
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Shared(script.clone()))
        .mount(server)
        .await;
    script
}

/// The generic vision format: `<thinking>…</thinking><tool_call>{action JSON}</tool_call>`.
pub(crate) fn generic(thinking: &str, action: &Value) -> String {
    format!("<thinking>{thinking}</thinking><tool_call>{action}</tool_call>")
}

pub(crate) fn agent_for(server: &MockServer) -> Value {
    json!({"kind": "vision", "format": "generic", "provider": "openai", "model": "ui-model", "base_url": format!("{}/v1", server.uri())})
}

pub(crate) async fn wait_done(app: &TestApp, id: &str) -> Value {
    for _ in 0..600 {
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if !matches!(
            t["status"].as_str(),
            Some("queued" | "running" | "waiting_for_user" | "paused")
        ) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not finish");
}

pub(crate) async fn wait_status(app: &TestApp, id: &str, status: &str) {
    for _ in 0..600 {
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if t["status"] == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never became {status}");
}

pub(crate) async fn submit(app: &TestApp, body: Value) -> String {
    let r = app.post_json("/v1/tasks", &body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// The reference solution of a scored task, as model replies, then finish.
fn replies_for(task: &str) -> Vec<(u16, String)> {
    let t = sim_task(task).unwrap();
    let mut v: Vec<(u16, String)> = t
        .reference()
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (
                200,
                generic(&format!("step {i}"), &serde_json::to_value(a).unwrap()),
            )
        })
        .collect();
    v.push((
        200,
        generic(
            "done",
            &json!({"action": "finish", "reason": "Bluetooth is on"}),
        ),
    ));
    v
}

/// Debug mode: with `debug_artifacts` each step's UI hierarchy is kept and served beside
/// its screenshot; without it there is none, and the 404 says how to get one.
#[tokio::test]
async fn debug_artifacts_keep_each_steps_hierarchy_xml() {
    for debug in [true, false] {
        let (server, _) = model(replies_for("settings.bluetooth_on")).await;
        let flag = debug.to_string();
        let app = app_for(&[&server], &[("DROIDPILOT_RUNNER__DEBUG_ARTIFACTS", &flag)]).await;
        add_phone(&app, "sim-1", Some("settings.bluetooth_on")).await;
        let id = submit(&app, json!({"instruction": "Turn on Bluetooth", "agent": agent_for(&server), "device_id": "sim-1"})).await;
        assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
        let r = app.get(&format!("/v1/tasks/{id}/steps/1/hierarchy")).await;
        if !debug {
            let (status, code, _, hint) = error_of(r).await;
            assert_eq!((status, code.as_str()), (404, "no_hierarchy"));
            assert!(hint.contains("debug_artifacts"), "{hint}");
            continue;
        }
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/xml");
        let xml = r.text().await.unwrap();
        assert!(
            xml.contains("<hierarchy") && xml.contains("Settings"),
            "{xml}"
        );
        let steps: Vec<Value> = app
            .get(&format!("/v1/tasks/{id}/steps"))
            .await
            .json()
            .await
            .unwrap();
        assert!(
            steps.iter().all(|s| s["screen"]["hierarchy"].is_string()),
            "every step keeps one"
        );
    }
}

#[tokio::test]
async fn a_task_completes_on_the_virtual_phone_with_a_real_model_protocol() {
    let (server, _) = model(replies_for("settings.bluetooth_on")).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "sim-1", Some("settings.bluetooth_on")).await;
    let id = submit(&app, json!({"instruction": "Turn on Bluetooth", "agent": agent_for(&server), "device_id": "sim-1"})).await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["reason"], "Bluetooth is on");
    assert!(
        sim_task("settings.bluetooth_on")
            .unwrap()
            .check(&phone.state()),
        "the phone's checker confirms it"
    );
    assert!(
        t["tokens_in"].as_u64().unwrap() >= 1200,
        "tokens are aggregated: {t}"
    );

    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(steps.len() as u64, t["steps"].as_u64().unwrap());
    assert_eq!(steps[0]["thinking"], "step 0");
    let shot = app.get(&format!("/v1/tasks/{id}/steps/1/screenshot")).await;
    assert_eq!(shot.headers()["content-type"], "image/png");
    assert_eq!(&shot.bytes().await.unwrap()[..4], b"\x89PNG");
    // The model saw the screenshot: every request carried an image part, a scaled JPEG
    // (the step's artifact stays the phone's PNG).
    let reqs = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert!(
        body.to_string().contains("data:image/jpeg;base64,"),
        "screenshot sent as a JPEG image part"
    );
    // The device is free again.
    let d: Value = app.get("/v1/devices/sim-1").await.json().await.unwrap();
    assert_eq!(d["state"], "available");

    // The run as a coordinator, a trajectory reader and an archiver see it.
    let r: Value = app
        .get(&format!("/v1/tasks/{id}/result"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (r["status"].as_str(), r["completion_reason"].as_str()),
        (Some("success"), Some("Bluetooth is on"))
    );
    let reference = sim_task("settings.bluetooth_on").unwrap().reference().len() as u64;
    assert_eq!(r["actions_executed_count"].as_u64(), Some(reference));
    assert_eq!(
        r["actions_executed"].as_array().map(Vec::len),
        Some(reference as usize),
        "seed 004: the list of the actions executed: {r}"
    );
    assert_eq!(
        r["actions_executed"][0]["action_type"],
        r["actions_executed"][0]["action"]
    );
    assert_eq!(r["steps_taken"], t["steps"]);
    let tr: Value = app
        .get(&format!("/v1/tasks/{id}/trajectory"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        tr["steps"].as_array().unwrap().len() as u64,
        t["steps"].as_u64().unwrap()
    );
    let archive = app.get(&format!("/v1/tasks/{id}/export")).await;
    assert_eq!(archive.headers()["content-type"], "application/gzip");
    assert_eq!(
        &archive.bytes().await.unwrap()[..2],
        &[0x1f, 0x8b],
        "gzip magic"
    );
}

#[tokio::test]
async fn rate_limits_then_success_and_a_malformed_reply_then_self_correction() {
    let mut replies = vec![(429, String::new()), (429, String::new())];
    replies.push((200, "<thinking>hmm</thinking><tool_call>{\"action\": \"tapp\", \"coordinate\": [0.5, 0.5]</tool_call>".into()));
    replies.extend(replies_for("settings.bluetooth_on"));
    let (server, script) = model(replies).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "sim-1", Some("settings.bluetooth_on")).await;
    let id = submit(
        &app,
        json!({"instruction": "Turn on Bluetooth", "agent": agent_for(&server)}),
    )
    .await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert!(
        sim_task("settings.bluetooth_on")
            .unwrap()
            .check(&phone.state())
    );
    let reqs = server.received_requests().await.unwrap();
    assert!(
        script.next.load(Ordering::SeqCst) >= 4,
        "two 429s, one bad reply, then the solution"
    );
    // The correction request told the model what was wrong.
    let correction: Value = serde_json::from_slice(&reqs[3].body).unwrap();
    assert!(
        correction.to_string().contains("tapp"),
        "the error text goes back to the model"
    );
}

#[tokio::test]
async fn ask_user_round_trip_over_rest_and_over_websocket() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let replay = |q: &str| json!({"kind": "replay", "actions": [{"action": "ask_user", "question": q, "options": ["red", "blue"]}]});
    // REST
    let id = submit(
        &app,
        json!({"instruction": "ask", "agent": replay("Which colour?")}),
    )
    .await;
    wait_status(&app, &id, "waiting_for_user").await;
    let r = app
        .post_json(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"answer": "blue"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let ivs: Value = app
        .get(&format!("/v1/tasks/{id}/interventions"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ivs[0]["answer"].as_str(), ivs[0]["answered_by"].as_str()),
        (Some("blue"), Some("rest"))
    );
    let (status, code, _, _) = error_of(
        app.post_json(
            &format!("/v1/tasks/{id}/answer"),
            &json!({"answer": "again"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "no_open_question"));

    // WebSocket: the prompt arrives as an event, the answer goes back on the socket.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/v1/ws", app.addr))
        .await
        .unwrap();
    ws.send(Message::Text(
        json!({"type": "subscribe", "all": true}).to_string().into(),
    ))
    .await
    .unwrap();
    let id = submit(
        &app,
        json!({"instruction": "ask again", "agent": replay("Size?")}),
    )
    .await;
    let prompt_id = loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(msg.to_text().unwrap()).unwrap();
        if v["type"] == "event"
            && v["event"]["type"] == "task.ask_user"
            && v["event"]["stream"] == id.as_str()
        {
            assert_eq!(v["event"]["payload"]["options"], json!(["red", "blue"]));
            break v["event"]["payload"]["prompt_id"]
                .as_str()
                .unwrap()
                .to_string();
        }
    };
    ws.send(Message::Text(
        json!({"type": "answer", "task_id": id, "prompt_id": prompt_id, "answer": "large"})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let ivs: Value = app
        .get(&format!("/v1/tasks/{id}/interventions"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ivs[0]["answer"].as_str(), ivs[0]["answered_by"].as_str()),
        (Some("large"), Some("websocket"))
    );
}

#[tokio::test]
async fn a_running_task_is_cancelled_over_rest() {
    let app = bare_app(&[
        ("DROIDPILOT_RUNNER__STEP_DELAY_MS", "50"),
        ("DROIDPILOT_RUNNER__STUCK_THRESHOLD", "1000"),
    ])
    .await;
    add_phone(&app, "sim-1", None).await;
    let actions: Vec<Value> = (0..200)
        .map(|_| json!({"action": "swipe", "direction": "left"}))
        .collect();
    let id = submit(&app, json!({"instruction": "wander", "max_steps": 500, "agent": {"kind": "replay", "actions": actions}})).await;
    wait_status(&app, &id, "running").await;
    // A cancel drops the step in flight, so wait for a committed one.
    for _ in 0..500 {
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if t["steps"].as_u64().unwrap() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "a running task stops at its next step");
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "cancelled");
    assert!(t["steps"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn ten_tasks_on_ten_phones_at_once() {
    // Slow steps keep all ten running at the same time.
    let app = bare_app(&[("DROIDPILOT_RUNNER__STEP_DELAY_MS", "400")]).await;
    let mut phones = Vec::new();
    for i in 0..10 {
        phones.push(add_phone(&app, &format!("sim-{i}"), Some("settings.bluetooth_on")).await);
    }
    let t = sim_task("settings.bluetooth_on").unwrap();
    let actions: Vec<Value> = t
        .reference()
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect();
    let body =
        json!({"instruction": t.instruction, "agent": {"kind": "replay", "actions": actions}});
    let ids: Vec<String> =
        futures::future::join_all((0..10).map(|_| submit(&app, body.clone()))).await;
    let mut devices = std::collections::HashSet::new();
    for id in &ids {
        let done = wait_done(&app, id).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        devices.insert(done["assigned_device"].as_str().unwrap().to_string());
    }
    assert_eq!(devices.len(), 10, "ten at once, each on its own phone");
    assert!(
        phones.iter().all(|p| t.check(&p.state())),
        "every phone's checker passes"
    );
}

#[tokio::test]
async fn submission_refuses_what_could_never_run() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let (status, code, msg, hint) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "device_id": "pixel-9"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "unknown_device"));
    assert!(
        msg.contains("pixel-9") && hint.contains("sim-1"),
        "{msg} / {hint}"
    );
    let (status, code, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "visoin"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"));
    assert!(msg.contains("vision"), "did-you-mean: {msg}");
}

#[tokio::test]
async fn a_task_whose_device_never_frees_up_times_out_in_the_queue() {
    let app = bare_app(&[("DROIDPILOT_SCHEDULER__QUEUE_TIMEOUT_SECS", "1")]).await;
    add_phone(&app, "sim-1", None).await;
    let id = submit(
        &app,
        json!({"instruction": "needs a tablet", "device": {"model": "Galaxy Tab"}}),
    )
    .await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "timed_out");
    assert!(
        t["reason"].as_str().unwrap().contains("queue_timeout_secs"),
        "{t}"
    );
}

#[tokio::test]
async fn device_endpoints_show_and_drive_the_phone() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "sim-1", None).await;
    let list: Value = app.get("/v1/devices").await.json().await.unwrap();
    assert_eq!(list["devices"][0]["id"], "sim-1");
    assert_eq!(list["devices"][0]["backend"], "sim");
    assert_eq!(
        list["devices"][0]["screen"],
        json!({"width": 540, "height": 1200})
    );

    let png = app.get("/v1/devices/sim-1/screenshot").await;
    assert_eq!(png.headers()["content-type"], "image/png");
    let img = image::load_from_memory(&png.bytes().await.unwrap()).unwrap();
    assert_eq!((img.width(), img.height()), (540, 1200));
    let jpg = app
        .get("/v1/devices/sim-1/screenshot?format=jpeg&scale=0.5")
        .await;
    assert_eq!(jpg.headers()["content-type"], "image/jpeg");
    let img = image::load_from_memory(&jpg.bytes().await.unwrap()).unwrap();
    assert_eq!((img.width(), img.height()), (270, 600));
    let (status, code, _, _) =
        error_of(app.get("/v1/devices/sim-1/screenshot?scale=2").await).await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));

    let xml = app
        .get("/v1/devices/sim-1/hierarchy")
        .await
        .text()
        .await
        .unwrap();
    assert!(xml.starts_with("<?xml") && xml.contains("<hierarchy"));
    let screen: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    let settings = screen["actionable_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["text"] == "Settings")
        .expect("the launcher shows Settings");
    assert!(!settings["selector"].as_str().unwrap().is_empty());

    // One action by selector, as an agent would; the app opens.
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "tap", "selector": settings["selector"]}),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r: Value = app
        .post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "wait", "ms": 10}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(r["duration_ms"].is_u64());
    use droidpilot::device::Device;
    assert_eq!(
        phone.current_app().await.unwrap().package,
        "com.android.settings"
    );

    // A target that is not there: the error object carries what a caller needs to recover.
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions?include=screen_state",
            &json!({"action": "tap", "selector": "#no_such_thing"}),
        )
        .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["error_type"], "element_not_found");
    assert_eq!(v["error"]["selector"], "#no_such_thing");
    assert!(v["error"]["screen_state"]["actionable_elements"].is_array());
    assert!(!v["error"]["hint"].as_str().unwrap().is_empty());
    // Bad actions and unknown devices.
    let (status, code, msg, _) = error_of(
        app.post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "tap", "coordinate": [1.2, 0.5]}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_coordinate"));
    assert!(msg.contains("[1.2, 0.5]"));
    let (status, code, _, _) = error_of(
        app.post_json("/v1/devices/sim-1/actions", &json!({"action": "finish"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "not_a_device_action"));
    let (status, code, _, _) = error_of(app.get("/v1/devices/nope/screen").await).await;
    assert_eq!((status, code.as_str()), (404, "device_not_found"));
    let (status, code, _, _) = error_of(
        app.post_json("/v1/devices", &json!({"address": "10.0.0.9:5555"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "adb_not_configured"));

    let r = app
        .client
        .delete(app.url("/v1/devices/sim-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let list: Value = app.get("/v1/devices").await.json().await.unwrap();
    assert_eq!(list["devices"], json!([]));
}

#[tokio::test]
async fn a_leased_device_refuses_manual_actions_unless_forced() {
    let app = bare_app(&[
        ("DROIDPILOT_RUNNER__STEP_DELAY_MS", "50"),
        ("DROIDPILOT_RUNNER__STUCK_THRESHOLD", "1000"),
    ])
    .await;
    add_phone(&app, "sim-1", None).await;
    let actions: Vec<Value> = (0..100)
        .map(|_| json!({"action": "wait", "ms": 10}))
        .collect();
    let id = submit(&app, json!({"instruction": "hold", "max_steps": 200, "agent": {"kind": "replay", "actions": actions}})).await;
    wait_status(&app, &id, "running").await;
    let (status, code, msg, _) = error_of(
        app.post_json("/v1/devices/sim-1/actions", &json!({"action": "home"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "device_busy"));
    assert!(msg.contains(&id));
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions?force=true",
            &json!({"action": "home"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    app.client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
    wait_done(&app, &id).await;
}

#[tokio::test]
async fn the_default_configuration_serves_one_virtual_phone() {
    let app = crate::common::spawn_app_with_toml("", &[]).await;
    let list: Value = app.get("/v1/devices").await.json().await.unwrap();
    let devices = list["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!(
        (devices[0]["id"].as_str(), devices[0]["state"].as_str()),
        (Some("sim-1"), Some("available"))
    );
}

#[tokio::test]
async fn a_finished_task_posts_a_signed_result_to_its_webhook() {
    let app = bare_app(&[
        ("DROIDPILOT_WEBHOOKS__SECRET", "hook-secret-123"),
        ("DROIDPILOT_WEBHOOKS__BACKOFF_INITIAL_MS", "10"),
        // The receiver is wiremock on loopback: an internal host the operator allows.
        ("DROIDPILOT_WEBHOOKS__ALLOWED_HOSTS", "127.0.0.1"),
    ])
    .await;
    add_phone(&app, "sim-1", None).await;
    let receiver = MockServer::start().await;
    // The first delivery fails: it is retried.
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&receiver)
        .await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let id = submit(
        &app,
        json!({"task_id": "coord-42", "ai_prompt": "go home", "webhook_url": format!("{}/hook", receiver.uri()),
               "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
    )
    .await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let mut reqs = Vec::new();
    for _ in 0..100 {
        reqs = receiver.received_requests().await.unwrap();
        if reqs.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(reqs.len(), 2, "one failed attempt, one delivery");
    let last = &reqs[1];
    let header = |h: &str| {
        last.headers
            .get(h)
            .unwrap_or_else(|| panic!("{h} sent"))
            .to_str()
            .unwrap()
            .to_string()
    };
    assert!(
        droidpilot::run::webhooks::verify(
            b"hook-secret-123",
            &header("x-droidpilot-timestamp"),
            &last.body,
            &header("x-droidpilot-signature")
        ),
        "the signature verifies with the shared secret"
    );
    assert!(!droidpilot::run::webhooks::verify(
        b"wrong",
        &header("x-droidpilot-timestamp"),
        &last.body,
        &header("x-droidpilot-signature")
    ));
    let body: Value = serde_json::from_slice(&last.body).unwrap();
    assert_eq!(
        (body["task_id"].as_str(), body["status"].as_str()),
        (Some("coord-42"), Some("success"))
    );
    assert_eq!(body["actions_executed_count"], 1);
    assert_eq!(body["actions_executed"].as_array().map(Vec::len), Some(1));
    let (status, code, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "webhook_url": "ftp://x"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_task"));
    assert!(msg.contains("webhook_url"));
}

/// The README's quick-start replay example, verbatim, does what it says, and, run again,
/// the same: it changes nothing on the phone (a replay cannot look before it acts, so the
/// example is one that is safe to repeat).
#[tokio::test]
async fn the_readme_replay_example_can_be_run_twice() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "sim-1", None).await;
    let body = readme_replay_example();
    let before = phone.state().settings.clone();
    for run in 1..=2 {
        let id = submit(&app, body.clone()).await;
        assert_eq!(
            wait_done(&app, &id).await["status"],
            "succeeded",
            "run {run}"
        );
        assert_eq!(
            phone.state().settings,
            before,
            "run {run} changed a setting"
        );
    }
}

/// The body of the README quick start's replay task, verbatim.
fn readme_replay_example() -> Value {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("-d '{\n  \"instruction\": \"open Settings and find the Bluetooth switch\"")
        .expect("the example is in the README")
        + 4;
    let end = start + readme[start..].find("}}'").expect("example end") + 2;
    serde_json::from_str(&readme[start..end]).expect("the README example is valid JSON")
}

/// The shipped virtual phone takes a phone's time, so the quick start's calls meet the
/// task they follow while it runs: it is seen `running` (not finished as it leaves the
/// queue), the README's list shows it, its first step read the screen at the pace of the
/// shipped profile (the profile's sleep is a lower bound), and the README's cancel ends it
/// `cancelled` rather than finding it done.
#[tokio::test]
async fn on_the_shipped_phone_the_quick_start_lists_and_cancels_a_running_task() {
    let app = crate::common::spawn_app_as_shipped().await;
    let id = submit(&app, readme_replay_example()).await;
    let mut first_seen = Value::Null;
    for _ in 0..1000 {
        first_seen = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if first_seen["status"] != "queued" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(first_seen["status"], "running", "{first_seen}");

    let readme = include_str!("../../README.md");
    let list = readme
        .split("curl -s 'localhost:8080")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("the quick start lists tasks");
    let page: Value = app.get(list).await.json().await.unwrap();
    let ids: Vec<&Value> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert!(
        ids.contains(&&json!(id)),
        "{list} lists the running task: {page}"
    );

    // The first committed step read the screen as slowly as the profile says at least.
    let mut steps: Vec<Value> = Vec::new();
    for _ in 0..1000 {
        steps = app
            .get(&format!("/v1/tasks/{id}/steps"))
            .await
            .json()
            .await
            .unwrap();
        if !steps.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let shipped = droidpilot::device::sim::LatencyProfile::Pixel8.latencies();
    let least = shipped.dump as f64 * (1.0 - shipped.jitter);
    let read = steps[0]["timings"]["hierarchy_ms"].as_f64().unwrap();
    assert!(
        read >= least,
        "the shipped phone's screen read took {read} ms: {}",
        steps[0]
    );

    assert!(
        readme.contains("curl -s -X POST localhost:8080/v1/tasks/$ID/cancel"),
        "the quick start cancels the task it submitted"
    );
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202, "the task is still running when cancelled");
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "cancelled", "{t}");
}

/// A password typed into the virtual phone's sign-in form reaches the phone and nothing
/// else: not the stored steps (API and raw database bytes), not the device's hierarchy or
/// screen endpoints, not the trajectory export.
#[tokio::test]
async fn a_typed_password_is_never_stored_shown_or_exported() {
    const CANARY: &str = "canary-pw-7Q3x9Z";
    // Settings, Accounts, the e-mail field, the e-mail: the task's own reference steps.
    let mut replies: Vec<(u16, String)> = sim_task("settings.sign_in").unwrap().reference()[..4]
        .iter()
        .map(|a| (200, generic("next", &serde_json::to_value(a).unwrap())))
        .collect();
    replies.push((
        200,
        generic(
            "type the password",
            &json!({"action": "type", "text": CANARY, "selector": "#password"}),
        ),
    ));
    replies.push((
        200,
        generic(
            "typed",
            &json!({"action": "finish", "reason": "form filled"}),
        ),
    ));
    let (server, _) = model(replies).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "sim-1", Some("settings.sign_in")).await;
    let id = submit(&app, json!({"instruction": "Fill in the sign-in form", "agent": agent_for(&server), "device_id": "sim-1"})).await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        phone
            .state()
            .fields
            .get("account.password")
            .map(String::as_str),
        Some(CANARY),
        "the phone got the password"
    );

    let steps = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!steps.contains(CANARY), "steps API: {steps}");
    let steps: Vec<Value> = serde_json::from_str(&steps).unwrap();
    let typed: Vec<&Value> = steps
        .iter()
        .filter(|s| s["action"]["action"] == "type")
        .collect();
    let texts: Vec<&Value> = typed.iter().map(|s| &s["action"]["text"]).collect();
    // The e-mail, typed into an ordinary field, is kept; the password is masked.
    assert_eq!(
        texts,
        [&json!("alex@example.com"), &json!("••••")],
        "{typed:?}"
    );
    assert_eq!(typed[1]["outcome"]["status"], "ok", "{}", typed[1]);

    let hierarchy = app
        .get("/v1/devices/sim-1/hierarchy")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        hierarchy.contains("password=\"true\""),
        "the form is on screen"
    );
    assert!(!hierarchy.contains(CANARY), "hierarchy: {hierarchy}");
    let screen = app
        .get("/v1/devices/sim-1/screen")
        .await
        .text()
        .await
        .unwrap();
    assert!(!screen.contains(CANARY), "screen: {screen}");

    let archive = app
        .get(&format!("/v1/tasks/{id}/export"))
        .await
        .bytes()
        .await
        .unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&archive[..]));
    let mut entries = 0;
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        let name = e.path().unwrap().display().to_string();
        assert!(!contains(&bytes, CANARY.as_bytes()), "export entry {name}");
        entries += 1;
    }
    assert!(
        entries >= 2,
        "the archive has the trajectory and screenshots"
    );

    // Every byte droidpilot wrote: the SQLite file (checkpointed at shutdown), its WAL
    // if any, the screenshots.
    let (dir, _tmp) = app.stop().await;
    let files = assert_no_file_holds(dir, CANARY);
    assert!(files >= 3, "the database and screenshots were scanned");
}

/// A replay `type` not marked secret that lands in a password field: the password reaches
/// the phone, and once the action has run the stored task keeps it as `••••` too, so no
/// read of the task, no export and no byte of the database holds it.
#[tokio::test]
async fn an_unmarked_replay_type_into_a_password_field_is_not_kept_in_the_task() {
    const CANARY: &str = "canary-unmarked-4Rt8Kq";
    let mut actions: Vec<Value> = sim_task("settings.sign_in").unwrap().reference()[..4]
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect();
    actions.push(json!({"action": "type", "selector": "#password", "text": CANARY}));
    actions.push(json!({"action": "key", "key": "back"}));
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "sim-1", Some("settings.sign_in")).await;
    let id = submit(
        &app,
        json!({"instruction": "Sign in", "device_id": "sim-1",
        "agent": {"kind": "replay", "actions": actions}}),
    )
    .await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        phone
            .state()
            .fields
            .get("account.password")
            .map(String::as_str),
        Some(CANARY),
        "the phone got the password"
    );

    let task = app
        .get(&format!("/v1/tasks/{id}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(!task.contains(CANARY), "GET task: {task}");
    let task: Value = serde_json::from_str(&task).unwrap();
    assert_eq!(task["agent"]["actions"][4]["text"], "••••", "{task}");
    assert_eq!(
        task["agent"]["actions"][3]["text"], "alex@example.com",
        "a type into a plain field is kept"
    );
    for path in [
        "/v1/tasks?limit=5".to_string(),
        format!("/v1/tasks/{id}/steps"),
    ] {
        let body = app.get(&path).await.text().await.unwrap();
        assert!(!body.contains(CANARY), "{path}: {body}");
    }
    let archive = app
        .get(&format!("/v1/tasks/{id}/export"))
        .await
        .bytes()
        .await
        .unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&archive[..]));
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        let name = e.path().unwrap().display().to_string();
        assert!(!contains(&bytes, CANARY.as_bytes()), "export entry {name}");
    }

    let (dir, _tmp) = app.stop().await;
    let scanned = assert_no_file_holds(dir, CANARY);
    assert!(scanned >= 2, "the database was scanned");
}

/// Every file droidpilot wrote under `dir` (the database, its WAL if any, screenshots),
/// checked not to hold `secret`; returns how many were read.
pub(crate) fn assert_no_file_holds(dir: std::path::PathBuf, secret: &str) -> usize {
    let mut files = 0;
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !contains(&bytes, secret.as_bytes()),
                    "{} holds the password",
                    p.display()
                );
                files += 1;
            }
        }
    }
    files
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A phone configured with `pace_ms` is watchable: every action is followed by a real
/// pause, so a three-action replay takes at least three pauses (a lower bound only).
#[tokio::test]
async fn a_paced_virtual_phone_takes_real_time_per_action() {
    const PACE_MS: u64 = 300;
    let app = spawn_app_with_toml(
        &format!("[devices.adb]\nenabled = false\n[[devices.sim]]\nserial = \"paced\"\nwidth = 540\nheight = 1200\npace_ms = {PACE_MS}\n[runner]\nsettle_timeout_ms = 200\nsettle_poll_ms = 10\n[scheduler]\npoll_ms = 50\n"),
        &[],
    )
    .await;
    let actions = json!([
        {"action": "launch_app", "app": "com.android.settings"},
        {"action": "key", "key": "back"},
        {"action": "key", "key": "home"}
    ]);
    let start = std::time::Instant::now();
    let id = submit(&app, json!({"instruction": "three actions", "agent": {"kind": "replay", "actions": actions}, "device_id": "paced"})).await;
    let t = wait_done(&app, &id).await;
    let took = start.elapsed();
    assert_eq!(t["status"], "succeeded", "{t}");
    assert!(
        took >= Duration::from_millis(3 * PACE_MS),
        "3 actions at pace_ms={PACE_MS} took only {took:?}"
    );
}

/// A provider that serves part of each prompt from its cache says so in its usage
/// (OpenAI: `prompt_tokens_details.cached_tokens`): each step and its call, and the task,
/// show the cached tokens, and the cost prices them at the cached rate.
#[tokio::test]
async fn cached_input_tokens_are_shown_per_step_and_task_and_priced_at_the_cached_rate() {
    struct Cached(Vec<String>, AtomicUsize);
    impl Respond for Cached {
        fn respond(&self, _req: &Request) -> ResponseTemplate {
            let i = self.1.fetch_add(1, Ordering::SeqCst).min(self.0.len() - 1);
            ResponseTemplate::new(200).set_body_json(json!({
                "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_700_000_000, "model": "ui-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": self.0[i]}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240,
                          "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0}}
            }))
        }
    }
    let server = MockServer::start().await;
    let replies = replies_for("settings.bluetooth_on")
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Cached(replies, AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let toml = format!(
        "[agent]\nallowed_base_urls = [\"{}\"]\n[agent.prices.\"ui-model\"]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\ncached_input_per_mtok = 0.5\n",
        server.uri()
    );
    let app = spawn_app_with_toml(
        &toml,
        &[
            ("DROIDPILOT_RUNNER__SETTLE_TIMEOUT_MS", "300"),
            ("DROIDPILOT_RUNNER__SETTLE_POLL_MS", "10"),
        ],
    )
    .await;
    for d in app.pool.list() {
        app.pool.remove(&d.id).await.unwrap();
    }
    add_phone(&app, "sim-1", Some("settings.bluetooth_on")).await;
    let id = submit(&app, json!({"instruction": "Turn on Bluetooth", "agent": agent_for(&server), "device_id": "sim-1"})).await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let per_step = (176.0 * 2.0 + 1024.0 * 0.5 + 40.0 * 8.0) / 1e6;
    for s in &steps {
        assert_eq!(
            (s["tokens_in"].as_u64(), s["tokens_cached"].as_u64()),
            (Some(1200), Some(1024)),
            "{s}"
        );
        assert_eq!(s["calls"][0]["tokens_cached"], 1024, "{s}");
        assert!(
            (s["cost_usd"].as_f64().unwrap() - per_step).abs() < 1e-12,
            "{s}"
        );
    }
    let n = steps.len() as u64;
    assert_eq!(t["tokens_cached"].as_u64(), Some(1024 * n), "{t}");
    assert!(
        (t["cost_usd"].as_f64().unwrap() - per_step * n as f64).abs() < 1e-9,
        "{t}"
    );
    let list: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(
        list["tasks"][0]["tokens_cached"].as_u64(),
        Some(1024 * n),
        "{list}"
    );
}

/// A device action's result, as recorded on its step (what the agent's tool returned),
/// says how long the device took to do it.
#[tokio::test]
async fn a_device_actions_result_carries_its_duration() {
    let app = spawn_app_with_toml("", &[]).await;
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "open Settings", "agent": {"kind": "replay", "actions": [
                {"action": "launch_app", "package": "com.android.settings"},
                {"action": "tap", "selector": ":text(\"About phone\")"}]}}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let steps: Value = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    for s in steps.as_array().unwrap().iter().take(2) {
        let d = &s["outcome"]["detail"];
        assert!(d["duration_ms"].is_u64(), "{s:#}");
        assert_eq!(d["duration_ms"], s["timings"]["action_ms"], "{s:#}");
    }
    assert!(
        steps[1]["outcome"]["detail"]["point"].is_array(),
        "the tap's own detail kept"
    );
}

/// The time left is the server's: each `step.executed` carries `eta` (the median step
/// time × the steps still expected: what is left of the replay's list, its finish
/// included), and `GET /v1/tasks/{id}/estimate` gives none once the task has ended.
#[tokio::test]
async fn each_step_says_how_long_the_task_has_left() {
    let app = spawn_app_with_toml("", &[]).await;
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "three steps", "max_steps": 50, "agent": {"kind": "replay", "actions": [
                {"action": "home"}, {"action": "wait", "ms": 10}, {"action": "home"}]}}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let events = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    let etas: Vec<Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|e| e["type"] == "step.executed")
        .map(|e| e["payload"]["eta"].clone())
        .collect();
    assert_eq!(etas.len(), 4, "{events}");
    for (i, eta) in etas.iter().enumerate() {
        assert_eq!(eta["basis"], "planned", "{eta}");
        assert_eq!(
            eta["remaining_steps"],
            3 - i as u64,
            "counts to the list, not to max_steps: {eta}"
        );
        assert_eq!(
            eta["remaining_ms"].as_u64().unwrap(),
            eta["step_ms"].as_u64().unwrap() * (3 - i as u64)
        );
    }
    let e: Value = app
        .get(&format!("/v1/tasks/{id}/estimate"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&e["status"], &e["on_hold"]),
        (&json!("succeeded"), &json!(false)),
        "{e}"
    );
    assert!(
        e["estimate"].is_null(),
        "an ended task has no time left: {e}"
    );
    let (status, code, _, _) = error_of(
        app.get("/v1/tasks/0193a4b2-0000-7000-8000-000000000000/estimate")
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "task_not_found"));
}
