//! What the agent remembers of a resumed task: its history rebuilt from what was
//! committed, as the live run had built it. The steps carry most of it (the action, the
//! outcome; an `ask_user` step's answer and an `mcp_call` step's result are in the step's
//! `outcome.detail`); a person's steps during a take-over are told as the person's; the
//! answers to the runner's own "I seem to be stuck" questions are only in the
//! interventions, placed after the step they followed.

use serde_json::Value;

use crate::agent::context::{History, Note, StepRecord};
use crate::domain::{Action, Intervention, InterventionKind, Step, StepStatus};
use crate::run::interaction::is_closer;

/// A take-over being read back: its first step, who, and what they did.
type Takeover = (u32, String, Vec<String>);

/// The longest tool result a note keeps (as the live run does).
const RESULT_CHARS: usize = 2000;

/// Fills `history` from the committed `steps` (in order) and the task's interventions.
pub(super) fn rebuild(history: &mut History, steps: &[Step], ivs: &[Intervention]) {
    let mut notes: Vec<(u32, Note)> = Vec::new();
    let mut person: Option<Takeover> = None;
    for s in steps {
        if let Some(by) = &s.by {
            person = Some(acted_by(person.take(), &mut notes, s, by));
            continue;
        }
        if let Some(t) = person.take() {
            notes.push(person_note(t));
        }
        let Some(action) = &s.action else { continue };
        history.push_step(StepRecord {
            step: s.n,
            thinking: s.thinking.clone().unwrap_or_default(),
            action: action.clone(),
            outcome: told(s, action),
            failed: s.outcome.status != StepStatus::Ok,
        });
        if let Some(note) = note_of(s, action) {
            notes.push((s.n, note));
        }
    }
    if let Some(t) = person {
        notes.push(person_note(t));
    }
    notes.extend(stuck_answers(steps, ivs));
    notes.sort_by_key(|(n, _)| *n);
    for (_, note) in notes {
        history.push_note(note);
    }
}

/// Adds a person's step to the take-over it belongs to (consecutive steps by one person),
/// closing the one before when someone else took over.
fn acted_by(open: Option<Takeover>, notes: &mut Vec<(u32, Note)>, s: &Step, by: &str) -> Takeover {
    let (n, who, mut actions) = match open {
        Some(o) if o.1 == by => o,
        Some(other) => {
            notes.push(person_note(other));
            (s.n, by_name(s), Vec::new())
        }
        None => (s.n, by_name(s), Vec::new()),
    };
    if let Some(a) = &s.action {
        let detail = s.outcome.detail.clone().unwrap_or(Value::Null);
        let elements = s.screen.as_ref().map(|sc| &sc.elements[..]).unwrap_or(&[]);
        let ok = s.outcome.status == StepStatus::Ok;
        actions.push(crate::run::takeover::describe(a, &detail, elements, ok));
    }
    (n, who, actions)
}

/// The note a take-over left: before step `n`, a person `by` did `actions`.
fn person_note((n, by, actions): Takeover) -> (u32, Note) {
    (
        n,
        Note::PersonActed {
            step: n,
            by,
            actions,
        },
    )
}

fn by_name(s: &Step) -> String {
    s.by.clone().unwrap_or_default()
}

/// The step's outcome as the live run told it to the agent.
fn told(s: &Step, action: &Action) -> String {
    let o = &s.outcome;
    let detail = |k: &str| {
        o.detail
            .as_ref()
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
    };
    let failed = o.status == StepStatus::Failed;
    match action {
        Action::AskUser { .. } => {
            format!(
                "the user answered: {}",
                detail("answer").unwrap_or("(no answer)")
            )
        }
        Action::McpCall { .. } if failed => "tool failed".into(),
        Action::McpCall { .. } => "tool returned".into(),
        Action::Finish { .. } if failed => match detail("rejected") {
            Some(why) => format!("NOT done: {why}"),
            None => "NOT done".into(),
        },
        _ => match o.status {
            StepStatus::Ok => match o.screen_changed {
                Some(true) => crate::agent::context::ORDINARY_OUTCOME,
                Some(false) => "no visible change",
                None => "done",
            }
            .into(),
            StepStatus::Skipped => format!("skipped: {}", detail("reason").unwrap_or("")),
            _ => {
                let error = o.error.as_deref().unwrap_or("failed");
                match detail("hint") {
                    Some(h) => format!("failed: {error}. {h}"),
                    None => format!("failed: {error}"),
                }
            }
        },
    }
}

/// The note an `ask_user` or `mcp_call` step left for the agent's next prompts.
fn note_of(s: &Step, action: &Action) -> Option<Note> {
    let detail = s.outcome.detail.as_ref();
    match action {
        Action::AskUser { question, .. } => Some(Note::UserAnswer {
            step: s.n,
            question: question.clone(),
            answer: detail
                .and_then(|d| d.get("answer"))
                .and_then(Value::as_str)
                .unwrap_or("(no answer)")
                .to_string(),
        }),
        Action::McpCall { tool, .. } => {
            let result = match detail.and_then(|d| d.get("result")) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => s.outcome.error.clone().unwrap_or_default(),
            };
            Some(Note::McpResult {
                step: s.n,
                tool: tool.clone(),
                result: result.chars().take(RESULT_CHARS).collect(),
                is_error: s.outcome.status != StepStatus::Ok,
            })
        }
        _ => None,
    }
}

/// Answers a person gave to questions no step asked (the stuck escalation's), each after
/// the last step that started before it was asked.
fn stuck_answers(steps: &[Step], ivs: &[Intervention]) -> Vec<(u32, Note)> {
    let asked_by_steps: Vec<&str> = steps
        .iter()
        .filter_map(|s| s.outcome.detail.as_ref()?.get("prompt_id")?.as_str())
        .collect();
    ivs.iter()
        .filter(|iv| iv.kind == InterventionKind::AskUser)
        .filter(|iv| !asked_by_steps.contains(&iv.id.as_str()))
        .filter(|iv| iv.answered_by.as_deref().is_some_and(|b| !is_closer(b)))
        .filter_map(|iv| {
            let after = steps
                .iter()
                .filter(|s| s.started_at <= iv.created_at)
                .map(|s| s.n)
                .max()?;
            Some((
                after,
                Note::UserAnswer {
                    step: after,
                    question: iv.question.clone().unwrap_or_default(),
                    answer: iv.answer.clone()?,
                },
            ))
        })
        .collect()
}
