//! The stale-screen check before acting. A slow model decides on a screen that may have
//! moved since it was read (content that finished loading pushes a list's rows down or
//! up, a banner appears): acting on the old element's bounds would hit whatever is there
//! now. Before a device action whose target is an element id or a selector, when the
//! decision took at least `stale_check_after_ms` (measured from the observation's
//! capture), the runner re-reads the screen, cheapest signal first:
//!
//! 1. one screenshot, its coarse fingerprint (`device::thumb`) against the observation's:
//!    the same picture → act as decided. When nothing changed this costs one `screencap`
//!    (~250 ms under the `pixel-8` profile), never a `uiautomator dump` (~2 s);
//! 2. only when the picture changed (or the observation had none): a fresh observation
//!    (dump and screenshot) and its layout hash against the observed one: the same
//!    layout → act, on the fresh screen;
//! 3. the layout changed: the target is found again on the fresh screen. A selector is
//!    resolved again; an element id is found by the element's recommended selector and
//!    its alternatives (never an index path), else by its kind and label when those are
//!    unique. Found where it was → act; found elsewhere → act there (`moved`); not found
//!    → not acted on (`vanished`): the step is recorded skipped and the next step
//!    decides on the fresh screen.
//!
//! A point target (a vision model's coordinate) is tracked by the smallest element under
//! it on the observed screen, and moved with that element (a point on no element is
//! acted on as decided).
//!
//! A moved or vanished target leaves a `stale_screen` annotation on the step (stored,
//! and published as `step.annotated`). Fast decisions (replays, scripts, a quick model)
//! skip the check: the screen they read was settled a moment before.

use std::time::Duration;

use super::Runner;
use super::observe::Observed;
use super::record::StepDraft;
use crate::device::Device;
use crate::device::thumb::Thumb;
use crate::domain::action::{SwipePath, Target};
use crate::domain::{Action, Annotation, Bounds, PixelPoint, ScreenSize, StaleOutcome};
use crate::screen::{Screen, SelectorIndex};

/// What the check decided.
#[allow(clippy::large_enum_variant)]
pub(super) enum Checked {
    /// Act: the action (its target re-resolved if it moved) on this observation.
    Act(Action, Observed),
    /// The target is gone from this fresh observation: the action does not run.
    Vanished(Observed),
}

impl Runner {
    /// Re-reads the screen before `action` when the decision was slow, and finds its
    /// target again if the screen changed (see the module doc). Any capture that fails
    /// leaves the action as decided: the executor reports what it finds.
    pub(super) async fn stale_check(
        &self,
        device: &dyn Device,
        action: Action,
        obs: &Observed,
        size: ScreenSize,
        draft: &mut StepDraft,
    ) -> Checked {
        let age = obs.taken.elapsed();
        let as_decided = |a: Action| Checked::Act(a, obs.clone());
        if !self.cfg.stale_check || age < Duration::from_millis(self.cfg.stale_check_after_ms) {
            return as_decided(action);
        }
        let Some(target) = target_of(&action).cloned() else {
            return as_decided(action);
        };
        let Some(screen) = obs.screen.as_deref() else {
            return as_decided(action);
        };
        let point = self.point_of(&target, size);
        let Some((before, tracked)) = tracked(screen, &target, point) else {
            return as_decided(action);
        };
        if same_picture(device, obs).await {
            return as_decided(action);
        }
        let Ok(fresh) = self.observe(device, size).await else {
            return as_decided(action);
        };
        if fresh.layout == obs.layout {
            return Checked::Act(action, fresh);
        }
        let Some(now) = fresh.screen.as_deref() else {
            return as_decided(action);
        };
        let found = refind(screen, now, &tracked);
        if matches!(&found, Some((b, t)) if *b == before && *t == tracked) {
            return Checked::Act(action, fresh);
        }
        let (outcome, after, new) = match (&found, point) {
            (Some((b, _)), Some(p)) => (
                StaleOutcome::Moved,
                Some(*b),
                Some(shifted(p, before, *b, size)),
            ),
            (Some((b, t)), None) => (StaleOutcome::Moved, Some(*b), Some(t.clone())),
            (None, _) => (StaleOutcome::Vanished, None, None),
        };
        tracing::info!(task = %draft.step.task_id, step = draft.step.n, ?outcome, "the screen changed before acting");
        draft.step.annotations.push(Annotation::StaleScreen {
            outcome,
            target: describe(&target),
            before,
            after,
            now: match &new {
                Some(Target::Element(id)) => Some(*id),
                _ => None,
            },
            age_ms: age.as_millis() as u64,
        });
        match new {
            Some(t) => Checked::Act(with_target(action, t), fresh),
            None => Checked::Vanished(fresh),
        }
    }
}

impl Runner {
    /// A point target in pixels (a coordinate goes through the runner's transform).
    fn point_of(&self, t: &Target, size: ScreenSize) -> Option<PixelPoint> {
        match t {
            Target::Coordinate(p) => Some(self.transform.to_pixel(*p, size)),
            Target::Pixel([x, y]) => Some(PixelPoint {
                x: i32::try_from(*x).ok()?,
                y: i32::try_from(*y).ok()?,
            }),
            Target::Element(_) | Target::Selector(_) => None,
        }
    }
}

/// The target's bounds on the observed screen and what to look for on the fresh one:
/// an element or selector itself; for a point, the smallest element under it (a point
/// on no element is not tracked).
fn tracked(
    screen: &Screen,
    target: &Target,
    point: Option<PixelPoint>,
) -> Option<(Bounds, Target)> {
    let Some(p) = point else {
        return screen.resolve(target).ok().map(|b| (b, target.clone()));
    };
    let under = screen
        .elements
        .elements
        .iter()
        .filter(|e| e.bounds.contains(p))
        .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()))?;
    Some((under.bounds, Target::Element(under.id)))
}

/// A point moved with the element it was on, kept on the screen.
fn shifted(p: PixelPoint, before: Bounds, after: Bounds, size: ScreenSize) -> Target {
    let (b, a) = (before.center(), after.center());
    let clamp = |v: i32, max: u32| v.clamp(0, i32::try_from(max).unwrap_or(i32::MAX) - 1) as u32;
    Target::Pixel([
        clamp(p.x + a.x - b.x, size.width),
        clamp(p.y + a.y - b.y, size.height),
    ])
}

/// Whether a screenshot taken now shows what the observation's did. False when either
/// picture is missing (a secure window, a failed capture): the tree decides then.
async fn same_picture(device: &dyn Device, obs: &Observed) -> bool {
    let Some(png) = &obs.png else {
        return false;
    };
    let Some(old) = obs.thumb.get_or_init(|| Thumb::of_png(png)).as_ref() else {
        return false;
    };
    match device.screenshot().await {
        Ok(shot) => Thumb::of(&shot).is_some_and(|t| t.same(old)),
        Err(_) => false,
    }
}

/// The target's bounds on the fresh screen, and the target to act on there: a selector
/// as it is; an element by its selectors (no index path), else by its kind and label.
fn refind(old: &Screen, now: &Screen, target: &Target) -> Option<(Bounds, Target)> {
    match target {
        Target::Selector(_) => now.resolve(target).ok().map(|b| (b, target.clone())),
        Target::Element(id) => {
            let el = old.elements.get(*id)?;
            let (primary, alternatives) = SelectorIndex::new(&old.tree).recommend(el.node);
            let by_selector = std::iter::once(primary)
                .chain(alternatives)
                .filter(|s| !s.is_index_based())
                .find_map(|s| match now.find(&s).nodes.as_slice() {
                    [node] => now.elements.for_node(*node),
                    _ => None,
                });
            let found = by_selector.or_else(|| {
                let mut same =
                    now.elements.elements.iter().filter(|e| {
                        !el.label.is_empty() && e.kind == el.kind && e.label == el.label
                    });
                match (same.next(), same.next()) {
                    (Some(e), None) => Some(e),
                    _ => None,
                }
            })?;
            Some((found.bounds, Target::Element(found.id)))
        }
        Target::Coordinate(_) | Target::Pixel(_) => None,
    }
}

/// The element or selector target of an action, if it has one.
fn target_of(a: &Action) -> Option<&Target> {
    let t = match a {
        Action::Tap { target }
        | Action::LongPress { target, .. }
        | Action::DoubleTap { target } => target,
        Action::Type {
            target: Some(t), ..
        }
        | Action::Clear { target: Some(t) }
        | Action::Scroll {
            container: Some(t), ..
        }
        | Action::Swipe {
            path: SwipePath::Direction {
                target: Some(t), ..
            },
            ..
        } => t,
        _ => return None,
    };
    Some(&t.0)
}

/// `a` with its target replaced.
fn with_target(mut a: Action, new: Target) -> Action {
    let slot = match &mut a {
        Action::Tap { target }
        | Action::LongPress { target, .. }
        | Action::DoubleTap { target } => Some(target),
        Action::Type {
            target: Some(t), ..
        }
        | Action::Clear { target: Some(t) }
        | Action::Scroll {
            container: Some(t), ..
        }
        | Action::Swipe {
            path: SwipePath::Direction {
                target: Some(t), ..
            },
            ..
        } => Some(t),
        _ => None,
    };
    if let Some(t) = slot {
        t.0 = new;
    }
    a
}

/// The target as the annotation names it.
fn describe(t: &Target) -> String {
    match t {
        Target::Element(id) => format!("element {id}"),
        Target::Selector(s) => format!("selector {s}"),
        Target::Coordinate(p) => format!("coordinate [{:.3}, {:.3}]", p.x(), p.y()),
        Target::Pixel([x, y]) => format!("pixel [{x}, {y}]"),
    }
}
