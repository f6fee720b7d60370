//! The settle phase: after an action that should change the screen, read the screen once
//! the UI has gone idle, and make that reading the next step's observation.
//!
//! On Android the dump is the settle signal. `uiautomator dump` waits for the UI to go
//! idle before it reads the tree (`waitForIdle(1000, 10000)` in AOSP's `DumpCommand`: no
//! accessibility event for 1 s, at most 10 s) and answers "could not get idle state" when
//! it never does. So once the input's own command has returned, the runner dumps once and
//! then takes one screenshot, after the dump, so the picture shows the idle screen the tree
//! describes: one dump and one screenshot per step, which are also the next step's
//! observation (the same screen is never read twice). The virtual phone applies an input
//! at once and never animates, so its first dump is idle too; every backend keeps that
//! contract (`Device::hierarchy`).
//!
//! A changed tree is a change: its layout, or the digits the layout hash leaves out (a
//! counter that moved is on the screen too). An unchanged tree may hide a change the tree
//! cannot show (a canvas, a map, a web view without nodes), so the two screenshots' coarse
//! fingerprints (`Thumb`) are compared too. When neither moved, the
//! app may still answer late (a network round trip): the screen is watched by screenshots
//! alone, cheap on a phone, every `settle_poll_ms` until it moves or `settle_timeout_ms`
//! passes, and a late change is read again. A PNG is decoded for a fingerprint only on
//! that path, and only when its bytes differ from the starting picture's; never on a
//! step whose tree changed. An observation keeps its fingerprint, so the settled picture,
//! which the next step starts from, is decoded once (a decode is ~2 ms at 1080 × 2400:
//! these were the server's slowest steps).

use std::ops::ControlFlow::{Break as Stop, Continue};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::act::Acted;
use super::observe::{Capture, Observed};
use super::record::{StepDraft, Then};
use super::state::RunState;
use super::{Break, Phase, Runner};
use crate::device::Device;
use crate::device::thumb::Thumb;
use crate::domain::{Action, ScreenSize};
use crate::run::stop::unless_cancelled;

/// What settling found: whether the screen changed (None: could not tell), the layout it
/// held still at (None: never read), and the observation taken once idle.
#[derive(Default)]
struct Settled {
    changed: Option<bool>,
    idle: Option<u64>,
    obs: Option<Observed>,
}

impl Settled {
    /// The idle observation as read: changed when its tree or its picture moved.
    fn read(obs: Observed, changed: bool) -> Settled {
        Settled {
            changed: Some(changed),
            idle: obs.layout,
            obs: Some(obs),
        }
    }
}

impl Runner {
    /// Settles after a device action that succeeded and records it as ok (keeping an
    /// action a recovery hook replaced in its detail); anything else the act phase did
    /// has nothing to settle. Returns the step's outcome as the agent's history tells it.
    /// A cancel meanwhile keeps the step (the action ran) and the boundary then ends the
    /// task.
    pub(super) async fn settle_phase(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        acted: Acted,
        draft: &mut StepDraft,
    ) -> Phase<String> {
        let ran = match acted {
            Acted::Ran(ran) => ran,
            Acted::Told(outcome) => return Ok(Continue(outcome)),
        };
        let started = Instant::now();
        let settling = self.settle_after(device, &ran.action, &ran.before, st.size());
        let settled = unless_cancelled(st.stop(), settling).await;
        draft.step.timings.settle_ms = started.elapsed().as_millis() as u64;
        let cancelled_settling = settled.is_none();
        let Settled { changed, idle, obs } = settled.unwrap_or_default();
        // The layout the step left the screen in, once it held still (external changes
        // are measured against it at the next observation). The settled screen is the
        // next step's, unless a pause lets the screen move on, or its dump failed (the
        // next step tries afresh rather than act blind).
        let next = obs.filter(|o| self.cfg.step_delay_ms == 0 && o.screen.is_some());
        st.settled(idle, next);
        // The tool's result carries how long the device took to do it.
        let mut detail = ran.detail;
        let ms = serde_json::Value::from(draft.step.timings.action_ms);
        match &mut detail {
            serde_json::Value::Object(m) => {
                m.entry("duration_ms").or_insert(ms);
            }
            d => *d = serde_json::json!({"duration_ms": ms, "detail": d.take()}),
        }
        draft.ok(changed, Some(detail));
        if let Some((original, error)) = ran.replaced {
            draft.replaced(&original, &error);
        }
        let delay = Duration::from_millis(self.cfg.step_delay_ms);
        let cancelled = cancelled_settling
            || (self.cfg.step_delay_ms > 0
                && unless_cancelled(st.stop(), tokio::time::sleep(delay))
                    .await
                    .is_none());
        if cancelled {
            return Ok(Stop(Break::Commit(Then::Next)));
        }
        Ok(Continue(
            match changed {
                Some(true) => crate::agent::context::ORDINARY_OUTCOME,
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
        let relaunched = crate::run::app_control::launches(action);
        if !(action.expects_screen_change() || relaunched) || before.layout.is_none() {
            return Settled::default();
        }
        // The tree could not be read after the action: the next step observes afresh.
        let Some(obs) = self.read_idle(device, size).await else {
            return Settled::default();
        };
        // The app was stopped and started again: the screen it left is not what the launch
        // is measured against (its first screen often looks the same), and the dump
        // waited for the launched app to go idle.
        if relaunched {
            return Settled::read(obs, true);
        }
        // The tree with its digits (a counter, a price: text the layout hash leaves out
        // but a picture would show), read without decoding one.
        if obs.content != before.content {
            return Settled::read(obs, true);
        }
        // The same tree: did the picture move?
        let Some(picture) = Picture::of(before) else {
            return Settled::read(obs, false);
        };
        if Picture::of(&obs).is_some_and(|p| picture.moved(&p)) {
            return Settled::read(obs, true);
        }
        if !self.watch(device, &picture).await {
            return Settled::read(obs, false);
        }
        match self.read_idle(device, size).await {
            Some(late) => Settled::read(late, true),
            None => Settled::default(),
        }
    }

    /// One dump (which waits for idle), then one screenshot. None when the tree could not
    /// be read (never idle, or the dump failed).
    async fn read_idle(&self, device: &dyn Device, size: ScreenSize) -> Option<Observed> {
        let obs = self.observe_with(device, size, Capture::TreeFirst).await;
        obs.ok().filter(|o| o.layout.is_some())
    }

    /// Watches the picture for a late change until `settle_timeout_ms`, one screenshot
    /// every `settle_poll_ms` at most (a phone's screencap is slower than that; this only
    /// paces an instant virtual one). True when it moved.
    async fn watch(&self, device: &dyn Device, picture: &Picture<'_>) -> bool {
        let deadline = Instant::now() + Duration::from_millis(self.cfg.settle_timeout_ms);
        let poll = Duration::from_millis(self.cfg.settle_poll_ms.max(10));
        while Instant::now() + poll < deadline {
            tokio::time::sleep(poll).await;
            // Screenshots that cannot tell (black, or failing): the tree said unchanged.
            let Ok(png) = device.screenshot().await.and_then(|s| s.png()) else {
                return false;
            };
            if picture.moved(&Picture::new(&png, &OnceLock::new())) {
                return true;
            }
        }
        false
    }
}

/// A captured picture, to tell whether a later one moved. The same PNG bytes are the
/// same picture (a deterministic encoder: the virtual phone's, and in practice
/// `screencap -p`'s), at the cost of a compare; only different bytes are decoded into
/// fingerprints, each picture at most once (an observation keeps its own, so the settled
/// picture is not decoded again when the next step starts from it).
struct Picture<'a> {
    png: &'a Bytes,
    thumb: &'a OnceLock<Option<Thumb>>,
}

impl<'a> Picture<'a> {
    fn new(png: &'a Bytes, thumb: &'a OnceLock<Option<Thumb>>) -> Self {
        Picture { png, thumb }
    }

    /// An observation's screenshot, with its fingerprint cell; None without one.
    fn of(obs: &'a Observed) -> Option<Self> {
        obs.png.as_ref().map(|png| Picture::new(png, &obs.thumb))
    }

    fn thumb(&self) -> Option<&Thumb> {
        self.thumb.get_or_init(|| Thumb::of_png(self.png)).as_ref()
    }

    /// Whether `later` shows a visibly different screen. Unreadable pixels (a black or
    /// broken capture) tell nothing: not moved.
    fn moved(&self, later: &Picture<'_>) -> bool {
        if later.png == self.png {
            return false;
        }
        match (self.thumb(), later.thumb()) {
            (Some(a), Some(b)) => !a.same(b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Screenshot, ScreenshotData};

    fn png(luma: u8) -> Bytes {
        let (width, height) = (54, 120);
        let px = [luma, luma, luma, 255].repeat((width * height) as usize);
        let shot = Screenshot {
            width,
            height,
            data: ScreenshotData::Rgba(Bytes::from(px)),
        };
        shot.png().unwrap()
    }

    /// Settle's cost on a still tree: equal bytes are never decoded, and a picture that
    /// is decoded keeps its fingerprint in its own cell (the observation's), for the next
    /// step's comparison.
    #[test]
    fn pictures_are_decoded_only_when_their_bytes_differ_and_then_kept() {
        let (dark, light) = (png(10), png(200));
        let (before, same, later) = (OnceLock::new(), OnceLock::new(), OnceLock::new());
        let start = Picture::new(&dark, &before);
        assert!(!start.moved(&Picture::new(&dark.clone(), &same)));
        assert!(
            before.get().is_none() && same.get().is_none(),
            "decoded equal bytes"
        );
        assert!(start.moved(&Picture::new(&light, &later)));
        assert!(before.get().is_some_and(Option::is_some));
        assert!(later.get().is_some_and(Option::is_some));
    }
}
