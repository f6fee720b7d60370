//! The settle phase: after an action that should change the screen, wait until the screen
//! has changed and holds still (bounded by `settle_timeout_ms`), by the cheapest signal
//! first, then observe once. No fixed sleeps besides the optional `step_delay_ms`.
//!
//! On a real phone a `uiautomator dump` costs ~2 s and a `screencap` ~250 ms, so the
//! screen is watched with screenshots reduced to a coarse fingerprint (`Thumb`): the
//! input's own completion starts the watch, a fingerprint unlike the pre-action one is a
//! change, two equal fingerprints in a row are stillness. Only then is the hierarchy
//! dumped, once, beside the foreground activity, and that observation (with the last
//! screenshot) becomes the next step's, so the same screen is never read twice. Where
//! screenshots cannot tell (a secure window captures black, or the capture fails), the
//! layout hash of successive dumps decides, as before.

use std::ops::ControlFlow::{Break as Stop, Continue};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::observe::Observed;
use super::record::{StepDraft, Then};
use super::state::RunState;
use super::stop::unless_cancelled;
use super::{Break, Phase, Runner};
use crate::device::thumb::Thumb;
use crate::device::{Device, Screenshot};
use crate::domain::{Action, ScreenSize};
use crate::screen::layout_hash;

/// What settling found: whether the layout changed (None: could not tell), the layout it
/// held still at (None: never still), and the observation taken once still.
#[derive(Default)]
struct Settled {
    changed: Option<bool>,
    idle: Option<u64>,
    obs: Option<Observed>,
}

/// What watching screenshots ended with.
enum Watch {
    /// Two equal fingerprints after a change (or none by the deadline): this capture.
    Still { shot: Screenshot, moved: bool },
    /// Screenshots cannot tell (black or failing): fall back to dumps.
    Blind,
}

impl Runner {
    /// Settles after a successful action and records it as ok. A cancel meanwhile keeps
    /// the step (the action ran) and the boundary then ends the task.
    pub(super) async fn settle_phase(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        action: &Action,
        before: &Observed,
        detail: Value,
        draft: &mut StepDraft,
    ) -> Phase<String> {
        let started = Instant::now();
        let settling = self.settle_after(device, action, before, st.size);
        let settled = unless_cancelled(&mut st.stop, settling).await;
        draft.step.timings.settle_ms = started.elapsed().as_millis() as u64;
        let cancelled_settling = settled.is_none();
        let Settled { changed, idle, obs } = settled.unwrap_or_default();
        // The layout the step left the screen in, once it held still (external changes
        // are measured against it at the next observation).
        st.settled = idle;
        // The settled screen is the next step's, unless a pause lets the screen move on,
        // or its dump failed (the next step tries afresh rather than act blind).
        if self.cfg.step_delay_ms == 0 {
            st.cached = obs.filter(|o| o.screen.is_some());
        }
        draft.ok(changed, Some(detail));
        let delay = Duration::from_millis(self.cfg.step_delay_ms);
        let cancelled = cancelled_settling
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

    /// `settle` for an action that is expected to change the screen; nothing otherwise.
    async fn settle_after(
        &self,
        device: &dyn Device,
        action: &Action,
        before: &Observed,
        size: ScreenSize,
    ) -> Settled {
        match (action.expects_screen_change(), before.layout) {
            (true, Some(layout)) => match &before.thumb {
                Some(thumb) => {
                    self.settle_by_screenshots(device, layout, thumb, size)
                        .await
                }
                None => self.settle_by_dumps(device, layout).await,
            },
            _ => Settled::default(),
        }
    }

    /// Screenshots until the screen moved and held still (or the deadline), then one
    /// observation reusing the last screenshot.
    async fn settle_by_screenshots(
        &self,
        device: &dyn Device,
        before: u64,
        thumb: &Thumb,
        size: ScreenSize,
    ) -> Settled {
        let (shot, moved) = match self.watch(device, thumb).await {
            Watch::Still { shot, moved } => (shot, moved),
            Watch::Blind => return self.settle_by_dumps(device, before).await,
        };
        let Ok(obs) = self.observe_with(device, size, Some(shot)).await else {
            return Settled {
                changed: Some(moved),
                ..Settled::default()
            };
        };
        let changed = obs.layout.map_or(moved, |l| l != before);
        Settled {
            changed: Some(changed),
            idle: obs.layout,
            obs: Some(obs),
        }
    }

    /// Watches the screen by fingerprints. Polls no faster than `settle_poll_ms` (a real
    /// phone's screencap is slower than that, so this only paces an instant virtual one).
    async fn watch(&self, device: &dyn Device, before: &Thumb) -> Watch {
        let deadline = Instant::now() + Duration::from_millis(self.cfg.settle_timeout_ms);
        let poll = Duration::from_millis(self.cfg.settle_poll_ms.max(10));
        let mut last = before.clone();
        let mut moved = false;
        loop {
            let next_poll = tokio::time::Instant::now() + poll;
            let shot = match device.screenshot().await {
                Ok(s) if !s.is_black() => s,
                _ => return Watch::Blind,
            };
            let Some(now) = Thumb::of(&shot) else {
                return Watch::Blind;
            };
            let still = now.same(&last);
            if !still {
                moved = true;
            }
            // Still after a change, or out of time (then this is the screen as it is).
            if (still && moved) || Instant::now() >= deadline {
                return Watch::Still { shot, moved };
            }
            last = now;
            if !moved {
                tokio::time::sleep_until(next_poll).await;
            }
        }
    }

    /// The fallback: dumps until the layout differs from `before` and then holds still, or
    /// until the settle timeout. No observation is kept (the next step captures afresh).
    async fn settle_by_dumps(&self, device: &dyn Device, before: u64) -> Settled {
        let deadline = Instant::now() + Duration::from_millis(self.cfg.settle_timeout_ms);
        let poll = Duration::from_millis(self.cfg.settle_poll_ms.max(10));
        let mut last: Option<u64> = None;
        let mut changed = false;
        loop {
            let next_poll = tokio::time::Instant::now() + poll;
            if let Ok(xml) = device.hierarchy().await
                && let Ok(tree) = crate::screen::parse(&xml)
            {
                let h = layout_hash(&tree).0;
                if h != before {
                    changed = true;
                }
                // Idle: a change happened and the next read shows the same layout.
                if changed && last == Some(h) {
                    return Settled {
                        changed: Some(true),
                        idle: Some(h),
                        obs: None,
                    };
                }
                last = Some(h);
            }
            if Instant::now() >= deadline {
                // Unchanged all along: the screen held still where it was.
                return Settled {
                    changed: Some(changed),
                    idle: (!changed).then_some(before),
                    obs: None,
                };
            }
            if !changed {
                // Nothing yet: poll again soon. After a change, the next read confirms idleness.
                tokio::time::sleep_until(next_poll).await;
            }
        }
    }
}
