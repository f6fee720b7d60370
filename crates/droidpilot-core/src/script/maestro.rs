//! Maestro flow YAML ⇄ `Script` (pure: text in, text out).
//!
//! Parsing uses `yaml-rust2`'s event parser, because every event carries a `Marker` with
//! its line: errors here must name the line of the offending command, which the serde
//! YAML crates (`serde_yaml_ng`, `serde_yml`) do not expose per node. yaml-rust2 is
//! maintained, pure Rust, and builds offline from the vendored registry.
//!
//! What maps (Maestro → step):
//! - header `appId` → `script.app`; `name` → `script.name` and `goal`; `env` → `inputs`
//!   (Maestro's `${NAME}` is our `${NAME}`).
//! - `launchApp` (bare: the header's appId) → `launch_app`; `tapOn` (`id`, `text`, the
//!   shorthand `- tapOn: "Text"`, `index: 0`) → `tap`; `inputText` → `type`;
//!   `eraseText` → `clear`; `scroll` → `scroll` down; `scrollUntilVisible` → `scroll`
//!   with `until`; `back` / `pressKey` → `key`; `assertVisible` → `wait_for`;
//!   `assertNotVisible` → `wait_for_gone`; `optional: true` → `optional`.
//! - `waitForAnimationToEnd` → `wait` with `ms` = its `timeout` (default 1000): a bounded
//!   pause, since a step cannot yet say "until the screen is still". Every `wait` step
//!   exports back as `waitForAnimationToEnd`.
//! - `runFlow` with inline `commands` → its steps, inlined.
//! - `retry {maxRetries, commands}` → its steps once, each carrying the recovery hint
//!   `element_not_found:*` / `maestro retry B of N: …`. Replay has no loop; AI in the
//!   middle reads the hint when a step of the block fails, and export regroups steps with
//!   the same hint into one `retry` block, so the round trip is exact.
//!
//! Refused (error with line, command and hint): `evalScript`, `runScript`,
//! `takeScreenshot` (scripts keep no artifacts), `runFlow` of a file or with `when`, id
//! selectors that are regexes, `index` other than 0, and every other command.
//! Export refuses steps Maestro cannot say (selectors other than `#id` / `:text`,
//! coordinates, swipes, long presses, …), naming the step. A `custom` step has no
//! Maestro command: `export_with` writes its primitives (the server's definition, given
//! by the caller) under a `# custom action NAME` comment, when each of them maps.

use std::collections::BTreeMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::custom::CustomCall;
use super::model::{RecoveryHint, Script, ScriptStep, StepAction};
use crate::domain::action::{Direction, Key};

/// A flow that cannot be imported, or a script that cannot be exported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct MaestroError {
    /// `line 7` on import, `steps[2]` on export.
    pub location: String,
    /// `invalid_yaml`, `unsupported_command`, `invalid_command`, `not_exportable`,
    /// `invalid_script`.
    pub code: &'static str,
    pub message: String,
    pub hint: String,
}

impl MaestroError {
    fn at(line: usize, code: &'static str, message: impl Into<String>, hint: &str) -> Self {
        Self {
            location: format!("line {line}"),
            code,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

const SUPPORTED: &str = "Supported: launchApp, tapOn, inputText, eraseText, scroll, scrollUntilVisible, back, pressKey, assertVisible, assertNotVisible, waitForAnimationToEnd, runFlow (inline commands), retry; see docs/scripts.md \"Maestro flows\".";
const RETRY_PREFIX: &str = "maestro retry ";

/// A YAML node with the line it starts on (1-based).
#[derive(Debug, Clone)]
enum Node {
    Scalar(String, usize),
    /// A plain `null` or `~`: no value (an `env` input with no default), never the
    /// text "null".
    Null(usize),
    Seq(Vec<Node>, usize),
    Map(Vec<(String, usize, Node)>, usize),
}

impl Node {
    fn line(&self) -> usize {
        match self {
            Node::Scalar(_, l) | Node::Null(l) | Node::Seq(_, l) | Node::Map(_, l) => *l,
        }
    }
    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(kv, _) => kv.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
    fn scalar(&self) -> Option<&str> {
        match self {
            Node::Scalar(s, _) => Some(s),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Builder {
    docs: Vec<Node>,
    stack: Vec<(Node, Option<(String, usize)>)>,
    error: Option<MaestroError>,
}

impl Builder {
    fn push(&mut self, node: Node) {
        let Some((top, pending)) = self.stack.last_mut() else {
            self.docs.push(node);
            return;
        };
        match top {
            Node::Seq(items, _) => items.push(node),
            Node::Map(kv, _) => match pending.take() {
                Some((k, l)) => kv.push((k, l, node)),
                None => match node {
                    Node::Scalar(k, l) => *pending = Some((k, l)),
                    other => {
                        self.error.get_or_insert(MaestroError::at(
                            other.line(),
                            "invalid_yaml",
                            "a mapping key must be a plain string",
                            "Write `key: value`.",
                        ));
                    }
                },
            },
            Node::Scalar(..) | Node::Null(_) => {}
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line().max(1);
        match ev {
            Event::Scalar(s, TScalarStyle::Plain, ..)
                if matches!(s.as_str(), "null" | "Null" | "NULL" | "~") =>
            {
                self.push(Node::Null(line))
            }
            Event::Scalar(s, ..) => self.push(Node::Scalar(s, line)),
            Event::SequenceStart(..) => self.stack.push((Node::Seq(Vec::new(), line), None)),
            Event::MappingStart(..) => self.stack.push((Node::Map(Vec::new(), line), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _)) = self.stack.pop() {
                    self.push(node);
                }
            }
            Event::Alias(_) => {
                self.error.get_or_insert(MaestroError::at(
                    line,
                    "invalid_yaml",
                    "YAML aliases are not supported",
                    "Write the value out.",
                ));
            }
            _ => {}
        }
    }
}

fn parse_yaml(yaml: &str) -> Result<Vec<Node>, MaestroError> {
    let mut b = Builder::default();
    Parser::new_from_str(yaml).load(&mut b, true).map_err(|e| {
        MaestroError::at(
            e.marker().line().max(1),
            "invalid_yaml",
            e.to_string(),
            "Check the YAML syntax (indentation, quotes).",
        )
    })?;
    match b.error {
        Some(e) => Err(e),
        None => Ok(b.docs),
    }
}

/// Parses a Maestro flow (optional header document, then the command list) into a
/// validated `Script`.
pub fn import(yaml: &str) -> Result<Script, MaestroError> {
    let docs = parse_yaml(yaml)?;
    let (header, commands) = match docs.as_slice() {
        [h @ Node::Map(..), c @ Node::Seq(..)] => (Some(h), c),
        [c @ Node::Seq(..)] => (None, c),
        [Node::Map(_, l)] => {
            return Err(MaestroError::at(
                *l,
                "invalid_yaml",
                "the flow has a header but no commands",
                "Put `---` after the header, then the list of commands.",
            ));
        }
        _ => {
            return Err(MaestroError::at(
                1,
                "invalid_yaml",
                "a flow is an optional `appId:` header, `---`, then a list of commands",
                "See docs/scripts.md \"Maestro flows\".",
            ));
        }
    };
    let mut script = header_script(header)?;
    let mut ctx = Ctx {
        app: script.app.clone(),
        retries: 0,
    };
    script.steps = ctx.commands(commands)?;
    script.validate().map_err(|e| MaestroError {
        location: e.path,
        code: "invalid_script",
        message: e.message,
        hint: e.hint,
    })?;
    script.maestro = Some(yaml.to_string());
    Ok(script)
}

fn header_script(header: Option<&Node>) -> Result<Script, MaestroError> {
    let mut script = Script {
        name: "maestro flow".into(),
        goal: "maestro flow".into(),
        app: None,
        inputs: BTreeMap::new(),
        steps: Vec::new(),
        outputs: Vec::new(),
        summary: None,
        fuzzy: true,
        max_recovery_attempts: super::model::DEFAULT_MAX_RECOVERY_ATTEMPTS,
        maestro: None,
    };
    let Some(Node::Map(kv, _)) = header else {
        return Ok(script);
    };
    for (key, line, value) in kv {
        match (key.as_str(), value) {
            ("appId", Node::Scalar(s, _)) => script.app = Some(s.clone()),
            ("name", Node::Scalar(s, _)) => {
                script.name = s.clone();
                script.goal = s.clone();
            }
            ("env", Node::Map(vars, _)) => {
                for (k, _, v) in vars {
                    script
                        .inputs
                        .insert(k.clone(), v.scalar().map(str::to_string).into());
                }
            }
            ("tags", _) => {}
            _ => {
                return Err(MaestroError::at(
                    *line,
                    "unsupported_command",
                    format!("header field `{key}` is not supported"),
                    "The header may hold appId, name, env and tags.",
                ));
            }
        }
    }
    Ok(script)
}

struct Ctx {
    app: Option<String>,
    retries: usize,
}

impl Ctx {
    fn commands(&mut self, node: &Node) -> Result<Vec<ScriptStep>, MaestroError> {
        let Node::Seq(items, _) = node else {
            return Err(MaestroError::at(
                node.line(),
                "invalid_command",
                "`commands` must be a list",
                "Write `commands:` then `- tapOn: …` lines.",
            ));
        };
        let mut steps = Vec::new();
        for item in items {
            let (name, arg) = match item {
                Node::Scalar(s, _) => (s.as_str(), None),
                Node::Map(kv, _) if kv.len() == 1 => (kv[0].0.as_str(), Some(&kv[0].2)),
                _ => {
                    return Err(MaestroError::at(
                        item.line(),
                        "invalid_command",
                        "a command is `- name` or `- name: argument`",
                        SUPPORTED,
                    ));
                }
            };
            steps.extend(self.command(name, arg, item.line())?);
        }
        Ok(steps)
    }

    fn command(
        &mut self,
        name: &str,
        arg: Option<&Node>,
        line: usize,
    ) -> Result<Vec<ScriptStep>, MaestroError> {
        match name {
            "runFlow" => return self.run_flow(arg, line),
            "retry" => return self.retry(arg, line),
            _ => {}
        }
        let mut step = match name {
            "launchApp" => self.launch(arg, line)?,
            "tapOn" => target_step(StepAction::Tap, arg, line, name)?,
            "assertVisible" => target_step(StepAction::WaitFor, arg, line, name)?,
            "assertNotVisible" => target_step(StepAction::WaitForGone, arg, line, name)?,
            "inputText" => {
                let mut s = ScriptStep::new(StepAction::Type, None);
                s.parameters.text = Some(scalar_arg(arg, line, name)?.to_string());
                s
            }
            "eraseText" => ScriptStep::new(StepAction::Clear, None),
            "scroll" => {
                let mut s = ScriptStep::new(StepAction::Scroll, None);
                s.parameters.direction = Some(Direction::Down);
                s
            }
            "scrollUntilVisible" => scroll_until(arg, line)?,
            "back" => key_step(Key::Back),
            "pressKey" => press_key(arg, line)?,
            "waitForAnimationToEnd" => {
                let mut s = ScriptStep::new(StepAction::Wait, None);
                let t = arg.and_then(|a| a.get("timeout")).and_then(Node::scalar);
                s.parameters.ms = Some(parse_num(t.unwrap_or("1000"), line, "timeout")?);
                s
            }
            _ => return Err(unsupported(name, line)),
        };
        step.optional = is_optional(arg);
        Ok(vec![step])
    }

    fn launch(&self, arg: Option<&Node>, line: usize) -> Result<ScriptStep, MaestroError> {
        let app = match arg {
            Some(Node::Scalar(s, _)) => Some(s.clone()),
            Some(m @ Node::Map(..)) => {
                check_keys(m, &["appId", "optional"], "launchApp")?;
                m.get("appId").and_then(Node::scalar).map(str::to_string)
            }
            _ => None,
        }
        .or_else(|| self.app.clone())
        .ok_or_else(|| {
            MaestroError::at(
                line,
                "invalid_command",
                "launchApp names no app and the flow has no `appId` header",
                "Write `appId: com.example` then `---` at the top, or `- launchApp: com.example`.",
            )
        })?;
        let mut s = ScriptStep::new(StepAction::LaunchApp, None);
        s.parameters.package = Some(app);
        Ok(s)
    }

    fn run_flow(
        &mut self,
        arg: Option<&Node>,
        line: usize,
    ) -> Result<Vec<ScriptStep>, MaestroError> {
        match arg {
            Some(m @ Node::Map(..)) if m.get("commands").is_some() => {
                check_keys(m, &["commands"], "runFlow")?;
                self.commands(m.get("commands").expect("checked"))
            }
            _ => Err(MaestroError::at(
                line,
                "unsupported_command",
                "`runFlow` of a file (or with `when`) is not supported",
                "Inline the flow's steps under `runFlow: {commands: [...]}`; a script is one self-contained document.",
            )),
        }
    }

    fn retry(&mut self, arg: Option<&Node>, line: usize) -> Result<Vec<ScriptStep>, MaestroError> {
        let m = arg.filter(|m| m.get("commands").is_some()).ok_or_else(|| {
            MaestroError::at(
                line,
                "invalid_command",
                "`retry` needs `commands`",
                "Write `retry: {maxRetries: 3, commands: [...]}`.",
            )
        })?;
        check_keys(m, &["maxRetries", "commands"], "retry")?;
        let max = m.get("maxRetries").and_then(Node::scalar).unwrap_or("1");
        let max: u64 = parse_num(max, line, "maxRetries")?;
        self.retries += 1;
        let block = self.retries;
        let mut steps = self.commands(m.get("commands").expect("checked"))?;
        for s in &mut steps {
            s.recovery_hints.push(RecoveryHint {
                trigger: "element_not_found:*".into(),
                hint: format!("{RETRY_PREFIX}{block} of {max}: this step is in a block Maestro retried up to {max} times; redo the block from its first step"),
            });
        }
        Ok(steps)
    }
}

fn unsupported(name: &str, line: usize) -> MaestroError {
    let why = match name {
        "evalScript" | "runScript" => "runs JavaScript, which a script cannot carry",
        "takeScreenshot" => {
            "saves an artifact; a script keeps none (every step's screen is recorded anyway)"
        }
        _ => "has no script equivalent",
    };
    MaestroError::at(
        line,
        "unsupported_command",
        format!("`{name}` {why}"),
        SUPPORTED,
    )
}

fn is_optional(arg: Option<&Node>) -> bool {
    arg.and_then(|a| a.get("optional")).and_then(Node::scalar) == Some("true")
}

fn check_keys(m: &Node, allowed: &[&str], cmd: &str) -> Result<(), MaestroError> {
    if let Node::Map(kv, _) = m
        && let Some((k, l, _)) = kv.iter().find(|(k, _, _)| !allowed.contains(&k.as_str()))
    {
        return Err(MaestroError::at(
            *l,
            "unsupported_command",
            format!("`{cmd}` field `{k}` is not supported"),
            &format!("`{cmd}` may hold: {}.", allowed.join(", ")),
        ));
    }
    Ok(())
}

fn scalar_arg<'a>(arg: Option<&'a Node>, line: usize, cmd: &str) -> Result<&'a str, MaestroError> {
    arg.and_then(Node::scalar).ok_or_else(|| {
        MaestroError::at(
            line,
            "invalid_command",
            format!("`{cmd}` needs a value"),
            &format!("Write `- {cmd}: \"…\"`."),
        )
    })
}

fn parse_num(s: &str, line: usize, field: &str) -> Result<u64, MaestroError> {
    s.parse().map_err(|_| {
        MaestroError::at(
            line,
            "invalid_command",
            format!("`{field}` must be a whole number, not `{s}`"),
            "Write a number of milliseconds (or retries).",
        )
    })
}

fn key_step(key: Key) -> ScriptStep {
    let mut s = ScriptStep::new(StepAction::Key, None);
    s.parameters.key = Some(key);
    s
}

fn press_key(arg: Option<&Node>, line: usize) -> Result<ScriptStep, MaestroError> {
    let name = scalar_arg(arg, line, "pressKey")?;
    let key = Key::parse(name).ok_or_else(|| {
        MaestroError::at(
            line,
            "unsupported_command",
            format!("key `{name}` is not supported"),
            "Keys: Back, Home, Enter, Menu, Power, Recents (app switch).",
        )
    })?;
    Ok(key_step(key))
}

/// A Maestro element (`"Text"`, `{id}`, `{text}`, `{index: 0}`) as a selector.
fn selector(arg: Option<&Node>, line: usize, cmd: &str) -> Result<String, MaestroError> {
    match arg {
        Some(Node::Scalar(text, _)) => Ok(text_selector(text)),
        Some(m @ Node::Map(..)) => {
            check_keys(m, &["id", "text", "index", "optional"], cmd)?;
            if let Some(i) = m.get("index").and_then(Node::scalar).filter(|i| *i != "0") {
                return Err(MaestroError::at(
                    line,
                    "unsupported_command",
                    format!("`{cmd}` with `index: {i}` cannot be mapped"),
                    "Select the element by a unique id or text; index selectors break on any layout change.",
                ));
            }
            match (
                m.get("id").and_then(Node::scalar),
                m.get("text").and_then(Node::scalar),
            ) {
                (Some(id), None) => id_selector(id, line),
                (None, Some(text)) => Ok(text_selector(text)),
                _ => Err(MaestroError::at(
                    line,
                    "invalid_command",
                    format!("`{cmd}` needs exactly one of `id` or `text`"),
                    "Write `- tapOn: {id: \"btn_send\"}` or `- tapOn: \"Send\"`.",
                )),
            }
        }
        _ => Err(MaestroError::at(
            line,
            "invalid_command",
            format!("`{cmd}` needs an element"),
            "Write `- tapOn: \"Text\"` or `- tapOn: {id: \"btn\"}`.",
        )),
    }
}

/// Maestro ids are regexes on resource-id: a plain id (dots allowed, they match
/// themselves too) maps to `#id`; anything with other regex syntax is refused.
fn id_selector(id: &str, line: usize) -> Result<String, MaestroError> {
    if id.is_empty() || id.chars().any(|c| "*+?[](){}|^$\\".contains(c)) {
        return Err(MaestroError::at(
            line,
            "unsupported_command",
            format!("id `{id}` is a regex, which a selector cannot express"),
            "Use the element's exact resource-id (`com.app:id/btn` or `btn`).",
        ));
    }
    Ok(format!("#{id}"))
}

fn text_selector(text: &str) -> String {
    format!(":text({})", serde_json::Value::String(text.to_string()))
}

fn target_step(
    action: StepAction,
    arg: Option<&Node>,
    line: usize,
    cmd: &str,
) -> Result<ScriptStep, MaestroError> {
    Ok(ScriptStep::new(action, Some(selector(arg, line, cmd)?)))
}

fn scroll_until(arg: Option<&Node>, line: usize) -> Result<ScriptStep, MaestroError> {
    let m = arg.filter(|m| matches!(m, Node::Map(..))).ok_or_else(|| {
        MaestroError::at(
            line,
            "invalid_command",
            "`scrollUntilVisible` needs `element`",
            "Write `- scrollUntilVisible: {element: {text: \"Item\"}, direction: DOWN}`.",
        )
    })?;
    check_keys(
        m,
        &["element", "direction", "timeout", "optional"],
        "scrollUntilVisible",
    )?;
    let mut s = ScriptStep::new(StepAction::Scroll, None);
    s.parameters.until = Some(selector(m.get("element"), line, "scrollUntilVisible")?);
    let dir = m.get("direction").and_then(Node::scalar).unwrap_or("DOWN");
    s.parameters.direction = Some(match dir.to_ascii_uppercase().as_str() {
        "DOWN" => Direction::Down,
        "UP" => Direction::Up,
        "LEFT" => Direction::Left,
        "RIGHT" => Direction::Right,
        _ => {
            return Err(MaestroError::at(
                line,
                "invalid_command",
                format!("direction `{dir}` is not one of UP, DOWN, LEFT, RIGHT"),
                "Write `direction: DOWN`.",
            ));
        }
    });
    if let Some(t) = m.get("timeout").and_then(Node::scalar) {
        s.parameters.timeout_ms = Some(parse_num(t, line, "timeout")?);
    }
    Ok(s)
}

/// Writes `script` as a Maestro flow that `import` reads back: the flow it was imported
/// from (`maestro`) when its steps are unchanged, so comments, tags and `eraseText`
/// counts survive, else one written from the steps. A step's
/// `wait_condition` becomes an `assertVisible` before it and its `expect` becomes
/// `assertVisible` / `assertNotVisible` after it; alternative selectors, descriptions
/// and recovery hints other than retry blocks have no Maestro form and are left out.
pub fn export(script: &Script) -> Result<String, MaestroError> {
    export_with(script, &|c| {
        Err(format!(
            "custom action `{}`: its definition is the server's, and none was given",
            c.name
        ))
    })
}

/// The primitives a custom step runs, as action JSON with the step's params filled in
/// (the script's own `${var}`s kept), or why they cannot be given.
pub type Expand<'a> = &'a dyn Fn(&CustomCall) -> Result<Vec<serde_json::Value>, String>;

/// `export`, with a custom step written as the primitives `expand` gives for it, under
/// a comment naming the action; refused, naming the step, when one of them has no
/// Maestro form.
pub fn export_with(script: &Script, expand: Expand<'_>) -> Result<String, MaestroError> {
    // The flow it was imported from, while it still says what the steps do.
    if let Some(src) = &script.maestro
        && import(src).is_ok_and(|s| s == *script)
    {
        return Ok(src.clone());
    }
    let mut out = String::new();
    if let Some(app) = &script.app {
        out.push_str(&format!("appId: {}\n", q(app)));
    }
    out.push_str(&format!("name: {}\n", q(&script.name)));
    if !script.inputs.is_empty() {
        out.push_str("env:\n");
        for (k, v) in &script.inputs {
            out.push_str(&format!(
                "  {k}: {}\n",
                v.default.as_deref().map(q).unwrap_or_else(|| "null".into())
            ));
        }
    }
    out.push_str("---\n");
    let mut i = 0;
    while i < script.steps.len() {
        match retry_block(&script.steps[i]) {
            Some((tag, max)) => {
                let end = (i..script.steps.len())
                    .find(|&j| retry_block(&script.steps[j]).map(|b| b.0) != Some(tag))
                    .unwrap_or(script.steps.len());
                out.push_str(&format!("- retry:\n    maxRetries: {max}\n    commands:\n"));
                for j in i..end {
                    push_step(&mut out, script, j, "      ", expand)?;
                }
                i = end;
            }
            None => {
                push_step(&mut out, script, i, "", expand)?;
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The retry block a step belongs to (its hint's `B of N` tag and N).
fn retry_block(step: &ScriptStep) -> Option<(&str, u64)> {
    step.recovery_hints.iter().find_map(|h| {
        let rest = h.hint.strip_prefix(RETRY_PREFIX)?;
        let tag = rest.split(':').next()?;
        let max = tag.split(" of ").nth(1)?.parse().ok()?;
        Some((tag, max))
    })
}

fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn push_step(
    out: &mut String,
    script: &Script,
    i: usize,
    indent: &str,
    expand: Expand<'_>,
) -> Result<(), MaestroError> {
    let step = &script.steps[i];
    if let Some(w) = &step.wait_condition {
        out.push_str(&format!(
            "{indent}- assertVisible: {}\n",
            element(&w.selector, i)?
        ));
    }
    match &step.custom {
        Some(call) => out.push_str(&expanded(script, call, i, indent, expand)?),
        None => out.push_str(&format!("{indent}- {}\n", command(script, step, i)?)),
    }
    if let Some(e) = &step.expect {
        for s in &e.visible {
            out.push_str(&format!("{indent}- assertVisible: {}\n", element(s, i)?));
        }
        for s in &e.gone {
            out.push_str(&format!("{indent}- assertNotVisible: {}\n", element(s, i)?));
        }
    }
    Ok(())
}

/// A custom step as the Maestro commands of its primitives, under a comment naming the
/// action (a `type` on an element is a `tapOn` and an `inputText`).
fn expanded(
    script: &Script,
    call: &CustomCall,
    i: usize,
    indent: &str,
    expand: Expand<'_>,
) -> Result<String, MaestroError> {
    let why = |m: String| {
        MaestroError {
        location: format!("steps[{i}]"),
        code: "not_exportable",
        message: format!("custom action `{}`{m}", call.name),
        hint: "A custom step is exported as its primitives, each of which must have a Maestro form (tap/assert on `#id` or `:text(\"…\")`, type, scroll, keys, launch_app, wait); see docs/scripts.md \"Maestro flows\".".into(),
    }
    };
    let mut out = format!("{indent}# custom action {}\n", call.name);
    let prims = expand(call).map_err(|m| why(format!(": {m}")))?;
    for (n, v) in prims.iter().enumerate() {
        let at = |m: &str| why(format!(", its step {}: {m}", n + 1));
        let step = super::record::primitive_step(v).ok_or_else(|| at("not a device step"))?;
        let mut steps = vec![step.clone()];
        if step.action == StepAction::Type && step.selector.is_some() {
            let mut typed = step.clone();
            typed.selector = None;
            steps = vec![
                ScriptStep::new(StepAction::Tap, step.selector.clone()),
                typed,
            ];
        }
        for s in &steps {
            let cmd = command(script, s, i).map_err(|e| at(&e.message))?;
            out.push_str(&format!("{indent}- {cmd}\n"));
        }
    }
    Ok(out)
}

/// One step as a Maestro command in flow style (`tapOn: {id: "x", optional: true}`).
fn command(script: &Script, step: &ScriptStep, i: usize) -> Result<String, MaestroError> {
    let p = &step.parameters;
    let opt = if step.optional {
        ", optional: true"
    } else {
        ""
    };
    // The primary selector, or the first alternative Maestro can say (`#id`, `:text`)
    // when the primary is an index path.
    let sel = || {
        std::iter::once(&step.selector)
            .flatten()
            .chain(&step.alternative_selectors)
            .map(String::as_str)
            .find(|s| element(s, i).is_ok())
            .or(step.selector.as_deref())
            .ok_or_else(|| not_exportable(i, "a step with no selector (a coordinate)"))
    };
    let with_opt = |el: String| -> String {
        match (step.optional, el.strip_suffix('}')) {
            (false, _) => el,
            (true, Some(open)) => format!("{open}{opt}}}"),
            (true, None) => format!("{{text: {el}{opt}}}"),
        }
    };
    if p.at.is_some() {
        // Maestro's `point` is a point of the screen, not of the element.
        return Err(not_exportable(
            i,
            "a touch at a point within its element (`parameters.at`)",
        ));
    }
    Ok(match step.action {
        StepAction::Tap => format!("tapOn: {}", with_opt(element(sel()?, i)?)),
        StepAction::WaitFor => format!("assertVisible: {}", with_opt(element(sel()?, i)?)),
        StepAction::WaitForGone => format!("assertNotVisible: {}", with_opt(element(sel()?, i)?)),
        StepAction::LaunchApp if p.label.is_none() => match (&p.package, &script.app) {
            (Some(pkg), Some(app)) if pkg == app && !step.optional => "launchApp".into(),
            (Some(pkg), _) => format!("launchApp: {{appId: {}{opt}}}", q(pkg)),
            _ => return Err(not_exportable(i, "launch_app with no package")),
        },
        StepAction::Type if step.selector.is_none() && !p.clear_first => {
            format!("inputText: {}", q(p.text.as_deref().unwrap_or("")))
        }
        StepAction::Clear if step.selector.is_none() => "eraseText".into(),
        StepAction::Scroll if step.selector.is_none() => match (&p.until, p.direction) {
            (None, Some(Direction::Down) | None) if p.timeout_ms.is_none() => "scroll".into(),
            (Some(u), d) => {
                let mut s = format!(
                    "scrollUntilVisible: {{element: {}, direction: {}",
                    element(u, i)?,
                    dir_name(d.unwrap_or(Direction::Down))
                );
                if let Some(t) = p.timeout_ms {
                    s.push_str(&format!(", timeout: {t}"));
                }
                format!("{s}{opt}}}")
            }
            _ => {
                return Err(not_exportable(
                    i,
                    "a scroll other than down with no `until`",
                ));
            }
        },
        StepAction::Key => match p.key {
            Some(Key::Back) => "back".into(),
            Some(k) => format!("pressKey: {}", key_name(k)),
            None => return Err(not_exportable(i, "a key step with no key")),
        },
        StepAction::Wait => format!(
            "waitForAnimationToEnd: {{timeout: {}}}",
            p.ms.unwrap_or(1000)
        ),
        other => {
            return Err(not_exportable(
                i,
                &format!("`{}` as written here", other.name()),
            ));
        }
    })
}

fn not_exportable(i: usize, what: &str) -> MaestroError {
    MaestroError {
        location: format!("steps[{i}]"),
        code: "not_exportable",
        message: format!("{what} has no Maestro equivalent"),
        hint: "Maestro flows can say: tap/assert on `#id` or `:text(\"…\")`, type, clear, scroll, keys, launch_app, wait; see docs/scripts.md \"Maestro flows\".".into(),
    }
}

/// A selector as a Maestro element: `{id: "x"}` or `"Text"`.
fn element(sel: &str, i: usize) -> Result<String, MaestroError> {
    match crate::screen::Selector::parse(sel) {
        Ok(crate::screen::Selector::Id(id)) => Ok(format!("{{id: {}}}", q(&id))),
        Ok(crate::screen::Selector::Text { class: None, text }) => Ok(q(&text)),
        _ => Err(not_exportable(i, &format!("selector `{sel}`"))),
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Up => "UP",
        Direction::Down => "DOWN",
        Direction::Left => "LEFT",
        Direction::Right => "RIGHT",
    }
}

fn key_name(k: Key) -> &'static str {
    match k {
        Key::Back => "Back",
        Key::Home => "Home",
        Key::Recents => "Recents",
        Key::Enter => "Enter",
        Key::Menu => "Menu",
        Key::Power => "Power",
    }
}

#[cfg(test)]
#[path = "maestro_tests.rs"]
mod tests;
