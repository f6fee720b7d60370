//! Stored workspaces (`/v1/workspaces`): a Maestro workspace uploaded as JSON or a `.zip`,
//! kept in versions like scripts (read, listed, downloaded as a `.zip`, deleted), a
//! version that does not import refused naming the file and line with nothing stored,
//! and a flow run of a stored workspace's version, recorded on the run.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TestApp, error_of, spawn_app_with};
use crate::run::{add_phone, bare_app};

const PASSES: &str =
    "appId: com.android.settings\ntags: [smoke]\n---\n- launchApp\n- assertVisible: \"Wi-Fi\"\n";
const FAILS: &str = "appId: com.android.settings\ntags: [smoke]\n---\n- launchApp\n- assertVisible: \"Nowhere to be found\"\n";
const CALLS: &str = "appId: com.android.settings\nname: Calls login\ntags: [nightly]\n---\n- runFlow: sub/login.yaml\n";
const LOGIN: &str = "appId: com.android.settings\n---\n- launchApp\n";
const CONFIG: &str =
    "flows:\n  - '*'\nexcludeTags: [wip]\nexecutionOrder:\n  flowsOrder:\n    - Calls login\n";

fn zip_of(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, body) in entries {
        w.start_file(*name, opts).unwrap();
        w.write_all(body.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn unzip(bytes: &[u8]) -> Value {
    let mut a = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut out = serde_json::Map::new();
    for i in 0..a.len() {
        let mut f = a.by_index(i).unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        let name = f.name().unwrap().to_string();
        out.insert(name, Value::String(s));
    }
    Value::Object(out)
}

async fn post_zip(app: &TestApp, path: &str, body: Vec<u8>) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .header("content-type", "application/zip")
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn created(r: reqwest::Response) -> Value {
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

async fn get_json(app: &TestApp, path: &str) -> Value {
    let r = app.get(path).await;
    assert_eq!(r.status(), 200, "{path}: {}", r.text().await.unwrap());
    r.json().await.unwrap()
}

fn paths(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// Version 1 as JSON with what config.yaml selects, version 2 as a zipped folder (the
/// name kept), both kept and read back file for file, the `.zip` download equal to the
/// upload, the list newest first page by page, and a delete that removes every version.
#[tokio::test]
async fn a_workspace_is_kept_in_versions_read_listed_downloaded_and_deleted() {
    let app = spawn_app_with(&[]).await;
    let files = json!({
        "config.yaml": CONFIG,
        "calls.yaml": CALLS,
        "passes.yaml": PASSES,
        "wip.yaml": "appId: a\ntags: [wip]\n---\n- back\n",
        "sub/login.yaml": LOGIN,
    });
    let r = app
        .post_json(
            "/v1/workspaces",
            &json!({"name": " Settings suite ", "files": files}),
        )
        .await;
    let loc = r
        .headers()
        .get("location")
        .map(|l| l.to_str().unwrap().to_string());
    let v1 = created(r).await;
    let id = v1["id"].as_str().unwrap().to_string();
    assert_eq!(loc, Some(format!("/v1/workspaces/{id}/versions/1")));
    assert_eq!(
        (v1["version"].as_u64(), v1["name"].as_str()),
        (Some(1), Some("Settings suite"))
    );
    assert_eq!(v1["source"], json!({"kind": "uploaded"}));
    assert_eq!(
        paths(&v1["config"], "flows"),
        ["calls.yaml", "passes.yaml"],
        "flowsOrder first; wip excluded; sub/ outside the `*` glob"
    );
    assert_eq!(v1["config"]["flows"][0]["name"], "Calls login");
    assert_eq!(v1["config"]["tags"], json!(["nightly", "smoke", "wip"]));
    assert_eq!(v1["config"]["exclude_tags"], json!(["wip"]));
    assert_eq!(v1["config"]["flows_order"], json!(["Calls login"]));
    let listed = &v1["files"].as_array().unwrap();
    assert_eq!(listed.len(), 5);
    let cfg = listed.iter().find(|f| f["path"] == "config.yaml").unwrap();
    assert_eq!(
        (cfg["bytes"].as_u64(), cfg["flow"].as_bool()),
        (Some(CONFIG.len() as u64), Some(false))
    );
    assert_eq!(get_json(&app, &format!("/v1/workspaces/{id}")).await, v1);

    let zipped = zip_of(&[
        (".maestro/passes.yaml", FAILS),
        (".maestro/other.yaml", PASSES),
    ]);
    let v2 = created(post_zip(&app, &format!("/v1/workspaces/{id}/versions"), zipped).await).await;
    assert_eq!(
        (v2["version"].as_u64(), v2["name"].as_str()),
        (Some(2), Some("Settings suite"))
    );
    assert_eq!(
        paths(&v2, "files"),
        ["other.yaml", "passes.yaml"],
        "the zipped folder is the root"
    );
    assert_eq!(
        get_json(&app, &format!("/v1/workspaces/{id}")).await["version"],
        2
    );
    let versions = get_json(&app, &format!("/v1/workspaces/{id}/versions")).await;
    assert_eq!(versions, json!([v1, v2]));

    let one = get_json(&app, &format!("/v1/workspaces/{id}/versions/1")).await;
    assert_eq!(one["contents"], files, "version 1 is kept as uploaded");
    assert_eq!(one["version"], 1);
    let r = app
        .get(&format!("/v1/workspaces/{id}/versions/2/zip"))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/zip");
    let bytes = r.bytes().await.unwrap();
    assert_eq!(
        unzip(&bytes),
        json!({"other.yaml": PASSES, "passes.yaml": FAILS})
    );

    let named = app
        .post_json(
            "/v1/workspaces",
            &json!({"name": "other", "files": {"a.yaml": PASSES}}),
        )
        .await;
    let other = created(named).await;
    let p1 = get_json(&app, "/v1/workspaces?limit=1").await;
    assert_eq!(p1["workspaces"][0]["id"], other["id"], "newest first");
    let cursor = p1["next_cursor"].as_str().unwrap();
    let p2 = get_json(&app, &format!("/v1/workspaces?limit=1&cursor={cursor}")).await;
    assert_eq!(p2["workspaces"], json!([v2]), "the latest version of each");
    assert!(p2["next_cursor"].is_null());

    let r = app
        .client
        .delete(app.url(&format!("/v1/workspaces/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (status, code, _, _) =
        error_of(app.get(&format!("/v1/workspaces/{id}/versions/1")).await).await;
    assert_eq!((status, code.as_str()), (404, "workspace_not_found"));
    let other_id = other["id"].as_str().unwrap();
    let (status, code, _, hint) = error_of(
        app.get(&format!("/v1/workspaces/{other_id}/versions/9"))
            .await,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (404, "workspace_version_not_found")
    );
    assert!(hint.contains("/versions"), "{hint}");
    let (status, _, _, _) = error_of(app.get("/v1/workspaces/not-a-uuid").await).await;
    assert_eq!(status, 400);
}

/// A flow that does not parse (even one no glob selects), a `runFlow` of a missing file,
/// a path leaving the workspace, a bad name or field: refused with the file and line or
/// the field, and nothing stored — neither a new workspace nor a new version.
#[tokio::test]
async fn a_version_that_does_not_import_is_refused_naming_the_file_and_line_and_nothing_is_stored()
{
    let app = spawn_app_with(&[]).await;
    let post = |body: Value| {
        let app = &app;
        async move { error_of(app.post_json("/v1/workspaces", &body).await).await }
    };
    let bad = "appId: a\n---\n- launchApp\n- flyToTheMoon: now\n";
    let (status, code, msg, _) =
        post(json!({"name": "w", "files": {"a.yaml": PASSES, "sub/bad.yaml": bad}})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_workspace"));
    assert!(msg.contains("sub/bad.yaml line 4"), "{msg}");
    let (status, _, msg, _) =
        post(json!({"name": "w", "files": {"a.yaml": "appId: a\n---\n- runFlow: gone.yaml\n"}}))
            .await;
    assert_eq!(status, 422);
    assert!(msg.contains("gone.yaml"), "{msg}");
    let (status, _, msg, _) =
        post(json!({"name": "w", "files": {"config.yaml": "flowz: ['*']\n", "a.yaml": PASSES}}))
            .await;
    assert_eq!(status, 422);
    assert!(msg.contains("config.yaml line 1"), "{msg}");
    for evil in ["../evil.yaml", "/etc/evil.yaml", "a/../../evil.yaml"] {
        let (status, _, msg, _) = post(json!({"name": "w", "files": {evil: PASSES}})).await;
        assert_eq!(status, 422, "{evil}");
        assert!(
            msg.contains("not a path inside the workspace"),
            "{evil}: {msg}"
        );
    }
    let (status, _, msg, _) = error_of(
        post_zip(
            &app,
            "/v1/workspaces?name=w",
            zip_of(&[("../evil.yaml", PASSES)]),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(msg.contains("not a path inside the workspace"), "{msg}");
    let long = format!(" {} ", "n".repeat(199));
    for name in ["  ", long.as_str()] {
        let (status, code, _, _) = post(json!({"name": name, "files": {"a.yaml": PASSES}})).await;
        assert_eq!((status, code.as_str()), (422, "invalid_name"), "{name:?}");
    }
    let (status, _, msg, _) =
        post(json!({"name": "w", "files": {"a.yaml": PASSES}, "flies": 1})).await;
    assert_eq!(status, 422);
    assert!(msg.contains("flies"), "{msg}");
    let (status, code, _, _) = post(json!({"name": "w", "files": {}})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_workspace"));
    let (status, code, _, _) =
        error_of(post_zip(&app, "/v1/workspaces", zip_of(&[("a.yaml", PASSES)])).await).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "invalid_name"),
        "a .zip needs ?name="
    );
    let r = app
        .post_json(
            "/v1/workspaces?name=w",
            &json!({"name": "w", "files": {"a.yaml": PASSES}}),
        )
        .await;
    assert_eq!(error_of(r).await.0, 400);
    assert_eq!(
        get_json(&app, "/v1/workspaces").await["workspaces"],
        json!([]),
        "nothing stored"
    );

    let w = created(
        app.post_json(
            "/v1/workspaces",
            &json!({"name": "w", "files": {"a.yaml": PASSES}}),
        )
        .await,
    )
    .await;
    let id = w["id"].as_str().unwrap();
    let r = app
        .post_json(
            &format!("/v1/workspaces/{id}/versions"),
            &json!({"files": {"a.yaml": bad}}),
        )
        .await;
    let (status, _, msg, _) = error_of(r).await;
    assert_eq!(status, 422);
    assert!(msg.contains("a.yaml line 4"), "{msg}");
    let versions = get_json(&app, &format!("/v1/workspaces/{id}/versions")).await;
    assert_eq!(versions.as_array().unwrap().len(), 1, "no version 2");
    let missing = "0190f0a0-0000-7000-8000-000000000000";
    let r = app
        .post_json(
            &format!("/v1/workspaces/{missing}/versions"),
            &json!({"files": {"a.yaml": PASSES}}),
        )
        .await;
    assert_eq!(error_of(r).await.0, 404);
}

async fn wait_run(app: &TestApp, id: &str) -> Value {
    for _ in 0..1200 {
        let run = get_json(app, &format!("/v1/flow-runs/{id}")).await;
        if run["status"] != "running" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("flow run {id} did not finish");
}

/// A flow run names a stored workspace: the version asked for runs (an older one that
/// passes, the latest that fails), the run records which; `files` beside it, a version
/// without a workspace, an unknown workspace or version are refused before anything runs.
#[tokio::test]
async fn a_flow_run_runs_the_stored_version_asked_for_and_records_it() {
    let app = bare_app(&[]).await;
    add_phone(&app, "p1", None).await;
    let w = created(
        app.post_json(
            "/v1/workspaces",
            &json!({"name": "w", "files": {"check.yaml": PASSES}}),
        )
        .await,
    )
    .await;
    let id = w["id"].as_str().unwrap();
    created(
        app.post_json(
            &format!("/v1/workspaces/{id}/versions"),
            &json!({"files": {"check.yaml": FAILS}}),
        )
        .await,
    )
    .await;

    let old = created(
        app.post_json("/v1/flow-runs", &json!({"workspace": id, "version": 1}))
            .await,
    )
    .await;
    assert_eq!(old["workspace"], json!({"id": id, "version": 1}));
    let latest = created(
        app.post_json("/v1/flow-runs", &json!({"workspace": id}))
            .await,
    )
    .await;
    assert_eq!(latest["workspace"], json!({"id": id, "version": 2}));
    let old = wait_run(&app, old["id"].as_str().unwrap()).await;
    assert_eq!(old["status"], "passed", "{old}");
    assert_eq!(old["workspace"]["version"], 1);
    let latest = wait_run(&app, latest["id"].as_str().unwrap()).await;
    assert_eq!(latest["status"], "failed", "{latest}");
    assert_eq!(latest["workspace"]["version"], 2);

    let post = |body: Value| {
        let app = &app;
        async move { error_of(app.post_json("/v1/flow-runs", &body).await).await }
    };
    let (status, code, msg, _) = post(json!({"workspace": id, "files": {"a.yaml": PASSES}})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_flow_run"), "{msg}");
    let (status, code, _, _) = post(json!({"version": 1, "files": {"a.yaml": PASSES}})).await;
    assert_eq!((status, code.as_str()), (422, "invalid_flow_run"));
    let (status, code, msg, _) = post(json!({"workspace": id, "version": 7})).await;
    assert_eq!((status, code.as_str()), (422, "unknown_workspace"));
    assert!(msg.contains("no version 7"), "{msg}");
    let (status, code, _, _) =
        post(json!({"workspace": "0190f0a0-0000-7000-8000-000000000000"})).await;
    assert_eq!((status, code.as_str()), (422, "unknown_workspace"));
    let (status, _, _, _) = post(json!({"workspace": id, "version": 0})).await;
    assert_eq!(status, 422);
    let runs = get_json(&app, "/v1/flow-runs").await;
    assert_eq!(
        runs["runs"].as_array().unwrap().len(),
        2,
        "only the two good runs"
    );
}

/// An upload over `server.body_limit_bytes` is refused in the error shape, JSON or `.zip`.
#[tokio::test]
async fn an_upload_over_the_body_limit_is_413() {
    let app = spawn_app_with(&[("DROIDPILOT_SERVER__BODY_LIMIT_BYTES", "2048")]).await;
    let big = format!("{PASSES}# {}\n", "x".repeat(4096));
    let r = app
        .post_json(
            "/v1/workspaces",
            &json!({"name": "w", "files": {"a.yaml": big}}),
        )
        .await;
    let (status, code, _, hint) = error_of(r).await;
    assert_eq!((status, code.as_str()), (413, "payload_too_large"));
    assert!(hint.contains("body_limit_bytes"), "{hint}");
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("a.yaml", stored).unwrap();
    w.write_all(big.as_bytes()).unwrap();
    let z = w.finish().unwrap().into_inner();
    let (status, code, _, _) = error_of(post_zip(&app, "/v1/workspaces?name=w", z).await).await;
    assert_eq!((status, code.as_str()), (413, "payload_too_large"));
}
