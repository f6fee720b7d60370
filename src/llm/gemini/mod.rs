//! Gemini `generateContent` (`POST {base_url}/v1beta/models/{model}:generateContent`):
//! `functionCall` / `functionResponse` parts, `inline_data` images, the key in the
//! `x-goog-api-key` header (never in the URL, where it would end up in logs). This
//! module is the wire format only: the request body here, the typed reply in
//! `reply.rs`; `HttpChatClient` does the rest.
//!
//! Tool schemas go in `parametersJsonSchema`, which takes full JSON Schema; the older
//! `parameters` field takes an OpenAPI subset that rejects schemars' `["integer","null"]`.

pub mod reply;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::client::{
    Decoded, HttpChatClient, WireFormat, parse_value, required_key, secret_header,
};
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::types::{ChatReply, ChatRequest, Part, Role, ToolChoice};

/// The generateContent wire format.
pub struct Gemini;

/// The Gemini client.
pub type GeminiChat = HttpChatClient<Gemini>;

impl WireFormat for Gemini {
    const PROVIDER: ProviderKind = ProviderKind::Gemini;
    const NEEDS_KEY: bool = true;
    type Reply = reply::GenerateReply;

    fn url(cfg: &ModelConfig) -> String {
        format!(
            "{}/v1beta/models/{}:generateContent",
            cfg.base_url(),
            cfg.model.trim_start_matches("models/")
        )
    }

    fn headers(key: Option<&ApiKey>) -> Result<HeaderMap, LlmError> {
        let key = required_key(Self::PROVIDER, key)?;
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-goog-api-key",
            secret_header(Self::PROVIDER, key.expose())?,
        );
        Ok(headers)
    }

    fn body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
        build_body(cfg, req)
    }

    fn decode(reply: reply::GenerateReply) -> Result<Decoded, LlmError> {
        reply.decode()
    }
}

pub fn build_body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
    let contents: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let parts: Vec<Value> = m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => json!({"text": t}),
                    Part::Image(img) => json!({"inline_data": {"mime_type": img.mime().as_str(), "data": img.base64()}}),
                    Part::ToolCall(c) => json!({"functionCall": {"name": c.name,
                        "args": c.arguments().unwrap_or_else(|_| json!({}))}}),
                    Part::ToolResult {
                        name, content, is_error, ..
                    } => {
                        let key = if *is_error { "error" } else { "content" };
                        json!({"functionResponse": {"name": name, "response": {key: content}}})
                    }
                })
                .collect();
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "model",
            };
            json!({"role": role, "parts": parts})
        })
        .collect();
    let mut gen_cfg = json!({"maxOutputTokens": req.max_tokens.unwrap_or(cfg.max_tokens)});
    if let Some(t) = req.temperature.or(cfg.temperature) {
        gen_cfg["temperature"] = json!(t);
    }
    let mut body = json!({"contents": contents, "generationConfig": gen_cfg});
    if let Some(s) = &req.system {
        body["systemInstruction"] = json!({"parts": [{"text": s}]});
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}))
            .collect();
        body["tools"] = json!([{"functionDeclarations": decls}]);
        body["toolConfig"] = json!({"functionCallingConfig": {"mode": match req.tool_choice {
            ToolChoice::Auto => "AUTO",
            ToolChoice::Required => "ANY",
        }}});
    }
    body
}

/// Reads a recorded reply (`candidates[0]`, `usageMetadata`).
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    parse_value::<Gemini>(body)
}
