//! `AgentContext`: what an agent sees at one step. The instruction is always present
//! (pinned); the history is a sliding window of the last N steps plus the answers the
//! user gave (`ask_user`) and the results of MCP calls, which are kept longer because
//! the agent cannot observe them again on screen.

use std::collections::VecDeque;
use std::fmt::Write;
use std::time::Duration;

use crate::domain::Action;
use crate::llm::ImageData;
use crate::screen::ScreenRepresentation;

/// Answers and tool results kept, newest last; older ones are dropped first.
pub const MAX_NOTES: usize = 16;

#[derive(Debug, Clone)]
pub struct AgentContext {
    pub instruction: String,
    pub observation: Observation,
    pub history: History,
}

#[derive(Debug, Clone)]
pub struct Observation {
    pub screen: ScreenRepresentation,
    /// The parsed hierarchy the representation came from, for agents that resolve
    /// selectors themselves (the script agent); None when the dump failed.
    pub tree: Option<std::sync::Arc<crate::screen::Screen>>,
    /// PNG or JPEG; vision agents need it, the navigator adds it for vision models.
    pub screenshot: Option<ImageData>,
    /// Steps already taken (0 at the first decision).
    pub step_count: u32,
    pub max_steps: u32,
    pub elapsed: Duration,
}

/// One executed step as the agent will be reminded of it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    pub step: u32,
    pub thinking: String,
    pub action: Action,
    /// What happened: "screen changed", "no visible change", an error message…
    pub outcome: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    UserAnswer {
        step: u32,
        question: String,
        answer: String,
    },
    McpResult {
        step: u32,
        tool: String,
        result: String,
        is_error: bool,
    },
}

#[derive(Debug, Clone)]
pub struct History {
    window: usize,
    steps: VecDeque<StepRecord>,
    notes: VecDeque<Note>,
    total_steps: u32,
}

impl History {
    /// Keeps the last `window` steps (at least 1).
    pub fn new(window: usize) -> Self {
        Self {
            window: window.max(1),
            steps: VecDeque::new(),
            notes: VecDeque::new(),
            total_steps: 0,
        }
    }

    pub fn push_step(&mut self, r: StepRecord) {
        self.total_steps += 1;
        self.steps.push_back(r);
        while self.steps.len() > self.window {
            self.steps.pop_front();
        }
    }

    pub fn push_note(&mut self, n: Note) {
        self.notes.push_back(n);
        while self.notes.len() > MAX_NOTES {
            self.notes.pop_front();
        }
    }

    pub fn steps(&self) -> impl Iterator<Item = &StepRecord> {
        self.steps.iter()
    }

    pub fn notes(&self) -> impl Iterator<Item = &Note> {
        self.notes.iter()
    }

    /// Steps that fell out of the window.
    pub fn dropped_steps(&self) -> u32 {
        self.total_steps - self.steps.len() as u32
    }

    /// The history as text for a prompt; empty when there is none.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if !self.notes.is_empty() {
            s.push_str("Answers and tool results:\n");
            for n in &self.notes {
                let _ = match n {
                    Note::UserAnswer {
                        step,
                        question,
                        answer,
                    } => writeln!(
                        s,
                        "- step {step}: you asked \"{question}\"; the user answered \"{answer}\""
                    ),
                    Note::McpResult {
                        step,
                        tool,
                        result,
                        is_error,
                    } => writeln!(
                        s,
                        "- step {step}: {tool} {}: {result}",
                        if *is_error { "failed" } else { "returned" }
                    ),
                };
            }
        }
        if !self.steps.is_empty() {
            s.push_str("Previous steps");
            if self.dropped_steps() > 0 {
                let _ = write!(
                    s,
                    " (last {}; {} earlier omitted)",
                    self.steps.len(),
                    self.dropped_steps()
                );
            }
            s.push_str(":\n");
            for r in &self.steps {
                let action =
                    serde_json::to_string(&r.action).unwrap_or_else(|_| r.action.name().into());
                let _ = writeln!(s, "{}. {action} → {}", r.step, r.outcome);
            }
        }
        s
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new(8)
    }
}

impl AgentContext {
    /// The task header every prompt starts with: instruction, step budget and time.
    pub fn header(&self) -> String {
        let o = &self.observation;
        format!(
            "Task: {}\nStep {} of {} ({:.0}s elapsed).",
            self.instruction,
            o.step_count + 1,
            o.max_steps,
            o.elapsed.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Key;

    #[test]
    fn window_keeps_last_steps_and_all_recent_notes() {
        let mut h = History::new(2);
        for i in 1..=4 {
            h.push_step(StepRecord {
                step: i,
                thinking: String::new(),
                action: Action::Key { key: Key::Back },
                outcome: format!("outcome {i}"),
            });
        }
        h.push_note(Note::UserAnswer {
            step: 1,
            question: "Which account?".into(),
            answer: "work".into(),
        });
        let r = h.render();
        assert!(!r.contains("outcome 2"), "{r}");
        assert!(
            r.contains("3. {\"action\":\"key\",\"key\":\"back\"} → outcome 3"),
            "{r}"
        );
        assert!(r.contains("last 2; 2 earlier omitted"), "{r}");
        assert!(r.contains("the user answered \"work\""), "{r}");
        for i in 0..40 {
            h.push_note(Note::McpResult {
                step: 5,
                tool: format!("t{i}"),
                result: "ok".into(),
                is_error: false,
            });
        }
        assert_eq!(h.notes().count(), MAX_NOTES);
    }
}
