//! The one validated `Action`: the union of every action space droidpilot speaks.
//!
//! Agents, scripts, REST callers and MCP clients all produce JSON tagged by `"action"`.
//! Parsing goes through `ActionParser` so that every failure carries a message a model
//! (or a person) can act on: an unknown action lists the allowed names and the closest
//! one, a bad coordinate names its value, a missing or mistyped field names the field.
//! serde's derive cannot produce those messages for an internally tagged enum, so the
//! parse is written by hand over `serde_json::Value`; serialization is derived.
//!
//! A field the action does not use is refused by name (with "did you mean" when it is a
//! near-miss such as `"coordnate"`), never silently dropped: a dropped `element_id` once
//! sent typed text to whatever field had focus.
//!
//! Values that would reach a device are checked here, where the field is still known:
//! `open_url` takes only an allow-list of URL schemes, `launch_app` only well-formed
//! package names and labels without shell metacharacters.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use strum::VariantArray as _;

use super::geometry::{InvalidCoordinate, NormPoint};

/// What a pointer action aims at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A normalized point in [0, 1]².
    Coordinate(NormPoint),
    /// An element id from the current screen's element map.
    Element(u32),
    /// A selector such as `#btn_send` or `:text("Send")`; parsed by the screen layer.
    Selector(String),
    /// A point in pixels `[x, y]`, for people who read positions off a screenshot; checked
    /// against the screen size when the action runs.
    Pixel([u32; 2]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
}

/// Hardware and navigation keys. The name (`name`), the aliases models write (`parse`)
/// and the list (`VARIANTS`) are derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Key {
    Back,
    Home,
    #[strum(
        to_string = "recents",
        serialize = "recent",
        serialize = "recent_apps",
        serialize = "app_switch"
    )]
    Recents,
    Enter,
    Menu,
    Power,
}

impl Key {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Parses a key name the way models write it: any case, `recent`/`app_switch` too.
    pub fn parse(s: &str) -> Option<Key> {
        normalize_name(s).parse().ok()
    }
}

/// A screen orientation, as Android's `user_rotation` numbers it (0–3, a quarter turn
/// each, counter-clockwise).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Orientation {
    Portrait,
    #[strum(to_string = "landscape", serialize = "landscape_left")]
    Landscape,
    #[strum(to_string = "reverse_portrait", serialize = "upside_down")]
    ReversePortrait,
    #[strum(to_string = "reverse_landscape", serialize = "landscape_right")]
    ReverseLandscape,
}

impl Orientation {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Parses an orientation in any case; Maestro's names (`LANDSCAPE_LEFT`,
    /// `LANDSCAPE_RIGHT`, `UPSIDE_DOWN`) too.
    pub fn parse(s: &str) -> Option<Orientation> {
        normalize_name(s).parse().ok()
    }

    /// Android's `user_rotation` value.
    pub fn rotation(self) -> u8 {
        self as u8
    }

    /// The orientation of a `user_rotation` value (0–3).
    pub fn from_rotation(r: u8) -> Option<Orientation> {
        Orientation::VARIANTS.get(r as usize).copied()
    }

    /// Whether the screen is wider than tall in this orientation (on a phone).
    pub fn is_landscape(self) -> bool {
        matches!(self, Orientation::Landscape | Orientation::ReverseLandscape)
    }
}

/// An app to launch: a package name (`com.android.settings`) or the label a person sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppRef {
    Package(String),
    Label(String),
}

/// One action. Serialized with `"action"` as the tag.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    Tap {
        #[serde(flatten)]
        target: TargetField,
    },
    LongPress {
        #[serde(flatten)]
        target: TargetField,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    DoubleTap {
        #[serde(flatten)]
        target: TargetField,
    },
    /// A swipe between two points, or in a direction (optionally inside a target).
    Swipe {
        #[serde(flatten)]
        path: SwipePath,
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// Scroll content in `direction` (`down` shows what is below: the finger moves up).
    Scroll {
        direction: Direction,
        /// The scrollable container; the screen's main scrollable when absent.
        #[serde(flatten)]
        container: Option<TargetField>,
    },
    Type {
        text: String,
        #[serde(flatten)]
        target: Option<TargetField>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        clear_first: bool,
    },
    Clear {
        #[serde(flatten)]
        target: Option<TargetField>,
    },
    Key {
        key: Key,
    },
    LaunchApp {
        #[serde(flatten)]
        app: AppRef,
    },
    OpenUrl {
        url: String,
    },
    /// Turn the screen to an orientation (devices that can: real phones over ADB, the
    /// virtual phone).
    Rotate {
        orientation: Orientation,
    },
    Wait {
        ms: u64,
    },
    WaitFor {
        selector: String,
        timeout_ms: u64,
        /// Give up before `timeout_ms` once the screen has held still this long with
        /// nothing loading: nothing is coming (a replay's automatic waits use it).
        #[serde(skip_serializing_if = "Option::is_none")]
        idle_ms: Option<u64>,
    },
    WaitForGone {
        selector: String,
        timeout_ms: u64,
        /// As for `WaitFor`: nothing is changing, so the element is not going away.
        #[serde(skip_serializing_if = "Option::is_none")]
        idle_ms: Option<u64>,
    },
    Finish {
        success: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
    },
    AskUser {
        question: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        options: Option<Vec<String>>,
    },
    McpCall {
        tool: String,
        args: Value,
    },
    /// An action registered at run time (`ActionParser::register`). Serialized as
    /// `{"action": name, ...args}`.
    #[serde(untagged)]
    Custom(CustomAction),
}

/// `Target` flattened into its action: `{"coordinate": [..]}`, `{"element": 3}` or
/// `{"selector": "#id"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct TargetField(pub Target);

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SwipePath {
    Points {
        start: NormPoint,
        end: NormPoint,
    },
    Direction {
        direction: Direction,
        #[serde(flatten)]
        target: Option<TargetField>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CustomAction {
    pub name: String,
    pub args: Map<String, Value>,
}

impl Serialize for CustomAction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = self.args.clone();
        m.insert("action".into(), Value::String(self.name.clone()));
        m.serialize(s)
    }
}

/// Upper bound for any duration or timeout in an action: a model asking to wait an hour
/// is a mistake, not a plan.
pub const MAX_DURATION_MS: u64 = 120_000;
/// Default for `wait_for` / `wait_for_gone` without `timeout_ms`.
pub const DEFAULT_WAIT_FOR_MS: u64 = 10_000;

/// Why an action did not parse. `Display` is the message shown to models and people.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error(
        "an action must be a JSON object like {{\"action\": \"tap\", \"coordinate\": [0.5, 0.3]}}, got {got}"
    )]
    NotAnObject { got: &'static str },
    #[error("missing field `action`{}; allowed actions: {}", near.as_ref().map(|n| format!(" (found `{n}`: name it `action`)")).unwrap_or_default(), allowed.join(", "))]
    MissingTag {
        allowed: Vec<String>,
        /// A key that was probably meant as the tag (`action_type`, `type`, `name`).
        near: Option<String>,
    },
    #[error("`action` says `{action}` and `action_type` says `{action_type}`; give one of them")]
    TwoTags { action: String, action_type: String },
    #[error("unknown action `{given}`{}; allowed actions: {}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), allowed.join(", "))]
    UnknownAction {
        given: String,
        suggestion: Option<String>,
        allowed: Vec<String>,
    },
    #[error("`{action}` needs field `{field}`{}", hint.as_ref().map(|h| format!(": {h}")).unwrap_or_default())]
    MissingField {
        action: String,
        field: String,
        hint: Option<String>,
    },
    #[error("`{action}` field `{field}` is invalid: {reason}")]
    InvalidField {
        action: String,
        field: String,
        reason: String,
    },
    #[error("`{action}` has unknown field `{given}`{}; `{action}` takes: {}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), if known.is_empty() { "no fields".to_string() } else { known.join(", ") })]
    UnknownField {
        action: String,
        given: String,
        suggestion: Option<String>,
        known: Vec<String>,
    },
    #[error("`{action}` takes only one of {}, got {}", fields.join(", "), given.join(" and "))]
    Conflict {
        action: String,
        fields: Vec<String>,
        given: Vec<String>,
    },
    /// A point outside [0, 1]. `Display` is the seed's message for models; a REST caller
    /// gets `ActionError::caller_message`, which names the field instead.
    #[error("{source}")]
    InvalidCoordinate {
        action: String,
        field: String,
        source: InvalidCoordinate,
    },
}

impl ActionError {
    /// A stable machine-readable code for the JSON error shape.
    pub fn code(&self) -> &'static str {
        match self {
            ActionError::UnknownAction { .. } => "unknown_action",
            ActionError::InvalidCoordinate { .. } => "invalid_coordinate",
            _ => "invalid_action",
        }
    }
    /// What to do about it, for the `hint` of the JSON error shape.
    pub fn hint(&self) -> String {
        match self {
            ActionError::UnknownAction { suggestion: Some(s), .. } => {
                format!("Use `{s}`, or one of the allowed actions listed in the message.")
            }
            ActionError::InvalidCoordinate { .. } => {
                "Send normalized coordinates: [x, y] with 0 ≤ x, y ≤ 1 (0.5 is the middle of the screen); for pixels send `pixel`: [x, y] instead of `coordinate`.".into()
            }
            ActionError::InvalidField { action, field, .. } if action == "type" && field == "text" => {
                "Send the text to type; to empty a field send {\"action\": \"clear\"}.".into()
            }
            ActionError::InvalidField { action, field, .. }
                if action == "swipe" && field.starts_with("duration") =>
            {
                "Give `duration_ms` of at least 1, or leave it out for the default 300 ms.".into()
            }
            _ => "See the action reference, docs/api.md \"Actions\", for every action and its fields.".into(),
        }
    }

    /// The message for a person or program calling the API: the same as `Display`, except
    /// that nothing is blamed on an agent that was not there.
    pub fn caller_message(&self) -> String {
        match self {
            ActionError::InvalidCoordinate {
                action,
                field,
                source,
            } => format!(
                "`{action}` field `{field}` is invalid: [{}, {}] is outside [0, 1]; `{field}` is a fraction of the screen",
                source.x, source.y
            ),
            other => other.to_string(),
        }
    }
}

/// Parses actions, knowing any custom actions registered at run time.
#[derive(Debug, Clone, Default)]
pub struct ActionParser {
    custom: BTreeSet<String>,
    /// Reads any unknown name as a custom action (`ActionParser::lenient`).
    any_custom: bool,
}

/// Canonical action names, in the order they are listed to models.
pub const BUILTIN_ACTIONS: &[&str] = &[
    "tap",
    "long_press",
    "double_tap",
    "swipe",
    "scroll",
    "type",
    "clear",
    "key",
    "back",
    "home",
    "recents",
    "enter",
    "menu",
    "power",
    "global_action",
    "launch_app",
    "open_url",
    "rotate",
    "wait",
    "wait_for",
    "wait_for_gone",
    "finish",
    "ask_user",
    "mcp_call",
];

/// Accepted spellings that mean a canonical action.
const ALIASES: &[(&str, &str)] = &[
    ("click", "tap"),
    ("recent", "recents"),
    ("open_app", "launch_app"),
    ("input_text", "type"),
    ("long_click", "long_press"),
];

/// Lower-case, trimmed, with `-` and spaces as `_`: `"Long Press"` → `long_press`.
fn normalize_name(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| {
            if c == '-' || c == ' ' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

impl ActionParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader for recorded actions (stored steps, exported trajectories): a name it does
    /// not know is a custom action registered by the run that recorded it, so it reads as
    /// `Action::Custom` instead of failing. Built-in actions are checked as usual.
    pub fn lenient() -> Self {
        Self {
            any_custom: true,
            ..Self::default()
        }
    }

    /// Registers a custom action name. Built-in names and aliases cannot be shadowed.
    pub fn register(&mut self, name: &str) -> Result<(), String> {
        let n = normalize_name(name);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "custom action name `{name}` must be letters, digits and `_`"
            ));
        }
        if BUILTIN_ACTIONS.contains(&n.as_str()) || ALIASES.iter().any(|(a, _)| *a == n) {
            return Err(format!(
                "`{n}` is a built-in action and cannot be registered"
            ));
        }
        self.custom.insert(n);
        Ok(())
    }

    /// Every name this parser accepts (canonical names, aliases, custom actions).
    pub fn allowed(&self) -> Vec<String> {
        BUILTIN_ACTIONS
            .iter()
            .map(|s| s.to_string())
            .chain(ALIASES.iter().map(|(a, _)| a.to_string()))
            .chain(self.custom.iter().cloned())
            .collect()
    }

    pub fn parse_str(&self, json: &str) -> Result<Action, ActionParseError> {
        let v: Value = serde_json::from_str(json).map_err(|e| ActionParseError::Json {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        self.parse(&v).map_err(ActionParseError::Invalid)
    }

    pub fn parse(&self, v: &Value) -> Result<Action, ActionError> {
        let obj = match v {
            Value::Object(m) => m,
            other => {
                return Err(ActionError::NotAnObject {
                    got: json_kind(other),
                });
            }
        };
        // `action_type` is seed 004's name for the tag (its `UIAction`), taken as a
        // synonym; given both, they must name the same action.
        let tag = match (obj.get("action"), obj.get("action_type")) {
            (Some(Value::String(a)), Some(Value::String(t)))
                if normalize_name(a) != normalize_name(t) =>
            {
                return Err(ActionError::TwoTags {
                    action: a.clone(),
                    action_type: t.clone(),
                });
            }
            (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => s,
            _ => {
                let near = ["actionType", "action_name", "name", "type"]
                    .into_iter()
                    .find(|k| obj.get(*k).is_some_and(Value::is_string))
                    .map(Into::into);
                return Err(ActionError::MissingTag {
                    allowed: self.allowed(),
                    near,
                });
            }
        };
        let norm = normalize_name(tag);
        let name = ALIASES
            .iter()
            .find(|(a, _)| *a == norm)
            .map(|(_, c)| *c)
            .or_else(|| BUILTIN_ACTIONS.iter().copied().find(|b| *b == norm));
        let Some(name) = name else {
            if self.any_custom || self.custom.contains(&norm) {
                let mut args = obj.clone();
                args.remove("action");
                args.remove("action_type");
                return Ok(Action::Custom(CustomAction { name: norm, args }));
            }
            let allowed = self.allowed();
            let suggestion = closest(&norm, allowed.iter().map(String::as_str));
            return Err(ActionError::UnknownAction {
                given: tag.clone(),
                suggestion,
                allowed,
            });
        };
        let fields = Fields {
            action: name,
            obj,
            recorded: self.any_custom,
        };
        fields.check_unknown()?;
        fields.build()
    }
}

/// A failure to read an action from text: either not JSON, or not a valid action.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionParseError {
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error(transparent)]
    Invalid(#[from] ActionError),
}

impl<'de> Deserialize<'de> for Action {
    /// Deserializes with the built-in action set; custom actions need `ActionParser`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        ActionParser::new()
            .parse(&v)
            .map_err(serde::de::Error::custom)
    }
}

/// The OpenAPI schema of an action: an object tagged by `action` (a built-in name or a
/// custom action registered at run time), with that action's fields beside the tag.
impl utoipa::PartialSchema for Action {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        ObjectBuilder::new()
            .property(
                "action",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some(format!(
                        "One of {} (built-in), or a custom action's name.",
                        BUILTIN_ACTIONS.join(", ")
                    ))),
            )
            .required("action")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some(
                "One action, tagged by `action`; its fields (coordinate, element, selector, \
                 text, direction, key, …) sit beside the tag. See docs/api.md \"Actions\".",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Action {}

/// `#[serde(deserialize_with)]` for a recorded `Option<Action>`: reads with
/// `ActionParser::lenient`, so custom actions of the recording run come back as
/// `Action::Custom`.
pub fn deserialize_recorded<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Action>, D::Error> {
    let Some(v) = Option::<Value>::deserialize(d)? else {
        return Ok(None);
    };
    ActionParser::lenient()
        .parse(&v)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

impl Action {
    /// The canonical name, as it appears in `"action"`.
    pub fn name(&self) -> &str {
        match self {
            Action::Tap { .. } => "tap",
            Action::LongPress { .. } => "long_press",
            Action::DoubleTap { .. } => "double_tap",
            Action::Swipe { .. } => "swipe",
            Action::Scroll { .. } => "scroll",
            Action::Type { .. } => "type",
            Action::Clear { .. } => "clear",
            Action::Key { .. } => "key",
            Action::LaunchApp { .. } => "launch_app",
            Action::OpenUrl { .. } => "open_url",
            Action::Rotate { .. } => "rotate",
            Action::Wait { .. } => "wait",
            Action::WaitFor { .. } => "wait_for",
            Action::WaitForGone { .. } => "wait_for_gone",
            Action::Finish { .. } => "finish",
            Action::AskUser { .. } => "ask_user",
            Action::McpCall { .. } => "mcp_call",
            Action::Custom(c) => &c.name,
        }
    }

    /// Whether this action ends the task.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Action::Finish { .. })
    }

    /// Every selector the action carries, with the field it came from, so a caller can
    /// check them all before anything runs.
    pub fn selectors(&self) -> Vec<(&'static str, &str)> {
        fn target<'a>(
            t: Option<&'a TargetField>,
            field: &'static str,
        ) -> Vec<(&'static str, &'a str)> {
            match t {
                Some(TargetField(Target::Selector(s))) => vec![(field, s.as_str())],
                _ => vec![],
            }
        }
        match self {
            Action::Tap { target: t }
            | Action::LongPress { target: t, .. }
            | Action::DoubleTap { target: t } => target(Some(t), "selector"),
            Action::Swipe {
                path: SwipePath::Direction { target: t, .. },
                ..
            }
            | Action::Type { target: t, .. }
            | Action::Clear { target: t } => target(t.as_ref(), "selector"),
            Action::Scroll { container, .. } => target(container.as_ref(), "container"),
            Action::WaitFor { selector, .. } | Action::WaitForGone { selector, .. } => {
                vec![("selector", selector.as_str())]
            }
            _ => vec![],
        }
    }

    /// Whether this action is expected to change what is on screen (for verification).
    pub fn expects_screen_change(&self) -> bool {
        !matches!(
            self,
            Action::Wait { .. }
                | Action::WaitFor { .. }
                | Action::WaitForGone { .. }
                | Action::Finish { .. }
                | Action::AskUser { .. }
                | Action::McpCall { .. }
                | Action::Custom(_)
        )
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The closest candidate by Damerau–Levenshtein distance, if it is close enough to be a typo.
pub fn closest<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let given = normalize_name(given);
    candidates
        .map(|c| (strsim::damerau_levenshtein(&given, c), c))
        .filter(|(d, c)| *d <= (c.len() / 4).max(1) || c.starts_with(&given) && given.len() >= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// The fields of one action object, read with errors that name the action and field.
struct Fields<'a> {
    action: &'static str,
    obj: &'a Map<String, Value>,
    /// Read back from a record (`ActionParser::lenient`): what an older version stored is
    /// read as it is, not refused by a rule added since.
    recorded: bool,
}

impl Fields<'_> {
    fn build(self) -> Result<Action, ActionError> {
        let a = match self.action {
            "tap" => Action::Tap {
                target: TargetField(self.target_required()?),
            },
            "long_press" => Action::LongPress {
                target: TargetField(self.target_required()?),
                duration_ms: self.duration(&["duration_ms", "duration"])?,
            },
            "double_tap" => Action::DoubleTap {
                target: TargetField(self.target_required()?),
            },
            "swipe" => {
                let path = if self.has("start") || self.has("end") {
                    self.forbid_with(&["start", "end"], &["direction"])?;
                    SwipePath::Points {
                        start: self.point("start")?,
                        end: self.point("end")?,
                    }
                } else if self.has("direction") {
                    SwipePath::Direction {
                        direction: self.direction()?,
                        target: self.target_optional()?.map(TargetField),
                    }
                } else {
                    return Err(self.missing(
                        "start",
                        Some("give `start` and `end` ([x, y] in [0, 1]) or a `direction` (up, down, left, right)"),
                    ));
                };
                Action::Swipe {
                    path,
                    duration_ms: self.swipe_duration()?,
                }
            }
            "scroll" => Action::Scroll {
                direction: self.direction()?,
                container: match self.obj.get("container") {
                    None | Some(Value::Null) => self.target_optional()?,
                    Some(v) => Some(self.target_from_value("container", v)?),
                }
                .map(TargetField),
            },
            "type" => Action::Type {
                text: self.typed_text()?,
                target: self.target_optional()?.map(TargetField),
                clear_first: self.bool_or("clear_first", false)?,
            },
            "clear" => Action::Clear {
                target: self.target_optional()?.map(TargetField),
            },
            "key" => Action::Key {
                key: self.key("key")?,
            },
            "back" => Action::Key { key: Key::Back },
            "home" => Action::Key { key: Key::Home },
            "recents" => Action::Key { key: Key::Recents },
            "enter" => Action::Key { key: Key::Enter },
            "menu" => Action::Key { key: Key::Menu },
            "power" => Action::Key { key: Key::Power },
            // AURA's primitive: {"action": "global_action", "global_action": "BACK"}.
            "global_action" => Action::Key {
                key: self.key("global_action")?,
            },
            "launch_app" => {
                let app = if self.has("package") {
                    self.forbid_with(&["package"], &["label", "app"])?;
                    AppRef::Package(self.package("package")?)
                } else if self.has("label") {
                    self.forbid_with(&["label"], &["app"])?;
                    AppRef::Label(self.label("label")?)
                } else if self.has("app") {
                    // `app` is whatever the model wrote: a dotted name is a package.
                    let s = self.string("app")?;
                    if looks_like_package(&s) {
                        AppRef::Package(self.package("app")?)
                    } else {
                        AppRef::Label(self.label("app")?)
                    }
                } else {
                    return Err(self.missing(
                        "package",
                        Some("give `package` (com.android.settings) or `label` (Settings)"),
                    ));
                };
                Action::LaunchApp { app }
            }
            "open_url" => Action::OpenUrl { url: self.url()? },
            "rotate" => Action::Rotate {
                orientation: self.orientation()?,
            },
            "wait" => Action::Wait {
                ms: self
                    .duration(&["ms", "duration_ms", "duration"])?
                    .ok_or_else(|| {
                        self.missing(
                            "ms",
                            Some("milliseconds to wait, e.g. {\"action\": \"wait\", \"ms\": 1000}"),
                        )
                    })?,
            },
            "wait_for" | "wait_for_gone" => {
                let selector = self.string("selector")?;
                let timeout_ms = self
                    .duration(&["timeout_ms"])?
                    .unwrap_or(DEFAULT_WAIT_FOR_MS);
                let idle_ms = self.duration(&["idle_ms"])?;
                if self.action == "wait_for" {
                    Action::WaitFor {
                        selector,
                        timeout_ms,
                        idle_ms,
                    }
                } else {
                    Action::WaitForGone {
                        selector,
                        timeout_ms,
                        idle_ms,
                    }
                }
            }
            "finish" => Action::Finish {
                success: self.finish_success()?,
                reason: self.opt_string("reason")?,
                answer: self.opt_string("answer")?,
            },
            "ask_user" => Action::AskUser {
                question: self.string("question")?,
                options: match self.obj.get("options") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(serde_json::from_value::<Vec<String>>(v.clone()).map_err(
                        |_| self.invalid("options", "expected a list of strings".into()),
                    )?),
                },
            },
            "mcp_call" => Action::McpCall {
                tool: self.string("tool")?,
                args: match self.obj.get("args").or_else(|| self.obj.get("arguments")) {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(v @ Value::Object(_)) => v.clone(),
                    Some(other) => {
                        return Err(self.invalid(
                            "args",
                            format!("expected an object, got {}", json_kind(other)),
                        ));
                    }
                },
            },
            other => unreachable!("`{other}` is listed in BUILTIN_ACTIONS but has no parser"),
        };
        Ok(a)
    }

    fn known_fields(&self) -> &'static [&'static str] {
        // Every list with a target holds TARGET_FIELDS (checked by a test).
        match self.action {
            "tap" | "double_tap" | "clear" => TARGET_FIELDS,
            "long_press" => &[
                "coordinate",
                "pixel",
                "element",
                "element_id",
                "selector",
                "duration_ms",
                "duration",
            ],
            "swipe" => &[
                "start",
                "end",
                "direction",
                "duration_ms",
                "duration",
                "coordinate",
                "pixel",
                "element",
                "element_id",
                "selector",
            ],
            "scroll" => &[
                "direction",
                "container",
                "coordinate",
                "pixel",
                "element",
                "element_id",
                "selector",
            ],
            "type" => &[
                "text",
                "clear_first",
                "coordinate",
                "pixel",
                "element",
                "element_id",
                "selector",
            ],
            "key" => &["key"],
            "global_action" => &["global_action"],
            "launch_app" => &["package", "label", "app"],
            "open_url" => &["url"],
            "rotate" => &["orientation"],
            "wait" => &["ms", "duration_ms", "duration"],
            "wait_for" | "wait_for_gone" => &["selector", "timeout_ms", "idle_ms"],
            "finish" => &["success", "reason", "answer", "status"],
            "ask_user" => &["question", "options"],
            "mcp_call" => &["tool", "args", "arguments"],
            _ => &[],
        }
    }

    /// Refuses any field the action does not use, naming it (and the field it was
    /// probably meant to be).
    fn check_unknown(&self) -> Result<(), ActionError> {
        let known = self.known_fields();
        for k in self.obj.keys() {
            if k == "action" || k == "action_type" || known.contains(&k.as_str()) {
                continue;
            }
            let suggestion = known
                .iter()
                .map(|f| (strsim::damerau_levenshtein(k, f), *f))
                .filter(|(d, f)| *d <= 2 && f.len() > 3)
                .min_by_key(|(d, _)| *d)
                .map(|(_, f)| f.to_string());
            return Err(ActionError::UnknownField {
                action: self.action.into(),
                given: k.clone(),
                suggestion,
                known: known.iter().map(|f| f.to_string()).collect(),
            });
        }
        Ok(())
    }

    fn has(&self, f: &str) -> bool {
        self.obj.get(f).is_some_and(|v| !v.is_null())
    }

    fn missing(&self, field: &str, hint: Option<&str>) -> ActionError {
        ActionError::MissingField {
            action: self.action.into(),
            field: field.into(),
            hint: hint.map(Into::into),
        }
    }

    fn invalid(&self, field: &str, reason: String) -> ActionError {
        ActionError::InvalidField {
            action: self.action.into(),
            field: field.into(),
            reason,
        }
    }

    fn forbid_with(&self, ours: &[&str], others: &[&str]) -> Result<(), ActionError> {
        let given: Vec<String> = ours
            .iter()
            .chain(others)
            .filter(|f| self.has(f))
            .map(|f| format!("`{f}`"))
            .collect();
        if ours.iter().any(|f| self.has(f)) && others.iter().any(|f| self.has(f)) {
            let fields = ours
                .iter()
                .chain(others)
                .map(|f| format!("`{f}`"))
                .collect();
            return Err(ActionError::Conflict {
                action: self.action.into(),
                fields,
                given,
            });
        }
        Ok(())
    }

    /// A `type`'s text: any string but the empty one, which types nothing (`clear`
    /// empties a field).
    fn typed_text(&self) -> Result<String, ActionError> {
        let text = self.string_allow_empty("text")?;
        if text.is_empty() && !self.recorded {
            return Err(self.invalid(
                "text",
                "must not be empty: typing \"\" does nothing; to empty a field use {\"action\": \"clear\"}".into(),
            ));
        }
        Ok(text)
    }

    /// A swipe's duration: a swipe of 0 ms is no gesture Android can perform.
    fn swipe_duration(&self) -> Result<Option<u64>, ActionError> {
        let names = ["duration_ms", "duration"];
        let ms = self.duration(&names)?;
        if ms == Some(0) && !self.recorded {
            let f = names.iter().find(|f| self.has(f)).unwrap_or(&names[0]);
            return Err(self.invalid(
                f,
                "must be at least 1 ms: a swipe of 0 ms is not a gesture; leave it out for the default (300 ms)".into(),
            ));
        }
        Ok(ms)
    }

    fn string_allow_empty(&self, f: &str) -> Result<String, ActionError> {
        match self.obj.get(f) {
            Some(Value::String(s)) => Ok(s.clone()),
            None | Some(Value::Null) => Err(self.missing(f, None)),
            Some(other) => {
                Err(self.invalid(f, format!("expected a string, got {}", json_kind(other))))
            }
        }
    }

    fn string(&self, f: &str) -> Result<String, ActionError> {
        let s = self.string_allow_empty(f)?;
        if s.trim().is_empty() {
            return Err(self.invalid(f, "must not be empty".into()));
        }
        Ok(s)
    }

    fn opt_string(&self, f: &str) -> Result<Option<String>, ActionError> {
        if self.has(f) {
            self.string_allow_empty(f).map(Some)
        } else {
            Ok(None)
        }
    }

    fn bool_or(&self, f: &str, default: bool) -> Result<bool, ActionError> {
        match self.obj.get(f) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.invalid(
                f,
                format!("expected true or false, got {}", json_kind(other)),
            )),
        }
    }

    /// `success` defaults to true; `"status": "failure"` is accepted as the seeds write it.
    fn finish_success(&self) -> Result<bool, ActionError> {
        if self.has("success") {
            return self.bool_or("success", true);
        }
        match self.obj.get("status") {
            Some(Value::String(s)) => match normalize_name(s).as_str() {
                "success" | "succeeded" | "completed" | "done" => Ok(true),
                "failure" | "failed" | "fail" | "error" | "impossible" | "infeasible" => Ok(false),
                _ => Err(self.invalid(
                    "status",
                    format!("`{s}` is neither `success` nor `failure`"),
                )),
            },
            _ => Ok(true),
        }
    }

    fn duration(&self, names: &[&str]) -> Result<Option<u64>, ActionError> {
        for f in names {
            match self.obj.get(*f) {
                None | Some(Value::Null) => continue,
                Some(Value::Number(n)) => {
                    let ms = n
                        .as_u64()
                        .or_else(|| {
                            n.as_f64()
                                .filter(|x| x.fract() == 0.0 && *x >= 0.0)
                                .map(|x| x as u64)
                        })
                        .ok_or_else(|| {
                            self.invalid(f, format!("expected whole milliseconds ≥ 0, got {n}"))
                        })?;
                    if ms > MAX_DURATION_MS {
                        return Err(self.invalid(
                            f,
                            format!("{ms} ms is longer than the limit of {MAX_DURATION_MS} ms"),
                        ));
                    }
                    return Ok(Some(ms));
                }
                Some(other) => {
                    return Err(self.invalid(
                        f,
                        format!(
                            "expected milliseconds as a number, got {}",
                            json_kind(other)
                        ),
                    ));
                }
            }
        }
        Ok(None)
    }

    fn direction(&self) -> Result<Direction, ActionError> {
        let s = self.string("direction")?;
        match normalize_name(&s).as_str() {
            "up" => Ok(Direction::Up),
            "down" => Ok(Direction::Down),
            "left" => Ok(Direction::Left),
            "right" => Ok(Direction::Right),
            _ => Err(self.invalid(
                "direction",
                format!("`{s}` is not one of up, down, left, right"),
            )),
        }
    }

    fn point(&self, f: &str) -> Result<NormPoint, ActionError> {
        match self.obj.get(f) {
            None | Some(Value::Null) => {
                Err(self.missing(f, Some("a point [x, y] with both in [0, 1]")))
            }
            Some(v) => self.point_value(f, v),
        }
    }

    fn point_value(&self, f: &str, v: &Value) -> Result<NormPoint, ActionError> {
        let pair = match v {
            Value::Array(a) if a.len() == 2 => {
                a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>()
            }
            Value::Object(o) => match (
                o.get("x").and_then(Value::as_f64),
                o.get("y").and_then(Value::as_f64),
            ) {
                (Some(x), Some(y)) => Some(vec![x, y]),
                _ => None,
            },
            _ => None,
        };
        let Some(p) = pair else {
            return Err(self.invalid(
                f,
                format!("expected [x, y] with two numbers in [0, 1], got {v}"),
            ));
        };
        NormPoint::new(p[0], p[1]).map_err(|source| ActionError::InvalidCoordinate {
            action: self.action.into(),
            field: f.into(),
            source,
        })
    }

    /// `[x, y]` in whole pixels ≥ 0; the screen bounds are checked when the action runs.
    fn pixel_value(&self, f: &str, v: &Value) -> Result<[u32; 2], ActionError> {
        let whole = |v: &Value| {
            v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|x| x.fract() == 0.0 && *x >= 0.0)
                    .map(|x| x as u64)
            })
        };
        match v {
            Value::Array(a) if a.len() == 2 => {
                if let (Some(x), Some(y)) = (whole(&a[0]), whole(&a[1]))
                    && let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y))
                {
                    return Ok([x, y]);
                }
            }
            _ => {}
        }
        Err(self.invalid(
            f,
            format!("expected [x, y] in whole pixels ≥ 0 (e.g. [540, 1200]), got {v}"),
        ))
    }

    fn orientation(&self) -> Result<Orientation, ActionError> {
        let raw = self.string("orientation")?;
        Orientation::parse(&raw).ok_or_else(|| {
            self.invalid(
                "orientation",
                format!(
                    "`{raw}` is not one of portrait, landscape, reverse_portrait, reverse_landscape"
                ),
            )
        })
    }

    fn key(&self, f: &str) -> Result<Key, ActionError> {
        let raw = self.string(f)?;
        Key::parse(&raw).ok_or_else(|| {
            self.invalid(
                f,
                format!(
                    "unknown key `{raw}`; allowed keys: {}",
                    Key::VARIANTS
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }

    /// A package name by Android's rules: two or more dot-separated segments, each a
    /// letter followed by letters, digits or `_`.
    fn package(&self, f: &str) -> Result<String, ActionError> {
        let s = self.string(f)?;
        if is_package_name(&s) {
            return Ok(s);
        }
        Err(self.invalid(
            f,
            format!(
                "`{s}` is not a package name; a package is dot-separated segments of letters, digits and `_`, each starting with a letter (com.android.settings)"
            ),
        ))
    }

    /// The name under an app's icon. It is only ever matched against the installed apps,
    /// but shell metacharacters or control characters in one are refused all the same.
    fn label(&self, f: &str) -> Result<String, ActionError> {
        let s = self.string(f)?;
        if s.chars().count() > MAX_LABEL_CHARS {
            return Err(self.invalid(f, format!("is longer than {MAX_LABEL_CHARS} characters")));
        }
        if let Some(c) = s
            .chars()
            .find(|c| c.is_control() || SHELL_METACHARACTERS.contains(*c))
        {
            return Err(self.invalid(
                f,
                format!(
                    "`{}` contains {c:?}; an app label has no shell metacharacters ({SHELL_METACHARACTERS}) or control characters",
                    s.escape_debug()
                ),
            ));
        }
        Ok(s)
    }

    /// A URL whose scheme is on the allow-list (`javascript:`, `file:` and `content:` are not).
    fn url(&self) -> Result<String, ActionError> {
        let url = self.string("url")?;
        if let Some(c) = url.chars().find(|c| c.is_control() || c.is_whitespace()) {
            return Err(self.invalid(
                "url",
                format!(
                    "contains {c:?}; encode spaces as %20 and remove line breaks and control characters"
                ),
            ));
        }
        let scheme = url.split_once(':').map(|(s, _)| s).filter(|s| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
        let Some(scheme) = scheme else {
            return Err(self.invalid(
                "url",
                format!("`{url}` has no scheme; write it as https://{url}"),
            ));
        };
        if !URL_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(self.invalid(
                "url",
                format!(
                    "scheme `{scheme}:` is not allowed; allowed schemes: {}",
                    URL_SCHEMES.join(", ")
                ),
            ));
        }
        Ok(url)
    }

    fn target_optional(&self) -> Result<Option<Target>, ActionError> {
        let present: Vec<&str> = TARGET_FIELDS
            .iter()
            .copied()
            .filter(|f| self.has(f))
            .collect();
        match present.as_slice() {
            [] => Ok(None),
            [one] => self.target_from_value(one, &self.obj[*one]).map(Some),
            many => Err(ActionError::Conflict {
                action: self.action.into(),
                fields: TARGET_FIELDS.iter().map(|f| format!("`{f}`")).collect(),
                given: many.iter().map(|f| format!("`{f}`")).collect(),
            }),
        }
    }

    fn target_required(&self) -> Result<Target, ActionError> {
        self.target_optional()?.ok_or_else(|| {
            self.missing(
                "coordinate",
                Some("give one of `coordinate` ([x, y] in [0, 1]), `pixel` ([x, y] in pixels), `element` (an element id; `element_id` works too) or `selector` (e.g. \"#btn_send\")"),
            )
        })
    }

    /// Reads a target from a named field. `container` may itself be a selector string,
    /// an element id or a point.
    fn target_from_value(&self, f: &str, v: &Value) -> Result<Target, ActionError> {
        match (f, v) {
            ("element" | "element_id", Value::Number(n)) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Target::Element)
                .ok_or_else(|| {
                    self.invalid(
                        f,
                        format!("expected an element id (a whole number ≥ 0), got {n}"),
                    )
                }),
            ("element" | "element_id", other) => Err(self.invalid(
                f,
                format!(
                    "expected an element id (a whole number), got {}",
                    json_kind(other)
                ),
            )),
            ("selector", Value::String(s)) if !s.trim().is_empty() => {
                Ok(Target::Selector(s.clone()))
            }
            ("selector", _) => Err(self.invalid(
                f,
                "expected a non-empty selector string such as \"#btn_send\"".into(),
            )),
            ("coordinate", v) => self.point_value(f, v).map(Target::Coordinate),
            ("pixel", v) => self.pixel_value(f, v).map(Target::Pixel),
            (_, Value::String(s)) if !s.trim().is_empty() => Ok(Target::Selector(s.clone())),
            (_, Value::Number(n)) if n.as_u64().is_some_and(|n| n <= u32::MAX as u64) => {
                Ok(Target::Element(n.as_u64().unwrap_or_default() as u32))
            }
            (_, v @ (Value::Array(_) | Value::Object(_))) => {
                self.point_value(f, v).map(Target::Coordinate)
            }
            (_, other) => Err(self.invalid(
                f,
                format!(
                    "expected a selector, an element id or [x, y], got {}",
                    json_kind(other)
                ),
            )),
        }
    }
}

/// The fields that name what a pointer action aims at; at most one may be given.
const TARGET_FIELDS: &[&str] = &["coordinate", "pixel", "element", "element_id", "selector"];

/// URL schemes `open_url` hands to the phone: web pages and the intents apps register
/// for. Not `javascript:`, `file:`, `content:` or `data:`, which reach local data.
pub const URL_SCHEMES: &[&str] = &[
    "http", "https", "intent", "market", "tel", "mailto", "geo", "sms", "smsto",
];

/// Characters that chain, substitute or redirect shell commands; never part of an app
/// label we accept. (`&`, `'`, `!` and parentheses stay allowed: "myAT&T", "McDonald's".)
const SHELL_METACHARACTERS: &str = ";|$`<>\\";

const MAX_LABEL_CHARS: usize = 100;

/// Android's rule for `package` in the manifest.
pub fn is_package_name(s: &str) -> bool {
    let mut n = 0;
    let ok = s.split('.').all(|seg| {
        n += 1;
        let mut cs = seg.chars();
        cs.next().is_some_and(|c| c.is_ascii_alphabetic())
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    ok && n >= 2 && s.len() <= 255
}

fn looks_like_package(s: &str) -> bool {
    s.contains('.')
        && !s.contains(' ')
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "action_examples_tests.rs"]
mod examples;
