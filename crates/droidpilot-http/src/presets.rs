//! The dashboard's section of the configuration (`[dashboard]`) and `GET /v1/presets`:
//! what the submit form offers (agent kinds, named models, default limits), read from the
//! configuration. Never a key: models are shown by provider and name, and a `base_url`
//! with credentials or query values is masked.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::extract::Json;
use super::state::AppState;
use crate::agent::spec::AgentKind;
pub use crate::config::frontends::{DashboardConfig, PresetModel};
use crate::domain::task::{DEFAULT_MAX_STEPS, DEFAULT_TIMEOUT_SECONDS};

/// What the submit form offers.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Presets {
    /// Every agent kind a task may name.
    pub agent_kinds: Vec<AgentKind>,
    /// The configured navigator and vision models first, then `[agent.servers]`, then
    /// `[[dashboard.models]]`.
    pub models: Vec<PresetModel>,
    pub defaults: PresetDefaults,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PresetDefaults {
    /// The agent a task gets when it names none: `{"kind", "provider", "model"}`.
    #[schema(value_type = Object)]
    pub agent: Value,
    /// Whether that agent's model is configured (chosen or given a key). On a fresh
    /// install it is not: the form then starts on `replay`, which needs no model.
    pub agent_configured: bool,
    pub max_steps: u32,
    pub timeout_seconds: u64,
}

/// What the dashboard's submit form offers: agent kinds, models and default limits, from
/// the configuration (never keys).
#[utoipa::path(get, path = "/v1/presets", tag = "dashboard", responses((status = 200, body = Presets)))]
pub async fn presets(State(s): State<AppState>) -> Json<Presets> {
    let agent = &s.config.agent;
    let default_model = agent.model_for(agent.kind);
    let env = |v: &str| std::env::var(v).ok();
    let configured = |kind| s.config.model_configured(kind, env);
    let mut models = vec![
        PresetModel::of(
            "navigator (default)",
            &agent.navigator,
            configured(AgentKind::Navigator),
        ),
        PresetModel::of(
            "vision (default)",
            &agent.vision,
            configured(AgentKind::Vision),
        ),
    ];
    models.extend(agent.servers.iter().map(|(name, m)| PresetModel {
        server: Some(name.clone()),
        ..PresetModel::of(name, m, true)
    }));
    models.extend(s.config.dashboard.models.iter().cloned());
    Json(Presets {
        agent_kinds: <AgentKind as strum::VariantArray>::VARIANTS.to_vec(),
        models: models.into_iter().map(PresetModel::shown).collect(),
        defaults: PresetDefaults {
            agent: json!({"kind": agent.kind, "provider": default_model.provider, "model": default_model.model}),
            agent_configured: configured(agent.kind),
            max_steps: DEFAULT_MAX_STEPS,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        },
    })
}
