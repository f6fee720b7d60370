//! Anthropic Messages (`POST {base_url}/v1/messages`): `tool_use` / `tool_result`
//! blocks, base64 image blocks, and `cache_control` markers on the stable prefix
//! (tools, then system) so that repeated steps of one task hit the prompt cache.

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::ChatModel;
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::http::HttpClient;
use super::types::{ChatReply, ChatRequest, Part, Role, StopReason, ToolCall, ToolChoice, Usage};

pub const API_VERSION: &str = "2023-06-01";

pub struct AnthropicChat {
    cfg: ModelConfig,
    key: ApiKey,
    http: HttpClient,
    url: String,
}

impl AnthropicChat {
    pub fn new(cfg: ModelConfig, key: ApiKey) -> Result<Self, LlmError> {
        cfg.validate()?;
        let http = HttpClient::new(&cfg)?;
        let url = format!("{}/v1/messages", cfg.base_url());
        Ok(Self {
            cfg,
            key,
            http,
            url,
        })
    }
    pub fn build_body(&self, req: &ChatRequest) -> Value {
        build_body(&self.cfg, req)
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

pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    let bad = |m: &str| LlmError::Malformed {
        provider: ProviderKind::Anthropic,
        message: m.into(),
    };
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `content` array in the reply"))?;
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => {
                reasoning.push_str(b.get("thinking").and_then(Value::as_str).unwrap_or(""))
            }
            Some("tool_use") => {
                let name = b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("a tool_use block has no `name`"))?;
                let id = b.get("id").and_then(Value::as_str).unwrap_or_default();
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                tool_calls.push(ToolCall::new(id, name, &input));
            }
            _ => {}
        }
    }
    let stop_reason = match body.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::ContentFilter,
        Some(o) => StopReason::Other(o.into()),
        None => StopReason::Other("none".into()),
    };
    let u = body.get("usage");
    let n = |k: &str| {
        u.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let cached = n("cache_read_input_tokens");
    // Anthropic's `input_tokens` excludes cache reads and writes; ours includes them.
    let usage = Usage {
        input_tokens: n("input_tokens") + n("cache_creation_input_tokens") + cached,
        output_tokens: n("output_tokens"),
        cached_input_tokens: cached,
    };
    Ok(ChatReply {
        text,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls,
        stop_reason,
        usage,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        latency: Default::default(),
        ttft: None,
        attempts: 1,
    })
}

#[async_trait]
impl ChatModel for AnthropicChat {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = self.build_body(req);
        let mut headers = HeaderMap::new();
        let mut k = HeaderValue::from_str(self.key.expose()).map_err(|_| LlmError::Config {
            message: "the Anthropic API key contains characters not allowed in a header".into(),
        })?;
        k.set_sensitive(true);
        headers.insert("x-api-key", k);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let r = self
            .http
            .post_json(&self.url, headers, &body, Some(&self.key))
            .await?;
        let mut reply = parse_reply(&r.body)?;
        reply.latency = r.latency;
        reply.attempts = r.attempts;
        if reply.model.is_empty() {
            reply.model = self.cfg.model.clone();
        }
        Ok(reply)
    }
}
