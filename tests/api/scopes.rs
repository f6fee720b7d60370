//! Scoped tokens: `read` lists and watches, `operate` also submits, answers, cancels,
//! takes over and acts, `admin` also manages devices and scripts; a plain token is admin.
//! A wrong scope is a 403 in the error shape naming the scope needed, over REST, SSE, the
//! WebSocket and `/mcp`; a named token is who answered, in the intervention.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::{TestApp, error_of, spawn_app_with_toml};
use crate::run::add_phone;

const ADMIN: &str = "plain-admin-token";
const CI: &str = "operate-token-ci";
const VIEWER: &str = "read-token-viewer";

async fn app() -> TestApp {
    spawn_app_with_toml(
        &format!(
            "[devices]\nsim = []\n[server]\ntokens = [\"{ADMIN}\", \
             {{ token = \"{CI}\", scope = \"operate\", name = \"ci\" }}, \
             {{ token = \"{VIEWER}\", scope = \"read\", name = \"viewer\" }}]\n"
        ),
        &[],
    )
    .await
}

async fn call(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut r = app
        .client
        .request(method.parse().unwrap(), app.url(path))
        .bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    r.send().await.unwrap()
}

/// A 403 `insufficient_scope` naming `needed`.
async fn refused(resp: reqwest::Response, needed: &str) {
    let (status, code, message, hint) = error_of(resp).await;
    assert_eq!(
        (status, code.as_str()),
        (403, "insufficient_scope"),
        "{message}"
    );
    assert!(message.contains(&format!("`{needed}`")), "{message}");
    assert!(hint.contains(needed), "{hint}");
}

#[tokio::test]
async fn each_scope_does_what_it_names_and_no_more() {
    let app = app().await;
    add_phone(&app, "sim-1", None).await;
    let ask = json!({"instruction": "ask", "agent": {"kind": "replay", "actions": [
        {"action": "ask_user", "question": "Which one?", "options": ["a", "b"]}]}});

    // read: lists, watches (the dashboard's sign-in reads /v1/devices), nothing else.
    for path in ["/v1/tasks", "/v1/devices", "/v1/scripts"] {
        assert_eq!(
            call(&app, VIEWER, "GET", path, None).await.status(),
            200,
            "{path}"
        );
    }
    refused(
        call(&app, VIEWER, "POST", "/v1/tasks", Some(ask.clone())).await,
        "operate",
    )
    .await;
    refused(
        call(
            &app,
            VIEWER,
            "POST",
            "/mcp",
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
        )
        .await,
        "operate",
    )
    .await;

    // operate: submits and answers, as `ci`; cannot manage devices or scripts.
    let r = call(&app, CI, "POST", "/v1/tasks", Some(ask)).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..600 {
        let t: Value = call(&app, VIEWER, "GET", &format!("/v1/tasks/{id}"), None)
            .await
            .json()
            .await
            .unwrap();
        if t["status"] == "waiting_for_user" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let sse = call(&app, VIEWER, "GET", &format!("/v1/tasks/{id}/events"), None).await;
    assert_eq!(sse.status(), 200, "read may watch a task's events");
    drop(sse);
    refused(
        call(
            &app,
            VIEWER,
            "POST",
            &format!("/v1/tasks/{id}/answer"),
            Some(json!({"answer": "a"})),
        )
        .await,
        "operate",
    )
    .await;
    refused(
        call(
            &app,
            CI,
            "POST",
            "/v1/devices",
            Some(json!({"serial": "x"})),
        )
        .await,
        "admin",
    )
    .await;
    refused(
        call(&app, CI, "DELETE", "/v1/devices/sim-1", None).await,
        "admin",
    )
    .await;
    refused(
        call(&app, CI, "POST", "/v1/scripts", Some(json!({}))).await,
        "admin",
    )
    .await;

    // The WebSocket: read subscribes but may not cancel; the error names the scope.
    let mut req = format!("ws://{}/v1/ws", app.addr)
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {VIEWER}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let mut say = async |m: Value| -> Value {
        ws.send(Message::Text(m.to_string().into())).await.unwrap();
        loop {
            if let Some(Ok(Message::Text(t))) = ws.next().await {
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["type"] != "event" {
                    return v;
                }
            }
        }
    };
    let sub = say(json!({"type": "subscribe", "tasks": [id]})).await;
    assert_eq!(sub["type"], "subscribed", "{sub}");
    let no = say(json!({"type": "cancel", "task_id": id})).await;
    assert_eq!(no["error"]["code"], "insufficient_scope", "{no}");
    assert!(
        no["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`operate`"),
        "{no}"
    );

    let r = call(
        &app,
        CI,
        "POST",
        &format!("/v1/tasks/{id}/answer"),
        Some(json!({"answer": "a"})),
    )
    .await;
    assert_eq!(r.status(), 200);
    let iv: Value = r.json().await.unwrap();
    assert_eq!(
        iv["answered_by"], "ci",
        "the token's name is who answered: {iv}"
    );

    // A plain token is admin: past the scope check (the body is then refused).
    let (status, code, _, _) = error_of(
        call(
            &app,
            ADMIN,
            "POST",
            "/v1/devices",
            Some(json!({"nonsense": 1})),
        )
        .await,
    )
    .await;
    assert!(status == 422 || status == 400, "{status} {code}");
    assert_eq!(
        call(&app, ADMIN, "GET", "/v1/tasks", None).await.status(),
        200
    );
    app.stop().await;
}
