//! Agents: the `Agent` trait and its kinds. `navigator` reads the accessibility tree and
//! calls tools natively; `vision` reads screenshots and answers in a model family's
//! own format (MAI-UI, UI-TARS, AutoGLM, generic); `replay` returns recorded actions.
//! Every output ends as a validated `Action`; a reply that does not parse gets one
//! self-correction attempt with the error text, counted in `Decision::retries`.

pub mod appstrings;
pub mod chain;
pub mod composite;
pub mod consensus;
pub mod context;
pub mod custom_tool;
pub mod flow;
pub mod grounding;
pub mod navigator;
pub mod parse_error;
pub mod planned;
pub mod recording;
pub mod replay;
pub mod safety;
pub mod script;
pub mod secrets;
pub mod servers;
pub mod spec;
mod spec_de;
pub mod split;
pub mod vision;

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{Action, Annotation, ModelCall, ModelRole};
use crate::llm::{ChatModel, ChatReply, ChatRequest, LlmError, PriceTable, Usage};

pub use context::{AgentContext, History, Note, Observation, StepRecord};
pub use grounding::{Grounded, Grounder, GroundingRequest, ModelGrounder};
pub use navigator::NavigatorAgent;
pub use parse_error::ParseError;
pub use replay::ReplayAgent;
pub use spec::{AgentDefaults, AgentKind, AgentSpec, SpecError, build_agent};
pub use vision::{VisionAgent, VisionFormat};

/// What the agent decided at one step, with its cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub thinking: String,
    pub action: Action,
    /// The model's last reply as text (tool calls rendered as JSON), for the trajectory.
    pub raw: String,
    /// Tokens of every model call this decision made (retries and grounding included).
    pub usage: Usage,
    /// USD, when the model has a price in the table.
    pub cost: Option<f64>,
    pub model_calls: u32,
    /// Self-correction attempts: the runner charges them to the step budget.
    pub retries: u32,
    /// Time spent waiting on models.
    pub model_time: Duration,
    /// Time spent in droidpilot's own code (building prompts, parsing, validating).
    pub own_time: Duration,
    /// Script replays: what this step does for the script (stored with the step).
    pub replay: Option<crate::domain::ReplayInfo>,
    /// Every model call, by role (the actor's, a grounder's, a planner's…).
    pub calls: Vec<ModelCall>,
    /// What the roles around the actor said at this step (plans, progress, verdicts).
    pub annotations: Vec<Annotation>,
}

impl Decision {
    /// A decision made without a model.
    pub fn local(action: Action) -> Self {
        Self {
            thinking: String::new(),
            raw: serde_json::to_string(&action).unwrap_or_default(),
            action,
            usage: Usage::default(),
            cost: None,
            model_calls: 0,
            retries: 0,
            model_time: Duration::ZERO,
            own_time: Duration::ZERO,
            replay: None,
            calls: Vec::new(),
            annotations: Vec::new(),
        }
    }

    /// Folds another role's calls (a planner's, a verifier's) into this decision's cost.
    pub fn absorb(&mut self, calls: &[ModelCall]) {
        let sum = CallSum::of(calls);
        self.usage += sum.usage;
        add_cost(&mut self.cost, sum.cost);
        self.model_calls += sum.count;
        self.model_time += sum.time;
        self.calls.extend_from_slice(calls);
    }
}

/// What a list of model calls adds up to: the one place their tokens, cost, count and
/// time are summed (a decision absorbing a planner's calls, a meter a grounder's).
#[derive(Default)]
struct CallSum {
    usage: Usage,
    cost: Option<f64>,
    count: u32,
    time: Duration,
}

impl CallSum {
    fn of(calls: &[ModelCall]) -> Self {
        let mut sum = CallSum::default();
        for c in calls {
            sum.usage += Usage {
                input_tokens: c.tokens_in,
                output_tokens: c.tokens_out,
                cached_input_tokens: c.tokens_cached,
            };
            add_cost(&mut sum.cost, c.cost_usd);
            sum.count += 1;
            sum.time += Duration::from_millis(c.latency_ms);
        }
        sum
    }
}

/// Adds a cost that may be unknown (a model without a price) to a total that may be too.
fn add_cost(total: &mut Option<f64>, cost: Option<f64>) {
    if let Some(x) = cost {
        *total.get_or_insert(0.0) += x;
    }
}

#[async_trait]
pub trait Agent: Send {
    async fn next(&mut self, ctx: &AgentContext) -> Result<Decision, AgentError>;
    /// `vision/mai-ui openai:MAI-UI-8B`, for logs and task records.
    fn describe(&self) -> String;
    /// Whether a device action that failed (after the runner's retries) ends the task.
    /// Model-driven agents read the failure and choose again; a script cannot.
    fn fails_on_failed_action(&self) -> bool {
        false
    }
    /// Called by the scheduler before a task requeued after a restart runs again, with
    /// the steps it already committed. Model-driven agents see them through the history;
    /// a replay skips the actions they ran. (A task seeded from a saved trajectory by
    /// `droidpilot run --resume` is given the remaining actions instead.)
    fn resume(&mut self, _committed: &[crate::domain::Step]) {}
    /// A script this agent produced (recorded with `"record": true`, or healed during a
    /// replay), taken once when the task ends; `finished_ok` says whether it ended in a
    /// successful finish.
    fn take_script(&mut self, finished_ok: bool, reason: Option<&str>) -> Option<ProducedScript> {
        let _ = (finished_ok, reason);
        None
    }
    /// The app (package) this agent cannot work without: the runner checks, before the
    /// first step, that the device has it, and fails the task with
    /// `AgentError::AppNotInstalled` otherwise (a script's `app`). None: no such app.
    fn required_app(&self) -> Option<&str> {
        None
    }
    /// Given before the first step: where this task reads an app's string resources,
    /// for replay's labels across phone languages (`appstrings`). Agents that replay
    /// labels keep it.
    fn give_app_strings(&mut self, _source: appstrings::AppStringsSource) {}
    /// Whether the agent reads the device context (installed apps…): the runner only
    /// lists a phone's apps for agents that do.
    fn wants_device_context(&self) -> bool {
        false
    }
    /// Whether the agent plays a fixed list of actions (a `replay`): it cannot read a
    /// stuck diagnostic or a person's answer, so the runner's stuck detector leaves it
    /// alone (the list's length bounds it).
    fn plays_fixed_actions(&self) -> bool {
        false
    }
    /// Where in the task's `agent.actions` the action `next` returned last comes from
    /// (a replay): the runner masks that action's text in the stored task once it has
    /// typed into a password field.
    fn fixed_action_index(&self) -> Option<usize> {
        None
    }
    /// Values this agent was given as secrets (a replay's `"secret": true` texts, a
    /// script's secret inputs): the runner masks them in everything it records.
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }
    /// The runner's stuck detector escalated: an agent that can re-plan says so (and
    /// does, at its next decision) before a person is asked. Once per task.
    fn replan_when_stuck(&mut self, why: &str) -> bool {
        let _ = why;
        false
    }
}

/// A script an agent produced, for the runner to store.
#[derive(Debug, Clone, PartialEq)]
pub struct ProducedScript {
    pub script: crate::script::Script,
    /// A healed version of this stored script (id, version it was healed from); None
    /// for a new script.
    pub healed_from: Option<(crate::script::ScriptId, u32)>,
}

/// An MCP tool the agent may call; its result comes back through the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    #[schema(value_type = Object)]
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the model's answer could not be used after {attempts} attempts: {error}")]
    Parse {
        error: Box<ParseError>,
        raw: String,
        attempts: u32,
        usage: Usage,
        /// USD of the calls that produced unusable answers, when priced.
        cost: Option<f64>,
        /// Every model call the attempts made (they count like a decision's).
        calls: Vec<ModelCall>,
    },
    #[error("this agent needs a screenshot, and the observation has none")]
    NeedsScreenshot,
    #[error("grounding failed: {0}")]
    Grounding(String),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("recovery answer unusable: {0}")]
    Recovery(String),
    #[error("device {device} does not have {app}, which the agent's first step runs in")]
    AppNotInstalled { app: String, device: String },
}

impl AgentError {
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Llm(e) => e.code(),
            AgentError::Parse { .. } => "agent_unparseable",
            AgentError::NeedsScreenshot => "agent_needs_screenshot",
            AgentError::Grounding(_) => "agent_grounding_failed",
            AgentError::Spec(_) => "invalid_agent",
            AgentError::Recovery(_) => "recovery_unusable",
            AgentError::AppNotInstalled { .. } => "app_not_installed",
        }
    }
    pub fn hint(&self) -> String {
        match self {
            AgentError::Llm(e) => e.hint(),
            AgentError::Parse { error, .. } => error.hint(),
            AgentError::NeedsScreenshot => {
                "Vision agents read screenshots; check that the device returns them.".into()
            }
            AgentError::Grounding(_) => {
                "Check the grounding model configuration, or give element ids instead.".into()
            }
            AgentError::Spec(e) => e.hint(),
            AgentError::Recovery(_) => {
                "The recovery model must answer with one RecoveryAction JSON object; try a stronger model.".into()
            }
            AgentError::AppNotInstalled { .. } => {
                "Install the app on the device, or run on another one (GET /v1/devices/{id}/apps lists a device's apps).".into()
            }
        }
    }
}

/// Counts model calls, tokens, cost and time across one decision, and logs each call
/// under its role.
pub(crate) struct Meter<'a> {
    prices: &'a PriceTable,
    started: Instant,
    role: ModelRole,
    pub usage: Usage,
    pub cost: Option<f64>,
    pub calls: u32,
    pub model_time: Duration,
    pub log: Vec<ModelCall>,
}

impl<'a> Meter<'a> {
    pub fn new(prices: &'a PriceTable) -> Self {
        Self::for_role(prices, ModelRole::Actor)
    }

    pub fn for_role(prices: &'a PriceTable, role: ModelRole) -> Self {
        Self {
            prices,
            started: Instant::now(),
            role,
            usage: Usage::default(),
            cost: None,
            calls: 0,
            model_time: Duration::ZERO,
            log: Vec::new(),
        }
    }

    pub async fn call(
        &mut self,
        model: &dyn ChatModel,
        req: &ChatRequest,
    ) -> Result<ChatReply, AgentError> {
        let t = Instant::now();
        let r = model.chat(req).await;
        let latency = t.elapsed();
        self.model_time += latency;
        let cfg = model.config();
        let mut call = ModelCall {
            role: self.role,
            model: format!("{}:{}", cfg.provider.id(), cfg.model),
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            cost_usd: None,
            latency_ms: latency.as_millis() as u64,
            error: None,
        };
        match r {
            Ok(reply) => {
                call.cost_usd = self.add(&cfg.model, &reply.usage);
                call.tokens_in = reply.usage.input_tokens;
                call.tokens_out = reply.usage.output_tokens;
                call.tokens_cached = reply.usage.cached_input_tokens;
                self.log.push(call);
                Ok(reply)
            }
            Err(e) => {
                call.error = Some(e.to_string());
                self.log.push(call);
                Err(e.into())
            }
        }
    }

    /// Counts one call's usage; returns its cost when the model has a price.
    pub fn add(&mut self, model: &str, usage: &Usage) -> Option<f64> {
        self.calls += 1;
        self.usage += *usage;
        let c = self.prices.cost(model, usage);
        add_cost(&mut self.cost, c);
        c
    }

    /// Takes in another meter's calls (a grounder's).
    pub fn absorb(&mut self, calls: &[ModelCall]) {
        let sum = CallSum::of(calls);
        self.calls += sum.count;
        self.usage += sum.usage;
        add_cost(&mut self.cost, sum.cost);
        self.log.extend_from_slice(calls);
    }

    /// The answers could not be used after `attempts`: the error carries what the calls
    /// cost, so a rejected step counts them like any other.
    pub fn unusable(self, error: ParseError, raw: String, attempts: u32) -> AgentError {
        AgentError::Parse {
            error: Box::new(error),
            raw,
            attempts,
            usage: self.usage,
            cost: self.cost,
            calls: self.log,
        }
    }

    pub fn decision(self, thinking: String, action: Action, raw: String, retries: u32) -> Decision {
        Decision {
            thinking,
            action,
            raw,
            usage: self.usage,
            cost: self.cost,
            model_calls: self.calls,
            retries,
            own_time: self.started.elapsed().saturating_sub(self.model_time),
            model_time: self.model_time,
            replay: None,
            calls: self.log,
            annotations: Vec::new(),
        }
    }
}

/// The correction message a model gets after an unusable answer.
pub(crate) fn correction(err: &ParseError) -> String {
    format!(
        "Your previous answer could not be executed: {err}\nAnswer again with exactly one action in the required format."
    )
}
