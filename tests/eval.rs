//! The eval engine (`droidpilot::bench::eval`) through the production path: one core,
//! its scheduler and runner, sim phones pinned per task; the phone's checker judges.

use droidpilot::bench::eval::{EvalOptions, RunRecord, report, run_eval, select};
use droidpilot::config::{Config, Overrides};
use droidpilot::domain::{ScreenSize, TaskStatus};
use serde_json::{Value, json};

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::load_with_env(dir, &Overrides::default(), Vec::new()).unwrap();
    // A question nobody answers fails its task at once: only the eval's answers keep
    // the ask_user tasks alive.
    c.runner.ask_user_timeout_secs = 1;
    c.runner.ask_user_timeout_policy = droidpilot::run::runner::AskTimeoutPolicy::Fail;
    c
}

fn opts(agent: Value, tasks: &[&str]) -> EvalOptions {
    EvalOptions {
        agent,
        tasks: tasks.iter().map(|s| s.to_string()).collect(),
        repeat: 1,
        parallel: 2,
        screen: ScreenSize {
            width: 540,
            height: 1200,
        },
    }
}

async fn eval(agent: Value, tasks: &[&str]) -> (Vec<RunRecord>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let r = run_eval(config(dir.path()), &opts(agent, tasks), &|_| {})
        .await
        .unwrap();
    let s = report::summary_json(&r);
    (r.runs, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_claims_done_at_once_is_a_false_success_on_every_task() {
    let finish = json!({"kind": "replay", "actions": [
        {"action": "finish", "success": true, "reason": "all done"}]});
    let patterns = ["notes.*", "shop.deny_*"];
    let (runs, s) = eval(finish, &patterns).await;
    let n = select(&patterns.map(String::from)).unwrap().len();
    assert_eq!(runs.len(), n, "{runs:?}");
    for r in &runs {
        assert_eq!(r.status, TaskStatus::Succeeded, "{r:?}");
        assert!(!r.checker && r.false_success, "{r:?}");
    }
    assert_eq!(s["false_success"], n);
    assert_eq!(s["success_rate"], 0.0);
    assert_eq!(s["succeeded"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_are_answered_from_the_tasks_facts_through_the_prompts() {
    let (runs, s) = eval(json!({"kind": "replay"}), &["*.ask_*"]).await;
    assert!(runs.len() >= 6, "{runs:?}");
    for r in &runs {
        // Unanswered, the question would time out and fail the task (see `config`).
        assert!(r.checker && r.status == TaskStatus::Succeeded, "{r:?}");
        assert_eq!(r.asked, 1, "{r:?}");
    }
    assert_eq!(s["asked"], runs.len());
    assert_eq!(s["success_rate"], 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tapping_a_dead_spot_over_and_over_is_counted_as_a_loop() {
    // The status bar on the home screen: nothing changes, so the stuck detector fires
    // (a diagnostic, then a question to the user, which the eval answers).
    let tap = json!({"action": "tap", "coordinate": [0.5, 0.01]});
    let agent = json!({"kind": "replay", "actions": [tap, tap, tap, tap, tap, tap, tap]});
    let (runs, s) = eval(agent, &["clock.open_from_home"]).await;
    let r = &runs[0];
    assert!(r.loops >= 2, "{r:?}");
    assert!(r.asked >= 1, "the stuck escalation asks the user: {r:?}");
    assert!(!r.checker);
    assert_eq!(s["loops"], 1);
    // The reference solution of the same task is no loop.
    let (runs, s) = eval(json!({"kind": "replay"}), &["clock.open_from_home"]).await;
    assert_eq!((runs[0].loops, s["loops"].clone()), (0, json!(0)));
}

#[tokio::test]
async fn bad_patterns_and_agents_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_eval(
        config(dir.path()),
        &opts(json!({"kind": "replay"}), &["calendar.*"]),
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("`calendar.*`"), "{err}");
    assert!(err.hint().contains("clock"), "{}", err.hint());
    let err = run_eval(
        config(dir.path()),
        &opts(json!({"kind": "replay", "actoins": []}), &[]),
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("did you mean `actions`"), "{err}");
}
