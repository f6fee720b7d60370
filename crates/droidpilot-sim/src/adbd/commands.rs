//! The Android commands the simulated adbd answers, implemented over the `Device` trait.
//!
//! Owns the built-in command table and the small amount of state a phone keeps outside the
//! UI (files written by `uiautomator dump FILE`, the settings table, installed input
//! methods, system properties, `wm size`/`wm density` overrides) plus a log of every
//! command dispatched, so tests can prove that nothing but the intended command ran.
//! Output formats copy what a phone prints, because real clients parse them (`Physical
//! size: …`, `mCurrentFocus=Window{… u0 pkg/act}`, `UI hierchary dumped to: …` with
//! Android's misspelling).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;

use super::cmdline::{Builtins, CmdOutput};
use droidpilot_core::device::{Device, DeviceError};
use droidpilot_core::domain::{AppRef, Key, Orientation, PixelPoint, ScreenSize};

/// The ADB Keyboard IME id (`com.android.adbkeyboard/.AdbIME`).
pub const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";
pub const ADB_KEYBOARD_PACKAGE: &str = "com.android.adbkeyboard";
/// The stock keyboard every simulated phone has.
pub const DEFAULT_IME: &str = "com.android.inputmethod.latin/.LatinIME";
/// Where `uiautomator dump` writes when no file is given.
pub const DEFAULT_DUMP_FILE: &str = "/sdcard/window_dump.xml";

/// The state a phone keeps outside its UI, owned by one adbd.
#[derive(Debug, Clone)]
pub struct PhoneState {
    pub files: HashMap<String, Vec<u8>>,
    /// `(namespace, key) → value` for `settings get|put`.
    pub settings: BTreeMap<(String, String), String>,
    pub imes: Vec<String>,
    pub current_ime: String,
    pub props: BTreeMap<String, String>,
    pub size_override: Option<ScreenSize>,
    pub density_override: Option<u32>,
    /// Every simple command dispatched, in order (argv).
    pub executed: Vec<Vec<String>>,
    /// The app `am start --windowingMode 3` put in split-screen's primary window, until
    /// `--windowingMode 4` names the secondary.
    pub split_primary: Option<String>,
    /// `screenrecord` commands running, and `pkill -INT screenrecord` calls so far (a
    /// recording stops when this changes).
    pub screenrecords: usize,
    pub interrupts: u64,
}

impl PhoneState {
    pub fn new(adb_keyboard: bool) -> Self {
        let mut imes = vec![DEFAULT_IME.to_string()];
        if adb_keyboard {
            imes.push(ADB_KEYBOARD_IME.to_string());
        }
        let mut settings = BTreeMap::new();
        settings.insert(
            ("secure".into(), "default_input_method".into()),
            DEFAULT_IME.into(),
        );
        settings.insert(
            ("system".into(), "screen_off_timeout".into()),
            "600000".into(),
        );
        settings.insert(("global".into(), "adb_enabled".into()), "1".into());
        Self {
            files: HashMap::new(),
            settings,
            imes,
            current_ime: DEFAULT_IME.into(),
            props: BTreeMap::new(),
            size_override: None,
            density_override: None,
            executed: Vec::new(),
            split_primary: None,
            screenrecords: 0,
            interrupts: 0,
        }
    }

    fn adb_keyboard_active(&self) -> bool {
        self.current_ime == ADB_KEYBOARD_IME && self.imes.iter().any(|i| i == ADB_KEYBOARD_IME)
    }
}

/// The command table for one served device.
pub struct Commands {
    device: Arc<dyn Device>,
    pub(super) state: Arc<Mutex<PhoneState>>,
}

fn out(s: impl Into<String>) -> CmdOutput {
    CmdOutput::ok(s.into().into_bytes())
}

fn fail(code: i32, s: impl Into<String>) -> CmdOutput {
    CmdOutput::err(code, s.into().into_bytes())
}

fn device_err(cmd: &str, e: &DeviceError) -> CmdOutput {
    fail(1, format!("{cmd}: {e}\n"))
}

/// Android key codes by name (with or without the `KEYCODE_` prefix) and number. Only the
/// keys the virtual phone models have an effect; others are accepted and ignored, as a
/// phone ignores keys no window handles.
fn keycode(arg: &str) -> Option<u32> {
    if let Ok(n) = arg.parse::<u32>() {
        return Some(n);
    }
    let name = arg
        .strip_prefix("KEYCODE_")
        .unwrap_or(arg)
        .to_ascii_uppercase();
    Some(match name.as_str() {
        "HOME" => 3,
        "BACK" => 4,
        "DPAD_UP" => 19,
        "DPAD_DOWN" => 20,
        "DPAD_LEFT" => 21,
        "DPAD_RIGHT" => 22,
        "POWER" => 26,
        "CAMERA" => 27,
        "TAB" => 61,
        "SPACE" => 62,
        "ENTER" => 66,
        "DEL" => 67,
        "MENU" => 82,
        "SEARCH" => 84,
        "ESCAPE" => 111,
        "FORWARD_DEL" => 112,
        "MOVE_HOME" => 122,
        "MOVE_END" => 123,
        "APP_SWITCH" => 187,
        "SLEEP" => 223,
        "WAKEUP" => 224,
        "VOLUME_UP" => 24,
        "VOLUME_DOWN" => 25,
        _ => return None,
    })
}

/// The task id the simulated phone gives the `i`-th installed app.
fn task_id(i: usize) -> usize {
    20 + i
}

fn parse_i32(s: &str) -> Option<i32> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v as i32)
}

impl Commands {
    pub fn new(device: Arc<dyn Device>, state: Arc<Mutex<PhoneState>>) -> Self {
        Self { device, state }
    }

    pub(super) fn st(&self) -> std::sync::MutexGuard<'_, PhoneState> {
        // A poisoned lock only means a handler panicked mid-update; the state is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Maps a point in the (possibly overridden) logical display to the device's pixels.
    async fn to_physical(&self, x: i32, y: i32) -> Result<PixelPoint, DeviceError> {
        let ovr = self.st().size_override;
        match ovr {
            None => Ok(PixelPoint { x, y }),
            Some(o) => {
                let phys = self.device.info().await?.screen;
                Ok(PixelPoint {
                    x: (i64::from(x) * i64::from(phys.width) / i64::from(o.width)) as i32,
                    y: (i64::from(y) * i64::from(phys.height) / i64::from(o.height)) as i32,
                })
            }
        }
    }

    async fn dispatch(&self, argv: &[String], stdin: &[u8]) -> CmdOutput {
        let name = argv[0].as_str();
        let args = &argv[1..];
        match name {
            "echo" => echo(args),
            "true" => CmdOutput::default(),
            "false" => CmdOutput::err(1, Vec::new()),
            "sleep" => sleep(args).await,
            "cat" => self.cat(args, stdin),
            "grep" => grep(args, stdin),
            "head" => head(args, stdin),
            "wm" => self.wm(args).await,
            "screencap" => self.screencap(args).await,
            "screenrecord" => self.screenrecord(args).await,
            "pkill" => self.pkill(args),
            "rm" => self.rm(args),
            "uiautomator" => self.uiautomator(args).await,
            "input" => self.input(args).await,
            "am" => self.am(args).await,
            "monkey" => self.monkey(args).await,
            "pm" => self.pm(args).await,
            "dumpsys" => self.dumpsys(args).await,
            "getprop" => self.getprop(args).await,
            "settings" => self.settings(args).await,
            "ime" => self.ime(args),
            "cmd" => self.cmd(args).await,
            _ => fail(127, format!("/system/bin/sh: {name}: not found\n")),
        }
    }

    fn cat(&self, args: &[String], stdin: &[u8]) -> CmdOutput {
        let files: Vec<&String> = args.iter().filter(|a| *a != "-").collect();
        if files.is_empty() {
            return CmdOutput::ok(stdin.to_vec());
        }
        let st = self.st();
        let mut o = CmdOutput::default();
        for f in files {
            match st.files.get(f.as_str()) {
                Some(d) => o.stdout.extend_from_slice(d),
                None => {
                    o.stderr.extend_from_slice(
                        format!("cat: {f}: No such file or directory\n").as_bytes(),
                    );
                    o.code = 1;
                }
            }
        }
        o
    }

    async fn wm(&self, args: &[String]) -> CmdOutput {
        let info = match self.device.info().await {
            Ok(i) => i,
            Err(e) => return device_err("wm", &e),
        };
        match args.first().map(String::as_str) {
            Some("size") => match args.get(1).map(String::as_str) {
                None => {
                    // The physical size is the panel's: it does not turn with the screen.
                    let (w, h) = (info.screen.width, info.screen.height);
                    let (w, h) = if info.rotation % 2 == 1 {
                        (h, w)
                    } else {
                        (w, h)
                    };
                    let mut s = format!("Physical size: {w}x{h}\n");
                    if let Some(o) = self.st().size_override {
                        s.push_str(&format!("Override size: {}x{}\n", o.width, o.height));
                    }
                    out(s)
                }
                Some("reset") => {
                    self.st().size_override = None;
                    CmdOutput::default()
                }
                Some(spec) => {
                    let parsed = spec
                        .split_once('x')
                        .and_then(|(w, h)| ScreenSize::new(w.parse().ok()?, h.parse().ok()?));
                    match parsed {
                        Some(sz) => {
                            self.st().size_override = Some(sz);
                            CmdOutput::default()
                        }
                        None => fail(255, format!("Error: bad size {spec}\n")),
                    }
                }
            },
            Some("density") => match args.get(1).map(String::as_str) {
                None => {
                    let mut s = format!("Physical density: {}\n", info.density);
                    if let Some(d) = self.st().density_override {
                        s.push_str(&format!("Override density: {d}\n"));
                    }
                    out(s)
                }
                Some("reset") => {
                    self.st().density_override = None;
                    CmdOutput::default()
                }
                Some(d) => match d.parse::<u32>() {
                    Ok(v) if v > 0 => {
                        self.st().density_override = Some(v);
                        CmdOutput::default()
                    }
                    _ => fail(255, format!("Error: bad number {d}\n")),
                },
            },
            _ => fail(255, "usage: wm [size|density] [reset|VALUE]\n"),
        }
    }

    /// The screen as the logical display shows it: resized when `wm size` is overridden.
    pub(super) async fn capture(&self) -> Result<droidpilot_core::device::Screenshot, DeviceError> {
        let shot = self.device.screenshot().await?;
        let Some(mut o) = self.st().size_override else {
            return Ok(shot);
        };
        // An override is in the panel's (portrait) terms; a turned screen turns it too.
        if (shot.width > shot.height) != (o.width > o.height) {
            o = ScreenSize {
                width: o.height,
                height: o.width,
            };
        }
        if o.width == shot.width && o.height == shot.height {
            return Ok(shot);
        }
        let rgba = shot.rgba()?;
        let img = image::RgbaImage::from_raw(shot.width, shot.height, rgba.to_vec())
            .ok_or_else(|| DeviceError::Protocol("screenshot has the wrong size".into()))?;
        let resized = image::imageops::resize(
            &img,
            o.width,
            o.height,
            image::imageops::FilterType::Triangle,
        );
        Ok(droidpilot_core::device::Screenshot {
            width: o.width,
            height: o.height,
            data: droidpilot_core::device::ScreenshotData::Rgba(resized.into_raw().into()),
        })
    }

    async fn screencap(&self, args: &[String]) -> CmdOutput {
        let png = args.iter().any(|a| a == "-p");
        let file = args.iter().find(|a| !a.starts_with('-'));
        let shot = match self.capture().await {
            Ok(s) => s,
            Err(e) => return device_err("screencap", &e),
        };
        let png = png || file.is_some_and(|f| f.ends_with(".png"));
        let bytes = if png {
            match shot.png() {
                Ok(b) => b.to_vec(),
                Err(e) => return device_err("screencap", &e),
            }
        } else {
            // Raw form: width, height, format (1 = RGBA_8888), colour space (Android 9+).
            let rgba = match shot.rgba() {
                Ok(b) => b,
                Err(e) => return device_err("screencap", &e),
            };
            let mut v = Vec::with_capacity(16 + rgba.len());
            for w in [shot.width, shot.height, 1, 0] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v.extend_from_slice(&rgba);
            v
        };
        match file {
            Some(f) => {
                self.st().files.insert(f.clone(), bytes);
                CmdOutput::default()
            }
            None => CmdOutput::ok(bytes),
        }
    }

    /// The hierarchy in logical-display coordinates.
    async fn dump_xml(&self) -> Result<String, DeviceError> {
        let xml = self.device.hierarchy().await?;
        let Some(o) = self.st().size_override else {
            return Ok(xml);
        };
        let phys = self.device.info().await?.screen;
        Ok(scale_bounds(&xml, phys, o))
    }

    async fn uiautomator(&self, args: &[String]) -> CmdOutput {
        if args.first().map(String::as_str) != Some("dump") {
            return fail(1, "Usage: uiautomator dump [--compressed] [FILE]\n");
        }
        let file = args[1..]
            .iter()
            .find(|a| !a.starts_with("--"))
            .cloned()
            .unwrap_or_else(|| DEFAULT_DUMP_FILE.to_string());
        let xml = match self.dump_xml().await {
            Ok(x) => x,
            // uiautomator reports these on stderr and still exits 0 on real phones; callers
            // must read the text, which is why the backend retries on the message.
            Err(DeviceError::HierarchyUnavailable(msg)) => {
                return CmdOutput {
                    stdout: Vec::new(),
                    stderr: format!("ERROR: {msg}\n").into_bytes(),
                    code: 0,
                };
            }
            Err(e) => return device_err("uiautomator", &e),
        };
        if file == "/dev/tty" {
            out(format!("{xml}UI hierchary dumped to: /dev/tty\n"))
        } else {
            self.st().files.insert(file.clone(), xml.into_bytes());
            out(format!("UI hierchary dumped to: {file}\n"))
        }
    }

    async fn input(&self, args: &[String]) -> CmdOutput {
        // An optional input source comes first (`input touchscreen tap …`).
        let sources = [
            "touchscreen",
            "touchpad",
            "keyboard",
            "mouse",
            "stylus",
            "dpad",
            "gamepad",
            "joystick",
            "trackball",
            "touchnavigation",
            "rotaryencoder",
        ];
        let args = match args.first() {
            Some(a) if sources.contains(&a.as_str()) => &args[1..],
            _ => args,
        };
        let usage = || {
            fail(
                1,
                "Error: Invalid arguments for command\nUsage: input [<source>] <command> [<arg>...]\n",
            )
        };
        let Some(cmd) = args.first() else {
            return usage();
        };
        let nums: Vec<i32> = args[1..].iter().filter_map(|a| parse_i32(a)).collect();
        let res: Result<(), DeviceError> = match cmd.as_str() {
            "tap" if nums.len() == 2 => match self.to_physical(nums[0], nums[1]).await {
                Ok(p) => self.device.tap(p).await,
                Err(e) => Err(e),
            },
            "swipe" | "draganddrop" if nums.len() == 4 || nums.len() == 5 => {
                let dur = nums
                    .get(4)
                    .map_or(if cmd == "swipe" { 300 } else { 1500 }, |d| {
                        (*d).max(0) as u64
                    });
                match (
                    self.to_physical(nums[0], nums[1]).await,
                    self.to_physical(nums[2], nums[3]).await,
                ) {
                    (Ok(a), Ok(b)) if a == b && cmd == "swipe" => {
                        self.device.long_press(a, dur).await
                    }
                    (Ok(a), Ok(b)) => self.device.swipe(a, b, dur).await,
                    (Err(e), _) | (_, Err(e)) => Err(e),
                }
            }
            "text" if args.len() >= 2 => {
                // Android's `input text` takes one argument and turns `%s` into spaces.
                let text = args[1].replace("%s", " ");
                if !text.is_ascii() {
                    return fail(
                        255,
                        "Exception occurred while executing 'text':\njava.lang.IllegalArgumentException: non-ASCII text cannot be mapped to key events\n",
                    );
                }
                self.device.type_text(&text).await
            }
            "keyevent" => {
                let mut codes = Vec::new();
                for a in &args[1..] {
                    if a.starts_with("--") {
                        continue;
                    }
                    match keycode(a) {
                        Some(c) => codes.push(c),
                        None => return fail(1, format!("Error: Unknown keycode: {a}\n")),
                    }
                }
                if codes.is_empty() {
                    return usage();
                }
                let mut r = Ok(());
                for c in codes {
                    r = self.key(c).await;
                    if r.is_err() {
                        break;
                    }
                }
                r
            }
            _ => return usage(),
        };
        match res {
            Ok(()) => CmdOutput::default(),
            Err(e) => device_err("input", &e),
        }
    }

    async fn key(&self, code: u32) -> Result<(), DeviceError> {
        let key = match code {
            3 => Key::Home,
            4 | 111 => Key::Back,
            26 => Key::Power,
            66 => Key::Enter,
            82 => Key::Menu,
            187 => Key::Recents,
            67 => return self.delete_last_char().await,
            _ => return Ok(()),
        };
        self.device.key(key).await
    }

    /// KEYCODE_DEL on the focused field, over a trait that only has clear and type: read
    /// the field's text from the hierarchy, clear it, retype all but the last character.
    async fn delete_last_char(&self) -> Result<(), DeviceError> {
        let xml = self.device.hierarchy().await?;
        let Some(text) = focused_text(&xml) else {
            return Ok(());
        };
        let mut chars: Vec<char> = text.chars().collect();
        if chars.pop().is_none() {
            return Ok(());
        }
        self.device.clear_text().await?;
        let rest: String = chars.into_iter().collect();
        if !rest.is_empty() {
            self.device.type_text(&rest).await?;
        }
        Ok(())
    }

    async fn am(&self, args: &[String]) -> CmdOutput {
        match args.first().map(String::as_str) {
            Some("start" | "start-activity") => self.am_start(&args[1..]).await,
            Some("broadcast") => self.am_broadcast(&args[1..]).await,
            Some("force-stop") => match args.get(1) {
                Some(pkg) => match self.device.stop_app(pkg).await {
                    Ok(()) => CmdOutput::default(),
                    Err(e) => device_err("am", &e),
                },
                None => fail(255, "Error: am force-stop needs a package\n"),
            },
            _ => fail(
                255,
                "Error: unknown am command (the simulated phone supports start, broadcast, force-stop)\n",
            ),
        }
    }

    async fn am_start(&self, args: &[String]) -> CmdOutput {
        let (mut component, mut action, mut data) = (None, None, None);
        let mut mode = None;
        let mut i = 0;
        while i < args.len() {
            let next = args.get(i + 1).cloned();
            match args[i].as_str() {
                "-n" => component = next,
                "--windowingMode" => mode = next,
                "-a" => action = next,
                "-d" => data = next,
                "-W" | "-S" | "-R" | "--activity-clear-task" | "--activity-new-task" => {
                    i += 1;
                    continue;
                }
                "-c" | "-f" | "--user" | "-t" => {}
                other if !other.starts_with('-') && component.is_none() && other.contains('/') => {
                    component = Some(other.to_string());
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        if let Some(c) = component {
            let pkg = c.split('/').next().unwrap_or("").to_string();
            if let Some(m) = mode {
                return self.start_in_split(&c, &pkg, &m).await;
            }
            return match self.device.launch_app(&AppRef::Package(pkg)).await {
                Ok(()) => out(format!("Starting: Intent {{ cmp={c} }}\n")),
                Err(DeviceError::AppNotFound(_)) => fail(
                    1,
                    format!(
                        "Starting: Intent {{ cmp={c} }}\nError type 3\nError: Activity class {{{c}}} does not exist.\n"
                    ),
                ),
                Err(e) => device_err("am", &e),
            };
        }
        match (action.as_deref(), data) {
            (Some("android.intent.action.VIEW"), Some(url)) => {
                match self.device.open_url(&url).await {
                    Ok(()) => out(format!(
                        "Starting: Intent {{ act=android.intent.action.VIEW dat={url} }}\n"
                    )),
                    Err(e) => device_err("am", &e),
                }
            }
            _ => fail(
                1,
                "Error: the simulated phone starts activities by -n COMPONENT or -a android.intent.action.VIEW -d URL\n",
            ),
        }
    }

    /// `am start --windowingMode 3|4 -n COMPONENT` (Android 9–12): the primary is
    /// launched and remembered; the secondary puts both in split-screen.
    async fn start_in_split(&self, component: &str, pkg: &str, mode: &str) -> CmdOutput {
        let app = AppRef::Package(pkg.to_string());
        let primary = self.st().split_primary.take();
        let r = match (mode, primary) {
            ("3", _) => {
                self.st().split_primary = Some(pkg.to_string());
                self.device.launch_app(&app).await
            }
            ("4", Some(top)) => self.device.split_screen(&AppRef::Package(top), &app).await,
            ("1" | "4", None) => self.device.launch_app(&app).await,
            (m, _) => {
                return fail(
                    255,
                    format!(
                        "Error: the simulated phone knows windowing modes 1, 3 and 4, not {m}\n"
                    ),
                );
            }
        };
        match r {
            Ok(()) => out(format!("Starting: Intent {{ cmp={component} }}\n")),
            Err(e) => device_err("am", &e),
        }
    }

    /// `cmd package resolve-activity --brief [-c CATEGORY] PACKAGE`: the launcher
    /// activity, as `pkg/.MainActivity` (the phone launches by package).
    async fn cmd(&self, args: &[String]) -> CmdOutput {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        if words.get(..2) != Some(&["package", "resolve-activity"]) {
            return fail(
                255,
                "cmd: the simulated phone knows `cmd package resolve-activity --brief PACKAGE`\n",
            );
        }
        let pkg = args.last().cloned().unwrap_or_default();
        match self.packages().await {
            Ok(all) if all.contains(&pkg) => out(format!(
                "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false\n{pkg}/.MainActivity\n"
            )),
            Ok(_) => out("No activity found\n"),
            Err(e) => device_err("cmd", &e),
        }
    }

    /// The tasks `dumpsys activity activities` lists: every app, its task id its place in
    /// the installed list (stable for a phone), the foreground first.
    async fn task_lines(&self, focused: &str) -> Result<String, DeviceError> {
        let apps = self.device.installed_apps().await?;
        let mut lines: Vec<(bool, String)> = apps
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let line = format!(
                    "  * Task{{{:x} #{} type=standard A=10{:03}:{} U=0}}\n",
                    0x4b20 + i,
                    task_id(i),
                    100 + i,
                    a.package
                );
                (a.package != focused, line)
            })
            .collect();
        lines.sort_by_key(|(other, _)| *other);
        Ok(lines.into_iter().map(|(_, l)| l).collect())
    }

    /// WM Shell's commands through SystemUI (Android 13+): `splitscreen moveToSideStage
    /// TASK_ID POSITION` puts that task's app beside the foreground one (position 0 top,
    /// 1 bottom).
    async fn wm_shell(&self, args: &[String]) -> CmdOutput {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let (Some(&"splitscreen"), Some(&"moveToSideStage")) = (words.first(), words.get(1)) else {
            return out(format!("Invalid command: {}\n", words.join(" ")));
        };
        let (Some(id), pos) = (
            words.get(2).and_then(|w| w.parse::<usize>().ok()),
            words.get(3),
        ) else {
            return out("Error: task id should be provided as arguments\n");
        };
        let apps = match self.device.installed_apps().await {
            Ok(a) => a,
            Err(e) => return device_err("dumpsys", &e),
        };
        let Some(side) = (0..apps.len())
            .find(|i| task_id(*i) == id)
            .map(|i| &apps[i])
        else {
            return out(format!("Error: no task {id}\n"));
        };
        let main = match self.device.current_app().await {
            Ok(a) => AppRef::Package(a.package),
            Err(e) => return device_err("dumpsys", &e),
        };
        let side = AppRef::Package(side.package.clone());
        let r = match pos.copied() {
            Some("0") => self.device.split_screen(&side, &main).await,
            _ => self.device.split_screen(&main, &side).await,
        };
        match r {
            Ok(()) => CmdOutput::default(),
            Err(e) => device_err("dumpsys", &e),
        }
    }

    async fn am_broadcast(&self, args: &[String]) -> CmdOutput {
        let mut action = None;
        let mut extras: HashMap<String, String> = HashMap::new();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "-a" => {
                    action = args.get(i + 1).cloned();
                    i += 2;
                }
                "--es" | "-e" => {
                    if let (Some(k), Some(v)) = (args.get(i + 1), args.get(i + 2)) {
                        extras.insert(k.clone(), v.clone());
                    }
                    i += 3;
                }
                _ => i += 1,
            }
        }
        let Some(action) = action else {
            return fail(255, "Error: no broadcast action given (-a ACTION)\n");
        };
        let flags = if extras.is_empty() {
            ""
        } else {
            " (has extras)"
        };
        let mut text = format!("Broadcasting: Intent {{ act={action} flg=0x400000{flags} }}\n");
        // Only the ADB Keyboard receives these, and only while it is the current IME; a
        // phone without it completes the broadcast and nothing happens.
        let active = self.st().adb_keyboard_active();
        if active {
            let res = match action.as_str() {
                "ADB_INPUT_B64" => match extras
                    .get("msg")
                    .map(|m| base64::engine::general_purpose::STANDARD.decode(m))
                {
                    Some(Ok(bytes)) => match String::from_utf8(bytes) {
                        Ok(s) => self.device.type_text(&s).await,
                        Err(_) => Err(DeviceError::InvalidInput(
                            "ADB_INPUT_B64 message is not UTF-8".into(),
                        )),
                    },
                    Some(Err(_)) => Err(DeviceError::InvalidInput(
                        "ADB_INPUT_B64 message is not base64".into(),
                    )),
                    None => Ok(()),
                },
                "ADB_INPUT_TEXT" => match extras.get("msg") {
                    Some(m) => self.device.type_text(m).await,
                    None => Ok(()),
                },
                "ADB_CLEAR_TEXT" => self.device.clear_text().await,
                _ => Ok(()),
            };
            if let Err(e) = res {
                return fail(1, format!("{text}{e}\n"));
            }
        }
        text.push_str("Broadcast completed: result=0\n");
        out(text)
    }

    async fn monkey(&self, args: &[String]) -> CmdOutput {
        let pkg = args
            .iter()
            .position(|a| a == "-p")
            .and_then(|i| args.get(i + 1));
        let Some(pkg) = pkg else {
            return fail(1, "** Error: the simulated monkey needs -p PACKAGE\n");
        };
        match self.device.launch_app(&AppRef::Package(pkg.clone())).await {
            Ok(()) => out(
                "  bash arg: -p\nEvents injected: 1\n## Network stats: elapsed time=10ms (0ms mobile, 0ms wifi, 10ms not connected)\n",
            ),
            Err(DeviceError::AppNotFound(_)) => {
                fail(251, "** No activities found to run, monkey aborted.\n")
            }
            Err(e) => device_err("monkey", &e),
        }
    }

    async fn packages(&self) -> Result<Vec<String>, DeviceError> {
        let mut pkgs: Vec<String> = self
            .device
            .installed_apps()
            .await?
            .into_iter()
            .map(|a| a.package)
            .collect();
        if self.st().imes.iter().any(|i| i == ADB_KEYBOARD_IME) {
            pkgs.push(ADB_KEYBOARD_PACKAGE.to_string());
        }
        pkgs.sort();
        pkgs.dedup();
        Ok(pkgs)
    }

    async fn pm(&self, args: &[String]) -> CmdOutput {
        match (
            args.first().map(String::as_str),
            args.get(1).map(String::as_str),
        ) {
            (Some("list"), Some("packages")) => {
                let filter = args[2..].iter().find(|a| !a.starts_with('-'));
                // `--show-versioncode` (Android 9+): `package:NAME versionCode:N`.
                let versions = args[2..].iter().any(|a| a == "--show-versioncode");
                match self.packages().await {
                    Ok(p) => out(p
                        .into_iter()
                        .filter(|p| filter.is_none_or(|f| p.contains(f.as_str())))
                        .map(|p| match versions {
                            true => format!("package:{p} versionCode:{}\n", crate::SIM_APP_VERSION),
                            false => format!("package:{p}\n"),
                        })
                        .collect::<String>()),
                    Err(e) => device_err("pm", &e),
                }
            }
            (Some("path"), Some(pkg)) => match self.packages().await {
                Ok(p) if p.iter().any(|x| x == pkg) => {
                    let path = format!("/data/app/{pkg}/base.apk");
                    // The app's APK, for `adb pull` (`apk`): a phone's app has one.
                    if let Some(app) = crate::AppId::find(pkg).filter(|a| a.package() == pkg) {
                        self.st()
                            .files
                            .insert(path.clone(), crate::apk::base_apk(app));
                    }
                    out(format!("package:{path}\n"))
                }
                Ok(_) => CmdOutput::err(1, Vec::new()),
                Err(e) => device_err("pm", &e),
            },
            (Some("clear"), Some(pkg)) => match self.device.clear_app_data(pkg).await {
                Ok(()) => out("Success\n".to_string()),
                Err(e) => device_err("pm", &e),
            },
            _ => fail(
                255,
                "Error: the simulated phone supports `pm list packages [FILTER]`, `pm path PKG` and `pm clear PKG`\n",
            ),
        }
    }

    async fn dumpsys(&self, args: &[String]) -> CmdOutput {
        let focus = || async {
            self.device.current_app().await.map(|app| {
                let act = app.activity.unwrap_or_else(|| ".MainActivity".into());
                format!("{}/{}", app.package, act)
            })
        };
        match args.first().map(String::as_str) {
            Some("window") => {
                // One device call (the activity is the app window's title), as before.
                let ws = match self.device.window_state().await {
                    Ok(w) => w,
                    Err(e) => return device_err("dumpsys", &e),
                };
                let app = ws
                    .windows
                    .iter()
                    .find(|w| w.kind == "BASE_APPLICATION" && w.title.contains('/'));
                let comp = match app {
                    Some(w) => w.title.clone(),
                    None => match focus().await {
                        Ok(c) => c,
                        Err(e) => return device_err("dumpsys", &e),
                    },
                };
                let locked = self
                    .device
                    .screen_state()
                    .await
                    .map(|s| s.locked)
                    .unwrap_or(false);
                out(window_dump(&comp, &ws, locked))
            }
            Some("activity")
                if args.get(1..4).is_some_and(|a| {
                    a[0] == "service" && a[1] == "SystemUIService" && a[2] == "WMShell"
                }) =>
            {
                self.wm_shell(&args[4..]).await
            }
            Some("activity") => {
                let comp = match focus().await {
                    Ok(c) => c,
                    Err(e) => return device_err("dumpsys", &e),
                };
                let pkg = comp.split('/').next().unwrap_or("").to_string();
                let tasks = match self.task_lines(&pkg).await {
                    Ok(t) => t,
                    Err(e) => return device_err("dumpsys", &e),
                };
                out(format!(
                    "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n{tasks}    * Hist #0: ActivityRecord{{8d3b7e1 u0 {comp} t12}}\n\n  ResumedActivity: ActivityRecord{{8d3b7e1 u0 {comp} t12}}\n    mResumedActivity: ActivityRecord{{8d3b7e1 u0 {comp} t12}}\n"
                ))
            }
            Some("power") => match self.device.screen_state().await {
                Ok(s) => out(format!(
                    "POWER MANAGER (dumpsys power)\n  mWakefulness={}\n  mHoldingDisplaySuspendBlocker={}\n",
                    if s.awake { "Awake" } else { "Asleep" },
                    s.awake
                )),
                Err(e) => device_err("dumpsys", &e),
            },
            Some("input_method") => {
                let cur = self.st().current_ime.clone();
                let shown = match self.device.window_state().await {
                    Ok(w) => w.keyboard_shown.unwrap_or(false),
                    Err(e) => return device_err("dumpsys", &e),
                };
                out(format!(
                    "  mCurMethodId={cur}\n  mShowRequested={shown} mShowExplicitlyRequested=false mShowForced=false mInputShown={shown}\n"
                ))
            }
            Some(other) => fail(1, format!("Can't find service: {other}\n")),
            None => fail(
                1,
                "the simulated phone dumps window, activity, power and input_method\n",
            ),
        }
    }

    async fn props(&self) -> BTreeMap<String, String> {
        let mut p = BTreeMap::new();
        if let Ok(info) = self.device.info().await {
            p.insert("ro.serialno".into(), info.serial.clone());
            p.insert("ro.product.model".into(), info.model.clone());
            p.insert("ro.sf.lcd_density".into(), info.density.to_string());
        }
        if let Ok(l) = self.device.locale().await {
            for (k, v) in [
                ("persist.sys.locale", l.locale),
                ("persist.sys.timezone", l.timezone),
                ("gsm.sim.operator.iso-country", l.country),
            ] {
                if let Some(v) = v {
                    p.insert(k.into(), v);
                }
            }
        }
        p.insert("ro.product.manufacturer".into(), "droidpilot".into());
        p.insert("ro.product.brand".into(), "droidpilot".into());
        p.insert("ro.product.name".into(), "droidpilot_sim".into());
        p.insert("ro.product.device".into(), "sim".into());
        p.insert("ro.build.version.release".into(), "14".into());
        p.insert("ro.build.version.sdk".into(), "34".into());
        p.insert("ro.build.type".into(), "userdebug".into());
        p.insert("sys.boot_completed".into(), "1".into());
        p.insert("ro.product.cpu.abi".into(), "x86_64".into());
        p.extend(self.st().props.clone());
        p
    }

    async fn getprop(&self, args: &[String]) -> CmdOutput {
        let props = self.props().await;
        match args.first() {
            Some(k) => out(format!("{}\n", props.get(k).map_or("", String::as_str))),
            None => out(props
                .iter()
                .map(|(k, v)| format!("[{k}]: [{v}]\n"))
                .collect::<String>()),
        }
    }

    async fn settings(&self, args: &[String]) -> CmdOutput {
        let usage = || {
            fail(
                255,
                "usage: settings [get|put|delete|list] NAMESPACE KEY [VALUE]\n",
            )
        };
        let (Some(verb), Some(ns)) = (args.first(), args.get(1)) else {
            return usage();
        };
        if !matches!(ns.as_str(), "system" | "secure" | "global") {
            return fail(255, format!("Invalid namespace '{ns}'\n"));
        }
        if let ("put", Some("user_rotation"), Some(v)) =
            (verb.as_str(), args.get(2).map(String::as_str), args.get(3))
            && ns == "system"
        {
            // The screen turns, as Android's window manager turns it.
            let Some(o) = v.parse().ok().and_then(Orientation::from_rotation) else {
                return fail(255, format!("Invalid rotation '{v}'\n"));
            };
            if let Err(e) = self.device.rotate(o).await {
                return device_err("settings", &e);
            }
        }
        let mut st = self.st();
        match (verb.as_str(), args.get(2), args.get(3)) {
            ("get", Some(k), _) => {
                let v = st
                    .settings
                    .get(&(ns.clone(), k.clone()))
                    .cloned()
                    .unwrap_or_else(|| "null".into());
                out(format!("{v}\n"))
            }
            ("put", Some(k), Some(v)) => {
                if ns == "secure" && k == "default_input_method" {
                    st.current_ime = v.clone();
                }
                st.settings.insert((ns.clone(), k.clone()), v.clone());
                CmdOutput::default()
            }
            ("delete", Some(k), _) => {
                let n = usize::from(st.settings.remove(&(ns.clone(), k.clone())).is_some());
                out(format!("Deleted {n} rows\n"))
            }
            ("list", _, _) => out(st
                .settings
                .iter()
                .filter(|((n, _), _)| n == ns)
                .map(|((_, k), v)| format!("{k}={v}\n"))
                .collect::<String>()),
            _ => usage(),
        }
    }

    fn ime(&self, args: &[String]) -> CmdOutput {
        let mut st = self.st();
        match (args.first().map(String::as_str), args.get(1)) {
            (Some("list"), _) => {
                if args.iter().any(|a| a == "-s") {
                    out(st.imes.iter().map(|i| format!("{i}\n")).collect::<String>())
                } else {
                    out(st
                        .imes
                        .iter()
                        .map(|i| format!("{i}:\n  mId={i}\n"))
                        .collect::<String>())
                }
            }
            (Some("set"), Some(id)) => {
                if st.imes.contains(id) {
                    st.current_ime = id.clone();
                    st.settings
                        .insert(("secure".into(), "default_input_method".into()), id.clone());
                    out(format!("Input method {id} selected for user #0\n"))
                } else {
                    fail(
                        255,
                        format!("Unknown input method {id} cannot be selected for user #0\n"),
                    )
                }
            }
            (Some("enable"), Some(id)) => {
                if st.imes.contains(id) {
                    out(format!("Input method {id}: already enabled for user #0\n"))
                } else {
                    fail(
                        255,
                        format!("Unknown input method {id} cannot be enabled for user #0\n"),
                    )
                }
            }
            _ => fail(255, "usage: ime [list [-s]|set ID|enable ID]\n"),
        }
    }
}

fn echo(args: &[String]) -> CmdOutput {
    let (newline, args) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut s = args.join(" ");
    if newline {
        s.push('\n');
    }
    out(s)
}

async fn sleep(args: &[String]) -> CmdOutput {
    match args
        .first()
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        // Capped so a stray `sleep 1e9` cannot pin a stream forever.
        Some(secs) => {
            tokio::time::sleep(Duration::from_secs_f64(secs.min(600.0))).await;
            CmdOutput::default()
        }
        None => fail(1, "sleep: invalid number\n"),
    }
}

/// `grep [-i] [-v] [-c] [-E|-F] [-e] PATTERN`: fixed strings, with `|` alternation under
/// `-E` and `^`/`$` anchors, which covers what clients pipe `dumpsys` into.
fn grep(args: &[String], stdin: &[u8]) -> CmdOutput {
    let (mut icase, mut invert, mut count, mut ext) = (false, false, false, false);
    let mut pattern = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-e" => pattern = it.next().cloned(),
            s if s.starts_with('-') && s.len() > 1 && pattern.is_none() => {
                for c in s[1..].chars() {
                    match c {
                        'i' => icase = true,
                        'v' => invert = true,
                        'c' => count = true,
                        'E' => ext = true,
                        'F' | 'a' | 's' | 'h' => {}
                        _ => return fail(2, format!("grep: unknown option -- {c}\n")),
                    }
                }
            }
            _ if pattern.is_none() => pattern = Some(a.clone()),
            _ => {}
        }
    }
    let Some(pattern) = pattern else {
        return fail(2, "usage: grep [-icvE] PATTERN\n");
    };
    let alts: Vec<String> = if ext {
        pattern.split('|').map(str::to_owned).collect()
    } else {
        vec![pattern]
    };
    let norm = |s: &str| {
        if icase {
            s.to_lowercase()
        } else {
            s.to_owned()
        }
    };
    let text = String::from_utf8_lossy(stdin);
    let mut hits = Vec::new();
    for line in text.split_inclusive('\n') {
        let l = norm(line.trim_end_matches('\n'));
        let m = alts.iter().any(|a| {
            let a = norm(a);
            match (a.strip_prefix('^'), a.strip_suffix('$')) {
                (Some(p), _) if p.ends_with('$') => l == p[..p.len() - 1],
                (Some(p), _) => l.starts_with(p),
                (None, Some(p)) => l.ends_with(p),
                (None, None) => l.contains(&a),
            }
        });
        if m != invert {
            hits.push(line);
        }
    }
    let code = if hits.is_empty() { 1 } else { 0 };
    let body = if count {
        format!("{}\n", hits.len())
    } else {
        let mut s: String = hits.concat();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s
    };
    CmdOutput {
        stdout: body.into_bytes(),
        stderr: Vec::new(),
        code,
    }
}

fn head(args: &[String], stdin: &[u8]) -> CmdOutput {
    let mut n = 10usize;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-n" {
            match it.next().and_then(|v| v.parse().ok()) {
                Some(v) => n = v,
                None => return fail(1, "head: invalid number of lines\n"),
            }
        } else if let Some(v) = a.strip_prefix("-n").or_else(|| a.strip_prefix('-')) {
            match v.parse() {
                Ok(v) => n = v,
                Err(_) => return fail(1, format!("head: invalid option {a}\n")),
            }
        }
    }
    let mut out_b = Vec::new();
    for line in stdin.split_inclusive(|b| *b == b'\n').take(n) {
        out_b.extend_from_slice(line);
    }
    CmdOutput::ok(out_b)
}

/// The focused field's text in a uiautomator dump.
fn focused_text(xml: &str) -> Option<String> {
    let doc = roxmltree::Document::parse(xml).ok()?;
    doc.descendants()
        .find(|n| {
            n.attribute("focused") == Some("true")
                && n.attribute("class").is_some_and(|c| c.contains("EditText"))
        })
        .and_then(|n| n.attribute("text").map(str::to_owned))
}

/// Rewrites every `bounds="[l,t][r,b]"` from physical to overridden display coordinates.
fn scale_bounds(xml: &str, phys: ScreenSize, to: ScreenSize) -> String {
    let sx = |v: i64| v * i64::from(to.width) / i64::from(phys.width);
    let sy = |v: i64| v * i64::from(to.height) / i64::from(phys.height);
    let mut outs = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(pos) = rest.find("bounds=\"") {
        let (head, tail) = rest.split_at(pos + 8);
        outs.push_str(head);
        let Some(end) = tail.find('"') else {
            rest = tail;
            break;
        };
        let nums: Vec<i64> = tail[..end]
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse().ok())
            .collect();
        if nums.len() == 4 {
            outs.push_str(&format!(
                "[{},{}][{},{}]",
                sx(nums[0]),
                sy(nums[1]),
                sx(nums[2]),
                sy(nums[3])
            ));
        } else {
            outs.push_str(&tail[..end]);
        }
        rest = &tail[end..];
    }
    outs.push_str(rest);
    outs
}

#[async_trait]
impl Builtins for Commands {
    async fn run(&self, argv: &[String], stdin: &[u8]) -> CmdOutput {
        self.st().executed.push(argv.to_vec());
        self.dispatch(argv, stdin).await
    }

    async fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), String> {
        if path == "/dev/tty" {
            return Ok(());
        }
        let mut st = self.st();
        let f = st.files.entry(path.to_owned()).or_default();
        if !append {
            f.clear();
        }
        f.extend_from_slice(data);
        Ok(())
    }

    async fn read_file(&self, path: &str) -> Result<Vec<u8>, String> {
        self.st()
            .files
            .get(path)
            .cloned()
            .ok_or_else(|| "No such file or directory".into())
    }
}

/// `dumpsys window windows` as Android 14 writes it, trimmed to the lines readers use:
/// each window top first (`Window #n Window{hash u0 TITLE}:`, its owner's `package=`,
/// `ty=` in `mAttrs`, `mFrame`, `isOnScreen`, `isVisible`), then the focus and the
/// lock screen.
fn window_dump(comp: &str, ws: &droidpilot_core::device::WindowState, locked: bool) -> String {
    let mut s = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
    let hash = |i: usize| format!("{:07x}", 0x5e1_c2a0 + i * 0x1_0f3);
    let mut focus = format!("Window{{{} u0 {comp}}}", hash(99));
    for (i, w) in ws.windows.iter().enumerate() {
        let name = format!("Window{{{} u0 {}}}", hash(i), w.title);
        if w.focused {
            focus = name.clone();
        }
        let [l, t, r, b] = w.bounds.unwrap_or([0, 0, 0, 0]);
        let _ = write!(
            s,
            "  Window #{i} {name}:\n    mDisplayId=0 rootTaskId=12 mSession=Session{{9f1 4242:u0a10123}} mClient=android.os.BinderProxy@1c{i}\n    mOwnerUid=10123 showForAllUsers=false package={pkg} appop=NONE\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=pan}} ty={ty} fmt=TRANSLUCENT}}\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    mFrame=[{l},{t}][{r},{b}] last=[{l},{t}][{r},{b}]\n    isOnScreen=true\n    isVisible=true\n",
            pkg = w.package,
            ty = w.kind,
        );
    }
    let _ = write!(
        s,
        "\n  mCurrentFocus={focus}\n  mFocusedApp=ActivityRecord{{8d3b7e1 u0 {comp} t12}}\n  mShowingLockscreen={locked} mShowingDream=false mDreamingLockscreen={locked}\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn grep_and_head_filter_like_toybox() {
        let input = b"  mCurrentFocus=Window{x}\n  mFocusedApp=y\nother\n";
        let o = grep(&a(&["-E", "mCurrentFocus|mFocusedApp"]), input);
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            "  mCurrentFocus=Window{x}\n  mFocusedApp=y\n"
        );
        assert_eq!(grep(&a(&["nomatch"]), input).code, 1);
        assert_eq!(grep(&a(&["-c", "-v", "m"]), input).stdout, b"1\n");
        assert_eq!(grep(&a(&["-i", "^OTHER$"]), input).stdout, b"other\n");
        assert_eq!(
            head(&a(&["-n", "1"]), input).stdout,
            b"  mCurrentFocus=Window{x}\n"
        );
        assert_eq!(head(&a(&["-2"]), input).stdout.len(), 42);
    }

    #[test]
    fn keycodes_by_name_and_number() {
        assert_eq!(keycode("KEYCODE_BACK"), Some(4));
        assert_eq!(keycode("home"), Some(3));
        assert_eq!(keycode("187"), Some(187));
        assert_eq!(keycode("KEYCODE_NOPE"), None);
    }

    #[test]
    fn bounds_are_scaled_to_the_override() {
        let xml = r#"<node bounds="[0,0][1080,2400]"/><node bounds="[540,1200][1080,2400]"/>"#;
        let s = scale_bounds(
            xml,
            ScreenSize {
                width: 1080,
                height: 2400,
            },
            ScreenSize {
                width: 540,
                height: 1200,
            },
        );
        assert_eq!(
            s,
            r#"<node bounds="[0,0][540,1200]"/><node bounds="[270,600][540,1200]"/>"#
        );
    }

    #[test]
    fn focused_text_reads_the_focused_edit_text() {
        let xml = r#"<hierarchy rotation="0"><node class="android.widget.EditText" focused="true" text="abc"/></hierarchy>"#;
        assert_eq!(focused_text(xml).as_deref(), Some("abc"));
        assert_eq!(focused_text("<x"), None);
    }
}
