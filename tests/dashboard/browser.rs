//! The page in a real browser: `scenarios.cjs` drives the Debian Chromium with
//! Playwright (playwright-core from npm, no bundled browser) through the eleven things a
//! person does with the dashboard, against a real server with `sim-1`. Screenshots of each
//! view go to `target/dashboard-screens/`. Without node, Chromium or playwright-core this
//! skips loudly; with `DROIDPILOT_REQUIRE_BROWSER=1` (CI) it fails instead.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{TOKEN, spawn};

/// The target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
pub(crate) fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .to_path_buf()
}

pub(crate) struct Browser {
    pub node: PathBuf,
    pub chromium: PathBuf,
    pub playwright: PathBuf,
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// What the test needs, or a loud skip (a failure when `DROIDPILOT_REQUIRE_BROWSER=1`).
pub(crate) fn browser() -> Option<Browser> {
    let env_path = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let node = which("node");
    let chromium = env_path("DROIDPILOT_CHROMIUM").or_else(|| which("chromium"));
    let playwright = env_path("DROIDPILOT_PLAYWRIGHT_CORE")
        .or_else(|| Some(target_dir().join("ci-node/node_modules/playwright-core")));
    let missing: Vec<&str> = [
        ("node", node.as_ref().is_some_and(|p| p.is_file())),
        ("chromium", chromium.as_ref().is_some_and(|p| p.is_file())),
        (
            "playwright-core",
            playwright
                .as_ref()
                .is_some_and(|p| p.join("package.json").is_file()),
        ),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(name, _)| name)
    .collect();
    if missing.is_empty() {
        return Some(Browser {
            node: node?,
            chromium: chromium?,
            playwright: playwright?,
        });
    }
    let what = missing.join(", ");
    if std::env::var("DROIDPILOT_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!(
            "DROIDPILOT_REQUIRE_BROWSER=1 but {what} is missing (apt-get install chromium nodejs; \
             npm install playwright-core, then set DROIDPILOT_CHROMIUM and DROIDPILOT_PLAYWRIGHT_CORE)"
        );
    }
    eprintln!("\n########################################################################");
    eprintln!("## SKIPPED: the dashboard's browser test needs {what}.");
    eprintln!("## Set DROIDPILOT_REQUIRE_BROWSER=1 to make this a failure.");
    eprintln!("########################################################################\n");
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_uses_the_dashboard_in_chromium() {
    let Some(b) = browser() else { return };
    let app = spawn().await;
    let healed = seed_healed_script(&app).await;
    run_scenarios(
        &b,
        &app.url("/"),
        "scenarios.cjs",
        &[("DROIDPILOT_HEALED_SCRIPT", &healed)],
        std::time::Duration::from_secs(240),
        "the browser scenarios",
        11,
    )
    .await;
    println!(
        "dashboard screenshots: {}",
        target_dir().join("dashboard-screens").display()
    );
    app.stop().await;
}

/// Runs a scenario file of this folder in Node against the dashboard at `url`, with the
/// test token, the screenshot folder, a fresh browser profile and `env`, within `limit`;
/// asserts that it exited 0 and reported `ok 1` … `ok <scenarios>` (`what` names them in
/// a failure), and returns its output.
pub(crate) async fn run_scenarios(
    b: &Browser,
    url: &str,
    file: &str,
    env: &[(&str, &str)],
    limit: std::time::Duration,
    what: &str,
    scenarios: usize,
) -> String {
    let screens = target_dir().join("dashboard-screens");
    std::fs::create_dir_all(&screens).expect("screens dir");
    let profile = tempfile::tempdir().expect("a fresh browser profile");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/dashboard")
        .join(file);
    let run = tokio::process::Command::new(&b.node)
        .arg(&script)
        .env("DROIDPILOT_URL", url)
        .env("DROIDPILOT_TOKEN", TOKEN)
        .env("DROIDPILOT_CHROMIUM", &b.chromium)
        .env("DROIDPILOT_PLAYWRIGHT_CORE", &b.playwright)
        .env("DROIDPILOT_SCREENS", &screens)
        .env("DROIDPILOT_PROFILE", profile.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {} s", limit.as_secs()))
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for n in 1..=scenarios {
        assert!(
            stdout.contains(&format!("ok {n} ")),
            "scenario {n} did not report ok:\n{stdout}"
        );
    }
    stdout
}

/// A script whose version 2 was healed by a replay (a changed selector), stored as the
/// runner stores one, for the scripts view's diff. Returns its id.
async fn seed_healed_script(app: &crate::common::TestApp) -> String {
    use droidpilot::domain::TaskId;
    use droidpilot::script::{Script, ScriptSource};
    use droidpilot::store::Store as _;
    let doc = |sel: &str| {
        serde_json::json!({"name": "open Bluetooth", "goal": "open the Bluetooth settings", "steps": [
            {"action": "launch_app", "parameters": {"package": "com.android.settings"}},
            {"action": "tap", "selector": sel},
        ]})
    };
    let r = app
        .client
        .post(app.url("/v1/scripts"))
        .bearer_auth(TOKEN)
        .json(&doc("#bt_old_row"))
        .send()
        .await
        .expect("POST /v1/scripts");
    assert_eq!(r.status(), 201);
    let id: serde_json::Value = r.json().await.expect("a script record");
    let id = id["id"].as_str().expect("an id").to_string();
    let store = droidpilot::store::SqliteStore::open(&app.data_dir.join("droidpilot.db"))
        .await
        .expect("the server's database");
    let healed = Script::from_json(&doc(":text(\"Bluetooth\")")).expect("a valid script");
    let source = ScriptSource::Healed {
        task_id: TaskId::new(),
        from_version: 1,
    };
    (store.add_script_version(id.parse().expect("a script id"), &healed, source))
        .await
        .expect("the healed version is stored");
    store.close().await;
    id
}
