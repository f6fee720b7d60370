//! `droidpilot flow test DIR`: run a Maestro workspace across the phones as `maestro test`
//! would, as a flow run (`service::flow_runs`): in this process with the configured
//! devices (like `droidpilot run`), or on a running server with `--server URL`
//! (`POST /v1/flow-runs` through `remote::Remote`), where `--workspace ID[@V]` runs a
//! stored workspace instead of a folder. Prints each flow as it ends
//! and a summary, writes a JUnit or HTML report with `--format … --output FILE`, and exits
//! non-zero when a flow did not pass.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::config::{Config, Overrides};
use crate::core::Core;
use crate::domain::{FlowResult, FlowRun, FlowRunStatus, FlowStatus, TaskEvent, WorkspaceId};
use crate::run::events::{FeedItem, Filter};
use crate::service::flow_runs::{NewFlowRun, ReportFormat};

use super::remote::{Remote, checked};

#[derive(Debug, Subcommand)]
pub enum FlowCommand {
    /// Run a folder of Maestro flows (with its config.yaml) across the phones; exits non-zero when a flow failed.
    Test(TestArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Junit,
    Html,
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The workspace folder (flows and config.yaml); or --workspace for a stored one.
    #[arg(required_unless_present = "workspace")]
    pub dir: Option<PathBuf>,
    /// Run a workspace stored on the server (`droidpilot workspace push`) instead of a
    /// folder: its id, and `@N` for version N (default: the latest). Needs --server.
    #[arg(long, value_name = "ID[@V]", requires = "server", value_parser = parse_stored)]
    pub workspace: Option<Stored>,
    /// Run this many flows at once, each on a free phone.
    #[arg(long, conflicts_with = "devices")]
    pub shards: Option<u32>,
    /// Run on these phones (comma-separated), one shard each.
    #[arg(long, value_delimiter = ',')]
    pub devices: Vec<String>,
    /// `KEY=VALUE`, set before each flow's `env` (repeat for more).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Run only flows with one of these tags (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub include_tags: Vec<String>,
    /// Leave out flows with any of these tags (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub exclude_tags: Vec<String>,
    /// Run a failed flow again up to this many times.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// When a command's element is not found, ask the server's model for a fix (AI in the
    /// middle); needs a model the server can call.
    #[arg(long)]
    pub recovery: bool,
    /// With --recovery: write each flow the model fixed back into DIR as Maestro YAML
    /// (the new selector, the old one kept as an alternative).
    #[arg(long, requires = "recovery")]
    pub heal: bool,
    /// The report's format (with --output).
    #[arg(long, value_enum, requires = "output")]
    pub format: Option<Format>,
    /// Where to write the report.
    #[arg(long, value_name = "FILE", requires = "format")]
    pub output: Option<PathBuf>,
    /// A running droidpilot server (http://host:port); else the flows run in this process.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// A TOML file layered over the defaults (this process's devices and database).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The data directory (default ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// `--workspace ID[@V]`: a stored workspace and, if given, its version.
#[derive(Debug, Clone, Copy)]
pub struct Stored {
    pub id: WorkspaceId,
    pub version: Option<u32>,
}

fn parse_stored(s: &str) -> Result<Stored, String> {
    let (id, version) = match s.split_once('@') {
        Some((id, v)) => (id, Some(v)),
        None => (s, None),
    };
    let id = id.parse().map_err(|_| {
        format!("`{id}` is not a workspace id (a UUID, as `droidpilot workspace list` shows)")
    })?;
    let version = match version {
        Some(v) => Some(
            v.parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("`@{v}`: a version is a number from 1 (ID@2)"))?,
        ),
        None => None,
    };
    Ok(Stored { id, version })
}

/// Runs the command; whether every flow passed.
pub async fn flow(cmd: FlowCommand) -> anyhow::Result<bool> {
    let FlowCommand::Test(args) = cmd;
    let request = request(&args)?;
    let known: HashSet<String> = request.files.keys().cloned().collect();
    let (run, answers) = match &args.server {
        Some(url) => remote(url, &args, request).await?,
        None => local(&args, request).await?,
    };
    // A stored workspace's healed flows are its next version, on the server (the run's
    // reason names it); a folder's are written back into it.
    if let (true, Some(dir)) = (args.heal, &args.dir) {
        write_healed(dir, &known, &answers)?;
    }
    println!(
        "{}: {}",
        run.status.as_str(),
        run.reason.as_deref().unwrap_or("")
    );
    Ok(run.status == FlowRunStatus::Passed)
}

/// The request: the folder's files or the stored workspace, and the options.
fn request(args: &TestArgs) -> anyhow::Result<NewFlowRun> {
    let (files, workspace) = match (&args.dir, args.workspace) {
        (Some(dir), Some(ws)) => anyhow::bail!(
            "both a folder ({}) and --workspace {} were given: a run has one workspace\nhint: drop DIR to run the stored workspace, or drop --workspace to upload and run the folder",
            dir.display(),
            ws.id
        ),
        (Some(dir), None) => (read_dir(dir)?, None),
        (None, Some(ws)) => (BTreeMap::new(), Some(ws)),
        (None, None) => anyhow::bail!("give a workspace folder (DIR) or --workspace ID"),
    };
    let mut env = BTreeMap::new();
    for e in &args.env {
        let (k, v) = crate::maestro::workspace::parse_env_arg(e)
            .map_err(|err| anyhow::anyhow!("{}", err.message))?;
        env.insert(k, v);
    }
    Ok(NewFlowRun {
        files,
        workspace: workspace.map(|w| w.id),
        version: workspace.and_then(|w| w.version),
        env,
        include_tags: args.include_tags.clone(),
        exclude_tags: args.exclude_tags.clone(),
        shards: args.shards,
        devices: args.devices.clone(),
        retries: args.retries,
        recovery: args.recovery,
        heal: args.heal,
        ..Default::default()
    })
}

/// Every UTF-8 file under `dir` (hidden folders such as `.git` skipped), by path
/// relative to it.
pub fn read_dir(dir: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeMap<String, String>) -> anyhow::Result<()> {
        let entries = std::fs::read_dir(at)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", at.display()))?;
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') {
                    walk(root, &path, out)?;
                }
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(rel.join("/"), text);
            }
        }
        Ok(())
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files)?;
    Ok(files)
}

fn print_flow(f: &FlowResult) {
    let secs = f.duration_ms.unwrap_or(0) as f64 / 1000.0;
    let on = f.device.as_deref().unwrap_or("-");
    match f.status {
        FlowStatus::Passed => println!("  passed   {} ({on}, {secs:.1} s)", f.path),
        status => println!(
            "  {:<8} {} ({on}, {secs:.1} s): {}",
            status.as_str(),
            f.path,
            f.failure.as_ref().map_or("", |m| m.message.as_str())
        ),
    }
}

/// Each flow's last task's answer (a healed flow's files are there), by the run's flows.
type Answers = Vec<Option<String>>;

/// With --heal: the flow files each flow's task wrote back (`{"healed": {path: YAML}}` in
/// its answer), written over the workspace's own files. Only a path the folder already
/// has is written.
fn write_healed(dir: &Path, known: &HashSet<String>, answers: &Answers) -> anyhow::Result<()> {
    let mut healed = BTreeMap::new();
    for answer in answers.iter().flatten() {
        let Ok(v) = serde_json::from_str::<Value>(answer) else {
            continue;
        };
        for (path, text) in v["healed"].as_object().into_iter().flatten() {
            if let (true, Some(text)) = (known.contains(path), text.as_str()) {
                healed.insert(path.clone(), text.to_string());
            }
        }
    }
    for (path, text) in &healed {
        std::fs::write(dir.join(path), text)?;
        println!("healed: {}", dir.join(path).display());
    }
    if healed.is_empty() {
        println!("healed: nothing (no selector was fixed)");
    }
    Ok(())
}

/// The task ids of each flow's last attempt.
fn last_tasks(run: &FlowRun) -> Vec<crate::domain::TaskId> {
    run.flows
        .iter()
        .filter_map(|f| f.attempts.last().map(|a| a.task_id))
        .collect()
}

/// In this process: the configured devices, the scheduler, the run's events.
async fn local(args: &TestArgs, req: NewFlowRun) -> anyhow::Result<(FlowRun, Answers)> {
    let mut config = Config::load(
        Path::new("config"),
        &Overrides {
            config_file: args.config.clone(),
            data_dir: args.data_dir.clone(),
            ..Default::default()
        },
    )?;
    config.cluster = config.cluster.for_command("flow");
    let core = Arc::new(Core::build(&config).await?);
    core.start_scheduler();
    let result = follow(&core, req).await;
    let run = match result {
        Ok(run) => run,
        Err(e) => {
            core.shutdown(Duration::from_secs(5)).await;
            return Err(e);
        }
    };
    if let (Some(format), Some(out)) = (args.format, &args.output) {
        let format = match format {
            Format::Junit => ReportFormat::Junit,
            Format::Html => ReportFormat::Html,
        };
        let (_, text) = crate::service::flow_runs::report(&core, run.id, format).await?;
        std::fs::write(out, text)?;
        println!("report: {}", out.display());
    }
    let mut answers = Vec::new();
    for id in last_tasks(&run) {
        answers.push(core.store.get_task(id).await?.answer);
    }
    core.shutdown(Duration::from_secs(5)).await;
    Ok((run, answers))
}

/// Submits the run and prints each flow as it ends; the run as it ended.
async fn follow(core: &Arc<Core>, req: NewFlowRun) -> anyhow::Result<FlowRun> {
    let run = crate::service::flow_runs::submit(core, req)
        .await
        .map_err(|e| anyhow::anyhow!("{}\nhint: {}", e.message, e.hint))?;
    println!(
        "flow run {}: {} flows, {} shard(s)",
        run.id,
        run.flows.len(),
        run.shards
    );
    let stream = run.id.to_string();
    let mut feed = core
        .bus
        .feed(Filter::Streams(HashSet::from([stream.clone()])));
    feed.resume(&stream, 0).await?;
    while let Some(item) = feed.next().await? {
        let FeedItem::Event(ev) = item else { continue };
        match &ev.event {
            TaskEvent::FlowFinished { flow, .. } => print_flow(flow),
            TaskEvent::FlowRunFinished { .. } => break,
            _ => {}
        }
    }
    Ok(core.store.flow_run(run.id).await?)
}

/// On a server: `POST /v1/flow-runs`, then its state every second until it ends.
async fn remote(url: &str, args: &TestArgs, req: NewFlowRun) -> anyhow::Result<(FlowRun, Answers)> {
    let server = Remote::new(url);
    let created = server.post("/v1/flow-runs", &remote_body(&req)).await?;
    let id = created["id"].as_str().unwrap_or_default().to_string();
    println!("flow run {id} on {}", server.base());
    let mut printed = HashSet::new();
    let run: FlowRun = loop {
        let run: FlowRun =
            serde_json::from_value(server.get(&format!("/v1/flow-runs/{id}")).await?)?;
        for f in run.flows.iter().filter(|f| f.status.is_done()) {
            if printed.insert(f.path.clone()) {
                print_flow(f);
            }
        }
        if run.status.is_terminal() {
            break run;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    if let (Some(format), Some(out)) = (args.format, &args.output) {
        let f = match format {
            Format::Junit => "junit",
            Format::Html => "html",
        };
        let path = format!("/v1/flow-runs/{id}/report");
        let resp = server
            .send(server.request(reqwest::Method::GET, &path, &[("format", f)]))
            .await?;
        if !resp.status().is_success() {
            let _: Value = checked(resp).await?;
        } else {
            std::fs::write(out, resp.bytes().await?)?;
            println!("report: {}", out.display());
        }
    }
    let mut answers = Vec::new();
    if args.heal {
        for id in last_tasks(&run) {
            let task = server.get(&format!("/v1/tasks/{id}")).await?;
            answers.push(task["answer"].as_str().map(str::to_string));
        }
    }
    Ok((run, answers))
}

/// `POST /v1/flow-runs`'s body: the stored workspace, or the folder's files, and the
/// options that were given.
fn remote_body(req: &NewFlowRun) -> Value {
    let mut body = json!({"env": req.env, "include_tags": req.include_tags,
        "exclude_tags": req.exclude_tags, "retries": req.retries});
    match req.workspace {
        Some(ws) => {
            body["workspace"] = json!(ws);
            if let Some(v) = req.version {
                body["version"] = json!(v);
            }
        }
        None => body["files"] = json!(req.files),
    }
    if let Some(n) = req.shards {
        body["shards"] = json!(n);
    }
    if !req.devices.is_empty() {
        body["devices"] = json!(req.devices);
    }
    if req.recovery {
        body["recovery"] = json!(true);
    }
    if req.heal {
        body["heal"] = json!(true);
    }
    body
}
