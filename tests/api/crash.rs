//! Crash safety with a real process: the server binary is SIGKILLed mid-task and started
//! again on the same files. Committed steps survive, the task is `interrupted` with a
//! reason, and the task that was queued behind it runs.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::serve::{free_port, get, start, submit};

#[tokio::test]
async fn sigkill_mid_task_then_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n[devices.adb]\nenabled = false\n\
             [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
             [runner]\nstep_delay_ms = 150\nstuck_threshold = 1000\nsettle_timeout_ms = 200\n[scheduler]\npoll_ms = 50\n"
        ),
    )
    .unwrap();

    let server = start(dir.path(), port).await;
    let long: Vec<Value> = (0..300)
        .map(|_| json!({"action": "swipe", "direction": "left"}))
        .collect();
    let a = submit(port, json!({"instruction": "long task", "max_steps": 400, "agent": {"kind": "replay", "actions": long}})).await;
    let b = submit(port, json!({"instruction": "queued behind", "agent": {"kind": "replay", "actions": [{"action": "home"}]}})).await;
    // Let a few steps commit.
    let mut committed = 0;
    for _ in 0..200 {
        committed = get(port, &format!("/v1/tasks/{a}")).await["steps"]
            .as_u64()
            .unwrap();
        if committed >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(committed >= 3, "the long task made progress");
    assert_eq!(
        get(port, &format!("/v1/tasks/{b}")).await["status"],
        "queued",
        "b waits for the only phone"
    );

    // SIGKILL: no shutdown hook runs.
    let mut server = server;
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    drop(server);

    let _server = start(dir.path(), port).await;
    let t = get(port, &format!("/v1/tasks/{a}")).await;
    assert_eq!(t["status"], "interrupted", "{t}");
    assert!(
        t["reason"].as_str().unwrap().contains("server stopped"),
        "{t}"
    );
    let steps: Vec<Value> =
        serde_json::from_value(get(port, &format!("/v1/tasks/{a}/steps")).await).unwrap();
    assert!(
        steps.len() as u64 >= committed,
        "every step committed before the kill is still there"
    );
    let numbers: Vec<u64> = steps.iter().map(|s| s["n"].as_u64().unwrap()).collect();
    assert_eq!(
        numbers,
        (1..=steps.len() as u64).collect::<Vec<_>>(),
        "no gaps, no half-written step"
    );
    assert_eq!(
        t["steps"].as_u64().unwrap(),
        steps.len() as u64,
        "the task's totals match its steps"
    );

    // The queued task runs on the freed phone.
    let mut status = Value::Null;
    for _ in 0..200 {
        status = get(port, &format!("/v1/tasks/{b}")).await["status"].clone();
        if status == "succeeded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "succeeded");
    // The event history shows the interruption.
    let events = reqwest::get(format!("http://127.0.0.1:{port}/v1/tasks/{a}/events"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(events.contains("event: task.finished") && events.contains("interrupted"));
}

/// A one-phone server configuration with resume on, slow enough steps to stop it mid-task.
fn resume_config(dir: &std::path::Path, port: u16) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n[devices.adb]\nenabled = false\n\
             [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
             [runner]\nstep_delay_ms = 250\nstuck_threshold = 1000\nsettle_timeout_ms = 200\n\
             [scheduler]\npoll_ms = 50\nresume_interrupted = true\n"
        ),
    )
    .unwrap();
}

/// Eight distinguishable actions (waits of 1001…1008 ms on the virtual clock).
fn eight_waits() -> Vec<Value> {
    (1..=8)
        .map(|i| json!({"action": "wait", "ms": 1000 + i}))
        .collect()
}

/// Submits the eight-action replay and returns its id once `at_least` steps are committed.
async fn replay_until(port: u16, at_least: u64) -> String {
    let id = submit(port, json!({"instruction": "eight waits", "agent": {"kind": "replay", "actions": eight_waits()}})).await;
    let mut committed = 0;
    for _ in 0..400 {
        committed = get(port, &format!("/v1/tasks/{id}")).await["steps"]
            .as_u64()
            .unwrap();
        if committed >= at_least {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        (at_least..8).contains(&committed),
        "stopped mid-task ({committed})"
    );
    id
}

/// After a restart with resume on: the task ran each action once, in order, then finished.
async fn assert_resumed_without_repeats(port: u16, id: &str) {
    let mut t = Value::Null;
    for _ in 0..400 {
        t = get(port, &format!("/v1/tasks/{id}")).await;
        if t["status"] == "succeeded" || t["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(t["status"], "succeeded", "{t}");
    let steps: Vec<Value> =
        serde_json::from_value(get(port, &format!("/v1/tasks/{id}/steps")).await).unwrap();
    let actions: Vec<Value> = steps.iter().map(|s| s["action"].clone()).collect();
    let mut want: Vec<Value> = eight_waits()
        .iter()
        .map(|a| json!({"action": "wait", "ms": a["ms"]}))
        .collect();
    want.push(json!({"action": "finish", "success": true, "reason": "replay complete"}));
    assert_eq!(
        actions.len(),
        9,
        "8 actions and the finish, none repeated: {actions:?}"
    );
    for (got, want) in actions.iter().zip(&want) {
        assert_eq!(got["action"], want["action"], "{actions:?}");
        assert_eq!(got["ms"], want["ms"], "{actions:?}");
    }
    let events = reqwest::get(format!("http://127.0.0.1:{port}/v1/tasks/{id}/events"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(events.contains("event: task.resumed"), "{events}");
}

#[tokio::test]
async fn sigkill_mid_replay_then_resume_continues_at_the_next_action() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    resume_config(dir.path(), port);
    let mut server = start(dir.path(), port).await;
    let id = replay_until(port, 4).await;
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    drop(server);
    let steps: Vec<Value> = {
        let _server = start(dir.path(), port).await;
        let s = serde_json::from_value(get(port, &format!("/v1/tasks/{id}/steps")).await).unwrap();
        assert_resumed_without_repeats(port, &id).await;
        s
    };
    assert!(steps.len() >= 4, "the committed steps survived the kill");
}

#[tokio::test]
async fn sigterm_with_resume_on_resumes_at_the_next_start() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    resume_config(dir.path(), port);
    let mut server = start(dir.path(), port).await;
    let id = replay_until(port, 3).await;
    let status = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = server.0.wait().unwrap();
    assert!(exit.success(), "a graceful stop: {exit:?}");
    drop(server);
    let _server = start(dir.path(), port).await;
    assert_resumed_without_repeats(port, &id).await;
    let events = reqwest::get(format!("http://127.0.0.1:{port}/v1/tasks/{id}/events"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        events.contains("event: task.resumed") && !events.contains("interrupted"),
        "resumed, never interrupted: {events}"
    );
}

#[tokio::test]
async fn a_question_open_at_a_crash_is_closed_at_the_next_start() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n[devices.adb]\nenabled = false\n\
             [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n[scheduler]\npoll_ms = 50\n"
        ),
    )
    .unwrap();
    let mut server = start(dir.path(), port).await;
    let id = submit(port, json!({"instruction": "ask", "agent": {"kind": "replay", "actions": [{"action": "ask_user", "question": "Which one?"}]}})).await;
    for _ in 0..400 {
        if get(port, &format!("/v1/tasks/{id}")).await["status"] == "waiting_for_user" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    server.0.kill().unwrap();
    server.0.wait().unwrap();
    drop(server);
    let _server = start(dir.path(), port).await;
    assert_eq!(
        get(port, &format!("/v1/tasks/{id}")).await["status"],
        "interrupted"
    );
    let ivs = get(port, &format!("/v1/tasks/{id}/interventions")).await;
    assert_eq!(ivs[0]["answered_by"], "restart", "{ivs}");
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/tasks/{id}/answer"))
        .json(&json!({"answer": "that one"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409, "nobody waits for this answer any more");
}
