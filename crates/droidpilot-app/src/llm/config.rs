//! Model configuration as the server config embeds it: `ProviderKind`, `ModelConfig`,
//! the `ApiKey` that never prints, and the `PriceTable` that turns usage into dollars.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::LlmError;
use super::types::Usage;
use crate::domain::RetryPolicy;

// A model API. The name in configuration (`id`) and the list of names (`VARIANTS`, from
// `strum::VariantNames`) are derived; `Display` is the product name. (A doc comment would
// enter the OpenAPI.)
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
    strum::VariantNames,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, and every server that speaks it (vLLM, SGLang, Ollama,
    /// llama.cpp, Groq, OpenRouter) through `base_url`.
    Openai,
    Anthropic,
    Gemini,
}

impl ProviderKind {
    /// The name in configuration and specs (`openai`, `anthropic`, `gemini`).
    pub fn id(self) -> &'static str {
        self.into()
    }
    pub fn display_name(self) -> &'static str {
        match self {
            ProviderKind::Openai => "OpenAI",
            ProviderKind::Anthropic => "Anthropic",
            ProviderKind::Gemini => "Gemini",
        }
    }
    pub fn key_env(self) -> &'static str {
        match self {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
        }
    }
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com",
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.display_name())
    }
}

/// An API key. `Debug` and `Display` print `***`; serializing writes nothing readable,
/// so a config dump or a trajectory cannot leak it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    /// The secret itself; call only where it goes into a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl Serialize for ApiKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

fn default_timeout_secs() -> u64 {
    60
}
fn default_max_retries() -> u32 {
    3
}
fn default_max_tokens() -> u32 {
    1024
}
fn default_backoff_ms() -> u64 {
    500
}
fn default_max_retry_after_secs() -> u64 {
    60
}

/// One model endpoint. Every field but `provider` and `model` has a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub provider: ProviderKind,
    pub model: String,
    /// The API root: `http://gpu:8000/v1` for vLLM, `http://localhost:11434/v1` for Ollama.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Taken from the provider's usual variable (`OPENAI_API_KEY`…) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<ApiKey>,
    /// Per HTTP attempt.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Retries after the first attempt on 429, 5xx, timeouts and refused connections.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// First backoff delay; doubles per retry (with jitter) unless `Retry-After` says otherwise.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// A `Retry-After` longer than this fails the call instead of stalling a task.
    #[serde(default = "default_max_retry_after_secs")]
    pub max_retry_after_secs: u64,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Whether the model reads images (navigator adds a screenshot when true).
    #[serde(default)]
    pub vision: bool,
    /// How screenshots are encoded for this model (scaled JPEG by default).
    #[serde(default)]
    pub screenshot: super::image::ScreenshotEncoding,
}

impl ModelConfig {
    /// This endpoint with a caller's choices laid over it. Another provider than this
    /// one's drops its `base_url` and `api_key`: they belong to the old provider (an
    /// OpenAI key is never sent to Anthropic); another base URL drops the `api_key` too
    /// (a key goes only to the URL it was configured for).
    pub fn overlay(
        self,
        provider: Option<ProviderKind>,
        model: Option<&str>,
        base_url: Option<&str>,
    ) -> ModelConfig {
        let mut c = match provider {
            Some(p) if p != self.provider => ModelConfig {
                provider: p,
                base_url: None,
                api_key: None,
                ..self
            },
            _ => self,
        };
        if let Some(m) = model {
            c.model = m.to_string();
        }
        if let Some(u) = base_url {
            if u.trim_end_matches('/') != c.base_url() {
                c.api_key = None;
            }
            c.base_url = Some(u.to_string());
        }
        c
    }

    pub fn new(provider: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key: None,
            timeout_secs: default_timeout_secs(),
            max_retries: default_max_retries(),
            backoff_ms: default_backoff_ms(),
            max_retry_after_secs: default_max_retry_after_secs(),
            max_tokens: default_max_tokens(),
            temperature: None,
            vision: false,
            screenshot: Default::default(),
        }
    }

    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.provider.default_base_url())
            .trim_end_matches('/')
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }

    /// The retry schedule of one call: doubling from `backoff_ms` (with jitter), each
    /// delay capped at 30 s, `max_retries` retries.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy::new(
            Duration::from_millis(self.backoff_ms),
            Duration::from_secs(30),
            self.max_retries,
        )
        .with_jitter()
    }

    /// Whether `base_url` points at the provider's own hosted API (not a local server).
    pub fn is_hosted(&self) -> bool {
        self.base_url() == self.provider.default_base_url()
    }

    /// The key from the config, else from the environment. Local OpenAI-compatible
    /// servers (a custom `base_url`) need none.
    pub fn resolve_key(&self) -> Result<Option<ApiKey>, LlmError> {
        self.resolve_key_with(|v| std::env::var(v).ok())
    }

    pub fn resolve_key_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ApiKey>, LlmError> {
        if let Some(k) = &self.api_key {
            return Ok(Some(k.clone()));
        }
        let env_var = self.provider.key_env();
        match env(env_var).filter(|s| !s.trim().is_empty()) {
            Some(k) => Ok(Some(ApiKey(k.trim().to_string()))),
            None if self.provider == ProviderKind::Openai && !self.is_hosted() => Ok(None),
            None => Err(LlmError::MissingKey {
                provider: self.provider,
                env_var,
            }),
        }
    }

    pub fn validate(&self) -> Result<(), LlmError> {
        if self.model.trim().is_empty() {
            return Err(LlmError::Config {
                message: "`model` must not be empty".into(),
            });
        }
        let url = self.base_url();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(LlmError::Config {
                message: format!("`base_url` must start with http:// or https://, got `{url}`"),
            });
        }
        if let Some(p) = self.screenshot.problem() {
            return Err(LlmError::Config {
                message: format!("screenshot: {p}"),
            });
        }
        Ok(())
    }
}

/// USD per million tokens for one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelPrice {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Price of cache-hit input tokens; the input price when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
}

/// Prices by model name, as configured (`[prices."gpt-4o"] input_per_mtok = 2.5 …`).
/// A dated model (`gpt-4o-2024-08-06`) uses the longest configured name it starts with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable(pub BTreeMap<String, ModelPrice>);

impl PriceTable {
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.0.get(model).or_else(|| {
            self.0
                .iter()
                .filter(|(k, _)| model.starts_with(k.as_str()))
                .max_by_key(|(k, _)| k.len())
                .map(|(_, p)| p)
        })
    }

    /// USD for one call; `None` when the model has no configured price.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let p = self.price(model)?;
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let cached_price = p.cached_input_per_mtok.unwrap_or(p.input_per_mtok);
        Some(
            (fresh as f64 * p.input_per_mtok
                + cached as f64 * cached_price
                + usage.output_tokens as f64 * p.output_per_mtok)
                / 1_000_000.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let mut c = ModelConfig::new(ProviderKind::Openai, "gpt-4o");
        c.api_key = Some(ApiKey::new("sk-live-secret"));
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("secret"), "{dbg}");
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("secret"), "{json}");
    }

    #[test]
    fn key_resolution_follows_provider_and_base_url() {
        let none = |_: &str| None;
        let hosted = ModelConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let e = hosted.resolve_key_with(none).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no API key for Anthropic: set ANTHROPIC_API_KEY"
        );
        let mut local = ModelConfig::new(ProviderKind::Openai, "MAI-UI-8B");
        local.base_url = Some("http://gpu:8000/v1/".into());
        assert_eq!(local.resolve_key_with(none).unwrap(), None);
        assert_eq!(local.base_url(), "http://gpu:8000/v1");
        let g = ModelConfig::new(ProviderKind::Gemini, "gemini-2.5-flash");
        let k = g
            .resolve_key_with(|v| (v == "GEMINI_API_KEY").then(|| "k1".to_string()))
            .unwrap();
        assert_eq!(k.unwrap().expose(), "k1");
    }

    #[test]
    fn config_deserializes_with_defaults_and_validates_url() {
        let c: ModelConfig =
            serde_json::from_str(r#"{"provider":"gemini","model":"gemini-2.5-flash"}"#).unwrap();
        assert_eq!(c.timeout_secs, 60);
        assert_eq!(c.max_retries, 3);
        let mut bad = c.clone();
        bad.base_url = Some("gpu:8000".into());
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("`base_url`")
        );
    }

    #[test]
    fn cost_uses_prefix_match_and_cached_price() {
        let t: PriceTable = serde_json::from_str(
            r#"{"gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10.0, "cached_input_per_mtok": 1.25},
                "gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}"#,
        )
        .unwrap();
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 400_000,
        };
        let c = t.cost("gpt-4o-2024-08-06", &u).unwrap();
        assert!(
            (c - (0.6 * 2.5 + 0.4 * 1.25 + 0.1 * 10.0)).abs() < 1e-9,
            "{c}"
        );
        let m = t.cost("gpt-4o-mini-2024-07-18", &u).unwrap();
        assert!((m - (0.15 + 0.06)).abs() < 1e-9, "{m}");
        assert_eq!(t.cost("llama3", &u), None);
    }
}
