//! Flow runs (`/v1/flow-runs`): a Maestro workspace run across several virtual phones as
//! `maestro test` runs it, one ordinary `flow` task per flow; per-flow results with the
//! failing step and its screenshot, retries, `flowsOrder` and `continueOnFailure`,
//! JUnit and HTML reports, the run's events, a `.zip` upload, cancelling, and the
//! refusals at submission.

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, error_of};
use crate::run::{add_phone, bare_app};

const FIRST: &str = "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Wi-Fi\"\n";
const CONTACTS: &str =
    "appId: com.android.contacts\n---\n- launchApp\n- assertVisible: \"Create contact\"\n";
const BROKEN: &str =
    "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Nowhere to be found\"\n";
const WIP: &str = "appId: com.android.settings\ntags: [wip]\n---\n- launchApp\n";

async fn start(app: &TestApp, body: Value) -> Value {
    let r = app.post_json("/v1/flow-runs", &body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

async fn wait_run(app: &TestApp, id: &str) -> Value {
    for _ in 0..1200 {
        let run: Value = app
            .get(&format!("/v1/flow-runs/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if run["status"] != "running" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("flow run {id} did not finish");
}

fn flow<'a>(run: &'a Value, path: &str) -> &'a Value {
    run["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no flow {path} in {run}"))
}

/// Four selected flows over two named phones: `flowsOrder` first, the rest sharded; the
/// excluded tag and the sub-folder (outside the default `*` glob) are left out; the
/// failing flow names its file, line and step with a screenshot that loads; each flow
/// is an ordinary task; the reports and the event stream say the same.
#[tokio::test]
async fn a_workspace_runs_sharded_over_two_phones_with_per_flow_results_and_reports() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p1", None).await;
    add_phone(&app, "p2", None).await;
    let files = json!({
        "config.yaml": "executionOrder:\n  flowsOrder:\n    - first\n",
        "first.yaml": FIRST,
        "contacts.yaml": CONTACTS,
        "settings.yaml": FIRST,
        "broken.yaml": BROKEN,
        "wip.yaml": WIP,
        "sub/nested.yaml": FIRST,
    });
    let run = start(
        &app,
        json!({"files": files, "devices": ["p1", "p2"], "exclude_tags": ["wip"]}),
    )
    .await;
    let id = run["id"].as_str().unwrap();
    let paths: Vec<&str> = run["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "first.yaml",
            "broken.yaml",
            "contacts.yaml",
            "settings.yaml"
        ],
        "flowsOrder first, then by path; wip and sub/ left out"
    );
    assert_eq!(run["shards"], 2);
    let done = wait_run(&app, id).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("3 passed, 1 failed (broken.yaml)"),
        "{done}"
    );
    let mut phones = std::collections::BTreeSet::new();
    for p in ["first.yaml", "contacts.yaml", "settings.yaml"] {
        let f = flow(&done, p);
        assert_eq!(f["status"], "passed", "{f}");
        assert_eq!(f["attempts"].as_array().unwrap().len(), 1, "{f}");
        phones.insert(f["device"].as_str().unwrap().to_string());
    }
    let broken = flow(&done, "broken.yaml");
    phones.insert(broken["device"].as_str().unwrap().to_string());
    assert_eq!(phones.len(), 2, "both phones ran flows: {done}");
    assert_eq!(broken["status"], "failed");
    let failure = &broken["failure"];
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.contains("broken.yaml line 4 (assertVisible text \"Nowhere to be found\")"),
        "{message}"
    );
    let shot = app.get(failure["screenshot"].as_str().unwrap()).await;
    assert_eq!(shot.status(), 200);
    assert_eq!(shot.headers()["content-type"], "image/png");

    // Each flow ran as an ordinary flow task, with its steps.
    let task_id = broken["attempts"][0]["task_id"].as_str().unwrap();
    let task: Value = app
        .get(&format!("/v1/tasks/{task_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(task["agent"]["kind"], "flow", "{task}");
    assert_eq!(task["status"], "failed");
    let trajectory = app.get(&format!("/v1/tasks/{task_id}/trajectory")).await;
    assert_eq!(trajectory.status(), 200);

    // JUnit: one testcase per flow, the failure's message the failing step.
    let r = app
        .get(&format!("/v1/flow-runs/{id}/report?format=junit"))
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .contains("xml")
    );
    let xml = r.text().await.unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("JUnit XML parses");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 4);
    let failures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].attribute("message"), Some(message));
    assert_eq!(
        failures[0].parent().unwrap().attribute("name"),
        Some("broken")
    );

    // HTML: self-contained, the failing screen embedded.
    let r = app
        .get(&format!("/v1/flow-runs/{id}/report?format=html"))
        .await;
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = r.text().await.unwrap();
    assert!(html.contains("broken.yaml") && html.contains("data:image/png;base64,"));

    // The run's events: started, a flow_finished per flow, finished (then the end).
    let sse = app
        .get(&format!("/v1/flow-runs/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(sse.matches("event: flow_run.started").count(), 1, "{sse}");
    assert_eq!(
        sse.matches("event: flow_run.flow_finished").count(),
        4,
        "{sse}"
    );
    assert_eq!(sse.matches("event: flow_run.finished").count(), 1, "{sse}");

    let list: Value = app.get("/v1/flow-runs").await.json().await.unwrap();
    assert_eq!(list["runs"][0]["id"], id);
}

/// `retries` runs a failed flow again (a flow that fails once then passes ends passed,
/// with two attempts); `continueOnFailure: false` skips the rest of `flowsOrder` after a
/// failure, and the run fails.
#[tokio::test]
async fn retries_and_continue_on_failure_follow_the_workspace() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p1", None).await;
    // Passes only with Wi-Fi off; each attempt toggles Wi-Fi when it ends.
    let flaky = "appId: com.android.settings\nonFlowComplete:\n  - tapOn: \"Wi-Fi\"\n---\n- launchApp\n- assertNotVisible: \"HomeNet\"\n";
    let files = json!({
        "config.yaml": "executionOrder:\n  continueOnFailure: false\n  flowsOrder:\n    - flaky\n    - broken\n    - never\n",
        "flaky.yaml": flaky,
        "broken.yaml": BROKEN,
        "never.yaml": FIRST,
    });
    let run = start(
        &app,
        json!({"files": files, "devices": ["p1"], "retries": 1}),
    )
    .await;
    let done = wait_run(&app, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    let flaky = flow(&done, "flaky.yaml");
    assert_eq!(flaky["status"], "passed", "{flaky}");
    let attempts = flaky["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{flaky}");
    assert_eq!(attempts[0]["status"], "failed");
    assert_eq!(attempts[1]["status"], "succeeded");
    assert!(phone.state().settings.wifi, "toggled twice");
    let broken = flow(&done, "broken.yaml");
    assert_eq!(broken["status"], "failed");
    assert_eq!(
        broken["attempts"].as_array().unwrap().len(),
        2,
        "retried once"
    );
    let never = flow(&done, "never.yaml");
    assert_eq!(never["status"], "skipped", "{never}");
    assert_eq!(never["attempts"].as_array().unwrap().len(), 0);
    assert!(
        never["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("continueOnFailure is false"),
        "{never}"
    );
}

fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, body) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(body.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

async fn post_zip(app: &TestApp, query: &str, body: Vec<u8>) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url(&format!("/v1/flow-runs{query}")))
        .header("content-type", "application/zip")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// A zipped folder runs with its options in the query (`-e` as `env=KEY=VALUE`, tags,
/// shards); a path leaving the archive, an unknown option, options in the query of a
/// JSON body, both `shards` and `devices`, an unknown phone and a command that cannot
/// run here are refused before anything runs.
#[tokio::test]
async fn a_zip_upload_runs_and_mistakes_are_refused_before_anything_runs() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p1", None).await;
    let typed = "appId: com.android.settings\ntags: [smoke]\n---\n- launchApp\n- assertVisible: \"${WHAT}\"\n";
    let z = zip_of(&[
        (".maestro/typed.yaml", typed),
        (".maestro/other.yaml", BROKEN),
    ]);
    let r = post_zip(&app, "?env=WHAT%3DBluetooth&include_tags=smoke&shards=1", z).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let run: Value = r.json().await.unwrap();
    assert_eq!(run["env"], json!(["WHAT"]), "names only, not values");
    let done = wait_run(&app, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "passed", "{done}");
    assert_eq!(done["flows"].as_array().unwrap().len(), 1, "include_tags");

    let (status, code, msg, _) =
        error_of(post_zip(&app, "", zip_of(&[("../evil.yaml", FIRST)])).await).await;
    assert_eq!((status, code.as_str()), (422, "invalid_workspace"), "{msg}");
    assert!(msg.contains("not a path inside the workspace"), "{msg}");
    let (status, _, msg, _) =
        error_of(post_zip(&app, "?sharts=2", zip_of(&[("a.yaml", FIRST)])).await).await;
    assert_eq!(status, 400);
    assert!(msg.contains("`sharts`"), "{msg}");
    let (status, _, msg, _) = error_of(post_zip(&app, "", b"not a zip".to_vec()).await).await;
    assert_eq!(status, 422, "{msg}");

    let post = |body: Value| {
        let app = &app;
        async move { error_of(app.post_json("/v1/flow-runs", &body).await).await }
    };
    let files = json!({"a.yaml": FIRST});
    let (status, _, msg, _) = error_of(
        app.post_json("/v1/flow-runs?shards=2", &json!({"files": files}))
            .await,
    )
    .await;
    assert_eq!(status, 400, "{msg}");
    let (status, code, msg, _) =
        post(json!({"files": files, "shards": 2, "devices": ["p1"]})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_flow_run"), "{msg}");
    let (status, code, msg, _) = post(json!({"files": files, "devices": ["p9"]})).await;
    assert_eq!((status, code.as_str()), (422, "unknown_device"), "{msg}");
    let (status, code, msg, _) = post(json!({"files": files, "shardz": 1})).await;
    assert_eq!(status, 422, "{code} {msg}");
    assert!(msg.contains("shardz"), "{msg}");
    let located = "appId: a\n---\n- launchApp\n- setLocation:\n    latitude: 1\n    longitude: 2\n";
    let (status, _, msg, _) = post(json!({"files": {"a.yaml": FIRST, "loc.yaml": located}})).await;
    assert_eq!(status, 422);
    assert!(msg.contains("loc.yaml line 4"), "{msg}");
    let (status, code, msg, _) =
        post(json!({"files": {"config.yaml": "flows: ['*']\n", "a.yaml": FIRST}, "include_tags": ["none"]})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_workspace"), "{msg}");
    let list: Value = app.get("/v1/flow-runs").await.json().await.unwrap();
    assert_eq!(
        list["runs"].as_array().unwrap().len(),
        1,
        "only the zip's run started"
    );

    let missing = "0190f5c4-0000-7000-8000-000000000000";
    let (status, code, _, _) = error_of(app.get(&format!("/v1/flow-runs/{missing}")).await).await;
    assert_eq!((status, code.as_str()), (404, "flow_run_not_found"));
    let (status, _, _, _) = error_of(
        app.get(&format!("/v1/flow-runs/{missing}/report?format=pdf"))
            .await,
    )
    .await;
    assert_eq!(status, 400);
}

/// Cancelling a run cancels its queued task and every flow not started; the run ends
/// `cancelled` and says so on its stream, which a WebSocket subscription replays.
#[tokio::test]
async fn a_cancelled_run_cancels_its_tasks_and_flows() {
    use futures::{SinkExt, StreamExt};
    let app = bare_app(&[]).await;
    // No phone: the first flow's task waits in the queue.
    let files = json!({"a.yaml": FIRST, "b.yaml": FIRST});
    let run = start(&app, json!({"files": files})).await;
    let id = run["id"].as_str().unwrap();
    let mut task_id = None;
    for _ in 0..200 {
        let r: Value = app
            .get(&format!("/v1/flow-runs/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if let Some(t) = r["flows"][0]["attempts"][0]["task_id"].as_str() {
            task_id = Some(t.to_string());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let task_id = task_id.expect("the first flow's task was queued");
    let r = app
        .post_json(&format!("/v1/flow-runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(r.status(), 202);
    let done = wait_run(&app, id).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    for f in done["flows"].as_array().unwrap() {
        assert_eq!(f["status"], "cancelled", "{f}");
    }
    let task: Value = app
        .get(&format!("/v1/tasks/{task_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(task["status"], "cancelled");
    let (status, code, _, _) = error_of(
        app.post_json(&format!("/v1/flow-runs/{id}/cancel"), &json!({}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "flow_run_finished"));

    let url = app.url("/v1/ws").replace("http://", "ws://");
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    ws.send(tokio_tungstenite::tungstenite::Message::Text(
        json!({"type": "subscribe", "flow_runs": [id]})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let mut kinds = Vec::new();
    while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        let v: Value = serde_json::from_str(m.to_text().unwrap()).unwrap();
        if v["type"] == "event" {
            kinds.push(v["event"]["type"].as_str().unwrap().to_string());
            if v["event"]["type"] == "flow_run.finished" {
                assert_eq!(v["event"]["payload"]["status"], "cancelled");
                break;
            }
        }
    }
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("flow_run.started"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("flow_run.finished"),
        "{kinds:?}"
    );
}

/// The bench's suite (`droidpilot bench flows`): its 40 flows, written for the virtual
/// phone's apps, all pass when sharded over four phones, and every phone runs some.
#[tokio::test]
async fn the_bench_suite_of_forty_flows_passes_sharded_over_four_phones() {
    let app = bare_app(&[]).await;
    for p in ["p1", "p2", "p3", "p4"] {
        add_phone(&app, p, None).await;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flows/suite40");
    let files = droidpilot::cli::flow::read_dir(&dir).unwrap();
    let run = start(&app, json!({"files": files, "shards": 4})).await;
    assert_eq!(run["flows"].as_array().unwrap().len(), 40);
    let done = wait_run(&app, run["id"].as_str().unwrap()).await;
    let failed: Vec<&Value> = done["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] != "passed")
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let phones: std::collections::BTreeSet<&str> = done["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["device"].as_str())
        .collect();
    assert_eq!(phones.len(), 4, "{phones:?}");
}

/// `recovery` gives every flow of a run AI in the middle with the server's own model:
/// a renamed row (the flow still says "Bluetooth radio") is found through the model's
/// answer and the flow passes; with `heal`, its task's result holds the healed file.
#[tokio::test]
async fn recovery_runs_each_flow_with_the_servers_model_and_heal_returns_the_flow() {
    let renamed = "appId: com.android.settings\n---\n- launchApp\n- tapOn: \"Bluetooth radio\"\n";
    let answer = json!({"action_type": "modify_selector", "new_selector": ":text(\"Bluetooth\")",
                        "reason": "the row is called Bluetooth now", "confidence": "high"});
    let (server, _) = crate::run::model(vec![(200, answer.to_string())]).await;
    let base = format!("{}/v1", server.uri());
    let app = bare_app(&[
        ("DROIDPILOT_AGENT__NAVIGATOR__BASE_URL", base.as_str()),
        ("DROIDPILOT_AGENT__NAVIGATOR__MODEL", "fixer"),
    ])
    .await;
    add_phone(&app, "p1", None).await;
    let files = json!({"renamed.yaml": renamed});
    let run = start(
        &app,
        json!({"files": files, "recovery": true, "heal": true}),
    )
    .await;
    let done = wait_run(&app, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "passed", "{done}");
    let task = flow(&done, "renamed.yaml")["attempts"][0]["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let task: Value = app
        .get(&format!("/v1/tasks/{task}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(task["agent"]["recovery"], true, "{task}");
    assert_eq!(task["model_calls"], 1, "{task}");
    let answer: Value = serde_json::from_str(task["answer"].as_str().unwrap()).unwrap();
    let healed = answer["healed"]["renamed.yaml"].as_str().unwrap();
    assert!(
        healed.contains("- tapOn: 'Bluetooth|Bluetooth radio'"),
        "{healed}"
    );
}

/// `heal` on a run of a stored workspace: the healed flow goes back to the workspace as
/// its next version (its source the run), the other files as they were, and the run's
/// reason says which version; the version that ran is kept unchanged.
#[tokio::test]
async fn healing_a_stored_workspace_stores_the_healed_flow_as_its_next_version() {
    let renamed = "appId: com.android.settings\n---\n- launchApp\n- tapOn: \"Bluetooth radio\"\n";
    let answer = json!({"action_type": "modify_selector", "new_selector": ":text(\"Bluetooth\")",
                        "reason": "the row is called Bluetooth now", "confidence": "high"});
    let (server, _) = crate::run::model(vec![(200, answer.to_string())]).await;
    let base = format!("{}/v1", server.uri());
    let app = bare_app(&[
        ("DROIDPILOT_AGENT__NAVIGATOR__BASE_URL", base.as_str()),
        ("DROIDPILOT_AGENT__NAVIGATOR__MODEL", "fixer"),
    ])
    .await;
    add_phone(&app, "p1", None).await;
    let files = json!({"renamed.yaml": renamed, "first.yaml": FIRST});
    let r = app
        .post_json("/v1/workspaces", &json!({"name": "suite", "files": files}))
        .await;
    assert_eq!(r.status(), 201);
    let v1: Value = r.json().await.unwrap();
    let ws = v1["id"].as_str().unwrap().to_string();
    let run = start(
        &app,
        json!({"workspace": ws, "recovery": true, "heal": true}),
    )
    .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let done = wait_run(&app, &run_id).await;
    assert_eq!(done["status"], "passed", "{done}");
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("version 2 of the workspace"),
        "{done}"
    );
    let get = |path: String| {
        let app = &app;
        async move { app.get(&path).await.json::<Value>().await.unwrap() }
    };
    let v2 = get(format!("/v1/workspaces/{ws}/versions/2")).await;
    assert_eq!(
        v2["source"],
        json!({"kind": "healed", "flow_run": run_id}),
        "{v2}"
    );
    let healed = v2["contents"]["renamed.yaml"].as_str().unwrap();
    assert!(
        healed.contains("- tapOn: 'Bluetooth|Bluetooth radio'"),
        "{healed}"
    );
    assert_eq!(v2["contents"]["first.yaml"], FIRST, "untouched files kept");
    let v1 = get(format!("/v1/workspaces/{ws}/versions/1")).await;
    assert_eq!(
        v1["contents"]["renamed.yaml"], renamed,
        "the version that ran is kept"
    );
}

/// `recovery` on a server that cannot call its model is refused before anything runs,
/// in the run's words; `heal` needs `recovery`; the `.zip` form takes them as flags.
#[tokio::test]
async fn recovery_without_a_usable_model_and_heal_alone_are_refused() {
    let app = bare_app(&[
        ("DROIDPILOT_AGENT__NAVIGATOR__PROVIDER", "anthropic"),
        ("DROIDPILOT_AGENT__NAVIGATOR__MODEL", "claude"),
    ])
    .await;
    add_phone(&app, "p1", None).await;
    let files = json!({"a.yaml": FIRST});
    let r = app
        .post_json("/v1/flow-runs", &json!({"files": files, "recovery": true}))
        .await;
    let (status, code, msg, hint) = error_of(r).await;
    assert_eq!((status, code.as_str()), (422, "missing_model_key"), "{msg}");
    assert!(
        msg.starts_with("`recovery` needs a model the server can call")
            && msg.contains("ANTHROPIC_API_KEY"),
        "{msg}"
    );
    assert!(hint.contains("without `recovery`"), "{hint}");
    let r = app
        .post_json("/v1/flow-runs", &json!({"files": files, "heal": true}))
        .await;
    let (status, code, msg, _) = error_of(r).await;
    assert_eq!((status, code.as_str()), (422, "invalid_flow_run"), "{msg}");
    assert!(msg.contains("`heal` needs `recovery`"), "{msg}");
    let (status, code, _, _) =
        error_of(post_zip(&app, "?recovery=true", zip_of(&[("a.yaml", FIRST)])).await).await;
    assert_eq!((status, code.as_str()), (422, "missing_model_key"));
    let (status, _, msg, _) =
        error_of(post_zip(&app, "?recovery=maybe", zip_of(&[("a.yaml", FIRST)])).await).await;
    assert_eq!(status, 400);
    assert!(msg.contains("`recovery`"), "{msg}");
    let list: Value = app.get("/v1/flow-runs").await.json().await.unwrap();
    assert_eq!(list["runs"], json!([]), "nothing started");
}
