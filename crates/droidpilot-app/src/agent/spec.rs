//! `AgentSpec`: the `agent` object of `POST /v1/tasks`, its validation (errors name the
//! field), the configured defaults it is merged with, and `build_agent`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::grounding::ModelGrounder;
use super::navigator::{BUILTIN_TOOLS, NavigatorAgent};
use super::replay::{OnError, ReplayAgent};
use super::script::ScriptAgent;
use super::script::recover::Aitm;
use super::vision::{UiTarsCoords, VisionAgent, VisionFormat};
use super::{Agent, AgentError, McpTool};
use crate::domain::{Action, ActionParser};
use crate::llm::{ApiKey, LlmError, ModelConfig, PriceTable, ProviderKind, build_model_with_key};
use crate::screen::Selector;
use crate::script::{Script, Vars};

// The list (`VARIANTS`, in this order: what the dashboard offers and what an unknown
// kind's error lists) is derived. Plain comments: a doc comment would enter the OpenAPI.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    ToSchema,
    strum::VariantArray,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AgentKind {
    Navigator,
    Vision,
    Replay,
    /// Replays a stored or inline script; a recovery model only with `recovery: true`.
    Script,
    /// An acting agent (`fast`) with a planner, a progress checker and a completion
    /// verifier (seed 002).
    Planned,
    /// Several agents in order at each step; the last one's action, the majority's or a
    /// judge's is taken (seed 000).
    Chain,
    /// Runs a Maestro flow with Maestro's semantics, no model.
    Flow,
    /// Two apps in split-screen, an agent loop per window (seed 002).
    Split,
}

/// Which agent runs a task. Absent fields come from the configuration. Read with
/// `AgentSpec::from_json` (errors name the field); `validate` checks the rules between
/// fields.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AgentKind>,
    /// Vision agents only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<VisionFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub model: Option<String>,
    /// A base URL the server is configured for (its defaults, `[agent.servers]`) or
    /// that the operator allows (`[agent] allowed_base_urls`, reached without a key).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub base_url: Option<String>,
    /// A model server the operator configured, by name (`[agent.servers.NAME]`): its
    /// provider, base URL and key; `model` may still name another model on it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub server: Option<String>,
    /// Replay agents only: the actions to return, in order. A `type` marked
    /// `"secret": true` has its text held in memory only (stored as `••••`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub actions: Option<Vec<Value>>,
    /// Replay agents only: `fail` (default) ends the task at the first failed step,
    /// `continue` records the failure and goes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    /// Script agents only: the script document (`POST /v1/scripts/{id}/run` embeds the
    /// stored version, so the task is self-contained).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::object"
    )]
    #[schema(value_type = Option<Object>)]
    pub script: Option<Value>,
    /// Script and flow agents: the stored script and version it came from (a healed
    /// script, or a healed flow imported as one, becomes that script's next version).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::script_id"
    )]
    #[schema(value_type = Option<String>)]
    pub script_id: Option<crate::script::ScriptId>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::version"
    )]
    pub script_version: Option<u32>,
    /// Script agents only: values for the script's `${inputs}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<BTreeMap<String, String>>,
    /// Script and flow agents: recover failed steps with a model (AI in the middle),
    /// chosen by `provider`, `model` and `base_url` like a navigator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<bool>,
    /// Planned agents only: the planner's model (the acting agent's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<super::composite::ModelSpec>,
    /// Planned agents only: the acting agent, a navigator or vision agent spec (the
    /// default navigator when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub fast: Option<Box<AgentSpec>>,
    /// Planned agents only: the progress checker's and completion verifier's model (the
    /// acting agent's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<super::composite::ModelSpec>,
    /// Planned agents only: when to plan, check and verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<super::planned::PlanningOptions>,
    /// Chains only: the agents, in order (2 to 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub agents: Option<Vec<AgentSpec>>,
    /// Flow agents only: a Maestro flow's YAML text (one file; use `files` and `entry`
    /// for a flow that runs other files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// Flow agents only: a Maestro workspace, path (relative, with `/`) → file text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
    /// Flow agents only: the path in `files` of the flow to run.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub entry: Option<String>,
    /// Flow agents only: Maestro's `-e KEY=VALUE` values, set before the flow's `env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Flow agents with `recovery`: write the flow back with the selectors AI in the
    /// middle found (the old one kept as an alternative), in the task's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<bool>,
    /// Split agents only: the top and the bottom window, each an app, a goal and
    /// optionally its own agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub windows: Option<Vec<super::split::WindowSpec>>,
    /// Any kind (the task's own agent object): read every screen with OCR too, so text
    /// that is only pixels (a canvas, an image, a page without nodes) becomes elements
    /// (`source: "ocr"`), selectable as `:ocr("…")` (`droidpilot_app::ocr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocr: Option<bool>,
    /// Navigator and vision agents: how screenshots are encoded for this agent's model
    /// (its configured model's settings when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<crate::llm::ScreenshotEncoding>,
    /// Chains only: how the step's action is chosen from the agents' proposals: `last`
    /// (default), `majority`, or `judge` (the agent with `"role": "judge"` picks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide: Option<crate::domain::ChainDecide>,
    /// Chains with `"decide": "majority"`: whose action is taken when no action has the
    /// most proposals: `last` (default) or `first` proposing agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie: Option<crate::domain::TieRule>,
    /// A chain's agents only: `propose` (default), `filter` (changes the observation the
    /// agents after it get, proposes nothing) or `judge` (picks a proposal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<super::consensus::ChainRole>,
    /// Navigators only: an answer whose `confidence` is below this (0–1) has its target
    /// located by the grounding model (`[agent.grounding]`) instead. Off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub grounding_below: Option<f64>,
}

/// Whether a task's agent object asks for OCR (`"ocr": true`).
pub fn asks_ocr(agent: Option<&Value>) -> bool {
    agent
        .and_then(|a| a.get("ocr"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A field of the `agent` object that is wrong, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("agent.{field}: {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
    /// What to do, when the generic agent hint would not help (a bad replay action).
    pub specific_hint: Option<String>,
}

impl SpecError {
    /// The same error, for an agent object nested at `at` (`fast`, `agents[1]`).
    pub fn nested(self, at: &str) -> Self {
        let field = if self.field.is_empty() {
            at.to_string()
        } else {
            format!("{at}.{}", self.field)
        };
        Self { field, ..self }
    }

    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            specific_hint: None,
        }
    }
    pub fn code(&self) -> &'static str {
        "invalid_agent"
    }
    pub fn hint(&self) -> String {
        if let Some(h) = &self.specific_hint {
            return h.clone();
        }
        "Send e.g. {\"kind\": \"vision\", \"format\": \"mai-ui\", \"provider\": \"openai\", \"model\": \"MAI-UI-8B\", \"base_url\": \"http://gpu:8000/v1\"}; omitted fields use the server's defaults.".into()
    }
}

/// Refuses the first of `fields` that is set, naming it, with `message`.
fn refuse_set(fields: &[(&str, bool)], message: &str) -> Result<(), SpecError> {
    match fields.iter().find(|(_, set)| *set) {
        Some((f, _)) => Err(SpecError::new(*f, message)),
        None => Ok(()),
    }
}

impl AgentSpec {
    /// Reads the `agent` object (serde, `agent::spec_de`): errors name the field by its
    /// path, unknown fields and values get "did you mean". Cross-field rules are
    /// `validate`'s.
    pub fn from_json(v: &Value) -> Result<Self, SpecError> {
        super::spec_de::read(v)
    }

    /// The object as stored with its task: the typed spec's own JSON, which `from_json`
    /// reads back as it was checked at submission.
    pub fn to_json(&self) -> Value {
        // Only strings, numbers, booleans, lists, string-keyed maps and JSON values.
        serde_json::to_value(self).expect("an AgentSpec is always JSON")
    }

    /// The script a `script` agent replays, checked whole, and its inputs bound.
    pub fn script_and_vars(&self) -> Result<(Script, Vars), SpecError> {
        let doc = self.script.as_ref().ok_or_else(|| {
            SpecError::new(
                "script",
                "script agents need the script to replay (or use POST /v1/scripts/{id}/run)",
            )
        })?;
        let script = Script::from_json(doc).map_err(|e| SpecError {
            specific_hint: Some(e.hint.clone()),
            ..SpecError::new(format!("script.{}", e.path), e.message)
        })?;
        let given = self.inputs.clone().unwrap_or_default();
        let vars =
            crate::script::vars::bind_inputs(&script.inputs, &given).map_err(|e| SpecError {
                specific_hint: Some(e.hint.clone()),
                ..SpecError::new(e.path.clone(), e.message)
            })?;
        Ok((script, vars))
    }

    fn validate_script(&self, defaults: &AgentDefaults) -> Result<(), SpecError> {
        refuse_set(
            &[
                ("actions", self.actions.is_some()),
                ("format", self.format.is_some()),
            ],
            "is not used by script agents",
        )?;
        if self.on_error.is_some() {
            return Err(SpecError::new(
                "on_error",
                "is not used by script agents: a failed step is recovered (`recovery: true`) or ends the task",
            ));
        }
        if self.recovery != Some(true) {
            refuse_set(
                &[
                    ("provider", self.provider.is_some()),
                    ("model", self.model.is_some()),
                    ("base_url", self.base_url.is_some()),
                    ("server", self.server.is_some()),
                ],
                "names the recovery model; set \"recovery\": true to use one",
            )?;
        } else {
            self.check_model_choice(AgentKind::Navigator, defaults)?;
        }
        if self.script_version.is_some() && self.script_id.is_none() {
            return Err(SpecError::new("script_version", "needs script_id"));
        }
        let (script, _) = self.script_and_vars()?;
        crate::run::extend::scripts::check(&script, &defaults.custom_actions).map_err(|e| {
            SpecError {
                specific_hint: Some(e.hint.clone()),
                ..SpecError::new(format!("script.{}", e.path), e.message)
            }
        })
    }

    /// Cross-field rules, given the kind the defaults would pick.
    /// The replay list, parsed, with every selector checked; a bad action is named by its
    /// index, in words for the person who wrote the list. It may name the custom actions
    /// every runner has and those the operator configured (`defaults.custom_actions`,
    /// the table in force); a configured one's arguments are checked as a REST call's.
    pub fn replay_actions(&self, defaults: &AgentDefaults) -> Result<Vec<Action>, SpecError> {
        let mut parser = ActionParser::new();
        for name in crate::run::EVERY_RUNNER {
            parser.register(name).expect("not a built-in action's name");
        }
        for def in &defaults.custom_actions {
            // Checked when the configuration loaded.
            let _ = parser.register(&def.name);
        }
        self.actions
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| {
                // `"secret": true` marks a `type` whose text is held in memory only
                // (`agent::secrets`); it is not part of the action.
                let mut v = v.clone();
                if let Some(o) = v.as_object_mut() {
                    o.remove("secret");
                }
                let a = parser.parse(&v).map_err(|e| SpecError {
                    specific_hint: Some(e.hint()),
                    ..SpecError::new(format!("actions[{i}]"), e.caller_message())
                })?;
                if let Action::Custom(c) = &a
                    && let Some(def) = defaults.custom_actions.iter().find(|d| d.name == c.name)
                {
                    def.bind(&c.args).map_err(|m| {
                        SpecError::new(format!("actions[{i}]"), m)
                    })?;
                    // The list is stored with its task: no place for a secret.
                    if let Some(p) = def.params.iter().find(|p| p.secret) {
                        return Err(SpecError {
                            specific_hint: Some("Name the action in a script step whose secret input supplies the value (docs/scripts.md \"The script document\", custom actions); a run holds secret inputs in memory only.".into()),
                            ..SpecError::new(
                                format!("actions[{i}].{}", p.name),
                                format!("is a secret parameter of `{}`, and a replay list is stored with its task", def.name),
                            )
                        });
                    }
                }
                for (field, sel) in a.selectors() {
                    Selector::parse(sel).map_err(|e| SpecError {
                        specific_hint: Some(e.hint()),
                        ..SpecError::new(format!("actions[{i}].{field}"), e.to_string())
                    })?;
                }
                Ok(a)
            })
            .collect()
    }

    /// The texts of the replay actions marked `"secret": true`.
    pub fn replay_secrets(&self) -> Vec<String> {
        self.actions
            .iter()
            .flatten()
            .filter(|a| a.get("secret") == Some(&Value::Bool(true)))
            .filter_map(|a| a.get("text").and_then(Value::as_str))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    pub fn validate(&self, defaults: &AgentDefaults) -> Result<AgentKind, SpecError> {
        let kind = self.kind.unwrap_or(defaults.kind);
        self.refuse_composite_fields(kind)?;
        self.check_screenshot(kind)?;
        self.check_grounding_below(kind, defaults)?;
        if kind != AgentKind::Flow {
            self.refuse_flow_fields()?;
        }
        match kind {
            AgentKind::Planned => {
                super::composite::validate_planned(self, defaults)?;
                return Ok(kind);
            }
            AgentKind::Chain => {
                super::composite::validate_chain(self, defaults)?;
                return Ok(kind);
            }
            AgentKind::Flow => {
                self.validate_flow(defaults)?;
                return Ok(kind);
            }
            AgentKind::Split => {
                super::split::validate_split(self, defaults)?;
                return Ok(kind);
            }
            _ => {}
        }
        if self.format.is_some() && kind != AgentKind::Vision {
            return Err(SpecError::new(
                "format",
                "is for vision agents only; remove it or set \"kind\": \"vision\"",
            ));
        }
        if let Some(u) = &self.base_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(SpecError::new(
                "base_url",
                format!("must start with http:// or https://, got `{u}`"),
            ));
        }
        match kind {
            AgentKind::Replay => {
                for f in ["format", "provider", "model", "base_url", "server"] {
                    let set = match f {
                        "provider" => self.provider.is_some(),
                        "model" => self.model.is_some(),
                        "base_url" => self.base_url.is_some(),
                        "server" => self.server.is_some(),
                        _ => false,
                    };
                    if set {
                        return Err(SpecError::new(f, "replay agents use no model"));
                    }
                }
                if self.actions.is_none() {
                    return Err(SpecError::new(
                        "actions",
                        "replay agents need the list of actions to replay",
                    ));
                }
                self.replay_actions(defaults)?;
            }
            AgentKind::Script => self.validate_script(defaults)?,
            _ => {
                if self.actions.is_some() {
                    return Err(SpecError::new("actions", "is for replay agents only"));
                }
                refuse_set(
                    &[
                        ("script", self.script.is_some()),
                        ("script_id", self.script_id.is_some()),
                        ("script_version", self.script_version.is_some()),
                        ("inputs", self.inputs.is_some()),
                    ],
                    "is for script agents only",
                )?;
                refuse_set(
                    &[("recovery", self.recovery.is_some())],
                    "is for script and flow agents only",
                )?;
                if self.on_error.is_some() {
                    return Err(SpecError::new(
                        "on_error",
                        "is for replay agents only; a model reads a failed step and chooses again",
                    ));
                }
                let base = defaults.model_for(kind);
                if self.provider.is_some_and(|p| p != base.provider) && self.model.is_none() {
                    return Err(SpecError::new(
                        "model",
                        format!(
                            "is required when `provider` differs from the default ({})",
                            base.provider.display_name().to_lowercase()
                        ),
                    ));
                }
                self.check_model_choice(kind, defaults)?;
            }
        }
        Ok(kind)
    }

    /// A flow agent's model fields (its recovery model) and the flow.
    fn validate_flow(&self, defaults: &AgentDefaults) -> Result<(), SpecError> {
        let program = self.flow_program()?;
        if self.recovery == Some(true) || program.ai_command().is_some() {
            self.check_model_choice(AgentKind::Navigator, defaults)?;
        } else {
            refuse_set(
                &[
                    ("provider", self.provider.is_some()),
                    ("model", self.model.is_some()),
                    ("base_url", self.base_url.is_some()),
                    ("server", self.server.is_some()),
                ],
                "names the recovery model; set \"recovery\": true to use one (or use an AI command)",
            )?;
        }
        if self.heal == Some(true) && self.recovery != Some(true) {
            return Err(SpecError {
                specific_hint: Some("Add \"recovery\": true (and the model): a flow is healed with the selectors AI in the middle found.".into()),
                ..SpecError::new("heal", "needs \"recovery\": true")
            });
        }
        Ok(())
    }

    /// Why this agent needs a model besides being a model agent: a flow's AI command,
    /// named by file and line (refusals at submission say so).
    pub fn model_needed_by(&self) -> Option<String> {
        if self.kind != Some(AgentKind::Flow) {
            return None;
        }
        let at = self.flow_program().ok()?.ai_command()?;
        Some(format!("{at} needs it"))
    }

    /// What a `flow` agent runs, checked whole: the flow and the files it reaches
    /// parsed, every command one this server can do (errors name the file and line);
    /// the fields of other kinds refused by name.
    pub fn flow_program(&self) -> Result<super::flow::program::Program, SpecError> {
        let others = [
            ("format", self.format.is_some()),
            ("actions", self.actions.is_some()),
            ("on_error", self.on_error.is_some()),
            ("script", self.script.is_some()),
            ("inputs", self.inputs.is_some()),
        ];
        if let Some((f, _)) = others.iter().find(|(_, set)| *set) {
            return Err(SpecError::new(*f, "is not used by flow agents"));
        }
        if self.script_version.is_some() && self.script_id.is_none() {
            return Err(SpecError::new("script_version", "needs script_id"));
        }
        super::flow::program::load(
            self.flow.as_deref(),
            self.files.as_ref(),
            self.entry.as_deref(),
            &self.env.clone().unwrap_or_default(),
        )
    }

    /// `grounding_below`: a navigator's, between 0 and 1, with a grounding model to ask.
    fn check_grounding_below(
        &self,
        kind: AgentKind,
        defaults: &AgentDefaults,
    ) -> Result<(), SpecError> {
        let Some(t) = self.grounding_below else {
            return Ok(());
        };
        if kind != AgentKind::Navigator {
            return Err(SpecError::new(
                "grounding_below",
                "is for navigators only (the grounding model locates a navigator's target)",
            ));
        }
        if !(0.0..=1.0).contains(&t) {
            return Err(SpecError::new(
                "grounding_below",
                format!("is a confidence between 0 and 1, got {t}"),
            ));
        }
        if defaults.grounding.is_none() {
            return Err(SpecError::new(
                "grounding_below",
                "needs a grounding model, and this server has none: configure [agent.grounding] (a vision model), or remove the field",
            ));
        }
        Ok(())
    }

    /// `screenshot` only on the agents that send one, with settings that make sense.
    fn check_screenshot(&self, kind: AgentKind) -> Result<(), SpecError> {
        let Some(enc) = &self.screenshot else {
            return Ok(());
        };
        if !matches!(kind, AgentKind::Navigator | AgentKind::Vision) {
            return Err(SpecError::new(
                "screenshot",
                "is for navigator and vision agents only (set it in `fast` or in one of `agents`)",
            ));
        }
        match enc.problem() {
            Some(p) => Err(SpecError::new("screenshot", p)),
            None => Ok(()),
        }
    }

    /// The flow fields on an agent of another kind.
    fn refuse_flow_fields(&self) -> Result<(), SpecError> {
        refuse_set(
            &[
                ("flow", self.flow.is_some()),
                ("files", self.files.is_some()),
                ("entry", self.entry.is_some()),
                ("env", self.env.is_some()),
                ("heal", self.heal.is_some()),
            ],
            "is for flow agents only (\"kind\": \"flow\")",
        )?;
        Ok(())
    }

    /// The fields of planned agents and chains, on an agent of another kind (and the
    /// fields of simple agents on a chain).
    fn refuse_composite_fields(&self, kind: AgentKind) -> Result<(), SpecError> {
        let planned_only = [
            ("planner", self.planner.is_some()),
            ("fast", self.fast.is_some()),
            ("verifier", self.verifier.is_some()),
            ("planning", self.planning.is_some()),
        ];
        for (f, set) in planned_only {
            if set && kind != AgentKind::Planned {
                return Err(SpecError::new(
                    f,
                    "is for planned agents only (\"kind\": \"planned\")",
                ));
            }
        }
        for (f, set) in [
            ("decide", self.decide.is_some()),
            ("tie", self.tie.is_some()),
        ] {
            if set && kind != AgentKind::Chain {
                return Err(SpecError::new(
                    f,
                    "is for chains only (\"kind\": \"chain\")",
                ));
            }
        }
        if self.role.is_some() {
            return Err(SpecError::new(
                "role",
                "is for the agents of a chain only (set it in one of `agents`)",
            ));
        }
        if self.windows.is_some() && kind != AgentKind::Split {
            return Err(SpecError::new(
                "windows",
                "is for split agents only (\"kind\": \"split\")",
            ));
        }
        if kind == AgentKind::Split {
            refuse_set(
                &[
                    ("format", self.format.is_some()),
                    ("provider", self.provider.is_some()),
                    ("model", self.model.is_some()),
                    ("base_url", self.base_url.is_some()),
                    ("server", self.server.is_some()),
                    ("actions", self.actions.is_some()),
                    ("on_error", self.on_error.is_some()),
                    ("script", self.script.is_some()),
                    ("inputs", self.inputs.is_some()),
                    ("recovery", self.recovery.is_some()),
                ],
                "belongs to a window's agent: set it in `windows[i].agent`",
            )?;
        }
        if self.agents.is_some() && kind != AgentKind::Chain {
            return Err(SpecError::new(
                "agents",
                "is for chains only (\"kind\": \"chain\")",
            ));
        }
        if matches!(kind, AgentKind::Planned | AgentKind::Chain) {
            let simple = [
                ("format", self.format.is_some()),
                ("actions", self.actions.is_some()),
                ("on_error", self.on_error.is_some()),
                ("script", self.script.is_some()),
                ("script_id", self.script_id.is_some()),
                ("script_version", self.script_version.is_some()),
                ("inputs", self.inputs.is_some()),
                ("recovery", self.recovery.is_some()),
            ];
            for (f, set) in simple {
                if set {
                    let place = match kind {
                        AgentKind::Planned => "in `fast`",
                        _ => "in one of `agents`",
                    };
                    return Err(SpecError::new(
                        f,
                        format!("belongs to the agent that uses it: set it {place}"),
                    ));
                }
            }
        }
        if kind == AgentKind::Chain {
            refuse_set(
                &[
                    ("provider", self.provider.is_some()),
                    ("model", self.model.is_some()),
                    ("base_url", self.base_url.is_some()),
                    ("server", self.server.is_some()),
                ],
                "a chain has no model of its own: set it in one of `agents`",
            )?;
        }
        Ok(())
    }

    /// A named server exists and is not overridden, and the model's base URL is one the
    /// task may reach (`agent::servers`).
    fn check_model_choice(
        &self,
        kind: AgentKind,
        defaults: &AgentDefaults,
    ) -> Result<(), SpecError> {
        if let Some(name) = &self.server {
            defaults.server(name)?;
            for (f, set) in [
                ("provider", self.provider.is_some()),
                ("base_url", self.base_url.is_some()),
            ] {
                if set {
                    return Err(SpecError::new(
                        f,
                        format!(
                            "is set by the model server `{name}`; remove it (`model` may name another model on that server)"
                        ),
                    ));
                }
            }
        }
        defaults.check_reach(&self.model_config(kind, defaults))
    }

    /// The model configuration for this spec: the default one for its kind (or the named
    /// server's), with the spec's provider, model and base URL on top. A different provider starts clean
    /// (the default's key and base URL belong to the default provider).
    pub fn model_config(&self, kind: AgentKind, defaults: &AgentDefaults) -> ModelConfig {
        let named = self.server.as_deref().and_then(|n| defaults.servers.get(n));
        let mut c = named.unwrap_or(defaults.model_for(kind)).clone().overlay(
            self.provider,
            self.model.as_deref(),
            self.base_url.as_deref(),
        );
        if let Some(s) = self.screenshot {
            c.screenshot = s;
        }
        c
    }
}

/// Keys from the configuration, used before the environment variables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderKeys {
    #[serde(default)]
    pub openai: Option<ApiKey>,
    #[serde(default)]
    pub anthropic: Option<ApiKey>,
    #[serde(default)]
    pub gemini: Option<ApiKey>,
}

impl ProviderKeys {
    pub fn get(&self, p: ProviderKind) -> Option<&ApiKey> {
        match p {
            ProviderKind::Openai => self.openai.as_ref(),
            ProviderKind::Anthropic => self.anthropic.as_ref(),
            ProviderKind::Gemini => self.gemini.as_ref(),
        }
    }
}

fn default_navigator_model() -> ModelConfig {
    ModelConfig::new(ProviderKind::Openai, "gpt-4o")
}
fn default_vision_model() -> ModelConfig {
    let mut c = ModelConfig::new(ProviderKind::Openai, "MAI-UI-8B");
    c.base_url = Some("http://127.0.0.1:8000/v1".into());
    c.vision = true;
    c
}
fn default_history_steps() -> usize {
    8
}
fn default_kind() -> AgentKind {
    AgentKind::Navigator
}
fn default_format() -> VisionFormat {
    VisionFormat::MaiUi
}

/// The `[agent]` section of the server configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentDefaults {
    #[serde(default = "default_kind")]
    pub kind: AgentKind,
    #[serde(default = "default_navigator_model")]
    pub navigator: ModelConfig,
    #[serde(default = "default_vision_model")]
    pub vision: ModelConfig,
    #[serde(default = "default_format")]
    pub vision_format: VisionFormat,
    #[serde(default)]
    pub ui_tars_coords: UiTarsCoords,
    /// Add the screenshot to navigator requests when its model reads images.
    #[serde(default)]
    pub navigator_screenshot: bool,
    /// A vision model the navigator asks when a target cannot be resolved.
    #[serde(default)]
    pub grounding: Option<ModelConfig>,
    #[serde(default = "default_format")]
    pub grounding_format: VisionFormat,
    #[serde(default = "default_history_steps")]
    pub history_steps: usize,
    #[serde(default)]
    pub prices: PriceTable,
    #[serde(default)]
    pub keys: ProviderKeys,
    #[serde(default)]
    pub mcp_tools: Vec<McpTool>,
    /// Model servers a task may choose by name (`"server": "NAME"`), each a full model
    /// configuration (`[agent.servers.NAME]`); their keys go only to their base URL.
    #[serde(default)]
    pub servers: BTreeMap<String, ModelConfig>,
    /// Base URLs a task may name although no model is configured there; requests to
    /// them carry no server key. Empty: a task reaches configured servers only.
    #[serde(default)]
    pub allowed_base_urls: Vec<String>,
    /// Base URLs the operator named outside this table (`[[dashboard.models]]`,
    /// `droidpilot run --base-url`), with their provider: configured, like the above.
    #[serde(skip)]
    pub operator_urls: Vec<(ProviderKind, String)>,
    /// Installed apps are described by the navigator model when it is configured
    /// (`apps::AppKnowledge`), once per app version; off: by their labels.
    #[serde(default = "default_true")]
    pub app_descriptions: bool,
    /// The operator's custom actions (`[actions]`, as in force when the task starts):
    /// offered to navigators as the `custom_action` tool.
    #[serde(skip)]
    pub custom_actions: Vec<crate::run::extend::CustomActionDef>,
}

fn default_true() -> bool {
    true
}

impl Default for AgentDefaults {
    fn default() -> Self {
        Self {
            kind: default_kind(),
            navigator: default_navigator_model(),
            vision: default_vision_model(),
            vision_format: default_format(),
            ui_tars_coords: UiTarsCoords::default(),
            navigator_screenshot: false,
            grounding: None,
            grounding_format: default_format(),
            history_steps: default_history_steps(),
            prices: PriceTable::default(),
            keys: ProviderKeys::default(),
            mcp_tools: Vec::new(),
            servers: BTreeMap::new(),
            allowed_base_urls: Vec::new(),
            operator_urls: Vec::new(),
            app_descriptions: true,
            custom_actions: Vec::new(),
        }
    }
}

impl AgentDefaults {
    /// Every configured model's `screenshot` settings make sense (names the section).
    pub fn check_screenshot_encodings(&self) -> Result<(), String> {
        let named = [("navigator", &self.navigator), ("vision", &self.vision)];
        let grounding = self.grounding.iter().map(|g| ("grounding".to_string(), g));
        let servers = (self.servers.iter()).map(|(n, c)| (format!("servers.{n}"), c));
        let all = (named.into_iter().map(|(n, c)| (n.to_string(), c)))
            .chain(grounding)
            .chain(servers);
        for (name, c) in all {
            if let Some(p) = c.screenshot.problem() {
                return Err(format!("agent.{name}.screenshot: {p}"));
            }
        }
        Ok(())
    }

    pub fn model_for(&self, kind: AgentKind) -> &ModelConfig {
        match kind {
            AgentKind::Vision => &self.vision,
            _ => &self.navigator,
        }
    }

    /// The key a spec's model (and the navigator's grounding model) would lack: checked
    /// at submission, so a task that could never call its model is refused up front.
    /// A local OpenAI-compatible server (any `base_url` but OpenAI's) needs none, nor
    /// does an allowed base URL (no server key is sent there).
    pub fn missing_key(
        &self,
        spec: &AgentSpec,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<LlmError> {
        let kind = spec.validate(self).ok()?;
        if matches!(kind, AgentKind::Planned | AgentKind::Chain) {
            return super::composite::missing_key(spec, kind, self, &env);
        }
        if kind == AgentKind::Split {
            return super::split::missing_key(spec, self, &env);
        }
        if kind == AgentKind::Replay
            || (kind == AgentKind::Script && spec.recovery != Some(true))
            || (kind == AgentKind::Flow
                && spec.recovery != Some(true)
                && spec.model_needed_by().is_none())
        {
            return None;
        }
        let main = spec.model_config(kind, self);
        let grounding = self
            .grounding
            .iter()
            .filter(|_| kind == AgentKind::Navigator);
        std::iter::once(&main)
            .chain(grounding)
            .find_map(|cfg| self.lacks_key(cfg, &env))
    }

    /// The error of a model whose key is neither in its config, nor in `[agent.keys]`,
    /// nor in the environment.
    pub(crate) fn lacks_key(
        &self,
        cfg: &ModelConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<LlmError> {
        if !self.reach(cfg.provider, cfg.base_url()).keyed()
            || self.endpoint_key(cfg).is_some()
            || self.keys.get(cfg.provider).is_some()
        {
            return None;
        }
        cfg.resolve_key_with(env).err()
    }

    /// The key requests to `cfg` carry: only at a base URL it was configured for
    /// (`agent::servers`); none elsewhere, whatever the configuration holds.
    /// The model that describes installed apps (`apps`): the navigator's, when
    /// descriptions are on and its key (if it needs one) is at hand.
    pub fn app_describer(&self) -> Option<std::sync::Arc<dyn crate::llm::ChatModel>> {
        if !self.app_descriptions {
            return None;
        }
        let cfg = &self.navigator;
        let key = self.key_for(cfg).ok()?;
        // The provider's hosted API without a key: not configured.
        if key.is_none() && cfg.base_url.is_none() {
            return None;
        }
        crate::llm::build_model_with_key(cfg, key).ok()
    }

    pub(crate) fn key_for(&self, cfg: &ModelConfig) -> Result<Option<ApiKey>, AgentError> {
        if !self.reach(cfg.provider, cfg.base_url()).keyed() {
            return Ok(None);
        }
        if let Some(k) = self.endpoint_key(cfg) {
            return Ok(Some(k));
        }
        if let Some(k) = self.keys.get(cfg.provider) {
            return Ok(Some(k.clone()));
        }
        Ok(cfg.resolve_key()?)
    }
}

/// Builds the agent a task asked for.
pub fn build_agent(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<Box<dyn Agent>, AgentError> {
    build_recording_agent(spec, defaults, None)
}

/// Refuses `"record": true` for an agent that cannot record (only the navigator has the
/// `record_step` / `finalize_script` tools; a planned agent records through its `fast`
/// navigator).
pub fn check_record(spec: &AgentSpec, defaults: &AgentDefaults) -> Result<(), SpecError> {
    let kind = spec.validate(defaults)?;
    if kind == AgentKind::Navigator {
        return Ok(());
    }
    if kind == AgentKind::Planned {
        let fast = super::composite::fast(spec, defaults);
        return check_record(&fast, defaults).map_err(|e| e.nested("fast"));
    }
    Err(SpecError::new(
        "kind",
        "`record: true` needs the navigator agent, which records steps through its record_step and finalize_script tools".to_string(),
    ))
}

/// Builds the agent; with `record` (the task's goal) the navigator records the run as a
/// script (`agent::recording`).
pub fn build_recording_agent(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
    record: Option<&str>,
) -> Result<Box<dyn Agent>, AgentError> {
    let kind = spec.validate(defaults)?;
    if record.is_some() {
        check_record(spec, defaults)?;
    }
    for t in &defaults.mcp_tools {
        if BUILTIN_TOOLS.contains(&t.name.as_str()) || t.name == "mobile_use" {
            return Err(SpecError::new(
                "mcp_tools",
                format!("MCP tool `{}` shadows a built-in tool; rename it", t.name),
            )
            .into());
        }
    }
    if kind == AgentKind::Replay {
        return Ok(Box::new(
            ReplayAgent::new(spec.replay_actions(defaults)?)
                .on_error(spec.on_error.unwrap_or_default())
                .with_secrets(spec.replay_secrets()),
        ));
    }
    if kind == AgentKind::Script {
        return build_script_agent(spec, defaults);
    }
    if kind == AgentKind::Flow {
        return build_flow_agent(spec, defaults);
    }
    if kind == AgentKind::Planned {
        return super::composite::build_planned(spec, defaults, record);
    }
    if kind == AgentKind::Chain {
        return super::composite::build_chain(spec, defaults);
    }
    if kind == AgentKind::Split {
        return super::split::build_split(spec, defaults);
    }
    let cfg = spec.model_config(kind, defaults);
    cfg.validate()
        .map_err(|e| SpecError::new("base_url", e.to_string()))?;
    let model = build_model_with_key(&cfg, defaults.key_for(&cfg)?)?;
    Ok(match kind {
        AgentKind::Vision => Box::new(
            VisionAgent::new(
                model,
                spec.format.unwrap_or(defaults.vision_format),
                &defaults.mcp_tools,
                defaults.prices.clone(),
            )
            .with_ui_tars_coords(defaults.ui_tars_coords),
        ),
        _ => {
            let mut nav = NavigatorAgent::new(
                model,
                &defaults.mcp_tools,
                defaults.prices.clone(),
                defaults.navigator_screenshot && cfg.vision,
            );
            if let Some(g) = &defaults.grounding {
                let gm = build_model_with_key(g, defaults.key_for(g)?)?;
                nav = nav.with_grounder(Arc::new(ModelGrounder::new(
                    gm,
                    defaults.grounding_format,
                    defaults.prices.clone(),
                )));
                if let Some(t) = spec.grounding_below {
                    nav = nav.with_grounding_below(t);
                }
            }
            if let Some(goal) = record {
                nav = nav.with_recording(goal);
            }
            Box::new(nav.with_custom_actions(&defaults.custom_actions))
        }
    })
}

/// The flow agent, with AI in the middle when the spec asks for it.
fn build_flow_agent(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<Box<dyn Agent>, AgentError> {
    let program = spec.flow_program()?;
    let ai = program.ai_command().is_some();
    let origin = spec
        .script_id
        .map(|id| (id, spec.script_version.unwrap_or(1)));
    let mut agent = super::flow::FlowAgent::new(program)?.from_script(origin);
    if spec.recovery == Some(true) {
        agent = agent.with_recovery(recovery_model(spec, defaults)?, defaults.prices.clone());
    }
    if ai {
        let vision = spec.model_config(AgentKind::Navigator, defaults).vision;
        let model = recovery_model(spec, defaults)?.model;
        agent = agent.with_model(super::flow::ai::AiModel { model, vision });
    }
    Ok(Box::new(agent.healing(spec.heal == Some(true))))
}

/// The recovery model a script or flow spec names (a navigator's choice).
fn recovery_model(spec: &AgentSpec, defaults: &AgentDefaults) -> Result<Aitm, AgentError> {
    let cfg = spec.model_config(AgentKind::Navigator, defaults);
    cfg.validate()
        .map_err(|e| SpecError::new("base_url", e.to_string()))?;
    let model = build_model_with_key(&cfg, defaults.key_for(&cfg)?)?;
    Ok(Aitm { model })
}

/// The script agent, with AI in the middle when the spec asks for it.
fn build_script_agent(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<Box<dyn Agent>, AgentError> {
    let (script, vars) = spec.script_and_vars()?;
    let origin = spec
        .script_id
        .map(|id| (id, spec.script_version.unwrap_or(1)));
    let mut agent = ScriptAgent::new(script, origin, vars);
    if spec.recovery == Some(true) {
        agent = agent.with_recovery(recovery_model(spec, defaults)?, defaults.prices.clone());
    }
    Ok(Box::new(agent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> SpecError {
        match AgentSpec::from_json(&v) {
            Err(e) => e,
            Ok(s) => s.validate(&AgentDefaults::default()).unwrap_err(),
        }
    }

    #[test]
    fn script_specs_are_checked_whole_at_submission() {
        let doc = json!({"name": "n", "goal": "g", "inputs": {"who": null},
                         "steps": [{"action": "type", "selector": "#to", "parameters": {"text": "${who}"}}]});
        let ok = AgentSpec::from_json(
            &json!({"kind": "script", "script": doc, "inputs": {"who": "Ana"}}),
        )
        .unwrap();
        assert_eq!(
            ok.validate(&AgentDefaults::default()).unwrap(),
            AgentKind::Script
        );
        let e = err(json!({"kind": "script", "script": doc}));
        assert_eq!(
            e.field, "inputs.who",
            "a declared input without a value: {e}"
        );
        let e = err(
            json!({"kind": "script", "script": {"name": "n", "goal": "g", "steps": [{"action": "tap", "selector": "#a b"}]}}),
        );
        assert_eq!(e.field, "script.steps[0].selector");
        let e = err(
            json!({"kind": "script", "script": doc, "inputs": {"who": "A"}, "model": "gpt-4o"}),
        );
        assert!(
            e.to_string().contains("recovery"),
            "a model without recovery: {e}"
        );
        let e = err(json!({"kind": "navigator", "script": doc}));
        assert_eq!(e.field, "script");
        // Only a script that asks for recovery needs a key.
        let d = AgentDefaults::default();
        assert!(d.missing_key(&ok, |_| None).is_none());
        let with_ai = AgentSpec {
            recovery: Some(true),
            ..ok
        };
        assert!(d.missing_key(&with_ai, |_| None).is_some());
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            err(json!({"kind": "visoin"})).to_string(),
            "agent.kind: unknown value `visoin` (did you mean `vision`?); allowed: navigator, vision, replay, script, planned, chain, flow, split"
        );
        assert_eq!(
            err(json!({"kind": "navigator", "format": "mai-ui"})).field,
            "format"
        );
        assert_eq!(
            err(json!({"kind": "vision", "format": "maiui"})).to_string(),
            "agent.format: unknown value `maiui` (did you mean `mai-ui`?); allowed: mai-ui, ui-tars, autoglm, generic"
        );
        assert_eq!(
            err(json!({"provider": "openia"})).to_string(),
            "agent.provider: unknown value `openia` (did you mean `openai`?); allowed: openai, anthropic, gemini"
        );
        assert_eq!(err(json!({"provider": "anthropic"})).field, "model");
        assert_eq!(err(json!({"base_url": "gpu:8000"})).field, "base_url");
        assert_eq!(
            err(json!({"modle": "x"})).to_string(),
            "agent.modle: unknown field (did you mean `model`?); fields: kind, format, provider, model, base_url, server, actions, on_error, script, script_id, script_version, inputs, recovery, planner, fast, verifier, planning, agents, flow, files, entry, env, heal, windows, ocr, screenshot, decide, tie, role, grounding_below"
        );
        assert_eq!(
            err(json!({"kind": "replay", "actions": [], "on_error": "ignore"})).to_string(),
            "agent.on_error: unknown value `ignore`; allowed: fail, continue"
        );
        assert_eq!(err(json!({"on_error": "continue"})).field, "on_error");
        assert_eq!(err(json!({"kind": "replay"})).field, "actions");
        assert_eq!(
            err(json!({"kind": "replay", "actions": [], "model": "x"})).field,
            "model"
        );
    }

    /// Inside a nested agent or a role model the error names the inner field, with the
    /// same "did you mean" as at the top.
    #[test]
    fn nested_objects_name_the_inner_field_and_suggest() {
        let msg = |v: Value| err(v).to_string();
        assert_eq!(
            msg(json!({"kind": "planned", "planner": {"provider": "openia"}})),
            "agent.planner.provider: unknown value `openia` (did you mean `openai`?); allowed: openai, anthropic, gemini"
        );
        assert_eq!(
            msg(json!({"kind": "planned", "verifier": {"modle": "o3"}})),
            "agent.verifier.modle: unknown field (did you mean `model`?); fields: provider, model, base_url, server, vision"
        );
        assert_eq!(
            msg(json!({"kind": "planned", "planner": {"model": "  "}})),
            "agent.planner.model: must not be empty"
        );
        assert!(
            msg(json!({"kind": "planned", "planning": {"progress_evry": 2}})).starts_with(
                "agent.planning.progress_evry: unknown field (did you mean `progress_every`?); fields: progress_every, "
            )
        );
        let replay = json!({"kind": "replay", "actions": []});
        assert_eq!(
            msg(json!({"kind": "chain", "agents": [replay, {"kind": "visoin"}]})),
            "agent.agents[1].kind: unknown value `visoin` (did you mean `vision`?); allowed: navigator, vision, replay, script, planned, chain, flow, split"
        );
        assert_eq!(
            msg(json!({"kind": "chain", "agents": [replay, {"kind": "replay", "actions": {}}]})),
            "agent.agents[1].actions: expected a list of actions"
        );
        assert_eq!(
            msg(json!({"kind": "planned", "fast": {"recovery": "yes"}})),
            "agent.fast.recovery: expected true or false"
        );
        assert_eq!(
            msg(json!({"kind": "planned", "fast": 3})),
            "agent.fast: expected an object like {\"kind\": \"navigator\"}"
        );
        assert_eq!(
            msg(json!({"kind": 3})),
            "agent.kind: expected a string, one of navigator, vision, replay, script, planned, chain, flow, split"
        );
        assert_eq!(msg(json!({"model": " "})), "agent.model: must not be empty");
        assert_eq!(
            msg(json!({"kind": "script", "script_id": "nope"})),
            "agent.script_id: `nope` is not a script id"
        );
        assert_eq!(
            msg(json!({"kind": "script", "script_version": 0})),
            "agent.script_version: expected a version number (1, 2, …)"
        );
        assert_eq!(
            msg(json!({"kind": "script", "inputs": {"who": 3}})),
            "agent.inputs.who: invalid type: integer `3`, expected a string"
        );
    }

    /// What a task stores is the typed spec's JSON (strings trimmed, nulls gone), and it
    /// reads back as the spec that was checked.
    #[test]
    fn the_stored_spec_reads_back_as_it_was_checked() {
        let s = AgentSpec::from_json(&json!({"kind": "planned", "planner": {"model": " o3 "},
            "fast": {"kind": "vision", "model": " ui ", "format": null},
            "planning": {"progress_every": 2}}))
        .unwrap();
        let stored = s.to_json();
        assert_eq!(stored["planner"], json!({"model": "o3"}));
        assert_eq!(stored["fast"], json!({"kind": "vision", "model": "ui"}));
        assert_eq!(stored["planning"]["progress_every"], 2);
        assert_eq!(AgentSpec::from_json(&stored).unwrap(), s);
    }

    /// A navigator or vision agent may set its model's screenshot encoding; other kinds
    /// and settings that make no sense are refused by field.
    #[test]
    fn screenshot_encoding_is_per_agent_and_checked() {
        let d = AgentDefaults::default();
        let s = AgentSpec::from_json(
            &json!({"kind": "navigator", "screenshot": {"max_side": 720, "max_quality": 40}}),
        )
        .unwrap();
        let c = s.model_config(s.validate(&d).unwrap(), &d);
        assert_eq!(
            (
                c.screenshot.max_side,
                c.screenshot.max_quality,
                c.screenshot.min_quality
            ),
            (720, 40, 15)
        );
        let plain = AgentSpec::from_json(&json!({"kind": "navigator"})).unwrap();
        assert_eq!(
            plain.model_config(AgentKind::Navigator, &d).screenshot,
            d.navigator.screenshot
        );
        let e = err(json!({"kind": "replay", "actions": [{"action": "back"}], "screenshot": {}}));
        assert_eq!(e.field, "screenshot");
        let e = err(json!({"kind": "vision", "screenshot": {"min_quality": 90}}));
        assert!(e.to_string().contains("min_quality"), "{e}");
        let e = err(json!({"kind": "vision", "screenshot": {"quality": 90}}));
        assert!(e.to_string().contains("quality"), "{e}");
        let bad = AgentDefaults {
            vision: ModelConfig {
                screenshot: crate::llm::ScreenshotEncoding {
                    max_side: 5,
                    ..Default::default()
                },
                ..default_vision_model()
            },
            ..AgentDefaults::default()
        };
        assert!(
            bad.check_screenshot_encodings()
                .unwrap_err()
                .starts_with("agent.vision.screenshot")
        );
    }

    #[test]
    fn spec_merges_over_defaults() {
        let d = AgentDefaults {
            allowed_base_urls: vec!["http://gpu:8000".into()],
            ..AgentDefaults::default()
        };
        let s = AgentSpec::from_json(&json!({"kind": "vision", "format": "mai-ui", "provider": "openai", "model": "MAI-UI-2B", "base_url": "http://gpu:8000/v1"})).unwrap();
        let c = s.model_config(s.validate(&d).unwrap(), &d);
        assert_eq!(
            (c.provider, c.model.as_str(), c.base_url()),
            (ProviderKind::Openai, "MAI-UI-2B", "http://gpu:8000/v1")
        );
        let s = AgentSpec::from_json(&json!({"provider": "gemini", "model": "gemini-2.5-flash"}))
            .unwrap();
        let c = s.model_config(s.validate(&d).unwrap(), &d);
        assert_eq!(c.base_url(), "https://generativelanguage.googleapis.com");
        let typed: AgentSpec =
            serde_json::from_value(json!({"kind": "vision", "format": "ui-tars"})).unwrap();
        assert_eq!(typed.format, Some(VisionFormat::UiTars));
    }

    #[test]
    fn a_missing_key_is_found_unless_the_server_is_local() {
        let d = AgentDefaults {
            allowed_base_urls: vec!["http://127.0.0.1:11434".into()],
            ..AgentDefaults::default()
        };
        let no_env = |_: &str| None;
        let spec = |v: Value| AgentSpec::from_json(&v).unwrap();
        let e = d.missing_key(&AgentSpec::default(), no_env).unwrap();
        assert_eq!(e.code(), "llm_missing_key");
        assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
        let e = d
            .missing_key(
                &spec(json!({"provider": "anthropic", "model": "claude"})),
                no_env,
            )
            .unwrap();
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
        let with_key = |v: &str| (v == "OPENAI_API_KEY").then(|| "sk-test".to_string());
        assert_eq!(d.missing_key(&AgentSpec::default(), with_key), None);
        // Ollama / vLLM on this machine, and the default vision server, need no key.
        let local = spec(json!({"base_url": "http://127.0.0.1:11434/v1"}));
        assert_eq!(d.missing_key(&local, no_env), None);
        assert_eq!(
            d.missing_key(&spec(json!({"kind": "vision"})), no_env),
            None
        );
        assert_eq!(
            d.missing_key(&spec(json!({"kind": "replay", "actions": []})), no_env),
            None
        );
    }

    /// A stored task is checked again when its agent is built (a task queued before the
    /// rule, `droidpilot run`): a foreign base URL gets no key and no client.
    #[test]
    fn keys_go_only_where_they_were_configured() {
        let mut d = AgentDefaults::default();
        d.navigator.api_key = Some(ApiKey::new("sk-configured"));
        d.keys.anthropic = Some(ApiKey::new("sk-ant"));
        d.allowed_base_urls = vec!["http://lab:9000".into()];
        let spec = |v: Value| AgentSpec::from_json(&v).unwrap();
        let e = build_agent(&spec(json!({"base_url": "http://evil.example/v1"})), &d)
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("agent.base_url: "), "{e}");
        // An allowed URL: the configured key is dropped, and no provider key is added.
        let cfg =
            spec(json!({"base_url": "http://lab:9000/v1"})).model_config(AgentKind::Navigator, &d);
        assert_eq!(d.key_for(&cfg).unwrap(), None);
        let cfg =
            spec(json!({"provider": "anthropic", "model": "c", "base_url": "http://lab:9000"}))
                .model_config(AgentKind::Navigator, &d);
        assert_eq!(d.key_for(&cfg).unwrap(), None);
        assert_eq!(
            d.missing_key(
                &spec(
                    json!({"provider": "anthropic", "model": "c", "base_url": "http://lab:9000"})
                ),
                |_| None
            ),
            None
        );
        // The configured endpoint and the provider's hosted API keep their keys.
        let cfg = spec(json!({"model": "gpt-4o-mini"})).model_config(AgentKind::Navigator, &d);
        assert_eq!(d.key_for(&cfg).unwrap().unwrap().expose(), "sk-configured");
        let cfg = spec(json!({"provider": "anthropic", "model": "c"}))
            .model_config(AgentKind::Navigator, &d);
        assert_eq!(d.key_for(&cfg).unwrap().unwrap().expose(), "sk-ant");
    }

    #[tokio::test]
    async fn replay_builds_and_reports_bad_actions_by_index() {
        let d = AgentDefaults::default();
        let s = AgentSpec::from_json(
            &json!({"kind": "replay", "actions": [{"action": "back"}, {"action": "tapp"}]}),
        )
        .unwrap();
        let e = build_agent(&s, &d).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("agent.actions[1]: unknown action `tapp`"),
            "{e}"
        );
    }
}
