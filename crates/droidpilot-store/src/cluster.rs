//! What several instances on one database need from the store: instance rows and their
//! heartbeats, reaping a dead instance's tasks and devices, start-up recovery scoped to
//! one instance, claims that record the claimer, and the farm-wide `devices` table.
//!
//! Only a shared database implements it (`PostgresStore`); `Store::cluster` returns None
//! on SQLite, where one host is the whole farm and all of this is a no-op. Store wrappers
//! (`PatientStore`, the bench's timing decorator) pass `cluster()` through to the store
//! they wrap.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StoreError;
use droidpilot_core::domain::TaskId;

/// One process's row in `instances`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRow {
    /// `[cluster] instance`: unique among live instances.
    pub name: String,
    /// Random per process: tells a restart of the same name from a live duplicate.
    pub boot: String,
    /// How other instances reach this one's REST API (device proxying).
    pub advertise_url: Option<String>,
}

/// What joining the cluster found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinOutcome {
    /// The name is ours now (new, left by a graceful stop, or held by a process whose
    /// heartbeat is older than `dead_after`).
    Joined,
    /// A process with another boot holds the name and its heartbeat is recent.
    NameHeld { heartbeat_age_secs: i64 },
}

/// What one heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// Our row was there and is fresh again.
    Alive,
    /// Our row was gone: another instance declared us dead (and ended our tasks). It is
    /// back now.
    Rejoined,
    /// Another process (another boot) holds our name.
    NameTaken,
}

/// A dead instance one reaper took care of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub instance: String,
    /// Its running / waiting / paused tasks, now interrupted (or queued again).
    pub tasks: Vec<TaskId>,
    /// How many of its devices were marked offline.
    pub devices: u64,
}

/// One row of the farm-wide device list.
#[derive(Debug, Clone, PartialEq)]
pub struct FarmDevice {
    pub instance: String,
    pub id: String,
    pub backend: String,
    pub serial: String,
    pub model: String,
    /// As the owner last wrote it (`available`, `leased`, `offline`, `quarantined`).
    pub state: String,
    pub last_seen: Option<DateTime<Utc>>,
    /// Whether the owner's heartbeat is within `dead_after`.
    pub owner_live: bool,
    /// The owner's REST API, when it advertises one.
    pub owner_url: Option<String>,
}

/// Builds the reason a dead instance's tasks get, from its name.
pub type ReasonFor<'a> = &'a (dyn Fn(&str) -> String + Send + Sync);

#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Registers `me`, taking the row over when its holder is dead (heartbeat older than
    /// `dead_after`) or is this process.
    async fn join(&self, me: &InstanceRow, dead_after: Duration)
    -> Result<JoinOutcome, StoreError>;
    /// Refreshes `me`'s heartbeat (re-creating the row if a reaper removed it).
    async fn heartbeat(&self, me: &InstanceRow) -> Result<Heartbeat, StoreError>;
    /// A graceful stop: removes `me`'s row and marks its devices offline.
    async fn leave(&self, me: &InstanceRow) -> Result<(), StoreError>;
    /// Takes care of at most one dead instance other than `me`: its held tasks become `interrupted` with
    /// `reason(name)` (or `queued` with `requeue`), its devices `offline`, its row goes.
    /// Concurrent reapers skip a row another one holds (`FOR UPDATE SKIP LOCKED`), so each
    /// dead instance is reaped exactly once. None when no instance is dead.
    async fn reap_one(
        &self,
        me: &str,
        dead_after: Duration,
        requeue: bool,
        reason: ReasonFor<'_>,
    ) -> Result<Option<Reaped>, StoreError>;
    /// At start-up: the tasks `me` left held (a crash), plus those with no instance when
    /// no other instance is live. Others' tasks are not touched.
    async fn recover_instance(
        &self,
        me: &str,
        dead_after: Duration,
        requeue: bool,
        reason: &str,
    ) -> Result<Vec<TaskId>, StoreError>;
    /// `start_task` that records `me` as the task's instance. One claimer wins; a task
    /// another claimer is starting right now is skipped, not waited for.
    async fn claim_task(&self, id: TaskId, device: &str, me: &str) -> Result<bool, StoreError>;
    /// Replaces `me`'s rows in `devices` with `devices` (their `instance` is `me`).
    async fn sync_devices(&self, me: &str, devices: &[FarmDevice]) -> Result<(), StoreError>;
    /// Every device of every instance, with whether its owner is live.
    async fn farm_devices(&self, dead_after: Duration) -> Result<Vec<FarmDevice>, StoreError>;
}
