//! The generateContent reply as serde reads it: `candidates[0].content.parts`
//! (`text`, `thought` text, `functionCall`; other parts are skipped), `finishReason`,
//! `promptFeedback.blockReason` for a blocked prompt, and `usageMetadata`.

use serde::Deserialize;
use serde_json::Value;

use crate::llm::client::{Decoded, malformed};
use crate::llm::config::ProviderKind;
use crate::llm::error::LlmError;
use crate::llm::types::{StopReason, ToolCall, Usage};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateReply {
    #[serde(default)]
    pub candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub model_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    #[serde(default)]
    pub content: Option<CandidateContent>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct CandidateContent {
    #[serde(default)]
    pub parts: Option<Vec<ReplyPart>>,
}

/// One part; which field is set says what it is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyPart {
    #[serde(default)]
    pub text: Option<String>,
    /// `true` on thinking text.
    #[serde(default)]
    pub thought: Option<bool>,
    #[serde(default)]
    pub function_call: Option<FunctionCall>,
}

#[derive(Debug, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    #[serde(default)]
    pub prompt_token_count: u64,
    #[serde(default)]
    pub candidates_token_count: u64,
    #[serde(default)]
    pub thoughts_token_count: u64,
    #[serde(default)]
    pub cached_content_token_count: u64,
}

fn bad(m: impl Into<String>) -> LlmError {
    malformed(ProviderKind::Gemini, m)
}

impl GenerateReply {
    pub fn decode(self) -> Result<Decoded, LlmError> {
        let Some(cand) = self.candidates.and_then(|c| c.into_iter().next()) else {
            // A prompt blocked by safety filters has no candidates, only promptFeedback.
            return Err(match self.prompt_feedback.and_then(|f| f.block_reason) {
                Some(r) => bad(format!("the prompt was blocked ({r})")),
                None => bad("no `candidates[0]` in the reply"),
            });
        };
        let mut text = String::new();
        let mut reasoning = String::new();
        let mut tool_calls = Vec::new();
        let parts = cand.content.and_then(|c| c.parts).unwrap_or_default();
        for (i, p) in parts.into_iter().enumerate() {
            if let Some(fc) = p.function_call {
                let name = fc
                    .name
                    .ok_or_else(|| bad("a functionCall part has no `name`"))?;
                let args = fc.args.unwrap_or_else(|| Value::Object(Default::default()));
                let id = fc.id.unwrap_or_else(|| format!("gemini_call_{i}"));
                tool_calls.push(ToolCall::new(id, name, &args));
            } else if let Some(t) = p.text {
                if p.thought == Some(true) {
                    reasoning.push_str(&t);
                } else {
                    text.push_str(&t);
                }
            }
        }
        let stop_reason = stop_reason(cand.finish_reason.as_deref(), !tool_calls.is_empty());
        Ok(Decoded {
            text,
            reasoning: Some(reasoning),
            tool_calls,
            stop_reason,
            usage: self.usage_metadata.unwrap_or_default().into(),
            model: self.model_version,
        })
    }
}

impl From<UsageMetadata> for Usage {
    /// Thinking tokens are billed as output.
    fn from(u: UsageMetadata) -> Usage {
        Usage {
            input_tokens: u.prompt_token_count,
            output_tokens: u.candidates_token_count + u.thoughts_token_count,
            cached_input_tokens: u.cached_content_token_count,
        }
    }
}

fn stop_reason(s: Option<&str>, called_tools: bool) -> StopReason {
    match s {
        Some("STOP") if called_tools => StopReason::ToolUse,
        Some("STOP") => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII") => {
            StopReason::ContentFilter
        }
        Some(o) => StopReason::Other(o.into()),
        None => StopReason::Other("none".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Decoded, LlmError> {
        GenerateReply::deserialize(v).unwrap().decode()
    }

    #[test]
    fn recorded_function_call_reply_decodes() {
        // The recorded fixture of tests/llm.rs (`gemini_function_reply`).
        let d = decode(json!({
          "candidates": [{
            "content": {"parts": [{"functionCall": {"name": "tap", "args": {"element": 3}}}], "role": "model"},
            "finishReason": "STOP", "index": 0, "avgLogprobs": -0.0012
          }],
          "usageMetadata": {"promptTokenCount": 1530, "candidatesTokenCount": 8, "totalTokenCount": 1580,
            "thoughtsTokenCount": 42,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 272}, {"modality": "IMAGE", "tokenCount": 1258}]},
          "modelVersion": "gemini-2.5-flash", "responseId": "mRAfaPfUCqGvz7IPw4bDoQs"
        }))
        .unwrap();
        assert_eq!(d.tool_calls[0].id, "gemini_call_0");
        assert_eq!(d.tool_calls[0].name, "tap");
        assert_eq!(d.stop_reason, StopReason::ToolUse);
        assert_eq!(d.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(
            d.usage,
            Usage {
                input_tokens: 1530,
                output_tokens: 50,
                cached_input_tokens: 0
            }
        );
    }

    #[test]
    fn thoughts_blocked_prompts_and_missing_candidates() {
        let d = decode(json!({"candidates": [{"content": {"parts": [
            {"text": "Planning the tap", "thought": true}, {"text": "Done."}]}, "finishReason": "STOP"}]}))
        .unwrap();
        assert_eq!(d.reasoning.as_deref(), Some("Planning the tap"));
        assert_eq!(
            (d.text.as_str(), d.stop_reason),
            ("Done.", StopReason::EndTurn)
        );
        let e = decode(json!({"promptFeedback": {"blockReason": "SAFETY"}})).unwrap_err();
        assert!(e.to_string().contains("blocked (SAFETY)"), "{e}");
        let e = decode(json!({})).unwrap_err();
        assert!(e.to_string().contains("candidates[0]"), "{e}");
    }
}
