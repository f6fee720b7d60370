//! Crash soak with the real binary (issue 17): `droidpilot serve` is SIGKILLed at seeded
//! random moments while 30 replay tasks run on three virtual phones, and started again on
//! the same files each time. After every kill, on the file exactly as the crash left it:
//! `PRAGMA integrity_check` is `ok`, no foreign key dangles, steps are numbered 1..=n per
//! task and event seqs 1..=n per stream. After every restart the API agrees with the file.
//! At the end every task has run to `succeeded`, each recorded action exactly once, in
//! order (`scheduler.resume_interrupted = true`: a killed task resumes at its next action,
//! which is the harder path; without resume a killed task just ends `interrupted`).
//!
//! `DROIDPILOT_SOAK_KILLS` (default 8) and `DROIDPILOT_SOAK_SEED` (default 17) set the
//! number of kills and the moments; a long soak raises the first (docs/measurements.md "Reliability").
//! When a batch of 30 has finished and kills remain, another batch of 30 is submitted, so
//! every kill lands while tasks are queued or running.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::{Connection, Row, SqliteConnection};

#[path = "common/mod.rs"]
mod common;

use common::serve::{free_port, start};

const PHONES: usize = 3;
const BATCH: usize = 30;
const ACTIONS: u64 = 6;

/// xorshift64*: the kill moments, reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
        })
        .unwrap_or(default)
}

fn write_config(dir: &Path, port: u16) {
    let sims: String = (1..=PHONES)
        .map(|i| format!("[[devices.sim]]\nserial = \"sim-{i}\"\nwidth = 540\nheight = 1200\n"))
        .collect();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\n[storage]\ndata_dir = \"data\"\n\
             [devices.adb]\nenabled = false\n{sims}\
             [runner]\nstep_delay_ms = 60\nstuck_threshold = 1000\nsettle_timeout_ms = 100\n\
             [scheduler]\npoll_ms = 50\nresume_interrupted = true\n"
        ),
    )
    .unwrap();
}

/// One client for the whole soak (building one per request costs more than the request).
fn http() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    })
}

async fn get(port: u16, path: &str) -> Value {
    let r = http()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "GET {path}: {}", r.status());
    r.json().await.unwrap()
}

/// The replay plan of task `k`: waits whose lengths name the task and the step.
fn plan(k: usize) -> Vec<Value> {
    (1..=ACTIONS)
        .map(|i| json!({"action": "wait", "ms": 1000 + 10 * k as u64 + i}))
        .collect()
}

async fn submit_batch(port: u16, first: usize) -> Vec<(String, usize)> {
    let mut ids = Vec::new();
    for k in first..first + BATCH {
        let body = json!({"instruction": format!("soak {k}"), "agent": {"kind": "replay", "actions": plan(k)}});
        let r = http()
            .post(format!("http://127.0.0.1:{port}/v1/tasks"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let id = r.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        ids.push((id, k));
    }
    ids
}

fn is_terminal(status: &str) -> bool {
    !matches!(status, "queued" | "running" | "waiting_for_user" | "paused")
}

/// Statuses of every task, by id.
async fn statuses(port: u16, tasks: &[(String, usize)]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (id, _) in tasks {
        let t = get(port, &format!("/v1/tasks/{id}")).await;
        out.insert(id.clone(), t["status"].as_str().unwrap().to_string());
    }
    out
}

/// Runs a query of `(key, count, min, max)` rows and asserts every key is numbered 1..=count.
async fn assert_gapless(db: &mut SqliteConnection, what: &str, sql: &'static str) -> usize {
    let rows = sqlx::query(sql).fetch_all(&mut *db).await.unwrap();
    for r in &rows {
        let (key, count, min, max): (String, i64, i64, i64) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        assert!(
            min == 1 && max == count,
            "{what} of {key} are not 1..={count}: min {min}, max {max}"
        );
    }
    rows.len()
}

/// The database file as the crash left it (the server is dead; opening replays the WAL
/// as the next start would).
async fn check_file(db_path: &Path) -> (usize, usize) {
    let url = format!("sqlite://{}", db_path.display());
    let mut db = SqliteConnection::connect(&url).await.unwrap();
    let integrity: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert_eq!(integrity, vec!["ok".to_string()], "PRAGMA integrity_check");
    let dangling = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert!(
        dangling.is_empty(),
        "{} dangling foreign keys",
        dangling.len()
    );
    let tasks = assert_gapless(
        &mut db,
        "steps",
        "SELECT task_id, COUNT(*), MIN(n), MAX(n) FROM steps GROUP BY task_id",
    )
    .await;
    let streams = assert_gapless(
        &mut db,
        "event seqs",
        "SELECT stream, COUNT(*), MIN(seq), MAX(seq) FROM events GROUP BY stream",
    )
    .await;
    db.close().await.unwrap();
    (tasks, streams)
}

/// After a restart: each task's steps are numbered 1..=n, and its step total is their
/// number (read before the steps, so a running task's total may only lag behind).
async fn check_api(port: u16, tasks: &[(String, usize)]) {
    for (id, _) in tasks {
        let t = get(port, &format!("/v1/tasks/{id}")).await;
        let steps = get(port, &format!("/v1/tasks/{id}/steps")).await;
        let numbers: Vec<u64> = steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["n"].as_u64().unwrap())
            .collect();
        assert_eq!(
            numbers,
            (1..=numbers.len() as u64).collect::<Vec<_>>(),
            "{id}"
        );
        let total = t["steps"].as_u64().unwrap();
        if is_terminal(t["status"].as_str().unwrap()) {
            assert_eq!(total, numbers.len() as u64, "{t}");
        } else {
            assert!(total <= numbers.len() as u64, "{t}");
        }
    }
}

/// The end: every task succeeded with its plan's actions once each, in order, then finish.
async fn check_done(port: u16, tasks: &[(String, usize)]) {
    for (id, k) in tasks {
        let t = get(port, &format!("/v1/tasks/{id}")).await;
        assert_eq!(t["status"], "succeeded", "{t}");
        let steps = get(port, &format!("/v1/tasks/{id}/steps")).await;
        let ms: Vec<Value> = steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["action"]["ms"].clone())
            .collect();
        let mut want: Vec<Value> = plan(*k).iter().map(|a| a["ms"].clone()).collect();
        want.push(Value::Null); // the replay's closing finish
        assert_eq!(ms, want, "task {k} ({id}): each action once, in order");
    }
}

#[tokio::test]
async fn sigkill_at_random_moments_while_30_tasks_run() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kills = env_u64("DROIDPILOT_SOAK_KILLS", 8);
    let seed = env_u64("DROIDPILOT_SOAK_SEED", 17);
    let mut rng = Rng(seed.max(1));
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    write_config(dir.path(), port);
    let db_path = dir.path().join("data/droidpilot.db");

    let t0 = std::time::Instant::now();
    let mut server = start(dir.path(), port).await;
    let mut tasks = submit_batch(port, 0).await;
    let (mut survived, mut mid_run) = (0, 0);
    for _ in 0..kills {
        let st = statuses(port, &tasks).await;
        if st.values().all(|s| is_terminal(s)) {
            let next = tasks.len();
            tasks.extend(submit_batch(port, next).await);
        }
        tokio::time::sleep(Duration::from_millis(rng.below(1500))).await;
        if statuses(port, &tasks)
            .await
            .values()
            .any(|s| s == "running")
        {
            mid_run += 1;
        }
        server.0.kill().unwrap();
        server.0.wait().unwrap();
        drop(server);
        check_file(&db_path).await;
        server = start(dir.path(), port).await;
        check_api(port, &tasks[tasks.len() - BATCH..]).await;
        survived += 1;
        eprintln!(
            "kill {survived}: {:.1} s in, {} tasks submitted",
            t0.elapsed().as_secs_f64(),
            tasks.len()
        );
    }

    let mut pending = tasks.len();
    for _ in 0..1200 {
        pending = statuses(port, &tasks)
            .await
            .values()
            .filter(|s| !is_terminal(s))
            .count();
        if pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        pending, 0,
        "tasks still not finished after the last restart"
    );
    check_done(port, &tasks).await;
    drop(server);
    let (with_steps, streams) = check_file(&db_path).await;
    eprintln!(
        "crash soak: {survived} SIGKILLs survived ({mid_run} with a task running), seed {seed}; \
         {} tasks all succeeded, {with_steps} tasks' steps and {streams} event streams gapless",
        tasks.len()
    );
    assert_eq!(survived, kills);
}
