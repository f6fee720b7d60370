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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Decoded, LlmError> {
        Completion::deserialize(v).unwrap().decode()
    }

    #[test]
    fn recorded_tool_call_reply_decodes() {
        // The recorded fixture of tests/llm.rs (`openai_tool_reply`), trimmed of fields
        // nothing reads.
        let d = decode(json!({
          "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
          "model": "gpt-4o-2024-08-06",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_abc123", "type": "function",
              "function": {"name": "tap", "arguments": "{\"element\":3}"}}],
            "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "tool_calls"}],
          "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0}}
        }))
        .unwrap();
        assert_eq!(d.text, "");
        assert_eq!(d.tool_calls[0].id, "call_abc123");
        assert_eq!(d.tool_calls[0].raw_arguments, "{\"element\":3}");
        assert_eq!(d.stop_reason, StopReason::ToolUse);
        assert_eq!(d.model.as_deref(), Some("gpt-4o-2024-08-06"));
        assert_eq!(
            d.usage,
            Usage {
                input_tokens: 1117,
                output_tokens: 46,
                cached_input_tokens: 1024
            }
        );
    }

    #[test]
    fn compatible_servers_variations_decode() {
        // vLLM: reasoning_content, content parts, arguments as an object, no id, no
        // finish_reason, no usage, tool_calls null.
        let d = decode(json!({"choices": [{"message": {
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "reasoning_content": "think",
            "tool_calls": [{"function": {"name": "back", "arguments": {"n": 1}}}]}}]}))
        .unwrap();
        assert_eq!(d.text, "ab");
        assert_eq!(d.reasoning.as_deref(), Some("think"));
        assert_eq!(d.tool_calls[0].id, "call_0");
        assert_eq!(d.tool_calls[0].raw_arguments, "{\"n\":1}");
        assert_eq!(d.stop_reason, StopReason::ToolUse);
        assert_eq!(d.usage, Usage::default());
        let d = decode(
            json!({"choices": [{"message": {"content": "hi", "tool_calls": null},
            "finish_reason": "length"}]}),
        )
        .unwrap();
        assert_eq!(
            (d.text.as_str(), d.stop_reason),
            ("hi", StopReason::MaxTokens)
        );
    }

    #[test]
    fn missing_pieces_are_named() {
        let e = decode(json!({"object": "list", "data": []})).unwrap_err();
        assert!(e.to_string().contains("choices[0]"), "{e}");
        let e =
            decode(json!({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]})).unwrap_err();
        assert!(e.to_string().contains("no `function`"), "{e}");
    }
}
