//! Gemini `generateContent` (`POST {base_url}/v1beta/models/{model}:generateContent`):
//! `functionCall` / `functionResponse` parts, `inline_data` images, the key in the
//! `x-goog-api-key` header (never in the URL, where it would end up in logs). This
//! module is the wire format only (URL and headers here, the typed request body in
//! `request.rs`, the typed reply in `reply.rs`); `HttpChatClient` does the rest.
//!
//! Tool schemas go in `parametersJsonSchema`, which takes full JSON Schema; the older
//! `parameters` field takes an OpenAPI subset that rejects schemars' `["integer","null"]`.

pub mod reply;
pub mod request;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::client::{Decoded, HttpChatClient, WireFormat, parse_value, secret_header};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest};
use request::GenerateRequest;

/// The generateContent wire format.
pub struct Gemini;

/// The Gemini client.
pub type GeminiChat = HttpChatClient<Gemini>;

impl WireFormat for Gemini {
    const PROVIDER: ProviderKind = ProviderKind::Gemini;
    const NEEDS_KEY: bool = true;
    type Reply = reply::GenerateReply;
    type Body<'a> = GenerateRequest<'a>;

    fn url(cfg: &ModelConfig) -> String {
        format!(
            "{}/v1beta/models/{}:generateContent",
            cfg.base_url(),
            cfg.model.trim_start_matches("models/")
        )
    }

    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError> {
        // No key: a keyless server the operator allows (`HttpChatClient::new` refuses
        // none for the hosted API).
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert(
                "x-goog-api-key",
                secret_header(Self::PROVIDER, key.expose())?,
            );
        }
        Ok(headers)
    }

    fn body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> GenerateRequest<'a> {
        GenerateRequest::new(cfg, req)
    }

    fn decode(reply: reply::GenerateReply) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

/// The request body for `req`, borrowing from it.
pub fn build_body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> GenerateRequest<'a> {
    GenerateRequest::new(cfg, req)
}

/// Reads a recorded reply (`candidates[0]`, `usageMetadata`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<Gemini>(body)
}
