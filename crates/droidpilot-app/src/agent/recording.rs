//! Script recording by the navigator (seed 001, "Script Generation Contract"): with
//! `"record": true` the navigator is given two more tools. After an action worked it
//! calls `record_step` with a `ScriptStep` (resilient selector, alternatives, wait
//! condition, recovery hints); when the goal is reached it calls `finalize_script`
//! (`success`, `final_steps`, `outputs`, `summary`), which also ends the task. Each step
//! is validated as it is recorded, so the model fixes a bad selector while it still sees
//! the screen. The finished `Script` is taken by the runner and stored.
//!
//! A navigator that ends with `finish` (success) after recording steps, without
//! `finalize_script`, still yields a script: the steps it recorded, with the finish
//! reason as the summary.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::parse_error::ParseError;
use crate::domain::Action;
use crate::llm::ToolSpec;
use crate::script::{Script, ScriptStep};

/// The tools recording adds.
pub const RECORD_TOOLS: &[&str] = &["record_step", "finalize_script"];

/// What the system prompt says when recording is on.
pub const RECORDING_PROMPT: &str = "\n## Recording a script\n\
This run is recorded as a replayable script. After an action has worked (you see its \
effect on the current screen), call `record_step` for it, in the same turn as your next \
action when you can. Choose the selector in this order: `#resource_id`; a unique \
`:text(\"…\")`; `:desc(\"…\")`; `Type:text(\"…\")`; the index path `[0.1.2]` only as a last \
resort, and then always with `alternative_selectors`. Add a `wait_condition` when the step \
needs an element that loads, an `expect` when the result is visible, and `recovery_hints` \
for what could go wrong. Steps that did not work, or that you undid, are not recorded. \
When the goal is reached, call `finalize_script` (it also ends the task).\n";

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FinalizeArgs {
    /// Whether the goal was achieved.
    success: bool,
    /// Cleanup steps to append (e.g. going back to the home screen).
    #[serde(default)]
    final_steps: Vec<ScriptStep>,
    /// Variables to return from a replay (names set by `store_as`).
    #[serde(default)]
    outputs: Vec<String>,
    /// What the script does, in one or two sentences.
    summary: String,
}

/// The script being built during one task.
#[derive(Debug, Clone)]
pub struct Recording {
    goal: String,
    steps: Vec<ScriptStep>,
    done: Option<Script>,
}

impl Recording {
    pub fn new(goal: &str) -> Self {
        Self {
            goal: goal.to_string(),
            steps: Vec::new(),
            done: None,
        }
    }

    pub fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec::of::<ScriptStep>(
                "record_step",
                "Record the action that just worked as a script step (does not act).",
            ),
            ToolSpec::of::<FinalizeArgs>(
                "finalize_script",
                "Finish the recorded script and end the task.",
            ),
        ]
    }

    pub fn steps(&self) -> &[ScriptStep] {
        &self.steps
    }

    /// Adds one step; the answer is the tool result for the model.
    pub fn record_step(&mut self, args: Value) -> Result<String, ParseError> {
        let step: ScriptStep = serde_json::from_value(args).map_err(|e| invalid("step", e))?;
        let path = format!("steps[{}]", self.steps.len());
        step.validate(&path, &self.known_vars())
            .map_err(|e| invalid(&e.path, format!("{} ({})", e.message, e.hint)))?;
        self.steps.push(step);
        Ok(format!(
            "recorded as step {} of the script; go on with the task",
            self.steps.len()
        ))
    }

    /// Completes the script; the answer is the `finish` that ends the task.
    pub fn finalize(&mut self, args: Value) -> Result<Action, ParseError> {
        let a: FinalizeArgs = serde_json::from_value(args).map_err(|e| invalid("arguments", e))?;
        let mut steps = self.steps.clone();
        steps.extend(a.final_steps);
        let script = self.script(steps, a.outputs, Some(a.summary.clone()));
        if a.success {
            script
                .validate()
                .map_err(|e| invalid(&e.path, format!("{} ({})", e.message, e.hint)))?;
            self.done = Some(script);
        }
        Ok(Action::Finish {
            success: a.success,
            reason: Some(a.summary),
            answer: None,
        })
    }

    /// The finished script: from `finalize_script`, or the recorded steps when the task
    /// ended in a successful `finish`.
    pub fn take(&mut self, finished_ok: bool, reason: Option<&str>) -> Option<Script> {
        if let Some(s) = self.done.take() {
            return Some(s);
        }
        if !finished_ok || self.steps.is_empty() {
            return None;
        }
        let s = self.script(self.steps.clone(), Vec::new(), reason.map(str::to_string));
        s.validate().is_ok().then_some(s)
    }

    fn script(
        &self,
        steps: Vec<ScriptStep>,
        outputs: Vec<String>,
        summary: Option<String>,
    ) -> Script {
        Script {
            name: self.goal.chars().take(80).collect(),
            goal: self.goal.clone(),
            app: None,
            inputs: Default::default(),
            steps,
            outputs,
            summary,
            fuzzy: true,
            max_recovery_attempts: crate::script::model::DEFAULT_MAX_RECOVERY_ATTEMPTS,
            maestro: None,
        }
    }

    fn known_vars(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|s| s.parameters.store_as.clone())
            .collect()
    }
}

fn invalid(field: &str, reason: impl std::fmt::Display) -> ParseError {
    ParseError::InvalidField {
        action: "record_step".into(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn steps_are_checked_as_they_are_recorded_and_finalize_ends_the_task() {
        let mut r = Recording::new("send hi to Ana");
        let e = r
            .record_step(json!({"action": "tap", "selector": ":text(\"Ana)"}))
            .unwrap_err();
        assert!(e.to_string().contains("column"), "{e}");
        let e = r
            .record_step(json!({"action": "tap", "selector": "[0.2]"}))
            .unwrap_err();
        assert!(e.to_string().contains("alternative_selectors"), "{e}");
        r.record_step(json!({"action": "tap", "selector": ":text(\"Ana\")"}))
            .unwrap();
        r.record_step(
            json!({"action": "type", "selector": "#input", "parameters": {"text": "hi"}}),
        )
        .unwrap();
        let fin = r
            .finalize(json!({"success": true, "summary": "sends hi", "final_steps": [{"action": "key", "parameters": {"key": "home"}}]}))
            .unwrap();
        assert!(matches!(fin, Action::Finish { success: true, .. }));
        let s = r.take(true, None).unwrap();
        assert_eq!(s.steps.len(), 3);
        assert_eq!(s.summary.as_deref(), Some("sends hi"));
        assert_eq!(s.goal, "send hi to Ana");
    }

    #[test]
    fn a_plain_successful_finish_keeps_the_recorded_steps_and_a_failure_keeps_none() {
        let mut r = Recording::new("g");
        r.record_step(json!({"action": "key", "parameters": {"key": "back"}}))
            .unwrap();
        assert!(r.clone().take(false, None).is_none());
        assert_eq!(
            r.take(true, Some("done")).unwrap().summary.as_deref(),
            Some("done")
        );
    }

    #[test]
    fn the_tool_schemas_are_self_contained() {
        for t in Recording::tools() {
            let s = t.parameters.to_string();
            assert!(!s.contains("$ref"), "{}: {s}", t.name);
            assert!(s.contains("selector"), "{}", t.name);
        }
    }
}
