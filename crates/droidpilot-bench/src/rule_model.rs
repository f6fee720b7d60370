//! A rule-driven recovery model for `droidpilot bench replay`'s AITM mode: it reads the
//! recovery context AI in the middle sends (seed 001) and answers a `RecoveryAction` by
//! rules a careful person would follow, with no network and no key. It stands in for a
//! model so the figures measure the replay machinery, not a model's mood; the API tests
//! exercise the same path against a real wire-format server.
//!
//! Rules, in order: an element on the current screen whose label or id matches what the
//! failed step's selectors say (same text ignoring case, a label that starts with the
//! recorded one, the same id ignoring case, `_` and a version suffix) → `modify_selector`
//! (after an `expect` failed: what the expect names, since the step's action already
//! ran); a dialog with a
//! dismiss button → `execute_action` tapping it; otherwise `abort` with low confidence.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::llm::{
    ChatModel, ChatReply, ChatRequest, LlmError, ModelConfig, Part, StopReason, Usage,
};

pub struct RuleModel {
    config: ModelConfig,
}

/// The config of an in-process bench model (nothing is sent anywhere; the name shows in
/// the steps' call records).
pub(crate) fn in_process_config(model: &str) -> ModelConfig {
    serde_json::from_value(json!({"provider": "openai", "model": model}))
        .expect("a minimal model config")
}

impl Default for RuleModel {
    fn default() -> Self {
        Self {
            config: in_process_config("rule-recovery"),
        }
    }
}

/// One element line of the compact screen text: its label and id.
struct Line {
    text: String,
    id: String,
}

fn lines(screen: &str) -> Vec<Line> {
    screen
        .lines()
        .map(|l| {
            let text = l.split('"').nth(1).unwrap_or_default().to_string();
            let id = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix('@'))
                .unwrap_or_default()
                .to_string();
            Line { text, id }
        })
        .collect()
}

/// What a selector says about its element: a label or an id.
fn wanted(sel: &str) -> Option<(bool, String)> {
    // `anchor >> target` names its element through a neighbour: neither half alone is it.
    if sel.contains(" >> ") {
        return None;
    }
    if let Some(id) = sel.strip_prefix('#') {
        return Some((true, id.rsplit(['/', ':']).next().unwrap_or(id).to_string()));
    }
    let start = sel.find("(\"")? + 2;
    let end = sel.rfind("\")")?;
    (end > start).then(|| (false, sel[start..end].to_string()))
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether screen id `have` is the id `want` after an update renamed it: the same once
/// case and `_` are ignored, or with a version suffix (`title` → `title_v2`).
fn same_id(have: &str, want: &str) -> bool {
    let (h, w) = (squash(have), squash(want));
    h == w
        || h.strip_prefix(w.as_str())
            .and_then(|rest| rest.strip_prefix('v'))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

fn answer(ctx: &Value) -> Value {
    let step = &ctx["failed_step"];
    // After an `expect` failed, the step's action already ran: what is missing is what
    // the expect names, not the step's target.
    let selectors: Vec<&str> = if ctx["error"]["error_type"] == "expect_failed" {
        ctx["error"]["selector"].as_str().into_iter().collect()
    } else {
        std::iter::once(&step["selector"])
            .chain(
                step["alternative_selectors"]
                    .as_array()
                    .into_iter()
                    .flatten(),
            )
            .filter_map(Value::as_str)
            .collect()
    };
    let screen = lines(ctx["current_screen"].as_str().unwrap_or_default());
    for (is_id, want) in selectors.iter().filter_map(|s| wanted(s)) {
        let w = want.to_lowercase();
        let hits: Vec<&Line> = screen
            .iter()
            .filter(|l| {
                if is_id {
                    !l.id.is_empty() && same_id(&l.id, &want)
                } else {
                    !l.text.is_empty()
                        && (l.text.to_lowercase() == w || l.text.to_lowercase().starts_with(&w))
                }
            })
            .collect();
        if let [one] = hits.as_slice() {
            let sel = if is_id {
                format!("#{}", one.id)
            } else {
                format!(":text(\"{}\")", one.text)
            };
            return json!({"action_type": "modify_selector", "new_selector": sel, "reason": format!("`{want}` is now `{sel}`"), "confidence": "high"});
        }
    }
    let dismiss = [
        "not now",
        "later",
        "no thanks",
        "don't allow",
        "close",
        "cancel",
    ];
    if let Some(l) = screen
        .iter()
        .find(|l| dismiss.contains(&l.text.to_lowercase().as_str()))
    {
        return json!({"action_type": "execute_action", "action": {"action": "tap", "selector": format!(":text(\"{}\")", l.text)},
                      "reason": "a dialog is in the way", "confidence": "medium"});
    }
    json!({"action_type": "abort", "reason": "nothing on screen matches the step", "confidence": "low"})
}

#[async_trait]
impl ChatModel for RuleModel {
    fn config(&self) -> &ModelConfig {
        &self.config
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatReply, LlmError> {
        let text: String = req
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let ctx: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(ChatReply {
            text: answer(&ctx).to_string(),
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
