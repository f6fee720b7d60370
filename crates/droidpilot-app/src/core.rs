//! The core: everything a task needs to run, built once from the configuration, and the
//! one place its background work is started and stopped.
//!
//! `Core::build` opens the store and builds the event bus, device pool, artifact store,
//! prompts, running-task registry, runner and scheduler, starts the device-event
//! forwarder (pool events onto the `devices` stream) and the webhook deliverer. The
//! server wraps it in HTTP-only state; `droidpilot run` drives its runner directly.
//! Every task the core spawns is on its `TaskTracker`, and so is the pool's health loop
//! and reconnect rounds and every webhook POST: `Core::shutdown` stops the scheduler
//! (runners stop after their step), cancels the rest (the health loop, reconnects, the
//! device-event forwarder, the webhook deliverer; a POST already in flight finishes on
//! the webhook retry policy), waits for all of them, and only then closes the store
//! (WAL checkpoint).
//!
//! The MCP servers of `[[mcp.servers]]` are connected here too (`mcp::client`): each
//! server's supervisor runs on the tracker, its tools join the runner's `McpRegistry`,
//! and each task's agent is offered the registry's tools as they stand when it starts.
//! Start-up waits for them at most `[mcp] startup_wait_secs` and never fails because of
//! one; `shutdown` closes their sessions (children killed).
//!
//! On a store several instances share (PostgreSQL), `build` also joins the cluster
//! (`cluster::Membership`: a name no live instance holds, device ids no live instance
//! owns) and starts the cluster duty (heartbeats, farm device rows, the reaper of dead
//! instances) on the tracker; `shutdown` requeues what it leaves resumable and removes
//! this instance's row before the store closes.
//! On a PostgreSQL store the relay (`run::relay`) runs on the tracker too: other
//! instances' events onto this bus, their answers and cancels to the runners here.
//!
//! A layer of its own, between `run` and `server`: it reads `config`, which `run` does not.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::Agent;
use crate::agent::secrets::SecretVault;
use crate::agent::spec::{AgentSpec, build_recording_agent};
use crate::cluster::Membership;
use crate::config::Config;
use crate::device::pool::{DevicePool, PoolError, PoolTasks};
use crate::domain::{Task, TaskId};
use crate::mcp::client::McpClients;
use crate::run::artifacts::ArtifactStore;
use crate::run::events::{DEVICES_STREAM, EventBus};
use crate::run::hooks::CustomActionHook;
use crate::run::interaction::Prompts;
use crate::run::mcp::McpRegistry;
use crate::run::queue::Queue;
use crate::run::runner::Runner;
use crate::run::scheduler::{AgentFactory, RunningTasks, Scheduler};
use crate::run::webhooks::{WebhookSender, spawn_deliverer};
use crate::store::{Store, StoreError};

/// Why the core could not be built. Each says what failed.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    // `cause`, not `source`: the message already holds it, and an error chain printed
    // with `{:#}` would repeat it.
    #[error("cannot open the database at {path}: {cause}")]
    Store { path: String, cause: StoreError },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot set up the device pool: {0}")]
    Devices(PoolError),
    #[error("cannot join the cluster: {0}")]
    Cluster(String),
}

/// Wraps the opened store before anything else sees it (a benchmark's timing decorator).
pub type StoreLayer = Box<dyn FnOnce(Arc<dyn Store>) -> Arc<dyn Store> + Send>;

/// What a caller may put in place of the configured parts. The server and `droidpilot
/// run` take the defaults; a benchmark times the store and brings its own agents, and
/// still gets the same wiring as the server.
#[derive(Default)]
pub struct CoreParts {
    /// Applied to the store `Core::build` opened.
    pub store_layer: Option<StoreLayer>,
    /// Builds each task's agent instead of the configured `agent` defaults.
    pub agents: Option<AgentFactory>,
}

/// Store, bus, pool, artifacts, prompts, runner and scheduler, built once.
pub struct Core {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub bus: EventBus,
    pub prompts: Arc<Prompts>,
    pub pool: DevicePool,
    pub artifacts: ArtifactStore,
    pub runner: Arc<Runner>,
    /// Builds a task's agent: the scheduler's factory, which `agent_for` uses for callers
    /// that run a task themselves (`droidpilot run`).
    pub agents: AgentFactory,
    /// Submits, cancels and ends tasks; it wakes the scheduler when that may start one.
    pub queue: Queue,
    /// Running tasks, for cancels.
    pub running: Arc<RunningTasks>,
    /// The `[[mcp.servers]]` connections (their tools are in `runner.mcp`).
    pub mcp: McpClients,
    /// This instance in a cluster (a PostgreSQL store); None on one host (SQLite).
    pub membership: Option<Arc<Membership>>,
    /// Secrets of accepted tasks, held in memory until their agent is built.
    pub secrets: Arc<SecretVault>,
    /// What the installed apps can do (`GET /v1/devices/{id}/apps`, the agents' prompts).
    pub apps: crate::apps::AppKnowledge,
    /// The flow runs this process drives (`service::flow_runs`), for cancels.
    pub flow_runs: Arc<crate::service::flow_runs::ActiveRuns>,
    /// The operator's `[actions]` in force (replaced by `serve`'s reload on SIGHUP).
    pub actions: Arc<crate::run::extend::LiveActions>,
    /// Taken by `start_scheduler`.
    scheduler: Mutex<Option<Scheduler>>,
    /// The running scheduler (which joins its runners before it returns).
    scheduler_task: Mutex<Option<JoinHandle<()>>>,
    /// Tells the scheduler to stop taking work and its runners to stop after their step.
    stopping: watch::Sender<bool>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl Core {
    /// Opens the store and builds everything; starts the device-event forwarder and the
    /// webhook deliverer. The scheduler starts with `start_scheduler`.
    pub async fn build(config: &Config) -> Result<Core, CoreError> {
        Self::build_with(config, CoreParts::default()).await
    }

    /// `build`, with some parts supplied by the caller.
    pub async fn build_with(config: &Config, parts: CoreParts) -> Result<Core, CoreError> {
        let loc = config
            .store_location()
            .map_err(|e| CoreError::Config(e.to_string()))?;
        let mut store = crate::store::open(&loc)
            .await
            .map_err(|cause| CoreError::Store {
                path: loc.to_string(),
                cause,
            })?;
        if let Some(layer) = parts.store_layer {
            store = layer(store);
        }
        let bus = EventBus::new(store.clone(), 4096);
        let prompts = Arc::new(Prompts::default());
        let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
        let tasks = PoolTasks {
            tracker: tracker.clone(),
            cancel: cancel.clone(),
        };
        let pool = DevicePool::with_tasks(config.devices.pool_options(), tasks)
            .await
            .map_err(CoreError::Devices)?;
        let webhooks = WebhookSender::new(config.webhooks.clone())
            .map_err(|e| CoreError::Config(e.to_string()))?;
        let artifacts = ArtifactStore::new(&config.storage.data_dir, store.clone());
        let registry = McpRegistry::default();
        let mcp = McpClients::start(&config.mcp, &registry, &tracker, &cancel)
            .map_err(CoreError::Config)?;
        // The runner (its events, steps and screenshots' index) waits out a database
        // outage at its next store call instead of failing the task; the HTTP API (on
        // `bus`, `artifacts`) fails fast.
        let patient: Arc<dyn Store> = Arc::new(crate::store::PatientStore::new(
            store.clone(),
            crate::store::PatientStore::default_policy(),
        ));
        let apps = crate::apps::AppKnowledge::new(store.clone(), config.agent.app_describer());
        let mut runner = Runner::new(
            bus.with_store(patient.clone()),
            prompts.clone(),
            ArtifactStore::new(&config.storage.data_dir, patient),
            config.runner.clone(),
        )
        .with_pool(pool.clone())
        .with_apps(apps.clone())
        .with_transform(Arc::new(config.devices.transform))
        .with_record_segments(config.devices.screenrecord_segment_secs)
        // The navigator offers `scroll_to_find`; every runner can do it.
        .with_hook(Arc::new(CustomActionHook {
            name: crate::run::scroll_find::NAME.into(),
            handler: Arc::new(crate::run::scroll_find::ScrollToFindAction {
                transform: Arc::new(config.devices.transform),
            }),
        }))
        // A Maestro flow's waits (`agent::flow`).
        .with_hook(Arc::new(CustomActionHook {
            name: crate::run::flow_check::NAME.into(),
            handler: Arc::new(crate::run::flow_check::FlowCheckAction),
        }))
        .with_hook(Arc::new(CustomActionHook {
            name: crate::run::app_control::STOP.into(),
            handler: Arc::new(crate::run::app_control::AppControl { clear: false }),
        }))
        .with_hook(Arc::new(CustomActionHook {
            name: crate::run::app_control::CLEAR.into(),
            handler: Arc::new(crate::run::app_control::AppControl { clear: true }),
        }))
        // The `split` agent's first step (`agent::split`).
        .with_hook(Arc::new(CustomActionHook {
            name: crate::run::split_screen::NAME.into(),
            handler: Arc::new(crate::run::split_screen::SplitScreenAction),
        }));
        let actions = Arc::new(crate::run::extend::LiveActions::new(config.actions.clone()));
        runner.actions = actions.clone();
        runner.mcp = registry.clone();
        runner.ocr = Arc::new(crate::ocr::Ocr::new(config.ocr.clone()));
        mcp.settled(Duration::from_secs(config.mcp.startup_wait_secs))
            .await;
        let runner = Arc::new(runner);
        let membership = join_cluster(config, &store, &pool).await?;
        let wake = Arc::new(Notify::new());
        let running = Arc::new(RunningTasks::default());
        let secrets = Arc::new(SecretVault::default());
        let agents = parts
            .agents
            .unwrap_or_else(|| agent_factory(config, registry, secrets.clone(), actions.clone()));
        let scheduler = Scheduler {
            runner: runner.clone(),
            pool: pool.clone(),
            agents: agents.clone(),
            cfg: config.scheduler.clone(),
            wake: wake.clone(),
            running: running.clone(),
            instance: membership.as_ref().map(|m| m.scheduler_instance()),
            secrets: secrets.clone(),
        };
        let queue = Queue::new(bus.clone(), running.clone(), wake.clone());
        let core = Core {
            config: Arc::new(config.clone()),
            store,
            bus,
            prompts,
            pool,
            artifacts,
            runner,
            agents,
            queue,
            running,
            mcp,
            membership,
            secrets,
            apps,
            flow_runs: Arc::default(),
            actions,
            scheduler: Mutex::new(Some(scheduler)),
            scheduler_task: Mutex::new(None),
            stopping: watch::channel(false).0,
            cancel,
            tracker,
        };
        core.forward_device_events();
        if let Some(m) = &core.membership {
            let duty = crate::cluster::heartbeat::Duty {
                membership: m.clone(),
                store: core.store.clone(),
                bus: core.bus.clone(),
                pool: core.pool.clone(),
            };
            crate::cluster::heartbeat::spawn(duty, &core.tracker, core.cancel.clone());
        }
        core.start_relay();
        let default_hook = Some(config.webhooks.url.clone()).filter(|u| !u.is_empty());
        spawn_deliverer(
            core.bus.clone(),
            webhooks,
            default_hook,
            &core.tracker,
            core.cancel.clone(),
        );
        Ok(core)
    }

    /// At start-up: deal with tasks a previous process left running (interrupted, or
    /// requeued when `scheduler.resume_interrupted`).
    pub async fn recover(&self) -> Result<(), StoreError> {
        // Taken out for the await (a std mutex guard is not held across it), then put back.
        let scheduler = self.scheduler.lock().expect("scheduler lock").take();
        let Some(scheduler) = scheduler else {
            return Ok(());
        };
        let result = scheduler.recover().await;
        *self.scheduler.lock().expect("scheduler lock") = Some(scheduler);
        result?;
        // Flow runs are driven by the process that accepted them; on a shared database
        // another instance may still be driving its own.
        if self.membership.is_none() {
            crate::service::flow_runs::recover(self).await?;
        }
        Ok(())
    }

    /// Starts the scheduler (queue → leased device → runner) on the tracker. Once.
    pub fn start_scheduler(&self) {
        let scheduler = self.scheduler.lock().expect("scheduler lock").take();
        if let Some(s) = scheduler {
            let handle = self.tracker.spawn(s.run(self.stopping.subscribe()));
            *self.scheduler_task.lock().expect("scheduler lock") = Some(handle);
        }
    }

    /// Starts the retention sweeps (`run::retention`) on the tracker, when the
    /// configuration expires anything. The server calls it; CLI runs do not.
    pub fn start_retention(&self) {
        let r = crate::run::retention::Retention::new(
            &self.config.storage,
            self.store.clone(),
            self.artifacts.clone(),
        );
        if let Some(r) = r {
            r.spawn(&self.tracker, self.cancel.clone());
        }
    }

    /// The agent for `task`, built by the factory the scheduler uses (the task's spec over
    /// the configured defaults, the MCP servers' tools, the secrets the task was accepted
    /// with): for a caller that runs a task itself, such as `droidpilot run`. A requeued
    /// task's agent is then resumed by the scheduler; a caller that seeds saved steps
    /// decides itself (a resumed trajectory's new actions come after them).
    pub fn agent_for(&self, task: &Task) -> Result<Box<dyn Agent>, String> {
        (self.agents)(task)
    }

    /// Starts a task this process runs outside the scheduler (an MCP session's task, a
    /// CLI run) on `device`. On a shared database the task records this instance, so if
    /// the instance dies, the others' reaper ends it. False when it was no longer queued.
    pub async fn start_here(&self, id: TaskId, device: &str) -> Result<bool, StoreError> {
        match (&self.membership, self.store.cluster()) {
            (Some(m), Some(c)) => c.claim_task(id, device, &m.me.name).await,
            _ => self.store.start_task(id, device).await,
        }
    }

    /// Tracks a task of the caller's (a CLI run's runner), so shutdown waits for it too.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }

    /// Cancelled when the core shuts down: a tracked loop of the caller's (a front end's
    /// watcher) ends on it, so shutdown does not wait for it.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// How many tracked tasks are still running (zero once `shutdown` returns).
    pub fn tracked(&self) -> usize {
        self.tracker.len()
    }

    /// The scheduler stops taking work and tells its runners to stop after their current
    /// step. The server calls this as soon as a shutdown signal arrives, while in-flight
    /// requests finish; `shutdown` calls it too.
    pub fn stop_taking_work(&self) {
        let _ = self.stopping.send(true);
    }

    /// Stops everything the core started, then closes the store. The scheduler stops
    /// taking work and its runners stop after their current step (the task ends
    /// `interrupted`, or stays resumable when `scheduler.resume_interrupted`); `grace`
    /// bounds that wait. Then the forwarder and the deliverer are cancelled, every
    /// tracked task is awaited, and the store is checkpointed and closed. Returns only
    /// when no tracked task is left.
    pub async fn shutdown(&self, grace: Duration) {
        self.stop_taking_work();
        self.tracker.close();
        let scheduler = self.scheduler_task.lock().expect("scheduler lock").take();
        if let Some(mut handle) = scheduler
            && tokio::time::timeout(grace, &mut handle).await.is_err()
        {
            tracing::warn!("runners did not stop within the grace period; aborting them");
            handle.abort();
        }
        self.cancel.cancel();
        self.tracker.wait().await;
        self.leave_cluster().await;
        self.store.close().await;
    }

    /// A graceful stop in a cluster: tasks left resumable (`resume_interrupted`) go back
    /// to the queue at once, for any instance to resume; then this instance's row goes and
    /// its phones show offline, so nobody waits `dead_after_secs` to notice.
    async fn leave_cluster(&self) {
        let (Some(m), Some(c)) = (&self.membership, self.store.cluster()) else {
            return;
        };
        if self.config.scheduler.resume_interrupted {
            let reason = "the instance that ran the task stopped; requeued to go on after its last committed step";
            let requeued = c
                .recover_instance(&m.me.name, m.cfg.dead_after(), true, reason)
                .await;
            let announced = match requeued {
                Ok(ids) => {
                    crate::run::scheduler::announce_recovered(
                        &self.bus, &ids, true, reason, "restart",
                    )
                    .await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = announced {
                tracing::warn!(error = %e, "could not requeue this instance's tasks at shutdown");
            }
        }
        if let Err(e) = c.leave(&m.me).await {
            tracing::warn!(error = %e, "could not remove this instance's row; others will find it dead after cluster.dead_after_secs");
        }
    }

    /// On a database other instances share: their events onto this bus, their answers
    /// and cancels to the runners here (`run::relay`).
    fn start_relay(&self) {
        if let Some(notifier) = self.store.notifier() {
            let relay = crate::run::relay::Relay {
                instance: self.config.cluster.instance_name(),
                notifier,
                bus: self.bus.clone(),
                prompts: self.prompts.clone(),
                running: self.running.clone(),
            };
            relay.spawn(&self.tracker, self.cancel.clone());
        }
    }

    /// Pool events travel like task events: persisted on the `devices` stream, then live.
    fn forward_device_events(&self) {
        let mut device_events = self.pool.subscribe();
        let bus = self.bus.clone();
        let cancel = self.cancel.clone();
        self.tracker.spawn(async move {
            loop {
                let ev = tokio::select! {
                    () = cancel.cancelled() => break,
                    ev = device_events.recv() => ev,
                };
                match ev {
                    Ok(ev) => {
                        if let Err(e) = bus.publish(DEVICES_STREAM, ev.into()).await {
                            tracing::warn!(error = %e, "could not record a device event");
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "device events dropped")
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
}

/// On a store several instances share: joins under this instance's name and refuses to
/// start with a device id a live other instance already owns. None on one host.
async fn join_cluster(
    config: &Config,
    store: &Arc<dyn Store>,
    pool: &DevicePool,
) -> Result<Option<Arc<Membership>>, CoreError> {
    let Some(c) = store.cluster() else {
        return Ok(None);
    };
    let m = Membership::join(&config.cluster, c)
        .await
        .map_err(CoreError::Cluster)?;
    let farm = c
        .farm_devices(m.cfg.dead_after())
        .await
        .map_err(|e| CoreError::Cluster(e.to_string()))?;
    if let Err(e) = m.check_device_ids(&pool.list(), &farm) {
        let _ = c.leave(&m.me).await;
        return Err(CoreError::Cluster(e));
    }
    tracing::info!(instance = %m.me.name, "joined the cluster");
    Ok(Some(Arc::new(m)))
}

/// Builds each task's agent from its `agent` spec over the configured defaults, offering
/// the MCP tools the registry has when the task starts (then any `[agent] mcp_tools`
/// described in the configuration under a name the registry does not offer). Secrets the
/// task was accepted with come back from `secrets` (a task whose secrets this process
/// does not hold fails, naming the field). The stored `agent` is the typed spec that
/// `service::tasks` checked at submission, read back by serde; `build_recording_agent`
/// checks its cross-field rules again (the configuration may have changed since).
fn agent_factory(
    config: &Config,
    mcp: McpRegistry,
    secrets: Arc<SecretVault>,
    actions: Arc<crate::run::extend::LiveActions>,
) -> AgentFactory {
    let configured = config.agent.clone();
    Arc::new(move |task: &Task| {
        let mut defaults = configured.clone();
        defaults.custom_actions = actions.current().custom.clone();
        let mut tools = mcp.tools();
        let extra = configured.mcp_tools.iter();
        let extra: Vec<_> = extra
            .filter(|t| tools.iter().all(|o| o.name != t.name))
            .cloned()
            .collect();
        tools.extend(extra);
        defaults.mcp_tools = tools;
        let spec = match &task.spec.agent {
            Some(v) => {
                let v = secrets
                    .restore(v)
                    .map_err(|e| format!("{e}. {}", e.hint()))?;
                AgentSpec::from_json(&v).map_err(|e| e.to_string())?
            }
            None => AgentSpec::default(),
        };
        let record = task.spec.record.then_some(task.spec.instruction.as_str());
        build_recording_agent(&spec, &defaults, record).map_err(|e| format!("{e}. {}", e.hint()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    #[tokio::test]
    async fn shutdown_returns_with_no_tracked_task_left_and_the_store_closed() {
        let dir = tempfile::tempdir().unwrap();
        let overrides = Overrides {
            data_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let config = Config::load_with_env(dir.path(), &overrides, Vec::new()).unwrap();
        let core = Core::build(&config).await.unwrap();
        core.recover().await.unwrap();
        core.start_scheduler();
        // The device-event forwarder, the webhook deliverer, the pool's health loop and
        // the scheduler.
        assert_eq!(core.tracked(), 4);
        core.store.ping().await.unwrap();
        core.shutdown(Duration::from_secs(5)).await;
        assert_eq!(core.tracked(), 0);
        assert!(core.store.ping().await.is_err(), "the store is closed last");
    }

    /// A receiver that holds each POST until released; says when it got one and when it
    /// answered.
    #[derive(Clone, Default)]
    struct SlowHook {
        got: Arc<Notify>,
        release: Arc<Notify>,
        answered: Arc<std::sync::atomic::AtomicBool>,
    }

    async fn slow_hook() -> (String, SlowHook) {
        let hook = SlowHook::default();
        let h = hook.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move || {
                let h = h.clone();
                async move {
                    h.got.notify_one();
                    h.release.notified().await;
                    h.answered.store(true, std::sync::atomic::Ordering::SeqCst);
                    axum::http::StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, hook)
    }

    #[tokio::test]
    async fn shutdown_waits_for_a_webhook_post_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let overrides = Overrides {
            data_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let mut config = Config::load_with_env(dir.path(), &overrides, Vec::new()).unwrap();
        let (url, hook) = slow_hook().await;
        config.webhooks.url = url;
        let core = Core::build(&config).await.unwrap();
        let spec = crate::domain::TaskSpec::parse(crate::domain::NewTask {
            instruction: Some("open Clock".into()),
            ..Default::default()
        })
        .unwrap();
        let task = core.store.create_task(spec).await.unwrap();
        assert!(core.store.start_task(task.id, "sim-1").await.unwrap());
        let task = (core.store)
            .finish_task(task.id, crate::domain::TaskStatus::Succeeded, None, None)
            .await
            .unwrap();
        let finished = crate::domain::TaskEvent::Finished(crate::domain::TaskFinished::of(&task));
        core.bus
            .publish(&task.id.to_string(), finished)
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(60), hook.got.notified())
            .await
            .expect("the webhook was posted");
        // Answer only once shutdown has begun (and would have returned without waiting).
        let release = hook.release.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            release.notify_one();
        });
        core.shutdown(Duration::from_secs(5)).await;
        assert!(
            hook.answered.load(std::sync::atomic::Ordering::SeqCst),
            "shutdown returned before the POST in flight got its answer"
        );
        assert_eq!(core.tracked(), 0);
    }
}
