//! Gemini `generateContent` (`POST {base_url}/v1beta/models/{model}:generateContent`):
//! `functionCall` / `functionResponse` parts, `inline_data` images, the key in the
//! `x-goog-api-key` header (never in the URL, where it would end up in logs).
//!
//! Tool schemas go in `parametersJsonSchema`, which takes full JSON Schema; the older
//! `parameters` field takes an OpenAPI subset that rejects schemars' `["integer","null"]`.

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::ChatModel;
use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::LlmError;
use super::http::HttpClient;
use super::types::{ChatReply, ChatRequest, Part, Role, StopReason, ToolCall, ToolChoice, Usage};

pub struct GeminiChat {
    cfg: ModelConfig,
    key: ApiKey,
    http: HttpClient,
    url: String,
}

impl GeminiChat {
    pub fn new(cfg: ModelConfig, key: ApiKey) -> Result<Self, LlmError> {
        cfg.validate()?;
        let http = HttpClient::new(&cfg)?;
        let url = format!(
            "{}/v1beta/models/{}:generateContent",
            cfg.base_url(),
            cfg.model.trim_start_matches("models/")
        );
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

pub fn parse_reply(body: &Value) -> Result<ChatReply, LlmError> {
    let bad = |m: String| LlmError::Malformed {
        provider: ProviderKind::Gemini,
        message: m,
    };
    let Some(cand) = body
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        // A prompt blocked by safety filters has no candidates, only promptFeedback.
        if let Some(r) = body
            .get("promptFeedback")
            .and_then(|f| f.get("blockReason"))
            .and_then(Value::as_str)
        {
            return Err(bad(format!("the prompt was blocked ({r})")));
        }
        return Err(bad("no `candidates[0]` in the reply".into()));
    };
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tool_calls = Vec::new();
    let parts = cand
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array);
    for (i, p) in parts.into_iter().flatten().enumerate() {
        if let Some(fc) = p.get("functionCall") {
            let name = fc
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a functionCall part has no `name`".into()))?;
            let args = fc.get("args").cloned().unwrap_or_else(|| json!({}));
            let id = fc
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("gemini_call_{i}"));
            tool_calls.push(ToolCall::new(id, name, &args));
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                reasoning.push_str(t);
            } else {
                text.push_str(t);
            }
        }
    }
    let stop_reason = match cand.get("finishReason").and_then(Value::as_str) {
        Some("STOP") if !tool_calls.is_empty() => StopReason::ToolUse,
        Some("STOP") => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII") => {
            StopReason::ContentFilter
        }
        Some(o) => StopReason::Other(o.into()),
        None => StopReason::Other("none".into()),
    };
    let u = body.get("usageMetadata");
    let n = |k: &str| {
        u.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    // Thinking tokens are billed as output.
    let usage = Usage {
        input_tokens: n("promptTokenCount"),
        output_tokens: n("candidatesTokenCount") + n("thoughtsTokenCount"),
        cached_input_tokens: n("cachedContentTokenCount"),
    };
    Ok(ChatReply {
        text,
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        tool_calls,
        stop_reason,
        usage,
        model: body
            .get("modelVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        latency: Default::default(),
        ttft: None,
        attempts: 1,
    })
}

#[async_trait]
impl ChatModel for GeminiChat {
    fn config(&self) -> &ModelConfig {
        &self.cfg
    }
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let body = self.build_body(req);
        let mut headers = HeaderMap::new();
        let mut k = HeaderValue::from_str(self.key.expose()).map_err(|_| LlmError::Config {
            message: "the Gemini API key contains characters not allowed in a header".into(),
        })?;
        k.set_sensitive(true);
        headers.insert("x-goog-api-key", k);
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
