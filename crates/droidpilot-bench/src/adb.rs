//! `droidpilot bench adb`: per-operation latency through the ADB backend (adb_client →
//! adb server → device) against the raw `adb` CLI doing the same operations, as ratios.
//!
//! Times are wall-clock medians over `iterations` runs. The CLI pays a process start per
//! call, which is what scripts that shell out to `adb` pay too; that is the comparison.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::device::adb::{AdbDevice, ScreenshotMethod};
use crate::device::{Device, DeviceError};
use crate::domain::PixelPoint;

#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchRow {
    pub op: String,
    pub backend_ms: f64,
    pub cli_ms: f64,
    /// backend / cli: below 1 means the backend is faster.
    pub ratio: f64,
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Where the backend taps (an inert spot, so repeated taps do not change the screen).
pub const BENCH_TAP: PixelPoint = PixelPoint { x: 8, y: 1300 };

/// Runs each operation `iterations` times both ways against `dev` (which must be online).
pub async fn bench_adb(dev: &AdbDevice, iterations: usize) -> Result<Vec<BenchRow>, DeviceError> {
    let n = iterations.max(1);
    let o = dev.options().clone();
    let serial = dev.serial().to_string();
    let cli = move |args: &[&str]| {
        let t = Instant::now();
        let out = Command::new(&o.adb_path)
            .args([
                "-H",
                &o.server.ip().to_string(),
                "-P",
                &o.server.port().to_string(),
                "-s",
                &serial,
            ])
            .args(args)
            .output();
        match out {
            Ok(out) if out.status.success() => Ok(t.elapsed()),
            Ok(out) => Err(DeviceError::Protocol(format!(
                "adb {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(e) => Err(DeviceError::Protocol(format!("cannot run adb: {e}"))),
        }
    };
    let tap_cmd = format!("input tap {} {}", BENCH_TAP.x, BENCH_TAP.y);
    let mut rows = Vec::new();
    let mut row = |op: &str, b: Vec<Duration>, c: Vec<Duration>| {
        let (backend_ms, cli_ms) = (median(b), median(c));
        rows.push(BenchRow {
            op: op.into(),
            backend_ms,
            cli_ms,
            ratio: if cli_ms > 0.0 {
                backend_ms / cli_ms
            } else {
                0.0
            },
        });
    };

    macro_rules! time {
        ($e:expr) => {{
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                $e;
                v.push(t.elapsed());
            }
            v
        }};
    }

    let b = time!(dev.tap(BENCH_TAP).await?);
    let c = time!(cli(&["shell", &tap_cmd])?);
    row("tap", b, c);

    let b = time!(dev.screenshot_with(ScreenshotMethod::Png).await?);
    let c = time!(cli(&["exec-out", "screencap", "-p"])?);
    row("screencap (PNG)", b.clone(), c.clone());
    let b = time!(dev.screenshot_with(ScreenshotMethod::Framebuffer).await?);
    row("screencap (framebuffer)", b, c);

    let b = time!(dev.hierarchy().await?);
    let c = time!(cli(&["shell", "uiautomator", "dump", "/dev/tty"])?);
    row("dump", b, c);

    let b = time!(dev.type_text("hello world").await?);
    let c = time!(cli(&["shell", "input", "text", "hello%sworld"])?);
    row("typed text", b, c);

    let b = time!({
        dev.tap(BENCH_TAP).await?;
        let (s, h) = tokio::join!(dev.screenshot(), dev.hierarchy());
        s?;
        h?;
    });
    let c = time!({
        cli(&["shell", &tap_cmd])?;
        cli(&["exec-out", "screencap", "-p"])?;
        cli(&["shell", "uiautomator", "dump", "/dev/tty"])?;
    });
    row("act + observe cycle", b, c);
    Ok(rows)
}

pub fn format_rows(rows: &[BenchRow]) -> String {
    let mut s = format!(
        "{:<26} {:>11} {:>11} {:>8}\n",
        "operation", "backend ms", "adb CLI ms", "ratio"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<26} {:>11.2} {:>11.2} {:>8.2}\n",
            r.op, r.backend_ms, r.cli_ms, r.ratio
        ));
    }
    s
}
