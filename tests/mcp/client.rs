//! The agent's `mcp_call` against real MCP servers: `fixtures/places_server.py`, written
//! with the official Python SDK, run as a stdio child and as a Streamable HTTP server.
//! Through the real server (a navigator task against a model in OpenAI's wire format)
//! and through the core (restarts, naming, secrets).

use std::path::Path;
use std::time::Duration;

use droidpilot::config::{Config, Overrides};
use droidpilot::core::Core;
use droidpilot::mcp::client::ServerStatus;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::{TestApp, spawn_app_with_toml};
use crate::sdk;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/mcp/fixtures/places_server.py"
);
const TIMEOUT: Duration = Duration::from_secs(5);

/// A `[[mcp.servers]]` entry running the fixture over stdio; `extra` goes in the table.
fn stdio_server(name: &str, extra: &str) -> String {
    format!(
        "[[mcp.servers]]\nname = \"{name}\"\ncommand = \"{}\"\nargs = [\"{FIXTURE}\"]\n{extra}\n",
        sdk::python()
    )
}

/// The core built from `toml` as `config/local.toml`, with no adb.
async fn core_with(toml: &str) -> (Core, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("local.toml"), toml).unwrap();
    let overrides = Overrides {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let env = [("DROIDPILOT_DEVICES__ADB__ENABLED", "false")];
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let config = Config::load_with_env(dir.path(), &overrides, env).expect("valid config");
    (Core::build(&config).await.expect("core builds"), dir)
}

/// Pids the fixture wrote at each start (`PLACES_STARTS`).
fn starts(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

async fn call(core: &Core, tool: &str, args: Value) -> (bool, String) {
    let r = core.runner.mcp.call(tool, args, TIMEOUT).await;
    let text = match r.content {
        Value::String(s) => s,
        v => v.to_string(),
    };
    (r.is_error, text)
}

fn beijing() -> Value {
    json!({"keywords": "*", "city": "Beijing"})
}

/// An OpenAI Chat Completions reply that calls one tool.
fn tool_call(name: &str, args: Value) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}})
}

async fn wait_done(app: &TestApp, id: &str) -> Value {
    for _ in 0..600 {
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if !matches!(t["status"].as_str(), Some("queued" | "running")) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not finish");
}

/// Submits `agent` on sim-1 and returns the finished task and its steps.
async fn run_task(app: &TestApp, agent: Value) -> (Value, Vec<Value>) {
    let resp = app
        .post_json(
            "/v1/tasks",
            &json!({"instruction": "Find sights in Beijing", "device_id": "sim-1", "agent": agent}),
        )
        .await;
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let id = resp.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = wait_done(app, &id).await;
    let steps = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    (task, steps)
}

#[tokio::test]
async fn the_agents_call_and_its_result_come_back_into_the_next_step() {
    if !sdk::available() {
        return;
    }
    let model = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_call("amap_search", beijing())))
        .up_to_n_times(1)
        .mount(&model)
        .await;
    let done = json!({"success": true, "reason": "found sights", "answer": "Palace Museum"});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_call("finish", done)))
        .mount(&model)
        .await;
    let toml = stdio_server("places", "env = { PLACES_SUFFIX = \" (via env)\" }");
    let allowed = model.uri();
    let app =
        spawn_app_with_toml(&toml, &[("DROIDPILOT_AGENT__ALLOWED_BASE_URLS", &allowed)]).await;
    let agent = json!({"kind": "navigator", "provider": "openai", "model": "gpt-4o",
                       "base_url": format!("{}/v1", model.uri())});
    let (task, steps) = run_task(&app, agent).await;
    assert_eq!(task["status"], "succeeded", "{task}");

    let requests = model.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let offered = first["tools"].as_array().unwrap();
    let search = offered
        .iter()
        .find(|t| t["function"]["name"] == "amap_search");
    let search = search.expect("the server's tool is offered to the model as a native tool");
    assert_eq!(
        search["function"]["parameters"]["required"],
        json!(["keywords", "city"]),
        "with the server's own input schema"
    );
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(
        second.contains("Palace Museum (via env)") && second.contains("amap_search"),
        "the tool's result (from a child given the configured env) reaches the next request: {second}"
    );

    assert_eq!(steps[0]["action"]["action"], "mcp_call", "{}", steps[0]);
    assert_eq!(steps[0]["action"]["tool"], "amap_search");
    let step = steps[0].to_string();
    assert!(
        step.contains("Temple of Heaven (via env)"),
        "the step shows the result: {step}"
    );
    app.stop().await;
}

/// `droidpilot run` builds its agent as the server's scheduler does (`Core::agent_for`):
/// its navigator is offered the configured servers' tools, and a call reaches them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn droidpilot_run_gives_its_navigator_the_servers_tools() {
    if !sdk::available() {
        return;
    }
    let model = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_call("amap_search", beijing())))
        .up_to_n_times(1)
        .mount(&model)
        .await;
    let done = json!({"success": true, "reason": "found sights", "answer": "Palace Museum"});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_call("finish", done)))
        .mount(&model)
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    let toml = format!(
        "[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n\
         [devices.adb]\nenabled = false\n[runner]\nsettle_timeout_ms = 200\n{}",
        stdio_server("places", "env = { PLACES_SUFFIX = \" (via run)\" }")
    );
    std::fs::write(dir.path().join("config/local.toml"), toml).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"));
    cmd.current_dir(dir.path())
        .env("DROIDPILOT_DEVICES__SIM_LATENCY_PROFILE", "fast")
        .env("DROIDPILOT_AGENT__ALLOWED_BASE_URLS", model.uri())
        .env_remove("DROIDPILOT_ADB_SERVER")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .args(["run", "Find sights in Beijing", "--agent", "navigator"])
        .args([
            "--provider",
            "openai",
            "--model",
            "gpt-4o",
            "--max-steps",
            "5",
        ])
        .arg("--base-url")
        .arg(format!("{}/v1", model.uri()));
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");

    let requests = model.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "{stdout}\n{stderr}");
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let offered: Vec<&str> = (first["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"amap_search"),
        "the server's tool is offered to the model: {offered:?}"
    );
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(
        second.contains("Palace Museum (via run)"),
        "the tool's result reaches the next request: {second}"
    );
}

#[tokio::test]
async fn a_server_that_dies_is_reported_unavailable_then_restarted() {
    if !sdk::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("starts");
    let toml = stdio_server("places", &format!("env = {{ PLACES_STARTS = {:?} }}", pids));
    let (core, _data) = core_with(&toml).await;
    assert_eq!(core.mcp.servers()[0].status(), ServerStatus::Connected);
    assert!(!call(&core, "amap_search", beijing()).await.0);

    let (is_error, text) = call(&core, "crash_server", json!({})).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("unavailable") && text.contains("places"),
        "{text}"
    );
    let (is_error, text) = call(&core, "amap_search", beijing()).await;
    assert!(
        is_error && text.contains("is unavailable"),
        "while it restarts, its tools say so: {text}"
    );

    for _ in 0..400 {
        if core.mcp.servers()[0].connects() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(core.mcp.servers()[0].connects(), 2, "restarted once");
    let (is_error, text) = call(&core, "amap_search", beijing()).await;
    assert!(
        !is_error && text.contains("Palace Museum"),
        "works again: {text}"
    );

    let pids = starts(&pids);
    assert_eq!(pids.len(), 2);
    core.shutdown(Duration::from_secs(5)).await;
    assert_eq!(core.tracked(), 0);
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
    };
    assert!(!alive(pids[1]), "shutdown stopped the child {}", pids[1]);
}

#[tokio::test]
async fn a_server_dying_mid_task_fails_the_step_not_the_task() {
    if !sdk::available() {
        return;
    }
    let app = spawn_app_with_toml(&stdio_server("places", ""), &[]).await;
    let agent = json!({"kind": "replay", "actions": [
        {"action": "mcp_call", "tool": "crash_server", "args": {}},
        {"action": "mcp_call", "tool": "amap_search", "args": beijing()},
        {"action": "mcp_call", "tool": "broken_lookup", "args": {"query": "x"}},
        {"action": "finish", "success": true, "reason": "done"}]});
    let (task, steps) = run_task(&app, agent).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(steps.len(), 4, "{steps:?}");
    for s in &steps[..2] {
        let text = s.to_string();
        assert!(text.contains("unavailable"), "{text}");
    }
    app.stop().await;
}

#[tokio::test]
async fn tool_errors_and_unknown_tools_are_results_the_agent_reads() {
    if !sdk::available() {
        return;
    }
    let (core, _data) = core_with(&stdio_server("places", "")).await;
    let (is_error, text) = call(&core, "broken_lookup", json!({"query": "museums"})).await;
    assert!(
        is_error && text.contains("lookup service is down"),
        "{text}"
    );
    let (is_error, text) = call(&core, "amap_serch", beijing()).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("`amap_serch`") && text.contains("amap_search, broken_lookup"),
        "an unknown tool lists the available ones: {text}"
    );
    core.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    if !sdk::available() {
        return;
    }
    let (core, _data) = core_with(&stdio_server("places", "")).await;
    assert!(!core.runner.mcp.names().contains(&"route".to_string()));
    let (is_error, text) = call(&core, "learn_route", json!({})).await;
    assert!(!is_error, "{text}");
    for _ in 0..200 {
        if core.runner.mcp.names().contains(&"route".to_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let args = json!({"origin": "The Bund", "destination": "Yu Garden"});
    let (is_error, text) = call(&core, "route", args).await;
    assert!(
        !is_error && text == "walk from The Bund to Yu Garden",
        "{text}"
    );
    assert_eq!(
        core.mcp.servers()[0].connects(),
        1,
        "listed again, not reconnected"
    );
    core.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn colliding_names_get_the_server_prefix() {
    if !sdk::available() {
        return;
    }
    let toml = format!(
        "{}{}",
        stdio_server("maps", "env = { PLACES_SUFFIX = \" (maps)\" }"),
        stdio_server("guide", "env = { PLACES_SUFFIX = \" (guide)\" }")
    );
    let (core, _data) = core_with(&toml).await;
    let names = core.runner.mcp.names();
    for n in [
        "maps.amap_search",
        "guide.amap_search",
        "maps.tap",
        "guide.tap",
    ] {
        assert!(names.contains(&n.to_string()), "{n} in {names:?}");
    }
    assert!(!names.contains(&"amap_search".to_string()) && !names.contains(&"tap".to_string()));
    let (_, text) = call(&core, "guide.amap_search", beijing()).await;
    assert!(text.contains("Palace Museum (guide)"), "{text}");
    let (_, text) = call(&core, "maps.tap", json!({"x": 1, "y": 2})).await;
    assert_eq!(text, "map tapped at 1,2");
    core.shutdown(Duration::from_secs(5)).await;
}

/// A free loopback port (the fixture binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The fixture as a Streamable HTTP server that wants `token`; killed on drop.
struct HttpFixture {
    child: std::process::Child,
    port: u16,
    url: String,
}

impl HttpFixture {
    async fn start(token: &str) -> Self {
        Self::start_on(free_port(), token).await
    }

    async fn start_on(port: u16, token: &str) -> Self {
        let child = std::process::Command::new(sdk::python())
            .args([FIXTURE, "--http", &port.to_string(), "--token", token])
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        Self { child, port, url }
    }

    fn entry(&self, name: &str, token: &str) -> String {
        format!(
            "[[mcp.servers]]\nname = \"{name}\"\nurl = \"{}\"\nheaders = {{ Authorization = \"Bearer {token}\" }}\n",
            self.url
        )
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn streamable_http_with_a_token_header_and_the_token_shown_nowhere() {
    if !sdk::available() {
        return;
    }
    let secret = "tok-3f9a1c77e2";
    let fixture = HttpFixture::start(secret).await;
    let toml = format!(
        "{}{}",
        fixture.entry("places", secret),
        fixture.entry("wrongkey", "not-the-token")
    );
    let (core, _data) = core_with(&toml).await;
    let (is_error, text) = call(&core, "places.amap_search", beijing()).await;
    assert!(!is_error && text.contains("Palace Museum"), "{text}");
    let report = format!("{:?}", core.mcp.report());
    assert!(
        matches!(
            core.mcp.servers()[1].status(),
            ServerStatus::Unavailable { .. }
        ),
        "{report}"
    );
    assert!(report.contains("Authorization"), "{report}");
    core.shutdown(Duration::from_secs(5)).await;

    let config: Config = {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("local.toml"), &toml).unwrap();
        Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty()).unwrap()
    };
    let checks = droidpilot::cli::doctor::mcp_checks(&config.mcp, TIMEOUT).await;
    let shown = droidpilot::cli::doctor::format_report(&checks);
    assert!(
        shown.contains("amap_search, broken_lookup"),
        "doctor lists the tools: {shown}"
    );
    assert!(shown.contains("[FAIL] mcp server wrongkey"), "{shown}");
    for text in [&shown, &report, &format!("{config:?}")] {
        assert!(
            !text.contains(secret) && !text.contains("not-the-token"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn an_http_server_that_goes_away_is_unavailable_until_it_is_back() {
    if !sdk::available() {
        return;
    }
    let fixture = HttpFixture::start("tok-abcdef12").await;
    let (core, _data) = core_with(&fixture.entry("places", "tok-abcdef12")).await;
    assert!(!call(&core, "amap_search", beijing()).await.0);
    let port = fixture.port;
    drop(fixture);
    let (is_error, text) = call(&core, "amap_search", beijing()).await;
    assert!(is_error && text.contains("unavailable"), "{text}");

    let _back = HttpFixture::start_on(port, "tok-abcdef12").await;
    for _ in 0..400 {
        if core.mcp.servers()[0].connects() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (is_error, text) = call(&core, "amap_search", beijing()).await;
    assert!(
        !is_error && text.contains("Palace Museum"),
        "reconnected: {text}"
    );
    core.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_slow_call_ends_at_the_servers_timeout_and_the_server_stays_usable() {
    if !sdk::available() {
        return;
    }
    let (core, _data) = core_with(&stdio_server("places", "call_timeout_secs = 1")).await;
    let (is_error, text) = call(&core, "slow_search", json!({"seconds": 30})).await;
    assert!(
        is_error && text.contains("timed out after 1000 ms"),
        "{text}"
    );
    let (is_error, text) = call(&core, "slow_search", json!({"seconds": 0})).await;
    assert!(!is_error && text == "slow result", "{text}");
    core.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_server_that_cannot_start_does_not_stop_the_core() {
    let toml = "[[mcp.servers]]\nname = \"ghost\"\ncommand = \"/nonexistent/mcp-server\"\n";
    let (core, _data) = core_with(toml).await;
    let status = core.mcp.servers()[0].status();
    assert!(
        matches!(&status, ServerStatus::Unavailable { reason } if reason.contains("/nonexistent/mcp-server")),
        "{status:?}"
    );
    let (is_error, text) = call(&core, "anything", json!({})).await;
    assert!(is_error && text.contains("none are registered"), "{text}");
    core.shutdown(Duration::from_secs(5)).await;
    assert_eq!(core.tracked(), 0);
}

#[tokio::test]
async fn bad_server_entries_stop_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
            "both `command` and `url`",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"y\"\n",
            "`a` is used twice",
        ),
        (
            "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\ntimeout = 3\n",
            "timeout",
        ),
    ];
    for (toml, expected) in bad {
        std::fs::write(dir.path().join("local.toml"), toml).unwrap();
        let e = Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty())
            .err()
            .unwrap_or_else(|| panic!("accepted: {toml}"))
            .to_string();
        assert!(e.contains(expected), "{toml}: {e}");
    }
}
