//! The navigator: reads the screen's element list and acts through native tool calls,
//! one tool per job (tap, type, scroll, read, wait_for, launch_app, key, finish,
//! ask_user, plus the registered MCP tools). Tool arguments are described by schemars
//! structs; each call becomes canonical action JSON validated by `ActionParser`
//! (`canonical` maps a merged tool's call to the action it stands for).
//!
//! `read` is answered here from the observation (it does not touch the phone), within
//! the same decision. A scroll `until` a selector is the `scroll_to_find` custom action
//! (`Action::Custom`) that the runner executes.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use super::grounding::{Grounder, GroundingRequest};
use super::parse_error::ParseError;
use super::recording::{RECORDING_PROMPT, Recording};
use super::{Agent, AgentContext, AgentError, Decision, McpTool, Meter, ProducedScript};
use crate::domain::{ActionParser, GroundingReason};
use crate::llm::{
    ChatModel, ChatRequest, Message, Part, PriceTable, Role, ToolCall, ToolChoice, ToolSpec,
};

// The arguments of each tool. The system prompt says once what `element` and
// `selector` are; a field is described here only when its name does not say. An element
// on the screen is named by its id; a selector is offered only where the element may
// not be on this screen yet (`scroll`'s `until`, `wait_for`); one sent for an element
// on screen is still understood. Nine
// tools, one per job: a long press is a tap held (`long_ms`), emptying a field is typing
// "" over it, a scroll `until` a selector searches, `read` without a target reads the
// whole screen, `wait_for` waits for a match or its absence, Back and Home are keys.
// The names the navigator offered before (`long_press`, `clear`, `scroll_to_find`,
// `read_element`, `read_screen`, `wait_for_gone`, `back`, `home`) are still understood
// (`BUILTIN_TOOLS`).

#[allow(dead_code)]
#[derive(JsonSchema)]
struct TapArgs {
    element: Option<u32>,
    /// Hold ms (long press).
    long_ms: Option<u64>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct TypeArgs {
    text: String,
    element: Option<u32>,
    /// Replace the content ("" empties it).
    clear_first: Option<bool>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct ReadArgs {
    element: Option<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum Dir {
    Up,
    Down,
    Left,
    Right,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct ScrollArgs {
    /// `down` shows what is below.
    direction: Dir,
    element: Option<u32>,
    /// Until this selector is shown.
    until: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct WaitForArgs {
    selector: String,
    /// Until it matches nothing.
    gone: Option<bool>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct LaunchArgs {
    /// Label or package.
    app: String,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum KeyName {
    Back,
    Home,
    Enter,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct KeyArgs {
    key: KeyName,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct FinishArgs {
    /// False when impossible.
    success: bool,
    /// When the task asks for information.
    answer: Option<String>,
    reason: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct AskUserArgs {
    question: String,
    options: Option<Vec<String>>,
}

/// Every name the navigator answers (an MCP tool may take none of them): those
/// `builtin_tools` offers, then those it offered before.
pub const BUILTIN_TOOLS: &[&str] = &[
    "tap",
    "type",
    "scroll",
    "read",
    "wait_for",
    "launch_app",
    "key",
    "finish",
    "ask_user",
    "long_press",
    "clear",
    "scroll_to_find",
    "read_element",
    "read_screen",
    "wait_for_gone",
    "back",
    "home",
];

/// Information rounds (read) allowed before an action is required.
const MAX_INFO_ROUNDS: u32 = 2;

pub fn builtin_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::of::<TapArgs>("tap", "Tap an element."),
        ToolSpec::of::<TypeArgs>("type", "Type into a field (the focused one by default)."),
        ToolSpec::of::<ScrollArgs>("scroll", "Scroll the screen or a container."),
        ToolSpec::of::<ReadArgs>(
            "read",
            "Read an element, or the whole screen, in full. Does not act.",
        ),
        ToolSpec::of::<WaitForArgs>("wait_for", "Wait until the selector matches."),
        ToolSpec::of::<LaunchArgs>("launch_app", "Open an app."),
        ToolSpec::of::<KeyArgs>("key", "Press a key."),
        ToolSpec::of::<FinishArgs>("finish", "End the task."),
        ToolSpec::of::<AskUserArgs>("ask_user", "Ask the user."),
    ]
}

/// An MCP tool's name as a function name providers accept (`[A-Za-z0-9_-]`, at most 64
/// characters): a prefixed `server.tool` is offered as `server__tool`.
fn function_name(tool: &str) -> String {
    let name: String = tool
        .replace('.', "__")
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    name.chars().take(64).collect()
}

pub struct NavigatorAgent {
    model: Arc<dyn ChatModel>,
    parser: ActionParser,
    tools: Vec<ToolSpec>,
    /// MCP tools: (the function name the model sees, the registry's name).
    mcp_names: Vec<(String, String)>,
    system: String,
    prices: PriceTable,
    screenshot: bool,
    grounder: Option<Arc<dyn Grounder>>,
    /// `grounding_below`: a `tap` whose `confidence` is below this is grounded instead.
    grounding_below: Option<f64>,
    /// Set with `"record": true`: the script being recorded (`recording.rs`).
    recording: Option<Recording>,
}

enum Outcome {
    Act(crate::domain::Action),
    Info(String),
    /// Only `record_step` calls this turn: ask for the action.
    Recorded,
}

/// The tool result for one call of an assistant turn.
struct Answer {
    call_id: String,
    content: String,
    is_error: bool,
}

impl Answer {
    fn new(c: &ToolCall, content: String, is_error: bool) -> Self {
        Self {
            call_id: c.id.clone(),
            content,
            is_error,
        }
    }
}

impl NavigatorAgent {
    /// `screenshot`: add the screenshot to each request (for vision-capable models).
    pub fn new(
        model: Arc<dyn ChatModel>,
        mcp_tools: &[McpTool],
        prices: PriceTable,
        screenshot: bool,
    ) -> Self {
        let mut parser = ActionParser::new();
        let _ = parser.register("scroll_to_find");
        let mut tools = builtin_tools();
        let mut system = include_str!("../../prompts/navigator.v2.md").to_string();
        if !mcp_tools.is_empty() {
            // Their descriptions are in their tool schemas; said once.
            system.push_str(
                "- The other tools (MCP) run outside the phone; their result comes next turn.\n",
            );
        }
        for t in mcp_tools {
            tools.push(ToolSpec {
                name: function_name(&t.name),
                description: t.description.clone(),
                parameters: t.input_schema.clone(),
            });
        }
        Self {
            model,
            parser,
            tools,
            mcp_names: (mcp_tools.iter())
                .map(|t| (function_name(&t.name), t.name.clone()))
                .collect(),
            system,
            prices,
            screenshot,
            grounder: None,
            grounding_below: None,
            recording: None,
        }
    }

    /// Offers the operator's custom actions as the `custom_action` tool (none: no tool).
    pub fn with_custom_actions(mut self, defs: &[crate::run::extend::CustomActionDef]) -> Self {
        if !defs.is_empty() {
            super::custom_tool::register(&mut self.parser, defs);
            self.tools.push(super::custom_tool::tool(defs));
        }
        self
    }

    /// Records the run as a script: adds `record_step` and `finalize_script`.
    pub fn with_recording(mut self, goal: &str) -> Self {
        self.tools.extend(Recording::tools());
        self.system.push_str(RECORDING_PROMPT);
        self.recording = Some(Recording::new(goal));
        self
    }

    /// Answers the turn's `record_step` calls (recording them), and returns the call
    /// that decides, if any, with the answers for the model.
    fn take_records<'c>(&mut self, calls: &'c [ToolCall]) -> (Option<&'c ToolCall>, Vec<Answer>) {
        let mut answers = Vec::new();
        let mut decisive = None;
        for c in calls {
            match (&mut self.recording, c.name.as_str()) {
                (Some(rec), "record_step") => {
                    let r = c
                        .arguments()
                        .map_err(|e| ParseError::json(&e, &c.raw_arguments, 0))
                        .and_then(|a| rec.record_step(a));
                    answers.push(match r {
                        Ok(m) => Answer::new(c, m, false),
                        Err(e) => Answer::new(c, super::correction(&e), true),
                    });
                }
                _ if decisive.is_none() => decisive = Some(c),
                _ => answers.push(Answer::new(
                    c,
                    "not executed: call one action tool per turn".into(),
                    true,
                )),
            }
        }
        (decisive, answers)
    }

    /// `finalize_script` (recording only) becomes the `finish` that ends the task.
    fn finalize(&mut self, call: &ToolCall) -> Option<Result<Interpreted, ParseError>> {
        let rec = self
            .recording
            .as_mut()
            .filter(|_| call.name == "finalize_script")?;
        Some(
            call.arguments()
                .map_err(|e| ParseError::json(&e, &call.raw_arguments, 0))
                .and_then(|a| rec.finalize(a))
                .map(|a| Interpreted::Done(Outcome::Act(a))),
        )
    }

    /// Locates described targets: `tap` takes a `description` of an element without an
    /// id, and the prompt says so (both only with a grounder, which acts on them).
    pub fn with_grounder(mut self, g: Arc<dyn Grounder>) -> Self {
        self.grounder = Some(g);
        if let Some(tap) = self.tools.iter_mut().find(|t| t.name == "tap")
            && let Some(Value::Object(props)) = tap.parameters.get_mut("properties")
        {
            props.insert("description".into(), json!({"type": "string"}));
        }
        self.system
            .push_str("- For an element without an id, describe it in `description`.\n");
        self
    }

    /// Re-grounds a `tap` (or held tap) whose `confidence` is below `threshold`: the
    /// tool takes a `confidence` (0–1), offered only here so that the navigator's
    /// fixed prompt stays the same without it.
    pub fn with_grounding_below(mut self, threshold: f64) -> Self {
        self.grounding_below = Some(threshold);
        if let Some(tap) = self.tools.iter_mut().find(|t| t.name == "tap")
            && let Some(Value::Object(props)) = tap.parameters.get_mut("properties")
        {
            props.insert("confidence".into(), json!({"type": "number"}));
        }
        self.system
            .push_str("- In `tap`, give `confidence`: 0–1, how sure you are of the element.\n");
        self
    }

    /// A tap the navigator is not sure of (`confidence` below `grounding_below`) on an
    /// element it named: the element's words become the grounder's description.
    fn unsure(
        &self,
        name: &str,
        args: &Map<String, Value>,
        confidence: Option<f64>,
        description: Option<&str>,
        screen: &crate::screen::ScreenRepresentation,
    ) -> Option<Interpreted> {
        let c = confidence?;
        if !matches!(name, "tap" | "long_press") || self.grounder.is_none() {
            return None;
        }
        if c >= self.grounding_below? {
            return None;
        }
        let el = self.find_element(args, screen, name).ok()?;
        let before = format!("element {} {} \"{}\"", el.element_id, el.kind, el.text);
        let description = match description {
            Some(d) => d.to_string(),
            None if el.text.is_empty() => format!("the {} at {:?}", el.kind, el.bounds),
            None => format!("the {} \"{}\"", el.kind, el.text),
        };
        let mut args = args.clone();
        args.remove("element");
        args.remove("selector");
        Some(Interpreted::Ground {
            name: name.into(),
            args,
            description,
            reason: GroundingReason::LowConfidence,
            confidence: Some(c),
            before,
        })
    }

    pub fn build_request(&self, ctx: &AgentContext) -> ChatRequest {
        let s = &ctx.observation.screen;
        let mut text = ctx.prompt_text_before_elements();
        // The element list opens with the app's package.
        let dialog = if s.has_modal {
            " (a dialog is open)"
        } else {
            ""
        };
        text.push_str(&format!("\nScreen{dialog}:\n{}", s.elements));
        let mut parts = vec![Part::Text(text)];
        if self.screenshot
            && let Some(img) = &ctx.observation.screenshot
        {
            parts.push(Part::Image(self.model.config().screenshot.apply(img)));
        }
        let mut req = ChatRequest::new(Some(self.system.clone()), vec![Message::user(parts)]);
        req.tools = self.tools.clone();
        req.tool_choice = ToolChoice::Required;
        req
    }

    /// Turns one tool call into an action (or an information answer). Grounding is
    /// handled by the caller when this returns `NeedsGrounding`.
    fn interpret(&self, call: &ToolCall, ctx: &AgentContext) -> Result<Interpreted, ParseError> {
        let args = call
            .arguments()
            .map_err(|e| ParseError::json(&e, &call.raw_arguments, 0))?;
        let Value::Object(mut args) = args else {
            return Err(ParseError::InvalidField {
                action: call.name.clone(),
                field: "arguments".into(),
                reason: "expected a JSON object".into(),
            });
        };
        let name = call.name.as_str();
        if let Some((_, tool)) = self.mcp_names.iter().find(|(f, _)| f == name) {
            let a = self
                .parser
                .parse(&json!({"action": "mcp_call", "tool": tool, "args": args}))?;
            return Ok(Interpreted::Done(Outcome::Act(a)));
        }
        // An optional argument of ours sent as `null` is one left out.
        args.retain(|_, v| !v.is_null());
        let screen = &ctx.observation.screen;
        let untargeted = !args.contains_key("element") && !args.contains_key("selector");
        match name {
            "read_screen" => return Ok(Interpreted::Done(Outcome::Info(screen.elements.clone()))),
            "read" if untargeted => {
                return Ok(Interpreted::Done(Outcome::Info(screen.elements.clone())));
            }
            "read" | "read_element" => {
                let el = self.find_element(&args, screen, name)?;
                return Ok(Interpreted::Done(Outcome::Info(
                    serde_json::to_string_pretty(el).unwrap_or_default(),
                )));
            }
            _ => {}
        }
        if name == super::custom_tool::TOOL && self.tools.iter().any(|t| t.name == name) {
            let a = super::custom_tool::to_action(&self.parser, args)?;
            return Ok(Interpreted::Done(Outcome::Act(a)));
        }
        if !BUILTIN_TOOLS.contains(&name) {
            let mut allowed: Vec<&str> = (self.tools.iter())
                .filter(|t| BUILTIN_TOOLS.contains(&t.name.as_str()))
                .map(|t| t.name.as_str())
                .collect();
            allowed.extend(self.mcp_names.iter().map(|(f, _)| f.as_str()));
            return Err(ParseError::unknown(name, &allowed));
        }
        let description = match args.remove("description") {
            Some(Value::String(d)) if !d.trim().is_empty() => Some(d),
            _ => None,
        };
        let confidence = args.remove("confidence").and_then(|v| v.as_f64());
        if let Some(g) = self.unsure(name, &args, confidence, description.as_deref(), screen) {
            return Ok(g);
        }
        if let Some(Value::Number(n)) = args.get("element") {
            let id = n.as_u64();
            let known = id.is_some_and(|id| {
                screen
                    .actionable_elements
                    .iter()
                    .any(|e| e.element_id as u64 == id)
            });
            if !known {
                if let Some(d) = description.filter(|_| self.grounder.is_some()) {
                    let before = format!("element {n} (not on this screen): \"{d}\"");
                    args.remove("element");
                    return Ok(Interpreted::Ground {
                        name: name.into(),
                        args,
                        before,
                        description: d,
                        reason: GroundingReason::Unresolved,
                        confidence,
                    });
                }
                return Err(ParseError::InvalidField {
                    action: name.into(),
                    field: "element".into(),
                    reason: format!(
                        "there is no element {n} on this screen; {}",
                        id_range(screen)
                    ),
                });
            }
        }
        let targeted = matches!(name, "tap" | "long_press");
        if targeted && !args.contains_key("element") && !args.contains_key("selector") {
            return match (description, self.grounder.is_some()) {
                (Some(d), true) => Ok(Interpreted::Ground {
                    name: name.into(),
                    args,
                    before: format!("\"{d}\""),
                    description: d,
                    reason: GroundingReason::Unresolved,
                    confidence,
                }),
                _ => Err(ParseError::MissingField {
                    action: name.into(),
                    field: "element",
                    example: Some("{\"element\": 3} or {\"selector\": \"#btn_send\"}"),
                }),
            };
        }
        Ok(Interpreted::Done(Outcome::Act(self.to_action(name, args)?)))
    }

    fn to_action(
        &self,
        name: &str,
        mut args: Map<String, Value>,
    ) -> Result<crate::domain::Action, ParseError> {
        let name = canonical(name, &mut args);
        if name == "scroll_to_find" {
            args.entry("direction").or_insert(json!("down"));
            args.entry("max_swipes").or_insert(json!(10));
        }
        args.insert("action".into(), json!(name));
        Ok(self.parser.parse(&Value::Object(args))?)
    }

    fn find_element<'s>(
        &self,
        args: &Map<String, Value>,
        screen: &'s crate::screen::ScreenRepresentation,
        tool: &str,
    ) -> Result<&'s crate::screen::ActionableElement, ParseError> {
        let els = &screen.actionable_elements;
        let found = match (
            args.get("element").and_then(Value::as_u64),
            args.get("selector").and_then(Value::as_str),
        ) {
            (Some(id), _) => els.iter().find(|e| e.element_id as u64 == id),
            (None, Some(sel)) => els
                .iter()
                .find(|e| e.selector == sel || e.alternative_selectors.iter().any(|a| a == sel)),
            (None, None) => {
                return Err(ParseError::MissingField {
                    action: tool.into(),
                    field: "element",
                    example: Some("{\"element\": 3}"),
                });
            }
        };
        found.ok_or_else(|| ParseError::InvalidField {
            action: tool.into(),
            field: "element".into(),
            reason: format!("no such element on this screen; {}", id_range(screen)),
        })
    }
}

/// A call of one of the merged tools as the action it stands for: a held tap is a
/// long press, "" typed over a field empties it, a scroll `until` a selector is
/// `scroll_to_find`, a wait for absence is `wait_for_gone`.
fn canonical<'n>(name: &'n str, args: &mut Map<String, Value>) -> &'n str {
    match name {
        "tap" => match args.remove("long_ms") {
            Some(ms) => {
                args.insert("duration_ms".into(), ms);
                "long_press"
            }
            None => name,
        },
        "type"
            if args.get("text") == Some(&json!(""))
                && args.get("clear_first") == Some(&json!(true)) =>
        {
            args.remove("text");
            args.remove("clear_first");
            "clear"
        }
        "scroll" => match args.remove("until") {
            Some(sel) => {
                args.remove("element");
                args.remove("selector");
                args.insert("selector".into(), sel);
                "scroll_to_find"
            }
            None => name,
        },
        "wait_for" => match args.remove("gone") {
            Some(Value::Bool(true)) => "wait_for_gone",
            _ => name,
        },
        _ => name,
    }
}

enum Interpreted {
    Done(Outcome),
    Ground {
        name: String,
        args: Map<String, Value>,
        description: String,
        reason: GroundingReason,
        confidence: Option<f64>,
        /// The target as the navigator named it.
        before: String,
    },
}

fn id_range(s: &crate::screen::ScreenRepresentation) -> String {
    let ids = s.actionable_elements.iter().map(|e| e.element_id);
    match (ids.clone().min(), ids.max()) {
        (Some(a), Some(b)) => format!("element ids on this screen are {a}–{b}"),
        _ => "this screen has no actionable elements".into(),
    }
}

fn render_calls(text: &str, calls: &[ToolCall]) -> String {
    let mut raw = text.to_string();
    for c in calls {
        if !raw.is_empty() {
            raw.push('\n');
        }
        raw.push_str(&format!("{}({})", c.name, c.raw_arguments));
    }
    raw
}

#[async_trait]
impl Agent for NavigatorAgent {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError> {
        // Owned, so that recording can borrow the agent mutably while the meter runs.
        let prices = self.prices.clone();
        let mut meter = Meter::new(&prices);
        let mut req = self.build_request(ctx);
        let mut retries = 0u32;
        let mut info_rounds = 0u32;
        let mut record_rounds = 0u32;
        let mut fallback = None;
        loop {
            let reply = meter.call(self.model.as_ref(), &req).await?;
            let raw = render_calls(&reply.text, &reply.tool_calls);
            let thinking = reply
                .reasoning
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| reply.text.trim().to_string());
            let (decisive, mut answers) = self.take_records(&reply.tool_calls);
            let result = match decisive {
                None if !answers.is_empty() => Ok(Interpreted::Done(Outcome::Recorded)),
                None => Err(ParseError::MissingTag {
                    tag: "tool call",
                    expected: "call exactly one of the tools",
                }),
                Some(call) => match self.finalize(call) {
                    Some(r) => r,
                    None => self.interpret(call, ctx),
                },
            };
            let outcome = match result {
                Ok(Interpreted::Done(o)) => Ok(o),
                Ok(Interpreted::Ground {
                    name,
                    mut args,
                    description,
                    reason,
                    confidence,
                    before,
                }) => {
                    let shot = ctx.observation.screenshot.as_ref().ok_or_else(|| {
                        AgentError::Grounding(format!(
                            "cannot locate \"{description}\": the observation has no screenshot"
                        ))
                    })?;
                    let g = self
                        .grounder
                        .as_ref()
                        .ok_or_else(|| AgentError::Grounding("no grounder configured".into()))?
                        .ground(&GroundingRequest {
                            description: &description,
                            screenshot: shot,
                        })
                        .await?;
                    meter.absorb(&g.calls);
                    fallback = Some(crate::domain::Annotation::GroundingFallback {
                        reason,
                        confidence,
                        before,
                        after: super::grounding::describe_point(g.point, &ctx.observation),
                    });
                    args.insert("coordinate".into(), json!([g.point.x(), g.point.y()]));
                    self.to_action(&name, args).map(Outcome::Act)
                }
                Err(e) => Err(e),
            };
            let (feedback, is_error) = match outcome {
                Ok(Outcome::Act(action)) => {
                    let mut d = meter.decision(thinking, action, raw, retries);
                    d.annotations.extend(fallback.take());
                    return Ok(d);
                }
                Ok(Outcome::Recorded) if record_rounds < MAX_INFO_ROUNDS => {
                    record_rounds += 1;
                    ("now call an action tool".into(), false)
                }
                Ok(Outcome::Recorded) => {
                    let e = ParseError::InvalidField {
                        action: "record_step".into(),
                        field: "tool".into(),
                        reason: "the step is recorded; call an action tool now".into(),
                    };
                    return Err(meter.unusable(e, raw, retries + 1));
                }
                Ok(Outcome::Info(text)) if info_rounds < MAX_INFO_ROUNDS => {
                    info_rounds += 1;
                    (text, false)
                }
                Ok(Outcome::Info(_)) => {
                    let e = ParseError::InvalidField {
                        action: "read".into(),
                        field: "tool".into(),
                        reason: "you have read enough; call an action tool now".into(),
                    };
                    if retries > 0 {
                        return Err(meter.unusable(e, raw, retries + 1));
                    }
                    retries += 1;
                    (super::correction(&e), true)
                }
                Err(e) if retries == 0 => {
                    tracing::info!(error = %e, "navigator reply unusable; asking once more");
                    retries += 1;
                    (super::correction(&e), true)
                }
                Err(error) => {
                    return Err(meter.unusable(error, raw, retries + 1));
                }
            };
            // Answer every call of the assistant turn (providers require it), the first
            // with the feedback, the rest as not executed.
            let mut assistant = Vec::new();
            if !reply.text.is_empty() {
                assistant.push(Part::Text(reply.text.clone()));
            }
            let mut results = Vec::new();
            if let Some(c) = decisive {
                answers.push(Answer::new(c, feedback.clone(), is_error));
            } else if let Some(first) = answers.first_mut().filter(|_| is_error) {
                first.content = format!("{}\n{feedback}", first.content);
            }
            for c in &reply.tool_calls {
                assistant.push(Part::ToolCall(c.clone()));
                let a = answers.iter().find(|a| a.call_id == c.id);
                results.push(Part::ToolResult {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: a.map_or_else(|| "not executed".into(), |a| a.content.clone()),
                    is_error: a.is_none_or(|a| a.is_error),
                });
            }
            if reply.tool_calls.is_empty() {
                if assistant.is_empty() {
                    // Providers refuse empty text blocks.
                    assistant.push(Part::Text("(empty reply)".into()));
                }
                results.push(Part::Text(feedback));
            }
            req.messages.push(Message {
                role: Role::Assistant,
                parts: assistant,
            });
            req.messages.push(Message::user(results));
        }
    }
    fn take_script(&mut self, finished_ok: bool, reason: Option<&str>) -> Option<ProducedScript> {
        let script = self.recording.as_mut()?.take(finished_ok, reason)?;
        Some(ProducedScript {
            script,
            healed_from: None,
        })
    }

    fn wants_device_context(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        let c = self.model.config();
        format!(
            "navigator {}:{}",
            c.provider.display_name().to_lowercase(),
            c.model
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every navigator request repeats, the system prompt and the tool schemas,
    /// says each thing once and stays within a budget (o200k tokens; 1,543 before the
    /// schemas and prompt were first compacted, 880 with fifteen tools): no tool's
    /// description is repeated in the system prompt, no schema offers `null`, and every
    /// offered tool is one the navigator answers.
    #[test]
    fn the_fixed_part_of_a_request_says_each_thing_once_within_its_budget() {
        let system = include_str!("../../prompts/navigator.v2.md");
        let tools = builtin_tools();
        for t in &tools {
            assert!(!system.contains(&t.description), "{}: said twice", t.name);
            assert!(!t.parameters.to_string().contains("null"), "{}", t.name);
        }
        let schemas: Vec<Value> = (tools.iter())
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        let n = crate::screen::count_o200k(system)
            + crate::screen::count_o200k(&Value::Array(schemas).to_string());
        assert!(n <= 600, "{n} tokens");
        for t in &tools {
            assert!(BUILTIN_TOOLS.contains(&t.name.as_str()), "{}", t.name);
        }
        assert_eq!(tools.len(), 9);
    }
}
