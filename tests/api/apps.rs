//! App knowledge: `GET /v1/devices/{id}/apps` describes each installed app, by the
//! configured model once per app version (stored: a second read asks no model), or by
//! its label with no model; and the navigator's prompt lists the apps with what they do.

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::spawn_app_with_toml;

const CLOCK: &str = "com.google.android.deskclock";
const SETTINGS: &str = "com.android.settings";
const DESCRIBE: &str = "You describe Android apps";

/// A chat completion whose text is `content` (as OpenAI's API returns it).
fn completion(content: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "describer",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}})
}

/// The recorded model: for each package the request lists (`- PACKAGE (label "…")`), a
/// sentence; the clock's and settings' as a model wrote them.
struct Describer;

impl wiremock::Respond for Describer {
    fn respond(&self, r: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        let user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        let mut out = serde_json::Map::new();
        for part in user.split("- ").skip(1) {
            let pkg: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_'))
                .collect();
            if !pkg.contains('.') {
                continue;
            }
            let text = match pkg.as_str() {
                CLOCK => "Set alarms, timers and a stopwatch.".to_string(),
                SETTINGS => "Change Wi-Fi, Bluetooth, display and app settings.".to_string(),
                other => format!("Use {other}."),
            };
            out.insert(pkg, Value::String(text));
        }
        ResponseTemplate::new(200).set_body_json(completion(&Value::Object(out).to_string()))
    }
}

async fn describer(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains(DESCRIBE))
        .respond_with(Describer)
        .mount(server)
        .await;
}

fn toml_for(server: &MockServer) -> String {
    format!(
        "[agent.navigator]\nprovider = \"openai\"\nmodel = \"describer\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    )
}

async fn requests_describing(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .filter(|b| b.contains(DESCRIBE))
        .collect()
}

fn app_of<'a>(apps: &'a Value, package: &str) -> &'a Value {
    apps.as_array()
        .unwrap()
        .iter()
        .find(|a| a["package"] == package)
        .unwrap_or_else(|| panic!("{package} missing from {apps}"))
}

#[tokio::test]
async fn the_configured_model_describes_each_app_once_per_version() {
    let server = MockServer::start().await;
    describer(&server).await;
    let app = spawn_app_with_toml(&toml_for(&server), &[]).await;
    let apps: Value = app
        .get("/v1/devices/sim-1/apps")
        .await
        .json()
        .await
        .unwrap();
    let clock = app_of(&apps, CLOCK);
    assert_eq!(clock["description"], "Set alarms, timers and a stopwatch.");
    assert_eq!(clock["description_source"], "model");
    assert_eq!(clock["version"], "1");
    assert!(
        apps.as_array()
            .unwrap()
            .iter()
            .all(|a| a["description_source"] == "model"),
        "{apps}"
    );
    let asked = requests_describing(&server).await;
    assert_eq!(asked.len(), 1, "one request for all the apps");
    assert!(
        asked[0].contains(CLOCK) && asked[0].contains("label \\\"Clock\\\""),
        "{}",
        asked[0]
    );

    // Stored: the second read asks no model, and reads the apps as the model wrote them.
    let again: Value = app
        .get("/v1/devices/sim-1/apps")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again, apps);
    assert_eq!(
        requests_describing(&server).await.len(),
        1,
        "no second model call"
    );
}

#[tokio::test]
async fn without_a_model_each_app_is_described_by_its_label() {
    let app = spawn_app_with_toml("", &[]).await;
    let apps: Value = app
        .get("/v1/devices/sim-1/apps")
        .await
        .json()
        .await
        .unwrap();
    let clock = app_of(&apps, CLOCK);
    assert_eq!(
        (
            &clock["label"],
            &clock["description"],
            &clock["description_source"]
        ),
        (&json!("Clock"), &json!("Clock"), &json!("label"))
    );
}

/// The navigator reads the installed apps with what each can do, in its prompt's
/// stable part (the same bytes at every step).
#[tokio::test]
async fn the_navigator_reads_what_each_app_can_do() {
    let server = MockServer::start().await;
    describer(&server).await;
    let finish = json!({"id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "describer",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "finish", "arguments": "{\"success\": true, \"answer\": \"done\"}"}}]}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 10, "total_tokens": 910}});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(finish))
        .mount(&server)
        .await;
    let app = spawn_app_with_toml(&toml_for(&server), &[]).await;
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "Set an alarm", "agent": {"kind": "navigator"}}),
        )
        .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let t = super::run::wait_done(&app, &id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let acting: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .filter(|b| !b.contains(DESCRIBE))
        .collect();
    assert_eq!(acting.len(), 1);
    assert!(
        acting[0]
            .contains("Clock (com.google.android.deskclock): Set alarms, timers and a stopwatch."),
        "{}",
        acting[0]
    );
}

/// `GET /v1/devices/{id}/apps/{package}/strings`: the app's string resources per locale
/// from its APK; a malformed package is a 400, an app the phone lacks a 422.
#[tokio::test]
async fn an_apps_string_resources_are_served_per_locale() {
    let app = spawn_app_with_toml("", &[]).await;
    let r = app
        .get("/v1/devices/sim-1/apps/com.droidpilot.shop/strings")
        .await;
    assert_eq!(r.status(), 200);
    let s: Value = r.json().await.unwrap();
    assert_eq!(s["package"], "com.droidpilot.shop");
    assert_eq!(s["version_code"], "1");
    assert_eq!(s["locales"][""]["add_to_cart"], "Add to cart");
    assert_eq!(s["locales"]["de"]["add_to_cart"], "In den Warenkorb");
    let bad = app
        .get("/v1/devices/sim-1/apps/not%20a%20package/strings")
        .await;
    assert_eq!(bad.status(), 400);
    let e: Value = bad.json().await.unwrap();
    assert_eq!(e["error"]["code"], "invalid_package");
    let absent = app
        .get("/v1/devices/sim-1/apps/com.example.absent/strings")
        .await;
    assert_eq!(absent.status(), 422);
}
