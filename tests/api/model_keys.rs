//! The server's model keys go only where the operator configured them: a task that names
//! another host is refused at submission, an allowed base URL is called without a key,
//! and what a model server answers on failure never reaches the task beyond a status line.
//! wiremock stands in for the attacker's host and for the allowed model server.

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::error_of;
use crate::run::{add_phone, app_for, bare_app, generic, serve_replies, submit, wait_done};

/// The keys the test server holds, one per provider (`[agent.keys]`).
const KEYS: [(&str, &str); 3] = [
    ("DROIDPILOT_AGENT__KEYS__OPENAI", "sk-server-openai-key"),
    ("DROIDPILOT_AGENT__KEYS__ANTHROPIC", "sk-ant-server-key"),
    ("DROIDPILOT_AGENT__KEYS__GEMINI", "AIza-server-gemini-key"),
];

/// Whether any request `server` received carries one of the server's keys.
async fn keys_seen(server: &MockServer) -> Vec<String> {
    let reqs = server.received_requests().await.unwrap_or_default();
    reqs.iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(name, _)| {
            matches!(
                name.as_str(),
                "authorization" | "x-api-key" | "x-goog-api-key"
            )
        })
        .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap_or("?")))
        .collect()
}

#[tokio::test]
async fn a_task_cannot_send_the_servers_keys_to_a_host_of_its_choosing() {
    let attacker = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("thanks for the key"))
        .mount(&attacker)
        .await;
    let app = bare_app(&KEYS).await;
    add_phone(&app, "sim-1", None).await;
    let evil = format!("{}/v1", attacker.uri());
    let script =
        json!({"name": "n", "goal": "g", "steps": [{"action": "tap", "selector": "#nothing"}]});
    let cases = [
        (
            json!({"kind": "navigator", "base_url": evil}),
            "agent.base_url",
        ),
        (
            json!({"kind": "vision", "provider": "anthropic", "model": "claude", "base_url": attacker.uri()}),
            "agent.base_url",
        ),
        (
            json!({"kind": "planned", "planner": {"provider": "gemini", "model": "g", "base_url": attacker.uri()}}),
            "agent.planner.base_url",
        ),
        (
            json!({"kind": "planned", "fast": {"kind": "navigator", "base_url": evil}}),
            "agent.fast.base_url",
        ),
        (
            json!({"kind": "chain", "agents": [{"kind": "navigator"}, {"kind": "navigator", "base_url": evil}]}),
            "agent.agents[1].base_url",
        ),
        (
            json!({"kind": "script", "script": script, "recovery": true, "base_url": evil}),
            "agent.base_url",
        ),
        (
            json!({"kind": "navigator", "server": "lab"}),
            "agent.server",
        ),
    ];
    for (agent, field) in cases {
        let (status, code, msg, hint) = error_of(
            app.post_json(
                "/v1/tasks",
                &json!({"instruction": "x", "device_id": "sim-1", "agent": agent}),
            )
            .await,
        )
        .await;
        assert_eq!((status, code.as_str()), (422, "invalid_agent"), "{agent}");
        assert!(msg.starts_with(&format!("{field}:")), "{field}: {msg}");
        if field.ends_with("base_url") {
            assert!(
                hint.contains("[agent] allowed_base_urls") && hint.contains("[agent.servers."),
                "the hint says what the operator configures: {hint}"
            );
        }
    }
    let list: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(list["tasks"], json!([]), "nothing was queued");
    assert!(
        attacker.received_requests().await.unwrap().is_empty(),
        "the attacker's host heard nothing"
    );
}

#[tokio::test]
async fn an_allowed_base_url_gets_no_key_and_its_answer_stays_out_of_the_task() {
    let internal = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_string("<html><h1>INTERNAL ADMIN</h1><p>row 42: payroll</p></html>"),
        )
        .mount(&internal)
        .await;
    let app = app_for(&[&internal], &KEYS).await;
    add_phone(&app, "sim-1", None).await;
    let agents = [
        json!({"kind": "navigator", "base_url": format!("{}/v1", internal.uri())}),
        json!({"kind": "vision", "format": "generic", "provider": "anthropic", "model": "c", "base_url": internal.uri()}),
        json!({"kind": "vision", "format": "generic", "provider": "gemini", "model": "g", "base_url": internal.uri()}),
    ];
    for agent in agents {
        let id = submit(
            &app,
            json!({"instruction": "x", "device_id": "sim-1", "agent": agent}),
        )
        .await;
        let done = wait_done(&app, &id).await;
        assert_eq!(done["status"], "failed", "{done}");
        let reason = done["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("404"), "the status line is kept: {reason}");
        let events = app
            .get(&format!("/v1/tasks/{id}/events"))
            .await
            .text()
            .await
            .unwrap();
        for shown in [done.to_string(), events] {
            assert!(
                !shown.contains("INTERNAL ADMIN") && !shown.contains("payroll"),
                "the model server's body reached the task: {shown}"
            );
        }
    }
    assert!(internal.received_requests().await.unwrap().len() >= 3);
    assert_eq!(keys_seen(&internal).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_task_picks_a_configured_server_by_name_and_only_it_gets_its_key() {
    let lab = MockServer::start().await;
    let finish = json!({"action": "finish", "success": true, "reason": "done"});
    serve_replies(
        &lab,
        vec![(200, generic("done", &finish))],
        Default::default(),
    )
    .await;
    let base = format!("{}/v1", lab.uri());
    let mut env = KEYS.to_vec();
    env.extend([
        ("DROIDPILOT_AGENT__SERVERS__LAB__PROVIDER", "openai"),
        ("DROIDPILOT_AGENT__SERVERS__LAB__MODEL", "ui-model"),
        ("DROIDPILOT_AGENT__SERVERS__LAB__BASE_URL", base.as_str()),
        ("DROIDPILOT_AGENT__SERVERS__LAB__API_KEY", "sk-lab-only"),
    ]);
    let app = bare_app(&env).await;
    add_phone(&app, "sim-1", None).await;
    let presets: Value = app.get("/v1/presets").await.json().await.unwrap();
    assert!(
        presets["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["server"] == "lab"),
        "{presets}"
    );
    assert!(!presets.to_string().contains("sk-lab-only"));
    let (status, _, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"server": "lab", "base_url": "http://elsewhere/v1"}}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(msg.starts_with("agent.base_url:"), "{msg}");
    let id = submit(
        &app,
        json!({"instruction": "x", "device_id": "sim-1",
               "agent": {"kind": "vision", "format": "generic", "server": "lab"}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        keys_seen(&lab).await,
        vec!["authorization: Bearer sk-lab-only".to_string()],
        "the server's own key, not the provider's"
    );
}
