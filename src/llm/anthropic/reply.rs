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
