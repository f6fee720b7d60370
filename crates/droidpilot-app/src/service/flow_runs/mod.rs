//! Flow-run use cases: run a Maestro workspace across the pool as `maestro test` would
//! (`POST /v1/flow-runs`, `droidpilot flow test`), read runs, cancel one, and its reports.
//!
//! Submission does everything that can fail before anything runs: the workspace is loaded
//! as `maestro test` loads it (`droidpilot_maestro::workspace`: config.yaml's globs and
//! tags, the request's tags and `-e` values, `flowsOrder`), and every selected flow is
//! made into a `flow` task spec and checked like `POST /v1/tasks` checks one (a command
//! no device here can do is refused naming its file and line). Each task carries only the
//! files its flow reaches. Then the run is stored and `suite::drive` runs it on the
//! core's tracker: one ordinary task per flow and per retry, so trajectories, exports and
//! take-over work for each.

pub mod report;
mod suite;
pub mod upload;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::error::AppError;
use crate::core::Core;
use crate::domain::{FlowResult, FlowRun, FlowRunId, FlowRunStatus, FlowStatus, NewTask, TaskSpec};
use droidpilot_maestro::workspace;

/// The most flows a run may hold.
pub const MAX_FLOWS: usize = 500;
/// The most shards (flows at once) a run may ask for.
pub const MAX_SHARDS: u32 = 64;
/// The most retries of a failed flow.
pub const MAX_RETRIES: u32 = 5;
/// Device steps a flow's task may take unless `max_steps` says otherwise.
pub const DEFAULT_FLOW_STEPS: u32 = 200;

/// Run a workspace's flows over the pool.
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFlowRun {
    /// The workspace as files: path (relative to its root, `/`-separated) → text. With a
    /// `.zip` body the files come from the archive instead.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Run a stored workspace (`POST /v1/workspaces`) instead of `files`.
    #[schema(value_type = Option<String>, format = Uuid)]
    pub workspace: Option<crate::domain::WorkspaceId>,
    /// The stored workspace's version (default: the latest). Only with `workspace`.
    #[schema(minimum = 1)]
    pub version: Option<u32>,
    /// `-e KEY=VALUE` values, set before each flow's own `env`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run only flows with one of these tags (config.yaml's `includeTags` are added).
    #[serde(default)]
    pub include_tags: Vec<String>,
    /// Leave out flows with any of these tags (config.yaml's `excludeTags` are added).
    #[serde(default)]
    pub exclude_tags: Vec<String>,
    /// How many flows run at once, each on a free phone (default 1; at most 64). Not with
    /// `devices`.
    #[schema(minimum = 1, maximum = 64)]
    pub shards: Option<u32>,
    /// Run on these phones, one shard each.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Run a failed flow again up to this many times (default 0; at most 5).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 5)]
    pub retries: u32,
    /// Each flow task's step budget, waits included (default 200).
    #[schema(minimum = 1, maximum = 1000)]
    pub max_steps: Option<u32>,
    /// Each flow task's timeout (default the server's task default).
    #[schema(minimum = 1, maximum = 86400)]
    pub timeout_seconds: Option<u64>,
    /// AI in the middle: a command whose element cannot be found asks the server's
    /// default model (its `[agent]` navigator) for a fix, as `recovery: true` does for a
    /// flow task. Refused when the server cannot call that model.
    #[serde(default)]
    pub recovery: bool,
    /// With `recovery`: each flow task's result carries its flow files rewritten with the
    /// selectors the model found (the old one kept as an alternative), as Maestro YAML.
    #[serde(default)]
    pub heal: bool,
}

/// The runs this process drives, by id: their cancel switches.
#[derive(Default)]
pub struct ActiveRuns {
    runs: Mutex<HashMap<FlowRunId, CancellationToken>>,
}

impl ActiveRuns {
    fn add(&self, id: FlowRunId) -> CancellationToken {
        let token = CancellationToken::new();
        self.runs
            .lock()
            .expect("flow runs lock")
            .insert(id, token.clone());
        token
    }

    fn remove(&self, id: FlowRunId) {
        self.runs.lock().expect("flow runs lock").remove(&id);
    }

    fn cancel(&self, id: FlowRunId) -> bool {
        match self.runs.lock().expect("flow runs lock").get(&id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

fn invalid(message: impl Into<String>, hint: impl Into<String>) -> AppError {
    AppError::invalid("invalid_flow_run", message, hint)
}

/// What `suite::drive` needs beside the run record: each flow's task spec, in the order
/// of `FlowRun::flows`, and which of them are `flowsOrder`'s.
pub(crate) struct Plan {
    pub specs: Vec<TaskSpec>,
    pub ordered: usize,
    /// `heal`: the flows' healed files go back to the stored workspace as a new version.
    pub heal: bool,
}

/// Checks a run request, stores the run and starts it. The run is returned as stored
/// (every flow `pending`); its progress is on its stream and `GET /v1/flow-runs/{id}`.
pub async fn submit(core: &Arc<Core>, mut req: NewFlowRun) -> Result<FlowRun, AppError> {
    let stored = super::workspaces::resolve(core, &mut req).await?;
    let (mut run, plan) = prepare(core, req).await?;
    run.workspace = stored;
    core.store.save_flow_run(&run).await?;
    let cancel = core.flow_runs.add(run.id);
    let c = core.clone();
    let stored = run.clone();
    core.spawn(async move {
        let id = run.id;
        suite::drive(c.clone(), run, plan, cancel).await;
        c.flow_runs.remove(id);
    });
    Ok(stored)
}

/// The run record and its plan, or the request's first mistake.
async fn prepare(core: &Core, req: NewFlowRun) -> Result<(FlowRun, Plan), AppError> {
    let shards = check_shape(core, &req)?;
    let opts = workspace::Options {
        include_tags: req.include_tags.clone(),
        exclude_tags: req.exclude_tags.clone(),
        env: req
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    let ws = workspace::load(&req.files, &opts).map_err(|e| {
        AppError::invalid(
            "invalid_workspace",
            format!("{}: {}", e.location(), e.message),
            e.hint.clone(),
        )
    })?;
    let order: Vec<&String> = ws.sequence.iter().chain(&ws.flows).collect();
    if order.len() > MAX_FLOWS {
        return Err(invalid(
            format!(
                "the workspace selects {} flows; a run takes at most {MAX_FLOWS}",
                order.len()
            ),
            "Split it with tags (`include_tags`) or config.yaml's `flows` globs.",
        ));
    }
    let mut flows = Vec::new();
    let mut specs = Vec::new();
    for (i, path) in order.iter().enumerate() {
        let header = &ws.parsed[*path].header;
        flows.push(FlowResult::pending(
            path,
            &flow_name(path, header.name.as_deref()),
            header.tags.clone(),
            i < ws.sequence.len(),
        ));
        specs.push(flow_spec(core, &req, path).await?);
    }
    let run = FlowRun {
        id: FlowRunId::new(),
        status: FlowRunStatus::Running,
        reason: None,
        shards,
        devices: req.devices.clone(),
        retries: req.retries,
        include_tags: req.include_tags,
        exclude_tags: req.exclude_tags,
        env: req.env.keys().cloned().collect(),
        continue_on_failure: ws.config.continue_on_failure,
        workspace: None,
        flows,
        created_at: chrono::Utc::now(),
        finished_at: None,
        duration_ms: None,
    };
    let plan = Plan {
        specs,
        ordered: ws.sequence.len(),
        heal: req.heal,
    };
    Ok((run, plan))
}

/// A flow's `name`, else its file name without the extension (as `flowsOrder` names it).
pub(crate) fn flow_name(path: &str, name: Option<&str>) -> String {
    name.map(str::to_string).unwrap_or_else(|| {
        let file = path.rsplit('/').next().unwrap_or(path);
        file.rsplit_once('.').map_or(file, |(s, _)| s).to_string()
    })
}

/// Shards, devices and retries in range, the devices known; the number of shards.
fn check_shape(core: &Core, req: &NewFlowRun) -> Result<u32, AppError> {
    if req.files.is_empty() {
        return Err(invalid(
            "the workspace is empty: `files` holds no file",
            "Send the workspace's files ({\"files\": {\"login.yaml\": \"appId: …\"}}) or a .zip body (Content-Type: application/zip).",
        ));
    }
    if req.heal && !req.recovery {
        return Err(invalid(
            "`heal` needs `recovery`",
            "Add `recovery: true`: a flow is healed with the selectors AI in the middle found.",
        ));
    }
    if req.retries > MAX_RETRIES {
        return Err(invalid(
            format!("`retries` is {}; at most {MAX_RETRIES}", req.retries),
            "A flow that fails five times in a row needs fixing, not more retries.",
        ));
    }
    let shards = match (req.shards, req.devices.is_empty()) {
        (Some(_), false) => {
            return Err(invalid(
                "give `shards` or `devices`, not both",
                "`devices` runs one shard per phone named; `shards` takes that many free phones.",
            ));
        }
        (Some(n), true) if n == 0 || n > MAX_SHARDS => {
            return Err(invalid(
                format!("`shards` is {n}; it takes 1 to {MAX_SHARDS}"),
                "Give how many flows should run at once, each on its own phone.",
            ));
        }
        (Some(n), true) => n,
        (None, false) => req.devices.len() as u32,
        (None, true) => 1,
    };
    let mut seen = std::collections::HashSet::new();
    for d in &req.devices {
        if !seen.insert(d) {
            return Err(invalid(
                format!("`devices` names `{d}` twice"),
                "Name each phone once; each is one shard.",
            ));
        }
        if core.pool.summary(d).is_none() {
            let known: Vec<String> = core.pool.list().into_iter().map(|d| d.id).collect();
            return Err(AppError::invalid(
                "unknown_device",
                format!("no device `{d}` in the pool"),
                format!(
                    "Known devices: {}. Or give `shards` to run on any free phones.",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    }
    if shards as usize > MAX_SHARDS as usize {
        return Err(invalid(
            format!("{shards} devices; a run takes at most {MAX_SHARDS}"),
            "Name fewer phones.",
        ));
    }
    Ok(shards)
}

/// The task spec one flow runs as, checked as `POST /v1/tasks` checks one; it carries
/// only the files the flow reaches.
async fn flow_spec(core: &Core, req: &NewFlowRun, path: &str) -> Result<TaskSpec, AppError> {
    let program = crate::agent::flow::program::load(None, Some(&req.files), Some(path), &req.env)
        .map_err(|e| AppError::invalid("invalid_workspace", e.to_string(), e.hint()))?;
    let files: BTreeMap<&String, &String> = req
        .files
        .iter()
        .filter(|(p, _)| program.flows.contains_key(*p) || program.scripts.contains_key(*p))
        .collect();
    let mut agent = json!({"kind": "flow", "files": files, "entry": path, "env": req.env});
    if req.recovery {
        agent["recovery"] = json!(true);
    }
    if req.heal {
        agent["heal"] = json!(true);
    }
    let task = NewTask {
        instruction: Some(format!("Run the Maestro flow {path}")),
        agent: Some(agent),
        max_steps: Some(req.max_steps.unwrap_or(DEFAULT_FLOW_STEPS)),
        timeout_seconds: req.timeout_seconds,
        metadata: Some(json!({"flow": path})),
        ..Default::default()
    };
    super::tasks::prepare(core, task)
        .await
        .map_err(|e| recovery_refused(e, req.recovery))
}

/// A flow's task refused for want of a model key, when the run asked for `recovery`:
/// said in the run's words (the option, not the task's agent).
fn recovery_refused(e: AppError, recovery: bool) -> AppError {
    if !recovery || e.code != "missing_model_key" {
        return e;
    }
    AppError::invalid(
        "missing_model_key",
        format!(
            "`recovery` needs a model the server can call: {}",
            e.message
        ),
        "Give the server a model it can call (its [agent] provider and model, the provider's key in the server's environment), or run the flows without `recovery`.",
    )
}

/// One stored run.
pub async fn get(core: &Core, id: FlowRunId) -> Result<FlowRun, AppError> {
    Ok(core.store.flow_run(id).await?)
}

/// Cancels a run: flows not started yet are `cancelled`, running ones' tasks are
/// cancelled (each stops at its next step). A run that ended is left as it is (409).
pub async fn cancel(core: &Core, id: FlowRunId) -> Result<FlowRun, AppError> {
    let run = core.store.flow_run(id).await?;
    if run.status.is_terminal() {
        return Err(AppError::new(
            super::error::ErrorKind::Conflict,
            "flow_run_finished",
            format!("flow run {id} already ended: {}", run.status.as_str()),
            "Only a running flow run can be cancelled.",
        ));
    }
    if !core.flow_runs.cancel(id) {
        // Nobody here drives it (a stopped process left it): end it now.
        let mut run = run;
        suite::end_orphan(&mut run, FlowRunStatus::Cancelled, "cancelled");
        core.store.save_flow_run(&run).await?;
        return Ok(run);
    }
    Ok(run)
}

/// At start-up: runs a stopped process left `running` end as `interrupted` (their tasks
/// are recovered like any task; the run itself is not resumed).
pub async fn recover(core: &Core) -> Result<usize, crate::store::StoreError> {
    let left = core.store.running_flow_runs().await?;
    for mut run in left.iter().cloned() {
        suite::end_orphan(
            &mut run,
            FlowRunStatus::Interrupted,
            "the server stopped while the run was going; start it again",
        );
        core.store.save_flow_run(&run).await?;
    }
    Ok(left.len())
}

/// A report's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportFormat {
    Junit,
    Html,
}

/// A run's report: media type and text. The HTML embeds each failed flow's last
/// screenshot.
pub async fn report(
    core: &Core,
    id: FlowRunId,
    format: ReportFormat,
) -> Result<(&'static str, String), AppError> {
    let run = core.store.flow_run(id).await?;
    Ok(match format {
        ReportFormat::Junit => ("application/xml", report::junit(&run)),
        ReportFormat::Html => {
            let mut shots = report::Shots::new();
            for f in run.flows.iter().filter(|f| f.status == FlowStatus::Failed) {
                if let Some(shot) = failing_shot(core, f).await {
                    shots.insert(f.path.clone(), shot);
                }
            }
            ("text/html; charset=utf-8", report::html(&run, &shots))
        }
    })
}

async fn failing_shot(core: &Core, f: &FlowResult) -> Option<(String, Vec<u8>)> {
    let task = f.attempts.last()?.task_id;
    let n = f.failure.as_ref()?.step?;
    let sha = core.store.step(task, n).await.ok()?.screenshot?;
    let (art, bytes) = core.artifacts.get(&sha).await.ok()??;
    Some((art.media_type, bytes))
}
