//! Which model servers a task's agent may reach, and with which key.
//!
//! A server key (a model's `api_key`, `[agent.keys]`, `OPENAI_API_KEY`…) goes only to a
//! base URL it was configured for: the provider's hosted API, or a base URL the operator
//! wrote down (`[agent.navigator]`, `[agent.vision]`, `[agent.grounding]`,
//! `[agent.servers.NAME]`, `[[dashboard.models]]`, `droidpilot run --base-url`). A task
//! picks a configured server by name (`"server": "NAME"`) or names a base URL; any other
//! base URL must be listed in `[agent] allowed_base_urls`, and requests to it carry no
//! server key. Anything else is refused when the task is submitted (and again when its
//! agent is built), so a task can neither send the server's keys to a host of its
//! choosing nor use the server to read what an internal HTTP service answers.
//!
//! URLs are compared parsed (scheme, host, port, path; case of the host and a trailing
//! `/` do not matter); an `allowed_base_urls` entry also admits the paths under it.

use reqwest::Url;

use super::spec::{AgentDefaults, SpecError};
use crate::domain::task::redact_url_secrets;
use crate::llm::{ApiKey, ModelConfig, ProviderKind};

/// How a base URL stands with the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The provider's own hosted API: its key goes there.
    Hosted,
    /// A base URL the operator configured for this provider: the keys go there as
    /// configured.
    Configured,
    /// In `allowed_base_urls`: reached without a server key.
    Allowed,
    /// None of these: refused.
    Refused,
}

impl Reach {
    /// Whether requests to this URL may carry a server key.
    pub fn keyed(self) -> bool {
        matches!(self, Reach::Hosted | Reach::Configured)
    }
}

/// `url` as compared: parsed, without a trailing `/`. `None` when it does not parse.
fn normal(url: &str) -> Option<Url> {
    let mut u = Url::parse(url.trim()).ok()?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return None;
    }
    let path = u.path().trim_end_matches('/').to_string();
    u.set_path(&path);
    Some(u)
}

/// Whether two base URLs name the same endpoint.
pub fn same_url(a: &str, b: &str) -> bool {
    match (normal(a), normal(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Whether `url` is `entry` or a path under it (same scheme, host and port; no
/// credentials or query of its own).
pub fn within(url: &str, entry: &str) -> bool {
    let (Some(u), Some(e)) = (normal(url), normal(entry)) else {
        return false;
    };
    if u.origin() != e.origin() || !u.username().is_empty() || u.password().is_some() {
        return false;
    }
    if u.query().is_some() && u.query() != e.query() {
        return false;
    }
    let (up, ep) = (u.path(), e.path().trim_end_matches('/'));
    up == ep || up.starts_with(&format!("{ep}/")) || ep.is_empty()
}

/// Checks one `allowed_base_urls` entry (configuration load).
pub fn check_allowed_entry(entry: &str) -> Result<(), String> {
    if normal(entry).is_none() {
        return Err(format!(
            "agent.allowed_base_urls: `{}` is not an http(s) URL",
            redact_url_secrets(entry)
        ));
    }
    Ok(())
}

/// Every `base_url` in an agent object (nested ones included), for each provider: what a
/// command-line user wrote (`droidpilot run`, `droidpilot eval --agent`) is the
/// operator's own configuration.
pub fn urls_in(agent: &serde_json::Value) -> Vec<(ProviderKind, String)> {
    let mut out = Vec::new();
    let mut stack = vec![agent];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(u) = m.get("base_url").and_then(|u| u.as_str()) {
                    for p in [
                        ProviderKind::Openai,
                        ProviderKind::Anthropic,
                        ProviderKind::Gemini,
                    ] {
                        out.push((p, u.to_string()));
                    }
                }
                stack.extend(m.values());
            }
            serde_json::Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    out
}

impl AgentDefaults {
    /// Every model endpoint the operator configured, with its provider.
    fn configured(&self) -> impl Iterator<Item = &ModelConfig> {
        [&self.navigator, &self.vision]
            .into_iter()
            .chain(self.grounding.iter())
            .chain(self.servers.values())
    }

    /// How `url` stands for a model of `provider`.
    pub fn reach(&self, provider: ProviderKind, url: &str) -> Reach {
        if same_url(url, provider.default_base_url()) {
            return Reach::Hosted;
        }
        let configured = self
            .configured()
            .any(|c| c.provider == provider && same_url(c.base_url(), url))
            || self
                .operator_urls
                .iter()
                .any(|(p, u)| *p == provider && same_url(u, url));
        if configured {
            Reach::Configured
        } else if self.allowed_base_urls.iter().any(|a| within(url, a)) {
            Reach::Allowed
        } else {
            Reach::Refused
        }
    }

    /// The key a configured endpoint at `cfg`'s base URL carries in its own table.
    pub(crate) fn endpoint_key(&self, cfg: &ModelConfig) -> Option<ApiKey> {
        if cfg.api_key.is_some() {
            return cfg.api_key.clone();
        }
        self.configured()
            .find(|c| c.provider == cfg.provider && same_url(c.base_url(), cfg.base_url()))
            .and_then(|c| c.api_key.clone())
    }

    /// Refuses a model configuration whose base URL the task may not reach; `field` is
    /// the spec's field that chose it.
    pub(crate) fn check_reach(&self, cfg: &ModelConfig) -> Result<(), SpecError> {
        if self.reach(cfg.provider, cfg.base_url()) != Reach::Refused {
            return Ok(());
        }
        Err(SpecError {
            specific_hint: Some(self.reach_hint()),
            ..SpecError::new(
                "base_url",
                format!(
                    "`{}` is not a model server this server is configured for ({})",
                    redact_url_secrets(cfg.base_url()),
                    cfg.provider.id()
                ),
            )
        })
    }

    fn reach_hint(&self) -> String {
        let names = self.server_names();
        let pick = if names.is_empty() {
            "leave base_url out to use the configured default".to_string()
        } else {
            format!(
                "pick a configured model server with \"server\" ({names}), or leave base_url out for the default"
            )
        };
        format!(
            "A task cannot send the server's model keys to a URL of its choosing: {pick}. To use this URL the operator adds it to [agent] allowed_base_urls (requests to it carry no server key) or configures it as [agent.servers.NAME]."
        )
    }

    /// The names of `[agent.servers]`, comma-separated.
    pub(crate) fn server_names(&self) -> String {
        self.servers.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The configured server `name`, or the error naming `field`.
    pub(crate) fn server(&self, name: &str) -> Result<&ModelConfig, SpecError> {
        self.servers.get(name).ok_or_else(|| {
            let known = self.server_names();
            let listed = if known.is_empty() {
                "none is configured".to_string()
            } else {
                format!("configured: {known}")
            };
            SpecError {
                specific_hint: Some(
                    "Name a model server from [agent.servers] in the server's configuration (GET /v1/presets lists them).".into(),
                ),
                ..SpecError::new("server", format!("unknown model server `{name}`; {listed}"))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_compare_parsed_and_allowed_entries_admit_their_paths() {
        assert!(same_url("http://GPU:8000/v1/", "http://gpu:8000/v1"));
        assert!(same_url(
            "https://api.openai.com/v1",
            "https://api.openai.com:443/v1"
        ));
        assert!(!same_url("http://gpu:8000/v1", "http://gpu:8001/v1"));
        assert!(within("http://gpu:8000/v1", "http://gpu:8000"));
        assert!(within("http://gpu:8000/v1", "http://gpu:8000/v1/"));
        assert!(!within("http://gpu:8000/v10", "http://gpu:8000/v1"));
        assert!(!within(
            "http://gpu:8000.evil.example/v1",
            "http://gpu:8000"
        ));
        assert!(!within(
            "http://gpu:8000@evil.example/v1",
            "http://gpu:8000"
        ));
        assert!(!within("https://gpu:8000/v1", "http://gpu:8000"));
        assert!(!within("http://x:y@gpu:8000/v1", "http://gpu:8000"));
    }

    #[test]
    fn keys_reach_only_the_urls_they_were_configured_for() {
        let mut d = AgentDefaults {
            allowed_base_urls: vec!["http://lab:9000".into()],
            ..AgentDefaults::default()
        };
        let openai = ProviderKind::Openai;
        assert_eq!(d.reach(openai, "https://api.openai.com/v1/"), Reach::Hosted);
        // The default vision server is the operator's configuration.
        assert_eq!(
            d.reach(openai, "http://127.0.0.1:8000/v1"),
            Reach::Configured
        );
        assert_eq!(d.reach(openai, "http://lab:9000/v1"), Reach::Allowed);
        assert_eq!(
            d.reach(openai, "http://attacker.example/v1"),
            Reach::Refused
        );
        // Another provider's hosted API is not OpenAI's.
        assert_eq!(d.reach(openai, "https://api.anthropic.com"), Reach::Refused);
        assert!(!Reach::Allowed.keyed() && Reach::Configured.keyed());
        // What a command-line user typed counts as configured.
        let agent = serde_json::json!({"kind": "planned", "fast": {"base_url": "http://gpu:1/v1"}});
        d.operator_urls = urls_in(&agent);
        assert_eq!(d.reach(openai, "http://gpu:1/v1"), Reach::Configured);
        assert_eq!(
            d.reach(ProviderKind::Gemini, "http://gpu:1/v1"),
            Reach::Configured
        );
    }
}
