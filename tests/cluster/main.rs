//! Two real `droidpilot serve` processes on one fresh PostgreSQL database, each with its
//! own virtual phones (A: `a-1`, `a-2`, advertising its URL; B: `b-1`, advertising none):
//! - `GET /v1/devices` on either lists the whole farm, each phone with its instance;
//! - B proxies a screenshot and an action for A's phone; A refuses B's phone by name;
//! - A is SIGKILLed with long tasks running on its phones: B marks them `interrupted`
//!   (reason naming A) once A's heartbeat is older than `dead_after_secs`, their committed
//!   steps are intact, A's phones show offline, and B keeps running tasks.
//!
//! Small `heartbeat_secs` / `dead_after_secs` keep it fast. Without
//! DROIDPILOT_TEST_POSTGRES_URL it skips loudly; with DROIDPILOT_REQUIRE_POSTGRES=1 it fails.
//!
//! `events.rs`: events, answers and cancels across instances (100 replay tasks).
//! `secrets.rs`: a task given a secret runs on the instance that holds it.

#[path = "../common/mod.rs"]
mod common;

mod events;
mod secrets;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use common::pg::FreshDb;
use common::serve::{free_port, get, start, submit};

/// One instance's configuration in `dir/config/local.toml`.
fn configure(dir: &Path, port: u16, db: &str, name: &str, sims: &[&str], advertise: bool) {
    let sims: String = sims
        .iter()
        .map(|s| format!("[[devices.sim]]\nserial = \"{s}\"\nwidth = 540\nheight = 1200\n"))
        .collect();
    let url = if advertise {
        format!("advertise_url = \"http://127.0.0.1:{port}\"\n")
    } else {
        String::new()
    };
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\ndatabase_url = \"{db}\"\npool_size = 4\n\
             [devices.adb]\nenabled = false\n{sims}\
             [runner]\nstep_delay_ms = 150\nstuck_threshold = 1000\nsettle_timeout_ms = 200\n[scheduler]\npoll_ms = 50\n\
             [cluster]\ninstance = \"{name}\"\n{url}heartbeat_secs = 1\ndead_after_secs = 3\n"
        ),
    )
    .unwrap();
}

/// (id, instance, local, state) of every device `port` lists.
async fn farm(port: u16) -> Vec<(String, String, bool, String)> {
    let list = get(port, "/v1/devices").await;
    list["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["instance"].as_str().unwrap_or("").to_string(),
                d["local"].as_bool().unwrap(),
                d["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Polls `port` until `done(task)` holds for task `id`; returns the task.
async fn wait_task(port: u16, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut t = Value::Null;
    for _ in 0..600 {
        t = get(port, &format!("/v1/tasks/{id}")).await;
        if done(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id}: {what} never happened: {t}");
}

/// 300 swipes at 150 ms a step: runs for most of a minute.
fn long_task(device: &str) -> Value {
    let actions: Vec<Value> = (0..300)
        .map(|_| json!({"action": "swipe", "direction": "left"}))
        .collect();
    json!({"instruction": "long task", "max_steps": 400, "device_id": device,
           "agent": {"kind": "replay", "actions": actions}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_devices_proxy_and_take_over_a_killed_ones_tasks() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(db) = FreshDb::create().await else {
        return;
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (pa, pb) = (free_port(), free_port());
    configure(dir_a.path(), pa, &db.url, "A", &["a-1", "a-2"], true);
    configure(dir_b.path(), pb, &db.url, "B", &["b-1", "b-2"], false);
    let mut a = start(dir_a.path(), pa).await;
    let mut b = start(dir_b.path(), pb).await;

    // The whole farm from either instance (B's rows reach A within a heartbeat).
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = farm(pa).await;
        if seen.len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ids = |f: &[(String, String, bool, String)]| {
        f.iter()
            .map(|(id, inst, local, _)| (id.clone(), inst.clone(), *local))
            .collect::<Vec<_>>()
    };
    let s = |x: &str| x.to_string();
    assert_eq!(
        ids(&seen),
        vec![
            (s("a-1"), s("A"), true),
            (s("a-2"), s("A"), true),
            (s("b-1"), s("B"), false),
            (s("b-2"), s("B"), false)
        ]
    );
    assert_eq!(
        ids(&farm(pb).await),
        vec![
            (s("a-1"), s("A"), false),
            (s("a-2"), s("A"), false),
            (s("b-1"), s("B"), true),
            (s("b-2"), s("B"), true)
        ]
    );

    // B proxies A's phone: a screenshot and an action.
    let shot = reqwest::get(format!("http://127.0.0.1:{pb}/v1/devices/a-1/screenshot"))
        .await
        .unwrap();
    assert_eq!(shot.status(), 200);
    assert_eq!(shot.headers()["content-type"], "image/png");
    assert!(shot.bytes().await.unwrap().starts_with(b"\x89PNG"));
    let act = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{pb}/v1/devices/a-2/actions"))
        .json(&json!({"action": "home"}))
        .send()
        .await
        .unwrap();
    assert_eq!(act.status(), 200, "{}", act.text().await.unwrap());
    // A's errors pass through as A sent them.
    let bad = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{pb}/v1/devices/a-2/actions"))
        .json(&json!({"action": "tap", "selector": "#nothing_here"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    // B advertises no URL: A refuses B's phone, naming B and the key.
    let refused = reqwest::get(format!("http://127.0.0.1:{pa}/v1/devices/b-1/hierarchy"))
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    let err: Value = refused.json().await.unwrap();
    assert_eq!(err["error"]["code"], "device_on_other_instance", "{err}");
    assert!(
        err["error"]["message"].as_str().unwrap().contains("`B`"),
        "{err}"
    );
    assert!(
        err["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("advertise_url"),
        "{err}"
    );

    // Long tasks on A's phones, submitted to B: only A can run them.
    let t1 = submit(pb, long_task("a-1")).await;
    let t2 = submit(pb, long_task("a-2")).await;
    // And one on B's phone, submitted to A: it must survive A's death and restart.
    let on_b = submit(pa, long_task("b-2")).await;
    wait_task(pb, &on_b, "running", |t| t["status"] == "running").await;
    let mut committed = Vec::new();
    for id in [&t1, &t2] {
        let t = wait_task(pb, id, "3 steps", |t| t["steps"].as_u64() >= Some(3)).await;
        committed.push(t["steps"].as_u64().unwrap());
    }

    // SIGKILL A: no shutdown hook, no goodbye row.
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    drop(a);
    let killed = std::time::Instant::now();
    for (id, before) in [&t1, &t2].into_iter().zip(committed) {
        let t = wait_task(pb, id, "interrupted", |t| t["status"] == "interrupted").await;
        let reason = t["reason"].as_str().unwrap();
        assert!(reason.contains("instance `A`"), "{t}");
        let steps: Vec<Value> =
            serde_json::from_value(get(pb, &format!("/v1/tasks/{id}/steps")).await).unwrap();
        let ns: Vec<u64> = steps.iter().map(|s| s["n"].as_u64().unwrap()).collect();
        assert!(ns.len() as u64 >= before, "the committed steps survived");
        assert_eq!(ns, (1..=ns.len() as u64).collect::<Vec<_>>(), "no gap");
        assert_eq!(t["steps"].as_u64(), Some(ns.len() as u64), "totals match");
        let events = reqwest::get(format!("http://127.0.0.1:{pb}/v1/tasks/{id}/events"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(events.contains("event: task.finished") && events.contains("interrupted"));
    }
    // Reported, not asserted (heartbeat 1 s, dead after 3 s).
    eprintln!(
        "B marked A's tasks interrupted {} ms after the SIGKILL",
        killed.elapsed().as_millis()
    );
    let after = farm(pb).await;
    assert!(
        after
            .iter()
            .filter(|d| d.1 == "A")
            .all(|d| d.3 == "offline" && !d.2),
        "A's phones are offline: {after:?}"
    );
    let gone = reqwest::get(format!("http://127.0.0.1:{pb}/v1/devices/a-1/screenshot"))
        .await
        .unwrap();
    assert_eq!(gone.status(), 503);

    // B keeps serving.
    let short = submit(
        pb,
        json!({"instruction": "home", "device_id": "b-1",
        "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
    )
    .await;
    let t = wait_task(pb, &short, "an end", |t| {
        !matches!(t["status"].as_str(), Some("queued" | "running"))
    })
    .await;
    assert_eq!(t["status"], "succeeded", "{t}");

    // A comes back under its name: its start-up recovery leaves B's running task alone,
    // and its phones are available again everywhere.
    let _a = start(dir_a.path(), pa).await;
    let before = get(pb, &format!("/v1/tasks/{on_b}")).await["steps"]
        .as_u64()
        .unwrap();
    wait_task(pa, &on_b, "more steps after A's restart", |t| {
        t["status"] == "running" && t["steps"].as_u64() > Some(before)
    })
    .await;
    for _ in 0..100 {
        let f = farm(pb).await;
        if f.iter().filter(|d| d.1 == "A").all(|d| d.3 == "available") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let f = farm(pb).await;
    assert!(
        f.iter().filter(|d| d.1 == "A").all(|d| d.3 == "available"),
        "{f:?}"
    );

    // A graceful stop of B leaves at once: its row goes, A shows its phones offline
    // without waiting for dead_after_secs, and its task ends interrupted by B itself.
    let term = Command::new("kill")
        .args(["-TERM", &b.0.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(b.0.wait().unwrap().success(), "a graceful stop");
    drop(b);
    let f = farm(pa).await;
    assert!(
        f.iter()
            .filter(|d| d.1 == "B")
            .all(|d| d.3 == "offline" && !d.2),
        "{f:?}"
    );
    let t = get(pa, &format!("/v1/tasks/{on_b}")).await;
    assert_eq!(t["status"], "interrupted", "{t}");
    db.drop_now().await;
}
