//! A task's webhook URL may not point the server at an internal host (loopback,
//! link-local, private ranges, `localhost`) unless the operator allows that host.

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::error_of;
use crate::run::{add_phone, bare_app, submit, wait_done};

#[tokio::test]
async fn webhooks_to_internal_hosts_are_refused_unless_the_operator_allows_them() {
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let replay = json!({"kind": "replay", "actions": [{"action": "home"}]});
    let port = receiver.address().port();
    for url in [
        format!("{}/hook", receiver.uri()),
        format!("http://localhost:{port}/hook"),
        format!("http://LOCALHOST.:{port}/hook"),
        format!("http://[::1]:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        "http://169.254.169.254/latest/meta-data".to_string(),
        "http://10.0.0.1/hook".to_string(),
        "http://192.168.1.1/hook".to_string(),
        "http://0.0.0.0/hook".to_string(),
    ] {
        let (status, code, msg, hint) = error_of(
            app.post_json(
                "/v1/tasks",
                &json!({"instruction": "x", "webhook_url": url, "agent": replay}),
            )
            .await,
        )
        .await;
        assert_eq!(
            (status, code.as_str()),
            (422, "webhook_host_refused"),
            "{url}: {msg}"
        );
        assert!(msg.starts_with("webhook_url: "), "{msg}");
        assert!(hint.contains("[webhooks] allowed_hosts"), "{hint}");
    }
    let list: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(list["tasks"], json!([]), "nothing was queued");
    assert!(receiver.received_requests().await.unwrap().is_empty());

    // The operator opens loopback: the same URL is accepted and the result delivered.
    let app = bare_app(&[("DROIDPILOT_WEBHOOKS__ALLOWED_HOSTS", "127.0.0.1,::1")]).await;
    add_phone(&app, "sim-1", None).await;
    let id = submit(
        &app,
        json!({"instruction": "x", "webhook_url": format!("{}/hook", receiver.uri()), "agent": replay}),
    )
    .await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    for _ in 0..100 {
        if !receiver.received_requests().await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(receiver.received_requests().await.unwrap().len(), 1);
    // Still only what the operator named: a private range stays closed.
    let (status, ..) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "webhook_url": "http://10.0.0.1/hook", "agent": replay}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
}
