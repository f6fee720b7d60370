//! AI in the middle for Maestro flows on the virtual phone: a command whose selector no
//! longer matches (the flow names the element by an old label) is recovered by the
//! recovery model (a recorded reply from a stand-in provider), the step records it, and
//! with `heal` the flow comes back as Maestro YAML with the new label and the old one
//! kept as an alternative, which then runs with no model.

use serde_json::{Value, json};

use crate::common::TestApp;
use crate::run::{add_phone, app_for, bare_app, model, submit, wait_done};
use crate::scripts::steps;

/// The Bluetooth row is called "Bluetooth" on the phone; the flow still says "Bluetooth
/// radio", as it would after an app update renamed the row.
const BROKEN: &str = r#"appId: com.android.settings
---
- launchApp
# the row we switch
- tapOn: "Bluetooth radio"
- assertVisible:
    text: "On"
    below: "Bluetooth"
"#;

async fn run(app: &TestApp, agent: Value) -> Value {
    let id = submit(
        app,
        json!({"instruction": "turn bluetooth on", "device_id": "p", "max_steps": 40,
               "agent": agent}),
    )
    .await;
    wait_done(app, &id).await
}

fn fixer(server: &wiremock::MockServer) -> Value {
    json!({"kind": "flow", "flow": BROKEN, "recovery": true, "provider": "openai",
           "model": "fixer", "base_url": format!("{}/v1", server.uri())})
}

/// Without a model the renamed row fails the flow at its line; with `recovery` the
/// model's `modify_selector` is turned into a Maestro selector, the row is tapped, the
/// step says so, and the flow succeeds with one model call.
#[tokio::test]
async fn a_renamed_element_is_recovered_by_the_model_and_recorded_on_the_step() {
    let answer = json!({"action_type": "modify_selector", "new_selector": ":text(\"Bluetooth\")",
                        "reason": "the row is called Bluetooth now", "confidence": "high"});
    let (server, _) = model(vec![(200, answer.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "p", None).await;
    let failed = run(&app, json!({"kind": "flow", "flow": BROKEN})).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("flow.yaml line 5"),
        "{failed}"
    );
    assert!(!phone.state().settings.bluetooth);

    let app = app_for(&[&server], &[]).await;
    let phone = add_phone(&app, "p", None).await;
    let done = run(&app, fixer(&server)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        phone.state().settings.bluetooth,
        "the renamed row was tapped"
    );
    assert_eq!(done["model_calls"], 1, "{done}");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("AI recovery: flow.yaml line 5"),
        "{done}"
    );
    let all = steps(&app, done["id"].as_str().unwrap()).await;
    let tap = all
        .iter()
        .find(|s| s["action"]["action"] == "tap")
        .expect("a tap");
    assert_eq!(tap["replay"]["index"], 5, "{tap}");
    assert_eq!(tap["replay"]["fallback"], "healed", "{tap}");
    assert_eq!(tap["replay"]["recovery"], "modify_selector", "{tap}");
    assert!(done["answer"].is_null(), "no heal asked: {done}");
}

/// With `heal`, the task's result holds the flow rewritten as Maestro YAML: the tap's
/// text is `Bluetooth|Bluetooth radio` (Maestro's text is a regular expression, so the
/// old label stays a fallback Maestro runs), the file's comment is kept and a comment
/// says what was healed; the healed flow runs on a fresh phone with no model.
#[tokio::test]
async fn a_healed_flow_comes_back_as_maestro_yaml_that_runs_without_a_model() {
    let answer = json!({"action_type": "modify_selector", "new_selector": ":text(\"Bluetooth\")",
                        "reason": "the row is called Bluetooth now", "confidence": "high"});
    let (server, _) = model(vec![(200, answer.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "p", None).await;
    let mut agent = fixer(&server);
    agent["heal"] = json!(true);
    let done = run(&app, agent).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let answer: Value = serde_json::from_str(done["answer"].as_str().unwrap()).unwrap();
    let healed = answer["healed"]["flow.yaml"].as_str().unwrap();
    assert!(
        healed.contains("- tapOn: 'Bluetooth|Bluetooth radio'\n"),
        "{healed}"
    );
    assert!(healed.contains("# the row we switch\n"), "{healed}");
    assert!(
        healed.contains("# healed by droidpilot: the row is called Bluetooth now; the old selector was text: 'Bluetooth radio'"),
        "{healed}"
    );

    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let again = run(&app, json!({"kind": "flow", "flow": healed})).await;
    assert_eq!(again["status"], "succeeded", "{again}");
    assert!(phone.state().settings.bluetooth);
    assert_eq!(again["model_calls"], 0);
}

/// `heal` needs `recovery`, and a model named without `recovery` is refused by name.
#[tokio::test]
async fn heal_and_a_model_need_recovery() {
    let app = bare_app(&[]).await;
    for (agent, field) in [
        (
            json!({"kind": "flow", "flow": BROKEN, "heal": true}),
            "agent.heal",
        ),
        (
            json!({"kind": "flow", "flow": BROKEN, "model": "x"}),
            "agent.model",
        ),
    ] {
        let r = app
            .post_json("/v1/tasks", &json!({"instruction": "x", "agent": agent}))
            .await;
        let (status, code, msg, _) = crate::common::error_of(r).await;
        assert_eq!((status, code.as_str()), (422, "invalid_agent"), "{msg}");
        assert!(msg.starts_with(field), "{msg}");
    }
}

/// The AI commands go to the task's model (recorded replies from a stand-in provider):
/// `assertWithAI` passes on the model's word, `extractTextWithAI` stores its text for
/// `${…}`, and `assertNoDefectsWithAI` (optional, as in Maestro) that finds a defect is
/// a warning in the reason; a failed `optional: false` assertion fails the flow at its
/// line.
#[tokio::test]
async fn ai_commands_ask_the_model_and_use_its_answers() {
    let flow = r#"appId: com.android.settings
---
- launchApp
- assertWithAI:
    assertion: The Bluetooth row is shown
    optional: false
- extractTextWithAI:
    query: the label of the row under Wi-Fi
    outputVariable: row
- assertTrue: ${row == 'Bluetooth'}
- assertNoDefectsWithAI
"#;
    let replies = vec![
        (
            200,
            json!({"passed": true, "reason": "it is there"}).to_string(),
        ),
        (200, json!({"text": "Bluetooth"}).to_string()),
        (
            200,
            json!({"defects": [{"category": "layout", "reasoning": "a label is cut off"}]})
                .to_string(),
        ),
        (
            200,
            json!({"passed": false, "reason": "no such row"}).to_string(),
        ),
    ];
    let (server, _) = model(replies).await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "p", None).await;
    let agent = json!({"kind": "flow", "flow": flow, "provider": "openai", "model": "judge",
                       "base_url": format!("{}/v1", server.uri())});
    let done = run(&app, agent.clone()).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["model_calls"], 3, "{done}");
    let reason = done["reason"].as_str().unwrap();
    assert!(
        reason.contains("flow.yaml line 11 (assertNoDefectsWithAI): the model found defects: layout: a label is cut off"),
        "{reason}"
    );
    let failed = run(&app, agent).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.contains("flow.yaml line 4") && reason.contains("does not hold: no such row"),
        "{reason}"
    );
}

/// A flow with an AI command whose model cannot be called (no key for its provider) is
/// refused at submission, naming the command's line.
#[tokio::test]
async fn an_ai_command_without_a_usable_model_is_refused_naming_the_line() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p", None).await;
    let flow =
        "appId: com.android.settings\n---\n- launchApp\n- assertWithAI: a list of settings\n";
    let r = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "device_id": "p", "agent": {"kind": "flow", "flow": flow,
                    "provider": "anthropic", "model": "claude"}}),
        )
        .await;
    let (status, code, msg, _) = crate::common::error_of(r).await;
    assert_eq!((status, code.as_str()), (422, "missing_model_key"), "{msg}");
    assert!(
        msg.contains("flow.yaml line 4 (assertWithAI) needs it"),
        "{msg}"
    );
}

/// A flow stored as a script (imported from Maestro) and run with `heal` comes back as
/// that script's next version: its source says healed, and its Maestro export is the
/// healed YAML with the flow's comment kept.
#[tokio::test]
async fn a_healed_flow_imported_as_a_script_is_stored_as_its_next_version() {
    let flow = "appId: com.android.settings\n---\n- launchApp\n# the row we switch\n- tapOn: \"Bluetooth radio\"\n";
    let answer = json!({"action_type": "modify_selector", "new_selector": ":text(\"Bluetooth\")",
                        "reason": "the row is called Bluetooth now", "confidence": "high"});
    let (server, _) = model(vec![(200, answer.to_string())]).await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "p", None).await;
    let r = app
        .client
        .post(app.url("/v1/scripts/import"))
        .header("content-type", "application/yaml")
        .body(flow)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let rec: Value = r.json().await.unwrap();
    let id = rec["id"].as_str().unwrap();
    assert_eq!(rec["maestro"], flow);
    let done = run(
        &app,
        json!({"kind": "flow", "flow": rec["maestro"], "script_id": id, "script_version": 1,
               "recovery": true, "heal": true, "provider": "openai", "model": "fixer",
               "base_url": format!("{}/v1", server.uri())}),
    )
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let versions: Vec<Value> = app
        .get(&format!("/v1/scripts/{id}/versions"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(versions.len(), 2, "{versions:?}");
    assert_eq!(versions[1]["source"]["kind"], "healed");
    assert_eq!(versions[1]["source"]["from_version"], 1);
    let exported = app
        .get(&format!("/v1/scripts/{id}/export?format=maestro"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        exported.contains("- tapOn: 'Bluetooth|Bluetooth radio'\n"),
        "{exported}"
    );
    assert!(exported.contains("# the row we switch\n"), "{exported}");
}

/// A flow written in English on a phone whose UI is German: `tapOn: "Airplane mode"`
/// finds the row by the settings app's own German string for it (read from its APK),
/// with no model, and the step says which resource key translated it.
#[tokio::test]
async fn an_english_flow_finds_its_labels_on_a_german_phone() {
    use droidpilot::device::sim::{SimConfig, SimDevice, locale::Locale};
    let app = bare_app(&[]).await;
    let phone = std::sync::Arc::new(
        SimDevice::new(SimConfig {
            serial: "p".into(),
            width: 540,
            height: 1200,
            locale: Locale::De,
            ..Default::default()
        })
        .unwrap(),
    );
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    let flow = "appId: com.android.settings\n---\n- launchApp\n- tapOn: \"Airplane mode\"\n";
    let id = submit(
        &app,
        json!({"instruction": "airplane mode on", "device_id": "p", "max_steps": 20,
               "agent": {"kind": "flow", "flow": flow}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(phone.state().settings.airplane);
    let all = steps(&app, &id).await;
    let step = all
        .iter()
        .find(|s| s["replay"]["fallback"] == "translated")
        .expect("a translated step");
    let t = &step["replay"]["matched"]["translated"][0];
    assert_eq!(t["from"], "Airplane mode");
    assert_eq!(t["to"], "Flugmodus");
    // One resource key (the virtual phone names its keys after the English words,
    // numbering a second string that spells the same words differently).
    let keys = t["keys"].as_array().expect("the keys");
    assert_eq!(keys.len(), 1, "{t}");
    assert!(
        keys[0].as_str().unwrap().starts_with("airplane_mode"),
        "{t}"
    );
}
