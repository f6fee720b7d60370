//! The Chat Completions request body as serde writes it, built from a `ChatRequest`
//! it borrows from: `system`, `user` (text and `image_url` parts), `assistant` (text,
//! `tool_calls`) and `tool` messages; `tools` as functions with `tool_choice`; the
//! token limit as `max_completion_tokens` (api.openai.com) or `max_tokens` (local
//! servers). Optional fields are left out, never sent as `null` (an assistant message
//! without text is the exception: its `content` is `null`, as the API documents).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::llm::config::ModelConfig;
use crate::llm::types::{ChatRequest, DataUrlText, Part, Role, ToolCall, ToolChoice, ToolSpec};

#[derive(Debug, Serialize)]
pub struct CompletionRequest<'a> {
    pub model: &'a str,
    pub messages: Vec<ChatMessage<'a>>,
    #[serde(flatten)]
    pub limit: TokenLimit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoiceMode>,
}

/// api.openai.com deprecated `max_tokens` (reasoning models refuse it); local servers
/// (Ollama, llama.cpp, older vLLM) only know `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimit {
    MaxCompletionTokens(u32),
    MaxTokens(u32),
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: Vec<UserPart<'a>>,
    },
    Assistant {
        /// The text parts joined; `null` when there are none.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<AssistantToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Debug, Serialize)]
pub struct ImageUrl<'a> {
    /// A `data:` URL: the screenshot travels in the body.
    pub url: DataUrlText<'a>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantToolCall<'a> {
    Function {
        id: &'a str,
        function: FunctionCall<'a>,
    },
}

#[derive(Debug, Serialize)]
pub struct FunctionCall<'a> {
    pub name: &'a str,
    /// A JSON string, exactly as the model wrote it.
    pub arguments: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool<'a> {
    Function { function: FunctionDef<'a> },
}

#[derive(Debug, Serialize)]
pub struct FunctionDef<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The tool's JSON schema, as data.
    pub parameters: &'a Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoiceMode {
    Auto,
    Required,
}

impl<'a> CompletionRequest<'a> {
    pub fn new(cfg: &'a ModelConfig, req: &'a ChatRequest) -> Self {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if let Some(s) = &req.system {
            messages.push(ChatMessage::System { content: s });
        }
        for m in &req.messages {
            match m.role {
                Role::User => push_user(&mut messages, &m.parts),
                Role::Assistant => messages.push(assistant(&m.parts)),
            }
        }
        let max = req.max_tokens.unwrap_or(cfg.max_tokens);
        let limit = if cfg.is_hosted() {
            TokenLimit::MaxCompletionTokens(max)
        } else {
            TokenLimit::MaxTokens(max)
        };
        let tool_choice = (!req.tools.is_empty()).then_some(match req.tool_choice {
            ToolChoice::Auto => ToolChoiceMode::Auto,
            ToolChoice::Required => ToolChoiceMode::Required,
        });
        Self {
            model: &cfg.model,
            messages,
            limit,
            temperature: req.temperature.or(cfg.temperature),
            tools: req.tools.iter().map(tool).collect(),
            tool_choice,
        }
    }
}

/// A user message: tool results become separate `tool` messages, and come first (they
/// answer the assistant message just before); text and images follow as one message.
fn push_user<'a>(messages: &mut Vec<ChatMessage<'a>>, parts: &'a [Part]) {
    let mut content = Vec::new();
    for p in parts {
        match p {
            Part::ToolResult {
                call_id,
                content: c,
                ..
            } => messages.push(ChatMessage::Tool {
                tool_call_id: call_id,
                content: c,
            }),
            Part::Text(t) => content.push(UserPart::Text { text: t }),
            Part::Image(img) => content.push(UserPart::ImageUrl {
                image_url: ImageUrl {
                    url: img.data_url_text(),
                },
            }),
            Part::ToolCall(_) => {}
        }
    }
    if !content.is_empty() {
        messages.push(ChatMessage::User { content });
    }
}

/// An assistant message: its text parts joined by newlines, its tool calls.
fn assistant(parts: &[Part]) -> ChatMessage<'_> {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let content = match texts.as_slice() {
        [] => None,
        [one] => Some(Cow::Borrowed(*one)),
        many => Some(Cow::Owned(many.join("\n"))),
    };
    let tool_calls = parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(tool_call(c)),
            _ => None,
        })
        .collect();
    ChatMessage::Assistant {
        content: content.filter(|c| !c.is_empty()),
        tool_calls,
    }
}

fn tool_call(c: &ToolCall) -> AssistantToolCall<'_> {
    AssistantToolCall::Function {
        id: &c.id,
        function: FunctionCall {
            name: &c.name,
            arguments: &c.raw_arguments,
        },
    }
}

fn tool(t: &ToolSpec) -> Tool<'_> {
    Tool::Function {
        function: FunctionDef {
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::config::ProviderKind;
    use crate::llm::fixtures::{PNG_BASE64, assert_fields, full_request, tap_schema, wire};

    /// https://platform.openai.com/docs/api-reference/chat/create
    #[test]
    fn full_conversation_has_the_documented_chat_completions_shape() {
        let cfg = ModelConfig::new(ProviderKind::Openai, "gpt-4o");
        let req = full_request();
        let body = wire(&CompletionRequest::new(&cfg, &req));
        assert_fields(
            &body,
            json!({
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": "You operate an Android phone."},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Open Wi-Fi settings"},
                        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}}
                    ]},
                    {"role": "assistant", "content": "Tapping Settings.", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "tap", "arguments": "{\"element\":3}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "back", "arguments": ""}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "tapped element 3"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "nothing to go back to"},
                    {"role": "user", "content": [{"type": "text", "text": "What next?"}]}
                ],
                "max_completion_tokens": 1024,
                "temperature": 0.2,
                "tools": [
                    {"type": "function", "function": {"name": "tap", "description": "Tap an element", "parameters": tap_schema()}},
                    {"type": "function", "function": {"name": "back", "description": "Press Back", "parameters": {"type": "object", "properties": {}}}}
                ],
                "tool_choice": "required"
            }),
        );
    }

    #[test]
    fn local_servers_get_max_tokens_and_a_bare_request_sends_no_optional_fields() {
        let mut cfg = ModelConfig::new(ProviderKind::Openai, "qwen3-vl");
        cfg.base_url = Some("http://localhost:8000/v1".into());
        let mut req = ChatRequest::new(None, vec![crate::llm::Message::user_text("hi")]);
        req.max_tokens = Some(64);
        assert_fields(
            &wire(&CompletionRequest::new(&cfg, &req)),
            json!({
                "model": "qwen3-vl",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "max_tokens": 64
            }),
        );
    }

    #[test]
    fn an_assistant_turn_without_text_sends_null_content() {
        let cfg = ModelConfig::new(ProviderKind::Openai, "gpt-4o");
        let mut req = full_request();
        req.messages[1].parts.remove(0);
        let body = wire(&CompletionRequest::new(&cfg, &req));
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_1");
    }
}
