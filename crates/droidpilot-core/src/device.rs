//! Devices: the one async `Device` trait every backend implements, and its errors.
//!
//! Backends live in the crates above: the virtual phone (`droidpilot-sim`) and real phones
//! through an adb server (the application's `device::adb`). Callers (runner, server,
//! scripts) only see `dyn Device`, so a task behaves the same on either. Coordinates here are pixels: the normalized → pixel
//! transform happens above, where the screen size is known.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::appstrings::AppStrings;
use crate::domain::{AppRef, Bounds, Key, Orientation, PixelPoint, ScreenSize};

/// What a device is, as far as callers care.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeviceInfo {
    /// The serial (`emulator-5554`, `127.0.0.1:5555`, `sim-1`).
    pub serial: String,
    /// `sim` or `adb`.
    pub backend: String,
    /// The model name (`ro.product.model`).
    pub model: String,
    /// The screen size as the device reports it now (after rotation and `wm size` overrides).
    pub screen: ScreenSize,
    /// Dots per inch (`wm density`).
    pub density: u32,
    /// 0, 1, 2 or 3 quarter turns.
    pub rotation: u8,
}

/// A captured screen. Backends return whichever form they have natively; the other is
/// produced on demand, so nobody pays for an encode or decode they do not use.
#[derive(Debug, Clone)]
pub struct Screenshot {
    pub width: u32,
    pub height: u32,
    pub data: ScreenshotData,
}

#[derive(Debug, Clone)]
pub enum ScreenshotData {
    Png(Bytes),
    /// Tightly packed RGBA8, `width * height * 4` bytes.
    Rgba(Bytes),
}

impl Screenshot {
    /// PNG bytes, encoding the raw pixels when needed.
    pub fn png(&self) -> Result<Bytes, DeviceError> {
        match &self.data {
            ScreenshotData::Png(b) => Ok(b.clone()),
            ScreenshotData::Rgba(raw) => {
                let mut out = Vec::with_capacity(raw.len() / 4);
                // `Up` with fast deflate: half the CPU of `Adaptive` for ~15% more
                // bytes on UI frames (540x1200: 0.51 vs 1.01 ms, 54 vs 46 KiB). Frames
                // arrive raw from the virtual phone and the framebuffer method, once per
                // step, and this is server CPU.
                image::codecs::png::PngEncoder::new_with_quality(
                    &mut out,
                    image::codecs::png::CompressionType::Fast,
                    image::codecs::png::FilterType::Up,
                )
                .write_image(
                    raw,
                    self.width,
                    self.height,
                    image::ExtendedColorType::Rgba8,
                )
                .map_err(|e| DeviceError::Protocol(format!("PNG encode failed: {e}")))?;
                Ok(Bytes::from(out))
            }
        }
    }

    /// Raw RGBA8 pixels, decoding the PNG when needed.
    pub fn rgba(&self) -> Result<Bytes, DeviceError> {
        match &self.data {
            ScreenshotData::Rgba(b) => Ok(b.clone()),
            ScreenshotData::Png(png) => {
                let img = image::load_from_memory_with_format(png, image::ImageFormat::Png)
                    .map_err(|e| {
                        DeviceError::Protocol(format!("screenshot is not a valid PNG: {e}"))
                    })?;
                Ok(Bytes::from(img.to_rgba8().into_raw()))
            }
        }
    }

    /// Whether every pixel is black (all channels below 8): what a secure window
    /// (FLAG_SECURE) captures as. Stops at the first pixel that is not, so an ordinary
    /// screen costs one row or so; a PNG is decoded row by row (the `png` crate's
    /// streaming reader) rather than whole, which at 1080×2400 would take 10–20 ms on
    /// every step. A PNG that does not decode is not black (the caller finds out why).
    pub fn is_black(&self) -> bool {
        let dark = |px: &[u8]| px.iter().take(3).all(|&c| c < 8);
        match &self.data {
            ScreenshotData::Rgba(raw) => !raw.is_empty() && raw.chunks_exact(4).all(dark),
            ScreenshotData::Png(png) => png_is_black(png, dark).unwrap_or(false),
        }
    }
}

/// Row by row, until a pixel fails `dark`. Palettes are expanded and 16-bit samples
/// stripped, so every row is 8-bit gray, gray+alpha, RGB or RGBA.
fn png_is_black(png: &[u8], dark: impl Fn(&[u8]) -> bool) -> Option<bool> {
    let mut decoder = ::png::Decoder::new(std::io::Cursor::new(png));
    decoder.set_transformations(::png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().ok()?;
    let (color, _) = reader.output_color_type();
    // Gray and gray+alpha carry one colour sample: compare it alone.
    let (step, colours) = match color {
        ::png::ColorType::Grayscale => (1, 1),
        ::png::ColorType::GrayscaleAlpha => (2, 1),
        ::png::ColorType::Rgb | ::png::ColorType::Indexed => (3, 3),
        ::png::ColorType::Rgba => (4, 3),
    };
    let mut rows = 0;
    while let Some(row) = reader.next_row().ok()? {
        if !row.data().chunks_exact(step).all(|px| dark(&px[..colours])) {
            return Some(false);
        }
        rows += 1;
    }
    Some(rows > 0)
}

use image::ImageEncoder as _;

/// The app in the foreground.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CurrentApp {
    pub package: String,
    /// The activity class, when the backend can tell (`.MainActivity` or fully qualified).
    pub activity: Option<String>,
}

/// Where the phone thinks it is: what agents are told beside the screen (seed 002's
/// country, language and time zone). Each is None when the device does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeviceLocale {
    /// BCP 47 (`en-US`), from `persist.sys.locale` (or `ro.product.locale`).
    pub locale: Option<String>,
    /// IANA (`Europe/Berlin`), from `persist.sys.timezone`.
    pub timezone: Option<String>,
    /// ISO 3166 alpha-2, lower case (`de`), from the SIM's `gsm.sim.operator.iso-country`.
    pub country: Option<String>,
}

/// A window the window manager shows now (`dumpsys window windows`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActiveWindow {
    /// The package that owns it (the entry's `package=`).
    pub package: String,
    /// Its title: `package/activity` for an app's window, `InputMethod`, `StatusBar`…
    pub title: String,
    /// Android's window type (the entry's `ty=`): `BASE_APPLICATION` (an activity),
    /// `APPLICATION` (an app's dialog), `INPUT_METHOD`, `STATUS_BAR`, `NAVIGATION_BAR`,
    /// `TOAST`, `SYSTEM_ALERT`…; empty when the device does not say.
    #[serde(rename = "type")]
    pub kind: String,
    /// `[left, top, right, bottom]` in pixels (`mFrame`), when known.
    pub bounds: Option<[i32; 4]>,
    /// It has the input focus (`mCurrentFocus`).
    pub focused: bool,
}

/// What the window manager and the input method say now: whether the soft keyboard is
/// shown and which windows are visible.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WindowState {
    /// `dumpsys input_method`'s `mInputShown`; None when the device does not say.
    pub keyboard_shown: Option<bool>,
    /// The visible windows, top first.
    pub windows: Vec<ActiveWindow>,
}

/// The activities' windows of `state`, one per app, top-left first, the one holding or
/// owning the focus marked (a dialog's app when a dialog has it). `full` stands in for a
/// frame the device did not give.
pub fn app_windows(state: &WindowState, full: Option<Bounds>) -> Vec<AppWindow> {
    let focus = state.windows.iter().find(|w| w.focused).map(|w| &w.package);
    let mut out: Vec<AppWindow> = Vec::new();
    for w in state
        .windows
        .iter()
        .filter(|w| w.kind == "BASE_APPLICATION")
    {
        if out.iter().any(|a| a.package == w.package) {
            continue;
        }
        let bounds = match (w.bounds, full) {
            (Some([l, t, r, b]), _) => Bounds::new(l, t, r, b),
            (None, Some(f)) => f,
            (None, None) => continue,
        };
        out.push(AppWindow {
            package: w.package.clone(),
            bounds,
            focused: focus == Some(&w.package),
        });
    }
    out.sort_by_key(|a| (a.bounds.top, a.bounds.left));
    out
}

/// An installed app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppInfo {
    pub package: String,
    /// The label a person sees in the launcher, when known.
    pub label: Option<String>,
    /// The installed version (`versionCode`), when known.
    #[serde(default)]
    pub version: Option<String>,
}

/// An app window on screen: one full-screen window usually, two in split-screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppWindow {
    pub package: String,
    /// Where the window lies, in pixels.
    pub bounds: Bounds,
    /// The window that has the input focus (the one `current_app` names).
    pub focused: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ScreenState {
    pub awake: bool,
    pub locked: bool,
}

/// Why a device call failed. Every variant maps to one code and an actionable hint.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DeviceError {
    #[error("device {serial} is disconnected")]
    Disconnected { serial: String },
    #[error("{op} timed out after {} ms", after.as_millis())]
    Timeout { op: String, after: Duration },
    /// uiautomator could not produce a hierarchy (`could not get idle state`, null root).
    #[error("UI hierarchy unavailable: {0}")]
    HierarchyUnavailable(String),
    #[error("`{command}` failed with exit code {exit_code}: {stderr}")]
    CommandFailed {
        command: String,
        exit_code: i32,
        stderr: String,
    },
    #[error("app not found: {0}")]
    AppNotFound(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("not supported by this device: {0}")]
    Unsupported(String),
    #[error("device protocol error: {0}")]
    Protocol(String),
}

impl DeviceError {
    pub fn code(&self) -> &'static str {
        match self {
            DeviceError::Disconnected { .. } => "device_disconnected",
            DeviceError::Timeout { .. } => "timeout",
            DeviceError::HierarchyUnavailable(_) => "hierarchy_unavailable",
            DeviceError::CommandFailed { .. } => "action_failed",
            DeviceError::AppNotFound(_) => "app_not_found",
            DeviceError::InvalidInput(_) => "invalid_input",
            DeviceError::Unsupported(_) => "unsupported",
            DeviceError::Protocol(_) => "device_protocol",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            DeviceError::Disconnected { .. } => {
                "Device disconnected. Try: 1) replug USB 2) `droidpilot devices` 3) `adb kill-server && adb start-server`".into()
            }
            DeviceError::Timeout { .. } => "The device is slow or hung. Try again; if it persists run `droidpilot doctor`.".into(),
            DeviceError::HierarchyUnavailable(_) => {
                "uiautomator could not read the screen (an animation or a secure window). Wait a moment and retry; the screenshot still works.".into()
            }
            DeviceError::CommandFailed { .. } => "Run the same command with `adb shell` to see what the device says.".into(),
            DeviceError::AppNotFound(_) => "List installed apps with GET /v1/devices/{id}/apps, or launch by package name.".into(),
            DeviceError::InvalidInput(_) => "Check the action's arguments against the action reference, docs/api.md \"Actions\".".into(),
            DeviceError::Unsupported(_) => "Use another backend or action for this device.".into(),
            DeviceError::Protocol(_) => "The device answered something unexpected. Run `droidpilot doctor`.".into(),
        }
    }

    /// Whether the device is gone (as opposed to one call failing).
    pub fn is_disconnect(&self) -> bool {
        matches!(self, DeviceError::Disconnected { .. })
    }
}

/// How a task's screen recording is made (`Device::record_screen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    /// The longest one segment runs before the recording restarts in a new one (Android's
    /// `screenrecord` stops at 180 s).
    pub segment_secs: u64,
    /// A name for the recording's files on the phone (the task id).
    pub tag: String,
}

/// One finished segment: an H.264 MP4 and when it started.
#[derive(Debug, Clone)]
pub struct VideoSegment {
    pub mp4: Bytes,
    pub started_at: chrono::DateTime<chrono::Utc>,
}

/// What a recording left: its segments in order, and what went wrong on the way (a
/// segment that could not be pulled, a restart that failed) in words.
#[derive(Debug, Clone, Default)]
pub struct RecordedVideo {
    pub segments: Vec<VideoSegment>,
    pub problems: Vec<String>,
}

/// A screen recording in progress. Dropping it stops its work without finishing the
/// files; `stop` finishes them.
#[async_trait]
pub trait ScreenRecording: Send {
    /// Stops recording and returns the segments.
    async fn stop(self: Box<Self>) -> RecordedVideo;
}

/// The one interface every device backend implements. All coordinates are pixels.
///
/// Implementations must be cheap to share (`Arc<dyn Device>`) and safe to call from
/// several tasks; a backend that needs exclusive access serializes internally.
#[async_trait]
pub trait Device: Send + Sync {
    /// A stable id for this device within the pool (usually the serial).
    fn serial(&self) -> &str;
    async fn info(&self) -> Result<DeviceInfo, DeviceError>;
    async fn screenshot(&self) -> Result<Screenshot, DeviceError>;
    /// The UI hierarchy as uiautomator XML, shaped like a real dump, read once the UI is
    /// idle: `uiautomator dump` waits for no accessibility event for 1 s (at most 10 s)
    /// before reading, and the runner settles on that (`run::runner::settle`). A backend
    /// whose tree is instant (an on-device helper) must wait for idle itself.
    async fn hierarchy(&self) -> Result<String, DeviceError>;

    async fn tap(&self, p: PixelPoint) -> Result<(), DeviceError>;
    async fn long_press(&self, p: PixelPoint, duration_ms: u64) -> Result<(), DeviceError>;
    async fn double_tap(&self, p: PixelPoint) -> Result<(), DeviceError>;
    async fn swipe(
        &self,
        from: PixelPoint,
        to: PixelPoint,
        duration_ms: u64,
    ) -> Result<(), DeviceError>;
    /// Types into the focused field. Full Unicode (CJK, emoji, RTL) where the backend can.
    async fn type_text(&self, text: &str) -> Result<(), DeviceError>;
    /// Clears the focused field.
    async fn clear_text(&self) -> Result<(), DeviceError>;
    async fn key(&self, key: Key) -> Result<(), DeviceError>;

    async fn launch_app(&self, app: &AppRef) -> Result<(), DeviceError>;
    async fn current_app(&self) -> Result<CurrentApp, DeviceError>;
    async fn installed_apps(&self) -> Result<Vec<AppInfo>, DeviceError>;
    async fn open_url(&self, url: &str) -> Result<(), DeviceError>;
    async fn screen_state(&self) -> Result<ScreenState, DeviceError>;

    /// Lets `ms` of the device's time pass (the `wait` action). Real phones simply take
    /// the time; the virtual phone advances its own clock, so a wait means the same thing
    /// on both (a pop-up that appears "2 s later" appears).
    async fn wait(&self, ms: u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }

    /// Force-stops an app (`am force-stop`): its next launch starts at its first screen.
    async fn stop_app(&self, package: &str) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported(format!("stopping {package}")))
    }

    /// Starts recording the screen until the returned recording is stopped.
    async fn record_screen(
        &self,
        opts: &RecordOptions,
    ) -> Result<Box<dyn ScreenRecording>, DeviceError> {
        let _ = opts;
        Err(DeviceError::Unsupported("recording the screen".into()))
    }

    /// Clears an app's data (`pm clear`), which stops it too: it starts as installed.
    async fn clear_app_data(&self, package: &str) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported(format!(
            "clearing the data of {package}"
        )))
    }

    /// Turns the screen to `o` and keeps it there (auto-rotation off); `info().screen`
    /// reports the turned size afterwards.
    async fn rotate(&self, o: Orientation) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported(format!(
            "rotating to {}",
            o.name()
        )))
    }

    /// Every string resource of an installed app, per locale (its APK's
    /// `resources.arsc`), so replay can find a label recorded in another language.
    async fn app_strings(&self, package: &str) -> Result<AppStrings, DeviceError> {
        Err(DeviceError::Unsupported(format!(
            "reading the string resources of {package}"
        )))
    }

    /// The phone's locale, time zone and country; a backend that cannot tell says nothing.
    async fn locale(&self) -> Result<DeviceLocale, DeviceError> {
        Ok(DeviceLocale::default())
    }

    /// The keyboard and the visible windows. A backend that cannot list windows names
    /// the foreground app's as the only one, the keyboard unknown.
    async fn window_state(&self) -> Result<WindowState, DeviceError> {
        let app = self.current_app().await?;
        let title = match &app.activity {
            Some(a) => format!("{}/{a}", app.package),
            None => app.package.clone(),
        };
        Ok(WindowState {
            keyboard_shown: None,
            windows: vec![ActiveWindow {
                package: app.package,
                title,
                kind: "BASE_APPLICATION".into(),
                bounds: None,
                focused: true,
            }],
        })
    }

    /// Puts two apps on screen at once in split-screen, `top` above `bottom` (left and
    /// right in landscape), the top one focused. A backend or Android version that cannot
    /// is refused with `Unsupported`, saying why.
    async fn split_screen(&self, top: &AppRef, bottom: &AppRef) -> Result<(), DeviceError> {
        let _ = (top, bottom);
        Err(DeviceError::Unsupported(
            "split-screen on this backend".into(),
        ))
    }

    /// The app windows on screen, with their packages and bounds: two in split-screen.
    /// Read from `window_state` (the activities' windows, in reading order), so every
    /// backend that lists its windows has this too; a window whose frame the device did
    /// not say is taken as the whole screen.
    async fn windows(&self) -> Result<Vec<AppWindow>, DeviceError> {
        let state = self.window_state().await?;
        let full = match state.windows.iter().any(|w| w.bounds.is_none()) {
            true => {
                let s = self.info().await?.screen;
                Some(Bounds::new(0, 0, s.width as i32, s.height as i32))
            }
            false => None,
        };
        Ok(app_windows(&state, full))
    }

    /// A cheap liveness probe for the pool's health checks (an `echo` over adb).
    async fn health(&self) -> Result<(), DeviceError> {
        self.info().await.map(|_| ())
    }
    /// Re-establishes a lost connection (`adb connect` for TCP devices). Backends that
    /// cannot lose their connection keep the default.
    async fn reconnect(&self) -> Result<(), DeviceError> {
        Ok(())
    }
}

#[cfg(test)]
mod is_black_tests {
    use super::*;

    fn png(width: u32, height: u32, color: image::ExtendedColorType, raw: &[u8]) -> Screenshot {
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(raw, width, height, color)
            .expect("encode");
        Screenshot {
            width,
            height,
            data: ScreenshotData::Png(Bytes::from(out)),
        }
    }

    #[test]
    fn a_black_frame_is_black_in_every_pixel_format() {
        let rgba = Screenshot {
            width: 4,
            height: 3,
            data: ScreenshotData::Rgba(Bytes::from(vec![0u8; 48])),
        };
        assert!(rgba.is_black());
        assert!(png(4, 3, image::ExtendedColorType::Rgba8, &[0; 48]).is_black());
        assert!(png(4, 3, image::ExtendedColorType::Rgb8, &[5; 36]).is_black());
        assert!(png(4, 3, image::ExtendedColorType::L8, &[0; 12]).is_black());
        // Opaque alpha does not count as colour.
        let mut opaque = [0u8; 48];
        opaque.iter_mut().skip(3).step_by(4).for_each(|a| *a = 255);
        assert!(png(4, 3, image::ExtendedColorType::Rgba8, &opaque).is_black());
    }

    #[test]
    fn one_bright_pixel_anywhere_makes_a_frame_not_black() {
        // Dark mode with one small glyph must keep its screenshot: the last pixel of the
        // last row is the only bright one, so the check cannot stop early and still be
        // right.
        let mut raw = vec![0u8; 64 * 48 * 4];
        let n = raw.len();
        raw[n - 4..n - 1].copy_from_slice(&[200, 200, 200]);
        assert!(!png(64, 48, image::ExtendedColorType::Rgba8, &raw).is_black());
        let rgba = Screenshot {
            width: 64,
            height: 48,
            data: ScreenshotData::Rgba(Bytes::from(raw)),
        };
        assert!(!rgba.is_black());
        assert!(!png(4, 3, image::ExtendedColorType::L8, &[255; 12]).is_black());
    }

    #[test]
    fn no_pixels_or_a_broken_png_is_not_black() {
        let empty = Screenshot {
            width: 0,
            height: 0,
            data: ScreenshotData::Rgba(Bytes::new()),
        };
        assert!(!empty.is_black());
        let broken = Screenshot {
            width: 4,
            height: 3,
            data: ScreenshotData::Png(Bytes::from_static(b"\x89PNG\r\n\x1a\nnot really")),
        };
        assert!(!broken.is_black());
    }
}

#[cfg(test)]
mod app_windows_tests {
    use super::*;

    fn w(package: &str, kind: &str, bounds: Option<[i32; 4]>, focused: bool) -> ActiveWindow {
        ActiveWindow {
            package: package.into(),
            title: package.into(),
            kind: kind.into(),
            bounds,
            focused,
        }
    }

    /// Two halves listed top-most first (the bottom one above), a dialog of the bottom
    /// app holding the focus: the halves come out top first, the dialog's app focused,
    /// bars and keyboard left out.
    #[test]
    fn the_halves_in_reading_order_with_the_dialogs_app_focused() {
        let state = WindowState {
            keyboard_shown: Some(false),
            windows: vec![
                w(
                    "com.android.systemui",
                    "STATUS_BAR",
                    Some([0, 0, 1080, 63]),
                    false,
                ),
                w("b.app", "APPLICATION", Some([100, 1500, 980, 1900]), true),
                w(
                    "b.app",
                    "BASE_APPLICATION",
                    Some([0, 1220, 1080, 2400]),
                    false,
                ),
                w("a.app", "BASE_APPLICATION", Some([0, 0, 1080, 1180]), false),
            ],
        };
        let got = app_windows(&state, None);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].package.as_str(), got[0].focused), ("a.app", false));
        assert_eq!((got[1].package.as_str(), got[1].focused), ("b.app", true));
        assert_eq!(got[1].bounds, Bounds::new(0, 1220, 1080, 2400));
    }

    /// A device that lists no frames: the one activity takes the whole screen.
    #[test]
    fn a_window_without_a_frame_is_the_whole_screen() {
        let state = WindowState {
            keyboard_shown: None,
            windows: vec![w("a.app", "BASE_APPLICATION", None, true)],
        };
        let full = Bounds::new(0, 0, 720, 1600);
        let got = app_windows(&state, Some(full));
        assert_eq!(
            got,
            vec![AppWindow {
                package: "a.app".into(),
                bounds: full,
                focused: true
            }]
        );
    }
}
