//! Secrets across instances: a task given a secret (a replay `type` marked
//! `"secret": true`) is held in the memory of the instance that accepted it, so only that
//! instance starts it. 16 such tasks submitted to A, with B's phones as free as A's, all
//! run on A and succeed; none is failed by B for want of the secret.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::pg::FreshDb;
use crate::common::serve::{free_port, get, start, submit};

/// One instance: two phones of its own, the shared database.
fn configure(dir: &Path, port: u16, db: &str, name: &str) {
    let sims: String = (1..=2)
        .map(|i| format!("[[devices.sim]]\nserial = \"{name}-{i}\"\nwidth = 540\nheight = 1200\n"))
        .collect();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\ndatabase_url = \"{db}\"\npool_size = 4\n\
             [devices.adb]\nenabled = false\n{sims}\
             [runner]\nstuck_threshold = 1000\nsettle_timeout_ms = 200\n[scheduler]\npoll_ms = 50\n\
             [cluster]\ninstance = \"{name}\"\n"
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_with_a_secret_runs_on_the_instance_that_holds_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (pa, pb) = (free_port(), free_port());
    configure(dir_a.path(), pa, &db.url, "a");
    configure(dir_b.path(), pb, &db.url, "b");
    let _a = start(dir_a.path(), pa).await;
    let _b = start(dir_b.path(), pb).await;

    let mut ids = Vec::new();
    for i in 0..16 {
        let agent = json!({"kind": "replay", "on_error": "continue", "actions": [
            {"action": "type", "text": format!("secret-{i}"), "secret": true},
            {"action": "wait", "ms": 500}]});
        ids.push(
            submit(
                pa,
                json!({"instruction": format!("secret {i}"), "agent": agent}),
            )
            .await,
        );
    }
    for id in &ids {
        let mut t = Value::Null;
        for _ in 0..1200 {
            t = get(pb, &format!("/v1/tasks/{id}")).await;
            if !matches!(t["status"].as_str(), Some("queued" | "running")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(t["status"], "succeeded", "{t}");
        let device = t["assigned_device"].as_str().unwrap();
        assert!(
            device.starts_with("a-"),
            "run by the instance holding the secret: {t}"
        );
        assert!(!t.to_string().contains("secret-"), "{t}");
    }
}
