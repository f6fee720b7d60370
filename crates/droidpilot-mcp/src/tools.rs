//! The tool catalogue: each tool's name, a description written for a model, and its input
//! schema (schemars, from the argument structs below). Action tools' arguments are the
//! fields of the `Action` of the same name (`ActionParser` checks them, so a field the
//! action does not take is refused by name); the structs here document them.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `[x, y]`, each a fraction of the screen in [0, 1].
type Point = [f64; 2];

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceArgs {
    /// The device's id, from list_devices (e.g. "sim-1").
    pub device_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcquireArgs {
    /// The device to lease; any free device when omitted.
    pub device_id: Option<String>,
    /// How long the lease lasts without use (default from the server's configuration,
    /// usually 300); every tool call on the device renews it.
    #[schemars(range(min = 10, max = 3600))]
    pub ttl_secs: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotArgs {
    /// The device's id, from list_devices.
    pub device_id: String,
    /// `jpeg` (default) or `png`.
    pub format: Option<ImageFormat>,
    /// Scale factor in (0, 1]; default 0.5 (a phone frame at half size). The reply gives
    /// the image's size, the scale and the screen's size.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 1))]
    pub scale: Option<f32>,
    /// JPEG quality 1-100 (default 70).
    #[schemars(range(min = 1, max = 100))]
    pub quality: Option<u8>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Jpeg,
    Png,
}

/// An element target: exactly one of `selector`, `element` or `coordinate` (or `pixel`).
#[allow(dead_code)] // schema only; ActionParser reads the fields
#[derive(JsonSchema)]
struct Target {
    /// The device's id, from list_devices.
    device_id: String,
    /// A selector from read_screen: `#resource_id`, `:text("Send")`, `:desc("Send")`,
    /// `Button:text("Send")`.
    selector: Option<String>,
    /// An element id from the latest read_screen.
    element: Option<u32>,
    /// A point as fractions of the screen, [x, y] in [0, 1].
    coordinate: Option<Point>,
    /// A point in the screen's own pixels, [x, y]: a point read off a screenshot divided
    /// by its scale (the screenshot reply says both sizes).
    pixel: Option<[u32; 2]>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct LongPress {
    /// The device's id, from list_devices.
    device_id: String,
    /// A selector from read_screen, e.g. `:text("Photo")`.
    selector: Option<String>,
    /// An element id from the latest read_screen.
    element: Option<u32>,
    /// A point as fractions of the screen, [x, y] in [0, 1].
    coordinate: Option<Point>,
    /// A point in the screen's own pixels, [x, y] (a screenshot's point divided by its
    /// scale).
    pixel: Option<[u32; 2]>,
    /// Hold time in milliseconds (default 800).
    duration_ms: Option<u64>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct TypeText {
    /// The device's id, from list_devices.
    device_id: String,
    /// The text to type.
    text: String,
    /// The field; the focused field when no target is given.
    selector: Option<String>,
    /// The field by element id from the latest read_screen.
    element: Option<u32>,
    /// The field by a point, fractions of the screen [x, y].
    coordinate: Option<Point>,
    /// Replace the field's content instead of appending.
    clear_first: Option<bool>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Field {
    /// The device's id, from list_devices.
    device_id: String,
    /// The field; the focused field when no target is given.
    selector: Option<String>,
    /// The field by element id from the latest read_screen.
    element: Option<u32>,
    /// The field by a point, fractions of the screen [x, y].
    coordinate: Option<Point>,
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
struct Scroll {
    /// The device's id, from list_devices.
    device_id: String,
    /// `down` shows what is below (the finger moves up).
    direction: Dir,
    /// The scrollable container; the screen's main one when no target is given.
    selector: Option<String>,
    /// The container by element id from the latest read_screen.
    element: Option<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Swipe {
    /// The device's id, from list_devices.
    device_id: String,
    /// Swipe from `start` to `end` ([x, y] fractions of the screen)...
    start: Option<Point>,
    /// Where the swipe ends, [x, y] fractions of the screen.
    end: Option<Point>,
    /// ...or in a direction, inside a target when one is given.
    direction: Option<Dir>,
    /// The element to swipe inside, by selector from read_screen.
    selector: Option<String>,
    /// The element to swipe inside, by element id from the latest read_screen.
    element: Option<u32>,
    /// How long the swipe takes in milliseconds (default 300).
    duration_ms: Option<u64>,
}

/// The schema only: the handler parses `device::scroll_find::ScrollToFind`.
#[allow(dead_code)]
#[derive(JsonSchema)]
struct ScrollToFindArgs {
    /// The device's id, from list_devices.
    device_id: String,
    /// What to bring on screen, e.g. `:text("Battery")`.
    selector: String,
    /// Which way to scroll (default down).
    direction: Option<Dir>,
    /// Give up after this many scrolls (default 10, at most 50).
    max_swipes: Option<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct WaitFor {
    /// The device's id, from list_devices.
    device_id: String,
    /// The element to wait for (or to go), e.g. `:text("Done")`.
    selector: String,
    /// How long to wait in milliseconds (default 10000, at most 120000).
    timeout_ms: Option<u64>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Launch {
    /// The device's id, from list_devices.
    device_id: String,
    /// A package name, e.g. com.android.settings...
    package: Option<String>,
    /// ...or the name under the icon, e.g. Settings.
    label: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct OpenUrl {
    /// The device's id, from list_devices.
    device_id: String,
    /// An http(s) URL (or another allowed scheme: tel, mailto, sms, geo, market).
    url: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadElementArgs {
    /// The device's id, from list_devices.
    pub device_id: String,
    /// An element id from read_screen...
    pub element: Option<u32>,
    /// ...or one of its selectors.
    pub selector: Option<String>,
}

/// `run_task`'s arguments: a task as `POST /v1/tasks` takes it, plus how to wait.
#[allow(dead_code)]
#[derive(JsonSchema)]
struct RunTask {
    /// What the agent should do, in plain language.
    instruction: String,
    /// Run on this device (else any free one). Release it first if you hold it.
    device_id: Option<String>,
    /// The agent (kind, model...); the server's default when omitted. `{"kind": "replay",
    /// "actions": [...]}` runs given actions with no model.
    agent: Option<Value>,
    /// The most steps the agent may take (default 50, at most 1000).
    max_steps: Option<u32>,
    /// The task's time limit in seconds (default 600).
    timeout_seconds: Option<u64>,
    /// Higher runs first among queued tasks (default 0).
    priority: Option<i32>,
    /// Your own JSON object, kept with the task and returned as is.
    metadata: Option<Value>,
    /// Where to POST the result when the task ends (a public http(s) URL).
    webhook_url: Option<String>,
    /// Wait for the task to finish (or ask a question), sending progress notifications.
    /// Default false: return at once with the queued task.
    wait: Option<bool>,
    /// How long to wait at most (default: the task's timeout plus a minute).
    wait_timeout_secs: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArgs {
    /// The task's id (a UUID), from run_task.
    pub task_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The task's id (a UUID), from run_task.
    pub task_id: String,
    /// The answer for the agent's open question.
    pub answer: String,
    /// The question's id (the open question when omitted).
    pub prompt_id: Option<String>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct RunScript {
    /// The script's id (GET /v1/scripts lists them).
    script_id: String,
    /// Values for the script's `${inputs}`.
    inputs: Option<std::collections::BTreeMap<String, String>>,
    /// Run on this device (else any free one). Release it first if you hold it.
    device_id: Option<String>,
    /// The script version to run (default: the latest).
    version: Option<u32>,
    /// Recover failed steps with a model (AI in the middle).
    recovery: Option<bool>,
    /// Wait for the run to finish, sending progress notifications (default false).
    wait: Option<bool>,
    /// How long to wait at most (default: the task's timeout plus a minute).
    wait_timeout_secs: Option<u64>,
}

fn tool<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, Arc::new(JsonObject::new())).with_input_schema::<T>()
}

/// A tool that only reads.
fn reads<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
    let mut a = ToolAnnotations::default();
    a.read_only_hint = Some(true);
    tool::<T>(name, description).annotate(a)
}

/// Every tool, in the order clients list them.
pub fn catalogue() -> Vec<Tool> {
    vec![
        reads::<NoArgs>(
            "list_devices",
            "List the phones: id, model, screen size, state (available, leased, offline) and who holds each. Start here to get a device_id.",
        ),
        tool::<AcquireArgs>(
            "acquire_device",
            "Lease a phone for this session so no other agent or task can drive it. Actions on a phone you have not acquired acquire it for you; call this to hold it up front or to get any free phone. The lease is renewed by every call on the phone and ends with release_device or when this session ends. Your actions are recorded as steps of a session task (its id is returned).",
        ),
        tool::<DeviceArgs>(
            "release_device",
            "Give the phone back (ends its session task). Do this when you are done, or before run_task on the same phone.",
        ),
        reads::<DeviceArgs>(
            "read_screen",
            "What the phone shows now: the foreground app, a compact text view of the screen, and the actionable elements with their ids and selectors to use in tap, type, scroll and wait_for. Read it before acting and after each action that changes the screen.",
        ),
        reads::<ScreenshotArgs>(
            "screenshot",
            "A picture of the screen (scaled JPEG by default). Prefer read_screen, which is cheaper and gives selectors; use this for what text cannot show.",
        ),
        reads::<ReadElementArgs>(
            "read_element",
            "Every property of one element (full text, bounds, selectors, what it can do), by element id or selector from read_screen.",
        ),
        tool::<Target>(
            "tap",
            "Tap an element: give a selector (best), an element id from the latest read_screen, or a coordinate.",
        ),
        tool::<LongPress>(
            "long_press",
            "Long-press an element (opens context menus, starts selection).",
        ),
        tool::<TypeText>(
            "type",
            "Type text into a field (the focused one when no target is given); clear_first replaces its content.",
        ),
        tool::<Field>(
            "clear",
            "Empty a text field (the focused one when no target is given).",
        ),
        tool::<Scroll>(
            "scroll",
            "Scroll the screen or a container one page in a direction; `down` shows what is below.",
        ),
        tool::<ScrollToFindArgs>(
            "scroll_to_find",
            "Scroll until an element matching the selector is on screen, or the list ends. Returns the element when found.",
        ),
        tool::<Swipe>(
            "swipe",
            "Swipe from start to end, or in a direction (inside a target when given).",
        ),
        tool::<WaitFor>(
            "wait_for",
            "Wait until an element matching the selector appears (for loading screens).",
        ),
        tool::<WaitFor>(
            "wait_for_gone",
            "Wait until no element matches the selector (a spinner or dialog went away).",
        ),
        tool::<Launch>(
            "launch_app",
            "Open an app by package name or by the label under its icon.",
        ),
        tool::<DeviceArgs>("back", "Press Back."),
        tool::<DeviceArgs>("home", "Go to the home screen."),
        tool::<OpenUrl>(
            "open_url",
            "Open a URL (a web page, or a deep link into an app).",
        ),
        reads::<DeviceArgs>(
            "list_apps",
            "The apps installed on the phone: package and label (use with launch_app).",
        ),
        tool::<RunTask>(
            "run_task",
            "Hand a whole goal to droidpilot's own agent: it is queued and runs on a free (or the given) phone. With wait=true, waits for the end and reports progress; otherwise poll get_task. A task that asks a question waits for answer_task.",
        ),
        reads::<TaskIdArgs>(
            "get_task",
            "A task's status, steps, reason and answer; the open question when it waits for one.",
        ),
        tool::<AnswerArgs>(
            "answer_task",
            "Answer the question a task is waiting on (its status is waiting_for_user).",
        ),
        tool::<TaskIdArgs>(
            "cancel_task",
            "Cancel a queued or running task (a running one stops at its next step).",
        ),
        tool::<RunScript>(
            "run_script",
            "Replay a stored script (a recorded flow) on a phone with no model; optionally wait for the end like run_task.",
        ),
    ]
}

/// The tools that are one `Action` of the same name.
pub const ACTION_TOOLS: &[&str] = &[
    "tap",
    "long_press",
    "type",
    "clear",
    "scroll",
    "swipe",
    "wait_for",
    "wait_for_gone",
    "launch_app",
    "back",
    "home",
    "open_url",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A model reads the schema to call a tool: every argument says what it is.
    #[test]
    fn every_argument_is_described_and_ranges_match_the_handlers() {
        for t in catalogue() {
            let schema = Value::Object((*t.input_schema).clone());
            let props = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (name, p) in props {
                let described = p["description"].as_str().is_some_and(|d| !d.is_empty());
                assert!(described, "{}.{name} has no description: {p}", t.name);
            }
        }
        let shot = catalogue()
            .into_iter()
            .find(|t| t.name == "screenshot")
            .unwrap();
        let q = &shot.input_schema["properties"]["quality"];
        assert_eq!(
            (&q["minimum"], &q["maximum"]),
            (&Value::from(1), &Value::from(100)),
            "{q}"
        );
        let s = &shot.input_schema["properties"]["scale"];
        assert_eq!(
            (&s["exclusiveMinimum"], &s["maximum"]),
            (&Value::from(0), &Value::from(1)),
            "{s}"
        );
    }
}
