//! Every instance's background duty in a cluster, one tracked task: every
//! `heartbeat_secs` it refreshes this instance's heartbeat, writes its phones to the
//! farm-wide `devices` table (also at once on every pool event), and reaps dead
//! instances: their held tasks end `interrupted` (or go back to the queue with
//! `requeue_dead`), their phones `offline`, and `task.finished` / `task.requeued` is
//! published for each task as start-up recovery does. Every instance runs the reaper;
//! `FOR UPDATE SKIP LOCKED` lets exactly one of them take each dead instance.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Membership;
use crate::device::pool::DevicePool;
use crate::run::events::EventBus;
use crate::run::scheduler::announce_recovered;
use crate::store::cluster::{ClusterStore, Heartbeat};
use crate::store::{Store, StoreError};

/// What the duty needs.
#[derive(Clone)]
pub struct Duty {
    pub membership: Arc<Membership>,
    pub store: Arc<dyn Store>,
    pub bus: EventBus,
    pub pool: DevicePool,
}

/// Starts the duty on `tracker`; it ends when `cancel` fires.
pub fn spawn(duty: Duty, tracker: &TaskTracker, cancel: CancellationToken) {
    tracker.spawn(async move { duty.run(cancel).await });
}

impl Duty {
    fn cluster(&self) -> &dyn ClusterStore {
        self.store
            .cluster()
            .expect("the duty only runs on a store with a cluster")
    }

    async fn run(self, cancel: CancellationToken) {
        let mut events = self.pool.subscribe();
        let mut tick = tokio::time::interval(self.membership.cfg.heartbeat());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // No round may outlast the time others wait before declaring us dead.
        let bound = self.membership.cfg.dead_after() / 2;
        loop {
            let beat = tokio::select! {
                () = cancel.cancelled() => break,
                _ = tick.tick() => true,
                ev = events.recv() => {
                    if let Err(tokio::sync::broadcast::error::RecvError::Closed) = ev {
                        break;
                    }
                    false
                }
            };
            let round = async {
                if beat {
                    self.beat().await?;
                }
                self.sync_devices().await?;
                if beat {
                    self.reap().await?;
                }
                Ok::<_, StoreError>(())
            };
            match tokio::time::timeout(bound, round).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "cluster heartbeat round failed; retrying")
                }
                Err(_) => tracing::warn!("cluster heartbeat round timed out; retrying"),
            }
        }
    }

    async fn beat(&self) -> Result<(), StoreError> {
        let me = &self.membership.me;
        match self.cluster().heartbeat(me).await? {
            Heartbeat::Alive => {}
            Heartbeat::Rejoined => tracing::error!(
                instance = %me.name,
                "another instance declared this one dead (no heartbeat for cluster.dead_after_secs) and took over its tasks; check the database latency and this host's load"
            ),
            Heartbeat::NameTaken => tracing::error!(
                instance = %me.name,
                "another process now holds this instance's name; give each instance its own cluster.instance"
            ),
        }
        Ok(())
    }

    /// This instance's phones as the pool sees them now.
    async fn sync_devices(&self) -> Result<(), StoreError> {
        let rows: Vec<_> = self
            .pool
            .list()
            .iter()
            .map(|d| {
                let serial = self
                    .pool
                    .get(&d.id)
                    .map(|dev| dev.serial().to_string())
                    .unwrap_or_else(|| d.id.clone());
                self.membership.farm_row(d, &serial)
            })
            .collect();
        self.cluster()
            .sync_devices(&self.membership.me.name, &rows)
            .await
    }

    async fn reap(&self) -> Result<(), StoreError> {
        let cfg = &self.membership.cfg;
        let requeue = cfg.requeue_dead;
        let dead_after = cfg.dead_after_secs;
        let reason = move |name: &str| {
            if requeue {
                format!(
                    "instance `{name}` that ran the task stopped (no heartbeat for {dead_after}s); requeued to go on after its last committed step"
                )
            } else {
                format!(
                    "instance `{name}` that ran the task stopped (no heartbeat for {dead_after}s); its committed steps are kept; resubmit it, or set cluster.requeue_dead = true"
                )
            }
        };
        while let Some(dead) = self
            .cluster()
            .reap_one(&self.membership.me.name, cfg.dead_after(), requeue, &reason)
            .await?
        {
            tracing::warn!(instance = %dead.instance, tasks = dead.tasks.len(), devices = dead.devices,
                "took over a dead instance's tasks and phones");
            let why = reason(&dead.instance);
            announce_recovered(&self.bus, &dead.tasks, requeue, &why, "instance_dead").await?;
        }
        Ok(())
    }
}
