//! Split-screen tasks end to end on the virtual phone: the `split` agent puts two apps
//! side by side and runs one loop per window inside the task's one runner (one lease),
//! each window's agent the eval's no-model agent (a replay of the window's reference
//! solution), and the phone's own checker says whether the task got done.

use std::sync::Arc;

use droidpilot::agent::{AgentDefaults, AgentSpec, build_agent};
use droidpilot::config::{Config, Overrides};
use droidpilot::core::Core;
use droidpilot::device::sim::tasks::split::{SplitTask, split_tasks};
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::domain::{Annotation, NewTask, Step, Task, TaskSpec, TaskStatus};
use droidpilot::run::stop::StopSignal;
use serde_json::{Value, json};
use tokio::sync::watch;

async fn core(dir: &std::path::Path) -> Core {
    let overrides = Overrides {
        data_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let mut config = Config::load_with_env(dir, &overrides, Vec::new()).unwrap();
    config.devices.sim.clear();
    config.runner.retry_backoff_ms = vec![10];
    config.runner.settle_timeout_ms = 300;
    config.runner.settle_poll_ms = 10;
    Core::build(&config).await.unwrap()
}

async fn start(core: &Core, instruction: &str) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(instruction.into()),
        max_steps: Some(40),
        ..Default::default()
    })
    .unwrap();
    let t = core.store.create_task(spec).await.unwrap();
    assert!(core.store.start_task(t.id, "sim-1").await.unwrap());
    core.store.get_task(t.id).await.unwrap()
}

fn no_stop() -> watch::Receiver<StopSignal> {
    let (tx, rx) = watch::channel(StopSignal::None);
    std::mem::forget(tx);
    rx
}

fn replay(actions: Vec<Value>) -> Value {
    json!({"kind": "replay", "actions": actions})
}

fn reference(w: &droidpilot::device::sim::tasks::split::WindowTask) -> Vec<Value> {
    w.reference()
        .iter()
        .map(|a| serde_json::to_value(a).unwrap())
        .collect()
}

fn split_agent(t: &SplitTask, top: Value, bottom: Value) -> Value {
    json!({"kind": "split", "windows": [
        {"app": t.top.app.label(), "goal": t.top.goal, "agent": top},
        {"app": t.bottom.app.label(), "goal": t.bottom.goal, "agent": bottom}]})
}

/// Runs `agent` on a phone in `t`'s initial state; the task, its steps and the phone.
async fn run(t: &SplitTask, agent: Value) -> (Task, Vec<Step>, Arc<SimDevice>) {
    let dir = tempfile::tempdir().unwrap();
    let core = core(dir.path()).await;
    let phone = Arc::new(
        SimDevice::new(SimConfig {
            width: 540,
            height: 1200,
            ..SimConfig::default()
        })
        .unwrap(),
    );
    phone.set_state(t.initial_state());
    let spec = AgentSpec::from_json(&agent).unwrap();
    let agent = build_agent(&spec, &AgentDefaults::default()).unwrap();
    let task = start(&core, t.instruction).await;
    let done = core
        .runner
        .run(task, phone.clone(), agent, no_stop())
        .await
        .unwrap();
    let steps = core.store.steps(done.id).await.unwrap();
    (done, steps, phone)
}

/// The window events of a step (`window`, `event`).
fn windows(s: &Step) -> Vec<(String, String)> {
    s.annotations
        .iter()
        .filter_map(|a| match a {
            Annotation::Window { window, event, .. } => Some((window.clone(), event.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_example_tasks_succeed_with_a_loop_per_window() {
    for t in split_tasks() {
        let agent = split_agent(&t, replay(reference(&t.top)), replay(reference(&t.bottom)));
        let (done, steps, phone) = run(&t, agent).await;
        assert_eq!(
            done.status,
            TaskStatus::Succeeded,
            "{}: {:?}",
            t.id,
            done.reason
        );
        assert!(t.check(&phone.state()), "{}: the checker disagrees", t.id);
        let answer = done.answer.clone().unwrap_or_default();
        assert!(
            answer.contains("top (") && answer.contains("bottom ("),
            "{answer}"
        );
        // Step 1 put both apps on screen; both stay there.
        assert_eq!(steps[0].action.as_ref().unwrap().name(), "split_screen");
        assert!(phone.state().split.is_some(), "{}", t.id);
        // Every window action is a step of its own, recorded for its window.
        for (half, w) in [("top", &t.top), ("bottom", &t.bottom)] {
            let acted = steps
                .iter()
                .filter(|s| windows(s).contains(&(half.into(), "acted".into())))
                .count();
            assert_eq!(acted, w.reference().len() - 1, "{} {half}", t.id);
            assert!(
                steps
                    .iter()
                    .any(|s| windows(s).contains(&(half.into(), "finished".into()))),
                "{} {half}",
                t.id
            );
        }
        assert!(
            steps.iter().all(|s| s.outcome.status == "ok"),
            "{}: {steps:?}",
            t.id
        );
    }
}

/// A window's action that lands in the other window is refused (a rejected step naming
/// the window), never reaches the phone, and the window's agent goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_outside_its_window_is_refused_and_recorded() {
    let t = split_tasks().remove(0);
    // The top window (Messages) taps low on the screen, in Notes' window: its "+".
    let stray = json!({"action": "tap", "coordinate": [0.85, 0.93]});
    let finish = json!({"action": "finish", "success": true, "answer": "ok"});
    let agent = split_agent(
        &t,
        replay(vec![stray, finish.clone()]),
        replay(vec![finish]),
    );
    let (done, steps, phone) = run(&t, agent).await;
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let refused: Vec<&Step> = steps
        .iter()
        .filter(|s| s.outcome.status == "rejected")
        .collect();
    assert_eq!(refused.len(), 1, "{steps:?}");
    let why = refused[0].outcome.error.clone().unwrap_or_default();
    assert!(why.contains("outside the top window (Messages)"), "{why}");
    // Notes never opened an editor: the tap did not run.
    let st = phone.state();
    assert!(
        !matches!(
            st.stacks
                .get(&droidpilot::device::sim::AppId::Notes)
                .and_then(|s| s.last()),
            Some(droidpilot::device::sim::Page::NoteEdit { .. })
        ),
        "{:?}",
        st.stacks
    );
}

/// `scroll_to_find` searches inside its own window: the top window (Messages) finds
/// its conversation, the bottom window (Notes) does not find it in Messages' half and
/// says so; a custom action nothing can keep inside one window (stopping an app) is
/// refused, and the split stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_actions_stay_inside_their_window() {
    let t = split_tasks().remove(0);
    let find =
        json!({"action": "scroll_to_find", "selector": ":text(\"Alice Martin\")", "max_swipes": 2});
    let stop = json!({"action": "stop_app", "package": "com.google.android.apps.messaging"});
    let finish = json!({"action": "finish", "success": true, "answer": "ok"});
    let agent = split_agent(
        &t,
        replay(vec![find.clone(), finish.clone()]),
        replay(vec![find, stop, finish]),
    );
    let (_, steps, phone) = run(&t, agent).await;
    let searches: Vec<&Step> = (steps.iter())
        .filter(|s| {
            s.action
                .as_ref()
                .is_some_and(|a| a.name() == "scroll_to_find")
        })
        .collect();
    assert_eq!(searches.len(), 2, "{steps:?}");
    let within =
        |s: &Step| serde_json::to_value(s.action.as_ref().unwrap()).unwrap()["within"].clone();
    let (top, bottom) = (searches[0], searches[1]);
    assert!(
        windows(top).contains(&("top".into(), "acted".into())),
        "{top:?}"
    );
    assert_eq!(top.outcome.status, "ok", "{top:?}");
    assert!(
        within(top).is_array() && within(top) != within(bottom),
        "{top:?}"
    );
    let why = bottom.outcome.error.clone().unwrap_or_default();
    assert!(
        bottom.outcome.status != "ok" && why.contains("is not on screen"),
        "{bottom:?}"
    );
    let refused: Vec<&Step> = (steps.iter())
        .filter(|s| s.outcome.status == "rejected")
        .collect();
    assert_eq!(refused.len(), 1, "{steps:?}");
    let why = refused[0].outcome.error.clone().unwrap_or_default();
    assert!(
        why.contains("`stop_app` cannot be kept inside the bottom window"),
        "{why}"
    );
    assert!(
        phone.state().split.is_some(),
        "both apps still side by side"
    );
}

/// The agent object is checked at submission, each mistake named by its path.
#[test]
fn split_specs_are_checked_by_field() {
    let d = AgentDefaults::default();
    let err = |v: Value| match AgentSpec::from_json(&v) {
        Err(e) => e,
        Ok(s) => s.validate(&d).unwrap_err(),
    };
    let w = |app: &str| json!({"app": app, "goal": "read it", "agent": {"kind": "replay", "actions": []}});
    assert_eq!(err(json!({"kind": "split"})).field, "windows");
    assert_eq!(
        err(json!({"kind": "split", "windows": [w("Notes")]})).field,
        "windows"
    );
    let same = err(json!({"kind": "split", "windows": [w("Notes"), w("notes")]}));
    assert_eq!(same.field, "windows[1].app");
    let nested = err(
        json!({"kind": "split", "windows": [w("Notes"), {"app": "Shop", "goal": "x", "agent": {"kind": "replya"}}]}),
    );
    assert!(nested.field.starts_with("windows[1].agent"), "{nested:?}");
    let stray = err(json!({"kind": "split", "model": "m", "windows": [w("Notes"), w("Shop")]}));
    assert_eq!(stray.field, "model");
    assert_eq!(
        err(json!({"kind": "navigator", "windows": []})).field,
        "windows"
    );
    let ok = AgentSpec::from_json(&json!({"kind": "split", "windows": [w("Notes"), w("Shop")]}))
        .unwrap();
    assert!(ok.validate(&d).is_ok());
}
