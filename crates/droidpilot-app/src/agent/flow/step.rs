//! Leaf commands: what each Maestro command does to the phone, one action at a time,
//! reading the screen the runner observed. A command whose element is not on the screen
//! first waits for it (`flow_check`), then fails naming the selector.

use droidpilot_maestro::ast::{
    Command, CommandKind, Direction as MDir, Point, RandomKind, ScrollUntilVisible, Selector,
    Swipe, SwipeMotion, Tap, TapKind, Target as MTarget,
};
use droidpilot_maestro::expr::{ExprError, JsValue};
use rand::Rng;

use super::{
    ANIMATION_MS, FlowAgent, LOOKUP_MS, OPTIONAL_LOOKUP_MS, Run, check_action, program,
    settle_action,
};
use crate::agent::AgentContext;
use crate::domain::action::{SwipePath, TargetField};
use crate::domain::{
    Action, AppRef, Bounds, Direction, Fallback, Key, MatchInfo, NormPoint, Orientation,
    ReplayInfo, ReplayRole, Target,
};
use crate::run::app_control::{CLEAR, STOP};
use crate::run::flow_check::Until;
use crate::screen::UiTree;

fn js(e: ExprError) -> String {
    format!("{e}. {}", e.hint())
}

fn tree(ctx: &AgentContext) -> Result<&UiTree, String> {
    ctx.observation
        .tree
        .as_ref()
        .map(|s| &s.tree)
        .ok_or_else(|| "the screen could not be read".to_string())
}

/// Whether Maestro's selector finds an element on the observed screen.
pub(super) fn present(ctx: &AgentContext, sel: &Selector) -> Result<bool, String> {
    find(ctx, sel).map(|n| n.is_some())
}

fn find(ctx: &AgentContext, sel: &Selector) -> Result<Option<usize>, String> {
    droidpilot_maestro::selector::find(tree(ctx)?, sel).map_err(|e| e.to_string())
}

/// The last step's failure, if it failed.
fn acted_ok(ctx: &AgentContext) -> Result<(), String> {
    match ctx.history.steps().last() {
        Some(r) if r.failed => Err(r.outcome.trim_start_matches("failed: ").to_string()),
        _ => Ok(()),
    }
}

/// A fingerprint of the observed screen, text included.
fn screen_key(ctx: &AgentContext) -> Option<u64> {
    ctx.observation
        .tree
        .as_ref()
        .map(|s| crate::screen::content_hash(&s.tree).0)
}

/// `text "Save", index 1`: a selector in a failure message.
pub(super) fn describe_sel(s: &Selector) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &s.text {
        parts.push(format!("text \"{t}\""));
    }
    if let Some(i) = &s.id {
        parts.push(format!("id \"{i}\""));
    }
    if let Some(i) = &s.index {
        parts.push(format!("index {i:?}"));
    }
    for (name, inner) in [
        ("below", &s.below),
        ("above", &s.above),
        ("leftOf", &s.left_of),
        ("rightOf", &s.right_of),
        ("childOf", &s.child_of),
        ("containsChild", &s.contains_child),
    ] {
        if let Some(i) = inner {
            parts.push(format!("{name} ({})", describe_sel(i)));
        }
    }
    for (name, v) in [
        ("enabled", s.enabled),
        ("checked", s.checked),
        ("focused", s.focused),
        ("selected", s.selected),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name}: {v}"));
        }
    }
    if parts.is_empty() {
        "the selector".into()
    } else {
        parts.join(", ")
    }
}

/// `tapOn text "Save"`: the command as the step's reasoning names it (its `label` if
/// it has one, which also hides typed text).
pub(super) fn describe(cmd: &Command) -> String {
    if let Some(l) = &cmd.label {
        return l.clone();
    }
    let sel = |s: &Selector| describe_sel(s);
    match &cmd.kind {
        CommandKind::Tap(t) => {
            let name = match t.kind {
                TapKind::Tap => "tapOn",
                TapKind::Double => "doubleTapOn",
                TapKind::Long => "longPressOn",
            };
            match &t.target {
                MTarget::Element(s) => format!("{name} {}", sel(s)),
                MTarget::Point(p) => format!("{name} point {p:?}"),
            }
        }
        CommandKind::AssertVisible(s) => format!("assertVisible {}", sel(s)),
        CommandKind::AssertNotVisible(s) => format!("assertNotVisible {}", sel(s)),
        CommandKind::CopyTextFrom(s) => format!("copyTextFrom {}", sel(s)),
        CommandKind::ScrollUntilVisible(s) => format!("scrollUntilVisible {}", sel(&s.element)),
        CommandKind::InputText(t) => format!("inputText \"{t}\""),
        CommandKind::LaunchApp(l) => format!("launchApp {}", l.app_id.clone().unwrap_or_default()),
        CommandKind::TakeScreenshot(n) => format!("takeScreenshot {n}"),
        CommandKind::AssertWithAi(t) => format!("assertWithAI \"{t}\""),
        CommandKind::AssertNoDefectsWithAi => "assertNoDefectsWithAI".into(),
        CommandKind::ExtractTextWithAi { query, .. } => format!("extractTextWithAI \"{query}\""),
        CommandKind::RunFlow(_) => "runFlow".into(),
        CommandKind::Repeat(_) => "repeat".into(),
        CommandKind::Retry(_) => "retry".into(),
        other => {
            let dbg = format!("{other:?}");
            let name = dbg.split(['(', ' ', '{']).next().unwrap_or("command");
            let mut c = name.chars();
            c.next()
                .map(|f| f.to_lowercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    }
}

/// One device action, then done once it ran (a failed action fails the command).
fn once(
    a: &mut FlowAgent,
    ctx: &AgentContext,
    action: impl FnOnce() -> Action,
) -> Result<Run, String> {
    if a.tries.taps == 0 {
        a.tries.taps = 1;
        return Ok(Run::Emit(action()));
    }
    acted_ok(ctx)?;
    Ok(Run::Done)
}

/// `stop_app` / `clear_app_data` on `package`, launching it afterwards with `launch`.
fn app_action(name: &str, package: &str, launch: bool) -> Action {
    Action::Custom(crate::domain::action::CustomAction {
        name: name.into(),
        args: crate::run::app_control::args(package, launch),
    })
}

fn timeout(cmd: &Command) -> u64 {
    if cmd.optional {
        OPTIONAL_LOOKUP_MS
    } else {
        LOOKUP_MS
    }
}

/// The command's element on the observed screen, or a wait for it (once), or the
/// failure naming it.
fn locate(
    a: &mut FlowAgent,
    cmd: &Command,
    sel: &Selector,
    ctx: &AgentContext,
) -> Result<Result<usize, Action>, String> {
    if let Some(h) = a.healed_selector(cmd.line)
        && let Some(n) = find(ctx, &h)?
    {
        a.replay_next = Some(super::recover::healed_info(cmd.line, &h));
        return Ok(Ok(n));
    }
    let sel = a.scope.selector(sel).map_err(js)?;
    if let Some(n) = find(ctx, &sel)? {
        return Ok(Ok(n));
    }
    if let Some((t, info)) = translated(a, cmd, &sel)
        && let Some(n) = find(ctx, &t)?
    {
        a.replay_next = Some(info);
        return Ok(Ok(n));
    }
    a.wants_strings |= sel.text.is_some();
    let t = timeout(cmd);
    if !a.tries.waited {
        a.tries.waited = true;
        return Ok(Err(check_action(Until::Visible, Some(&sel), t, true)));
    }
    let msg = format!(
        "no element matches {} (waited {} s)",
        describe_sel(&sel),
        t / 1000
    );
    a.stuck(cmd, &sel, &msg);
    Err(msg)
}

/// `sel` with its `text` as the phone's language shows it: the same string resource's
/// value in the phone's locale (`agent::appstrings`; exact and case-insensitive, as
/// Maestro compares text), and the step's record of it.
fn translated(a: &FlowAgent, cmd: &Command, sel: &Selector) -> Option<(Selector, ReplayInfo)> {
    let t = a.loaded.as_ref()?.text(sel.text.as_deref()?, true)?;
    let mut out = sel.clone();
    out.text = Some(droidpilot_maestro::selector::literal(&t.to));
    let info = ReplayInfo {
        index: cmd.line as u32,
        role: ReplayRole::Action,
        selector: Some(describe_sel(&out)),
        fallback: Fallback::Translated,
        interruptions_dismissed: 0,
        recovery: None,
        matched: Some(MatchInfo {
            score: 1.0,
            margin: 1.0,
            agreed: vec!["string".into()],
            translated: vec![t],
        }),
    };
    Some((out, info))
}

/// `assertVisible` / `assertNotVisible` / `extendedWaitUntil`: holds now, or after one
/// wait of `t` ms.
fn assert(
    a: &mut FlowAgent,
    sel: &Selector,
    visible: bool,
    t: u64,
    ctx: &AgentContext,
) -> Result<Run, String> {
    let sel = a.scope.selector(sel).map_err(js)?;
    if present(ctx, &sel)? == visible {
        return Ok(Run::Done);
    }
    if !a.tries.waited {
        a.tries.waited = true;
        let until = if visible {
            Until::Visible
        } else {
            Until::NotVisible
        };
        return Ok(Run::Emit(check_action(until, Some(&sel), t, true)));
    }
    let what = if visible {
        "is not visible"
    } else {
        "is still visible"
    };
    Err(format!(
        "{} {what} (waited {} s)",
        describe_sel(&sel),
        t / 1000
    ))
}

/// `assertVisible`: as `assert`, and a missing element goes to AI in the middle, whose
/// new selector is then checked instead.
fn assert_visible(
    a: &mut FlowAgent,
    cmd: &Command,
    sel: &Selector,
    ctx: &AgentContext,
) -> Result<Run, String> {
    if let Some(h) = a.healed_selector(cmd.line)
        && present(ctx, &h)?
    {
        return Ok(Run::Done);
    }
    assert(a, sel, true, timeout(cmd), ctx).inspect_err(|msg| {
        if let Ok(s) = a.scope.selector(sel) {
            a.stuck(cmd, &s, msg);
        }
    })
}

/// The pixel a tap on node `n` aims at: the centre of its part on screen.
fn center(tree: &UiTree, n: usize) -> [u32; 2] {
    let screen = tree.screen_bounds();
    let c = tree.nodes[n].bounds.intersect(&screen).center();
    clamp(tree, c.x, c.y)
}

fn clamp(tree: &UiTree, x: i32, y: i32) -> [u32; 2] {
    let s = tree.screen_bounds();
    [
        x.clamp(0, (s.right - 1).max(0)) as u32,
        y.clamp(0, (s.bottom - 1).max(0)) as u32,
    ]
}

fn point(ctx: &AgentContext, p: &Point) -> Result<[u32; 2], String> {
    let tree = tree(ctx)?;
    let s = tree.screen_bounds();
    match p {
        Point::Pixels(x, y) => {
            if *x < 0 || *y < 0 || *x >= s.right || *y >= s.bottom {
                return Err(format!(
                    "point {x},{y} is outside the {}×{} screen",
                    s.right, s.bottom
                ));
            }
            Ok([*x as u32, *y as u32])
        }
        Point::Percent(x, y) => Ok(clamp(
            tree,
            s.right * *x as i32 / 100,
            s.bottom * *y as i32 / 100,
        )),
        Point::Expr(e) => Err(format!(
            "the point `{e}` is an expression, not supported yet"
        )),
    }
}

fn tap_action(kind: TapKind, p: [u32; 2]) -> Action {
    let target = TargetField(Target::Pixel(p));
    match kind {
        TapKind::Tap => Action::Tap { target },
        TapKind::Double => Action::DoubleTap { target },
        TapKind::Long => Action::LongPress {
            target,
            duration_ms: None,
        },
    }
}

/// `tapOn` & co: find, tap (`repeat` times), tap again once if nothing changed
/// (`retryTapIfNoChange`), then wait to settle when asked.
fn tap(a: &mut FlowAgent, cmd: &Command, t: &Tap, ctx: &AgentContext) -> Result<Run, String> {
    if let Some(p) = a.tries.point {
        acted_ok(ctx)?;
        let count = t.repeat.map_or(1, |r| r.0.max(1));
        if a.tries.taps < count {
            a.tries.taps += 1;
            return Ok(Run::Emit(tap_action(t.kind, p)));
        }
        if t.retry_if_no_change
            && !a.tries.retried_tap
            && a.tries.before.is_some()
            && screen_key(ctx) == a.tries.before
        {
            a.tries.retried_tap = true;
            a.notes
                .push("the screen did not change: tapping again (retryTapIfNoChange)".into());
            return Ok(Run::Emit(tap_action(t.kind, p)));
        }
        return settle(a, t.wait_to_settle_ms, ctx);
    }
    let p = match &t.target {
        MTarget::Element(sel) => match locate(a, cmd, sel, ctx)? {
            Ok(n) => center(tree(ctx)?, n),
            Err(wait) => return Ok(Run::Emit(wait)),
        },
        MTarget::Point(p) => point(ctx, p)?,
    };
    a.tries.point = Some(p);
    a.tries.before = screen_key(ctx);
    a.tries.taps = 1;
    Ok(Run::Emit(tap_action(t.kind, p)))
}

/// `waitToSettleTimeoutMs`: one settle wait, when given, from the screen observed.
fn settle(a: &mut FlowAgent, ms: Option<u64>, ctx: &AgentContext) -> Result<Run, String> {
    match ms {
        Some(ms) if !a.tries.settled => {
            a.tries.settled = true;
            Ok(Run::Emit(settle_action(ms.min(30_000), screen_key(ctx))))
        }
        _ => Ok(Run::Done),
    }
}

fn dir(d: MDir) -> Direction {
    match d {
        MDir::Up => Direction::Up,
        MDir::Down => Direction::Down,
        MDir::Left => Direction::Left,
        MDir::Right => Direction::Right,
    }
}

fn norm(tree: &UiTree, p: [u32; 2]) -> Result<NormPoint, String> {
    let s = tree.screen_bounds();
    NormPoint::new(
        p[0] as f64 / s.right.max(1) as f64,
        p[1] as f64 / s.bottom.max(1) as f64,
    )
    .map_err(|e| e.to_string())
}

/// `swipe` in its three forms.
fn swipe(a: &mut FlowAgent, cmd: &Command, s: &Swipe, ctx: &AgentContext) -> Result<Run, String> {
    if a.tries.taps > 0 {
        acted_ok(ctx)?;
        return settle(a, s.wait_to_settle_ms, ctx);
    }
    let tree = tree(ctx)?;
    let path = match &s.motion {
        SwipeMotion::Direction(d) => SwipePath::Direction {
            direction: dir(*d),
            target: None,
        },
        SwipeMotion::Points { start, end } => SwipePath::Points {
            start: norm(tree, point(ctx, start)?)?,
            end: norm(tree, point(ctx, end)?)?,
        },
        SwipeMotion::Element { from, direction } => {
            let n = match locate(a, cmd, from, ctx)? {
                Ok(n) => n,
                Err(wait) => return Ok(Run::Emit(wait)),
            };
            let c = center(tree, n);
            let sb = tree.screen_bounds();
            let (w, h) = (sb.right, sb.bottom);
            let (x, y) = (c[0] as i32, c[1] as i32);
            let end = match direction {
                MDir::Up => clamp(tree, x, h / 10),
                MDir::Down => clamp(tree, x, h * 9 / 10),
                MDir::Left => clamp(tree, w / 10, y),
                MDir::Right => clamp(tree, w * 9 / 10, y),
            };
            SwipePath::Points {
                start: norm(tree, c)?,
                end: norm(tree, end)?,
            }
        }
    };
    a.tries.taps = 1;
    Ok(Run::Emit(Action::Swipe {
        path,
        duration_ms: Some(s.duration_ms),
    }))
}

/// The share of node `n` that is on screen, in percent.
fn shown_percent(tree: &UiTree, n: usize) -> u32 {
    let b = tree.nodes[n].bounds;
    let area = |b: &Bounds| (b.width().max(0) as i64) * (b.height().max(0) as i64);
    let whole = area(&b);
    if whole == 0 {
        return 0;
    }
    (area(&b.intersect(&tree.screen_bounds())) * 100 / whole) as u32
}

/// `scrollUntilVisible`: scroll in `direction` until the element shows (with
/// `visibilityPercentage` of it on screen), at most one scroll per second of `timeout`,
/// and not past the end of the list (two scrolls in a row that change nothing).
fn scroll_until(
    a: &mut FlowAgent,
    s: &ScrollUntilVisible,
    ctx: &AgentContext,
) -> Result<Run, String> {
    let sel = a.scope.selector(&s.element).map_err(js)?;
    let timeout = a.scope.amount(&s.timeout).map_err(js)?.max(0.0) as u64;
    if a.tries.taps > 0 {
        acted_ok(ctx)?;
        if screen_key(ctx) == a.tries.before {
            a.tries.stale += 1;
        } else {
            a.tries.stale = 0;
        }
    }
    if let Some(n) = find(ctx, &sel)?
        && shown_percent(tree(ctx)?, n) >= s.visibility_percentage
    {
        return settle(a, s.wait_to_settle_ms, ctx);
    }
    let max = (timeout / 1000).max(1) as u32;
    if a.tries.stale >= 2 || a.tries.scrolls >= max {
        return Err(format!(
            "{} did not come into view after {} scrolls {:?}",
            describe_sel(&sel),
            a.tries.scrolls,
            s.direction
        ));
    }
    a.tries.before = screen_key(ctx);
    a.tries.scrolls += 1;
    a.tries.taps += 1;
    Ok(Run::Emit(Action::Scroll {
        direction: dir(s.direction),
        container: None,
    }))
}

/// `eraseText`: the devices clear a whole field; erasing part of a longer text is
/// refused rather than done differently.
fn erase(a: &mut FlowAgent, n: Option<u32>, ctx: &AgentContext) -> Result<Run, String> {
    if a.tries.taps == 0 {
        let tree = tree(ctx)?;
        let len = tree
            .nodes
            .iter()
            .find(|n| n.focused)
            .map_or(0, |f| f.text.chars().count());
        let n = n.unwrap_or(50) as usize;
        if len > n {
            return Err(format!(
                "the focused field holds {len} characters; erasing only {n} of them is not supported here (the devices clear a whole field)"
            ));
        }
    }
    once(a, ctx, || Action::Clear { target: None })
}

fn random_text(kind: RandomKind, length: Option<u32>) -> String {
    const PEOPLE: &[&str] = &["Ana Lima", "John Smith", "Mei Chen", "Olu Ade", "Sara Berg"];
    const CITIES: &[&str] = &["Lisbon", "Osaka", "Nairobi", "Toronto", "Krakow"];
    const COUNTRIES: &[&str] = &["Portugal", "Japan", "Kenya", "Canada", "Poland"];
    const COLORS: &[&str] = &["Red", "Blue", "Green", "Yellow", "Purple"];
    let mut rng = rand::rng();
    let pick =
        |l: &[&str], rng: &mut rand::rngs::ThreadRng| l[rng.random_range(0..l.len())].to_string();
    let n = length.unwrap_or(8) as usize;
    match kind {
        RandomKind::Text => (0..n)
            .map(|_| rng.random_range(b'a'..=b'z') as char)
            .collect(),
        RandomKind::Number => (0..n)
            .map(|_| rng.random_range(b'0'..=b'9') as char)
            .collect(),
        RandomKind::Email => {
            let user: String = (0..8)
                .map(|_| rng.random_range(b'a'..=b'z') as char)
                .collect();
            format!("{user}@example.com")
        }
        RandomKind::PersonName => pick(PEOPLE, &mut rng),
        RandomKind::CityName => pick(CITIES, &mut rng),
        RandomKind::CountryName => pick(COUNTRIES, &mut rng),
        RandomKind::ColorName => pick(COLORS, &mut rng),
    }
}

/// The app a command names, else the flow file's `appId`.
fn app_of(a: &mut FlowAgent, given: &Option<String>) -> Result<String, String> {
    let file = a.stack.last().map(|f| f.file.clone()).unwrap_or_default();
    let text = given
        .clone()
        .or_else(|| {
            a.program
                .flows
                .get(&file)
                .and_then(|f| f.header.app_id.clone())
        })
        .ok_or("no app: give the command an app id, or the flow an `appId`")?;
    a.scope.interpolate(&text).map_err(js)
}

/// A leaf command's next action, or done.
pub(super) fn leaf(a: &mut FlowAgent, cmd: &Command, ctx: &AgentContext) -> Result<Run, String> {
    match &cmd.kind {
        CommandKind::Tap(t) => tap(a, cmd, t, ctx),
        CommandKind::Swipe(s) => swipe(a, cmd, s, ctx),
        CommandKind::Scroll => once(a, ctx, || Action::Scroll {
            direction: Direction::Down,
            container: None,
        }),
        CommandKind::ScrollUntilVisible(s) => scroll_until(a, s, ctx),
        CommandKind::InputText(t) => {
            let text = a.scope.interpolate(t).map_err(js)?;
            once(a, ctx, || Action::Type {
                text,
                target: None,
                clear_first: false,
            })
        }
        CommandKind::InputRandom { kind, length } => {
            let text = random_text(*kind, *length);
            once(a, ctx, || Action::Type {
                text,
                target: None,
                clear_first: false,
            })
        }
        CommandKind::EraseText(n) => erase(a, *n, ctx),
        CommandKind::CopyTextFrom(sel) => match locate(a, cmd, sel, ctx)? {
            Ok(n) => {
                let node = &tree(ctx)?.nodes[n];
                let text = if node.text.is_empty() {
                    node.content_desc.clone()
                } else {
                    node.text.clone()
                };
                a.scope.set_copied_text(Some(&text));
                Ok(Run::Done)
            }
            Err(wait) => Ok(Run::Emit(wait)),
        },
        CommandKind::SetClipboard(t) => {
            let text = a.scope.interpolate(t).map_err(js)?;
            a.scope.set_copied_text(Some(&text));
            Ok(Run::Done)
        }
        CommandKind::PasteText => {
            let text = match a.scope.eval("maestro.copiedText").map_err(js)? {
                JsValue::Text(t) => t,
                _ => return Err("nothing was copied (copyTextFrom or setClipboard first)".into()),
            };
            once(a, ctx, || Action::Type {
                text,
                target: None,
                clear_first: false,
            })
        }
        CommandKind::HideKeyboard => {
            let open = ctx
                .observation
                .tree
                .as_ref()
                .is_some_and(|s| s.keyboard_visible())
                || ctx.device.keyboard_visible;
            if a.tries.taps == 0 && !open {
                return Ok(Run::Done);
            }
            once(a, ctx, || Action::Key { key: Key::Back })
        }
        CommandKind::AssertVisible(s) => assert_visible(a, cmd, s, ctx),
        CommandKind::AssertNotVisible(s) => assert(a, s, false, timeout(cmd), ctx),
        CommandKind::AssertTrue(t) => match a.scope.condition(t).map_err(js)? {
            true => Ok(Run::Done),
            false => Err(format!("`{t}` is false")),
        },
        CommandKind::ExtendedWaitUntil {
            visible,
            not_visible,
            timeout,
        } => {
            let t = match timeout {
                Some(t) => a.scope.amount(t).map_err(js)?.max(0.0) as u64,
                None => LOOKUP_MS,
            };
            if let Some(s) = visible
                && (!present(ctx, &a.scope.selector(s).map_err(js)?)? || a.tries.waited)
            {
                return assert(a, s, true, t, ctx);
            }
            match not_visible {
                Some(s) => assert(a, s, false, t, ctx),
                None => Ok(Run::Done),
            }
        }
        CommandKind::WaitForAnimationToEnd(t) => {
            let ms = t.unwrap_or(ANIMATION_MS);
            let seen = screen_key(ctx);
            once(a, ctx, || settle_action(ms, seen))
        }
        CommandKind::Back => once(a, ctx, || Action::Key { key: Key::Back }),
        CommandKind::PressKey(k) => {
            let key = program::key(*k).ok_or(format!("pressKey {k:?} is not available here"))?;
            once(a, ctx, || Action::Key { key })
        }
        // Stopping (or clearing) and launching are one step: the screen between them,
        // the launcher, is never read.
        CommandKind::LaunchApp(l) => {
            let app = app_of(a, &l.app_id)?;
            once(a, ctx, || match (l.clear_state, l.stop_app) {
                (true, _) => app_action(CLEAR, &app, true),
                (false, true) => app_action(STOP, &app, true),
                (false, false) => Action::LaunchApp {
                    app: AppRef::Package(app),
                },
            })
        }
        CommandKind::StopApp(app) | CommandKind::KillApp(app) => {
            let app = app_of(a, app)?;
            once(a, ctx, || app_action(STOP, &app, false))
        }
        CommandKind::ClearState(app) => {
            let app = app_of(a, app)?;
            once(a, ctx, || app_action(CLEAR, &app, false))
        }
        CommandKind::ClearKeychain => Ok(Run::Done),
        CommandKind::OpenLink { link, .. } => {
            let url = a.scope.interpolate(link).map_err(js)?;
            once(a, ctx, || Action::OpenUrl { url })
        }
        CommandKind::SetOrientation(o) => {
            let name = a.scope.interpolate(o).map_err(js)?;
            let orientation = Orientation::parse(&name).ok_or_else(|| {
                format!("`setOrientation` has no orientation `{name}` (PORTRAIT, LANDSCAPE_LEFT, LANDSCAPE_RIGHT, UPSIDE_DOWN)")
            })?;
            once(a, ctx, || Action::Rotate { orientation })
        }
        // The step's screenshot (every step keeps one) is the screenshot.
        CommandKind::TakeScreenshot(_) => once(a, ctx, || Action::Wait { ms: 0 }),
        CommandKind::EvalScript(t) => a.scope.eval_script(t).map(|_| Run::Done).map_err(js),
        CommandKind::RunScript(r) => run_script(a, r, ctx),
        CommandKind::AssertWithAi(_)
        | CommandKind::AssertNoDefectsWithAi
        | CommandKind::ExtractTextWithAi { .. } => {
            let file = a.stack.last().map(|f| f.file.clone()).unwrap_or_default();
            a.ai_pending = Some(super::ai::AiAsk {
                file,
                cmd: cmd.clone(),
            });
            Ok(Run::Again)
        }
        other => Err(format!("{} cannot run here", describe_kind(other))),
    }
}

fn describe_kind(k: &CommandKind) -> String {
    format!("{k:?}")
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or("command")
        .to_string()
}

/// `runScript`: its `when`, its `env` (kept, as Maestro keeps it), then the file.
fn run_script(
    a: &mut FlowAgent,
    r: &droidpilot_maestro::ast::RunScript,
    ctx: &AgentContext,
) -> Result<Run, String> {
    if let Some(w) = &r.when {
        match a.condition(w, ctx)? {
            Ok(true) => {}
            Ok(false) => return Ok(Run::Done),
            Err(wait) => return Ok(Run::Emit(wait)),
        }
    }
    let file = a.stack.last().map(|f| f.file.clone()).unwrap_or_default();
    let path = droidpilot_maestro::workspace::resolve(&file, &r.file);
    let source = a
        .program
        .scripts
        .get(&path)
        .cloned()
        .ok_or(format!("`{path}` was not loaded"))?;
    let mut env = Vec::new();
    for v in &r.env {
        if let Some(t) = &v.value {
            env.push((v.name.clone(), a.scope.interpolate(t).map_err(js)?));
        }
    }
    a.scope.run_script(&source, &env).map_err(js)?;
    Ok(Run::Done)
}
