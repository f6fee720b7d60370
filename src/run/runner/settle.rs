//! The settle phase: after an action that should change the screen, poll the layout hash
//! until it changes and holds still (bounded by `settle_timeout_ms`); no fixed sleeps
//! besides the optional `step_delay_ms`.

use std::ops::ControlFlow::{Break as Stop, Continue};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::record::{StepDraft, Then};
use super::state::RunState;
use super::stop::unless_cancelled;
use super::{Break, Phase, Runner};
use crate::device::Device;
use crate::domain::Action;
use crate::screen::layout_hash;

impl Runner {
    /// Settles after a successful action and records it as ok. A cancel meanwhile keeps
    /// the step (the action ran) and the boundary then ends the task.
    pub(super) async fn settle_phase(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        action: &Action,
        before: Option<u64>,
        detail: Value,
        draft: &mut StepDraft,
    ) -> Phase<String> {
        let started = Instant::now();
        let settling = self.settle_after(device, action, before);
        let settled = unless_cancelled(&mut st.stop, settling).await;
        draft.step.timings.settle_ms = started.elapsed().as_millis() as u64;
        let (changed, idle) = settled.flatten().unzip();
        // The layout the step left the screen in, once it held still (external changes
        // are measured against it at the next observation).
        st.settled = idle.flatten();
        draft.ok(changed, Some(detail));
        let delay = Duration::from_millis(self.cfg.step_delay_ms);
        let cancelled = settled.is_none()
            || (self.cfg.step_delay_ms > 0
                && unless_cancelled(&mut st.stop, tokio::time::sleep(delay))
                    .await
                    .is_none());
        if cancelled {
            return Ok(Stop(Break::Commit(Then::Next)));
        }
        Ok(Continue(
            match changed {
                Some(true) => "screen changed",
                Some(false) => "no visible change",
                None => "done",
            }
            .into(),
        ))
    }

    /// `settle` for an action that is expected to change the screen; None otherwise.
    async fn settle_after(
        &self,
        device: &dyn Device,
        action: &Action,
        before: Option<u64>,
    ) -> Option<(bool, Option<u64>)> {
        if action.expects_screen_change() {
            self.settle(device, before).await
        } else {
            None
        }
    }

    /// Waits until the layout differs from `before` and then holds still, or until the
    /// settle timeout. Returns whether it changed (None when it could not tell), and the
    /// layout it held still at (None when it never did).
    async fn settle(
        &self,
        device: &dyn Device,
        before: Option<u64>,
    ) -> Option<(bool, Option<u64>)> {
        let before = before?;
        let deadline = Instant::now() + Duration::from_millis(self.cfg.settle_timeout_ms);
        let poll = Duration::from_millis(self.cfg.settle_poll_ms.max(10));
        let mut last: Option<u64> = None;
        let mut changed = false;
        loop {
            if let Ok(xml) = device.hierarchy().await
                && let Ok(tree) = crate::screen::parse(&xml)
            {
                let h = layout_hash(&tree).0;
                if h != before {
                    changed = true;
                }
                // Idle: a change happened and the next read shows the same layout.
                if changed && last == Some(h) {
                    return Some((true, Some(h)));
                }
                last = Some(h);
            }
            if Instant::now() >= deadline {
                // Unchanged all along: the screen held still where it was.
                return Some((changed, (!changed).then_some(before)));
            }
            if !changed {
                // Nothing yet: poll again soon. After a change, the next read confirms idleness.
                tokio::time::sleep(poll).await;
            }
        }
    }
}
