//! The three roles beside the acting agent (seed 002): the planner, the progress checker
//! and the completion verifier. Each is one model call with its own prompt and a JSON
//! answer, read leniently (prose or code fences around the object are fine). A role
//! never fails the task: its caller gets the error as text and goes on without it.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::agent::Meter;
use crate::agent::context::{AgentContext, StepRecord};
use crate::domain::{ModelCall, ModelRole, Plan};
use crate::llm::{ChatModel, ChatRequest, ImageData, Message, Part, PriceTable};

// Each says once what the role gets and what it answers; the document's field names
// say the rest.
const PLANNER_SYSTEM: &str = "You plan for an agent that operates an Android phone one step at a time; it reads your plan as guidance. \
From the task, the screen (and a screenshot when attached), the installed apps and, when re-planning, what went wrong \
and the previous plan, propose 2 or 3 different approaches. Answer with one JSON object only: \
{\"approaches\": [{\"name\": \"short\", \"description\": \"one or two sentences\", \"steps_summary\": [\"step\"], \
\"confidence\": 0.0-1.0}], \"recommended\": <index>, \"diagnosis\": \"re-planning: what went wrong\", \
\"split_screen\": {\"top\": \"app\", \"bottom\": \"app\", \"reason\": \"why\"} only if two apps must be on screen at once}";

const PROGRESS_SYSTEM: &str = "Is the agent operating an Android phone making meaningful progress on its task? \
Repeating an action, going back and forth between screens, or working in an unrelated app is not progress. \
Answer with one JSON object only: {\"progressing\": true|false, \"reason\": \"one sentence\"}";

const VERIFIER_SYSTEM: &str = "You verify an agent that operates an Android phone and claims its task is done: \
judge the claim against the task and the current screen (and the screenshot when attached). \
Answer with one JSON object only: {\"done\": true|false, \"reason\": \"one sentence\"}. \
If it did something other than the task, say so plainly: what it did instead, and that it is the wrong thing.";

/// What the planner is given (seed 002's `planInitial` / `planRecovery` inputs). The
/// planner sees failure summaries, not the fast agent's conversation.
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub task: String,
    pub screen: String,
    pub screenshot: Option<ImageData>,
    pub installed_apps: Arc<Vec<String>>,
    pub failures: Vec<String>,
    pub previous: Option<Plan>,
}

impl PlanInput {
    pub fn new(ctx: &AgentContext, failures: &[String], previous: Option<&Plan>) -> Self {
        Self {
            task: ctx.instruction.clone(),
            screen: screen_text(ctx),
            screenshot: ctx.observation.screenshot.clone(),
            installed_apps: ctx.device.installed_apps.clone(),
            failures: failures.to_vec(),
            previous: previous.cloned(),
        }
    }
}

/// The progress checker's answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Progress {
    pub progressing: bool,
    #[serde(default)]
    pub reason: String,
}

/// The completion verifier's answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Verdict {
    pub done: bool,
    #[serde(default)]
    pub reason: String,
}

/// A role's answer and the calls it made (logged even when it failed).
pub type RoleResult<T> = (Result<T, String>, Vec<ModelCall>);

/// Asks the planner. Owned inputs: the initial and recovery plans run in the background.
pub async fn plan(
    model: Arc<dyn ChatModel>,
    prices: PriceTable,
    input: PlanInput,
) -> RoleResult<Plan> {
    let mut doc = json!({
        "task": input.task,
        "current_screen": input.screen,
        "installed_apps": *input.installed_apps,
    });
    if !input.failures.is_empty() {
        doc["failure_context"] = json!(input.failures);
    }
    if let Some(p) = &input.previous {
        doc["previous_plan"] = json!(p);
    }
    let shot = input.screenshot.filter(|_| model.config().vision);
    let mut meter = Meter::for_role(&prices, ModelRole::Planner);
    let answer = ask(
        &mut meter,
        model.as_ref(),
        PLANNER_SYSTEM,
        doc.to_string(),
        shot,
    )
    .await;
    let plan = answer.and_then(|text| {
        let p: Plan = json_object(&text)?;
        if p.approaches.is_empty() {
            return Err("the plan has no approaches".into());
        }
        Ok(p)
    });
    (plan, meter.log)
}

/// Asks the fast model whether the agent is getting anywhere.
pub async fn check_progress(
    model: &dyn ChatModel,
    prices: &PriceTable,
    ctx: &AgentContext,
) -> RoleResult<Progress> {
    let mut meter = Meter::for_role(prices, ModelRole::Progress);
    let answer = ask(&mut meter, model, PROGRESS_SYSTEM, progress_doc(ctx), None).await;
    (answer.and_then(|t| json_object(&t)), meter.log)
}

/// The progress checker's document: the task, the screen and the last five steps as the
/// history's own lines (one short line a step, as the acting agent reads them).
fn progress_doc(ctx: &AgentContext) -> String {
    let all: Vec<&StepRecord> = ctx.history.steps().collect();
    let last: Vec<String> = all[all.len().saturating_sub(5)..]
        .iter()
        .map(|r| r.line())
        .collect();
    json!({"task": ctx.instruction, "current_screen": screen_text(ctx), "last_actions": last})
        .to_string()
}

/// Asks the verifier whether a claimed finish holds on the current screen.
pub async fn verify_finish(
    model: &dyn ChatModel,
    prices: &PriceTable,
    ctx: &AgentContext,
    claim: &str,
) -> RoleResult<Verdict> {
    let doc = json!({"task": ctx.instruction, "claim": claim, "current_screen": screen_text(ctx)});
    let shot = ctx
        .observation
        .screenshot
        .clone()
        .filter(|_| model.config().vision);
    let mut meter = Meter::for_role(prices, ModelRole::Verifier);
    let answer = ask(&mut meter, model, VERIFIER_SYSTEM, doc.to_string(), shot).await;
    (answer.and_then(|t| json_object(&t)), meter.log)
}

/// Whether a rejection says the agent did the wrong thing (seed 002's wrong-task keywords).
pub fn is_wrong_task(reason: &str) -> bool {
    let r = reason.to_lowercase();
    ["wrong", "different", "instead of"]
        .iter()
        .any(|k| r.contains(k))
}

async fn ask(
    meter: &mut Meter<'_>,
    model: &dyn ChatModel,
    system: &str,
    text: String,
    screenshot: Option<ImageData>,
) -> Result<String, String> {
    let mut parts = vec![Part::Text(text)];
    if let Some(img) = screenshot {
        parts.push(Part::Image(img));
    }
    let req = ChatRequest::new(Some(system.to_string()), vec![Message::user(parts)]);
    meter
        .call(model, &req)
        .await
        .map(|r| r.text)
        .map_err(|e| e.to_string())
}

/// The screen as a role reads it: the element map (which opens with the app's
/// package), after a line saying so when a dialog is open.
fn screen_text(ctx: &AgentContext) -> String {
    let s = &ctx.observation.screen;
    match s.has_modal {
        true => format!("A dialog is open.\n{}", s.elements),
        false => s.elements.clone(),
    }
}

/// The first `{` to the last `}` of a reply, as `T`.
fn json_object<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let clip: String = text.chars().take(200).collect();
    let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
        return Err(format!("no JSON object in the answer: {clip}"));
    };
    if b < a {
        return Err(format!("no JSON object in the answer: {clip}"));
    }
    serde_json::from_str(&text[a..=b]).map_err(|e| format!("unusable answer ({e}): {clip}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_through_prose_and_fences() {
        let p: Progress =
            json_object("Sure.\n```json\n{\"progressing\": false, \"reason\": \"same tap\"}\n```")
                .unwrap();
        assert!(!p.progressing);
        assert_eq!(p.reason, "same tap");
        let plan: Plan = json_object(
            r#"{"approaches": [{"name": "a", "description": "d", "steps_summary": ["x"], "confidence": 0.7}], "recommended_index": 0}"#,
        )
        .unwrap();
        assert_eq!(plan.approaches.len(), 1);
        assert!(
            json_object::<Verdict>("no idea")
                .unwrap_err()
                .contains("no JSON object")
        );
    }

    /// Each role's fixed prompt stays small (o200k; 170, 80 and 85 before they were
    /// compacted, the planner's said the answer's shape twice; the planner's
    /// `split_screen` recommendation adds about 25) and the progress checker
    /// reads the steps as the history's one-line form, not a JSON object a step.
    #[test]
    fn role_prompts_are_small_and_progress_reads_history_lines() {
        let n = crate::screen::count_o200k;
        assert!(n(PLANNER_SYSTEM) <= 165, "{}", n(PLANNER_SYSTEM));
        assert!(n(PROGRESS_SYSTEM) <= 60, "{}", n(PROGRESS_SYSTEM));
        assert!(n(VERIFIER_SYSTEM) <= 85, "{}", n(VERIFIER_SYSTEM));
        let screen = crate::screen::ScreenRepresentation {
            app_package: None,
            activity: None,
            has_modal: false,
            elements: "[0] Button \"OK\"".into(),
            summary: String::new(),
            actionable_elements: Vec::new(),
        };
        let obs = crate::agent::Observation {
            screen,
            tree: None,
            screenshot: None,
            step_count: 1,
            max_steps: 20,
            elapsed: std::time::Duration::ZERO,
        };
        let mut history = crate::agent::History::new(8);
        history.push_step(StepRecord {
            step: 1,
            thinking: String::new(),
            action: crate::domain::Action::Key {
                key: crate::domain::Key::Back,
            },
            outcome: "no visible change".into(),
            failed: false,
        });
        let ctx = AgentContext::new("Open Clock".into(), obs, history);
        let doc: serde_json::Value = serde_json::from_str(&progress_doc(&ctx)).unwrap();
        assert_eq!(
            doc["last_actions"],
            json!(["1. key key=\"back\" → no visible change"])
        );
    }

    #[test]
    fn wrong_task_keywords_follow_the_seed() {
        assert!(is_wrong_task("It opened the wrong contact"));
        assert!(is_wrong_task("A different alarm was set"));
        assert!(is_wrong_task("It searched for yogurt instead of oranges"));
        assert!(!is_wrong_task("The alarm is not saved yet"));
    }
}
