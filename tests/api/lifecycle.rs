//! How tasks end (issue 10): scripted runs that fail, cancels that stop what the runner
//! waits on, answers that name the open question, submissions that could never run,
//! and what the task API shows (summaries, redacted webhook URLs).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::error_of;
use crate::run::{add_phone, bare_app, submit, wait_done, wait_status};

#[tokio::test]
async fn a_replay_fails_at_its_first_failed_step_unless_told_to_continue() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let steps = json!([{"action": "tap", "selector": "#does_not_exist"}, {"action": "home"}]);
    let id = submit(
        &app,
        json!({"instruction": "scripted", "agent": {"kind": "replay", "actions": steps}}),
    )
    .await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "failed", "{t}");
    let reason = t["reason"].as_str().unwrap();
    assert!(
        reason.contains("step 1") && reason.contains("element_not_found"),
        "the reason names the step and the error: {reason}"
    );
    assert_eq!(t["steps"], 1, "the step after the failure did not run");
    let r: Value = app
        .get(&format!("/v1/tasks/{id}/result"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["status"], "failed", "{r}");

    let id = submit(
        &app,
        json!({"instruction": "scripted", "agent": {"kind": "replay", "actions": steps, "on_error": "continue"}}),
    )
    .await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "on_error continue goes on: {t}");
    assert_eq!(t["steps"], 3, "tap (failed), home, finish");

    let (status, code, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "replay", "actions": [], "on_error": "skip"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"));
    assert!(
        msg.contains("on_error") && msg.contains("fail, continue"),
        "{msg}"
    );
    // A bad action is refused at submission, not when the task starts.
    let (status, code, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "replay", "actions": [{"action": "home"}, {"action": "tap", "target": "#x"}]}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "invalid_agent"));
    assert!(msg.contains("actions[1]"), "{msg}");
}

/// A task that asks a question, and a task queued behind it on the only phone.
async fn asking_task_and_one_behind(app: &crate::common::TestApp) -> (String, String) {
    add_phone(app, "sim-1", None).await;
    let ask = json!({"kind": "replay", "actions": [{"action": "ask_user", "question": "Which account should I use?", "options": ["work", "home"]}]});
    let a = submit(app, json!({"instruction": "ask", "agent": ask})).await;
    let b = submit(
        app,
        json!({"instruction": "behind", "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
    )
    .await;
    wait_status(app, &a, "waiting_for_user").await;
    (a, b)
}

/// After a cancel of a task waiting on ask_user: it ended as cancelled (not with the
/// question as its reason), its question is closed, and the phone went to the next task
/// long before the 120 s answer timeout would have freed it.
async fn assert_cancelled_and_released(
    app: &crate::common::TestApp,
    a: &str,
    b: &str,
    since: Instant,
) {
    let t = wait_done(app, a).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["reason"], "cancelled by request", "{t}");
    assert_eq!(wait_done(app, b).await["status"], "succeeded");
    assert!(
        since.elapsed() < Duration::from_secs(10),
        "the phone was released at once, not after ask_user_timeout_secs (took {:?})",
        since.elapsed()
    );
    let r: Value = app
        .get(&format!("/v1/tasks/{a}/result"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        !r.to_string().contains("Which account"),
        "the result does not carry the question: {r}"
    );
    let ivs: Value = app
        .get(&format!("/v1/tasks/{a}/interventions"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        ivs[0]["answered_by"], "cancelled",
        "the question is closed: {ivs}"
    );
    let (status, _, _, _) = error_of(
        app.post_json(&format!("/v1/tasks/{a}/answer"), &json!({"answer": "work"}))
            .await,
    )
    .await;
    assert_eq!(status, 409, "a late answer is refused");
}

#[tokio::test]
async fn cancelling_a_task_waiting_on_ask_user_releases_the_phone_over_rest() {
    let app = bare_app(&[]).await;
    let (a, b) = asking_task_and_one_behind(&app).await;
    let since = Instant::now();
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{a}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_cancelled_and_released(&app, &a, &b, since).await;
}

#[tokio::test]
async fn cancelling_a_task_waiting_on_ask_user_releases_the_phone_over_websocket() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let app = bare_app(&[]).await;
    let (a, b) = asking_task_and_one_behind(&app).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/v1/ws", app.addr))
        .await
        .unwrap();
    let since = Instant::now();
    ws.send(Message::Text(
        json!({"type": "cancel", "task_id": a}).to_string().into(),
    ))
    .await
    .unwrap();
    let reply = loop {
        let msg = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Message::Text(t) = msg {
            break serde_json::from_str::<Value>(t.as_str()).unwrap();
        }
    };
    assert_eq!(reply["type"], "cancelled", "{reply}");
    assert_cancelled_and_released(&app, &a, &b, since).await;
}

#[tokio::test]
async fn a_cancel_aborts_a_model_call_in_progress() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    // A model that takes 60 s to answer.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(60)))
        .mount(&server)
        .await;
    let app = crate::run::app_for(&[&server], &[]).await;
    add_phone(&app, "sim-1", None).await;
    let id = submit(
        &app,
        json!({"instruction": "slow model", "agent": crate::run::agent_for(&server)}),
    )
    .await;
    for _ in 0..500 {
        if !server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !server.received_requests().await.unwrap().is_empty(),
        "the model was asked"
    );
    let since = Instant::now();
    let r = app
        .client
        .post(app.url(&format!("/v1/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["reason"], "cancelled by request");
    assert!(
        since.elapsed() < Duration::from_secs(10),
        "the model call was dropped, not waited for (took {:?})",
        since.elapsed()
    );
}

#[tokio::test]
async fn answers_name_the_open_question_and_must_not_be_empty() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let ask = json!({"kind": "replay", "actions": [{"action": "ask_user", "question": "Which colour?", "options": ["red", "blue"]}]});
    let id = submit(&app, json!({"instruction": "ask", "agent": ask})).await;
    wait_status(&app, &id, "waiting_for_user").await;
    let ivs: Value = app
        .get(&format!("/v1/tasks/{id}/interventions"))
        .await
        .json()
        .await
        .unwrap();
    let current = ivs[0]["id"].as_str().unwrap().to_string();
    let answer = |body: Value| {
        let app = &app;
        let id = id.clone();
        async move {
            app.post_json(&format!("/v1/tasks/{id}/answer"), &body)
                .await
        }
    };

    let (status, code, msg, hint) =
        error_of(answer(json!({"answer": "red", "prompt_id": "p-typo"})).await).await;
    assert_eq!((status, code.as_str()), (409, "wrong_prompt"));
    assert!(
        msg.contains("p-typo") && msg.contains(&current) && hint.contains(&current),
        "the error gives the open prompt id: {msg} / {hint}"
    );
    for empty in ["", "  "] {
        let (status, code, _, hint) = error_of(answer(json!({"answer": empty})).await).await;
        assert_eq!((status, code.as_str()), (422, "invalid_answer"));
        assert!(hint.contains("red, blue"), "{hint}");
    }
    assert_eq!(
        status_of(&app, &id).await,
        "waiting_for_user",
        "refused answers leave the question open"
    );
    let r = answer(json!({"answer": "blue", "prompt_id": current})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
}

async fn status_of(app: &crate::common::TestApp, id: &str) -> Value {
    app.get(&format!("/v1/tasks/{id}"))
        .await
        .json::<Value>()
        .await
        .unwrap()["status"]
        .clone()
}

#[tokio::test]
async fn a_task_whose_model_needs_a_key_the_server_lacks_is_refused() {
    // The test server has an OpenAI key (a placeholder) and no Anthropic key.
    let app = bare_app(&[(
        "DROIDPILOT_AGENT__ALLOWED_BASE_URLS",
        "http://127.0.0.1:11434",
    )])
    .await;
    let (status, code, msg, hint) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"provider": "anthropic", "model": "claude-sonnet-4-5"}}),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "missing_model_key"));
    assert!(msg.contains("ANTHROPIC_API_KEY"), "{msg}");
    assert!(
        hint.contains("ANTHROPIC_API_KEY in the server's environment")
            && hint.contains("agent.kind replay"),
        "{hint}"
    );
    let list: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(list["tasks"], json!([]), "nothing was queued");
    // A local OpenAI-compatible server the operator allows and a replay need no key.
    let local = json!({"instruction": "x", "agent": {"kind": "vision", "base_url": "http://127.0.0.1:11434/v1"}});
    assert_eq!(app.post_json("/v1/tasks", &local).await.status(), 201);
}

#[tokio::test]
async fn the_task_list_shows_summaries_and_the_task_shows_everything() {
    // No phones: the tasks stay queued. 50 replays of 300 actions each, as in the issue.
    let app = crate::common::spawn_app().await;
    let actions: Vec<Value> = (0..300)
        .map(|i| json!({"action": "tap", "selector": format!("#button_number_{i}")}))
        .collect();
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(
            submit(
                &app,
                json!({"instruction": format!("script {i}"), "metadata": {"ticket": i},
                       "agent": {"kind": "replay", "actions": actions}}),
            )
            .await,
        );
    }
    let body = app.get("/v1/tasks?limit=50").await.text().await.unwrap();
    let mut full = 0;
    for id in &ids {
        full += app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .text()
            .await
            .unwrap()
            .len();
    }
    println!(
        "50-task list page: {} bytes (the full tasks: {full} bytes)",
        body.len()
    );
    assert!(
        body.len() * 20 < full,
        "the list is a small fraction of the full tasks ({} vs {full} bytes)",
        body.len()
    );
    let page: Value = serde_json::from_str(&body).unwrap();
    let item = &page["tasks"][0];
    assert_eq!(
        item["agent"],
        json!({"kind": "replay", "provider": null, "model": null, "actions": 300})
    );
    assert_eq!(item["status"], "queued");
    assert!(
        item.get("metadata").is_none() && !body.contains("button_number"),
        "{item}"
    );
    let one: Value = app
        .get(&format!("/v1/tasks/{}", ids[0]))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(one["agent"]["actions"].as_array().unwrap().len(), 300);
    assert_eq!(one["metadata"], json!({"ticket": 0}));
}

#[tokio::test]
async fn webhook_credentials_are_used_for_delivery_and_never_shown() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    // The receiver is wiremock on loopback: an internal host the operator allows.
    let app = bare_app(&[("DROIDPILOT_WEBHOOKS__ALLOWED_HOSTS", "127.0.0.1")]).await;
    add_phone(&app, "sim-1", None).await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let url = receiver
        .uri()
        .replace("http://", "http://hookuser:s3cr3t-pw@")
        + "/hook?token=t0k3n-value";
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "home", "webhook_url": url, "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let created = r.text().await.unwrap();
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let mut shown = vec![created];
    for p in ["", "/events", "/trajectory", "/result"] {
        shown.push(
            app.get(&format!("/v1/tasks/{id}{p}"))
                .await
                .text()
                .await
                .unwrap(),
        );
    }
    shown.push(app.get("/v1/tasks").await.text().await.unwrap());
    for body in &shown {
        assert!(
            !body.contains("s3cr3t-pw")
                && !body.contains("t0k3n-value")
                && !body.contains("hookuser"),
            "a secret of the webhook URL is shown: {body}"
        );
    }
    assert!(shown[1].contains("***@127.0.0.1"), "{}", shown[1]);
    let mut reqs = Vec::new();
    for _ in 0..100 {
        reqs = receiver.received_requests().await.unwrap();
        if !reqs.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let req = reqs.first().expect("the result was delivered");
    assert_eq!(
        req.url.query(),
        Some("token=t0k3n-value"),
        "delivered to the full URL"
    );
    assert_eq!(
        req.headers.get("authorization").unwrap().to_str().unwrap(),
        "Basic aG9va3VzZXI6czNjcjN0LXB3",
        "the userinfo became basic auth"
    );
}

/// A directory where `droidpilot run` finds one small virtual phone.
fn run_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/local.toml"),
        "[devices.adb]\nenabled = false\n[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n[runner]\nsettle_timeout_ms = 200\nretry_backoff_ms = [10]\n",
    )
    .unwrap();
    dir
}

#[test]
fn the_run_command_exits_non_zero_when_a_scripted_step_fails() {
    let dir = run_dir();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .args(["run", "scripted", "--agent", "replay", "--actions"])
        .arg(r##"[{"action": "tap", "selector": "#does_not_exist"}, {"action": "home"}]"##)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("failed after 1 steps") && stdout.contains("element_not_found"),
        "{stdout}"
    );
}

#[test]
fn a_refused_model_connection_fails_fast_with_progress_and_the_url_once() {
    let dir = run_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again when the listener drops
    let url = format!("http://127.0.0.1:{port}/v1");
    let since = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .args([
            "run", "anything", "--agent", "vision", "--format", "generic",
        ])
        .args([
            "--provider",
            "openai",
            "--model",
            "ui-model",
            "--base-url",
            &url,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = since.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("model call failed (") && stdout.contains("retry 1 in"),
        "each retry is a progress line: {stdout}"
    );
    let last = stdout
        .lines()
        .rev()
        .find(|l| l.contains("failed after"))
        .unwrap();
    assert_eq!(
        last.matches(&format!("127.0.0.1:{port}")).count(),
        1,
        "the URL is named once: {last}"
    );
    assert!(
        took < Duration::from_secs(10),
        "a closed port fails fast, not after 18-20 s of retries (took {took:?})"
    );
}

#[tokio::test]
async fn a_rate_limited_model_call_is_retried_as_the_server_says_and_reported() {
    let finish = crate::run::generic("done", &json!({"action": "finish", "reason": "ok"}));
    // 429 with Retry-After: 0, then the answer.
    let (server, _) = crate::run::model(vec![(429, String::new()), (200, finish)]).await;
    let app = crate::run::app_for(&[&server], &[]).await;
    add_phone(&app, "sim-1", None).await;
    let id = submit(
        &app,
        json!({"instruction": "x", "agent": crate::run::agent_for(&server)}),
    )
    .await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let events = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    let retry = events
        .lines()
        .skip_while(|l| *l != "event: model.retry")
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("a model.retry event: {events}"));
    let retry: Value = serde_json::from_str(retry).unwrap();
    let payload = retry.get("payload").unwrap_or(&retry);
    assert_eq!(payload["attempt"], 1, "{retry}");
    assert_eq!(
        payload["delay_ms"], 0,
        "Retry-After: 0 is honoured: {retry}"
    );
    assert!(
        payload["cause"].as_str().unwrap().contains("HTTP 429"),
        "{retry}"
    );
}

/// The `agent` object is read once, at submission: a mistake inside a nested agent, a
/// role model or the planning knobs is named by its path, with a suggestion; what the
/// task stores is the spec as checked (nulls gone, strings trimmed), and that runs.
#[tokio::test]
async fn agent_errors_name_the_nested_field_and_the_task_stores_the_checked_spec() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let replay = json!({"kind": "replay", "actions": []});
    for (agent, starts) in [
        (
            json!({"kind": "planned", "planner": {"provider": "openia"}}),
            "agent.planner.provider: unknown value `openia` (did you mean `openai`?)",
        ),
        (
            json!({"kind": "planned", "planning": {"progress_evry": 2}}),
            "agent.planning.progress_evry: unknown field (did you mean `progress_every`?)",
        ),
        (
            json!({"kind": "chain", "agents": [replay, {"kind": "replay", "actons": []}]}),
            "agent.agents[1].actons: unknown field (did you mean `actions`?)",
        ),
        (
            json!({"kind": "planned", "verifier": {"model": " "}}),
            "agent.verifier.model: must not be empty",
        ),
    ] {
        let body = json!({"instruction": "x", "agent": agent});
        let (status, code, msg, hint) = error_of(app.post_json("/v1/tasks", &body).await).await;
        assert_eq!((status, code.as_str()), (422, "invalid_agent"), "{agent}");
        assert!(msg.starts_with(starts), "{msg}");
        assert!(!hint.is_empty(), "{msg}");
    }
    let agent = json!({"kind": "replay", "on_error": null, "format": null,
                       "actions": [{"action": "home"}]});
    let id = submit(&app, json!({"instruction": "go home", "agent": agent})).await;
    let t = wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        t["agent"],
        json!({"kind": "replay", "actions": [{"action": "home"}]})
    );
}

/// Where a task's time went: the phase summary in the trajectory and at `/metrics`
/// agrees with its steps' timings, and `/steps.csv` has a row per step with the same
/// figures.
#[tokio::test]
async fn the_phase_summary_and_the_steps_csv_agree_with_the_steps() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let actions = json!([{"action": "home"}, {"action": "launch_app", "label": "Settings"}, {"action": "back"}]);
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "wander", "agent": {"kind": "replay", "actions": actions}}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let steps: Value = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let steps = steps["steps"]
        .as_array()
        .or(steps.as_array())
        .unwrap()
        .clone();
    let metrics: Value = app
        .get(&format!("/v1/tasks/{id}/metrics"))
        .await
        .json()
        .await
        .unwrap();
    let tr: Value = app
        .get(&format!("/v1/tasks/{id}/trajectory"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        tr["phases"], metrics,
        "the trajectory carries the same summary"
    );
    assert_eq!(metrics["steps"], steps.len());
    let action_ms: Vec<f64> = steps
        .iter()
        .map(|s| s["timings"]["action_ms"].as_f64().unwrap())
        .collect();
    let sum: f64 = action_ms.iter().sum();
    assert_eq!(metrics["action"]["sum_ms"].as_f64().unwrap(), sum);
    assert_eq!(
        metrics["action"]["max_ms"].as_f64().unwrap(),
        action_ms.iter().cloned().fold(0.0, f64::max)
    );
    assert_eq!(
        metrics["action"]["mean_ms"].as_f64().unwrap(),
        sum / steps.len() as f64
    );
    for phase in ["screen", "model", "settle", "overhead"] {
        assert!(metrics[phase]["sum_ms"].is_number(), "{phase}: {metrics}");
    }

    let csv = app.get(&format!("/v1/tasks/{id}/steps.csv")).await;
    assert_eq!(csv.status(), 200);
    assert!(
        csv.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = csv.text().await.unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert!(
        rows[0].starts_with("step,started_at,action,status,"),
        "{}",
        rows[0]
    );
    assert_eq!(rows.len(), steps.len() + 1, "{text}");
    let second: Vec<&str> = rows[2].split(',').collect();
    assert_eq!((second[0], second[2], second[3]), ("2", "launch_app", "ok"));
    assert_eq!(
        second[8].parse::<f64>().unwrap(),
        action_ms[1],
        "action_ms column"
    );
    let (status, code, _, _) = error_of(
        app.get("/v1/tasks/00000000-0000-0000-0000-000000000000/steps.csv")
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "task_not_found"));
}
