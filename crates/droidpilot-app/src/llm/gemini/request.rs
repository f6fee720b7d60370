//! The generateContent request body as serde writes it, built from a `ChatRequest` it
//! borrows from: `contents` (roles `user` and `model`; `text`, `inline_data`,
//! `functionCall` and `functionResponse` parts), `systemInstruction`,
//! `generationConfig`, `tools` (one `functionDeclarations` group, schemas in
//! `parametersJsonSchema`) and `toolConfig`. Optional fields are left out, never sent
//! as `null`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::llm::config::ModelConfig;
use crate::llm::types::{Base64Text, ChatRequest, Message, Part, Role, ToolChoice, ToolSpec};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateRequest<'a> {
    pub contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    pub generation_config: GenerationConfig,
}

/// A turn, or (without a role) the system instruction.
#[derive(Debug, Serialize)]
pub struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<ContentRole>,
    pub parts: Vec<ContentPart<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentRole {
    User,
    Model,
}

/// A part is an object with exactly one of these keys.
#[derive(Debug, Serialize)]
pub enum ContentPart<'a> {
    #[serde(rename = "text")]
    Text(&'a str),
    #[serde(rename = "inline_data")]
    InlineData(Blob<'a>),
    #[serde(rename = "functionCall")]
    FunctionCall(FunctionCall<'a>),
    #[serde(rename = "functionResponse")]
    FunctionResponse(FunctionResponse<'a>),
}

#[derive(Debug, Serialize)]
pub struct Blob<'a> {
    pub mime_type: &'static str,
    pub data: Base64Text<'a>,
}

#[derive(Debug, Serialize)]
pub struct FunctionCall<'a> {
    pub name: &'a str,
    /// The call's arguments as JSON (`{}` when the model wrote none, or no JSON).
    pub args: Value,
}

#[derive(Debug, Serialize)]
pub struct FunctionResponse<'a> {
    pub name: &'a str,
    pub response: FunctionResult<'a>,
}

/// The `response` object: the tool's output under `content`, or under `error`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionResult<'a> {
    Content(&'a str),
    Error(&'a str),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    pub max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tools<'a> {
    pub function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// Full JSON Schema, as data (the older `parameters` takes an OpenAPI subset).
    pub parameters_json_schema: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    pub function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, Serialize)]
pub struct FunctionCallingConfig {
    pub mode: FunctionCallingMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FunctionCallingMode {
    Auto,
    /// The model must call some function.
    Any,
}

impl<'a> GenerateRequest<'a> {
    pub fn new(cfg: &'a ModelConfig, req: &'a ChatRequest) -> Self {
        let system_instruction = req.system.as_deref().map(|s| Content {
            role: None,
            parts: vec![ContentPart::Text(s)],
        });
        let tools = if req.tools.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: req.tools.iter().map(declaration).collect(),
            }]
        };
        let tool_config = (!req.tools.is_empty()).then_some(ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode: match req.tool_choice {
                    ToolChoice::Auto => FunctionCallingMode::Auto,
                    ToolChoice::Required => FunctionCallingMode::Any,
                },
            },
        });
        Self {
            contents: req.messages.iter().map(content).collect(),
            system_instruction,
            tools,
            tool_config,
            generation_config: GenerationConfig {
                max_output_tokens: req.max_tokens.unwrap_or(cfg.max_tokens),
                temperature: req.temperature.or(cfg.temperature),
            },
        }
    }
}

fn content(m: &Message) -> Content<'_> {
    Content {
        role: Some(match m.role {
            Role::User => ContentRole::User,
            Role::Assistant => ContentRole::Model,
        }),
        parts: m.parts.iter().map(part).collect(),
    }
}

fn part(p: &Part) -> ContentPart<'_> {
    match p {
        Part::Text(t) => ContentPart::Text(t),
        Part::Image(img) => ContentPart::InlineData(Blob {
            mime_type: img.mime().as_str(),
            data: img.base64_text(),
        }),
        Part::ToolCall(c) => ContentPart::FunctionCall(FunctionCall {
            name: &c.name,
            args: c.arguments().unwrap_or_else(|_| Value::Object(Map::new())),
        }),
        Part::ToolResult {
            name,
            content,
            is_error,
            ..
        } => ContentPart::FunctionResponse(FunctionResponse {
            name,
            response: if *is_error {
                FunctionResult::Error(content)
            } else {
                FunctionResult::Content(content)
            },
        }),
    }
}

fn declaration(t: &ToolSpec) -> FunctionDeclaration<'_> {
    FunctionDeclaration {
        name: &t.name,
        description: &t.description,
        parameters_json_schema: &t.parameters,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::config::ProviderKind;
    use crate::llm::fixtures::{PNG_BASE64, assert_fields, full_request, tap_schema, wire};

    /// https://ai.google.dev/api/generate-content and
    /// https://ai.google.dev/gemini-api/docs/function-calling
    #[test]
    fn full_conversation_has_the_documented_generate_content_shape() {
        let cfg = ModelConfig::new(ProviderKind::Gemini, "gemini-2.5-flash");
        let req = full_request();
        let body = wire(&GenerateRequest::new(&cfg, &req));
        assert_fields(
            &body,
            json!({
                "contents": [
                    {"role": "user", "parts": [
                        {"text": "Open Wi-Fi settings"},
                        {"inline_data": {"mime_type": "image/png", "data": PNG_BASE64}}
                    ]},
                    {"role": "model", "parts": [
                        {"text": "Tapping Settings."},
                        {"functionCall": {"name": "tap", "args": {"element": 3}}},
                        {"functionCall": {"name": "back", "args": {}}}
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "tap", "response": {"content": "tapped element 3"}}},
                        {"functionResponse": {"name": "back", "response": {"error": "nothing to go back to"}}},
                        {"text": "What next?"}
                    ]}
                ],
                "systemInstruction": {"parts": [{"text": "You operate an Android phone."}]},
                "tools": [{"functionDeclarations": [
                    {"name": "tap", "description": "Tap an element", "parametersJsonSchema": tap_schema()},
                    {"name": "back", "description": "Press Back", "parametersJsonSchema": {"type": "object", "properties": {}}}
                ]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
                "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.2}
            }),
        );
    }

    #[test]
    fn a_bare_request_sends_no_optional_fields() {
        let cfg = ModelConfig::new(ProviderKind::Gemini, "gemini-2.5-flash");
        let mut req = ChatRequest::new(None, vec![crate::llm::Message::user_text("hi")]);
        req.max_tokens = Some(64);
        assert_fields(
            &wire(&GenerateRequest::new(&cfg, &req)),
            json!({
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "generationConfig": {"maxOutputTokens": 64}
            }),
        );
    }
}
