//! Anthropic Messages (`POST {base_url}/v1/messages`): `tool_use` / `tool_result`
//! blocks, base64 image blocks, and `cache_control` markers on the stable prefix
//! (tools, then system) so that repeated steps of one task hit the prompt cache. This
//! module is the wire format only (URL and headers here, the typed request body in
//! `request.rs`, the typed reply in `reply.rs`); `HttpChatClient` does the rest.

pub mod reply;
pub mod request;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::client::{Decoded, HttpChatClient, WireFormat, parse_value, secret_header};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest};
use request::MessagesRequest;

pub const API_VERSION: &str = "2023-06-01";

/// The Messages wire format.
pub struct Anthropic;

/// The Anthropic client.
pub type AnthropicChat = HttpChatClient<Anthropic>;

impl WireFormat for Anthropic {
    const PROVIDER: ProviderKind = ProviderKind::Anthropic;
    const NEEDS_KEY: bool = true;
    type Reply = reply::MessageReply;
    type Body<'a> = MessagesRequest<'a>;

    fn url(cfg: &ModelConfig) -> String {
        format!("{}/v1/messages", cfg.base_url())
    }

    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError> {
        // No key: a keyless server the operator allows (`HttpChatClient::new` refuses
        // none for the hosted API).
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert("x-api-key", secret_header(Self::PROVIDER, key.expose())?);
        }
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        Ok(headers)
    }

    fn body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> MessagesRequest<'a> {
        MessagesRequest::new(cfg, req)
    }

    fn decode(reply: reply::MessageReply) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

/// The request body for `req`, borrowing from it.
pub fn build_body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> MessagesRequest<'a> {
    MessagesRequest::new(cfg, req)
}

/// Reads a recorded reply (`content` blocks, `stop_reason`, `usage`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<Anthropic>(body)
}
