//! PostgreSQL goes away under a running task and comes back: `/readyz` says 503 (error
//! shape) meanwhile, the runner waits at its next store call instead of failing the task,
//! and when the database is back the task succeeds with every step recorded exactly once
//! and its events gapless. Runs on a private cluster the test starts and stops itself
//! (never the shared CI one).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::error_of;
use crate::e2e::{app_on, events, wait_done};

/// A PostgreSQL cluster of the test's own, in a temporary directory; stopped on drop.
struct PrivatePg {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

fn as_postgres(program: &Path) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root {
        // initdb refuses root: the cluster runs as `postgres`, as in .ci/postgres.
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

impl PrivatePg {
    /// None (skipped loudly, or a panic under REQUIRE) without PostgreSQL's binaries.
    fn start() -> Option<Self> {
        crate::common::pg::admin_url()?;
        let bin = PathBuf::from(std::env::var("DROIDPILOT_TEST_PG_BIN").expect(
            "DROIDPILOT_TEST_PG_BIN names PostgreSQL's bin directory (set by .ci/postgres)",
        ));
        let dir = tempfile::tempdir().unwrap();
        let _ = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(dir.path())
            .status();
        let data = dir.path().join("data");
        let out = as_postgres(&bin.join("initdb"))
            .args(["-U", "postgres", "--auth=trust", "-D"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {out:?}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let pg = Self {
            bin,
            data,
            port,
            _dir: dir,
        };
        pg.up();
        Some(pg)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) {
        let out = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl {args:?}: {out:?}");
    }

    fn up(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.data.parent().unwrap().display()
        );
        let log = self.data.parent().unwrap().join("server.log");
        self.pg_ctl(&["-w", "-l", log.to_str().unwrap(), "-o", &opts, "start"]);
    }

    /// Stops it as an operator would for maintenance: sessions are ended.
    fn down(&self) {
        self.pg_ctl(&["-w", "-m", "fast", "stop"]);
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

async fn step_count(app: &crate::common::TestApp, id: &str) -> usize {
    let r = app.get(&format!("/v1/tasks/{id}/steps")).await;
    if r.status() != 200 {
        return 0;
    }
    r.json::<Vec<Value>>().await.map(|s| s.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_out_a_database_restart_and_loses_or_repeats_no_step() {
    const TASK: &str = "settings.bluetooth_on";
    const WAITS: usize = 40;
    let Some(pg) = PrivatePg::start() else {
        return;
    };
    // Forty waits on an unchanging screen are the point here, not a loop to flag.
    let app = app_on(
        &pg.url(),
        TASK,
        &[
            ("DROIDPILOT_RUNNER__STUCK_THRESHOLD", "1000"),
            ("DROIDPILOT_RUNNER__ASK_USER_WHEN_STUCK", "false"),
        ],
    )
    .await;
    // A replay long enough to be mid-run when the database goes: waits, one step each.
    let waits: Vec<Value> = (0..WAITS)
        .map(|_| json!({"action": "wait", "ms": 150}))
        .collect();
    let body = json!({"instruction": "wait a lot", "device_id": "sim-1",
                      "agent": {"kind": "replay", "actions": waits, "on_error": "fail"}});
    let r = app.post_json("/v1/tasks", &body).await;
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    while step_count(&app, &id).await < 3 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    pg.down();
    let (status, code, _, hint) = error_of(app.get("/readyz").await).await;
    assert_eq!((status, code.as_str()), (503, "database_unavailable"));
    assert!(hint.contains("storage.database_url"), "{hint}");
    // Long enough for the runner to meet the outage (a step is ~150 ms).
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.up();
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let ns: Vec<u64> = steps.iter().map(|s| s["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, (1..=steps.len() as u64).collect::<Vec<_>>(), "no gap");
    assert!(steps.len() > WAITS, "every wait ran: {}", steps.len());
    assert_eq!(
        done["steps"].as_u64(),
        Some(steps.len() as u64),
        "counted once"
    );
    let evs = events(&app, &id).await;
    let seqs: Vec<i64> = evs.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=evs.len() as i64).collect::<Vec<_>>(), "gapless");
    assert_eq!(app.get("/readyz").await.status(), 200);
    app.stop().await;
}
