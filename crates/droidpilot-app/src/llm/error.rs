//! `LlmError`: why a model call failed, with a stable `code()` and a `hint()` a person
//! can act on. Messages never contain an API key: provider error bodies are passed
//! through `redact` before they are stored here.

use std::time::Duration;

use super::config::ProviderKind;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{status} from {provider}: {message}")]
    Unauthorized {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    #[error("no API key for {provider}: set {env_var}")]
    MissingKey {
        provider: ProviderKind,
        env_var: &'static str,
    },
    #[error("{provider} rate limit (429) after {attempts} attempts: {message}")]
    RateLimited {
        provider: ProviderKind,
        attempts: u32,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("{provider} server error {status} after {attempts} attempts: {message}")]
    Server {
        provider: ProviderKind,
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error("{provider} refused the request ({status}): {message}")]
    BadRequest {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    /// The URL is named by the hint, once.
    #[error("model is not responding: no reply within {}s after {attempts} attempts", after.as_secs_f32())]
    Timeout {
        url: String,
        after: Duration,
        attempts: u32,
    },
    /// The URL is named by the hint, once.
    #[error("cannot reach the model server: {message}")]
    Unreachable { url: String, message: String },
    #[error("{provider} sent a reply droidpilot cannot read: {message}")]
    Malformed {
        provider: ProviderKind,
        message: String,
    },
    #[error("invalid image: {reason}")]
    InvalidImage { reason: String },
    #[error("invalid model configuration: {message}")]
    Config { message: String },
}

impl LlmError {
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Unauthorized { .. } => "llm_unauthorized",
            LlmError::MissingKey { .. } => "llm_missing_key",
            LlmError::RateLimited { .. } => "llm_rate_limited",
            LlmError::Server { .. } => "llm_server_error",
            LlmError::BadRequest { .. } => "llm_bad_request",
            LlmError::Timeout { .. } => "llm_timeout",
            LlmError::Unreachable { .. } => "llm_unreachable",
            LlmError::Malformed { .. } => "llm_malformed_reply",
            LlmError::InvalidImage { .. } => "llm_invalid_image",
            LlmError::Config { .. } => "llm_config",
        }
    }

    pub fn hint(&self) -> String {
        match self {
            LlmError::Unauthorized {
                provider, status, ..
            } => format!(
                "{status} from {}: check {}",
                provider.display_name(),
                provider.key_env()
            ),
            LlmError::MissingKey { env_var, .. } => {
                format!("Export {env_var}, or set `api_key` in the model configuration.")
            }
            LlmError::RateLimited { retry_after, .. } => match retry_after {
                Some(d) => format!(
                    "The provider asked to wait {}s. Lower concurrency or raise your rate limit.",
                    d.as_secs()
                ),
                None => "Lower concurrency, or raise your rate limit with the provider.".into(),
            },
            LlmError::Server { .. } => {
                "The provider is failing; retry later or switch `model`/`provider`.".into()
            }
            LlmError::BadRequest { .. } => {
                "Check `model` and `base_url`; the provider's message says which field it refused."
                    .into()
            }
            LlmError::Timeout { url, .. } | LlmError::Unreachable { url, .. } => format!(
                "Model is not responding. Check the server at {url}, or run `droidpilot doctor`"
            ),
            LlmError::Malformed { .. } => {
                "The server at `base_url` may not speak this provider's API; check `provider` and `base_url`."
                    .into()
            }
            LlmError::InvalidImage { .. } => "Send screenshots as PNG or JPEG bytes.".into(),
            LlmError::Config { .. } => "Fix the model configuration field named in the message.".into(),
        }
    }

    /// Whether the caller may try again later (the HTTP layer has already retried).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout { .. }
                | LlmError::Unreachable { .. }
        )
    }
}

/// Removes the key itself and anything shaped like a provider key from text that came
/// back from a provider (OpenAI echoes a masked key in its 401 message).
pub fn redact(text: &str, key: Option<&str>) -> String {
    let mut out = match key {
        Some(k) if k.len() >= 4 => text.replace(k, "[redacted]"),
        _ => text.to_string(),
    };
    for prefix in ["sk-", "AIza"] {
        let mut from = 0;
        while let Some(pos) = out[from..].find(prefix) {
            let start = from + pos;
            let end = out[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*')))
                .map_or(out.len(), |e| start + e);
            if end - start > prefix.len() + 3 {
                out.replace_range(start..end, "[redacted]");
                from = start + "[redacted]".len();
            } else {
                from = end;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_match_what_people_are_told() {
        let e = LlmError::Unauthorized {
            provider: ProviderKind::Openai,
            status: 401,
            message: "bad key".into(),
        };
        assert_eq!(e.hint(), "401 from OpenAI: check OPENAI_API_KEY");
        let t = LlmError::Timeout {
            url: "http://gpu:8000/v1".into(),
            after: Duration::from_secs(30),
            attempts: 3,
        };
        assert_eq!(
            t.hint(),
            "Model is not responding. Check the server at http://gpu:8000/v1, or run `droidpilot doctor`"
        );
    }

    #[test]
    fn redact_removes_keys_and_key_shapes() {
        let s = redact(
            "Incorrect API key provided: sk-proj-abc1****wxyz. Key SECRET123 and AIzaSyD-xyz_123",
            Some("SECRET123"),
        );
        assert!(!s.contains("abc1"), "{s}");
        assert!(!s.contains("SECRET123"), "{s}");
        assert!(!s.contains("AIzaSy"), "{s}");
        assert!(s.starts_with("Incorrect API key provided: [redacted]."));
    }
}
