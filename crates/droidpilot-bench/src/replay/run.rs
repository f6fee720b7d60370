//! One run of `droidpilot bench replay`: a runner built the way the server builds it,
//! on a throw-away data directory; a fresh sim phone per run, reset to the flow's task
//! and changed by the run's drift; the recording of a flow on a clean phone; and the
//! agent each mode replays with.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::counts::Effects;
use super::options::Overlay;
use super::report::{Phases, RunOutcome, Tally};
use super::sources::FlowSource;
use super::touches::{Attributing, Touches, wrong};
use super::{DriftKind, Flow, Mode, ReplayBenchError, SEED};
use crate::agent::Agent;
use crate::agent::replay::ReplayAgent;
use crate::agent::script::ScriptAgent;
use crate::agent::script::recover::Aitm;
use crate::config::{Config, Overrides};
use crate::core::Core;
use crate::device::sim::{RenameMap, SimConfig, SimDevice, SimTask, task};
use crate::domain::{Action, NewTask, ScreenSize, TaskId, TaskSpec, TaskStatus};
use crate::run::runner::{Runner, RunnerConfig};
use crate::run::stop::StopSignal;
use crate::script::Script;
use crate::store::Store;

/// A runner on a throw-away data directory, and the phones' seed, screen and what every
/// replay phone has on top of its drift.
pub(super) struct Env {
    pub seed: u64,
    pub screen: ScreenSize,
    pub overlay: Overlay,
    /// Whether replay phones are drawn from the device farm (`farm`; the realistic
    /// suite's).
    pub farm: bool,
    runner: Runner,
    pub store: Arc<dyn Store>,
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

pub(super) fn setup_error(e: &dyn std::fmt::Display) -> ReplayBenchError {
    ReplayBenchError::Setup(e.to_string())
}

pub(super) async fn env(
    seed: u64,
    screen: ScreenSize,
    overlay: Overlay,
) -> Result<Env, ReplayBenchError> {
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
        seed,
        screen,
        overlay,
        farm: false,
        runner: (*core.runner).clone(),
        store: core.store.clone(),
        _core: core,
        _dir: dir,
    })
}

/// Which phone a run gets.
#[derive(Debug, Clone, Copy)]
pub(super) enum Phone<'a> {
    /// The phone flows are recorded on: no drift, nothing on top.
    Clean,
    /// A replay phone: the drift (with the flow's real-world renames when the drift
    /// renames), then the overlay (`--rename-map`, `--locale`, …).
    Drifted(DriftKind, &'a RenameMap),
}

fn phone(env: &Env, which: Phone<'_>, t: &SimTask) -> Result<Arc<SimDevice>, ReplayBenchError> {
    let mut cfg = SimConfig {
        seed: env.seed,
        width: env.screen.width,
        height: env.screen.height,
        ..SimConfig::default()
    };
    if let Phone::Drifted(drift, renames) = which {
        drift.configure(&mut cfg);
        if env.farm && drift.on_farm() {
            super::farm::pick(env.seed, t.id, drift.name()).configure(&mut cfg);
        }
        if drift.real_renames() {
            cfg.renames = renames.clone();
        }
        env.overlay.apply(&mut cfg);
    }
    let p = SimDevice::new(cfg).map_err(|e| setup_error(&e))?;
    p.reset_to(t);
    Ok(Arc::new(p))
}

/// What a run is compared with: the clean run's effects and touches.
pub(super) struct Baseline<'a> {
    pub effects: &'a Effects,
    pub touches: &'a Touches,
}

/// What one run did.
pub(super) struct Run {
    pub id: TaskId,
    pub outcome: RunOutcome,
    pub tally: Tally,
    /// The reason the task ended with.
    pub reason: String,
    /// What the run did to the phone's data.
    pub effects: Effects,
    /// What its own actions touched, per step.
    pub touches: Touches,
}

/// One run on a fresh phone, judged by the task's checker; `clean` is what the clean run
/// did, against which repeated actions and wrong elements are counted.
pub(super) async fn run_once(
    env: &Env,
    t: &SimTask,
    which: Phone<'_>,
    agent: Box<dyn Agent>,
    max_steps: usize,
    clean: Option<Baseline<'_>>,
) -> Result<Run, ReplayBenchError> {
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
    let p = phone(env, which, t)?;
    let (agent, reader) = Attributing::wrap(agent, p.clone());
    let before = p.state();
    let (_tx, rx) = watch::channel(StopSignal::None);
    let start = Instant::now();
    let done = env
        .runner
        .run(task, p.clone(), agent, rx)
        .await
        .map_err(|e| setup(&e))?;
    let elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
    let after = p.state();
    let effects = Effects::between(&before, &after);
    let touches = reader.touches();
    let outcome = RunOutcome {
        completed: t.check(&after),
        said_done: done.status == TaskStatus::Succeeded,
        wrong_element: clean.as_ref().map_or(0, |c| wrong(&touches, c.touches)),
        repeated_actions: clean.as_ref().map_or(0, |c| effects.beyond(c.effects)),
    };
    let steps = env.store.steps(done.id).await.map_err(|e| setup(&e))?;
    let mut tally = Tally {
        steps: done.steps as u64,
        model_calls: done.model_calls,
        elapsed_ms,
        phases: Phases::of(&steps),
        ..Default::default()
    };
    tally.count(&outcome);
    Ok(Run {
        id: done.id,
        outcome,
        tally,
        reason: done.reason.clone().unwrap_or_default(),
        effects,
        touches,
    })
}

/// Records a suite's flow on a clean phone: the reference solution through the runner,
/// then the finished task's steps as a script.
pub async fn record_flow(id: &str, screen: ScreenSize) -> Result<Flow, ReplayBenchError> {
    let env = env(SEED, screen, Overlay::default()).await?;
    record_in(&env, &FlowSource::Task(id.into())).await
}

/// A flow ready to replay: the task's reference run on a clean phone (the blind replay's
/// coordinates and touches, and the baseline of repeated actions), and the script:
/// recorded from that run for a suite's flow, as given for a script from outside; then
/// the script replayed on a clean phone, for what each of its steps touches there.
pub(super) async fn record_in(env: &Env, source: &FlowSource) -> Result<Flow, ReplayBenchError> {
    let id = source.task_id();
    let t = task(id).ok_or_else(|| ReplayBenchError::UnknownFlow(id.into()))?;
    let actions = t.reference();
    let fail = |reason: String| ReplayBenchError::Record {
        flow: id.into(),
        reason,
    };
    let agent = Box::new(ReplayAgent::new(actions.clone()));
    let run = run_once(env, &t, Phone::Clean, agent, actions.len(), None).await?;
    if !run.outcome.completed {
        return Err(fail("the checker failed on a clean phone".into()));
    }
    let steps = env
        .store
        .steps(run.id)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let (renames, rename_kinds) = real_renames(env.seed, &steps, &actions);
    let (script, inputs) = match source {
        FlowSource::Task(_) => {
            let script = crate::script::record::from_steps(t.instruction, &steps)
                .map_err(|e| fail(e.0.clone()))?;
            let inputs = typed_inputs(&script, &actions);
            (script, inputs)
        }
        FlowSource::File { script, .. } => ((**script).clone(), BTreeMap::new()),
    };
    let mut flow = Flow {
        name: source.name().to_string(),
        task: t,
        script,
        inputs,
        coordinates: actions,
        clean: run.effects,
        clean_blind: run.touches,
        clean_script: Touches::new(),
        renames,
        rename_kinds,
    };
    if let Some(agent) = agent_for(Mode::Selectors, &flow) {
        let n = max_steps(&flow);
        flow.clean_script = run_once(env, &flow.task, Phone::Clean, agent, n, None)
            .await?
            .touches;
    }
    Ok(flow)
}

/// The `real_renames` drift's map for a flow: the ids (`#id`) and labels (`:text`,
/// `:desc`, anchors) of every element on the clean run's screens, renamed by
/// `real_drift::renames` (the mined kinds of change at their observed frequencies),
/// with each renamed item as a selector shows it (`#id`, `"Label"`) and its kind. What
/// the flow typed is the user's, never renamed.
fn real_renames(
    seed: u64,
    steps: &[crate::domain::Step],
    typed: &[Action],
) -> (RenameMap, Vec<(String, &'static str)>) {
    use crate::screen::Selector;
    fn collect(s: &Selector, ids: &mut Vec<String>, labels: &mut Vec<String>) {
        match s {
            Selector::Id(id) => ids.push(id.clone()),
            Selector::Text { text, .. } => labels.push(text.clone()),
            Selector::Desc { desc, .. } => labels.push(desc.clone()),
            Selector::Near { anchor, target } => {
                collect(anchor, ids, labels);
                collect(target, ids, labels);
            }
            _ => {}
        }
    }
    let (mut ids, mut labels) = (Vec::new(), Vec::new());
    let elements = steps
        .iter()
        .filter_map(|s| s.screen.as_ref())
        .flat_map(|s| &s.elements);
    for e in elements {
        for sel in std::iter::once(&e.selector).chain(&e.alternative_selectors) {
            if let Ok(s) = Selector::parse(sel) {
                collect(&s, &mut ids, &mut labels);
            }
        }
    }
    let user: Vec<&str> = typed
        .iter()
        .filter_map(|a| match a {
            Action::Type { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    labels.retain(|l| !user.iter().any(|u| l.contains(u)) && l != crate::screen::REDACTED);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    use crate::real_drift::{Kind, renames};
    let mut map = RenameMap::default();
    let mut kinds = Vec::new();
    for r in renames(seed, Kind::Id, &ids)
        .into_iter()
        .chain(renames(seed, Kind::String, &labels))
    {
        let shown = match r.kind {
            Kind::Id => format!("#{}", r.old),
            Kind::String => format!("\"{}\"", r.old),
        };
        kinds.push((shown, r.pattern.as_str()));
        match r.kind {
            Kind::Id => map.ids.insert(r.old, r.new),
            Kind::String => map.strings.insert(r.old, r.new),
        };
    }
    (map, kinds)
}

/// A run's step budget: a script step may also wait, dismiss or recover.
pub(super) fn max_steps(flow: &Flow) -> usize {
    flow.coordinates.len().max(flow.script.steps.len()) * 4
}

/// Inputs without defaults (a typed password) get the text the recording run typed: the
/// script's type steps and the run's typed texts, in order, so a step typing
/// `${password}` gets what the recording typed there (not the first text typed).
fn typed_inputs(script: &Script, actions: &[Action]) -> BTreeMap<String, String> {
    let typed = actions.iter().filter_map(|a| match a {
        Action::Type { text, .. } => Some(text.clone()),
        _ => None,
    });
    script
        .steps
        .iter()
        .filter(|s| s.action == crate::script::model::StepAction::Type)
        .zip(typed)
        .filter_map(|(step, text)| {
            let var = step.parameters.text.as_deref()?;
            let name = var.strip_prefix("${")?.strip_suffix('}')?;
            script
                .inputs
                .get(name)
                .is_some_and(|i| i.default.is_none())
                .then(|| (name.to_string(), text))
        })
        .collect()
}

/// The agent a mode replays a flow with: the script agent with no model (selectors),
/// the same with AI in the middle answered by the rule model (`aitm`) or by a model that
/// answers nothing usable (`aitm_noop`), or the recorded coordinates replayed blind.
/// `None` when an input has no value.
pub(super) fn agent_for(mode: Mode, flow: &Flow) -> Option<Box<dyn Agent>> {
    let script_agent = || {
        let vars = crate::script::vars::bind_inputs(&flow.script.inputs, &flow.inputs).ok()?;
        Some(ScriptAgent::new(flow.script.clone(), None, vars))
    };
    let with = |model: Arc<dyn crate::llm::ChatModel>| {
        Some(script_agent()?.with_recovery(Aitm { model }, Default::default()))
    };
    match mode {
        Mode::Coordinates => Some(Box::new(ReplayAgent::new(flow.coordinates.clone()))),
        Mode::Selectors => Some(Box::new(script_agent()?)),
        Mode::Aitm => Some(Box::new(with(Arc::new(
            crate::rule_model::RuleModel::default(),
        ))?)),
        Mode::AitmNoop => Some(Box::new(with(Arc::new(
            crate::noop_model::NoopModel::default(),
        ))?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `real_renames` drift renames ids and labels the clean run's screens showed,
    /// by a real kind of change, and never what the flow typed (the user's own text).
    #[test]
    fn real_renames_rename_what_the_screens_showed_never_what_was_typed() {
        let labels = [
            "Settings",
            "Delete",
            "Save",
            "Cancel",
            "Search",
            "Add alarm",
            "Edit",
            "Sign in",
            "Send message",
            "New note",
            "Buy milk",
        ];
        let ids = [
            "add_alarm_button",
            "delete",
            "search_view",
            "save_button",
            "sign_in",
            "send",
            "fab",
            "title",
        ];
        let elements: Vec<serde_json::Value> = labels
            .iter()
            .zip(ids.iter().cycle())
            .enumerate()
            .map(|(i, (l, id))| {
                serde_json::json!({"element_id": i, "selector": format!("#{id}"),
                    "alternative_selectors": [format!(":text(\"{l}\")"), format!("[0.{i}]")],
                    "type": "Button", "text": l, "actions": ["click"],
                    "bounds": {"left": 0, "top": 0, "right": 10, "bottom": 10}})
            })
            .collect();
        let step: crate::domain::Step = serde_json::from_value(serde_json::json!({
            "task_id": "01900000-0000-7000-8000-000000000000", "n": 1,
            "started_at": "2026-11-24T10:00:00Z", "thinking": null,
            "action": {"action": "tap", "coordinate": [0.5, 0.5]}, "outcome": {"status": "ok"},
            "screen": {"summary": "", "app": "x", "layout_hash": "a", "size": [1000, 2000],
                       "elements": elements},
            "screenshot": null, "timings": {"screenshot_ms": 0, "hierarchy_ms": 0,
                "inference_ms": 0, "action_ms": 0, "settle_ms": 0, "overhead_ms": 0.0},
            "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0
        }))
        .unwrap();
        let typed: Action =
            serde_json::from_value(serde_json::json!({"action": "type", "text": "Buy milk"}))
                .unwrap();
        let (map, kinds) = real_renames(SEED, &[step], &[typed]);
        assert!(!map.is_empty(), "some real kind of change fits these");
        assert!(map.ids.keys().all(|k| ids.contains(&k.as_str())));
        assert!(map.strings.keys().all(|k| labels.contains(&k.as_str())));
        assert!(!map.strings.contains_key("Buy milk"), "typed by the user");
        assert_eq!(kinds.len(), map.ids.len() + map.strings.len());
        assert!(map.strings.iter().all(|(old, new)| old != new));
    }
}
