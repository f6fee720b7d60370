//! The scheduler: turns queued tasks into running ones. It takes tasks in queue order
//! (priority, then FIFO), leases a matching free device from the pool, marks the task
//! running, builds its agent and spawns one runner per task, up to a server-wide limit.
//! A task whose device never frees up leaves the queue after `queue_timeout_secs` as
//! `timed_out` with a reason that says so.
//!
//! It wakes on a `Notify` (a task was queued, a runner finished, a device came back) and
//! on a short poll as a safety net, so a missed wake-up costs a poll interval, not a hang.
//!
//! On a database several instances share, each scheduler only takes a task it has a
//! matching free device for (it leases the device first), and the claim is the start:
//! `ClusterStore::claim_task` moves the task to `running` with this instance's name in
//! one conditional update (`FOR UPDATE SKIP LOCKED`), so a task starts once and there is
//! no claimed-but-not-started phase to lease and sweep. A claimer that dies after its
//! claim is handled as an instance death (`cluster`). Other instances see new tasks on
//! their next poll (`poll_ms`).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::events::EventBus;
use super::finish::{Ending, end_task};
use super::runner::Runner;
use super::stop::StopSignal;
use crate::agent::Agent;
use crate::device::pool::{DeviceMatcher, DevicePool, PoolError};
use crate::domain::{Task, TaskEvent, TaskId, TaskStatus};
use crate::store::StoreError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Tasks running at once, server-wide.
    pub max_concurrent_tasks: usize,
    /// How long a task may wait for a matching device before it times out.
    pub queue_timeout_secs: u64,
    /// The safety-net poll when nothing wakes the scheduler.
    pub poll_ms: u64,
    /// At start-up, requeue tasks a previous process left running instead of marking
    /// them interrupted.
    pub resume_interrupted: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            max_concurrent_tasks: 16,
            queue_timeout_secs: 3600,
            poll_ms: 500,
            resume_interrupted: false,
        }
    }
}

/// Builds the agent for a task (from its `agent` spec and the server's defaults).
pub type AgentFactory = Arc<dyn Fn(&Task) -> Result<Box<dyn Agent>, String> + Send + Sync>;

/// Running tasks and how to stop them; shared with the API for cancels.
#[derive(Default)]
pub struct RunningTasks {
    stops: Mutex<HashMap<TaskId, watch::Sender<StopSignal>>>,
}

impl RunningTasks {
    pub fn signal(&self, id: TaskId, s: StopSignal) -> bool {
        self.stops
            .lock()
            .expect("running lock")
            .get(&id)
            .map(|tx| tx.send(s).is_ok())
            .unwrap_or(false)
    }
    pub fn signal_all(&self, s: StopSignal) {
        for tx in self.stops.lock().expect("running lock").values() {
            let _ = tx.send(s);
        }
    }
    pub fn len(&self) -> usize {
        self.stops.lock().expect("running lock").len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn insert(&self, id: TaskId) -> watch::Receiver<StopSignal> {
        let (tx, rx) = watch::channel(StopSignal::None);
        self.stops.lock().expect("running lock").insert(id, tx);
        rx
    }
    fn remove(&self, id: TaskId) {
        self.stops.lock().expect("running lock").remove(&id);
    }
}

/// A running task's hold on a phone and a scheduler slot, released when dropped.
struct Slot {
    id: TaskId,
    running: Arc<RunningTasks>,
    wake: Arc<Notify>,
    lease: Option<crate::device::pool::Lease>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // The phone first, so the woken scheduler finds it free.
        drop(self.lease.take());
        self.running.remove(self.id);
        self.wake.notify_one();
    }
}

#[derive(Clone)]
pub struct Scheduler {
    pub runner: Arc<Runner>,
    pub pool: DevicePool,
    pub agents: AgentFactory,
    pub cfg: SchedulerConfig,
    pub wake: Arc<Notify>,
    pub running: Arc<RunningTasks>,
    /// This instance, on a database several share (claims record it, start-up recovery
    /// is scoped to it); None on one host.
    pub instance: Option<SchedulerInstance>,
    /// Secrets of the tasks this process accepted: in a cluster, a task whose secrets
    /// another instance holds is left to it.
    pub secrets: Arc<crate::agent::secrets::SecretVault>,
}

/// Who this scheduler is in a cluster.
#[derive(Debug, Clone)]
pub struct SchedulerInstance {
    pub name: String,
    /// An instance whose heartbeat is older is dead (`cluster.dead_after_secs`).
    pub dead_after: Duration,
}

/// Publishes what happened to tasks taken from a runner that is gone (this process's
/// previous run, or a dead instance): `task.requeued`, or `task.finished` with the
/// interruption. Their open questions have nobody to deliver an answer to, so they are
/// closed, answered by `closer`.
pub async fn announce_recovered(
    bus: &EventBus,
    ids: &[TaskId],
    requeued: bool,
    reason: &str,
    closer: &str,
) -> Result<(), StoreError> {
    let store = bus.store();
    for &id in ids {
        for iv in store.interventions(id).await? {
            if iv.answered_at.is_none() {
                match store.answer_intervention(&iv.id, "", closer).await {
                    Ok(_) | Err(StoreError::AlreadyAnswered(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if requeued {
            let event = TaskEvent::Requeued {
                task_id: id,
                status: TaskStatus::Queued,
                reason: reason.to_string(),
            };
            bus.publish(&id.to_string(), event).await?;
        } else {
            let task = Box::new(store.get_task(id).await?);
            end_task(bus, id, Ending::Stored(task)).await?;
        }
    }
    Ok(())
}

impl Scheduler {
    /// At start-up: deal with tasks a previous process left running. On a shared
    /// database only this instance's (see `ClusterStore::recover_instance`).
    pub async fn recover(&self) -> Result<(), StoreError> {
        let store = self.runner.bus.store();
        let reason = if self.cfg.resume_interrupted {
            "the server restarted while the task ran; resuming from its last committed step"
        } else {
            "the server stopped while the task ran (its committed steps are kept); resubmit it, or set scheduler.resume_interrupted = true"
        };
        let requeue = self.cfg.resume_interrupted;
        let ids = match (store.cluster(), &self.instance) {
            (Some(c), Some(me)) => {
                c.recover_instance(&me.name, me.dead_after, requeue, reason)
                    .await?
            }
            _ => store.recover_running(requeue, reason).await?,
        };
        announce_recovered(&self.runner.bus, &ids, requeue, reason, "restart").await
    }

    /// Runs until `shutdown` flips to true; then tells runners to stop after their
    /// current step and waits for them (they mark their tasks interrupted, or leave them
    /// to be resumed when `resume_interrupted` is on).
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut runners: JoinSet<()> = JoinSet::new();
        loop {
            if *shutdown.borrow() {
                break;
            }
            if let Err(e) = self.schedule_once(&mut runners).await {
                tracing::error!(error = %e, "scheduler pass failed; retrying");
            }
            while runners.try_join_next().is_some() {}
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(self.cfg.poll_ms)) => {}
                // A dropped sender means the server is gone: stop too.
                r = shutdown.changed() => if r.is_err() { break; }
            }
        }
        // With resume on, a graceful stop leaves running tasks for the next start to
        // resume, exactly as a crash would; otherwise they end `interrupted`.
        self.running.signal_all(if self.cfg.resume_interrupted {
            StopSignal::Suspend
        } else {
            StopSignal::Shutdown
        });
        while runners.join_next().await.is_some() {}
    }

    /// One pass over the queue. Public for benchmarks and tests that drive it by hand.
    pub async fn schedule_once(&self, runners: &mut JoinSet<()>) -> Result<(), StoreError> {
        let store = self.runner.bus.store().clone();
        let free_slots = self
            .cfg
            .max_concurrent_tasks
            .saturating_sub(self.running.len());
        if free_slots == 0 {
            return Ok(());
        }
        let queued = store.queued_tasks(200).await?;
        let mut started = 0;
        for task in queued {
            if started >= free_slots {
                break;
            }
            let waited = chrono::Utc::now()
                .signed_duration_since(task.created_at)
                .to_std()
                .unwrap_or_default();
            let held = crate::agent::secrets::reference(task.spec.agent.as_ref());
            if waited >= Duration::from_secs(self.cfg.queue_timeout_secs) {
                let reason = if held.is_some() && self.instance.is_some() {
                    format!(
                        "not started within queue_timeout_secs ({}): no matching device became free on the instance holding its secrets (in memory only), or that instance stopped; submit it again with them",
                        self.cfg.queue_timeout_secs
                    )
                } else {
                    format!(
                        "no matching device became free within queue_timeout_secs ({}); check GET /v1/devices and the task's device constraints",
                        self.cfg.queue_timeout_secs
                    )
                };
                let ending = Ending::now(TaskStatus::TimedOut, reason);
                end_task(&self.runner.bus, task.id, ending).await?;
                continue;
            }
            // Another instance of the cluster accepted it and holds its secrets.
            if self.instance.is_some() && held.is_some_and(|r| !self.secrets.holds(r)) {
                continue;
            }
            if self.try_start(task, runners).await? {
                started += 1;
            }
        }
        Ok(())
    }

    fn matcher(task: &Task) -> DeviceMatcher {
        let c = task.spec.device.clone().unwrap_or_default();
        DeviceMatcher {
            id: task.spec.device_id.clone(),
            backend: c.backend,
            model: c.model,
        }
    }

    async fn try_start(&self, task: Task, runners: &mut JoinSet<()>) -> Result<bool, StoreError> {
        let owner = task.id.to_string();
        // Paused time (take-over) does not count toward the timeout: the lease covers it.
        let pause = self.runner.cfg.max_pause_secs;
        let ttl = Duration::from_secs(task.spec.timeout_seconds + pause + 120);
        let lease = match self.pool.lease(&owner, &Self::matcher(&task), ttl) {
            Ok(l) => l,
            Err(PoolError::NoneAvailable(_)) | Err(PoolError::NotFound(_)) => return Ok(false),
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "lease failed");
                return Ok(false);
            }
        };
        // An installed-package constraint needs the device itself to answer.
        if let Some(pkg) = task.spec.device.as_ref().and_then(|c| c.package.clone()) {
            let has = lease
                .device
                .installed_apps()
                .await
                .map(|apps| apps.iter().any(|a| a.package == pkg))
                .unwrap_or(false);
            if !has {
                drop(lease);
                return Ok(false);
            }
        }
        // Registered before the claim, so a cancel after it always finds the runner's
        // signal (the runner reads the flag only once per poll interval).
        let stop = self.running.insert(task.id);
        // Likewise the take-over control: a pause as soon as the task shows `running`.
        self.runner.register_takeover(task.id);
        let (task, agent) = match self.claim(task.id, &lease.id).await {
            Ok(Some(claimed)) => claimed,
            other => {
                self.running.remove(task.id);
                self.runner.takeovers.unregister(task.id);
                return other.map(|_| false);
            }
        };
        let runner = self.runner.clone();
        let device = lease.device.clone();
        // Dropped however the runner ends (a panic too): the phone and the slot are freed.
        let slot = Slot {
            id: task.id,
            running: self.running.clone(),
            wake: self.wake.clone(),
            lease: Some(lease),
        };
        runners.spawn(async move {
            let id = task.id;
            let ran = AssertUnwindSafe(runner.run(task, device, agent, stop))
                .catch_unwind()
                .await;
            let ended = match ran {
                Ok(ended) => ended,
                // The loop's own panics end the task inside `run`; this is one after it.
                Err(panic) => runner.fail_panicked(id, panic).await,
            };
            if let Err(e) = ended {
                tracing::error!(task = %id, error = %e, "runner could not record the task's end");
            }
            drop(slot);
        });
        Ok(true)
    }

    /// Claims the task for `device` and builds its agent: the task as read after the
    /// claim, or None when it was cancelled meanwhile, another instance took it, or its
    /// agent cannot be built (the task fails with why).
    async fn claim(
        &self,
        id: TaskId,
        device: &str,
    ) -> Result<Option<(Task, Box<dyn Agent>)>, StoreError> {
        let store = self.runner.bus.store();
        let claimed = match (store.cluster(), &self.instance) {
            (Some(c), Some(me)) => c.claim_task(id, device, &me.name).await?,
            _ => store.start_task(id, device).await?,
        };
        if !claimed {
            return Ok(None);
        }
        let task = store.get_task(id).await?;
        match (self.agents)(&task) {
            Ok(mut a) => {
                // Requeued after a restart: a replay carries on after its committed steps.
                if task.steps > 0 {
                    a.resume(&store.steps(task.id).await?);
                }
                Ok(Some((task, a)))
            }
            Err(msg) => {
                let reason = format!("cannot build the agent: {msg}");
                let ending = Ending::now(TaskStatus::Failed, reason);
                end_task(&self.runner.bus, task.id, ending).await?;
                Ok(None)
            }
        }
    }
}
