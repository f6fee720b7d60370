//! Remote control of a free phone by a person (the dashboard's phone panel): a lease held
//! for one browser session, a *control task* its actions are recorded in, and the
//! recording of a range of those actions as a script.
//!
//! Acquiring leases the phone from the pool (owner `<who> in the dashboard`) with a short
//! TTL (`[dashboard] control_ttl_secs`) that every action and keep-alive renews, and
//! creates a task `running` on that phone (the scheduler cannot lease it, so it never runs
//! it), like an MCP session's. Each action runs through `service::manual_step`, the path
//! take-over and the MCP device tools use, and is recorded as the task's next step with
//! who took it. The hold is a random `control_id`: another browser session, even with the
//! same token, is refused naming the holder. Releasing, or the lease lapsing (the page was
//! left or went idle), drops the lease and finishes the task.
//!
//! Hand-written beside `droidpilot-mcp`'s session holds rather than shared with them: an
//! MCP session holds several phones for one client and ends with its connection, a
//! control holds one phone per browser session and ends by its TTL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use super::error::{AppError, ErrorKind};
use super::manual::{ManualDone, manual_step};
use crate::core::Core;
use crate::device::pool::{DeviceMatcher, Lease, PoolError};
use crate::domain::{Action, NewTask, TaskEvent, TaskId, TaskSpec, TaskStatus};
use crate::run::finish::Ending;
use crate::script::Script;

/// One browser session's hold on a phone.
struct Held {
    control_id: String,
    lease: Lease,
    task: TaskId,
    /// Steps recorded so far.
    steps: u32,
    by: String,
}

/// What acquiring (or renewing) a hold gives back.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct Control {
    pub device_id: String,
    /// Names this hold in the actions, keep-alives and release that follow. Another
    /// browser session does not have it and is refused.
    pub control_id: String,
    /// The task this hold's actions are recorded in, step by step.
    #[schema(value_type = String, format = Uuid)]
    pub task_id: TaskId,
    /// How the phone's holder reads to everyone else.
    pub holder: String,
    /// The hold lapses this long after the last action or keep-alive.
    pub ttl_secs: u64,
    /// Steps recorded so far.
    pub steps: u32,
}

/// The phones people hold from the dashboard.
pub struct Controls {
    ttl: Duration,
    held: Mutex<HashMap<String, Held>>,
}

impl Controls {
    pub fn new(ttl: Duration) -> Arc<Self> {
        Arc::new(Self {
            ttl: ttl.max(Duration::from_secs(1)),
            held: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn control(&self, device_id: &str, h: &Held) -> Control {
        Control {
            device_id: device_id.to_string(),
            control_id: h.control_id.clone(),
            task_id: h.task,
            holder: h.lease.owner.clone(),
            ttl_secs: self.ttl.as_secs(),
            steps: h.steps,
        }
    }

    /// Leases `device_id` for a person (`by`, or "someone") and starts its control task.
    /// A phone held by a task, an MCP session or another browser session is refused (409
    /// `device_busy`) naming the holder.
    pub async fn acquire(
        self: &Arc<Self>,
        core: &Arc<Core>,
        device_id: &str,
        by: Option<String>,
    ) -> Result<Control, AppError> {
        let by = by.unwrap_or_else(|| "someone".to_string());
        let owner = format!("{by} in the dashboard");
        let lease = core
            .pool
            .lease(&owner, &DeviceMatcher::id(device_id), self.ttl)
            .map_err(|e| refusal(core, device_id, e))?;
        let task = match start_task(core, device_id, &owner).await {
            Ok(t) => t,
            Err(e) => {
                drop(lease);
                return Err(e);
            }
        };
        let control_id = uuid::Uuid::new_v4().simple().to_string();
        let held = Held {
            control_id: control_id.clone(),
            lease,
            task,
            steps: 0,
            by,
        };
        let control = self.control(device_id, &held);
        // A hold whose lease lapsed before its watcher saw it: its task ends now.
        let replaced = self.lock().insert(device_id.to_string(), held);
        if let Some(old) = replaced {
            end(core, old, LAPSED).await;
        }
        self.watch(core, device_id.to_string(), control_id);
        Ok(control)
    }

    /// Renews the hold `control_id` has on `device_id`; a hold that lapsed is ended.
    pub async fn keep_alive(
        &self,
        core: &Core,
        device_id: &str,
        control_id: &str,
    ) -> Result<Control, AppError> {
        let lapsed = {
            let mut held = self.lock();
            let h = self.mine(&held, core, device_id, control_id)?;
            if h.lease.is_valid() && h.lease.renew(self.ttl) {
                return Ok(self.control(device_id, h));
            }
            held.remove(device_id)
        };
        if let Some(h) = lapsed {
            end(core, h, LAPSED).await;
        }
        Err(not_held(core, device_id))
    }

    /// The hold `control_id` has on `device_id`, or the refusal naming who holds it.
    fn mine<'a>(
        &self,
        held: &'a HashMap<String, Held>,
        core: &Core,
        device_id: &str,
        control_id: &str,
    ) -> Result<&'a Held, AppError> {
        match held.get(device_id) {
            Some(h) if h.control_id == control_id => Ok(h),
            _ => Err(not_held(core, device_id)),
        }
    }

    /// Runs `action` on the phone this hold has, recorded as its control task's next step
    /// taken by the person who holds it. A failed action is recorded too and returned in
    /// `ManualDone::result`.
    pub async fn act(
        &self,
        core: &Core,
        device_id: &str,
        control_id: &str,
        action: &Action,
    ) -> Result<(ManualDone, TaskId), AppError> {
        let (device, task, by) = {
            let held = self.lock();
            let h = self.mine(&held, core, device_id, control_id)?;
            (h.lease.device.clone(), h.task, h.by.clone())
        };
        self.keep_alive(core, device_id, control_id).await?;
        let number = || self.next_step(device_id, control_id);
        let done = manual_step(core, device.as_ref(), task, action, Some(by), number).await?;
        Ok((done, task))
    }

    fn next_step(&self, device_id: &str, control_id: &str) -> Option<u32> {
        let mut held = self.lock();
        let h = held
            .get_mut(device_id)
            .filter(|h| h.control_id == control_id)?;
        h.steps += 1;
        Some(h.steps)
    }

    /// Ends the hold: the lease is dropped and the control task finished. The task, or
    /// None when `control_id` does not hold the phone (already released or lapsed).
    pub async fn release(&self, core: &Core, device_id: &str, control_id: &str) -> Option<TaskId> {
        let h = {
            let mut held = self.lock();
            match held.get(device_id) {
                Some(h) if h.control_id == control_id => held.remove(device_id)?,
                _ => return None,
            }
        };
        let task = h.task;
        end(core, h, "the person in the dashboard released the phone").await;
        Some(task)
    }

    /// The steps from `from` (1-based) of the hold's control task as a script, by the
    /// recorder of scripts recorded from tasks (`script::record`).
    pub async fn recording(
        &self,
        core: &Core,
        device_id: &str,
        control_id: &str,
        from: u32,
        name: Option<String>,
    ) -> Result<Script, AppError> {
        let task = {
            let held = self.lock();
            self.mine(&held, core, device_id, control_id)?.task
        };
        let steps: Vec<_> = (core.store.steps(task).await?)
            .into_iter()
            .filter(|s| s.n >= from)
            .collect();
        let goal = format!("recorded on {device_id} in the dashboard");
        let mut script = crate::script::record::from_steps(&goal, &steps).map_err(|e| {
            AppError::invalid(
                "nothing_to_record",
                e.to_string(),
                "Act on the phone while recording (tap, type, launch an app), then save.",
            )
        })?;
        if let Some(n) = name.filter(|n| !n.trim().is_empty()) {
            script.name = n.trim().to_string();
        }
        Ok(script)
    }

    /// Ends the hold once its lease lapses (the page was left, or nobody acted or kept it
    /// alive for the TTL): checked a few times per TTL on the core's tracker, which stops
    /// with the core.
    fn watch(self: &Arc<Self>, core: &Arc<Core>, device_id: String, control_id: String) {
        let (me, weak_core): (Weak<Self>, Weak<Core>) =
            (Arc::downgrade(self), Arc::downgrade(core));
        let every = (self.ttl / 4).clamp(Duration::from_millis(200), Duration::from_secs(5));
        let stop = core.cancel_token();
        core.spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stop.cancelled() => return,
                }
                let (Some(me), Some(core)) = (me.upgrade(), weak_core.upgrade()) else {
                    return;
                };
                let lapsed = {
                    let mut held = me.lock();
                    match held.get(&device_id) {
                        Some(h) if h.control_id == control_id => {
                            if h.lease.is_valid() {
                                continue;
                            }
                            held.remove(&device_id)
                        }
                        _ => return,
                    }
                };
                if let Some(h) = lapsed {
                    end(&core, h, LAPSED).await;
                }
                return;
            }
        });
    }
}

const LAPSED: &str = "the dashboard's hold lapsed (the page was left or idle)";

/// Drops the lease and finishes the control task (succeeded: the person did what they
/// did; each step says whether its action worked).
async fn end(core: &Core, h: Held, reason: &str) {
    drop(h.lease);
    let ending = Ending::now(TaskStatus::Succeeded, reason);
    if let Err(e) = core.queue.end(h.task, ending).await {
        tracing::warn!(task = %h.task, error = %e, "could not finish a control task");
    }
}

/// The refusal for a hold this caller does not have: who holds the phone instead.
pub fn not_held(core: &Core, device_id: &str) -> AppError {
    let holder = core.pool.summary(device_id).and_then(|s| s.holder());
    let message = match holder {
        Some(h) => format!("device {device_id} is held by {h}, not by this page"),
        None => format!("this page does not hold device {device_id} (released or lapsed)"),
    };
    AppError::new(
        ErrorKind::Conflict,
        "device_not_held",
        message,
        "Take the phone again (POST /v1/devices/{id}/control) when it is free.",
    )
}

/// Why the pool would not lease: who holds the phone, or what state it is in.
fn refusal(core: &Core, device_id: &str, e: PoolError) -> AppError {
    let PoolError::NoneAvailable(_) = e else {
        return e.into();
    };
    match core.pool.summary(device_id) {
        Some(s) if s.holder().is_some() => AppError::new(
            ErrorKind::Conflict,
            "device_busy",
            format!(
                "device {device_id} is held by {}",
                s.holder().unwrap_or_default()
            ),
            "Wait until it is released (a task ends, a session releases it, a page is closed), or pick a free phone.",
        ),
        Some(s) => AppError::new(
            ErrorKind::Conflict,
            "device_unavailable",
            format!("device {device_id} is {}", s.state.as_str()),
            "Pick an available phone; an offline phone comes back on its own when it reconnects.",
        ),
        None => PoolError::NotFound(device_id.to_string()).into(),
    }
}

/// The control task of a phone just leased: queued, then at once running on it.
async fn start_task(core: &Core, device_id: &str, owner: &str) -> Result<TaskId, AppError> {
    let spec = TaskSpec::parse(NewTask {
        instruction: Some(format!("{owner} on {device_id}")),
        device_id: Some(device_id.to_string()),
        // Never run by an agent; should a restart requeue it, it replays nothing.
        agent: Some(json!({"kind": "replay", "actions": []})),
        max_steps: Some(crate::domain::task::MAX_STEPS_LIMIT),
        metadata: Some(json!({"dashboard_control": owner})),
        ..Default::default()
    })?;
    let task = core.queue.submit(spec).await?;
    core.start_here(task.id, device_id).await?;
    let started = TaskEvent::Started {
        task_id: task.id,
        device: Some(device_id.to_string()),
        agent: "dashboard".into(),
    };
    core.bus.publish(&task.id.to_string(), started).await?;
    Ok(task.id)
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

    /// A hold that lapsed before its watcher looked is ended when the next person takes
    /// the phone: its task does not stay `running` forever.
    #[tokio::test]
    async fn taking_a_phone_whose_hold_lapsed_ends_the_old_holds_task() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path()).await;
        // A TTL shorter than the watcher's first look (200 ms at the least).
        let controls = Controls::new(Duration::from_secs(1));
        let first = controls
            .acquire(&core, "sim-1", Some("alice".into()))
            .await
            .unwrap();
        {
            let held = controls.lock();
            held["sim-1"].lease.renew(Duration::from_millis(1));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = controls
            .acquire(&core, "sim-1", Some("bob".into()))
            .await
            .unwrap();
        assert_ne!(first.task_id, second.task_id);
        let old = core.store.get_task(first.task_id).await.unwrap();
        assert_eq!(old.status, TaskStatus::Succeeded, "{:?}", old.reason);
        assert_eq!(second.holder, "bob in the dashboard");
    }
}
