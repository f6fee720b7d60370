//! The real `droidpilot serve` binary as a child process, for tests that kill it, restart
//! it or run several at once, and the two calls they all make against it.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A server process, killed (if still running) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `droidpilot serve` in `dir` (its `config/local.toml` binds `port`) and waits
/// until `/healthz` answers. Warnings and errors go to the test's stderr.
pub async fn start(dir: &Path, port: u16) -> Proc {
    let child = super::droidpilot()
        .arg("serve")
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary starts");
    let proc = Proc(child);
    for _ in 0..300 {
        if reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
            .await
            .is_ok()
        {
            return proc;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not come up on port {port}");
}

/// GET `path` on the server at `port`, as JSON.
pub async fn get(port: u16, path: &str) -> Value {
    reqwest::get(format!("http://127.0.0.1:{port}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Submits a task (201 expected) and returns its id.
pub async fn submit(port: u16, body: Value) -> String {
    let r = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/tasks"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}
