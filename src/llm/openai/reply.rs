//! The Chat Completions reply as serde reads it: `choices[0].message` (text, content
//! parts, `reasoning_content`, tool calls whose arguments are a JSON string or, from
//! some compatible servers, an object), `finish_reason` and `usage`. Fields servers
//! leave out or send as `null` are optional.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::llm::client::{Decoded, malformed};
use crate::llm::config::ProviderKind;
use crate::llm::error::LlmError;
use crate::llm::types::{StopReason, ToolCall, Usage};

#[derive(Debug, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub usage: Option<CompletionUsage>,
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub message: Option<ReplyMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ReplyMessage {
    #[serde(default)]
    pub content: Option<Content>,
    /// vLLM and SGLang reasoning parsers; OpenRouter calls it `reasoning`.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

/// A string, or (from a few servers, even in replies) a list of content parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
pub struct ContentPart {
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<Function>,
}

#[derive(Debug, Deserialize)]
pub struct Function {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<Arguments>,
}

/// The JSON string OpenAI sends, or the object some compatible servers send instead.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    Text(String),
    Object(Map<String, Value>),
}

#[derive(Debug, Default, Deserialize)]
pub struct CompletionUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

fn bad(m: &str) -> LlmError {
    malformed(ProviderKind::Openai, m)
}

impl Completion {
    pub fn decode(self) -> Result<Decoded, LlmError> {
        let choice = self
            .choices
            .and_then(|c| c.into_iter().next())
            .ok_or_else(|| bad("no `choices[0]` in the reply"))?;
        let msg = choice
            .message
            .ok_or_else(|| bad("no `choices[0].message` in the reply"))?;
        let text = match msg.content {
            None => String::new(),
            Some(Content::Text(s)) => s,
            Some(Content::Parts(parts)) => parts.into_iter().filter_map(|p| p.text).collect(),
        };
        let tool_calls = msg
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, c)| c.into_call(i))
            .collect::<Result<Vec<_>, _>>()?;
        let stop_reason = stop_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty());
        let u = self.usage.unwrap_or_default();
        let usage = Usage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
        };
        Ok(Decoded {
            text,
            reasoning: msg.reasoning_content.or(msg.reasoning),
            tool_calls,
            stop_reason,
            usage,
            model: self.model,
        })
    }
}

impl WireToolCall {
    fn into_call(self, i: usize) -> Result<ToolCall, LlmError> {
        let f = self
            .function
            .ok_or_else(|| bad("a tool call has no `function`"))?;
        let name = f
            .name
            .ok_or_else(|| bad("a tool call has no `function.name`"))?;
        let raw_arguments = match f.arguments {
            None => String::new(),
            Some(Arguments::Text(s)) => s,
            Some(Arguments::Object(o)) => Value::Object(o).to_string(),
        };
        Ok(ToolCall {
            id: self.id.unwrap_or_else(|| format!("call_{i}")),
            name,
            raw_arguments,
        })
    }
}

fn stop_reason(finish: Option<&str>, called_tools: bool) -> StopReason {
    match finish {
        Some("stop") => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::ContentFilter,
        Some(o) => StopReason::Other(o.into()),
        None if called_tools => StopReason::ToolUse,
        None => StopReason::Other("none".into()),
    }
}
