//! `droidpilot bench replay`: the drift suite of issue 12. Each flow (a sim task) is
//! recorded once on a clean phone — its reference solution run through the real runner
//! with the replay agent, and the finished task turned into a `Script` by
//! `script::record::from_steps` — then replayed on a fresh phone under each seeded drift
//! (`DriftKind`) in each `Mode`, and the task's own checker says whether it completed.
//!
//! Modes: `selectors` (the script agent, no model), `aitm` (the script agent with a
//! rule-driven recovery model) and `coordinates` (the replay agent with the coordinates
//! the clean recording tapped). The recovery model is `rule_model::RuleModel`, in
//! process, so the figures need no key and no network. A flow whose script cannot be
//! built (an input with no value) is reported as unavailable (`null` in the JSON) rather
//! than guessed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use strum::VariantArray as _;
use tokio::sync::watch;

use crate::agent::Agent;
use crate::agent::replay::ReplayAgent;
use crate::agent::script::ScriptAgent;
use crate::agent::script::recover::Aitm;
use crate::config::{Config, Overrides};
use crate::core::Core;
use crate::device::sim::{SimConfig, SimDevice, SimFaults, SimTask, task};
use crate::domain::{Action, NewTask, ScreenSize, TaskSpec};
use crate::run::runner::{Runner, RunnerConfig};
use crate::run::stop::StopSignal;
use crate::script::Script;
use crate::store::Store;

/// The suite's flows: sim tasks over all seven apps and the home launcher.
pub const FLOWS: [&str; 24] = [
    "settings.bluetooth_on",
    "settings.wifi_off",
    "settings.brightness_max",
    "settings.sign_in",
    "clock.alarm_0730",
    "clock.disable_0815",
    "clock.delete_0600",
    "clock.open_from_home",
    "contacts.add_ada",
    "contacts.edit_bob",
    "contacts.delete_mallory",
    "messages.running_late_bob",
    "messages.reply_alice_emoji",
    "messages.new_chat_carol",
    "notes.create_buy_milk",
    "notes.edit_groceries",
    "notes.delete_ideas",
    "notes.from_drawer",
    "browser.rust_wikipedia",
    "browser.search_weather",
    "browser.open_site",
    "shop.allow_notifications",
    "shop.cart_earbuds",
    "shop.empty_cart",
];

/// The seed every drifted phone uses (drift is deterministic per seed).
pub const SEED: u64 = 7;

/// One drift the sim can inject, or a combination. Its name (`name`, `parse`) and the
/// list (`VARIANTS`) are derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DriftKind {
    None,
    RenamedIds,
    ReorderLists,
    Popups,
    DelayedElements,
    MovedElements,
    ChangedLabel,
    /// Renamed ids, reordered lists and moved elements at once (`combo` for short).
    #[strum(
        to_string = "renamed_ids+reorder_lists+moved_elements",
        serialize = "combo"
    )]
    IdsListsMoved,
    /// What one app update brings at once: renamed ids, reworded labels, and a
    /// "what's new" banner that moves the layout.
    AppUpdate,
    /// The flow recorded on a 20:9 phone replays on another phone of the farm, a 16:9 one
    /// of the same width: the same dp layout, so every row below the toolbar sits at
    /// another fraction of the screen's height.
    OtherPhone,
    /// Every drift at once.
    All,
}

impl DriftKind {
    /// The sim faults that make this drift.
    pub fn faults(self) -> SimFaults {
        let mut f = SimFaults::default();
        let on = |k: DriftKind| self == k || self == DriftKind::All;
        let combo = self == DriftKind::IdsListsMoved;
        let update = self == DriftKind::AppUpdate;
        f.renamed_ids = on(DriftKind::RenamedIds) || combo || update;
        f.reorder_lists = on(DriftKind::ReorderLists) || combo;
        f.moved_elements = on(DriftKind::MovedElements) || combo || update;
        f.changed_labels = on(DriftKind::ChangedLabel) || update;
        if on(DriftKind::Popups) {
            f.popup_rate = 0.25;
        }
        if on(DriftKind::DelayedElements) {
            // Long enough that a list is still syncing when a blind tap comes.
            f.delayed_elements_ms = 2500;
        }
        f
    }

    /// The phone this drift replays on, given the one the flow was recorded on: a 16:9
    /// phone of the same width for `other_phone` (and `all`), else the same phone.
    pub fn screen(self, recorded: ScreenSize) -> ScreenSize {
        match self {
            DriftKind::OtherPhone | DriftKind::All => ScreenSize {
                width: recorded.width,
                height: recorded.width * 16 / 9,
            },
            _ => recorded,
        }
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The drift a name means (`DriftKind::name`; `combo` is the short form of
    /// `renamed_ids+reorder_lists+moved_elements`).
    pub fn parse(name: &str) -> Option<DriftKind> {
        name.trim().parse().ok()
    }

    /// The drifts a comma-separated list names, in the list's order, each once.
    pub fn parse_list(list: &str) -> Result<Vec<DriftKind>, ReplayBenchError> {
        let mut out = Vec::new();
        for name in list.split(',').filter(|n| !n.trim().is_empty()) {
            let d = DriftKind::parse(name)
                .ok_or_else(|| ReplayBenchError::UnknownDrift(name.trim().into()))?;
            if !out.contains(&d) {
                out.push(d);
            }
        }
        if out.is_empty() {
            return Err(ReplayBenchError::UnknownDrift(list.into()));
        }
        Ok(out)
    }
}

/// How a recorded flow is replayed. Its name (`name`, `parse`) and the list
/// (`VARIANTS`) are derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Mode {
    /// The script agent with no recovery model.
    Selectors,
    /// The script agent with a rule-driven recovery model.
    Aitm,
    /// Blind replay of the coordinates the clean recording tapped.
    Coordinates,
}

impl Mode {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The mode a name means (`Mode::name`).
    pub fn parse(name: &str) -> Option<Mode> {
        name.trim().parse().ok()
    }

    /// The modes a comma-separated list names, each once.
    pub fn parse_list(list: &str) -> Result<Vec<Mode>, ReplayBenchError> {
        let mut out = Vec::new();
        for name in list.split(',').filter(|n| !n.trim().is_empty()) {
            let m = Mode::parse(name)
                .ok_or_else(|| ReplayBenchError::UnknownMode(name.trim().into()))?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        if out.is_empty() {
            return Err(ReplayBenchError::UnknownMode(list.into()));
        }
        Ok(out)
    }

    /// The target each mode is held to, for the table.
    pub fn target(self) -> &'static str {
        match self {
            Mode::Selectors => "≥95%",
            Mode::Aitm => "100%",
            Mode::Coordinates => "≤50%",
        }
    }
}

/// A flow recorded once on a clean phone.
#[derive(Debug, Clone)]
pub struct Flow {
    pub task: SimTask,
    /// The script recorded from the clean run (what the script agent replays).
    pub script: Script,
    /// The actions the clean run performed, coordinates as tapped (blind replay).
    pub coordinates: Vec<Action>,
}

/// Why the suite could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayBenchError {
    #[error("unknown flow `{0}`")]
    UnknownFlow(String),
    #[error("no flow of the suite matches `{0}`")]
    NoFlowMatches(String),
    #[error("unknown drift `{0}`")]
    UnknownDrift(String),
    #[error("unknown mode `{0}`")]
    UnknownMode(String),
    #[error("recording flow `{flow}` failed: {reason}")]
    Record { flow: String, reason: String },
    #[error("setting up the runner failed: {0}")]
    Setup(String),
}

impl ReplayBenchError {
    pub fn hint(&self) -> String {
        match self {
            ReplayBenchError::UnknownFlow(_) => {
                "flows are sim task ids; `droidpilot sim --list-tasks` lists them".into()
            }
            ReplayBenchError::NoFlowMatches(_) => format!(
                "a pattern is a comma-separated list of flow ids, `*` matching any run of characters (`clock.*,notes.edit_*`); the flows: {}",
                FLOWS.join(", ")
            ),
            ReplayBenchError::UnknownDrift(_) => format!(
                "drifts are a comma-separated list of: {}, combo",
                names(DriftKind::VARIANTS, DriftKind::name)
            ),
            ReplayBenchError::UnknownMode(_) => format!(
                "modes are a comma-separated list of: {}",
                names(Mode::VARIANTS, Mode::name)
            ),
            ReplayBenchError::Record { .. } => {
                "the flow's reference solution no longer completes on a clean phone; run `cargo test --test runner`".into()
            }
            ReplayBenchError::Setup(_) => "check that the temporary directory is writable".into(),
        }
    }
}

/// `a, b, c`: the names of a list of variants.
fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|&v| name(v)).collect::<Vec<_>>().join(", ")
}

/// The suite's flows a pattern names: a comma-separated list of flow ids where `*`
/// matches any run of characters, in the suite's order. A pattern that matches no flow
/// is refused, naming it, rather than running an empty suite.
pub fn select_flows(pattern: &str) -> Result<Vec<String>, ReplayBenchError> {
    let parts: Vec<&str> = pattern
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(p) = parts.iter().find(|p| !FLOWS.iter().any(|f| glob(p, f))) {
        return Err(ReplayBenchError::NoFlowMatches((*p).into()));
    }
    if parts.is_empty() {
        return Err(ReplayBenchError::NoFlowMatches(pattern.into()));
    }
    Ok(FLOWS
        .iter()
        .filter(|f| parts.iter().any(|p| glob(p, f)))
        .map(|f| f.to_string())
        .collect())
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(tail) = text.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

/// What one mode did under one drift, summed over flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    pub runs: usize,
    pub completed: usize,
    pub steps: u64,
    pub model_calls: u64,
    pub elapsed_ms: f64,
    /// Where the time went, summed over the steps (`StepTimings`).
    pub phases: Phases,
}

/// The runner's phases, summed over steps: what a mode's time per step is made of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Phases {
    /// Screenshot and hierarchy captures (taken concurrently, so this may exceed wall time).
    pub observe_ms: f64,
    /// The agent's decision, model calls included.
    pub decide_ms: f64,
    /// The action on the device (a `wait_for` waits here).
    pub act_ms: f64,
    /// Waiting for the screen to settle after the action.
    pub settle_ms: f64,
}

impl Phases {
    fn of(steps: &[crate::domain::Step]) -> Phases {
        let mut p = Phases::default();
        for t in steps.iter().map(|s| &s.timings) {
            p.observe_ms += (t.screenshot_ms + t.hierarchy_ms) as f64;
            p.decide_ms += t.inference_ms as f64;
            p.act_ms += t.action_ms as f64;
            p.settle_ms += t.settle_ms as f64;
        }
        p
    }
    fn add(&mut self, o: &Phases) {
        self.observe_ms += o.observe_ms;
        self.decide_ms += o.decide_ms;
        self.act_ms += o.act_ms;
        self.settle_ms += o.settle_ms;
    }
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.runs += o.runs;
        self.completed += o.completed;
        self.steps += o.steps;
        self.model_calls += o.model_calls;
        self.elapsed_ms += o.elapsed_ms;
        self.phases.add(&o.phases);
    }
    pub fn rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.completed as f64 / self.runs as f64
        }
    }
    pub fn model_calls_per_run(&self) -> f64 {
        self.model_calls as f64 / self.runs.max(1) as f64
    }
    pub fn ms_per_step(&self) -> f64 {
        self.elapsed_ms / self.steps.max(1) as f64
    }
    fn json(&self) -> serde_json::Value {
        let per = |v: f64| v / self.steps.max(1) as f64;
        serde_json::json!({
            "completed": self.completed, "runs": self.runs, "rate": self.rate(),
            "model_calls": self.model_calls_per_run(), "ms_per_step": self.ms_per_step(),
            "phase_ms_per_step": {
                "observe": per(self.phases.observe_ms), "decide": per(self.phases.decide_ms),
                "act": per(self.phases.act_ms), "settle": per(self.phases.settle_ms),
            },
        })
    }
}

/// The suite's result: per mode and drift, with the modes this build could run.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    pub flows: usize,
    pub drifts: Vec<DriftKind>,
    /// The modes run, in `Mode::VARIANTS` order (a subset when `--modes` said so).
    pub modes: Vec<Mode>,
    pub cells: BTreeMap<(Mode, DriftKind), Tally>,
    /// Per flow, mode and drift: whether the checker passed (for tests and debugging).
    pub outcomes: BTreeMap<(&'static str, Mode, DriftKind), bool>,
    /// Per run the checker failed: the reason the task ended with (which script step
    /// failed, and how), so a miss can be told from the table alone.
    pub reasons: BTreeMap<(&'static str, Mode, DriftKind), String>,
    pub unavailable: Vec<Mode>,
}

impl ReplayReport {
    /// A mode over every drift.
    pub fn mode(&self, m: Mode) -> Tally {
        let mut t = Tally::default();
        for ((mode, _), c) in &self.cells {
            if *mode == m {
                t.add(c);
            }
        }
        t
    }
}

/// What to run: which flows, drifts and modes.
#[derive(Debug, Clone)]
pub struct ReplayBenchOptions {
    pub flows: Vec<String>,
    pub drifts: Vec<DriftKind>,
    pub modes: Vec<Mode>,
    /// The phones' screen (flows are normalized, so any size replays them; tests use a
    /// half-size phone to render a quarter of the pixels).
    pub screen: ScreenSize,
    /// Report the steps of every run not completed through `progress`.
    pub trace: bool,
}

impl Default for ReplayBenchOptions {
    fn default() -> Self {
        Self {
            flows: FLOWS.iter().map(|s| s.to_string()).collect(),
            drifts: DriftKind::VARIANTS.to_vec(),
            modes: Mode::VARIANTS.to_vec(),
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
            trace: false,
        }
    }
}

/// A runner on a throw-away data directory, built the way the server builds it.
struct Env {
    screen: ScreenSize,
    runner: Runner,
    store: Arc<dyn Store>,
    _core: Core,
    _dir: ScratchDir,
}

/// A data directory under the system temp dir, removed when dropped.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new() -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!(
            "droidpilot-bench-replay-{}-{nanos}",
            std::process::id()
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

async fn env(screen: ScreenSize) -> Result<Env, ReplayBenchError> {
    let setup = setup_error;
    let dir = ScratchDir::new().map_err(|e| setup(&e))?;
    let overrides = Overrides {
        data_dir: Some(dir.0.clone()),
        ..Default::default()
    };
    let mut config =
        Config::load_with_env(&dir.0, &overrides, Vec::new()).map_err(|e| setup(&e))?;
    config.devices.sim.clear();
    config.runner = RunnerConfig {
        retry_backoff_ms: vec![10],
        settle_timeout_ms: 300,
        settle_poll_ms: 10,
        // No one answers at the bench: a question (AI in the middle gave up) times out at
        // once and the run counts as not completed, instead of waiting two minutes.
        ask_user_timeout_secs: 0,
        ..Default::default()
    };
    let core = Core::build(&config).await.map_err(|e| setup(&e))?;
    Ok(Env {
        screen,
        runner: (*core.runner).clone(),
        store: core.store.clone(),
        _core: core,
        _dir: dir,
    })
}

fn phone(screen: ScreenSize, faults: SimFaults, t: &SimTask) -> Arc<SimDevice> {
    let cfg = SimConfig {
        seed: SEED,
        width: screen.width,
        height: screen.height,
        faults,
        ..SimConfig::default()
    };
    let p = SimDevice::new(cfg).expect("the suite's drifts are valid faults");
    p.reset_to(t);
    Arc::new(p)
}

/// One run on a fresh phone: the finished task's id, whether the checker passed, the
/// steps and the wall time, and the reason the task ended with.
async fn run_once(
    env: &Env,
    t: &SimTask,
    drift: DriftKind,
    agent: Box<dyn Agent>,
    max_steps: usize,
) -> Result<(crate::domain::TaskId, bool, Tally, String), ReplayBenchError> {
    let setup = setup_error;
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(t.instruction.into()),
        max_steps: Some(max_steps as u32 + 10),
        ..Default::default()
    })
    .map_err(|e| setup(&e))?;
    let task = env.store.create_task(spec).await.map_err(|e| setup(&e))?;
    env.store
        .start_task(task.id, "sim-1")
        .await
        .map_err(|e| setup(&e))?;
    let task = env.store.get_task(task.id).await.map_err(|e| setup(&e))?;
    let p = phone(drift.screen(env.screen), drift.faults(), t);
    let (_tx, rx) = watch::channel(StopSignal::None);
    let start = Instant::now();
    let done = env
        .runner
        .run(task, p.clone(), agent, rx)
        .await
        .map_err(|e| setup(&e))?;
    let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
    let ok = t.check(&p.state());
    let steps = env.store.steps(done.id).await.map_err(|e| setup(&e))?;
    let tally = Tally {
        runs: 1,
        completed: ok as usize,
        steps: done.steps as u64,
        model_calls: done.model_calls,
        elapsed_ms,
        phases: Phases::of(&steps),
    };
    Ok((done.id, ok, tally, done.reason.clone().unwrap_or_default()))
}

/// Records a flow on a clean phone: the reference solution through the runner, then
/// the finished task's steps as a script.
pub async fn record_flow(id: &str, screen: ScreenSize) -> Result<Flow, ReplayBenchError> {
    let env = env(screen).await?;
    record_in(&env, id).await
}

async fn record_in(env: &Env, id: &str) -> Result<Flow, ReplayBenchError> {
    let t = task(id).ok_or_else(|| ReplayBenchError::UnknownFlow(id.into()))?;
    let actions = t.reference();
    let fail = |reason: String| ReplayBenchError::Record {
        flow: id.into(),
        reason,
    };
    let agent = Box::new(ReplayAgent::new(actions.clone()));
    let (task_id, ok, _, _) = run_once(env, &t, DriftKind::None, agent, actions.len()).await?;
    if !ok {
        return Err(fail("the checker failed on a clean phone".into()));
    }
    let steps = env
        .store
        .steps(task_id)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let script =
        crate::script::record::from_steps(t.instruction, &steps).map_err(|e| fail(e.0.clone()))?;
    Ok(Flow {
        task: t,
        script,
        coordinates: actions,
    })
}

/// The agent a mode replays a flow with: the script agent with no model (selectors),
/// the same with the rule-driven recovery model (AITM, `rule_model.rs`), or the recorded
/// coordinates replayed blind. Inputs without defaults (a typed password) get the text the
/// recording run typed.
fn agent_for(mode: Mode, flow: &Flow) -> Option<Box<dyn Agent>> {
    let script_agent = || {
        // The script's type steps and the run's typed texts, in order: a step typing
        // `${password}` gets what the recording typed there (not the first text typed).
        let typed = flow.coordinates.iter().filter_map(|a| match a {
            Action::Type { text, .. } => Some(text.clone()),
            _ => None,
        });
        let given: BTreeMap<String, String> = flow
            .script
            .steps
            .iter()
            .filter(|s| s.action == crate::script::model::StepAction::Type)
            .zip(typed)
            .filter_map(|(step, text)| {
                let var = step.parameters.text.as_deref()?;
                let name = var.strip_prefix("${")?.strip_suffix('}')?;
                flow.script
                    .inputs
                    .get(name)
                    .is_some_and(|i| i.default.is_none())
                    .then(|| (name.to_string(), text))
            })
            .collect();
        let vars = crate::script::vars::bind_inputs(&flow.script.inputs, &given).ok()?;
        Some(ScriptAgent::new(flow.script.clone(), None, vars))
    };
    match mode {
        Mode::Coordinates => Some(Box::new(ReplayAgent::new(flow.coordinates.clone()))),
        Mode::Selectors => Some(Box::new(script_agent()?)),
        Mode::Aitm => {
            let aitm = Aitm {
                model: Arc::new(super::rule_model::RuleModel::default()),
            };
            Some(Box::new(
                script_agent()?.with_recovery(aitm, Default::default()),
            ))
        }
    }
}

/// Records every flow once, then replays each under every drift in every mode.
pub async fn bench_replay(
    opts: &ReplayBenchOptions,
    progress: &dyn Fn(&str),
) -> Result<ReplayReport, ReplayBenchError> {
    let env = env(opts.screen).await?;
    let mut report = ReplayReport {
        drifts: opts.drifts.clone(),
        modes: Mode::VARIANTS
            .iter()
            .copied()
            .filter(|m| opts.modes.contains(m))
            .collect(),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let runs = opts.flows.len() * opts.modes.len() * opts.drifts.len();
    progress(&format!(
        "{} flow(s) to record, then {runs} replay(s): {} mode(s) × {} drift(s) each",
        opts.flows.len(),
        opts.modes.len(),
        opts.drifts.len()
    ));
    let mut done = 0;
    for (i, id) in opts.flows.iter().enumerate() {
        let flow = record_in(&env, id).await?;
        progress(&format!(
            "[{}/{}] recorded {id}: {} steps",
            i + 1,
            opts.flows.len(),
            flow.script.steps.len()
        ));
        report.flows += 1;
        for &mode in &opts.modes {
            let mut completed = 0;
            for &drift in &opts.drifts {
                let Some(agent) = agent_for(mode, &flow) else {
                    if !report.unavailable.contains(&mode) {
                        report.unavailable.push(mode);
                    }
                    continue;
                };
                // A script step may also wait, dismiss or recover: room for that.
                let n = flow.coordinates.len() * 4;
                let (task, ok, t, why) = run_once(&env, &flow.task, drift, agent, n).await?;
                if opts.trace && !ok {
                    let steps = env.store.steps(task).await.map_err(|e| setup_error(&e))?;
                    progress(&trace(&flow, mode, drift, &steps));
                }
                report.cells.entry((mode, drift)).or_default().add(&t);
                report.outcomes.insert((flow.task.id, mode, drift), ok);
                completed += usize::from(ok);
                if !ok {
                    report.reasons.insert((flow.task.id, mode, drift), why);
                }
            }
            done += opts.drifts.len();
            progress(&format!(
                "      {id} {}: {completed}/{} drifts completed ({done}/{runs} replays, {:.0} s)",
                mode.name(),
                opts.drifts.len(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(report)
}

fn setup_error(e: &dyn std::fmt::Display) -> ReplayBenchError {
    ReplayBenchError::Setup(e.to_string())
}

/// One failed run: the script as recorded (a step per line), then the run step by step:
/// the script step it served, the action and selector, and how it ended, with the screen
/// it acted on.
fn trace(flow: &Flow, mode: Mode, drift: DriftKind, steps: &[crate::domain::Step]) -> String {
    let id = flow.task.id;
    let mut out = format!("trace {id} {} {}:\n  script:\n", mode.name(), drift.name());
    for (i, step) in flow.script.steps.iter().enumerate() {
        let json = serde_json::to_string(step).unwrap_or_default();
        out.push_str(&format!("    #{i} {json}\n"));
    }
    out.push_str("  run:\n");
    for s in steps {
        let action = s
            .action
            .as_ref()
            .and_then(|a| serde_json::to_string(a).ok())
            .unwrap_or_else(|| "-".into());
        let replay = s.replay.as_ref().map_or(String::new(), |r| {
            format!("script#{} {:?} {:?} ", r.index, r.role, r.fallback)
        });
        let error = s
            .outcome
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" {e}"));
        let screen = s.screen.as_ref().map_or(String::new(), |c| {
            let labels: Vec<String> = c
                .elements
                .iter()
                .map(|e| match e.text.as_str() {
                    "" => e.selector.clone(),
                    t if e.selector.contains(t) => e.selector.clone(),
                    t => format!("{} \"{t}\"", e.selector),
                })
                .collect();
            format!("{} [{}]", c.summary, labels.join(", "))
        });
        out.push_str(&format!(
            "  {:>3} {replay}{action} -> {}{error}\n      on: {screen}\n",
            s.n, s.outcome.status
        ));
    }
    out
}

/// The table: one row per mode, then the per-drift breakdown.
pub fn format_report(r: &ReplayReport) -> String {
    let mut out = format!(
        "droidpilot bench replay: {} flows × {} drifts\n\n",
        r.flows,
        r.drifts.len()
    );
    out += &format!(
        "{:<12} {:>12} {:>7} {:>16} {:>12}  target\n",
        "mode", "completed", "rate", "model calls/run", "ms/step"
    );
    for &m in &r.modes {
        if r.unavailable.contains(&m) {
            out += &format!(
                "{:<12} {:>12}  (a script input had no value)  {}\n",
                m.name(),
                "n/a",
                m.target()
            );
            continue;
        }
        let t = r.mode(m);
        out += &format!(
            "{:<12} {:>12} {:>6.1}% {:>16.2} {:>12.1}  {}\n",
            m.name(),
            format!("{}/{}", t.completed, t.runs),
            t.rate() * 100.0,
            t.model_calls_per_run(),
            t.ms_per_step(),
            m.target()
        );
    }
    out += &format_phases(r);
    out += "\nper drift (completed/flows):\n";
    out += &format!("{:<42}", "drift");
    for m in &r.modes {
        out += &format!(" {:>12}", m.name());
    }
    out += "\n";
    for d in &r.drifts {
        out += &format!("{:<42}", d.name());
        for &m in &r.modes {
            let cell = match r.cells.get(&(m, *d)) {
                Some(t) => format!("{}/{}", t.completed, t.runs),
                None => "n/a".into(),
            };
            out += &format!(" {cell:>12}");
        }
        out += "\n";
    }
    out + &format_failures(r)
}

/// Where each mode's time per step goes, by the runner's phases.
fn format_phases(r: &ReplayReport) -> String {
    let mut out = format!(
        "\nwhere the time goes (ms/step): {:>10} {:>10} {:>10} {:>10}\n",
        "observe", "decide", "act", "settle"
    );
    for &m in &r.modes {
        let t = r.mode(m);
        let per = |v: f64| v / t.steps.max(1) as f64;
        out += &format!(
            "{:<30} {:>10.1} {:>10.1} {:>10.1} {:>10.1}\n",
            m.name(),
            per(t.phases.observe_ms),
            per(t.phases.decide_ms),
            per(t.phases.act_ms),
            per(t.phases.settle_ms)
        );
    }
    out
}

/// The runs the script agent did not complete (selectors and AITM; blind coordinates are
/// expected to fail under drift), one line each: `flow  mode  drift  why`.
fn format_failures(r: &ReplayReport) -> String {
    let failed: Vec<String> = r
        .outcomes
        .iter()
        .filter(|((_, m, _), ok)| !**ok && *m != Mode::Coordinates)
        .map(|((f, m, d), _)| {
            let why: String = r
                .reasons
                .get(&(*f, *m, *d))
                .map(|w| w.chars().take(160).collect())
                .unwrap_or_default();
            format!("  {f:<28} {:<10} {:<16} {why}\n", m.name(), d.name())
        })
        .collect();
    if failed.is_empty() {
        return String::new();
    }
    format!("\nnot completed by the script agent:\n{}", failed.concat())
}

/// The object: `{"flows", "modes": {mode: {completed, rate, model_calls,
/// ms_per_step}}, "drifts": {drift: {mode: …}}}`; a mode this build cannot run is null,
/// and a mode left out (`--modes`) is absent.
pub fn report_json(r: &ReplayReport) -> serde_json::Value {
    let mut modes = serde_json::Map::new();
    for &m in &r.modes {
        let v = if r.unavailable.contains(&m) {
            serde_json::Value::Null
        } else {
            r.mode(m).json()
        };
        modes.insert(m.name().into(), v);
    }
    let mut drifts = serde_json::Map::new();
    for d in &r.drifts {
        let mut per = serde_json::Map::new();
        for &m in &r.modes {
            let v = r
                .cells
                .get(&(m, *d))
                .map_or(serde_json::Value::Null, Tally::json);
            per.insert(m.name().into(), v);
        }
        drifts.insert(d.name().into(), per.into());
    }
    serde_json::json!({"flows": r.flows, "modes": modes, "drifts": drifts})
}
