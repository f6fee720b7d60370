//! `droidpilot bench replay`'s flags (`ReplayArgs`, clap) and what they mean once parsed
//! (`ReplayBenchOptions`): parsed once, each mistake refused naming its flag with the
//! valid values, before anything is recorded.

use std::path::PathBuf;

use strum::VariantArray as _;

use super::sources::{self, FlowSource};
use super::{DriftKind, Mode, ReplayBenchError, SEED};
use crate::device::sim::{Locale, RenameMap, SimConfig};
use crate::domain::ScreenSize;

/// Which built-in flows and drifts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Suite {
    /// The 24 flows under the seeded drifts the matcher was built against.
    #[default]
    Drift,
    /// The sim's other scored tasks (those with a reference solution and no question for
    /// a person) under the same drifts: flows the suite was not tuned on.
    Holdout,
    /// The 24 flows under app-update changes of the kinds real apps make.
    Realistic,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::Drift => "drift",
            Suite::Holdout => "holdout",
            Suite::Realistic => "realistic",
        }
    }

    /// The drifts this suite replays under when `--drifts` does not say.
    pub fn drifts(self) -> Vec<DriftKind> {
        match self {
            Suite::Drift | Suite::Holdout => DriftKind::DRIFT_SUITE.to_vec(),
            Suite::Realistic => DriftKind::REALISTIC_SUITE.to_vec(),
        }
    }
}

/// The flags, as `droidpilot bench replay` takes them.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// Which built-in suite: `drift` (24 flows under the seeded drifts), `holdout` (the
    /// sim's other scored tasks under the same drifts) or `realistic` (the 24 flows under
    /// app-update changes of the kinds real apps make).
    #[arg(long, value_enum, default_value_t = Suite::Drift)]
    pub suite: Suite,
    /// Only these of the suite's flows: comma-separated flow ids, `*` matching any run
    /// of characters (`clock.*,notes.edit_groceries`).
    #[arg(long, value_name = "PATTERN", conflicts_with_all = ["scripts", "flows_from"])]
    pub flows: Option<String>,
    /// Replay the script documents (`*.json`) in this folder instead of the suite's
    /// flows; each file is named after the sim task it is checked against
    /// (`clock.delete_0600.json`, `clock.delete_0600.by_hand.json`).
    #[arg(long, value_name = "DIR")]
    pub scripts: Option<PathBuf>,
    /// Replay the Maestro flows (`*.yaml`, `*.yml`) in this folder, imported as
    /// `droidpilot script import` does; named like `--scripts`' files.
    #[arg(long, value_name = "DIR")]
    pub flows_from: Option<PathBuf>,
    /// Only these drifts, comma-separated (the suite's by default).
    #[arg(long, value_name = "LIST")]
    pub drifts: Option<String>,
    /// Only these modes, comma-separated: selectors, aitm, aitm_noop, coordinates.
    #[arg(long, value_name = "LIST")]
    pub modes: Option<String>,
    /// The seed of every drifted phone (drift is deterministic per seed).
    #[arg(long, value_name = "N", default_value_t = SEED)]
    pub seed: u64,
    /// The phones' screen in pixels, `WIDTHxHEIGHT` (`1600x2560` a tablet, `2400x1080`
    /// landscape); flows are recorded and replayed on it.
    #[arg(long, value_name = "WxH", value_parser = parse_screen, default_value = "1080x2400")]
    pub screen: ScreenSize,
    /// Rename ids and UI strings on every replay phone, as an app update would:
    /// a JSON file `{"ids": {"old": "new"}, "strings": {"Old": "New"}}`.
    #[arg(long, value_name = "FILE")]
    pub rename_map: Option<PathBuf>,
    /// Every replay phone in this UI language (`en`, `de`); flows are recorded in English.
    #[arg(long, value_name = "LANG", value_parser = parse_locale)]
    pub locale: Option<Locale>,
    /// Every replay phone at this font scale (0.5 to 3.0; 1.3 is Android's largest preset).
    #[arg(long, value_name = "X", value_parser = parse_font_scale)]
    pub font_scale: Option<f32>,
    /// Print, on stderr, the steps of every run the script agent did not complete.
    #[arg(long)]
    pub trace: bool,
}

/// `--locale`: a language the virtual phone speaks.
pub fn parse_locale(s: &str) -> Result<Locale, String> {
    s.parse()
}

/// `--font-scale`: a number in the virtual phone's range.
pub fn parse_font_scale(s: &str) -> Result<f32, String> {
    let x: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (1.3 is Android's largest preset)"))?;
    let cfg = SimConfig {
        font_scale: x,
        ..SimConfig::default()
    };
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(x)
}

/// What every replay phone has on top of its drift (never the phone flows are recorded
/// on): `--rename-map`, `--locale`, `--font-scale`.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    pub renames: RenameMap,
    pub locale: Option<Locale>,
    pub font_scale: Option<f32>,
}

impl Overlay {
    pub fn apply(&self, cfg: &mut SimConfig) {
        if !self.renames.is_empty() {
            cfg.renames = self.renames.clone();
        }
        if let Some(l) = self.locale {
            cfg.locale = l;
        }
        if let Some(x) = self.font_scale {
            cfg.font_scale = x;
        }
    }

    /// For the report: what was on top (`locale de`, `rename map 12 ids, 30 strings`).
    fn describe(&self, map: Option<&std::path::Path>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(p) = map {
            let what = format!(
                "{} ({} ids, {} strings)",
                p.display(),
                self.renames.ids.len(),
                self.renames.strings.len()
            );
            out.push(("rename_map".into(), what));
        }
        if let Some(l) = self.locale {
            out.push(("locale".into(), l.tag().into()));
        }
        if let Some(x) = self.font_scale {
            out.push(("font_scale".into(), x.to_string()));
        }
        out
    }
}

/// `--rename-map`: the file, read and checked as the sim reads it.
fn read_rename_map(path: &std::path::Path) -> Result<RenameMap, ReplayBenchError> {
    let fail = |message: String| ReplayBenchError::Source {
        message: format!("{}: {message}", path.display()),
        hint: r#"a rename map is {"ids": {"old_id": "new_id"}, "strings": {"Old": "New"}}"#.into(),
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let map = RenameMap::from_json(&text).map_err(fail)?;
    map.validate().map_err(fail)?;
    Ok(map)
}

/// `--screen`: `WIDTHxHEIGHT` within the virtual phone's range.
pub fn parse_screen(s: &str) -> Result<ScreenSize, String> {
    let bad = || format!("`{s}` is not WIDTHxHEIGHT in pixels (`1080x2400`, `2400x1080`)");
    let (w, h) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let width: u32 = w.trim().parse().map_err(|_| bad())?;
    let height: u32 = h.trim().parse().map_err(|_| bad())?;
    let cfg = SimConfig {
        width,
        height,
        ..SimConfig::default()
    };
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(ScreenSize { width, height })
}

/// What to run: which flows, drifts and modes, on which phones.
#[derive(Debug, Clone)]
pub struct ReplayBenchOptions {
    pub suite: Suite,
    /// The flows: the suite's (by task id) or scripts from outside it.
    pub flows: Vec<FlowSource>,
    pub drifts: Vec<DriftKind>,
    pub modes: Vec<Mode>,
    /// The seed of every phone.
    pub seed: u64,
    /// The phones' screen (flows are normalized, so any size replays them; tests use a
    /// half-size phone to render a quarter of the pixels).
    pub screen: ScreenSize,
    /// What every replay phone has on top of its drift.
    pub overlay: Overlay,
    /// The conditions for the report, as the flags gave them.
    pub given: Vec<(String, String)>,
    /// Report the steps of every run not completed through `progress`.
    pub trace: bool,
}

impl Default for ReplayBenchOptions {
    fn default() -> Self {
        Self {
            suite: Suite::Drift,
            flows: super::FLOWS
                .iter()
                .map(|f| FlowSource::Task(f.to_string()))
                .collect(),
            drifts: Suite::Drift.drifts(),
            modes: Mode::VARIANTS.to_vec(),
            seed: SEED,
            screen: ScreenSize {
                width: 1080,
                height: 2400,
            },
            overlay: Overlay::default(),
            given: Vec::new(),
            trace: false,
        }
    }
}

impl ReplayBenchOptions {
    /// The flags, checked and resolved: a flag's mistake is refused naming the flag.
    pub fn from_args(a: &ReplayArgs) -> Result<Self, ReplayBenchError> {
        let flag = |f: &'static str| move |e: ReplayBenchError| e.for_flag(f);
        let mut flows = Vec::new();
        if let Some(dir) = &a.scripts {
            flows.extend(
                sources::scripts_in(dir, sources::Kind::Script).map_err(flag("--scripts"))?,
            );
        }
        if let Some(dir) = &a.flows_from {
            flows.extend(
                sources::scripts_in(dir, sources::Kind::Maestro).map_err(flag("--flows-from"))?,
            );
        }
        let external = !flows.is_empty();
        if !external {
            let all = sources::suite_flows(a.suite);
            flows = match &a.flows {
                Some(p) => super::select_flows(p, &all).map_err(flag("--flows"))?,
                None => all,
            }
            .into_iter()
            .map(FlowSource::Task)
            .collect();
        }
        let drifts = match &a.drifts {
            Some(l) => DriftKind::parse_list(l).map_err(flag("--drifts"))?,
            None => a.suite.drifts(),
        };
        let modes = match &a.modes {
            Some(l) => Mode::parse_list(l).map_err(flag("--modes"))?,
            None => Mode::VARIANTS.to_vec(),
        };
        let renames = match &a.rename_map {
            Some(p) => read_rename_map(p).map_err(flag("--rename-map"))?,
            None => RenameMap::default(),
        };
        let overlay = Overlay {
            renames,
            locale: a.locale,
            font_scale: a.font_scale,
        };
        Ok(Self {
            suite: a.suite,
            flows,
            drifts,
            modes,
            seed: a.seed,
            screen: a.screen,
            given: overlay.describe(a.rename_map.as_deref()),
            overlay,
            trace: a.trace,
        })
    }

    /// The flags every replay phone had, for the report (`seed 7`, `screen 1080x2400`).
    pub fn conditions(&self) -> Vec<(String, String)> {
        let mut out = vec![
            ("seed".into(), self.seed.to_string()),
            (
                "screen".into(),
                format!("{}x{}", self.screen.width, self.screen.height),
            ),
        ];
        out.extend(self.given.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReplayArgs,
    }

    fn parse(argv: &[&str]) -> Result<ReplayBenchOptions, String> {
        let argv = std::iter::once("replay").chain(argv.iter().copied());
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        ReplayBenchOptions::from_args(&cli.args).map_err(|e| format!("{e}. {}", e.hint()))
    }

    #[test]
    fn the_defaults_are_the_drift_suite_at_its_seed_on_the_default_phone() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.suite, Suite::Drift);
        assert_eq!(o.flows.len(), 24);
        assert_eq!(o.drifts, DriftKind::DRIFT_SUITE);
        assert_eq!(o.modes, Mode::VARIANTS);
        assert_eq!(
            (o.seed, o.screen.width, o.screen.height),
            (SEED, 1080, 2400)
        );
    }

    /// A rename map is read once, as the sim reads it: an unknown field is refused by
    /// name; a good one is on every replay phone and in the report's conditions.
    #[test]
    fn a_rename_map_file_is_read_and_checked_once() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"idz": {}}"#).unwrap();
        let e = parse(&["--rename-map", bad.to_str().unwrap()]).unwrap_err();
        assert!(e.contains("--rename-map") && e.contains("idz"), "{e}");
        let good = dir.path().join("map.json");
        std::fs::write(
            &good,
            r#"{"ids": {"delete": "remove"}, "strings": {"Save": "Done"}}"#,
        )
        .unwrap();
        let o = parse(&[
            "--rename-map",
            good.to_str().unwrap(),
            "--locale",
            "de",
            "--font-scale",
            "1.3",
        ])
        .unwrap();
        assert_eq!(o.overlay.renames.ids["delete"], "remove");
        assert_eq!(o.overlay.locale, Some(Locale::De));
        let mut cfg = SimConfig::default();
        o.overlay.apply(&mut cfg);
        assert_eq!(
            (
                cfg.locale,
                cfg.font_scale,
                cfg.renames.strings["Save"].as_str()
            ),
            (Locale::De, 1.3, "Done")
        );
        let c: Vec<String> = o
            .conditions()
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        assert!(
            c.iter()
                .any(|c| c.starts_with("rename_map") && c.contains("1 ids, 1 strings")),
            "{c:?}"
        );
        assert!(c.contains(&"locale de-DE".to_string()), "{c:?}");
    }

    #[test]
    fn seed_screen_and_suite_are_typed_once() {
        let o = parse(&[
            "--seed",
            "11",
            "--screen",
            "2400x1080",
            "--suite",
            "holdout",
        ])
        .unwrap();
        assert_eq!((o.seed, o.screen.width, o.screen.height), (11, 2400, 1080));
        assert_eq!(o.suite, Suite::Holdout);
        assert!(o.flows.len() > 20, "the other tasks: {}", o.flows.len());
        assert!(
            o.flows
                .iter()
                .all(|f| !super::super::FLOWS.contains(&f.name())),
            "the hold-out suite has none of the drift suite's flows"
        );
    }

    /// Each bad flag is refused by name, with what it takes.
    #[test]
    fn a_bad_flag_is_refused_naming_the_flag() {
        for (argv, flag, says) in [
            (&["--screen", "1080"][..], "--screen", "WIDTHxHEIGHT"),
            (&["--screen", "10x10"], "--screen", "out of range"),
            (&["--seed", "abc"], "--seed", "invalid digit"),
            (&["--suite", "hard"], "--suite", "holdout"),
            (&["--drifts", "none,moved"], "--drifts", "renamed_ids"),
            (&["--modes", "ai"], "--modes", "aitm_noop"),
            (&["--flows", "clocks.*"], "--flows", "clock.alarm_0730"),
            (
                &["--scripts", "/nonexistent/droidpilot"],
                "--scripts",
                "/nonexistent/droidpilot",
            ),
            (
                &["--flows-from", "/nonexistent/x"],
                "--flows-from",
                "/nonexistent/x",
            ),
            (
                &["--flows", "clock.*", "--scripts", "."],
                "--scripts",
                "cannot be used with",
            ),
            (&["--locale", "fr"], "--locale", "en or de"),
            (&["--font-scale", "big"], "--font-scale", "not a number"),
            (&["--font-scale", "9"], "--font-scale", "0.5 to 3.0"),
            (
                &["--rename-map", "/nonexistent/map.json"],
                "--rename-map",
                "/nonexistent/map.json",
            ),
        ] {
            let e = parse(argv).unwrap_err();
            assert!(e.contains(flag), "{argv:?} should name {flag}: {e}");
            assert!(e.contains(says), "{argv:?} should say {says:?}: {e}");
        }
    }
}
