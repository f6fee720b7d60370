//! Take-over: a person pauses a running task, acts on its phone, and resumes it.
//!
//! `TakeOvers` holds one control per running task (the runner registers its task for the
//! length of its run) and is the runner's take-over hook (`RunHook::at_boundary`). A
//! pause is a request: the runner asks the hook at its next step boundary (the step in
//! flight finishes first), which marks the task `paused`, publishes `task.paused` and
//! waits. Only then do manual actions run: a `Turn` (`TakeOvers::turn`) checks the task
//! is held and holds its lock while the action is run and recorded by
//! `service::manual_step` (the one entry for a step taken outside the loop: the screen
//! read, the action run through `device::exec`, the step recorded with a password typed
//! by a person stored as `••••`); `Turn::record` then stores it as a `manual_action`
//! intervention and publishes `task.intervention`. `resume` marks the task `running`,
//! publishes `task.resumed`, and releases the hold, which hands the runner back what the
//! person did (`hooks::TakenOver`: their steps and one line per action, which the agent
//! reads in its next prompt). One async lock per task orders pause, actions and resume,
//! so step numbers never collide and a resume never lands mid-action.
//!
//! Paused time does not count toward the task's timeout; all of a task's pauses together
//! may last `runner.max_pause_secs`, after which the runner resumes by itself (`by`:
//! `max_pause_secs`). A cancel or a shutdown ends a paused task as it would a running one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{OwnedMutexGuard, watch};

use super::events::EventBus;
use super::hooks::{RunHook, StepRef, TakenOver};
use super::runner::{ManualDone, outcome_detail};
use crate::device::Device;
use crate::device::exec::{ExecError, ExecOutcome};
use crate::domain::{
    Action, ActionableElement, Intervention, InterventionKind, ResumeCause, Task, TaskEvent,
    TaskId, TaskStatus,
};
use crate::store::StoreError;

/// Who acted when the caller gave no name.
pub const ANONYMOUS: &str = "anonymous";

/// Why a take-over request was refused.
#[derive(Debug, thiserror::Error)]
pub enum TakeOverError {
    /// Pause asked of a task that is not running (queued, waiting, finished, paused).
    #[error("task {id} is {status}, not running")]
    NotRunning { id: TaskId, status: TaskStatus },
    /// Pause asked of a task that is `running` with no runner here: its steps are over
    /// and its end is being recorded, or another instance of a cluster runs it.
    #[error(
        "task {id} is running, but no runner here can pause it: its steps are over and its end is being recorded, or another instance runs it"
    )]
    Ending { id: TaskId },
    /// Resume or a manual action asked of a task that is not paused.
    #[error("task {id} is {status}, not paused{}", if *.pending { " (a pause was asked for; the runner holds at its next step boundary)" } else { "" })]
    NotPaused {
        id: TaskId,
        status: TaskStatus,
        /// A pause was requested but the runner has not reached a boundary yet.
        pending: bool,
    },
    /// The task's phone is gone from the pool.
    #[error("task {id}'s device {device} is not in the pool")]
    NoDevice { id: TaskId, device: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A manual action that ran (or failed on the phone) and was recorded.
pub struct Acted {
    /// The action as recorded (text typed into a password field masked).
    pub action: Value,
    pub result: Result<ExecOutcome, ExecError>,
    pub duration_ms: u64,
    pub intervention: Intervention,
}

/// One task's take-over state, behind its async lock.
#[derive(Default)]
struct Hold {
    /// A pause was asked for, by whom.
    requested: Option<String>,
    /// The runner is held before this step (the task is `paused`).
    held_at: Option<u32>,
    /// The number the next manual step records as.
    next_step: u32,
    /// What the person did during this hold, for the agent.
    actions: Vec<String>,
    /// Paused time used so far, of `max_pause_secs`.
    used: Duration,
    /// Who resumed the last hold.
    resumed_by: Option<String>,
}

struct Control {
    hold: Arc<tokio::sync::Mutex<Hold>>,
    /// True while a pause is asked for or held; the runner waits for false.
    paused: watch::Sender<bool>,
    /// Where the task's pause and resume are stored and published.
    bus: EventBus,
    /// All of the task's pauses together may last this long (`max_pause_secs`).
    max_pause: Duration,
}

/// Every running task's take-over control.
#[derive(Default)]
pub struct TakeOvers {
    tasks: Mutex<HashMap<TaskId, Arc<Control>>>,
}

impl TakeOvers {
    /// The runner's task can be paused from now until `unregister`, for `max_pause` in
    /// all; its pauses are stored and published on `bus`. Registering again keeps the
    /// control (and a pause already asked for): the scheduler registers before it claims
    /// the task, so a pause right after the task shows `running` finds it.
    pub(crate) fn register(&self, id: TaskId, bus: EventBus, max_pause: Duration) {
        self.lock().entry(id).or_insert_with(|| {
            Arc::new(Control {
                hold: Arc::new(tokio::sync::Mutex::new(Hold::default())),
                paused: watch::Sender::new(false),
                bus,
                max_pause,
            })
        });
    }

    pub(crate) fn unregister(&self, id: TaskId) {
        self.lock().remove(&id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Arc<Control>>> {
        self.tasks.lock().expect("take-over registry lock")
    }

    fn control(&self, id: TaskId) -> Option<Arc<Control>> {
        self.lock().get(&id).cloned()
    }

    /// Asks the task's runner to hold at its next step boundary. Returns the task as it
    /// stands (still `running` until the runner holds; `task.paused` says when).
    pub async fn pause(
        &self,
        bus: &EventBus,
        id: TaskId,
        by: Option<String>,
    ) -> Result<Task, TakeOverError> {
        let task = bus.store().get_task(id).await?;
        let control = match self.control(id) {
            Some(c) if task.status == TaskStatus::Running => c,
            // Still `running` in the store, but no runner here holds it.
            None if task.status == TaskStatus::Running => {
                return Err(TakeOverError::Ending { id });
            }
            _ => {
                return Err(TakeOverError::NotRunning {
                    id,
                    status: task.status,
                });
            }
        };
        let mut hold = control.hold.lock().await;
        if hold.held_at.is_some() {
            return Err(TakeOverError::NotRunning {
                id,
                status: TaskStatus::Paused,
            });
        }
        hold.requested = Some(by.unwrap_or_else(|| ANONYMOUS.into()));
        control.paused.send_replace(true);
        Ok(task)
    }

    /// Resumes a paused task (or withdraws a pause the runner has not reached yet).
    pub async fn resume(
        &self,
        bus: &EventBus,
        id: TaskId,
        by: Option<String>,
    ) -> Result<Task, TakeOverError> {
        let Some(control) = self.control(id) else {
            let status = bus.store().get_task(id).await?.status;
            return Err(TakeOverError::NotPaused {
                id,
                status,
                pending: false,
            });
        };
        let mut hold = control.hold.lock().await;
        if hold.held_at.is_none() && hold.requested.take().is_none() {
            let status = bus.store().get_task(id).await?.status;
            return Err(TakeOverError::NotPaused {
                id,
                status,
                pending: false,
            });
        }
        let task = release(bus, id, &mut hold, by).await?;
        control.paused.send_replace(false);
        Ok(task)
    }

    /// A person's turn on a paused task: refused unless the runner holds the task, then
    /// the task's take-over lock is held until the turn is recorded or dropped, so step
    /// numbers never collide and a resume never lands mid-action.
    pub async fn turn(
        &self,
        bus: &EventBus,
        id: TaskId,
        by: Option<String>,
    ) -> Result<Turn, TakeOverError> {
        let not_paused = |status, pending| TakeOverError::NotPaused {
            id,
            status,
            pending,
        };
        let status = bus.store().get_task(id).await?.status;
        let control = self.control(id).ok_or(not_paused(status, false))?;
        let hold = control.hold.clone().lock_owned().await;
        if hold.held_at.is_none() {
            return Err(not_paused(status, hold.requested.is_some()));
        }
        Ok(Turn {
            hold,
            id,
            by: by.unwrap_or_else(|| ANONYMOUS.into()),
        })
    }

    /// At a step boundary (`at`): holds the runner while the task is paused, then hands
    /// back what the person did. None when no pause was asked for. This is the hook's
    /// `at_boundary`; the runner calls it directly, sparing the trait's boxed future on
    /// every step.
    pub(crate) async fn hold(&self, at: StepRef) -> Result<Option<TakenOver>, StoreError> {
        let (id, step) = (at.task, at.step);
        let Some(control) = self.control(id) else {
            return Ok(None);
        };
        let (bus, max_pause) = (&control.bus, control.max_pause);
        let mut paused = control.paused.subscribe();
        if !*paused.borrow_and_update() {
            return Ok(None);
        }
        let began = Instant::now();
        let budget = {
            let mut hold = control.hold.lock().await;
            let Some(by) = hold.requested.clone() else {
                return Ok(None); // withdrawn meanwhile
            };
            bus.store()
                .set_task_status(id, TaskStatus::Paused, Some(&format!("paused by {by}")))
                .await?;
            hold.held_at = Some(step);
            hold.next_step = step;
            hold.actions.clear();
            let ev = TaskEvent::Paused {
                task_id: id,
                step,
                by: Some(by),
            };
            bus.publish(&id.to_string(), ev).await?;
            max_pause.saturating_sub(hold.used)
        };
        let resumed = paused.wait_for(|p| !p);
        let timed_out = tokio::time::timeout(budget, resumed).await.is_err();
        let mut hold = control.hold.lock().await;
        if timed_out && hold.held_at.is_some() {
            // The pause budget ran out with nobody resuming: carry on.
            release(bus, id, &mut hold, Some("max_pause_secs".into())).await?;
            control.paused.send_replace(false);
        }
        let held = began.elapsed();
        hold.used += held;
        let steps = hold.next_step - step;
        Ok(Some(TakenOver {
            steps,
            held,
            actions: std::mem::take(&mut hold.actions),
            by: hold.resumed_by.take(),
            ..TakenOver::default()
        }))
    }
}

/// The server's take-over is the runner's take-over hook: at each boundary it holds the
/// loop while the task is paused and hands back what the person did.
#[async_trait]
impl RunHook for TakeOvers {
    async fn at_boundary(&self, at: StepRef) -> Result<Option<TakenOver>, StoreError> {
        self.hold(at).await
    }
}

/// A person's turn on a paused task (`TakeOvers::turn`): the task's take-over lock, held
/// while the action is run and recorded.
pub struct Turn {
    hold: OwnedMutexGuard<Hold>,
    id: TaskId,
    by: String,
}

impl Turn {
    /// The step number the action records as.
    pub fn step(&self) -> u32 {
        self.hold.next_step
    }

    /// Who acts (`anonymous` when the caller gave no name).
    pub fn by(&self) -> &str {
        &self.by
    }

    /// Takes in a manual step recorded as `step()` (`service::manual_step`): counted for
    /// the runner, described for the agent, stored as a `manual_action` intervention and
    /// published as `task.intervention`.
    pub async fn record(
        mut self,
        bus: &EventBus,
        action: &Action,
        done: ManualDone,
    ) -> Result<Acted, TakeOverError> {
        let (id, n) = (self.id, self.step());
        let step = done.recorded?;
        self.hold.next_step += 1;
        let recorded = step
            .as_ref()
            .and_then(|s| s.action.as_ref())
            .unwrap_or(action);
        let detail = outcome_detail(&done.outcome);
        let ok = done.outcome.is_ok();
        let line = describe(recorded, &detail, &done.elements, ok);
        self.hold.actions.push(line);
        let action_json = serde_json::to_value(recorded).unwrap_or(Value::Null);
        let iv = Intervention {
            by: Some(self.by),
            action: Some(action_json.clone()),
            step: Some(n),
            detail: Some(detail),
            ..Intervention::new(id, InterventionKind::ManualAction)
        };
        publish_intervention(bus, &iv).await?;
        Ok(Acted {
            action: action_json,
            result: done.result,
            duration_ms: done.duration_ms,
            intervention: iv,
        })
    }

    /// The error for a phone that could not be read for the action.
    pub fn device_gone(&self, device: &dyn Device, e: crate::device::DeviceError) -> TakeOverError {
        let serial = device.serial().to_string();
        tracing::warn!(task = %self.id, device = %serial, error = %e, "manual action: device unreadable");
        TakeOverError::NoDevice {
            id: self.id,
            device: serial,
        }
    }
}

/// Marks a held task `running` again and publishes `task.resumed` (a pause the runner
/// never reached is only withdrawn). The caller flips the watch.
async fn release(
    bus: &EventBus,
    id: TaskId,
    hold: &mut Hold,
    by: Option<String>,
) -> Result<Task, StoreError> {
    let Some(at) = hold.held_at.take() else {
        hold.requested = None;
        return bus.store().get_task(id).await;
    };
    let task = bus
        .store()
        .set_task_status(id, TaskStatus::Running, None)
        .await?;
    let by = by.unwrap_or_else(|| ANONYMOUS.into());
    hold.requested = None;
    hold.resumed_by = Some(by.clone());
    let ev = TaskEvent::Resumed {
        task_id: id,
        from_step: hold.next_step,
        cause: ResumeCause::TakeOver,
        by: Some(by),
        manual_actions: Some(hold.next_step - at),
    };
    bus.publish(&id.to_string(), ev).await?;
    Ok(task)
}

/// Stores an intervention and publishes it as `task.intervention`.
pub(crate) async fn publish_intervention(
    bus: &EventBus,
    iv: &Intervention,
) -> Result<(), StoreError> {
    bus.store().create_intervention(iv).await?;
    let ev = TaskEvent::Intervention {
        task_id: iv.task_id,
        intervention: iv.clone(),
    };
    bus.publish(&iv.task_id.to_string(), ev).await?;
    Ok(())
}

/// One line for the agent: "tap (540, 1200) on "Bluetooth"", "back", "type "hello"".
pub(crate) fn describe(
    action: &Action,
    detail: &Value,
    elements: &[ActionableElement],
    ok: bool,
) -> String {
    let point = |k: &str| {
        let p = detail.get(k)?.as_array()?;
        Some((p.first()?.as_i64()?, p.get(1)?.as_i64()?))
    };
    let on = |(x, y): (i64, i64)| {
        element_at(elements, x, y)
            .map(|e| format!(" on \"{}\"", e.text))
            .unwrap_or_default()
    };
    let mut s = match (action.name(), point("point"), point("from"), point("to")) {
        (name, Some(p), _, _) => format!("{name} ({}, {}){}", p.0, p.1, on(p)),
        (name, None, Some(f), Some(t)) => {
            format!("{name} from ({}, {}) to ({}, {})", f.0, f.1, t.0, t.1)
        }
        _ => serde_json::to_value(action)
            .ok()
            .and_then(|v| {
                let mut m = v.as_object()?.clone();
                let name = m.remove("action")?;
                // `back`, `home`: a key press reads as the key.
                if name == "key" {
                    return m.get("key")?.as_str().map(str::to_string);
                }
                let name = name.as_str()?.to_string();
                Some(if m.is_empty() {
                    name
                } else {
                    format!("{name} {}", Value::Object(m))
                })
            })
            .unwrap_or_else(|| action.name().to_string()),
    };
    if !ok {
        s.push_str(" (failed)");
    }
    s
}

/// The smallest actionable element with text around a pixel.
fn element_at(els: &[ActionableElement], x: i64, y: i64) -> Option<&ActionableElement> {
    let p = crate::domain::PixelPoint {
        x: x as i32,
        y: y as i32,
    };
    els.iter()
        .filter(|e| !e.text.is_empty() && e.bounds.contains(p))
        .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()))
}
