//! The split-screen agent (`"kind": "split"`, seed 002's `SplitScreenCoordinator` and
//! `WindowAgentLoop`): two apps side by side, one agent loop per window.
//!
//! Its first step is the `split_screen` custom action (`run::split_screen`), which puts
//! `windows[0]`'s app above `windows[1]`'s. Then the two windows take turns, one action a
//! step, inside the task's one runner, so both loops share the phone's lease, its step
//! budget and its record. Each window's agent sees its own goal and app, the other
//! window's answer once it finished, its own history (the steps it took, not the other
//! window's) and the actionable elements inside its window. Its action is checked against
//! its window's bounds on the screen it decided on: a point outside it (a coordinate, an
//! element, a selector's match) is refused, a rejected step naming the window, and the
//! window is told; a scroll or swipe with no target is made a swipe inside the window;
//! a key or untargeted typing first taps the window to give it the focus, as a person
//! would; `scroll_to_find` searches inside the window (`within` its bounds), and any
//! other custom action is refused, as nothing keeps it inside one window. Each step carries a `window` annotation. A window that finishes is done; the
//! task finishes when both have, succeeded when both did, with both answers.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::context::{AgentContext, History, StepRecord};
use super::spec::{AgentDefaults, AgentKind, AgentSpec, SpecError, build_recording_agent};
use super::{Agent, AgentError, Decision, ParseError};
use crate::device::scroll_find::swipe_within;
use crate::domain::action::{CustomAction, SwipePath, TargetField};
use crate::domain::{Action, Annotation, Bounds, Direction, NormPoint, PixelPoint, Target};
use crate::run::{scroll_find, split_screen};
use serde_json::json;

/// One window of a split-screen task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// The app in this window: its label (`Messages`) or package.
    pub app: String,
    /// What this window's agent should do there.
    pub goal: String,
    /// Who decides in this window (any kind but `split`); the server's default agent
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub agent: Option<Box<AgentSpec>>,
}

const HALVES: [&str; 2] = ["top", "bottom"];

/// The rules of a split spec: two windows, two different apps, a goal each, and
/// window agents that are valid and not split themselves.
pub(super) fn validate_split(spec: &AgentSpec, defaults: &AgentDefaults) -> Result<(), SpecError> {
    let windows = spec.windows.as_deref().ok_or_else(|| {
        SpecError::new(
            "windows",
            "a split agent needs its two windows, e.g. [{\"app\": \"Messages\", \"goal\": \"…\"}, {\"app\": \"Notes\", \"goal\": \"…\"}]",
        )
    })?;
    if windows.len() != 2 {
        return Err(SpecError::new(
            "windows",
            format!(
                "split-screen has two windows (top, bottom), got {}",
                windows.len()
            ),
        ));
    }
    for (i, w) in windows.iter().enumerate() {
        for (field, v) in [("app", &w.app), ("goal", &w.goal)] {
            if v.trim().is_empty() {
                return Err(SpecError::new(
                    format!("windows[{i}].{field}"),
                    "must not be empty",
                ));
            }
        }
        if let Some(a) = &w.agent {
            let at = format!("windows[{i}].agent");
            if a.validate(defaults).map_err(|e| e.nested(&at))? == AgentKind::Split {
                return Err(SpecError::new(
                    format!("{at}.kind"),
                    "a window's agent cannot be a split agent",
                ));
            }
        }
    }
    if windows[0]
        .app
        .trim()
        .eq_ignore_ascii_case(windows[1].app.trim())
    {
        return Err(SpecError::new(
            "windows[1].app",
            "names the same app as windows[0]; split-screen shows two different apps",
        ));
    }
    Ok(())
}

/// The window agents' specs: each one's own, else the server's default agent.
pub(super) fn window_agents(spec: &AgentSpec) -> impl Iterator<Item = AgentSpec> + '_ {
    spec.windows
        .iter()
        .flatten()
        .map(|w| w.agent.as_deref().cloned().unwrap_or_default())
}

/// The first key a window's agent lacks.
pub(super) fn missing_key(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<crate::llm::LlmError> {
    window_agents(spec).find_map(|a| defaults.missing_key(&a, env))
}

pub(super) fn build_split(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<Box<dyn Agent>, AgentError> {
    let mut windows = Vec::with_capacity(2);
    for (w, a) in spec.windows.iter().flatten().zip(window_agents(spec)) {
        let agent = build_recording_agent(&a, defaults, None)?;
        windows.push(Window::new(w.app.trim(), w.goal.trim(), agent));
    }
    let [top, bottom]: [Window; 2] = windows
        .try_into()
        .map_err(|_| SpecError::new("windows", "split-screen has two windows"))?;
    Ok(Box::new(SplitAgent::new(top, bottom)))
}

/// One window's loop.
pub struct Window {
    app: String,
    goal: String,
    agent: Box<dyn Agent>,
    history: History,
    /// `Some(success)` once its agent finished.
    done: Option<bool>,
    answer: Option<String>,
}

impl Window {
    pub fn new(app: &str, goal: &str, agent: Box<dyn Agent>) -> Self {
        Self {
            app: app.to_string(),
            goal: goal.to_string(),
            agent,
            history: History::new(8),
            done: None,
            answer: None,
        }
    }
}

/// The split-screen agent: two window loops taking turns.
pub struct SplitAgent {
    windows: [Window; 2],
    started: bool,
    /// The window whose turn is next.
    turn: usize,
    /// The window the last touch was in (the focused one); the top one at the start.
    focused: usize,
    /// The window the last step was for, whose record goes into its history.
    last: Option<usize>,
    /// A window's decision held back for one step while a tap gives it the focus.
    pending: Option<(usize, Decision)>,
}

impl SplitAgent {
    pub fn new(top: Window, bottom: Window) -> Self {
        Self {
            windows: [top, bottom],
            started: false,
            turn: 0,
            focused: 0,
            last: None,
            pending: None,
        }
    }

    fn note(&self, w: usize, event: &str, detail: Option<String>) -> Annotation {
        Annotation::Window {
            window: HALVES[w].into(),
            app: self.windows[w].app.clone(),
            event: event.into(),
            detail,
        }
    }

    /// The last committed step goes into the history of the window it was for.
    fn remember(&mut self, ctx: &AgentContext) {
        let Some(w) = self.last.take() else { return };
        if let Some(r) = ctx.history.steps().last() {
            self.windows[w].history.push_step(r.clone());
        }
    }

    /// The first step: both apps on screen.
    fn start(&mut self) -> Decision {
        self.started = true;
        let action = Action::Custom(CustomAction {
            name: split_screen::NAME.into(),
            args: split_screen::args(&self.windows[0].app, &self.windows[1].app),
        });
        let mut d = Decision::local(action);
        d.annotations.push(Annotation::Window {
            window: "both".into(),
            app: format!("{} | {}", self.windows[0].app, self.windows[1].app),
            event: "split".into(),
            detail: None,
        });
        d
    }

    /// The task's end: both windows finished.
    fn finish(&self) -> Action {
        let ok = self.windows.iter().all(|w| w.done == Some(true));
        let answers: Vec<String> = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| {
                format!(
                    "{} ({}): {}",
                    HALVES[i],
                    w.app,
                    w.answer.as_deref().unwrap_or(if w.done == Some(true) {
                        "done"
                    } else {
                        "gave up"
                    })
                )
            })
            .collect();
        Action::Finish {
            success: ok,
            reason: (!ok).then(|| "a window's agent did not succeed".into()),
            answer: Some(answers.join("; ")),
        }
    }

    /// The context a window's agent decides on.
    fn window_ctx(&self, w: usize, ctx: &AgentContext, bounds: Option<Bounds>) -> AgentContext {
        let me = &self.windows[w];
        let other = &self.windows[1 - w];
        let mut c = ctx.clone();
        let place = bounds
            .map(|b| format!(" (pixels [{},{}][{},{}])", b.left, b.top, b.right, b.bottom))
            .unwrap_or_default();
        c.instruction = format!(
            "{goal}\n(The phone is in split-screen: you work in the {half} window{place}, which shows {app}; the {other_half} window shows {other_app} and has its own agent. Act only inside your window. Task of both: {task})",
            goal = me.goal,
            half = HALVES[w],
            app = me.app,
            other_half = HALVES[1 - w],
            other_app = other.app,
            task = ctx.instruction,
        );
        if let Some(a) = &other.answer {
            let shared = format!("The {} window ({}) found: {a}", HALVES[1 - w], other.app);
            c.guidance = Some(match &ctx.guidance {
                Some(g) => format!("{g}\n\n{shared}"),
                None => shared,
            });
        }
        c.history = me.history.clone();
        if let Some(b) = bounds {
            c.observation
                .screen
                .actionable_elements
                .retain(|e| b.contains(e.bounds.center()));
        }
        c
    }

    /// Where window `w` lies on the screen the decision is made on: its app's window in
    /// the dump.
    fn bounds(&self, w: usize, ctx: &AgentContext) -> Option<Bounds> {
        let tree = &ctx.observation.tree.as_ref()?.tree;
        let app = self.windows[w].app.to_lowercase();
        let package = ctx_package(ctx, &app);
        tree.roots
            .iter()
            .map(|&r| &tree.nodes[r])
            .find(|n| Some(n.package.as_str()) == package.as_deref() || n.package == app)
            .map(|n| n.bounds)
    }
}

/// The package of the app the task named by label, from the device's installed apps
/// (`label (package)`), when the label is there.
fn ctx_package(ctx: &AgentContext, app_lower: &str) -> Option<String> {
    ctx.device.installed_apps.iter().find_map(|line| {
        let (label, rest) = line.split_once(" (")?;
        (label.to_lowercase() == app_lower).then(|| rest.trim_end_matches(')').to_string())
    })
}

/// The outcome of the `split_screen` step when it was the last and failed.
fn split_failed(ctx: &AgentContext) -> Option<String> {
    let r = ctx.history.steps().last()?;
    let ours = matches!(&r.action, Action::Custom(c) if c.name == split_screen::NAME);
    (ours && r.failed).then(|| r.outcome.clone())
}

/// What an action needs of its window.
enum Fit {
    /// Nothing: a wait, a finish, a question.
    Free,
    /// Points that must lie in the window.
    Points(Vec<(i32, i32)>),
    /// A key or untargeted typing: the window must have the focus.
    Focus,
    /// A scroll or swipe with no target: made a swipe inside the window.
    Rewrite(Direction, bool),
}

fn target_point(t: &Target, ctx: &AgentContext, size: (i32, i32)) -> Option<(i32, i32)> {
    match t {
        Target::Coordinate(p) => Some(norm_to_px(p, size)),
        Target::Pixel([x, y]) => Some((*x as i32, *y as i32)),
        _ => {
            let b = ctx.observation.tree.as_ref()?.resolve(t).ok()?;
            let c = b.center();
            Some((c.x, c.y))
        }
    }
}

fn norm_to_px(p: &NormPoint, (w, h): (i32, i32)) -> (i32, i32) {
    ((p.x() * w as f64) as i32, (p.y() * h as f64) as i32)
}

fn fit(action: &Action, ctx: &AgentContext, size: (i32, i32)) -> Fit {
    let pt = |t: &TargetField| target_point(&t.0, ctx, size).into_iter().collect();
    match action {
        Action::Tap { target }
        | Action::LongPress { target, .. }
        | Action::DoubleTap { target } => Fit::Points(pt(target)),
        Action::Swipe {
            path: SwipePath::Points { start, end },
            ..
        } => Fit::Points(vec![norm_to_px(start, size), norm_to_px(end, size)]),
        Action::Swipe {
            path: SwipePath::Direction {
                target: Some(t), ..
            },
            ..
        }
        | Action::Scroll {
            container: Some(t), ..
        } => Fit::Points(pt(t)),
        Action::Swipe {
            path:
                SwipePath::Direction {
                    direction,
                    target: None,
                },
            ..
        } => Fit::Rewrite(*direction, false),
        Action::Scroll {
            direction,
            container: None,
        } => Fit::Rewrite(*direction, true),
        Action::Type {
            target: Some(t), ..
        }
        | Action::Clear { target: Some(t) } => Fit::Points(pt(t)),
        Action::Type { target: None, .. } | Action::Clear { target: None } | Action::Key { .. } => {
            Fit::Focus
        }
        _ => Fit::Free,
    }
}

/// A tap that gives window `b` the focus: on its toolbar, left of centre, below the
/// status bar (a title, never a button, on the apps' bars).
fn focus_tap(b: Bounds, size: (i32, i32)) -> Action {
    let y = (b.top + 12).max(size.1 * 5 / 100) as f64;
    let x = (b.left + b.width() / 4) as f64;
    Action::Tap {
        target: TargetField(Target::Coordinate(NormPoint::clamped(
            x / size.0 as f64,
            y / size.1 as f64,
        ))),
    }
}

impl SplitAgent {
    /// Window `w`'s decision, fitted to its window: passed on, rewritten, held for a
    /// focus tap, or refused.
    fn fitted(
        &mut self,
        w: usize,
        mut d: Decision,
        ctx: &AgentContext,
        bounds: Option<Bounds>,
    ) -> Result<Decision, AgentError> {
        let size = ctx
            .observation
            .tree
            .as_ref()
            .map(|s| s.tree.screen_bounds())
            .map_or((1, 1), |b| (b.right.max(1), b.bottom.max(1)));
        let Some(b) = bounds else {
            return Ok(self.acted(w, d, "acted", None));
        };
        if let Action::Custom(c) = &mut d.action {
            return match c.name == scroll_find::NAME {
                true => {
                    let within = json!([b.left, b.top, b.right, b.bottom]);
                    c.args.insert("within".into(), within);
                    self.focused = w;
                    Ok(self.acted(w, d, "acted", Some("searched inside the window".into())))
                }
                false => {
                    let reason = format!(
                        "the custom action `{}` cannot be kept inside the {} window ({}); \
                         use taps, typing, scrolls and scroll_to_find there",
                        c.name, HALVES[w], self.windows[w].app
                    );
                    Err(self.refuse(w, d, reason))
                }
            };
        }
        match fit(&d.action, ctx, size) {
            Fit::Free => Ok(self.acted(w, d, "acted", None)),
            Fit::Rewrite(dir, scroll) => {
                d.action = swipe_within(b, dir, scroll, size);
                Ok(self.acted(w, d, "acted", Some("made a swipe inside the window".into())))
            }
            Fit::Focus if self.focused == w => Ok(self.acted(w, d, "acted", None)),
            Fit::Focus => {
                self.pending = Some((w, d));
                self.focused = w;
                let mut tap = Decision::local(focus_tap(b, size));
                tap.annotations.push(self.note(w, "focused", None));
                Ok(tap)
            }
            Fit::Points(ps) => match ps.iter().find(|&&(x, y)| !b.contains(PixelPoint { x, y })) {
                None => {
                    self.focused = w;
                    Ok(self.acted(w, d, "acted", None))
                }
                Some(&(x, y)) => {
                    let reason = format!(
                        "the point ({x}, {y}) is outside the {} window ({}), [{},{}][{},{}]; act only inside your window",
                        HALVES[w], self.windows[w].app, b.left, b.top, b.right, b.bottom
                    );
                    Err(self.refuse(w, d, reason))
                }
            },
        }
    }

    fn acted(
        &mut self,
        w: usize,
        mut d: Decision,
        event: &str,
        detail: Option<String>,
    ) -> Decision {
        self.last = Some(w);
        d.annotations.push(self.note(w, event, detail));
        d
    }

    /// An action that would not stay in its window: a rejected step (the runner records
    /// it), and the window's agent is told why.
    fn refuse(&mut self, w: usize, d: Decision, reason: String) -> AgentError {
        self.windows[w].history.push_step(StepRecord {
            step: 0,
            thinking: d.thinking.clone(),
            action: d.action.clone(),
            outcome: format!("refused: {reason}"),
            failed: true,
        });
        let raw = serde_json::to_string(&d.action).unwrap_or_default();
        AgentError::Parse {
            error: Box::new(ParseError::InvalidField {
                action: format!("{} (split-screen {} window)", d.action.name(), HALVES[w]),
                field: "target".into(),
                reason,
            }),
            raw,
            attempts: 1,
            usage: d.usage,
            cost: d.cost,
            calls: d.calls,
        }
    }
}

#[async_trait]
impl Agent for SplitAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        if !self.started {
            return Ok(self.start());
        }
        self.remember(ctx);
        if let Some(failed) = split_failed(ctx) {
            return Ok(Decision::local(Action::Finish {
                success: false,
                reason: Some(format!("split-screen could not start: {failed}")),
                answer: None,
            }));
        }
        if let Some((w, d)) = self.pending.take() {
            return Ok(self.acted(w, d, "acted", None));
        }
        let mut spent: Vec<Decision> = Vec::new();
        loop {
            let Some(w) = [self.turn, 1 - self.turn]
                .into_iter()
                .find(|&w| self.windows[w].done.is_none())
            else {
                let mut end = Decision::local(self.finish());
                for d in &spent {
                    end.absorb(&d.calls);
                    end.annotations.extend(d.annotations.iter().cloned());
                }
                return Ok(end);
            };
            self.turn = 1 - w;
            let bounds = self.bounds(w, ctx);
            let wctx = self.window_ctx(w, ctx, bounds);
            let mut d = self.windows[w].agent.next(&wctx).await?;
            if let Action::Finish {
                success, answer, ..
            } = &d.action
            {
                let win = &mut self.windows[w];
                win.done = Some(*success);
                win.answer = answer.clone();
                d.annotations.push(self.note(w, "finished", answer.clone()));
                spent.push(d);
                continue;
            }
            for s in &spent {
                d.absorb(&s.calls);
                d.annotations.splice(0..0, s.annotations.iter().cloned());
            }
            return self.fitted(w, d, ctx, bounds);
        }
    }

    fn describe(&self) -> String {
        format!(
            "split({} | {})",
            self.windows[0].agent.describe(),
            self.windows[1].agent.describe()
        )
    }

    fn wants_device_context(&self) -> bool {
        // The window bounds are found by the apps' packages, which the installed list maps.
        true
    }

    fn plays_fixed_actions(&self) -> bool {
        self.windows.iter().all(|w| w.agent.plays_fixed_actions())
    }

    fn secrets(&self) -> Vec<String> {
        self.windows
            .iter()
            .flat_map(|w| w.agent.secrets())
            .collect()
    }
}
