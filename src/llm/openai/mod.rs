//! OpenAI Chat Completions (`POST {base_url}/chat/completions`). With `base_url` the
//! same client drives vLLM, SGLang, Ollama, the llama.cpp server, Groq and OpenRouter;
//! the key is optional for local servers. This module is the wire format only: the
//! request body here, the typed reply in `reply.rs`; `HttpChatClient` does the rest.

pub mod reply;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::client::{Decoded, HttpChatClient, WireFormat, parse_value, secret_header};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest, Part, Role, ToolChoice};

/// The Chat Completions wire format.
pub struct OpenAi;

/// The OpenAI-compatible client.
pub type OpenAiChat = HttpChatClient<OpenAi>;

impl WireFormat for OpenAi {
    const PROVIDER: ProviderKind = ProviderKind::Openai;
    const NEEDS_KEY: bool = false;
    type Reply = reply::Completion;

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

    fn body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
        build_body(cfg, req)
    }

    fn decode(reply: reply::Completion) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

pub fn build_body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(s) = &req.system {
        messages.push(json!({"role": "system", "content": s}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => push_user(&mut messages, &m.parts),
            Role::Assistant => messages.push(assistant(&m.parts)),
        }
    }
    let mut body = json!({"model": cfg.model, "messages": messages});
    let max = req.max_tokens.unwrap_or(cfg.max_tokens);
    // api.openai.com deprecated `max_tokens` (reasoning models refuse it); local
    // servers (Ollama, llama.cpp, older vLLM) only know `max_tokens`.
    if cfg.is_hosted() {
        body["max_completion_tokens"] = json!(max);
    } else {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = req.temperature.or(cfg.temperature) {
        body["temperature"] = json!(t);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body["tool_choice"] = json!(match req.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        });
    }
    body
}

/// A user message: tool results become separate `tool` messages, and come first (they
/// answer the assistant message just before); text and images follow as one message.
fn push_user(messages: &mut Vec<Value>, parts: &[Part]) {
    let mut content = Vec::new();
    for p in parts {
        match p {
            Part::ToolResult {
                call_id,
                content: c,
                ..
            } => messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": c})),
            Part::Text(t) => content.push(json!({"type": "text", "text": t})),
            Part::Image(img) => {
                content.push(json!({"type": "image_url", "image_url": {"url": img.data_url()}}))
            }
            Part::ToolCall(_) => {}
        }
    }
    if !content.is_empty() {
        messages.push(json!({"role": "user", "content": content}));
    }
}

/// An assistant message: its text parts joined (`null` when none), its tool calls.
fn assistant(parts: &[Part]) -> Value {
    let text: String = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let calls: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(json!({
                "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments}
            })),
            _ => None,
        })
        .collect();
    let content = if text.is_empty() {
        Value::Null
    } else {
        Value::String(text)
    };
    let mut msg = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        msg["tool_calls"] = Value::Array(calls);
    }
    msg
}

/// Reads a recorded reply (`choices[0].message` and `usage`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<OpenAi>(body)
}
