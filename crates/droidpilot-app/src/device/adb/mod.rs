//! The ADB backend: real phones (and `droidpilot sim` adbds) through an adb server, on
//! adb_client.
//!
//! Owns `AdbDevice` (the `Device` implementation: a blocking worker thread per device for
//! commands and a second one for screenshots, so a screencap runs beside a 2 s
//! `uiautomator dump` on its own stream over the same transport; a deadline on every
//! call), `AdbHost` (the server: discovery, `adb connect`), `apk.rs` (an app's string resources
//! from its pulled APK), `split.rs` (split-screen by the
//! phone's Android version), and, in
//! `gaps.rs`, every workaround for the crate's gaps. Every piece of model or user text that
//! goes onto a device command line is quoted with `domain::shell::quote`.

mod apk;
pub mod gaps;
pub mod host;
mod record;
pub mod split;
mod windows;
mod worker;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;

pub use gaps::ShellOutput;
pub use host::{AdbHost, AdbListing, is_tcp_serial};

use crate::device::{
    AppInfo, CurrentApp, Device, DeviceError, DeviceInfo, ScreenState, Screenshot, ScreenshotData,
};
use crate::domain::shell::quote;
use crate::domain::{AppRef, Key, Orientation, PixelPoint, ScreenSize};
use worker::Worker;

pub const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";

/// What to say when text needs ADB Keyboard and the phone lacks it.
pub const ADB_KEYBOARD_HINT: &str = "install ADB Keyboard (https://github.com/senzhk/ADBKeyBoard): \
`adb install ADBKeyboard.apk` then `adb shell ime enable com.android.adbkeyboard/.AdbIME`";

/// How screenshots are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScreenshotMethod {
    /// `exec-out screencap -p`: PNG, works on every phone.
    #[default]
    Png,
    /// The `framebuffer:` service: raw RGBA, no PNG encode on the phone. adb_client
    /// assumes RGBA channel order, so it is opt-in.
    Framebuffer,
}

/// Where the adb server is and how patient to be with it.
#[derive(Debug, Clone)]
pub struct AdbOptions {
    /// The adb server (127.0.0.1:5037 by default; may be remote).
    pub server: SocketAddrV4,
    /// The `adb` program, for starting a local server and for `doctor`.
    pub adb_path: String,
    /// Deadline for ordinary calls.
    pub timeout: Duration,
    /// Deadline for screenshots and hierarchy dumps.
    pub slow_timeout: Duration,
    pub screenshot: ScreenshotMethod,
    /// Attempts at `uiautomator dump` when it reports `could not get idle state` or a null root.
    pub dump_attempts: usize,
}

impl Default for AdbOptions {
    fn default() -> Self {
        Self {
            server: SocketAddrV4::new(Ipv4Addr::LOCALHOST, 5037),
            adb_path: "adb".into(),
            timeout: Duration::from_secs(10),
            slow_timeout: Duration::from_secs(20),
            screenshot: ScreenshotMethod::Png,
            dump_attempts: 3,
        }
    }
}

impl AdbOptions {
    /// Options for a server on `127.0.0.1:port`.
    pub fn local(port: u16) -> Self {
        Self {
            server: SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
            ..Self::default()
        }
    }
}

/// A device reached through the adb server.
pub struct AdbDevice {
    serial: String,
    opts: AdbOptions,
    worker: Worker,
    /// Screenshots' own lane: adb multiplexes streams over one transport, so a capture
    /// need not queue behind a dump on `worker`.
    capture: Worker,
    /// Whether ADB Keyboard is installed, learned on first use.
    adb_keyboard: Mutex<Option<bool>>,
    /// Apps' string resources, per package and versionCode (`apk.rs`).
    strings: apk::StringsCache,
}

impl std::fmt::Debug for AdbDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdbDevice")
            .field("serial", &self.serial)
            .field("server", &self.opts.server)
            .finish()
    }
}

/// Android key codes for our keys.
fn keycode(key: Key) -> u32 {
    match key {
        Key::Back => 4,
        Key::Home => 3,
        Key::Recents => 187,
        Key::Enter => 66,
        Key::Menu => 82,
        Key::Power => 26,
    }
}

/// A command line as debug mode logs it: what `input text` types and what the ADB
/// keyboard is sent are masked (it may be a password), the rest as it ran.
pub fn loggable(command: &str) -> String {
    command
        .split(" && ")
        .map(|part| {
            if let Some(i) = part.find("input text ") {
                format!("{}input text ••••", &part[..i])
            } else if let Some(i) = part.find("--es msg ") {
                format!("{}--es msg ••••", &part[..i])
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" && ")
}

/// `input text` takes one argument; these many characters per call keep each call quick.
const INPUT_TEXT_CHUNK: usize = 80;

/// Encodes text for Android's `input text` (`%s` is a space) and quotes it for `sh`.
pub fn input_text_arg(text: &str) -> String {
    quote(&text.replace(' ', "%s"))
}

/// Parses `wm size` output; `Override size` wins over `Physical size`.
pub fn parse_wm_size(out: &str) -> Option<ScreenSize> {
    let find = |label: &str| {
        out.lines().find_map(|l| {
            let v = l.trim().strip_prefix(label)?.trim();
            let (w, h) = v.split_once('x')?;
            ScreenSize::new(w.trim().parse().ok()?, h.trim().parse().ok()?)
        })
    };
    find("Override size:").or_else(|| find("Physical size:"))
}

fn parse_wm_density(out: &str) -> Option<u32> {
    let find = |label: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(label)?.trim().parse().ok())
    };
    find("Override density:").or_else(|| find("Physical density:"))
}

/// Reads `pkg/activity` out of `mCurrentFocus=Window{… u0 pkg/act}` (or `mFocusedApp`,
/// or `mResumedActivity: ActivityRecord{… u0 pkg/act t12}`).
pub fn parse_focus(dumpsys: &str) -> Option<CurrentApp> {
    for key in [
        "mCurrentFocus=",
        "mFocusedApp=",
        "mResumedActivity:",
        "ResumedActivity:",
    ] {
        for line in dumpsys.lines() {
            let Some(rest) = line.trim().strip_prefix(key) else {
                continue;
            };
            let comp = rest
                .split_whitespace()
                .find(|t| t.contains('/'))
                .map(|t| t.trim_end_matches('}'));
            if let Some((pkg, act)) = comp.and_then(|c| c.split_once('/')) {
                if pkg.is_empty() {
                    continue;
                }
                return Some(CurrentApp {
                    package: pkg.to_string(),
                    activity: Some(act.to_string()),
                });
            }
        }
    }
    None
}

/// Cuts a uiautomator dump out of `uiautomator dump /dev/tty` output (drops the
/// `UI hierchary dumped to: /dev/tty` trailer and anything before the XML).
pub fn extract_dump(out: &str) -> Option<&str> {
    let start = out.find("<?xml").or_else(|| out.find("<hierarchy"))?;
    let end = match out.rfind("</hierarchy>") {
        Some(e) => e + "</hierarchy>".len(),
        // An empty screen dumps as `<hierarchy/>`: cut at the trailer instead.
        None => out.rfind("UI hierchary dumped to").unwrap_or(out.len()),
    };
    (end > start).then(|| out[start..end].trim_end())
}

/// Common words people use for apps whose package names say something else.
const LABEL_ALIASES: &[(&str, &str)] = &[
    ("clock", "deskclock"),
    ("alarm", "deskclock"),
    ("messages", "messaging"),
    ("sms", "messaging"),
    ("phone", "dialer"),
    ("browser", "browser"),
    ("internet", "browser"),
    ("play store", "vending"),
    ("files", "documentsui"),
    ("gallery", "gallery"),
    ("photos", "photos"),
];

/// Picks the installed package a person means by `label`.
pub fn match_label(label: &str, packages: &[String]) -> Result<String, DeviceError> {
    let want = label.trim().to_lowercase();
    let alias = LABEL_ALIASES
        .iter()
        .find(|(l, _)| *l == want)
        .map(|(_, p)| *p);
    let mut best: Option<(f64, &String)> = None;
    for p in packages {
        let segs: Vec<&str> = p.split('.').collect();
        let last = segs.last().copied().unwrap_or("");
        let mut score = strsim::jaro_winkler(&want.replace(' ', ""), last);
        if alias.is_some_and(|a| last == a) {
            score = 1.0;
        }
        if last == want.replace(' ', "") {
            score = 1.0;
        }
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, p));
        }
    }
    match best {
        Some((s, p)) if s >= 0.9 => Ok(p.clone()),
        Some((_, p)) => Err(DeviceError::AppNotFound(format!(
            "no installed app is labelled \"{label}\" (closest package: {p})"
        ))),
        None => Err(DeviceError::AppNotFound(format!(
            "no installed app is labelled \"{label}\""
        ))),
    }
}

impl AdbDevice {
    pub fn new(serial: impl Into<String>, opts: AdbOptions) -> Self {
        let serial = serial.into();
        let worker = Worker::new(&serial, opts.server);
        let capture = Worker::new(&serial, opts.server);
        Self {
            serial,
            opts,
            worker,
            capture,
            adb_keyboard: Mutex::new(None),
            strings: apk::StringsCache::default(),
        }
    }

    pub fn options(&self) -> &AdbOptions {
        &self.opts
    }

    /// Runs a shell command line and returns stdout, stderr and the real exit code.
    /// Debug mode logs each command (typed text masked, `loggable`) with its exit code.
    pub async fn shell(&self, command: &str) -> Result<ShellOutput, DeviceError> {
        let serial = self.serial.clone();
        let cmd = command.to_string();
        let started = std::time::Instant::now();
        let out = self
            .worker
            .call(command, self.opts.timeout, move |dev| {
                gaps::shell(dev, &serial, &cmd)
            })
            .await;
        tracing::debug!(
            serial = %self.serial,
            command = %loggable(command),
            exit_code = out.as_ref().ok().map(|o| o.exit_code),
            ms = started.elapsed().as_millis() as u64,
            "adb shell"
        );
        out
    }

    /// Like [`shell`](Self::shell) but a non-zero exit is an error.
    pub async fn shell_ok(&self, command: &str) -> Result<String, DeviceError> {
        let out = self.shell(command).await?;
        if out.exit_code != 0 {
            return Err(DeviceError::CommandFailed {
                command: loggable(command),
                exit_code: out.exit_code,
                stderr: out.stderr_str().trim().to_string(),
            });
        }
        Ok(out.stdout_str())
    }

    /// `exec-out COMMAND`: binary-safe stdout.
    pub async fn exec_out(&self, command: &str) -> Result<Vec<u8>, DeviceError> {
        let serial = self.serial.clone();
        let cmd = command.to_string();
        let deadline = self.opts.slow_timeout;
        let started = std::time::Instant::now();
        let out = self
            .worker
            .call(command, deadline, move |dev| {
                gaps::exec_out(dev, &serial, &cmd, deadline)
            })
            .await;
        tracing::debug!(
            serial = %self.serial,
            command = %loggable(command),
            bytes = out.as_ref().ok().map(Vec::len),
            ms = started.elapsed().as_millis() as u64,
            "adb exec-out"
        );
        out
    }

    /// A screenshot by a given method (the bench compares them).
    pub async fn screenshot_with(
        &self,
        method: ScreenshotMethod,
    ) -> Result<Screenshot, DeviceError> {
        match method {
            ScreenshotMethod::Png => {
                let serial = self.serial.clone();
                let deadline = self.opts.slow_timeout;
                let png = self
                    .capture
                    .call("screencap -p", deadline, move |dev| {
                        gaps::exec_out(dev, &serial, "screencap -p", deadline)
                    })
                    .await?;
                let (w, h) = png_size(&png).ok_or_else(|| {
                    DeviceError::Protocol(format!(
                        "screencap -p did not return a complete PNG ({} bytes); the screen may be secure (FLAG_SECURE)",
                        png.len()
                    ))
                })?;
                Ok(Screenshot {
                    width: w,
                    height: h,
                    data: ScreenshotData::Png(Bytes::from(png)),
                })
            }
            ScreenshotMethod::Framebuffer => {
                let serial = self.serial.clone();
                let (w, h, rgba) = self
                    .capture
                    .call("framebuffer", self.opts.slow_timeout, move |dev| {
                        gaps::framebuffer(dev, &serial)
                    })
                    .await?;
                Ok(Screenshot {
                    width: w,
                    height: h,
                    data: ScreenshotData::Rgba(Bytes::from(rgba)),
                })
            }
        }
    }

    /// Whether the ADB Keyboard IME is installed (cached after the first answer).
    pub async fn has_adb_keyboard(&self) -> Result<bool, DeviceError> {
        if let Some(v) = *self.adb_keyboard.lock().unwrap_or_else(|p| p.into_inner()) {
            return Ok(v);
        }
        let out = self.shell_ok("ime list -s").await?;
        let v = out.lines().any(|l| l.trim() == ADB_KEYBOARD_IME);
        *self.adb_keyboard.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
        Ok(v)
    }

    /// Sends one ADB Keyboard broadcast with ADB Keyboard selected, then restores the
    /// previous IME, in a single shell round trip.
    async fn with_adb_keyboard(&self, broadcast: &str) -> Result<(), DeviceError> {
        let prev = self
            .shell_ok("settings get secure default_input_method")
            .await?
            .trim()
            .to_string();
        let mut line = String::new();
        if prev != ADB_KEYBOARD_IME {
            // No settle sleep: `am broadcast` returns when the broadcast has been delivered
            // and says so ("Broadcast completed: result=N"), which is what is waited for.
            line.push_str(&format!("ime enable {ADB_KEYBOARD_IME} >/dev/null; ime set {ADB_KEYBOARD_IME} >/dev/null && "));
        }
        line.push_str(broadcast);
        let restore = !prev.is_empty() && prev != "null" && prev != ADB_KEYBOARD_IME;
        if restore {
            line.push_str(&format!(
                "; s=$?; ime set {} >/dev/null; echo status=$s",
                quote(&prev)
            ));
        }
        let out = self.shell(&line).await?;
        let text = out.stdout_str();
        let failed = if restore {
            !text.contains("status=0")
        } else {
            out.exit_code != 0
        };
        if failed || !text.contains("Broadcast completed") {
            return Err(DeviceError::CommandFailed {
                command: "am broadcast (ADB Keyboard)".into(),
                exit_code: out.exit_code,
                stderr: format!("{} {}", out.stderr_str().trim(), text.trim()),
            });
        }
        Ok(())
    }

    async fn focused_text_len(&self) -> usize {
        let Ok(xml) = self.hierarchy().await else {
            return 0;
        };
        let Ok(doc) = roxmltree::Document::parse(&xml) else {
            return 0;
        };
        doc.descendants()
            .find(|n| {
                n.attribute("focused") == Some("true")
                    && n.attribute("text").is_some_and(|t| !t.is_empty())
            })
            .and_then(|n| n.attribute("text"))
            .map_or(0, |t| t.chars().count())
    }

    async fn packages(&self) -> Result<Vec<String>, DeviceError> {
        let out = self.shell_ok("pm list packages").await?;
        Ok(out
            .lines()
            .filter_map(|l| l.trim().strip_prefix("package:"))
            .map(str::to_owned)
            .collect())
    }
}

/// `pm list packages --show-versioncode`: `package:NAME versionCode:N` a line (the
/// version left out by an Android that does not know the flag).
fn parse_packages(out: &str) -> Vec<AppInfo> {
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("package:"))
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            let package = words.next()?.to_string();
            let version = words
                .find_map(|w| w.strip_prefix("versionCode:"))
                .map(str::to_owned);
            Some(AppInfo {
                package,
                label: None,
                version,
            })
        })
        .collect()
}

/// Width and height of a complete PNG (signature, IHDR first, IEND last), else `None`.
fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    const SIG: &[u8] = b"\x89PNG\r\n\x1a\n";
    if png.len() < 33 || &png[..8] != SIG || &png[12..16] != b"IHDR" {
        return None;
    }
    if !png.ends_with(&[0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]) {
        return None;
    }
    let w = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let h = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((w, h))
}

#[async_trait]
impl Device for AdbDevice {
    fn serial(&self) -> &str {
        &self.serial
    }

    async fn info(&self) -> Result<DeviceInfo, DeviceError> {
        let out = self
            .shell_ok(
                "getprop ro.product.model; wm size; wm density; settings get system user_rotation",
            )
            .await?;
        let mut lines = out.lines();
        let model = lines.next().unwrap_or("").trim().to_string();
        let screen = parse_wm_size(&out).ok_or_else(|| {
            DeviceError::Protocol(format!(
                "could not read the screen size from `wm size`: {out:?}"
            ))
        })?;
        let density = parse_wm_density(&out).unwrap_or(160);
        let rotation = out
            .lines()
            .last()
            .and_then(|l| l.trim().parse::<u8>().ok())
            .filter(|r| *r < 4)
            .unwrap_or(0);
        // `wm size` is the panel's size; a quarter turn swaps it.
        let screen = if rotation % 2 == 1 {
            ScreenSize {
                width: screen.height,
                height: screen.width,
            }
        } else {
            screen
        };
        Ok(DeviceInfo {
            serial: self.serial.clone(),
            backend: "adb".into(),
            model,
            screen,
            density,
            rotation,
        })
    }

    async fn screenshot(&self) -> Result<Screenshot, DeviceError> {
        self.screenshot_with(self.opts.screenshot).await
    }

    async fn hierarchy(&self) -> Result<String, DeviceError> {
        let mut last = String::new();
        for attempt in 0..self.opts.dump_attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 * attempt as u64)).await;
            }
            let serial = self.serial.clone();
            let out = self
                .worker
                .call("uiautomator dump", self.opts.slow_timeout, move |dev| {
                    gaps::shell(dev, &serial, "uiautomator dump /dev/tty")
                })
                .await?;
            let text = out.stdout_str();
            if let Some(xml) = extract_dump(&text) {
                return Ok(xml.to_string());
            }
            last = format!("{}{}", text.trim(), out.stderr_str().trim());
            let retryable = last.contains("could not get idle state") || last.contains("null root");
            if !retryable {
                break;
            }
        }
        Err(DeviceError::HierarchyUnavailable(if last.is_empty() {
            "empty output from uiautomator".into()
        } else {
            last
        }))
    }

    async fn tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        self.shell_ok(&format!("input tap {} {}", p.x, p.y))
            .await
            .map(|_| ())
    }

    async fn long_press(&self, p: PixelPoint, duration_ms: u64) -> Result<(), DeviceError> {
        self.shell_ok(&format!(
            "input swipe {x} {y} {x} {y} {duration_ms}",
            x = p.x,
            y = p.y
        ))
        .await
        .map(|_| ())
    }

    async fn double_tap(&self, p: PixelPoint) -> Result<(), DeviceError> {
        self.shell_ok(&format!(
            "input tap {x} {y} && input tap {x} {y}",
            x = p.x,
            y = p.y
        ))
        .await
        .map(|_| ())
    }

    async fn swipe(
        &self,
        from: PixelPoint,
        to: PixelPoint,
        duration_ms: u64,
    ) -> Result<(), DeviceError> {
        self.shell_ok(&format!(
            "input swipe {} {} {} {} {duration_ms}",
            from.x, from.y, to.x, to.y
        ))
        .await
        .map(|_| ())
    }

    async fn type_text(&self, text: &str) -> Result<(), DeviceError> {
        if text.is_empty() {
            return Ok(());
        }
        if self.has_adb_keyboard().await? {
            let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            return self
                .with_adb_keyboard(&format!(
                    "am broadcast -a ADB_INPUT_B64 --es msg {}",
                    quote(&b64)
                ))
                .await;
        }
        if !text.is_ascii() {
            return Err(DeviceError::InvalidInput(format!(
                "this text has non-ASCII characters, which `input text` cannot type; {ADB_KEYBOARD_HINT}"
            )));
        }
        // Newlines become ENTER presses; the rest goes in chunks, all in one round trip.
        let mut cmds = Vec::new();
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                cmds.push("input keyevent 66".to_string());
            }
            let chars: Vec<char> = line.chars().collect();
            for chunk in chars.chunks(INPUT_TEXT_CHUNK) {
                let s: String = chunk.iter().collect();
                cmds.push(format!("input text {}", input_text_arg(&s)));
            }
        }
        self.shell_ok(&cmds.join(" && ")).await.map(|_| ())
    }

    async fn clear_text(&self) -> Result<(), DeviceError> {
        if self.has_adb_keyboard().await? {
            return self
                .with_adb_keyboard("am broadcast -a ADB_CLEAR_TEXT")
                .await;
        }
        let n = self.focused_text_len().await;
        if n == 0 {
            return Ok(());
        }
        let dels = vec!["67"; n].join(" ");
        self.shell_ok(&format!("input keyevent 123 && input keyevent {dels}"))
            .await
            .map(|_| ())
    }

    async fn key(&self, key: Key) -> Result<(), DeviceError> {
        self.shell_ok(&format!("input keyevent {}", keycode(key)))
            .await
            .map(|_| ())
    }

    async fn launch_app(&self, app: &AppRef) -> Result<(), DeviceError> {
        let pkg = match app {
            AppRef::Package(p) => p.clone(),
            AppRef::Label(l) => match_label(l, &self.packages().await?)?,
        };
        let out = self
            .shell(&format!(
                "monkey -p {} -c android.intent.category.LAUNCHER 1",
                quote(&pkg)
            ))
            .await?;
        let all = format!("{}{}", out.stdout_str(), out.stderr_str());
        if all.contains("No activities found") || all.contains("monkey aborted") {
            return Err(DeviceError::AppNotFound(pkg));
        }
        if out.exit_code != 0 {
            return Err(DeviceError::CommandFailed {
                command: format!("monkey -p {pkg}"),
                exit_code: out.exit_code,
                stderr: all,
            });
        }
        Ok(())
    }

    async fn split_screen(&self, top: &AppRef, bottom: &AppRef) -> Result<(), DeviceError> {
        let package = |app: &AppRef, all: &[String]| match app {
            AppRef::Package(p) => Ok(p.clone()),
            AppRef::Label(l) => match_label(l, all),
        };
        let all = self.packages().await?;
        let (top, bottom) = (package(top, &all)?, package(bottom, &all)?);
        self.split(&top, &bottom).await
    }

    async fn current_app(&self) -> Result<CurrentApp, DeviceError> {
        let out = self
            .shell_ok("dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'")
            .await?;
        if let Some(app) = parse_focus(&out) {
            return Ok(app);
        }
        let out = self
            .shell_ok("dumpsys activity activities | grep -E 'mResumedActivity|ResumedActivity'")
            .await?;
        parse_focus(&out)
            .ok_or_else(|| DeviceError::Protocol("dumpsys shows no focused app".into()))
    }

    async fn window_state(&self) -> Result<crate::device::WindowState, DeviceError> {
        Ok(windows::parse(&self.shell_ok(windows::COMMAND).await?))
    }

    async fn locale(&self) -> Result<crate::device::DeviceLocale, DeviceError> {
        let out = self
            .shell_ok(
                "getprop persist.sys.locale; getprop ro.product.locale; getprop persist.sys.timezone; getprop gsm.sim.operator.iso-country",
            )
            .await?;
        Ok(parse_locale(&out))
    }

    async fn app_strings(&self, package: &str) -> Result<crate::device::AppStrings, DeviceError> {
        self.read_app_strings(package).await
    }

    async fn installed_apps(&self) -> Result<Vec<AppInfo>, DeviceError> {
        let out = self.shell_ok("pm list packages --show-versioncode").await?;
        Ok(parse_packages(&out))
    }

    async fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        if url.trim().is_empty() {
            return Err(DeviceError::InvalidInput("empty URL".into()));
        }
        self.shell_ok(&format!(
            "am start -a android.intent.action.VIEW -d {}",
            quote(url)
        ))
        .await
        .map(|_| ())
    }

    /// Auto-rotation off, then the rotation set (Android 4.0 and later; the window
    /// manager turns the screen within a frame or two).
    async fn rotate(&self, o: Orientation) -> Result<(), DeviceError> {
        self.shell_ok(&format!(
            "settings put system accelerometer_rotation 0 && settings put system user_rotation {}",
            o.rotation()
        ))
        .await
        .map(|_| ())
    }

    async fn stop_app(&self, package: &str) -> Result<(), DeviceError> {
        self.shell_ok(&format!("am force-stop {}", quote(package)))
            .await
            .map(|_| ())
    }

    async fn record_screen(
        &self,
        opts: &crate::device::RecordOptions,
    ) -> Result<Box<dyn crate::device::ScreenRecording>, DeviceError> {
        Ok(Box::new(record::AdbRecording::start(
            &self.serial,
            &self.opts,
            opts,
        )))
    }

    async fn clear_app_data(&self, package: &str) -> Result<(), DeviceError> {
        let out = self.shell(&format!("pm clear {}", quote(package))).await?;
        let all = format!("{}{}", out.stdout_str(), out.stderr_str());
        if out.exit_code != 0 || !all.contains("Success") {
            return Err(DeviceError::CommandFailed {
                command: format!("pm clear {package}"),
                exit_code: out.exit_code,
                stderr: all,
            });
        }
        Ok(())
    }

    async fn screen_state(&self) -> Result<ScreenState, DeviceError> {
        let out = self
            .shell("dumpsys power | grep mWakefulness=; dumpsys window | grep -E 'mShowingLockscreen|mDreamingLockscreen'")
            .await?
            .stdout_str();
        Ok(ScreenState {
            awake: out.contains("mWakefulness=Awake"),
            locked: out.contains("mShowingLockscreen=true")
                || out.contains("mDreamingLockscreen=true"),
        })
    }

    async fn health(&self) -> Result<(), DeviceError> {
        let serial = self.serial.clone();
        let deadline = self.opts.timeout.min(Duration::from_secs(5));
        let out = self
            .worker
            .call("health", deadline, move |dev| {
                gaps::shell(dev, &serial, "echo ok")
            })
            .await?;
        if out.stdout_str().trim() == "ok" {
            Ok(())
        } else {
            Err(DeviceError::Protocol(format!(
                "health probe answered {:?}",
                out.stdout_str()
            )))
        }
    }

    async fn reconnect(&self) -> Result<(), DeviceError> {
        let host = AdbHost::new(self.opts.clone());
        if is_tcp_serial(&self.serial) {
            // A half-dead transport blocks a fresh connect; drop it first, ignoring "not connected".
            let _ = host.disconnect(&self.serial).await;
            host.connect(&self.serial).await?;
        }
        // The server may list the device as `offline` for a moment after connecting.
        for _ in 0..20 {
            if self.health().await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        self.health().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wm_size_prefers_override() {
        assert_eq!(
            parse_wm_size("Physical size: 1080x2400\n"),
            ScreenSize::new(1080, 2400)
        );
        assert_eq!(
            parse_wm_size("Physical size: 1080x2400\nOverride size: 720x1600\n"),
            ScreenSize::new(720, 1600)
        );
        assert_eq!(parse_wm_size("garbage"), None);
        assert_eq!(
            parse_wm_density("Physical density: 420\nOverride density: 320\n"),
            Some(320)
        );
    }

    #[test]
    fn focus_is_read_like_android_prints_it() {
        let d = "  mCurrentFocus=Window{5e1c2a0 u0 com.android.settings/.Settings}\n";
        assert_eq!(
            parse_focus(d),
            Some(CurrentApp {
                package: "com.android.settings".into(),
                activity: Some(".Settings".into())
            })
        );
        let popup = "  mCurrentFocus=Window{abc u0 StatusBar}\n  mFocusedApp=ActivityRecord{8d u0 com.x/.Main t3}\n";
        assert_eq!(parse_focus(popup).unwrap().package, "com.x");
        assert_eq!(parse_focus("mCurrentFocus=null"), None);
    }

    #[test]
    fn dump_trailer_is_removed() {
        let out = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"></hierarchy>UI hierchary dumped to: /dev/tty\n";
        assert_eq!(
            extract_dump(out),
            Some(
                "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"></hierarchy>"
            )
        );
        assert_eq!(extract_dump("ERROR: could not get idle state."), None);
        assert_eq!(
            extract_dump("<hierarchy/>UI hierchary dumped to: /dev/tty\n"),
            Some("<hierarchy/>")
        );
    }

    #[test]
    fn input_text_is_escaped_for_android_and_sh() {
        assert_eq!(input_text_arg("hello world"), "hello%sworld");
        assert_eq!(input_text_arg("hello; reboot"), "'hello;%sreboot'");
        assert_eq!(input_text_arg("$(id)"), "'$(id)'");
        assert_eq!(input_text_arg("it's"), "'it'\\''s'");
    }

    #[test]
    fn labels_match_packages() {
        let pkgs: Vec<String> = [
            "com.android.settings",
            "com.android.deskclock",
            "com.droidpilot.shop",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            match_label("Settings", &pkgs).unwrap(),
            "com.android.settings"
        );
        assert_eq!(
            match_label("Clock", &pkgs).unwrap(),
            "com.android.deskclock"
        );
        assert_eq!(match_label("shop", &pkgs).unwrap(), "com.droidpilot.shop");
        assert!(matches!(
            match_label("Banking", &pkgs),
            Err(DeviceError::AppNotFound(_))
        ));
    }

    #[test]
    fn png_completeness_is_checked() {
        let img = image::RgbaImage::new(3, 2);
        let mut png = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        assert_eq!(png_size(&png), Some((3, 2)));
        assert_eq!(png_size(&png[..png.len() - 1]), None);
    }
}

/// The four `getprop` lines of `locale()`: the user's locale (or the build's), the time
/// zone, and the SIM's country (a dual-SIM phone lists one per slot: the first is taken).
fn parse_locale(out: &str) -> crate::device::DeviceLocale {
    let mut lines = out.lines().map(str::trim);
    let mut next = || lines.next().filter(|l| !l.is_empty()).map(str::to_string);
    let (user, build, timezone, country) = (next(), next(), next(), next());
    crate::device::DeviceLocale {
        locale: user.or(build),
        timezone,
        country: country.and_then(|c| {
            c.split(',')
                .map(str::trim)
                .find(|c| !c.is_empty())
                .map(str::to_lowercase)
        }),
    }
}

#[cfg(test)]
mod locale_tests {
    #[test]
    fn locale_lines_fall_back_to_the_build_locale_and_take_the_first_sim() {
        let l = super::parse_locale("\nde-DE\nEurope/Berlin\nDE,at\n");
        assert_eq!(l.locale.as_deref(), Some("de-DE"));
        assert_eq!(l.timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(l.country.as_deref(), Some("de"));
        let none = super::parse_locale("\n\n\n\n");
        assert_eq!(none, crate::device::DeviceLocale::default());
    }
}
