//! The eval engine (`droidpilot::bench::eval`) through the production path: one core,
//! its scheduler and runner, sim phones pinned per task; the phone's checker judges.

use droidpilot::bench::eval::{EvalOptions, RunRecord, report, run_eval, select};
use droidpilot::bench::oracle::OracleMode;
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
        model_server: None,
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
async fn a_model_pressing_home_over_and_over_is_counted_as_a_loop() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    // A model that answers `home` on the home screen: nothing changes, so the stuck
    // detector fires (a diagnostic, then a question to the user, which the eval answers).
    let server = MockServer::start().await;
    let home = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
            "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "home", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(home))
        .mount(&server)
        .await;
    let agent = json!({"kind": "navigator", "provider": "openai", "model": "m",
        "base_url": format!("{}/v1", server.uri())});
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.agent.keys.openai = Some(droidpilot::llm::ApiKey::new("sk-test"));
    let r = run_eval(c, &opts(agent, &["clock.open_from_home"]), &|_| {})
        .await
        .unwrap();
    let s = report::summary_json(&r);
    let r = &r.runs[0];
    assert!(r.loops >= 2, "{r:?}");
    assert!(r.asked >= 1, "the stuck escalation asks the user: {r:?}");
    assert!(!r.checker);
    assert_eq!(s["loops"], 1);
    // The reference solution of the same task is no loop.
    let (runs, s) = eval(json!({"kind": "replay"}), &["clock.open_from_home"]).await;
    assert_eq!((runs[0].loops, s["loops"].clone()), (0, json!(0)));
}

/// A fixed list of actions that leaves the screen as it is (waits, `home` on the home
/// screen) is not asked "I seem to be stuck": nobody's answer can change a fixed list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_that_changes_nothing_is_not_asked_if_it_is_stuck() {
    let home = json!({"action": "home"});
    let wait = json!({"action": "wait", "ms": 200});
    let agent = json!({"kind": "replay", "actions": [home, wait, home, wait, home, wait, home]});
    let (runs, _) = eval(agent, &["clock.open_from_home"]).await;
    let r = &runs[0];
    assert_eq!((r.loops, r.asked), (0, 0), "{r:?}");
    assert_eq!(r.status, TaskStatus::Succeeded, "{r:?}");
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
    // Each app is named once, however many tasks it has.
    let hint = err.hint();
    let apps = hint
        .split("apps: ")
        .nth(1)
        .and_then(|s| s.split(". ").next())
        .unwrap_or_else(|| panic!("no app list in {hint}"));
    let listed: Vec<&str> = apps.split(", ").collect();
    let mut unique = listed.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(listed.len(), unique.len(), "an app is repeated: {hint}");
    let want: std::collections::BTreeSet<&str> = droidpilot::device::sim::tasks()
        .iter()
        .filter_map(|t| t.id.split('.').next())
        .collect();
    assert_eq!(unique, want.into_iter().collect::<Vec<_>>(), "{hint}");
    let err = run_eval(
        config(dir.path()),
        &opts(json!({"kind": "replay", "actoins": []}), &[]),
        &|_| {},
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("did you mean `actions`"), "{err}");
}

fn with_oracle(agent: Value, tasks: &[&str], mode: OracleMode) -> EvalOptions {
    EvalOptions {
        model_server: Some(mode),
        ..opts(agent, tasks)
    }
}

async fn eval_with(o: EvalOptions) -> (Vec<RunRecord>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let r = run_eval(config(dir.path()), &o, &|_| {}).await.unwrap();
    let s = report::summary_json(&r);
    (r.runs, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_agent_on_the_oracle_server_solves_the_clock_tasks_and_every_role_is_counted() {
    let o = with_oracle(
        json!({"kind": "planned"}),
        &["clock.*"],
        OracleMode::Faithful,
    );
    let (runs, s) = eval_with(o).await;
    assert!(runs.len() >= 8, "{runs:?}");
    for r in &runs {
        assert!(r.checker && r.status == TaskStatus::Succeeded, "{r:?}");
        // Every step is one acting call over HTTP, plus the planner and the verifier.
        assert!(r.model_calls > r.steps as u64, "{r:?}");
        assert!(r.tokens.input > 0 && r.tokens.output > 0, "{r:?}");
        assert!(r.roles["actor"].calls >= r.steps as u64, "{r:?}");
        assert_eq!(
            r.roles["verifier"].calls, 1,
            "one finish, verified once: {r:?}"
        );
        let sum: u64 = r.roles.values().map(|u| u.calls).sum();
        assert_eq!(sum, r.model_calls, "{r:?}");
        assert!(!r.false_success && r.verifier_catches == 0, "{r:?}");
    }
    assert_eq!(s["success_rate"], 1.0);
    assert_eq!(s["agent"]["model_server"], "oracle");
    assert_eq!(s["roles"]["verifier"]["calls"], runs.len());
    // The plan is asked for in the background at step 1; a task that ends before it
    // arrives has its call on no step, so the planner is counted over all runs.
    assert!(s["roles"]["planner"]["calls"].as_u64().unwrap() > 0, "{s}");
    assert!(s["roles"]["progress"]["calls"].as_u64().unwrap() > 0, "{s}");
    assert!(report::format_table(&s).contains("model calls by role (all runs): actor "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flawed_acting_model_is_caught_by_the_verifier_and_without_it_is_a_false_success() {
    let tasks = ["clock.two_alarms", "clock.open_from_home"];
    let o = with_oracle(json!({"kind": "planned"}), &tasks, OracleMode::Flawed);
    let (runs, s) = eval_with(o).await;
    let by_id = |runs: &[RunRecord], id: &str| runs.iter().find(|r| r.id == id).unwrap().clone();
    let (hard, easy) = (by_id(&runs, tasks[0]), by_id(&runs, tasks[1]));
    // The early finish on the hard task is refused on the phone's state; it goes on.
    assert_eq!(hard.verifier_catches, 1, "{hard:?}");
    assert!(
        hard.checker && hard.status == TaskStatus::Succeeded,
        "{hard:?}"
    );
    assert_eq!(hard.roles["verifier"].calls, 2, "{hard:?}");
    assert_eq!(easy.verifier_catches, 0, "{easy:?}");
    assert_eq!(
        (s["verifier_catches"].clone(), s["success_rate"].clone()),
        (json!(1), json!(1.0))
    );

    let unverified = json!({"kind": "planned", "planning": {"verify_finish": false}});
    let (runs, s) = eval_with(with_oracle(unverified, &tasks, OracleMode::Flawed)).await;
    let (hard, easy) = (by_id(&runs, tasks[0]), by_id(&runs, tasks[1]));
    assert!(hard.false_success && !hard.checker, "{hard:?}");
    assert!(!hard.roles.contains_key("verifier"), "{hard:?}");
    assert!(easy.checker, "{easy:?}");
    assert_eq!(
        (s["false_success"].clone(), s["success_rate"].clone()),
        (json!(1), json!(0.5))
    );
}

#[tokio::test]
async fn an_agent_the_oracle_cannot_play_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let o = with_oracle(
        json!({"kind": "navigator"}),
        &["clock.*"],
        OracleMode::Faithful,
    );
    let err = run_eval(config(dir.path()), &o, &|_| {}).await.unwrap_err();
    assert!(err.to_string().contains("kind `navigator`"), "{err}");
    assert!(err.hint().contains("planned"), "{}", err.hint());
}
