//! Secrets audit with the real binary (issue 17). The first test: three canaries, fresh each run: the
//! model API key (the server's `OPENAI_API_KEY`, sent to a wiremock model speaking OpenAI's
//! wire format), the server's bearer token, and a password a model types into the virtual
//! phone's real password field (Settings > Accounts, `password="true"`). The run is a
//! vision agent that opens Settings, types an e-mail, aims the password at a selector
//! that misses the field (a failed step), types it into the field, and finishes; then an
//! MCP client types it into the field with the `type` tool over `/mcp`. The server logs
//! at `trace`.
//!
//! None of the canaries, raw or in a simple encoding (base64 at each alignment, URL
//! encoding, hex), may appear in: the server's stdout and stderr; any byte under the data
//! directory (the SQLite file, its -wal and -shm, the artifacts) while running and after
//! a stop; any API response the test makes (task, list, steps, trajectory, result,
//! interventions, SSE events, the `/v1/ws` stream, the phone's screen, hierarchy and
//! screenshot, presets, devices, metrics); the exported trajectory, decompressed.
//!
//! Screenshots are images: the virtual phone draws a password field's text as dots, as
//! Android does (`device/sim/render/looks.rs`); pixels are not searched for glyphs. The
//! test proves the canaries were live: the model received the key, and the phone's
//! password field holds as many dots as the password has characters.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A value nobody else would write, with characters that URL-encode (space, `/`, `+`).
fn canary(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// The canary and the forms it could leak in.
fn encodings(secret: &str) -> Vec<(String, Vec<u8>)> {
    let b = secret.as_bytes();
    let mut out = vec![("raw".to_string(), b.to_vec())];
    out.push(("hex".into(), hex::encode(b).into_bytes()));
    let url: String = b
        .iter()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (*c as char).to_string()
            }
            b' ' => "+".to_string(),
            _ => format!("%{c:02X}"),
        })
        .collect();
    out.push(("url".into(), url.clone().into_bytes()));
    out.push(("url-%20".into(), url.replace('+', "%20").into_bytes()));
    // Base64 of the secret inside a longer buffer: at each of the three alignments, the
    // characters that depend on the secret alone (trimmed at both ends).
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        for pad in 0..3 {
            let mut buf = vec![0u8; pad];
            buf.extend_from_slice(b);
            let enc = engine.encode(&buf);
            let start = (pad * 4).div_ceil(3) + 1;
            let end = enc.trim_end_matches('=').len().saturating_sub(2);
            out.push((format!("base64@{pad}"), enc.as_bytes()[start..end].to_vec()));
        }
    }
    out.retain(|(_, v)| v.len() >= 8);
    out.dedup_by(|a, b| a.1 == b.1);
    out
}

/// Every place `haystack` holds one of the canaries' forms.
fn leaks(place: &str, haystack: &[u8], canaries: &[(&str, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (name, secret) in canaries {
        for (form, needle) in encodings(secret) {
            if haystack
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
            {
                found.push(format!("{name} ({form}) in {place}"));
            }
        }
    }
    found
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The model: replies in the generic vision format, one per call; records what it got.
struct Model {
    replies: Vec<String>,
    calls: Mutex<Vec<Request>>,
}

impl Respond for Model {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut calls = self.calls.lock().unwrap();
        calls.push(req.clone());
        let i = (calls.len() - 1).min(self.replies.len() - 1);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 1_700_000_000, "model": "ui-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.replies[i]}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}
        }))
    }
}

fn reply(thinking: &str, action: Value) -> String {
    format!("<thinking>{thinking}</thinking><tool_call>{action}</tool_call>")
}

/// Open Settings > Accounts, type the e-mail and the password, finish (the form stays
/// filled, so the phone's screen and hierarchy are read with the password in the field).
fn script(password: &str) -> Vec<String> {
    vec![
        reply(
            "Open Settings.",
            json!({"action": "launch_app", "app": "com.android.settings"}),
        ),
        reply(
            "Accounts.",
            json!({"action": "tap", "selector": ":text(\"Accounts\")"}),
        ),
        reply(
            "The e-mail.",
            json!({"action": "type", "selector": "#email", "text": "alex@example.com"}),
        ),
        // Aimed at the password field with a selector that matches nothing: the step
        // fails, and its recorded action must not hold the text either.
        reply(
            "The password field.",
            json!({"action": "type", "selector": "#passwd", "text": password}),
        ),
        reply(
            &format!("Now the password {password} into the password field."),
            json!({"action": "type", "selector": "#password", "text": password}),
        ),
        reply(
            "Done.",
            json!({"action": "finish", "success": true, "answer": "form filled"}),
        ),
    ]
}

struct Server {
    proc: Proc,
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Server {
    async fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
    }

    async fn json(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(
            status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).unwrap()
    }
}

async fn start(dir: &Path, api_key: &str, token: &str, model_url: &str) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/local.toml"),
        format!(
            "[server]\nbind = \"127.0.0.1:{port}\"\ntokens = [\"{token}\"]\n[storage]\ndata_dir = \"data\"\n\
             [devices.adb]\nenabled = false\n[[devices.sim]]\nserial = \"sim-1\"\n\
             [runner]\nsettle_timeout_ms = 300\n[scheduler]\npoll_ms = 50\nresume_interrupted = true\n\
             [agent.servers.lab]\nprovider = \"openai\"\nmodel = \"ui-model\"\nbase_url = \"{model_url}\"\n"
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .arg("serve")
        .current_dir(dir)
        .env("RUST_LOG", "trace")
        .env("OPENAI_API_KEY", api_key)
        .stdout(std::fs::File::create(dir.join("stdout.log")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let server = Server {
        proc: Proc(child),
        base: format!("http://127.0.0.1:{port}"),
        token: token.into(),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap(),
    };
    for _ in 0..400 {
        if server
            .client
            .get(format!("{}/readyz", server.base))
            .send()
            .await
            .is_ok()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server did not come up");
}

/// Every `/v1/ws` message for all tasks, collected until the returned sender fires.
async fn watch_ws(
    server: &Server,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Vec<u8>>,
) {
    let mut req = format!("{}/v1/ws", server.base.replace("http", "ws"))
        .into_client_request()
        .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", server.token).parse().unwrap(),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .expect("ws upgrade");
    ws.send(Message::Text(
        json!({"type": "subscribe", "all": true}).to_string().into(),
    ))
    .await
    .unwrap();
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        let mut got = Vec::new();
        loop {
            tokio::select! {
                _ = &mut stopped => return got,
                m = ws.next() => match m {
                    Some(Ok(Message::Text(t))) => { got.extend_from_slice(t.as_bytes()); got.push(b'\n'); }
                    Some(Ok(_)) => {}
                    _ => return got,
                },
            }
        }
    });
    (stop, handle)
}

/// Over `/mcp` (JSON-RPC on Streamable HTTP, as an MCP client sends it): a session that
/// types `text` into the phone's password field with the `type` tool. Returns the
/// replies' bytes.
async fn mcp_type_password(server: &Server, text: &str) -> Vec<u8> {
    let post = |body: Value, session: Option<String>| {
        let mut req = server
            .client
            .post(format!("{}/mcp", server.base))
            .bearer_auth(&server.token)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "audit", "version": "1"}}});
    let r = post(init, None).await.unwrap();
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let mut out = r.bytes().await.unwrap().to_vec();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(done, Some(session.clone())).await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "type", "arguments": {"device_id": "sim-1", "selector": "#password", "text": text}}});
    let r = post(call, Some(session)).await.unwrap();
    assert_eq!(r.status(), 200);
    out.extend(r.bytes().await.unwrap());
    assert!(
        String::from_utf8_lossy(&out).contains("\"id\":2,\"result\"")
            && !String::from_utf8_lossy(&out).contains("\"isError\":true"),
        "the type tool ran: {}",
        String::from_utf8_lossy(&out)
    );
    out
}

/// Every entry of a `.tar.gz`, decompressed.
fn untar(gz: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut data).unwrap();
            (name, data)
        })
        .collect()
}

#[tokio::test]
async fn no_secret_reaches_logs_database_artifacts_api_or_export() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let api_key = canary("sk-canary-");
    let token = canary("tok-canary-");
    let password = format!("pw Canary/{}+x", &canary("")[..12]);
    let canaries = [
        ("api key", api_key.clone()),
        ("token", token.clone()),
        ("password", password.clone()),
    ];

    let model = MockServer::start().await;
    let replies = Arc::new(Model {
        replies: script(&password),
        calls: Mutex::new(Vec::new()),
    });
    struct Shared(Arc<Model>);
    impl Respond for Shared {
        fn respond(&self, r: &Request) -> ResponseTemplate {
            self.0.respond(r)
        }
    }
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Shared(replies.clone()))
        .mount(&model)
        .await;

    let dir = tempfile::tempdir().unwrap();
    // The model server is configured by the operator (the key goes there), and the task
    // picks it by name.
    let server = start(dir.path(), &api_key, &token, &format!("{}/v1", model.uri())).await;
    let (stop_ws, ws) = watch_ws(&server).await;
    let mut responses: Vec<(String, Vec<u8>)> = Vec::new();

    let agent = json!({"kind": "vision", "format": "generic", "server": "lab"});
    let r = server
        .client
        .post(format!("{}/v1/tasks", server.base))
        .bearer_auth(&token)
        .json(&json!({"instruction": "Fill in the Accounts sign-in form", "agent": agent, "max_steps": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let body = r.bytes().await.unwrap().to_vec();
    let id = serde_json::from_slice::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    responses.push(("POST /v1/tasks".into(), body));

    // SSE: the history, then live until `task.finished` ends the stream.
    let sse = server
        .client
        .get(format!("{}/v1/tasks/{id}/events", server.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    assert!(
        String::from_utf8_lossy(&sse).contains("task.finished"),
        "the event stream ran to the end"
    );
    responses.push(("SSE events".into(), sse));

    let task = server.json(&format!("/v1/tasks/{id}")).await;
    assert_eq!(task["status"], "succeeded", "{task}");

    // The canaries were live: the model got the key; the phone holds the typed password,
    // shown as one dot per character; the recorded type action is masked.
    let auth: Vec<String> = replies
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| r.headers.get("authorization"))
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(
        !auth.is_empty() && auth.iter().all(|a| *a == format!("Bearer {api_key}")),
        "every model call carried the canary key"
    );
    // An MCP client types the password too (the MCP library logs requests whole at debug).
    responses.push((
        "/mcp type".into(),
        mcp_type_password(&server, &password).await,
    ));
    let (_, hierarchy) = server.get("/v1/devices/sim-1/hierarchy").await;
    let xml = String::from_utf8_lossy(&hierarchy).into_owned();
    let field = xml
        .split("<node ")
        .find(|n| n.contains("password=\"true\""))
        .unwrap_or_else(|| panic!("no password field on the phone's screen: {xml}"));
    assert!(
        field.contains("text=\"••••\""),
        "the password field is masked: {field}"
    );
    let steps = server.json(&format!("/v1/tasks/{id}/steps")).await;
    let typed: Vec<&Value> = steps
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"]["selector"] == "#password")
        .collect();
    assert_eq!(typed.len(), 1, "{steps}");
    assert_eq!(typed[0]["action"]["text"], "••••");
    let missed: Vec<&Value> = steps
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["action"]["selector"] == "#passwd")
        .collect();
    assert_eq!(missed.len(), 1, "{steps}");
    assert_eq!(missed[0]["action"]["text"], "••••", "{steps}");
    assert_eq!(
        typed[0]["outcome"]["status"], "ok",
        "the password was typed"
    );

    responses.push(("hierarchy".into(), hierarchy));
    for p in [
        format!("/v1/tasks/{id}"),
        "/v1/tasks".to_string(),
        format!("/v1/tasks/{id}/steps"),
        format!("/v1/tasks/{id}/trajectory"),
        format!("/v1/tasks/{id}/result"),
        format!("/v1/tasks/{id}/interventions"),
        format!("/v1/tasks/{id}/steps/4/screenshot"),
        "/v1/devices".to_string(),
        "/v1/devices/sim-1/screen".to_string(),
        "/v1/devices/sim-1/screenshot".to_string(),
        "/v1/presets".to_string(),
        "/metrics".to_string(),
    ] {
        let (status, body) = server.get(&p).await;
        assert_eq!(status, 200, "GET {p}");
        responses.push((format!("GET {p}"), body));
    }
    let (status, export) = server.get(&format!("/v1/tasks/{id}/export")).await;
    assert_eq!(status, 200);
    let entries = untar(&export);
    assert!(entries.iter().any(|(n, _)| n.ends_with("trajectory.json")));
    for (name, data) in entries {
        responses.push((format!("export {name}"), data));
    }
    responses.push(("export .tar.gz".into(), export));
    stop_ws.send(()).unwrap();
    let ws = ws.await.unwrap();
    assert!(
        String::from_utf8_lossy(&ws).contains("task.finished"),
        "the WebSocket saw the run"
    );
    responses.push(("/v1/ws stream".into(), ws));

    // The search sees typed text where nothing masks it: the e-mail, typed the same way
    // into the field above, is found in the API's answers, the database and the export.
    let control = [("e-mail (not a secret)", "alex@example.com".to_string())];
    for place in ["GET /v1/tasks/{id}/steps", "trajectory.json", "SSE events"] {
        let place = place.replace("{id}", &id);
        let (_, body) = responses.iter().find(|(p, _)| p.ends_with(&place)).unwrap();
        assert!(!leaks(&place, body, &control).is_empty(), "{place}");
    }
    let mut found = Vec::new();
    for (place, body) in &responses {
        found.extend(leaks(place, body, &canaries));
    }
    let data = dir.path().join("data");
    let scan_data = |found: &mut Vec<String>, when: &str| {
        for f in files(&data) {
            let bytes = std::fs::read(&f).unwrap();
            found.extend(leaks(
                &format!("{} ({when})", f.display()),
                &bytes,
                &canaries,
            ));
        }
    };
    scan_data(&mut found, "running");
    let wal_seen = files(&data)
        .iter()
        .any(|f| f.to_string_lossy().ends_with("-wal"));

    // A graceful stop checkpoints the WAL into the database file: scan again after it.
    let pid = server.proc.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut proc = server.proc;
    for _ in 0..200 {
        if proc.0.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        proc.0.try_wait().unwrap().is_some(),
        "the server stopped on SIGTERM"
    );
    scan_data(&mut found, "stopped");
    let db = std::fs::read(data.join("droidpilot.db")).unwrap();
    assert!(
        !leaks("db", &db, &control).is_empty(),
        "the e-mail is in the database file"
    );
    let mut log_bytes = 0;
    for log in ["stdout.log", "stderr.log"] {
        let bytes = std::fs::read(dir.path().join(log)).unwrap();
        log_bytes += bytes.len();
        found.extend(leaks(log, &bytes, &canaries));
    }
    assert!(
        log_bytes > 10_000,
        "the trace log was captured ({log_bytes} bytes)"
    );

    let scanned: usize = responses.iter().map(|(_, b)| b.len()).sum();
    eprintln!(
        "secrets audit: {} canary leaks; scanned {} API responses ({scanned} bytes), \
         {log_bytes} bytes of trace logs, the data directory running (WAL present: {wal_seen}) and stopped",
        found.len(),
        responses.len()
    );
    assert!(found.is_empty(), "canary leaks:\n{}", found.join("\n"));
}

impl Server {
    async fn post(&self, path: &str, body: &Value) -> (u16, Vec<u8>) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
    }

    /// POSTs and expects 201; the body, and its `id`.
    async fn created(&self, path: &str, body: &Value) -> (Vec<u8>, String) {
        let (status, bytes) = self.post(path, body).await;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        assert_eq!(status, 201, "POST {path}: {text}");
        let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        (bytes, id)
    }

    /// The task's event stream from the start until `task.finished` ends it.
    async fn events_to_end(&self, id: &str) -> Vec<u8> {
        let (status, sse) = self.get(&format!("/v1/tasks/{id}/events")).await;
        assert_eq!(status, 200);
        assert!(String::from_utf8_lossy(&sse).contains("task.finished"));
        sse
    }

    /// Polls the task until `done` holds for it.
    async fn task_until(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..400 {
            let t = self.json(&format!("/v1/tasks/{id}")).await;
            if done(&t) {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "task {id} never got there: {}",
            self.json(&format!("/v1/tasks/{id}")).await
        );
    }

    /// Every read of a task a client can make, the export's entries decompressed.
    async fn task_reads(&self, id: &str) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for p in ["", "/steps", "/trajectory", "/result", "/interventions"] {
            let path = format!("/v1/tasks/{id}{p}");
            let (status, body) = self.get(&path).await;
            assert_eq!(status, 200, "GET {path}");
            out.push((format!("GET {path}"), body));
        }
        let (status, export) = self.get(&format!("/v1/tasks/{id}/export")).await;
        assert_eq!(status, 200);
        for (name, data) in untar(&export) {
            out.push((format!("export of {id}: {name}"), data));
        }
        out.push((format!("export of {id}"), export));
        out
    }
}

/// Sends SIGTERM and waits for the process to end.
async fn stop(server: Server) {
    let mut proc = server.proc;
    let pid = proc.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    for _ in 0..200 {
        if proc.0.try_wait().unwrap().is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not stop on SIGTERM");
}

/// Open Settings > Accounts; then `more`.
fn accounts_then(more: Vec<Value>) -> Vec<Value> {
    let mut a = vec![
        json!({"action": "launch_app", "package": "com.android.settings"}),
        json!({"action": "tap", "selector": ":text(\"Accounts\")"}),
    ];
    a.extend(more);
    a
}

/// Secrets given to a task: a replay's `type` marked `"secret": true`, and a script's
/// input marked `{"secret": true}` given a value at run time. Both are typed into the
/// virtual phone's password field, then looked for (raw and encoded) in every read of
/// the tasks (task, list, steps, trajectory, result, export), the scripts (the one
/// recorded from the replay, whose password becomes a secret input, and the uploaded
/// one, as JSON and as a Maestro flow), the SSE and WebSocket streams, the data
/// directory (running and stopped) and the trace logs of both processes. A third task
/// holds a secret when the server is killed: after the restart it fails naming the
/// secret it no longer has, instead of typing the mask.
#[tokio::test]
async fn replay_and_script_secrets_are_held_in_memory_only() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let token = canary("tok-canary-");
    let typed = format!("pw Replay/{}+x", &canary("")[..12]);
    let input = format!("pw Input/{}+y", &canary("")[..12]);
    let lost = format!("pw Lost/{}+z", &canary("")[..12]);
    let canaries = [
        ("replay secret", typed.clone()),
        ("script input", input.clone()),
        ("secret of the restarted task", lost.clone()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "sk-unused", &token, "http://127.0.0.1:9/v1").await;
    let (stop_ws, ws) = watch_ws(&server).await;
    let mut responses: Vec<(String, Vec<u8>)> = Vec::new();

    // A replay whose password is marked secret; the e-mail is not.
    let actions = accounts_then(vec![
        json!({"action": "type", "selector": "#email", "text": "alex@example.com"}),
        json!({"action": "type", "selector": "#password", "text": typed, "secret": true}),
    ]);
    let agent = json!({"kind": "replay", "actions": actions});
    let task = json!({"instruction": "Sign in", "device_id": "sim-1", "agent": agent});
    let (body, replay) = server.created("/v1/tasks", &task).await;
    responses.push(("POST /v1/tasks".into(), body));
    responses.push(("SSE replay".into(), server.events_to_end(&replay).await));
    let t = server.json(&format!("/v1/tasks/{replay}")).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["agent"]["actions"][3]["secret"], true, "{t}");
    let steps = server.json(&format!("/v1/tasks/{replay}/steps")).await;
    let pw = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["action"]["selector"] == "#password");
    let pw = pw.unwrap_or_else(|| panic!("{steps}"));
    assert_eq!(pw["outcome"]["status"], "ok", "the secret was typed: {pw}");
    responses.extend(server.task_reads(&replay).await);

    // Recorded, the typed password becomes a secret input.
    let (body, recorded) = server
        .created("/v1/scripts", &json!({"from_task": replay}))
        .await;
    let rec: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(rec["inputs"]["password"], json!({"secret": true}), "{rec}");
    responses.push(("POST /v1/scripts from_task".into(), body));

    // An uploaded script with a secret input, run with a value.
    let script = json!({"name": "sign in", "goal": "Sign in", "inputs": {"pw": {"secret": true}},
        "steps": [
            {"action": "launch_app", "parameters": {"package": "com.android.settings"}},
            {"action": "tap", "selector": ":text(\"Accounts\")"},
            {"action": "tap", "selector": "#password"},
            {"action": "type", "parameters": {"text": "${pw}"}},
            // Into a plain field too: the next screen shows it, and is stored masked.
            // (Cleared after: what the phone shows, the next task reads.)
            {"action": "tap", "selector": "#email"},
            {"action": "type", "parameters": {"text": "${pw}"}},
            {"action": "clear"}]});
    let (body, uploaded) = server.created("/v1/scripts", &script).await;
    responses.push(("POST /v1/scripts".into(), body));
    let run = json!({"device_id": "sim-1", "inputs": {"pw": input}});
    let (body, scripted) = server
        .created(&format!("/v1/scripts/{uploaded}/run"), &run)
        .await;
    responses.push(("POST /v1/scripts/{id}/run".into(), body));
    responses.push(("SSE script".into(), server.events_to_end(&scripted).await));
    let t = server.json(&format!("/v1/tasks/{scripted}")).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let steps = server.json(&format!("/v1/tasks/{scripted}/steps")).await;
    let pw = steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["action"]["action"] == "type");
    let pw = pw.unwrap_or_else(|| panic!("{steps}"));
    assert_eq!(pw["outcome"]["status"], "ok", "the input was typed: {pw}");
    assert_eq!(pw["action"]["text"], "••••", "{pw}");

    responses.extend(server.task_reads(&scripted).await);
    // (The recorded script's `EditText:text(…)` expect has no Maestro form.)
    for (s, q) in [
        (&recorded, ""),
        (&uploaded, ""),
        (&uploaded, "?format=maestro"),
    ] {
        {
            let path = format!("/v1/scripts/{s}/export{q}");
            let (status, body) = server.get(&path).await;
            assert_eq!(
                status,
                200,
                "GET {path}: {}",
                String::from_utf8_lossy(&body)
            );
            responses.push((format!("GET {path}"), body));
        }
    }

    // A task holding a secret, waiting for an answer when the server is killed.
    let actions = accounts_then(vec![
        json!({"action": "ask_user", "question": "Go on?"}),
        json!({"action": "type", "selector": "#password", "text": lost, "secret": true}),
    ]);
    let task = json!({"instruction": "Sign in later", "device_id": "sim-1",
        "agent": {"kind": "replay", "actions": actions}});
    let (body, waiting) = server.created("/v1/tasks", &task).await;
    responses.push(("POST /v1/tasks (restarted)".into(), body));
    server
        .task_until(&waiting, |t| t["status"] == "waiting_for_user")
        .await;
    responses.push(("GET /v1/tasks".into(), server.get("/v1/tasks").await.1));
    stop_ws.send(()).unwrap();
    responses.push(("/v1/ws stream".into(), ws.await.unwrap()));

    let data = dir.path().join("data");
    let mut found = Vec::new();
    let scan_data = |found: &mut Vec<String>, when: &str| {
        for f in files(&data) {
            let bytes = std::fs::read(&f).unwrap();
            found.extend(leaks(
                &format!("{} ({when})", f.display()),
                &bytes,
                &canaries,
            ));
        }
    };
    scan_data(&mut found, "running");
    let mut proc = server.proc;
    proc.0.kill().unwrap();
    proc.0.wait().unwrap();
    let mut logs = Vec::new();
    for log in ["stdout.log", "stderr.log"] {
        logs.push((
            format!("{log} (first run)"),
            std::fs::read(dir.path().join(log)).unwrap(),
        ));
    }

    // The restart requeues it; its secret is gone, so it fails saying so.
    let server = start(dir.path(), "sk-unused", &token, "http://127.0.0.1:9/v1").await;
    let t = server
        .task_until(&waiting, |t| t["status"] == "failed")
        .await;
    let reason = t["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("actions[3].text") && reason.contains("secret") && reason.contains("again"),
        "the reason names the lost secret and what to do: {t}"
    );
    let steps = server.json(&format!("/v1/tasks/{waiting}/steps")).await;
    assert!(
        steps
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["action"]["action"] != "type"),
        "nothing was typed after the restart: {steps}"
    );
    responses.extend(server.task_reads(&waiting).await);
    stop(server).await;
    scan_data(&mut found, "stopped");
    for log in ["stdout.log", "stderr.log"] {
        logs.push((
            format!("{log} (restart)"),
            std::fs::read(dir.path().join(log)).unwrap(),
        ));
    }

    // The search sees the e-mail, typed beside the secret with nothing masking it.
    let control = [("e-mail (not a secret)", "alex@example.com".to_string())];
    let steps_of = format!("GET /v1/tasks/{replay}/steps");
    let (_, steps) = responses.iter().find(|(p, _)| *p == steps_of).unwrap();
    assert!(!leaks(&steps_of, steps, &control).is_empty());
    let db = std::fs::read(data.join("droidpilot.db")).unwrap();
    assert!(
        !leaks("db", &db, &control).is_empty(),
        "the e-mail is in the database file"
    );
    for (place, body) in responses.iter().chain(&logs) {
        found.extend(leaks(place, body, &canaries));
    }
    assert!(found.is_empty(), "canary leaks:\n{}", found.join("\n"));
}

/// The pixels: the virtual phone draws a password field's text as dots, so two passwords
/// of one length give the same screenshot (and a longer one a different one: the field is
/// drawn, dot by dot). Coordinates are the sim's own reference solution's (1080×2400).
#[tokio::test]
async fn a_screenshot_of_a_password_field_shows_dots_not_the_password() {
    use droidpilot::device::Device;
    use droidpilot::device::sim::state::field;
    use droidpilot::device::sim::{SimConfig, SimDevice};
    use droidpilot::domain::{AppRef, PixelPoint};

    async fn typed(password: &str) -> Vec<u8> {
        let sim = SimDevice::new(SimConfig::default()).unwrap();
        sim.launch_app(&AppRef::Package("com.android.settings".into()))
            .await
            .unwrap();
        sim.tap(PixelPoint { x: 540, y: 1997 }).await.unwrap(); // Accounts
        sim.tap(PixelPoint { x: 540, y: 787 }).await.unwrap(); // the password field
        sim.type_text(password).await.unwrap();
        assert_eq!(sim.state().field(field::ACCOUNT_PASSWORD), password);
        sim.render_now()
    }
    let a = typed("pw Canary/1+x").await;
    assert!(
        a == typed("zq Other!/9-y").await,
        "same length, same pixels"
    );
    assert!(a != typed("pw Canary/1+xy").await, "one more dot is drawn");
}
