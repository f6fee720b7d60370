//! Latency profiles for the virtual phone: how long each device command takes in real
//! time, so that the runner (in-process, or over ADB through `droidpilot sim`) sees a real
//! phone's costs instead of the virtual phone's instant answers. Also owns the per-kind
//! command counters (`SimCounters`) that benches read to report "per step" figures that
//! were counted, not guessed.
//!
//! Each profile gives a median per command kind and a uniform jitter (± a fraction of the
//! median, drawn from its own seeded ChaCha8 stream so the fault stream is untouched).
//! The figures, and where they come from:
//! - `uiautomator dump`: 1–3 s per call on real phones (issue 17); agent-device's ADR 0002
//!   measured ~2 s per dump against 6–17 ms for a persistent on-device helper.
//! - `input tap|swipe|text|keyevent` through a new `adb shell`: 300–1000 ms, against about
//!   5.6 ms over a persistent channel (mobilecli issue #412).
//! - `screencap -p`: 100–400 ms (issue 17's figure for a 1080×2400 PNG).
//! - `am start`, `pm list`, `dumpsys window`: no published per-call figure we could cite;
//!   estimated as a new shell (the input figure's floor) plus the service call, and
//!   marked as estimates here and in `config/default.toml`.
//!
//! `fast` is today's virtual phone (no real time at all) and stays the default.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A named set of per-command latencies (`latency_profile` on `[[devices.sim]]`,
/// `droidpilot sim --latency-profile`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum LatencyProfile {
    /// No real time: the virtual phone as it always was.
    #[default]
    #[serde(rename = "fast")]
    Fast,
    /// A modern phone over USB (a Pixel 8 class device): dump ~2 s, screencap ~250 ms,
    /// input through a new shell ~300 ms.
    #[serde(rename = "pixel-8")]
    Pixel8,
    /// A low-end or older phone, or one over Wi-Fi adb: dump ~3 s, screencap ~400 ms,
    /// input ~1 s (the top of each published range).
    #[serde(rename = "budget")]
    Budget,
}

/// The kinds of command a profile prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceOp {
    /// `uiautomator dump`.
    Dump,
    /// `screencap -p`.
    Screencap,
    /// `input tap` (also long press; a double tap is two).
    Tap,
    /// `input swipe`: the profile's figure plus the gesture's own duration.
    Swipe,
    /// `input text` (or the ADB Keyboard broadcast).
    Text,
    /// `input keyevent`.
    Key,
    /// `am start` / `monkey`: launching an app or a URL.
    Am,
    /// `pm list packages`.
    Pm,
    /// `dumpsys window` / `dumpsys power`: foreground app, screen state.
    Dumpsys,
}

/// Median milliseconds per command kind, and the jitter as a fraction of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latencies {
    pub dump: u64,
    pub screencap: u64,
    pub input: u64,
    pub text: u64,
    pub am: u64,
    pub pm: u64,
    pub dumpsys: u64,
    /// Each call takes `median × (1 ± jitter)`, uniformly.
    pub jitter: f64,
}

impl LatencyProfile {
    pub const ALL: [LatencyProfile; 3] = [Self::Fast, Self::Pixel8, Self::Budget];

    pub fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Pixel8 => "pixel-8",
            Self::Budget => "budget",
        }
    }

    /// The profile's medians (see the module doc for their sources).
    pub fn latencies(self) -> Latencies {
        match self {
            Self::Fast => Latencies {
                dump: 0,
                screencap: 0,
                input: 0,
                text: 0,
                am: 0,
                pm: 0,
                dumpsys: 0,
                jitter: 0.0,
            },
            Self::Pixel8 => Latencies {
                dump: 2_000,
                screencap: 250,
                input: 300,
                text: 400,
                am: 600,
                pm: 300,
                dumpsys: 150,
                jitter: 0.2,
            },
            Self::Budget => Latencies {
                dump: 3_000,
                screencap: 400,
                input: 1_000,
                text: 1_200,
                am: 1_500,
                pm: 800,
                dumpsys: 400,
                jitter: 0.3,
            },
        }
    }

    /// The median for one command (a swipe adds its own duration on top).
    pub fn median_ms(self, op: DeviceOp) -> u64 {
        let l = self.latencies();
        match op {
            DeviceOp::Dump => l.dump,
            DeviceOp::Screencap => l.screencap,
            DeviceOp::Tap | DeviceOp::Swipe | DeviceOp::Key => l.input,
            DeviceOp::Text => l.text,
            DeviceOp::Am => l.am,
            DeviceOp::Pm => l.pm,
            DeviceOp::Dumpsys => l.dumpsys,
        }
    }

    /// One call's latency, with `u` in `[0, 1)` choosing where in the jitter band it falls.
    pub fn sample(self, op: DeviceOp, u: f64) -> Duration {
        let l = self.latencies();
        let median = self.median_ms(op) as f64;
        let ms = median * (1.0 + l.jitter * (2.0 * u - 1.0));
        Duration::from_micros((ms.max(0.0) * 1000.0) as u64)
    }
}

impl std::str::FromStr for LatencyProfile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown latency profile `{s}`; valid profiles: {}",
                    Self::ALL.map(Self::name).join(", ")
                )
            })
    }
}

impl std::fmt::Display for LatencyProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Commands the virtual phone served, by kind, and the device time its profile charged
/// (summed per command, so two overlapped commands count twice here).
#[derive(Debug, Default)]
pub struct SimCounters {
    dumps: AtomicU64,
    screencaps: AtomicU64,
    actions: AtomicU64,
    queries: AtomicU64,
    busy_us: AtomicU64,
    action_us: AtomicU64,
    cpu_us: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CommandCounts {
    pub dumps: u64,
    pub screencaps: u64,
    /// What acts on the phone: taps, swipes, key events, typing, app and URL launches.
    pub actions: u64,
    /// Reads beside the screen: `dumpsys` (foreground app, screen state), `pm`.
    pub queries: u64,
    /// Device time charged by the latency profile, summed over commands, in µs.
    pub busy_us: u64,
    /// The part of `busy_us` charged to actions.
    pub action_us: u64,
    /// Server CPU the phone itself used building, rendering and serializing its screen
    /// (thread CPU time), in µs: what a real phone spends on its own cores.
    pub cpu_us: u64,
}

impl CommandCounts {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &CommandCounts) -> CommandCounts {
        CommandCounts {
            dumps: self.dumps - earlier.dumps,
            screencaps: self.screencaps - earlier.screencaps,
            actions: self.actions - earlier.actions,
            queries: self.queries - earlier.queries,
            busy_us: self.busy_us - earlier.busy_us,
            action_us: self.action_us - earlier.action_us,
            cpu_us: self.cpu_us - earlier.cpu_us,
        }
    }
}

impl SimCounters {
    pub fn count(&self, op: DeviceOp, took: Duration) {
        let us = took.as_micros() as u64;
        let slot = match op {
            DeviceOp::Dump => &self.dumps,
            DeviceOp::Screencap => &self.screencaps,
            DeviceOp::Pm | DeviceOp::Dumpsys => &self.queries,
            DeviceOp::Tap | DeviceOp::Swipe | DeviceOp::Text | DeviceOp::Key | DeviceOp::Am => {
                self.action_us.fetch_add(us, Ordering::Relaxed);
                &self.actions
            }
        };
        slot.fetch_add(1, Ordering::Relaxed);
        self.busy_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Adds CPU time the phone spent on the server's cores.
    pub fn spent(&self, cpu: Duration) {
        self.cpu_us
            .fetch_add(cpu.as_micros() as u64, Ordering::Relaxed);
    }

    pub fn get(&self) -> CommandCounts {
        CommandCounts {
            dumps: self.dumps.load(Ordering::Relaxed),
            screencaps: self.screencaps.load(Ordering::Relaxed),
            actions: self.actions.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
            busy_us: self.busy_us.load(Ordering::Relaxed),
            action_us: self.action_us.load(Ordering::Relaxed),
            cpu_us: self.cpu_us.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_by_name_and_an_unknown_one_names_the_valid_ones() {
        assert_eq!("pixel-8".parse(), Ok(LatencyProfile::Pixel8));
        assert_eq!("fast".parse(), Ok(LatencyProfile::Fast));
        let err = "pixel8".parse::<LatencyProfile>().unwrap_err();
        assert!(err.contains("`pixel8`"), "{err}");
        assert!(err.contains("fast, pixel-8, budget"), "{err}");
    }

    #[test]
    fn jitter_stays_inside_its_band_and_fast_costs_nothing() {
        let p = LatencyProfile::Pixel8;
        assert_eq!(p.sample(DeviceOp::Dump, 0.0), Duration::from_millis(1_600));
        assert_eq!(p.sample(DeviceOp::Dump, 0.5), Duration::from_millis(2_000));
        assert!(p.sample(DeviceOp::Dump, 0.999_999) <= Duration::from_millis(2_400));
        for op in [DeviceOp::Dump, DeviceOp::Screencap, DeviceOp::Tap] {
            assert_eq!(LatencyProfile::Fast.sample(op, 0.7), Duration::ZERO);
        }
        // The slow profile is slower than the modern phone at every command.
        for op in [
            DeviceOp::Dump,
            DeviceOp::Screencap,
            DeviceOp::Tap,
            DeviceOp::Am,
        ] {
            assert!(LatencyProfile::Budget.median_ms(op) > p.median_ms(op));
        }
    }
}

#[cfg(test)]
mod device_tests {
    use super::*;
    use crate::{SimConfig, SimDevice};
    use droidpilot_core::device::Device;
    use droidpilot_core::domain::{Key, PixelPoint};

    fn phone(profile: LatencyProfile) -> SimDevice {
        SimDevice::new(SimConfig {
            latency_profile: profile,
            ..SimConfig::default()
        })
        .unwrap()
    }

    // The clock is tokio's paused test clock: it jumps to each sleep's end, so these read
    // the time the profile charged, not the machine's speed.
    #[tokio::test(start_paused = true)]
    async fn a_pixel_8_charges_each_command_its_profile_time_and_counts_it() {
        let d = phone(LatencyProfile::Pixel8);
        let t = tokio::time::Instant::now();
        d.hierarchy().await.unwrap();
        let dump = t.elapsed();
        assert!(
            (Duration::from_millis(1_600)..=Duration::from_millis(2_400)).contains(&dump),
            "{dump:?}"
        );
        let t = tokio::time::Instant::now();
        d.screenshot().await.unwrap();
        d.tap(PixelPoint { x: 10, y: 10 }).await.unwrap();
        d.key(Key::Back).await.unwrap();
        d.current_app().await.unwrap();
        let rest = t.elapsed();
        // 250 + 300 + 300 + 150 ms at the medians, each within ±20%.
        assert!(
            (Duration::from_millis(800)..=Duration::from_millis(1_200)).contains(&rest),
            "{rest:?}"
        );
        let c = d.counts();
        assert_eq!((c.dumps, c.screencaps, c.actions, c.queries), (1, 1, 2, 1));
        // The counters sum what was slept (tokio's timer rounds each sleep up to a ms).
        let charged = Duration::from_micros(c.busy_us);
        let slept = dump + rest;
        assert!(
            charged <= slept && slept - charged <= Duration::from_millis(5),
            "{charged:?} vs {slept:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn fast_takes_no_time_and_concurrent_commands_overlap() {
        let d = phone(LatencyProfile::Fast);
        let t = tokio::time::Instant::now();
        d.hierarchy().await.unwrap();
        d.screenshot().await.unwrap();
        assert_eq!(t.elapsed(), Duration::ZERO);
        assert_eq!(d.counts().dumps, 1);

        // A screenshot during a dump costs no extra time on the phone.
        let d = phone(LatencyProfile::Pixel8);
        let t = tokio::time::Instant::now();
        let (a, b) = tokio::join!(d.hierarchy(), d.screenshot());
        a.unwrap();
        b.unwrap();
        assert!(
            t.elapsed() <= Duration::from_millis(2_400),
            "{:?}",
            t.elapsed()
        );
        assert!(Duration::from_micros(d.counts().busy_us) > t.elapsed());
    }

    #[test]
    fn the_profile_is_configured_per_phone_and_an_unknown_one_is_refused() {
        let cfg: SimConfig = serde_json::from_str(r#"{"latency_profile": "pixel-8"}"#).unwrap();
        assert_eq!(cfg.latency_profile, LatencyProfile::Pixel8);
        assert_eq!(SimConfig::default().latency_profile, LatencyProfile::Fast);
        let err = serde_json::from_str::<SimConfig>(r#"{"latency_profile": "pixel8"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("pixel-8") && err.contains("budget"), "{err}");
    }
}
