//! `cargo bench --bench adb`: latency through the real adb server (ADB backend) against the
//! raw `adb` CLI for tap, screencap, dump, typed text and an act + observe cycle, on the
//! virtual phone served by the simulated adbd and a private adb server. Prints the
//! backend/CLI ratio table at the end. Skips (with a notice) when `adb` is missing.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use droidpilot::adbd::{Adbd, AdbdOptions};
use droidpilot::bench::adb::{BENCH_TAP, bench_adb, format_rows};
use droidpilot::device::Device;
use droidpilot::device::adb::{AdbDevice, AdbHost, AdbOptions, ScreenshotMethod};
use droidpilot::device::sim::{SimConfig, SimDevice};

struct Setup {
    rt: tokio::runtime::Runtime,
    port: u16,
    serial: String,
    dev: AdbDevice,
    _adbd: Adbd,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = Command::new("adb")
            .args(["-P", &self.port.to_string(), "kill-server"])
            .output();
    }
}

fn setup() -> Option<Setup> {
    if !Command::new("adb")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIPPED benches/adb.rs: `adb` is not installed (apt-get install adb)");
        return None;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .ok()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    Command::new("adb")
        .args(["-P", &port.to_string(), "start-server"])
        .output()
        .ok()?;
    let (adbd, serial, dev) = rt.block_on(async {
        let sim = Arc::new(SimDevice::new(SimConfig::default()).expect("sim"));
        let adbd = Adbd::new(sim, AdbdOptions::default());
        let addr = adbd
            .spawn("127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("listen");
        let opts = AdbOptions::local(port);
        AdbHost::new(opts.clone())
            .connect(&addr.to_string())
            .await
            .expect("adb connect");
        let dev = AdbDevice::new(addr.to_string(), opts);
        for _ in 0..50 {
            if dev.health().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (adbd, addr.to_string(), dev)
    });
    Some(Setup {
        rt,
        port,
        serial,
        dev,
        _adbd: adbd,
    })
}

fn cli(s: &Setup, args: &[&str]) {
    let out = Command::new("adb")
        .args(["-P", &s.port.to_string(), "-s", &s.serial])
        .args(args)
        .output()
        .expect("adb");
    assert!(out.status.success());
}

fn benches(c: &mut Criterion) {
    let Some(s) = setup() else { return };
    let tap = format!("input tap {} {}", BENCH_TAP.x, BENCH_TAP.y);
    let mut g = c.benchmark_group("adb");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.bench_function("backend/tap", |b| {
        b.iter(|| s.rt.block_on(s.dev.tap(BENCH_TAP)).expect("tap"))
    });
    g.bench_function("cli/tap", |b| b.iter(|| cli(&s, &["shell", &tap])));
    g.bench_function("backend/screencap_png", |b| {
        b.iter(|| {
            s.rt.block_on(s.dev.screenshot_with(ScreenshotMethod::Png))
                .expect("png")
        })
    });
    g.bench_function("backend/screencap_framebuffer", |b| {
        b.iter(|| {
            s.rt.block_on(s.dev.screenshot_with(ScreenshotMethod::Framebuffer))
                .expect("fb")
        })
    });
    g.bench_function("cli/screencap", |b| {
        b.iter(|| cli(&s, &["exec-out", "screencap", "-p"]))
    });
    g.bench_function("backend/dump", |b| {
        b.iter(|| s.rt.block_on(s.dev.hierarchy()).expect("dump"))
    });
    g.bench_function("cli/dump", |b| {
        b.iter(|| cli(&s, &["shell", "uiautomator", "dump", "/dev/tty"]))
    });
    g.bench_function("backend/type_text", |b| {
        b.iter(|| s.rt.block_on(s.dev.type_text("hello world")).expect("type"))
    });
    g.bench_function("cli/input_text", |b| {
        b.iter(|| cli(&s, &["shell", "input", "text", "hello%sworld"]))
    });
    g.finish();

    match s.rt.block_on(bench_adb(&s.dev, 30)) {
        Ok(rows) => println!(
            "\nADB backend vs adb CLI (median of 30):\n{}",
            format_rows(&rows)
        ),
        Err(e) => eprintln!("ratio table failed: {e}"),
    }
}

criterion_group!(adb, benches);
criterion_main!(adb);
