//! AI in the middle (seed 001, "AITM Recovery Contract"): when a replay step still fails,
//! a model is given the recovery context (the failed step and its error, the full
//! screen, its elements with the selectors that name them, the matching recovery hints,
//! the goal and progress, the last 5 steps) and answers with one `RecoveryAction` as
//! JSON. Any provider works: the request is a plain chat request through the shared
//! clients. The answer is read from prose and code fences; one that is not a
//! `RecoveryAction`, or has low confidence, is unusable: the caller counts it as a failed
//! attempt and acts on nothing.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::{AgentContext, AgentError, Meter};
use crate::llm::{ChatModel, ChatRequest, Message, Part};
use crate::script::hints::{Failure, matching};
use crate::script::{Script, ScriptStep};

const SYSTEM: &str = "You repair a UI automation script that failed on an Android phone. \
You get a JSON document: failed_step (the script step), error (error_type, message, the \
selector that failed, the screen state), current_screen (the screen as text, one element \
per line: [n] Kind \"label\" flags), elements (the selectors that name each [n], \
best first: use only these), recovery_hints from the script's author, goal_context and \
history (the last steps). Answer with ONE JSON object and nothing else:\n\
{\"action_type\": \"execute_action\" | \"modify_selector\" | \"skip_step\" | \"abort\" | \"ask_user\",\n \
\"action\": {\"action\": \"tap\", \"selector\": \"#id\"}   (execute_action: one action to run now, e.g. to close an obstacle or do the step another way),\n \
\"new_selector\": \"#id\" | \":text(\\\"…\\\")\" | \":desc(\\\"…\\\")\"   (modify_selector: the element the step meant, on this screen),\n \
\"question\": \"…\"   (ask_user),\n \"reason\": \"why\", \"confidence\": \"high\" | \"medium\" | \"low\"}\n\
Prefer modify_selector when the element is on screen under another id or label (renamed, \
reworded, translated, turned into an icon with a description); execute_action when \
something blocks it (a dialog the flow did not ask for, the keyboard); skip_step only when \
the step is not needed; abort when the goal cannot be reached. Never answer with an element \
you are not sure is the one the step meant: several look alike (rows of a list), or none \
fits, then abort with confidence low. When error_type is expect_failed, the step's action \
already ran and is not run again: modify_selector names the element the step's expect \
meant (error.selector, under its new id or label), and execute_action runs one more action \
before the expect is checked again; never repeat the step's own action. An answer that is \
not this JSON object, or has confidence low, is not acted on.";

pub use crate::domain::RecoveryType;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryAction {
    pub action_type: RecoveryType,
    #[serde(default)]
    pub action: Option<Value>,
    #[serde(default)]
    pub new_selector: Option<String>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub reason: String,
    pub confidence: Confidence,
}

/// The model AI in the middle asks.
#[derive(Clone)]
pub struct Aitm {
    pub model: Arc<dyn ChatModel>,
}

/// What went wrong, for the recovery context.
#[derive(Debug, Clone)]
pub struct StepError {
    pub error_type: &'static str,
    pub message: String,
    pub selector: Option<String>,
}

/// A failed step as AI in the middle sees it, whatever ran it: a script step, or a
/// flow command (`agent::flow`). The script's builds it from the step; the rest of the
/// recovery context (the screen, its elements, the history) is the same for both.
#[derive(Debug, Clone)]
pub struct FailedStep {
    /// `failed_step`: the step as its author wrote it.
    pub step: Value,
    /// The author's recovery hints that match the failure.
    pub hints: Vec<String>,
    pub goal: String,
    /// `step 3 of 7`.
    pub progress: String,
}

impl Aitm {
    /// One recovery question. An answer that is not a RecoveryAction is an error the
    /// caller counts as a failed attempt.
    pub(crate) async fn ask(
        &self,
        meter: &mut Meter<'_>,
        ctx: &AgentContext,
        script: &Script,
        index: usize,
        err: &StepError,
    ) -> Result<RecoveryAction, AgentError> {
        self.ask_about(meter, ctx, &script_step(ctx, script, index, err), err)
            .await
    }

    /// `ask`, for any failed step.
    pub(crate) async fn ask_about(
        &self,
        meter: &mut Meter<'_>,
        ctx: &AgentContext,
        failed: &FailedStep,
        err: &StepError,
    ) -> Result<RecoveryAction, AgentError> {
        let req = request(ctx, failed, err);
        let reply = meter.call(self.model.as_ref(), &req).await?;
        parse(&reply.text).map_err(|m| {
            AgentError::Recovery(format!("{m}; the model said: {}", clip(&reply.text)))
        })
    }
}

/// The request AI in the middle sends for a failed step (`droidpilot bench tokens`
/// measures it).
pub fn recovery_request(
    ctx: &AgentContext,
    script: &Script,
    index: usize,
    err: &StepError,
) -> ChatRequest {
    request(ctx, &script_step(ctx, script, index, err), err)
}

/// The recovery question about `failed`, as sent.
fn request(ctx: &AgentContext, failed: &FailedStep, err: &StepError) -> ChatRequest {
    ChatRequest::new(
        Some(SYSTEM.to_string()),
        vec![Message::user(vec![Part::Text(
            context(ctx, failed, err).to_string(),
        )])],
    )
}

/// A script step as the recovery context shows it, with its matching hints.
fn script_step(ctx: &AgentContext, script: &Script, index: usize, err: &StepError) -> FailedStep {
    let step: &ScriptStep = &script.steps[index];
    let screen = &ctx.observation.screen;
    let failure = Failure {
        error_type: err.error_type.to_string(),
        selector: err.selector.clone(),
        has_modal: screen.has_modal,
        keyboard_shown: ctx.observation.tree.as_ref().is_some_and(|t| {
            t.tree
                .nodes
                .iter()
                .any(|n| n.package.contains("inputmethod"))
        }),
    };
    FailedStep {
        step: json!(step),
        hints: matching(&step.recovery_hints, &failure)
            .iter()
            .map(|h| h.hint.clone())
            .collect(),
        goal: script.goal.clone(),
        progress: format!("step {} of {}", index + 1, script.steps.len()),
    }
}

fn context(ctx: &AgentContext, failed: &FailedStep, err: &StepError) -> Value {
    let screen = &ctx.observation.screen;
    let all: Vec<_> = ctx.history.steps().collect();
    let history: Vec<Value> = all[all.len().saturating_sub(5)..]
        .iter()
        .map(|r| json!({"step": r.step, "action": r.action, "outcome": r.outcome}))
        .collect();
    json!({
        "failed_step": failed.step,
        "error": {"error_type": err.error_type, "message": err.message, "selector": err.selector,
                  "screen_state": {"app": screen.app_package, "has_modal": screen.has_modal, "summary": screen.summary}},
        "current_screen": screen.elements,
        "elements": selectors_of(screen),
        "recovery_hints": failed.hints,
        "goal_context": {"goal": failed.goal, "progress": failed.progress},
        "history": history,
    })
}

/// The screen's elements with the selectors that name them (the model answers with
/// these), at most `MAX_ELEMENTS`: one line each, `[n] selector | alternative…`, keyed
/// by the `[n]` of `current_screen`, which already says each one's kind and label (as
/// JSON objects they cost about twice the tokens for nothing more).
fn selectors_of(screen: &crate::screen::ScreenRepresentation) -> String {
    let mut out = String::new();
    for e in screen.actionable_elements.iter().take(MAX_ELEMENTS) {
        out += &format!("[{}] {}", e.element_id, e.selector);
        for alt in &e.alternative_selectors {
            out += &format!(" | {alt}");
        }
        out.push('\n');
    }
    out
}

/// Elements listed with their selectors in the recovery context.
const MAX_ELEMENTS: usize = 80;

/// The first JSON object in the reply (models wrap it in prose or code fences).
fn parse(text: &str) -> Result<RecoveryAction, String> {
    let start = text.find('{').ok_or("no JSON object in the answer")?;
    let end = text.rfind('}').ok_or("no JSON object in the answer")?;
    if end < start {
        return Err("no JSON object in the answer".into());
    }
    serde_json::from_str(&text[start..=end]).map_err(|e| format!("not a RecoveryAction: {e}"))
}

fn clip(s: &str) -> String {
    s.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_prose_and_fences() {
        let a = parse("Sure:\n```json\n{\"action_type\": \"modify_selector\", \"new_selector\": \"#send\", \"reason\": \"renamed\", \"confidence\": \"high\"}\n```").unwrap();
        assert_eq!(a.action_type, RecoveryType::ModifySelector);
        assert_eq!(a.new_selector.as_deref(), Some("#send"));
        assert!(parse("no idea").is_err());
        assert!(parse("{\"action_type\": \"fly\", \"confidence\": \"high\"}").is_err());
    }
}
