//! `droidpilot bench replay`: the script replay suites. Each flow is a script judged by
//! a sim task's checker: a suite's flow is the task's reference solution run once on a
//! clean phone through the real runner with the replay agent, the finished task turned
//! into a `Script` by `script::record::from_steps`; a flow from outside the suite is a
//! script document or a Maestro flow from a folder (`sources.rs`). Each is replayed on a
//! fresh phone under each seeded drift (`DriftKind`) in each `Mode`, and the task's own
//! checker says whether it completed.
//!
//! Modes: `selectors` (the script agent, no model), `aitm` (the script agent with a
//! rule-driven recovery model, `rule_model::RuleModel`), `aitm_noop` (the same with a
//! model that answers nothing usable, `noop_model::NoopModel`, so what the rule model's
//! answers add over the retry shows) and `coordinates` (the replay agent with the
//! coordinates the clean recording tapped). Both models run in process, so the figures
//! need no key and no network; neither is a language model.
//!
//! Besides completion, every run is counted for what makes a replay unsafe (`counts.rs`):
//! a false "complete" (the agent ended the task as succeeded, the checker says no), taps
//! on another element than the clean run's, and effects applied again. A flow whose
//! script cannot be built (an input with no value) is reported as unavailable (`null` in
//! the JSON) rather than guessed. `options.rs` parses the flags once; `report.rs` prints.

pub mod counts;
pub mod farm;
pub mod options;
mod report;
mod run;
pub mod sources;
pub mod touches;

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;
use strum::VariantArray as _;

use crate::device::sim::{Locale, SimConfig, SimFaults, SimTask};
use crate::domain::{Action, ScreenSize};
use crate::script::Script;
use counts::Effects;
pub use options::{ReplayArgs, ReplayBenchOptions, Suite};
pub use report::{Phases, ReplayReport, RunOutcome, Tally, format_report, report_json};
pub use run::record_flow;
pub use sources::FlowSource;

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

/// Android's largest font-size preset, the `font_scale` drift's.
pub const LARGEST_FONT: f32 = 1.3;

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
    /// Every drift above at once.
    All,
    /// Text buttons become icon-only buttons whose label is their content-desc.
    IconButtons,
    /// Lists become two-column grids (rows become cells, in the same order).
    ListToGrid,
    /// Toolbar actions and the floating button move into a "More options" menu.
    OverflowMenu,
    /// A "What's new" dialog on each app's first open, before the flow's first step there.
    WhatsNew,
    /// Destructive actions ask first ("Delete alarm?" Cancel / Delete), after the step's
    /// own tap.
    ConfirmDestructive,
    /// Android's largest font preset (1.3): text and rows grow, targets move below the
    /// fold.
    FontScale,
    /// A redesign at once: icon buttons, grids, the overflow menu, the "what's new"
    /// dialog and confirmations, with the larger font and the real-world renames.
    Realistic,
    /// The whole phone in German; the flows were recorded on an English one.
    German,
    /// The ids and labels of the flow's own recorded screens renamed the way 41
    /// open-source apps renamed theirs between releases (`real_drift::rename_map`, by
    /// the mined kinds at their observed frequencies, seeded), with the layout changes
    /// the same releases made around them (`release_layout`: a new row, taller rows, or
    /// none, per app at the mined frequencies).
    RealRenames,
}

impl DriftKind {
    /// The drift suite's drifts: the seeded changes the matcher was built against.
    pub const DRIFT_SUITE: &'static [DriftKind] = &[
        DriftKind::None,
        DriftKind::RenamedIds,
        DriftKind::ReorderLists,
        DriftKind::Popups,
        DriftKind::DelayedElements,
        DriftKind::MovedElements,
        DriftKind::ChangedLabel,
        DriftKind::IdsListsMoved,
        DriftKind::AppUpdate,
        DriftKind::OtherPhone,
        DriftKind::All,
    ];
    /// The realistic suite's drifts: changes of the kinds real app updates make.
    pub const REALISTIC_SUITE: &'static [DriftKind] = &[
        DriftKind::None,
        DriftKind::IconButtons,
        DriftKind::ListToGrid,
        DriftKind::OverflowMenu,
        DriftKind::WhatsNew,
        DriftKind::ConfirmDestructive,
        DriftKind::FontScale,
        DriftKind::RealRenames,
        DriftKind::Realistic,
        DriftKind::German,
    ];

    /// Whether the realistic suite replays this drift on another phone of the device farm
    /// (`farm`): every drift but `none`, the control on the recording phone.
    pub fn on_farm(self) -> bool {
        self != DriftKind::None && DriftKind::REALISTIC_SUITE.contains(&self)
    }

    /// Whether this drift renames the flow's ids and labels by the real-world patterns:
    /// `real_renames` alone, and the redesign at once (`realistic`).
    pub fn real_renames(self) -> bool {
        matches!(self, DriftKind::RealRenames | DriftKind::Realistic)
    }

    /// The phone this drift replays on, given the one the flow was recorded on.
    pub fn configure(self, cfg: &mut SimConfig) {
        let recorded = ScreenSize {
            width: cfg.width,
            height: cfg.height,
        };
        let screen = self.screen(recorded);
        (cfg.width, cfg.height) = (screen.width, screen.height);
        cfg.faults = self.faults();
        match self {
            DriftKind::FontScale | DriftKind::Realistic => cfg.font_scale = LARGEST_FONT,
            DriftKind::German => cfg.locale = Locale::De,
            _ => {}
        }
    }

    /// The sim faults that make this drift.
    pub fn faults(self) -> SimFaults {
        let mut f = match self {
            DriftKind::Realistic => SimFaults::redesign(),
            _ => SimFaults::default(),
        };
        f.icon_buttons |= self == DriftKind::IconButtons;
        f.list_to_grid |= self == DriftKind::ListToGrid;
        f.overflow_menu |= self == DriftKind::OverflowMenu;
        f.whats_new_dialog |= self == DriftKind::WhatsNew;
        f.confirm_destructive |= self == DriftKind::ConfirmDestructive;
        // A release that renames ids and strings changes the layout around them too.
        f.release_layout = self.real_renames();
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
        parse_names(list, DriftKind::parse, ReplayBenchError::UnknownDrift)
    }
}

/// The values a comma-separated list names, in the list's order, each once; `unknown`
/// names the first name that is not one (or the whole list when it names none).
fn parse_names<T: PartialEq>(
    list: &str,
    parse: fn(&str) -> Option<T>,
    unknown: fn(String) -> ReplayBenchError,
) -> Result<Vec<T>, ReplayBenchError> {
    let mut out = Vec::new();
    for name in list.split(',').filter(|n| !n.trim().is_empty()) {
        let v = parse(name).ok_or_else(|| unknown(name.trim().into()))?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err(unknown(list.into()));
    }
    Ok(out)
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
    /// The script agent with AI in the middle answered by a rule-driven model.
    Aitm,
    /// The script agent with AI in the middle answered by a model that says nothing
    /// usable: what `aitm` adds over the retry is the difference.
    AitmNoop,
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
        parse_names(list, Mode::parse, ReplayBenchError::UnknownMode)
    }

    /// The target each mode is held to, for the table.
    pub fn target(self) -> &'static str {
        match self {
            Mode::Selectors => "≥95%",
            Mode::Aitm | Mode::AitmNoop => "-",
            Mode::Coordinates => "≤50%",
        }
    }

    /// The mode as the table names it: what answers AI in the middle's questions.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Selectors => "selectors",
            Mode::Aitm => "aitm (rule model)",
            Mode::AitmNoop => "aitm_noop (no answer)",
            Mode::Coordinates => "coordinates",
        }
    }
}

/// A flow ready to replay: its script, and its task's reference run on a clean phone.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Its name in the report: the task id, or the script file's name.
    pub name: String,
    pub task: SimTask,
    /// What the script agent replays: recorded from the clean run, or from a file.
    pub script: Script,
    /// Values for the script's inputs without a default (what the recording typed).
    pub inputs: BTreeMap<String, String>,
    /// The actions the clean run performed, coordinates as tapped (blind replay).
    pub coordinates: Vec<Action>,
    /// What the clean run did to the phone's data: more than this is a repeated action.
    pub clean: Effects,
    /// What the clean reference run touched per action (blind replay's baseline).
    pub clean_blind: touches::Touches,
    /// What the script replayed on a clean phone touched per step (the script modes'
    /// baseline of wrong-element touches).
    pub clean_script: touches::Touches,
    /// The real-world renames of the ids and labels of the clean run's screens (the
    /// `real_renames` drift's).
    pub renames: crate::device::sim::RenameMap,
    /// Each of those renames as a selector shows the old name (`#id`, `"Label"`) and
    /// its kind (`casing`, `abbreviation`, …), for the report per kind.
    pub rename_kinds: Vec<(String, &'static str)>,
}

/// Why the suite could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayBenchError {
    #[error("unknown flow `{0}`")]
    UnknownFlow(String),
    #[error("no flow of the suite matches `{0}`")]
    NoFlowMatches(String, Vec<String>),
    #[error("unknown drift `{0}`")]
    UnknownDrift(String),
    #[error("unknown mode `{0}`")]
    UnknownMode(String),
    #[error("recording flow `{flow}` failed: {reason}")]
    Record { flow: String, reason: String },
    #[error("setting up the runner failed: {0}")]
    Setup(String),
    #[error("{message}")]
    Source { message: String, hint: String },
    /// A flag's value refused: the flag, then what was wrong with it.
    #[error("{flag}: {message}")]
    Flag {
        flag: &'static str,
        message: String,
        hint: String,
    },
}

impl ReplayBenchError {
    pub fn hint(&self) -> String {
        match self {
            ReplayBenchError::UnknownFlow(_) => {
                "flows are sim task ids; `droidpilot sim --list-tasks` lists them".into()
            }
            ReplayBenchError::NoFlowMatches(_, all) => format!(
                "a pattern is a comma-separated list of flow ids, `*` matching any run of characters (`clock.*,notes.edit_*`); the suite's flows: {}",
                all.join(", ")
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
            ReplayBenchError::Source { hint, .. } | ReplayBenchError::Flag { hint, .. } => {
                hint.clone()
            }
        }
    }

    /// The same error, said of a flag (`--drifts: unknown drift `moved``).
    pub fn for_flag(self, flag: &'static str) -> ReplayBenchError {
        ReplayBenchError::Flag {
            flag,
            message: self.to_string(),
            hint: self.hint(),
        }
    }
}

/// `a, b, c`: the names of a list of variants.
fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|&v| name(v)).collect::<Vec<_>>().join(", ")
}

/// The flows of `all` a pattern names: a comma-separated list of flow ids where `*`
/// matches any run of characters, in the suite's order. A pattern that matches no flow
/// is refused, naming it, rather than running an empty suite.
pub fn select_flows(pattern: &str, all: &[String]) -> Result<Vec<String>, ReplayBenchError> {
    let parts: Vec<&str> = pattern
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(p) = parts.iter().find(|p| !all.iter().any(|f| glob(p, f))) {
        return Err(ReplayBenchError::NoFlowMatches((*p).into(), all.to_vec()));
    }
    if parts.is_empty() {
        return Err(ReplayBenchError::NoFlowMatches(
            pattern.into(),
            all.to_vec(),
        ));
    }
    Ok(all
        .iter()
        .filter(|f| parts.iter().any(|p| glob(p, f)))
        .cloned()
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

/// Records (or loads) every flow once, then replays each under every drift in every
/// mode. A flow of the drift suite that no longer records is an error (the guard must
/// not shrink); in the other suites it is reported as not run, with the reason.
pub async fn bench_replay(
    opts: &ReplayBenchOptions,
    progress: &dyn Fn(&str),
) -> Result<ReplayReport, ReplayBenchError> {
    let mut env = run::env(opts.seed, opts.screen, opts.overlay.clone()).await?;
    env.farm = opts.suite == Suite::Realistic;
    let external = opts
        .flows
        .iter()
        .any(|f| matches!(f, FlowSource::File { .. }));
    let mut report = ReplayReport {
        suite: if external {
            "scripts from outside the suite".into()
        } else {
            opts.suite.name().into()
        },
        conditions: opts.conditions(),
        drifts: opts.drifts.clone(),
        modes: Mode::VARIANTS
            .iter()
            .copied()
            .filter(|m| opts.modes.contains(m))
            .collect(),
        ..Default::default()
    };
    if opts.suite == Suite::Holdout && !external {
        report.skipped = sources::holdout().1;
    }
    let started = Instant::now();
    let runs = opts.flows.len() * opts.modes.len() * opts.drifts.len();
    progress(&format!(
        "{} flow(s) to record, then {runs} replay(s): {} mode(s) × {} drift(s) each",
        opts.flows.len(),
        opts.modes.len(),
        opts.drifts.len()
    ));
    let mut done = 0;
    for (i, source) in opts.flows.iter().enumerate() {
        let name = source.name();
        let flow = match run::record_in(&env, source).await {
            Ok(flow) => flow,
            Err(e) if external || opts.suite != Suite::Drift => {
                progress(&format!(
                    "[{}/{}] not run {name}: {e}",
                    i + 1,
                    opts.flows.len()
                ));
                report.skipped.push((name.to_string(), e.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        };
        progress(&format!(
            "[{}/{}] recorded {name}: {} steps",
            i + 1,
            opts.flows.len(),
            flow.script.steps.len()
        ));
        report.flows += 1;
        report.flow_names.push(flow.name.clone());
        if opts.drifts.iter().any(|d| d.real_renames()) {
            report
                .rename_kinds
                .insert(flow.name.clone(), flow.rename_kinds.clone());
        }
        for &mode in &opts.modes {
            let completed = replay_flow(&env, opts, &flow, mode, &mut report, progress).await?;
            done += opts.drifts.len();
            progress(&format!(
                "      {name} {}: {completed}/{} drifts completed ({done}/{runs} replays, {:.0} s)",
                mode.name(),
                opts.drifts.len(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(report)
}

/// One flow in one mode under every drift; returns how many runs completed.
async fn replay_flow(
    env: &run::Env,
    opts: &ReplayBenchOptions,
    flow: &Flow,
    mode: Mode,
    report: &mut ReplayReport,
    progress: &dyn Fn(&str),
) -> Result<usize, ReplayBenchError> {
    let mut completed = 0;
    for &drift in &opts.drifts {
        let Some(agent) = run::agent_for(mode, flow) else {
            if !report.unavailable.contains(&mode) {
                report.unavailable.push(mode);
            }
            continue;
        };
        let baseline = run::Baseline {
            effects: &flow.clean,
            touches: match mode {
                Mode::Coordinates => &flow.clean_blind,
                _ => &flow.clean_script,
            },
        };
        let n = run::max_steps(flow);
        let phone = run::Phone::Drifted(drift, &flow.renames);
        let r = run::run_once(env, &flow.task, phone, agent, n, Some(baseline)).await?;
        if opts.trace && !r.outcome.completed {
            let steps = env
                .store
                .steps(r.id)
                .await
                .map_err(|e| run::setup_error(&e))?;
            progress(&report::trace(flow, mode, drift, &steps));
        }
        report.cells.entry((mode, drift)).or_default().add(&r.tally);
        let key = (flow.name.clone(), mode, drift);
        report.outcomes.insert(key.clone(), r.outcome);
        completed += usize::from(r.outcome.completed);
        if !r.outcome.completed {
            report.reasons.insert(key, r.reason);
        }
    }
    Ok(completed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(d: DriftKind) -> SimConfig {
        let mut cfg = SimConfig::default();
        d.configure(&mut cfg);
        cfg
    }

    /// Each realistic drift is the sim change it names, and nothing else; the German
    /// phone is German only, at the recording's size.
    #[test]
    fn each_realistic_drift_makes_the_phone_it_names() {
        let f = configured(DriftKind::ConfirmDestructive).faults;
        assert!(f.confirm_destructive && !f.icon_buttons && !f.renamed_ids);
        assert!(configured(DriftKind::ListToGrid).faults.list_to_grid);
        assert!(configured(DriftKind::OverflowMenu).faults.overflow_menu);
        assert!(configured(DriftKind::WhatsNew).faults.whats_new_dialog);
        assert!(configured(DriftKind::IconButtons).faults.icon_buttons);
        assert_eq!(configured(DriftKind::FontScale).font_scale, LARGEST_FONT);
        let all = configured(DriftKind::Realistic);
        let release = SimFaults {
            release_layout: true,
            ..SimFaults::default()
        };
        assert_eq!(
            all.faults,
            SimFaults {
                release_layout: true,
                ..SimFaults::redesign()
            }
        );
        assert_eq!(all.font_scale, LARGEST_FONT);
        let de = configured(DriftKind::German);
        assert_eq!(de.locale, Locale::De);
        assert_eq!(de.faults, SimFaults::default());
        assert_eq!((de.width, de.height), (1080, 2400));
        assert_eq!(configured(DriftKind::OtherPhone).height, 1920);
        assert_eq!(configured(DriftKind::None).locale, Locale::En);
        // Real renames are per flow (its own screens' ids and labels), applied by the run.
        assert!(DriftKind::RealRenames.real_renames() && DriftKind::Realistic.real_renames());
        assert!(!DriftKind::German.real_renames() && !DriftKind::RenamedIds.real_renames());
        // and so is the layout a release changes around them: the sim's `release_layout`.
        assert_eq!(configured(DriftKind::RealRenames).faults, release);
        assert!(!configured(DriftKind::AppUpdate).faults.release_layout);
        for d in DriftKind::REALISTIC_SUITE {
            assert!(!DriftKind::DRIFT_SUITE.contains(d) || *d == DriftKind::None);
        }
    }
}
