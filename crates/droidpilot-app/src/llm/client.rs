//! `HttpChatClient<W>`: the one chat client. It owns what every provider shares (the
//! configuration, the key, the HTTP transport with its timeouts and retries, decoding
//! the reply and its errors, and the reply-assembly tail: latency, attempts, the model
//! name); a `WireFormat` supplies only what differs (URL, headers, the typed request
//! body, which the client serialises once, and the typed reply). `OpenAiChat`,
//! `AnthropicChat` and `GeminiChat` are this client over each provider's format.

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ChatModel;
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::{LlmError, redact};
use super::http::{HttpClient, status_text};
use super::types::{ChatReply, ChatRequest, StopReason, ToolCall, Usage};

/// One provider's side of a chat call.
pub trait WireFormat: Send + Sync + 'static {
    const PROVIDER: ProviderKind;
    /// Whether a call without a key is refused before it is made (local
    /// OpenAI-compatible servers need none).
    const NEEDS_KEY: bool;
    /// The 2xx reply body, as serde reads it.
    type Reply: DeserializeOwned;
    /// The request body, as serde writes it; it borrows from the configuration and the
    /// `ChatRequest` (a screenshot is base64-encoded only while it is serialised).
    type Body<'a>: Serialize;

    /// The endpoint for `cfg` (its base URL and model).
    fn url(cfg: &ModelConfig) -> String;
    /// Authentication and version headers.
    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError>;
    /// The request body exactly as sent.
    fn body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> Self::Body<'a>;
    /// The provider-neutral content of a reply.
    fn decode(reply: Self::Reply) -> Result<Decoded, LlmError>;
}

/// What a provider's reply says, before the client adds what it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub text: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    /// The model that answered, when the provider names it.
    pub model: Option<String>,
}

impl Decoded {
    /// The reply as agents see it; `model` stands in when the provider named none.
    pub fn into_reply(self, model: &str, latency: std::time::Duration, attempts: u32) -> ChatReply {
        ChatReply {
            text: self.text,
            reasoning: self.reasoning.filter(|r| !r.is_empty()),
            tool_calls: self.tool_calls,
            stop_reason: self.stop_reason,
            usage: self.usage,
            model: self
                .model
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| model.to_string()),
            latency,
            ttft: None,
            attempts,
        }
    }
}

/// A chat model over HTTP in the wire format `W`.
pub struct HttpChatClient<W: WireFormat> {
    cfg: ModelConfig,
    key: Option<ApiKey>,
    http: HttpClient,
    url: String,
    _wire: std::marker::PhantomData<W>,
}

impl<W: WireFormat> HttpChatClient<W> {
    /// Refuses a missing key (where `W` needs one) and an invalid configuration.
    pub fn new(cfg: ModelConfig, key: Option<ApiKey>) -> Result<Self, LlmError> {
        // Only the hosted API insists on a key: a keyless server elsewhere is one the
        // operator allows (`agent::servers`), reached without the server's keys.
        if W::NEEDS_KEY && key.is_none() && cfg.is_hosted() {
            return Err(LlmError::MissingKey {
                provider: W::PROVIDER,
                env_var: W::PROVIDER.key_env(),
            });
        }
        cfg.validate()?;
        let http = HttpClient::new(&cfg)?;
        let url = W::url(&cfg);
        Ok(Self {
            cfg,
            key,
            http,
            url,
            _wire: std::marker::PhantomData,
        })
    }

    /// The request body exactly as sent.
    pub fn build_body<'a>(&'a self, req: &'a ChatRequest) -> W::Body<'a> {
        W::body(&self.cfg, req)
    }
}

#[async_trait]
impl<W: WireFormat> ChatModel for HttpChatClient<W> {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = serde_json::to_vec(&self.build_body(req)).map_err(|e| LlmError::Config {
            message: format!("request body does not serialize: {e}"),
        })?;
        let headers = W::headers(self.key.as_ref())?;
        super::debug_log::request(W::PROVIDER, &self.url, &body, self.key.as_ref());
        let r = self
            .http
            .post_json(&self.url, headers, body, self.key.as_ref())
            .await?;
        let ms = r.latency.as_millis();
        super::debug_log::reply(W::PROVIDER, &r.text, ms, self.key.as_ref());
        let reply = parse_text::<W>(&r.text, self.key.as_ref())?;
        Ok(W::decode(reply)?.into_reply(&self.cfg.model, r.latency, r.attempts))
    }
}

/// Reads a 2xx body as `W`'s reply: text that is not JSON and JSON of another shape are
/// told apart, and neither message can carry the key.
pub fn parse_text<W: WireFormat>(text: &str, key: Option<&ApiKey>) -> Result<W::Reply, LlmError> {
    serde_json::from_str(text).map_err(|e| {
        // serde's message quotes the values it met: cleaned and cut like any text a
        // model server sends back; the body itself is never shown.
        let data = e.is_data();
        let e = status_text(&redact(&e.to_string(), key.map(ApiKey::expose)));
        let message = if data {
            format!("the reply is not in the expected shape: {e}")
        } else {
            format!("body is not JSON ({e}; {} bytes, not shown)", text.len())
        };
        malformed(W::PROVIDER, message)
    })
}

/// Decodes an already parsed body (benches and tests replay recorded replies this way).
pub fn parse_value<W: WireFormat>(body: &Value) -> Result<ChatReply, LlmError> {
    let reply = W::Reply::deserialize(body).map_err(|e| {
        malformed(
            W::PROVIDER,
            format!("the reply is not in the expected shape: {e}"),
        )
    })?;
    Ok(W::decode(reply)?.into_reply("", Default::default(), 1))
}

pub fn malformed(provider: ProviderKind, message: impl Into<String>) -> LlmError {
    LlmError::Malformed {
        provider,
        message: message.into(),
    }
}

/// A header that carries a key: marked sensitive, so no trace prints it.
pub fn secret_header(provider: ProviderKind, value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| LlmError::Config {
        message: format!(
            "the {} API key contains characters not allowed in a header",
            provider.display_name()
        ),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::anthropic::{Anthropic, AnthropicChat};
    use crate::llm::openai::OpenAi;

    #[test]
    fn bodies_that_are_not_json_and_json_of_another_shape_are_told_apart() {
        let key = ApiKey::new("sk-secret-key-123");
        let e = parse_text::<OpenAi>("oops sk-secret-key-123", Some(&key)).unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = parse_text::<OpenAi>(r#"{"choices": 3}"#, None).unwrap_err();
        assert!(e.to_string().contains("expected shape"), "{e}");
        assert_eq!(e.code(), "llm_malformed_reply");
    }

    #[test]
    fn keys_go_in_sensitive_headers_and_are_required_where_needed() {
        let h = OpenAi::headers(Some(&ApiKey::new("k1"))).unwrap();
        assert!(h["authorization"].is_sensitive());
        assert!(OpenAi::headers(None).unwrap().is_empty());
        let h = Anthropic::headers(Some(&ApiKey::new("k2"))).unwrap();
        assert!(h["x-api-key"].is_sensitive());
        let cfg = ModelConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let e = AnthropicChat::new(cfg, None).err().unwrap();
        assert_eq!(e.code(), "llm_missing_key");
        let e = secret_header(ProviderKind::Gemini, "bad\nkey").unwrap_err();
        assert!(e.to_string().contains("Gemini API key"), "{e}");
    }
}
