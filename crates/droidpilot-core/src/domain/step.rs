//! Steps: one pass of observe → decide → act → settle → verify, as recorded. A step is
//! committed before the next one starts, so a crash loses at most the step in flight.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{Action, ActionableElement, TaskId};

/// Where the time of one step went, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepTimings {
    pub screenshot_ms: u64,
    pub hierarchy_ms: u64,
    pub inference_ms: u64,
    pub action_ms: u64,
    pub settle_ms: u64,
    /// Time in droidpilot's own code (parsing, validation, recording), excluding the above.
    pub overhead_ms: f64,
}

/// How a step's action ended.
// Its name (`as_str`, `Display`) is derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
    strum::IntoStaticStr,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum StepStatus {
    /// It ran (a device action, an MCP call, an answer, the finish).
    Ok,
    /// It ran and failed, or the device refused it.
    Failed,
    /// A middleware skipped it.
    Skipped,
    /// The model's action was invalid; nothing ran.
    Rejected,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// `Failed` when `is_error`, else `Ok`.
    pub fn ok_unless(is_error: bool) -> Self {
        if is_error {
            StepStatus::Failed
        } else {
            StepStatus::Ok
        }
    }
}

/// Compares with the wire name (`status == "ok"`).
impl PartialEq<str> for StepStatus {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for StepStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a step's action did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepOutcome {
    pub status: StepStatus,
    /// Error details when it failed: code, message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the screen changed after the action (when that could be checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_changed: Option<bool>,
    /// Free-form details: the resolved pixel point, an MCP result, the user's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub detail: Option<Value>,
}

/// What a script replay did at a step (agent kind `script`): which script step, which
/// selector matched and whether a fallback was needed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReplayInfo {
    /// The script step (0-based) this task step serves; for a flow, the command's line.
    pub index: u32,
    pub role: ReplayRole,
    /// The selector the action used, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    pub fallback: Fallback,
    /// Known interruptions dismissed so far in the run.
    pub interruptions_dismissed: u32,
    /// The AI-in-the-middle recovery this step carries out (`execute_action`: the action
    /// the model chose).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryType>,
    /// How the element matcher chose the target when no selector named it as written:
    /// the score, the margin over the runner-up and the attributes that agreed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<MatchInfo>,
}

/// Why the element matcher took a node for a step's target (`replay.match`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MatchInfo {
    /// The winner's share of what the step recorded that agreed, 0 to 1.
    pub score: f32,
    /// The winner's score minus the runner-up's.
    pub margin: f32,
    /// The attributes that agreed (`id`, `text`, `desc`, `class`, `row`, `path`, `place`,
    /// `string`: a label found through the app's string resources).
    pub agreed: Vec<String>,
    /// Labels the step names in another language than the phone shows, each found
    /// through the app's string resources (`Fallback::Translated`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub translated: Vec<Translated>,
}

/// A label a step names, found on screen as another value of the same string resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Translated {
    /// The label as the step names it.
    pub from: String,
    /// The label as the phone shows it (the resource's value in the phone's locale).
    pub to: String,
    /// The app's resource key(s) that have both values (`add_to_cart`).
    pub keys: Vec<String>,
    /// The phone's locale the value was taken for (`de-DE`).
    pub locale: String,
}

/// What AI in the middle answered for a failed script step (seed 001's `RecoveryAction`
/// `action_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryType {
    /// Run one action now (close an obstacle, do the step another way).
    ExecuteAction,
    /// The element the step meant, under a new selector.
    ModifySelector,
    SkipStep,
    Abort,
    AskUser,
}

/// Why a replay step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayRole {
    /// The script step's own action.
    Action,
    /// Waiting for the step's wait_condition or its target to appear.
    Wait,
    /// Waiting for the step's `expect` to hold.
    Expect,
    /// Dismissing a known interruption (a pop-up, a permission dialog, the keyboard).
    Dismiss,
    /// Scrolling a list to bring a target below the fold on screen (a shorter phone than
    /// the one the script was recorded on).
    Search,
    /// An action chosen by AI in the middle.
    Recovery,
}

/// How the target was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// The primary selector matched (or the step has no target).
    #[default]
    None,
    /// One of the step's alternative selectors matched.
    Alternative,
    /// The bounded fuzzy match found it (same text or a renamed id).
    Fuzzy,
    /// A selector AI in the middle proposed.
    Healed,
    /// The step's recorded coordinate (no selector).
    Coordinate,
    /// A label the step names in one language, found as the same string resource's value
    /// in the phone's language (`MatchInfo::translated` says which).
    Translated,
}

/// A recorded step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Step {
    pub task_id: TaskId,
    /// 1-based.
    pub n: u32,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub thinking: Option<String>,
    /// The action as it ran (a middleware or hook may have rewritten the decided one).
    /// Text typed into a password field reads `••••`. Absent when nothing was decided or
    /// the model's answer was rejected.
    #[serde(default, deserialize_with = "super::action::deserialize_recorded")]
    pub action: Option<Action>,
    /// The model's reply as text (tool calls rendered as JSON), when a model decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A rejected answer: the action the model sent, as JSON, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub rejected: Option<Value>,
    pub outcome: StepOutcome,
    /// The screen the step acted on, as the agent saw it.
    pub screen: Option<StepScreen>,
    /// sha256 of the screenshot artifact, when one was taken.
    pub screenshot: Option<String>,
    pub timings: StepTimings,
    /// Input tokens of the step's model calls, the cached ones included.
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, those the providers served from their prompt cache.
    #[serde(default)]
    pub tokens_cached: u64,
    pub cost_usd: f64,
    /// Model calls this step's decision made (retries and grounding included).
    #[serde(default)]
    pub model_calls: u32,
    /// Script replays only: which script step, selector and fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayInfo>,
    /// Every model call this step made, by role (actor, planner, progress checker,
    /// verifier, grounder, recovery), with tokens, cost and latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<super::ModelCall>,
    /// What the roles around the agent said at this step: plans, progress checks,
    /// verdicts, typed-text mismatches, chain switches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<super::Annotation>,
    /// The person who took this step during a take-over (a manual action on the paused
    /// task's phone); absent for the agent's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// The screen a step acted on, as its record keeps it: what the agent saw, and the
/// actionable elements with their selectors and bounds, so a coordinate tap can later be
/// resolved to a selector (`script::record`). Password text is already masked in the
/// elements (the parser masks it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepScreen {
    /// The representation's one-line summary.
    #[serde(default)]
    pub summary: String,
    /// The foreground app's package.
    #[serde(default)]
    pub app: Option<String>,
    #[serde(default)]
    pub activity: Option<String>,
    #[serde(default)]
    pub has_modal: bool,
    /// A secure (FLAG_SECURE) screen: no screenshot was kept.
    #[serde(default)]
    pub sensitive: bool,
    /// Hash of the screen's layout (16 hex digits), when one was computed.
    #[serde(default)]
    pub layout_hash: Option<String>,
    /// Debug mode (`[runner] debug_artifacts`): sha256 of the UI hierarchy XML kept for
    /// this step (`GET /v1/tasks/{id}/steps/{n}/hierarchy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hierarchy: Option<String>,
    /// The screen size in pixels, `[width, height]` (absent in steps recorded before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
    /// The screen's actionable elements (empty in steps recorded before they were kept).
    #[serde(default)]
    pub elements: Vec<ActionableElement>,
}

#[cfg(test)]
mod status_name_tests {
    use super::StepStatus;

    /// Steps are stored and filtered by this name; it is serde's.
    #[test]
    fn step_status_names_are_the_wire_names() {
        for (s, name) in [
            (StepStatus::Ok, "ok"),
            (StepStatus::Failed, "failed"),
            (StepStatus::Skipped, "skipped"),
            (StepStatus::Rejected, "rejected"),
        ] {
            assert_eq!(s.as_str(), name);
            assert_eq!(s.to_string(), name);
            assert_eq!(serde_json::to_value(s).unwrap(), name);
            assert!(s == name);
        }
    }
}
