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
}
