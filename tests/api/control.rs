//! Taking a free phone by hand (the dashboard's phone panel): a hold for one page, its
//! actions recorded as steps with who took them, another page refused naming the holder,
//! the recording of those steps as a script, the hold released or lapsing; and the
//! inspector's view of a screen.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, error_of};
use crate::run::{add_phone, bare_app};

async fn take(app: &TestApp, by: &str) -> reqwest::Response {
    app.post_json("/v1/devices/sim-1/control", &json!({ "by": by }))
        .await
}

async fn act(app: &TestApp, control: &str, action: Value) -> reqwest::Response {
    let path = format!("/v1/devices/sim-1/control/{control}/actions");
    app.post_json(&path, &action).await
}

async fn device(app: &TestApp) -> Value {
    app.get("/v1/devices/sim-1").await.json().await.unwrap()
}

#[tokio::test]
async fn a_person_drives_a_free_phone_and_another_page_is_refused_naming_them() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let r = take(&app, "alice").await;
    assert_eq!(r.status(), 201);
    let c: Value = r.json().await.unwrap();
    let (cid, task) = (
        c["control_id"].as_str().unwrap(),
        c["task_id"].as_str().unwrap(),
    );
    assert_eq!(c["holder"], "alice in the dashboard");
    let d = device(&app).await;
    assert_eq!(
        (d["state"].as_str(), d["lease_owner"].as_str()),
        (Some("leased"), Some("alice in the dashboard"))
    );

    // Another page (same token, no control id) cannot take it or act on it.
    let (status, code, message, _) = error_of(take(&app, "bob").await).await;
    assert_eq!((status, code.as_str()), (409, "device_busy"));
    assert!(message.contains("alice in the dashboard"), "{message}");
    let (status, code, message, _) =
        error_of(act(&app, "not-mine", json!({"action": "home"})).await).await;
    assert_eq!((status, code.as_str()), (409, "device_not_held"));
    assert!(message.contains("alice in the dashboard"), "{message}");

    // Each action is done on the phone and recorded as a step taken by alice.
    let r = act(
        &app,
        cid,
        json!({"action": "launch_app", "label": "Settings"}),
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // A click on the screen: a pixel, as the page sends it.
    let screen: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    let els = screen["actionable_elements"].as_array().unwrap();
    let bt = els.iter().find(|e| {
        e["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Bluetooth"))
    });
    let b = &bt.expect("Settings shows Bluetooth")["bounds"];
    let (x, y) = if b.is_array() {
        (
            (b[0].as_i64().unwrap() + b[2].as_i64().unwrap()) / 2,
            (b[1].as_i64().unwrap() + b[3].as_i64().unwrap()) / 2,
        )
    } else {
        (
            (b["left"].as_i64().unwrap() + b["right"].as_i64().unwrap()) / 2,
            (b["top"].as_i64().unwrap() + b["bottom"].as_i64().unwrap()) / 2,
        )
    };
    let r = act(&app, cid, json!({"action": "tap", "pixel": [x, y]})).await;
    assert_eq!(r.status(), 200);
    let tapped: Value = r.json().await.unwrap();
    assert_eq!(tapped["step"], 2);
    assert!(tapped["detail"]["point"].is_array(), "{tapped}");
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{task}/steps"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s["by"] == "alice"), "{steps:?}");
    assert_eq!(steps[0]["action"]["action"], "launch_app");

    // The recording: the tap as the selector droidpilot would use, from step 1 or 2.
    let path = format!("/v1/devices/sim-1/control/{cid}/recording?from=1&name=bt");
    let script: Value = app.get(&path).await.json().await.unwrap();
    assert_eq!(script["name"], "bt");
    let recorded: Vec<&str> = (script["steps"].as_array().unwrap().iter())
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    assert_eq!(recorded, ["launch_app", "tap"], "{script}");
    let tap = &script["steps"][1];
    assert!(
        tap["selector"].is_string(),
        "a selector, not a point: {script}"
    );
    assert!(tap.to_string().contains("Bluetooth"), "{script}");
    let path = format!("/v1/devices/sim-1/control/{cid}/recording?from=2");
    let from2: Value = app.get(&path).await.json().await.unwrap();
    assert_eq!(from2["steps"].as_array().unwrap().len(), 1);
    // It stores as any script document does.
    let stored = app.post_json("/v1/scripts", &script).await;
    assert_eq!(stored.status(), 201, "{}", stored.text().await.unwrap());

    // Released: the phone is free and the hold's task finished.
    let path = format!("/v1/devices/sim-1/control/{cid}");
    let r = app.client.delete(app.url(&path)).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(device(&app).await["state"], "available");
    let t: Value = app
        .get(&format!("/v1/tasks/{task}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(t["status"], "succeeded");
    let (status, code, _, _) = error_of(act(&app, cid, json!({"action": "home"})).await).await;
    assert_eq!((status, code.as_str()), (409, "device_not_held"));
    assert_eq!(
        take(&app, "bob").await.status(),
        201,
        "free for the next person"
    );
}

#[tokio::test]
async fn a_hold_nobody_keeps_alive_lapses_and_frees_the_phone() {
    let app = bare_app(&[("DROIDPILOT_DASHBOARD__CONTROL_TTL_SECS", "1")]).await;
    add_phone(&app, "sim-1", None).await;
    let c: Value = take(&app, "alice").await.json().await.unwrap();
    let task = c["task_id"].as_str().unwrap().to_string();
    let mut status = Value::Null;
    for _ in 0..100 {
        let t: Value = app
            .get(&format!("/v1/tasks/{task}"))
            .await
            .json()
            .await
            .unwrap();
        status = t["status"].clone();
        if status == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "succeeded", "the lapsed hold's task is finished");
    assert_eq!(device(&app).await["state"], "available");
    let path = format!(
        "/v1/devices/sim-1/control/{}",
        c["control_id"].as_str().unwrap()
    );
    let (s, code, _, _) = error_of(app.post_json(&path, &json!({})).await).await;
    assert_eq!((s, code.as_str()), (409, "device_not_held"));
}

#[tokio::test]
async fn the_inspector_lists_nodes_with_selectors_and_what_they_match() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let r = app.get("/v1/devices/sim-1/inspect?selector=%23nope").await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["width"].as_i64(), v["height"].as_i64()),
        (Some(540), Some(1200))
    );
    let nodes = v["nodes"].as_array().unwrap();
    assert!(nodes.len() > 3, "{v}");
    let el = nodes
        .iter()
        .find(|n| n["element"].is_number())
        .expect("an actionable node");
    let sel = el["selector"]["selector"].as_str().unwrap();
    assert!(
        el["selector"]["nodes"]
            .as_array()
            .unwrap()
            .contains(&el["index"]),
        "{el}"
    );
    // Testing the recommended selector finds the node it was recommended for.
    let q = format!("/v1/devices/sim-1/inspect?selector={}", urlencode(sel));
    let t: Value = app.get(&q).await.json().await.unwrap();
    assert!(
        t["tested"]["nodes"]
            .as_array()
            .unwrap()
            .contains(&el["index"]),
        "{t}"
    );
    assert_eq!(v["tested"]["count"], 0);
    let bad: Value = app
        .get("/v1/devices/sim-1/inspect?selector=%3Atext(")
        .await
        .json()
        .await
        .unwrap();
    assert!(bad["tested"]["error"].is_string(), "{bad}");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
