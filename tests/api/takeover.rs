//! Take-over (issue 15) over the API alone, as a coordinator would do it without the page:
//! pause a running task, act on its phone, resume it; the person's actions are steps of
//! the trajectory, `manual_action` interventions and `task.intervention` events, and the
//! agent's next prompt says what the person did.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common::{TestApp, error_of};
use crate::run::{add_phone, app_for, generic, submit, wait_done, wait_status};

/// A vision model that answers `replies` in order, each after `delay` (so a test has
/// time to pause the task while a step is in flight).
struct Slow {
    replies: Vec<String>,
    next: AtomicUsize,
    delay: Duration,
}

impl Respond for Slow {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        let content = &self.replies[i.min(self.replies.len() - 1)];
        ResponseTemplate::new(200)
            .set_delay(self.delay)
            .set_body_json(json!({
                "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_700_000_000, "model": "ui-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}
            }))
    }
}

async fn slow_model(replies: &[Value], delay: Duration) -> MockServer {
    let server = MockServer::start().await;
    let replies = replies.iter().map(|a| generic("next", a)).collect();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Slow {
            replies,
            next: AtomicUsize::new(0),
            delay,
        })
        .mount(&server)
        .await;
    server
}

fn agent(server: &MockServer) -> Value {
    json!({"kind": "vision", "format": "generic", "provider": "openai", "model": "ui-model",
           "base_url": format!("{}/v1", server.uri())})
}

async fn post(app: &TestApp, path: &str, body: Option<Value>) -> reqwest::Response {
    let req = app.client.post(app.url(path));
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    req.send().await.expect("request reaches the server")
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    app.get(path).await.json().await.unwrap()
}

/// The task's stored events as (type, payload).
async fn events(app: &TestApp, id: &str) -> Vec<(String, Value)> {
    let sse = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    sse.split("\n\n")
        .filter_map(|block| {
            let ev = block.lines().find_map(|l| l.strip_prefix("event:"))?.trim();
            let data = block.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
            let v: Value = serde_json::from_str(data).ok()?;
            Some((ev.to_string(), v["payload"].clone()))
        })
        .collect()
}

#[tokio::test]
async fn a_person_pauses_acts_and_resumes_and_the_agent_is_told() {
    let model = slow_model(
        &[
            json!({"action": "wait", "ms": 10}),
            json!({"action": "finish", "success": true, "reason": "done"}),
        ],
        Duration::from_millis(600),
    )
    .await;
    let app = app_for(&[&model], &[]).await;
    add_phone(&app, "sim-1", None).await;
    let id = submit(
        &app,
        json!({"instruction": "turn on Bluetooth", "device_id": "sim-1", "agent": agent(&model)}),
    )
    .await;

    // Nothing to resume or act on yet.
    let (status, code, _, hint) =
        error_of(post(&app, &format!("/v1/tasks/{id}/resume"), None).await).await;
    assert_eq!((status, code.as_str()), (409, "task_not_paused"));
    assert!(hint.contains("/pause"), "{hint}");

    // Pause while step 1 waits on the model: the runner holds before step 2.
    while model.received_requests().await.unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = post(
        &app,
        &format!("/v1/tasks/{id}/pause"),
        Some(json!({"by": "alice"})),
    )
    .await;
    assert_eq!(r.status(), 202);
    assert_eq!(r.json::<Value>().await.unwrap()["id"], id.as_str());
    wait_status(&app, &id, "paused").await;
    // Paused: a second pause is refused, the phone takes the person's actions.
    let (status, code, _, _) =
        error_of(post(&app, &format!("/v1/tasks/{id}/pause"), None).await).await;
    assert_eq!((status, code.as_str()), (409, "task_not_running"));

    let actions = format!("/v1/tasks/{id}/actions");
    let act = |body: Value| post(&app, &actions, Some(body));
    let r = act(json!({"action": "launch_app", "label": "Settings", "by": "alice"})).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = act(json!({"action": "tap", "selector": ":text(\"Bluetooth\")", "by": "alice"})).await;
    assert_eq!(r.status(), 200);
    let tapped: Value = r.json().await.unwrap();
    assert_eq!(tapped["intervention"]["kind"], "manual_action", "{tapped}");
    assert_eq!(tapped["intervention"]["by"], "alice");
    assert!(tapped["detail"]["point"].is_array(), "{tapped}");
    // A bad action is the caller's mistake, refused by name before anything runs.
    let (status, _, msg, _) = error_of(act(json!({"action": "tap", "selectr": "#x"})).await).await;
    assert_eq!(status, 422);
    assert!(msg.contains("selectr"), "{msg}");
    let r = act(json!({"action": "back"})).await;
    assert_eq!(r.status(), 200);

    let r = post(
        &app,
        &format!("/v1/tasks/{id}/resume"),
        Some(json!({"by": "alice"})),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "running");
    let (status, code, _, _) = error_of(act(json!({"action": "home"})).await).await;
    assert_eq!(
        (status, code.as_str()),
        (409, "task_not_paused"),
        "no actions once resumed"
    );

    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");

    // The interventions: three manual actions, who, what, which step.
    let ivs = get_json(&app, &format!("/v1/tasks/{id}/interventions")).await;
    let ivs = ivs.as_array().unwrap();
    assert_eq!(ivs.len(), 3, "{ivs:?}");
    let kinds: Vec<_> = ivs
        .iter()
        .map(|i| i["action"]["action"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["launch_app", "tap", "key"], "back is a key press");
    assert!(ivs.iter().all(|i| i["kind"] == "manual_action"));
    assert_eq!(ivs[2]["by"], "anonymous", "no name given");
    assert_eq!(ivs[0]["step"], 2, "held before step 2");

    // The trajectory: the agent's wait, the person's three steps, the agent's finish.
    let tr = get_json(&app, &format!("/v1/tasks/{id}/trajectory")).await;
    let steps = tr["steps"].as_array().unwrap();
    let by: Vec<_> = steps
        .iter()
        .map(|s| s["by"].as_str().unwrap_or("agent"))
        .collect();
    assert_eq!(
        by,
        ["agent", "alice", "alice", "anonymous", "agent"],
        "{tr}"
    );
    assert_eq!(tr["interventions"].as_array().unwrap().len(), 3);
    assert_eq!(t["steps"], 5);

    // The events, in order.
    let evs = events(&app, &id).await;
    let names: Vec<&str> = evs
        .iter()
        .map(|(e, _)| e.as_str())
        .filter(|e| e.starts_with("task.") && *e != "task.queued" && *e != "task.started")
        .collect();
    assert_eq!(
        names,
        [
            "task.paused",
            "task.intervention",
            "task.intervention",
            "task.intervention",
            "task.resumed",
            "task.finished"
        ]
    );
    let resumed = &evs.iter().find(|(e, _)| e == "task.resumed").unwrap().1;
    assert_eq!(resumed["cause"], "take_over");
    assert_eq!(resumed["manual_actions"], 3);
    assert_eq!(resumed["from_step"], 5);

    // The agent's next prompt says what the person did (its text part, not the image).
    let prompts: Vec<String> = model
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).unwrap();
            b["messages"][1]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        !prompts[0].contains("a person"),
        "nothing to tell at step 1"
    );
    let told = &prompts[1];
    assert!(
        told.contains("while you were paused, a person (alice) did: launch_app")
            && told.contains("on \"Bluetooth")
            && told.contains("; back."),
        "{told}"
    );
    app.stop().await;
}

#[tokio::test]
async fn pausing_is_for_running_tasks_and_a_cancel_ends_a_paused_one() {
    let model = slow_model(
        &[json!({"action": "wait", "ms": 10})],
        Duration::from_millis(300),
    )
    .await;
    // No phone yet: the task stays queued.
    let app = app_for(&[&model], &[]).await;
    let id = submit(
        &app,
        json!({"instruction": "wait around", "agent": agent(&model)}),
    )
    .await;
    let (status, code, msg, _) =
        error_of(post(&app, &format!("/v1/tasks/{id}/pause"), None).await).await;
    assert_eq!((status, code.as_str()), (409, "task_not_running"));
    assert!(msg.contains("queued"), "{msg}");
    let (status, code, _, _) = error_of(
        post(
            &app,
            &format!("/v1/tasks/{id}/pause"),
            Some(json!({"by": "x", "who": 1})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (422, "invalid_request"),
        "unknown fields are refused"
    );
    let (status, _, _, _) = error_of(
        post(
            &app,
            &format!("/v1/tasks/{id}/pause"),
            Some(json!({"by": ""})),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "an empty name is refused");
    let unknown = "0190b6a4-0000-7000-8000-000000000000";
    let (status, _, _, _) =
        error_of(post(&app, &format!("/v1/tasks/{unknown}/pause"), None).await).await;
    assert_eq!(status, 404);

    add_phone(&app, "sim-1", None).await;
    wait_status(&app, &id, "running").await;
    assert_eq!(
        post(&app, &format!("/v1/tasks/{id}/pause"), None)
            .await
            .status(),
        202
    );
    wait_status(&app, &id, "paused").await;
    let r = post(&app, &format!("/v1/tasks/{id}/cancel"), None).await;
    assert_eq!(r.status(), 202, "a paused task's runner ends it");
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["reason"], "cancelled by request");
    let (status, code, _, _) =
        error_of(post(&app, &format!("/v1/tasks/{id}/pause"), None).await).await;
    assert_eq!((status, code.as_str()), (409, "task_not_running"));
    // The phone is free again for the next task.
    let next = submit(
        &app,
        json!({"instruction": "home", "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
    )
    .await;
    assert_eq!(wait_done(&app, &next).await["status"], "succeeded");
    app.stop().await;
}

/// The in-process virtual phone with a change injected behind the agent's back (as a
/// person's finger would on a real phone): after step 1 settled and before step 2 looks.
#[tokio::test]
async fn a_screen_change_nobody_in_droidpilot_made_is_an_intervention_the_agent_hears_of() {
    use droidpilot::device::Device;
    let model = slow_model(
        &[
            json!({"action": "home"}),
            json!({"action": "finish", "success": true}),
        ],
        Duration::from_millis(50),
    )
    .await;
    let app = app_for(
        &[&model],
        &[
            ("DROIDPILOT_RUNNER__DETECT_EXTERNAL_CHANGES", "true"),
            // A pause after each settled action: the window the "person" acts in.
            ("DROIDPILOT_RUNNER__STEP_DELAY_MS", "1500"),
        ],
    )
    .await;
    let phone = add_phone(&app, "sim-1", None).await;
    let settings = droidpilot::domain::AppRef::Label("Settings".into());
    phone.launch_app(&settings).await.unwrap();
    let id = submit(
        &app,
        json!({"instruction": "go home", "device_id": "sim-1", "agent": agent(&model)}),
    )
    .await;
    // Step 1 pressed home; once it has settled (settle_timeout_ms is 300 here), someone
    // opens Settings on the phone while the runner waits out step_delay_ms.
    loop {
        let app_now = phone.current_app().await.unwrap().package;
        if app_now != "com.android.settings" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    phone.launch_app(&settings).await.unwrap();

    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let ivs = get_json(&app, &format!("/v1/tasks/{id}/interventions")).await;
    let ivs = ivs.as_array().unwrap();
    assert_eq!(
        ivs.len(),
        1,
        "one change nobody in droidpilot made: {ivs:?}"
    );
    assert_eq!(ivs[0]["kind"], "external_change");
    assert_eq!(ivs[0]["step"], 2, "seen before step 2");
    assert_eq!(ivs[0]["detail"]["app"], "com.android.settings", "{ivs:?}");
    let evs = events(&app, &id).await;
    assert_eq!(
        evs.iter().filter(|(e, _)| e == "task.intervention").count(),
        1
    );
    let prompts: Vec<String> = model
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let b: Value = serde_json::from_slice(&r.body).unwrap();
            b["messages"][1]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(!prompts[0].contains("without an action of yours"));
    assert!(
        prompts[1].contains("before step 2: the screen changed without an action of yours"),
        "{}",
        prompts[1]
    );
    app.stop().await;
}
