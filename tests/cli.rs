//! The `droidpilot` binary's operational commands, run as a user runs them: `serve`,
//! `doctor`, `devices` and `run` as real processes, with their output going to pipes (as
//! into a log file), configuration from `--config` or `config/local.toml`, and, where adb
//! matters, a private adb server (never 5037) and the virtual phone behind a simulated adbd.
//!
//! Tests that need `adb` print a skip notice without it, unless DROIDPILOT_REQUIRE_ADB=1.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use droidpilot::adbd::{Adbd, AdbdOptions};
use droidpilot::device::sim::{SimConfig, SimDevice};

const BIN: &str = env!("CARGO_BIN_EXE_droidpilot");

fn adb_available() -> bool {
    let found = Command::new("adb")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("DROIDPILOT_REQUIRE_ADB").as_deref() == Ok("1") {
            panic!("DROIDPILOT_REQUIRE_ADB=1 but `adb` is not installed (apt-get install adb)");
        }
        eprintln!(
            "\n## SKIPPED (tests/cli.rs): `adb` is not installed (apt-get install adb). ##\n"
        );
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(300),
    )
    .is_ok()
}

/// A private adb server started by the test (so not by droidpilot), killed at the end.
struct AdbServer {
    port: u16,
}

impl AdbServer {
    fn start() -> Self {
        let port = free_port();
        let out = Command::new("adb")
            .args(["-P", &port.to_string(), "start-server"])
            .output()
            .unwrap();
        assert!(out.status.success(), "adb start-server: {out:?}");
        AdbServer { port }
    }
    fn adb(&self, args: &[&str]) -> Output {
        Command::new("adb")
            .arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        let _ = self.adb(&["kill-server"]);
    }
}

/// A directory with `config/local.toml` holding `toml`, as a user's working directory.
fn workdir(toml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/local.toml"), toml).unwrap();
    dir
}

/// The binary with a clean environment for what these tests control.
fn droidpilot(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    // The shipped sim-1 takes a real phone's time per command; these tests' phones are
    // instant (tests/common's INSTANT_PHONES, which this file does not include).
    c.env("DROIDPILOT_DEVICES__SIM_LATENCY_PROFILE", "fast");
    c.current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .env_remove("DROIDPILOT_ADB_SERVER")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GEMINI_API_KEY");
    c
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether an HTTP server on `port` answers `GET /healthz` with 200. A bound port alone is
/// not enough: the SIGTERM handler is installed once the server is serving.
fn healthy(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}

/// `droidpilot serve` with stderr to a pipe; returns once it answers /healthz.
fn serve(dir: &Path, port: u16) -> Proc {
    let child = droidpilot(dir)
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let proc = Proc(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if healthy(port) {
            return proc;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the server did not come up on port {port}");
}

/// SIGTERM, as a service manager stops it; returns the exit status and stderr.
fn stop(mut proc: Proc) -> (std::process::ExitStatus, String) {
    let pid = proc.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // Dropping `proc` afterwards kills nothing: the process has exited and been reaped.
    let out = child_output(&mut proc.0);
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn child_output(child: &mut Child) -> Output {
    use std::io::Read as _;
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    let status = child.wait().unwrap();
    Output {
        status,
        stdout: Vec::new(),
        stderr,
    }
}

fn serve_toml(http: u16, adb: &str) -> String {
    format!(
        "[server]\nbind = \"127.0.0.1:{http}\"\n[devices.adb]\n{adb}\n[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n"
    )
}

#[test]
fn logs_into_a_pipe_carry_no_colour_codes() {
    let http = free_port();
    let dir = workdir(&serve_toml(http, "enabled = false"));
    let (status, stderr) = stop(serve(dir.path(), http));
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(stderr.contains("listening"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI escape codes in piped logs: {stderr:?}"
    );
}

#[test]
fn the_start_up_line_names_the_dashboard_and_the_devices() {
    let http = free_port();
    let dir = workdir(&serve_toml(http, "enabled = false"));
    let (status, stderr) = stop(serve(dir.path(), http));
    assert!(status.success(), "{status:?}\n{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("listening"))
        .unwrap_or_else(|| panic!("no start-up line: {stderr}"));
    assert!(
        line.contains(&format!("dashboard at http://127.0.0.1:{http}/,")),
        "{line}"
    );
    assert!(line.contains("devices: sim-1"), "{line}");
    assert!(line.contains("open_files="), "{line}");
}

/// A raw HTTP/1.0 exchange with the server on `port`; returns the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.0\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

#[test]
fn a_task_logs_one_line_when_it_starts_and_one_when_it_ends() {
    let http_port = free_port();
    let dir = workdir(&serve_toml(http_port, "enabled = false"));
    let proc = serve(dir.path(), http_port);
    let task =
        r#"{"instruction":"go home","agent":{"kind":"replay","actions":[{"action":"home"}]}}"#;
    let created: serde_json::Value =
        serde_json::from_str(&http(http_port, "POST", "/v1/tasks", task)).unwrap();
    let id = created["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a task id: {created}"))
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t: serde_json::Value =
            serde_json::from_str(&http(http_port, "GET", &format!("/v1/tasks/{id}"), "")).unwrap();
        if t["status"] == "succeeded" {
            break;
        }
        assert!(Instant::now() < deadline, "the task did not finish: {t}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, stderr) = stop(proc);
    let lines = |what: &str| -> Vec<&str> {
        stderr
            .lines()
            .filter(|l| l.contains(what) && l.contains(&id))
            .collect()
    };
    let started = lines("task started");
    assert_eq!(started.len(), 1, "{stderr}");
    assert!(
        started[0].contains("INFO") && started[0].contains("sim-1"),
        "{}",
        started[0]
    );
    let finished = lines("task finished");
    assert_eq!(finished.len(), 1, "{stderr}");
    let steps: u32 = finished[0]
        .split("steps=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        finished[0].contains("status=succeeded") && steps >= 1,
        "{}",
        finished[0]
    );
}

#[test]
fn serve_stops_the_adb_server_it_started_and_only_that_one() {
    if !adb_available() {
        return;
    }
    // Nobody runs an adb server on this port: serve starts one, and stops it on exit.
    let http = free_port();
    let adb_port = free_port();
    let dir = workdir(&serve_toml(
        http,
        &format!("server = \"127.0.0.1:{adb_port}\""),
    ));
    let proc = serve(dir.path(), http);
    assert!(answers(adb_port), "serve did not start the adb server");
    let (status, stderr) = stop(proc);
    assert!(status.success(), "{status:?}\n{stderr}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while answers(adb_port) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !answers(adb_port),
        "the adb server droidpilot started outlived it\n{stderr}"
    );

    // A server that was already running belongs to the user: it is left running.
    let theirs = AdbServer::start();
    let http = free_port();
    let dir = workdir(&serve_toml(
        http,
        &format!("server = \"127.0.0.1:{}\"", theirs.port),
    ));
    let (status, stderr) = stop(serve(dir.path(), http));
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        theirs.adb(&["devices"]).status.success() && answers(theirs.port),
        "serve stopped an adb server it had not started\n{stderr}"
    );
}

#[test]
fn doctor_without_a_key_contacts_nothing_and_its_summary_matches_its_exit_code() {
    // Both model servers point here; without keys neither may be contacted.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let model_url = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("doctor.toml");
    std::fs::write(
        &cfg,
        format!(
            "[devices.adb]\nadb_path = \"/nonexistent/adb\"\nserver = \"127.0.0.1:{}\"\n\
             [agent.navigator]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{model_url}\"\n\
             [agent.vision]\nprovider = \"gemini\"\nmodel = \"gemini-2.5-flash\"\nbase_url = \"{model_url}\"\n",
            free_port()
        ),
    )
    .unwrap();
    let out = droidpilot(dir.path())
        .args(["doctor", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("no ANTHROPIC_API_KEY (set it in the server's environment)")
            && stdout.contains("no GEMINI_API_KEY (set it in the server's environment)"),
        "{stdout}\n{stderr}"
    );
    let mut connections = 0;
    while listener.accept().is_ok() {
        connections += 1;
    }
    assert_eq!(
        connections, 0,
        "doctor contacted a model server without a key"
    );

    // adb is missing and the key is missing: exit 1, and no line says all is well.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stdout.contains("All checks passed"), "{stdout}");
    assert!(stderr.contains("check(s) failed"), "{stderr}");
}

/// A fresh install chose no model: doctor calls the defaults' models "not configured",
/// contacts neither, and does not count them as failures.
#[test]
fn doctor_on_a_fresh_install_does_not_fail_on_models_nobody_chose() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("adb-only.toml");
    std::fs::write(
        &cfg,
        format!(
            "[devices.adb]\nadb_path = \"/nonexistent/adb\"\nserver = \"127.0.0.1:{}\"\n",
            free_port()
        ),
    )
    .unwrap();
    let out = droidpilot(dir.path())
        .args(["doctor", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let models = stdout.split("\nmodels:").nth(1).expect("a models section");
    for role in ["navigator", "vision"] {
        assert!(
            models.contains(&format!("[  --] {role} model: not configured")),
            "{stdout}"
        );
    }
    assert!(!models.contains("FAIL"), "{stdout}");
    // Only the adb checks (adb is missing here) count.
    let adb_failures = stdout.matches("[FAIL]").count();
    assert!(adb_failures > 0, "{stdout}");
    assert!(
        stderr.contains(&format!("{adb_failures} check(s) failed")),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn devices_reads_the_config_file_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("mine.toml");
    std::fs::write(
        &cfg,
        format!(
            "[devices.adb]\nadb_path = \"/nonexistent/adb\"\nserver = \"127.0.0.1:{}\"\n\
             [[devices.sim]]\nserial = \"from-my-config\"\nwidth = 540\nheight = 1200\n",
            free_port()
        ),
    )
    .unwrap();
    let out = droidpilot(dir.path())
        .args(["devices", "--json", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\"from-my-config\""), "{stdout}");

    // A --config that does not exist is an error naming it, not silently the defaults.
    let out = droidpilot(dir.path())
        .args(["devices", "--config", "nope.toml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope.toml"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_picks_the_virtual_phone_over_a_real_one_and_says_so() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    // A "real phone": a phone served over adb, as a USB or Wi-Fi phone appears.
    let phone = Arc::new(SimDevice::new(SimConfig::default()).unwrap());
    let adbd = Adbd::new(phone, AdbdOptions::default());
    let addr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let dir = workdir(&format!(
        "[devices.adb]\nserver = \"127.0.0.1:{}\"\nconnect = [\"{addr}\"]\n\
         [[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
         [runner]\nsettle_timeout_ms = 200\n",
        server.port
    ));
    let mut cmd = droidpilot(dir.path());
    cmd.args([
        "run",
        "go home",
        "--agent",
        "replay",
        "--actions",
        r#"[{"action": "home"}]"#,
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        server
            .adb(&["devices"])
            .stdout
            .windows(addr.to_string().len())
            .any(|w| w == addr.to_string().as_bytes()),
        "the real phone was not connected, so the choice was not tested"
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("on sim-1 with replay"), "{stdout}");
    assert!(
        stdout.contains("device: sim-1") && stdout.contains("--device"),
        "the pick and how to change it are printed: {stdout}"
    );
    // Progress into a pipe is plain lines.
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    adbd.shutdown();
}

fn ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stdout
}

#[test]
fn a_run_is_recorded_as_a_script_with_selectors_then_exported_and_imported() {
    let dir = workdir(
        "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
         [devices.adb]\nenabled = false\n[runner]\nsettle_timeout_ms = 200\n",
    );
    let mut cmd = droidpilot(dir.path());
    cmd.args(["run", "turn on Bluetooth", "--agent", "replay", "--actions"]).arg(
        r#"[{"action": "launch_app", "package": "com.android.settings"}, {"action": "tap", "coordinate": [0.5, 0.23]}]"#,
    );
    let stdout = ok(cmd);
    let task = stdout
        .split_whitespace()
        .skip_while(|w| *w != "task")
        .nth(1)
        .expect("the task id is printed")
        .to_string();

    let file = dir.path().join("bt.json");
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "record", &task, "--out"]).arg(&file);
    let printed: serde_json::Value = serde_json::from_str(&ok(cmd)).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(printed, saved);
    let tap = &saved["steps"][1];
    assert_eq!(tap["action"], "tap", "{saved}");
    assert!(
        tap["selector"].as_str().is_some_and(|s| !s.is_empty()),
        "{tap}"
    );
    assert!(
        tap["alternative_selectors"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(":text(\"Bluetooth\")")),
        "{tap}"
    );

    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "import"]).arg(&file);
    let id = ok(cmd).trim().to_string();
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "export", &id]);
    let exported: serde_json::Value = serde_json::from_str(&ok(cmd)).unwrap();
    assert_eq!(exported, saved);

    // An input the script does not declare is refused by name, before anything runs.
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "run"])
        .arg(&file)
        .args(["--input", "colour=red"]);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("colour"),
        "{stderr}"
    );

    // The stored script replays on the phone with no model (exit 0 means it succeeded),
    // and exports as a Maestro flow that imports back.
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "run", &id, "--device", "sim-1"]);
    ok(cmd);
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "export", &id, "--format", "maestro"]);
    let yaml = ok(cmd);
    assert!(yaml.contains("tapOn"), "{yaml}");
    let flow = dir.path().join("bt.yaml");
    std::fs::write(&flow, yaml).unwrap();
    let mut cmd = droidpilot(dir.path());
    cmd.args(["script", "import", "--format", "maestro"])
        .arg(&flow);
    assert!(!ok(cmd).trim().is_empty(), "a stored id");
}

/// `droidpilot eval` with no key anywhere: the replay agent (reference solutions) scores
/// every clock task, and `--json` prints the summary object the issue specifies.
#[test]
fn eval_scores_the_reference_solutions_with_no_key_and_writes_json_and_markdown() {
    let dir = workdir("[devices.adb]\nenabled = false\n");
    let out_dir = dir.path().join("scores");
    let mut cmd = droidpilot(dir.path());
    cmd.args(["eval", "--json", "--tasks", "clock.*", "--parallel", "2"])
        .args(["--screen", "540x1200", "--out"])
        .arg(&out_dir);
    let stdout = ok(cmd);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    for key in [
        "tasks",
        "succeeded",
        "success_rate",
        "tiers",
        "false_success",
        "verifier_catches",
        "loops",
        "mean_steps",
        "tokens",
        "cost_usd",
        "wall_s",
        "per_task",
    ] {
        assert!(v.get(key).is_some(), "`{key}` in {v}");
    }
    let clock = droidpilot::device::sim::tasks()
        .iter()
        .filter(|t| t.id.starts_with("clock."))
        .count();
    assert_eq!(v["tasks"], clock);
    assert_eq!(v["success_rate"], 1.0, "{v}");
    assert_eq!(v["false_success"], 0);
    assert_eq!(v["agent"]["kind"], "replay");
    for tier in ["easy", "medium", "hard"] {
        assert!(
            v["tiers"][tier]["runs"].as_u64().unwrap() > 0,
            "{tier}: {v}"
        );
    }
    assert!(v["tokens"].get("in").is_some() && v["tokens"].get("out").is_some());
    assert_eq!(v["per_task"].as_array().unwrap().len(), clock);
    // --out: the same object, and the Markdown table.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("eval.json")).unwrap()).unwrap();
    assert_eq!(saved["per_task"], v["per_task"]);
    let md = std::fs::read_to_string(out_dir.join("eval.md")).unwrap();
    assert!(md.contains("| all | ") && md.contains("100.0%"), "{md}");
}

/// `droidpilot eval --model-server oracle`, no key anywhere: the planned agent (the
/// default with a model server) runs every model call over HTTP against the in-process
/// oracle, and the summary counts each role.
#[test]
fn eval_runs_the_planned_agent_on_the_oracle_server_with_no_key() {
    let dir = workdir("[devices.adb]\nenabled = false\n");
    let mut cmd = droidpilot(dir.path());
    cmd.args([
        "eval",
        "--json",
        "--model-server",
        "oracle",
        "--tasks",
        "clock.d*",
    ])
    .args(["--screen", "540x1200", "--parallel", "2"]);
    let v: serde_json::Value = serde_json::from_str(&ok(cmd)).expect("one JSON object");
    assert_eq!(v["agent"]["kind"], "planned", "{v}");
    assert_eq!(v["agent"]["model_server"], "oracle", "{v}");
    assert_eq!(v["success_rate"], 1.0, "{v}");
    for role in ["actor", "planner", "verifier"] {
        assert!(
            v["roles"][role]["calls"].as_u64().unwrap() > 0,
            "{role}: {v}"
        );
        assert!(
            v["roles"][role]["tokens"]["in"].as_u64().unwrap() > 0,
            "{role}: {v}"
        );
    }
    for r in v["per_task"].as_array().unwrap() {
        assert!(r["model_calls"].as_u64().unwrap() > 0, "{r}");
    }
    // An agent the oracle cannot play is refused before anything runs.
    let mut cmd = droidpilot(dir.path());
    cmd.args([
        "eval",
        "--model-server",
        "oracle",
        "--agent",
        r#"{"kind": "replay"}"#,
    ]);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("kind `replay`") && err.contains("planned"),
        "{err}"
    );
}

/// `--compare a.json b.json`: both side by side, with deltas and the tasks that changed.
#[test]
fn eval_compare_puts_two_scores_side_by_side() {
    let dir = workdir("[devices.adb]\nenabled = false\n");
    let run = |agent: &str, file: &str| {
        let mut cmd = droidpilot(dir.path());
        cmd.args([
            "eval",
            "--json",
            "--tasks",
            "settings.b*",
            "--screen",
            "540x1200",
        ])
        .args(["--agent", agent]);
        std::fs::write(dir.path().join(file), ok(cmd)).unwrap();
    };
    run(r#"{"kind": "replay"}"#, "a.json");
    let quitter = r#"{"kind": "replay", "actions": [{"action": "finish", "success": true}]}"#;
    std::fs::write(dir.path().join("quitter.json"), quitter).unwrap();
    run("quitter.json", "b.json");
    let mut cmd = droidpilot(dir.path());
    cmd.args(["eval", "--compare", "a.json", "b.json"]);
    let table = ok(cmd);
    let row = |label: &str| {
        table
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("success rate"), "success rate 100.0% 0.0% -100.0 pt");
    assert!(row("false success").ends_with("0 4 +4"), "{table}");
    assert!(table.contains("settings.bluetooth_on"), "{table}");
    let mut cmd = droidpilot(dir.path());
    cmd.args(["eval", "--compare", "a.json", "quitter.json"]);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("quitter.json is not an eval summary"), "{err}");
}

#[test]
fn bench_runner_refuses_a_store_it_cannot_use_with_a_hint_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bound, then released.
    let closed = free_port();
    for (url, says) in [
        ("mysql://u:hunter22@db/x", "--store postgres://"),
        (
            &*format!("postgres://u:hunter22@127.0.0.1:{closed}/x"),
            "reachable",
        ),
    ] {
        let out = droidpilot(dir.path())
            .args(["bench", "runner", "--store", url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(
            !stderr.contains("hunter22") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

/// `droidpilot openapi | head`, `droidpilot screen … | head`: the reader goes away before
/// the output is written. The command ends quietly and successfully, without a panic.
#[test]
fn output_into_a_pipe_closed_early_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/uiautomator/real/067__garcezv__reabLITA-Tablet__ui_painel.xml");
    let screen = ["screen", "--format", "tree", dump.to_str().unwrap()];
    for args in [&["openapi"][..], &screen[..]] {
        let mut child = droidpilot(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Like `head` done reading: the pipe's only reader is closed.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?}\n{stderr}", out.status);
        assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    }
}

/// A dump with no view is an error with a hint and exit code 1, not an empty screen.
#[test]
fn screen_refuses_a_dump_with_no_views() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = droidpilot(dir.path())
        .args(["screen", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"UI hierchary dumped to: /sdcard/window_dump.xml\n<hierarchy rotation=\"0\"></hierarchy>")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no views") && stderr.contains("hint: "),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Ctrl+C on `droidpilot run` cancels the task at once (a device wait in flight is cut
/// short), says so, and still prints the summary and saves the trajectory.
#[test]
fn ctrl_c_cancels_a_running_task_and_keeps_its_record() {
    use std::io::{BufRead, BufReader};
    let dir = workdir(
        "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\npacing = \"realistic\"\n\
         [devices.adb]\nenabled = false\n[runner]\nsettle_timeout_ms = 200\n",
    );
    let mut cmd = droidpilot(dir.path());
    cmd.args(["run", "wait a long time", "--agent", "replay", "--actions"])
        .arg(r#"[{"action": "wait", "ms": 120000}]"#)
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    // The step line comes from inside the loop that listens for Ctrl+C; the wait it
    // started lasts two minutes.
    while !seen.contains("[step 1/") {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "no step line: {seen}"
        );
        seen.push_str(&line);
    }
    assert!(seen.contains("on sim-1 with replay"), "{seen}");
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(
        rest.contains("cancelling the task (Ctrl+C again to quit now)"),
        "{seen}{rest}"
    );
    assert!(rest.contains("cancelled after"), "the summary: {rest}");
    assert!(rest.contains("trajectory: "), "{rest}");
    assert!(!status.success(), "a cancelled task is no success");
}

/// `droidpilot flow test DIR` runs a folder of flows on the configured phones in this
/// process: each flow printed as it ends, a JUnit report written, and the exit code
/// non-zero when a flow failed (zero when, with `--exclude-tags`, only passing flows run).
#[test]
fn flow_test_runs_a_folder_writes_junit_and_fails_when_a_flow_fails() {
    let dir = workdir(
        "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
         [[devices.sim]]\nserial = \"sim-2\"\nwidth = 540\nheight = 1200\n\
         [devices.adb]\nenabled = false\n[runner]\nsettle_timeout_ms = 200\n",
    );
    let flows = dir.path().join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(
        flows.join("ok.yaml"),
        "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"${WHAT}\"\n",
    )
    .unwrap();
    std::fs::write(
        flows.join("broken.yaml"),
        "appId: com.android.settings\ntags: [wip]\n---\n- launchApp\n- assertVisible: \"Nowhere\"\n",
    )
    .unwrap();
    let report = dir.path().join("report.xml");
    let mut cmd = droidpilot(dir.path());
    cmd.args([
        "flow",
        "test",
        "flows",
        "--devices",
        "sim-1,sim-2",
        "-e",
        "WHAT=Wi-Fi",
    ])
    .args(["--format", "junit", "--output"])
    .arg(&report);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("passed   ok.yaml"), "{stdout}");
    assert!(
        stdout.contains("failed   broken.yaml") && stdout.contains("broken.yaml line 5"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .count(),
        2
    );
    let mut cmd = droidpilot(dir.path());
    cmd.args([
        "flow",
        "test",
        "flows",
        "-e",
        "WHAT=Wi-Fi",
        "--exclude-tags",
        "wip",
    ]);
    let stdout = ok(cmd);
    assert!(stdout.contains("passed: 1 passed, 0 failed"), "{stdout}");
}

/// The Bluetooth row is called "Bluetooth" on the phone; this flow still says "Bluetooth
/// radio", as it would after an app update renamed the row.
const RENAMED_ROW: &str =
    "appId: com.android.settings\n---\n- launchApp\n- tapOn: \"Bluetooth radio\"\n";

/// `flow test --recovery` on a server with no model it can call: refused before anything
/// runs, saying which option needs what, and the command fails. `--heal` alone is refused
/// by the command line.
#[test]
fn flow_test_recovery_without_a_model_is_refused_and_fails() {
    let dir = workdir(
        "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
         [devices.adb]\nenabled = false\n",
    );
    let flows = dir.path().join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(flows.join("renamed.yaml"), RENAMED_ROW).unwrap();
    let out = droidpilot(dir.path())
        .args(["flow", "test", "flows", "--recovery"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("`recovery` needs a model the server can call")
            && stderr.contains("OPENAI_API_KEY")
            && stderr.contains("or run the flows without `recovery`"),
        "{stderr}"
    );
    assert!(!stdout.contains("flow run "), "nothing ran: {stdout}");
    let out = droidpilot(dir.path())
        .args(["flow", "test", "flows", "--heal"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--recovery"), "{stderr}");
}

/// `flow test --recovery --heal` with the server's model (a stand-in provider answering
/// with the renamed row's selector): the flow passes through AI in the middle, its file
/// is written back healed, and the healed folder then passes with no model at all.
#[test]
fn flow_test_recovery_fixes_a_renamed_selector_and_heal_writes_the_flow_back() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let answer = serde_json::json!({"action_type": "modify_selector",
        "new_selector": ":text(\"Bluetooth\")", "reason": "the row is called Bluetooth now",
        "confidence": "high"});
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
                "model": "fixer", "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answer.to_string()}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            })))
            .mount(&server)
            .await;
        server
    });
    let sims = "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
                [devices.adb]\nenabled = false\n[runner]\nsettle_timeout_ms = 200\n";
    let dir = workdir(&format!(
        "{sims}[agent.navigator]\nprovider = \"openai\"\nmodel = \"fixer\"\nbase_url = \"{}/v1\"\n",
        server.uri()
    ));
    let flows = dir.path().join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(flows.join("renamed.yaml"), RENAMED_ROW).unwrap();
    let mut cmd = droidpilot(dir.path());
    cmd.env("OPENAI_API_KEY", "sk-test-key").args([
        "flow",
        "test",
        "flows",
        "--recovery",
        "--heal",
    ]);
    let stdout = ok(cmd);
    assert!(stdout.contains("passed   renamed.yaml"), "{stdout}");
    assert!(stdout.contains("healed: "), "{stdout}");
    let healed = std::fs::read_to_string(flows.join("renamed.yaml")).unwrap();
    assert!(
        healed.contains("- tapOn: 'Bluetooth|Bluetooth radio'"),
        "{healed}"
    );
    // The healed folder on a server with no model: passes on its own.
    let plain = workdir(sims);
    let mut cmd = droidpilot(plain.path());
    cmd.arg("flow").arg("test").arg(&flows);
    let stdout = ok(cmd);
    assert!(stdout.contains("passed: 1 passed, 0 failed"), "{stdout}");
    rt.block_on(async move { drop(server) });
}

/// A server on the virtual phone for the `workspace` and `flow test --workspace` commands.
fn flow_server() -> (tempfile::TempDir, Proc, String) {
    let port = free_port();
    let dir = workdir(&format!(
        "{}[runner]\nsettle_timeout_ms = 200\n",
        serve_toml(port, "enabled = false")
    ));
    let proc = serve(dir.path(), port);
    (dir, proc, format!("http://127.0.0.1:{port}"))
}

/// `droidpilot ARGS --server URL` in `dir`: its exit status, stdout and stderr.
fn against(dir: &Path, url: &str, args: &[&str]) -> (bool, String, String) {
    let out = droidpilot(dir)
        .args(args)
        .args(["--server", url])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The workspace id in `workspace push`'s line (`ID version N: …`).
fn pushed_id(stdout: &str) -> String {
    stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

const WIFI_FLOW: &str =
    "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Wi-Fi\"\n";
const NOWHERE_FLOW: &str =
    "appId: com.android.settings\n---\n- launchApp\n- assertVisible: \"Nowhere\"\n";

/// `workspace push` stores a folder as a new workspace, a `.zip` as its next version, and
/// a version that does not import is refused with the server's message (file and line)
/// and a non-zero exit, nothing stored; `versions` and `list` show what is stored.
#[test]
fn workspace_push_stores_versions_and_shows_a_refused_one_as_the_server_says() {
    let (dir, _server, url) = flow_server();
    let flows = dir.path().join("settings");
    std::fs::create_dir_all(flows.join("sub")).unwrap();
    std::fs::write(flows.join("wifi.yaml"), WIFI_FLOW).unwrap();
    let (ok, stdout, stderr) = against(dir.path(), &url, &["workspace", "push", "settings"]);
    assert!(ok, "{stdout}\n{stderr}");
    let id = pushed_id(&stdout);
    assert!(
        stdout.starts_with(&format!("{id} version 1: settings (1 flows, 1 files")),
        "{stdout}"
    );
    // The next version as a .zip, with --json.
    let zip = dir.path().join("v2.zip");
    let mut w = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
    for (name, body) in [("wifi.yaml", WIFI_FLOW), ("nowhere.yaml", NOWHERE_FLOW)] {
        w.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut w, body.as_bytes()).unwrap();
    }
    w.finish().unwrap();
    let push = ["workspace", "push", "v2.zip", "--workspace", &id, "--json"];
    let (ok, stdout, stderr) = against(dir.path(), &url, &push);
    assert!(ok, "{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (v["id"].as_str(), v["version"].as_u64()),
        (Some(id.as_str()), Some(2))
    );
    assert_eq!(v["name"], "settings", "a new version keeps the name");
    // A flow that does not import: the server's 422, as it said it, and a failed command.
    std::fs::write(
        flows.join("sub/bad.yaml"),
        "appId: a\n---\n- launchApp\n- flyToTheMoon: now\n",
    )
    .unwrap();
    let push = ["workspace", "push", "settings", "--workspace", &id];
    let (ok, stdout, stderr) = against(dir.path(), &url, &push);
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("422 Unprocessable Entity")
            && stderr.contains("sub/bad.yaml line 4")
            && stderr.contains("hint: "),
        "{stderr}"
    );
    let (ok, stdout, stderr) = against(dir.path(), &url, &["workspace", "versions", &id]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "nothing stored for the refused version: {stdout}"
    );
    assert!(
        lines[1].starts_with(&format!("{id} version 2: settings (2 flows")),
        "{stdout}"
    );
    let (ok, stdout, _) = against(dir.path(), &url, &["workspace", "list"]);
    assert!(
        ok && stdout.contains(&format!("{id} version 2: settings")),
        "{stdout}"
    );
    // An unknown workspace: the server's 404, and a failed command.
    let unknown = "01900000-0000-7000-8000-000000000000";
    let (ok, _, stderr) = against(dir.path(), &url, &["workspace", "versions", unknown]);
    assert!(!ok && stderr.contains("404 Not Found"), "{stderr}");
}

/// `flow test --workspace ID[@V]` runs a stored version on the server: each flow printed,
/// the JUnit report written, the exit code zero when every flow passed and non-zero when
/// one failed; a folder and --workspace together are refused before anything runs.
#[test]
fn flow_test_runs_a_stored_workspace_version_on_the_server() {
    let (dir, _server, url) = flow_server();
    let flows = dir.path().join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(flows.join("wifi.yaml"), WIFI_FLOW).unwrap();
    let (ok, stdout, stderr) = against(dir.path(), &url, &["workspace", "push", "flows"]);
    assert!(ok, "{stderr}");
    let id = pushed_id(&stdout);
    std::fs::write(flows.join("nowhere.yaml"), NOWHERE_FLOW).unwrap();
    let push = ["workspace", "push", "flows", "--workspace", &id];
    assert!(against(dir.path(), &url, &push).0);
    // The latest version (2) has a failing flow.
    let latest = [
        "flow",
        "test",
        "--workspace",
        &id,
        "--format",
        "junit",
        "--output",
        "r.xml",
    ];
    let (ok, stdout, stderr) = against(dir.path(), &url, &latest);
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("passed   wifi.yaml")
            && stdout.contains("failed   nowhere.yaml")
            && stdout.contains("nowhere.yaml line 4"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(dir.path().join("r.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .count(),
        2
    );
    // Version 1 only has the passing flow.
    let first = format!("{id}@1");
    let (ok, stdout, stderr) = against(dir.path(), &url, &["flow", "test", "--workspace", &first]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("passed: 1 passed, 0 failed"), "{stdout}");
    // A folder and a stored workspace: refused, nothing run.
    let both = ["flow", "test", "flows", "--workspace", &id];
    let (ok, stdout, stderr) = against(dir.path(), &url, &both);
    assert!(!ok && !stdout.contains("flow run "), "{stdout}");
    assert!(
        stderr.contains("both a folder (flows) and --workspace") && stderr.contains("hint: "),
        "{stderr}"
    );
}
