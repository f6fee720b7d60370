//! The front ends' sections of the configuration: `[dashboard]` and `[mcp_server]`. They
//! live here, beside the rest of the file's schema, so the configuration is a leaf the
//! application builds from and no layer below the front ends imports one of them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::task::redact_url_secrets;
use crate::llm::{ModelConfig, ProviderKind};

/// `[dashboard]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardConfig {
    /// Live screenshots (scaled JPEG): each phone is captured at most once per interval,
    /// however many viewers poll it.
    pub frame_interval_ms: u64,
    /// Named models the submit form offers beside the configured defaults
    /// (`[[dashboard.models]]`: name, provider, model, optional base_url).
    pub models: Vec<PresetModel>,
    /// How long a phone taken by hand in the dashboard stays held without an action or
    /// the open page's keep-alive; then it is released.
    pub control_ttl_secs: u64,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        Self {
            frame_interval_ms: 500,
            models: Vec::new(),
            control_ttl_secs: 60,
        }
    }
}

/// A model the submit form offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PresetModel {
    /// What the form shows.
    pub name: String,
    pub provider: ProviderKind,
    pub model: String,
    /// Shown with credentials and query values masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A model server from `[agent.servers]`: the form submits `"server": NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Whether the server can use it as configured: chosen in the configuration or given
    /// a key. The defaults' example models are not until then; `[[dashboard.models]]`
    /// entries are, by being listed.
    #[serde(default = "listed")]
    pub configured: bool,
}

fn listed() -> bool {
    true
}

impl PresetModel {
    pub fn of(name: &str, m: &ModelConfig, configured: bool) -> Self {
        Self {
            name: name.to_string(),
            provider: m.provider,
            model: m.model.clone(),
            base_url: m.base_url.clone(),
            server: None,
            configured,
        }
    }

    /// As the form shows it: a `base_url`'s credentials and query values masked.
    pub fn shown(mut self) -> Self {
        self.base_url = self.base_url.as_deref().map(redact_url_secrets);
        self
    }
}

/// `[mcp_server]` in the configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpServerConfig {
    /// How long a session's lease on a device lasts without use; each call renews it.
    pub lease_ttl_secs: u64,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            lease_ttl_secs: 300,
        }
    }
}
