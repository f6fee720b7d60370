//! OpenAI Chat Completions (`POST {base_url}/chat/completions`). With `base_url` the
//! same client drives vLLM, SGLang, Ollama, the llama.cpp server, Groq and OpenRouter;
//! the key is optional for local servers. This module is the wire format only (URL and
//! headers here, the typed request body in `request.rs`, the typed reply in
//! `reply.rs`); `HttpChatClient` does the rest.

pub mod reply;
pub mod request;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::client::{Decoded, HttpChatClient, WireFormat, parse_value, secret_header};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest};
use request::CompletionRequest;

/// The Chat Completions wire format.
pub struct OpenAi;

/// The OpenAI-compatible client.
pub type OpenAiChat = HttpChatClient<OpenAi>;

impl WireFormat for OpenAi {
    const PROVIDER: ProviderKind = ProviderKind::Openai;
    const NEEDS_KEY: bool = false;
    type Reply = reply::Completion;
    type Body<'a> = CompletionRequest<'a>;

    fn url(cfg: &ModelConfig) -> String {
        format!("{}/chat/completions", cfg.base_url())
    }

    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(k) = key {
            let v = secret_header(Self::PROVIDER, &format!("Bearer {}", k.expose()))?;
            headers.insert("authorization", v);
        }
        Ok(headers)
    }

    fn body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> CompletionRequest<'a> {
        CompletionRequest::new(cfg, req)
    }

    fn decode(reply: reply::Completion) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

/// The request body for `req`, borrowing from it.
pub fn build_body<'a>(cfg: &'a ModelConfig, req: &'a ChatRequest) -> CompletionRequest<'a> {
    CompletionRequest::new(cfg, req)
}

/// Reads a recorded reply (`choices[0].message` and `usage`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<OpenAi>(body)
}
