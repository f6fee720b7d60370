//! The virtual phone: a deterministic Android phone that implements `Device` in-process.
//!
//! `SimDevice` holds a `PhoneState` (plain data), builds the screen from it on demand
//! (`ui::build`), and derives the hierarchy XML, the screenshot and touch hit-testing
//! from that one widget tree. Time is virtual: every command advances the clock by a
//! fixed amount (`advance_clock` for explicit waits), so the same commands always give
//! the same screens, byte for byte. Faults (`SimFaults`) are seeded the same way.
//! Optional real-time pacing (`SimConfig::pace_ms`, `pacing`) sleeps after commands so
//! people can watch; it never changes what the phone does. A latency profile
//! (`SimConfig::latency_profile`, `latency`) makes each command take a real phone's time
//! (a dump ~2 s on `pixel-8`) and counts the commands served by kind; the adbd that
//! `droidpilot sim` runs serves this device, so the profile applies over ADB too.
//!
//! This crate is also the simulated adbd (`adbd`): the ADB wire protocol served over TCP
//! for this phone, so the real `adb` and the application's ADB backend are tested
//! against it. Both are test worlds, kept out of the product's other crates with their
//! font, rendering and thread-pool dependencies.
//!
//! Submodules: `state` (data and reducer), `ui` (system chrome, launcher, recents),
//! `apps/` (one file per app), `widget` (tree, XML, hit-testing), `render` (pixels),
//! `faults`, `latency` (per-command real time and counters), `drift` (moved elements, changed labels, a release's layout changes), `reflow` (rows grow for text that wraps), `redesign` (icon buttons, grids, overflow menu, new dialogs), `identity` (what a touch hit, before drift; the apps' data for diffing), `locale` (the UI language), `renames` (id and string rename maps), `split` (two apps in split-screen windows), `tasks` (scored tasks with checkers and reference solutions), `record` (the phone's own screen recording, a frame per change), `apk` (each app's string resources as a real `resources.arsc` in a `base.apk`).

pub mod adbd;
pub mod apk;
pub mod apps;
pub mod cpu;
pub mod drift;
pub mod faults;
pub mod identity;
pub mod latency;
pub mod locale;
pub mod record;
pub mod redesign;
pub mod reflow;
pub mod renames;
pub mod render;
pub mod split;
pub mod state;
pub mod tasks;
pub mod ui;
pub mod widget;
pub mod windows;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use droidpilot_core::domain::{AppRef, Key, Orientation, PixelPoint, ScreenSize};

use droidpilot_core::device::ScreenshotData;
use droidpilot_core::device::{
    AppInfo, CurrentApp, Device, DeviceError, DeviceInfo, ScreenState, Screenshot,
};

pub use faults::{IDLE_STATE_ERROR, NULL_ROOT_ERROR, SimFaults};
pub use identity::{TouchKind, Touched};
pub use latency::{CommandCounts, DeviceOp, LatencyProfile, SimCounters};
pub use locale::Locale;
pub use renames::RenameMap;
pub use state::{AppId, Cmd, Fg, Page, PhoneState};
pub use tasks::{Difficulty, Fact, SimTask, run_reference, task, tasks};

use state::Dialog;
use widget::{Hit, IdStyle, Screen, Widget};

/// Virtual ms each kind of command takes.
pub const TAP_MS: u64 = 400;
pub const OBSERVE_MS: u64 = 250;
pub const KEY_MS: u64 = 300;
pub const LAUNCH_MS: u64 = 800;
/// Movement below this many pixels is a tap, not a swipe (Android's touch slop).
pub const TOUCH_SLOP: i32 = 24;

/// Where the virtual phone is: its locale (by default; `SimConfig::locale` sets it), time
/// zone and SIM country (the adbd serves them as `getprop` values, as a real phone does).
pub const SIM_LOCALE: &str = "en-US";
pub const SIM_TIMEZONE: &str = "America/Los_Angeles";
pub const SIM_COUNTRY: &str = "us";
/// The `versionCode` every app of the virtual phone reports.
pub const SIM_APP_VERSION: &str = "1";

/// One virtual phone's configuration (`[[devices.sim]]` in the config file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    pub serial: String,
    pub model: String,
    pub width: u32,
    pub height: u32,
    pub density: u32,
    /// Seeds every random fault (and the reordered-list permutation).
    pub seed: u64,
    pub faults: SimFaults,
    /// A task id from `tasks()` whose initial state the phone starts in.
    pub task: Option<String>,
    /// Real milliseconds to sleep after each action (tap, swipe, key, typing, launch,
    /// wait), so that a person can watch a task; 0 (the default) sleeps never.
    pub pace_ms: u64,
    /// `virtual` (default): commands take no real time. `realistic`: each command also
    /// takes its virtual duration in real time (a tap 400 ms, a launch 800 ms, a screen
    /// read 250 ms, a wait its length).
    pub pacing: Pacing,
    /// How long each command takes in real time, as on a real phone: `fast` (default, no
    /// time), `pixel-8`, `budget` (see `latency::LatencyProfile` for the figures and
    /// their sources).
    pub latency_profile: LatencyProfile,
    /// The UI language of the whole phone: `en` (default) or `de`.
    pub locale: Locale,
    /// Android's font size setting: text grows by this factor, and list rows with it,
    /// so fewer rows fit a screen (1.0, the default; 0.5 to 3.0).
    pub font_scale: f32,
    /// Resource-ids and UI strings renamed, as by an app update (see `renames`).
    pub renames: RenameMap,
    /// Lay the screens out at `density` as Android does (a dp is density/160 pixels), so
    /// a 360 dp phone shows less per line than the 411 dp one the apps were drawn for and
    /// text wraps sooner; off (the default), the 1080-wide design stretches to the
    /// screen's shorter side.
    pub density_layout: bool,
}

/// How much real time the virtual phone's commands take (see `SimConfig::pacing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    #[default]
    Virtual,
    Realistic,
}

/// Most real time pacing may add to one command, so a typo cannot hang a phone.
pub const MAX_PACE_MS: u64 = 60_000;

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            serial: "sim-1".into(),
            model: "Pixel 8 (virtual)".into(),
            width: 1080,
            height: 2400,
            density: 420,
            seed: 0,
            faults: SimFaults::default(),
            task: None,
            pace_ms: 0,
            pacing: Pacing::Virtual,
            latency_profile: LatencyProfile::Fast,
            locale: Locale::En,
            font_scale: 1.0,
            renames: RenameMap::default(),
            density_layout: false,
        }
    }
}

impl SimConfig {
    /// Device pixels per design pixel: the apps are drawn for a 1080-pixel-wide phone at
    /// 420 dpi (411 dp), laid out at the phone's density (`density_layout`) or stretched
    /// to its shorter side.
    pub fn design_scale(&self) -> f32 {
        if self.density_layout {
            self.density as f32 / ui::DESIGN_DPI
        } else {
            self.width.min(self.height) as f32 / 1080.0
        }
    }

    pub fn validate(&self) -> Result<(), DeviceError> {
        if !(320..=4096).contains(&self.width) || !(320..=8192).contains(&self.height) {
            return Err(DeviceError::InvalidInput(format!(
                "sim screen {}x{} is out of range; use a width in 320..=4096 and a height in 320..=8192 (default 1080x2400)",
                self.width, self.height
            )));
        }
        if let Some(t) = &self.task
            && task(t).is_none()
        {
            return Err(DeviceError::InvalidInput(format!(
                "unknown sim task `{t}`; known tasks: {}",
                tasks().iter().map(|t| t.id).collect::<Vec<_>>().join(", ")
            )));
        }
        if self.pace_ms > MAX_PACE_MS {
            return Err(DeviceError::InvalidInput(format!(
                "sim pace_ms {} is over {MAX_PACE_MS}; use a real pause per action of at most a minute (500 is easy to watch)",
                self.pace_ms
            )));
        }
        if !(0.5..=3.0).contains(&self.font_scale) {
            return Err(DeviceError::InvalidInput(format!(
                "sim font_scale {} is out of range; use 0.5 to 3.0 (1.0 is the default, 1.3 Android's largest preset)",
                self.font_scale
            )));
        }
        if self.density_layout && !(120..=640).contains(&self.density) {
            return Err(DeviceError::InvalidInput(format!(
                "sim density {} is out of range for density_layout; use 120 to 640 dpi (420 is the default)",
                self.density
            )));
        }
        self.renames.validate().map_err(DeviceError::InvalidInput)?;
        self.faults.validate().map_err(DeviceError::InvalidInput)
    }
}

/// Everything needed to put a phone back exactly where it was: the state, the fault
/// stream's position, the command count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimSnapshot {
    pub state: PhoneState,
    pub rng_word_pos: u128,
    pub commands: u64,
    pub disconnected: bool,
}

struct Inner {
    st: PhoneState,
    faults: SimFaults,
    rng: ChaCha8Rng,
    commands: u64,
    disconnected: bool,
    /// The latency profile's jitter, its own stream so faults draw as they always did.
    jitter: ChaCha8Rng,
    /// The phone's seed (`SimConfig::seed`), for drifts decided on the state's side.
    seed: u64,
    /// The touches that hit a widget, oldest first (`identity`), the last `TOUCH_LOG`.
    touched: std::collections::VecDeque<Touched>,
    /// The screen recording's feed while one runs (`record`).
    recorder: Option<tokio::sync::mpsc::UnboundedSender<record::Msg>>,
}

/// How many touches `SimDevice::touched` keeps.
pub const TOUCH_LOG: usize = 10_000;

/// Seeds the jitter stream apart from the fault stream.
const JITTER_SEED: u64 = 0x6a69_7474_6572;

/// The virtual phone. Cheap to share behind an `Arc`; calls serialize on an internal lock
/// that is never held across an await.
pub struct SimDevice {
    cfg: SimConfig,
    inner: Mutex<Inner>,
    counters: SimCounters,
    /// Screenshots leave as PNG, encoded by the phone as `screencap -p` is on a real one.
    png_frames: bool,
    /// `cfg.renames`, shared with every screen built.
    renames: std::sync::Arc<RenameMap>,
    /// The screen's orientation (`user_rotation`, 0–3); the configured size is portrait.
    rotation: std::sync::atomic::AtomicU8,
}

impl std::fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevice")
            .field("serial", &self.cfg.serial)
            .finish()
    }
}

/// What a touch did, for the caller's own bookkeeping.
enum Gesture {
    Tap,
    Long,
}

impl SimDevice {
    /// A phone in its default state (or the configured task's initial state).
    pub fn new(cfg: SimConfig) -> Result<Self, DeviceError> {
        cfg.validate()?;
        let st = match cfg.task.as_deref().and_then(task) {
            Some(t) => t.initial_state(),
            None => PhoneState::default(),
        };
        Ok(SimDevice {
            inner: Mutex::new(Inner {
                st,
                faults: cfg.faults.clone(),
                rng: ChaCha8Rng::seed_from_u64(cfg.seed),
                commands: 0,
                disconnected: false,
                jitter: ChaCha8Rng::seed_from_u64(cfg.seed ^ JITTER_SEED),
                touched: Default::default(),
                seed: cfg.seed,
                recorder: None,
            }),
            counters: SimCounters::default(),
            renames: std::sync::Arc::new(cfg.renames.clone()),
            cfg,
            png_frames: false,
            rotation: Default::default(),
        })
    }

    /// Screenshots as PNG, encoded on the phone's side (its CPU counted in `counts()`),
    /// as a real phone's `screencap -p` sends them. Off by default: in-process callers
    /// that want pixels are spared an encode and a decode.
    pub fn with_png_frames(mut self) -> Self {
        self.png_frames = true;
        self
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The orientation the screen is turned to now.
    pub fn orientation(&self) -> Orientation {
        let r = self.rotation.load(std::sync::atomic::Ordering::Relaxed);
        Orientation::from_rotation(r).unwrap_or(Orientation::Portrait)
    }

    /// A dump's `<hierarchy rotation>` set to the screen's, as uiautomator writes it.
    fn turned(&self, xml: String) -> String {
        match self.orientation().rotation() {
            0 => xml,
            r => xml.replacen(
                "<hierarchy rotation=\"0\">",
                &format!("<hierarchy rotation=\"{r}\">"),
                1,
            ),
        }
    }

    /// The screen's width and height now: the configured size, turned with the phone.
    pub fn size(&self) -> (u32, u32) {
        let (w, h) = (self.cfg.width, self.cfg.height);
        if self.orientation().is_landscape() {
            (w.max(h), w.min(h))
        } else {
            (w, h)
        }
    }

    /// The commands served so far, by kind (never reset: benches take differences).
    pub fn counts(&self) -> CommandCounts {
        self.counters.get()
    }

    /// Charges one command's real time under the latency profile (plus `extra` on a
    /// phone that is not `fast`: a swipe's own duration) and counts it.
    async fn charge(&self, op: DeviceOp, extra_ms: u64) {
        let profile = self.cfg.latency_profile;
        let took = match profile {
            LatencyProfile::Fast => Duration::ZERO,
            p => {
                let u = self.lock().jitter.random::<f64>();
                p.sample(op, u) + Duration::from_millis(extra_ms)
            }
        };
        self.counters.count(op, took);
        if !took.is_zero() {
            tokio::time::sleep(took).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave PhoneState half-updated in a way
        // that matters more than losing the device, so recover the guard.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ctx(&self, faults: &SimFaults) -> ui::Ctx {
        let (w, h) = self.size();
        let mut cx = ui::Ctx::new(w, h);
        cx.s = self.cfg.design_scale();
        cx.reorder = faults.reorder_lists.then_some(self.cfg.seed);
        cx.extra_delay_ms = faults.delayed_elements_ms;
        cx.moved = faults.moved_elements.then_some(self.cfg.seed);
        cx.relabel = faults.changed_labels.then_some(self.cfg.seed);
        cx.renames = self.renames.clone();
        cx.locale = self.cfg.locale;
        cx.font_scale = self.cfg.font_scale;
        cx.icon_buttons = faults.icon_buttons.then_some(self.cfg.seed);
        cx.grid = faults.list_to_grid.then_some(self.cfg.seed);
        cx.overflow = faults.overflow_menu.then_some(self.cfg.seed);
        cx.confirm = faults.confirm_destructive.then_some(self.cfg.seed);
        cx.release = faults.release_layout.then_some(self.cfg.seed);
        cx
    }

    /// A copy of the phone's state (what task checkers read).
    pub fn state(&self) -> PhoneState {
        self.lock().st.clone()
    }
    /// An app's label as this phone's launcher shows it (in its locale).
    pub fn label_of(&self, app: AppId) -> String {
        match self.cfg.locale {
            Locale::En => app.label().into(),
            l => locale::german(app.label())
                .filter(|_| l == Locale::De)
                .unwrap_or_else(|| app.label().into()),
        }
    }

    /// The apps' data as task checkers read it, for diffing (`identity::app_data`).
    pub fn app_data(&self) -> serde_json::Value {
        identity::app_data(&self.lock().st)
    }
    /// The touches that hit a widget since the phone was made or reset, with each
    /// widget's drift-independent key (`identity`). Not part of what a device client
    /// sees: no dump, screenshot or ADB command carries it.
    pub fn touched(&self) -> Vec<Touched> {
        self.lock().touched.iter().cloned().collect()
    }
    /// Replaces the phone's state.
    pub fn set_state(&self, st: PhoneState) {
        self.lock().st = st;
    }
    pub fn faults(&self) -> SimFaults {
        self.lock().faults.clone()
    }
    /// Changes the faults at run time (the command counter restarts for
    /// `disconnect_after`).
    pub fn set_faults(&self, f: SimFaults) -> Result<(), DeviceError> {
        f.validate().map_err(DeviceError::InvalidInput)?;
        let mut g = self.lock();
        g.faults = f;
        g.commands = 0;
        Ok(())
    }
    pub fn snapshot(&self) -> SimSnapshot {
        let g = self.lock();
        SimSnapshot {
            state: g.st.clone(),
            rng_word_pos: g.rng.get_word_pos(),
            commands: g.commands,
            disconnected: g.disconnected,
        }
    }
    pub fn restore(&self, s: SimSnapshot) {
        let mut g = self.lock();
        g.st = s.state;
        g.rng = ChaCha8Rng::seed_from_u64(self.cfg.seed);
        g.rng.set_word_pos(s.rng_word_pos);
        g.commands = s.commands;
        g.disconnected = s.disconnected;
    }
    /// Puts the phone in a task's initial state, with a fresh fault stream.
    pub fn reset_to(&self, t: &SimTask) {
        let mut g = self.lock();
        g.st = t.initial_state();
        g.rng = ChaCha8Rng::seed_from_u64(self.cfg.seed);
        g.commands = 0;
        g.disconnected = false;
        g.touched.clear();
    }
    /// Back to the default state.
    pub fn reset(&self) {
        let mut g = self.lock();
        g.st = PhoneState::default();
        g.rng = ChaCha8Rng::seed_from_u64(self.cfg.seed);
        g.commands = 0;
        g.disconnected = false;
        g.touched.clear();
    }
    /// Lets virtual time pass (what a `wait` action means on this phone).
    pub fn advance_clock(&self, ms: u64) {
        self.lock().st.advance(ms);
    }
    /// The current screen's widget tree, without counting as a command.
    pub fn screen(&self) -> Screen {
        let g = self.lock();
        ui::build(&g.st, &self.ctx(&g.faults))
    }
    /// The hierarchy XML now, without faults or clock movement (benches, debugging).
    pub fn hierarchy_now(&self) -> String {
        let g = self.lock();
        let ids = if g.faults.renamed_ids {
            IdStyle::Renamed
        } else {
            IdStyle::AsIs
        };
        self.turned(widget::to_xml(&ui::build(&g.st, &self.ctx(&g.faults)), ids))
    }
    /// The screenshot pixels now, without faults or clock movement.
    pub fn render_now(&self) -> Vec<u8> {
        let screen = self.screen();
        let (w, h) = self.size();
        render::render(&screen, w, h, false)
    }
    /// Runs a command as if a widget that holds it were tapped (tests, tools).
    pub fn apply(&self, cmd: Cmd) {
        self.lock().st.apply(cmd);
    }
    /// The app windows on screen now (both halves in split-screen), with their bounds
    /// and which has the focus; no clock movement.
    pub fn app_windows(&self) -> Vec<split::AppWindow> {
        let g = self.lock();
        split::active_windows(&g.st, &self.ctx(&g.faults))
    }

    /// The real time a command takes: its virtual duration when pacing is realistic, plus
    /// `pace_ms` after an action. Never holds the state lock.
    async fn pace(&self, virtual_ms: u64, action: bool) {
        let mut ms = match self.cfg.pacing {
            Pacing::Virtual => 0,
            Pacing::Realistic => virtual_ms,
        };
        if action {
            ms += self.cfg.pace_ms;
        }
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// Counts a command and fails it when the connection is (or just went) down.
    fn begin(&self, g: &mut Inner) -> Result<(), DeviceError> {
        if g.disconnected {
            return Err(self.disconnected());
        }
        g.commands += 1;
        if let Some(n) = g.faults.disconnect_after
            && g.commands > n
        {
            g.disconnected = true;
            return Err(self.disconnected());
        }
        self.record_frame(g);
        Ok(())
    }

    /// Hands a running recording the screen as this command finds it.
    fn record_frame(&self, g: &mut Inner) {
        let Some(tx) = g.recorder.as_ref() else {
            return;
        };
        let seen = self.seen(g);
        if tx.send(record::Msg::Frame(Box::new(seen))).is_err() {
            g.recorder = None;
        }
    }

    /// The screen now, as the recording sees it (what a screenshot would show).
    fn seen(&self, g: &Inner) -> record::Seen {
        let screen = ui::build(&g.st, &self.ctx(&g.faults));
        let black = !g.st.awake || (g.faults.secure_black && screen.secure());
        record::Seen {
            at: std::time::Instant::now(),
            screen,
            black,
            size: self.size(),
        }
    }
    fn disconnected(&self) -> DeviceError {
        DeviceError::Disconnected {
            serial: self.cfg.serial.clone(),
        }
    }

    /// Logs a touch, keeping the last `TOUCH_LOG` (a phone a server keeps for days
    /// must not grow without bound).
    fn log_touch(g: &mut Inner, t: Touched) {
        if g.touched.len() >= TOUCH_LOG {
            g.touched.pop_front();
        }
        g.touched.push_back(t);
    }

    fn chance(g: &mut Inner, rate: f64) -> bool {
        rate > 0.0 && g.rng.random::<f64>() < rate
    }

    // Action commands on the state, without pacing (the `Device` methods add it).
    fn swipe_now(
        &self,
        from: PixelPoint,
        to: PixelPoint,
        duration_ms: u64,
    ) -> Result<(), DeviceError> {
        let (dx, dy) = (to.x - from.x, to.y - from.y);
        if dx.abs() < TOUCH_SLOP && dy.abs() < TOUCH_SLOP {
            return if duration_ms >= 500 {
                self.touch(from, Gesture::Long)
            } else {
                self.touch(from, Gesture::Tap)
            };
        }
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(duration_ms.clamp(100, 2_000));
        if !g.st.awake {
            return Ok(());
        }
        let rate = g.faults.dropped_tap_rate;
        if Self::chance(&mut g, rate) {
            return Ok(());
        }
        if g.st.locked {
            if dy < -(self.size().1 as i32 / 5) {
                g.st.locked = false;
            }
            return Ok(());
        }
        let cx = self.ctx(&g.faults);
        if split::on_divider(&g.st, &cx, from.y) {
            g.st.drag_divider(to.y, &cx);
            return Ok(());
        }
        let screen = ui::build(&g.st, &cx);
        let (win, hit) =
            screen.hit_window(from, &|w: &Widget| w.scroll.is_some() || w.slider.is_some());
        Self::focus_touched(&mut g.st, &screen, win);
        match hit {
            Hit::Widget(w) if w.slider.is_some() => {
                let touched = Touched {
                    kind: TouchKind::Slide,
                    key: identity::key(w).into_owned(),
                    package: g.st.package().into(),
                };
                Self::log_touch(&mut g, touched);
                if let Some(make) = w.slider {
                    let frac = (to.x - w.frame.left).clamp(0, w.frame.width().max(1)) as i64 * 255
                        / w.frame.width().max(1) as i64;
                    g.st.apply(make(frac as u8));
                }
            }
            Hit::Widget(w) => {
                if let Some(info) = &w.scroll {
                    if let Some(rest) = info.key.strip_prefix("picker:") {
                        // A NumberPicker: one value per row height swiped; up shows later values.
                        let mut parts = rest.rsplitn(2, ':');
                        let modulo = parts.next().and_then(|m| m.parse().ok()).unwrap_or(60);
                        let field = parts.next().unwrap_or_default().to_string();
                        let steps = (-dy as f32 / cx.d(170) as f32).round() as i32;
                        if steps != 0 {
                            g.st.apply(Cmd::Pick {
                                field,
                                delta: steps,
                                modulo,
                            });
                        }
                    } else if dy.abs() >= dx.abs() {
                        // Content follows the finger: dragging up by N shows N pixels more.
                        let v = (info.cur - dy).clamp(0, info.max);
                        g.st.scroll.insert(info.key.clone(), v);
                    }
                }
            }
            Hit::Blocked => {
                let from_lower = from.y > self.size().1 as i32 / 2;
                match g.st.fg {
                    Fg::Home
                        if dy < -(self.size().1 as i32 / 8)
                            && from_lower
                            && g.st.dialog.is_none() =>
                    {
                        g.st.apply(Cmd::OpenDrawer)
                    }
                    Fg::Drawer if dy > self.size().1 as i32 / 8 => g.st.home(),
                    _ => {}
                }
            }
        }
        Self::after_input(&mut g);
        Ok(())
    }

    fn type_text_now(&self, text: &str) -> Result<(), DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(KEY_MS);
        g.st.type_text(text);
        Ok(())
    }

    fn clear_text_now(&self) -> Result<(), DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(KEY_MS);
        g.st.clear_text();
        Ok(())
    }

    fn key_now(&self, key: Key) -> Result<(), DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(KEY_MS);
        match key {
            Key::Power => {
                let awake = !g.st.awake;
                Self::set_awake(&mut g.st, awake);
                return Ok(());
            }
            _ if !g.st.awake => return Ok(()),
            Key::Back => g.st.back(),
            Key::Home => {
                g.st.locked = false;
                g.st.home();
            }
            Key::Recents => {
                g.st.dialog = None;
                g.st.split = None;
                g.st.fg = Fg::Recents;
                g.st.focus = None;
                g.st.keyboard = false;
            }
            Key::Enter => g.st.enter(),
            Key::Menu => {}
        }
        Self::after_input(&mut g);
        Ok(())
    }

    fn launch_app_now(&self, app: &AppRef) -> Result<(), DeviceError> {
        let target = app_of(app)?;
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(LAUNCH_MS);
        match target {
            Some(a) => g.st.launch(a),
            None => g.st.home(),
        }
        Self::introduce(&mut g);
        Ok(())
    }

    fn split_now(&self, top: &AppRef, bottom: &AppRef) -> Result<(), DeviceError> {
        let app = |r: &AppRef| {
            app_of(r)?.ok_or_else(|| {
                DeviceError::InvalidInput(
                    "the launcher cannot be put in a split-screen window; name an app".into(),
                )
            })
        };
        let (t, b) = (app(top)?, app(bottom)?);
        if t == b {
            return Err(DeviceError::InvalidInput(format!(
                "{} cannot be in both split-screen windows; name two different apps",
                t.label()
            )));
        }
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(LAUNCH_MS);
        g.st.start_split(t, b);
        Ok(())
    }

    fn open_url_now(&self, url: &str) -> Result<(), DeviceError> {
        let u = url.trim();
        if !(u.starts_with("http://") || u.starts_with("https://")) || u.len() < 10 {
            return Err(DeviceError::InvalidInput(format!(
                "`{url}` is not an http(s) URL; pass a full URL such as https://example.com"
            )));
        }
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(LAUNCH_MS);
        g.st.launch(AppId::Browser);
        apps::browser::open(&mut g.st, u);
        Self::introduce(&mut g);
        Ok(())
    }

    /// Under `whats_new_dialog`, an app in the foreground for the first time shows its
    /// "what's new" dialog (once nothing else is in the way).
    fn introduce(g: &mut Inner) {
        if let Fg::App(app) = g.st.fg
            && g.faults.whats_new_dialog
            && g.st.dialog.is_none()
            && !g.st.locked
            && g.st.introduced.insert(app)
        {
            g.st.dialog = Some(redesign::whats_new(app, g.seed));
        }
    }

    /// After an input command: maybe a random pop-up.
    fn after_input(g: &mut Inner) {
        Self::introduce(g);
        if g.st.dialog.is_none() && matches!(g.st.fg, Fg::App(_)) {
            let rate = g.faults.popup_rate;
            if Self::chance(g, rate) {
                let pick = g.rng.random_range(0..3u32);
                let pkg = g.st.package();
                g.st.dialog = Some(match pick {
                    0 => Dialog::alert(
                        state::SYSTEMUI,
                        "battery",
                        "Battery low",
                        "15% battery remaining. Turn on Battery Saver?",
                    )
                    .button("android:id/button2", "Not now", Cmd::CloseDialog)
                    .button("android:id/button1", "Turn on", Cmd::CloseDialog),
                    1 => Dialog::alert(pkg, "rate", "Enjoying the app?", "Rate us on Google Play.")
                        .button("android:id/button2", "Later", Cmd::CloseDialog)
                        .button("android:id/button1", "Rate", Cmd::CloseDialog),
                    _ => Dialog::alert(
                        state::SYSTEMUI,
                        "update",
                        "System update available",
                        "Restart to install?",
                    )
                    .button("android:id/button2", "Later", Cmd::CloseDialog)
                    .button("android:id/button1", "Restart", Cmd::CloseDialog),
                });
            }
        }
    }

    fn touch(&self, p: PixelPoint, gesture: Gesture) -> Result<(), DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        g.st.advance(TAP_MS);
        if !g.st.awake {
            return Ok(());
        }
        let rate = g.faults.dropped_tap_rate;
        if Self::chance(&mut g, rate) {
            return Ok(());
        }
        let cx = self.ctx(&g.faults);
        let screen = ui::build(&g.st, &cx);
        let long = matches!(gesture, Gesture::Long);
        let want = |w: &Widget| {
            (long && w.on_long.is_some())
                || w.on_tap.is_some()
                || w.field.is_some()
                || w.slider.is_some()
        };
        let (win, hit) = screen.hit_window(p, &want);
        Self::focus_touched(&mut g.st, &screen, win);
        if let Hit::Widget(w) = hit {
            let in_dialog = win.is_some_and(|i| screen.windows[i].modal);
            let kind = match (long && w.on_long.is_some(), w.slider.is_some()) {
                (true, _) => TouchKind::LongPress,
                (false, true) => TouchKind::Slide,
                _ => TouchKind::Tap,
            };
            let touched = Touched {
                kind,
                key: identity::key(w).into_owned(),
                package: win
                    .map(|i| screen.windows[i].package.clone())
                    .unwrap_or_default(),
            };
            Self::log_touch(&mut g, touched);
            let cmd = if long && w.on_long.is_some() {
                w.on_long.clone()
            } else if let Some(f) = &w.field {
                Some(Cmd::Focus { field: f.clone() })
            } else if let Some(make) = w.slider {
                let frac = (p.x - w.frame.left).clamp(0, w.frame.width().max(1)) as i64 * 255
                    / w.frame.width().max(1) as i64;
                Some(make(frac as u8))
            } else {
                w.on_tap.clone()
            };
            if let Some(cmd) = cmd {
                if in_dialog {
                    g.st.dialog = None;
                }
                g.st.apply(cmd);
            }
        }
        Self::after_input(&mut g);
        Ok(())
    }

    /// In split-screen, the window a touch landed in takes the focus first.
    fn focus_touched(st: &mut PhoneState, screen: &Screen, win: Option<usize>) {
        let touched = win
            .and_then(|i| screen.windows.get(i))
            .and_then(|w| AppId::find(&w.package));
        if let Some(app) = touched {
            st.focus_window(app);
        }
    }

    fn set_awake(st: &mut PhoneState, awake: bool) {
        st.awake = awake;
        if !awake {
            st.locked = true;
            st.keyboard = false;
        }
    }
}

impl Screen {
    /// Hit-testing that also says which window took the touch.
    pub fn hit_window(
        &self,
        p: PixelPoint,
        want: &dyn Fn(&Widget) -> bool,
    ) -> (Option<usize>, Hit<'_>) {
        for (i, w) in self.windows.iter().enumerate().rev() {
            if !w.touchable || !w.root.bounds.contains(p) {
                continue;
            }
            return match w.root.hit(p, want) {
                Some(x) => (Some(i), Hit::Widget(x)),
                None => (Some(i), Hit::Blocked),
            };
        }
        (None, Hit::Blocked)
    }
}

impl SimDevice {
    /// `am force-stop` (`clear: false`) or `pm clear` (`clear: true`) of an app.
    async fn app_data_op(&self, package: &str, clear: bool) -> Result<(), DeviceError> {
        let r = match app_of(&AppRef::Package(package.to_string())) {
            Ok(Some(app)) => {
                let mut g = self.lock();
                self.begin(&mut g).map(|_| match clear {
                    true => g.st.clear_data(app),
                    false => g.st.stop(app),
                })
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        self.charge(DeviceOp::Am, 0).await;
        r
    }
}

fn app_of(app: &AppRef) -> Result<Option<AppId>, DeviceError> {
    let s = match app {
        AppRef::Package(p) => p,
        AppRef::Label(l) => l,
    };
    if s == state::LAUNCHER_PACKAGE
        || s.eq_ignore_ascii_case("launcher")
        || s.eq_ignore_ascii_case("home")
    {
        return Ok(None);
    }
    let localized = || {
        <AppId as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .find(|a| locale::german(a.label()).is_some_and(|de| de.eq_ignore_ascii_case(s)))
    };
    AppId::find(s).or_else(localized).map(Some).ok_or_else(|| {
        DeviceError::AppNotFound(format!(
            "`{s}` is not installed on the virtual phone; installed: {}",
            <AppId as strum::VariantArray>::VARIANTS
                .iter()
                .map(|a| format!("{} ({})", a.label(), a.package()))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

#[async_trait]
impl Device for SimDevice {
    fn serial(&self) -> &str {
        &self.cfg.serial
    }

    async fn info(&self) -> Result<DeviceInfo, DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        Ok(DeviceInfo {
            serial: self.cfg.serial.clone(),
            backend: "sim".into(),
            model: self.cfg.model.clone(),
            screen: ScreenSize {
                width: self.size().0,
                height: self.size().1,
            },
            density: self.cfg.density,
            rotation: self.orientation().rotation(),
        })
    }

    async fn screenshot(&self) -> Result<Screenshot, DeviceError> {
        let (screen, black, delay) = {
            let mut g = self.lock();
            self.begin(&mut g)?;
            g.st.advance(OBSERVE_MS);
            let rate = g.faults.slow_screenshot_rate;
            let delay = Self::chance(&mut g, rate).then_some(g.faults.slow_screenshot_ms);
            let screen = ui::build(&g.st, &self.ctx(&g.faults));
            let black = !g.st.awake || (g.faults.secure_black && screen.secure());
            (screen, black, delay)
        };
        if let Some(ms) = delay {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        self.charge(DeviceOp::Screencap, 0).await;
        self.pace(OBSERVE_MS, false).await;
        let ((width, height), png) = (self.size(), self.png_frames);
        // Rendering and encoding are one job, so a raw frame never waits in a queue.
        let (shot, cpu) = cpu::off_runtime(move || {
            let px = render::render(&screen, width, height, black);
            let raw = Screenshot {
                width,
                height,
                data: ScreenshotData::Rgba(Bytes::from(px)),
            };
            if !png {
                return Ok(raw);
            }
            Ok(Screenshot {
                data: ScreenshotData::Png(raw.png()?),
                ..raw
            })
        })
        .await;
        self.counters.spent(cpu);
        shot
    }

    async fn hierarchy(&self) -> Result<String, DeviceError> {
        let (result, delay) = {
            let mut g = self.lock();
            self.begin(&mut g)?;
            g.st.advance(OBSERVE_MS);
            let (e, n, s) = (
                g.faults.hierarchy_error_rate,
                g.faults.null_root_rate,
                g.faults.slow_dump_rate,
            );
            let result = if Self::chance(&mut g, e) {
                Err(DeviceError::HierarchyUnavailable(IDLE_STATE_ERROR.into()))
            } else if Self::chance(&mut g, n) {
                Err(DeviceError::HierarchyUnavailable(NULL_ROOT_ERROR.into()))
            } else {
                let ids = if g.faults.renamed_ids {
                    IdStyle::Renamed
                } else {
                    IdStyle::AsIs
                };
                let (xml, cpu) = cpu::on_cpu(|| {
                    self.turned(widget::to_xml(&ui::build(&g.st, &self.ctx(&g.faults)), ids))
                });
                self.counters.spent(cpu);
                Ok(xml)
            };
            let delay = Self::chance(&mut g, s).then_some(g.faults.slow_dump_ms);
            (result, delay)
        };
        if let Some(ms) = delay {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        self.charge(DeviceOp::Dump, 0).await;
        self.pace(OBSERVE_MS, false).await;
        result
    }

    async fn record_screen(
        &self,
        _opts: &droidpilot_core::device::RecordOptions,
    ) -> Result<Box<dyn droidpilot_core::device::ScreenRecording>, DeviceError> {
        let mut g = self.lock();
        if g.disconnected {
            return Err(self.disconnected());
        }
        let (rec, tx) = record::SimRecording::start(self.seen(&g));
        g.recorder = Some(tx);
        Ok(Box::new(rec))
    }

    async fn tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        let r = self.touch(p, Gesture::Tap);
        self.charge(DeviceOp::Tap, 0).await;
        self.pace(TAP_MS, true).await;
        r
    }

    async fn long_press(&self, p: PixelPoint, _duration_ms: u64) -> Result<(), DeviceError> {
        let r = self.touch(p, Gesture::Long);
        self.charge(DeviceOp::Tap, 0).await;
        self.pace(TAP_MS, true).await;
        r
    }

    async fn double_tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        let r = self
            .touch(p, Gesture::Tap)
            .and_then(|()| self.touch(p, Gesture::Tap));
        self.charge(DeviceOp::Tap, 0).await;
        self.charge(DeviceOp::Tap, 0).await;
        self.pace(2 * TAP_MS, true).await;
        r
    }

    async fn swipe(
        &self,
        from: PixelPoint,
        to: PixelPoint,
        duration_ms: u64,
    ) -> Result<(), DeviceError> {
        let r = self.swipe_now(from, to, duration_ms);
        self.charge(DeviceOp::Swipe, duration_ms.min(2_000)).await;
        self.pace(duration_ms.clamp(100, 2_000), true).await;
        r
    }

    async fn type_text(&self, text: &str) -> Result<(), DeviceError> {
        let r = self.type_text_now(text);
        self.charge(DeviceOp::Text, 0).await;
        self.pace(KEY_MS, true).await;
        r
    }

    async fn clear_text(&self) -> Result<(), DeviceError> {
        let r = self.clear_text_now();
        self.charge(DeviceOp::Text, 0).await;
        self.pace(KEY_MS, true).await;
        r
    }

    async fn key(&self, key: Key) -> Result<(), DeviceError> {
        let r = self.key_now(key);
        self.charge(DeviceOp::Key, 0).await;
        self.pace(KEY_MS, true).await;
        r
    }

    async fn launch_app(&self, app: &AppRef) -> Result<(), DeviceError> {
        let r = self.launch_app_now(app);
        self.charge(DeviceOp::Am, 0).await;
        self.pace(LAUNCH_MS, true).await;
        r
    }

    async fn current_app(&self) -> Result<CurrentApp, DeviceError> {
        self.charge(DeviceOp::Dumpsys, 0).await;
        let mut g = self.lock();
        self.begin(&mut g)?;
        Ok(match g.st.fg {
            Fg::App(a) => CurrentApp {
                package: a.package().into(),
                activity: Some(a.activity().into()),
            },
            Fg::Recents => CurrentApp {
                package: state::LAUNCHER_PACKAGE.into(),
                activity: Some("com.android.quickstep.RecentsActivity".into()),
            },
            Fg::Home | Fg::Drawer => CurrentApp {
                package: state::LAUNCHER_PACKAGE.into(),
                activity: Some(
                    "com.google.android.apps.nexuslauncher.NexusLauncherActivity".into(),
                ),
            },
        })
    }

    /// The built screen's windows (`windows::state`), charged as one `dumpsys`.
    async fn window_state(&self) -> Result<droidpilot_core::device::WindowState, DeviceError> {
        let app = self.current_app().await?;
        let screen = {
            let g = self.lock();
            ui::build(&g.st, &self.ctx(&g.faults))
        };
        Ok(windows::state(&screen, &app))
    }

    async fn locale(&self) -> Result<droidpilot_core::device::DeviceLocale, DeviceError> {
        let mut g = self.lock();
        self.begin(&mut g)?;
        Ok(droidpilot_core::device::DeviceLocale {
            locale: Some(self.cfg.locale.tag().into()),
            timezone: Some(SIM_TIMEZONE.into()),
            country: Some(SIM_COUNTRY.into()),
        })
    }

    async fn installed_apps(&self) -> Result<Vec<AppInfo>, DeviceError> {
        self.charge(DeviceOp::Pm, 0).await;
        let mut g = self.lock();
        self.begin(&mut g)?;
        Ok(<AppId as strum::VariantArray>::VARIANTS
            .iter()
            .map(|a| AppInfo {
                package: a.package().into(),
                label: Some(self.label_of(*a)),
                version: Some(SIM_APP_VERSION.into()),
            })
            .collect())
    }

    async fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        let r = self.open_url_now(url);
        self.charge(DeviceOp::Am, 0).await;
        self.pace(LAUNCH_MS, true).await;
        r
    }

    async fn stop_app(&self, package: &str) -> Result<(), DeviceError> {
        self.app_data_op(package, false).await
    }

    /// The screen turns: every screen after it is laid out for the turned size (the
    /// layout scales by the shorter side, so rows stretch across a landscape screen).
    async fn rotate(&self, o: Orientation) -> Result<(), DeviceError> {
        {
            let mut g = self.lock();
            self.begin(&mut g)?;
            self.rotation
                .store(o.rotation(), std::sync::atomic::Ordering::Relaxed);
            Self::after_input(&mut g);
        }
        self.charge(DeviceOp::Am, 0).await;
        self.pace(LAUNCH_MS, true).await;
        Ok(())
    }

    /// The app's string resources, read back from the `resources.arsc` its APK ships
    /// (`apk`): English defaults and German, whatever the phone's language.
    async fn app_strings(
        &self,
        package: &str,
    ) -> Result<droidpilot_core::appstrings::AppStrings, DeviceError> {
        let app = app_of(&AppRef::Package(package.to_string()))?
            .filter(|a| a.package() == package)
            .ok_or_else(|| DeviceError::AppNotFound(format!("{package} has no APK here")))?;
        self.charge(DeviceOp::Pm, 0).await;
        let mut s =
            droidpilot_core::appstrings::AppStrings::from_arsc(package, &apk::resources_arsc(app))
                .map_err(|e| DeviceError::Protocol(e.to_string()))?;
        s.version_code = Some(SIM_APP_VERSION.into());
        Ok(s)
    }

    /// The app starts as on a new virtual phone (its data and pages reset).
    async fn clear_app_data(&self, package: &str) -> Result<(), DeviceError> {
        self.app_data_op(package, true).await
    }

    /// Both apps launched (their pages kept), side by side, the top one focused.
    async fn split_screen(&self, top: &AppRef, bottom: &AppRef) -> Result<(), DeviceError> {
        let r = self.split_now(top, bottom);
        self.charge(DeviceOp::Am, 0).await;
        self.pace(LAUNCH_MS, true).await;
        r
    }

    /// Waiting on the virtual phone is its clock moving; real time passes only when the
    /// phone is paced.
    async fn wait(&self, ms: u64) {
        self.advance_clock(ms);
        self.pace(ms, true).await;
    }

    async fn screen_state(&self) -> Result<ScreenState, DeviceError> {
        self.charge(DeviceOp::Dumpsys, 0).await;
        let mut g = self.lock();
        self.begin(&mut g)?;
        Ok(ScreenState {
            awake: g.st.awake,
            locked: g.st.locked,
        })
    }

    async fn health(&self) -> Result<(), DeviceError> {
        if self.lock().disconnected {
            return Err(self.disconnected());
        }
        Ok(())
    }

    async fn reconnect(&self) -> Result<(), DeviceError> {
        let mut g = self.lock();
        g.disconnected = false;
        // The disconnect fault fires once; after a reconnect the link stays up.
        g.faults.disconnect_after = None;
        Ok(())
    }
}
