//! Trajectories end to end: real tasks run through the `Runner` on the virtual phone,
//! then exported (directory and .tar.gz), loaded back, and used to resume a new task
//! that picks up where the saved one stopped. Also the coordinator's result of a run.

use std::io::Read as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use droidpilot::agent::context::AgentContext;
use droidpilot::agent::replay::ReplayAgent;
use droidpilot::agent::{Agent, AgentError, Decision};
use droidpilot::config::{Config, Overrides};
use droidpilot::core::Core;
use droidpilot::device::sim::tasks::{SimTask, tasks};
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::domain::{Action, AppRef, NewTask, Task, TaskSpec, TaskStatus};
use droidpilot::run::artifacts::ArtifactStore;
use droidpilot::run::result::{CoordinatorResult, CoordinatorStatus};
use droidpilot::run::runner::{Runner, RunnerConfig};
use droidpilot::run::stop::StopSignal;
use droidpilot::run::trajectory::{self, Trajectory};
use droidpilot::store::Store;
use serde_json::Value;
use tokio::sync::watch;

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

struct Env {
    runner: Runner,
    store: Arc<dyn Store>,
    artifacts: ArtifactStore,
    _core: Core,
    dir: tempfile::TempDir,
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

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunnerConfig {
        retry_backoff_ms: vec![10],
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        ..Default::default()
    };
    let core = test_core(dir.path(), cfg).await;
    Env {
        runner: (*core.runner).clone(),
        store: core.store.clone(),
        artifacts: core.artifacts.clone(),
        _core: core,
        dir,
    }
}

async fn create(
    store: &Arc<dyn Store>,
    instruction: &str,
    max_steps: u32,
    external: Option<&str>,
) -> Task {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(instruction.into()),
        max_steps: Some(max_steps),
        task_id: external.map(String::from),
        ..Default::default()
    })
    .unwrap();
    store.create_task(spec).await.unwrap()
}

async fn start(store: &Arc<dyn Store>, t: &Task) -> Task {
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

/// A sim task whose reference solution has at least three actions, so it can be cut.
fn long_task() -> SimTask {
    tasks()
        .into_iter()
        .find(|t| t.reference().len() >= 3)
        .expect("a task with 3+ steps")
}

/// Runs `t`'s whole reference solution; returns the finished task.
async fn run_reference(e: &Env, t: &SimTask) -> (Task, Arc<SimDevice>) {
    let p = phone();
    p.reset_to(t);
    let steps = t.reference();
    let task = start(
        &e.store,
        &create(
            &e.store,
            t.instruction,
            steps.len() as u32 + 5,
            Some("coord-1"),
        )
        .await,
    )
    .await;
    let done = e
        .runner
        .run(
            task,
            p.clone(),
            Box::new(ReplayAgent::new(steps)),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    (done, p)
}

fn png_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("screenshots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn export_dir_writes_trajectory_json_and_numbered_pngs() {
    let e = env().await;
    let t = long_task();
    let (done, _) = run_reference(&e, &t).await;
    let out = e.dir.path().join("export");
    let summary = trajectory::export_dir(&*e.store, &e.artifacts, done.id, &out)
        .await
        .unwrap();
    let n = t.reference().len() + 1; // plus the replay's finish
    assert_eq!(
        (
            summary.steps as usize,
            summary.screenshots as usize,
            summary.missing_screenshots
        ),
        (n, n, 0)
    );

    let v: Value =
        serde_json::from_slice(&std::fs::read(out.join("trajectory.json")).unwrap()).unwrap();
    assert_eq!(v["format"], "droidpilot.trajectory");
    assert_eq!(v["task"]["id"], done.id.to_string());
    assert_eq!(v["task"]["instruction"], t.instruction);
    assert_eq!(v["result"]["status"], "success");
    assert_eq!(v["result"]["task_id"], "coord-1");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["n"], i + 1);
        assert_eq!(s["screenshot"], format!("screenshots/{:04}.png", i + 1));
        assert!(
            s["action"]["action"].is_string(),
            "step {} has its action: {s}",
            i + 1
        );
        assert_eq!(s["outcome"]["status"], "ok");
        assert!(s["timings"]["screenshot_ms"].is_u64());
    }
    assert_eq!(steps.last().unwrap()["action"]["action"], "finish");

    let files = png_files(&out);
    assert_eq!(
        files,
        (1..=n).map(|i| format!("{i:04}.png")).collect::<Vec<_>>()
    );
    for f in &files {
        let bytes = std::fs::read(out.join("screenshots").join(f)).unwrap();
        assert!(bytes.starts_with(PNG_MAGIC), "{f} is a PNG");
        let img = image::load_from_memory(&bytes).unwrap();
        assert_eq!(
            (img.width(), img.height()),
            (540, 1200),
            "{f} is the phone's screen"
        );
    }
    // The JSON endpoint's document is the same data as the exported one.
    let built = Trajectory::build(&*e.store, done.id).await.unwrap();
    assert_eq!(serde_json::to_value(&built).unwrap(), v);
}

#[tokio::test]
async fn archive_holds_the_same_files_and_loads_back() {
    let e = env().await;
    let t = long_task();
    let (done, _) = run_reference(&e, &t).await;
    let bytes = trajectory::export_archive(&*e.store, &e.artifacts, done.id)
        .await
        .unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip");

    let mut entries = Vec::new();
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    for entry in ar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        if name.ends_with(".png") {
            assert!(data.starts_with(PNG_MAGIC), "{name}");
        }
        entries.push(name);
    }
    let n = t.reference().len() + 1;
    let mut want = vec![format!("{}/trajectory.json", done.id)];
    want.extend((1..=n).map(|i| format!("{}/screenshots/{i:04}.png", done.id)));
    assert_eq!(entries, want);

    let file = e.dir.path().join("t.tar.gz");
    std::fs::write(&file, &bytes).unwrap();
    let out = e.dir.path().join("dir");
    trajectory::export_dir(&*e.store, &e.artifacts, done.id, &out)
        .await
        .unwrap();
    let from_archive = trajectory::load(&file).unwrap();
    assert_eq!(
        from_archive,
        trajectory::load(&out).unwrap(),
        "archive and directory agree"
    );
    assert_eq!(
        from_archive,
        trajectory::load(&out.join("trajectory.json")).unwrap()
    );
    assert_eq!(from_archive.steps.len(), n);
    let bundle = trajectory::load_bundle(&file).unwrap();
    assert_eq!(
        bundle.screenshots.keys().copied().collect::<Vec<_>>(),
        (1..=n as u32).collect::<Vec<_>>()
    );
    assert_eq!(
        bundle.screenshots[&1],
        std::fs::read(out.join("screenshots/0001.png")).unwrap()
    );
}

#[tokio::test]
async fn a_lost_screenshot_is_reported_not_referenced() {
    let e = env().await;
    let p = phone();
    let task = start(&e.store, &create(&e.store, "open settings", 5, None).await).await;
    let open = vec![Action::LaunchApp {
        app: AppRef::Label("Settings".into()),
    }];
    let done = e
        .runner
        .run(task, p, Box::new(ReplayAgent::new(open)), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    let sha = steps[0].screenshot.clone().unwrap();
    let art = e.store.artifact(&sha).await.unwrap().unwrap();
    std::fs::remove_file(e.dir.path().join(&art.path)).unwrap();

    let out = e.dir.path().join("export");
    let s = trajectory::export_dir(&*e.store, &e.artifacts, done.id, &out)
        .await
        .unwrap();
    assert_eq!((s.steps, s.screenshots, s.missing_screenshots), (2, 1, 1));
    let t = trajectory::load(&out).unwrap();
    assert_eq!(
        t.steps[0].screenshot, None,
        "no name for a file that was not written"
    );
    assert_eq!(t.steps[0].screenshot_sha256.as_deref(), Some(sha.as_str()));
    assert_eq!(
        t.steps[1].screenshot.as_deref(),
        Some("screenshots/0002.png")
    );
    assert!(
        out.join("screenshots/0002.png").exists() && !out.join("screenshots/0001.png").exists()
    );
}

#[tokio::test]
async fn coordinator_result_of_a_real_run() {
    let e = env().await;
    let task = start(&e.store, &create(&e.store, "open settings", 5, None).await).await;
    let open = vec![Action::LaunchApp {
        app: AppRef::Label("Settings".into()),
    }];
    let done = e
        .runner
        .run(task, phone(), Box::new(ReplayAgent::new(open)), no_stop())
        .await
        .unwrap();
    let steps = e.store.steps(done.id).await.unwrap();
    let r = CoordinatorResult::new(&done, &steps).unwrap();
    assert_eq!(r.status, CoordinatorStatus::Success);
    assert_eq!(r.task_id, done.id.to_string(), "no external id: ours");
    assert_eq!(
        (
            r.steps_taken,
            r.actions_executed_count,
            r.actions_executed.len()
        ),
        (2, 1, 1),
        "launch_app counts, finish does not"
    );
    assert_eq!(r.completion_reason, done.reason.clone().unwrap());
    assert_eq!(r.device_id.as_deref(), Some("sim-1"));

    // max_steps runs out: the coordinator sees `failed`, with our reason.
    let task = start(&e.store, &create(&e.store, "wander", 2, None).await).await;
    let swipes = vec![
        Action::Key {
            key: droidpilot::domain::Key::Home
        };
        5
    ];
    let cut = e
        .runner
        .run(task, phone(), Box::new(ReplayAgent::new(swipes)), no_stop())
        .await
        .unwrap();
    assert_eq!(cut.status, TaskStatus::Incomplete);
    let r = CoordinatorResult::new(&cut, &e.store.steps(cut.id).await.unwrap()).unwrap();
    assert_eq!(
        (r.status, r.steps_taken, r.actions_executed_count),
        (CoordinatorStatus::Failed, 2, 2)
    );
    assert_eq!(
        r.reason,
        droidpilot::run::result::CompletionCode::MaxStepsExceeded
    );
    assert!(r.completion_reason.starts_with("max_steps_exceeded: "));
    assert!(
        r.completion_reason.contains("max_steps"),
        "{}",
        r.completion_reason
    );
}

/// The history's (step number, action name) pairs and the observation's step count.
type FirstSight = Option<(Vec<(u32, String)>, u32)>;

/// Replays a list, and remembers the history it was shown on its first decision.
struct Witness {
    inner: ReplayAgent,
    first_history: Arc<Mutex<FirstSight>>,
}

#[async_trait]
impl Agent for Witness {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        {
            let mut seen = self.first_history.lock().unwrap();
            if seen.is_none() {
                let steps = ctx
                    .history
                    .steps()
                    .map(|r| (r.step, r.action.name().to_string()))
                    .collect();
                *seen = Some((steps, ctx.observation.step_count));
            }
        }
        self.inner.next(ctx).await
    }
    fn describe(&self) -> String {
        "witness".into()
    }
}

#[tokio::test]
async fn a_saved_trajectory_resumes_a_new_task_where_it_stopped() {
    let e = env().await;
    let t = long_task();
    let reference = t.reference();
    let cut_at = 2usize;
    // The first run stops at max_steps, partway through the solution.
    let p = phone();
    p.reset_to(&t);
    let first = start(
        &e.store,
        &create(&e.store, t.instruction, cut_at as u32, None).await,
    )
    .await;
    let cut = e
        .runner
        .run(
            first,
            p.clone(),
            Box::new(ReplayAgent::new(reference.clone())),
            no_stop(),
        )
        .await
        .unwrap();
    assert_eq!(cut.status, TaskStatus::Incomplete);
    assert!(!t.check(&p.state()), "not done yet");
    let saved = e.dir.path().join("saved.tar.gz");
    std::fs::write(
        &saved,
        trajectory::export_archive(&*e.store, &e.artifacts, cut.id)
            .await
            .unwrap(),
    )
    .unwrap();

    // Loaded back: the history an agent would be shown.
    let bundle = trajectory::load_bundle(&saved).unwrap();
    let h = bundle.trajectory.steps_as_history(8);
    let names: Vec<&str> = h.steps().map(|r| r.action.name()).collect();
    assert_eq!(
        names,
        reference[..cut_at]
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
    );
    assert!(h.render().contains("Previous steps"));

    // A new task seeded with it continues on the same phone at step 3.
    let next = create(&e.store, t.instruction, 30, None).await;
    assert_eq!(
        bundle
            .seed_task(&*e.store, &e.artifacts, next.id)
            .await
            .unwrap(),
        cut_at as u32
    );
    let seeded = e.store.steps(next.id).await.unwrap();
    assert_eq!(seeded.len(), cut_at);
    assert_eq!(seeded[0].action, bundle.trajectory.steps[0].action);
    let art = e
        .artifacts
        .get(seeded[0].screenshot.as_deref().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(
        art.1.starts_with(PNG_MAGIC),
        "screenshots travel with the seeded steps"
    );

    let seen = Arc::new(Mutex::new(None));
    let agent = Witness {
        inner: ReplayAgent::new(reference[cut_at..].to_vec()),
        first_history: seen.clone(),
    };
    let task = start(&e.store, &next).await;
    let done = e
        .runner
        .run(task, p.clone(), Box::new(agent), no_stop())
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Succeeded, "{:?}", done.reason);
    assert!(
        t.check(&p.state()),
        "the phone's checker agrees the resumed task got done"
    );
    let (history, step_count) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        step_count, cut_at as u32,
        "the agent is told it is past the saved steps"
    );
    assert_eq!(
        history.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (1..=cut_at as u32).collect::<Vec<_>>()
    );
    let all = e.store.steps(done.id).await.unwrap();
    assert_eq!(all.len(), reference.len() + 1);
    assert_eq!(
        all.iter().map(|s| s.n).collect::<Vec<_>>(),
        (1..=all.len() as u32).collect::<Vec<_>>()
    );
    let kinds: Vec<String> = e
        .store
        .events_since(&done.id.to_string(), 0, 500)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind().to_string())
        .collect();
    assert!(kinds.contains(&"task.resumed".to_string()), "{kinds:?}");
}

#[tokio::test]
async fn seeding_refuses_tasks_that_cannot_take_a_history() {
    let e = env().await;
    let t = long_task();
    let (done, _) = run_reference(&e, &t).await;
    let out = e.dir.path().join("x");
    trajectory::export_dir(&*e.store, &e.artifacts, done.id, &out)
        .await
        .unwrap();
    let bundle = trajectory::load_bundle(&out).unwrap();

    let err = bundle
        .seed_task(&*e.store, &e.artifacts, done.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only a queued task"), "{err}");
    let small = create(&e.store, t.instruction, 2, None).await;
    let err = bundle
        .seed_task(&*e.store, &e.artifacts, small.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("raise max_steps"), "{err}");
    assert!(
        e.store.steps(small.id).await.unwrap().is_empty(),
        "nothing half-seeded"
    );
    let ok = create(&e.store, t.instruction, 50, None).await;
    bundle
        .seed_task(&*e.store, &e.artifacts, ok.id)
        .await
        .unwrap();
    let err = bundle
        .seed_task(&*e.store, &e.artifacts, ok.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("already has steps"), "{err}");
}
