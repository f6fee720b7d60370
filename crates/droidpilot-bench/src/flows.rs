//! `droidpilot bench flows`: a suite of Maestro flows (by default the 40 of
//! `tests/fixtures/flows/suite40`, written for the virtual phone's apps) run as one flow
//! run on one virtual phone, then sharded over N, each phone charging a real phone's time
//! per command (`--profile`, `pixel-8` by default: a dump ~2 s, a screenshot ~250 ms, an
//! input ~300 ms). Reports the sharded run's wall time as a share of the single phone's
//! (target ≤ 30% at 4 phones) and the server's overhead per device step beyond the phone's
//! own time (target ≤ 50 ms): the flow tasks' summed durations minus the device time the
//! phones' latency profiles charged, over the steps they took. Phones run serially within
//! a task, so on one phone that difference is the server's own time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::core::Core;
use crate::device::sim::{LatencyProfile, SimConfig, SimDevice};
use crate::domain::{FlowRun, FlowStatus};
use crate::run::runner::RunnerConfig;
use crate::service::flow_runs::NewFlowRun;

/// What to run.
#[derive(Debug, Clone)]
pub struct FlowsBenchOptions {
    /// The workspace folder.
    pub dir: PathBuf,
    /// Phones of the sharded run.
    pub phones: usize,
    pub profile: LatencyProfile,
}

/// One flow run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Leg {
    pub phones: usize,
    pub flows: usize,
    pub passed: usize,
    /// The run's wall time.
    pub wall_ms: u64,
    /// Device steps over every flow task.
    pub steps: u64,
    /// Device commands the phones served.
    pub commands: u64,
    /// Device time the latency profile charged, over every phone.
    pub device_ms: u64,
    /// The flow tasks' durations, summed.
    pub tasks_ms: u64,
}

impl Leg {
    /// Server time per device step beyond the phone's own (one phone: tasks run one at a
    /// time, so tasks' time minus device time is the server's).
    pub fn overhead_per_step_ms(&self) -> f64 {
        (self.tasks_ms as f64 - self.device_ms as f64) / self.steps.max(1) as f64
    }

    /// The same per device command (a step is one or more: a dump, a screenshot, an
    /// input).
    pub fn overhead_per_command_ms(&self) -> f64 {
        (self.tasks_ms as f64 - self.device_ms as f64) / self.commands.max(1) as f64
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowsReport {
    pub profile: String,
    pub one: Leg,
    pub sharded: Leg,
}

impl FlowsReport {
    /// The sharded run's wall time as a share of the single phone's.
    pub fn ratio(&self) -> f64 {
        self.sharded.wall_ms as f64 / self.one.wall_ms.max(1) as f64
    }
}

/// Every UTF-8 file under `dir`, by relative path.
fn read_files(dir: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file()
            && let (Some(name), Ok(text)) = (
                path.file_name().and_then(|n| n.to_str()),
                std::fs::read_to_string(&path),
            )
        {
            out.insert(name.to_string(), text);
        }
    }
    Ok(out)
}

/// Runs the suite on one phone, then on `phones`.
pub async fn bench_flows(opts: &FlowsBenchOptions) -> Result<FlowsReport, String> {
    let files = read_files(&opts.dir).map_err(|e| format!("{}: {e}", opts.dir.display()))?;
    let one = leg(&files, 1, opts.profile).await?;
    eprintln!("1 phone: {} ms", one.wall_ms);
    let sharded = leg(&files, opts.phones, opts.profile).await?;
    eprintln!("{} phones: {} ms", opts.phones, sharded.wall_ms);
    Ok(FlowsReport {
        profile: opts.profile.name().to_string(),
        one,
        sharded,
    })
}

async fn leg(
    files: &BTreeMap<String, String>,
    phones: usize,
    profile: LatencyProfile,
) -> Result<Leg, String> {
    let dir = std::env::temp_dir().join(format!(
        "droidpilot-bench-flows-{}-{phones}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config =
        super::runner::scratch_config(&dir, &RunnerConfig::default()).map_err(|e| e.to_string())?;
    config.scheduler.max_concurrent_tasks = phones;
    config.scheduler.poll_ms = 50;
    let core = Arc::new(Core::build(&config).await.map_err(|e| e.to_string())?);
    let mut sims = Vec::new();
    for i in 0..phones {
        let sim = Arc::new(
            SimDevice::new(SimConfig {
                serial: format!("bench-{i}"),
                latency_profile: profile,
                seed: i as u64 + 1,
                ..Default::default()
            })
            .map_err(|e| e.to_string())?,
        );
        core.pool
            .add_device(sim.clone(), "sim")
            .await
            .map_err(|e| e.to_string())?;
        sims.push(sim);
    }
    core.start_scheduler();
    let before: Vec<_> = sims.iter().map(|s| s.counts()).collect();
    let req = NewFlowRun {
        files: files.clone(),
        shards: Some(phones as u32),
        ..Default::default()
    };
    let run = crate::service::flow_runs::submit(&core, req)
        .await
        .map_err(|e| e.to_string())?;
    let run = wait(&core, run).await?;
    let (mut device_us, mut commands) = (0, 0);
    for (s, b) in sims.iter().zip(&before) {
        let d = s.counts().since(b);
        device_us += d.busy_us;
        commands += d.dumps + d.screencaps + d.actions + d.queries;
    }
    let (mut steps, mut tasks_ms) = (0, 0);
    for f in &run.flows {
        for a in &f.attempts {
            tasks_ms += a.duration_ms;
            steps += core
                .store
                .get_task(a.task_id)
                .await
                .map_or(0, |t| t.steps as u64);
        }
    }
    let out = Leg {
        phones,
        flows: run.flows.len(),
        passed: run.count(FlowStatus::Passed),
        wall_ms: run.duration_ms.unwrap_or(0),
        steps,
        commands,
        device_ms: device_us / 1000,
        tasks_ms,
    };
    core.shutdown(Duration::from_secs(5)).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

async fn wait(core: &Core, run: FlowRun) -> Result<FlowRun, String> {
    loop {
        let r = core
            .store
            .flow_run(run.id)
            .await
            .map_err(|e| e.to_string())?;
        if r.status.is_terminal() {
            return Ok(r);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The report as text, each figure against its target.
pub fn format_report(r: &FlowsReport) -> String {
    let mut s = format!(
        "droidpilot bench flows — {} flows, virtual phones with the {} latency profile\n",
        r.one.flows, r.profile
    );
    for l in [&r.one, &r.sharded] {
        s.push_str(&format!(
            "  {} phone(s): {:.1} s wall, {}/{} passed, {} steps, {} device commands, device time {:.1} s, tasks {:.1} s\n",
            l.phones,
            l.wall_ms as f64 / 1000.0,
            l.passed,
            l.flows,
            l.steps,
            l.commands,
            l.device_ms as f64 / 1000.0,
            l.tasks_ms as f64 / 1000.0
        ));
    }
    s.push_str(&format!(
        "  sharded / one phone: {:.1}% (target ≤ 30%)\n",
        r.ratio() * 100.0
    ));
    s.push_str(&format!(
        "  overhead beyond the phone's time (1 phone): {:.1} ms per step, {:.1} ms per device command (target ≤ 50 ms per command)\n",
        r.one.overhead_per_step_ms(),
        r.one.overhead_per_command_ms()
    ));
    s
}
