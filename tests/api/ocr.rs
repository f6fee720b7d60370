//! OCR merged into the element map, end to end on the virtual phone's pages whose text
//! is pixels only (`apps::pixels`): `GET /screen?ocr=true` lists that text as elements
//! (`source: "ocr"`), and a script and a navigator that asked for OCR tap them.
//!
//! These need Debian's `tesseract-ocr` (and `tesseract-ocr-eng`). Without it they skip
//! loudly, unless DROIDPILOT_REQUIRE_TESSERACT=1 (CI sets it): then they fail.

use std::sync::Arc;

use droidpilot::device::sim::apps::pixels::{ARCADE, LEGACY, PROMO};
use droidpilot::device::sim::{AppId, Cmd};
use droidpilot::device::sim::{SimConfig, SimDevice};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::run::{app_for, bare_app, submit, wait_done};

fn tesseract_available() -> bool {
    let found = droidpilot::ocr::tesseract_available("tesseract");
    if !found {
        if std::env::var("DROIDPILOT_REQUIRE_TESSERACT").as_deref() == Ok("1") {
            panic!(
                "DROIDPILOT_REQUIRE_TESSERACT=1 but `tesseract` is not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-eng)"
            );
        }
        eprintln!("\n########################################################################");
        eprintln!("## SKIPPED tests/api/ocr.rs: `tesseract` is not installed             ##");
        eprintln!("## (apt-get install tesseract-ocr tesseract-ocr-eng).                 ##");
        eprintln!("## Set DROIDPILOT_REQUIRE_TESSERACT=1 to make this a failure.         ##");
        eprintln!("########################################################################\n");
    }
    found
}

/// A full-size phone (OCR reads its 1080×2400 screenshots) showing `url`, loaded.
async fn phone_at(app: &TestApp, serial: &str, url: &str) -> Arc<SimDevice> {
    let cfg = SimConfig {
        serial: serial.into(),
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(cfg).unwrap());
    phone.apply(Cmd::Launch {
        app: AppId::Browser,
    });
    phone.apply(Cmd::BrowserOpen { url: url.into() });
    phone.advance_clock(5_000);
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    phone
}

async fn screen(app: &TestApp, serial: &str, ocr: bool) -> Value {
    let q = if ocr { "?ocr=true" } else { "" };
    let r = app.get(&format!("/v1/devices/{serial}/screen{q}")).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn element<'a>(screen: &'a Value, text: &str) -> Option<&'a Value> {
    screen["actionable_elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["text"] == text)
}

fn opened(phone: &SimDevice) -> Vec<String> {
    phone.state().browser.history.clone()
}

#[tokio::test]
async fn screen_with_ocr_lists_text_that_is_only_pixels_as_ocr_elements() {
    if !tesseract_available() {
        return;
    }
    let app = bare_app(&[]).await;
    phone_at(&app, "bank", LEGACY).await;
    phone_at(&app, "promo", PROMO).await;

    // The page exposes no nodes: without OCR, nothing says "Sign in".
    let plain = screen(&app, "bank", false).await;
    assert!(element(&plain, "Sign in").is_none(), "{plain}");
    assert!(!plain["elements"].as_str().unwrap().contains("Sign in"));

    let read = screen(&app, "bank", true).await;
    let sign_in = element(&read, "Sign in").unwrap_or_else(|| panic!("{read}"));
    assert_eq!(sign_in["source"], "ocr");
    assert!(
        sign_in["actions"]
            .as_array()
            .unwrap()
            .contains(&json!("click"))
    );
    // Where it is drawn: the button spans x 290–790 and y 952–1112.
    let b = &sign_in["bounds"];
    let (cx, cy) = (
        (b["left"].as_i64().unwrap() + b["right"].as_i64().unwrap()) / 2,
        (b["top"].as_i64().unwrap() + b["bottom"].as_i64().unwrap()) / 2,
    );
    assert!((290..790).contains(&cx) && (952..1112).contains(&cy), "{b}");
    assert!(
        read["elements"]
            .as_str()
            .unwrap()
            .contains("\"Sign in\" ocr click"),
        "{read}"
    );
    // Without OCR every element is the tree's; with it, the URL bar, whose text OCR
    // read too, is the tree's node confirmed (`merged`), not a second element.
    let all = |s: &Value| s["actionable_elements"].as_array().unwrap().clone();
    assert!(all(&plain).iter().all(|e| e["source"] == "tree"), "{plain}");
    let bars: Vec<Value> = all(&read)
        .into_iter()
        .filter(|e| e["text"].as_str().unwrap().contains("legacy.example"))
        .collect();
    assert_eq!(bars.len(), 1, "{read}");
    assert_eq!(bars[0]["source"], "merged");

    // An unlabelled image button with its word drawn on it: enriched, not duplicated.
    let promo = screen(&app, "promo", true).await;
    let sub = element(&promo, "Subscribe").unwrap_or_else(|| panic!("{promo}"));
    assert_eq!(sub["source"], "merged");
    assert_eq!(sub["type"], "Image");
    let subs = promo["actionable_elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["text"] == "Subscribe")
        .count();
    assert_eq!(subs, 1);
    // The banner's sale is only pixels: OCR elements inside the banner.
    assert_eq!(element(&promo, "SUMMER SALE").unwrap()["source"], "ocr");
}

#[tokio::test]
async fn a_script_that_asked_for_ocr_taps_text_the_tree_does_not_have() {
    if !tesseract_available() {
        return;
    }
    let app = bare_app(&[]).await;
    let phone = phone_at(&app, "bank", LEGACY).await;
    let script = json!({"name": "sign in", "goal": "Sign in to the bank",
        "steps": [{"action": "tap", "selector": ":ocr(\"Sign in\")"}]});
    // Without OCR the selector finds nothing: the script fails, nothing is opened.
    let id = submit(
        &app,
        json!({"instruction": "Sign in", "device_id": "bank",
               "agent": {"kind": "script", "script": script}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    assert!(!opened(&phone).iter().any(|u| u.ends_with("/account")));

    let id = submit(
        &app,
        json!({"instruction": "Sign in", "device_id": "bank",
               "agent": {"kind": "script", "script": script, "ocr": true}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        opened(&phone)
            .iter()
            .any(|u| u == "https://legacy.example/account"),
        "{:?}",
        opened(&phone)
    );
}

/// Serves OpenAI tool-call replies in order: each reply is one (tool, arguments).
pub(crate) struct ToolCalls(Vec<(&'static str, Value)>, std::sync::atomic::AtomicUsize);

impl ToolCalls {
    pub(crate) fn new(calls: Vec<(&'static str, Value)>) -> Self {
        Self(calls, std::sync::atomic::AtomicUsize::new(0))
    }
}

impl wiremock::Respond for ToolCalls {
    fn respond(&self, _: &wiremock::Request) -> wiremock::ResponseTemplate {
        let i = self
            .1
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .min(self.0.len() - 1);
        let (name, args) = &self.0[i];
        let call = json!({"id": format!("call_{i}"), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}});
        wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_741_570_283, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}
        }))
    }
}

#[tokio::test]
async fn a_navigator_with_ocr_sees_the_canvas_buttons_and_taps_one() {
    if !tesseract_available() {
        return;
    }
    let server = wiremock::MockServer::start().await;
    let app = app_for(&[&server], &[]).await;
    let phone = phone_at(&app, "game", ARCADE).await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ToolCalls(
            vec![
                ("tap", json!({"selector": ":ocr(\"PLAY\")"})),
                ("finish", json!({"success": true})),
            ],
            Default::default(),
        ))
        .mount(&server)
        .await;
    let id = submit(
        &app,
        json!({"instruction": "Start a game", "device_id": "game",
               "agent": {"kind": "navigator", "provider": "openai", "model": "gpt-4o",
                         "base_url": format!("{}/v1", server.uri()), "ocr": true}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let steps: Value = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        opened(&phone)
            .iter()
            .any(|u| u == "https://arcade.example/play"),
        "{:?} {steps}",
        opened(&phone)
    );
    // The model was shown the canvas's drawn button as an element read by OCR.
    let first = &server.received_requests().await.unwrap()[0];
    let body = String::from_utf8_lossy(&first.body);
    assert!(body.contains(r#"\"PLAY\" ocr click"#), "{body}");
}

#[tokio::test]
async fn an_agent_that_asks_for_ocr_with_a_non_boolean_is_refused() {
    let app = bare_app(&[]).await;
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "agent": {"kind": "replay", "actions": [], "ocr": "yes"}}),
        )
        .await;
    assert_eq!(r.status(), 422, "{}", r.text().await.unwrap());
}
