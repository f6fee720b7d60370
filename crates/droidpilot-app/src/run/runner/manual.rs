//! A step taken outside the loop: a person's action during a take-over, an MCP client's
//! action on its session task, the dashboard's tap on a paused task. `Runner::manual_step`
//! is the one entry point: it reads the screen the way the loop's observe does, runs the
//! action through `device::exec`, and records it as a step built by `StepDraft` (text
//! typed into a password field stored as `••••`), committed and published like the
//! loop's own steps.

use serde_json::{Value, json};

use super::Runner;
use super::record::{ManualOutcome, ManualStep, StepStart};
use crate::device::exec::{self, ExecContext, ExecError, ExecOutcome};
use crate::device::{Device, DeviceError};
use crate::domain::{Action, ActionableElement, Step, TaskId};
use crate::store::StoreError;

/// What a manual step did.
pub struct ManualDone {
    /// The action as it may be echoed: a `type` into a password field (or any `type`,
    /// when the screen could not be read) with its text as `••••`.
    pub shown: Action,
    /// The actionable elements of the screen it acted on.
    pub elements: Vec<ActionableElement>,
    pub result: Result<ExecOutcome, ExecError>,
    /// Its detail, or the error line and detail, as recorded.
    pub outcome: ManualOutcome,
    /// The step as recorded; None when no step number was given (the task takes no
    /// more steps); the store's error when the record failed.
    pub recorded: Result<Option<Step>, StoreError>,
    pub duration_ms: u64,
}

impl Runner {
    /// Reads the screen of `device`, runs `action` on it and records it as step
    /// `number()` of `task_id` (asked once the action ran, so a failed read leaves no gap
    /// in the numbering), taken `by` a person when named. Fails only when the device
    /// cannot be read; a failed action is recorded and returned in `result`.
    pub(crate) async fn manual_step(
        &self,
        device: &dyn Device,
        task_id: TaskId,
        action: &Action,
        by: Option<String>,
        number: impl FnOnce() -> Option<u32>,
    ) -> Result<ManualDone, DeviceError> {
        let start = StepStart::now();
        let size = device.info().await?.screen;
        let obs = self.observe(device, size).await?;
        let ctx = ExecContext {
            screen: obs.screen.as_deref(),
            size,
            transform: self.transform.as_ref(),
        };
        let shown = match (&obs.screen, action) {
            (Some(screen), _) => screen.mask_typed(action, size, self.transform.as_ref()),
            (
                None,
                Action::Type {
                    target,
                    clear_first,
                    ..
                },
            ) => Some(Action::Type {
                text: crate::screen::REDACTED.into(),
                target: target.clone(),
                clear_first: *clear_first,
            }),
            (None, _) => None,
        }
        .unwrap_or_else(|| action.clone());
        let result = exec::execute(device, action, &ctx).await;
        if matches!(action, Action::Rotate { .. }) && result.is_ok() {
            self.turned(device).await;
        }
        let outcome: ManualOutcome = match &result {
            Ok(o) => Ok(o.detail.clone()),
            Err(e) => Err((
                format!("{}: {e}", e.error_type()),
                json!({"error_type": e.error_type(), "selector": e.selector()}),
            )),
        };
        let recorded = match number() {
            Some(n) => {
                let m = ManualStep {
                    task_id,
                    n,
                    start,
                    obs: &obs,
                    size,
                    action,
                    outcome: outcome.clone(),
                    by,
                };
                self.record_manual(m).await.map(Some)
            }
            None => Ok(None),
        };
        Ok(ManualDone {
            shown,
            elements: obs.repr.actionable_elements,
            result,
            outcome,
            recorded,
            duration_ms: start.instant.elapsed().as_millis() as u64,
        })
    }
}

/// The detail a manual step's outcome shows: what it did, or the error and its detail.
pub fn outcome_detail(outcome: &ManualOutcome) -> Value {
    match outcome {
        Ok(d) => d.clone(),
        Err((error, d)) => json!({"error": error, "failure": d}),
    }
}
