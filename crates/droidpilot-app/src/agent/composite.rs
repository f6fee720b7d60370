//! Agents made of agents: the `planned` kind (an acting agent with a planner, a progress
//! checker and a completion verifier) and the `chain` kind (each step passes through
//! several agents). This module checks their parts of the `agent` object (read with it by
//! `AgentSpec::from_json`; errors name the nested field, `fast.model`, `agents[1].kind`),
//! and builds them.
//!
//! ```json
//! {"kind": "planned",
//!  "planner": {"provider": "anthropic", "model": "claude-opus-4-1"},
//!  "fast": {"kind": "navigator", "provider": "openai", "model": "gpt-4o-mini"},
//!  "verifier": {"model": "gpt-4o"},
//!  "planning": {"progress_every": 3, "failure_threshold": 3, "last_resort_steps": 5}}
//! {"kind": "chain", "agents": [{…pre…}, {…main…}, {…validator…}]}
//! {"kind": "chain", "decide": "judge",
//!  "agents": [{…filter…, "role": "filter"}, {…a…}, {…b…}, {…c…}, {…, "role": "judge"}]}
//! ```

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::chain::{ChainAgent, Member};
use super::consensus::{ChainRole, RoleModel};
use super::planned::{PlannedAgent, Roles};
use super::spec::{AgentDefaults, AgentKind, AgentSpec, SpecError, build_recording_agent};
use super::{Agent, AgentError};
use crate::domain::ChainDecide;
use crate::llm::{ChatModel, LlmError, ModelConfig, ProviderKind, build_model_with_key};

/// A model for a role: any provider; absent fields come from the acting agent's model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub model: Option<String>,
    /// A base URL the server is configured for, or one in `[agent] allowed_base_urls`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub base_url: Option<String>,
    /// A model server from `[agent.servers]`, by name (sets provider and base URL).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::spec_de::text"
    )]
    pub server: Option<String>,
    /// The model reads screenshots (they are attached to its requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
}

/// The most agents a chain may hold.
pub const MAX_CHAIN: usize = 5;

/// The acting agent of a planned spec: the configured default kind when that is a
/// navigator or vision agent, else a navigator (a default kind of `planned` must not make
/// the acting agent a planned agent again).
pub(super) fn fast(spec: &AgentSpec, defaults: &AgentDefaults) -> AgentSpec {
    let mut f = spec.fast.as_deref().cloned().unwrap_or_default();
    if f.kind.is_none() {
        f.kind = Some(match defaults.kind {
            AgentKind::Vision => AgentKind::Vision,
            _ => AgentKind::Navigator,
        });
    }
    f
}

/// `planned`: an acting agent that decides with a model, and role models that exist.
pub(super) fn validate_planned(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<(), SpecError> {
    for (f, set) in [
        ("provider", spec.provider.is_some()),
        ("model", spec.model.is_some()),
        ("base_url", spec.base_url.is_some()),
        ("server", spec.server.is_some()),
    ] {
        if set {
            return Err(SpecError::new(
                f,
                "a planned agent has no model of its own: set the planner's in `planner` and the acting agent's in `fast`",
            ));
        }
    }
    let f = fast(spec, defaults);
    let kind = f.validate(defaults).map_err(|e| e.nested("fast"))?;
    if !matches!(kind, AgentKind::Navigator | AgentKind::Vision) {
        return Err(SpecError::new(
            "fast.kind",
            "the acting agent of a planned agent must be a navigator or a vision agent (it decides with a model)",
        ));
    }
    for (field, m) in [("planner", &spec.planner), ("verifier", &spec.verifier)] {
        if let Some(m) = m {
            check_model(m, kind, &f, defaults).map_err(|e| e.nested(field))?;
        }
    }
    Ok(())
}

fn check_model(
    m: &ModelSpec,
    kind: AgentKind,
    fast: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<(), SpecError> {
    if let Some(u) = &m.base_url
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        return Err(SpecError::new(
            "base_url",
            format!("must start with http:// or https://, got `{u}`"),
        ));
    }
    if let Some(name) = &m.server {
        defaults.server(name)?;
        for (f, set) in [
            ("provider", m.provider.is_some()),
            ("base_url", m.base_url.is_some()),
        ] {
            if set {
                return Err(SpecError::new(
                    f,
                    format!("is set by the model server `{name}`; remove it"),
                ));
            }
        }
    }
    let base = fast.model_config(kind, defaults);
    if m.server.is_none() && m.provider.is_some_and(|p| p != base.provider) && m.model.is_none() {
        return Err(SpecError::new(
            "model",
            "is required when `provider` differs from the acting agent's",
        ));
    }
    defaults.check_reach(&role_config(Some(m), fast, kind, defaults))
}

/// `chain`: 2 to 5 agents, none of them a chain.
pub(super) fn validate_chain(spec: &AgentSpec, defaults: &AgentDefaults) -> Result<(), SpecError> {
    let agents = spec.agents.as_deref().ok_or_else(|| {
        SpecError::new(
            "agents",
            "a chain needs its agents, e.g. [pre, main, validator]",
        )
    })?;
    if !(2..=MAX_CHAIN).contains(&agents.len()) {
        return Err(SpecError::new(
            "agents",
            format!(
                "a chain holds 2 to {MAX_CHAIN} agents, got {}",
                agents.len()
            ),
        ));
    }
    for (i, a) in agents.iter().enumerate() {
        let at = format!("agents[{i}]");
        let plain = AgentSpec {
            role: None,
            ..a.clone()
        };
        let kind = plain.validate(defaults).map_err(|e| e.nested(&at))?;
        if kind == AgentKind::Chain {
            return Err(SpecError::new(
                format!("{at}.kind"),
                "a chain cannot hold a chain; list its agents instead",
            ));
        }
        let role = a.role.unwrap_or_default();
        if role != ChainRole::Propose && !matches!(kind, AgentKind::Navigator | AgentKind::Vision) {
            return Err(SpecError::new(
                format!("{at}.role"),
                "a judge or a filter answers with its model: make it a navigator or a vision agent",
            ));
        }
    }
    validate_decide(spec, agents)
}

/// `decide` and `tie` agree with the agents' roles: a judge chain has one judge, only a
/// judge chain has one, and there are at least two proposals to choose from.
fn validate_decide(spec: &AgentSpec, agents: &[AgentSpec]) -> Result<(), SpecError> {
    let decide = spec.decide.unwrap_or_default();
    let role = |a: &AgentSpec| a.role.unwrap_or_default();
    let judges: Vec<usize> = (0..agents.len())
        .filter(|&i| role(&agents[i]) == ChainRole::Judge)
        .collect();
    let proposers = agents
        .iter()
        .filter(|a| role(a) == ChainRole::Propose)
        .count();
    if spec.tie.is_some() && decide != ChainDecide::Majority {
        return Err(SpecError::new(
            "tie",
            "is for \"decide\": \"majority\" only (it says whose action a tie takes)",
        ));
    }
    match (decide, judges.as_slice()) {
        (ChainDecide::Judge, []) => {
            return Err(SpecError::new(
                "decide",
                "a judge chain needs its judge: set \"role\": \"judge\" on one of `agents` (a navigator or vision agent)",
            ));
        }
        (ChainDecide::Judge, [_]) => {}
        (ChainDecide::Judge, [_, second, ..]) => {
            return Err(SpecError::new(
                format!("agents[{second}].role"),
                "a chain has one judge",
            ));
        }
        (_, [j, ..]) => {
            return Err(SpecError::new(
                format!("agents[{j}].role"),
                "a judge picks only with \"decide\": \"judge\"",
            ));
        }
        (_, []) => {}
    }
    let needed = if decide == ChainDecide::Last { 1 } else { 2 };
    if proposers < needed {
        return Err(SpecError::new(
            "agents",
            format!(
                "this chain needs at least {needed} proposing agents (without a `role`), got {proposers}"
            ),
        ));
    }
    Ok(())
}

/// A role's model configuration: the acting agent's, with the role's fields on top.
fn role_config(
    m: Option<&ModelSpec>,
    fast: &AgentSpec,
    kind: AgentKind,
    defaults: &AgentDefaults,
) -> ModelConfig {
    let c = fast.model_config(kind, defaults);
    let Some(m) = m else {
        return c;
    };
    let named = m.server.as_deref().and_then(|n| defaults.servers.get(n));
    let c = named.cloned().unwrap_or(c);
    let mut c = c.overlay(m.provider, m.model.as_deref(), m.base_url.as_deref());
    if let Some(v) = m.vision {
        c.vision = v;
    }
    c
}

/// The model configurations a planned spec calls (acting, planner, checker), for key checks.
pub(super) fn planned_configs(spec: &AgentSpec, defaults: &AgentDefaults) -> Vec<ModelConfig> {
    let f = fast(spec, defaults);
    let kind = f.kind.unwrap_or(AgentKind::Navigator);
    vec![
        f.model_config(kind, defaults),
        role_config(spec.planner.as_ref(), &f, kind, defaults),
        role_config(spec.verifier.as_ref(), &f, kind, defaults),
    ]
}

fn model(
    cfg: &ModelConfig,
    defaults: &AgentDefaults,
) -> Result<std::sync::Arc<dyn ChatModel>, AgentError> {
    cfg.validate()
        .map_err(|e| SpecError::new("base_url", e.to_string()))?;
    Ok(build_model_with_key(cfg, defaults.key_for(cfg)?)?)
}

pub(super) fn build_planned(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
    record: Option<&str>,
) -> Result<Box<dyn Agent>, AgentError> {
    let f = fast(spec, defaults);
    let kind = f.kind.unwrap_or(AgentKind::Navigator);
    let acting = build_recording_agent(&f, defaults, record)?;
    let roles = Roles {
        planner: model(
            &role_config(spec.planner.as_ref(), &f, kind, defaults),
            defaults,
        )?,
        checker: model(
            &role_config(spec.verifier.as_ref(), &f, kind, defaults),
            defaults,
        )?,
        prices: defaults.prices.clone(),
    };
    Ok(Box::new(PlannedAgent::new(
        acting,
        roles,
        spec.planning.clone().unwrap_or_default(),
    )))
}

pub(super) fn build_chain(
    spec: &AgentSpec,
    defaults: &AgentDefaults,
) -> Result<Box<dyn Agent>, AgentError> {
    let members = spec
        .agents
        .iter()
        .flatten()
        .map(|a| member(a, defaults))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(ChainAgent::with_members(
        members,
        spec.decide.unwrap_or_default(),
        spec.tie.unwrap_or_default(),
    )))
}

/// A chain's agent: a proposing agent, or a judge's or filter's model.
fn member(a: &AgentSpec, defaults: &AgentDefaults) -> Result<Member, AgentError> {
    let role = a.role.unwrap_or_default();
    if role == ChainRole::Propose {
        return Ok(Member::Propose(build_recording_agent(a, defaults, None)?));
    }
    let kind = a.kind.unwrap_or(defaults.kind);
    Ok(Member::Role(RoleModel {
        role,
        model: model(&a.model_config(kind, defaults), defaults)?,
        prices: defaults.prices.clone(),
    }))
}

/// The first key a composite spec's models lack.
pub(super) fn missing_key(
    spec: &AgentSpec,
    kind: AgentKind,
    defaults: &AgentDefaults,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<LlmError> {
    match kind {
        AgentKind::Planned => planned_configs(spec, defaults)
            .iter()
            .find_map(|cfg| defaults.lacks_key(cfg, env)),
        AgentKind::Chain => spec.agents.iter().flatten().find_map(|a| {
            let plain = AgentSpec {
                role: None,
                ..a.clone()
            };
            defaults.missing_key(&plain, env)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn err(v: Value) -> SpecError {
        let d = AgentDefaults::default();
        match AgentSpec::from_json(&v) {
            Err(e) => e,
            Ok(s) => s.validate(&d).unwrap_err(),
        }
    }

    #[test]
    fn planned_and_chain_specs_name_the_nested_field_at_fault() {
        let d = AgentDefaults::default();
        let ok = AgentSpec::from_json(&json!({"kind": "planned",
            "planner": {"provider": "anthropic", "model": "claude-opus-4-1"},
            "fast": {"kind": "vision", "format": "generic", "model": "ui"},
            "planning": {"progress_every": 4}}))
        .unwrap();
        assert_eq!(ok.validate(&d).unwrap(), AgentKind::Planned);
        assert_eq!(ok.planning.as_ref().unwrap().progress_every, 4);
        assert_eq!(ok.planning.as_ref().unwrap().failure_threshold, 3);
        assert_eq!(
            err(json!({"kind": "planned", "fast": {"modle": "x"}})).field,
            "fast.modle"
        );
        assert_eq!(
            err(json!({"kind": "planned", "fast": {"kind": "replay", "actions": []}})).field,
            "fast.kind"
        );
        assert_eq!(
            err(json!({"kind": "planned", "model": "gpt-4o"})).field,
            "model"
        );
        assert_eq!(
            err(json!({"kind": "planned", "planner": {"provider": "gemini"}})).field,
            "planner.model"
        );
        assert_eq!(
            err(json!({"kind": "planned", "planning": {"every": 2}})).field,
            "planning.every"
        );
        assert_eq!(
            err(json!({"kind": "navigator", "planner": {"model": "o3"}})).field,
            "planner"
        );
        assert_eq!(err(json!({"kind": "vision", "agents": []})).field, "agents");
        let replay = json!({"kind": "replay", "actions": [{"action": "wait", "ms": 1}]});
        assert_eq!(
            err(json!({"kind": "chain", "agents": [replay]})).field,
            "agents"
        );
        let chain = json!({"kind": "chain", "agents": [replay, replay]});
        assert_eq!(
            AgentSpec::from_json(&chain).unwrap().validate(&d).unwrap(),
            AgentKind::Chain
        );
        assert_eq!(
            err(json!({"kind": "chain", "agents": [replay, chain]})).field,
            "agents[1].kind"
        );
        assert_eq!(
            err(json!({"kind": "chain", "agents": [replay, {"kind": "replay"}]})).field,
            "agents[1].actions"
        );
        assert_eq!(
            err(json!({"kind": "chain", "agents": [replay, replay], "model": "x"})).field,
            "model"
        );
    }

    #[test]
    fn every_role_model_needs_its_key_and_a_planned_navigator_can_record() {
        let d = AgentDefaults::default();
        let spec = AgentSpec::from_json(&json!({"kind": "planned",
            "planner": {"provider": "anthropic", "model": "claude-opus-4-1"}}))
        .unwrap();
        let only_openai = |v: &str| (v == "OPENAI_API_KEY").then(|| "sk-x".to_string());
        match d.missing_key(&spec, only_openai) {
            Some(LlmError::MissingKey { provider, .. }) => {
                assert_eq!(provider, ProviderKind::Anthropic)
            }
            other => panic!("expected the planner's missing key, got {other:?}"),
        }
        let all = |_: &str| Some("k".to_string());
        assert!(d.missing_key(&spec, all).is_none());
        assert!(super::super::spec::check_record(&spec, &d).is_ok());
        let vision =
            AgentSpec::from_json(&json!({"kind": "planned", "fast": {"kind": "vision"}})).unwrap();
        assert_eq!(
            super::super::spec::check_record(&vision, &d)
                .unwrap_err()
                .field,
            "fast.kind"
        );
    }
}
