//! OpenAI Chat Completions (`POST {base_url}/chat/completions`). With `base_url` the
//! same client drives vLLM, SGLang, Ollama, the llama.cpp server, Groq and OpenRouter;
//! the key is optional for local servers.

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::ChatModel;
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::http::HttpClient;
use super::types::{ChatReply, ChatRequest, Part, Role, StopReason, ToolCall, ToolChoice, Usage};

pub struct OpenAiChat {
    cfg: ModelConfig,
    key: Option<ApiKey>,
    http: HttpClient,
    url: String,
}

impl OpenAiChat {
    pub fn new(cfg: ModelConfig, key: Option<ApiKey>) -> Result<Self, LlmError> {
        cfg.validate()?;
        let http = HttpClient::new(&cfg)?;
        let url = format!("{}/chat/completions", cfg.base_url());
        Ok(Self {
            cfg,
            key,
            http,
            url,
        })
    }

    /// The request body exactly as sent.
    pub fn build_body(&self, req: &ChatRequest) -> Value {
        build_body(&self.cfg, req)
    }
}

pub fn build_body(cfg: &ModelConfig, req: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(s) = &req.system {
        messages.push(json!({"role": "system", "content": s}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => {
                // Tool results are separate `tool` messages, and must come first: they
                // answer the assistant message just before.
                let mut content = Vec::new();
                for p in &m.parts {
                    match p {
                        Part::ToolResult {
                            call_id,
                            content: c,
                            ..
                        } => messages
                            .push(json!({"role": "tool", "tool_call_id": call_id, "content": c})),
                        Part::Text(t) => content.push(json!({"type": "text", "text": t})),
                        Part::Image(img) => content.push(
                            json!({"type": "image_url", "image_url": {"url": img.data_url()}}),
                        ),
                        Part::ToolCall(_) => {}
                    }
                }
                if !content.is_empty() {
                    messages.push(json!({"role": "user", "content": content}));
                }
            }
            Role::Assistant => {
                let text: String = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let calls: Vec<Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall(c) => Some(json!({
                            "id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.raw_arguments}
                        })),
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
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

/// Reads `choices[0].message` and `usage`.
pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    let bad = |m: &str| LlmError::Malformed {
        provider: ProviderKind::Openai,
        message: m.into(),
    };
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| bad("no `choices[0]` in the reply"))?;
    let msg = choice
        .get("message")
        .ok_or_else(|| bad("no `choices[0].message` in the reply"))?;
    let text = match msg.get("content") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        // A few servers send content parts even in replies.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(_) => return Err(bad("`message.content` is neither a string nor null")),
    };
    let reasoning = msg
        .get("reasoning_content")
        .or_else(|| msg.get("reasoning"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let f = c
                .get("function")
                .ok_or_else(|| bad("a tool call has no `function`"))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a tool call has no `function.name`"))?;
            let raw_arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                // Some compatible servers send an object instead of a JSON string.
                Some(v @ Value::Object(_)) => v.to_string(),
                None | Some(Value::Null) => String::new(),
                Some(_) => return Err(bad("`function.arguments` is not a string")),
            };
            tool_calls.push(ToolCall {
                id: c
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("call_{i}")),
                name: name.into(),
                raw_arguments,
            });
        }
    }
    let stop_reason = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::ContentFilter,
        Some(o) => StopReason::Other(o.into()),
        None if !tool_calls.is_empty() => StopReason::ToolUse,
        None => StopReason::Other("none".into()),
    };
    let u = body.get("usage");
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input_tokens: n(u.and_then(|u| u.get("prompt_tokens"))),
        output_tokens: n(u.and_then(|u| u.get("completion_tokens"))),
        cached_input_tokens: n(u
            .and_then(|u| u.get("prompt_tokens_details"))
            .and_then(|d| d.get("cached_tokens"))),
    };
    Ok(ChatReply {
        text,
        reasoning,
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
impl ChatModel for OpenAiChat {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = self.build_body(req);
        let mut headers = HeaderMap::new();
        if let Some(k) = &self.key {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", k.expose())).map_err(|_| {
                LlmError::Config {
                    message: "the OpenAI API key contains characters not allowed in a header"
                        .into(),
                }
            })?;
            v.set_sensitive(true);
            headers.insert("authorization", v);
        }
        let r = self
            .http
            .post_json(&self.url, headers, &body, self.key.as_ref())
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
