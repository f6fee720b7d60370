//! Model clients behind one `ChatModel` trait: one `HttpChatClient` over a
//! `WireFormat` per provider: OpenAI Chat Completions (and every OpenAI-compatible
//! server through `base_url`), Anthropic Messages, Gemini generateContent. A provider's
//! request body and reply are typed serde structs (`request.rs`, `reply.rs` in its
//! directory); the body borrows from the provider-neutral `ChatRequest` and is
//! serialised once. Messages with text and images, tools as JSON schemas, usage and
//! cost, retries with backoff honouring `Retry-After`, per-request timeouts, and errors
//! with hints. Keys live in `ApiKey`, which never prints.
//!
//! Streaming is not used: agents need the whole reply before they can act, so `ttft`
//! stays `None`.

pub mod anthropic;
pub mod client;
pub mod config;
pub mod debug_log;
pub mod error;
#[cfg(test)]
mod fixtures;
pub mod gemini;
pub mod http;
pub mod image;
pub mod openai;
pub mod retry;
pub mod types;

use std::sync::Arc;

use async_trait::async_trait;

pub use client::{HttpChatClient, WireFormat};
pub use config::{ApiKey, ModelConfig, ModelPrice, PriceTable, ProviderKind};
pub use error::LlmError;
pub use image::{ImageFormat, ScreenshotEncoding};
pub use types::{
    ChatReply, ChatRequest, ImageData, ImageMime, Message, Part, Role, StopReason, ToolCall,
    ToolChoice, ToolSpec, Usage,
};

/// One chat model endpoint. Implementations are cheap to share (`Arc<dyn ChatModel>`).
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The configuration this client was built from (provider, model, base URL, vision).
    fn config(&self) -> &ModelConfig;
    /// One request, with retries on transient failures.
    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError>;
}

/// Builds the client for `cfg`, taking the key from the config or the provider's
/// environment variable.
pub fn build_model(cfg: &ModelConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    let key = cfg.resolve_key()?;
    build_model_with_key(cfg, key)
}

pub fn build_model_with_key(
    cfg: &ModelConfig,
    key: Option<ApiKey>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let cfg = cfg.clone();
    Ok(match cfg.provider {
        ProviderKind::Openai => Arc::new(openai::OpenAiChat::new(cfg, key)?),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicChat::new(cfg, key)?),
        ProviderKind::Gemini => Arc::new(gemini::GeminiChat::new(cfg, key)?),
    })
}
