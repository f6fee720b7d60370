//! Budgets beyond steps and time: the tokens and the USD a task's model calls may use
//! (the task's own `max_tokens` / `max_cost_usd`, else the server's `[runner]` defaults).
//! Checked at each step boundary against the task's totals, the steps committed before a
//! resume included; past either, the task fails with a reason starting `budget_exceeded`.

use crate::domain::{Step, Task};

use super::RunnerConfig;

/// What the task's model calls have used so far.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spent {
    pub tokens: u64,
    pub usd: f64,
}

impl Spent {
    /// The task's totals as read at its claim (steps committed before a resume).
    pub fn of(task: &Task) -> Self {
        Self {
            tokens: task.tokens_in + task.tokens_out,
            usd: task.cost_usd,
        }
    }

    /// Adds a committed step's calls.
    pub fn add(&mut self, step: &Step) {
        self.tokens += step.tokens_in + step.tokens_out;
        self.usd += step.cost_usd;
    }

    /// The reason the task ends, when it has used up a budget.
    pub fn exceeded(&self, task: &Task, cfg: &RunnerConfig) -> Option<String> {
        let max_tokens = task
            .spec
            .max_tokens
            .or(Some(cfg.max_tokens).filter(|n| *n > 0));
        if let Some(max) = max_tokens.filter(|max| self.tokens >= *max) {
            return Some(format!(
                "budget_exceeded: max_tokens ({max}) reached: the model calls used {} tokens",
                self.tokens
            ));
        }
        let max_usd = task
            .spec
            .max_cost_usd
            .or(Some(cfg.max_cost_usd).filter(|c| *c > 0.0));
        let max = max_usd.filter(|max| self.usd >= *max)?;
        Some(format!(
            "budget_exceeded: max_cost_usd ({max}) reached: the model calls cost ${:.6}",
            self.usd
        ))
    }
}
