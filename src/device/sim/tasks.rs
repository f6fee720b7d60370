//! Scored tasks for the virtual phone: an instruction, a difficulty, an initial state, a
//! success checker over `PhoneState`, and a reference solution.
//!
//! Reference solutions are plain `Action`s with normalized coordinates (for the default
//! 1080×2400 screen) or element-free actions (keys, typing, launch, wait), executed by
//! `run_reference` through the `Device` trait and `LinearTransform` only, so they mean
//! the same on any backend that shows the same screens.

use serde::Serialize;

use crate::device::{Device, DeviceError};
use crate::domain::action::{SwipePath, TargetField};
use crate::domain::{
    Action, AppRef, CoordinateTransform, Direction, Key, LinearTransform, NormPoint, PixelPoint,
    ScreenSize, Target,
};

use super::SimDevice;
use super::state::{AppId, PhoneState};

/// How many steps a person needs: 1–3, 4–10, more than 10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    Easy,
    Medium,
    Hard,
}

impl Difficulty {
    pub fn of_steps(n: usize) -> Difficulty {
        match n {
            0..=3 => Difficulty::Easy,
            4..=10 => Difficulty::Medium,
            _ => Difficulty::Hard,
        }
    }
}

/// One task. Functions rather than data so that checkers can say anything about state.
#[derive(Clone, Copy)]
pub struct SimTask {
    pub id: &'static str,
    pub app: AppId,
    pub instruction: &'static str,
    pub difficulty: Difficulty,
    setup: fn(&mut PhoneState),
    check: fn(&PhoneState) -> bool,
    solution: fn() -> Vec<Action>,
}

impl std::fmt::Debug for SimTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTask")
            .field("id", &self.id)
            .field("instruction", &self.instruction)
            .finish()
    }
}

impl SimTask {
    /// The phone's state when the task starts.
    pub fn initial_state(&self) -> PhoneState {
        let mut st = PhoneState::default();
        (self.setup)(&mut st);
        st
    }
    /// Whether the task is done in this state.
    pub fn check(&self, st: &PhoneState) -> bool {
        (self.check)(st)
    }
    /// A known-good action sequence.
    pub fn reference(&self) -> Vec<Action> {
        (self.solution)()
    }
}

const SIZE: ScreenSize = ScreenSize {
    width: 1080,
    height: 2400,
};

/// A tap at a pixel of the default screen, as a normalized action.
fn tap(x: i32, y: i32) -> Action {
    Action::Tap {
        target: TargetField(Target::Coordinate(norm(x, y))),
    }
}
fn long(x: i32, y: i32) -> Action {
    Action::LongPress {
        target: TargetField(Target::Coordinate(norm(x, y))),
        duration_ms: Some(800),
    }
}
fn swipe(x0: i32, y0: i32, x1: i32, y1: i32) -> Action {
    Action::Swipe {
        path: SwipePath::Points {
            start: norm(x0, y0),
            end: norm(x1, y1),
        },
        duration_ms: Some(400),
    }
}
fn norm(x: i32, y: i32) -> NormPoint {
    LinearTransform.to_normalized(PixelPoint { x, y }, SIZE)
}
fn typ(t: &str) -> Action {
    Action::Type {
        text: t.into(),
        target: None,
        clear_first: false,
    }
}
fn key(k: Key) -> Action {
    Action::Key { key: k }
}
fn launch(a: AppId) -> Action {
    Action::LaunchApp {
        app: AppRef::Package(a.package().into()),
    }
}
fn wait(ms: u64) -> Action {
    Action::Wait { ms }
}

fn nothing(_: &mut PhoneState) {}

pub fn tasks() -> Vec<SimTask> {
    vec![SimTask {
        id: "settings.bluetooth_on",
        app: AppId::Settings,
        instruction: "Turn on Bluetooth",
        difficulty: Difficulty::Easy,
        setup: nothing,
        check: |s| s.settings.bluetooth,
        solution: || vec![launch(AppId::Settings), tap(540, 452 + 200)],
    }]
}

/// Finds a task by id.
pub fn task(id: &str) -> Option<SimTask> {
    tasks().into_iter().find(|t| t.id == id)
}

fn pixel(dev: &SimDevice, p: &NormPoint) -> PixelPoint {
    let c = dev.config();
    LinearTransform.to_pixel(
        *p,
        ScreenSize {
            width: c.width,
            height: c.height,
        },
    )
}

fn target_point(dev: &SimDevice, t: &TargetField) -> Result<PixelPoint, DeviceError> {
    match &t.0 {
        Target::Coordinate(p) => Ok(pixel(dev, p)),
        other => Err(DeviceError::InvalidInput(format!(
            "reference solutions use coordinates only, got {other:?}; element and selector targets need the screen parser"
        ))),
    }
}

/// Runs a sequence of actions that need no screen parser (coordinate taps and swipes,
/// typing, keys, launch, open_url, wait) against the device, through the `Device` trait.
/// `wait` advances the virtual clock instead of sleeping.
pub async fn run_actions(dev: &SimDevice, actions: &[Action]) -> Result<(), DeviceError> {
    let size = ScreenSize {
        width: dev.config().width,
        height: dev.config().height,
    };
    for a in actions {
        match a {
            Action::Tap { target } => dev.tap(target_point(dev, target)?).await?,
            Action::DoubleTap { target } => dev.double_tap(target_point(dev, target)?).await?,
            Action::LongPress {
                target,
                duration_ms,
            } => {
                dev.long_press(target_point(dev, target)?, duration_ms.unwrap_or(800))
                    .await?
            }
            Action::Swipe { path, duration_ms } => {
                let (from, to) = match path {
                    SwipePath::Points { start, end } => (pixel(dev, start), pixel(dev, end)),
                    SwipePath::Direction { direction, .. } => direction_path(*direction, size),
                };
                dev.swipe(from, to, duration_ms.unwrap_or(400)).await?
            }
            Action::Scroll { direction, .. } => {
                // Scrolling content down moves the finger up.
                let flip = match direction {
                    Direction::Down => Direction::Up,
                    Direction::Up => Direction::Down,
                    Direction::Left => Direction::Right,
                    Direction::Right => Direction::Left,
                };
                let (from, to) = direction_path(flip, size);
                dev.swipe(from, to, 400).await?
            }
            Action::Type {
                text,
                target,
                clear_first,
            } => {
                if let Some(t) = target {
                    dev.tap(target_point(dev, t)?).await?;
                }
                if *clear_first {
                    dev.clear_text().await?;
                }
                dev.type_text(text).await?
            }
            Action::Clear { target } => {
                if let Some(t) = target {
                    dev.tap(target_point(dev, t)?).await?;
                }
                dev.clear_text().await?
            }
            Action::Key { key } => dev.key(*key).await?,
            Action::LaunchApp { app } => dev.launch_app(app).await?,
            Action::OpenUrl { url } => dev.open_url(url).await?,
            Action::Wait { ms } => dev.advance_clock(*ms),
            Action::Finish { .. } => break,
            other => {
                return Err(DeviceError::InvalidInput(format!(
                    "`{}` cannot run without a screen parser",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.get("action").and_then(|a| a.as_str()).map(String::from))
                        .unwrap_or_default()
                )));
            }
        }
    }
    Ok(())
}

/// A swipe of 40% of the screen in a direction, through the middle.
fn direction_path(d: Direction, s: ScreenSize) -> (PixelPoint, PixelPoint) {
    let (w, h) = (s.width as i32, s.height as i32);
    let (cx, cy) = (w / 2, h / 2);
    let (dx, dy) = (w * 2 / 10, h * 2 / 10);
    match d {
        Direction::Up => (
            PixelPoint { x: cx, y: cy + dy },
            PixelPoint { x: cx, y: cy - dy },
        ),
        Direction::Down => (
            PixelPoint { x: cx, y: cy - dy },
            PixelPoint { x: cx, y: cy + dy },
        ),
        Direction::Left => (
            PixelPoint { x: cx + dx, y: cy },
            PixelPoint { x: cx - dx, y: cy },
        ),
        Direction::Right => (
            PixelPoint { x: cx - dx, y: cy },
            PixelPoint { x: cx + dx, y: cy },
        ),
    }
}

/// Runs a task's reference solution on the device.
pub async fn run_reference(dev: &SimDevice, task: &SimTask) -> Result<(), DeviceError> {
    run_actions(dev, &task.reference()).await
}
