//! A task's step timings summed up: the phase summary (screen, model, action, settle,
//! overhead: sum, mean and max over its steps) shown in the trajectory and at
//! `GET /v1/tasks/{id}/metrics`, and the steps as CSV (`GET /v1/tasks/{id}/steps.csv`).
//!
//! The CSV is written by hand (RFC 4180: a field with a comma, quote or line break is
//! quoted, quotes doubled) rather than with the `csv` crate: one flat table of numbers and
//! a few short strings, and no other part of droidpilot needs a CSV reader or writer.

use std::fmt::Write;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::{Step, StepTimings};

/// One phase over a task's steps, in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PhaseStats {
    pub sum_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// Where a task's time went, per phase. `screen` is the longer of a step's screenshot and
/// UI tree captures (they run at once); `model` the decision's model time; `action` the
/// device action with its retries; `settle` the wait for the screen after it; `overhead`
/// droidpilot's own time (parsing, recording).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PhaseSummary {
    pub steps: u32,
    pub screen: PhaseStats,
    pub model: PhaseStats,
    pub action: PhaseStats,
    pub settle: PhaseStats,
    pub overhead: PhaseStats,
}

impl PhaseSummary {
    pub fn of(steps: &[Step]) -> PhaseSummary {
        let stats = |f: fn(&StepTimings) -> f64| {
            let values = steps.iter().map(|s| f(&s.timings));
            let (sum, max) = values.fold((0.0, 0.0f64), |(s, m), v| (s + v, m.max(v)));
            PhaseStats {
                sum_ms: sum,
                mean_ms: if steps.is_empty() {
                    0.0
                } else {
                    sum / steps.len() as f64
                },
                max_ms: max,
            }
        };
        PhaseSummary {
            steps: steps.len() as u32,
            screen: stats(|t| t.screenshot_ms.max(t.hierarchy_ms) as f64),
            model: stats(|t| t.inference_ms as f64),
            action: stats(|t| t.action_ms as f64),
            settle: stats(|t| t.settle_ms as f64),
            overhead: stats(|t| t.overhead_ms),
        }
    }
}

/// The CSV's columns, in order.
pub const CSV_HEADER: &str = "step,started_at,action,status,error,screenshot_ms,hierarchy_ms,inference_ms,action_ms,settle_ms,overhead_ms,tokens_in,tokens_out,cost_usd,screenshot";

/// The steps as CSV, one row each after the header.
pub fn steps_csv(steps: &[Step]) -> String {
    let mut out = format!("{CSV_HEADER}\r\n");
    for s in steps {
        let t = &s.timings;
        let action = s.action.as_ref().map(|a| a.name()).unwrap_or_default();
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{:.3},{},{},{},{}\r\n",
            s.n,
            s.started_at.to_rfc3339(),
            field(action),
            field(s.outcome.status.as_str()),
            field(s.outcome.error.as_deref().unwrap_or("")),
            t.screenshot_ms,
            t.hierarchy_ms,
            t.inference_ms,
            t.action_ms,
            t.settle_ms,
            t.overhead_ms,
            s.tokens_in,
            s.tokens_out,
            s.cost_usd,
            field(s.screenshot.as_deref().unwrap_or("")),
        );
    }
    out
}

/// One CSV field: quoted when it holds a comma, a quote or a line break. A field that
/// starts like a formula (`=`, `+`, `-`, `@`) gets a leading `'`, so a spreadsheet shows
/// it as text instead of running it.
fn field(s: &str) -> String {
    let s = match s.starts_with(['=', '+', '-', '@']) {
        true => format!("'{s}"),
        false => s.to_string(),
    };
    match s.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", s.replace('"', "\"\"")),
        false => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_separators_are_quoted_and_formulas_defused() {
        assert_eq!(field("tap"), "tap");
        assert_eq!(field("a, \"b\"\nc"), "\"a, \"\"b\"\"\nc\"");
        assert_eq!(field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
    }
}
