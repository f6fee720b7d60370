//! `PhoneClock`: a `Device` wrapper that measures the phone's own time, for
//! `droidpilot bench flows`. Everything a device call takes, from the call to its answer,
//! is the phone's: the latency its profile charges (a real phone's dump, screencap or
//! input) and, on the virtual phone, building, rendering and PNG-encoding the screen
//! (what a real phone does on its own cores, inside its screencap's time). The clock
//! keeps the union of the intervals in which at least one call is in flight, so two
//! captures taken together count once, as the wall time they cost; what a task's wall
//! time leaves beyond it is droidpilot's own. It also sums the calls' times by kind.
//! It reads tokio's clock (the real one outside tests).
//!
//! Hand-written: a measuring decorator of this crate's own trait, no crate does it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use async_trait::async_trait;
use serde::Serialize;

use crate::device::{
    AppInfo, AppWindow, CurrentApp, Device, DeviceError, DeviceInfo, DeviceLocale, ScreenState,
    Screenshot, WindowState,
};
use crate::domain::{AppRef, Key, Orientation, PixelPoint};

/// The kinds of call the clock sums apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dump,
    Screencap,
    /// Taps, swipes, typing, keys, launches, app control.
    Action,
    /// `current_app`, `installed_apps`, window and screen state, info.
    Query,
    /// `wait`: the pause between two reads of a wait. Not the phone's time: a real
    /// phone sleeps because droidpilot asked it to (the virtual phone moves its clock
    /// and takes no real time), so it stays out of `busy_ms`.
    Wait,
}

/// What the clock measured.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PhoneTime {
    /// Time with at least one call in flight (`wait` aside), ms.
    pub busy_ms: f64,
    pub dump_ms: f64,
    pub screencap_ms: f64,
    pub action_ms: f64,
    pub query_ms: f64,
    pub wait_ms: f64,
    /// Calls, by kind.
    pub dumps: u64,
    pub screencaps: u64,
    pub actions: u64,
    pub queries: u64,
    pub waits: u64,
}

impl PhoneTime {
    /// Calls of every kind but `wait` (the device commands a step sends).
    pub fn commands(&self) -> u64 {
        self.dumps + self.screencaps + self.actions + self.queries
    }

    fn add(&mut self, kind: Kind, took: Duration) {
        let ms = took.as_secs_f64() * 1000.0;
        let (sum, n) = match kind {
            Kind::Dump => (&mut self.dump_ms, &mut self.dumps),
            Kind::Screencap => (&mut self.screencap_ms, &mut self.screencaps),
            Kind::Action => (&mut self.action_ms, &mut self.actions),
            Kind::Query => (&mut self.query_ms, &mut self.queries),
            Kind::Wait => (&mut self.wait_ms, &mut self.waits),
        };
        *sum += ms;
        *n += 1;
    }
}

#[derive(Default)]
struct State {
    in_flight: u32,
    since: Option<Instant>,
    time: PhoneTime,
}

/// The clock, shared by the wrapper and whoever reads it.
#[derive(Clone, Default)]
pub struct PhoneClock(Arc<Mutex<State>>);

impl PhoneClock {
    pub fn read(&self) -> PhoneTime {
        let g = self.lock();
        let mut t = g.time;
        if let Some(since) = g.since {
            t.busy_ms += since.elapsed().as_secs_f64() * 1000.0;
        }
        t
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(&self, kind: Kind) -> Call<'_> {
        let mut g = self.lock();
        if kind != Kind::Wait {
            if g.in_flight == 0 {
                g.since = Some(Instant::now());
            }
            g.in_flight += 1;
        }
        Call {
            clock: self,
            kind,
            at: Instant::now(),
        }
    }
}

/// One call in flight; its end (also when the call is dropped unfinished) stops it.
struct Call<'a> {
    clock: &'a PhoneClock,
    kind: Kind,
    at: Instant,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let mut g = self.clock.lock();
        g.time.add(self.kind, self.at.elapsed());
        if self.kind == Kind::Wait {
            return;
        }
        g.in_flight -= 1;
        if g.in_flight == 0
            && let Some(since) = g.since.take()
        {
            g.time.busy_ms += since.elapsed().as_secs_f64() * 1000.0;
        }
    }
}

/// A device whose calls `clock` times.
pub struct Timed {
    pub inner: Arc<dyn Device>,
    pub clock: PhoneClock,
}

macro_rules! timed {
    ($self:ident, $kind:expr, $call:expr) => {{
        let _call = $self.clock.start($kind);
        $call.await
    }};
}

#[async_trait]
impl Device for Timed {
    fn serial(&self) -> &str {
        self.inner.serial()
    }
    async fn info(&self) -> Result<DeviceInfo, DeviceError> {
        timed!(self, Kind::Query, self.inner.info())
    }
    async fn screenshot(&self) -> Result<Screenshot, DeviceError> {
        timed!(self, Kind::Screencap, self.inner.screenshot())
    }
    async fn hierarchy(&self) -> Result<String, DeviceError> {
        timed!(self, Kind::Dump, self.inner.hierarchy())
    }
    async fn tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.tap(p))
    }
    async fn long_press(&self, p: PixelPoint, ms: u64) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.long_press(p, ms))
    }
    async fn double_tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.double_tap(p))
    }
    async fn swipe(&self, from: PixelPoint, to: PixelPoint, ms: u64) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.swipe(from, to, ms))
    }
    async fn type_text(&self, text: &str) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.type_text(text))
    }
    async fn clear_text(&self) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.clear_text())
    }
    async fn key(&self, key: Key) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.key(key))
    }
    async fn launch_app(&self, app: &AppRef) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.launch_app(app))
    }
    async fn current_app(&self) -> Result<CurrentApp, DeviceError> {
        timed!(self, Kind::Query, self.inner.current_app())
    }
    async fn installed_apps(&self) -> Result<Vec<AppInfo>, DeviceError> {
        timed!(self, Kind::Query, self.inner.installed_apps())
    }
    async fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.open_url(url))
    }
    async fn screen_state(&self) -> Result<ScreenState, DeviceError> {
        timed!(self, Kind::Query, self.inner.screen_state())
    }
    async fn wait(&self, ms: u64) {
        timed!(self, Kind::Wait, self.inner.wait(ms))
    }
    async fn stop_app(&self, package: &str) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.stop_app(package))
    }
    async fn clear_app_data(&self, package: &str) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.clear_app_data(package))
    }
    async fn rotate(&self, o: Orientation) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.rotate(o))
    }
    async fn locale(&self) -> Result<DeviceLocale, DeviceError> {
        timed!(self, Kind::Query, self.inner.locale())
    }
    async fn window_state(&self) -> Result<WindowState, DeviceError> {
        timed!(self, Kind::Query, self.inner.window_state())
    }
    async fn split_screen(&self, top: &AppRef, bottom: &AppRef) -> Result<(), DeviceError> {
        timed!(self, Kind::Action, self.inner.split_screen(top, bottom))
    }
    async fn windows(&self) -> Result<Vec<AppWindow>, DeviceError> {
        timed!(self, Kind::Query, self.inner.windows())
    }
    async fn health(&self) -> Result<(), DeviceError> {
        self.inner.health().await
    }
    async fn reconnect(&self) -> Result<(), DeviceError> {
        self.inner.reconnect().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::sim::{LatencyProfile, SimConfig, SimDevice};

    /// Two captures in flight together count once in `busy_ms`, each in its own sum.
    #[tokio::test(start_paused = true)]
    async fn overlapping_calls_count_once_as_busy_time() {
        let sim = SimDevice::new(SimConfig {
            latency_profile: LatencyProfile::Pixel8,
            ..Default::default()
        })
        .unwrap();
        let clock = PhoneClock::default();
        let d = Timed {
            inner: Arc::new(sim),
            clock: clock.clone(),
        };
        let _ = tokio::join!(d.hierarchy(), d.screenshot());
        let t = clock.read();
        assert_eq!((t.dumps, t.screencaps), (1, 1));
        assert!(t.busy_ms >= t.dump_ms.max(t.screencap_ms));
        assert!(t.busy_ms < t.dump_ms + t.screencap_ms);
    }
}
