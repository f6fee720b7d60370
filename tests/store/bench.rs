//! `droidpilot bench runner --store postgres://…` small: a tiny overhead run and one tiny
//! level over 1 and 2 instances on the test cluster. Every task runs exactly once (the
//! bench itself fails otherwise), both instances run some, the other instance's events
//! arrive through the relay, and the scratch database is gone afterwards.

use std::time::Duration;

use droidpilot::bench::runner::{
    BenchStore, ConcurrencyLevel, RunnerBenchOptions, bench_runner, format_report,
};
use droidpilot::domain::ScreenSize;
use droidpilot::run::runner::RunnerConfig;
use sqlx::Connection;

use crate::common::pg::admin_url;

/// Databases whose name starts `droidpilot_bench_<this pid>_`.
async fn scratch_databases(admin: &str) -> Vec<String> {
    let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
    let names = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE $1")
        .bind(format!("droidpilot_bench_{}_%", std::process::id()))
        .fetch_all(&mut c)
        .await
        .unwrap();
    let _ = c.close().await;
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_splits_a_level_over_two_instances_and_runs_each_task_once() {
    let Some(admin) = admin_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let opts = RunnerBenchOptions {
        overhead_steps: 8,
        overhead_screen: ScreenSize {
            width: 540,
            height: 1200,
        },
        png_from_device: vec![false],
        levels: vec![ConcurrencyLevel {
            phones: 6,
            steps_per_task: 3,
        }],
        data_dir: Some(dir.path().to_path_buf()),
        runner: RunnerConfig {
            settle_timeout_ms: 300,
            settle_poll_ms: 10,
            ..RunnerConfig::default()
        },
        level_timeout: Duration::from_secs(120),
        store: BenchStore::Postgres(admin.clone()),
        ..RunnerBenchOptions::default()
    };
    let r = bench_runner(opts).await.expect("the bench runs");
    assert!(r.store.starts_with("PostgreSQL"), "{}", r.store);
    assert!(
        r.levels.is_empty(),
        "PostgreSQL levels are per instance count"
    );
    let o = &r.overhead[0];
    assert!(o.steps >= 8 && o.overhead.n > 0, "{o:?}");
    assert!(
        o.store_calls.iter().any(|c| c.call == "commit_step"),
        "the overhead run wrote to PostgreSQL: {:?}",
        o.store_calls
    );

    assert_eq!(
        r.cluster_levels.len(),
        2,
        "one level, over 1 then 2 instances"
    );
    for c in &r.cluster_levels {
        let l = &c.level;
        assert_eq!((l.tasks, l.succeeded, l.unfinished), (6, 6, 0), "{l:?}");
        // Each task: 2 screen-changing actions, then finish.
        assert_eq!(l.steps, 18, "{l:?}");
        // started + finished per task, observed + decided + executed per step, once each.
        assert_eq!(l.events, 2 * l.tasks + 3 * l.steps, "{c:?}");
        let ran: usize = c.tasks_by_instance.iter().map(|x| x.1).sum();
        assert_eq!(ran, 6, "{:?}", c.tasks_by_instance);
        assert_eq!(c.tasks_by_instance.len(), c.instances);
    }
    let two = &r.cluster_levels[1];
    assert_eq!(two.instances, 2);
    // Each instance has 3 phones, so neither can hold all 6 tasks at once.
    assert!(
        two.tasks_by_instance.iter().all(|x| x.1 > 0),
        "both schedulers claimed: {:?}",
        two.tasks_by_instance
    );
    // The subscriber is on bench-b: bench-a's tasks' events came through the relay.
    let on_a = two.tasks_by_instance[0].1;
    assert!(two.relayed_events >= on_a * 2, "{two:?}");
    assert!(two.relay_lag_from_commit.n > 0, "{two:?}");
    assert_eq!(r.cluster_levels[0].relayed_events, 0);

    let text = format_report(&r);
    eprintln!("{text}");
    assert!(
        text.contains("PostgreSQL") && text.contains("bench-a") && text.contains("bench-b"),
        "{text}"
    );
    assert!(
        scratch_databases(&admin).await.is_empty(),
        "the scratch database was dropped"
    );
}
