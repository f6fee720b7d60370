//! The agent loop end to end on the virtual phone: the replay agent drives every task's
//! reference solution through observe → decide → act → settle → verify → record, and the
//! phone's own checker says whether the task really got done.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use droidpilot::agent::context::AgentContext;
use droidpilot::agent::replay::{OnError, ReplayAgent};
use droidpilot::agent::{Agent, AgentError, Decision};
use droidpilot::config::{Config, Overrides};
use droidpilot::core::Core;
use droidpilot::device::Device;
use droidpilot::device::sim::tasks::{SimTask, tasks};
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::domain::{
    Action, NewTask, StuckResponse, Task, TaskEvent, TaskId, TaskSpec, TaskStatus,
};
use droidpilot::run::events::{FeedItem, Filter};
use droidpilot::run::runner::{Runner, RunnerConfig};
use droidpilot::run::stop::StopSignal;
use droidpilot::store::Store;
use serde_json::json;
use tokio::sync::watch;

struct Env {
    runner: Runner,
    store: Arc<dyn Store>,
    _core: Core,
    _dir: tempfile::TempDir,
}

/// A core on a fresh data directory (no configured phones: each test brings its own),
/// with `cfg` as the runner's configuration.
async fn test_core(dir: &std::path::Path, cfg: RunnerConfig) -> Core {
    let overrides = Overrides {
        data_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let mut config = Config::load_with_env(dir, &overrides, Vec::new()).unwrap();
    config.devices.sim.clear();
    config.runner = cfg;
    Core::build(&config).await.unwrap()
}

async fn env(cfg: RunnerConfig) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let core = test_core(dir.path(), cfg).await;
    Env {
        runner: (*core.runner).clone(),
        store: core.store.clone(),
        _core: core,
        _dir: dir,
    }
}

fn quick() -> RunnerConfig {
    RunnerConfig {
        retry_backoff_ms: vec![10],
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        ..Default::default()
    }
}

async fn start(store: &Arc<dyn Store>, instruction: &str, max_steps: u32, device: &str) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(instruction.into()),
        max_steps: Some(max_steps),
        ..Default::default()
    })
    .unwrap();
    let t = store.create_task(spec).await.unwrap();
    assert!(store.start_task(t.id, device).await.unwrap());
    store.get_task(t.id).await.unwrap()
}

/// A half-size phone: the sim scales its layout with the width, so tasks behave the
/// same, and unoptimized test builds render a quarter of the pixels.
fn small() -> SimConfig {
    SimConfig {
        width: 540,
        height: 1200,
        ..SimConfig::default()
    }
}

/// Answers the task's `ask_user` questions from the sim task's facts (what the user
/// knows), through `Prompts::answer` as the REST API does; ends with the task.
fn answer_from_facts(runner: &Runner, id: TaskId, t: SimTask) -> tokio::task::JoinHandle<()> {
    let (bus, prompts) = (runner.bus.clone(), runner.prompts.clone());
    tokio::spawn(async move {
        let stream = id.to_string();
        let mut feed = bus.feed(Filter::Streams([stream.clone()].into()));
        feed.resume(&stream, 0).await.unwrap();
        while let Ok(Some(item)) = feed.next().await {
            let FeedItem::Event(ev) = item else { continue };
            match &ev.event {
                TaskEvent::AskUser {
                    prompt_id,
                    question,
                    ..
                } => {
                    let reply = t.reply(question);
                    let _ = prompts
                        .answer(&bus, id, Some(prompt_id), &reply, "test")
                        .await;
                }
                TaskEvent::Finished(_) => break,
                _ => {}
            }
        }
    })
}

fn no_stop() -> watch::Receiver<StopSignal> {
    let (tx, rx) = watch::channel(StopSignal::None);
    std::mem::forget(tx); // never signalled
    rx
}

/// A replay the runner treats as a model agent (the stuck detector watches it), so a
/// reference solution shows whether the detector would take a correct run for a loop.
struct AsIfModel(ReplayAgent);
#[async_trait]
impl Agent for AsIfModel {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.0.next(ctx).await
    }
    fn describe(&self) -> String {
        "replay, watched as a model".into()
    }
}

#[tokio::test]
async fn every_reference_solution_passes_through_the_full_loop() {
    let e = env(quick()).await;
    let all = tasks();
    assert!(all.len() >= 30);
    for t in all {
        let phone = Arc::new(SimDevice::new(small()).unwrap());
        phone.reset_to(&t);
        let steps = t.reference();
        let task = start(&e.store, t.instruction, steps.len() as u32 + 5, "sim-1").await;
        let answerer = answer_from_facts(&e.runner, task.id, t);
        let done = e
            .runner
            .run(
                task,
                phone.clone(),
                Box::new(AsIfModel(ReplayAgent::new(steps.clone()))),
                no_stop(),
            )
            .await
            .unwrap();
        answerer.await.unwrap();
        assert_eq!(
            done.status,
            TaskStatus::Succeeded,
            "{}: {:?}",
            t.id,
            done.reason
        );
        assert!(
            t.check(&phone.state()),
            "{}: the phone's checker disagrees after the loop",
            t.id
        );
        let recorded = e.store.steps(done.id).await.unwrap();
        assert_eq!(
            recorded.len(),
            steps.len() + 1,
            "{}: one step per action plus finish",
            t.id
        );
        assert!(
            recorded.iter().all(|s| s.outcome.status == "ok"),
            "{}: {:?}",
            t.id,
            recorded.iter().map(|s| &s.outcome).collect::<Vec<_>>()
        );
        assert_eq!(done.steps as usize, recorded.len());
        // A correct solution is never taken for a loop. Tapping "Build number" seven
        // times gets one diagnostic at most (the first three taps change nothing on the
        // screen, as on a real phone), and once the toast counts down, or a wheel turns
        // minute by minute, something visible moves every time: no escalation.
        let events = e
            .store
            .events_since(&done.id.to_string(), 0, 1000)
            .await
            .unwrap();
        let stuck: Vec<_> = events
            .iter()
            .filter_map(|ev| match &ev.event {
                TaskEvent::StepStuck { response, why, .. } => Some((*response, why.clone())),
                _ => None,
            })
            .collect();
        assert!(
            stuck.len() <= 1 && stuck.iter().all(|(r, _)| *r == StuckResponse::Diagnose),
            "{}: taken for a loop: {stuck:?}",
            t.id
        );
    }
}

/// Each step keeps the actionable elements of the screen it acted on, with selectors and
/// pixel bounds inside the recorded screen size (what recording a script resolves a
/// coordinate tap against).
#[tokio::test]
async fn steps_keep_the_screens_elements_with_bounds() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "open settings", 10, "sim-1").await;
    let actions = vec![Action::LaunchApp {
        app: droidpilot::domain::AppRef::Label("Settings".into()),
    }];
    let done = e
        .runner
        .run(task, phone, Box::new(ReplayAgent::new(actions)), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    let settings = steps[1].screen.as_ref().expect("the screen is recorded");
    let [w, h] = settings.size.expect("with its size");
    assert!(!settings.elements.is_empty(), "{settings:?}");
    for el in &settings.elements {
        let b = el.bounds;
        assert!(!el.selector.is_empty(), "{el:?}");
        assert!(
            b.left >= 0 && b.top >= 0 && b.right <= w as i32 && b.bottom <= h as i32,
            "{el:?} lies on the {w}x{h} screen"
        );
        assert!(b.right > b.left && b.bottom > b.top, "{el:?}");
    }
}

#[tokio::test]
async fn steps_record_screenshots_timings_and_events() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "open settings", 10, "sim-1").await;
    let actions = vec![Action::LaunchApp {
        app: droidpilot::domain::AppRef::Label("Settings".into()),
    }];
    let done = e
        .runner
        .run(task, phone, Box::new(ReplayAgent::new(actions)), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    let first = &steps[0];
    let sha = first.screenshot.as_deref().expect("a screenshot per step");
    let art = e.store.artifact(sha).await.unwrap().expect("artifact row");
    assert!(art.path.starts_with("artifacts/") && art.path.ends_with(".png"));
    assert_eq!(
        first.outcome.screen_changed,
        Some(true),
        "launching an app changes the screen"
    );
    assert!(
        first
            .screen
            .as_ref()
            .unwrap()
            .summary
            .as_str()
            .contains("actionable")
    );
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 100)
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds.first(), Some(&"task.started"));
    assert_eq!(kinds.last(), Some(&"task.finished"));
    for k in ["step.observed", "step.decided", "step.executed"] {
        assert_eq!(
            kinds.iter().filter(|x| **x == k).count(),
            2,
            "{k} per step: {kinds:?}"
        );
    }
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "gapless");
}

/// An agent that never finishes.
struct Wanderer;
#[async_trait]
impl Agent for Wanderer {
    async fn next(&mut self, _ctx: &AgentContext) -> Result<Decision, AgentError> {
        Ok(Decision::local(Action::Swipe {
            path: droidpilot::domain::action::SwipePath::Direction {
                direction: droidpilot::domain::Direction::Left,
                target: None,
            },
            duration_ms: None,
        }))
    }
    fn describe(&self) -> String {
        "wanderer".into()
    }
}

#[tokio::test]
async fn max_steps_marks_the_task_incomplete() {
    let e = env(RunnerConfig {
        stuck_threshold: 100,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "wander", 4, "sim-1").await;
    let done = e
        .runner
        .run(task, phone, Box::new(Wanderer), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Incomplete);
    assert!(done.reason.as_deref().unwrap().contains("max_steps (4)"));
    assert_eq!(e.store.steps(done.id).await.unwrap().len(), 4);
}

#[tokio::test]
async fn cancel_stops_at_a_step_boundary_keeping_committed_steps() {
    let e = env(RunnerConfig {
        stuck_threshold: 100,
        step_delay_ms: 20,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "wander", 1000, "sim-1").await;
    let (tx, rx) = watch::channel(StopSignal::None);
    let runner = e.runner.clone();
    let id = task.id;
    let handle = tokio::spawn(async move { runner.run(task, phone, Box::new(Wanderer), rx).await });
    // A cancel drops the step in flight, so wait until some are committed.
    for _ in 0..500 {
        if e.store.steps(id).await.unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tx.send(StopSignal::Cancel).unwrap();
    let done = handle.await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled);
    let n = e.store.steps(done.id).await.unwrap().len();
    assert!(
        n >= 1 && n as u32 == done.steps,
        "committed steps survive the cancel ({n})"
    );
}

fn scroll_to_find(selector: &str, max_swipes: u32) -> Action {
    let args = json!({"selector": selector, "max_swipes": max_swipes});
    Action::Custom(droidpilot::domain::action::CustomAction {
        name: "scroll_to_find".into(),
        args: args.as_object().unwrap().clone(),
    })
}

/// The navigator offers `scroll_to_find`; the runner does it in one step: the row is on
/// screen afterwards, and a row that is nowhere fails the step with why and what to try.
#[tokio::test]
async fn scroll_to_find_brings_a_row_on_screen_or_says_why_not() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "find about phone", 10, "sim-1").await;
    let actions = vec![
        Action::LaunchApp {
            app: droidpilot::domain::AppRef::Label("Settings".into()),
        },
        scroll_to_find(":text(\"About phone\")", 10),
        scroll_to_find(":text(\"No such row\")", 3),
    ];
    let agent = ReplayAgent::new(actions).on_error(OnError::Continue);
    let done = e
        .runner
        .run(task, phone.clone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(steps[1].outcome.status, "ok", "{:?}", steps[1].outcome);
    let xml = phone.hierarchy().await.unwrap();
    assert!(
        xml.contains("About phone"),
        "the row is on screen after the search"
    );
    assert_ne!(steps[2].outcome.status, "ok");
    let why = steps[2].outcome.error.clone().unwrap_or_default();
    assert!(
        why.contains("No such row") && why.contains("not on screen"),
        "{why}"
    );
}

/// A cancel recorded in the store with no stop signal (another process on the same
/// database) still ends the task: the loop reads the flag about once a second.
#[tokio::test]
async fn a_cancel_flag_set_elsewhere_ends_the_task() {
    let e = env(RunnerConfig {
        stuck_threshold: 100,
        step_delay_ms: 20,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "wander", 1000, "sim-1").await;
    let runner = e.runner.clone();
    let id = task.id;
    let handle =
        tokio::spawn(async move { runner.run(task, phone, Box::new(Wanderer), no_stop()).await });
    for _ in 0..500 {
        if !e.store.steps(id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, outcome) = e.store.cancel_task(id).await.unwrap();
    assert_eq!(outcome, droidpilot::store::CancelOutcome::Requested);
    let done = handle.await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled, "{:?}", done.reason);
}

/// A cancel recorded between the claim and the runner's start is in the task the runner
/// is given (read after the claim): it ends before any step, though the store's flag is
/// not due to be read yet.
#[tokio::test]
async fn a_cancel_flag_in_the_claimed_task_ends_it_before_its_first_step() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "wander", 1000, "sim-1").await;
    let (_, outcome) = e.store.cancel_task(task.id).await.unwrap();
    assert_eq!(outcome, droidpilot::store::CancelOutcome::Requested);
    let task = e.store.get_task(task.id).await.unwrap();
    assert!(task.cancel_requested);
    let done = e
        .runner
        .run(task, phone, Box::new(Wanderer), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled, "{:?}", done.reason);
    assert!(e.store.steps(done.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn stuck_agent_gets_a_diagnostic_then_is_stopped() {
    // Tapping the status bar changes nothing: stuck.
    let e = env(RunnerConfig {
        stuck_threshold: 2,
        ask_user_when_stuck: false,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "tap nothing", 50, "sim-1").await;
    let tap = Action::Tap {
        target: droidpilot::domain::action::TargetField(droidpilot::domain::Target::Coordinate(
            droidpilot::domain::NormPoint::new(0.5, 0.005).unwrap(),
        )),
    };
    let done = e
        .runner
        .run(
            task,
            phone,
            Box::new(AsIfModel(ReplayAgent::new(vec![tap; 20]))),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Failed);
    assert!(
        done.reason.as_deref().unwrap().starts_with("stuck:"),
        "{:?}",
        done.reason
    );
    assert!(done.steps < 20, "stopped early, after {} steps", done.steps);
}

#[tokio::test]
async fn ask_user_waits_for_an_answer_and_feeds_it_back() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "ask me", 10, "sim-1").await;
    let id = task.id;
    let ask = Action::AskUser {
        question: "Which colour?".into(),
        options: Some(vec!["red".into(), "blue".into()]),
    };
    let runner = e.runner.clone();
    let handle = tokio::spawn(async move {
        runner
            .run(
                task,
                phone,
                Box::new(ReplayAgent::new(vec![ask])),
                no_stop(),
            )
            .await
    });
    // Wait until the task waits, then answer as a dashboard would.
    let mut waited = 0;
    while e.store.get_task(id).await.unwrap().status != TaskStatus::WaitingForUser {
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
        assert!(waited < 500, "the task never asked");
    }
    let iv = e
        .runner
        .prompts
        .answer(&e.runner.bus, id, None, "blue", "rest")
        .await
        .unwrap();
    assert_eq!(iv.answer.as_deref(), Some("blue"));
    let done = handle.await.unwrap().unwrap();
    // Seen once on a loaded machine as not succeeded: say why, with the steps, if again.
    let steps = e.store.steps(id).await.unwrap();
    assert_eq!(
        done.status,
        TaskStatus::Succeeded,
        "reason {:?}, steps {:?}",
        done.reason,
        steps.iter().map(|s| &s.outcome).collect::<Vec<_>>()
    );
    assert_eq!(steps[0].outcome.detail.as_ref().unwrap()["answer"], "blue");
    let ivs = e.store.interventions(id).await.unwrap();
    assert_eq!(
        (ivs.len(), ivs[0].answered_by.as_deref()),
        (1, Some("rest"))
    );
    let kinds: Vec<String> = e
        .store
        .events_since(&id.to_string(), 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind().to_string())
        .collect();
    assert!(
        kinds.contains(&"task.ask_user".to_string())
            && kinds.contains(&"task.answered".to_string())
    );
}

#[tokio::test]
async fn unknown_mcp_tool_is_reported_to_the_agent_not_fatal() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "search", 10, "sim-1").await;
    let call = Action::McpCall {
        tool: "amap_search".into(),
        args: json!({"query": "coffee"}),
    };
    let done = e
        .runner
        .run(
            task,
            phone,
            Box::new(ReplayAgent::new(vec![call])),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(steps[0].outcome.status, "failed");
    assert!(
        steps[0]
            .outcome
            .error
            .as_deref()
            .unwrap()
            .contains("tool not available: `amap_search`")
    );
}

#[tokio::test]
async fn a_missing_element_is_retried_then_reported() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "tap a ghost", 10, "sim-1").await;
    let tap = Action::Tap {
        target: droidpilot::domain::action::TargetField(droidpilot::domain::Target::Selector(
            "#no_such_button".into(),
        )),
    };
    let done = e
        .runner
        .run(
            task,
            phone,
            Box::new(ReplayAgent::new(vec![tap]).on_error(OnError::Continue)),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(
        done.status,
        TaskStatus::Succeeded,
        "with on_error continue, the replay goes on to finish"
    );
    let s = &e.store.steps(done.id).await.unwrap()[0];
    assert_eq!(s.outcome.status, "failed");
    assert!(
        s.outcome
            .error
            .as_deref()
            .unwrap()
            .starts_with("element_not_found"),
        "{:?}",
        s.outcome
    );
}

#[tokio::test]
async fn a_dropped_device_is_waited_for_and_the_task_resumes() {
    let e = env(quick()).await;
    let cfg = SimConfig {
        faults: droidpilot::device::sim::faults::SimFaults {
            disconnect_after: Some(12),
            ..Default::default()
        },
        ..small()
    };
    let phone = Arc::new(SimDevice::new(cfg).unwrap());
    let t = tasks()
        .into_iter()
        .find(|t| t.reference().len() >= 4)
        .unwrap();
    phone.reset_to(&t);
    let task = start(&e.store, t.instruction, 30, "sim-1").await;
    let done = e
        .runner
        .run(
            task,
            phone.clone(),
            Box::new(ReplayAgent::new(t.reference())),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert!(t.check(&phone.state()));
    let kinds: Vec<String> = e
        .store
        .events_since(&done.id.to_string(), 0, 500)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind().to_string())
        .collect();
    assert!(
        kinds.contains(&"task.device_lost".to_string())
            && kinds.contains(&"task.device_back".to_string()),
        "{kinds:?}"
    );
}

// A phone that is gone for good: every call reports a disconnect.
struct Gone;
#[async_trait]
impl Device for Gone {
    fn serial(&self) -> &str {
        "gone-1"
    }
    async fn info(
        &self,
    ) -> Result<droidpilot::device::DeviceInfo, droidpilot::device::DeviceError> {
        Ok(droidpilot::device::DeviceInfo {
            serial: "gone-1".into(),
            backend: "test".into(),
            model: "x".into(),
            screen: droidpilot::domain::ScreenSize {
                width: 100,
                height: 200,
            },
            density: 160,
            rotation: 0,
        })
    }
    async fn screenshot(
        &self,
    ) -> Result<droidpilot::device::Screenshot, droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn hierarchy(&self) -> Result<String, droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn tap(
        &self,
        _: droidpilot::domain::PixelPoint,
    ) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn long_press(
        &self,
        _: droidpilot::domain::PixelPoint,
        _: u64,
    ) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn double_tap(
        &self,
        _: droidpilot::domain::PixelPoint,
    ) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn swipe(
        &self,
        _: droidpilot::domain::PixelPoint,
        _: droidpilot::domain::PixelPoint,
        _: u64,
    ) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn type_text(&self, _: &str) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn clear_text(&self) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn key(&self, _: droidpilot::domain::Key) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn launch_app(
        &self,
        _: &droidpilot::domain::AppRef,
    ) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn current_app(
        &self,
    ) -> Result<droidpilot::device::CurrentApp, droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn installed_apps(
        &self,
    ) -> Result<Vec<droidpilot::device::AppInfo>, droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn open_url(&self, _: &str) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn screen_state(
        &self,
    ) -> Result<droidpilot::device::ScreenState, droidpilot::device::DeviceError> {
        Err(gone())
    }
    async fn health(&self) -> Result<(), droidpilot::device::DeviceError> {
        Err(gone())
    }
}
fn gone() -> droidpilot::device::DeviceError {
    droidpilot::device::DeviceError::Disconnected {
        serial: "gone-1".into(),
    }
}

#[tokio::test]
async fn a_device_that_never_returns_fails_the_task_cleanly() {
    let e = env(RunnerConfig {
        reconnect_wait_secs: 1,
        ..quick()
    })
    .await;
    let task = start(&e.store, "anything", 10, "gone-1").await;
    let done = e
        .runner
        .run(
            task,
            Arc::new(Gone),
            Box::new(ReplayAgent::new(vec![])),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Failed);
    // Seed 004's coordinator reads the code.
    let r = droidpilot::run::result::CoordinatorResult::new(&done, &[]).unwrap();
    assert_eq!(
        r.reason,
        droidpilot::run::result::CompletionCode::DeviceUnreachable
    );
    let reason = done.reason.unwrap();
    assert!(
        reason.starts_with("device_unreachable: ")
            && reason.contains("did not come back within 1 s")
            && reason.contains("replug USB"),
        "{reason}"
    );
}

#[tokio::test]
async fn a_cancel_ends_the_wait_for_a_lost_device_at_once() {
    let e = env(RunnerConfig {
        reconnect_wait_secs: 600,
        ..quick()
    })
    .await;
    let task = start(&e.store, "anything", 10, "gone-1").await;
    let id = task.id;
    let (tx, rx) = watch::channel(StopSignal::None);
    let runner = e.runner.clone();
    let handle = tokio::spawn(async move {
        runner
            .run(task, Arc::new(Gone), Box::new(ReplayAgent::new(vec![])), rx)
            .await
    });
    let mut lost = false;
    for _ in 0..200 {
        let events = e.store.events_since(&id.to_string(), 0, 100).await.unwrap();
        if events.iter().any(|ev| ev.kind() == "task.device_lost") {
            lost = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(lost, "the runner waits for the device");
    let since = std::time::Instant::now();
    tx.send(StopSignal::Cancel).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .expect("the cancel ended the 600 s reconnect wait")
        .unwrap()
        .unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled, "{:?}", done.reason);
    assert!(
        since.elapsed() < Duration::from_secs(10),
        "took {:?}",
        since.elapsed()
    );
}

/// Middleware rewrites and skips actions; a custom action registered at run time runs its
/// handler on the task's device.
#[tokio::test]
async fn middleware_and_custom_actions() {
    use droidpilot::run::middleware::{ActionMiddleware, CustomActionHandler, Verdict};
    use std::sync::Mutex;

    struct Guard {
        seen: Mutex<Vec<String>>,
    }
    #[async_trait]
    impl ActionMiddleware for Guard {
        async fn before(
            &self,
            _task: droidpilot::domain::TaskId,
            _step: u32,
            action: Action,
        ) -> Verdict {
            match &action {
                // Policy: never open the Shop; home instead.
                Action::LaunchApp {
                    app: droidpilot::domain::AppRef::Label(l),
                } if l == "Shop" => Verdict::Run(Action::Key {
                    key: droidpilot::domain::Key::Home,
                }),
                Action::Key {
                    key: droidpilot::domain::Key::Power,
                } => Verdict::Skip("power is not allowed".into()),
                _ => Verdict::Run(action),
            }
        }
        async fn after(
            &self,
            _task: droidpilot::domain::TaskId,
            step: u32,
            action: &Action,
            outcome: &Result<serde_json::Value, String>,
        ) {
            self.seen
                .lock()
                .unwrap()
                .push(format!("{step}:{}:{}", action.name(), outcome.is_ok()));
        }
    }
    struct OpenSettings;
    #[async_trait]
    impl CustomActionHandler for OpenSettings {
        async fn run(
            &self,
            device: &dyn Device,
            args: &serde_json::Map<String, serde_json::Value>,
        ) -> Result<serde_json::Value, String> {
            device
                .launch_app(&droidpilot::domain::AppRef::Package(
                    "com.android.settings".into(),
                ))
                .await
                .map_err(|e| e.to_string())?;
            Ok(json!({"because": args.get("why").cloned()}))
        }
    }

    let e = env(quick()).await;
    let guard = Arc::new(Guard {
        seen: Mutex::new(Vec::new()),
    });
    let mut runner = e.runner.clone().with_middleware(guard.clone());
    let mut parser = droidpilot::domain::ActionParser::new();
    runner
        .register_action(&mut parser, "open_settings", Arc::new(OpenSettings))
        .unwrap();
    let custom = parser
        .parse(&json!({"action": "open_settings", "why": "test"}))
        .unwrap();

    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "policy", 10, "sim-1").await;
    let actions = vec![
        Action::LaunchApp {
            app: droidpilot::domain::AppRef::Label("Shop".into()),
        },
        Action::Key {
            key: droidpilot::domain::Key::Power,
        },
        custom,
    ];
    let done = runner
        .run(
            task,
            phone.clone(),
            Box::new(ReplayAgent::new(actions)),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(
        steps[0].action.as_ref().unwrap().name(),
        "key",
        "the middleware rewrote launch_app(Shop) into home"
    );
    assert_eq!(steps[1].outcome.status, "skipped");
    assert_eq!(
        steps[1].outcome.detail.as_ref().unwrap()["reason"],
        "power is not allowed"
    );
    assert_eq!(steps[2].outcome.status, "ok");
    assert_eq!(steps[2].outcome.detail.as_ref().unwrap()["because"], "test");
    assert!(phone.state().awake, "power was never pressed");
    assert_eq!(
        phone.current_app().await.unwrap().package,
        "com.android.settings",
        "the custom handler ran"
    );
    assert_eq!(
        *guard.seen.lock().unwrap(),
        vec!["1:key:true".to_string(), "3:open_settings:true".to_string()]
    );
}

#[tokio::test]
async fn a_failing_tree_degrades_to_screenshot_only() {
    let e = env(quick()).await;
    let faults = droidpilot::device::sim::faults::SimFaults {
        hierarchy_error_rate: 1.0,
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(SimConfig { faults, ..small() }).unwrap());
    let task = start(&e.store, "go home", 5, "sim-1").await;
    let home = Action::Key {
        key: droidpilot::domain::Key::Home,
    };
    let done = e
        .runner
        .run(
            task,
            phone,
            Box::new(ReplayAgent::new(vec![home])),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let s = &e.store.steps(done.id).await.unwrap()[0];
    assert_eq!(
        s.screen.as_ref().unwrap().summary,
        "UI tree unavailable; screenshot only"
    );
    assert!(s.screenshot.is_some(), "the screenshot still made it");
}

#[tokio::test]
async fn a_secure_screen_is_flagged_sensitive_and_not_stored() {
    let e = env(quick()).await;
    let faults = droidpilot::device::sim::faults::SimFaults {
        secure_black: true,
        ..Default::default()
    };
    let phone = Arc::new(SimDevice::new(SimConfig { faults, ..small() }).unwrap());
    let t = droidpilot::device::sim::tasks::task("shop.cheapest_usb_c").unwrap();
    phone.reset_to(&t);
    let task = start(&e.store, t.instruction, 40, "sim-1").await;
    let done = e
        .runner
        .run(
            task,
            phone.clone(),
            Box::new(ReplayAgent::new(t.reference())),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let steps = e.store.steps(done.id).await.unwrap();
    let secure: Vec<_> = steps
        .iter()
        .filter(|s| s.screen.as_ref().unwrap().sensitive)
        .collect();
    assert!(!secure.is_empty(), "the checkout is a secure screen");
    assert!(
        secure.iter().all(|s| s.screenshot.is_none()),
        "a black frame is not stored as the step's screenshot"
    );
    assert!(
        t.check(&phone.state()),
        "the task still completes from the tree alone"
    );
}

#[tokio::test]
async fn the_task_timeout_ends_the_task() {
    let e = env(RunnerConfig {
        stuck_threshold: 1000,
        step_delay_ms: 200,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("wander".into()),
        max_steps: Some(1000),
        timeout_seconds: Some(1),
        ..Default::default()
    })
    .unwrap();
    let t = e.store.create_task(spec).await.unwrap();
    e.store.start_task(t.id, "sim-1").await.unwrap();
    let task = e.store.get_task(t.id).await.unwrap();
    let done = e
        .runner
        .run(task, phone, Box::new(Wanderer), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::TimedOut);
    assert!(done.reason.unwrap().contains("timeout_seconds (1)"));
}

#[tokio::test]
async fn an_unanswered_question_follows_the_timeout_policy() {
    use droidpilot::run::runner::AskTimeoutPolicy;
    let ask = || Action::AskUser {
        question: "Anyone there?".into(),
        options: None,
    };
    for (policy, want) in [
        (AskTimeoutPolicy::Continue, TaskStatus::Succeeded),
        (AskTimeoutPolicy::Fail, TaskStatus::Failed),
    ] {
        let e = env(RunnerConfig {
            ask_user_timeout_secs: 1,
            ask_user_timeout_policy: policy,
            ..quick()
        })
        .await;
        let phone = Arc::new(SimDevice::new(small()).unwrap());
        let task = start(&e.store, "ask into the void", 5, "sim-1").await;
        let done = e
            .runner
            .run(
                task,
                phone,
                Box::new(ReplayAgent::new(vec![ask()])),
                no_stop(),
            )
            .await
            .unwrap();
        assert_eq!(done.status, want, "{policy:?}: {:?}", done.reason);
        let ivs = e.store.interventions(done.id).await.unwrap();
        assert_eq!(
            ivs[0].answered_by.as_deref(),
            Some("timeout"),
            "the question is closed, so a late answer is refused"
        );
        let late = e
            .runner
            .prompts
            .answer(&e.runner.bus, done.id, Some(&ivs[0].id), "too late", "rest")
            .await;
        assert!(late.is_err());
        if policy == AskTimeoutPolicy::Fail {
            assert!(done.reason.unwrap().contains("nobody answered"));
        }
    }
}

#[tokio::test]
async fn a_shutdown_without_resume_says_how_to_enable_it() {
    let e = env(RunnerConfig {
        stuck_threshold: 100,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "wander", 1000, "sim-1").await;
    let (tx, rx) = watch::channel(StopSignal::Shutdown);
    let done = e
        .runner
        .run(task, phone, Box::new(Wanderer), rx)
        .await
        .unwrap();
    drop(tx);
    assert_eq!(done.status, TaskStatus::Interrupted);
    assert!(
        done.reason
            .as_deref()
            .unwrap()
            .contains("scheduler.resume_interrupted = true"),
        "{:?}",
        done.reason
    );
}

#[tokio::test]
async fn a_cancel_during_the_pause_after_an_action_keeps_the_step_and_ends_at_once() {
    let e = env(RunnerConfig {
        step_delay_ms: 600_000,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "go home", 10, "sim-1").await;
    let id = task.id;
    let (tx, rx) = watch::channel(StopSignal::None);
    let runner = e.runner.clone();
    let home = Action::Key {
        key: droidpilot::domain::Key::Home,
    };
    let handle = tokio::spawn(async move {
        runner
            .run(task, phone, Box::new(ReplayAgent::new(vec![home])), rx)
            .await
    });
    // The action has run once the step is decided and the phone was asked to act; give
    // it the settle time, then cancel inside the ten-minute pause.
    for _ in 0..500 {
        let events = e.store.events_since(&id.to_string(), 0, 100).await.unwrap();
        if events.iter().any(|ev| ev.kind() == "step.decided") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let since = std::time::Instant::now();
    tx.send(StopSignal::Cancel).unwrap();
    let done = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .expect("the pause was cut short")
        .unwrap()
        .unwrap();
    assert!(since.elapsed() < Duration::from_secs(10));
    assert_eq!(done.status, TaskStatus::Cancelled);
    let steps = e.store.steps(id).await.unwrap();
    assert_eq!(steps.len(), 1, "the action that ran is kept");
    assert_eq!(steps[0].outcome.status, "ok");
    assert_eq!(done.steps, 1);
}

/// Issue 17: on a screen that changes and holds still, a step reads the hierarchy once
/// and takes one screenshot, and never reads the same screen twice: settling dumps once
/// (the dump waits for idle), then captures the picture, and that observation is the
/// next step's. Counted by the phone itself.
#[tokio::test]
async fn a_step_dumps_the_hierarchy_once_and_reuses_the_settled_screen() {
    let e = env(quick()).await;
    let t = droidpilot::device::sim::task("settings.wifi_off").expect("task");
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    phone.reset_to(&t);
    let steps = t.reference();
    let task = start(&e.store, t.instruction, steps.len() as u32 + 5, "sim-1").await;
    let before = phone.counts();
    let done = e
        .runner
        .run(
            task,
            phone.clone(),
            Box::new(ReplayAgent::new(steps.clone())),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert!(
        t.check(&phone.state()),
        "the phone is not in the goal state"
    );
    let recorded = e.store.steps(done.id).await.unwrap();
    let used = phone.counts().since(&before);
    let n = recorded.len() as u64;
    // One dump and one screenshot per step (the first observation included).
    assert_eq!(used.dumps, n, "{used:?} for {n} steps");
    assert_eq!(used.screencaps, n, "{used:?} for {n} steps");
}

/// A phone whose UI tree never changes (a canvas, a map, a web view without nodes): the
/// first dump, over and over, while the picture and everything else are the real phone's.
struct FrozenTree {
    phone: Arc<SimDevice>,
    tree: tokio::sync::OnceCell<String>,
}

type DevResult<T> = Result<T, droidpilot::device::DeviceError>;

#[async_trait]
impl Device for FrozenTree {
    fn serial(&self) -> &str {
        self.phone.serial()
    }
    async fn info(&self) -> DevResult<droidpilot::device::DeviceInfo> {
        self.phone.info().await
    }
    async fn screenshot(&self) -> DevResult<droidpilot::device::Screenshot> {
        self.phone.screenshot().await
    }
    async fn hierarchy(&self) -> DevResult<String> {
        self.tree
            .get_or_try_init(|| self.phone.hierarchy())
            .await
            .cloned()
    }
    async fn tap(&self, p: droidpilot::domain::PixelPoint) -> DevResult<()> {
        self.phone.tap(p).await
    }
    async fn long_press(&self, p: droidpilot::domain::PixelPoint, ms: u64) -> DevResult<()> {
        self.phone.long_press(p, ms).await
    }
    async fn double_tap(&self, p: droidpilot::domain::PixelPoint) -> DevResult<()> {
        self.phone.double_tap(p).await
    }
    async fn swipe(
        &self,
        a: droidpilot::domain::PixelPoint,
        b: droidpilot::domain::PixelPoint,
        ms: u64,
    ) -> DevResult<()> {
        self.phone.swipe(a, b, ms).await
    }
    async fn type_text(&self, text: &str) -> DevResult<()> {
        self.phone.type_text(text).await
    }
    async fn clear_text(&self) -> DevResult<()> {
        self.phone.clear_text().await
    }
    async fn key(&self, key: droidpilot::domain::Key) -> DevResult<()> {
        self.phone.key(key).await
    }
    async fn launch_app(&self, app: &droidpilot::domain::AppRef) -> DevResult<()> {
        self.phone.launch_app(app).await
    }
    async fn current_app(&self) -> DevResult<droidpilot::device::CurrentApp> {
        self.phone.current_app().await
    }
    async fn installed_apps(&self) -> DevResult<Vec<droidpilot::device::AppInfo>> {
        self.phone.installed_apps().await
    }
    async fn open_url(&self, url: &str) -> DevResult<()> {
        self.phone.open_url(url).await
    }
    async fn screen_state(&self) -> DevResult<droidpilot::device::ScreenState> {
        self.phone.screen_state().await
    }
}

/// The add-contact task, and a small phone at its start.
fn add_contact_phone() -> (SimTask, Arc<SimDevice>) {
    let t = tasks()
        .into_iter()
        .find(|t| t.instruction.contains("Ada Lovelace"))
        .expect("the add-contact task");
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    phone.reset_to(&t);
    (t, phone)
}

/// When the tree cannot show a change, the picture does: on a phone whose tree never
/// moves, opening an app is a change (the two screenshots' fingerprints differ), and
/// opening it again is not (the same pixels; settle watches for a late change, then
/// gives up).
#[tokio::test]
async fn a_change_only_the_picture_shows_is_still_a_change() {
    let e = env(quick()).await;
    let (t, phone) = add_contact_phone();
    let open = t.reference()[0].clone();
    assert!(matches!(open, Action::LaunchApp { .. }), "{open:?}");
    let device = Arc::new(FrozenTree {
        phone: phone.clone(),
        tree: Default::default(),
    });
    let task = start(&e.store, "open contacts twice", 10, "sim-1").await;
    let done = e
        .runner
        .run(
            task,
            device,
            Box::new(ReplayAgent::new(vec![open.clone(), open])),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let recorded = e.store.steps(done.id).await.unwrap();
    let changed: Vec<_> = recorded[..2]
        .iter()
        .map(|s| s.outcome.screen_changed)
        .collect();
    assert_eq!(changed, [Some(true), Some(false)], "{recorded:?}");
}

/// Settling on a layout that did not change: the layout hash leaves digits out (a ticking
/// counter is not a new screen), so typing digits over digits keeps the layout. The tree's
/// text still moved, and the step reads "screen changed", from the tree alone.
#[tokio::test]
async fn digits_typed_over_digits_are_a_change() {
    let e = env(quick()).await;
    let (t, phone) = add_contact_phone();
    // Launch, new contact, the phone field (the reference's steps 1, 2 and 5), digits
    // (the field's hint goes: the tree changes), then other digits in their place (only
    // digits change).
    let r = t.reference();
    let mut steps = vec![r[0].clone(), r[1].clone(), r[4].clone()];
    for (digits, clear_first) in [("44", false), ("20", true)] {
        steps.push(Action::Type {
            text: digits.into(),
            target: None,
            clear_first,
        });
    }
    let task = start(&e.store, "type digits", 10, "sim-1").await;
    let before = phone.counts();
    let done = e
        .runner
        .run(
            task,
            phone.clone(),
            Box::new(ReplayAgent::new(steps)),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let recorded = e.store.steps(done.id).await.unwrap();
    let typed = recorded
        .iter()
        .find(|s| matches!(&s.action, Some(Action::Type { text, .. }) if text == "20"))
        .expect("the typing step");
    assert_eq!(
        typed.outcome.screen_changed,
        Some(true),
        "{:?}",
        typed.outcome
    );
    // Seen at once, from the step's own screenshot: no watching, no second read.
    let used = phone.counts().since(&before);
    let n = recorded.len() as u64;
    assert_eq!(
        (used.dumps, used.screencaps),
        (n, n),
        "{used:?} for {n} steps"
    );
}

/// A task with `timeout_seconds` = `secs`, claimed by `sim-1`.
async fn start_timed(store: &Arc<dyn Store>, instruction: &str, secs: u64) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(instruction.into()),
        max_steps: Some(50),
        timeout_seconds: Some(secs),
        ..Default::default()
    })
    .unwrap();
    let t = store.create_task(spec).await.unwrap();
    assert!(store.start_task(t.id, "sim-1").await.unwrap());
    store.get_task(t.id).await.unwrap()
}

/// Runs `task` to its end; a runner that outlives the deadline by a minute is a hang.
async fn run_bounded(e: &Env, task: Task, phone: Arc<dyn Device>, agent: Box<dyn Agent>) -> Task {
    tokio::time::timeout(
        Duration::from_secs(60),
        e.runner.run(task, phone, agent, no_stop()),
    )
    .await
    .expect("the deadline ended the task")
    .unwrap()
}

/// A model call that never answers (a provider that hangs): counts the calls.
struct Hanging(Arc<std::sync::atomic::AtomicU32>);
#[async_trait]
impl Agent for Hanging {
    async fn next(&mut self, _ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::pending().await
    }
    fn describe(&self) -> String {
        "hanging".into()
    }
}

/// `timeout_seconds` is a hard deadline: a model call in flight is cut at it, and the task
/// ends `timed_out` with no step recorded for the call that never answered.
#[tokio::test]
async fn the_deadline_cuts_a_model_call_in_flight() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start_timed(&e.store, "ask a slow model", 1).await;
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let done = run_bounded(&e, task, phone, Box::new(Hanging(calls.clone()))).await;
    assert_eq!(done.status, TaskStatus::TimedOut, "{:?}", done.reason);
    assert!(done.reason.unwrap().contains("timeout_seconds (1)"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(e.store.steps(done.id).await.unwrap().is_empty());
}

/// A device wait in progress (a phone paced like a real one, waiting ten minutes) is cut
/// at the deadline: the step was decided, the task timed out, no step was recorded.
#[tokio::test]
async fn the_deadline_cuts_a_device_wait() {
    let e = env(quick()).await;
    let phone = Arc::new(
        SimDevice::new(SimConfig {
            pacing: droidpilot::device::sim::Pacing::Realistic,
            ..small()
        })
        .unwrap(),
    );
    let task = start_timed(&e.store, "wait a long time", 2).await;
    let wait = Action::Wait { ms: 600_000 };
    let done = run_bounded(&e, task, phone, Box::new(ReplayAgent::new(vec![wait]))).await;
    assert_eq!(done.status, TaskStatus::TimedOut, "{:?}", done.reason);
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 100)
        .await
        .unwrap();
    assert!(events.iter().any(|ev| ev.kind() == "step.decided"));
    assert!(e.store.steps(done.id).await.unwrap().is_empty());
}

/// An open question is closed at the deadline (by `deadline`, so a late answer is
/// refused) and the task ends `timed_out`, not after the question's own timeout.
#[tokio::test]
async fn the_deadline_closes_an_open_question() {
    let e = env(RunnerConfig {
        ask_user_timeout_secs: 600,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start_timed(&e.store, "ask and wait", 1).await;
    let ask = Action::AskUser {
        question: "What time?".into(),
        options: None,
    };
    let done = run_bounded(&e, task, phone, Box::new(ReplayAgent::new(vec![ask]))).await;
    assert_eq!(done.status, TaskStatus::TimedOut, "{:?}", done.reason);
    let ivs = e.store.interventions(done.id).await.unwrap();
    assert_eq!(ivs[0].answered_by.as_deref(), Some("deadline"));
    let late = e
        .runner
        .prompts
        .answer(&e.runner.bus, done.id, Some(&ivs[0].id), "7:30", "rest")
        .await;
    assert!(late.is_err());
    assert!(e.store.steps(done.id).await.unwrap().is_empty());
}

/// A settle in progress (watching a still screen for a late change for ten minutes) is
/// cut at the deadline; the action that ran is kept as the task's one step.
#[tokio::test]
async fn the_deadline_cuts_a_settle() {
    let e = env(RunnerConfig {
        settle_timeout_ms: 600_000,
        settle_poll_ms: 50,
        ..quick()
    })
    .await;
    let phone = Arc::new(FrozenTree {
        phone: Arc::new(SimDevice::new(small()).unwrap()),
        tree: tokio::sync::OnceCell::new(),
    });
    let task = start_timed(&e.store, "tap the status bar", 1).await;
    let tap = Action::Tap {
        target: droidpilot::domain::action::TargetField(droidpilot::domain::Target::Coordinate(
            droidpilot::domain::NormPoint::new(0.5, 0.005).unwrap(),
        )),
    };
    let done = run_bounded(&e, task, phone, Box::new(ReplayAgent::new(vec![tap; 5]))).await;
    assert_eq!(done.status, TaskStatus::TimedOut, "{:?}", done.reason);
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(steps.len(), 1, "the tap ran; its settle was cut");
    assert_eq!(steps[0].outcome.status, "ok");
    assert_eq!(
        steps[0].outcome.screen_changed, None,
        "cut before it could tell"
    );
}

/// An agent with a bug: its first decision panics.
struct Panicking;
#[async_trait]
impl Agent for Panicking {
    async fn next(&mut self, _ctx: &AgentContext) -> Result<Decision, AgentError> {
        panic!("the agent tripped over its own feet");
    }
    fn describe(&self) -> String {
        "panicking".into()
    }
}

/// Polls `id` until it has ended (bounded: a task that never ends fails the test).
async fn ended(store: &Arc<dyn Store>, id: TaskId) -> Task {
    for _ in 0..600 {
        let t = store.get_task(id).await.unwrap();
        if t.status.is_terminal() {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never ended");
}

/// A runner that panics ends its task `failed` with the panic's message, and gives back
/// its phone and its scheduler slot: with one slot and one phone, the next task runs.
#[tokio::test]
async fn a_runner_that_panics_fails_its_task_and_frees_the_phone_and_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let mut config = Config::load_with_env(dir.path(), &overrides, Vec::new()).unwrap();
    config.devices.sim = vec![small()];
    config.scheduler.max_concurrent_tasks = 1;
    config.runner = quick();
    let agents: droidpilot::run::scheduler::AgentFactory = Arc::new(|t: &Task| {
        Ok(match t.spec.instruction.as_str() {
            "trip" => Box::new(Panicking) as Box<dyn Agent>,
            _ => Box::new(ReplayAgent::new(vec![])),
        })
    });
    let parts = droidpilot::core::CoreParts {
        agents: Some(agents),
        ..Default::default()
    };
    let core = Core::build_with(&config, parts).await.unwrap();
    core.start_scheduler();
    let spec = |i: &str| {
        TaskSpec::parse(NewTask {
            instruction: Some(i.into()),
            ..Default::default()
        })
        .unwrap()
    };
    let bad = core.queue.submit(spec("trip")).await.unwrap();
    let done = ended(&core.store, bad.id).await;
    assert_eq!(done.status, TaskStatus::Failed);
    let reason = done.reason.unwrap();
    assert!(
        reason.contains("panicked: the agent tripped over its own feet"),
        "{reason}"
    );
    let next = core.queue.submit(spec("carry on")).await.unwrap();
    let after = ended(&core.store, next.id).await;
    assert_eq!(after.status, TaskStatus::Succeeded, "{:?}", after.reason);
    assert_eq!(after.assigned_device.as_deref(), Some("sim-1"));
    let events = core
        .store
        .events_since(&bad.id.to_string(), 0, 100)
        .await
        .unwrap();
    assert!(events.iter().any(|e| e.kind() == "task.finished"));
    core.shutdown(Duration::from_secs(10)).await;
}

/// A submitted task starts because the queue wakes its scheduler, not at the scheduler's
/// next poll: with the poll an hour away, it still runs.
#[tokio::test]
async fn a_submitted_task_wakes_the_scheduler_itself() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let mut config = Config::load_with_env(dir.path(), &overrides, Vec::new()).unwrap();
    config.devices.sim = vec![small()];
    config.runner = quick();
    config.scheduler.poll_ms = 3_600_000;
    let agents: droidpilot::run::scheduler::AgentFactory =
        Arc::new(|_: &Task| Ok(Box::new(ReplayAgent::new(vec![])) as Box<dyn Agent>));
    let parts = droidpilot::core::CoreParts {
        agents: Some(agents),
        ..Default::default()
    };
    let core = Core::build_with(&config, parts).await.unwrap();
    core.start_scheduler();
    // Its first pass (an empty queue) has run: the scheduler sleeps until woken.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("open Settings".into()),
        ..Default::default()
    })
    .unwrap();
    let task = core.queue.submit(spec).await.unwrap();
    let done = ended(&core.store, task.id).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    core.shutdown(Duration::from_secs(10)).await;
}

/// A calendar the agent reaches over `mcp_call`.
struct Calendar;
#[async_trait]
impl droidpilot::run::mcp::McpHandler for Calendar {
    fn description(&self) -> String {
        "the user's calendar".into()
    }
    async fn call(&self, _args: serde_json::Value) -> Result<serde_json::Value, String> {
        Ok(json!("dentist on Monday at 9:00"))
    }
}

/// Finishes at once, keeping the history text its first prompt would have shown.
struct Remembering(Arc<std::sync::Mutex<String>>);
#[async_trait]
impl Agent for Remembering {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        *self.0.lock().unwrap() = ctx.history.render();
        Ok(Decision::local(Action::Finish {
            success: true,
            reason: None,
            answer: None,
        }))
    }
    fn describe(&self) -> String {
        "remembering".into()
    }
}

/// Runs `task` (claimed again) with an agent that only reads its history; returns it.
async fn history_on_resume(e: &Env, task: Task) -> String {
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let done = e
        .runner
        .run(task, phone, Box::new(Remembering(seen.clone())), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    seen.lock().unwrap().clone()
}

/// A resumed task remembers what people and tools told it: after a restart (the task left
/// `running` by a graceful stop, requeued at the next start) and after `run --resume` of
/// its saved trajectory, the next prompt still holds the user's answer and the MCP tool's
/// result, not only the steps.
#[tokio::test]
async fn a_resumed_task_remembers_answers_and_tool_results() {
    let e = env(RunnerConfig {
        stuck_threshold: 100,
        ..quick()
    })
    .await;
    e.runner.mcp.register("calendar", Arc::new(Calendar));
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "set the alarm", 50, "sim-1").await;
    let id = task.id;
    let script = vec![
        Action::AskUser {
            question: "What time should the alarm ring?".into(),
            options: None,
        },
        Action::McpCall {
            tool: "calendar".into(),
            args: json!({}),
        },
    ]
    .into_iter()
    .chain(std::iter::repeat_n(Action::Wait { ms: 10 }, 40))
    .collect();
    let (tx, rx) = watch::channel(StopSignal::None);
    let runner = e.runner.clone();
    let first = tokio::spawn(async move {
        runner
            .run(task, phone, Box::new(ReplayAgent::new(script)), rx)
            .await
    });
    for _ in 0..500 {
        if e.store.get_task(id).await.unwrap().status == TaskStatus::WaitingForUser {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    e.runner
        .prompts
        .answer(&e.runner.bus, id, None, "7:30", "rest")
        .await
        .unwrap();
    for _ in 0..500 {
        if e.store.steps(id).await.unwrap().len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A graceful stop that resumes at the next start, then that start.
    tx.send(StopSignal::Suspend).unwrap();
    let left = first.await.unwrap().unwrap();
    assert_eq!(left.status, TaskStatus::Running);
    assert_eq!(
        e.store.recover_running(true, "restart").await.unwrap(),
        vec![id]
    );
    assert!(e.store.start_task(id, "sim-1").await.unwrap());
    let resumed = e.store.get_task(id).await.unwrap();
    let text = history_on_resume(&e, resumed).await;
    assert!(
        text.contains("7:30"),
        "the answer is gone after a restart:\n{text}"
    );
    assert!(
        text.contains("dentist on Monday at 9:00"),
        "the tool result is gone after a restart:\n{text}"
    );

    // The same through a saved trajectory (`droidpilot run --resume`).
    let saved = droidpilot::run::trajectory::Trajectory::build(e.store.as_ref(), id)
        .await
        .unwrap();
    let bundle = droidpilot::run::trajectory::TrajectoryBundle {
        trajectory: saved,
        screenshots: Default::default(),
    };
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("set the alarm".into()),
        max_steps: Some(100),
        ..Default::default()
    })
    .unwrap();
    let again = e.store.create_task(spec).await.unwrap();
    bundle
        .seed_task(e.store.as_ref(), &e.runner.artifacts, again.id)
        .await
        .unwrap();
    assert!(e.store.start_task(again.id, "sim-1").await.unwrap());
    let again = e.store.get_task(again.id).await.unwrap();
    let text = history_on_resume(&e, again).await;
    assert!(text.contains("7:30"), "{text}");
    assert!(text.contains("dentist on Monday at 9:00"), "{text}");
}

/// An OpenAI Chat Completions reply that calls `tool` with `args`.
fn tool_call(tool: &str, args: serde_json::Value) -> wiremock::ResponseTemplate {
    wiremock::ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": tool, "arguments": args.to_string()}}]},
            "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    }))
}

/// A navigator spec for the wiremock model server `server`, and defaults that allow it as
/// an operator's keyless model server.
fn navigator_on(
    server: &wiremock::MockServer,
) -> (
    droidpilot::agent::AgentSpec,
    droidpilot::agent::AgentDefaults,
) {
    let spec = droidpilot::agent::AgentSpec::from_json(&json!({
        "kind": "navigator", "provider": "openai", "model": "m",
        "base_url": format!("{}/v1", server.uri())
    }))
    .unwrap();
    let defaults = droidpilot::agent::AgentDefaults {
        allowed_base_urls: vec![server.uri()],
        ..Default::default()
    };
    (spec, defaults)
}

/// A navigator against a model server that answers, in order: an unknown tool then
/// `home` (a self-correction), two unknown tools (a rejected answer), then `finish`.
/// Every step has one number in the store, its `step.decided` event and the agent's
/// history, and every call the server answered is counted, the rejected answer's too.
#[tokio::test]
async fn step_numbers_agree_and_every_model_call_is_counted() {
    use wiremock::matchers::method;
    let server = wiremock::MockServer::start().await;
    let replies = [
        tool_call("fly", json!({})),
        tool_call("home", json!({})),
        tool_call("fly", json!({})),
        tool_call("soar", json!({})),
        tool_call("finish", json!({"success": true})),
    ];
    for r in replies {
        wiremock::Mock::given(method("POST"))
            .respond_with(r)
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let (spec, mut defaults) = navigator_on(&server);
    defaults.navigator.backoff_ms = 1;
    let agent = droidpilot::agent::build_agent(&spec, &defaults).unwrap();
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "go home", 20, "sim-1").await;
    let done = e.runner.run(task, phone, agent, no_stop()).await.unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let asked = server.received_requests().await.unwrap();
    assert_eq!(asked.len(), 5);
    assert_eq!(done.model_calls, 5, "every call the model server answered");
    let steps = e.store.steps(done.id).await.unwrap();
    let numbers: Vec<u32> = steps.iter().map(|s| s.n).collect();
    assert_eq!(numbers, vec![1, 2, 3]);
    assert_eq!(steps[1].outcome.status, "rejected");
    assert_eq!(steps[1].model_calls, 2);
    let decided: Vec<u32> = e
        .store
        .events_since(&done.id.to_string(), 0, 200)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|ev| match ev.event {
            TaskEvent::StepDecided { step, .. } => Some(step),
            _ => None,
        })
        .collect();
    assert_eq!(decided, vec![1, 3], "step.decided numbers the stored steps");
    // The last prompt's history numbers `home` as step 1, as the store does.
    let last = String::from_utf8(asked[4].body.clone()).unwrap();
    assert!(last.contains("1. key key="), "{last}");
}

/// A `replay` of actions that change nothing (`home` on the home screen, waits) runs its
/// list to the end: no "I seem to be stuck" question, no `step.stuck`.
#[tokio::test]
async fn a_replay_that_changes_nothing_is_never_asked_if_it_is_stuck() {
    let e = env(RunnerConfig {
        ask_user_when_stuck: true,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "press home", 20, "sim-1").await;
    let home = Action::Key {
        key: droidpilot::domain::Key::Home,
    };
    let list = [home.clone(), Action::Wait { ms: 100 }]
        .into_iter()
        .cycle()
        .take(8)
        .collect();
    let done = run_bounded(&e, task, phone, Box::new(ReplayAgent::new(list))).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert_eq!(done.steps, 9, "eight actions and the finish");
    assert!(e.store.interventions(done.id).await.unwrap().is_empty());
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 200)
        .await
        .unwrap();
    assert!(!events.iter().any(|ev| ev.kind() == "step.stuck"));
}

/// A model agent going round two screens (open the same app, go back, again) is stuck:
/// no screen repeats back to back, yet the detector sends a diagnostic.
#[tokio::test]
async fn a_model_going_round_two_screens_is_stuck() {
    let e = env(RunnerConfig {
        ask_user_when_stuck: false,
        ..quick()
    })
    .await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "open the clock", 30, "sim-1").await;
    let open = Action::LaunchApp {
        app: droidpilot::domain::AppRef::Package("com.google.android.deskclock".into()),
    };
    let home = Action::Key {
        key: droidpilot::domain::Key::Home,
    };
    let round: Vec<Action> = [open, home].into_iter().cycle().take(24).collect();
    let done = run_bounded(
        &e,
        task,
        phone,
        Box::new(AsIfModel(ReplayAgent::new(round))),
    )
    .await;
    assert_eq!(done.status, TaskStatus::Failed, "{:?}", done.reason);
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 500)
        .await
        .unwrap();
    let stuck: Vec<(u32, String)> = events
        .iter()
        .filter_map(|ev| match &ev.event {
            TaskEvent::StepStuck { step, why, .. } => Some((*step, why.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(stuck[0].0, 4, "{stuck:?}");
    assert!(stuck[0].1.contains("same 2 screens"), "{stuck:?}");
    assert!(done.reason.unwrap().starts_with("stuck:"));
}

/// A task with these budgets, claimed by `sim-1`.
async fn start_budgeted(
    store: &Arc<dyn Store>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("keep going".into()),
        max_steps: Some(50),
        max_tokens,
        max_cost_usd,
        ..Default::default()
    })
    .unwrap();
    let t = store.create_task(spec).await.unwrap();
    assert!(store.start_task(t.id, "sim-1").await.unwrap());
    store.get_task(t.id).await.unwrap()
}

/// Budgets beyond steps and time: a navigator whose every call uses 110 tokens and costs
/// $0.00014 fails with `budget_exceeded` naming the budget it used up, the task's own
/// or the server's default, at the first step boundary past it (the third call).
#[tokio::test]
async fn a_task_past_its_token_or_cost_budget_fails_saying_which() {
    use wiremock::matchers::method;
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .respond_with(tool_call("home", json!({})))
        .mount(&server)
        .await;
    let (spec, mut defaults) = navigator_on(&server);
    let price = droidpilot::llm::ModelPrice {
        input_per_mtok: 1.0,
        output_per_mtok: 4.0,
        cached_input_per_mtok: None,
    };
    defaults.prices = droidpilot::llm::PriceTable([("m".to_string(), price)].into());
    let cases = [
        (None, Some(250), None, "max_tokens (250)"),
        (None, None, Some(0.0003), "max_cost_usd (0.0003)"),
        (Some(250), None, None, "max_tokens (250)"),
    ];
    for (server_default, max_tokens, max_cost_usd, named) in cases {
        let e = env(RunnerConfig {
            stuck_threshold: 100,
            max_tokens: server_default.unwrap_or(0),
            ..quick()
        })
        .await;
        let phone = Arc::new(SimDevice::new(small()).unwrap());
        let task = start_budgeted(&e.store, max_tokens, max_cost_usd).await;
        let agent = droidpilot::agent::build_agent(&spec, &defaults).unwrap();
        let done = run_bounded(&e, task, phone, agent).await;
        assert_eq!(
            done.status,
            TaskStatus::Failed,
            "{named}: {:?}",
            done.reason
        );
        let reason = done.reason.unwrap();
        assert!(
            reason.starts_with("budget_exceeded: ") && reason.contains(named),
            "{reason}"
        );
        assert_eq!((done.steps, done.model_calls), (3, 3), "{named}");
    }
}

/// Types a secret it was given, then finishes, keeping the history it saw before finishing.
struct TypesASecret {
    secret: String,
    seen: Arc<std::sync::Mutex<String>>,
    typed: bool,
}
#[async_trait]
impl Agent for TypesASecret {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        if !self.typed {
            self.typed = true;
            return Ok(Decision::local(Action::Type {
                text: format!("user {}", self.secret),
                target: None,
                clear_first: false,
            }));
        }
        *self.seen.lock().unwrap() = ctx.history.render();
        Ok(Decision::local(Action::Finish {
            success: true,
            reason: None,
            answer: None,
        }))
    }
    fn describe(&self) -> String {
        "types a secret".into()
    }
    fn secrets(&self) -> Vec<String> {
        vec![self.secret.clone()]
    }
}

/// A value an agent holds as a secret (a replay's `"secret": true` text, a script's secret
/// input) is typed into the phone but recorded as `••••`: in the stored step, its events,
/// and the history a recovery model would read.
#[tokio::test]
async fn a_secret_an_agent_types_is_recorded_masked_everywhere() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "sign in", 5, "sim-1").await;
    let secret = "hunter2-canary".to_string();
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let agent = TypesASecret {
        secret: secret.clone(),
        seen: seen.clone(),
        typed: false,
    };
    let done = e
        .runner
        .run(task.clone(), phone, Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let steps = e.store.steps(task.id).await.unwrap();
    let typed = steps
        .iter()
        .find(|s| matches!(s.action, Some(Action::Type { .. })))
        .expect("the type step is recorded");
    assert!(
        matches!(&typed.action, Some(Action::Type { text, .. }) if text == "••••"),
        "{typed:?}"
    );
    let stored = serde_json::to_string(&steps).unwrap();
    assert!(!stored.contains(&secret), "{stored}");
    let events = e
        .store
        .events_since(&task.id.to_string(), 0, 1000)
        .await
        .unwrap();
    let events = serde_json::to_string(&events).unwrap();
    assert!(!events.contains(&secret), "{events}");
    let history = seen.lock().unwrap().clone();
    assert!(
        history.contains("••••"),
        "the step is in the history: {history}"
    );
    assert!(!history.contains(&secret), "{history}");
}

/// A slow decision: while the "model" thinks, the phone's clock runs `think_ms` (a
/// contacts list that was syncing finishes and its rows move up one row). It then taps
/// the contact `name` by the element id it read, and finishes at the next step.
struct SlowPicker {
    phone: Arc<SimDevice>,
    name: &'static str,
    think_ms: u64,
    tapped: bool,
}
#[async_trait]
impl Agent for SlowPicker {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        if self.tapped {
            return Ok(Decision::local(Action::Finish {
                success: true,
                reason: None,
                answer: None,
            }));
        }
        self.tapped = true;
        let el = ctx.observation.screen.actionable_elements.iter();
        let id = el
            .clone()
            .find(|e| e.text.contains(self.name))
            .unwrap_or_else(|| panic!("{} on screen", self.name))
            .element_id;
        self.phone.advance_clock(self.think_ms);
        let target = droidpilot::domain::action::TargetField(
            droidpilot::domain::action::Target::Element(id),
        );
        Ok(Decision::local(Action::Tap { target }))
    }
    fn describe(&self) -> String {
        "slow picker".into()
    }
}

/// The contacts list open on a phone whose lists sync for `delay_ms` after opening.
async fn syncing_contacts(delay_ms: u64) -> Arc<SimDevice> {
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    phone
        .set_faults(droidpilot::device::sim::SimFaults {
            delayed_elements_ms: delay_ms,
            ..Default::default()
        })
        .unwrap();
    let contacts = droidpilot::domain::AppRef::Label("Contacts".into());
    phone.launch_app(&contacts).await.unwrap();
    phone
}

async fn pick(e: &Env, phone: &Arc<SimDevice>, think_ms: u64) -> Task {
    let task = start(&e.store, "open Alice Martin's contact", 5, "sim-1").await;
    let agent = SlowPicker {
        phone: phone.clone(),
        name: "Alice Martin",
        think_ms,
        tapped: false,
    };
    e.runner
        .run(task, phone.clone(), Box::new(agent), no_stop())
        .await
        .unwrap()
}

/// A screen that moves between observing and acting (the list finishes syncing while
/// the model decides, its rows move up) makes the step find its target again: the tap
/// lands on the contact the agent chose, not on the row now where it was, and the step
/// says so (a `stale_screen` annotation, and its event).
#[tokio::test]
async fn a_target_that_moved_while_the_model_decided_is_re_resolved() {
    let e = env(RunnerConfig {
        stale_check_after_ms: 0,
        ..quick()
    })
    .await;
    let phone = syncing_contacts(3_000).await;
    assert!(phone.hierarchy_now().contains("Syncing"), "the list syncs");
    let done = pick(&e, &phone, 5_000).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let now = phone.hierarchy_now();
    assert!(now.contains("+1 555 0101"), "Alice's contact is open");
    assert!(
        !now.contains("Bob Smith"),
        "not the row that moved under the tap"
    );
    let steps = e.store.steps(done.id).await.unwrap();
    let stale = steps[0].annotations.iter().find_map(|a| match a {
        droidpilot::domain::Annotation::StaleScreen {
            outcome,
            before,
            after,
            ..
        } => Some((*outcome, *before, *after)),
        _ => None,
    });
    let (outcome, before, after) = stale.expect("the step records the stale screen");
    assert_eq!(outcome, droidpilot::domain::StaleOutcome::Moved);
    assert!(after.unwrap().top < before.top, "found one row up");
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 100)
        .await
        .unwrap();
    assert!(events.iter().any(|ev| ev.kind() == "step.annotated"));
}

/// When nothing moved, the check costs one screenshot and no dump: the slow decision
/// acts as decided and the step carries no annotation.
#[tokio::test]
async fn an_unchanged_screen_costs_the_check_a_screenshot_not_a_dump() {
    let count = |cfg: RunnerConfig| async move {
        let e = env(cfg).await;
        let phone = syncing_contacts(0).await;
        let done = pick(&e, &phone, 0).await;
        assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
        assert!(phone.hierarchy_now().contains("+1 555 0101"));
        let steps = e.store.steps(done.id).await.unwrap();
        assert!(
            steps[0].annotations.is_empty(),
            "{:?}",
            steps[0].annotations
        );
        phone.counts()
    };
    let off = count(RunnerConfig {
        stale_check: false,
        ..quick()
    })
    .await;
    let on = count(RunnerConfig {
        stale_check_after_ms: 0,
        ..quick()
    })
    .await;
    assert_eq!(on.dumps, off.dumps, "no dump added when nothing changed");
    assert_eq!(
        on.screencaps,
        off.screencaps + 1,
        "one screenshot for the check"
    );
}

/// A failed device action keeps its context: the screen after the failure is captured,
/// stored and named in the step's error and the task's reason, and each retry is on the
/// step (attempt, error) and an `action.retry` event.
#[tokio::test]
async fn a_failed_action_records_its_retries_and_the_screen_after_it() {
    let e = env(quick()).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let task = start(&e.store, "tap a ghost", 10, "sim-1").await;
    let tap = Action::Tap {
        target: droidpilot::domain::action::TargetField(droidpilot::domain::Target::Selector(
            "#no_such_button".into(),
        )),
    };
    let done = e
        .runner
        .run(
            task,
            phone,
            Box::new(ReplayAgent::new(vec![tap])),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Failed);
    let s = &e.store.steps(done.id).await.unwrap()[0];
    let detail = s.outcome.detail.as_ref().unwrap();
    let sha = detail["after_failure"]["screenshot"]
        .as_str()
        .expect("captured");
    assert!(e.store.artifact(sha).await.unwrap().is_some(), "stored");
    let named = format!("the screen after the failure: screenshot {sha}");
    assert!(
        s.outcome.error.as_deref().unwrap().contains(&named),
        "{:?}",
        s.outcome
    );
    assert!(
        done.reason.as_deref().unwrap().contains(&named),
        "{:?}",
        done.reason
    );
    // max_retries = 2: three attempts, two retried.
    assert_eq!(detail["attempts"], 3, "{detail}");
    let retries = detail["retries"].as_array().unwrap();
    assert_eq!(retries.len(), 2);
    for (i, r) in retries.iter().enumerate() {
        assert_eq!(r["attempt"], i as u64 + 1);
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with("element_not_found"),
            "{r}"
        );
    }
    let events = e
        .store
        .events_since(&done.id.to_string(), 0, 100)
        .await
        .unwrap();
    let retried: Vec<_> = events
        .iter()
        .filter(|ev| ev.kind() == "action.retry")
        .collect();
    assert_eq!(retried.len(), 2, "one event per retry");
}

/// Plays `actions` as a model would (its device context read; watched by the stuck
/// detector), then finishes; keeps every prompt it was given.
struct Prompted {
    actions: std::collections::VecDeque<Action>,
    prompts: Arc<std::sync::Mutex<Vec<String>>>,
}

#[async_trait]
impl Agent for Prompted {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.prompts.lock().unwrap().push(ctx.prompt_text());
        let a = self.actions.pop_front().unwrap_or(Action::Finish {
            success: true,
            reason: None,
            answer: None,
        });
        Ok(Decision::local(a))
    }
    fn describe(&self) -> String {
        "prompted".into()
    }
    fn wants_device_context(&self) -> bool {
        true
    }
}

/// The phone's keyboard "corrects" whatever is typed into the focused field.
struct Autocorrect(Arc<SimDevice>);

#[async_trait]
impl droidpilot::run::hooks::RunHook for Autocorrect {
    async fn after_act(
        &self,
        _at: droidpilot::run::hooks::StepRef,
        action: &Action,
        _outcome: &Result<serde_json::Value, String>,
    ) {
        if let Action::Type { .. } = action {
            let mut st = self.0.state();
            if let Some(f) = st.focus.clone() {
                st.fields.insert(f, "hellp wrld".into());
            }
            self.0.set_state(st);
        }
    }
}

fn browse_and_type() -> std::collections::VecDeque<Action> {
    let p = droidpilot::domain::ActionParser::new();
    [
        json!({"action": "launch_app", "package": "com.android.chrome"}),
        json!({"action": "tap", "selector": "#url_bar"}),
        json!({"action": "type", "text": "hello world"}),
        json!({"action": "wait", "ms": 10}),
    ]
    .iter()
    .map(|a| p.parse(a).unwrap())
    .collect()
}

/// Runs `browse_and_type` on a fresh phone with `cfg`; the prompts, the task's steps and
/// the device queries (`pm`, `dumpsys`) the phone answered.
async fn prompted_run(
    cfg: RunnerConfig,
    autocorrect: bool,
) -> (Vec<String>, Vec<droidpilot::domain::Step>, u64) {
    prompted_run_of(cfg, autocorrect, browse_and_type()).await
}

async fn prompted_run_of(
    cfg: RunnerConfig,
    autocorrect: bool,
    actions: std::collections::VecDeque<Action>,
) -> (Vec<String>, Vec<droidpilot::domain::Step>, u64) {
    let e = env(cfg).await;
    let phone = Arc::new(SimDevice::new(small()).unwrap());
    let runner = match autocorrect {
        true => e
            .runner
            .clone()
            .with_hook(Arc::new(Autocorrect(phone.clone()))),
        false => e.runner.clone(),
    };
    let prompts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let agent = Prompted {
        actions,
        prompts: prompts.clone(),
    };
    let task = start(&e.store, "search the web", 20, "sim-1").await;
    let done = runner
        .run(task.clone(), phone.clone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let steps = e.store.steps(task.id).await.unwrap();
    let p = prompts.lock().unwrap().clone();
    (p, steps, phone.counts().queries)
}

/// What a model agent is told beside the screen, step by step: the step counter with the
/// time elapsed, the keyboard once it is open (with the windows: the navigation handle, the keyboard, the app),
/// and, after a `type` the field does not show as typed, the mismatch (also an
/// annotation on the step that sees it).
#[tokio::test]
async fn the_step_header_keyboard_line_and_typed_text_check_reach_the_prompt() {
    let (prompts, steps, _) = prompted_run(
        RunnerConfig {
            stuck_threshold: 100,
            ..quick()
        },
        true,
    )
    .await;
    assert_eq!(prompts.len(), 5, "{prompts:#?}");
    for (i, p) in prompts.iter().enumerate() {
        let header = format!("Step {} of 20 (", i + 1);
        assert!(p.contains(&header) && p.contains("s elapsed)."), "{p}");
    }
    assert!(
        !prompts[1].contains("the soft keyboard is open"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[2].contains("the soft keyboard is open"),
        "{}",
        prompts[2]
    );
    assert!(
        prompts[2].contains(
            "windows (top first): com.android.systemui, com.google.android.inputmethod.latin, com.android.chrome."
        ),
        "{}",
        prompts[2]
    );
    let told = "you typed \"hello world\" but the field shows \"hellp wrld\"";
    assert!(!prompts[2].contains(told));
    assert!(prompts[3].contains(told), "{}", prompts[3]);
    let mismatch = serde_json::to_value(&steps[3].annotations).unwrap();
    assert_eq!(mismatch[0]["kind"], "typed_text_mismatch", "{mismatch}");
    assert_eq!(mismatch[0]["actual"], "hellp wrld");

    // Typed as it shows: no mismatch.
    let (prompts, steps, _) = prompted_run(
        RunnerConfig {
            stuck_threshold: 100,
            ..quick()
        },
        false,
    )
    .await;
    assert!(!prompts[3].contains("you typed"), "{}", prompts[3]);
    assert!(
        steps[3].annotations.is_empty(),
        "{:?}",
        steps[3].annotations
    );
}

/// The installed apps are read once per `installed_apps_ttl_secs`: with the default
/// (300 s) once for the whole task, with 0 at every step.
#[tokio::test]
async fn the_installed_apps_are_read_again_only_after_their_ttl() {
    let cfg = |ttl| RunnerConfig {
        stuck_threshold: 100,
        installed_apps_ttl_secs: ttl,
        ..quick()
    };
    let (cached, steps, q_cached) = prompted_run(cfg(300), false).await;
    let (_, _, q_every) = prompted_run(cfg(0), false).await;
    assert_eq!(
        q_every - q_cached,
        steps.len() as u64 - 1,
        "one more `pm list` per step after the first"
    );
    assert!(
        cached
            .iter()
            .all(|p| p.contains("Chrome (com.android.chrome)")),
        "{cached:#?}"
    );
}

/// A screen that needs care gets its safety directive in the next prompt, after the
/// screen's lines, and the step records it: Shop's first open asks for a permission.
#[tokio::test]
async fn a_permission_dialog_brings_its_safety_directive_and_the_step_records_it() {
    let open_shop = droidpilot::domain::ActionParser::new()
        .parse(&json!({"action": "launch_app", "package": "com.droidpilot.shop"}))
        .unwrap();
    let (prompts, steps, _) = prompted_run_of(quick(), false, [open_shop].into()).await;
    assert!(!prompts[0].contains("Careful:"), "{}", prompts[0]);
    let (_, careful) = prompts[1]
        .split_once("Careful: A permission dialog is open.")
        .unwrap_or_else(|| panic!("no directive in {}", prompts[1]));
    assert!(
        !careful.contains("Step 2 of"),
        "said after the per-step lines: {}",
        prompts[1]
    );
    let notes = serde_json::to_value(&steps[1].annotations).unwrap();
    assert_eq!(
        (&notes[0]["kind"], &notes[0]["name"]),
        (&json!("safety_directive"), &json!("permission")),
        "{notes}"
    );
    assert!(steps[0].annotations.is_empty());
}
