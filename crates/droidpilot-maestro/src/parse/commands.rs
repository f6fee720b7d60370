//! One command per list item: `- name` (the bare form some commands have) or
//! `- name: argument` (a shorthand scalar or list, or a mapping of fields).

use super::fields::{Fields, amount, did_you_mean};
use super::selector::{SELECTOR_KEYS, is_empty, point, selector};
use super::{env_vars, string_list};
use crate::ast::*;
use crate::error::ParseError;
use crate::yaml::{Node, Value};

/// Every command name the parser reads (Maestro's reference, plus its legacy spellings
/// `action`, `openBrowser`, `hide keyboard`).
pub const COMMANDS: &[&str] = &[
    "tapOn",
    "doubleTapOn",
    "longPressOn",
    "swipe",
    "scroll",
    "scrollUntilVisible",
    "inputText",
    "inputRandomText",
    "inputRandomNumber",
    "inputRandomEmail",
    "inputRandomPersonName",
    "inputRandomCityName",
    "inputRandomCountryName",
    "inputRandomColorName",
    "eraseText",
    "copyTextFrom",
    "pasteText",
    "setClipboard",
    "hideKeyboard",
    "assertVisible",
    "assertNotVisible",
    "assertTrue",
    "extendedWaitUntil",
    "waitForAnimationToEnd",
    "assertWithAI",
    "assertNoDefectsWithAI",
    "extractTextWithAI",
    "back",
    "pressKey",
    "launchApp",
    "stopApp",
    "killApp",
    "clearState",
    "clearKeychain",
    "setPermissions",
    "openLink",
    "setLocation",
    "travel",
    "setOrientation",
    "setAirplaneMode",
    "toggleAirplaneMode",
    "takeScreenshot",
    "startRecording",
    "stopRecording",
    "addMedia",
    "evalScript",
    "runScript",
    "runFlow",
    "repeat",
    "retry",
    "action",
    "openBrowser",
];

/// Maestro commands this server cannot run yet, with why.
const NOT_HERE: &[(&str, &str)] = &[
    (
        "assertScreenshot",
        "compares the screen with a stored baseline image, which a flow here cannot carry yet",
    ),
    (
        "assertVisual",
        "compares the screen with a baseline kept by Maestro's cloud",
    ),
    (
        "extractPointWithAI",
        "asks Maestro's own AI service for a point; not served here yet",
    ),
    (
        "extractComponentWithAI",
        "asks Maestro's own AI service with a reference image; not served here yet",
    ),
];

const COMMON: &[&str] = &["label", "optional"];

/// A YAML list of commands.
pub fn command_list(node: &Node, whose: &str) -> Result<Vec<Command>, ParseError> {
    let items = node.seq().ok_or_else(|| {
        ParseError::new(
            node.line,
            "invalid_command",
            format!("{whose} must be a list of commands, not {}", node.kind()),
            "Write each command on its own line starting with `- `.",
        )
    })?;
    items.iter().map(command).collect()
}

fn command(item: &Node) -> Result<Command, ParseError> {
    let null = Node {
        line: item.line,
        value: Value::Null,
    };
    let (name, arg) = match &item.value {
        Value::Str(s) => (s.as_str(), &null),
        Value::Map(kv) if kv.len() == 1 => (kv[0].0.as_str(), &kv[0].2),
        Value::Map(kv) if kv.len() > 1 => {
            let names: Vec<&str> = kv.iter().map(|(k, _, _)| k.as_str()).collect();
            return Err(ParseError::new(
                kv[1].1,
                "invalid_command",
                format!(
                    "one list item holds {} keys ({})",
                    kv.len(),
                    names.join(", ")
                ),
                format!(
                    "A command is one key: indent `{}` under `{}`, or start a new command with `- `.",
                    kv[1].0, kv[0].0
                ),
            ));
        }
        _ => {
            return Err(ParseError::new(
                item.line,
                "invalid_command",
                format!(
                    "a command is `- name` or `- name: argument`, not {}",
                    item.kind()
                ),
                "See docs/maestro.md for the commands.",
            ));
        }
    };
    let (kind, label, optional) = kind(name, arg, item.line)?;
    Ok(Command {
        line: item.line,
        label,
        optional,
        kind,
    })
}

type Parsed = (CommandKind, Option<String>, bool);

/// A command's argument is a mapping (`Some`), or absent/null (`None`); anything else
/// is `scalar_form`'s to read, or an error.
fn bare_or_map<'a>(
    name: &'a str,
    arg: &'a Node,
    allowed: &[&str],
) -> Result<Option<Fields<'a>>, ParseError> {
    match &arg.value {
        Value::Null => Ok(None),
        Value::Map(_) => Fields::new(name, arg, allowed).map(Some),
        _ => Err(ParseError::new(
            arg.line,
            "invalid_command",
            format!("`{name}` takes no value here ({} given)", arg.kind()),
            format!(
                "Write `- {name}` alone, or with its fields: {}.",
                allowed.join(", ")
            ),
        )),
    }
}

/// Commands whose only fields are `label` and `optional`.
fn simple(name: &str, arg: &Node, kind: CommandKind, optional: bool) -> Result<Parsed, ParseError> {
    let (label, optional) = match bare_or_map(name, arg, COMMON)? {
        Some(f) => f.common(optional)?,
        None => (None, optional),
    };
    Ok((kind, label, optional))
}

/// A command read as `- name: value` or `- name: {main: value, …}`: the main value,
/// the mapping's fields (when a mapping), label and optional.
struct ScalarOr<'a> {
    value: Option<String>,
    fields: Option<Fields<'a>>,
    label: Option<String>,
    optional: bool,
}

fn scalar_or<'a>(
    name: &'a str,
    arg: &'a Node,
    main: &str,
    allowed: &[&str],
    optional_default: bool,
) -> Result<ScalarOr<'a>, ParseError> {
    match &arg.value {
        Value::Str(s) => Ok(ScalarOr {
            value: Some(s.clone()),
            fields: None,
            label: None,
            optional: optional_default,
        }),
        Value::Null => Ok(ScalarOr {
            value: None,
            fields: None,
            label: None,
            optional: optional_default,
        }),
        Value::Map(_) => {
            let f = Fields::new(name, arg, allowed)?;
            let (label, optional) = f.common(optional_default)?;
            Ok(ScalarOr {
                value: f.text(main)?,
                fields: Some(f),
                label,
                optional,
            })
        }
        Value::Seq(_) => Err(ParseError::new(
            arg.line,
            "invalid_command",
            format!("`{name}` takes text or a mapping, not a list"),
            format!("Write `- {name}: value` or `- {name}: {{{main}: value}}`."),
        )),
    }
}

fn required(v: Option<String>, name: &str, main: &str, line: usize) -> Result<String, ParseError> {
    v.ok_or_else(|| {
        ParseError::new(
            line,
            "invalid_command",
            format!("`{name}` needs `{main}`"),
            format!("Write `- {name}: value` or `- {name}: {{{main}: value}}`."),
        )
    })
}

fn kind(name: &str, arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    for group in [
        touch_or_text,
        check_or_wait,
        keys_and_apps,
        device_state,
        script_or_flow,
    ] {
        if let Some(parsed) = group(name, arg, line)? {
            return Ok(parsed);
        }
    }
    Err(unknown(name, line))
}

/// Touching the screen and typing.
fn touch_or_text(name: &str, arg: &Node, line: usize) -> Result<Option<Parsed>, ParseError> {
    use CommandKind as K;
    let parsed: Result<Parsed, ParseError> = match name {
        "tapOn" => tap(name, arg, TapKind::Tap),
        "doubleTapOn" => tap(name, arg, TapKind::Double),
        "longPressOn" => tap(name, arg, TapKind::Long),
        "swipe" => swipe(arg, line),
        "scroll" => simple(name, arg, K::Scroll, false),
        "scrollUntilVisible" => scroll_until_visible(arg, line),
        "inputText" => {
            let s = scalar_or(name, arg, "text", &["text", "label", "optional"], false)?;
            let text = required(s.value, name, "text", line)?;
            Ok((K::InputText(text), s.label, s.optional))
        }
        "inputRandomText" | "inputRandomNumber" => {
            let f = bare_or_map(name, arg, &["length", "label", "optional"])?;
            let (label, optional) = f.as_ref().map_or(Ok((None, false)), |f| f.common(false))?;
            let length = f.as_ref().map_or(Ok(None), |f| f.uint("length"))?;
            let kind = if name == "inputRandomText" {
                RandomKind::Text
            } else {
                RandomKind::Number
            };
            Ok((
                K::InputRandom {
                    kind,
                    length: length.map(|l| l.min(u32::MAX as u64) as u32),
                },
                label,
                optional,
            ))
        }
        "inputRandomEmail"
        | "inputRandomPersonName"
        | "inputRandomCityName"
        | "inputRandomCountryName"
        | "inputRandomColorName" => {
            let kind = match name {
                "inputRandomEmail" => RandomKind::Email,
                "inputRandomPersonName" => RandomKind::PersonName,
                "inputRandomCityName" => RandomKind::CityName,
                "inputRandomCountryName" => RandomKind::CountryName,
                _ => RandomKind::ColorName,
            };
            simple(name, arg, K::InputRandom { kind, length: None }, false)
        }
        "eraseText" => erase_text(arg),
        "copyTextFrom" => {
            let sel = element(name, arg, COMMON)?;
            let (label, optional) = label_optional(name, arg)?;
            Ok((K::CopyTextFrom(sel), label, optional))
        }
        "pasteText" => simple(name, arg, K::PasteText, false),
        "setClipboard" => {
            let s = scalar_or(name, arg, "text", &["text", "label", "optional"], false)?;
            let text = required(s.value, name, "text", line)?;
            Ok((K::SetClipboard(text), s.label, s.optional))
        }
        "hideKeyboard" | "hide keyboard" => simple(name, arg, K::HideKeyboard, false),
        _ => return Ok(None),
    };
    parsed.map(Some)
}

/// Assertions, waits and the AI commands.
fn check_or_wait(name: &str, arg: &Node, line: usize) -> Result<Option<Parsed>, ParseError> {
    use CommandKind as K;
    let parsed: Result<Parsed, ParseError> = match name {
        "assertVisible" | "assertNotVisible" => {
            let sel = element(name, arg, COMMON)?;
            let (label, optional) = label_optional(name, arg)?;
            let k = if name == "assertVisible" {
                K::AssertVisible(sel)
            } else {
                K::AssertNotVisible(sel)
            };
            Ok((k, label, optional))
        }
        "assertTrue" => {
            let s = scalar_or(
                name,
                arg,
                "condition",
                &["condition", "label", "optional"],
                false,
            )?;
            let condition = required(s.value, name, "condition", line)?;
            Ok((K::AssertTrue(condition), s.label, s.optional))
        }
        "extendedWaitUntil" => extended_wait(arg, line),
        "waitForAnimationToEnd" => {
            let f = bare_or_map(name, arg, &["timeout", "label", "optional"])?;
            let (label, optional) = f.as_ref().map_or(Ok((None, false)), |f| f.common(false))?;
            let timeout = f.as_ref().map_or(Ok(None), |f| f.uint("timeout"))?;
            Ok((K::WaitForAnimationToEnd(timeout), label, optional))
        }
        "assertWithAI" => {
            let s = scalar_or(
                name,
                arg,
                "assertion",
                &["assertion", "label", "optional"],
                true,
            )?;
            let a = required(s.value, name, "assertion", line)?;
            Ok((K::AssertWithAi(a), s.label, s.optional))
        }
        "assertNoDefectsWithAI" => simple(name, arg, K::AssertNoDefectsWithAi, true),
        "extractTextWithAI" => {
            let allowed = &["query", "outputVariable", "label", "optional"];
            let s = scalar_or(name, arg, "query", allowed, true)?;
            let out = match &s.fields {
                Some(f) => f.text("outputVariable")?,
                None => None,
            };
            let query = required(s.value, name, "query", line)?;
            let kind = K::ExtractTextWithAi {
                query,
                output_variable: out.unwrap_or_else(|| "aiOutput".into()),
            };
            Ok((kind, s.label, s.optional))
        }
        _ => return Ok(None),
    };
    parsed.map(Some)
}

/// Keys and apps.
fn keys_and_apps(name: &str, arg: &Node, line: usize) -> Result<Option<Parsed>, ParseError> {
    use CommandKind as K;
    let parsed: Result<Parsed, ParseError> = match name {
        "back" => simple(name, arg, K::Back, false),
        "pressKey" => {
            let s = scalar_or(name, arg, "key", &["key", "label", "optional"], false)?;
            let key = required(s.value, name, "key", line)?;
            Ok((K::PressKey(key_name(&key, arg.line)?), s.label, s.optional))
        }
        "launchApp" => launch_app(arg),
        "stopApp" | "killApp" | "clearState" => {
            let s = scalar_or(name, arg, "appId", &["appId", "label", "optional"], false)?;
            let k = match name {
                "stopApp" => K::StopApp(s.value),
                "killApp" => K::KillApp(s.value),
                _ => K::ClearState(s.value),
            };
            Ok((k, s.label, s.optional))
        }
        "clearKeychain" => simple(name, arg, K::ClearKeychain, false),
        "setPermissions" => {
            let f = Fields::new(
                name,
                arg,
                &["appId", "url", "permissions", "label", "optional"],
            )?;
            let (label, optional) = f.common(false)?;
            let app_id = f.text("appId")?.or(f.text("url")?);
            let permissions = f.text_map("permissions")?;
            if permissions.is_empty() {
                return Err(ParseError::new(
                    line,
                    "invalid_command",
                    "`setPermissions` needs `permissions`",
                    "Write `permissions: {all: allow}` or `{camera: deny}`.",
                ));
            }
            Ok((
                K::SetPermissions {
                    app_id,
                    permissions,
                },
                label,
                optional,
            ))
        }
        _ => return Ok(None),
    };
    parsed.map(Some)
}

/// Links, location, orientation, airplane mode, screenshots, recordings and media.
fn device_state(name: &str, arg: &Node, line: usize) -> Result<Option<Parsed>, ParseError> {
    use CommandKind as K;
    let parsed: Result<Parsed, ParseError> = match name {
        "openLink" | "openBrowser" => {
            let allowed = &["link", "browser", "autoVerify", "label", "optional"];
            let s = scalar_or(name, arg, "link", allowed, false)?;
            let (browser, auto_verify) = match &s.fields {
                Some(f) => (f.bool("browser")?, f.bool("autoVerify")?),
                None => (None, None),
            };
            let link = required(s.value, name, "link", line)?;
            let kind = K::OpenLink {
                link,
                browser: browser.unwrap_or(name == "openBrowser"),
                auto_verify: auto_verify.unwrap_or(false),
            };
            Ok((kind, s.label, s.optional))
        }
        "setLocation" => {
            let f = Fields::new(name, arg, &["latitude", "longitude", "label", "optional"])?;
            let (label, optional) = f.common(false)?;
            let latitude = required(f.text("latitude")?, name, "latitude", line)?;
            let longitude = required(f.text("longitude")?, name, "longitude", line)?;
            Ok((
                K::SetLocation {
                    latitude,
                    longitude,
                },
                label,
                optional,
            ))
        }
        "travel" => travel(arg, line),
        "setOrientation" => {
            let s = scalar_or(
                name,
                arg,
                "orientation",
                &["orientation", "label", "optional"],
                false,
            )?;
            let o = required(s.value, name, "orientation", line)?;
            Ok((
                K::SetOrientation(orientation(&o, arg.line)?),
                s.label,
                s.optional,
            ))
        }
        "setAirplaneMode" => airplane(arg, line),
        "toggleAirplaneMode" => simple(name, arg, K::ToggleAirplaneMode, false),
        "takeScreenshot" | "startRecording" => {
            let s = scalar_or(name, arg, "path", &["path", "label", "optional"], false)?;
            let path = required(s.value, name, "path", line)?;
            let k = if name == "takeScreenshot" {
                K::TakeScreenshot(path)
            } else {
                K::StartRecording(path)
            };
            Ok((k, s.label, s.optional))
        }
        "stopRecording" => simple(name, arg, K::StopRecording, false),
        "addMedia" => add_media(arg, line),
        _ => return Ok(None),
    };
    parsed.map(Some)
}

/// JavaScript, control flow and the legacy `action`.
fn script_or_flow(name: &str, arg: &Node, line: usize) -> Result<Option<Parsed>, ParseError> {
    use CommandKind as K;
    let parsed: Result<Parsed, ParseError> = match name {
        "evalScript" => {
            let s = scalar_or(name, arg, "script", &["script", "label", "optional"], false)?;
            Ok((
                K::EvalScript(required(s.value, name, "script", line)?),
                s.label,
                s.optional,
            ))
        }
        "runScript" => run_script(arg, line),
        "runFlow" => run_flow(arg, line),
        "repeat" => repeat(arg, line),
        "retry" => retry(arg, line),
        "action" => legacy_action(arg, line),
        _ => return Ok(None),
    };
    parsed.map(Some)
}

fn unknown(name: &str, line: usize) -> ParseError {
    if let Some((_, why)) = NOT_HERE.iter().find(|(n, _)| *n == name) {
        return ParseError::new(
            line,
            "not_supported",
            format!("`{name}` {why}"),
            "Remove the command, or check the screen with `assertVisible` / `assertWithAI`.",
        );
    }
    let all = COMMANDS
        .iter()
        .chain(NOT_HERE.iter().map(|(n, _)| n))
        .copied();
    let hint = match did_you_mean(name, all) {
        Some(k) => format!("Did you mean `{k}`?"),
        None => "See docs/maestro.md for the commands Maestro has.".into(),
    };
    ParseError::new(
        line,
        "unknown_command",
        format!("`{name}` is not a Maestro command"),
        hint,
    )
}

fn label_optional(name: &str, arg: &Node) -> Result<(Option<String>, bool), ParseError> {
    if arg.map().is_none() {
        return Ok((None, false));
    }
    let allowed: Vec<&str> = SELECTOR_KEYS.iter().chain(COMMON).copied().collect();
    Fields::new(name, arg, &allowed)?.common(false)
}

/// A selector naming at least one thing to match.
fn element(name: &str, arg: &Node, extra: &[&str]) -> Result<Selector, ParseError> {
    let sel = selector(arg, name, extra)?;
    if is_empty(&sel) {
        return Err(ParseError::new(
            arg.line,
            "invalid_command",
            format!("`{name}` names no element"),
            format!("Write `- {name}: \"Text\"` or `- {name}: {{id: \"button_id\"}}`."),
        ));
    }
    Ok(sel)
}

const TAP_KEYS: &[&str] = &[
    "retryTapIfNoChange",
    "waitUntilVisible",
    "point",
    "repeat",
    "delay",
    "waitToSettleTimeoutMs",
    "label",
    "optional",
];

fn tap(name: &str, arg: &Node, kind: TapKind) -> Result<Parsed, ParseError> {
    let sel = selector(arg, name, TAP_KEYS)?;
    let mut tap = Tap {
        kind,
        target: Target::Element(sel.clone()),
        retry_if_no_change: true,
        wait_until_visible: false,
        repeat: (kind == TapKind::Double).then_some((2, 100)),
        wait_to_settle_ms: None,
    };
    let (mut label, mut optional) = (None, false);
    if arg.map().is_some() {
        let allowed: Vec<&str> = SELECTOR_KEYS.iter().chain(TAP_KEYS).copied().collect();
        let f = Fields::new(name, arg, &allowed)?;
        (label, optional) = f.common(false)?;
        tap.retry_if_no_change = f.bool("retryTapIfNoChange")?.unwrap_or(true);
        tap.wait_until_visible = f.bool("waitUntilVisible")?.unwrap_or(false);
        tap.wait_to_settle_ms = f.uint("waitToSettleTimeoutMs")?.map(|t| t.min(30_000));
        let delay = f
            .int("delay")?
            .filter(|d| *d >= 0)
            .map_or(100, |d| d as u64);
        if kind == TapKind::Double {
            tap.repeat = Some((2, delay));
        } else if let Some(n) = f.int("repeat")? {
            tap.repeat = Some((n.max(1) as u32, delay));
        }
        if let Some(p) = f.text("point")? {
            if !is_empty(&sel) {
                return Err(ParseError::new(
                    f.line_of("point"),
                    "invalid_command",
                    format!("`{name}` has both a `point` and an element"),
                    "Maestro taps the point and ignores the element; keep one of them.",
                ));
            }
            tap.target = Target::Point(point(&p, f.line_of("point"), "point")?);
        }
    }
    if matches!(&tap.target, Target::Element(s) if is_empty(s)) {
        return Err(ParseError::new(
            arg.line,
            "invalid_command",
            format!("`{name}` names no element and no point"),
            format!(
                "Write `- {name}: \"Text\"`, `{{id: \"button_id\"}}` or `{{point: \"50%,50%\"}}`."
            ),
        ));
    }
    Ok((CommandKind::Tap(tap), label, optional))
}

fn direction(s: &str, line: usize) -> Result<Direction, ParseError> {
    match s.to_ascii_uppercase().as_str() {
        "UP" => Ok(Direction::Up),
        "DOWN" => Ok(Direction::Down),
        "LEFT" => Ok(Direction::Left),
        "RIGHT" => Ok(Direction::Right),
        _ => Err(ParseError::new(
            line,
            "invalid_command",
            format!("direction `{s}` is not UP, DOWN, LEFT or RIGHT"),
            "Write `direction: DOWN`.",
        )),
    }
}

fn swipe(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let allowed = &[
        "direction",
        "start",
        "end",
        "from",
        "duration",
        "waitToSettleTimeoutMs",
        "label",
        "optional",
    ];
    let f = Fields::new("swipe", arg, allowed)?;
    let (label, optional) = f.common(false)?;
    let dir = f.text("direction")?;
    let (start, end) = (f.text("start")?, f.text("end")?);
    let motion = match (dir, start, end) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ParseError::new(
                line,
                "invalid_command",
                "`swipe` has both a direction and start/end points",
                "Give `direction` (with `from` for an element), or `start` and `end`.",
            ));
        }
        (Some(d), None, None) => {
            let d = direction(&d, f.line_of("direction"))?;
            match f.get("from") {
                Some(n) => SwipeMotion::Element {
                    from: element("swipe from", n, &[])?,
                    direction: d,
                },
                None => SwipeMotion::Direction(d),
            }
        }
        (None, Some(s), Some(e)) => {
            let start = point(&s, f.line_of("start"), "start")?;
            let end = point(&e, f.line_of("end"), "end")?;
            let pct = |p: &Point| matches!(p, Point::Percent(..));
            if !matches!(start, Point::Expr(_))
                && !matches!(end, Point::Expr(_))
                && pct(&start) != pct(&end)
            {
                return Err(ParseError::new(
                    line,
                    "invalid_command",
                    "`swipe` mixes a percentage point with a pixel point",
                    "Write both `start` and `end` in % or both in pixels.",
                ));
            }
            SwipeMotion::Points { start, end }
        }
        (None, _, _) => {
            return Err(ParseError::new(
                line,
                "invalid_command",
                "`swipe` needs a `direction`, or both `start` and `end`",
                "Write `- swipe: {direction: LEFT}`, `{from: {id: x}, direction: UP}` or `{start: \"90%,50%\", end: \"10%,50%\"}`.",
            ));
        }
    };
    let swipe = Swipe {
        motion,
        duration_ms: f.uint("duration")?.unwrap_or(400),
        wait_to_settle_ms: f.uint("waitToSettleTimeoutMs")?,
    };
    Ok((CommandKind::Swipe(swipe), label, optional))
}

fn scroll_until_visible(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let allowed = &[
        "element",
        "direction",
        "timeout",
        "speed",
        "visibilityPercentage",
        "centerElement",
        "waitToSettleTimeoutMs",
        "label",
        "optional",
    ];
    let f = Fields::new("scrollUntilVisible", arg, allowed)?;
    let (label, optional) = f.common(false)?;
    let el = f.get("element").ok_or_else(|| {
        ParseError::new(
            line,
            "invalid_command",
            "`scrollUntilVisible` needs `element`",
            "Write `- scrollUntilVisible: {element: {text: \"Item\"}, direction: DOWN}`.",
        )
    })?;
    let s = ScrollUntilVisible {
        element: element("scrollUntilVisible element", el, &[])?,
        direction: match f.text("direction")? {
            Some(d) => direction(&d, f.line_of("direction"))?,
            None => Direction::Down,
        },
        timeout: f.amount("timeout")?.unwrap_or(Amount::Fixed(20_000.0)),
        speed: f.amount("speed")?.unwrap_or(Amount::Fixed(40.0)),
        visibility_percentage: f.int("visibilityPercentage")?.unwrap_or(100).clamp(0, 100) as u32,
        center_element: f.bool("centerElement")?.unwrap_or(false),
        wait_to_settle_ms: f.uint("waitToSettleTimeoutMs")?,
    };
    Ok((CommandKind::ScrollUntilVisible(s), label, optional))
}

fn erase_text(arg: &Node) -> Result<Parsed, ParseError> {
    match &arg.value {
        Value::Str(s) => {
            let n: u32 = s.trim().parse().map_err(|_| {
                ParseError::new(
                    arg.line,
                    "invalid_command",
                    format!("`eraseText` takes a number of characters, not `{s}`"),
                    "Write `- eraseText: 10` or `- eraseText` (50 characters).",
                )
            })?;
            Ok((CommandKind::EraseText(Some(n)), None, false))
        }
        _ => {
            let f = bare_or_map(
                "eraseText",
                arg,
                &["charactersToErase", "label", "optional"],
            )?;
            let (label, optional) = f.as_ref().map_or(Ok((None, false)), |f| f.common(false))?;
            let n = f
                .as_ref()
                .map_or(Ok(None), |f| f.uint("charactersToErase"))?;
            Ok((
                CommandKind::EraseText(n.map(|n| n.min(u32::MAX as u64) as u32)),
                label,
                optional,
            ))
        }
    }
}

fn extended_wait(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let f = Fields::new(
        "extendedWaitUntil",
        arg,
        &["visible", "notVisible", "timeout", "label", "optional"],
    )?;
    let (label, optional) = f.common(false)?;
    let visible = f
        .get("visible")
        .map(|n| element("visible", n, &[]))
        .transpose()?;
    let not_visible = f
        .get("notVisible")
        .map(|n| element("notVisible", n, &[]))
        .transpose()?;
    if visible.is_none() && not_visible.is_none() {
        return Err(ParseError::new(
            line,
            "invalid_command",
            "`extendedWaitUntil` needs `visible` or `notVisible`",
            "Write `- extendedWaitUntil: {visible: \"Done\", timeout: 10000}`.",
        ));
    }
    let kind = CommandKind::ExtendedWaitUntil {
        visible,
        not_visible,
        timeout: f.amount("timeout")?,
    };
    Ok((kind, label, optional))
}

fn key_name(s: &str, line: usize) -> Result<KeyName, ParseError> {
    const REMOTE: &[&str] = &[
        "Remote Dpad Up",
        "Remote Dpad Down",
        "Remote Dpad Left",
        "Remote Dpad Right",
        "Remote Dpad Center",
        "Remote Media Play Pause",
        "Remote Media Stop",
        "Remote Media Next",
        "Remote Media Previous",
        "Remote Media Rewind",
        "Remote Media Fast Forward",
        "Remote System Navigation Up",
        "Remote System Navigation Down",
        "Remote Button A",
        "Remote Button B",
        "Remote Menu",
        "TV Input",
        "TV Input HDMI 1",
        "TV Input HDMI 2",
        "TV Input HDMI 3",
    ];
    let k = match s.to_lowercase().as_str() {
        "enter" => KeyName::Enter,
        "backspace" => KeyName::Backspace,
        "back" => KeyName::Back,
        "home" => KeyName::Home,
        "lock" => KeyName::Lock,
        "volume up" => KeyName::VolumeUp,
        "volume down" => KeyName::VolumeDown,
        "escape" => KeyName::Escape,
        "power" => KeyName::Power,
        "tab" => KeyName::Tab,
        other => match REMOTE.iter().find(|r| r.to_lowercase() == other) {
            Some(r) => KeyName::Remote(r),
            None => {
                return Err(ParseError::new(
                    line,
                    "invalid_command",
                    format!("`pressKey` has no key `{s}`"),
                    "Keys: Enter, Backspace, Back, Home, Lock, Volume Up, Volume Down, Escape, Power, Tab, Remote Dpad Up, ….",
                ));
            }
        },
    };
    Ok(k)
}

fn launch_app(arg: &Node) -> Result<Parsed, ParseError> {
    let allowed = &[
        "appId",
        "url",
        "clearState",
        "clearKeychain",
        "stopApp",
        "permissions",
        "arguments",
        "label",
        "optional",
    ];
    let s = scalar_or("launchApp", arg, "appId", allowed, false)?;
    let mut app = LaunchApp {
        app_id: s.value,
        clear_state: false,
        clear_keychain: false,
        stop_app: true,
        permissions: Default::default(),
        arguments: Default::default(),
    };
    if let Some(f) = &s.fields {
        app.app_id = app.app_id.or(f.text("url")?);
        app.clear_state = f.bool("clearState")?.unwrap_or(false);
        app.clear_keychain = f.bool("clearKeychain")?.unwrap_or(false);
        app.stop_app = f.bool("stopApp")?.unwrap_or(true);
        app.permissions = f.text_map("permissions")?;
        app.arguments = f.text_map("arguments")?;
    }
    Ok((CommandKind::LaunchApp(app), s.label, s.optional))
}

fn travel(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let f = Fields::new("travel", arg, &["points", "speed", "label", "optional"])?;
    let (label, optional) = f.common(false)?;
    let points = match f.get("points") {
        Some(n) => string_list("points", n)?,
        None => Vec::new(),
    };
    if points.len() < 2 {
        return Err(ParseError::new(
            line,
            "invalid_command",
            "`travel` needs at least two `points`",
            "Write `points: [\"46.52,6.63\", \"46.51,6.62\"]`.",
        ));
    }
    for p in &points {
        let ok = p.contains("${")
            || p.split(',')
                .map(|x| x.trim().parse::<f64>())
                .filter(Result::is_ok)
                .count()
                == 2
                && p.split(',').count() == 2;
        if !ok {
            return Err(ParseError::new(
                f.line_of("points"),
                "invalid_command",
                format!("travel point `{p}` is not `latitude,longitude`"),
                "Write points as `\"46.52,6.63\"`.",
            ));
        }
    }
    let speed = match f.text("speed")? {
        Some(s) => Some(s.trim().parse::<f64>().map_err(|_| {
            ParseError::new(
                f.line_of("speed"),
                "invalid_command",
                format!("`speed` is metres per second, not `{s}`"),
                "Write `speed: 7.9`.",
            )
        })?),
        None => None,
    };
    Ok((CommandKind::Travel { points, speed }, label, optional))
}

fn orientation(s: &str, line: usize) -> Result<String, ParseError> {
    if s.contains("${") {
        return Ok(s.to_string());
    }
    let norm = s.replace('_', "").to_ascii_uppercase();
    let name = match norm.as_str() {
        "PORTRAIT" => "PORTRAIT",
        "LANDSCAPELEFT" => "LANDSCAPE_LEFT",
        "LANDSCAPERIGHT" => "LANDSCAPE_RIGHT",
        "UPSIDEDOWN" => "UPSIDE_DOWN",
        _ => {
            return Err(ParseError::new(
                line,
                "invalid_command",
                format!("`setOrientation` has no orientation `{s}`"),
                "Orientations: PORTRAIT, LANDSCAPE_LEFT, LANDSCAPE_RIGHT, UPSIDE_DOWN.",
            ));
        }
    };
    Ok(name.to_string())
}

fn airplane(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let s = scalar_or(
        "setAirplaneMode",
        arg,
        "value",
        &["value", "label", "optional"],
        false,
    )?;
    let v = required(s.value, "setAirplaneMode", "value", line)?;
    let on = match v.as_str() {
        "enabled" => true,
        "disabled" => false,
        _ => {
            return Err(ParseError::new(
                arg.line,
                "invalid_command",
                format!("`setAirplaneMode` is `enabled` or `disabled`, not `{v}`"),
                "Write `- setAirplaneMode: enabled`.",
            ));
        }
    };
    Ok((CommandKind::SetAirplaneMode(on), s.label, s.optional))
}

fn add_media(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let (files, label, optional) = match &arg.value {
        Value::Seq(_) => (string_list("addMedia", arg)?, None, false),
        _ => {
            let f = Fields::new("addMedia", arg, &["files", "label", "optional"])?;
            let (label, optional) = f.common(false)?;
            let files = match f.get("files") {
                Some(n) => string_list("files", n)?,
                None => Vec::new(),
            };
            (files, label, optional)
        }
    };
    if files.is_empty() {
        return Err(ParseError::new(
            line,
            "invalid_command",
            "`addMedia` needs at least one file",
            "Write `- addMedia: [\"photo.png\"]`.",
        ));
    }
    Ok((CommandKind::AddMedia(files), label, optional))
}

fn condition(node: &Node, key: &str) -> Result<Condition, ParseError> {
    let f = Fields::new(
        key,
        node,
        &[
            "platform",
            "visible",
            "notVisible",
            "true",
            "label",
            "optional",
        ],
    )?;
    let platform = match f.text("platform")? {
        None => None,
        Some(p) => Some(match p.to_ascii_lowercase().as_str() {
            "android" => Platform::Android,
            "ios" => Platform::Ios,
            "web" => Platform::Web,
            _ => {
                return Err(ParseError::new(
                    f.line_of("platform"),
                    "invalid_command",
                    format!("platform `{p}` is not Android, iOS or Web"),
                    "Write `platform: Android`.",
                ));
            }
        }),
    };
    let c = Condition {
        platform,
        visible: f
            .get("visible")
            .map(|n| element("visible", n, &[]))
            .transpose()?,
        not_visible: f
            .get("notVisible")
            .map(|n| element("notVisible", n, &[]))
            .transpose()?,
        script: f.text("true")?,
    };
    if c == Condition::default() {
        return Err(ParseError::new(
            node.line,
            "invalid_command",
            format!("`{key}` states no condition"),
            "Give `visible`, `notVisible`, `platform` or `true`.",
        ));
    }
    Ok(c)
}

/// `file` or `commands`, exactly one.
fn source(f: &Fields, name: &str, line: usize) -> Result<FlowSource, ParseError> {
    match (f.text("file")?, f.get("commands")) {
        (Some(path), None) => Ok(FlowSource::File { path }),
        (None, Some(c)) => Ok(FlowSource::Inline(command_list(
            c,
            &format!("`{name}` commands"),
        )?)),
        (Some(_), Some(_)) => Err(ParseError::new(
            line,
            "invalid_command",
            format!("`{name}` has both `file` and `commands`"),
            "Give one of them.",
        )),
        (None, None) => Err(ParseError::new(
            line,
            "invalid_command",
            format!("`{name}` needs `file` or `commands`"),
            format!("Write `- {name}: other.yaml` or `- {name}: {{commands: [...]}}`."),
        )),
    }
}

fn run_flow(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    if let Some(path) = arg.str() {
        let r = RunFlow {
            source: FlowSource::File {
                path: path.to_string(),
            },
            when: None,
            env: Vec::new(),
        };
        return Ok((CommandKind::RunFlow(r), None, false));
    }
    let f = Fields::new(
        "runFlow",
        arg,
        &["file", "commands", "when", "env", "label", "optional"],
    )?;
    let (label, optional) = f.common(false)?;
    let r = RunFlow {
        source: source(&f, "runFlow", line)?,
        when: f.get("when").map(|n| condition(n, "when")).transpose()?,
        env: f
            .get("env")
            .map(|n| env_vars("env", n))
            .transpose()?
            .unwrap_or_default(),
    };
    Ok((CommandKind::RunFlow(r), label, optional))
}

fn run_script(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    if let Some(path) = arg.str() {
        let r = RunScript {
            file: path.to_string(),
            env: Vec::new(),
            when: None,
        };
        return Ok((CommandKind::RunScript(r), None, false));
    }
    let f = Fields::new(
        "runScript",
        arg,
        &["file", "env", "when", "label", "optional"],
    )?;
    let (label, optional) = f.common(false)?;
    let r = RunScript {
        file: required(f.text("file")?, "runScript", "file", line)?,
        env: f
            .get("env")
            .map(|n| env_vars("env", n))
            .transpose()?
            .unwrap_or_default(),
        when: f.get("when").map(|n| condition(n, "when")).transpose()?,
    };
    Ok((CommandKind::RunScript(r), label, optional))
}

fn repeat(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let f = Fields::new(
        "repeat",
        arg,
        &["times", "while", "commands", "label", "optional"],
    )?;
    let (label, optional) = f.common(false)?;
    let commands = f.get("commands").ok_or_else(|| {
        ParseError::new(
            line,
            "invalid_command",
            "`repeat` needs `commands`",
            "Write `- repeat: {times: 3, commands: [...]}`.",
        )
    })?;
    let r = Repeat {
        times: f.amount("times")?,
        while_: f.get("while").map(|n| condition(n, "while")).transpose()?,
        commands: command_list(commands, "`repeat` commands")?,
    };
    Ok((CommandKind::Repeat(r), label, optional))
}

fn retry(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let f = Fields::new(
        "retry",
        arg,
        &["maxRetries", "file", "commands", "env", "label", "optional"],
    )?;
    let (label, optional) = f.common(false)?;
    let r = Retry {
        max_retries: match f.text("maxRetries")? {
            Some(s) => amount(&s, f.line_of("maxRetries"), "retry", "maxRetries")?,
            None => Amount::Fixed(1.0),
        },
        source: source(&f, "retry", line)?,
        env: f
            .get("env")
            .map(|n| env_vars("env", n))
            .transpose()?
            .unwrap_or_default(),
    };
    Ok((CommandKind::Retry(r), label, optional))
}

/// Maestro's legacy `- action: back` form.
fn legacy_action(arg: &Node, line: usize) -> Result<Parsed, ParseError> {
    let k = match arg.str() {
        Some("back") => CommandKind::Back,
        Some("hideKeyboard") => CommandKind::HideKeyboard,
        Some("scroll") => CommandKind::Scroll,
        Some("clearKeychain") => CommandKind::ClearKeychain,
        Some("pasteText") => CommandKind::PasteText,
        other => {
            return Err(ParseError::new(
                line,
                "invalid_command",
                format!(
                    "`action: {}` is not one of Maestro's actions",
                    other.unwrap_or("")
                ),
                "Actions: back, hideKeyboard, scroll, clearKeychain, pasteText.",
            ));
        }
    };
    Ok((k, None, false))
}
