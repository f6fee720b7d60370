//! A server on PostgreSQL end to end: a replay task on `sim-1` runs to success, and its
//! steps and events read back through the REST API (events gapless from 1).

use std::sync::Arc;
use std::time::Duration;

use droidpilot::device::sim::tasks::task as sim_task;
use droidpilot::device::sim::{SimConfig, SimDevice};
use serde_json::{Value, json};

use crate::common::pg::FreshDb;
use crate::common::{TestApp, spawn_app_with};

/// A test server on `url` (and `extra` settings) with one virtual phone, `sim-1`, in
/// `task`'s start state.
pub async fn app_on(url: &str, task: &str, extra: &[(&str, &str)]) -> TestApp {
    let mut env = vec![
        ("DROIDPILOT_STORAGE__DATABASE_URL", url),
        ("DROIDPILOT_STORAGE__POOL_SIZE", "4"),
        ("DROIDPILOT_RUNNER__SETTLE_TIMEOUT_MS", "300"),
        ("DROIDPILOT_RUNNER__SETTLE_POLL_MS", "10"),
        ("DROIDPILOT_SCHEDULER__POLL_MS", "50"),
    ];
    env.extend_from_slice(extra);
    let app = spawn_app_with(&env).await;
    let phone = SimDevice::new(SimConfig {
        serial: "sim-1".into(),
        width: 540,
        height: 1200,
        ..Default::default()
    })
    .unwrap();
    phone.reset_to(&sim_task(task).unwrap());
    app.pool.add_device(Arc::new(phone), "sim").await.unwrap();
    app
}

/// The sim task's reference solution as a replay task on sim-1; returns its id.
pub async fn submit_reference(app: &TestApp, task: &str, extra: Value) -> String {
    let t = sim_task(task).unwrap();
    let actions: Vec<Value> = t
        .reference()
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect();
    let mut body = json!({"instruction": t.instruction, "device_id": "sim-1",
                          "agent": {"kind": "replay", "actions": actions, "on_error": "fail"}});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let r = app.post_json("/v1/tasks", &body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .into()
}

/// Polls until the task has ended; returns it.
pub async fn wait_done(app: &TestApp, id: &str) -> Value {
    for _ in 0..1200 {
        let r = app.get(&format!("/v1/tasks/{id}")).await;
        if r.status() == 200 {
            let t: Value = r.json().await.unwrap();
            if !matches!(
                t["status"].as_str(),
                Some("queued" | "running" | "waiting_for_user")
            ) {
                return t;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not end");
}

/// The seqs and types of a finished task's events, from its SSE feed.
pub async fn events(app: &TestApp, id: &str) -> Vec<(i64, String)> {
    let text = app
        .get(&format!("/v1/tasks/{id}/events"))
        .await
        .text()
        .await
        .unwrap();
    let (mut out, mut seq) = (Vec::new(), None);
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            seq = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("event:")
            && let Some(s) = seq.take()
        {
            out.push((s, v.trim().to_string()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_task_on_postgres_runs_and_reads_back_through_the_api() {
    const TASK: &str = "settings.bluetooth_on";
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let app = app_on(&db.url, TASK, &[]).await;
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    let id = submit_reference(&app, TASK, json!({})).await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let n = sim_task(TASK).unwrap().reference().len();
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    assert!(steps.len() >= n, "{} steps for {n} actions", steps.len());
    let ns: Vec<u64> = steps.iter().map(|s| s["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, (1..=steps.len() as u64).collect::<Vec<_>>());
    assert_eq!(done["steps"].as_u64(), Some(steps.len() as u64));
    let evs = events(&app, &id).await;
    let seqs: Vec<i64> = evs.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=evs.len() as i64).collect::<Vec<_>>(), "gapless");
    let executed = evs.iter().filter(|e| e.1 == "step.executed").count();
    assert_eq!(executed, steps.len(), "one step.executed per step");
    assert_eq!(evs.last().unwrap().1, "task.finished");
    app.stop().await;
    db.drop_now().await;
}
