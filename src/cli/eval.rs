//! `droidpilot eval`: score an agent on the virtual phone's tasks (`bench::eval`), print
//! the table (or `--json`), write `eval.json` and `eval.md` with `--out`, or put two saved
//! summaries side by side with `--compare A B`. `--model-server oracle` runs the agent's
//! models on the in-process oracle (`bench::oracle`): the planned scoreboard with no key.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bench::eval::{self, EvalOptions, report};
use crate::bench::oracle::OracleMode;
use crate::config::{Config, Overrides};
use crate::domain::ScreenSize;

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The agent, as the `agent` object of a task: JSON, or a file holding it. Default
    /// {"kind": "replay"}: each task's reference solution, no model and no key needed.
    #[arg(long, value_name = "JSON|FILE")]
    pub agent: Option<String>,
    /// Start a rule-driven model server in-process and point every model of the agent at
    /// it: `oracle` answers each task's reference solution, plans it and verifies with the
    /// task's checker; `flawed-oracle` also claims done one action early on hard tasks.
    /// The agent must be planned or a generic vision agent (default: {"kind": "planned"}).
    #[arg(long, value_enum, value_name = "SERVER")]
    pub model_server: Option<OracleMode>,
    /// Task ids to run, as globs (`clock.*`, `*.ask_*`); several separated by commas.
    /// Default: every task (`droidpilot sim --list-tasks`).
    #[arg(long, value_name = "PATTERN")]
    pub tasks: Option<String>,
    /// Runs per task; the success rate is over all runs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Phones running at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: u32,
    /// Print the summary as one JSON object (per-run details in `per_task`).
    #[arg(long)]
    pub json: bool,
    /// Also write eval.json and eval.md into this directory (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Put two saved eval.json files side by side, with deltas (b − a); runs nothing.
    #[arg(long, num_args = 2, value_names = ["A", "B"],
          conflicts_with_all = ["agent", "model_server", "tasks", "repeat", "parallel", "out"])]
    pub compare: Option<Vec<PathBuf>>,
    /// The phones' screen, WIDTHxHEIGHT.
    #[arg(long, default_value = "1080x2400", value_parser = parse_screen)]
    pub screen: ScreenSize,
    /// A TOML file layered over the defaults (agent defaults, keys, prices, runner).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

fn parse_screen(s: &str) -> Result<ScreenSize, String> {
    let bad = || format!("`{s}` is not WIDTHxHEIGHT, e.g. 1080x2400");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (width, height) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    if !(100..=4000).contains(&width) || !(100..=4000).contains(&height) {
        return Err(format!("`{s}`: each side must be 100 to 4000 pixels"));
    }
    Ok(ScreenSize { width, height })
}

/// `--agent`: inline JSON, or the path of a file that holds it.
pub fn agent_value(arg: &str) -> anyhow::Result<Value> {
    let text = if arg.trim_start().starts_with('{') {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).map_err(|e| {
            anyhow::anyhow!(
                "--agent `{arg}` is neither a JSON object nor a readable file ({e}); try --agent '{{\"kind\": \"navigator\"}}'"
            )
        })?
    };
    serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!("--agent is not valid JSON ({e}); e.g. {{\"kind\": \"replay\"}}")
    })
}

fn read_summary(p: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", p.display()))?;
    if !report::is_summary(&v) {
        anyhow::bail!(
            "{} is not an eval summary (no success_rate, tiers and per_task); give the eval.json that `droidpilot eval --out DIR` writes, or the output of `droidpilot eval --json`",
            p.display()
        );
    }
    Ok(v)
}

fn compare(a: &Path, b: &Path, as_json: bool) -> anyhow::Result<()> {
    let c = report::compare_json(&read_summary(a)?, &read_summary(b)?);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!(
            "{}",
            report::format_compare(&c, &a.display().to_string(), &b.display().to_string())
        );
    }
    Ok(())
}

/// Runs the command.
pub async fn run(args: EvalArgs) -> anyhow::Result<()> {
    if let Some(files) = &args.compare {
        return compare(&files[0], &files[1], args.json);
    }
    let config = Config::load(
        Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            ..Default::default()
        },
    )?;
    let opts = EvalOptions {
        agent: match (&args.agent, args.model_server) {
            (Some(a), _) => agent_value(a)?,
            (None, Some(_)) => serde_json::json!({"kind": "planned"}),
            (None, None) => EvalOptions::default().agent,
        },
        tasks: args
            .tasks
            .iter()
            .flat_map(|t| t.split(','))
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        repeat: args.repeat as usize,
        parallel: args.parallel as usize,
        screen: args.screen,
        model_server: args.model_server,
    };
    let progress = |r: &eval::RunRecord| {
        let mark = if r.checker { "done" } else { "NOT done" };
        eprintln!(
            "{:<42} run {:<3} {:<9} {:>3} steps {:>6.2} s  {}",
            r.id, r.run, mark, r.steps, r.wall_s, r.status
        );
    };
    let report = eval::run_eval(config, &opts, &progress)
        .await
        .map_err(|e| anyhow::anyhow!("{e}. {}", e.hint()))?;
    let summary = report::summary_json(&report);
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        std::fs::write(
            dir.join("eval.json"),
            serde_json::to_string_pretty(&summary)?,
        )?;
        std::fs::write(dir.join("eval.md"), report::format_markdown(&summary))?;
        eprintln!("wrote {0}/eval.json and {0}/eval.md", dir.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", report::format_table(&summary));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screen_sizes_and_agent_arguments_are_read_with_a_way_out() {
        assert_eq!(
            parse_screen("540x1200"),
            Ok(ScreenSize {
                width: 540,
                height: 1200
            })
        );
        assert!(parse_screen("540").unwrap_err().contains("WIDTHxHEIGHT"));
        assert!(parse_screen("5x1200").unwrap_err().contains("100 to 4000"));
        assert_eq!(
            agent_value(r#"{"kind": "replay"}"#).unwrap()["kind"],
            "replay"
        );
        let err = agent_value("no-such-file.json").unwrap_err().to_string();
        assert!(
            err.contains("neither a JSON object nor a readable file"),
            "{err}"
        );
        let err = agent_value("{kind: replay}").unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }
}
