//! The one test helper: `spawn_app()` starts the real server on a random port with a
//! fresh database in a temporary directory, and returns a client for it.
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod pg;
pub mod serve;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use droidpilot::config::{Config, Overrides};
use droidpilot::server::ServeOptions;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub addr: SocketAddr,
    pub pool: droidpilot::device::pool::DevicePool,
    pub client: reqwest::Client,
    pub data_dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
    // Dropped last: removes the directory when the test ends.
    _tmp: Option<tempfile::TempDir>,
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request reaches the server")
    }

    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request reaches the server")
    }

    /// Stops the server gracefully and waits until the database is closed. Returns the
    /// data directory so another app can be started on the same files.
    pub async fn stop(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            h.await.expect("server task finished cleanly");
        }
        (self.data_dir.clone(), self._tmp.take())
    }
}

/// Makes every virtual phone instant (`latency_profile = "fast"`, whatever its table
/// says): the shipped `sim-1` takes a real phone's time per command, which a test suite
/// cannot afford. Every test server gets it (`test_config`, `serve::start`, `droidpilot()`)
/// except one that asks for the shipped phone (`spawn_app_as_shipped`).
pub const INSTANT_PHONES: (&str, &str) = ("DROIDPILOT_DEVICES__SIM_LATENCY_PROFILE", "fast");

/// The `droidpilot` binary, with instant virtual phones.
pub fn droidpilot() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"));
    c.env(INSTANT_PHONES.0, INSTANT_PHONES.1);
    c
}

/// Configuration for a test server: loopback, random port, the given data directory,
/// instant virtual phones, and `env` as the only environment.
pub fn test_config(data_dir: &Path, env: &[(&str, &str)]) -> Config {
    let mut vars = vec![INSTANT_PHONES];
    vars.extend_from_slice(env);
    test_config_as_shipped(data_dir, &vars)
}

/// `test_config` with the virtual phones as configured (the shipped `sim-1` is paced).
pub fn test_config_as_shipped(data_dir: &Path, env: &[(&str, &str)]) -> Config {
    let overrides = Overrides {
        bind: Some("127.0.0.1:0".parse().unwrap()),
        data_dir: Some(data_dir.to_path_buf()),
        ..Default::default()
    };
    // Test servers never start or talk to a real adb server unless a test asks.
    // A placeholder OpenAI key, so tasks with the default agent are accepted (a server
    // without one refuses them at submission); no test sends it anywhere.
    let mut vars: Vec<(String, String)> = vec![
        ("DROIDPILOT_DEVICES__ADB__ENABLED".into(), "false".into()),
        (
            "DROIDPILOT_AGENT__KEYS__OPENAI".into(),
            "sk-test-placeholder".into(),
        ),
    ];
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::load_with_env(data_dir, &overrides, vars).expect("test configuration is valid")
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(&[]).await
}

/// No devices: tasks stay queued, which is what tests of the queue itself want.
pub const NO_DEVICES: &str = "[devices]\nsim = []\n";

/// Starts a server with extra `DROIDPILOT_*` settings and no devices, on a fresh data directory.
pub async fn spawn_app_with(env: &[(&str, &str)]) -> TestApp {
    spawn_app_with_toml(NO_DEVICES, env).await
}

/// Starts a server whose `config/local.toml` is `toml` (empty: the shipped defaults).
pub async fn spawn_app_with_toml(toml: &str, env: &[(&str, &str)]) -> TestApp {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_path_buf();
    std::fs::write(dir.join("local.toml"), toml).expect("write local.toml");
    let mut app = spawn_app_on(&dir, env).await;
    app._tmp = Some(tmp);
    app
}

/// The shipped configuration, its virtual phone paced as shipped (not instant).
pub async fn spawn_app_as_shipped() -> TestApp {
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = test_config_as_shipped(tmp.path(), &[]);
    let mut app = spawn_app_from(tmp.path(), config).await;
    app._tmp = Some(tmp);
    app
}

/// Starts a server on an existing data directory (restart tests).
pub async fn spawn_app_on(dir: &Path, env: &[(&str, &str)]) -> TestApp {
    spawn_app_from(dir, test_config(dir, env)).await
}

async fn spawn_app_from(dir: &Path, config: Config) -> TestApp {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = droidpilot::serve::build(config, ServeOptions::default())
        .await
        .expect("server starts");
    let addr = server.local_addr();
    let pool = server.pool();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        server
            .run(async move {
                let _ = rx.await;
            })
            .await
            .expect("server runs and stops cleanly");
    });
    TestApp {
        addr,
        pool,
        client: reqwest::Client::new(),
        data_dir: dir.to_path_buf(),
        stop: Some(tx),
        handle: Some(handle),
        _tmp: None,
    }
}

/// Reads a response as the one error shape and returns (code, message, hint).
pub async fn error_of(resp: reqwest::Response) -> (u16, String, String, String) {
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        ct.starts_with("application/json"),
        "error responses are JSON, got content-type `{ct}`"
    );
    let v: serde_json::Value = resp.json().await.expect("error body is JSON");
    let e = &v["error"];
    let field = |k: &str| {
        e[k].as_str()
            .unwrap_or_else(|| panic!("error.{k} is a string in {v}"))
            .to_string()
    };
    let (code, message, hint) = (field("code"), field("message"), field("hint"));
    assert!(
        !message.is_empty() && !hint.is_empty(),
        "message and hint are filled: {v}"
    );
    (status, code, message, hint)
}
