//! `droidpilot bench flows`: a suite of Maestro flows (by default the 40 of
//! `tests/fixtures/flows/suite40`, written for the virtual phone's apps) run as one flow
//! run on one virtual phone, then sharded over N, each phone charging a real phone's time
//! per command (`--profile`, `pixel-8` by default: a dump ~2 s, a screenshot ~250 ms, an
//! input ~300 ms). Reports the sharded run's wall time as a share of the single phone's
//! (target ≤ 30% at 4 phones) and droidpilot's overhead per device command beyond the
//! phone's own time (target ≤ 50 ms).
//!
//! The phone's own time is measured, not inferred from the profile: each phone is wrapped
//! in a `PhoneClock` (`phone_time.rs`) that keeps the wall time during which at least one
//! device call is in flight: the profile's latency and the virtual phone's own work
//! (building, rendering and encoding the screen, which a real phone does on its cores
//! inside its screencap's time), overlapped captures counted once. On one phone the tasks
//! run one at a time, so the tasks' summed durations minus that busy time is droidpilot's
//! own: observing (parsing, hashing), deciding, resolving selectors, settle's pacing,
//! store writes and events. The same time is also split by the runner's phases, per step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::core::Core;
use crate::device::sim::{LatencyProfile, SimConfig, SimDevice};
use crate::domain::{FlowRun, FlowStatus};
use crate::phone_time::{PhoneClock, PhoneTime, Timed};
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
    /// Phones send raw pixels (droidpilot encodes the PNG it keeps) instead of PNG.
    pub raw_frames: bool,
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
    /// The phones' own time, measured around every device call (summed over phones).
    pub phone: PhoneTime,
    /// Where the tasks' time went, by the runner's phases (summed over steps).
    pub phases: Phases,
}

/// The tasks' time by the runner's phases, in ms summed over every step (phone time
/// included: a phase's wall time).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    /// From the task's start to its first step: the app check, resuming the loop.
    pub start_ms: f64,
    /// What a step's wall time leaves beside decide, act and settle: observing a screen
    /// the last settle did not read, recording and committing the step, its events.
    pub observe_record_ms: f64,
    /// The flow agent's decision: walking the flow, resolving selectors.
    pub decide_ms: f64,
    /// The action on the phone; a Maestro wait (`flow_check`) waits here.
    pub act_ms: f64,
    /// Reading the idle screen after the action (the next step's observation).
    pub settle_ms: f64,
}

impl Phases {
    /// One task's phases, from its stored steps.
    fn of(task: &crate::domain::Task, steps: &[crate::domain::Step]) -> Phases {
        let mut p = Phases::default();
        let (Some(start), Some(end)) = (task.started_at, task.finished_at) else {
            return p;
        };
        let ms = |a: chrono::DateTime<chrono::Utc>, b: chrono::DateTime<chrono::Utc>| {
            (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0
        };
        if let Some(first) = steps.first() {
            p.start_ms = ms(start, first.started_at);
        }
        for (i, s) in steps.iter().enumerate() {
            let next = steps.get(i + 1).map_or(end, |n| n.started_at);
            let t = &s.timings;
            let phases = (t.inference_ms + t.action_ms + t.settle_ms) as f64;
            p.decide_ms += t.inference_ms as f64;
            p.act_ms += t.action_ms as f64;
            p.settle_ms += t.settle_ms as f64;
            p.observe_record_ms += (ms(s.started_at, next) - phases).max(0.0);
        }
        p
    }

    fn add(&mut self, o: &Phases) {
        self.start_ms += o.start_ms;
        self.observe_record_ms += o.observe_record_ms;
        self.decide_ms += o.decide_ms;
        self.act_ms += o.act_ms;
        self.settle_ms += o.settle_ms;
    }
}

impl Leg {
    /// droidpilot's time beyond the phone's own (one phone: tasks run one at a time, so
    /// the tasks' time minus the time a device call was in flight is droidpilot's).
    pub fn own_ms(&self) -> f64 {
        self.tasks_ms as f64 - self.phone.busy_ms
    }

    pub fn overhead_per_step_ms(&self) -> f64 {
        self.own_ms() / self.steps.max(1) as f64
    }

    /// The same per device command (a step is one or more: a dump, a screenshot, an
    /// input).
    pub fn overhead_per_command_ms(&self) -> f64 {
        self.own_ms() / self.commands.max(1) as f64
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowsReport {
    pub profile: String,
    /// Whether the phones sent raw pixels (droidpilot encoded the PNG).
    pub raw_frames: bool,
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
    let one = leg(&files, 1, opts).await?;
    eprintln!("1 phone: {} ms", one.wall_ms);
    let sharded = leg(&files, opts.phones, opts).await?;
    eprintln!("{} phones: {} ms", opts.phones, sharded.wall_ms);
    Ok(FlowsReport {
        profile: opts.profile.name().to_string(),
        raw_frames: opts.raw_frames,
        one,
        sharded,
    })
}

async fn leg(
    files: &BTreeMap<String, String>,
    phones: usize,
    opts: &FlowsBenchOptions,
) -> Result<Leg, String> {
    let (profile, raw_frames) = (opts.profile, opts.raw_frames);
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
    let clock = PhoneClock::default();
    for i in 0..phones {
        let sim = SimDevice::new(SimConfig {
            serial: format!("bench-{i}"),
            latency_profile: profile,
            seed: i as u64 + 1,
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
        // By default PNG is encoded on the phone, as `screencap -p` sends it.
        let sim = Arc::new(match raw_frames {
            true => sim,
            false => sim.with_png_frames(),
        });
        let timed = Timed {
            inner: sim.clone(),
            clock: clock.clone(),
        };
        core.pool
            .add_device(Arc::new(timed), "sim")
            .await
            .map_err(|e| e.to_string())?;
        sims.push(sim);
    }
    core.start_scheduler();
    let before: Vec<_> = sims.iter().map(|s| s.counts()).collect();
    let phone_before = clock.read();
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
    let phone = phone_since(clock.read(), &phone_before);
    let (mut steps, mut tasks_ms, mut phases) = (0, 0, Phases::default());
    for f in &run.flows {
        for a in &f.attempts {
            tasks_ms += a.duration_ms;
            let Ok(task) = core.store.get_task(a.task_id).await else {
                continue;
            };
            steps += task.steps as u64;
            let stored = core.store.steps(a.task_id).await.unwrap_or_default();
            phases.add(&Phases::of(&task, &stored));
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
        phone,
        phases,
    };
    core.shutdown(Duration::from_secs(5)).await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

/// What the clock measured since `before` (the pool's own calls before the run).
fn phone_since(now: PhoneTime, before: &PhoneTime) -> PhoneTime {
    PhoneTime {
        busy_ms: now.busy_ms - before.busy_ms,
        dump_ms: now.dump_ms - before.dump_ms,
        screencap_ms: now.screencap_ms - before.screencap_ms,
        action_ms: now.action_ms - before.action_ms,
        query_ms: now.query_ms - before.query_ms,
        wait_ms: now.wait_ms - before.wait_ms,
        dumps: now.dumps - before.dumps,
        screencaps: now.screencaps - before.screencaps,
        actions: now.actions - before.actions,
        queries: now.queries - before.queries,
        waits: now.waits - before.waits,
    }
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
        "droidpilot bench flows — {} flows, virtual phones with the {} latency profile, screenshots {}\n",
        r.one.flows,
        r.profile,
        match r.raw_frames {
            true => "as raw pixels (droidpilot encodes the PNG)",
            false => "as PNG (encoded on the phone, as screencap -p)",
        }
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
    let one = &r.one;
    s.push_str(&format!(
        "  phone's own time (1 phone, measured around each call): {:.1} s busy; per step: dump {:.0} ms, screencap {:.0} ms, action {:.0} ms, query {:.0} ms\n",
        one.phone.busy_ms / 1000.0,
        per_step(one, one.phone.dump_ms),
        per_step(one, one.phone.screencap_ms),
        per_step(one, one.phone.action_ms),
        per_step(one, one.phone.query_ms),
    ));
    let p = &one.phases;
    s.push_str(&format!(
        "  where a step's time goes (1 phone, ms/step, phone time included): start {:.1}, observe+record {:.1}, decide {:.1}, act {:.1}, settle {:.1}\n",
        per_step(one, p.start_ms),
        per_step(one, p.observe_record_ms),
        per_step(one, p.decide_ms),
        per_step(one, p.act_ms),
        per_step(one, p.settle_ms),
    ));
    s.push_str(&format!(
        "  overhead beyond the phone's time (1 phone): {:.1} ms per step, {:.1} ms per device command (target ≤ 50 ms per command)\n",
        r.one.overhead_per_step_ms(),
        r.one.overhead_per_command_ms()
    ));
    s
}

fn per_step(l: &Leg, ms: f64) -> f64 {
    ms / l.steps.max(1) as f64
}
