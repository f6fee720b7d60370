//! The Messages request body as serde writes it, built from a `ChatRequest` it borrows
//! from: content blocks (`text`, `image` with a base64 source, `tool_use`,
//! `tool_result`), `system` as one text block, `tools` with their `input_schema`,
//! `tool_choice`. One `cache_control` marker ends the stable prefix (tools, then
//! system, in Anthropic's cache order): on the system block, or on the last tool when
//! there is no system prompt. Optional fields are left out, never sent as `null`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::llm::config::ModelConfig;
use crate::llm::types::{Base64Text, ChatRequest, Message, Part, Role, ToolChoice, ToolSpec};

#[derive(Debug, Serialize)]
pub struct MessagesRequest<'a> {
    pub model: &'a str,
    pub max_tokens: u32,
    pub messages: Vec<InputMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<[SystemBlock<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceMode>,
}

#[derive(Debug, Serialize)]
pub struct InputMessage<'a> {
    pub role: Role,
    pub content: Vec<ContentBlock<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        /// The call's arguments as JSON (`{}` when the model wrote none, or no JSON).
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource<'a> {
    Base64 {
        media_type: &'static str,
        data: Base64Text<'a>,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemBlock<'a> {
    Text {
        text: &'a str,
        cache_control: CacheControl,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CacheControl {
    Ephemeral,
}

#[derive(Debug, Serialize)]
pub struct Tool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The tool's JSON schema, as data.
    pub input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoiceMode {
    Auto,
    /// The model must call some tool.
    Any,
}

impl<'a> MessagesRequest<'a> {
    pub fn new(cfg: &'a ModelConfig, req: &'a ChatRequest) -> Self {
        let system = req.system.as_deref().map(|text| {
            [SystemBlock::Text {
                text,
                cache_control: CacheControl::Ephemeral,
            }]
        });
        let n = req.tools.len();
        let tools = req
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| tool(t, i + 1 == n && system.is_none()))
            .collect();
        let tool_choice = (n > 0).then_some(match req.tool_choice {
            ToolChoice::Auto => ToolChoiceMode::Auto,
            ToolChoice::Required => ToolChoiceMode::Any,
        });
        Self {
            model: &cfg.model,
            max_tokens: req.max_tokens.unwrap_or(cfg.max_tokens),
            messages: req.messages.iter().map(message).collect(),
            system,
            temperature: req.temperature.or(cfg.temperature),
            tools,
            tool_choice,
        }
    }
}

fn message(m: &Message) -> InputMessage<'_> {
    InputMessage {
        role: m.role,
        content: m.parts.iter().map(block).collect(),
    }
}

fn block(p: &Part) -> ContentBlock<'_> {
    match p {
        Part::Text(text) => ContentBlock::Text { text },
        Part::Image(img) => ContentBlock::Image {
            source: ImageSource::Base64 {
                media_type: img.mime().as_str(),
                data: img.base64_text(),
            },
        },
        Part::ToolCall(c) => ContentBlock::ToolUse {
            id: &c.id,
            name: &c.name,
            input: c.arguments().unwrap_or_else(|_| Value::Object(Map::new())),
        },
        Part::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => ContentBlock::ToolResult {
            tool_use_id: call_id,
            content,
            is_error: *is_error,
        },
    }
}

fn tool(t: &ToolSpec, cached: bool) -> Tool<'_> {
    Tool {
        name: &t.name,
        description: &t.description,
        input_schema: &t.parameters,
        cache_control: cached.then_some(CacheControl::Ephemeral),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::config::ProviderKind;
    use crate::llm::fixtures::{PNG_BASE64, assert_fields, full_request, tap_schema, wire};

    /// https://docs.anthropic.com/en/api/messages
    #[test]
    fn full_conversation_has_the_documented_messages_shape() {
        let cfg = ModelConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let req = full_request();
        let body = wire(&MessagesRequest::new(&cfg, &req));
        assert_fields(
            &body,
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "system": [{"type": "text", "text": "You operate an Android phone.",
                            "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "Open Wi-Fi settings"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Tapping Settings."},
                        {"type": "tool_use", "id": "call_1", "name": "tap", "input": {"element": 3}},
                        {"type": "tool_use", "id": "call_2", "name": "back", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "tapped element 3", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "nothing to go back to", "is_error": true},
                        {"type": "text", "text": "What next?"}
                    ]}
                ],
                "temperature": 0.2,
                "tools": [
                    {"name": "tap", "description": "Tap an element", "input_schema": tap_schema()},
                    {"name": "back", "description": "Press Back", "input_schema": {"type": "object", "properties": {}}}
                ],
                "tool_choice": {"type": "any"}
            }),
        );
    }

    #[test]
    fn without_a_system_prompt_the_last_tool_ends_the_cached_prefix() {
        let cfg = ModelConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
        let mut req = full_request();
        req.system = None;
        req.tool_choice = ToolChoice::Auto;
        let body = wire(&MessagesRequest::new(&cfg, &req));
        assert!(body.get("system").is_none(), "{body}");
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }

    #[test]
    fn a_bare_request_sends_no_optional_fields() {
        let cfg = ModelConfig::new(ProviderKind::Anthropic, "claude-haiku-4-5");
        let req = ChatRequest::new(None, vec![crate::llm::Message::user_text("hi")]);
        assert_fields(
            &wire(&MessagesRequest::new(&cfg, &req)),
            json!({
                "model": "claude-haiku-4-5",
                "max_tokens": 1024,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
            }),
        );
    }
}
