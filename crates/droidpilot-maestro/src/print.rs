//! A `Flow` written back as Maestro YAML: `parse_flow(&print(&flow)?)` gives the same
//! flow (lines aside). The header is block YAML; each command is one list item whose
//! arguments are a YAML flow mapping with double-quoted strings (`- tapOn: {"text":
//! "Save", "index": 1}`), a form Maestro's YAML reader takes like any other. Every
//! field the flow set is written, defaults that the flow left out are not (an `env`
//! input with no default is `null`, never the text "null"); `tags`, `name`,
//! `eraseText` counts, labels and `optional` go through.
//!
//! Hand-written rather than serde's YAML: the flow's own key order (`env` is ordered)
//! and Maestro's short forms need control a derived serializer does not give. What the
//! parser does not keep cannot be written: a header key kept only by name (`other`)
//! is refused, naming it.

use crate::ast::*;

/// A YAML value, printed inline.
enum Y {
    Null,
    Str(String),
    /// A number or a boolean, printed plain.
    Plain(String),
    List(Vec<Y>),
    Map(Vec<(String, Y)>),
}

impl Y {
    fn render(&self) -> String {
        match self {
            Y::Null => "null".into(),
            Y::Str(s) => serde_json::to_string(s).unwrap_or_default(),
            Y::Plain(s) => s.clone(),
            Y::List(l) => {
                let items: Vec<String> = l.iter().map(Y::render).collect();
                format!("[{}]", items.join(", "))
            }
            Y::Map(m) => {
                let items: Vec<String> = m
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "{}: {}",
                            serde_json::to_string(k).unwrap_or_default(),
                            v.render()
                        )
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }
}

fn s(t: &str) -> Y {
    Y::Str(t.to_string())
}

fn num(n: impl ToString) -> Y {
    Y::Plain(n.to_string())
}

fn boolean(b: bool) -> Y {
    Y::Plain(b.to_string())
}

fn amount(a: &Amount) -> Y {
    match a {
        Amount::Fixed(f) if f.fract() == 0.0 && f.abs() < 1e15 => num(*f as i64),
        Amount::Fixed(f) => num(f),
        Amount::Expr(e) => s(e),
    }
}

/// A builder for a mapping.
#[derive(Default)]
struct M(Vec<(String, Y)>);

impl M {
    fn put(mut self, k: &str, v: Y) -> Self {
        self.0.push((k.to_string(), v));
        self
    }
    fn opt(self, k: &str, v: Option<Y>) -> Self {
        match v {
            Some(v) => self.put(k, v),
            None => self,
        }
    }
    fn extend(mut self, other: M) -> Self {
        self.0.extend(other.0);
        self
    }
}

/// A flow whose header holds keys this cannot write (kept by name only).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: header key `{key}` cannot be written back (its value is not kept)")]
pub struct PrintError {
    pub key: String,
    pub line: usize,
}

/// The flow as Maestro YAML.
pub fn print(flow: &Flow) -> Result<String, PrintError> {
    let h = &flow.header;
    if let Some((key, line)) = h.other.first() {
        return Err(PrintError {
            key: key.clone(),
            line: *line,
        });
    }
    let mut out = String::new();
    let mut line = |k: &str, v: Y| out.push_str(&format!("{k}: {}\n", v.render()));
    if let Some(a) = &h.app_id {
        line("appId", s(a));
    }
    if let Some(n) = &h.name {
        line("name", s(n));
    }
    if !h.tags.is_empty() {
        line("tags", Y::List(h.tags.iter().map(|t| s(t)).collect()));
    }
    if !h.env.is_empty() {
        line("env", env(&h.env));
    }
    if !h.on_flow_start.is_empty() {
        line("onFlowStart", commands(&h.on_flow_start));
    }
    if !h.on_flow_complete.is_empty() {
        line("onFlowComplete", commands(&h.on_flow_complete));
    }
    if let Some(j) = &h.js_engine {
        line("jsEngine", s(j));
    }
    out.push_str("---\n");
    for c in &flow.commands {
        let (name, arg) = command(c);
        out.push_str(&format!("- {name}: {}\n", arg.render()));
    }
    Ok(out)
}

fn env(vars: &[EnvVar]) -> Y {
    Y::Map(
        vars.iter()
            .map(|v| (v.name.clone(), v.value.as_deref().map_or(Y::Null, s)))
            .collect(),
    )
}

fn commands(list: &[Command]) -> Y {
    Y::List(
        list.iter()
            .map(|c| {
                let (name, arg) = command(c);
                Y::Map(vec![(name.to_string(), arg)])
            })
            .collect(),
    )
}

fn selector(sel: &Selector) -> M {
    let nested = |v: &Option<Box<Selector>>| v.as_ref().map(|b| Y::Map(selector(b).0));
    let flag = |v: Option<bool>| v.map(boolean);
    let mut m = M::default()
        .opt("text", sel.text.as_deref().map(s))
        .opt("id", sel.id.as_deref().map(s))
        .opt("index", sel.index.as_ref().map(amount))
        .opt("enabled", flag(sel.enabled))
        .opt("checked", flag(sel.checked))
        .opt("focused", flag(sel.focused))
        .opt("selected", flag(sel.selected))
        .opt("below", nested(&sel.below))
        .opt("above", nested(&sel.above))
        .opt("leftOf", nested(&sel.left_of))
        .opt("rightOf", nested(&sel.right_of))
        .opt("childOf", nested(&sel.child_of))
        .opt("containsChild", nested(&sel.contains_child));
    if !sel.contains_descendants.is_empty() {
        let l = sel
            .contains_descendants
            .iter()
            .map(|d| Y::Map(selector(d).0));
        m = m.put("containsDescendants", Y::List(l.collect()));
    }
    if let Some(z) = sel.size {
        m = m
            .opt("width", z.width.map(num))
            .opt("height", z.height.map(num))
            .opt("tolerance", z.tolerance.map(num));
    }
    if !sel.traits.is_empty() {
        let words: Vec<&str> = sel
            .traits
            .iter()
            .map(|t| match t {
                Trait::Text => "TEXT",
                Trait::Square => "SQUARE",
                Trait::LongText => "LONG_TEXT",
            })
            .collect();
        m = m.put("traits", s(&words.join(" ")));
    }
    m
}

fn point(p: &Point) -> Y {
    match p {
        Point::Pixels(x, y) => s(&format!("{x},{y}")),
        Point::Percent(x, y) => s(&format!("{x}%,{y}%")),
        Point::Expr(e) => s(e),
    }
}

fn direction(d: Direction) -> Y {
    s(match d {
        Direction::Up => "UP",
        Direction::Down => "DOWN",
        Direction::Left => "LEFT",
        Direction::Right => "RIGHT",
    })
}

fn condition(c: &Condition) -> Y {
    let platform = c.platform.map(|p| {
        s(match p {
            Platform::Android => "Android",
            Platform::Ios => "iOS",
            Platform::Web => "Web",
        })
    });
    Y::Map(
        M::default()
            .opt("platform", platform)
            .opt("visible", c.visible.as_ref().map(|v| Y::Map(selector(v).0)))
            .opt(
                "notVisible",
                c.not_visible.as_ref().map(|v| Y::Map(selector(v).0)),
            )
            .opt("true", c.script.as_deref().map(s))
            .0,
    )
}

fn source(m: M, src: &FlowSource) -> M {
    match src {
        FlowSource::File { path } => m.put("file", s(path)),
        FlowSource::Inline(c) => m.put("commands", commands(c)),
    }
}

/// Whether a command is optional unless told otherwise (the AI commands).
fn optional_by_default(k: &CommandKind) -> bool {
    matches!(
        k,
        CommandKind::AssertWithAi(_)
            | CommandKind::AssertNoDefectsWithAi
            | CommandKind::ExtractTextWithAi { .. }
    )
}

/// The command's name and its argument, with `label` and `optional`.
fn command(c: &Command) -> (&'static str, Y) {
    let (name, arg) = kind(&c.kind);
    let mut common = M::default().opt("label", c.label.as_deref().map(s));
    if c.optional != optional_by_default(&c.kind) {
        common = common.put("optional", boolean(c.optional));
    }
    if common.0.is_empty() {
        return (name, arg);
    }
    let arg = match arg {
        Y::Null => Y::Map(common.0),
        Y::Map(m) => Y::Map(M(m).extend(common).0),
        // A short form (`- inputText: x`) becomes its main field.
        other => Y::Map(M::default().put(main_field(name), other).extend(common).0),
    };
    (name, arg)
}

/// The field a command's short form stands for.
fn main_field(name: &str) -> &'static str {
    match name {
        "inputText" | "setClipboard" => "text",
        "assertTrue" => "condition",
        "assertWithAI" => "assertion",
        "extractTextWithAI" => "query",
        "pressKey" => "key",
        "stopApp" | "killApp" | "clearState" | "launchApp" => "appId",
        "openLink" => "link",
        "setOrientation" => "orientation",
        "setAirplaneMode" => "value",
        "takeScreenshot" | "startRecording" => "path",
        "evalScript" => "script",
        "eraseText" => "charactersToErase",
        _ => "text",
    }
}

fn kind(k: &CommandKind) -> (&'static str, Y) {
    use CommandKind as K;
    let map = |m: M| Y::Map(m.0);
    match k {
        K::Tap(t) => tap(t),
        K::Swipe(sw) => ("swipe", map(swipe(sw))),
        K::Scroll => ("scroll", Y::Null),
        K::ScrollUntilVisible(u) => ("scrollUntilVisible", map(scroll_until(u))),
        K::InputText(t) => ("inputText", s(t)),
        K::InputRandom { kind, length } => {
            let name = match kind {
                RandomKind::Text => "inputRandomText",
                RandomKind::Number => "inputRandomNumber",
                RandomKind::Email => "inputRandomEmail",
                RandomKind::PersonName => "inputRandomPersonName",
                RandomKind::CityName => "inputRandomCityName",
                RandomKind::CountryName => "inputRandomCountryName",
                RandomKind::ColorName => "inputRandomColorName",
            };
            match length {
                Some(n) => (name, map(M::default().put("length", num(n)))),
                None => (name, Y::Null),
            }
        }
        K::EraseText(n) => ("eraseText", n.map_or(Y::Null, num)),
        K::CopyTextFrom(sel) => ("copyTextFrom", map(selector(sel))),
        K::PasteText => ("pasteText", Y::Null),
        K::SetClipboard(t) => ("setClipboard", s(t)),
        K::HideKeyboard => ("hideKeyboard", Y::Null),
        K::AssertVisible(sel) => ("assertVisible", map(selector(sel))),
        K::AssertNotVisible(sel) => ("assertNotVisible", map(selector(sel))),
        K::AssertTrue(t) => ("assertTrue", s(t)),
        K::ExtendedWaitUntil {
            visible,
            not_visible,
            timeout,
        } => (
            "extendedWaitUntil",
            map(M::default()
                .opt("visible", visible.as_ref().map(|v| map(selector(v))))
                .opt("notVisible", not_visible.as_ref().map(|v| map(selector(v))))
                .opt("timeout", timeout.as_ref().map(amount))),
        ),
        K::WaitForAnimationToEnd(t) => (
            "waitForAnimationToEnd",
            t.map_or(Y::Null, |t| map(M::default().put("timeout", num(t)))),
        ),
        K::AssertWithAi(t) => ("assertWithAI", s(t)),
        K::AssertNoDefectsWithAi => ("assertNoDefectsWithAI", Y::Null),
        K::ExtractTextWithAi {
            query,
            output_variable,
        } => (
            "extractTextWithAI",
            map(M::default()
                .put("query", s(query))
                .put("outputVariable", s(output_variable))),
        ),
        K::Back => ("back", Y::Null),
        K::PressKey(key) => ("pressKey", s(key_name(*key))),
        K::LaunchApp(l) => ("launchApp", launch(l)),
        K::StopApp(a) => ("stopApp", a.as_deref().map_or(Y::Null, s)),
        K::KillApp(a) => ("killApp", a.as_deref().map_or(Y::Null, s)),
        K::ClearState(a) => ("clearState", a.as_deref().map_or(Y::Null, s)),
        K::ClearKeychain => ("clearKeychain", Y::Null),
        K::SetPermissions {
            app_id,
            permissions,
        } => (
            "setPermissions",
            map(M::default()
                .opt("appId", app_id.as_deref().map(s))
                .put("permissions", text_map(permissions))),
        ),
        K::OpenLink {
            link,
            browser,
            auto_verify,
        } => (
            "openLink",
            map(M::default()
                .put("link", s(link))
                .put("browser", boolean(*browser))
                .put("autoVerify", boolean(*auto_verify))),
        ),
        K::SetLocation {
            latitude,
            longitude,
        } => (
            "setLocation",
            map(M::default()
                .put("latitude", s(latitude))
                .put("longitude", s(longitude))),
        ),
        K::Travel { points, speed } => (
            "travel",
            map(M::default()
                .put("points", Y::List(points.iter().map(|p| s(p)).collect()))
                .opt("speed", speed.map(num))),
        ),
        K::SetOrientation(o) => ("setOrientation", s(o)),
        K::SetAirplaneMode(on) => (
            "setAirplaneMode",
            s(if *on { "enabled" } else { "disabled" }),
        ),
        K::ToggleAirplaneMode => ("toggleAirplaneMode", Y::Null),
        K::TakeScreenshot(p) => ("takeScreenshot", s(p)),
        K::StartRecording(p) => ("startRecording", s(p)),
        K::StopRecording => ("stopRecording", Y::Null),
        K::AddMedia(files) => (
            "addMedia",
            map(M::default().put("files", Y::List(files.iter().map(|f| s(f)).collect()))),
        ),
        K::EvalScript(t) => ("evalScript", s(t)),
        K::RunScript(r) => (
            "runScript",
            map(M::default()
                .put("file", s(&r.file))
                .opt("env", (!r.env.is_empty()).then(|| env(&r.env)))
                .opt("when", r.when.as_ref().map(condition))),
        ),
        K::RunFlow(r) => (
            "runFlow",
            map(source(M::default(), &r.source)
                .opt("when", r.when.as_ref().map(condition))
                .opt("env", (!r.env.is_empty()).then(|| env(&r.env)))),
        ),
        K::Repeat(r) => (
            "repeat",
            map(M::default()
                .opt("times", r.times.as_ref().map(amount))
                .opt("while", r.while_.as_ref().map(condition))
                .put("commands", commands(&r.commands))),
        ),
        K::Retry(r) => (
            "retry",
            map(source(
                M::default().put("maxRetries", amount(&r.max_retries)),
                &r.source,
            )
            .opt("env", (!r.env.is_empty()).then(|| env(&r.env)))),
        ),
    }
}

fn text_map(m: &std::collections::BTreeMap<String, Text>) -> Y {
    Y::Map(m.iter().map(|(k, v)| (k.clone(), s(v))).collect())
}

fn tap(t: &Tap) -> (&'static str, Y) {
    let name = match t.kind {
        TapKind::Tap => "tapOn",
        TapKind::Double => "doubleTapOn",
        TapKind::Long => "longPressOn",
    };
    let mut m = match &t.target {
        Target::Element(sel) => selector(sel),
        Target::Point(p) => M::default().put("point", point(p)),
    };
    if !t.retry_if_no_change {
        m = m.put("retryTapIfNoChange", boolean(false));
    }
    if t.wait_until_visible {
        m = m.put("waitUntilVisible", boolean(true));
    }
    if let Some((n, delay)) = t.repeat {
        if t.kind != TapKind::Double {
            m = m.put("repeat", num(n));
        }
        if delay != 100 {
            m = m.put("delay", num(delay));
        }
    }
    m = m.opt("waitToSettleTimeoutMs", t.wait_to_settle_ms.map(num));
    (name, Y::Map(m.0))
}

fn swipe(sw: &Swipe) -> M {
    let m = match &sw.motion {
        SwipeMotion::Direction(d) => M::default().put("direction", direction(*d)),
        SwipeMotion::Points { start, end } => M::default()
            .put("start", point(start))
            .put("end", point(end)),
        SwipeMotion::Element { from, direction: d } => M::default()
            .put("from", Y::Map(selector(from).0))
            .put("direction", direction(*d)),
    };
    let m = if sw.duration_ms == 400 {
        m
    } else {
        m.put("duration", num(sw.duration_ms))
    };
    m.opt("waitToSettleTimeoutMs", sw.wait_to_settle_ms.map(num))
}

fn scroll_until(u: &ScrollUntilVisible) -> M {
    M::default()
        .put("element", Y::Map(selector(&u.element).0))
        .put("direction", direction(u.direction))
        .put("timeout", amount(&u.timeout))
        .put("speed", amount(&u.speed))
        .put("visibilityPercentage", num(u.visibility_percentage))
        .put("centerElement", boolean(u.center_element))
        .opt("waitToSettleTimeoutMs", u.wait_to_settle_ms.map(num))
}

fn launch(l: &LaunchApp) -> Y {
    let mut m = M::default().opt("appId", l.app_id.as_deref().map(s));
    if l.clear_state {
        m = m.put("clearState", boolean(true));
    }
    if l.clear_keychain {
        m = m.put("clearKeychain", boolean(true));
    }
    if !l.stop_app {
        m = m.put("stopApp", boolean(false));
    }
    if !l.permissions.is_empty() {
        m = m.put("permissions", text_map(&l.permissions));
    }
    if !l.arguments.is_empty() {
        m = m.put("arguments", text_map(&l.arguments));
    }
    if m.0.is_empty() { Y::Null } else { Y::Map(m.0) }
}

fn key_name(k: KeyName) -> &'static str {
    match k {
        KeyName::Enter => "Enter",
        KeyName::Backspace => "Backspace",
        KeyName::Back => "Back",
        KeyName::Home => "Home",
        KeyName::Lock => "Lock",
        KeyName::VolumeUp => "Volume Up",
        KeyName::VolumeDown => "Volume Down",
        KeyName::Escape => "Escape",
        KeyName::Power => "Power",
        KeyName::Tab => "Tab",
        KeyName::Remote(r) => r,
    }
}

#[cfg(test)]
#[path = "print_tests.rs"]
mod tests;
