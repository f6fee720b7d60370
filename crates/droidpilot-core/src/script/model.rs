//! The script document: a goal, inputs, ordered steps and outputs, as seed 001's
//! script-generation contract describes it. A step names one action of the one `Action`
//! type, a selector with its alternatives, parameters, what to wait for before it, what
//! should hold after it, and recovery hints for AI in the middle.
//!
//! A script is checked whole when it is parsed (`Script::validate`): every selector
//! parses, every `${var}` is an input or an earlier `store_as`, every step builds a valid
//! `Action`. Errors name the field (`steps[2].selector`) so a caller can fix it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::hints::Trigger;
use super::vars::{self, Vars};
use crate::domain::action::{Direction, Key};
use crate::domain::{Action, ActionParser};
use crate::screen::Selector;

/// How long a step waits for its target (or its wait_condition) when it names none.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Attempts AI in the middle gets per failed step before the user is asked.
pub const DEFAULT_MAX_RECOVERY_ATTEMPTS: u32 = 3;

/// The script as a person or a recorder writes it (no id, no version: the store assigns
/// those).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// A short name for lists (`"post a message"`).
    pub name: String,
    /// What the flow achieves; AI in the middle is told it.
    pub goal: String,
    /// The app the flow runs in. A run on a device without it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// Inputs a run supplies (`${name}` in steps), each a default (a string, or null
    /// for none) or `{"secret": true}`: a value a run supplies that is held in memory
    /// only, never stored, logged or exported.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub inputs: BTreeMap<String, Input>,
    pub steps: Vec<ScriptStep>,
    /// Variables returned at the end of a run (inputs or `store_as` names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// When a selector and its alternatives all miss, score the screen's elements on what
    /// the step recorded (id words, text, description, class, the row's texts, place) and
    /// take a clear winner (on unless the script says `"fuzzy": false`).
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub fuzzy: bool,
    /// Model attempts per failed step before the user is asked (default 3).
    #[serde(default = "default_recovery_attempts")]
    pub max_recovery_attempts: u32,
    /// The Maestro flow this script was imported from, as written. Export as Maestro
    /// gives it back (its comments, tags and layout kept) while the steps are still the
    /// ones it imports to; an edited or healed script is exported from its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maestro: Option<String>,
}

/// One declared input: its default, or none; a secret input has no default (it would be
/// stored with the script) and its run-time value is never stored (`agent::secrets`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Input {
    pub default: Option<String>,
    pub secret: bool,
}

impl Input {
    /// A secret input: a run supplies it, nothing stores it.
    pub fn secret() -> Self {
        Self {
            default: None,
            secret: true,
        }
    }
}

impl From<Option<String>> for Input {
    fn from(default: Option<String>) -> Self {
        Self {
            default,
            secret: false,
        }
    }
}

/// The object form of an input (`{"secret": true}`).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputObject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    secret: bool,
}

impl Serialize for Input {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.secret {
            InputObject {
                default: self.default.clone(),
                secret: true,
            }
            .serialize(s)
        } else {
            self.default.serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None.into()),
            Value::String(s) => Ok(Some(s).into()),
            v @ Value::Object(_) => {
                let o: InputObject = serde_json::from_value(v).map_err(serde::de::Error::custom)?;
                Ok(Self {
                    default: o.default,
                    secret: o.secret,
                })
            }
            _ => Err(serde::de::Error::custom(
                "an input is a default (a string), null (no default) or {\"secret\": true}",
            )),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_recovery_attempts() -> u32 {
    DEFAULT_MAX_RECOVERY_ATTEMPTS
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    pub action: StepAction,
    /// The element acted on, by the recommended selector (`#id`, `:text("…")`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Tried in order when `selector` misses. Required when `selector` is index-based.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternative_selectors: Vec<String>,
    #[serde(default, skip_serializing_if = "StepParameters::is_empty")]
    pub parameters: StepParameters,
    /// For `"action": "custom"`: the operator's custom action the step runs
    /// (`script::custom`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<super::custom::CustomCall>,
    /// Waited for before the step (change detection with a timeout, never a fixed sleep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_condition: Option<WaitCondition>,
    /// What holds after the step; how replay knows the step worked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery_hints: Vec<RecoveryHint>,
    /// Texts that tell the element apart from others that share its locator (the row's
    /// own label, a neighbour's text), recorded with it. A locator many elements share
    /// (an index path, an id every row has) is used only when one of these is in the
    /// element's row on the screen; otherwise the step fails without acting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witness: Vec<String>,
    /// The structure of the screen the step acted on, recorded with it: a hash of its
    /// actionable elements' classes and index paths, no text (`record::layout`). A screen
    /// with the same structure and other words (another UI language, reworded labels) is
    /// the same screen, so when none of the step's recorded texts is on it, the element at
    /// the recorded index path is the recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Skipped when its target is absent (a pop-up that comes only sometimes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// What the step does, for people reading the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The actions a script step may take: the device actions of `Action` (no `finish`,
/// `ask_user` or `mcp_call`: a script ends when its steps end), and `custom`, one of the
/// server's custom actions (`ScriptStep::custom`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    Tap,
    LongPress,
    DoubleTap,
    Type,
    Clear,
    Scroll,
    Swipe,
    Key,
    LaunchApp,
    OpenUrl,
    Wait,
    WaitFor,
    WaitForGone,
    Custom,
}

impl StepAction {
    pub fn name(self) -> &'static str {
        match self {
            Self::Tap => "tap",
            Self::LongPress => "long_press",
            Self::DoubleTap => "double_tap",
            Self::Type => "type",
            Self::Clear => "clear",
            Self::Scroll => "scroll",
            Self::Swipe => "swipe",
            Self::Key => "key",
            Self::LaunchApp => "launch_app",
            Self::OpenUrl => "open_url",
            Self::Wait => "wait",
            Self::WaitFor => "wait_for",
            Self::WaitForGone => "wait_for_gone",
            Self::Custom => "custom",
        }
    }

    /// Whether the step needs an element (a selector or a coordinate).
    pub fn needs_target(self) -> bool {
        matches!(
            self,
            Self::Tap | Self::LongPress | Self::DoubleTap | Self::WaitFor | Self::WaitForGone
        )
    }

    /// Whether `selector` names the element the action touches (as opposed to a scroll
    /// container, or nothing).
    pub fn acts_on_selector(self) -> bool {
        matches!(
            self,
            Self::Tap | Self::LongPress | Self::DoubleTap | Self::Type | Self::Clear
        )
    }
}

/// Action-specific parameters. A parameter the step's action does not use is refused.
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct StepParameters {
    /// `type`: the text (may hold `${var}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `type`: clear the field first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear_first: bool,
    /// `scroll` and `swipe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    #[schemars(with = "Option<String>")]
    pub direction: Option<Direction>,
    /// `scroll`: keep scrolling until this selector is visible (Maestro's
    /// scrollUntilVisible), at most `max_scrolls` times (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_scrolls: Option<u32>,
    /// How long to wait for the target (default 5000 ms); for `wait_for`, the wait itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Read the target element's text into this variable after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_as: Option<String>,
    /// `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    #[schemars(with = "Option<String>")]
    pub key: Option<Key>,
    /// `launch_app`: a package name, or `label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `open_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `wait`: a fixed pause (prefer `wait_for`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// `long_press` and `swipe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A normalized point `[x, y]` in [0, 1]²: the target when there is no selector, and
    /// what blind coordinate replay taps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinate: Option<[f64; 2]>,
    /// `swipe` between two normalized points: of the screen, or, when the step has a
    /// selector, of that element's bounds (a slider's drag, found wherever the element
    /// is now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<[f64; 2]>,
    /// `tap`, `long_press` or `double_tap` on an element at this point of its bounds,
    /// as fractions `[x, y]` in [0, 1]² (a slider's level, a rating's star): the replay
    /// touches the same place of the element wherever it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<[f64; 2]>,
}

impl StepParameters {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Waited for before a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitCondition {
    pub selector: String,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// What should hold after a step. Every listed condition must hold (checked until
/// `timeout_ms`, default 5000).
#[derive(
    Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Selectors that appear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visible: Vec<String>,
    /// Selectors that are gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gone: Vec<String>,
    /// The foreground app's package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl Expect {
    pub fn is_empty(&self) -> bool {
        self.visible.is_empty() && self.gone.is_empty() && self.app.is_none()
    }
}

/// A hint for AI in the middle, given when its trigger matches the failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryHint {
    /// `element_not_found:#btn_submit`, `element_not_found:*`, `modal_detected`, …
    pub trigger: String,
    pub hint: String,
}

/// Where a stored script version came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScriptSource {
    /// Written or uploaded as a document.
    Uploaded,
    /// Turned from a finished task's successful steps.
    Task {
        #[schema(value_type = String)]
        task_id: crate::domain::TaskId,
    },
    /// Recorded by the navigator (`record_step` / `finalize_script`) during a task.
    Navigator {
        #[schema(value_type = String)]
        task_id: crate::domain::TaskId,
    },
    /// Imported from a Maestro flow.
    Maestro,
    /// Healed by AI in the middle during a replay task.
    Healed {
        #[schema(value_type = String)]
        task_id: crate::domain::TaskId,
        from_version: u32,
    },
}

/// A script document that cannot be used, naming the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ScriptError {
    /// `steps[2].selector`, `inputs`, …
    pub path: String,
    /// `invalid_script`, `unknown_variable`, `invalid_selector`.
    pub code: &'static str,
    pub message: String,
    pub hint: String,
}

impl ScriptError {
    pub fn invalid(path: impl Into<String>, message: impl Into<String>, hint: &str) -> Self {
        Self {
            path: path.into(),
            code: "invalid_script",
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl Script {
    /// Parses a JSON document and validates it.
    pub fn from_json(v: &Value) -> Result<Script, ScriptError> {
        let script: Script = serde_json::from_value(v.clone()).map_err(|e| {
            ScriptError::invalid(
                "script",
                e.to_string(),
                "A script is {\"name\", \"goal\", \"steps\": [{\"action\": \"tap\", \"selector\": \"#id\"}]}; see docs/scripts.md \"The script document\".",
            )
        })?;
        script.validate()?;
        Ok(script)
    }

    /// Checks everything a run would trip over, so a bad script is refused up front.
    pub fn validate(&self) -> Result<(), ScriptError> {
        if self.steps.is_empty() {
            return Err(ScriptError::invalid(
                "steps",
                "a script needs at least one step",
                "Add steps, or record them from a finished task with {\"from_task\": ID}.",
            ));
        }
        let mut known: Vec<String> = Vec::new();
        for (name, input) in &self.inputs {
            vars::check_name(name)
                .map_err(|m| ScriptError::invalid("inputs", m, vars::NAME_HINT))?;
            if input.secret && input.default.is_some() {
                return Err(ScriptError::invalid(
                    format!("inputs.{name}.default"),
                    "a secret input has no default: the default would be stored with the script",
                    "Remove the default; each run supplies the value in its `inputs`.",
                ));
            }
            known.push(name.clone());
        }
        for (i, step) in self.steps.iter().enumerate() {
            step.validate(&format!("steps[{i}]"), &known)?;
            if let Some(name) = &step.parameters.store_as {
                known.push(name.clone());
            }
        }
        for (i, out) in self.outputs.iter().enumerate() {
            if !known.contains(out) {
                return Err(vars::unknown(&format!("outputs[{i}]"), out, &known));
            }
            if self.inputs.get(out).is_some_and(|i| i.secret) {
                return Err(ScriptError::invalid(
                    format!("outputs[{i}]"),
                    format!("`{out}` is a secret input: a run's outputs are stored"),
                    "Remove it from `outputs`.",
                ));
            }
        }
        Ok(())
    }
}

impl ScriptStep {
    /// A step acting on `selector` with default everything else.
    pub fn new(action: StepAction, selector: Option<String>) -> Self {
        Self {
            action,
            selector,
            alternative_selectors: Vec::new(),
            parameters: StepParameters::default(),
            custom: None,
            wait_condition: None,
            expect: None,
            recovery_hints: Vec::new(),
            witness: Vec::new(),
            layout: None,
            optional: false,
            description: None,
        }
    }

    /// How long to wait for this step's target.
    pub fn timeout_ms(&self) -> u64 {
        self.parameters.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)
    }

    /// A swipe with a selector and both points: a drag on that element (a slider's),
    /// its points fractions of the element's bounds.
    pub fn is_element_drag(&self) -> bool {
        self.action == StepAction::Swipe
            && self.selector.is_some()
            && self.parameters.start.is_some()
            && self.parameters.end.is_some()
            && self.parameters.direction.is_none()
    }

    /// Checks one step; `known` are the variables set before it.
    pub fn validate(&self, path: &str, known: &[String]) -> Result<(), ScriptError> {
        super::custom::check(self, path, known)?;
        for (field, sel) in self.selectors() {
            vars::check_known(&format!("{path}.{field}"), sel, known)?;
            check_selector(&format!("{path}.{field}"), &vars::placeholder(sel))?;
        }
        for (field, text) in self.parameters.texts() {
            vars::check_known(&format!("{path}.parameters.{field}"), text, known)?;
        }
        if let Some(name) = &self.parameters.store_as {
            vars::check_name(name).map_err(|m| {
                ScriptError::invalid(format!("{path}.parameters.store_as"), m, vars::NAME_HINT)
            })?;
        }
        self.check_index_alternatives(path)?;
        for (j, h) in self.recovery_hints.iter().enumerate() {
            Trigger::parse(&h.trigger).map_err(|m| {
                ScriptError::invalid(
                    format!("{path}.recovery_hints[{j}].trigger"),
                    m,
                    "Triggers are `ERROR:SELECTOR` (`element_not_found:#btn_submit`), `ERROR:*`, or a condition (`modal_detected`, `keyboard_shown`).",
                )
            })?;
        }
        let probe = Vars::placeholders();
        self.to_action(self.selector.as_deref(), &probe)
            .map(drop)
            .map_err(|e| ScriptError {
                path: format!("{path}.{}", e.path),
                ..e
            })
    }

    /// An index-based primary selector breaks on the first layout change: require a
    /// fallback, as seed 001 does.
    fn check_index_alternatives(&self, path: &str) -> Result<(), ScriptError> {
        let Some(sel) = &self.selector else {
            return Ok(());
        };
        let index_based =
            Selector::parse(&vars::placeholder(sel)).is_ok_and(|s| s.is_index_based());
        if index_based && self.alternative_selectors.is_empty() {
            return Err(ScriptError::invalid(
                format!("{path}.alternative_selectors"),
                format!("selector `{sel}` is index-based and has no alternative_selectors"),
                "Add a `#id`, `:text(\"…\")` or `:desc(\"…\")` alternative; index paths break on any layout change.",
            ));
        }
        Ok(())
    }

    /// Every selector in the step, with its field path.
    pub fn selectors(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        if let Some(s) = &self.selector {
            out.push(("selector".to_string(), s.as_str()));
        }
        for (i, s) in self.alternative_selectors.iter().enumerate() {
            out.push((format!("alternative_selectors[{i}]"), s.as_str()));
        }
        if let Some(u) = &self.parameters.until {
            out.push(("parameters.until".to_string(), u.as_str()));
        }
        if let Some(w) = &self.wait_condition {
            out.push(("wait_condition.selector".to_string(), w.selector.as_str()));
        }
        if let Some(e) = &self.expect {
            for (i, s) in e.visible.iter().enumerate() {
                out.push((format!("expect.visible[{i}]"), s.as_str()));
            }
            for (i, s) in e.gone.iter().enumerate() {
                out.push((format!("expect.gone[{i}]"), s.as_str()));
            }
        }
        out
    }

    /// The `Action` this step runs when `selector` (the primary, an alternative or a
    /// healed one; None to use the step's coordinate) is the target, with variables
    /// substituted. The path in an error is relative to the step.
    pub fn to_action(&self, selector: Option<&str>, vars: &Vars) -> Result<Action, ScriptError> {
        if let Some(call) = self.custom.as_ref().filter(|_| selector.is_none()) {
            return call.to_action(vars);
        }
        let sub = |field: &str, s: &str| {
            vars.substitute(s).map_err(|m| ScriptError {
                path: field.to_string(),
                code: "unknown_variable",
                message: m,
                hint: vars::NAME_HINT.into(),
            })
        };
        let mut obj = Map::new();
        obj.insert("action".into(), json!(self.action.name()));
        let p = &self.parameters;
        let target = match (selector, p.coordinate) {
            (Some(s), _) => Some(json!({"selector": sub("selector", s)?})),
            (None, Some(c)) => Some(json!({"coordinate": c})),
            (None, None) => None,
        };
        self.put_target(&mut obj, target)?;
        self.put_parameters(&mut obj, &sub)?;
        ActionParser::new()
            .parse(&Value::Object(obj))
            .map_err(|e| ScriptError::invalid("parameters", e.caller_message(), &e.hint()))
    }

    fn put_target(
        &self,
        obj: &mut Map<String, Value>,
        target: Option<Value>,
    ) -> Result<(), ScriptError> {
        match (self.action, target) {
            (StepAction::WaitFor | StepAction::WaitForGone, Some(t)) => {
                let sel = t.get("selector").cloned().ok_or_else(|| {
                    ScriptError::invalid(
                        "selector",
                        format!(
                            "`{}` needs a selector, not a coordinate",
                            self.action.name()
                        ),
                        "Give the element's selector.",
                    )
                })?;
                obj.insert("selector".into(), sel);
                obj.insert("timeout_ms".into(), json!(self.timeout_ms()));
            }
            (a, None) if a.needs_target() => {
                return Err(ScriptError::invalid(
                    "selector",
                    format!("`{}` needs a selector (or parameters.coordinate)", a.name()),
                    "Give the element's selector, e.g. \"#btn_send\" or \":text(\\\"Send\\\")\".",
                ));
            }
            (
                StepAction::Key | StepAction::LaunchApp | StepAction::OpenUrl | StepAction::Wait,
                Some(_),
            ) => {
                return Err(ScriptError::invalid(
                    "selector",
                    format!("`{}` takes no selector", self.action.name()),
                    "Remove the selector from this step.",
                ));
            }
            // A drag on an element: the replay turns its points into screen points
            // where the element is (`ScriptStep::is_element_drag`).
            (StepAction::Swipe, Some(_)) if self.is_element_drag() => {}
            (StepAction::Swipe, Some(_)) if self.parameters.direction.is_none() => {
                return Err(ScriptError::invalid(
                    "selector",
                    "a swipe inside an element needs parameters.direction, or `start` and `end` within the element",
                    "Add \"direction\": \"up\" (or down, left, right), or both points as fractions of the element's bounds.",
                ));
            }
            (_, Some(Value::Object(t))) => obj.extend(t),
            (_, _) => {}
        }
        Ok(())
    }

    /// `parameters.at`: a touch on an element, at a point inside it.
    fn check_at(&self, at: [f64; 2]) -> Result<(), ScriptError> {
        let touch = matches!(
            self.action,
            StepAction::Tap | StepAction::LongPress | StepAction::DoubleTap
        );
        if !touch || self.selector.is_none() {
            return Err(ScriptError::invalid(
                "parameters.at",
                format!(
                    "`at` is a point within the step's element, for a tap, long press or double tap with a selector, not `{}`{}",
                    self.action.name(),
                    if self.selector.is_none() {
                        " without one"
                    } else {
                        ""
                    }
                ),
                "Give the element's selector, or use parameters.coordinate for a point of the screen.",
            ));
        }
        if !at.iter().all(|v| (0.0..=1.0).contains(v)) {
            return Err(ScriptError::invalid(
                "parameters.at",
                format!("`at` {at:?} is outside the element"),
                "Give fractions of the element's width and height, each from 0 to 1.",
            ));
        }
        Ok(())
    }

    fn put_parameters(
        &self,
        obj: &mut Map<String, Value>,
        sub: &dyn Fn(&str, &str) -> Result<String, ScriptError>,
    ) -> Result<(), ScriptError> {
        let p = &self.parameters;
        if let Some(t) = &p.text {
            obj.insert("text".into(), json!(sub("parameters.text", t)?));
        }
        if p.clear_first {
            obj.insert("clear_first".into(), json!(true));
        }
        if let Some(d) = p.direction {
            obj.insert("direction".into(), json!(d));
        }
        if let Some(k) = p.key {
            obj.insert("key".into(), json!(k));
        }
        if let Some(pkg) = &p.package {
            obj.insert("package".into(), json!(sub("parameters.package", pkg)?));
        }
        if let Some(l) = &p.label {
            obj.insert("label".into(), json!(sub("parameters.label", l)?));
        }
        if let Some(u) = &p.url {
            obj.insert("url".into(), json!(sub("parameters.url", u)?));
        }
        if let Some(ms) = p.ms {
            obj.insert("ms".into(), json!(ms));
        }
        if let Some(d) = p.duration_ms {
            obj.insert("duration_ms".into(), json!(d));
        }
        if let (Some(s), Some(e)) = (p.start, p.end) {
            obj.insert("start".into(), json!(s));
            obj.insert("end".into(), json!(e));
        } else if p.start.is_some() || p.end.is_some() {
            return Err(ScriptError::invalid(
                "parameters",
                "a swipe needs both `start` and `end`",
                "Give both points, or a `direction`.",
            ));
        }
        if let Some(at) = p.at {
            self.check_at(at)?;
        }
        if (p.until.is_some() || p.max_scrolls.is_some()) && self.action != StepAction::Scroll {
            return Err(ScriptError::invalid(
                "parameters.until",
                format!("`until` is for scroll steps, not `{}`", self.action.name()),
                "Use `until` on a scroll step, or `wait_condition` to wait for an element.",
            ));
        }
        Ok(())
    }
}

impl StepParameters {
    /// The text parameters that may hold `${var}`.
    fn texts(&self) -> Vec<(&'static str, &str)> {
        [
            ("text", self.text.as_deref()),
            ("package", self.package.as_deref()),
            ("label", self.label.as_deref()),
            ("url", self.url.as_deref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// A selector that does not parse, naming the position of the fault.
fn check_selector(path: &str, sel: &str) -> Result<(), ScriptError> {
    Selector::parse(sel).map(drop).map_err(|e| ScriptError {
        path: path.to_string(),
        code: "invalid_selector",
        message: e.to_string(),
        hint: e.hint(),
    })
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
