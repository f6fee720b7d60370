//! Tasks: what a caller asks for (`TaskSpec`, parsed from the request), and what the
//! store keeps (`Task`, `TaskStatus`). Parsing happens once, here, so every layer above
//! holds a spec that is already valid.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// A task id: a UUIDv7, so ids sort by creation time (the list cursor relies on it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(transparent)]
#[schema(value_type = String, format = Uuid)]
pub struct TaskId(pub Uuid);

impl TaskId {
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for TaskId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for TaskId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

// A task's state. The wire name (`as_str`, `Display`, `FromStr`) and the list
// (`VARIANTS`) are derived; `serialize_all` matches serde's `rename_all`. (A doc comment
// would enter the OpenAPI.)
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
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(
    serialize_all = "snake_case",
    parse_err_ty = String,
    parse_err_fn = unknown_status
)]
pub enum TaskStatus {
    Queued,
    Running,
    WaitingForUser,
    /// A person paused it (take-over): the runner holds at a step boundary and the phone
    /// is theirs until they resume it. Treated like `running` by a restart and a cancel.
    Paused,
    Succeeded,
    Failed,
    /// Stopped at `max_steps` without the agent finishing.
    Incomplete,
    TimedOut,
    Cancelled,
    /// The server stopped while the task ran.
    Interrupted,
}

/// `FromStr`'s error: the unknown name and the names there are.
fn unknown_status(s: &str) -> String {
    use strum::VariantArray as _;
    let names: Vec<&str> = TaskStatus::VARIANTS.iter().map(|t| t.as_str()).collect();
    format!("unknown status `{s}`; one of: {}", names.join(", "))
}

impl TaskStatus {
    /// The wire name (`waiting_for_user`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            TaskStatus::Queued
                | TaskStatus::Running
                | TaskStatus::WaitingForUser
                | TaskStatus::Paused
        )
    }
}

/// Limits on what a task may ask for.
pub const MAX_INSTRUCTION_CHARS: usize = 10_000;
pub const MAX_STEPS_LIMIT: u32 = 1_000;
pub const MAX_TIMEOUT_SECONDS: u64 = 24 * 3600;
pub const DEFAULT_MAX_STEPS: u32 = 50;
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;

/// A validated request for a task. Built only by `TaskSpec::parse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskSpec {
    pub instruction: String,
    /// Higher runs first; equal priorities run in submission order.
    pub priority: i32,
    pub max_steps: u32,
    pub timeout_seconds: u64,
    /// Run on this device only.
    pub device_id: Option<String>,
    /// Otherwise, any device that matches these constraints.
    pub device: Option<DeviceConstraints>,
    /// Which agent drives the task (kind, provider, model…); server defaults when absent.
    #[schema(value_type = Option<Object>)]
    pub agent: Option<Value>,
    /// The caller's own id for this task (a coordinator's `task_id`).
    pub external_id: Option<String>,
    pub session_id: Option<String>,
    /// Free-form JSON kept with the task and returned as is.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Where to POST the result when the task ends (signed; see docs/api.md "Results and webhooks").
    /// Shown with its credentials and query values masked (`https://***@host/p?token=***`);
    /// the full URL is kept for delivery only.
    #[serde(default, serialize_with = "serialize_redacted_url")]
    pub webhook_url: Option<String>,
    /// Record the run as a script (navigator agent): stored when the task succeeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record: bool,
    /// The task fails (`budget_exceeded`) once its model calls have used this many
    /// tokens (in + out); absent: the server's `runner.max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The task fails (`budget_exceeded`) once its model calls have cost this many USD
    /// (priced models only); absent: the server's `runner.max_cost_usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Record the phone's screen while the task runs (see `Task::recording`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_video: bool,
}

fn serialize_redacted_url<S: serde::Serializer>(
    url: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match url {
        Some(u) => s.serialize_some(&redact_url_secrets(u)),
        None => s.serialize_none(),
    }
}

/// A URL as responses, logs and events may show it: the userinfo (`user:password@`)
/// becomes `***@`, every query value `***`, and the fragment is dropped.
pub fn redact_url_secrets(url: &str) -> String {
    let (prefix, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host = match authority.rfind('@') {
        Some(at) => format!("***@{}", &authority[at + 1..]),
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let masked: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None if kv.is_empty() => String::new(),
                    None => "***".to_string(),
                })
                .collect();
            format!("{path}?{}", masked.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{prefix}{host}{tail}")
}

/// Which devices may run a task.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceConstraints {
    /// `sim` or `adb`.
    pub backend: Option<String>,
    /// Device model, as in `ro.product.model`.
    pub model: Option<String>,
    /// A package that must be installed.
    pub package: Option<String>,
}

/// The raw request body for a new task, before parsing. Accepts the coordinator's field
/// names (`ai_prompt`, `task_id`) beside ours.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// What to do, in plain language: "open Clock and set an alarm for 7:30".
    #[schema(min_length = 1, max_length = 10000, pattern = "\\S")]
    pub instruction: Option<String>,
    /// The coordinator's name for `instruction`.
    #[schema(min_length = 1, max_length = 10000, pattern = "\\S")]
    pub ai_prompt: Option<String>,
    #[schema(minimum = -1000, maximum = 1000)]
    pub priority: Option<i32>,
    #[schema(minimum = 1, maximum = 1000)]
    pub max_steps: Option<u32>,
    #[schema(minimum = 1, maximum = 86400)]
    pub timeout_seconds: Option<u64>,
    #[schema(min_length = 1, max_length = 200, pattern = "\\S")]
    pub device_id: Option<String>,
    pub device: Option<DeviceConstraints>,
    #[schema(value_type = Option<Object>)]
    pub agent: Option<Value>,
    /// The caller's own id for the task; stored as `external_id`.
    #[schema(min_length = 1, max_length = 200, pattern = "\\S")]
    pub task_id: Option<String>,
    #[schema(min_length = 1, max_length = 200, pattern = "\\S")]
    pub session_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Where to POST the result when the task ends (http or https).
    #[schema(max_length = 2000, pattern = "^https?://")]
    pub webhook_url: Option<String>,
    /// Record the run as a replayable script (navigator agent only; see docs/scripts.md "Recording while a model works").
    pub record: Option<bool>,
    /// Tokens (in + out) the task's model calls may use; once they have, the task fails
    /// with `budget_exceeded` at the next step boundary.
    #[schema(minimum = 1)]
    pub max_tokens: Option<u64>,
    /// USD the task's model calls may cost (models priced in `[agent.prices]`); once
    /// they have, the task fails with `budget_exceeded` at the next step boundary.
    #[schema(exclusive_minimum = 0)]
    pub max_cost_usd: Option<f64>,
    /// Record the phone's screen while the task runs (`screenrecord` on an ADB phone, the
    /// virtual phone's own frames); served as `GET /v1/tasks/{id}/replay.mp4?source=recording`.
    pub record_video: Option<bool>,
}

/// Why a task request was refused; each names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskSpecError {
    #[error(
        "field `instruction` is required (or `ai_prompt`): say what the agent should do, e.g. \"open Clock and set an alarm for 7:30\""
    )]
    MissingInstruction,
    #[error("give either `instruction` or `ai_prompt`, not both")]
    BothInstructions,
    #[error("field `{field}` is invalid: {reason}")]
    Invalid { field: &'static str, reason: String },
}

impl TaskSpec {
    pub fn parse(req: NewTask) -> Result<Self, TaskSpecError> {
        let instruction = match (req.instruction, req.ai_prompt) {
            (Some(_), Some(_)) => return Err(TaskSpecError::BothInstructions),
            (Some(i), None) | (None, Some(i)) => i,
            (None, None) => return Err(TaskSpecError::MissingInstruction),
        };
        let instruction = instruction.trim().to_string();
        if instruction.is_empty() {
            return Err(TaskSpecError::MissingInstruction);
        }
        let inv = |field, reason: String| TaskSpecError::Invalid { field, reason };
        if instruction.chars().count() > MAX_INSTRUCTION_CHARS {
            return Err(inv(
                "instruction",
                format!("longer than {MAX_INSTRUCTION_CHARS} characters"),
            ));
        }
        let max_steps = req.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
        if !(1..=MAX_STEPS_LIMIT).contains(&max_steps) {
            return Err(inv(
                "max_steps",
                format!("{max_steps} is outside 1..={MAX_STEPS_LIMIT}"),
            ));
        }
        let timeout_seconds = req.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout_seconds) {
            return Err(inv(
                "timeout_seconds",
                format!("{timeout_seconds} is outside 1..={MAX_TIMEOUT_SECONDS}"),
            ));
        }
        let priority = req.priority.unwrap_or(0);
        if !(-1000..=1000).contains(&priority) {
            return Err(inv(
                "priority",
                format!("{priority} is outside -1000..=1000"),
            ));
        }
        let nonempty = |field, v: Option<String>| -> Result<Option<String>, TaskSpecError> {
            match v {
                Some(s) if s.trim().is_empty() => Err(TaskSpecError::Invalid {
                    field,
                    reason: "must not be empty".into(),
                }),
                Some(s) if s.len() > 200 => Err(TaskSpecError::Invalid {
                    field,
                    reason: "longer than 200 bytes".into(),
                }),
                other => Ok(other),
            }
        };
        if let Some(a) = &req.agent
            && !a.is_object()
        {
            return Err(inv("agent", "expected an object such as {\"kind\": \"navigator\", \"provider\": \"openai\", \"model\": \"gpt-4o\"}".into()));
        }
        if let Some(m) = &req.metadata
            && !m.is_object()
        {
            return Err(inv("metadata", "expected a JSON object".into()));
        }
        if let Some(u) = &req.webhook_url
            && (!(u.starts_with("http://") || u.starts_with("https://")) || u.len() > 2000)
        {
            return Err(inv(
                "webhook_url",
                format!("`{}` is not an http(s) URL", redact_url_secrets(u)),
            ));
        }
        if req.max_tokens == Some(0) {
            return Err(inv("max_tokens", "must be at least 1".into()));
        }
        if let Some(c) = req.max_cost_usd
            && !(c.is_finite() && c > 0.0)
        {
            return Err(inv(
                "max_cost_usd",
                format!("{c} is not a positive amount of USD"),
            ));
        }
        Ok(TaskSpec {
            max_tokens: req.max_tokens,
            max_cost_usd: req.max_cost_usd,
            webhook_url: req.webhook_url,
            record: req.record.unwrap_or(false),
            record_video: req.record_video.unwrap_or(false),
            instruction,
            priority,
            max_steps,
            timeout_seconds,
            device_id: nonempty("device_id", req.device_id)?,
            device: req.device,
            agent: req.agent,
            external_id: nonempty("task_id", req.task_id)?,
            session_id: nonempty("session_id", req.session_id)?,
            metadata: req.metadata,
        })
    }
}

/// A task as stored and returned by the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Task {
    pub id: TaskId,
    pub status: TaskStatus,
    #[serde(flatten)]
    pub spec: TaskSpec,
    /// The device that ran (or runs) the task.
    pub assigned_device: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Why the task ended (or why it is waiting), in words.
    pub reason: Option<String>,
    /// The agent's answer, when it finished with one.
    pub answer: Option<String>,
    pub steps: u32,
    /// Input tokens of the task's model calls, the cached ones included.
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, those the providers served from their prompt cache.
    #[serde(default)]
    pub tokens_cached: u64,
    pub cost_usd: f64,
    pub cancel_requested: bool,
    /// Model calls made so far (0 for a replay that needed no AI).
    #[serde(default)]
    pub model_calls: u64,
    /// The screen recording of a `record_video` task, one MP4 artifact per segment in
    /// order (a phone's `screenrecord` stops at 180 s, so a longer run is several).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recording: Vec<RecordingSegment>,
}

/// One MP4 of a task's screen recording, stored as an artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RecordingSegment {
    /// The artifact holding the MP4 (content-addressed by its sha256).
    pub sha256: String,
    pub bytes: u64,
    /// When the segment started recording.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// The video's own length.
    pub duration_ms: u64,
    pub width: u32,
    pub height: u32,
}

/// A task as a list shows it: what it is and how it ended, without the large fields
/// (the agent's action list, metadata, the webhook URL). `GET /v1/tasks/{id}` has the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskSummary {
    pub id: TaskId,
    pub status: TaskStatus,
    /// The first 200 characters (`…` marks a cut).
    pub instruction: String,
    pub priority: i32,
    pub agent: AgentSummary,
    pub external_id: Option<String>,
    pub session_id: Option<String>,
    pub device_id: Option<String>,
    pub assigned_device: Option<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The first 500 characters (`…` marks a cut).
    pub reason: Option<String>,
    pub steps: u32,
    pub max_steps: u32,
    /// Input tokens, the cached ones included.
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Of `tokens_in`, those the providers served from their prompt cache.
    pub tokens_cached: u64,
    pub cost_usd: f64,
    pub cancel_requested: bool,
}

/// Which agent a task asked for, in a few words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentSummary {
    /// The agent's kind (`navigator`, `vision`, `replay`…; the server's default when the
    /// task gave none), or `mcp_session` for the task that records an MCP session's
    /// actions.
    pub kind: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Replay agents: how many actions the script has.
    pub actions: Option<usize>,
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The summary kind of an MCP session's task.
pub const MCP_SESSION_KIND: &str = "mcp_session";

/// Whether `t` is the task an MCP session records its actions in: an empty replay
/// (nothing for an agent to run) created with the session's id in its metadata.
pub fn is_mcp_session(t: &Task) -> bool {
    let agent = t.spec.agent.as_ref();
    let empty_replay = agent.is_some_and(|a| {
        a.get("kind").and_then(Value::as_str) == Some("replay")
            && a.get("actions")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
    });
    let session = (t.spec.metadata.as_ref()).is_some_and(|m| m.get("mcp_session").is_some());
    empty_replay && session
}

impl TaskSummary {
    /// `default_kind` names the agent kind the server gives tasks that do not say.
    pub fn new(t: &Task, default_kind: &str) -> Self {
        let agent = t.spec.agent.as_ref();
        let field = |k: &str| {
            agent
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Self {
            id: t.id,
            status: t.status,
            instruction: clip(&t.spec.instruction, 200),
            priority: t.spec.priority,
            agent: AgentSummary {
                kind: if is_mcp_session(t) {
                    MCP_SESSION_KIND.to_string()
                } else {
                    field("kind").unwrap_or_else(|| default_kind.to_string())
                },
                provider: field("provider"),
                model: field("model"),
                actions: agent
                    .and_then(|a| a.get("actions"))
                    .and_then(Value::as_array)
                    .map(Vec::len),
            },
            external_id: t.spec.external_id.clone(),
            session_id: t.spec.session_id.clone(),
            device_id: t.spec.device_id.clone(),
            assigned_device: t.assigned_device.clone(),
            created_at: t.created_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
            reason: t.reason.as_deref().map(|r| clip(r, 500)),
            steps: t.steps,
            max_steps: t.spec.max_steps,
            tokens_in: t.tokens_in,
            tokens_out: t.tokens_out,
            tokens_cached: t.tokens_cached,
            cost_usd: t.cost_usd,
            cancel_requested: t.cancel_requested,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(v: Value) -> NewTask {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_and_coordinator_fields() {
        let s = TaskSpec::parse(req(
            json!({"ai_prompt": "  open Clock  ", "task_id": "c-1", "session_id": "s"}),
        ))
        .unwrap();
        assert_eq!(s.instruction, "open Clock");
        assert_eq!(
            (s.max_steps, s.timeout_seconds, s.priority),
            (DEFAULT_MAX_STEPS, DEFAULT_TIMEOUT_SECONDS, 0)
        );
        assert_eq!(s.external_id.as_deref(), Some("c-1"));
    }

    #[test]
    fn refusals_name_the_field() {
        let table = [
            (json!({}), "`instruction` is required"),
            (json!({"instruction": "   "}), "`instruction` is required"),
            (json!({"instruction": "a", "ai_prompt": "b"}), "not both"),
            (
                json!({"instruction": "a", "max_steps": 0}),
                "field `max_steps` is invalid",
            ),
            (
                json!({"instruction": "a", "timeout_seconds": 999999999}),
                "field `timeout_seconds` is invalid",
            ),
            (
                json!({"instruction": "a", "priority": 5000}),
                "field `priority` is invalid",
            ),
            (
                json!({"instruction": "a", "max_tokens": 0}),
                "field `max_tokens` is invalid",
            ),
            (
                json!({"instruction": "a", "max_cost_usd": -1.0}),
                "field `max_cost_usd` is invalid",
            ),
            (
                json!({"instruction": "a", "agent": "gpt"}),
                "field `agent` is invalid",
            ),
            (
                json!({"instruction": "a", "device_id": ""}),
                "field `device_id` is invalid",
            ),
            (
                json!({"instruction": "x".repeat(MAX_INSTRUCTION_CHARS + 1)}),
                "field `instruction` is invalid",
            ),
        ];
        for (input, want) in table {
            let e = TaskSpec::parse(req(input.clone())).unwrap_err().to_string();
            assert!(e.contains(want), "{input}: {e}");
        }
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let e = serde_json::from_value::<NewTask>(json!({"instruction": "a", "max_step": 3}))
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `max_step`"), "{e}");
    }

    #[test]
    fn webhook_urls_show_without_secrets() {
        let r = redact_url_secrets;
        assert_eq!(
            r("https://user:pw@hooks.example.com:8443/a/b?token=abc&x=1#frag"),
            "https://***@hooks.example.com:8443/a/b?token=***&x=***"
        );
        assert_eq!(
            r("http://hooks.example.com/a?secret"),
            "http://hooks.example.com/a?***"
        );
        assert_eq!(r("https://h.example/p"), "https://h.example/p");
        assert_eq!(r("https://a@b@h.example"), "https://***@h.example");
        let s = TaskSpec::parse(req(
            json!({"instruction": "a", "webhook_url": "https://u:pw@h.example/x?k=v"}),
        ))
        .unwrap();
        assert_eq!(
            s.webhook_url.as_deref(),
            Some("https://u:pw@h.example/x?k=v"),
            "kept for delivery"
        );
        let shown = serde_json::to_value(&s).unwrap();
        assert_eq!(shown["webhook_url"], "https://***@h.example/x?k=***");
        let e = TaskSpec::parse(req(
            json!({"instruction": "a", "webhook_url": "ftp://u:pw@h.example"}),
        ))
        .unwrap_err();
        assert!(!e.to_string().contains("pw"), "{e}");
    }

    #[test]
    fn status_strings_round_trip() {
        use strum::VariantArray as _;
        for &s in TaskStatus::VARIANTS {
            assert_eq!(s.as_str().parse::<TaskStatus>().unwrap(), s);
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert_eq!(
            "done".parse::<TaskStatus>().unwrap_err(),
            "unknown status `done`; one of: queued, running, waiting_for_user, paused, \
             succeeded, failed, incomplete, timed_out, cancelled, interrupted"
        );
    }
}

/// A script's id; versions of one script share it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(transparent)]
#[schema(value_type = String, format = Uuid)]
pub struct ScriptId(pub Uuid);

impl ScriptId {
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for ScriptId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for ScriptId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for ScriptId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self)
    }
}
