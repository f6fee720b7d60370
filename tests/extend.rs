//! Extension without Rust on the runner and the virtual phone: custom actions from the
//! `[actions]` table run as one step of primitives with their secrets masked, HTTP hooks
//! (wiremock standing in for the operator's hook server) continue, skip, rewrite and
//! time out, and the coordinate transform moves every touch, `scroll_to_find`'s included.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use droidpilot::agent::replay::ReplayAgent;
use droidpilot::device::Device;
use droidpilot::device::sim::apps::settings::{ACCOUNT_EMAIL, ACCOUNT_PASSWORD};
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::domain::action::CustomAction;
use droidpilot::domain::{
    Action, AffineTransform, AppRef, Key, NewTask, PixelPoint, Step, StepStatus, Task, TaskSpec,
};
use droidpilot::run::artifacts::ArtifactStore;
use droidpilot::run::events::EventBus;
use droidpilot::run::extend::{ActionsConfig, LiveActions};
use droidpilot::run::hooks::CustomActionHook;
use droidpilot::run::interaction::Prompts;
use droidpilot::run::runner::{Runner, RunnerConfig};
use droidpilot::run::stop::StopSignal;
use droidpilot::store::{SqliteStore, Store};
use serde_json::{Value, json};
use tokio::sync::watch;
use wiremock::matchers::{body_partial_json, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Env {
    runner: Runner,
    store: Arc<dyn Store>,
    dir: tempfile::TempDir,
}

async fn env(actions: Value) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("db.sqlite"))
            .await
            .unwrap(),
    );
    let cfg = RunnerConfig {
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        ..Default::default()
    };
    let mut runner = Runner::new(
        EventBus::new(store.clone(), 1024),
        Arc::new(Prompts::default()),
        ArtifactStore::new(dir.path(), store.clone()),
        cfg,
    );
    let actions: ActionsConfig = serde_json::from_value(actions).expect("a valid [actions]");
    runner.actions = Arc::new(LiveActions::new(actions));
    Env { runner, store, dir }
}

async fn start(store: &Arc<dyn Store>) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("extend".into()),
        max_steps: Some(10),
        ..Default::default()
    })
    .unwrap();
    let t = store.create_task(spec).await.unwrap();
    assert!(store.start_task(t.id, "sim-1").await.unwrap());
    store.get_task(t.id).await.unwrap()
}

fn phone() -> Arc<SimDevice> {
    phone_of(540, 1200)
}

fn phone_of(width: u32, height: u32) -> Arc<SimDevice> {
    Arc::new(
        SimDevice::new(SimConfig {
            width,
            height,
            ..SimConfig::default()
        })
        .unwrap(),
    )
}

fn no_stop() -> watch::Receiver<StopSignal> {
    let (tx, rx) = watch::channel(StopSignal::None);
    std::mem::forget(tx);
    rx
}

fn finish() -> Action {
    Action::Finish {
        success: true,
        reason: None,
        answer: None,
    }
}

fn custom(name: &str, args: Value) -> Action {
    let Value::Object(args) = args else { panic!() };
    Action::Custom(CustomAction {
        name: name.into(),
        args,
    })
}

/// Runs `actions` then a finish; returns the stored steps and every event as JSON text.
async fn run(e: &Env, device: Arc<dyn Device>, actions: Vec<Action>) -> (Vec<Step>, String) {
    let task = start(&e.store).await;
    let mut all = actions;
    all.push(finish());
    let agent = ReplayAgent::new(all);
    let done = e
        .runner
        .run(task, device, Box::new(agent), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 1000)
        .await
        .unwrap();
    (steps, serde_json::to_string(&events).unwrap())
}

fn sign_in() -> Value {
    json!({"custom": [{
        "name": "sign_in",
        "description": "Sign in to the phone's account.",
        "params": ["email", {"name": "password", "secret": true}],
        "steps": [
            {"action": "launch_app", "package": "com.android.settings"},
            {"action": "tap", "selector": ":text(\"Accounts\")"},
            {"action": "type", "selector": "#email", "text": "${email}"},
            {"action": "type", "selector": "#password", "text": "${password}"},
            {"action": "tap", "selector": "#sign_in"},
        ],
    }]})
}

/// Every byte under `dir` (the SQLite file and its journal, the artifacts).
fn bytes_under(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(bytes_under(&p));
        } else {
            out.extend(std::fs::read(&p).unwrap_or_default());
        }
    }
    out
}

#[tokio::test]
async fn a_custom_action_runs_its_primitives_as_one_step_and_its_secret_is_never_recorded() {
    let e = env(sign_in()).await;
    let sim = phone();
    let args = json!({"email": ACCOUNT_EMAIL, "password": ACCOUNT_PASSWORD});
    let (steps, events) = run(&e, sim.clone(), vec![custom("sign_in", args)]).await;
    assert_eq!(
        sim.state().settings.account.as_deref(),
        Some(ACCOUNT_EMAIL),
        "the password reached the phone and signed in"
    );
    let step = &steps[0];
    assert_eq!(step.outcome.status, StepStatus::Ok, "{:?}", step.outcome);
    let action = serde_json::to_value(step.action.as_ref().unwrap()).unwrap();
    assert_eq!(action["action"], "sign_in");
    assert_eq!(action["email"], ACCOUNT_EMAIL);
    assert_eq!(action["password"], "••••");
    let detail = step.outcome.detail.as_ref().unwrap();
    let prims = detail["steps"].as_array().unwrap();
    let names: Vec<&str> = (prims.iter())
        .map(|p| p["action"]["action"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["launch_app", "tap", "type", "type", "tap"]);
    assert_eq!(prims[3]["action"]["text"], "••••");
    let stored = serde_json::to_string(&steps).unwrap();
    assert!(!stored.contains(ACCOUNT_PASSWORD), "steps: {stored}");
    assert!(!events.contains(ACCOUNT_PASSWORD), "events: {events}");
    e.store.close().await;
    let disk = bytes_under(e.dir.path());
    let needle = ACCOUNT_PASSWORD.as_bytes();
    assert!(
        !disk.windows(needle.len()).any(|w| w == needle),
        "the password is nowhere under the data directory"
    );
}

#[tokio::test]
async fn a_failing_primitive_fails_the_custom_action_naming_its_step() {
    let e = env(json!({"custom": [{
        "name": "open_missing",
        "steps": [
            {"action": "launch_app", "package": "com.android.settings"},
            {"action": "tap", "selector": "#no_such_button"},
        ],
    }]}))
    .await;
    let (steps, _) = run(&e, phone(), vec![custom("open_missing", json!({}))]).await;
    let step = &steps[0];
    assert_eq!(step.outcome.status, StepStatus::Failed);
    let error = step.outcome.error.as_deref().unwrap();
    assert!(
        error.contains("step 2 of `open_missing`") && error.contains("#no_such_button"),
        "{error}"
    );
}

/// A hook server that answers `answer` to `before` calls and 200 to `after` calls.
async fn hook_server(answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"when": "before"})))
        .respond_with(answer)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"when": "after"})))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

fn hooks(server: &MockServer, extra: Value) -> Value {
    let mut hook = json!({
        "url": format!("{}/hook", server.uri()),
        "timeout_ms": 500,
        "allowed_hosts": ["127.0.0.1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    let mut cfg = sign_in();
    cfg["hooks"] = json!([hook]);
    cfg
}

fn launch_settings() -> Action {
    Action::LaunchApp {
        app: AppRef::Package("com.android.settings".into()),
    }
}

/// The `action_hook` annotations of a step, as JSON.
fn hook_notes(step: &Step) -> Vec<Value> {
    (step.annotations.iter())
        .map(|a| serde_json::to_value(a).unwrap())
        .filter(|a| a["kind"] == "action_hook")
        .collect()
}

async fn posted(server: &MockServer) -> Vec<Value> {
    let got = server.received_requests().await.unwrap();
    got.iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn a_hook_that_says_continue_is_told_the_step_and_then_its_outcome() {
    let server =
        hook_server(ResponseTemplate::new(200).set_body_json(json!({"decision": "continue"})))
            .await;
    let e = env(hooks(&server, json!({}))).await;
    let sim = phone();
    let (steps, events) = run(&e, sim.clone(), vec![launch_settings()]).await;
    assert_eq!(
        sim.current_app().await.unwrap().package,
        "com.android.settings"
    );
    assert_eq!(steps[0].outcome.status, StepStatus::Ok);
    let notes = hook_notes(&steps[0]);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(
        (&notes[0]["when"], &notes[0]["decision"]),
        (&json!("before"), &json!("continue"))
    );
    assert_eq!(
        (&notes[1]["when"], &notes[1]["decision"]),
        (&json!("after"), &json!("told"))
    );
    assert!(
        events.contains("action_hook"),
        "published as step.annotated: {events}"
    );
    let bodies = posted(&server).await;
    let before = &bodies[0];
    assert_eq!(before["step"], 1);
    assert_eq!(before["device"], "sim-1");
    assert_eq!(before["action"]["action"], "launch_app");
    assert!(before["screen"]["summary"].is_string(), "{before}");
    assert_eq!(bodies[1]["outcome"]["ok"], true, "{}", bodies[1]);
}

#[tokio::test]
async fn a_hook_that_says_skip_keeps_the_action_off_the_phone() {
    let server = hook_server(
        ResponseTemplate::new(200)
            .set_body_json(json!({"decision": "skip", "reason": "not in this test"})),
    )
    .await;
    let e = env(hooks(&server, json!({"when": "before"}))).await;
    let sim = phone();
    let before = sim.current_app().await.unwrap().package;
    let (steps, _) = run(&e, sim.clone(), vec![launch_settings()]).await;
    assert_eq!(
        sim.current_app().await.unwrap().package,
        before,
        "not launched"
    );
    assert_eq!(steps[0].outcome.status, StepStatus::Skipped);
    let notes = hook_notes(&steps[0]);
    assert_eq!(notes[0]["decision"], "skip");
    assert_eq!(notes[0]["reason"], "not in this test");
}

#[tokio::test]
async fn a_hook_rewrite_runs_the_new_action_and_a_bad_one_is_a_step_error() {
    let rewrite = json!({"decision": "rewrite", "action": {"action": "launch_app", "package": "com.android.contacts"}});
    let server = hook_server(ResponseTemplate::new(200).set_body_json(rewrite)).await;
    let e = env(hooks(&server, json!({"when": "before"}))).await;
    let sim = phone();
    let (steps, _) = run(&e, sim.clone(), vec![launch_settings()]).await;
    assert_eq!(
        sim.current_app().await.unwrap().package,
        "com.android.contacts"
    );
    let action = serde_json::to_value(steps[0].action.as_ref().unwrap()).unwrap();
    assert_eq!(
        action["package"], "com.android.contacts",
        "recorded as it ran"
    );
    assert_eq!(hook_notes(&steps[0])[0]["decision"], "rewrite");

    let bad = json!({"decision": "rewrite", "action": {"action": "tap", "bogus": 1}});
    let server = hook_server(ResponseTemplate::new(200).set_body_json(bad)).await;
    let e = env(hooks(&server, json!({"when": "before"}))).await;
    let (steps, _) = run(&e, phone(), vec![launch_settings()]).await;
    assert_eq!(steps[0].outcome.status, StepStatus::Failed);
    let error = steps[0].outcome.error.as_deref().unwrap();
    assert!(
        error.contains("rewrite") && error.contains("bogus"),
        "{error}"
    );
}

#[tokio::test]
async fn a_hook_that_times_out_fails_closed_unless_told_to_continue() {
    let slow = ResponseTemplate::new(200)
        .set_body_json(json!({"decision": "continue"}))
        .set_delay(std::time::Duration::from_secs(5));
    let server = hook_server(slow).await;
    let e = env(hooks(&server, json!({"when": "before", "timeout_ms": 100}))).await;
    let sim = phone();
    let before = sim.current_app().await.unwrap().package;
    let (steps, _) = run(&e, sim.clone(), vec![launch_settings()]).await;
    assert_eq!(steps[0].outcome.status, StepStatus::Failed);
    assert_eq!(
        sim.current_app().await.unwrap().package,
        before,
        "not launched"
    );
    let notes = hook_notes(&steps[0]);
    assert_eq!(notes[0]["decision"], "error");
    assert!(
        notes[0]["reason"].as_str().unwrap().contains("100 ms"),
        "{notes:?}"
    );

    let e = env(hooks(
        &server,
        json!({"when": "before", "timeout_ms": 100, "on_error": "continue"}),
    ))
    .await;
    let (steps, _) = run(&e, sim.clone(), vec![launch_settings()]).await;
    assert_eq!(steps[0].outcome.status, StepStatus::Ok);
    assert_eq!(
        sim.current_app().await.unwrap().package,
        "com.android.settings"
    );
}

#[tokio::test]
async fn a_hook_never_sees_a_secret_parameter() {
    let server =
        hook_server(ResponseTemplate::new(200).set_body_json(json!({"decision": "continue"})))
            .await;
    let e = env(hooks(&server, json!({}))).await;
    let args = json!({"email": ACCOUNT_EMAIL, "password": ACCOUNT_PASSWORD});
    let (steps, _) = run(&e, phone(), vec![custom("sign_in", args)]).await;
    assert_eq!(
        steps[0].outcome.status,
        StepStatus::Ok,
        "{:?}",
        steps[0].outcome
    );
    let bodies = serde_json::to_string(&posted(&server).await).unwrap();
    assert!(bodies.contains("sign_in"), "{bodies}");
    assert!(!bodies.contains(ACCOUNT_PASSWORD), "{bodies}");
}

/// The real virtual phone, with every touch it received kept.
struct Touches {
    sim: Arc<SimDevice>,
    got: Mutex<Vec<(PixelPoint, Option<PixelPoint>)>>,
}

#[async_trait]
impl Device for Touches {
    fn serial(&self) -> &str {
        self.sim.serial()
    }
    async fn info(
        &self,
    ) -> Result<droidpilot::device::DeviceInfo, droidpilot::device::DeviceError> {
        self.sim.info().await
    }
    async fn screenshot(
        &self,
    ) -> Result<droidpilot::device::Screenshot, droidpilot::device::DeviceError> {
        self.sim.screenshot().await
    }
    async fn hierarchy(&self) -> Result<String, droidpilot::device::DeviceError> {
        self.sim.hierarchy().await
    }
    async fn tap(&self, p: PixelPoint) -> Result<(), droidpilot::device::DeviceError> {
        self.got.lock().unwrap().push((p, None));
        self.sim.tap(p).await
    }
    async fn long_press(
        &self,
        p: PixelPoint,
        ms: u64,
    ) -> Result<(), droidpilot::device::DeviceError> {
        self.got.lock().unwrap().push((p, None));
        self.sim.long_press(p, ms).await
    }
    async fn double_tap(&self, p: PixelPoint) -> Result<(), droidpilot::device::DeviceError> {
        self.got.lock().unwrap().push((p, None));
        self.sim.double_tap(p).await
    }
    async fn swipe(
        &self,
        from: PixelPoint,
        to: PixelPoint,
        ms: u64,
    ) -> Result<(), droidpilot::device::DeviceError> {
        self.got.lock().unwrap().push((from, Some(to)));
        self.sim.swipe(from, to, ms).await
    }
    async fn type_text(&self, text: &str) -> Result<(), droidpilot::device::DeviceError> {
        self.sim.type_text(text).await
    }
    async fn clear_text(&self) -> Result<(), droidpilot::device::DeviceError> {
        self.sim.clear_text().await
    }
    async fn key(&self, key: Key) -> Result<(), droidpilot::device::DeviceError> {
        self.sim.key(key).await
    }
    async fn launch_app(&self, app: &AppRef) -> Result<(), droidpilot::device::DeviceError> {
        self.sim.launch_app(app).await
    }
    async fn current_app(
        &self,
    ) -> Result<droidpilot::device::CurrentApp, droidpilot::device::DeviceError> {
        self.sim.current_app().await
    }
    async fn installed_apps(
        &self,
    ) -> Result<Vec<droidpilot::device::AppInfo>, droidpilot::device::DeviceError> {
        self.sim.installed_apps().await
    }
    async fn open_url(&self, url: &str) -> Result<(), droidpilot::device::DeviceError> {
        self.sim.open_url(url).await
    }
    async fn screen_state(
        &self,
    ) -> Result<droidpilot::device::ScreenState, droidpilot::device::DeviceError> {
        self.sim.screen_state().await
    }
}

#[tokio::test]
async fn scroll_to_find_swipes_through_the_configured_transform() {
    // Half the width, shifted a tenth right: a swipe down the middle (x = 270 of 540)
    // is touched at x = 0.5·0.5 + 0.1 = 0.35 → 189.
    let t = AffineTransform {
        scale_x: 0.5,
        offset_x: 0.1,
        ..Default::default()
    };
    let mut e = env(json!({})).await;
    e.runner = e
        .runner
        .clone()
        .with_transform(Arc::new(t))
        .with_hook(Arc::new(CustomActionHook {
            name: droidpilot::run::scroll_find::NAME.into(),
            handler: Arc::new(droidpilot::run::scroll_find::ScrollToFindAction {
                transform: Arc::new(t),
            }),
        }));
    // A short screen, so the last row is below the fold.
    let spy = Arc::new(Touches {
        sim: phone_of(540, 600),
        got: Mutex::default(),
    });
    let find = custom(
        "scroll_to_find",
        json!({"selector": ":text(\"Accounts\")", "direction": "down", "max_swipes": 10}),
    );
    let (steps, _) = run(&e, spy.clone(), vec![launch_settings(), find]).await;
    let got = spy.got.lock().unwrap().clone();
    let action = serde_json::to_value(steps[1].action.as_ref().unwrap()).unwrap();
    assert_eq!(action["action"], "scroll_to_find");
    let swipes: Vec<_> = got.iter().filter_map(|(a, b)| b.map(|b| (*a, b))).collect();
    assert!(!swipes.is_empty(), "scroll_to_find swiped: {got:?}");
    for (from, to) in swipes {
        assert_eq!((from.x, to.x), (189, 189), "{from:?} → {to:?}");
    }
}

#[tokio::test]
async fn a_tap_on_an_element_or_a_coordinate_is_touched_through_the_transform() {
    let t = AffineTransform {
        offset_y: 0.1,
        ..Default::default()
    };
    let mut e = env(json!({})).await;
    e.runner = e.runner.clone().with_transform(Arc::new(t));
    let spy = Arc::new(Touches {
        sim: phone(),
        got: Mutex::default(),
    });
    let tap = |v: Value| droidpilot::domain::ActionParser::new().parse(&v).unwrap();
    let actions = vec![
        tap(json!({"action": "tap", "coordinate": [0.5, 0.5]})),
        tap(json!({"action": "tap", "pixel": [270, 300]})),
    ];
    let (steps, _) = run(&e, spy.clone(), actions).await;
    let got = spy.got.lock().unwrap().clone();
    assert_eq!(got[0].0, PixelPoint { x: 270, y: 720 }, "0.5 + 0.1 of 1200");
    assert_eq!(got[1].0, PixelPoint { x: 270, y: 420 }, "300 + 120");
    assert_eq!(
        steps[0].outcome.detail.as_ref().unwrap()["point"],
        json!([270, 720])
    );
}

/// Why the configuration in `dir` does not load.
fn refused(dir: &std::path::Path) -> String {
    match droidpilot::config::Config::load_with_env(dir, &Default::default(), Vec::new()) {
        Ok(_) => panic!("the configuration loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_bad_actions_table_is_refused_at_load_naming_the_action_and_step() {
    let dir = tempfile::tempdir().unwrap();
    let bad = r##"
[[actions.custom]]
name = "login"
params = ["user"]
steps = [
  { action = "tap", selector = "#username" },
  { action = "type", text = "${pasword}" },
]
"##;
    std::fs::write(dir.path().join("local.toml"), bad).unwrap();
    let err = refused(dir.path());
    assert!(
        err.contains("actions.custom `login`, steps[1]") && err.contains("${pasword}"),
        "{err}"
    );
    let collides = "[[actions.custom]]\nname = \"tap\"\nsteps = [{ action = \"back\" }]\n";
    std::fs::write(dir.path().join("local.toml"), collides).unwrap();
    let err = refused(dir.path());
    assert!(err.contains("`tap`"), "{err}");
    let internal = "[[actions.hooks]]\nurl = \"http://127.0.0.1:9/hook\"\n";
    std::fs::write(dir.path().join("local.toml"), internal).unwrap();
    let err = refused(dir.path());
    assert!(
        err.contains("allowed_hosts") && err.contains("loopback"),
        "{err}"
    );
}
