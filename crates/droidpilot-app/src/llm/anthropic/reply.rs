//! The Messages reply as serde reads it: `content` blocks (`text`, `thinking`,
//! `tool_use`; other kinds are skipped), `stop_reason` and `usage` with its cache
//! counters.

use serde::Deserialize;
use serde_json::Value;

use crate::llm::client::{Decoded, malformed};
use crate::llm::config::ProviderKind;
use crate::llm::error::LlmError;
use crate::llm::types::{StopReason, ToolCall, Usage};

#[derive(Debug, Deserialize)]
pub struct MessageReply {
    #[serde(default)]
    pub content: Option<Vec<Block>>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<MessageUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        input: Option<Value>,
    },
    /// `redacted_thinking`, `server_tool_use` and whatever comes next.
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub struct MessageUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl MessageReply {
    pub fn decode(self) -> Result<Decoded, LlmError> {
        let blocks = self
            .content
            .ok_or_else(|| malformed(ProviderKind::Anthropic, "no `content` array in the reply"))?;
        let mut text = String::new();
        let mut reasoning = String::new();
        let mut tool_calls = Vec::new();
        for b in blocks {
            match b {
                Block::Text { text: t } => text.push_str(&t),
                Block::Thinking { thinking } => reasoning.push_str(&thinking),
                Block::ToolUse { id, name, input } => {
                    let name = name.ok_or_else(|| {
                        malformed(ProviderKind::Anthropic, "a tool_use block has no `name`")
                    })?;
                    let input = input.unwrap_or_else(|| Value::Object(Default::default()));
                    tool_calls.push(ToolCall::new(id, name, &input));
                }
                Block::Other => {}
            }
        }
        Ok(Decoded {
            text,
            reasoning: Some(reasoning),
            tool_calls,
            stop_reason: stop_reason(self.stop_reason.as_deref()),
            usage: self.usage.unwrap_or_default().into(),
            model: self.model,
        })
    }
}

impl From<MessageUsage> for Usage {
    /// Anthropic's `input_tokens` excludes cache reads and writes; ours includes them.
    fn from(u: MessageUsage) -> Usage {
        let cached = u.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: u.input_tokens + u.cache_creation_input_tokens.unwrap_or(0) + cached,
            output_tokens: u.output_tokens,
            cached_input_tokens: cached,
        }
    }
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::ContentFilter,
        Some(o) => StopReason::Other(o.into()),
        None => StopReason::Other("none".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Decoded, LlmError> {
        MessageReply::deserialize(v).unwrap().decode()
    }

    #[test]
    fn recorded_tool_use_reply_decodes_with_cache_counts() {
        // The recorded fixture of tests/llm.rs (`anthropic_tool_reply`).
        let d = decode(json!({
          "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant",
          "model": "claude-sonnet-4-5-20250929",
          "content": [
            {"type": "text", "text": "I'll tap the Settings icon."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "tap", "input": {"element": 3}}
          ],
          "stop_reason": "tool_use", "stop_sequence": null,
          "usage": {"input_tokens": 120, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 1800, "output_tokens": 64, "service_tier": "standard"}
        }))
        .unwrap();
        assert_eq!(d.text, "I'll tap the Settings icon.");
        assert_eq!(d.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
        assert_eq!(d.tool_calls[0].raw_arguments, "{\"element\":3}");
        assert_eq!(d.stop_reason, StopReason::ToolUse);
        assert_eq!(
            d.usage,
            Usage {
                input_tokens: 1920,
                output_tokens: 64,
                cached_input_tokens: 1800
            }
        );
    }

    #[test]
    fn thinking_is_reasoning_and_unknown_blocks_are_skipped() {
        let d = decode(json!({"content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "redacted_thinking", "data": "x"},
            {"type": "text", "text": "ok"}], "stop_reason": "end_turn"}))
        .unwrap();
        assert_eq!(d.reasoning.as_deref(), Some("hmm"));
        assert_eq!(
            (d.text.as_str(), d.stop_reason),
            ("ok", StopReason::EndTurn)
        );
        let e = decode(json!({"type": "message"})).unwrap_err();
        assert!(e.to_string().contains("`content`"), "{e}");
    }
}
