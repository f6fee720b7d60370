//! The runner's hook points on the virtual phone: each is called with the step it is
//! about and can change the flow (guidance the agent reads, a rejected finish, a
//! replaced failed action, a pause at the step boundary and what a person did in it).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use droidpilot::agent::context::{AgentContext, Note};
use droidpilot::agent::replay::ReplayAgent;
use droidpilot::agent::{Agent, AgentError, Decision};
use droidpilot::device::exec::ExecError;
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::domain::action::TargetField;
use droidpilot::domain::{Action, Key, NewTask, Target, Task, TaskSpec, TaskStatus};
use droidpilot::run::artifacts::ArtifactStore;
use droidpilot::run::events::EventBus;
use droidpilot::run::hooks::{
    AfterTakeOver, FinishClaim, FinishVerdict, Recovery, RunHook, StepRef, TakeOver, TakenOver,
};
use droidpilot::run::interaction::Prompts;
use droidpilot::run::runner::{Runner, RunnerConfig};
use droidpilot::run::stop::StopSignal;
use droidpilot::store::StoreError;
use droidpilot::store::{SqliteStore, Store};
use serde_json::Value;
use tokio::sync::watch;

struct Env {
    runner: Runner,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("db.sqlite"))
            .await
            .unwrap(),
    );
    let cfg = RunnerConfig {
        retry_backoff_ms: vec![10],
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        ..Default::default()
    };
    let runner = Runner::new(
        EventBus::new(store.clone(), 1024),
        Arc::new(Prompts::default()),
        ArtifactStore::new(dir.path(), store.clone()),
        cfg,
    );
    Env {
        runner,
        store,
        _dir: dir,
    }
}

async fn start(store: &Arc<dyn Store>, instruction: &str) -> Task {
    start_with(store, instruction, None).await
}

async fn start_with(store: &Arc<dyn Store>, instruction: &str, timeout: Option<u64>) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(instruction.into()),
        max_steps: Some(10),
        timeout_seconds: timeout,
        ..Default::default()
    })
    .unwrap();
    let t = store.create_task(spec).await.unwrap();
    assert!(store.start_task(t.id, "sim-1").await.unwrap());
    store.get_task(t.id).await.unwrap()
}

fn phone() -> Arc<SimDevice> {
    Arc::new(
        SimDevice::new(SimConfig {
            width: 540,
            height: 1200,
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

fn home() -> Action {
    Action::Key { key: Key::Home }
}

/// Finishes at every step, keeping each context's history as text.
#[derive(Default)]
struct Finisher {
    seen: Arc<Mutex<Vec<AgentContext>>>,
}

#[async_trait]
impl Agent for Finisher {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        self.seen.lock().unwrap().push(ctx.clone());
        Ok(Decision::local(finish()))
    }
    fn describe(&self) -> String {
        "finisher".into()
    }
}

/// A planner: guidance as a note in the context of every decision.
#[derive(Default)]
struct Planner {
    calls: Mutex<Vec<StepRef>>,
}

#[async_trait]
impl RunHook for Planner {
    async fn before_decide(&self, at: StepRef, ctx: &mut AgentContext) {
        self.calls.lock().unwrap().push(at);
        ctx.history.push_note(Note::McpResult {
            step: at.step,
            tool: "planner".into(),
            result: "open Settings first".into(),
            is_error: false,
        });
    }
}

#[tokio::test]
async fn a_before_decide_hook_injects_guidance_the_agent_receives() {
    let e = env().await;
    let planner = Arc::new(Planner::default());
    let runner = e.runner.clone().with_hook(planner.clone());
    let task = start(&e.store, "plan").await;
    let agent = Finisher::default();
    let seen = agent.seen.clone();
    let done = runner
        .run(task.clone(), phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    let calls = planner.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        vec![StepRef {
            task: task.id,
            step: 1
        }]
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen[0].history.notes().any(|n| matches!(n,
            Note::McpResult { tool, result, .. } if tool == "planner" && result == "open Settings first")),
        "the agent received the guidance"
    );
}

/// A completion verifier that rejects the first finish it sees.
#[derive(Default)]
struct Verifier {
    claims: Mutex<Vec<(u32, bool)>>,
}

#[async_trait]
impl RunHook for Verifier {
    async fn on_finish(&self, at: StepRef, claim: &FinishClaim<'_>) -> FinishVerdict {
        let mut claims = self.claims.lock().unwrap();
        claims.push((at.step, claim.success));
        match claims.len() {
            1 => FinishVerdict::Reject("the settings screen is not open".into()),
            _ => FinishVerdict::Accept,
        }
    }
}

#[tokio::test]
async fn a_rejected_finish_goes_on_and_the_agent_reads_why() {
    let e = env().await;
    let verifier = Arc::new(Verifier::default());
    let runner = e.runner.clone().with_hook(verifier.clone());
    let task = start(&e.store, "verify").await;
    let agent = Finisher::default();
    let seen = agent.seen.clone();
    let done = runner
        .run(task, phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert_eq!(*verifier.claims.lock().unwrap(), vec![(1, true), (2, true)]);
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].outcome.status, "failed");
    assert!(
        steps[0]
            .outcome
            .error
            .as_deref()
            .unwrap()
            .contains("the settings screen is not open")
    );
    assert_eq!(steps[1].outcome.status, "ok");
    let seen = seen.lock().unwrap();
    let last = seen[1].history.steps().last().unwrap();
    assert_eq!(last.outcome, "NOT done: the settings screen is not open");
}

/// Script recovery: a failed action is replaced by going home; also watches every act.
#[derive(Default)]
struct Recover {
    failures: Mutex<Vec<(u32, String)>>,
    acted: Mutex<Vec<(u32, String, bool)>>,
}

#[async_trait]
impl RunHook for Recover {
    async fn on_failure(&self, at: StepRef, action: &Action, error: &ExecError) -> Recovery {
        self.failures
            .lock()
            .unwrap()
            .push((at.step, format!("{} {}", action.name(), error.error_type())));
        Recovery::Replace(home())
    }
    async fn after_act(&self, at: StepRef, action: &Action, outcome: &Result<Value, String>) {
        let name = action.name().to_string();
        self.acted
            .lock()
            .unwrap()
            .push((at.step, name, outcome.is_ok()));
    }
}

#[tokio::test]
async fn a_step_failure_hook_replaces_the_failed_action() {
    let e = env().await;
    let recover = Arc::new(Recover::default());
    let runner = e.runner.clone().with_hook(recover.clone());
    let task = start(&e.store, "recover").await;
    let ghost = Action::Tap {
        target: TargetField(Target::Selector("#no_such_button".into())),
    };
    // A replay ends at its first failed step, unless a hook recovers it.
    let agent = ReplayAgent::new(vec![ghost]);
    let done = runner
        .run(task, phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert_eq!(
        *recover.failures.lock().unwrap(),
        vec![(1, "tap element_not_found".to_string())]
    );
    assert_eq!(
        *recover.acted.lock().unwrap(),
        vec![(1, "tap".to_string(), false), (1, "key".to_string(), true)],
        "after_act sees the failed tap, then its replacement"
    );
    let s = &e.store.steps(done.id).await.unwrap()[0];
    assert_eq!(s.outcome.status, "ok");
    assert_eq!(s.action.as_ref().unwrap().name(), "key");
    // The replacement was settled like any action that ran, and the replaced one is kept
    // beside the replacement's own detail.
    assert!(s.outcome.screen_changed.is_some(), "{:?}", s.outcome);
    assert!(
        s.outcome.detail.as_ref().unwrap().get("key").is_some(),
        "{:?}",
        s.outcome
    );
    assert_eq!(
        s.outcome.detail.as_ref().unwrap()["replaced"]["action"]["action"],
        "tap"
    );
}

#[tokio::test]
async fn take_over_holds_the_loop_at_the_step_boundary_until_resumed() {
    let e = env().await;
    let take_over = Arc::new(TakeOver::default());
    let runner = e.runner.clone().with_hook(take_over.clone());
    let task = start(&e.store, "hold").await;
    take_over.pause();
    let mut holding = take_over.holding();
    let run = tokio::spawn({
        let task = task.clone();
        async move {
            runner
                .run(
                    task,
                    phone(),
                    Box::new(ReplayAgent::new(vec![home()])),
                    no_stop(),
                )
                .await
        }
    });
    let at = *holding.wait_for(Option::is_some).await.unwrap();
    assert_eq!(
        at,
        Some(StepRef {
            task: task.id,
            step: 1
        })
    );
    assert!(
        e.store.steps(task.id).await.unwrap().is_empty(),
        "held before step 1"
    );
    take_over.resume();
    let done = run.await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(e.store.steps(done.id).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_cancel_ends_a_held_task() {
    let e = env().await;
    let take_over = Arc::new(TakeOver::default());
    let runner = e.runner.clone().with_hook(take_over.clone());
    let task = start(&e.store, "hold then cancel").await;
    take_over.pause();
    let mut holding = take_over.holding();
    let (tx, rx) = watch::channel(StopSignal::None);
    let run = tokio::spawn(async move {
        runner
            .run(task, phone(), Box::new(ReplayAgent::new(vec![home()])), rx)
            .await
    });
    holding.wait_for(Option::is_some).await.unwrap();
    tx.send(StopSignal::Cancel).unwrap();
    let done = run.await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled);
}

/// Script recovery that gives up: the failed step is kept and the task ends with the
/// hook's reason, even for an agent that would go on after a failure.
struct GiveUp;

#[async_trait]
impl RunHook for GiveUp {
    async fn on_failure(&self, _: StepRef, _: &Action, _: &ExecError) -> Recovery {
        Recovery::Abort("the script cannot recover from a missing button".into())
    }
}

#[tokio::test]
async fn a_step_failure_hook_can_end_the_task() {
    let e = env().await;
    let runner = e.runner.clone().with_hook(Arc::new(GiveUp));
    let task = start(&e.store, "give up").await;
    let ghost = Action::Tap {
        target: TargetField(Target::Selector("#no_such_button".into())),
    };
    let agent =
        ReplayAgent::new(vec![ghost]).on_error(droidpilot::agent::replay::OnError::Continue);
    let done = runner
        .run(task, phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Failed);
    assert_eq!(
        done.reason.as_deref(),
        Some("the script cannot recover from a missing button")
    );
    let steps = e.store.steps(done.id).await.unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].outcome.status, "failed");
}

/// A person who takes the phone over at step 1 and hands back what they did, once.
struct Person {
    hands_back: Mutex<Option<TakenOver>>,
}

impl Person {
    fn new(t: TakenOver) -> Arc<Self> {
        Arc::new(Self {
            hands_back: Mutex::new(Some(t)),
        })
    }
}

#[async_trait]
impl RunHook for Person {
    async fn at_boundary(&self, _: StepRef) -> Result<Option<TakenOver>, StoreError> {
        Ok(self.hands_back.lock().unwrap().take())
    }
}

#[tokio::test]
async fn what_a_person_hands_back_at_the_boundary_is_what_the_agent_reads_next() {
    let e = env().await;
    let person = Person::new(TakenOver {
        actions: vec!["tap (270, 600) on \"Wi-Fi\"".into(), "back".into()],
        by: Some("alice".into()),
        ..TakenOver::default()
    });
    let runner = e.runner.clone().with_hook(person);
    let task = start(&e.store, "take over").await;
    let agent = Finisher::default();
    let seen = agent.seen.clone();
    let done = runner
        .run(task, phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    let seen = seen.lock().unwrap();
    let told: Vec<_> = seen[0]
        .history
        .notes()
        .filter_map(|n| match n {
            Note::PersonActed { step, by, actions } => Some((*step, by.clone(), actions.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        vec![(
            1,
            "alice".to_string(),
            vec![
                "tap (270, 600) on \"Wi-Fi\"".to_string(),
                "back".to_string()
            ]
        )]
    );
}

#[tokio::test]
async fn a_person_who_finishes_a_held_task_ends_it_with_their_answer() {
    let e = env().await;
    let person = Person::new(TakenOver {
        by: Some("alice".into()),
        then: AfterTakeOver::Finish {
            success: true,
            reason: "alice finished it by hand".into(),
            answer: Some("42".into()),
        },
        ..TakenOver::default()
    });
    let runner = e.runner.clone().with_hook(person);
    let task = start(&e.store, "finish by hand").await;
    let agent = Finisher::default();
    let seen = agent.seen.clone();
    let done = runner
        .run(task, phone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded);
    assert_eq!(done.reason.as_deref(), Some("alice finished it by hand"));
    assert_eq!(done.answer.as_deref(), Some("42"));
    assert!(seen.lock().unwrap().is_empty(), "the agent was not asked");
    assert!(e.store.steps(done.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_person_who_cancels_a_held_task_ends_it_cancelled() {
    let e = env().await;
    let person = Person::new(TakenOver {
        then: AfterTakeOver::Cancel {
            reason: "not needed any more".into(),
        },
        ..TakenOver::default()
    });
    // The hooks after a hold that ends the task are not asked.
    let later = Person::new(TakenOver::default());
    let runner = e.runner.clone().with_hook(person).with_hook(later.clone());
    let task = start(&e.store, "cancel by hand").await;
    let done = runner
        .run(task, phone(), Box::new(Finisher::default()), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert_eq!(done.reason.as_deref(), Some("not needed any more"));
    assert!(later.hands_back.lock().unwrap().is_some());
}

#[tokio::test]
async fn time_held_by_a_take_over_hook_does_not_count_toward_the_timeout() {
    let e = env().await;
    let take_over = Arc::new(TakeOver::default());
    let runner = e.runner.clone().with_hook(take_over.clone());
    let task = start_with(&e.store, "held past the timeout", Some(1)).await;
    take_over.pause();
    let mut holding = take_over.holding();
    let run = tokio::spawn(async move {
        runner
            .run(task, phone(), Box::new(Finisher::default()), no_stop())
            .await
    });
    holding.wait_for(Option::is_some).await.unwrap();
    // Held longer than the task's whole timeout_seconds.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    take_over.resume();
    let done = run.await.unwrap().unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
}
