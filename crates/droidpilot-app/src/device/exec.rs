//! Executes one `Action` on a `Device`: the step from "what the agent decided" to pixels.
//!
//! Targets resolve here: a normalized coordinate through the `CoordinateTransform`, a
//! pixel point by checking it against the screen size, an element id or selector through
//! the current `Screen` (its bounds' centre). A selector that does not parse is the
//! caller's mistake (`invalid_selector`), not a missing element. Directions
//! become swipes inside the target (or the screen's middle band): `scroll down` reveals
//! what is below, so the finger moves up. `wait_for` / `wait_for_gone` poll the hierarchy.
//! Actions that are not device actions (finish, ask_user, mcp_call, custom) are refused;
//! the runner handles them before calling this.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use super::{Device, DeviceError};
use crate::domain::action::{SwipePath, TargetField};
use crate::domain::{
    Action, Bounds, CoordinateTransform, Direction, LinearTransform, NormPoint, PixelPoint,
    ScreenSize, Target,
};
use crate::screen::pipeline::{ReprOptions, Screen};
use crate::screen::resolve::ResolveError;
use crate::screen::selector::{Selector, SelectorError};

/// Default press length for `long_press` without `duration_ms` (Android's long-press
/// timeout is 400–500 ms; 800 is safely past it).
pub const DEFAULT_LONG_PRESS_MS: u64 = 800;
pub const DEFAULT_SWIPE_MS: u64 = 300;
/// How often `wait_for` re-reads the hierarchy.
const POLL_EVERY: Duration = Duration::from_millis(250);

/// What the executor needs besides the device.
pub struct ExecContext<'a> {
    /// The screen the action was decided on; needed for element and selector targets.
    pub screen: Option<&'a Screen>,
    pub size: ScreenSize,
    pub transform: &'a dyn CoordinateTransform,
}

/// What an executed action did, for the step record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExecOutcome {
    pub detail: Value,
}

/// Why an action failed, sorted by what a caller should do about it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    /// The target is not on the screen (or is ambiguous): re-observe and decide again.
    #[error("{message}")]
    ElementNotFound {
        selector: Option<String>,
        message: String,
        hint: String,
    },
    /// A selector that does not parse: fix it, re-observing will not help.
    #[error("{message}")]
    InvalidSelector {
        selector: String,
        message: String,
        hint: String,
    },
    /// A pixel target outside the screen.
    #[error("`pixel` [{}, {}] is outside the {}×{} screen", point[0], point[1], size.width, size.height)]
    OffScreen { point: [u32; 2], size: ScreenSize },
    /// The device refused or failed the input.
    #[error("{0}")]
    Device(#[from] DeviceError),
    /// `wait_for` / `wait_for_gone` ran out of time.
    #[error("`{selector}` {what} within {} ms", timeout.as_millis())]
    Timeout {
        selector: String,
        what: &'static str,
        timeout: Duration,
    },
    /// The action is not something a device does.
    #[error("`{0}` is not a device action; the runner handles it")]
    NotADeviceAction(String),
}

impl ExecError {
    /// The `error_type` of the REST error object: element_not_found, action_failed,
    /// timeout or permission_denied; invalid_selector and invalid_target for a target the
    /// caller got wrong.
    pub fn error_type(&self) -> &'static str {
        match self {
            ExecError::ElementNotFound { .. } => "element_not_found",
            ExecError::InvalidSelector { .. } => "invalid_selector",
            ExecError::OffScreen { .. } => "invalid_target",
            ExecError::Timeout { .. } => "timeout",
            ExecError::Device(DeviceError::Timeout { .. }) => "timeout",
            ExecError::Device(DeviceError::CommandFailed { stderr, .. })
                if stderr.contains("ermission") =>
            {
                "permission_denied"
            }
            _ => "action_failed",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            ExecError::ElementNotFound { hint, .. } | ExecError::InvalidSelector { hint, .. } => {
                hint.clone()
            }
            ExecError::OffScreen { size, .. } => format!(
                "Pixels count from the top-left corner: 0 ≤ x < {} and 0 ≤ y < {}; GET /v1/devices/{{id}} gives the screen size.",
                size.width, size.height
            ),
            ExecError::Device(e) => e.hint(),
            ExecError::Timeout { .. } => "Raise `timeout_ms`, or check with GET /v1/devices/{id}/screen what the screen shows.".into(),
            ExecError::NotADeviceAction(_) => "Send finish, ask_user and mcp_call as part of a task, not to a device.".into(),
        }
    }

    pub fn selector(&self) -> Option<&str> {
        match self {
            ExecError::ElementNotFound { selector, .. } => selector.as_deref(),
            ExecError::InvalidSelector { selector, .. } => Some(selector),
            ExecError::Timeout { selector, .. } => Some(selector),
            _ => None,
        }
    }

    /// Whether trying again (after re-observing) may help.
    pub fn is_retryable(&self) -> bool {
        match self {
            ExecError::ElementNotFound { .. } | ExecError::Timeout { .. } => true,
            ExecError::Device(e) => !matches!(
                e,
                DeviceError::InvalidInput(_)
                    | DeviceError::Unsupported(_)
                    | DeviceError::AppNotFound(_)
            ),
            ExecError::InvalidSelector { .. }
            | ExecError::OffScreen { .. }
            | ExecError::NotADeviceAction(_) => false,
        }
    }
}

fn target_selector(t: &Target) -> Option<String> {
    match t {
        Target::Selector(s) => Some(s.clone()),
        Target::Element(id) => Some(format!("element {id}")),
        Target::Coordinate(_) | Target::Pixel(_) => None,
    }
}

/// A selector that does not parse, as the executor reports it.
fn invalid_selector(e: &SelectorError) -> ExecError {
    ExecError::InvalidSelector {
        selector: e.input.clone(),
        message: e.to_string(),
        hint: e.hint(),
    }
}

/// The bounds an element/selector target covers.
fn target_bounds(t: &Target, ctx: &ExecContext<'_>) -> Result<Bounds, ExecError> {
    let Some(screen) = ctx.screen else {
        return Err(ExecError::ElementNotFound {
            selector: target_selector(t),
            message: "no screen was observed to resolve this target against".into(),
            hint: "Use a coordinate target, or observe the screen first.".into(),
        });
    };
    screen.resolve(t).map_err(|e| match e {
        ResolveError::InvalidSelector(se) => invalid_selector(&se),
        e => ExecError::ElementNotFound {
            selector: target_selector(t),
            message: e.to_string(),
            hint: e.hint(),
        },
    })
}

/// The one place a point becomes the pixel the device is touched at: every tap, press
/// and swipe point goes through the runner's coordinate transform here. Points are in
/// the screen as observed (normalized); the transform says where the device is touched.
pub fn touch(p: NormPoint, ctx: &ExecContext<'_>) -> PixelPoint {
    ctx.transform.to_pixel(p, ctx.size)
}

/// `touch` for a point in the observed screen's pixels (an element's centre, a `pixel`
/// target, a swipe over an element's bounds).
fn touch_px(p: PixelPoint, ctx: &ExecContext<'_>) -> PixelPoint {
    touch(LinearTransform.to_normalized(p, ctx.size), ctx)
}

/// Where a target is touched (through `touch`).
fn target_point(t: &Target, ctx: &ExecContext<'_>) -> Result<PixelPoint, ExecError> {
    match t {
        Target::Coordinate(p) => Ok(touch(*p, ctx)),
        other => Ok(touch_px(screen_point(other, ctx)?, ctx)),
    }
}

/// A target's point in the observed screen's pixels (not yet through the transform).
fn screen_point(t: &Target, ctx: &ExecContext<'_>) -> Result<PixelPoint, ExecError> {
    match t {
        Target::Coordinate(p) => Ok(LinearTransform.to_pixel(*p, ctx.size)),
        Target::Pixel([x, y]) => {
            if *x >= ctx.size.width || *y >= ctx.size.height {
                return Err(ExecError::OffScreen {
                    point: [*x, *y],
                    size: ctx.size,
                });
            }
            Ok(PixelPoint {
                x: *x as i32,
                y: *y as i32,
            })
        }
        other => Ok(target_bounds(other, ctx)?.center()),
    }
}

/// A swipe across the middle 60% of `area` (the screen when none), moving content in
/// `dir` for scrolls: content moves opposite to the finger.
fn directional_swipe(area: Bounds, dir: Direction, scroll: bool) -> (PixelPoint, PixelPoint) {
    let c = area.center();
    let (dx, dy) = (
        (area.width() as f64 * 0.3) as i32,
        (area.height() as f64 * 0.3) as i32,
    );
    // For a swipe, `up` means the finger moves up. For a scroll, `down` means reveal
    // what is below, which is also the finger moving up.
    let finger_up = match (dir, scroll) {
        (Direction::Up, false) | (Direction::Down, true) => Some(true),
        (Direction::Down, false) | (Direction::Up, true) => Some(false),
        _ => None,
    };
    let finger_left = match (dir, scroll) {
        (Direction::Left, false) | (Direction::Right, true) => Some(true),
        (Direction::Right, false) | (Direction::Left, true) => Some(false),
        _ => None,
    };
    match (finger_up, finger_left) {
        (Some(true), _) => (
            PixelPoint {
                x: c.x,
                y: c.y + dy,
            },
            PixelPoint {
                x: c.x,
                y: c.y - dy,
            },
        ),
        (Some(false), _) => (
            PixelPoint {
                x: c.x,
                y: c.y - dy,
            },
            PixelPoint {
                x: c.x,
                y: c.y + dy,
            },
        ),
        (_, Some(true)) => (
            PixelPoint {
                x: c.x + dx,
                y: c.y,
            },
            PixelPoint {
                x: c.x - dx,
                y: c.y,
            },
        ),
        _ => (
            PixelPoint {
                x: c.x - dx,
                y: c.y,
            },
            PixelPoint {
                x: c.x + dx,
                y: c.y,
            },
        ),
    }
}

fn full_screen(size: ScreenSize) -> Bounds {
    Bounds::new(0, 0, size.width as i32, size.height as i32)
}

/// The area a scroll without a container acts on: the largest scrollable element on
/// screen, else the whole screen.
fn default_scroll_area(ctx: &ExecContext<'_>) -> Bounds {
    ctx.screen
        .and_then(|s| {
            s.elements
                .elements
                .iter()
                .filter(|e| e.actions.contains(&crate::screen::ElementAction::Scroll))
                .max_by_key(|e| e.bounds.width() as i64 * e.bounds.height() as i64)
                .map(|e| e.bounds)
        })
        .unwrap_or_else(|| full_screen(ctx.size))
}

fn pt(p: PixelPoint) -> Value {
    json!([p.x, p.y])
}

/// Runs one device action.
pub async fn execute(
    device: &dyn Device,
    action: &Action,
    ctx: &ExecContext<'_>,
) -> Result<ExecOutcome, ExecError> {
    let detail = match action {
        Action::Tap {
            target: TargetField(t),
        } => {
            let p = target_point(t, ctx)?;
            device.tap(p).await?;
            json!({"point": pt(p)})
        }
        Action::LongPress {
            target: TargetField(t),
            duration_ms,
        } => {
            let p = target_point(t, ctx)?;
            let ms = duration_ms.unwrap_or(DEFAULT_LONG_PRESS_MS);
            device.long_press(p, ms).await?;
            json!({"point": pt(p), "duration_ms": ms})
        }
        Action::DoubleTap {
            target: TargetField(t),
        } => {
            let p = target_point(t, ctx)?;
            device.double_tap(p).await?;
            json!({"point": pt(p)})
        }
        Action::Swipe { path, duration_ms } => {
            let (from, to) = match path {
                SwipePath::Points { start, end } => (touch(*start, ctx), touch(*end, ctx)),
                SwipePath::Direction { direction, target } => {
                    let area = match target {
                        Some(TargetField(t @ (Target::Coordinate(_) | Target::Pixel(_)))) => {
                            let c = screen_point(t, ctx)?;
                            let full = full_screen(ctx.size);
                            Bounds::new(
                                full.left,
                                c.y - full.height() / 4,
                                full.right,
                                c.y + full.height() / 4,
                            )
                        }
                        Some(TargetField(t)) => target_bounds(t, ctx)?,
                        None => full_screen(ctx.size),
                    };
                    let (from, to) = directional_swipe(area, *direction, false);
                    (touch_px(from, ctx), touch_px(to, ctx))
                }
            };
            let ms = duration_ms.unwrap_or(DEFAULT_SWIPE_MS);
            device.swipe(from, to, ms).await?;
            json!({"from": pt(from), "to": pt(to), "duration_ms": ms})
        }
        Action::Scroll {
            direction,
            container,
        } => {
            let area = match container {
                Some(TargetField(t @ (Target::Coordinate(_) | Target::Pixel(_)))) => {
                    let c = screen_point(t, ctx)?;
                    Bounds::new(c.x - 200, c.y - 400, c.x + 200, c.y + 400)
                        .intersect(&full_screen(ctx.size))
                }
                Some(TargetField(t)) => target_bounds(t, ctx)?,
                None => default_scroll_area(ctx),
            };
            let (from, to) = directional_swipe(area, *direction, true);
            let (from, to) = (touch_px(from, ctx), touch_px(to, ctx));
            device.swipe(from, to, DEFAULT_SWIPE_MS).await?;
            json!({"from": pt(from), "to": pt(to)})
        }
        Action::Type {
            text,
            target,
            clear_first,
        } => {
            let focused = match target {
                Some(TargetField(t)) => {
                    let p = target_point(t, ctx)?;
                    device.tap(p).await?;
                    Some(pt(p))
                }
                None => None,
            };
            if *clear_first {
                device.clear_text().await?;
            }
            device.type_text(text).await?;
            // The text itself is not repeated here: it may be a password.
            json!({"focused": focused, "chars": text.chars().count(), "cleared": clear_first})
        }
        Action::Clear { target } => {
            if let Some(TargetField(t)) = target {
                let p = target_point(t, ctx)?;
                device.tap(p).await?;
            }
            device.clear_text().await?;
            json!({})
        }
        Action::Key { key } => {
            device.key(*key).await?;
            json!({"key": key})
        }
        Action::LaunchApp { app } => {
            device.launch_app(app).await?;
            json!({"app": app})
        }
        Action::OpenUrl { url } => {
            device.open_url(url).await?;
            json!({"url": url})
        }
        Action::Rotate { orientation } => {
            device.rotate(*orientation).await?;
            let screen = device.info().await?.screen;
            json!({"orientation": orientation, "screen": [screen.width, screen.height]})
        }
        Action::Wait { ms } => {
            device.wait(*ms).await;
            json!({"waited_ms": ms})
        }
        Action::WaitFor {
            selector,
            timeout_ms,
            idle_ms,
        } => wait_until(device, selector, Patience::new(*timeout_ms, *idle_ms), true).await?,
        Action::WaitForGone {
            selector,
            timeout_ms,
            idle_ms,
        } => {
            wait_until(
                device,
                selector,
                Patience::new(*timeout_ms, *idle_ms),
                false,
            )
            .await?
        }
        other @ (Action::Finish { .. }
        | Action::AskUser { .. }
        | Action::McpCall { .. }
        | Action::Custom(_)) => {
            return Err(ExecError::NotADeviceAction(other.name().to_string()));
        }
    };
    Ok(ExecOutcome { detail })
}

/// How long `wait_until` waits: `timeout`, or less once the screen has been idle (the
/// same layout, no progress indicator) for `idle`.
struct Patience {
    timeout: Duration,
    idle: Option<Duration>,
}

impl Patience {
    fn new(timeout_ms: u64, idle_ms: Option<u64>) -> Self {
        Self {
            timeout: Duration::from_millis(timeout_ms),
            idle: idle_ms.map(Duration::from_millis),
        }
    }
}

/// Polls the hierarchy until `selector` matches (`present`) or stops matching.
///
/// Time is the device's: between reads it waits with `Device::wait` (a real phone sleeps,
/// the virtual phone moves its clock), and the timeout counts the longer of the wall time
/// and the time waited, so on a virtual phone a wait costs no real time and still ends.
/// With `idle`, a screen whose layout hash has not changed for that long while no
/// progress indicator shows ends the wait early: nothing is coming. A loading page keeps
/// it waiting up to the timeout.
async fn wait_until(
    device: &dyn Device,
    selector: &str,
    patience: Patience,
    present: bool,
) -> Result<Value, ExecError> {
    let sel = Selector::parse(selector).map_err(|e| invalid_selector(&e))?;
    let start = Instant::now();
    let mut waited = Duration::ZERO;
    let elapsed = |waited: Duration| start.elapsed().max(waited);
    // The layout last seen and when (in `elapsed` time) it was first seen.
    let mut still: Option<(u64, Duration)> = None;
    loop {
        // A dump that fails (idle-state errors mid-animation) counts as "not yet".
        if let Ok(xml) = device.hierarchy().await
            && let Ok(screen) = Screen::from_xml(&xml, &ReprOptions::default())
        {
            if shows(&screen, &sel) == present {
                let ms = elapsed(waited).as_millis() as u64;
                return Ok(json!({"waited_ms": ms}));
            }
            let hash = crate::screen::layout_hash(&screen.tree).0;
            let now = elapsed(waited);
            match still {
                Some((h, _)) if h == hash && !screen.tree.shows_progress() => {}
                _ => still = Some((hash, now)),
            }
        }
        let now = elapsed(waited);
        let idle_for = still.map_or(Duration::ZERO, |(_, since)| now.saturating_sub(since));
        let idle = patience.idle.is_some_and(|i| idle_for >= i);
        if now >= patience.timeout || idle {
            return Err(ExecError::Timeout {
                selector: selector.to_string(),
                what: match (present, idle) {
                    (true, false) => "did not appear",
                    (false, false) => "did not go away",
                    (true, true) => "did not appear (the screen held still, nothing loading)",
                    (false, true) => "did not go away (the screen held still, nothing loading)",
                },
                timeout: now.min(patience.timeout),
            });
        }
        let step = POLL_EVERY.min(patience.timeout.saturating_sub(now));
        device.wait(step.as_millis() as u64).await;
        waited += step;
    }
}

/// Whether a node the selector matches can be seen (`visible-to-user` and on screen).
/// Real apps keep a finished spinner in the tree, hidden: for `wait_for_gone` it is gone
/// (before, the wait ran to its timeout on every such step); for `wait_for`, a node not
/// yet visible has not appeared.
fn shows(screen: &Screen, sel: &Selector) -> bool {
    let bounds = screen.tree.screen_bounds();
    (screen.find(sel).nodes.iter()).any(|&i| screen.tree.is_on_screen(i, &bounds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::sim::{SimConfig, SimDevice, SimFaults};

    #[test]
    fn a_hidden_match_has_not_appeared_and_is_gone() {
        let screen = |visible: bool| {
            let xml = format!(
                r#"<hierarchy><node class="android.widget.FrameLayout" package="com.app" bounds="[0,0][1080,2400]"><node class="android.widget.ProgressBar" visible-to-user="{visible}" bounds="[500,1100][580,1180]"/><node class="android.widget.TextView" text="Inbox" bounds="[0,100][1080,200]"/></node></hierarchy>"#
            );
            Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
        };
        let spinner = Selector::parse("ProgressBar").unwrap();
        assert!(shows(&screen(true), &spinner));
        assert!(!shows(&screen(false), &spinner), "a hidden spinner is gone");
        assert!(shows(
            &screen(false),
            &Selector::parse(":text(\"Inbox\")").unwrap()
        ));
    }
    use crate::domain::AppRef;

    fn phone(faults: SimFaults) -> SimDevice {
        SimDevice::new(SimConfig {
            faults,
            ..SimConfig::default()
        })
        .unwrap()
    }

    /// A wait for what is not coming, on a screen that holds still, ends after `idle`
    /// of device time, not at its timeout; without `idle` it waits the whole timeout.
    #[tokio::test]
    async fn an_idle_wait_gives_up_on_a_still_screen() {
        let d = phone(SimFaults::default());
        let t0 = d.state().clock_ms;
        let e = wait_until(&d, "#never_there", Patience::new(60_000, Some(1_000)), true)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("held still"), "{e}");
        let waited = d.state().clock_ms - t0;
        assert!(waited < 10_000, "gave up early: {waited} ms of phone time");

        let t0 = d.state().clock_ms;
        let e = wait_until(&d, "#never_there", Patience::new(5_000, None), true)
            .await
            .unwrap_err();
        assert!(!e.to_string().contains("held still"), "{e}");
        assert!(d.state().clock_ms - t0 >= 5_000, "the whole timeout");
    }

    /// A page that is still loading (a progress indicator shows) is waited for, idle or
    /// not: the delayed element arrives.
    #[tokio::test]
    async fn a_loading_screen_is_waited_for_despite_idle() {
        let d = phone(SimFaults {
            delayed_elements_ms: 5_000,
            ..Default::default()
        });
        d.set_state({
            let mut s = d.state();
            s.shop.notifications_allowed = Some(true);
            s.shop.promo_shown = true;
            s
        });
        d.launch_app(&AppRef::Label("Shop".into())).await.unwrap();
        let r = wait_until(&d, "#loading", Patience::new(20_000, Some(1_000)), false).await;
        assert!(r.is_ok(), "{r:?}");
    }
}
