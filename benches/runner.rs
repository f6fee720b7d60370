//! The runner's own cost (issue 7), on the virtual phone with the replay agent and a
//! SQLite file: criterion tracks the server overhead per step (`runner/overhead_per_step`
//! measures only the overhead, via `iter_custom`), then the full `bench runner` report
//! prints p50/p99 overhead and steps/s + event lag at N = 10, 100, 500 phones.
//!
//! `DROIDPILOT_BENCH_LEVELS=10x20,100x8` (phones x steps per task) and
//! `DROIDPILOT_BENCH_OVERHEAD_STEPS=400` change the report's sizes. Under `cargo test
//! --benches` (no `--bench` flag) everything runs once at a tiny size.

use std::time::Duration;

use criterion::Criterion;
use droidpilot::bench::runner::{
    ConcurrencyLevel, RunnerBenchOptions, bench_runner, format_report,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn levels_from_env() -> Option<Vec<ConcurrencyLevel>> {
    let v = std::env::var("DROIDPILOT_BENCH_LEVELS").ok()?;
    v.split(',')
        .map(|l| {
            let (n, m) = l.trim().split_once('x')?;
            Some(ConcurrencyLevel {
                phones: n.parse().ok()?,
                steps_per_task: m.parse().ok()?,
            })
        })
        .collect()
}

/// Steps whose settle times out are left out of the overhead anyway; a short timeout
/// only saves wall time.
fn quick_settle() -> droidpilot::run::runner::RunnerConfig {
    droidpilot::run::runner::RunnerConfig {
        settle_timeout_ms: 300,
        ..Default::default()
    }
}

fn overhead_per_step(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut g = c.benchmark_group("runner");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("overhead_per_step", |b| {
        b.iter_custom(|iters| {
            let opts = RunnerBenchOptions {
                overhead_steps: iters as usize,
                levels: Vec::new(),
                png_from_device: vec![false],
                runner: quick_settle(),
                ..RunnerBenchOptions::default()
            };
            let r = rt
                .block_on(bench_runner(opts))
                .expect("the runner bench runs");
            // Only the overhead: wall time minus time inside the device and the agent.
            Duration::from_secs_f64(r.overhead[0].overhead.mean_ms / 1000.0 * iters as f64)
        })
    });
    g.finish();
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let rt = runtime();
    let mut c = Criterion::default().configure_from_args();
    overhead_per_step(&mut c, &rt);
    c.final_summary();

    let mut opts = RunnerBenchOptions::default();
    if !full {
        opts.overhead_steps = 20;
        opts.levels = vec![ConcurrencyLevel {
            phones: 4,
            steps_per_task: 3,
        }];
    }
    if let Some(l) = levels_from_env() {
        opts.levels = l;
    }
    if let Some(n) = std::env::var("DROIDPILOT_BENCH_OVERHEAD_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        opts.overhead_steps = n;
    }
    match rt.block_on(bench_runner(opts)) {
        Ok(r) => println!("{}", format_report(&r)),
        Err(e) => {
            eprintln!("bench runner failed: {e}. {}", e.hint());
            std::process::exit(1);
        }
    }
}
