//! The runner's knobs (`[runner]` in the configuration) and the retry policies they make.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::RetryPolicy;

/// What to do when nobody answers `ask_user` in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskTimeoutPolicy {
    /// Tell the agent "no answer" and go on.
    #[default]
    Continue,
    /// End the task as failed.
    Fail,
}

/// The runner's knobs; `[runner]` in the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunnerConfig {
    /// Extra attempts for a failed action (re-observing before each).
    pub max_retries: u32,
    /// Backoff before each retry, in ms; the last value repeats.
    pub retry_backoff_ms: Vec<u64>,
    /// Extra attempts when the model call fails transiently (on top of the client's own retries).
    pub prediction_retries: u32,
    /// A fixed pause after each action has settled (0 = none).
    pub step_delay_ms: u64,
    /// How long screenshots watch for a late change after an action whose idle dump and
    /// picture showed none (`runner::settle`).
    pub settle_timeout_ms: u64,
    /// The least time between two of those screenshots.
    pub settle_poll_ms: u64,
    /// Unchanged layouts (or repeated taps on one element) in a row that count as stuck.
    pub stuck_threshold: u32,
    /// When stuck persists after a diagnostic, ask the user before aborting.
    pub ask_user_when_stuck: bool,
    pub ask_user_timeout_secs: u64,
    pub ask_user_timeout_policy: AskTimeoutPolicy,
    /// How long a disconnected device is waited for before the task fails.
    pub reconnect_wait_secs: u64,
    pub mcp_timeout_secs: u64,
    /// Steps kept in the agent's history window.
    pub history_steps: usize,
    /// Model answers in a row that could not be used before the task fails.
    pub max_rejected_in_a_row: u32,
    /// Show "Step n of max (t elapsed)" in agents' prompts (seeds 000 and 003).
    pub include_step_info: bool,
    /// How long the installed-apps list agents see is reused before it is read again.
    pub installed_apps_ttl_secs: u64,
    /// The longest a task may stay paused in all (take-over): paused time does not count
    /// toward the task's `timeout_seconds`; past this budget the task resumes by itself.
    pub max_pause_secs: u64,
    /// Report a screen change between two agent steps that no agent action explains as
    /// an `external_change` intervention, and tell the agent. Off by default: content
    /// that finishes loading after the settle wait reads as a change too.
    pub detect_external_changes: bool,
    /// Tokens (in + out) a task's model calls may use, for tasks that set no
    /// `max_tokens` of their own; 0: no limit.
    pub max_tokens: u64,
    /// USD a task's model calls may cost, for tasks that set no `max_cost_usd`; 0: no
    /// limit.
    pub max_cost_usd: f64,
    /// Before a targeted action runs, re-read the screen when the decision took at
    /// least `stale_check_after_ms`: a target that moved is re-resolved, one that
    /// vanished is decided again (`runner::stale`).
    pub stale_check: bool,
    /// Decisions faster than this act on the screen they read without a re-read.
    pub stale_check_after_ms: u64,
    /// Told to the agent when the screen needs care (`agent::safety`); `[[runner.safety_directives]]`.
    pub safety_directives: Vec<crate::agent::safety::SafetyDirective>,
    /// Debug mode: keep each step's UI hierarchy XML as an artifact
    /// (`GET /v1/tasks/{id}/steps/{n}/hierarchy`).
    pub debug_artifacts: bool,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            max_retries: 2,
            retry_backoff_ms: vec![500, 1000, 2000],
            prediction_retries: 2,
            step_delay_ms: 0,
            settle_timeout_ms: 2000,
            settle_poll_ms: 100,
            stuck_threshold: 3,
            ask_user_when_stuck: true,
            ask_user_timeout_secs: 120,
            ask_user_timeout_policy: AskTimeoutPolicy::Continue,
            reconnect_wait_secs: 30,
            mcp_timeout_secs: 30,
            history_steps: 8,
            max_rejected_in_a_row: 3,
            include_step_info: true,
            installed_apps_ttl_secs: 300,
            max_pause_secs: 1800,
            detect_external_changes: false,
            max_tokens: 0,
            max_cost_usd: 0.0,
            stale_check: true,
            stale_check_after_ms: 1000,
            safety_directives: crate::agent::safety::defaults(),
            debug_artifacts: false,
        }
    }
}

impl RunnerConfig {
    /// Retries of a failed action.
    pub fn action_retries(&self) -> RetryPolicy {
        RetryPolicy::listed_ms(&self.retry_backoff_ms, self.max_retries)
    }

    /// Extra model calls after a transient failure.
    pub fn prediction_retries(&self) -> RetryPolicy {
        RetryPolicy::listed_ms(&self.retry_backoff_ms, self.prediction_retries)
    }

    pub fn ask_timeout(&self) -> Duration {
        Duration::from_secs(self.ask_user_timeout_secs)
    }
}
