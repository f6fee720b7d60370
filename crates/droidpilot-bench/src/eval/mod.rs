//! `droidpilot eval`: the scoreboard. Each selected sim task runs on a fresh virtual
//! phone through the production path (one `Core`, its scheduler and runner; each task
//! queued with its phone pinned by `device_id` and the agent given as the task's `agent`
//! spec), and the phone's own checker judges the end state.
//!
//! Per run it keeps the task's status, the checker's verdict, steps, model tokens in/out
//! and cost (the task's totals, summed from its steps' model calls), wall time, and:
//! a *false success* (the task ended `succeeded`, the agent said done, but the checker
//! says no); *verifier catches* (`TaskEvent::is_verifier_rejection`: an `on_finish` hook
//! refused a finish, e.g. a planned agent's completion verifier); *loops* (`step.stuck`
//! events: the runner's stuck detector fired). An `ask_user` question is answered through `Prompts::answer`, the path the REST
//! API uses, from the task's `facts`.
//!
//! `{"kind": "replay"}` without `actions` means each task's reference solution. With
//! `model_server` set, the oracle model server (`bench::oracle`) is started in-process and
//! every model of the agent (a planned or generic vision agent) is pointed at it, one base
//! URL per phone, so its verifier can read that phone's checker.
//! `report.rs` turns the runs into the summary (JSON, table, Markdown) and compares two.

pub mod report;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use serde_json::{Value, json};

use super::oracle::{OracleMode, OracleServer};
use crate::agent::spec::{AgentKind, AgentSpec};
use crate::config::Config;
use crate::core::Core;
use crate::device::pool::DeviceState;
use crate::device::sim::{Difficulty, SimConfig, SimDevice, SimTask, tasks};
use crate::domain::{NewTask, ScreenSize, Step, TaskEvent, TaskId, TaskSpec, TaskStatus};
use crate::run::events::{FeedItem, Filter};
use crate::run::runner::RunnerConfig;

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The agent spec (the `agent` object of `POST /v1/tasks`).
    pub agent: Value,
    /// Task id globs (`*` any run, `?` one character); empty: every task.
    pub tasks: Vec<String>,
    /// Runs per task.
    pub repeat: usize,
    /// Phones (and tasks) at once.
    pub parallel: usize,
    /// The phones' screen (reference solutions are normalized, so any size replays them).
    pub screen: ScreenSize,
    /// Start the oracle model server and point the agent's models at it.
    pub model_server: Option<OracleMode>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            agent: json!({"kind": "replay"}),
            tasks: Vec::new(),
            repeat: 1,
            parallel: 1,
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
            model_server: None,
        }
    }
}

/// Why the eval could not run. Each has a hint.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("no sim task matches {0}")]
    NoTasks(String),
    #[error("{message}")]
    Agent { message: String, hint: String },
    #[error("setting up the eval failed: {0}")]
    Setup(String),
    #[error("the oracle model server could not start: {0}")]
    ModelServer(String),
    #[error("task `{task}` could not be run: {reason}")]
    Run { task: String, reason: String },
}

impl EvalError {
    pub fn hint(&self) -> String {
        match self {
            EvalError::NoTasks(_) => format!(
                "patterns match task ids, e.g. `clock.*` or `*.ask_*`; apps: {}. `droidpilot sim --list-tasks` lists them",
                apps_list()
            ),
            EvalError::Agent { hint, .. } => hint.clone(),
            EvalError::Setup(_) => "check that the temporary directory is writable".into(),
            EvalError::ModelServer(_) => {
                "it listens on a free loopback port (127.0.0.1); check that loopback networking is up".into()
            }
            EvalError::Run { .. } => {
                "run `droidpilot run` with the same agent on that task to see why".into()
            }
        }
    }
}

/// Each app that has tasks, once, in alphabetical order.
fn apps_list() -> String {
    let apps: std::collections::BTreeSet<&str> = tasks()
        .iter()
        .filter_map(|t| t.id.split('.').next())
        .collect();
    apps.into_iter().collect::<Vec<_>>().join(", ")
}

/// Model tokens of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tokens {
    #[serde(rename = "in")]
    pub input: u64,
    #[serde(rename = "out")]
    pub output: u64,
    /// Of `in`, served from the providers' prompt caches.
    pub cached: u64,
}

/// One role's model use in a run (`actor`, `planner`, `progress`, `verifier`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RoleUse {
    pub calls: u64,
    pub tokens: Tokens,
}

/// Model use by role, summed over the steps' `calls`.
pub fn role_use(steps: &[Step]) -> BTreeMap<String, RoleUse> {
    let mut m: BTreeMap<String, RoleUse> = BTreeMap::new();
    for c in steps.iter().flat_map(|s| &s.calls) {
        let e = m.entry(c.role.as_str().into()).or_default();
        e.calls += 1;
        e.tokens.input += c.tokens_in;
        e.tokens.output += c.tokens_out;
        e.tokens.cached += c.tokens_cached;
    }
    m
}

/// One run of one task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    pub id: String,
    pub tier: Difficulty,
    /// 1-based, up to `--repeat`.
    pub run: usize,
    pub status: TaskStatus,
    /// The phone's checker: whether the task is done.
    pub checker: bool,
    pub steps: u32,
    pub tokens: Tokens,
    pub model_calls: u64,
    /// The calls and tokens of each role (a planned agent's planner, progress checker
    /// and verifier beside the acting model). A background plan still in flight when the
    /// task ended is on no step and not counted.
    pub roles: BTreeMap<String, RoleUse>,
    pub cost_usd: f64,
    pub wall_s: f64,
    /// Finished `succeeded` while the checker says no.
    pub false_success: bool,
    pub verifier_catches: u32,
    /// Stuck-detector firings (diagnose, escalate, abort).
    pub loops: u32,
    /// `ask_user` questions the eval answered.
    pub asked: u32,
    pub reason: Option<String>,
}

/// Every run, with what produced them.
#[derive(Debug, Clone, Default)]
pub struct EvalReport {
    pub agent: Value,
    pub repeat: usize,
    pub parallel: usize,
    pub wall_s: f64,
    pub runs: Vec<RunRecord>,
}

/// Whether `id` matches a glob of `*` (any run) and `?` (one character).
pub fn glob_match(pattern: &str, id: &str) -> bool {
    fn go(p: &[char], s: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('*', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some(('?', rest)) => !s.is_empty() && go(rest, &s[1..]),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = id.chars().collect();
    go(&p, &s)
}

/// The tasks the patterns select, in the catalogue's order.
pub fn select(patterns: &[String]) -> Result<Vec<SimTask>, EvalError> {
    let all = tasks();
    if patterns.is_empty() {
        return Ok(all);
    }
    let picked: Vec<SimTask> = all
        .into_iter()
        .filter(|t| patterns.iter().any(|p| glob_match(p.trim(), t.id)))
        .collect();
    if picked.is_empty() {
        let shown: Vec<String> = patterns.iter().map(|p| format!("`{p}`")).collect();
        return Err(EvalError::NoTasks(shown.join(", ")));
    }
    Ok(picked)
}

/// How each task gets its agent: the spec as given, or (replay without actions) the
/// spec with the task's reference solution as its actions.
#[derive(Debug, Clone)]
enum AgentPlan {
    Fixed(Value),
    Reference(serde_json::Map<String, Value>),
}

impl AgentPlan {
    /// Checks the spec once, up front, as `POST /v1/tasks` would (a missing key is named
    /// here rather than failing every task).
    fn new(agent: &Value, config: &Config) -> Result<Self, EvalError> {
        let bad = |e: crate::agent::spec::SpecError| EvalError::Agent {
            message: format!("--agent: {e}"),
            hint: e.hint(),
        };
        let spec = AgentSpec::from_json(agent).map_err(bad)?;
        let kind = spec.kind.unwrap_or(config.agent.kind);
        if kind == AgentKind::Replay && spec.actions.is_none() {
            let obj = agent.as_object().cloned().unwrap_or_default();
            return Ok(AgentPlan::Reference(obj));
        }
        spec.validate(&config.agent).map_err(bad)?;
        if let Some(e) = config.agent.missing_key(&spec, |v| std::env::var(v).ok()) {
            return Err(EvalError::Agent {
                message: format!("--agent: {e}"),
                hint: "export the provider's key, or evaluate the reference solutions with --agent '{\"kind\": \"replay\"}'".into(),
            });
        }
        Ok(AgentPlan::Fixed(agent.clone()))
    }

    fn for_task(&self, t: &SimTask) -> Value {
        match self {
            AgentPlan::Fixed(v) => v.clone(),
            AgentPlan::Reference(obj) => {
                let mut obj = obj.clone();
                obj.insert("kind".into(), json!("replay"));
                obj.insert("actions".into(), json!(t.reference()));
                Value::Object(obj)
            }
        }
    }
}

/// The core the eval runs on: the caller's configuration (agent defaults, keys, prices,
/// runner knobs) on a throw-away data directory, with the eval's phones only.
struct Env {
    core: Core,
    phones: Vec<Arc<SimDevice>>,
    oracle: Option<OracleServer>,
    _dir: ScratchDir,
}

/// A data directory under the system temp dir, removed when dropped.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new() -> std::io::Result<Self> {
        let p = std::env::temp_dir().join(format!(
            "droidpilot-eval-{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ));
        std::fs::create_dir_all(&p)?;
        Ok(Self(p))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The sim's clock is virtual and its screens change at once, so the runner's settle
/// polling is tightened (as the replay bench does); everything else is the caller's.
fn eval_config(mut config: Config, dir: &ScratchDir, parallel: usize) -> Config {
    config.storage.data_dir = dir.0.clone();
    config.devices.sim.clear();
    config.devices.adb.enabled = false;
    config.webhooks.url.clear();
    config.scheduler.max_concurrent_tasks = parallel;
    config.scheduler.poll_ms = 50;
    config.runner = RunnerConfig {
        retry_backoff_ms: vec![10],
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        ..config.runner
    };
    config
}

async fn env(
    config: Config,
    opts: &EvalOptions,
    oracle: Option<OracleServer>,
) -> Result<Env, EvalError> {
    let setup = |e: &dyn std::fmt::Display| EvalError::Setup(e.to_string());
    let dir = ScratchDir::new().map_err(|e| setup(&e))?;
    let config = eval_config(config, &dir, opts.parallel);
    let core = Core::build(&config).await.map_err(|e| setup(&e))?;
    let mut phones = Vec::new();
    for i in 1..=opts.parallel {
        let cfg = SimConfig {
            serial: phone_serial(i),
            width: opts.screen.width,
            height: opts.screen.height,
            ..SimConfig::default()
        };
        let phone = Arc::new(SimDevice::new(cfg).map_err(|e| setup(&e))?);
        core.pool
            .add_device(phone.clone(), "sim")
            .await
            .map_err(|e| setup(&e))?;
        phones.push(phone);
    }
    if let Some(o) = &oracle {
        o.add_phones(&phones);
    }
    core.start_scheduler();
    Ok(Env {
        core,
        phones,
        oracle,
        _dir: dir,
    })
}

/// One run to do.
#[derive(Clone, Copy)]
struct Job {
    task: SimTask,
    run: usize,
}

/// Runs every selected task `repeat` times, `parallel` phones at once. `progress` sees
/// each run as it ends.
pub async fn run_eval(
    mut config: Config,
    opts: &EvalOptions,
    progress: &(dyn Fn(&RunRecord) + Sync),
) -> Result<EvalReport, EvalError> {
    let selected = select(&opts.tasks)?;
    let (oracle, agent) = model_server(opts).await?;
    if let Some(o) = &oracle {
        // The eval's own model server: reached without the server's keys.
        config.agent.allowed_base_urls.push(o.origin());
    } else {
        // Base URLs in `--agent` are the operator's, who runs this command.
        let urls = crate::agent::servers::urls_in(&agent);
        config.agent.operator_urls.extend(urls);
    }
    let plan = AgentPlan::new(&agent, &config)?;
    let opts = EvalOptions {
        parallel: opts.parallel.max(1),
        repeat: opts.repeat.max(1),
        ..opts.clone()
    };
    let env = env(config, &opts, oracle).await?;
    let jobs: VecDeque<Job> = (1..=opts.repeat)
        .flat_map(|run| selected.iter().map(move |t| Job { task: *t, run }))
        .collect();
    let jobs = Mutex::new(jobs);
    let done = Mutex::new(Vec::new());
    let start = Instant::now();
    let workers = env.phones.iter().map(|phone| async {
        loop {
            let job = jobs.lock().expect("job queue").pop_front();
            let Some(job) = job else { return Ok(()) };
            let rec = run_one(&env, phone, &plan, job).await?;
            progress(&rec);
            done.lock().expect("results").push(rec);
        }
    });
    let result: Result<Vec<()>, EvalError> = futures::future::try_join_all(workers).await;
    env.core.shutdown(std::time::Duration::from_secs(5)).await;
    result?;
    let mut runs = done.into_inner().expect("results");
    let order: BTreeMap<&str, usize> = selected
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id, i))
        .collect();
    runs.sort_by_key(|r| (order.get(r.id.as_str()).copied(), r.run));
    Ok(EvalReport {
        agent: summary_agent(&opts),
        repeat: opts.repeat,
        parallel: opts.parallel,
        wall_s: start.elapsed().as_secs_f64(),
        runs,
    })
}

/// The oracle model server when asked for, and the agent spec to check: as given, or
/// with its models pointed at the oracle (for the first phone; each task is pointed at
/// its own phone in `run_one`).
async fn model_server(opts: &EvalOptions) -> Result<(Option<OracleServer>, Value), EvalError> {
    let Some(mode) = opts.model_server else {
        return Ok((None, opts.agent.clone()));
    };
    let oracle = OracleServer::start(mode)
        .await
        .map_err(|e| EvalError::ModelServer(e.to_string()))?;
    let agent = oracle
        .point(&opts.agent, &phone_serial(1))
        .map_err(|e| EvalError::Agent {
            message: format!("--agent with --model-server: {e}"),
            hint:
                "the oracle plays the planned agent's models: try --agent '{\"kind\": \"planned\"}'"
                    .into(),
        })?;
    Ok((Some(oracle), agent))
}

/// The serial of the eval's phone `i` (1-based).
fn phone_serial(i: usize) -> String {
    format!("eval-{i}")
}

/// The agent as the summary shows it: as given, plus the model server it ran against.
fn summary_agent(opts: &EvalOptions) -> Value {
    match (opts.model_server, &opts.agent) {
        (Some(mode), Value::Object(o)) => {
            let mut o = o.clone();
            let name = clap::ValueEnum::to_possible_value(&mode)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            o.insert("model_server".into(), json!(name));
            Value::Object(o)
        }
        (_, a) => a.clone(),
    }
}

/// Waits until the pool has the phone back from its last task (the runner drops its
/// lease just after `task.finished`).
async fn phone_free(env: &Env, serial: &str) {
    while env
        .core
        .pool
        .summary(serial)
        .is_some_and(|d| d.state != DeviceState::Available)
    {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// One task on one phone: reset the phone to the task, queue the task pinned to it,
/// answer its questions, judge the end state.
async fn run_one(
    env: &Env,
    phone: &SimDevice,
    plan: &AgentPlan,
    job: Job,
) -> Result<RunRecord, EvalError> {
    let t = job.task;
    let fail = |reason: String| EvalError::Run {
        task: t.id.into(),
        reason,
    };
    let serial = phone.config().serial.clone();
    phone_free(env, &serial).await;
    phone.reset_to(&t);
    let agent = match &env.oracle {
        Some(o) => o.point(&plan.for_task(&t), &serial).map_err(fail)?,
        None => plan.for_task(&t),
    };
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(t.instruction.into()),
        max_steps: Some(step_budget(&t)),
        device_id: Some(serial),
        agent: Some(agent),
        metadata: Some(json!({"eval_task": t.id, "run": job.run})),
        ..Default::default()
    })
    .map_err(|e| fail(e.to_string()))?;
    let start = Instant::now();
    let task = (env.core.queue.submit(spec).await).map_err(|e| fail(e.to_string()))?;
    let seen = follow(env, &t, task.id).await.map_err(fail)?;
    let wall_s = start.elapsed().as_secs_f64();
    let checker = t.check(&phone.state());
    let store = env.core.store.clone();
    let done = store
        .get_task(task.id)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let steps = store
        .steps(task.id)
        .await
        .map_err(|e| fail(e.to_string()))?;
    Ok(RunRecord {
        id: t.id.into(),
        tier: t.difficulty,
        run: job.run,
        status: done.status,
        checker,
        steps: done.steps,
        tokens: Tokens {
            input: done.tokens_in,
            output: done.tokens_out,
            cached: done.tokens_cached,
        },
        model_calls: done.model_calls,
        roles: role_use(&steps),
        cost_usd: done.cost_usd,
        wall_s,
        false_success: done.status == TaskStatus::Succeeded && !checker,
        verifier_catches: seen.verifier_catches,
        loops: seen.loops,
        asked: seen.asked,
        reason: done.reason,
    })
}

/// Room for an agent to explore: twice the reference solution, plus ten.
pub fn step_budget(t: &SimTask) -> u32 {
    t.reference().len() as u32 * 2 + 10
}

/// What the eval saw on a task's event stream.
#[derive(Default)]
struct Seen {
    asked: u32,
    verifier_catches: u32,
    /// `step.stuck` events: the runner's stuck detector fired.
    loops: u32,
}

/// Follows the task's events to `task.finished`, answering each question from the
/// task's facts through `Prompts::answer` (as `POST /v1/tasks/{id}/answer` does).
async fn follow(env: &Env, t: &SimTask, id: TaskId) -> Result<Seen, String> {
    let stream = id.to_string();
    let mut feed = env.core.bus.feed(Filter::Streams([stream.clone()].into()));
    feed.resume(&stream, 0).await.map_err(|e| e.to_string())?;
    let mut seen = Seen::default();
    loop {
        let ev = match feed.next().await.map_err(|e| e.to_string())? {
            Some(FeedItem::Event(ev)) => ev,
            Some(FeedItem::Lagged { .. }) => continue,
            None => return Err("the event bus closed before the task finished".into()),
        };
        match &ev.event {
            TaskEvent::AskUser {
                prompt_id,
                question,
                ..
            } => {
                seen.asked += 1;
                let reply = t.reply(question);
                let bus = &env.core.bus;
                // A question closed meanwhile (the task was stopped) is not an error here.
                let _ = env
                    .core
                    .prompts
                    .answer(bus, id, Some(prompt_id), &reply, "eval")
                    .await;
            }
            e if e.is_verifier_rejection() => seen.verifier_catches += 1,
            TaskEvent::StepStuck { .. } => seen.loops += 1,
            TaskEvent::Finished(_) => return Ok(seen),
            _ => {}
        }
    }
}
