//! `droidpilot sim`: a virtual phone served as an adbd over TCP, for the real `adb` tool
//! (`adb connect 127.0.0.1:5555`) and the ADB backend.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;

use crate::adbd::{Adbd, AdbdOptions};
use crate::device::sim::{
    Difficulty, LatencyProfile, Locale, Pacing, RenameMap, SimConfig, SimDevice, SimFaults, task,
    tasks,
};

#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// TCP port to listen on.
    #[arg(long, default_value_t = 5555)]
    pub port: u16,
    /// Address to bind (use 0.0.0.0 to serve other hosts).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The phone's serial inside droidpilot.
    #[arg(long, default_value = "sim-1")]
    pub serial: String,
    /// Require the adb AUTH exchange, like a phone with USB debugging authorization.
    #[arg(long)]
    pub auth: bool,
    /// Faults as `key=value` pairs separated by commas, e.g.
    /// `hierarchy_error_rate=0.2,dropped_tap_rate=0.1,renamed_ids=true`.
    #[arg(long)]
    pub faults: Option<String>,
    /// Seed for every random fault.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Start in a scored task's initial state (`--list-tasks` shows them).
    #[arg(long)]
    pub task: Option<String>,
    /// Real milliseconds to pause after each action, to watch a task live (default 0:
    /// the phone runs on virtual time and a task takes milliseconds).
    #[arg(long, default_value_t = 0)]
    pub pace_ms: u64,
    /// `virtual` (commands take no real time) or `realistic` (each command takes its
    /// virtual duration in real time: a tap 400 ms, a launch 800 ms).
    #[arg(long, value_enum, default_value_t = PacingArg::Virtual)]
    pub pacing: PacingArg,
    /// How long each command takes in real time, as on a real phone: `fast` (none, the
    /// default), `pixel-8` (dump ~2 s, screencap ~250 ms, input ~300 ms), `budget`.
    #[arg(long, default_value = "fast")]
    pub latency_profile: LatencyProfile,
    /// Print the scored tasks (name, app, difficulty, instruction) and exit.
    #[arg(long)]
    pub list_tasks: bool,
    /// Do not install the ADB Keyboard IME (typing then uses `input text`, ASCII only).
    #[arg(long)]
    pub no_adb_keyboard: bool,
    /// The phone's UI language: `en` (default) or `de` (the whole phone in German).
    #[arg(long, default_value = "en")]
    pub locale: Locale,
    /// Android's font size setting: text and list rows grow by this factor (0.5–3.0).
    #[arg(long, default_value_t = 1.0)]
    pub font_scale: f32,
    /// A JSON file of ids and UI strings an app update renamed:
    /// `{"ids": {"old": "new"}, "strings": {"Old": "New"}}`.
    #[arg(long, value_name = "FILE")]
    pub rename_map: Option<std::path::PathBuf>,
    /// Screen size in pixels, `WxH` (default 1080x2400; landscape and tablets are laid
    /// out to their width, e.g. 2400x1080 or 1600x2560).
    #[arg(long, value_name = "WxH")]
    pub screen: Option<String>,
}

/// `--pacing` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PacingArg {
    Virtual,
    Realistic,
}

/// Parses `a=1,b=true,c=0.5` into `SimFaults`, naming the bad key on error.
pub fn parse_faults(spec: &str) -> anyhow::Result<SimFaults> {
    let mut obj = serde_json::Map::new();
    for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').with_context(|| {
            format!("fault `{pair}` is not key=value (example: dropped_tap_rate=0.1)")
        })?;
        let value = serde_json::from_str(v.trim())
            .unwrap_or_else(|_| serde_json::Value::String(v.trim().into()));
        obj.insert(k.trim().to_string(), value);
    }
    let faults: SimFaults = serde_json::from_value(serde_json::Value::Object(obj)).context(
        "bad --faults; keys are the fields of [devices.sim.faults] in config/default.toml",
    )?;
    faults.validate().map_err(anyhow::Error::msg)?;
    Ok(faults)
}

/// The scored tasks as a table: name, app, difficulty, instruction; one task a line.
pub fn task_table() -> String {
    let all = tasks();
    let w = all.iter().map(|t| t.id.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:w$}  {:8}  {:10}  instruction\n",
        "task", "app", "difficulty"
    );
    for t in &all {
        let level = match t.difficulty {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        };
        out.push_str(&format!(
            "{:w$}  {:8}  {:10}  {}\n",
            t.id,
            t.app.label(),
            level,
            t.instruction
        ));
    }
    out
}

/// Refuses a `--task` that names no scored task, listing the ones that exist (and the
/// closest one) rather than a generic hint.
pub fn check_task(name: &str) -> anyhow::Result<()> {
    if task(name).is_some() {
        return Ok(());
    }
    let all = tasks();
    let closest = all
        .iter()
        .map(|t| (strsim::levenshtein(t.id, name), t.id))
        .min()
        .filter(|(d, id)| *d <= id.len() / 3)
        .map(|(_, id)| format!(" (did you mean `{id}`?)"))
        .unwrap_or_default();
    let names: Vec<&str> = all.iter().map(|t| t.id).collect();
    anyhow::bail!(
        "unknown sim task `{name}`{closest}. Valid tasks: {}. Run `droidpilot sim --list-tasks` to see each task's app and instruction.",
        names.join(", ")
    )
}

/// The phone `args` describe.
pub fn sim_config(args: &SimArgs) -> anyhow::Result<SimConfig> {
    let faults = match &args.faults {
        Some(f) => parse_faults(f)?,
        None => SimFaults::default(),
    };
    if let Some(t) = &args.task {
        check_task(t)?;
    }
    let (width, height) = match &args.screen {
        Some(s) => parse_screen(s)?,
        None => {
            let d = SimConfig::default();
            (d.width, d.height)
        }
    };
    let renames = match &args.rename_map {
        Some(path) => read_rename_map(path)?,
        None => RenameMap::default(),
    };
    let cfg = SimConfig {
        serial: args.serial.clone(),
        seed: args.seed,
        faults,
        task: args.task.clone(),
        pace_ms: args.pace_ms,
        pacing: match args.pacing {
            PacingArg::Virtual => Pacing::Virtual,
            PacingArg::Realistic => Pacing::Realistic,
        },
        latency_profile: args.latency_profile,
        locale: args.locale,
        font_scale: args.font_scale,
        renames,
        width,
        height,
        ..SimConfig::default()
    };
    cfg.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(cfg)
}

/// `1080x2400` → (1080, 2400); anything else names the flag and the form.
pub fn parse_screen(s: &str) -> anyhow::Result<(u32, u32)> {
    s.split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
        .with_context(|| format!("--screen `{s}` is not WIDTHxHEIGHT in pixels (e.g. 2400x1080)"))
}

/// Reads and checks a `--rename-map` file.
fn read_rename_map(path: &std::path::Path) -> anyhow::Result<RenameMap> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --rename-map {}", path.display()))?;
    let map = RenameMap::from_json(&text)
        .map_err(|e| anyhow::anyhow!("--rename-map {}: {e}", path.display()))?;
    map.validate()
        .map_err(|e| anyhow::anyhow!("--rename-map {}: {e}", path.display()))?;
    Ok(map)
}

/// Runs until Ctrl-C (or prints the task list with `--list-tasks`).
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    if args.list_tasks {
        print!("{}", task_table());
        return Ok(());
    }
    let cfg = sim_config(&args)?;
    let device = Arc::new(SimDevice::new(cfg).map_err(|e| anyhow::anyhow!("{e}. {}", e.hint()))?);
    let opts = AdbdOptions {
        auth: args.auth,
        adb_keyboard: !args.no_adb_keyboard,
        ..AdbdOptions::default()
    };
    let adbd = Adbd::new(device, opts);
    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .with_context(|| {
            format!(
                "`{}:{}` is not an address to listen on",
                args.host, args.port
            )
        })?;
    let bound = adbd
        .spawn(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}; is another `droidpilot sim` or emulator using the port? Try --port"))?;
    println!(
        "droidpilot sim: virtual phone {} listening on {bound}",
        args.serial
    );
    println!("  connect with: adb connect {bound}");
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    adbd.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_from_pairs() {
        let f = parse_faults("dropped_tap_rate=0.25, renamed_ids=true,disconnect_after=3").unwrap();
        assert_eq!(f.dropped_tap_rate, 0.25);
        assert!(f.renamed_ids);
        assert_eq!(f.disconnect_after, Some(3));
        assert!(parse_faults("nope=1").is_err());
        assert!(parse_faults("dropped_tap_rate=2").is_err());
        assert!(parse_faults("dropped_tap_rate").is_err());
    }

    fn args(extra: &[&str]) -> SimArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            sim: SimArgs,
        }
        let argv = std::iter::once("sim").chain(extra.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv).unwrap().sim
    }

    #[test]
    fn a_german_landscape_phone_with_larger_text_and_a_rename_map_is_configured_from_flags() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("renames.json");
        std::fs::write(
            &map,
            r#"{"ids": {"fab": "add_button"}, "strings": {"Save": "Done"}}"#,
        )
        .unwrap();
        let cfg = sim_config(&args(&[
            "--locale",
            "de",
            "--font-scale",
            "1.3",
            "--screen",
            "2400x1080",
            "--rename-map",
            map.to_str().unwrap(),
        ]))
        .unwrap();
        assert_eq!(cfg.locale, Locale::De);
        assert_eq!(cfg.font_scale, 1.3);
        assert_eq!((cfg.width, cfg.height), (2400, 1080));
        assert_eq!(cfg.renames.ids["fab"], "add_button");
        assert_eq!(cfg.renames.strings["Save"], "Done");
        assert_eq!(
            sim_config(&args(&[])).unwrap(),
            SimConfig {
                serial: "sim-1".into(),
                ..SimConfig::default()
            }
        );
    }

    #[test]
    fn bad_phone_flags_are_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("renames.json");
        std::fs::write(&map, r#"{"ids": {}, "labels": {}}"#).unwrap();
        let err = |a: &[&str]| format!("{:#}", sim_config(&args(a)).unwrap_err());
        assert!(err(&["--screen", "big"]).contains("--screen `big`"));
        assert!(err(&["--screen", "100x100"]).contains("out of range"));
        assert!(err(&["--font-scale", "9"]).contains("font_scale"));
        let bad_map = err(&["--rename-map", map.to_str().unwrap()]);
        assert!(
            bad_map.contains("--rename-map") && bad_map.contains("labels"),
            "{bad_map}"
        );
        assert!(err(&["--rename-map", "/nonexistent/r.json"]).contains("cannot read --rename-map"));
    }
}
