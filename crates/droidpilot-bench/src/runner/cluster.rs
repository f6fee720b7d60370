//! `droidpilot bench runner --store postgres://…`: the runner bench on PostgreSQL, with the
//! phones of each concurrency level split over one and then two instances.
//!
//! **The scratch database.** The bench never touches the database the URL names: it
//! connects there only to `CREATE DATABASE droidpilot_bench_<pid>_<random>` on the same
//! server, runs every part in that database, and drops it (`WITH (FORCE)`) at the end,
//! failed runs included. The role therefore needs `CREATEDB`; without it the bench stops
//! before anything runs, saying so.
//!
//! **Overhead per step** is the one-task-at-a-time run of `runner.rs`, unchanged, on a core
//! whose store is the scratch database.
//!
//! (`--store sqlite://DIR` is the SQLite bench as without `--store`, its files under DIR.)
//!
//! **A concurrency level over k instances** (k = 1, 2) is k full cores (`Core::build_with`)
//! in this process, each with its own `[cluster] instance` name (`bench-a`, `bench-b`), its
//! heartbeat, its relay and its own virtual phones (N/k each), all on the scratch database.
//! The N tasks are submitted through the first instance only and name no phone, so every
//! scheduler competes for every task through the real claim (`ClusterStore::claim_task`).
//! Each task's agent is built by the instance whose claim won; the bench counts those
//! builds, and then checks in the database that each task has one `task.started` event,
//! gapless `seq`, and the instance that built its agent in `tasks.instance`. Any task run
//! twice, or recorded under the wrong instance, fails the bench.
//!
//! The subscriber (`EventBus::feed(All)`) is on the *last* instance, so with two instances
//! the events of tasks that ran on the first reach it through the relay (LISTEN/NOTIFY,
//! then a re-read of the row): their lag is reported apart. Overhead under load uses each
//! task's own agent timings and its phone's device calls between the agent's build and its
//! drop (a phone runs one task at a time).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::{ConnectOptions, Connection, Executor, Row};

use super::{
    ConcurrencyLevel, Env, LevelReport, Percentiles, Probe, ProbeLog, RunnerBenchError,
    RunnerBenchOptions, RunnerBenchReport, SHUTDOWN_GRACE, TimedAgent, add_probed, env_on,
    new_task, overhead_run, scratch_config, segment, settle_poll, sim_config, tour, under_load,
};
use crate::agent::{Agent, ReplayAgent};
use crate::config::Config;
use crate::device::sim::SimDevice;
use crate::device::sim::tasks::tasks;
use crate::domain::{Task, TaskId, TaskStatus};
use crate::run::events::{FeedItem, Filter};
use crate::run::scheduler::AgentFactory;
use crate::store::postgres::CONNECT_TIMEOUT;
use crate::store::{Store as _, StoreLocation, redact_url};

/// Which store the runner bench measures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BenchStore {
    /// A fresh SQLite file (WAL) per part, in the bench's data directory.
    #[default]
    Sqlite,
    /// A PostgreSQL server, given by a URL whose database the bench leaves alone: it
    /// creates a scratch database beside it and drops it afterwards.
    Postgres(String),
}

impl BenchStore {
    /// Reads `--store`: `postgres://…` / `postgresql://…`, or `sqlite://DIR` (the default
    /// SQLite bench, its files in a fresh directory under DIR, kept afterwards; returned
    /// as the bench's data directory). Anything else is refused with the forms that work.
    pub fn from_url(url: &str) -> Result<(Self, Option<PathBuf>), RunnerBenchError> {
        match StoreLocation::from_url(url, 1) {
            Ok(StoreLocation::Postgres { url, .. }) => Ok((Self::Postgres(url), None)),
            Ok(StoreLocation::Sqlite(dir)) => Ok((
                Self::Sqlite,
                Some(dir.join(format!("droidpilot-bench-runner-{}", std::process::id()))),
            )),
            Err(reason) => Err(RunnerBenchError::Scratch {
                reason,
                hint: "pass --store postgres://USER:PASSWORD@HOST:PORT/DATABASE (the bench creates and drops its own scratch database there) or --store sqlite://DIR, or leave --store out for SQLite in a temporary directory".into(),
            }),
        }
    }
}

/// One concurrency level on PostgreSQL with its phones split over `instances` instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterLevelReport {
    pub instances: usize,
    /// The same figures as on SQLite (lag over every event the subscriber received).
    #[serde(flatten)]
    pub level: LevelReport,
    /// Tasks each instance ran (its scheduler's claim won), by instance name.
    pub tasks_by_instance: Vec<(String, usize)>,
    /// Events of tasks that ran on another instance than the subscriber's (the relay).
    pub relayed_events: usize,
    /// Their lag, from the insert returning on the running instance to receipt.
    pub relay_lag_from_commit: Percentiles,
}

/// The scratch database the bench runs in.
struct ScratchDb {
    /// The user's URL: the server to create the scratch database on (never written to).
    server: String,
    name: String,
    /// The scratch database's URL (the user's, with the database replaced).
    url: String,
}

fn scratch_error(reason: impl Into<String>, hint: &str) -> RunnerBenchError {
    RunnerBenchError::Scratch {
        reason: reason.into(),
        hint: hint.into(),
    }
}

/// A direct connection, at most `CONNECT_TIMEOUT`, with what went wrong and what to check.
async fn connect(url: &str) -> Result<sqlx::PgConnection, RunnerBenchError> {
    let shown = redact_url(url);
    let opts: sqlx::postgres::PgConnectOptions = url.parse().map_err(|e| {
        scratch_error(
            format!("`{shown}` is not a PostgreSQL URL ({e})"),
            "write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE",
        )
    })?;
    let opts = opts.disable_statement_logging();
    match tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect_with(&opts)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(scratch_error(
            format!(
                "cannot connect to {shown}: {}",
                e.as_database_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_string())
            ),
            "check the user and password in the URL, and that PostgreSQL is running and reachable at that host and port",
        )),
        Err(_) => Err(scratch_error(
            format!(
                "{shown} did not answer within {}s",
                CONNECT_TIMEOUT.as_secs()
            ),
            "check that PostgreSQL is running and reachable at that host and port (firewall, listen_addresses)",
        )),
    }
}

/// `url` pointing at database `db` instead of the one it names (query kept).
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let server = match rest.find('/') {
        Some(i) => &base[..base.len() - rest.len() + i],
        None => base,
    };
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    format!("{server}/{db}{query}")
}

impl ScratchDb {
    /// Creates `droidpilot_bench_<pid>_<random>` on the server `server` names.
    async fn create(server: &str) -> Result<Self, RunnerBenchError> {
        let name = format!(
            "droidpilot_bench_{}_{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let mut c = connect(server).await?;
        let created = tokio::time::timeout(
            Duration::from_secs(60),
            c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))),
        )
        .await;
        let _ = c.close().await;
        match created {
            Ok(Ok(_)) => Ok(Self {
                server: server.into(),
                url: with_database(server, &name),
                name,
            }),
            Ok(Err(e)) => {
                let insufficient = e
                    .as_database_error()
                    .and_then(|d| d.code())
                    .is_some_and(|c| c == "42501");
                Err(scratch_error(
                    format!("cannot create the scratch database {name}: {e}"),
                    if insufficient {
                        "the bench runs in a database of its own, which it creates and drops; give the role CREATEDB (`ALTER ROLE … CREATEDB`) or use a role that has it"
                    } else {
                        "check that the server accepts CREATE DATABASE from this role"
                    },
                ))
            }
            Err(_) => Err(scratch_error(
                format!("creating the scratch database {name} took over 60 s"),
                "check the server's load and locks (another CREATE DATABASE copying template1?)",
            )),
        }
    }

    /// Drops the scratch database, closing whatever still holds it.
    async fn drop_now(&self) -> Result<(), RunnerBenchError> {
        let mut c = connect(&self.server).await?;
        let dropped = tokio::time::timeout(
            Duration::from_secs(60),
            c.execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))),
        )
        .await;
        let _ = c.close().await;
        match dropped {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(scratch_error(
                format!("cannot drop the scratch database {}: {e}", self.name),
                "drop it by hand with DROP DATABASE",
            )),
            Err(_) => Err(scratch_error(
                format!("dropping the scratch database {} took over 60 s", self.name),
                "drop it by hand with DROP DATABASE",
            )),
        }
    }
}

/// A bench core's configuration on the scratch database, as instance `instance`.
fn pg_config(
    dir: &std::path::Path,
    opts: &RunnerBenchOptions,
    db: &str,
    instance: &str,
) -> Result<Config, RunnerBenchError> {
    let mut config = scratch_config(dir, &opts.runner)?;
    config.storage.database_url = db.into();
    config.cluster.instance = instance.into();
    Ok(config)
}

/// The whole bench on PostgreSQL: a scratch database, the overhead runs, then each level
/// over one and two instances; the scratch database is dropped whatever happened.
pub(super) async fn bench_postgres(
    opts: &RunnerBenchOptions,
    server: &str,
    root: &std::path::Path,
) -> Result<RunnerBenchReport, RunnerBenchError> {
    let db = ScratchDb::create(server).await?;
    opts.progress
        .say(&format!("scratch database {} created", db.name));
    let result = bench_in(opts, &db, root).await;
    match db.drop_now().await {
        Ok(()) => opts
            .progress
            .say(&format!("scratch database {} dropped", db.name)),
        Err(e) => {
            tracing::warn!(error = %e, "scratch database left behind");
            opts.progress.say(&format!("WARNING: {e}. {}", e.hint()));
        }
    }
    result
}

async fn bench_in(
    opts: &RunnerBenchOptions,
    db: &ScratchDb,
    root: &std::path::Path,
) -> Result<RunnerBenchReport, RunnerBenchError> {
    let say = |line: String| opts.progress.say(&line);
    let mut overhead = Vec::new();
    for &png in &opts.png_from_device {
        let frames = if png { "PNG" } else { "raw RGBA" };
        say(format!(
            "overhead, {frames} frames, PostgreSQL: {} steps, one task at a time…",
            opts.overhead_steps
        ));
        let started = Instant::now();
        let dir = root.join(if png { "overhead-png" } else { "overhead-rgba" });
        let config = pg_config(&dir, opts, &db.url, "bench-overhead")?;
        let o = overhead_run(opts, config, png).await?;
        say(format!(
            "  done in {:.1} s: {}, {}",
            started.elapsed().as_secs_f64(),
            super::against_target("p50", o.overhead.p50_ms, super::OVERHEAD_P50_TARGET_MS),
            super::against_target("p99", o.overhead.p99_ms, super::OVERHEAD_P99_TARGET_MS)
        ));
        overhead.push(o);
    }
    let mut cluster_levels = Vec::new();
    for (i, level) in opts.levels.iter().enumerate() {
        for instances in [1, 2] {
            say(format!(
                "concurrency N = {} over {instances} instance(s) ({} of {}): {} tasks of up to {} steps…",
                level.phones,
                i + 1,
                opts.levels.len(),
                level.phones,
                level.steps_per_task
            ));
            let dir = root.join(format!("level-{i}-n{}-x{instances}", level.phones));
            let l = level_run(opts, *level, instances, &db.url, &dir).await?;
            say(format!(
                "  done in {:.1} s: {:.1} steps/s, {} of {} tasks succeeded, each run once ({})",
                l.level.elapsed_s,
                l.level.steps_per_s,
                l.level.succeeded,
                l.level.tasks,
                by_instance(&l.tasks_by_instance)
            ));
            cluster_levels.push(l);
        }
    }
    Ok(RunnerBenchReport {
        worker_threads: tokio::runtime::Handle::current().metrics().num_workers(),
        runner: opts.runner.clone(),
        store: format!("PostgreSQL (scratch database {})", db.name),
        overhead,
        levels: Vec::new(),
        cluster_levels,
    })
}

fn by_instance(v: &[(String, usize)]) -> String {
    v.iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who built each task's agent, and when: one entry per won claim.
#[derive(Default)]
struct Ledger {
    /// Task → (its actions, not counting `finish`; its probe), taken when it is built.
    plans: HashMap<TaskId, (usize, Arc<Probe>)>,
    /// Phone serial → its index in the level (which sim screen it started on).
    phones: HashMap<String, usize>,
    /// Task → (instance index, phone, when its agent was built), per build.
    runs: HashMap<TaskId, Vec<(usize, String, Instant)>>,
}

type SharedLedger = Arc<Mutex<Ledger>>;

fn lock(l: &SharedLedger) -> std::sync::MutexGuard<'_, Ledger> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// Instance `k`'s agent factory: records the build, then hands out the task's plan.
fn factory(k: usize, ledger: SharedLedger) -> AgentFactory {
    Arc::new(move |task: &Task| {
        let mut l = lock(&ledger);
        let phone = task.assigned_device.clone().unwrap_or_default();
        let phone_index = l.phones.get(&phone).copied().unwrap_or(0);
        l.runs
            .entry(task.id)
            .or_default()
            .push((k, phone, Instant::now()));
        let (len, probe) = l
            .plans
            .remove(&task.id)
            .ok_or_else(|| format!("task {} was already run by another instance", task.id))?;
        // The tour of the phone it got, as on SQLite, so its first action changes the
        // screen (a tour starting at the app already open would wait out settle).
        let actions = tour(phone_index, len);
        Ok(Box::new(TimedAgent {
            inner: Box::new(ReplayAgent::new(actions)),
            probe,
        }) as Box<dyn Agent>)
    })
}

/// `bench-a`, `bench-b`, …
fn instance_name(k: usize) -> String {
    format!("bench-{}", (b'a' + k as u8) as char)
}

/// What the subscriber on the last instance saw. `last_finish` is the last task's end as
/// committed on the instance that ran it.
#[derive(Default)]
struct Seen {
    from_commit: Vec<Duration>,
    from_created: Vec<Duration>,
    relayed: Vec<Duration>,
    relayed_events: usize,
    events: usize,
    finished: usize,
    lagged: u64,
    last_finish: Option<Instant>,
}

/// Reads the last instance's feed until every task finished.
fn subscribe(
    envs: &[Env],
    ledger: SharedLedger,
    streams: HashSet<String>,
) -> tokio::task::JoinHandle<Seen> {
    let me = envs.len() - 1;
    let mut feed = envs[me].core.bus.feed(Filter::All);
    let stores: Vec<_> = envs.iter().map(|e| e.store.clone()).collect();
    // Not on a tracker: the bench awaits it itself before the level ends.
    tokio::spawn(async move {
        let mut s = Seen::default();
        while s.finished < streams.len() {
            let ev = match feed.next().await {
                Ok(Some(FeedItem::Event(ev))) => ev,
                Ok(Some(FeedItem::Lagged { missed })) => {
                    s.lagged += missed;
                    continue;
                }
                Ok(None) | Err(_) => break,
            };
            // Pool and heartbeat streams are not the runners'.
            if !streams.contains(&ev.stream) {
                continue;
            }
            let (now, wall) = (Instant::now(), chrono::Utc::now());
            s.events += 1;
            let ran_on = ev.stream.parse::<TaskId>().ok().and_then(|id| {
                lock(&ledger)
                    .runs
                    .get(&id)
                    .and_then(|r| r.first().map(|x| x.0))
            });
            let committed = ran_on.and_then(|k| stores[k].committed_at(&ev.stream, ev.seq));
            if let Some(at) = committed {
                let lag = now.saturating_duration_since(at);
                s.from_commit.push(lag);
                if ran_on != Some(me) {
                    s.relayed.push(lag);
                }
            }
            if ran_on.is_some_and(|k| k != me) {
                s.relayed_events += 1;
            }
            s.from_created.push(
                wall.signed_duration_since(ev.created_at)
                    .to_std()
                    .unwrap_or_default(),
            );
            if ev.event.is_finished() {
                s.finished += 1;
                // When the task ended (its commit), not when the relay delivered it: the
                // relay's delay is reported as lag, not charged to throughput.
                let ended = committed.unwrap_or(now);
                s.last_finish = Some(s.last_finish.map_or(ended, |t| t.max(ended)));
            }
        }
        s
    })
}

/// The cores of one level and their phones' probes.
#[derive(Default)]
struct Fleet {
    envs: Vec<Env>,
    phones: HashMap<String, Arc<Probe>>,
}

impl Fleet {
    async fn shutdown(&self) {
        for env in &self.envs {
            env.core.shutdown(SHUTDOWN_GRACE).await;
        }
    }
}

/// Builds `instances` cores on the scratch database, with `level.phones` phones split
/// over them (the first takes the remainder of an odd split).
async fn start_instances(
    opts: &RunnerBenchOptions,
    level: ConcurrencyLevel,
    instances: usize,
    db: &str,
    dir: &std::path::Path,
    ledger: &SharedLedger,
    fleet: &mut Fleet,
) -> Result<(), RunnerBenchError> {
    let all = tasks();
    let mut next_phone = 0;
    for k in 0..instances {
        let phones = level.phones / instances + usize::from(k < level.phones % instances);
        let name = instance_name(k);
        let config = pg_config(&dir.join(&name), opts, db, &name)?;
        let env = env_on(config, phones, Some(factory(k, ledger.clone()))).await?;
        fleet.envs.push(env);
        let env = &fleet.envs[k];
        for i in 0..phones {
            let serial = format!("{name}-{i:04}");
            let phone = Arc::new(SimDevice::new(sim_config(
                serial.clone(),
                opts.concurrency_screen,
            ))?);
            phone.reset_to(&all[next_phone % all.len()]);
            lock(ledger).phones.insert(serial.clone(), next_phone);
            next_phone += 1;
            fleet.phones.insert(serial, add_probed(env, phone).await?);
        }
    }
    Ok(())
}

/// Queues the level's tasks through `env` (the first instance) only; none names a phone.
async fn submit(
    level: ConcurrencyLevel,
    env: &Env,
    ledger: &SharedLedger,
) -> Result<Vec<TaskId>, RunnerBenchError> {
    let all = tasks();
    let mut ids = Vec::with_capacity(level.phones);
    for i in 0..level.phones {
        let len = level.steps_per_task.saturating_sub(1);
        let t = &all[i % all.len()];
        let task = env
            .store
            .create_task(new_task(t.instruction, len + 1, None)?)
            .await?;
        lock(ledger)
            .plans
            .insert(task.id, (len, Arc::new(Probe::default())));
        ids.push(task.id);
    }
    Ok(ids)
}

/// One level: `level.phones` phones split over `instances` cores on the scratch database.
async fn level_run(
    opts: &RunnerBenchOptions,
    level: ConcurrencyLevel,
    instances: usize,
    db: &str,
    dir: &std::path::Path,
) -> Result<ClusterLevelReport, RunnerBenchError> {
    let ledger: SharedLedger = Arc::default();
    let mut fleet = Fleet::default();
    let ids = match start_instances(opts, level, instances, db, dir, &ledger, &mut fleet).await {
        Ok(()) => submit(level, &fleet.envs[0], &ledger).await,
        Err(e) => Err(e),
    };
    let ids = match ids {
        Ok(ids) => ids,
        Err(e) => {
            // Whatever started is stopped: no core's background work outlives the level.
            fleet.shutdown().await;
            return Err(e);
        }
    };
    let envs = &fleet.envs;
    let task_probes: HashMap<TaskId, Arc<Probe>> = lock(&ledger)
        .plans
        .iter()
        .map(|(id, (_, p))| (*id, p.clone()))
        .collect();
    for env in envs {
        env.store.take_stats();
        env.store.track_events.store(true, Ordering::Relaxed);
    }
    let streams = ids.iter().map(|id| id.to_string()).collect();
    let subscriber = subscribe(envs, ledger.clone(), streams);
    let t0 = Instant::now();
    for env in envs {
        env.core.start_scheduler();
    }
    let seen = tokio::time::timeout(opts.level_timeout, subscriber)
        .await
        .ok()
        .and_then(Result::ok);
    let elapsed = seen
        .as_ref()
        .and_then(|s| s.last_finish)
        .map_or_else(|| t0.elapsed(), |t| t - t0);
    for env in envs {
        env.core.stop_taking_work();
        env.store.track_events.store(false, Ordering::Relaxed);
    }
    let result = tally(
        opts,
        level,
        &envs[0],
        &ids,
        &ledger,
        &Probes {
            tasks: task_probes,
            phones: fleet.phones.clone(),
        },
        instances,
    )
    .await;
    let checked = match &result {
        Ok(_) => exactly_once(db, &ids, &ledger).await,
        Err(_) => Ok(()),
    };
    fleet.shutdown().await;
    checked?;
    let (mut level_report, tasks_by_instance) = result?;
    let seen = seen.unwrap_or_default();
    level_report.elapsed_s = elapsed.as_secs_f64();
    level_report.steps_per_s = level_report.steps as f64 / elapsed.as_secs_f64().max(1e-9);
    level_report.events = seen.events;
    level_report.lag_from_commit = Percentiles::of(seen.from_commit);
    level_report.lag_from_created_at = Percentiles::of(seen.from_created);
    level_report.lagged_messages = seen.lagged;
    Ok(ClusterLevelReport {
        instances,
        level: level_report,
        tasks_by_instance,
        relayed_events: seen.relayed_events,
        relay_lag_from_commit: Percentiles::of(seen.relayed),
    })
}

/// Each task's probe (its agent's timings) and each phone's (its device calls).
struct Probes {
    tasks: HashMap<TaskId, Arc<Probe>>,
    phones: HashMap<String, Arc<Probe>>,
}

/// Outcomes, steps and overhead under load over the level's tasks; tasks per instance.
async fn tally(
    opts: &RunnerBenchOptions,
    level: ConcurrencyLevel,
    env: &Env,
    ids: &[TaskId],
    ledger: &SharedLedger,
    probes: &Probes,
    instances: usize,
) -> Result<(LevelReport, Vec<(String, usize)>), RunnerBenchError> {
    let (mut steps, mut succeeded, mut unfinished) = (0, 0, 0);
    let (mut overhead, mut overhead_excluded, mut failures) = (Vec::new(), 0, Vec::new());
    let mut per_instance = vec![0usize; instances];
    for id in ids {
        let t = env.store.inner.get_task(*id).await?;
        steps += t.steps as usize;
        match t.status {
            TaskStatus::Succeeded => succeeded += 1,
            s if !s.is_terminal() => unfinished += 1,
            s if failures.len() < 5 => {
                failures.push(format!("{s}: {}", t.reason.as_deref().unwrap_or("")))
            }
            _ => {}
        }
        let run = lock(ledger).runs.get(id).and_then(|r| r.first().cloned());
        let Some((k, phone, built)) = run else {
            overhead_excluded += t.steps as usize;
            continue;
        };
        per_instance[k] += 1;
        let log = task_log(&probes.tasks[id], probes.phones.get(&phone), built);
        let recorded = env.store.inner.steps(*id).await?;
        let segs = segment(&log, settle_poll(&opts.runner));
        overhead_excluded += under_load(segs, &recorded, &mut overhead);
    }
    let report = LevelReport {
        phones: level.phones,
        steps_per_task: level.steps_per_task,
        screen: opts.concurrency_screen,
        tasks: level.phones,
        succeeded,
        unfinished,
        steps,
        elapsed_s: 0.0,
        steps_per_s: 0.0,
        events: 0,
        lag_from_commit: Percentiles::default(),
        lag_from_created_at: Percentiles::default(),
        lagged_messages: 0,
        overhead_under_load: Percentiles::of(overhead),
        overhead_excluded,
        failures,
        // Not split here: two instances share the process, and this table is per level.
        cpu: Default::default(),
        // The cluster bench has no WebSocket subscribers, and its instances share one RSS.
        ws: Default::default(),
        rss_per_task_mib: 0.0,
    };
    let by = per_instance
        .into_iter()
        .enumerate()
        .map(|(k, n)| (instance_name(k), n))
        .collect();
    Ok((report, by))
}

/// A task's probe log: its agent's decisions and end, and its phone's device calls from
/// the agent's build to its drop (the phone ran nothing else meanwhile).
fn task_log(task: &Probe, phone: Option<&Arc<Probe>>, built: Instant) -> ProbeLog {
    let t = task.log();
    let end = t.done.unwrap_or_else(Instant::now);
    let device = phone.map_or_else(Vec::new, |p| {
        p.log()
            .device
            .iter()
            .filter(|(s, _, _)| *s >= built && *s <= end)
            .copied()
            .collect()
    });
    ProbeLog {
        device,
        agent: t.agent.clone(),
        done: t.done,
    }
}

/// What the database says of one task: where it ran, and its events.
struct TaskRow {
    id: String,
    instance: Option<String>,
    device: Option<String>,
    /// `task.started` events in its stream.
    started: i64,
    /// Its stream's `seq` is 1..n.
    gapless: bool,
}

/// Fails the bench unless every task was claimed once: one agent build, at most one
/// `task.started` event, gapless `seq`, and `tasks.instance` naming the builder.
async fn exactly_once(
    db: &str,
    ids: &[TaskId],
    ledger: &SharedLedger,
) -> Result<(), RunnerBenchError> {
    let mut c = connect(db).await?;
    let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    let rows = sqlx::query(
        "SELECT t.id, t.instance, t.assigned_device, \
           (SELECT count(*) FROM events e WHERE e.stream = t.id AND e.type = 'task.started') AS started, \
           (SELECT count(*) = coalesce(max(e.seq), 0) FROM events e WHERE e.stream = t.id) AS gapless \
         FROM tasks t WHERE t.id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(&mut c)
    .await;
    let _ = c.close().await;
    let rows: Vec<TaskRow> = rows
        .map_err(|e| RunnerBenchError::Store(e.into()))?
        .into_iter()
        .map(|r| TaskRow {
            id: r.get("id"),
            instance: r.get("instance"),
            device: r.get("assigned_device"),
            started: r.get("started"),
            gapless: r.get("gapless"),
        })
        .collect();
    let mut problems = run_problems(&lock(ledger).runs, &rows);
    if rows.len() != ids.len() {
        problems.push(format!(
            "{} of {} tasks in the database",
            rows.len(),
            ids.len()
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    let n = problems.len();
    problems.truncate(5);
    Err(RunnerBenchError::NotExactlyOnce(format!(
        "{n} problem(s): {}",
        problems.join("; ")
    )))
}

/// Every way the builds (`runs`) and the database (`rows`) disagree with "each task ran
/// once, where its agent was built".
fn run_problems(
    runs: &HashMap<TaskId, Vec<(usize, String, Instant)>>,
    rows: &[TaskRow],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (id, r) in runs {
        if r.len() > 1 {
            let who: Vec<String> = r.iter().map(|x| instance_name(x.0)).collect();
            problems.push(format!(
                "task {id}: agent built {} times ({who:?})",
                r.len()
            ));
        }
    }
    let ran_by: HashMap<String, (usize, String)> = runs
        .iter()
        .filter_map(|(id, r)| r.first().map(|x| (id.to_string(), (x.0, x.1.clone()))))
        .collect();
    for r in rows {
        let id = &r.id;
        let expected = ran_by.get(id);
        if r.started > 1 || (r.started == 1) != expected.is_some() {
            problems.push(format!(
                "task {id}: {} task.started events, agent built {}",
                r.started,
                if expected.is_some() { "once" } else { "never" }
            ));
        }
        if !r.gapless {
            problems.push(format!("task {id}: its event seq has a gap or a repeat"));
        }
        if let Some((k, phone)) = expected
            && (r.instance.as_deref() != Some(&instance_name(*k))
                || r.device.as_ref() != Some(phone))
        {
            problems.push(format!(
                "task {id}: the database says {:?}/{:?}, the agent was built by {}/{phone}",
                r.instance,
                r.device,
                instance_name(*k)
            ));
        }
    }
    problems
}

/// The PostgreSQL levels as a table, one row per level and instance count.
pub(super) fn format_levels(levels: &[ClusterLevelReport]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(first) = levels.first() else {
        return s;
    };
    let _ = writeln!(
        s,
        "\nConcurrency on PostgreSQL: N phones x the replay agent, split over 1 and 2 instances (full cores, one process), phones {}x{}",
        first.level.screen.width, first.level.screen.height
    );
    let _ = writeln!(
        s,
        "  {:>5} {:>4} {:>6} {:>6} {:>8} {:>8} {:>7} {:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>7} | {:>8} {:>8} | tasks run by",
        "N",
        "inst",
        "steps",
        "ok",
        "elapsed",
        "steps/s",
        "events",
        "lagged",
        "lag p50",
        "lag p99",
        "relay p50",
        "relay p99",
        "unfin.",
        "ovh p50",
        "ovh p99"
    );
    for c in levels {
        let l = &c.level;
        let relay = |v: f64| {
            if c.relayed_events == 0 {
                format!("{:>9}", "-")
            } else {
                format!("{v:>7.2}ms")
            }
        };
        let _ = writeln!(
            s,
            "  {:>5} {:>4} {:>6} {:>6} {:>7.2}s {:>8.1} {:>7} {:>7} | {:>7.2}ms {:>7.2}ms | {} {} | {:>7} | {:>6.2}ms {:>6.2}ms | {}",
            l.phones,
            c.instances,
            l.steps,
            l.succeeded,
            l.elapsed_s,
            l.steps_per_s,
            l.events,
            l.lagged_messages,
            l.lag_from_commit.p50_ms,
            l.lag_from_commit.p99_ms,
            relay(c.relay_lag_from_commit.p50_ms),
            relay(c.relay_lag_from_commit.p99_ms),
            l.unfinished,
            l.overhead_under_load.p50_ms,
            l.overhead_under_load.p99_ms,
            by_instance(&c.tasks_by_instance)
        );
    }
    let _ = writeln!(
        s,
        "  Tasks are submitted to bench-a only and name no phone; every instance's scheduler claims. Each task was checked to run exactly once."
    );
    let _ = writeln!(
        s,
        "  lag: insert returned on the running instance -> the subscriber on the last instance received; relay: only tasks that ran on another instance (LISTEN/NOTIFY + re-read)."
    );
    let _ = writeln!(
        s,
        "  ok = tasks succeeded of N; elapsed: schedulers' start to the last task's end as committed (not as relayed); ovh = server overhead per step under load (includes waiting for a worker thread)."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_url_names_only_another_database() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/postgres?sslmode=disable", "x"),
            "postgres://u:p@h:5432/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
        assert_eq!(with_database("postgresql://h/db", "x"), "postgresql://h/x");
    }

    #[test]
    fn store_urls_choose_the_backend_and_refuse_the_rest() {
        assert_eq!(
            BenchStore::from_url("postgres://u:p@h/db").unwrap(),
            (BenchStore::Postgres("postgres://u:p@h/db".into()), None)
        );
        let (store, dir) = BenchStore::from_url("sqlite://./scratch").unwrap();
        assert_eq!(store, BenchStore::Sqlite);
        assert!(dir.unwrap().starts_with("./scratch"));
        let e = BenchStore::from_url("mysql://u:hunter22@h/db").unwrap_err();
        let text = format!("{e}. {}", e.hint());
        assert!(
            text.contains("postgres://") && text.contains("--store") && !text.contains("hunter22"),
            "{text}"
        );
    }

    #[test]
    fn a_task_run_twice_or_recorded_elsewhere_is_a_problem() {
        let (a, b) = (TaskId::new(), TaskId::new());
        let now = Instant::now();
        let row = |id: TaskId, instance: &str, started| TaskRow {
            id: id.to_string(),
            instance: Some(instance.into()),
            device: Some("bench-a-0000".into()),
            started,
            gapless: true,
        };
        let once: HashMap<_, _> = [(a, vec![(0, "bench-a-0000".to_string(), now)])].into();
        assert!(run_problems(&once, &[row(a, "bench-a", 1)]).is_empty());
        // Built by both instances.
        let twice: HashMap<_, _> = [(
            a,
            vec![
                (0, "bench-a-0000".to_string(), now),
                (1, "bench-b-0000".to_string(), now),
            ],
        )]
        .into();
        assert_eq!(run_problems(&twice, &[row(a, "bench-a", 1)]).len(), 1);
        // Started twice in the database; recorded under the other instance; never built
        // but started; a gap in the events.
        assert_eq!(run_problems(&once, &[row(a, "bench-a", 2)]).len(), 1);
        assert_eq!(run_problems(&once, &[row(a, "bench-b", 1)]).len(), 1);
        assert_eq!(run_problems(&once, &[row(b, "bench-a", 1)]).len(), 1);
        let mut gap = row(a, "bench-a", 1);
        gap.gapless = false;
        assert_eq!(run_problems(&once, &[gap]).len(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_server_is_refused_with_a_hint() {
        // A port nobody listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("postgres://u:hunter22@127.0.0.1:{port}/db");
        let e = match ScratchDb::create(&url).await {
            Err(e) => e,
            Ok(_) => panic!("nothing listens on port {port}"),
        };
        let text = format!("{e}. {}", e.hint());
        assert!(
            text.contains("reachable") && !text.contains("hunter22"),
            "{text}"
        );
    }
}
