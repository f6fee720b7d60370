//! How a chain (`chain.rs`) turns its agents' proposals into one action, and how one of
//! its agents hands a changed observation to the next (seed 000's "chain consensus").
//!
//! - `meaning`: two actions mean the same when they are the same kind with the same
//!   arguments and their targets resolve to the same element of the screen (an element
//!   id, a selector of that element, or a point inside it), whatever JSON they were written in.
//! - `majority`: the action the most proposals mean wins; when no single action has the
//!   most (a tie, or every proposal different) the chain's `TieRule` chooses, and the
//!   step's `consensus` annotation says so.
//! - `RoleModel`: a chain agent with `"role": "judge"` or `"filter"` is asked one
//!   question with its model. The judge answers a proposal's number and nothing else;
//!   the filter a JSON `ObservationEdit`. Both are read strictly: an answer that does not
//!   parse is the step's error (a rejected step), never a guess.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::context::AgentContext;
use super::parse_error::ParseError;
use super::{AgentError, Decision, Meter};
use crate::domain::{Action, ModelCall, ModelRole, TieRule};
use crate::llm::{ChatModel, ChatRequest, Message, Part, PriceTable};
use crate::screen::{ActionableElement, ScreenRepresentation};

/// What an agent of a chain does at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainRole {
    /// Proposes an action.
    #[default]
    Propose,
    /// Changes the observation the agents after it get (drops elements, adds a note).
    Filter,
    /// Picks one of the proposals (`"decide": "judge"`).
    Judge,
}

/// A filter agent's output: the observation the next agents get is this one's with
/// these elements left out and this note added.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationEdit {
    #[serde(default)]
    pub drop: Vec<u32>,
    #[serde(default)]
    pub note: Option<String>,
}

impl ObservationEdit {
    /// Applies the edit to `ctx`: the dropped elements (and what is nested under them)
    /// leave the element list, and the note joins the guidance.
    pub fn apply(&self, ctx: &mut AgentContext, by: &str) {
        let screen = &mut ctx.observation.screen;
        screen
            .actionable_elements
            .retain(|e| !self.drop.contains(&e.element_id));
        screen.elements = drop_lines(&screen.elements, &self.drop);
        if let Some(note) = self
            .note
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            let line = format!("Note from {by}: {note}");
            ctx.guidance = Some(match ctx.guidance.take() {
                Some(g) => format!("{g}\n\n{line}"),
                None => line,
            });
        }
    }
}

/// The compact element list without the `[id]` lines of `drop` and the lines nested
/// (indented) under them.
fn drop_lines(text: &str, drop: &[u32]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(level) = skipping {
            if indent > level {
                continue;
            }
            skipping = None;
        }
        let id = line
            .trim_start()
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(n, _)| n.parse::<u32>().ok());
        if id.is_some_and(|id| drop.contains(&id)) {
            skipping = Some(indent);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

/// What an action means on `screen`: its JSON with the target replaced by the element
/// it resolves to (`element 3`), or kept as written when it resolves to none.
pub fn meaning(action: &Action, screen: &ScreenRepresentation, size: Option<(u32, u32)>) -> String {
    let Ok(Value::Object(mut m)) = serde_json::to_value(action) else {
        return serde_json::to_string(action).unwrap_or_default();
    };
    if let Some(el) = resolved(&m, screen, size) {
        for k in ["element", "selector", "coordinate", "pixel"] {
            m.remove(k);
        }
        m.insert("target".into(), Value::String(format!("element {el}")));
    }
    // Sorted keys: the same arguments in another order mean the same.
    let sorted: std::collections::BTreeMap<_, _> = m.into_iter().collect();
    serde_json::to_string(&sorted).unwrap_or_default()
}

/// The element an action's target names on `screen`, if any.
fn resolved(
    m: &Map<String, Value>,
    screen: &ScreenRepresentation,
    size: Option<(u32, u32)>,
) -> Option<u32> {
    let els = &screen.actionable_elements;
    if let Some(id) = m.get("element").and_then(Value::as_u64) {
        return els
            .iter()
            .find(|e| u64::from(e.element_id) == id)
            .map(|e| e.element_id);
    }
    if let Some(sel) = m.get("selector").and_then(Value::as_str) {
        return els
            .iter()
            .find(|e| e.selector == sel || e.alternative_selectors.iter().any(|a| a == sel))
            .map(|e| e.element_id);
    }
    let point = |v: &Value| Some((v.get(0)?.as_f64()?, v.get(1)?.as_f64()?));
    let (x, y) = match (
        m.get("coordinate").and_then(point),
        m.get("pixel").and_then(point),
    ) {
        (Some((x, y)), _) => {
            let (w, h) = size?;
            (x * f64::from(w), y * f64::from(h))
        }
        (None, Some(p)) => p,
        _ => return None,
    };
    innermost(els, x as i32, y as i32)
}

/// The smallest element whose bounds hold the pixel.
fn innermost(els: &[ActionableElement], x: i32, y: i32) -> Option<u32> {
    let p = crate::domain::PixelPoint { x, y };
    els.iter()
        .filter(|e| e.bounds.contains(p))
        .min_by_key(|e| i64::from(e.bounds.width()) * i64::from(e.bounds.height()))
        .map(|e| e.element_id)
}

/// The majority's choice among `proposals` (by index), how many meant it, and whether
/// it was a tie the rule decided.
pub fn majority(meanings: &[String], tie: TieRule) -> (usize, u32, bool) {
    let votes = |i: usize| meanings.iter().filter(|m| **m == meanings[i]).count() as u32;
    let most = (0..meanings.len()).map(votes).max().unwrap_or(0);
    // The distinct meanings with the most votes, by their first proposal.
    let mut leaders: Vec<usize> = (0..meanings.len())
        .filter(|&i| votes(i) == most && meanings[..i].iter().all(|m| *m != meanings[i]))
        .collect();
    if most >= 2 && leaders.len() == 1 {
        return (leaders.remove(0), most, false);
    }
    let i = match tie {
        TieRule::First => 0,
        TieRule::Last => meanings.len() - 1,
    };
    (i, votes(i), true)
}

/// A chain agent asked one question with its model: a judge or a filter.
pub struct RoleModel {
    pub role: ChainRole,
    pub model: Arc<dyn ChatModel>,
    pub prices: PriceTable,
}

/// A role model's answer: what it says, the raw text, and the calls it took.
pub struct RoleAnswer<T> {
    pub value: T,
    pub raw: String,
    pub calls: Vec<ModelCall>,
}

const JUDGE_PROMPT: &str = "You judge the proposals of several agents that operate an Android phone. \
Read the task and the screen, then choose the proposal that best moves the task forward. \
Answer with only the proposal's number, nothing else.";

const FILTER_PROMPT: &str = "You prepare an Android phone's screen for the next agent of a chain. \
Read the task and the screen's elements. Answer with only a JSON object: \
{\"drop\": [ids of elements that do not matter for the task], \"note\": \"one line the next agent should know\"}. \
Both fields are optional.";

impl RoleModel {
    pub fn describe(&self) -> String {
        let c = self.model.config();
        let role = match self.role {
            ChainRole::Judge => "judge",
            _ => "filter",
        };
        format!(
            "{role} {}:{}",
            c.provider.display_name().to_lowercase(),
            c.model
        )
    }

    async fn ask(
        &self,
        system: &str,
        text: String,
        role: ModelRole,
    ) -> Result<(String, Vec<ModelCall>), AgentError> {
        let mut meter = Meter::for_role(&self.prices, role);
        let req = ChatRequest::new(
            Some(system.to_string()),
            vec![Message::user(vec![Part::Text(text)])],
        );
        let reply = meter.call(self.model.as_ref(), &req).await?;
        Ok((reply.text, meter.log))
    }

    /// Asks the judge which proposal to take: its index into `proposals`.
    pub async fn judge(
        &self,
        ctx: &AgentContext,
        proposals: &[(String, Decision)],
    ) -> Result<RoleAnswer<usize>, AgentError> {
        let mut text = ctx.prompt_text_before_elements();
        text.push_str(&format!(
            "\nScreen:\n{}\n\nProposals:\n",
            ctx.observation.screen.elements
        ));
        for (i, (who, d)) in proposals.iter().enumerate() {
            let action = serde_json::to_string(&d.action).unwrap_or_default();
            text.push_str(&format!("{}. {who}: {action}", i + 1));
            if !d.thinking.trim().is_empty() {
                text.push_str(&format!(" (because: {})", d.thinking.trim()));
            }
            text.push('\n');
        }
        let (raw, calls) = self.ask(JUDGE_PROMPT, text, ModelRole::Judge).await?;
        match parse_choice(&raw, proposals.len()) {
            Ok(i) => Ok(RoleAnswer {
                value: i,
                raw,
                calls,
            }),
            Err(e) => Err(unusable(e, raw, calls)),
        }
    }

    /// Asks the filter how to change the observation.
    pub async fn filter(
        &self,
        ctx: &AgentContext,
    ) -> Result<RoleAnswer<ObservationEdit>, AgentError> {
        let mut text = ctx.prompt_text_before_elements();
        text.push_str(&format!("\nScreen:\n{}", ctx.observation.screen.elements));
        let (raw, calls) = self.ask(FILTER_PROMPT, text, ModelRole::Filter).await?;
        match parse_edit(&raw, &ctx.observation.screen) {
            Ok(edit) => Ok(RoleAnswer {
                value: edit,
                raw,
                calls,
            }),
            Err(e) => Err(unusable(e, raw, calls)),
        }
    }
}

/// A role's unusable answer as the step's error, with what its call cost.
fn unusable(error: ParseError, raw: String, calls: Vec<ModelCall>) -> AgentError {
    let sum = super::CallSum::of(&calls);
    AgentError::Parse {
        error: Box::new(error),
        raw,
        attempts: 1,
        usage: sum.usage,
        cost: sum.cost,
        calls,
    }
}

/// The judge's answer: a proposal number from 1 to `n` and nothing else (a final period
/// allowed); returned as an index.
pub fn parse_choice(raw: &str, n: usize) -> Result<usize, ParseError> {
    let t = raw.trim().trim_end_matches('.');
    match t.parse::<usize>() {
        Ok(k) if (1..=n).contains(&k) => Ok(k - 1),
        _ => Err(ParseError::InvalidField {
            action: "judge".into(),
            field: "answer".into(),
            reason: format!(
                "the judge must answer with one proposal's number, 1 to {n}, and nothing else; it answered `{}`",
                crate::screen::elements::clip(raw.trim(), 120)
            ),
        }),
    }
}

/// The filter's answer: one JSON object (a ```json fence around it allowed), its ids
/// on this screen.
pub fn parse_edit(raw: &str, screen: &ScreenRepresentation) -> Result<ObservationEdit, ParseError> {
    let t = raw.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    let edit: ObservationEdit = serde_json::from_str(t).map_err(|e| ParseError::InvalidField {
        action: "filter".into(),
        field: "answer".into(),
        reason: format!(
            "the filter must answer with only a JSON object {{\"drop\": [ids], \"note\": \"…\"}}: {e}"
        ),
    })?;
    if let Some(id) = edit.drop.iter().find(|id| {
        !screen
            .actionable_elements
            .iter()
            .any(|e| e.element_id == **id)
    }) {
        return Err(ParseError::InvalidField {
            action: "filter".into(),
            field: "drop".into(),
            reason: format!("there is no element {id} on this screen"),
        });
    }
    Ok(edit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tie_or_no_repeat_falls_back_to_the_rule_and_says_so() {
        let m = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(majority(&m(&["a", "b", "a"]), TieRule::Last), (0, 2, false));
        assert_eq!(majority(&m(&["a", "b"]), TieRule::Last), (1, 1, true));
        assert_eq!(majority(&m(&["a", "b"]), TieRule::First), (0, 1, true));
        assert_eq!(
            majority(&m(&["a", "a", "b", "b"]), TieRule::Last),
            (3, 2, true)
        );
        assert_eq!(
            majority(&m(&["a", "a", "b", "b", "b"]), TieRule::First),
            (2, 3, false)
        );
    }

    #[test]
    fn the_judges_answer_is_a_number_or_an_error() {
        assert_eq!(parse_choice(" 2\n", 3).unwrap(), 1);
        assert_eq!(parse_choice("3.", 3).unwrap(), 2);
        for bad in ["4", "0", "the second", "2 because it is best", ""] {
            assert!(parse_choice(bad, 3).is_err(), "{bad}");
        }
    }

    #[test]
    fn dropped_elements_leave_the_list_with_what_is_nested_under_them() {
        let text =
            "com.app\n[0] Button \"A\"\n[1] List\n  [2] Row \"x\"\n  \"y\"\n[3] Button \"B\"";
        assert_eq!(
            drop_lines(text, &[1]),
            "com.app\n[0] Button \"A\"\n[3] Button \"B\""
        );
        assert_eq!(
            drop_lines(text, &[3]),
            "com.app\n[0] Button \"A\"\n[1] List\n  [2] Row \"x\"\n  \"y\""
        );
    }
}
