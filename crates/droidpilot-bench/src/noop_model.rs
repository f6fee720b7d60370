//! A recovery model that answers nothing usable, for `droidpilot bench replay`'s
//! `aitm_noop` mode: every question gets "no idea" in plain text, which is not a
//! `RecoveryAction`, so AI in the middle falls back to what it does without an answer
//! (the step retried whole, then the user). Beside `aitm` (the rule model) it shows what
//! a model's answers add over that fallback. In process: no network, no key.

use std::time::Duration;

use async_trait::async_trait;

use crate::llm::{ChatModel, ChatReply, ChatRequest, LlmError, ModelConfig, StopReason, Usage};

/// What the no-op model says to every question.
pub const NO_IDEA: &str = "No idea.";

pub struct NoopModel {
    config: ModelConfig,
}

impl Default for NoopModel {
    fn default() -> Self {
        Self {
            config: crate::rule_model::in_process_config("noop-recovery"),
        }
    }
}

#[async_trait]
impl ChatModel for NoopModel {
    fn config(&self) -> &ModelConfig {
        &self.config
    }

    async fn chat(&self, _req: &ChatRequest) -> Result<ChatReply, LlmError> {
        Ok(ChatReply {
            text: NO_IDEA.into(),
            reasoning: None,
            tool_calls: Vec::new(),
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model: self.config.model.clone(),
            latency: Duration::ZERO,
            ttft: None,
            attempts: 1,
        })
    }
}
