//! The whole ADB path against the real `adb` tool: the virtual phone served by the
//! simulated adbd, a private adb server (never 5037), the ADB backend and the pool.
//!
//! Without `adb` installed this prints a skip notice, unless DROIDPILOT_REQUIRE_ADB=1
//! (CI), in which case it fails.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use droidpilot::adbd::{Adbd, AdbdOptions};
use droidpilot::device::adb::{AdbDevice, AdbHost, AdbOptions, ScreenshotMethod};
use droidpilot::device::pool::{DeviceMatcher, DevicePool, DeviceState, PoolOptions};
use droidpilot::device::sim::{SimConfig, SimDevice};
use droidpilot::device::{Device, DeviceError};
use droidpilot::domain::{AppRef, Orientation, PixelPoint};

fn adb_available() -> bool {
    let found = Command::new("adb")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("DROIDPILOT_REQUIRE_ADB").as_deref() == Ok("1") {
            panic!(
                "DROIDPILOT_REQUIRE_ADB=1 but `adb` is not installed (Debian: apt-get install adb)"
            );
        }
        eprintln!("\n########################################################################");
        eprintln!("## SKIPPED tests/adb.rs: `adb` is not installed (apt-get install adb). ##");
        eprintln!("## Set DROIDPILOT_REQUIRE_ADB=1 to make this a failure.               ##");
        eprintln!("########################################################################\n");
    }
    found
}

/// A private adb server, killed when the test ends (even on panic).
struct AdbServer {
    port: u16,
}

impl AdbServer {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let out = Command::new("adb")
            .args(["-P", &port.to_string(), "start-server"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "adb start-server: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        AdbServer { port }
    }
    fn adb(&self, args: &[&str]) -> std::process::Output {
        Command::new("adb")
            .arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        let _ = self.adb(&["kill-server"]);
    }
}

fn find_node<'a>(
    doc: &'a roxmltree::Document<'a>,
    pred: impl Fn(&roxmltree::Node) -> bool,
) -> Option<roxmltree::Node<'a, 'a>> {
    doc.descendants().find(|n| pred(n))
}

fn center(bounds: &str) -> PixelPoint {
    let n: Vec<i32> = bounds
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    PixelPoint {
        x: (n[0] + n[2]) / 2,
        y: (n[1] + n[3]) / 2,
    }
}

async fn focused_field_text(dev: &AdbDevice) -> String {
    let xml = dev.hierarchy().await.unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let n = find_node(&doc, |n| {
        n.attribute("class") == Some("android.widget.EditText")
            && n.attribute("focused") == Some("true")
    })
    .expect("a focused EditText");
    n.attribute("text").unwrap_or("").to_string()
}

/// Opens the browser and focuses its URL bar, through the backend.
async fn focus_url_bar(dev: &AdbDevice) {
    dev.launch_app(&AppRef::Package("com.android.chrome".into()))
        .await
        .unwrap();
    let xml = dev.hierarchy().await.unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let bar = find_node(&doc, |n| {
        n.attribute("class") == Some("android.widget.EditText")
    })
    .expect("URL bar");
    dev.tap(center(bar.attribute("bounds").unwrap()))
        .await
        .unwrap();
    dev.clear_text().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_adb_path_end_to_end() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let sim = Arc::new(SimDevice::new(SimConfig::default()).unwrap());
    let adbd = Adbd::new(sim.clone(), AdbdOptions::default());
    let addr: SocketAddr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let serial = addr.to_string();
    let opts = AdbOptions::local(server.port);

    // The pool connects it and lists it.
    let pool = DevicePool::new(PoolOptions {
        adb: Some(opts.clone()),
        adb_connect: vec![serial.clone()],
        health_interval: Duration::from_secs(3600),
        reconnect_min: Duration::from_millis(100),
        reconnect_max: Duration::from_millis(500),
        reconnect_attempts: 10,
        ..PoolOptions::default()
    })
    .await
    .unwrap();
    let row = pool
        .list()
        .into_iter()
        .find(|d| d.id == serial)
        .expect("device listed");
    assert_eq!(
        (row.backend.as_str(), row.state),
        ("adb", DeviceState::Available)
    );
    assert_eq!(row.model, "Pixel 8 (virtual)");
    assert_eq!(row.screen.map(|s| (s.width, s.height)), Some((1080, 2400)));
    let lease = pool
        .lease("e2e", &DeviceMatcher::id(&serial), Duration::from_secs(600))
        .unwrap();
    let dev = AdbDevice::new(serial.clone(), opts.clone());

    // Exit codes survive the trip.
    let out = dev.shell("nosuch").await.unwrap();
    assert_eq!(out.exit_code, 127);
    assert_eq!(out.stderr_str(), "/system/bin/sh: nosuch: not found\n");
    assert_eq!(dev.shell("echo a && false").await.unwrap().exit_code, 1);

    // Screenshots are the sim's own pixels, by both methods.
    let shot = dev.screenshot().await.unwrap();
    assert_eq!((shot.width, shot.height), (1080, 2400));
    assert!(
        shot.rgba().unwrap()[..] == sim.render_now()[..],
        "PNG screenshot differs from the sim's render"
    );
    let raw = dev
        .screenshot_with(ScreenshotMethod::Framebuffer)
        .await
        .unwrap();
    assert!(
        raw.rgba().unwrap()[..] == sim.render_now()[..],
        "framebuffer differs from the sim's render"
    );

    // The hierarchy parses, and a tap on the Settings icon opens Settings.
    let xml = dev.hierarchy().await.unwrap();
    assert!(!xml.contains("UI hierchary dumped"));
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.root_element().tag_name().name(), "hierarchy");
    let icon = find_node(&doc, |n| {
        n.attribute("text") == Some("Settings") || n.attribute("content-desc") == Some("Settings")
    })
    .expect("a Settings icon on the launcher");
    dev.tap(center(icon.attribute("bounds").unwrap()))
        .await
        .unwrap();
    assert_eq!(
        dev.current_app().await.unwrap().package,
        "com.android.settings"
    );
    assert_eq!(
        sim.current_app().await.unwrap().package,
        "com.android.settings"
    );

    // Unicode through ADB Keyboard, and the previous IME is restored afterwards.
    focus_url_bar(&dev).await;
    dev.type_text("héllo 世界 👋").await.unwrap();
    assert_eq!(focused_field_text(&dev).await, "héllo 世界 👋");
    assert_eq!(
        dev.shell_ok("settings get secure default_input_method")
            .await
            .unwrap()
            .trim(),
        "com.android.inputmethod.latin/.LatinIME"
    );

    // Injection, through both typing paths: the text arrives literally, nothing else runs.
    let evil = "hello; reboot $(id) `id` && rm -rf /";
    let ran_before = adbd.executed().len();
    dev.clear_text().await.unwrap();
    dev.type_text(evil).await.unwrap();
    assert_eq!(focused_field_text(&dev).await, evil);
    adbd.state()
        .lock()
        .unwrap()
        .imes
        .retain(|i| !i.contains("adbkeyboard"));
    let plain = AdbDevice::new(serial.clone(), opts.clone());
    assert!(!plain.has_adb_keyboard().await.unwrap());
    plain.clear_text().await.unwrap();
    plain.type_text(evil).await.unwrap();
    assert_eq!(focused_field_text(&plain).await, evil);
    let ran: Vec<String> = adbd.executed()[ran_before..]
        .iter()
        .map(|argv| argv[0].clone())
        .collect();
    for bad in ["reboot", "id", "rm"] {
        assert!(
            !ran.iter().any(|c| c == bad),
            "`{bad}` was dispatched: {ran:?}"
        );
    }
    let err = plain.type_text("日本").await.unwrap_err();
    assert!(
        matches!(err, DeviceError::InvalidInput(_)) && err.to_string().contains("ADB Keyboard"),
        "{err}"
    );

    // The real adb CLI against the sim.
    let o = server.adb(&["-s", &serial, "shell", "wm", "size"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Physical size: 1080x2400\n"
    );
    let o = server.adb(&["-s", &serial, "exec-out", "screencap", "-p"]);
    let png = image::load_from_memory_with_format(&o.stdout, image::ImageFormat::Png).unwrap();
    assert!(
        png.to_rgba8().into_raw() == sim.render_now(),
        "adb exec-out screencap differs from the sim's render"
    );
    let o = server.adb(&["-s", &serial, "shell", "exit_with_127_please"]);
    assert_eq!(o.status.code(), Some(127));

    // Drop the connection: offline, then the pool reconnects and commands work again.
    let mut events = pool.subscribe();
    drop(lease);
    adbd.unplug();
    pool.check_health().await;
    let ev = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.name(), "device.offline");
    assert!(dev.shell("echo x").await.unwrap_err().is_disconnect());
    adbd.resume();
    let mut state = DeviceState::Offline;
    for _ in 0..100 {
        state = pool.summary(&serial).unwrap().state;
        if state == DeviceState::Available {
            break;
        }
        pool.check_health().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, DeviceState::Available);
    assert_eq!(dev.shell_ok("echo back").await.unwrap(), "back\n");

    // The sim's own disconnect fault drops the TCP link; `reconnect()` (adb connect) restores it.
    sim.set_faults(droidpilot::device::sim::SimFaults {
        disconnect_after: Some(0),
        ..Default::default()
    })
    .unwrap();
    let err = dev.tap(PixelPoint { x: 8, y: 1300 }).await.unwrap_err();
    assert!(err.is_disconnect(), "{err:?}");
    dev.reconnect().await.unwrap();
    assert_eq!(dev.shell_ok("echo again").await.unwrap(), "again\n");

    // doctor: every check on this device passes, and the tool/server checks too.
    let checks = droidpilot::cli::doctor::doctor(&opts).await;
    for name in [
        "adb binary",
        "adb server",
        &format!("{serial} shell"),
        &format!("{serial} uiautomator"),
        &format!("{serial} screencap"),
        &format!("{serial} ADB Keyboard"),
    ] {
        let c = checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}: {checks:?}"));
        // ADB Keyboard was uninstalled above for the `input text` path.
        assert_eq!(c.ok, !name.ends_with("ADB Keyboard"), "{c:?}");
    }

    // AUTH mode: adb answers the token with its key, then the device is usable.
    let authd = Adbd::new(
        sim.clone(),
        AdbdOptions {
            auth: true,
            ..AdbdOptions::default()
        },
    );
    let auth_addr = authd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let host = AdbHost::new(opts.clone());
    host.connect(&auth_addr.to_string()).await.unwrap();
    let authed = AdbDevice::new(auth_addr.to_string(), opts.clone());
    authed.reconnect().await.unwrap();
    assert_eq!(
        authed.shell_ok("getprop ro.product.model").await.unwrap(),
        "Pixel 8 (virtual)\n"
    );
    authd.shutdown();

    let host = AdbHost::new(opts);
    assert!(
        host.devices()
            .await
            .unwrap()
            .iter()
            .any(|d| d.serial == serial && d.is_online())
    );
    adbd.shutdown();
}

/// A virtual phone behind a simulated adbd, connected to `server`; returns its serial.
async fn connected_sim(server: &AdbServer) -> (Arc<SimDevice>, Adbd, String) {
    let sim = Arc::new(SimDevice::new(SimConfig::default()).unwrap());
    let adbd = Adbd::new(sim.clone(), AdbdOptions::default());
    let addr: SocketAddr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let serial = addr.to_string();
    let o = server.adb(&["connect", &serial]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("connected"),
        "adb connect: {o:?}"
    );
    (sim, adbd, serial)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adb_pull_fetches_what_screencap_and_uiautomator_wrote() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let local = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    let o = server.adb(&[
        "-s",
        &serial,
        "shell",
        "screencap",
        "-p",
        "/sdcard/screen.png",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = server.adb(&[
        "-s",
        &serial,
        "pull",
        "/sdcard/screen.png",
        &local("screen.png"),
    ]);
    assert!(o.status.success(), "adb pull screen.png: {o:?}");
    let bytes = std::fs::read(local("screen.png")).unwrap();
    let png = image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).unwrap();
    assert!(
        png.to_rgba8().into_raw() == sim.render_now(),
        "the pulled screenshot differs from the sim's render"
    );

    let o = server.adb(&["-s", &serial, "shell", "uiautomator", "dump"]);
    assert!(o.status.success(), "{o:?}");
    let o = server.adb(&[
        "-s",
        &serial,
        "pull",
        "/sdcard/window_dump.xml",
        &local("d.xml"),
    ]);
    assert!(o.status.success(), "adb pull window_dump.xml: {o:?}");
    let xml = std::fs::read_to_string(local("d.xml")).unwrap();
    assert_eq!(xml, sim.hierarchy().await.unwrap());

    // A file the phone does not have is a clear failure, not a hang or an empty file.
    let o = server.adb(&[
        "-s",
        &serial,
        "pull",
        "/sdcard/nope.png",
        &local("nope.png"),
    ]);
    assert!(!o.status.success());
    // adb 29 prints this on stdout, newer versions on stderr.
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        err.contains("does not exist") || err.contains("No such file"),
        "{o:?}"
    );

    // Push round-trips through the same service.
    std::fs::write(local("up.txt"), "pushed\n").unwrap();
    let o = server.adb(&["-s", &serial, "push", &local("up.txt"), "/sdcard/up.txt"]);
    assert!(o.status.success(), "adb push: {o:?}");
    let o = server.adb(&["-s", &serial, "shell", "cat", "/sdcard/up.txt"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "pushed\n");
    adbd.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_waits_for_the_broadcast_result_not_a_fixed_sleep() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (_sim, adbd, serial) = connected_sim(&server).await;
    // Default options: what a user gets.
    let dev = AdbDevice::new(serial, AdbOptions::local(server.port));
    focus_url_bar(&dev).await;
    let before = adbd.executed().len();
    dev.type_text("héllo 世界").await.unwrap();
    assert_eq!(focused_field_text(&dev).await, "héllo 世界");
    let ran: Vec<Vec<String>> = adbd.executed()[before..].to_vec();
    assert!(
        ran.iter()
            .any(|argv| argv.len() > 2 && argv[0] == "am" && argv[1] == "broadcast"),
        "{ran:?}"
    );
    assert!(
        !ran.iter().any(|argv| argv[0] == "sleep"),
        "typing slept instead of waiting for the broadcast: {ran:?}"
    );

    adbd.shutdown();
}

/// `external_change` through the whole ADB path: the runner observes the virtual phone
/// over real adb; between two steps the phone's screen changes with no action of
/// droidpilot's (the phone is driven behind adbd's back, as a finger would), and the
/// runner records it and tells the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_on_an_adb_phone_between_steps_is_an_external_change() {
    use droidpilot::agent::replay::ReplayAgent;
    use droidpilot::domain::{Action, InterventionKind, Key, NewTask, TaskSpec};
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let settings = AppRef::Label("Settings".into());
    sim.launch_app(&settings).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let overrides = droidpilot::config::Overrides {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let mut config =
        droidpilot::config::Config::load_with_env(dir.path(), &overrides, Vec::new()).unwrap();
    config.devices.sim.clear();
    config.devices.adb.enabled = false;
    config.runner.detect_external_changes = true;
    config.runner.settle_timeout_ms = 1000;
    config.runner.settle_poll_ms = 20;
    // A pause after each settled action: the window the "person" acts in.
    config.runner.step_delay_ms = 3000;
    let core = droidpilot::core::Core::build(&config).await.unwrap();
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("go home".into()),
        ..Default::default()
    })
    .unwrap();
    let task = core.store.create_task(spec).await.unwrap();
    assert!(core.store.start_task(task.id, &serial).await.unwrap());
    let task = core.store.get_task(task.id).await.unwrap();
    let dev: Arc<dyn Device> = Arc::new(AdbDevice::new(
        serial.clone(),
        AdbOptions::local(server.port),
    ));
    let agent = ReplayAgent::new(vec![Action::Key { key: Key::Home }]);
    let finger = {
        let sim = sim.clone();
        tokio::spawn(async move {
            // Once home has been pressed and the screen has settled, open Settings.
            while sim.current_app().await.unwrap().package == "com.android.settings" {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(1500)).await;
            sim.launch_app(&AppRef::Label("Settings".into()))
                .await
                .unwrap();
        })
    };
    let (_tx, stop) = tokio::sync::watch::channel(droidpilot::run::stop::StopSignal::None);
    let done = core
        .runner
        .run(task, dev, Box::new(agent), stop)
        .await
        .unwrap();
    finger.await.unwrap();
    assert_eq!(done.status.as_str(), "succeeded", "{:?}", done.reason);
    let ivs = core.store.interventions(done.id).await.unwrap();
    assert_eq!(ivs.len(), 1, "{ivs:?}");
    assert_eq!(ivs[0].kind, InterventionKind::ExternalChange);
    assert_eq!(ivs[0].step, Some(2), "seen before step 2");
    assert_eq!(
        ivs[0].detail.as_ref().unwrap()["app"],
        "com.android.settings"
    );
    core.shutdown(Duration::from_secs(5)).await;
    adbd.shutdown();
}

/// `POST /v1/devices {"address"}` with nothing answering there: `adb connect` answers OKAY
/// with a "failed to connect" text, so the pool checks the server's list and refuses the
/// address (the API's 422 `device_unreachable`) instead of pooling a phone that never was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_where_no_phone_answers_is_refused_not_pooled_offline() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    // Longer than adb's own 10 s handshake timeout, so its answer comes back.
    let opts = AdbOptions {
        timeout: Duration::from_secs(20),
        ..AdbOptions::local(server.port)
    };
    let pool = DevicePool::new(PoolOptions {
        adb: Some(opts),
        health_interval: Duration::from_secs(3600),
        ..PoolOptions::default()
    })
    .await
    .unwrap();
    // Nothing listening (adb reports "Connection refused"), and a port that accepts but
    // never speaks adb (adb gives up on the handshake, says "failed to connect" with an
    // OKAY status, and lists the address `offline`).
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    for address in [&closed, &silent_addr] {
        let err = pool.add(address).await.unwrap_err();
        assert!(
            matches!(&err, droidpilot::device::pool::PoolError::Device(DeviceError::Disconnected { serial }) if serial.contains(address.as_str())),
            "{address}: {err:?}"
        );
        assert!(pool.summary(address).is_none(), "{address} not pooled");
    }
    let err = pool.add(&silent_addr).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("adb connect reached no phone there"),
        "adb's OKAY + \"failed to connect\" is caught by the listing: {err}"
    );
    drop(silent);

    // A phone that answers is pooled as before.
    let sim = Arc::new(SimDevice::new(SimConfig::default()).unwrap());
    let adbd = Adbd::new(sim, AdbdOptions::default());
    let addr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let row = pool.add(&addr.to_string()).await.unwrap();
    assert_eq!(row.state, DeviceState::Available);
}

/// `clearState` and `stopApp` over real adb: `pm clear` answers `Success` and the
/// virtual phone resets the app's data; `am force-stop` sends it away from the screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pm_clear_and_force_stop_reach_the_phone_over_adb() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dev = AdbDevice::new(serial, AdbOptions::local(server.port));
    let contacts = "com.android.contacts";
    dev.launch_app(&AppRef::Package(contacts.into()))
        .await
        .unwrap();
    let mut st = sim.state();
    let before = st.contacts.len();
    st.contacts.clear();
    sim.set_state(st);
    dev.stop_app(contacts).await.unwrap();
    assert_ne!(
        dev.current_app().await.unwrap().package,
        contacts,
        "stopped"
    );
    assert!(sim.state().contacts.is_empty(), "stopping keeps the data");
    dev.clear_app_data(contacts).await.unwrap();
    assert_eq!(
        sim.state().contacts.len(),
        before,
        "cleared: as on a new phone"
    );
    let ran = adbd.executed();
    assert!(
        ran.iter().any(|a| a[..] == ["pm", "clear", contacts]),
        "{ran:?}"
    );
    assert!(
        ran.iter().any(|a| a[..] == ["am", "force-stop", contacts]),
        "{ran:?}"
    );
    adbd.shutdown();
}

/// Rotating over real adb: auto-rotation off, `user_rotation` set; the phone's screen,
/// screenshots and hierarchy are the turned size, `wm size` stays the panel's, and a tap
/// by selector lands on the landscape layout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_over_adb_turns_the_screen_and_what_is_read_from_it() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dev = AdbDevice::new(serial, AdbOptions::local(server.port));
    let portrait = dev.info().await.unwrap().screen;
    assert!(portrait.height > portrait.width);
    dev.rotate(Orientation::Landscape).await.unwrap();
    let info = dev.info().await.unwrap();
    assert_eq!(info.rotation, 1);
    assert_eq!(
        (info.screen.width, info.screen.height),
        (portrait.height, portrait.width),
        "the screen is the turned size"
    );
    let shot = dev.screenshot().await.unwrap();
    assert_eq!((shot.width, shot.height), (portrait.height, portrait.width));
    let wm = server.adb(&["-s", dev.serial(), "shell", "wm", "size"]);
    assert!(
        String::from_utf8_lossy(&wm.stdout).contains(&format!(
            "Physical size: {}x{}",
            portrait.width, portrait.height
        )),
        "the panel does not turn: {wm:?}"
    );
    // The hierarchy is laid out for the landscape screen: no node reaches below it.
    let xml = dev.hierarchy().await.unwrap();
    let tree = droidpilot::screen::parse::parse(&xml).unwrap();
    assert_eq!(tree.rotation, Some(1), "uiautomator's rotation attribute");
    assert!(
        tree.nodes
            .iter()
            .all(|n| n.bounds.bottom <= info.screen.height as i32),
        "every node fits the landscape height"
    );
    assert_eq!(sim.orientation(), Orientation::Landscape);
    dev.rotate(Orientation::Portrait).await.unwrap();
    assert_eq!(dev.info().await.unwrap().screen, portrait);
    let ran = adbd.executed();
    for cmd in [
        &["settings", "put", "system", "accelerometer_rotation", "0"][..],
        &["settings", "put", "system", "user_rotation", "1"][..],
    ] {
        assert!(ran.iter().any(|a| a[..] == *cmd), "{cmd:?} in {ran:?}");
    }
    adbd.shutdown();
}

/// The phone's context over ADB as a real phone gives it: `getprop` for the locale,
/// `dumpsys input_method`'s `mInputShown` for the keyboard and `dumpsys window windows`
/// for the visible windows, read by the real `adb` and by the backend alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_windows_and_locale_are_read_over_adb() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dev = AdbDevice::new(serial.clone(), AdbOptions::local(server.port));
    let shell = |cmd: &str| {
        let o = server.adb(&["-s", &serial, "shell", cmd]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert!(
        shell("dumpsys input_method").contains("mInputShown=false"),
        "keyboard hidden at first"
    );
    focus_url_bar(&dev).await;
    assert!(shell("dumpsys input_method | grep mInputShown").contains("mInputShown=true"));
    let dump = shell("dumpsys window windows");
    let ime = dump.find("u0 InputMethod}:").expect(&dump);
    let app = dump.find("u0 com.android.chrome/").expect(&dump);
    assert!(ime < app, "top first:\n{dump}");
    assert!(
        dump.contains("package=com.google.android.inputmethod.latin"),
        "{dump}"
    );
    assert!(dump.contains("ty=INPUT_METHOD"), "{dump}");

    let got = dev.window_state().await.unwrap();
    assert_eq!(
        got,
        sim.window_state().await.unwrap(),
        "the backend reads what the phone has"
    );
    assert_eq!(got.keyboard_shown, Some(true));
    let focused: Vec<_> = got.windows.iter().filter(|w| w.focused).collect();
    assert_eq!(focused.len(), 1, "{got:?}");
    assert_eq!(focused[0].package, "com.android.chrome");
    assert_eq!(
        dev.current_app().await.unwrap().package,
        "com.android.chrome"
    );
    let l = dev.locale().await.unwrap();
    assert_eq!(l, sim.locale().await.unwrap());
    assert!(
        l.locale.is_some() && l.timezone.is_some() && l.country.is_some(),
        "{l:?}"
    );
    adbd.shutdown();
}

/// Split-screen over ADB, by the phone's Android version: WM Shell's `moveToSideStage`
/// on Android 13+, `am start --windowingMode 3/4` on 9–12, refused on 12L and before 9;
/// the dump read back through the real `adb` shows both apps and the divider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_screen_over_adb_follows_the_android_version() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dev = AdbDevice::new(serial.clone(), AdbOptions::local(server.port));
    let app = |s: &str| {
        AppRef::Package(
            match s {
                "Messages" => "com.google.android.apps.messaging",
                "Notes" => "com.google.android.keep",
                _ => "com.droidpilot.shop",
            }
            .into(),
        )
    };
    let set_sdk = |sdk: &str| {
        adbd.state()
            .lock()
            .unwrap()
            .props
            .insert("ro.build.version.sdk".into(), sdk.into());
    };
    let packages = |sim: &SimDevice| -> Vec<String> {
        sim.app_windows()
            .iter()
            .map(|w| w.app.package().to_string())
            .collect()
    };
    let ran = |adbd: &Adbd, needle: &str| {
        adbd.executed()
            .iter()
            .any(|argv| argv.join(" ").contains(needle))
    };

    // Android 14 (the sim's default): both started, then the side stage.
    dev.split_screen(&app("Messages"), &app("Notes"))
        .await
        .unwrap();
    assert_eq!(
        packages(&sim),
        [
            "com.google.android.apps.messaging",
            "com.google.android.keep"
        ]
    );
    assert!(ran(&adbd, "WMShell splitscreen moveToSideStage"));
    let o = server.adb(&["-s", &serial, "shell", "uiautomator", "dump", "/dev/tty"]);
    let dump = String::from_utf8_lossy(&o.stdout);
    assert!(dump.contains("com.android.systemui:id/docked_divider_handle"));
    assert!(dump.contains("package=\"com.google.android.keep\""));
    // Read from `dumpsys window` over adb: both halves with their frames, the top one
    // focused, as the phone lays them out.
    let got: Vec<_> = (dev.windows().await.unwrap().into_iter())
        .map(|w| (w.package, w.bounds, w.focused))
        .collect();
    let want: Vec<_> = (sim.app_windows().into_iter())
        .map(|w| (w.app.package().to_string(), w.bounds, w.focused))
        .collect();
    assert_eq!(got, want, "the split windows over adb");
    assert_eq!(got[0].0, "com.google.android.apps.messaging");
    assert!(got[0].2 && !got[1].2, "{got:?}");

    // Android 11: the windowing modes, typed by hand with the real adb too.
    sim.reset();
    set_sdk("30");
    dev.split_screen(&app("Shop"), &app("Notes")).await.unwrap();
    assert_eq!(
        packages(&sim),
        ["com.droidpilot.shop", "com.google.android.keep"]
    );
    assert!(ran(&adbd, "am start --windowingMode 4"));
    sim.reset();
    for (mode, c) in [
        ("3", "com.google.android.keep/.MainActivity"),
        ("4", "com.android.chrome/.MainActivity"),
    ] {
        let o = server.adb(&[
            "-s",
            &serial,
            "shell",
            "am",
            "start",
            "--windowingMode",
            mode,
            "-n",
            c,
        ]);
        assert!(o.status.success(), "{o:?}");
    }
    assert_eq!(
        packages(&sim),
        ["com.google.android.keep", "com.android.chrome"]
    );

    // Android 12L and Android 8.1: refused, saying why; nothing changes on the phone.
    for (sdk, says) in [("32", "12L"), ("27", "API 28")] {
        sim.reset();
        set_sdk(sdk);
        let err = dev
            .split_screen(&app("Messages"), &app("Notes"))
            .await
            .unwrap_err();
        assert!(matches!(err, DeviceError::Unsupported(_)), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        assert!(sim.state().split.is_none());
    }
    adbd.shutdown();
}

/// Log lines written while the guard lives, at every level (the thread's subscriber: a
/// current-thread runtime keeps the test's tasks on it).
fn capture_logs() -> (
    Arc<std::sync::Mutex<Vec<u8>>>,
    tracing::subscriber::DefaultGuard,
) {
    let buf = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || Sink(sink.clone()))
        .finish();
    (buf, tracing::subscriber::set_default(sub))
}

struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Debug mode logs every ADB command droidpilot sends, with its exit code; what is typed
/// (a password, through `input text` or the ADB keyboard) never reaches the log.
#[tokio::test]
async fn debug_mode_logs_each_adb_command_with_typed_text_masked() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let sim = Arc::new(SimDevice::new(SimConfig::default()).unwrap());
    let adbd = Adbd::new(sim.clone(), AdbdOptions::default());
    let addr: SocketAddr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let opts = AdbOptions::local(server.port);
    AdbHost::new(opts.clone())
        .connect(&addr.to_string())
        .await
        .unwrap();
    let (logs, _guard) = capture_logs();
    let dev = AdbDevice::new(addr.to_string(), opts.clone());
    focus_url_bar(&dev).await;
    dev.type_text("Hunter2-pass").await.unwrap();
    assert_eq!(focused_field_text(&dev).await, "Hunter2-pass");
    adbd.state()
        .lock()
        .unwrap()
        .imes
        .retain(|i| !i.contains("adbkeyboard"));
    let plain = AdbDevice::new(addr.to_string(), opts);
    plain.clear_text().await.unwrap();
    plain.type_text("Hunter2-pass").await.unwrap();
    let log = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("adb shell") && log.contains("input tap"),
        "{log}"
    );
    assert!(
        log.contains("input text ••••") && log.contains("--es msg ••••"),
        "{log}"
    );
    assert!(log.contains("exit_code=0"), "{log}");
    assert!(!log.contains("Hunter2"), "typed text in the log:\n{log}");
    // base64 of the text, as the ADB keyboard is sent it
    assert!(!log.contains("SHVudGVy"), "{log}");
}

/// The MP4 `adb pull` fetched: its one video track's codec, size, sample count and length.
fn read_mp4(path: &str) -> (mp4::MediaType, (u16, u16), u32, Duration) {
    let bytes = std::fs::read(path).unwrap();
    let r = mp4::Mp4Reader::read_header(std::io::Cursor::new(&bytes), bytes.len() as u64)
        .expect("an MP4 file");
    let t = r.tracks().values().next().expect("a track");
    let media = t.media_type().expect("a known codec");
    (
        media,
        (t.width(), t.height()),
        t.sample_count(),
        r.duration(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenrecord_over_adb_writes_an_mp4_until_its_limit_or_an_interrupt() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let local = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (w, h) = (
        sim.info().await.unwrap().screen.width,
        sim.info().await.unwrap().screen.height,
    );

    // A time limit ends it by itself; the file is an H.264 MP4 of the screen's size.
    let o = server.adb(&[
        "-s",
        &serial,
        "shell",
        "screenrecord",
        "--time-limit",
        "1",
        "/sdcard/a.mp4",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = server.adb(&["-s", &serial, "pull", "/sdcard/a.mp4", &local("a.mp4")]);
    assert!(o.status.success(), "adb pull a.mp4: {o:?}");
    let (media, size, frames, length) = read_mp4(&local("a.mp4"));
    assert_eq!(media, mp4::MediaType::H264);
    assert_eq!(size, (w as u16, h as u16));
    assert_eq!(frames, 1, "a still screen is one frame");
    assert!(length >= Duration::from_secs(1), "{length:?}");

    // Without a limit it runs until `pkill -INT screenrecord`; a change on screen is a
    // second frame.
    let mut rec = Command::new("adb")
        .args([
            "-P",
            &server.port.to_string(),
            "-s",
            &serial,
            "shell",
            "screenrecord",
            "/sdcard/b.mp4",
        ])
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    sim.launch_app(&AppRef::Label("Settings".into()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let o = server.adb(&["-s", &serial, "shell", "pkill", "-INT", "screenrecord"]);
    assert!(o.status.success(), "pkill found the recording: {o:?}");
    let status = tokio::task::spawn_blocking(move || rec.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "screenrecord ends cleanly on SIGINT: {status:?}"
    );
    let o = server.adb(&["-s", &serial, "pull", "/sdcard/b.mp4", &local("b.mp4")]);
    assert!(o.status.success(), "adb pull b.mp4: {o:?}");
    let (_, _, frames, length) = read_mp4(&local("b.mp4"));
    assert!(frames >= 2, "the launcher, then Settings: {frames} frames");
    assert!(length < Duration::from_secs(60), "{length:?}");
    let o = server.adb(&["-s", &serial, "shell", "pkill", "-INT", "screenrecord"]);
    assert!(!o.status.success(), "nothing left to interrupt");

    // Android's bounds: at most 180 s.
    let o = server.adb(&[
        "-s",
        &serial,
        "shell",
        "screenrecord",
        "--time-limit",
        "181",
        "/sdcard/c.mp4",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("[1,180]"),
        "{o:?}"
    );
    adbd.shutdown();
}

/// A core whose only phone is the ADB one the test hands the runner, recording in
/// segments of `segment_secs`.
async fn recording_core(dir: &std::path::Path, segment_secs: u64) -> droidpilot::core::Core {
    let overrides = droidpilot::config::Overrides {
        data_dir: Some(dir.to_path_buf()),
        ..Default::default()
    };
    let mut config =
        droidpilot::config::Config::load_with_env(dir, &overrides, Vec::new()).unwrap();
    config.devices.sim.clear();
    config.devices.adb.enabled = false;
    config.devices.screenrecord_segment_secs = segment_secs;
    config.runner.settle_timeout_ms = 300;
    config.runner.settle_poll_ms = 20;
    droidpilot::core::Core::build(&config).await.unwrap()
}

/// A `record_video` task, claimed for `serial`.
async fn recorded_task(core: &droidpilot::core::Core, serial: &str) -> droidpilot::domain::Task {
    use droidpilot::domain::{NewTask, TaskSpec};
    let spec = TaskSpec::parse(NewTask {
        instruction: Some("open Settings and go home".into()),
        record_video: Some(true),
        ..Default::default()
    })
    .unwrap();
    let task = core.store.create_task(spec).await.unwrap();
    assert!(core.store.start_task(task.id, serial).await.unwrap());
    core.store.get_task(task.id).await.unwrap()
}

/// The stored segments' bytes, each checked to be an H.264 MP4 of the phone's size.
async fn stored_segments(
    core: &droidpilot::core::Core,
    task: &droidpilot::domain::Task,
    size: (u32, u32),
) -> Vec<(Vec<u8>, u64)> {
    let first = task.recording.first().expect("a stored segment").started_at;
    let mut parts = Vec::new();
    for seg in &task.recording {
        let (art, mp4) = core.artifacts.get(&seg.sha256).await.unwrap().unwrap();
        assert_eq!(art.media_type, "video/mp4");
        let info = droidpilot::video::probe(&mp4).expect("the segment's boxes read back");
        assert_eq!((info.width, info.height), size);
        assert_eq!(info.duration_ms, seg.duration_ms);
        let offset = (seg.started_at - first).num_milliseconds() as u64;
        parts.push((mp4, offset));
    }
    parts
}

/// The task's `task.recording` event: its problems.
async fn recording_problems(
    core: &droidpilot::core::Core,
    id: droidpilot::domain::TaskId,
) -> Vec<String> {
    use droidpilot::domain::TaskEvent;
    let events = core
        .store
        .events_since(&id.to_string(), 0, 1000)
        .await
        .unwrap();
    let mut found = events.into_iter().filter_map(|e| match e.event {
        TaskEvent::Recording { problems, .. } => Some(problems),
        _ => None,
    });
    found.next().expect("a task.recording event")
}

/// A virtual phone behind the simulated adbd and the real adb server, a core recording in
/// segments of `segment_secs`, a `record_video` task claimed for the phone, and the phone
/// as an ADB device.
struct RecordingSetup {
    server: AdbServer,
    sim: Arc<SimDevice>,
    adbd: Adbd,
    serial: String,
    dir: tempfile::TempDir,
    core: droidpilot::core::Core,
    task: droidpilot::domain::Task,
    dev: Arc<dyn Device>,
}

async fn recording_setup(segment_secs: u64) -> RecordingSetup {
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let core = recording_core(dir.path(), segment_secs).await;
    let task = recorded_task(&core, &serial).await;
    let dev: Arc<dyn Device> = Arc::new(AdbDevice::new(
        serial.clone(),
        AdbOptions::local(server.port),
    ));
    RecordingSetup {
        server,
        sim,
        adbd,
        serial,
        dir,
        core,
        task,
        dev,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_task_on_an_adb_phone_stores_screenrecord_segments_covering_the_run() {
    use droidpilot::agent::replay::ReplayAgent;
    use droidpilot::domain::{Action, Key};
    if !adb_available() {
        return;
    }
    // One-second segments: the run below crosses at least two boundaries.
    let RecordingSetup {
        server,
        sim,
        adbd,
        serial,
        dir,
        core,
        task,
        dev,
    } = recording_setup(1).await;
    let agent = ReplayAgent::new(vec![
        Action::LaunchApp {
            app: AppRef::Label("Settings".into()),
        },
        Action::Wait { ms: 1500 },
        Action::Key { key: Key::Home },
        Action::Wait { ms: 1500 },
    ]);
    let (_tx, stop) = tokio::sync::watch::channel(droidpilot::run::stop::StopSignal::None);
    let done = core
        .runner
        .run(task, dev, Box::new(agent), stop)
        .await
        .unwrap();
    assert_eq!(done.status.as_str(), "succeeded", "{:?}", done.reason);
    assert_eq!(
        recording_problems(&core, done.id).await,
        Vec::<String>::new()
    );
    let done = core.store.get_task(done.id).await.unwrap();
    assert!(
        done.recording.len() >= 2,
        "1 s segments over a 3 s run: {:?}",
        done.recording
    );
    let info = sim.info().await.unwrap().screen;
    let parts = stored_segments(&core, &done, (info.width, info.height)).await;
    let refs: Vec<(&[u8], u64)> = parts.iter().map(|(b, o)| (b.as_slice(), *o)).collect();
    let joined = droidpilot::video::join(&refs).expect("the segments join");
    let whole = droidpilot::video::probe(&joined).unwrap();
    assert!(
        whole.duration_ms >= 3000,
        "the recording covers the run's two 1.5 s waits: {whole:?}"
    );
    assert!(
        whole.frames >= 3,
        "the launcher, Settings, the launcher: {whole:?}"
    );
    // The segments were removed from the phone once pulled, and nothing records any more.
    let o = server.adb(&["-s", &serial, "shell", "pkill", "-INT", "screenrecord"]);
    assert!(!o.status.success(), "no screenrecord left running");
    for seg in 0..done.recording.len() {
        let f = format!("/sdcard/droidpilot-{}-{seg}.mp4", done.id);
        let o = server.adb(&[
            "-s",
            &serial,
            "pull",
            &f,
            &dir.path().join("x").to_string_lossy(),
        ]);
        assert!(!o.status.success(), "{f} is still on the phone");
    }
    core.shutdown(Duration::from_secs(5)).await;
    adbd.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_recorded_task_leaves_a_playable_recording() {
    use droidpilot::agent::replay::ReplayAgent;
    use droidpilot::domain::Action;
    use droidpilot::run::stop::StopSignal;
    if !adb_available() {
        return;
    }
    let RecordingSetup {
        server,
        sim,
        adbd,
        serial,
        dir: _dir,
        core,
        task,
        dev,
    } = recording_setup(180).await;
    let agent = ReplayAgent::new(vec![
        Action::LaunchApp {
            app: AppRef::Label("Settings".into()),
        },
        Action::Wait { ms: 60_000 },
    ]);
    let (tx, stop) = tokio::sync::watch::channel(StopSignal::None);
    let canceller = {
        let sim = sim.clone();
        tokio::spawn(async move {
            while sim.current_app().await.unwrap().package != "com.android.settings" {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(800)).await;
            tx.send(StopSignal::Cancel).unwrap();
            tx
        })
    };
    let done = core
        .runner
        .run(task, dev, Box::new(agent), stop)
        .await
        .unwrap();
    drop(canceller.await.unwrap());
    assert_eq!(done.status.as_str(), "cancelled", "{:?}", done.reason);
    let done = core.store.get_task(done.id).await.unwrap();
    assert_eq!(done.recording.len(), 1, "{:?}", done.recording);
    let info = sim.info().await.unwrap().screen;
    let parts = stored_segments(&core, &done, (info.width, info.height)).await;
    let video = droidpilot::video::probe(&parts[0].0).unwrap();
    assert!(video.frames >= 1 && video.duration_ms > 0, "{video:?}");
    let o = server.adb(&["-s", &serial, "shell", "pkill", "-INT", "screenrecord"]);
    assert!(!o.status.success(), "the cancel stopped screenrecord");
    core.shutdown(Duration::from_secs(5)).await;
    adbd.shutdown();
}

/// An app's string resources over real adb, as on a phone: `pm path` names the APK, the
/// sync service pulls it, its `resources.arsc` is read (English and German, whatever the
/// phone shows), and a second read of the same version pulls nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apps_string_resources_are_read_from_its_pulled_apk() {
    if !adb_available() {
        return;
    }
    let server = AdbServer::start();
    let (sim, adbd, serial) = connected_sim(&server).await;
    let shop = "com.droidpilot.shop";
    // The real adb finds and pulls the APK like any phone's.
    let path = server.adb(&["-s", &serial, "shell", "pm", "path", shop]);
    let path = String::from_utf8_lossy(&path.stdout)
        .trim()
        .replace("package:", "");
    assert_eq!(path, format!("/data/app/{shop}/base.apk"));
    let local = std::env::temp_dir().join(format!("droidpilot-apk-{}.apk", std::process::id()));
    let pulled = server.adb(&["-s", &serial, "pull", &path, local.to_str().unwrap()]);
    assert!(pulled.status.success(), "adb pull: {pulled:?}");
    let bytes = std::fs::read(&local).unwrap();
    let _ = std::fs::remove_file(&local);
    assert!(
        zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .is_ok_and(|mut z| z.by_name("resources.arsc").is_ok())
    );

    let dev = AdbDevice::new(serial, AdbOptions::local(server.port));
    let strings = dev.app_strings(shop).await.unwrap();
    assert_eq!(strings.version_code.as_deref(), Some("1"));
    assert_eq!(strings.locales[""]["add_to_cart"], "Add to cart");
    assert_eq!(strings.locales["de"]["add_to_cart"], "In den Warenkorb");
    assert_eq!(
        strings,
        sim.app_strings(shop).await.unwrap(),
        "what the phone itself says"
    );
    let again = dev.app_strings(shop).await.unwrap();
    assert_eq!(again, strings);
    let paths = adbd
        .executed()
        .iter()
        .filter(|a| a.len() > 1 && a[0] == "pm" && a[1] == "path")
        .count();
    assert_eq!(
        paths, 2,
        "one pm path from adb, one read by the device; the second read cached"
    );
    assert!(matches!(
        dev.app_strings("com.example.absent").await,
        Err(DeviceError::AppNotFound(_))
    ));
    adbd.shutdown();
}
