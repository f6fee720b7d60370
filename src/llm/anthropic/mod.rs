//! Anthropic Messages (`POST {base_url}/v1/messages`): `tool_use` / `tool_result`
//! blocks, base64 image blocks, and `cache_control` markers on the stable prefix
//! (tools, then system) so that repeated steps of one task hit the prompt cache. This
//! module is the wire format only: the request body here, the typed reply in
//! `reply.rs`; `HttpChatClient` does the rest.

pub mod reply;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::client::{
    Decoded, HttpChatClient, WireFormat, parse_value, required_key, secret_header,
};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest, Part, Role, ToolChoice};

pub const API_VERSION: &str = "2023-06-01";

/// The Messages wire format.
pub struct Anthropic;

/// The Anthropic client.
pub type AnthropicChat = HttpChatClient<Anthropic>;

impl WireFormat for Anthropic {
    const PROVIDER: ProviderKind = ProviderKind::Anthropic;
    const NEEDS_KEY: bool = true;
    type Reply = reply::MessageReply;

    fn url(cfg: &ModelConfig) -> String {
        format!("{}/v1/messages", cfg.base_url())
    }

    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError> {
        let key = required_key(Self::PROVIDER, key)?;
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", secret_header(Self::PROVIDER, key.expose())?);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        Ok(headers)
    }

    fn body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
        build_body(cfg, req)
    }

    fn decode(reply: reply::MessageReply) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

pub fn build_body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"type": "text", "text": t}),
                    Part::Image(img) => json!({"type": "image", "source": {
                        "type": "base64", "media_type": img.mime().as_str(), "data": img.base64()}}),
                    Part::ToolCall(c) => json!({"type": "tool_use", "id": c.id, "name": c.name,
                        "input": c.arguments().unwrap_or_else(|_| json!({}))}),
                    Part::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } => json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
                })
                .collect();
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect();
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": req.max_tokens.unwrap_or(cfg.max_tokens),
        "messages": messages,
    });
    if let Some(s) = &req.system {
        // The system prompt is the end of the stable prefix (tools come before it in
        // Anthropic's cache order), so one marker here caches tools + system.
        body["system"] =
            json!([{"type": "text", "text": s, "cache_control": {"type": "ephemeral"}}]);
    }
    if let Some(t) = req.temperature.or(cfg.temperature) {
        body["temperature"] = json!(t);
    }
    if !req.tools.is_empty() {
        let n = req.tools.len();
        body["tools"] = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut v = json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
                if i + 1 == n && req.system.is_none() {
                    v["cache_control"] = json!({"type": "ephemeral"});
                }
                v
            })
            .collect();
        body["tool_choice"] = json!({"type": match req.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "any",
        }});
    }
    body
}

/// Reads a recorded reply (`content` blocks, `stop_reason`, `usage`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<Anthropic>(body)
}
