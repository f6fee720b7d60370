//! Tasks, probes, auth and errors over real HTTP.

use crate::common::{self, error_of, spawn_app, spawn_app_on, spawn_app_with};
use serde_json::{Value, json};

#[tokio::test]
async fn healthz_and_readyz_answer() {
    let app = spawn_app().await;
    let r = app.get("/healthz").await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let v: Value = app.get("/readyz").await.json().await.unwrap();
    assert_eq!(v["status"], "ready");
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let app = spawn_app().await;
    let r = app.get("/healthz").await;
    assert!(r.headers().get("x-request-id").is_some());
    let r = app
        .client
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["x-request-id"],
        "trace-me-42",
        "a caller's request id is kept"
    );
}

#[tokio::test]
async fn metrics_count_requests_by_route() {
    let app = spawn_app().await;
    app.post_json("/v1/tasks", &json!({"instruction": "count me"}))
        .await;
    let text = app.get("/metrics").await.text().await.unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("droidpilot_http_requests_total")
                && l.contains("route=\"/v1/tasks\"")
                && l.contains("status=\"201\"")),
        "metrics:\n{text}"
    );
}

#[tokio::test]
async fn create_get_and_list_a_task() {
    let app = spawn_app().await;
    let r = app.post_json("/v1/tasks", &json!({"instruction": "open Clock and set an alarm for 7:30", "priority": 5, "metadata": {"ticket": 7}})).await;
    assert_eq!(r.status(), 201);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    let task: Value = r.json().await.unwrap();
    assert_eq!(task["status"], "queued");
    assert_eq!(task["priority"], 5);
    assert_eq!(task["max_steps"], 50);
    assert_eq!(task["metadata"], json!({"ticket": 7}));
    let id = task["id"].as_str().unwrap();
    assert_eq!(location, format!("/v1/tasks/{id}"));

    let got: Value = app.get(&location).await.json().await.unwrap();
    assert_eq!(got, task);
    let page: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(page["tasks"][0]["id"], id);
    assert!(page["next_cursor"].is_null());
}

#[tokio::test]
async fn coordinator_fields_are_accepted() {
    // The shipped defaults: `sim-1` exists.
    let app = common::spawn_app_with_toml("", &[]).await;
    let body = json!({"task_id": "coord-17", "ai_prompt": "Turn on Bluetooth", "device_id": "sim-1", "session_id": "s-9", "max_steps": 12, "timeout_seconds": 90});
    let r = app.post_json("/v1/tasks", &body).await;
    assert_eq!(r.status(), 201);
    let t: Value = r.json().await.unwrap();
    assert_eq!(
        (
            t["instruction"].as_str(),
            t["external_id"].as_str(),
            t["device_id"].as_str()
        ),
        (Some("Turn on Bluetooth"), Some("coord-17"), Some("sim-1"))
    );
    assert_eq!(
        (t["max_steps"].as_u64(), t["timeout_seconds"].as_u64()),
        (Some(12), Some(90))
    );
}

#[tokio::test]
async fn pagination_walks_every_task_once_newest_first() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for i in 0..7 {
        let t: Value = app
            .post_json("/v1/tasks", &json!({"instruction": format!("task {i}")}))
            .await
            .json()
            .await
            .unwrap();
        created.push(t["id"].as_str().unwrap().to_string());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/tasks?limit=3&cursor={c}"),
            None => "/v1/tasks?limit=3".to_string(),
        };
        let page: Value = app.get(&path).await.json().await.unwrap();
        pages += 1;
        seen.extend(
            page["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_string()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    created.reverse();
    assert_eq!(seen, created, "newest first, each once");
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn list_filters_by_status() {
    let app = spawn_app().await;
    let a: Value = app
        .post_json("/v1/tasks", &json!({"instruction": "a"}))
        .await
        .json()
        .await
        .unwrap();
    app.post_json("/v1/tasks", &json!({"instruction": "b"}))
        .await;
    app.client
        .post(app.url(&format!("/v1/tasks/{}/cancel", a["id"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    let page: Value = app
        .get("/v1/tasks?status=cancelled")
        .await
        .json()
        .await
        .unwrap();
    let tasks = page["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["id"], a["id"]);
    let page: Value = app
        .get("/v1/tasks?status=queued")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn cancel_queued_then_cancel_again_conflicts() {
    let app = spawn_app().await;
    let t: Value = app
        .post_json("/v1/tasks", &json!({"instruction": "a"}))
        .await
        .json()
        .await
        .unwrap();
    let (status, code, _, _) = error_of(
        app.get(&format!("/v1/tasks/{}/result", t["id"].as_str().unwrap()))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "task_not_finished"));
    let path = format!("/v1/tasks/{}/cancel", t["id"].as_str().unwrap());
    let r = app.client.post(app.url(&path)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["outcome"], "cancelled");
    assert_eq!(v["task"]["status"], "cancelled");
    assert!(v["task"]["finished_at"].is_string());
    let (status, code, message, _) =
        error_of(app.client.post(app.url(&path)).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (409, "task_finished"));
    let r: Value = app
        .get(&format!("/v1/tasks/{}/result", t["id"].as_str().unwrap()))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        r["status"], "error",
        "a cancelled task reports `error` to a coordinator"
    );
    assert!(message.contains("cancelled"), "{message}");
}

#[tokio::test]
async fn request_errors_have_the_one_shape() {
    let app = spawn_app().await;
    let post_raw = |body: &'static str, ct: Option<&'static str>| {
        let mut rb = app.client.post(app.url("/v1/tasks")).body(body);
        if let Some(ct) = ct {
            rb = rb.header("content-type", ct);
        }
        rb.send()
    };
    let json_ct = Some("application/json");
    // (response, status, code, a fragment the message must contain)
    let cases = vec![
        (
            post_raw("{\"instruction\": ", json_ct).await.unwrap(),
            400,
            "invalid_json",
            "line 1 column",
        ),
        (
            post_raw("{\"instruction\": 5}", json_ct).await.unwrap(),
            422,
            "invalid_request",
            "instruction",
        ),
        (
            post_raw("{\"instruction\": \"a\", \"max_step\": 3}", json_ct)
                .await
                .unwrap(),
            422,
            "invalid_request",
            "unknown field `max_step`",
        ),
        (
            post_raw("{\"instruction\": \"a\", \"priority\": \"high\"}", json_ct)
                .await
                .unwrap(),
            422,
            "invalid_request",
            "priority",
        ),
        (
            post_raw("{}", json_ct).await.unwrap(),
            422,
            "invalid_task",
            "`instruction` is required",
        ),
        (
            post_raw("{\"instruction\": \"a\", \"max_steps\": 0}", json_ct)
                .await
                .unwrap(),
            422,
            "invalid_task",
            "max_steps",
        ),
        (
            post_raw("[]", json_ct).await.unwrap(),
            422,
            "invalid_request",
            "",
        ),
        (
            post_raw("{\"instruction\": \"a\"}", None).await.unwrap(),
            415,
            "unsupported_media_type",
            "Content-Type",
        ),
        (
            post_raw("{\"instruction\": \"a\"}", Some("text/plain"))
                .await
                .unwrap(),
            415,
            "unsupported_media_type",
            "",
        ),
        (app.get("/v1/nope").await, 404, "not_found", ""),
        (app.get("/nope").await, 404, "not_found", ""),
        (
            app.get("/assets/nope.js").await,
            404,
            "not_found",
            "nope.js",
        ),
        (
            app.client
                .delete(app.url("/v1/tasks"))
                .send()
                .await
                .unwrap(),
            405,
            "method_not_allowed",
            "",
        ),
        (
            app.get("/v1/tasks/not-a-uuid").await,
            400,
            "invalid_path",
            "id",
        ),
        (
            app.get("/v1/tasks/01a1ffb2-747e-7756-9ab6-b6911e673bb6")
                .await,
            404,
            "task_not_found",
            "01a1ffb2",
        ),
        (
            app.client
                .post(app.url("/v1/tasks/01a1ffb2-747e-7756-9ab6-b6911e673bb6/cancel"))
                .send()
                .await
                .unwrap(),
            404,
            "task_not_found",
            "",
        ),
        (
            app.get("/v1/tasks?status=done").await,
            400,
            "invalid_query",
            "status",
        ),
        (
            app.get("/v1/tasks?limit=0").await,
            400,
            "invalid_query",
            "limit",
        ),
        (
            app.get("/v1/tasks?limit=many").await,
            400,
            "invalid_query",
            "limit",
        ),
        (
            app.get("/v1/tasks?cursor=bogus").await,
            400,
            "invalid_cursor",
            "cursor",
        ),
        (
            app.get("/v1/tasks?colour=red").await,
            400,
            "invalid_query",
            "colour",
        ),
    ];
    for (resp, want_status, want_code, fragment) in cases {
        let url = resp.url().to_string();
        let (status, code, message, _) = error_of(resp).await;
        assert_eq!(
            (status, code.as_str()),
            (want_status, want_code),
            "{url}: {message}"
        );
        assert!(
            message.contains(fragment),
            "{url}: `{message}` should mention `{fragment}`"
        );
    }
}

#[tokio::test]
async fn method_not_allowed_lists_allowed_methods() {
    let app = spawn_app().await;
    let r = app.client.put(app.url("/v1/tasks")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let allow = r
        .headers()
        .get("allow")
        .expect("Allow header kept")
        .to_str()
        .unwrap()
        .to_string();
    assert!(allow.contains("POST") && allow.contains("GET"), "{allow}");
}

#[tokio::test]
async fn oversized_body_is_413_in_the_error_shape() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__BODY_LIMIT_BYTES", "2048")]).await;
    let big = json!({"instruction": "x".repeat(4096)});
    let (status, code, _, hint) = error_of(app.post_json("/v1/tasks", &big).await).await;
    assert_eq!((status, code.as_str()), (413, "payload_too_large"));
    assert!(hint.contains("body_limit_bytes"));
    // Without Content-Length (chunked), the limit still holds.
    let stream = futures::stream::iter(
        (0..8).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1024]))),
    );
    let r = app
        .client
        .post(app.url("/v1/tasks"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    let (status, code, _, _) = error_of(r).await;
    assert_eq!((status, code.as_str()), (413, "payload_too_large"));
}

#[tokio::test]
async fn tokens_guard_everything_but_probes() {
    let token = "test-token-0123456789";
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__TOKENS", token)]).await;
    assert_eq!(
        app.get("/healthz").await.status(),
        200,
        "probes need no token"
    );
    assert_eq!(app.get("/readyz").await.status(), 200);

    let r = app.get("/v1/tasks").await;
    assert_eq!(
        r.headers()["www-authenticate"],
        "Bearer realm=\"droidpilot\""
    );
    let (status, code, message, _) = error_of(r).await;
    assert_eq!(
        (status, code.as_str(), message.as_str()),
        (401, "unauthorized", "authentication required")
    );

    let r = app
        .client
        .get(app.url("/v1/tasks"))
        .bearer_auth("wrong-token-123")
        .send()
        .await
        .unwrap();
    let (status, _, message, _) = error_of(r).await;
    assert_eq!(
        (status, message.as_str()),
        (401, "the bearer token is not valid")
    );

    let r = app
        .client
        .get(app.url("/v1/tasks"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = app
        .client
        .post(app.url("/v1/tasks"))
        .bearer_auth(token)
        .json(&json!({"instruction": "a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(
        app.get("/metrics").await.status(),
        401,
        "metrics need the token too"
    );
}

#[tokio::test]
async fn refuses_public_bind_without_token() {
    use droidpilot::server::{ServeOptions, Server, StartError};
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(dir.path(), &[]);
    cfg.server.bind = "0.0.0.0:0".parse().unwrap();
    let err = Server::build(cfg.clone(), ServeOptions::default())
        .await
        .err()
        .expect("refused");
    assert!(matches!(err, StartError::NoAuthOnPublicAddress { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("server.tokens") && msg.contains("--insecure-no-auth"),
        "{msg}"
    );
    // The override works, and tokens also work.
    assert!(
        Server::build(
            cfg.clone(),
            ServeOptions {
                insecure_no_auth: true
            }
        )
        .await
        .is_ok()
    );
    cfg.server.tokens = vec!["a-long-enough-token".into()];
    assert!(Server::build(cfg, ServeOptions::default()).await.is_ok());
}

#[tokio::test]
async fn tasks_survive_a_restart() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let t: Value = app
            .post_json(
                "/v1/tasks",
                &json!({"instruction": format!("survive {i}"), "priority": i}),
            )
            .await
            .json()
            .await
            .unwrap();
        ids.push(t["id"].as_str().unwrap().to_string());
    }
    let (dir, tmp) = app.stop().await;
    assert!(dir.join("droidpilot.db").exists());

    let app = spawn_app_on(&dir, &[]).await;
    for id in &ids {
        let t: Value = app
            .get(&format!("/v1/tasks/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(t["status"], "queued", "{t}");
    }
    let page: Value = app.get("/v1/tasks").await.json().await.unwrap();
    assert_eq!(page["tasks"].as_array().unwrap().len(), 3);
    app.stop().await;
    drop(tmp);
}

#[tokio::test]
async fn swagger_ui_and_spec_are_served_offline() {
    let app = spawn_app().await;
    let r = app.get("/docs/").await;
    assert_eq!(r.status(), 200);
    let html = r.text().await.unwrap();
    assert!(html.contains("swagger"), "Swagger UI page");
    let spec: Value = app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(spec["openapi"], "3.1.0");
    assert!(spec["paths"]["/v1/tasks"]["post"].is_object());
}

/// The committed `openapi/openapi.json` must match what the code generates.
#[test]
fn committed_openapi_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    let generated = droidpilot::server::openapi_json();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi/openapi.json is out of date with the code.\nRegenerate it with:\n    cargo run -- openapi > openapi/openapi.json\n(or UPDATE_OPENAPI=1 cargo test --test api committed_openapi_matches_the_code)"
    );
}

/// The binary itself: version, help and the refusal to serve unauthenticated on a public address.
#[test]
fn binary_commands() {
    let bin = env!("CARGO_BIN_EXE_droidpilot");
    let out = std::process::Command::new(bin)
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("droidpilot {}", env!("CARGO_PKG_VERSION"))
    );
    let out = std::process::Command::new(bin)
        .arg("openapi")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        droidpilot::server::openapi_json()
    );
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(bin)
        .args(["serve", "--bind", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .current_dir(dir.path())
        .env_remove("DROIDPILOT_SERVER__TOKENS")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without authentication"),
        "{err}"
    );
}

/// `droidpilot run` end to end: one task in the terminal on the virtual phone, then the
/// summary and the trajectory on disk.
#[test]
fn the_run_command_runs_one_task_and_saves_its_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/local.toml"),
        "[devices.adb]\nenabled = false\n[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n[runner]\nsettle_timeout_ms = 200\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .args([
            "run",
            "open settings then go home",
            "--agent",
            "replay",
            "--out",
            "traj",
        ])
        .args([
            "--actions",
            r#"[{"action": "launch_app", "label": "Settings"}, {"action": "home"}]"#,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("on sim-1 with replay"), "{stdout}");
    assert!(stdout.contains("succeeded after 3 steps"), "{stdout}");
    let traj: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("traj/trajectory.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(traj["steps"].as_array().unwrap().len(), 3);
    assert!(dir.path().join("traj/screenshots/0001.png").exists());

    // A task that cannot succeed exits non-zero with the reason.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .args([
            "run",
            "give up",
            "--agent",
            "replay",
            "--actions",
            r#"[{"action": "finish", "success": false, "reason": "impossible"}]"#,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("failed after 1 steps"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A saved trajectory resumes: the new task starts after the saved steps.
#[test]
fn the_run_command_resumes_a_saved_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/local.toml"),
        "[devices.adb]\nenabled = false\n[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n[runner]\nsettle_timeout_ms = 200\n",
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_droidpilot");
    // Cut short at max_steps: incomplete, with two committed steps.
    let out = std::process::Command::new(bin)
        .args(["run", "open settings, then clock", "--agent", "replay", "--max-steps", "2", "--out", "first"])
        .args(["--actions", r#"[{"action": "launch_app", "label": "Settings"}, {"action": "home"}, {"action": "launch_app", "label": "Clock"}]"#])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("incomplete after 2 steps"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = std::process::Command::new(bin)
        .args([
            "run", "--resume", "first", "--agent", "replay", "--out", "second",
        ])
        .args([
            "--actions",
            r#"[{"action": "launch_app", "label": "Clock"}]"#,
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("resuming after 2 saved steps"), "{stdout}");
    assert!(
        stdout.contains("succeeded after 4 steps"),
        "saved steps 1-2, then clock and finish: {stdout}"
    );
    let traj: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("second/trajectory.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        traj["task"]["instruction"], "open settings, then clock",
        "the instruction comes from the saved run"
    );
}
