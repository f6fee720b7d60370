//! Scripts end to end on the virtual phone: record a finished task, replay it with no
//! model on a phone whose app "updated" (renamed ids, reordered lists), heal a broken
//! step with a model in OpenAI's wire format, and the errors a caller can make.

use droidpilot::device::sim::tasks::task as sim_task;
use droidpilot::device::sim::{SimConfig, SimDevice, SimFaults};
use serde_json::{Value, json};

use crate::common::{TestApp, error_of};
use crate::run::{add_phone, app_for, bare_app, serve_replies, submit, wait_done};

/// Submits the sim task's reference solution (coordinate taps) as a replay task on
/// `serial` (going on past a failed tap when `blind`) and returns the task's id.
async fn submit_reference(app: &TestApp, serial: &str, task: &str, blind: bool) -> String {
    let actions: Vec<Value> = sim_task(task)
        .unwrap()
        .reference()
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect();
    let on_error = if blind { "continue" } else { "fail" };
    submit(
        app,
        json!({"instruction": sim_task(task).unwrap().instruction, "device_id": serial,
               "agent": {"kind": "replay", "actions": actions, "on_error": on_error}}),
    )
    .await
}

/// The reference solution as a replay task that must succeed; returns its id.
pub(crate) async fn reference_run(app: &TestApp, serial: &str, task: &str) -> String {
    let id = submit_reference(app, serial, task, false).await;
    assert_eq!(wait_done(app, &id).await["status"], "succeeded");
    id
}

async fn reference_run_unchecked(app: &TestApp, serial: &str, task: &str) -> String {
    let id = submit_reference(app, serial, task, true).await;
    wait_done(app, &id).await;
    id
}

pub(crate) async fn record(app: &TestApp, task_id: &str) -> Value {
    let r = app
        .post_json("/v1/scripts", &json!({"from_task": task_id}))
        .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

async fn run(app: &TestApp, script_id: &str, body: Value) -> Value {
    let r = app
        .post_json(&format!("/v1/scripts/{script_id}/run"), &body)
        .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let t: Value = r.json().await.unwrap();
    wait_done(app, t["id"].as_str().unwrap()).await
}

pub(crate) async fn steps(app: &TestApp, task_id: &str) -> Vec<Value> {
    app.get(&format!("/v1/tasks/{task_id}/steps"))
        .await
        .json()
        .await
        .unwrap()
}

/// A virtual phone in `task`'s start state, with the app "updated": ids renamed and
/// lists shuffled by `seed`.
async fn updated_phone(
    app: &TestApp,
    serial: &str,
    task: &str,
    seed: u64,
) -> std::sync::Arc<SimDevice> {
    let cfg = SimConfig {
        serial: serial.into(),
        width: 540,
        height: 1200,
        seed,
        ..Default::default()
    };
    let phone = std::sync::Arc::new(SimDevice::new(cfg).unwrap());
    phone.reset_to(&sim_task(task).unwrap());
    phone
        .set_faults(SimFaults {
            renamed_ids: true,
            reorder_lists: true,
            ..Default::default()
        })
        .unwrap();
    app.pool.add_device(phone.clone(), "sim").await.unwrap();
    phone
}

#[tokio::test]
async fn a_recorded_run_replays_with_no_model_on_an_updated_app_where_coordinates_fail() {
    const TASK: &str = "messages.running_late_bob";
    let app = bare_app(&[]).await;
    add_phone(&app, "clean", Some(TASK)).await;
    let recorded_from = reference_run(&app, "clean", TASK).await;
    let script = record(&app, &recorded_from).await;
    assert_eq!(script["version"], 1);
    assert_eq!(
        script["source"],
        json!({"kind": "task", "task_id": recorded_from})
    );
    let taps: Vec<&Value> = script["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"] == "tap")
        .collect();
    assert!(
        !taps.is_empty() && taps.iter().all(|s| s["selector"].is_string()),
        "coordinates became selectors: {script}"
    );

    let mut blind_missed = 0;
    for seed in 1..=4u64 {
        let updated = updated_phone(&app, &format!("updated-{seed}"), TASK, seed).await;
        let blind = updated_phone(&app, &format!("blind-{seed}"), TASK, seed).await;
        // Zero model calls, and the task's own checker agrees the message went to Bob.
        let done = run(
            &app,
            script["id"].as_str().unwrap(),
            json!({"device_id": format!("updated-{seed}")}),
        )
        .await;
        assert_eq!(done["status"], "succeeded", "seed {seed}: {done}");
        assert_eq!(done["model_calls"], 0);
        assert!(
            sim_task(TASK).unwrap().check(&updated.state()),
            "seed {seed}: the message reached Bob"
        );
        let replayed = steps(&app, done["id"].as_str().unwrap()).await;
        let (device_steps, end) = replayed.split_at(replayed.len() - 1);
        assert_eq!(end[0]["action"]["action"], "finish");
        assert!(
            device_steps.iter().all(|s| s["replay"].is_object()),
            "every step says what it did for the script"
        );
        assert!(
            device_steps
                .iter()
                .any(|s| s["replay"]["fallback"] != "none"),
            "the renamed ids needed a fallback: {replayed:?}"
        );
        // The same taps by coordinate, on the same updated app.
        reference_run_unchecked(&app, &format!("blind-{seed}"), TASK).await;
        if !sim_task(TASK).unwrap().check(&blind.state()) {
            blind_missed += 1;
        }
    }
    assert!(
        blind_missed > 0,
        "a shuffled thread list defeats blind coordinates at least once in 4 seeds"
    );
}

#[tokio::test]
async fn a_broken_step_is_healed_by_a_model_and_saved_as_the_next_version() {
    const TASK: &str = "settings.bluetooth_on";
    let server = wiremock::MockServer::start().await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "clean", Some(TASK)).await;
    let phone = add_phone(&app, "other", Some(TASK)).await;
    let recorded = record(&app, &reference_run(&app, "clean", TASK).await).await;
    let mut doc = recorded.clone();
    let good = doc["steps"][1]["selector"].as_str().unwrap().to_string();
    // An app update broke the step: a selector nothing matches, no fallbacks.
    doc["steps"][1]["selector"] = json!("#bluetooth_toggle_v2");
    doc["steps"][1]["alternative_selectors"] = json!([]);
    doc["fuzzy"] = json!(false);
    for k in ["id", "version", "created_at", "source"] {
        doc.as_object_mut().unwrap().remove(k);
    }
    let r = app
        .client
        .put(app.url(&format!("/v1/scripts/{}", recorded["id"].as_str().unwrap())))
        .json(&doc)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let broken: Value = r.json().await.unwrap();
    assert_eq!(broken["version"], 2);

    let answer = json!({"action_type": "modify_selector", "new_selector": good, "reason": "the id changed", "confidence": "high"});
    serve_replies(&server, vec![(200, answer.to_string())], Default::default()).await;
    let done = run(
        &app,
        broken["id"].as_str().unwrap(),
        json!({"device_id": "other", "recovery": true, "provider": "openai", "model": "fixer", "base_url": format!("{}/v1", server.uri())}),
    )
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["model_calls"], 1, "one recovery call, nothing else");
    assert!(sim_task(TASK).unwrap().check(&phone.state()));

    let versions: Vec<Value> = app
        .get(&format!(
            "/v1/scripts/{}/versions",
            broken["id"].as_str().unwrap()
        ))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(versions.len(), 3, "the broken version is kept");
    let healed = &versions[2];
    assert_eq!(healed["source"]["kind"], "healed");
    assert_eq!(healed["source"]["from_version"], 2);
    assert_eq!(healed["steps"][1]["selector"], json!(good));
    assert_eq!(
        healed["steps"][1]["alternative_selectors"][0],
        "#bluetooth_toggle_v2"
    );
    assert_eq!(
        healed["steps"][1]["recovery_hints"][0]["trigger"],
        "element_not_found:#bluetooth_toggle_v2"
    );

    // Without a model the same break fails the task, naming the step.
    let failed = run(
        &app,
        broken["id"].as_str().unwrap(),
        json!({"device_id": "other", "version": 2}),
    )
    .await;
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["reason"].as_str().unwrap().contains("script step 2"),
        "{failed}"
    );
}

#[tokio::test]
async fn bad_scripts_and_runs_get_the_error_shape_and_change_nothing() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let doc =
        |steps: Value| json!({"name": "n", "goal": "g", "inputs": {"who": null}, "steps": steps});

    let (s, code, msg, _) = error_of(
        app.post_json(
            "/v1/scripts",
            &doc(json!([{"action": "type", "selector": "#to", "parameters": {"text": "${whom}"}}])),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "unknown_variable"));
    assert!(
        msg.contains("steps[0].parameters.text") && msg.contains("whom"),
        "{msg}"
    );

    let (s, code, msg, hint) = error_of(
        app.post_json(
            "/v1/scripts",
            &doc(json!([{"action": "tap", "selector": ":text(\"Send)"}])),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "invalid_selector"));
    assert!(
        msg.contains("column") && hint.contains('^'),
        "{msg} / {hint}"
    );

    let (s, code, _, _) = error_of(
        app.post_json(
            "/v1/scripts",
            &json!({"from_task": "0190c0de-0000-7000-8000-000000000000"}),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (404, "task_not_found"));
    let (s, code, msg, _) = error_of(
        app.post_json(
            "/v1/scripts",
            &json!({"from_task": "0190c0de-0000-7000-8000-000000000000", "nmae": "y"}),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "invalid_script"));
    assert!(msg.contains("nmae"), "{msg}");
    let listed: Value = app.get("/v1/scripts").await.json().await.unwrap();
    assert_eq!(listed["scripts"], json!([]), "nothing was stored");

    let r = app
        .post_json(
            "/v1/scripts",
            &json!({"name": "n", "goal": "g", "app": "com.example.missing", "inputs": {"who": null},
        "steps": [{"action": "launch_app", "parameters": {"package": "com.example.missing"}}]}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, code, msg, _) = error_of(
        app.post_json(
            &format!("/v1/scripts/{id}/run"),
            &json!({"inputs": {"who": "a", "whom": "b"}}),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "unknown_variable"));
    assert!(msg.contains("whom"), "{msg}");
    let (s, code, _, _) = error_of(
        app.post_json(&format!("/v1/scripts/{id}/run"), &json!({}))
            .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "missing_input"));
    let (s, code, msg, _) = error_of(
        app.post_json(
            &format!("/v1/scripts/{id}/run"),
            &json!({"inputs": {"who": "a"}, "device_id": "sim-1"}),
        )
        .await,
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "app_not_installed"));
    assert!(msg.contains("com.example.missing"), "{msg}");
    let (s, code, _, _) = error_of(app.get(&format!("/v1/scripts/{id}?version=7")).await).await;
    assert_eq!((s, code.as_str()), (404, "script_version_not_found"));
    let tasks: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(
        tasks["tasks"],
        json!([]),
        "no task was queued by a refused run"
    );

    let r = app
        .client
        .delete(app.url(&format!("/v1/scripts/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (s, code, _, _) = error_of(app.get(&format!("/v1/scripts/{id}")).await).await;
    assert_eq!((s, code.as_str()), (404, "script_not_found"));
}

/// Serves OpenAI tool-call replies in order: each reply is a list of (tool, arguments).
struct ToolCalls(
    Vec<Vec<(&'static str, Value)>>,
    std::sync::atomic::AtomicUsize,
);

impl wiremock::Respond for ToolCalls {
    fn respond(&self, _: &wiremock::Request) -> wiremock::ResponseTemplate {
        let i = self
            .1
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .min(self.0.len() - 1);
        let calls: Vec<Value> = self.0[i]
            .iter()
            .enumerate()
            .map(|(j, (name, args))| {
                json!({"id": format!("call_{i}_{j}"), "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_741_570_283, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}
        }))
    }
}

#[tokio::test]
async fn the_navigator_records_a_script_while_it_works_and_the_script_replays() {
    const TASK: &str = "settings.bluetooth_on";
    let server = wiremock::MockServer::start().await;
    let app = app_for(&[&server], &[]).await;
    add_phone(&app, "clean", Some(TASK)).await;
    add_phone(&app, "nav", Some(TASK)).await;
    let replay_on = add_phone(&app, "again", Some(TASK)).await;
    // The selector the recorder would pick for the Bluetooth row.
    let reference = record(&app, &reference_run(&app, "clean", TASK).await).await;
    let tap_step = reference["steps"][1].clone();
    let bluetooth = tap_step["selector"].clone();

    let launch = json!({"action": "launch_app", "parameters": {"package": "com.android.settings"}});
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ToolCalls(
            vec![
                vec![("launch_app", json!({"package": "com.android.settings"}))],
                // A bad record is refused with the reason, and the action still runs.
                vec![
                    ("record_step", json!({"action": "tap", "selector": "[0.4]"})),
                    ("record_step", launch),
                    ("tap", json!({"selector": bluetooth})),
                ],
                vec![
                    ("record_step", tap_step),
                    (
                        "finalize_script",
                        json!({"success": true, "summary": "turns Bluetooth on"}),
                    ),
                ],
            ],
            Default::default(),
        ))
        .mount(&server)
        .await;
    let id = submit(
        &app,
        json!({"instruction": "Turn on Bluetooth", "device_id": "nav", "record": true,
               "agent": {"kind": "navigator", "provider": "openai", "model": "gpt-4o", "base_url": format!("{}/v1", server.uri())}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let events: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let saved = events
        .iter()
        .find(|e| e["type"] == "script.saved")
        .expect("a script.saved event");
    let script_id = saved["payload"]["script_id"].as_str().unwrap();
    let script: Value = app
        .get(&format!("/v1/scripts/{script_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        script["source"],
        json!({"kind": "navigator", "task_id": id})
    );
    assert_eq!(script["summary"], "turns Bluetooth on");
    assert_eq!(
        script["steps"].as_array().unwrap().len(),
        2,
        "the refused record is not in it: {script}"
    );

    let replayed = run(&app, script_id, json!({"device_id": "again"})).await;
    assert_eq!(replayed["status"], "succeeded", "{replayed}");
    assert!(sim_task(TASK).unwrap().check(&replay_on.state()));
    let refused = app.post_json("/v1/tasks", &json!({"instruction": "x", "record": true, "agent": {"kind": "replay", "actions": []}})).await;
    let (s, code, msg, _) = error_of(refused).await;
    assert_eq!((s, code.as_str()), (422, "invalid_agent"));
    assert!(msg.contains("navigator"), "{msg}");
}

/// The scripts guide's walkthrough, as written: the replay task, recording it, replaying
/// the script on a fresh phone; and the guide's example script is a valid document.
#[tokio::test]
async fn the_scripts_guide_walkthrough_works_as_written() {
    let guide = include_str!("../../docs/scripts.md");
    let section = &guide[guide
        .find("## A walkthrough")
        .expect("a walkthrough section")..];
    let start = section.find("-d '{").expect("the replay task example") + 4;
    let end = start + section[start..].find("}'").expect("its end") + 1;
    let task: Value = serde_json::from_str(&section[start..end]).expect("valid JSON");
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", Some("settings.bluetooth_on")).await;
    let id = submit(&app, task).await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let script = record(&app, &id).await;
    let fresh = add_phone(&app, "sim-2", Some("settings.bluetooth_on")).await;
    let done = run(
        &app,
        script["id"].as_str().unwrap(),
        json!({"device_id": "sim-2"}),
    )
    .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        sim_task("settings.bluetooth_on")
            .unwrap()
            .check(&fresh.state())
    );

    let start = section.find("```json\n").expect("the example script") + 8;
    let end = start + section[start..].find("```").unwrap();
    let doc: Value =
        serde_json::from_str(&section[start..end]).expect("the example script is JSON");
    let r = app.post_json("/v1/scripts", &doc).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn maestro_flows_import_and_export_over_rest_and_refusals_name_the_line() {
    let app = bare_app(&[]).await;
    let flow = include_str!("../fixtures/maestro/wikipedia_search.yaml");
    let post_yaml = |body: &'static str, ct: &'static str| {
        app.client
            .post(app.url("/v1/scripts/import"))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let r = post_yaml(flow, "application/yaml").await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let rec: Value = r.json().await.unwrap();
    assert_eq!(rec["source"]["kind"], "maestro");
    let id = rec["id"].as_str().unwrap();
    let r = app
        .get(&format!("/v1/scripts/{id}/export?format=maestro"))
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/yaml")
    );
    let yaml = r.text().await.unwrap();
    assert_eq!(
        droidpilot::script::maestro::import(&yaml).unwrap(),
        serde_json::from_value::<droidpilot::script::Script>(
            app.get(&format!("/v1/scripts/{id}/export"))
                .await
                .json()
                .await
                .unwrap()
        )
        .unwrap(),
        "the exported flow imports back to the stored script"
    );

    let (s, code, msg, hint) = error_of(
        post_yaml(
            "appId: com.example\n---\n- launchApp\n- evalScript: ${1+1}\n",
            "text/yaml",
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((s, code.as_str()), (422, "unsupported_command"));
    assert!(msg.contains("line 4"), "{msg} / {hint}");
    let (s, code, _, _) = error_of(post_yaml(flow, "application/json").await.unwrap()).await;
    assert_eq!((s, code.as_str()), (415, "unsupported_media_type"));
    let listed: Value = app.get("/v1/scripts").await.json().await.unwrap();
    assert_eq!(
        listed["scripts"].as_array().unwrap().len(),
        1,
        "refused flows store nothing"
    );
}
