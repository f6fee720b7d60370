//! `flow_check`: the custom action a Maestro flow's waits become (`agent::flow`), done on
//! the device within one step, so a wait costs one task step and the phone's own time.
//!
//! `{"action": "flow_check", "until": "visible" | "not_visible" | "settled",
//!   "selector": <Maestro selector>, "timeout_ms": N, "fail_on_timeout": bool,
//!   "seen": "<16 hex digits>"}`
//!
//! `visible` / `not_visible` re-read the screen until Maestro's selector (its own
//! matching, `droidpilot_maestro::selector`) finds the element, or no longer does;
//! `settled` until two reads in a row are the same screen (text included): Maestro's
//! `waitForAnimationToEnd` and `waitToSettleTimeoutMs`. `seen` is the content hash
//! (`screen::content_hash`) of the screen the step was decided on, the read just before
//! this one: a first read equal to it is the second equal read in a row, so a screen
//! that already holds still costs one dump, not two. Never a blind sleep: between
//! reads the device waits `POLL_MS` (a real phone sleeps, the virtual phone moves its
//! clock), and the timeout counts the longer of the wall time and the time waited, as
//! `device::exec`'s `wait_for` does.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use droidpilot_maestro::ast::Selector;
use serde_json::{Map, Value, json};

use super::middleware::CustomActionHandler;
use crate::device::Device;

/// The action's name, as the flow agent emits it.
pub const NAME: &str = "flow_check";
/// Between two reads of the screen.
const POLL_MS: u64 = 200;

/// What the wait is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Visible,
    NotVisible,
    Settled,
}

impl Until {
    fn name(self) -> &'static str {
        match self {
            Until::Visible => "visible",
            Until::NotVisible => "not_visible",
            Until::Settled => "settled",
        }
    }
}

/// The action's arguments; `seen`: the content hash of the screen the step was decided
/// on (settled only).
pub fn args(
    until: Until,
    selector: Option<&Selector>,
    timeout_ms: u64,
    fail_on_timeout: bool,
    seen: Option<u64>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("until".into(), json!(until.name()));
    if let Some(s) = selector {
        m.insert(
            "selector".into(),
            serde_json::to_value(s).unwrap_or_default(),
        );
    }
    m.insert("timeout_ms".into(), json!(timeout_ms));
    m.insert("fail_on_timeout".into(), json!(fail_on_timeout));
    if let Some(h) = seen.filter(|_| until == Until::Settled) {
        m.insert("seen".into(), json!(format!("{h:016x}")));
    }
    m
}

/// What the action was asked.
struct Check {
    until: Until,
    selector: Option<Selector>,
    timeout_ms: u64,
    fail: bool,
    seen: Option<u64>,
}

pub struct FlowCheckAction;

fn parse(args: &Map<String, Value>) -> Result<Check, String> {
    let until = match args.get("until").and_then(Value::as_str) {
        Some("visible") => Until::Visible,
        Some("not_visible") => Until::NotVisible,
        Some("settled") => Until::Settled,
        other => {
            return Err(format!(
                "`until` must be visible, not_visible or settled, got {other:?}"
            ));
        }
    };
    let selector = match args.get("selector") {
        Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| format!("`selector`: {e}"))?),
        None if until == Until::Settled => None,
        None => return Err("`selector` is required unless `until` is settled".into()),
    };
    let timeout = args
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .unwrap_or(17_000);
    let fail = args
        .get("fail_on_timeout")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let seen = match args.get("seen") {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or("`seen` must be a content hash in hex")?,
        ),
    };
    Ok(Check {
        until,
        selector,
        timeout_ms: timeout,
        fail,
        seen,
    })
}

/// One read: the tree, or None when the dump failed (mid-animation: "not yet").
async fn read(device: &dyn Device) -> Option<crate::screen::UiTree> {
    let xml = device.hierarchy().await.ok()?;
    crate::screen::parse(&xml).ok()
}

#[async_trait]
impl CustomActionHandler for FlowCheckAction {
    async fn run(&self, device: &dyn Device, args: &Map<String, Value>) -> Result<Value, String> {
        let Check {
            until,
            selector,
            timeout_ms,
            fail,
            seen,
        } = parse(args)?;
        let timeout = Duration::from_millis(timeout_ms);
        let start = Instant::now();
        let mut waited = Duration::ZERO;
        // The screen the step was decided on is the read before the first one.
        let mut last: Option<u64> = seen;
        loop {
            let met = match read(device).await {
                Some(tree) => match (until, &selector) {
                    (Until::Settled, _) => {
                        let h = crate::screen::content_hash(&tree).0;
                        let same = last == Some(h);
                        last = Some(h);
                        same
                    }
                    (u, Some(s)) => {
                        let found = droidpilot_maestro::selector::find(&tree, s)
                            .map_err(|e| e.to_string())?
                            .is_some();
                        found == (u == Until::Visible)
                    }
                    (_, None) => false,
                },
                None => false,
            };
            let elapsed = start.elapsed().max(waited);
            let ms = elapsed.as_millis() as u64;
            if met {
                return Ok(json!({"met": true, "waited_ms": ms}));
            }
            if elapsed >= timeout {
                if fail {
                    let what = match until {
                        Until::Visible => "did not appear",
                        Until::NotVisible => "did not go away",
                        Until::Settled => "the screen did not settle",
                    };
                    return Err(format!("{what} within {timeout_ms} ms"));
                }
                return Ok(json!({"met": false, "waited_ms": ms}));
            }
            let step = POLL_MS.min((timeout - elapsed).as_millis() as u64).max(1);
            device.wait(step).await;
            waited += Duration::from_millis(step);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::sim::{SimConfig, SimDevice};

    async fn settle(sim: &SimDevice, seen: Option<u64>) -> (Value, u64) {
        let before = sim.counts().dumps;
        let args = args(Until::Settled, None, 5_000, false, seen);
        let out = FlowCheckAction.run(sim, &args).await.unwrap();
        (out, sim.counts().dumps - before)
    }

    /// A screen that already holds still: the screen the step was decided on counts as
    /// the read before, so one dump settles it; a different one seen (or none) still
    /// takes two equal reads in a row: the change is detected, never slept through.
    #[tokio::test]
    async fn a_still_screen_settles_on_one_read_after_the_one_the_step_saw() {
        let sim = SimDevice::new(SimConfig::default()).unwrap();
        let xml = sim.hierarchy().await.unwrap();
        let seen = crate::screen::content_hash(&crate::screen::parse(&xml).unwrap()).0;
        let (out, dumps) = settle(&sim, Some(seen)).await;
        assert_eq!((out["met"].as_bool(), dumps), (Some(true), 1), "{out}");
        let (out, dumps) = settle(&sim, Some(seen ^ 1)).await;
        assert_eq!((out["met"].as_bool(), dumps), (Some(true), 2), "{out}");
        let (out, dumps) = settle(&sim, None).await;
        assert_eq!((out["met"].as_bool(), dumps), (Some(true), 2), "{out}");
    }
}
