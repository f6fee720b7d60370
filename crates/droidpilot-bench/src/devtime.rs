//! `droidpilot bench runner --profile pixel-8`: device time per step on a real phone's
//! terms. The virtual phone runs under a latency profile (`device::sim::latency`), so
//! each dump, screencap and input takes a real phone's time, and the replay agent
//! (zero latency) walks the sim tasks' reference solutions through `Runner::run` with a
//! real SQLite store. Reported per step: dumps and screenshots the phone served (counted
//! by the sim, not inferred), the wall time per step (what the runner waits on the phone:
//! the agent is instant and the server's own share is about a millisecond), the device
//! time the profile charged (summed per command, so overlapped commands count twice),
//! and steps per minute per phone, against the issue 17 target of 1.2 × (one dump + one
//! screencap + the step's input).
//!
//! Beside it, two loops computed (not run) under the same profile's medians:
//! - Open-AutoGLM (zai-org/Open-AutoGLM): each step takes `screencap -p` plus `adb pull`
//!   (`phone_agent/adb/screenshot.py`), `dumpsys window` (`get_current_app` in
//!   `phone_agent/adb/device.py`, called from `_execute_step` in `phone_agent/agent.py`),
//!   the action through a new `adb shell input …`, then `time.sleep(delay)` with
//!   `TIMING_CONFIG.device.default_*_delay` = 1.0 s (`phone_agent/adb/device.py`). It
//!   reads no hierarchy; the pull is counted as free.
//! - droidpilot's loop before issue 17: observe (screenshot, dump and `dumpsys`, which
//!   the ADB worker ran one after another), the action, then a settle that polled
//!   dumps until two agreed: three dumps and one screenshot per changing step.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use super::runner::RunnerBenchError;
use crate::agent::ReplayAgent;
use crate::core::{Core, CoreParts};
use crate::device::Device;
use crate::device::sim::tasks::{SimTask, tasks};
use crate::device::sim::{CommandCounts, DeviceOp, LatencyProfile, SimConfig, SimDevice};
use crate::domain::{Action, NewTask, TaskSpec};
use crate::run::runner::RunnerConfig;
use crate::run::stop::StopSignal;

/// The issue 17 target: device time per step at most this × (dump + screencap + input).
pub const TARGET_FACTOR: f64 = 1.2;
/// Open-AutoGLM's fixed pause after every action (`default_tap_delay` and the others).
pub const AUTOGLM_SLEEP_MS: f64 = 1_000.0;

/// What to run.
#[derive(Debug, Clone)]
pub struct DevtimeOptions {
    pub profile: LatencyProfile,
    /// Stop after the task that reaches this many steps.
    pub steps: usize,
    pub runner: RunnerConfig,
}

impl Default for DevtimeOptions {
    fn default() -> Self {
        Self {
            profile: LatencyProfile::Pixel8,
            steps: 24,
            runner: RunnerConfig::default(),
        }
    }
}

/// One loop's cost per step.
#[derive(Debug, Clone, Serialize)]
pub struct LoopCost {
    pub name: String,
    /// Measured or computed.
    pub measured: bool,
    pub dumps: f64,
    pub screenshots: f64,
    pub ms_per_step: f64,
    pub steps_per_minute: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct DevtimeReport {
    pub profile: String,
    pub tasks: usize,
    pub steps: usize,
    pub counts: CommandCounts,
    /// Device time the profile charged per step (overlapped commands count twice).
    pub device_busy_ms: f64,
    /// The target: 1.2 × (one dump + one screencap + the mean action the steps took).
    pub target_ms: f64,
    pub loops: Vec<LoopCost>,
}

/// Runs the measured loop and computes the peers'.
pub async fn bench_devtime(
    opts: DevtimeOptions,
    dir: &Path,
) -> Result<DevtimeReport, RunnerBenchError> {
    let core = core(dir, &opts.runner).await?;
    let phone = Arc::new(SimDevice::new(SimConfig {
        serial: "bench-devtime".into(),
        latency_profile: opts.profile,
        ..SimConfig::default()
    })?);
    let (mut steps, mut ran, mut wall) = (0usize, 0usize, Duration::ZERO);
    let start_counts = phone.counts();
    for t in runnable_tasks() {
        if steps >= opts.steps.max(1) {
            break;
        }
        phone.reset_to(&t);
        let actions = t.reference();
        let spec = TaskSpec::parse(NewTask {
            instruction: Some(t.instruction.into()),
            max_steps: Some(actions.len() as u32 + 5),
            ..Default::default()
        })?;
        let task = core.store.create_task(spec).await?;
        core.store.start_task(task.id, phone.serial()).await?;
        let task = core.store.get_task(task.id).await?;
        let (_tx, rx) = watch::channel(StopSignal::None);
        let device: Arc<dyn Device> = phone.clone();
        let began = Instant::now();
        let done = core
            .runner
            .run(task, device, Box::new(ReplayAgent::new(actions)), rx)
            .await?;
        wall += began.elapsed();
        steps += core.store.steps(done.id).await?.len();
        ran += 1;
    }
    core.shutdown(Duration::from_secs(10)).await;
    let counts = phone.counts().since(&start_counts);
    Ok(report(opts.profile, ran, steps, counts, wall))
}

/// The sim tasks a replay can finish alone (none that asks the user).
fn runnable_tasks() -> Vec<SimTask> {
    tasks()
        .into_iter()
        .filter(|t| {
            !t.reference()
                .iter()
                .any(|a| matches!(a, Action::AskUser { .. }))
        })
        .collect()
}

fn report(
    profile: LatencyProfile,
    tasks: usize,
    steps: usize,
    counts: CommandCounts,
    wall: Duration,
) -> DevtimeReport {
    let n = steps.max(1) as f64;
    let med = |op| profile.median_ms(op) as f64;
    // The actions the steps took, at the profile's prices (a `finish` step takes none).
    let action_ms = counts.action_us as f64 / 1000.0 / n;
    let ms_per_step = wall.as_secs_f64() * 1000.0 / n;
    let per_minute = |ms: f64| {
        if ms > 0.0 {
            60_000.0 / ms
        } else {
            f64::INFINITY
        }
    };
    let ours = LoopCost {
        name: "droidpilot (this build)".into(),
        measured: true,
        dumps: counts.dumps as f64 / n,
        screenshots: counts.screencaps as f64 / n,
        ms_per_step,
        steps_per_minute: per_minute(ms_per_step),
    };
    let autoglm_ms =
        med(DeviceOp::Screencap) + med(DeviceOp::Dumpsys) + action_ms + AUTOGLM_SLEEP_MS;
    let autoglm = LoopCost {
        name: "Open-AutoGLM (computed from its code)".into(),
        measured: false,
        dumps: 0.0,
        screenshots: 1.0,
        ms_per_step: autoglm_ms,
        steps_per_minute: per_minute(autoglm_ms),
    };
    let before_ms =
        med(DeviceOp::Screencap) + 3.0 * med(DeviceOp::Dump) + med(DeviceOp::Dumpsys) + action_ms;
    let before = LoopCost {
        name: "droidpilot before issue 17 (computed)".into(),
        measured: false,
        dumps: 3.0,
        screenshots: 1.0,
        ms_per_step: before_ms,
        steps_per_minute: per_minute(before_ms),
    };
    DevtimeReport {
        profile: profile.name().into(),
        tasks,
        steps,
        counts,
        device_busy_ms: counts.busy_us as f64 / 1000.0 / n,
        target_ms: TARGET_FACTOR * (med(DeviceOp::Dump) + med(DeviceOp::Screencap) + action_ms),
        loops: vec![ours, autoglm, before],
    }
}

/// The report as a table, the measured figure against its target.
pub fn format_devtime(r: &DevtimeReport) -> String {
    let mut s = format!(
        "Device time per step, latency profile `{}` ({} tasks, {} steps, replay agent)\n\n",
        r.profile, r.tasks, r.steps
    );
    s += &format!(
        "{:<40} {:>7} {:>7} {:>10} {:>10}\n",
        "loop", "dumps", "shots", "ms/step", "steps/min"
    );
    for l in &r.loops {
        s += &format!(
            "{:<40} {:>7.2} {:>7.2} {:>10.0} {:>10.1}\n",
            l.name, l.dumps, l.screenshots, l.ms_per_step, l.steps_per_minute
        );
    }
    let ours = &r.loops[0];
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    s += &format!(
        "\ntarget: ms/step ≤ {:.0} (1.2 × (dump + screencap + the steps' mean input)): {:.0} — {}\n",
        r.target_ms,
        ours.ms_per_step,
        verdict(ours.ms_per_step <= r.target_ms)
    );
    s += &format!(
        "target: ≤ 1 dump per step: {:.2} — {}; ≤ 1 screenshot per step: {:.2} — {}\n",
        ours.dumps,
        verdict(ours.dumps <= 1.0),
        ours.screenshots,
        verdict(ours.screenshots <= 1.0)
    );
    s += &format!(
        "device busy per step (commands summed, overlaps twice): {:.0} ms; dumpsys/pm reads: {:.2} per step\n",
        r.device_busy_ms,
        r.counts.queries as f64 / r.steps.max(1) as f64
    );
    s
}

/// A core on a scratch directory with no configured phones (the bench brings its own).
async fn core(dir: &Path, cfg: &RunnerConfig) -> Result<Core, RunnerBenchError> {
    let config = super::runner::scratch_config(dir, cfg)?;
    Core::build_with(&config, CoreParts::default())
        .await
        .map_err(|e| RunnerBenchError::Core(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_computed_loops_follow_the_profile() {
        let counts = CommandCounts {
            dumps: 10,
            screencaps: 20,
            actions: 10,
            queries: 10,
            busy_us: 30_000_000,
            action_us: 3_000_000,
            cpu_us: 0,
        };
        let r = report(
            LatencyProfile::Pixel8,
            2,
            10,
            counts,
            Duration::from_secs(28),
        );
        assert_eq!(r.loops[0].dumps, 1.0);
        assert_eq!(r.loops[0].screenshots, 2.0);
        assert_eq!(r.loops[0].ms_per_step, 2_800.0);
        // 1.2 × (2000 + 250 + 300).
        assert!((r.target_ms - 3_060.0).abs() < 1e-6);
        // Open-AutoGLM: 250 + 150 + 300 + 1000; before: 250 + 3 × 2000 + 150 + 300.
        assert_eq!(r.loops[1].ms_per_step, 1_700.0);
        assert_eq!(r.loops[2].ms_per_step, 6_700.0);
        assert!(format_devtime(&r).contains("met"));
    }
}
