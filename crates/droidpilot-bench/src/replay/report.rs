//! What `droidpilot bench replay` found, and how it is printed: the tallies per mode and
//! drift (completed runs, and the three counts that say whether a replay can be trusted:
//! false "complete", wrong-element actions and repeated actions), per flow, the table and
//! the `--json` object.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{DriftKind, Flow, Mode};

/// What one run did: whether the checker passed, whether the agent said the task was
/// done, and the actions it should not have taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunOutcome {
    /// The sim task's checker passed on the final state.
    pub completed: bool,
    /// The agent ended the task as succeeded (the script ran to its end, or the blind
    /// replay played every action).
    pub said_done: bool,
    /// Taps on another element than the clean run's tap for the same script step.
    pub wrong_element: u32,
    /// Effects beyond the clean run's: an item deleted, added, sent or ordered once more.
    pub repeated_actions: u32,
}

impl RunOutcome {
    /// The agent said done and the checker says no.
    pub fn false_complete(&self) -> bool {
        self.said_done && !self.completed
    }
}

/// What one mode did under one drift, summed over flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    pub runs: usize,
    pub completed: usize,
    /// Runs the agent ended as succeeded while the checker said no.
    pub false_complete: usize,
    /// Actions on another element than the clean run's for the same step.
    pub wrong_element: u64,
    /// Effects applied again (a second alarm deleted, a message sent twice).
    pub repeated_actions: u64,
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
    pub(super) fn of(steps: &[crate::domain::Step]) -> Phases {
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
    pub(super) fn add(&mut self, o: &Tally) {
        self.runs += o.runs;
        self.completed += o.completed;
        self.false_complete += o.false_complete;
        self.wrong_element += o.wrong_element;
        self.repeated_actions += o.repeated_actions;
        self.steps += o.steps;
        self.model_calls += o.model_calls;
        self.elapsed_ms += o.elapsed_ms;
        self.phases.add(&o.phases);
    }
    /// One run's counts.
    pub(super) fn count(&mut self, o: &RunOutcome) {
        self.runs += 1;
        self.completed += usize::from(o.completed);
        self.false_complete += usize::from(o.false_complete());
        self.wrong_element += u64::from(o.wrong_element);
        self.repeated_actions += u64::from(o.repeated_actions);
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
            "model_calls": self.model_calls_per_run(),
            "false_complete": self.false_complete, "wrong_element": self.wrong_element,
            "repeated_actions": self.repeated_actions,
            "ms_per_step": self.ms_per_step(),
            "phase_ms_per_step": {
                "observe": per(self.phases.observe_ms), "decide": per(self.phases.decide_ms),
                "act": per(self.phases.act_ms), "settle": per(self.phases.settle_ms),
            },
        })
    }
    fn counts_json(&self) -> serde_json::Value {
        serde_json::json!({
            "completed": self.completed, "runs": self.runs,
            "false_complete": self.false_complete, "wrong_element": self.wrong_element,
            "repeated_actions": self.repeated_actions,
        })
    }
}

/// The suite's result: per mode and drift, with the modes this build could run.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    /// What ran: the suite's name, or where the scripts came from.
    pub suite: String,
    /// The conditions every replay phone had (seed, screen, and what else was given).
    pub conditions: Vec<(String, String)>,
    pub flows: usize,
    /// The flows run, in order (task ids, or script file names).
    pub flow_names: Vec<String>,
    /// Flows that could not be recorded or loaded, with the reason: reported, not run.
    pub skipped: Vec<(String, String)>,
    pub drifts: Vec<DriftKind>,
    /// The modes run, in `Mode::VARIANTS` order (a subset when `--modes` said so).
    pub modes: Vec<Mode>,
    pub cells: BTreeMap<(Mode, DriftKind), Tally>,
    /// Per flow, mode and drift: what the run did.
    pub outcomes: BTreeMap<(String, Mode, DriftKind), RunOutcome>,
    /// Per run the checker failed: the reason the task ended with (which script step
    /// failed, and how), so a miss can be told from the table alone.
    pub reasons: BTreeMap<(String, Mode, DriftKind), String>,
    pub unavailable: Vec<Mode>,
    /// Per flow, the real-world renames its `real_renames` phones had: the old name as a
    /// selector shows it and the kind of change.
    pub rename_kinds: BTreeMap<String, Vec<(String, &'static str)>>,
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

    /// One flow in one mode, over every drift (counts only, no timings).
    pub fn flow(&self, name: &str, m: Mode) -> Tally {
        let mut t = Tally::default();
        for ((f, mode, _), o) in &self.outcomes {
            if f == name && *mode == m {
                t.count(o);
            }
        }
        t
    }
}

/// One failed run: the script as recorded (a step per line), then the run step by step:
/// the script step it served, the action and selector, and how it ended, with the screen
/// it acted on.
pub(super) fn trace(
    flow: &Flow,
    mode: Mode,
    drift: DriftKind,
    steps: &[crate::domain::Step],
) -> String {
    let id = &flow.name;
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

/// The table: one row per mode, then the per-drift and per-flow breakdowns.
pub fn format_report(r: &ReplayReport) -> String {
    let mut out = format!(
        "droidpilot bench replay ({}): {} flows × {} drifts\n",
        r.suite,
        r.flows,
        r.drifts.len()
    );
    if !r.conditions.is_empty() {
        let c: Vec<String> = r
            .conditions
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out += &format!("replayed with: {}\n", c.join(", "));
    }
    out += "\n";
    out += &format!(
        "{:<24} {:>10} {:>7} {:>10} {:>9} {:>9} {:>12} {:>9}  target\n",
        "mode", "completed", "rate", "false done", "wrong el", "repeated", "calls/run", "ms/step"
    );
    for &m in &r.modes {
        if r.unavailable.contains(&m) {
            out += &format!(
                "{:<24} {:>10}  (a script input had no value)  {}\n",
                m.label(),
                "n/a",
                m.target()
            );
            continue;
        }
        let t = r.mode(m);
        out += &format!(
            "{:<24} {:>10} {:>6.1}% {:>10} {:>9} {:>9} {:>12.2} {:>9.1}  {}\n",
            m.label(),
            format!("{}/{}", t.completed, t.runs),
            t.rate() * 100.0,
            t.false_complete,
            t.wrong_element,
            t.repeated_actions,
            t.model_calls_per_run(),
            t.ms_per_step(),
            m.target()
        );
    }
    out += "\nfalse done: the agent ended the task as succeeded and the checker says no; wrong el: \
            a tap on another element than the clean run's for that script step; repeated: an \
            effect beyond the clean run's (a second item deleted, a message sent twice).\n";
    if r.modes.contains(&Mode::Aitm) || r.modes.contains(&Mode::AitmNoop) {
        out += "aitm is AI in the middle answered by an in-process rule model, not a language \
                model; aitm_noop answers nothing usable, so aitm − aitm_noop is what the \
                model's answers add over the retry.\n";
    }
    out += &format_phases(r);
    out += &format_drifts(r);
    out += &format_flows(r);
    out += &format_skipped(r);
    out += &format_rename_kinds(r);
    out + &format_failures(r)
}

/// Per kind of real-world rename: how many ids and labels of the flows were renamed so,
/// and how many runs under `real_renames` failed at a step naming one (the failure's
/// reason names the step's selectors), per mode.
fn format_rename_kinds(r: &ReplayReport) -> String {
    if r.rename_kinds.is_empty() {
        return String::new();
    }
    let mut renamed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failed: BTreeMap<(&str, Mode), usize> = BTreeMap::new();
    for (flow, kinds) in &r.rename_kinds {
        for (_, k) in kinds {
            *renamed.entry(k).or_default() += 1;
        }
        for &m in &r.modes {
            let Some(reason) = r.reasons.get(&(flow.clone(), m, DriftKind::RealRenames)) else {
                continue;
            };
            let step = reason.split(" failed").next().unwrap_or(reason);
            let mut hit: Vec<&str> = kinds
                .iter()
                .filter(|(old, _)| step.contains(old.as_str()))
                .map(|(_, k)| *k)
                .collect();
            hit.sort();
            hit.dedup();
            for k in hit {
                *failed.entry((k, m)).or_default() += 1;
            }
        }
    }
    let mut out =
        "\nreal_renames per kind (renamed ids and labels; runs failed at a step naming one):\n"
            .to_string();
    out += &format!("{:<16} {:>8}", "kind", "renamed");
    for m in &r.modes {
        out += &format!(" {:>12}", m.name());
    }
    out += "\n";
    for (k, n) in &renamed {
        out += &format!("{k:<16} {n:>8}");
        for &m in &r.modes {
            out += &format!(" {:>12}", failed.get(&(*k, m)).copied().unwrap_or(0));
        }
        out += "\n";
    }
    out
}

fn format_drifts(r: &ReplayReport) -> String {
    let mut out = "\nper drift (completed/runs):\n".to_string();
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
    out
}

/// Per flow, over the drifts: completed/runs per mode, and the flow's unsafe counts
/// (false done, wrong element, repeated) when any is not zero.
fn format_flows(r: &ReplayReport) -> String {
    let mut out = "\nper flow (completed/runs):\n".to_string();
    out += &format!("{:<42}", "flow");
    for m in &r.modes {
        out += &format!(" {:>12}", m.name());
    }
    out += "\n";
    for f in &r.flow_names {
        out += &format!("{f:<42}");
        let mut unsafe_counts = Vec::new();
        for &m in &r.modes {
            let t = r.flow(f, m);
            out += &format!(" {:>12}", format!("{}/{}", t.completed, t.runs));
            if m != Mode::Coordinates
                && t.false_complete + t.wrong_element as usize + t.repeated_actions as usize > 0
            {
                unsafe_counts.push(format!(
                    "{}: false done {}, wrong el {}, repeated {}",
                    m.name(),
                    t.false_complete,
                    t.wrong_element,
                    t.repeated_actions
                ));
            }
        }
        if !unsafe_counts.is_empty() {
            out += &format!("  ({})", unsafe_counts.join("; "));
        }
        out += "\n";
    }
    out
}

fn format_skipped(r: &ReplayReport) -> String {
    if r.skipped.is_empty() {
        return String::new();
    }
    let mut out = format!("\nnot run ({}):\n", r.skipped.len());
    for (f, why) in &r.skipped {
        out += &format!("  {f:<40} {why}\n");
    }
    out
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

/// The runs the script agent did not complete (every mode but blind coordinates, which
/// are expected to fail under drift), one line each: `flow  mode  drift  why`.
fn format_failures(r: &ReplayReport) -> String {
    let failed: Vec<String> = r
        .outcomes
        .iter()
        .filter(|((_, m, _), o)| !o.completed && *m != Mode::Coordinates)
        .map(|((f, m, d), o)| {
            let why: String = r
                .reasons
                .get(&(f.clone(), *m, *d))
                .map(|w| w.chars().take(160).collect())
                .unwrap_or_default();
            let said = if o.said_done { " [said done]" } else { "" };
            format!("  {f:<28} {:<10} {:<16} {why}{said}\n", m.name(), d.name())
        })
        .collect();
    if failed.is_empty() {
        return String::new();
    }
    format!("\nnot completed by the script agent:\n{}", failed.concat())
}

/// The object: `{"suite", "flows", "modes": {mode: {completed, runs, rate,
/// model_calls, false_complete, wrong_element, repeated_actions, ms_per_step, …}},
/// "drifts": {drift: {mode: …}}, "per_flow": {flow: {mode: {completed, runs,
/// false_complete, wrong_element, repeated_actions}}}, "skipped": {flow: why}}`; a mode
/// this build cannot run is null, and a mode left out (`--modes`) is absent.
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
    let mut per_flow = serde_json::Map::new();
    for f in &r.flow_names {
        let per: serde_json::Map<String, serde_json::Value> = r
            .modes
            .iter()
            .map(|&m| (m.name().to_string(), r.flow(f, m).counts_json()))
            .collect();
        per_flow.insert(f.clone(), per.into());
    }
    let skipped: serde_json::Map<String, serde_json::Value> = r
        .skipped
        .iter()
        .map(|(f, why)| (f.clone(), why.clone().into()))
        .collect();
    let conditions: serde_json::Map<String, serde_json::Value> = r
        .conditions
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    serde_json::json!({
        "suite": r.suite, "conditions": conditions, "flows": r.flows, "modes": modes,
        "drifts": drifts, "per_flow": per_flow, "skipped": skipped,
    })
}
