//! Recording a script from a finished task: its successful steps become script steps.
//!
//! - A coordinate (or pixel, or element id) becomes the selector of the smallest element
//!   of the screen recorded at that step that contains the point, with that element's
//!   alternatives; a selector the agent used keeps the alternatives the element had.
//! - `expect` comes from the next step's screen: the app when it changed; for a `type`,
//!   the typed text; otherwise an element (by `#id` first) that appeared; otherwise a
//!   label that went away. A step with none of these is replayed unverified (the run's
//!   finish message counts them).
//! - An element with no locator of its own (its recommended selector is an index path:
//!   every row has the same `#title`) gets a `witness`: its row's unique texts, which a
//!   replay must find in the row it acts on.
//! - A step on an element keeps the structure of the screen it acted on (`layout`: each
//!   element's class at its index path, hashed, no words), which a translated or
//!   reworded screen keeps: replay finds the element at its index path there when none
//!   of its recorded words is anywhere else, and checks an `expect` by the next step's.
//! - Failed, rejected and skipped steps are left out, and so are undone pairs: a step
//!   followed by `back` that returned to the screen it started from.
//! - A `type` with no target after a tap on a text field types into that field (its
//!   selector), so a replay refocuses it when a pop-up took the focus away.
//! - A sideways swipe on an element (a slider's drag) becomes a drag on it, by its
//!   selector, with points relative to its bounds; other swipes keep screen points. A
//!   tap on a slider or rating bar keeps its point within the element (`at`).
//! - `wait` is dropped (replay waits for each target by change detection); `finish`,
//!   `ask_user` and `mcp_call` are not device steps.
//! - Text typed into a password field was recorded as `••••`; it becomes an input
//!   (`${password}`, `${password_2}`, …) declared without a default, so the secret is
//!   given at run time and never stored.
//! - A custom action (the operator's, or one droidpilot registers) becomes a `custom`
//!   step with its arguments as params; a secret parameter (recorded as `••••`) becomes
//!   a secret input named after it, and the hash of the definition it ran with is kept.

use std::collections::BTreeMap;

use serde_json::Value;

use super::custom::CustomCall;
use super::model::{Expect, Input, Script, ScriptStep, StepAction};
use crate::domain::{Action, Step, StepStatus};
use crate::screen::{ActionableElement, REDACTED};

/// The screen a step acted on, as its record keeps it.
#[derive(Debug, Clone, Default)]
struct SeenScreen {
    app: Option<String>,
    layout_hash: Option<String>,
    size: Option<[f64; 2]>,
    elements: Vec<ActionableElement>,
}

impl SeenScreen {
    fn of(step: &Step) -> Self {
        let Some(s) = &step.screen else {
            return Self::default();
        };
        Self {
            app: s.app.clone(),
            layout_hash: s.layout_hash.clone(),
            size: s.size.map(|[w, h]| [w as f64, h as f64]),
            elements: s.elements.clone(),
        }
    }

    /// The smallest element whose bounds contain the pixel point.
    fn at(&self, x: f64, y: f64) -> Option<&ActionableElement> {
        self.elements
            .iter()
            .filter(|e| {
                let b = e.bounds;
                (b.left as f64) <= x
                    && x < b.right as f64
                    && (b.top as f64) <= y
                    && y < b.bottom as f64
            })
            .min_by_key(|e| {
                let b = e.bounds;
                (b.right - b.left) as i64 * (b.bottom - b.top) as i64
            })
    }

    /// How many elements list `sel` among their selectors.
    fn count(&self, sel: &str) -> usize {
        self.elements
            .iter()
            .filter(|e| e.selector == sel || e.alternative_selectors.iter().any(|a| a == sel))
            .count()
    }

    /// The screen's structure (`layout`): each element's class at its index path.
    fn layout(&self) -> Option<String> {
        layout_of(&self.elements)
    }

    fn by_selector(&self, sel: &str) -> Option<&ActionableElement> {
        self.elements
            .iter()
            .find(|e| e.selector == sel || e.alternative_selectors.iter().any(|a| a == sel))
    }
}

/// The structure (`layout`) of a screen as a step's record keeps it: each actionable
/// element's class at its index path (every element lists its path among its
/// selectors). None for a screen with no elements.
pub fn layout_of(elements: &[ActionableElement]) -> Option<String> {
    let paths: Vec<(&str, String)> = elements
        .iter()
        .filter_map(|e| {
            std::iter::once(&e.selector)
                .chain(&e.alternative_selectors)
                .find_map(|s| match crate::screen::Selector::parse(s) {
                    Ok(crate::screen::Selector::Path(p)) => Some(path_string(&p)),
                    _ => None,
                })
                .map(|p| (e.kind.as_str(), p))
        })
        .collect();
    (!paths.is_empty()).then(|| layout(paths))
}

fn path_string(p: &[u32]) -> String {
    p.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// The structure of a screen as `ScriptStep::layout` keeps it: its actionable elements'
/// classes at their index paths (`Switch@0.0.1.0.2`), no text, no id, no bounds, as a
/// hex FNV-1a hash (stable across processes and Rust versions, so it can be stored). A
/// translated or reworded screen keeps it; a row added, removed or moved, or a widget
/// of another kind, changes it. The replay computes the same from the live screen.
pub fn layout<K: AsRef<str>, P: AsRef<str>>(elements: impl IntoIterator<Item = (K, P)>) -> String {
    let mut items: Vec<String> = elements
        .into_iter()
        .map(|(k, p)| format!("{}@{}", k.as_ref(), p.as_ref()))
        .collect();
    items.sort();
    items.dedup();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in items.join("\n").bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Why a task cannot be recorded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

/// Turns a task's steps into a script named after its instruction.
pub fn from_steps(instruction: &str, steps: &[Step]) -> Result<Script, RecordError> {
    let kept = kept_steps(steps);
    let mut out = Vec::new();
    let mut inputs = std::collections::BTreeMap::new();
    // The text field the previous step tapped: where a following `type` without a target
    // typed (a pop-up may take the focus away before a replay types).
    let mut field: Option<(String, Vec<String>)> = None;
    for (k, &i) in kept.iter().enumerate() {
        let seen = SeenScreen::of(&steps[i]);
        let step = match &steps[i].action {
            Some(Action::Custom(c)) => Some(custom_step(c, &steps[i], &mut inputs)),
            _ => to_step(action_json(&steps[i]).as_ref(), &seen),
        };
        let Some(mut step) = step else {
            continue;
        };
        if step.action == StepAction::Type
            && step.selector.is_none()
            && let Some((sel, alts)) = field.take()
        {
            step.selector = Some(sel);
            step.alternative_selectors = alts;
        }
        field = tapped_field(&step, &seen);
        if step.parameters.text.as_deref() == Some(REDACTED) {
            let name = secret_input(&mut inputs, "password");
            step.parameters.text = Some(format!("${{{name}}}"));
        }
        let next = kept
            .get(k + 1)
            .map(|&j| &steps[j])
            .or_else(|| steps.get(i + 1));
        if let Some(next) = next {
            step.expect = expect(&step, &seen, &SeenScreen::of(next));
        }
        out.push(step);
    }
    if out.is_empty() {
        return Err(RecordError(
            "the task has no successful device steps to record".into(),
        ));
    }
    let app = out
        .iter()
        .find(|s| s.action == StepAction::LaunchApp)
        .and_then(|s| s.parameters.package.clone());
    let script = Script {
        name: instruction.chars().take(80).collect(),
        goal: instruction.to_string(),
        app,
        inputs,
        steps: out,
        outputs: Vec::new(),
        summary: None,
        fuzzy: true,
        max_recovery_attempts: super::model::DEFAULT_MAX_RECOVERY_ATTEMPTS,
        maestro: None,
    };
    script
        .validate()
        .map_err(|e| RecordError(format!("the recorded script is not valid: {e}")))?;
    Ok(script)
}

/// A free input named `base` (`base_2`, `base_3`, … when taken), declared secret: a
/// value recorded as `••••` is given at run time and never stored.
fn secret_input(inputs: &mut BTreeMap<String, Input>, base: &str) -> String {
    let name = std::iter::once(base.to_string())
        .chain((2..).map(|n| format!("{base}_{n}")))
        .find(|n| !inputs.contains_key(n))
        .unwrap_or_else(|| base.to_string());
    inputs.insert(name.clone(), Input::secret());
    name
}

/// A custom action the task ran, as a `custom` step: its arguments as params, each
/// secret one (recorded as `••••`) a secret input of its own, and the hash of the
/// definition it ran with (`detail.definition`).
fn custom_step(
    c: &crate::domain::action::CustomAction,
    step: &Step,
    inputs: &mut BTreeMap<String, Input>,
) -> ScriptStep {
    let mut params = BTreeMap::new();
    for (k, v) in &c.args {
        let value = match v.as_str() {
            Some(REDACTED) => format!("${{{}}}", secret_input(inputs, k)),
            Some(s) => s.to_string(),
            None => v.to_string(),
        };
        params.insert(k.clone(), value);
    }
    let definition = (step.outcome.detail.as_ref())
        .and_then(|d| d.get("definition"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut out = ScriptStep::new(StepAction::Custom, None);
    out.custom = Some(CustomCall {
        name: c.name.clone(),
        params,
        definition,
    });
    out
}

/// The text field a tap step tapped, by its selector and alternatives.
fn tapped_field(step: &ScriptStep, seen: &SeenScreen) -> Option<(String, Vec<String>)> {
    let sel = step
        .selector
        .as_ref()
        .filter(|_| step.action == StepAction::Tap)?;
    let e = seen.by_selector(sel)?;
    e.actions
        .contains(&crate::domain::ElementAction::SetText)
        .then(|| (sel.clone(), step.alternative_selectors.clone()))
}

/// Indexes of the steps that worked and were not undone.
fn kept_steps(steps: &[Step]) -> Vec<usize> {
    let ok: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].outcome.status == StepStatus::Ok && steps[i].action.is_some())
        .collect();
    let mut kept = Vec::new();
    let mut k = 0;
    while k < ok.len() {
        let i = ok[k];
        let undone = ok.get(k + 1).is_some_and(|&j| {
            is_back(action_json(&steps[j]).as_ref())
                && steps.get(j + 1).is_some_and(|after| {
                    let (a, b) = (SeenScreen::of(&steps[i]), SeenScreen::of(after));
                    a.layout_hash.is_some() && a.layout_hash == b.layout_hash
                })
                && !is_back(action_json(&steps[i]).as_ref())
        });
        if undone {
            k += 2;
        } else {
            kept.push(i);
            k += 1;
        }
    }
    kept
}

/// A step's action in its wire form, which the conversions below read.
fn action_json(step: &Step) -> Option<Value> {
    step.action
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
}

fn is_back(a: Option<&Value>) -> bool {
    a.is_some_and(|a| a["action"] == "back" || (a["action"] == "key" && a["key"] == "back"))
}

/// A primitive action (its JSON, as a custom action's step) as a script step with no
/// screen behind it: its selector as written. None for what is not a device step.
pub fn primitive_step(action: &Value) -> Option<ScriptStep> {
    to_step(Some(action), &SeenScreen::default())
}

/// One step's action as a script step; None for what is not a device step.
fn to_step(action: Option<&Value>, seen: &SeenScreen) -> Option<ScriptStep> {
    let a = action?;
    let name = a.get("action")?.as_str()?;
    let kind = match name {
        "tap" => StepAction::Tap,
        "long_press" => StepAction::LongPress,
        "double_tap" => StepAction::DoubleTap,
        "type" => StepAction::Type,
        "clear" => StepAction::Clear,
        "scroll" => StepAction::Scroll,
        "swipe" => StepAction::Swipe,
        "key" | "back" | "home" | "recents" | "enter" | "menu" | "power" => StepAction::Key,
        "launch_app" => StepAction::LaunchApp,
        "open_url" => StepAction::OpenUrl,
        "wait_for" => StepAction::WaitFor,
        "wait_for_gone" => StepAction::WaitForGone,
        _ => return None,
    };
    let mut step = ScriptStep::new(kind, None);
    let p = &mut step.parameters;
    let s = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_string);
    match kind {
        StepAction::Key => {
            p.key = crate::domain::Key::parse(&s("key").unwrap_or_else(|| name.to_string()))
        }
        StepAction::LaunchApp => (p.package, p.label) = (s("package"), s("label")),
        StepAction::OpenUrl => p.url = s("url"),
        StepAction::Type => (p.text, p.clear_first) = (s("text"), a["clear_first"] == true),
        StepAction::Scroll | StepAction::Swipe => {
            p.direction = a
                .get("direction")
                .and_then(|d| serde_json::from_value(d.clone()).ok())
        }
        StepAction::WaitFor | StepAction::WaitForGone => {
            p.timeout_ms = a.get("timeout_ms").and_then(Value::as_u64)
        }
        _ => {}
    }
    if kind == StepAction::Swipe && p.direction.is_none() {
        p.start = point(a.get("start"));
        p.end = point(a.get("end"));
    }
    if kind == StepAction::LongPress {
        p.duration_ms = a.get("duration_ms").and_then(Value::as_u64);
    }
    target(a, seen, &mut step);
    Some(step)
}

fn point(v: Option<&Value>) -> Option<[f64; 2]> {
    let v = v?;
    Some([v.get(0)?.as_f64()?, v.get(1)?.as_f64()?])
}

/// Sets the step's selector and alternatives from whatever the action aimed at.
fn target(a: &Value, seen: &SeenScreen, step: &mut ScriptStep) {
    let element = if let Some(sel) = a.get("selector").and_then(Value::as_str) {
        step.selector = Some(sel.to_string());
        seen.by_selector(sel)
    } else if let Some(id) = a.get("element").and_then(Value::as_u64) {
        seen.elements.iter().find(|e| e.element_id as u64 == id)
    } else if let Some(c) = point(a.get("coordinate")) {
        step.parameters.coordinate = Some(c);
        seen.size.and_then(|[w, h]| seen.at(c[0] * w, c[1] * h))
    } else if let Some(px) = point(a.get("pixel")) {
        if let Some([w, h]) = seen.size {
            step.parameters.coordinate = Some([px[0] / w, px[1] / h]);
        }
        seen.at(px[0], px[1])
    } else if step.action == StepAction::Swipe {
        return drag(seen, step);
    } else {
        None
    };
    let Some(e) = element else { return };
    at_within(e, seen, step);
    step.witness = witness(e, seen);
    if step.action != StepAction::Scroll {
        step.layout = seen.layout();
    }
    let primary = step.selector.clone().unwrap_or_else(|| e.selector.clone());
    step.alternative_selectors = std::iter::once(&e.selector)
        .chain(&e.alternative_selectors)
        .filter(|s| **s != primary)
        .cloned()
        .collect();
    step.selector = Some(primary);
    if step.action == StepAction::Scroll {
        // A scroll's selector names its container; the screen's main one is fine too.
        step.alternative_selectors.clear();
    }
}

/// Whether where a touch lands inside the element is what it does: a slider's level, a
/// rating's star (Android's `SeekBar` family and Material's `Slider`).
fn touched_at_a_point(kind: &str) -> bool {
    ["SeekBar", "Slider", "RatingBar"]
        .iter()
        .any(|k| kind.ends_with(k))
}

/// A tap, long press or double tap on such an element keeps its point as fractions of the
/// element's bounds (`parameters.at`), so the replay touches the same level wherever the
/// element is; the element's centre would set another.
fn at_within(e: &ActionableElement, seen: &SeenScreen, step: &mut ScriptStep) {
    let touch = matches!(
        step.action,
        StepAction::Tap | StepAction::LongPress | StepAction::DoubleTap
    );
    let (Some(c), Some([w, h])) = (step.parameters.coordinate, seen.size) else {
        return;
    };
    let b = e.bounds;
    let (bw, bh) = (b.width() as f64, b.height() as f64);
    if !touch || !touched_at_a_point(&e.kind) || bw <= 0.0 || bh <= 0.0 {
        return;
    }
    step.parameters.at = Some([
        ((c[0] * w - b.left as f64) / bw).clamp(0.0, 1.0),
        ((c[1] * h - b.top as f64) / bh).clamp(0.0, 1.0),
    ]);
}

/// A sideways swipe that starts on an element and ends level with it (a slider's drag)
/// becomes a drag on that element: its selector, and the points as fractions of its
/// bounds (clamped to them), so the replay drags it wherever it moved. Other swipes
/// (a list's scroll, a page's swipe) keep their screen points.
fn drag(seen: &SeenScreen, step: &mut ScriptStep) {
    let p = &step.parameters;
    let (Some(s), Some(e), Some([w, h])) = (p.start, p.end, seen.size) else {
        return;
    };
    let Some(el) = seen.at(s[0] * w, s[1] * h) else {
        return;
    };
    let b = el.bounds;
    let (bw, bh) = (b.width() as f64, b.height() as f64);
    let (dx, dy) = ((e[0] - s[0]) * w, (e[1] - s[1]) * h);
    let level = (b.top as f64) <= e[1] * h && e[1] * h < b.bottom as f64;
    if bw <= 0.0 || bh <= 0.0 || dx.abs() < dy.abs() || !level {
        return;
    }
    let rel = |q: [f64; 2]| {
        [
            ((q[0] * w - b.left as f64) / bw).clamp(0.0, 1.0),
            ((q[1] * h - b.top as f64) / bh).clamp(0.0, 1.0),
        ]
    };
    step.parameters.start = Some(rel(s));
    step.parameters.end = Some(rel(e));
    step.selector = Some(el.selector.clone());
    step.alternative_selectors = el.alternative_selectors.clone();
}

/// What the next screen shows that tells the step worked: the app when it changed;
/// for a `type`, the typed text in a field; else an element that appeared (by the
/// selector an update is least likely to break); else a label that went away (a deleted
/// row's). None when nothing tells (the step is then unverified at replay).
fn expect(step: &ScriptStep, before: &SeenScreen, after: &SeenScreen) -> Option<Expect> {
    if after.app.is_some() && after.app != before.app {
        return Some(Expect {
            app: after.app.clone(),
            ..Default::default()
        });
    }
    if let Some(sel) = typed(step, before, after) {
        return Some(Expect {
            visible: vec![sel],
            ..Default::default()
        });
    }
    let new = after
        .elements
        .iter()
        .filter(|e| before.by_selector(&e.selector).is_none())
        .filter_map(|e| durable(e, before).map(|(rank, sel)| (rank, e.bounds.top, sel)))
        .min_by_key(|(rank, top, _)| (*rank, *top));
    if let Some((_, _, sel)) = new {
        return Some(Expect {
            visible: vec![sel],
            ..Default::default()
        });
    }
    gone(step, before, after).map(|sel| Expect {
        gone: vec![sel],
        ..Default::default()
    })
}

/// A `type` step's text, shown in a field on the next screen, as `:text("…")` (not for
/// a secret, nor for text that was already on screen).
fn typed(step: &ScriptStep, before: &SeenScreen, after: &SeenScreen) -> Option<String> {
    let text = step.parameters.text.as_ref()?;
    if step.action != StepAction::Type || text == REDACTED || text.contains("${") {
        return None;
    }
    let sel = crate::screen::Selector::Text {
        class: None,
        text: text.clone(),
    }
    .to_string();
    (after.by_selector(&sel).is_some() && before.by_selector(&sel).is_none()).then_some(sel)
}

/// A label (`:text`, `:desc`, or an anchored one) of an element the step made go away,
/// which nothing on the next screen still matches: the acted-on element's own first (a
/// deleted row's), then any other.
fn gone(step: &ScriptStep, before: &SeenScreen, after: &SeenScreen) -> Option<String> {
    let acted = step.selector.as_deref().and_then(|s| before.by_selector(s));
    acted
        .into_iter()
        .chain(&before.elements)
        .flat_map(|e| std::iter::once(&e.selector).chain(&e.alternative_selectors))
        .filter(|s| {
            matches!(
                crate::screen::Selector::parse(s),
                Ok(crate::screen::Selector::Text { .. }
                    | crate::screen::Selector::Desc { .. }
                    | crate::screen::Selector::Near { .. })
            )
        })
        .filter(|s| !s.contains(REDACTED))
        .find(|s| after.by_selector(s).is_none() && before.count(s) == 1)
        .cloned()
}

/// Texts that tell an element with no locator of its own (its recommended selector is an
/// index path) apart from the others that share its locators: the anchors of its
/// anchored selectors, its own unique labels, and the unique labels of the elements
/// beside it in its row. Empty for an element with a locator of its own.
fn witness(e: &ActionableElement, seen: &SeenScreen) -> Vec<String> {
    use crate::screen::Selector;
    if !Selector::parse(&e.selector).is_ok_and(|s| s.is_index_based()) {
        return Vec::new();
    }
    let label = |s: &Selector| match s {
        Selector::Text { text, .. } => Some(text.clone()),
        Selector::Desc { desc, .. } => Some(desc.clone()),
        _ => None,
    };
    let mut out: Vec<String> = Vec::new();
    for a in &e.alternative_selectors {
        match Selector::parse(a) {
            Ok(Selector::Near { anchor, .. }) => out.extend(label(&anchor)),
            Ok(s @ (Selector::Text { .. } | Selector::Desc { .. })) if seen.count(a) == 1 => {
                out.extend(label(&s))
            }
            _ => {}
        }
    }
    let b = e.bounds;
    let beside = seen.elements.iter().filter(|o| {
        let mid = (o.bounds.top + o.bounds.bottom) / 2;
        b.top <= mid && mid < b.bottom && o.bounds.height() <= b.height() * 2
    });
    for o in beside {
        let text = o.text.trim();
        let unique = seen
            .elements
            .iter()
            .filter(|x| x.text.trim() == text)
            .count()
            == 1;
        if !text.is_empty() && text != REDACTED && unique {
            out.push(text.to_string());
        }
    }
    out.dedup();
    out.retain(|t| !t.is_empty());
    let mut seen_t = std::collections::BTreeSet::new();
    out.retain(|t| seen_t.insert(t.clone()));
    out.truncate(4);
    out
}

/// The selector of `e` most likely to survive an app update, for an `expect`, with its
/// rank (lower is better): structure first, the `#id` (a translated or reworded UI keeps
/// it, and a renamed one is still found by the element matcher), then the label of an
/// element that is not a button (a field's hint, a row's name), then a button's label,
/// then a list container's id (there before its rows have loaded). Index paths are never used (a moved or reordered layout breaks
/// them), and neither is a class alone or a neighbour-anchored form; nor a selector that
/// the screen before the step already matched (a note's title is in the editor and in
/// the list: it would hold before the step did anything).
fn durable(e: &ActionableElement, before: &SeenScreen) -> Option<(u8, String)> {
    let button = e.kind.ends_with("Button");
    // A list's container is there before its rows are: its id says nothing loaded.
    let container = e.actions == [crate::domain::ElementAction::Scroll];
    std::iter::once(&e.selector)
        .chain(&e.alternative_selectors)
        .filter(|s| before.by_selector(s).is_none())
        .filter_map(|s| {
            let rank = match crate::screen::Selector::parse(s).ok()? {
                crate::screen::Selector::Id(_) if container => 3,
                crate::screen::Selector::Id(_) => 0,
                crate::screen::Selector::Text { .. } | crate::screen::Selector::Desc { .. }
                    if !button =>
                {
                    1
                }
                crate::screen::Selector::Text { .. } | crate::screen::Selector::Desc { .. } => 2,
                _ => return None,
            };
            Some((rank, s.clone()))
        })
        .min_by_key(|(rank, _)| *rank)
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
