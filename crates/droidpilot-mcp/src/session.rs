//! One MCP session's hold on devices: its leases and the session task each one records
//! into.
//!
//! A session leases a device from the pool (owner `MCP session <id> (<client>)`), with a
//! TTL that every use renews. Each lease comes with a *session task*: a task created
//! `running` on that device, which the scheduler never runs (it cannot lease the device
//! the session holds), and whose steps are the actions the session takes. Releasing the
//! device, a lapsed lease, or the session ending (the client disconnects, the HTTP session
//! closes or expires) drops the lease and finishes the task, so a person sees and exports
//! what a coding agent did like any other run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::reply::ToolError;
use crate::core::Core;
use crate::domain::{NewTask, TaskEvent, TaskId, TaskSpec, TaskStatus};
use crate::run::finish::Ending;
use crate::service::AppError;
use droidpilot_app::device::Device;
use droidpilot_app::device::pool::{DeviceMatcher, Lease, PoolError};

/// A device this session holds, and the task its actions are recorded in.
struct Held {
    lease: Lease,
    task: TaskId,
    /// Steps recorded so far.
    steps: u32,
}

/// What `acquire` gives back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Holding {
    pub device_id: String,
    /// The session task this session's actions on the device are recorded in.
    pub session_task: TaskId,
    pub lease_ttl_secs: u64,
    /// False when the session already held the device (the lease was renewed).
    pub newly_acquired: bool,
}

/// A device ready for one recorded action.
pub struct InUse {
    pub device: Arc<dyn Device>,
    pub task: TaskId,
}

pub struct Session {
    /// Short and random: tells sessions apart in holder messages and task names.
    pub id: String,
    core: Arc<Core>,
    ttl: Duration,
    /// The client's name from `initialize`, once known.
    client: Mutex<Option<String>>,
    held: Mutex<HashMap<String, Held>>,
    /// One acquire at a time, so two concurrent calls of this session on a phone it does
    /// not hold yet lease it once (the second would otherwise be refused as busy by us).
    acquiring: tokio::sync::Mutex<()>,
}

impl Session {
    pub fn new(core: Arc<Core>) -> Self {
        let ttl = Duration::from_secs(core.config.mcp_server.lease_ttl_secs.max(1));
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        Self {
            id,
            core,
            ttl,
            client: Mutex::new(None),
            held: Mutex::new(HashMap::new()),
            acquiring: tokio::sync::Mutex::new(()),
        }
    }

    /// Remembers the client's name (`clientInfo.name`) for holder messages.
    pub fn set_client(&self, name: &str) {
        let mut c = self.client.lock().expect("client lock");
        if c.is_none() {
            *c = Some(name.chars().take(60).collect());
        }
    }

    /// How other callers see this session as a lease owner.
    pub fn owner(&self) -> String {
        match self.client.lock().expect("client lock").as_deref() {
            Some(c) => format!("MCP session {} ({c})", self.id),
            None => format!("MCP session {}", self.id),
        }
    }

    /// Whether this session holds `device_id` right now.
    pub fn holds(&self, device_id: &str) -> bool {
        let held = self.held.lock().expect("held lock");
        held.get(device_id).is_some_and(|h| h.lease.is_valid())
    }

    /// Leases `device_id` (any free device when None) for this session, or renews the
    /// lease it has. A device held by a task or another session is refused, naming it.
    pub async fn acquire(
        &self,
        device_id: Option<&str>,
        ttl: Option<Duration>,
    ) -> Result<Holding, ToolError> {
        let ttl = ttl.unwrap_or(self.ttl);
        let _one_at_a_time = self.acquiring.lock().await;
        if let Some(id) = device_id
            && let Some(task) = self.renew(id, ttl).await
        {
            return Ok(self.holding(id, task, ttl, false));
        }
        let matcher = match device_id {
            Some(id) => DeviceMatcher::id(id),
            None => DeviceMatcher::any(),
        };
        let lease = self
            .core
            .pool
            .lease(&self.owner(), &matcher, ttl)
            .map_err(|e| self.refusal(device_id, e))?;
        let id = lease.id.clone();
        let task = match self.start_task(&id).await {
            Ok(t) => t,
            Err(e) => {
                drop(lease);
                return Err(e);
            }
        };
        let held = Held {
            lease,
            task,
            steps: 0,
        };
        self.held
            .lock()
            .expect("held lock")
            .insert(id.clone(), held);
        Ok(self.holding(&id, task, ttl, true))
    }

    fn holding(&self, id: &str, task: TaskId, ttl: Duration, new: bool) -> Holding {
        Holding {
            device_id: id.to_string(),
            session_task: task,
            lease_ttl_secs: ttl.as_secs(),
            newly_acquired: new,
        }
    }

    /// Renews a lease this session holds; a lapsed one is dropped and its task finished.
    async fn renew(&self, id: &str, ttl: Duration) -> Option<TaskId> {
        let lapsed = {
            let mut held = self.held.lock().expect("held lock");
            let h = held.get(id)?;
            if h.lease.is_valid() && h.lease.renew(ttl) {
                return Some(h.task);
            }
            held.remove(id)?
        };
        let reason = "the MCP session's lease lapsed (unused longer than its TTL)";
        drop(lapsed.lease);
        finish(&self.core, lapsed.task, reason).await;
        None
    }

    /// The device for one action: leased for this session first if it is not yet
    /// (auto-acquire), renewed if it is, with the next step number of its session task.
    pub async fn use_device(&self, device_id: &str) -> Result<InUse, ToolError> {
        self.acquire(Some(device_id), None).await?;
        let mut held = self.held.lock().expect("held lock");
        let h = held.get_mut(device_id).ok_or_else(|| {
            ToolError::new(
                "device_released",
                format!("device {device_id} was released while the action started"),
                "Call acquire_device again, then retry.",
            )
        })?;
        Ok(InUse {
            device: h.lease.device.clone(),
            task: h.task,
        })
    }

    /// The next step number of `task`, the session task of `device_id`, taken when the
    /// action is about to be recorded (so a failed capture leaves no gap). None when the
    /// device was released meanwhile: its task has ended and takes no more steps.
    pub fn next_step(&self, device_id: &str, task: TaskId) -> Option<u32> {
        let mut held = self.held.lock().expect("held lock");
        let h = held.get_mut(device_id).filter(|h| h.task == task)?;
        h.steps += 1;
        Some(h.steps)
    }

    /// Ends this session's hold on `device_id`: the lease is dropped and its session task
    /// finished. Returns the task, or None when the session did not hold the device.
    pub async fn release(&self, device_id: &str) -> Option<TaskId> {
        let h = self.held.lock().expect("held lock").remove(device_id)?;
        drop(h.lease);
        finish(&self.core, h.task, "the MCP session released the device").await;
        Some(h.task)
    }

    /// The devices this session holds.
    pub fn devices(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .held
            .lock()
            .expect("held lock")
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// The refusal when the pool would not lease: who holds the device, or what exists.
    fn refusal(&self, device_id: Option<&str>, e: PoolError) -> ToolError {
        let pool = &self.core.pool;
        let known = || {
            pool.list()
                .into_iter()
                .map(|d| match d.holder() {
                    Some(h) => format!("{} (held by {h})", d.id),
                    None => format!("{} ({})", d.id, d.state.as_str()),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (e, device_id) {
            (PoolError::NoneAvailable(_), Some(id)) => match pool.summary(id) {
                Some(s) if s.holder().is_some() => ToolError::new(
                    "device_busy",
                    format!(
                        "device {id} is held by {}; it is not yours to drive",
                        s.holder().unwrap_or_default()
                    ),
                    "Wait until the holder releases it (a task ends, a session calls release_device or disconnects, or an idle lease lapses), or pick a free device from list_devices.",
                ),
                Some(s) => ToolError::new(
                    "device_unavailable",
                    format!("device {id} is {}", s.state.as_str()),
                    "Pick an available device from list_devices; an offline phone comes back on its own when it reconnects.",
                ),
                None => ToolError::new(
                    "device_not_found",
                    format!("no device `{id}`"),
                    format!("Known devices: {}.", known()),
                ),
            },
            (PoolError::NoneAvailable(_), None) => ToolError::new(
                "no_device_available",
                "every device is held or offline",
                format!("Devices: {}. Try again when one is released.", known()),
            ),
            (PoolError::NotFound(id), _) => ToolError::new(
                "device_not_found",
                format!("no device `{id}`"),
                format!("Known devices: {}.", known()),
            ),
            (other, _) => AppError::from(other).into(),
        }
    }

    /// Creates the session task for a device just leased: queued, then at once running on
    /// that device (the scheduler cannot lease it, so it never runs it).
    async fn start_task(&self, device_id: &str) -> Result<TaskId, ToolError> {
        let owner = self.owner();
        let spec = TaskSpec::parse(NewTask {
            instruction: Some(format!("{owner} on {device_id}")),
            device_id: Some(device_id.to_string()),
            // Never run by an agent; should a restart requeue it, it replays nothing.
            agent: Some(json!({"kind": "replay", "actions": []})),
            max_steps: Some(crate::domain::task::MAX_STEPS_LIMIT),
            metadata: Some(json!({"mcp_session": self.id, "lease_owner": owner})),
            ..Default::default()
        })
        .map_err(AppError::from)?;
        let task = self.core.queue.submit(spec).await?;
        self.core.start_here(task.id, device_id).await?;
        let started = TaskEvent::Started {
            task_id: task.id,
            device: Some(device_id.to_string()),
            agent: "mcp".into(),
        };
        self.core.bus.publish(&task.id.to_string(), started).await?;
        Ok(task.id)
    }
}

/// Finishes a session task whose lease was dropped (succeeded: the session did what it
/// did; the steps say whether each action worked); the queue wakes the scheduler for the
/// phone.
async fn finish(core: &Core, task: TaskId, reason: &str) {
    let ending = Ending::now(TaskStatus::Succeeded, reason);
    if let Err(e) = core.queue.end(task, ending).await {
        tracing::warn!(task = %task, error = %e, "could not finish a session task");
    }
}

impl Drop for Session {
    /// The session ended (disconnect, closed or expired HTTP session): every lease is
    /// dropped now and the session tasks are finished on the core's tracker.
    fn drop(&mut self) {
        // The leases go now (dropping a `Lease` frees the device); the tasks are finished
        // on the tracker, which shutdown waits for.
        let tasks: Vec<TaskId> = self
            .held
            .lock()
            .map(|mut h| h.drain().map(|(_, v)| v.task).collect())
            .unwrap_or_default();
        if tasks.is_empty() {
            return;
        }
        let core = self.core.clone();
        self.core.spawn(async move {
            for task in tasks {
                finish(&core, task, "the MCP session ended").await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides};

    async fn core(dir: &std::path::Path) -> Arc<Core> {
        let overrides = Overrides {
            data_dir: Some(dir.to_path_buf()),
            ..Default::default()
        };
        let env = vec![("DROIDPILOT_DEVICES__ADB__ENABLED".into(), "false".into())];
        let config = Config::load_with_env(dir, &overrides, env).unwrap();
        Arc::new(Core::build(&config).await.unwrap())
    }

    async fn status(core: &Core, id: TaskId) -> TaskStatus {
        core.store.get_task(id).await.unwrap().status
    }

    #[tokio::test]
    async fn a_second_session_is_refused_naming_the_first_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path()).await;
        let a = Session::new(core.clone());
        a.set_client("agent-a");
        let held = a.acquire(Some("sim-1"), None).await.unwrap();
        assert_eq!(status(&core, held.session_task).await, TaskStatus::Running);
        let b = Session::new(core.clone());
        let e = b.use_device("sim-1").await.err().unwrap();
        assert_eq!(e.code, "device_busy");
        assert!(
            e.message
                .contains(&format!("MCP session {} (agent-a)", a.id)),
            "{e:?}"
        );
        // The session ends: the phone is free at once, the task is finished on the tracker.
        drop(a);
        b.use_device("sim-1").await.unwrap();
        core.shutdown(Duration::from_secs(5)).await;
        let core2 = self::core(dir.path()).await;
        assert_eq!(
            status(&core2, held.session_task).await,
            TaskStatus::Succeeded
        );
        let reason = core2
            .store
            .get_task(held.session_task)
            .await
            .unwrap()
            .reason;
        assert_eq!(reason.as_deref(), Some("the MCP session ended"));
    }

    #[tokio::test]
    async fn a_lapsed_lease_ends_its_task_and_the_next_use_starts_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path()).await;
        let s = Session::new(core.clone());
        let first = (s
            .acquire(Some("sim-1"), Some(Duration::from_millis(30)))
            .await)
            .unwrap()
            .session_task;
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(!s.holds("sim-1"), "the lease lapsed");
        let used = s.use_device("sim-1").await.unwrap();
        assert_ne!(used.task, first, "a new session task");
        assert_eq!(status(&core, first).await, TaskStatus::Succeeded);
        assert_eq!(s.next_step("sim-1", used.task), Some(1));
        assert_eq!(s.release("sim-1").await, Some(used.task));
        assert_eq!(
            s.next_step("sim-1", used.task),
            None,
            "a released task takes no steps"
        );
        assert_eq!(status(&core, used.task).await, TaskStatus::Succeeded);
    }

    #[tokio::test]
    async fn two_concurrent_calls_of_one_session_share_one_lease() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::new(core(dir.path()).await);
        let (a, b) = tokio::join!(s.use_device("sim-1"), s.use_device("sim-1"));
        assert_eq!(a.unwrap().task, b.unwrap().task);
    }

    #[tokio::test]
    async fn an_unknown_device_is_refused_with_the_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let s = Session::new(core(dir.path()).await);
        let e = s.acquire(Some("sim-9"), None).await.unwrap_err();
        assert_eq!(e.code, "device_not_found");
        assert!(e.hint.contains("sim-1"), "{e:?}");
    }
}
