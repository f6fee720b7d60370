//! `StepRow`: a step as the `steps` table holds it (JSON columns as text, counters as
//! integers), apart from the domain `Step`. Both backends read it with `sqlx::FromRow`
//! and bind its fields to write it (`row::Text` and `row::JsonText` carry each backend's
//! encoding); the conversion both ways lives here, once.
//!
//! Reading is lenient where old rows need it: an `action` names a custom action the
//! reader does not know → `Action::Custom`; an `action` that does not parse at all was
//! written before `rejected` existed (it held what the model sent) → `rejected`.

use serde_json::Value;

use super::StoreError;
use super::row::{IntoDomain, JsonText, Text};
use droidpilot_core::domain::{ActionParser, Step, StepOutcome, StepTimings};

/// One row of `steps`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StepRow {
    pub task_id: String,
    pub n: i64,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub thinking: Option<Text>,
    /// JSON `Action`.
    pub action: Option<JsonText>,
    pub raw: Option<Text>,
    /// JSON: what a rejected answer sent.
    pub rejected: Option<JsonText>,
    /// JSON `StepOutcome` (the column is `result`).
    pub result: Option<JsonText>,
    /// JSON `StepScreen`.
    pub screen: Option<JsonText>,
    pub screenshot: Option<String>,
    /// JSON `StepTimings`.
    pub timings: Option<JsonText>,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub tokens_cached: i64,
    pub cost_usd: f64,
    pub model_calls: i64,
    /// JSON `ReplayInfo`.
    pub replay: Option<JsonText>,
    /// JSON array of `ModelCall`; NULL when there were none.
    pub calls: Option<JsonText>,
    /// JSON array of `Annotation`; NULL when there were none.
    pub annotations: Option<JsonText>,
    pub actor: Option<Text>,
}

fn to_json<T: serde::Serialize>(v: Option<&T>) -> Option<JsonText> {
    v.map(|v| JsonText(serde_json::to_string(v).expect("serializing plain data cannot fail")))
}

fn from_json<T: serde::de::DeserializeOwned>(
    s: Option<&str>,
    col: &str,
) -> Result<Option<T>, StoreError> {
    s.map(|s| {
        serde_json::from_str(s).map_err(|e| StoreError::Corrupt(format!("column {col}: {e}")))
    })
    .transpose()
}

impl From<&Step> for StepRow {
    fn from(s: &Step) -> Self {
        Self {
            task_id: s.task_id.to_string(),
            n: s.n as i64,
            started_at: s.started_at,
            thinking: s.thinking.clone().map(Text),
            action: to_json(s.action.as_ref()),
            raw: s.raw.clone().map(Text),
            rejected: to_json(s.rejected.as_ref()),
            result: to_json(Some(&s.outcome)),
            screen: to_json(s.screen.as_ref()),
            screenshot: s.screenshot.clone(),
            timings: to_json(Some(&s.timings)),
            tokens_in: s.tokens_in as i64,
            tokens_out: s.tokens_out as i64,
            tokens_cached: s.tokens_cached as i64,
            cost_usd: s.cost_usd,
            model_calls: s.model_calls as i64,
            replay: to_json(s.replay.as_ref()),
            calls: to_json(Some(&s.calls).filter(|c| !c.is_empty())),
            annotations: to_json(Some(&s.annotations).filter(|a| !a.is_empty())),
            actor: s.by.clone().map(Text),
        }
    }
}

impl StepRow {
    pub fn into_step(self) -> Result<Step, StoreError> {
        let task_id = self
            .task_id
            .parse()
            .map_err(|e| StoreError::Corrupt(format!("step task id `{}`: {e}", self.task_id)))?;
        let mut rejected: Option<Value> = from_json(self.rejected.as_deref(), "rejected")?;
        let action = match from_json::<Value>(self.action.as_deref(), "action")? {
            None => None,
            Some(v) => match ActionParser::lenient().parse(&v) {
                Ok(a) => Some(a),
                Err(_) => {
                    rejected.get_or_insert(v);
                    None
                }
            },
        };
        Ok(Step {
            task_id,
            n: self.n as u32,
            started_at: self.started_at,
            thinking: self.thinking.map(|t| t.0),
            action,
            raw: self.raw.map(|t| t.0),
            rejected,
            outcome: from_json::<StepOutcome>(self.result.as_deref(), "result")?
                .ok_or_else(|| StoreError::Corrupt("step without result".into()))?,
            screen: from_json(self.screen.as_deref(), "screen")?,
            screenshot: self.screenshot,
            timings: from_json::<StepTimings>(self.timings.as_deref(), "timings")?
                .unwrap_or_default(),
            tokens_in: self.tokens_in as u64,
            tokens_out: self.tokens_out as u64,
            tokens_cached: self.tokens_cached as u64,
            cost_usd: self.cost_usd,
            model_calls: self.model_calls as u32,
            replay: from_json(self.replay.as_deref(), "replay")?,
            calls: from_json(self.calls.as_deref(), "calls")?.unwrap_or_default(),
            annotations: from_json(self.annotations.as_deref(), "annotations")?.unwrap_or_default(),
            by: self.actor.map(|t| t.0),
        })
    }
}

impl IntoDomain for StepRow {
    type Domain = Step;
    fn into_domain(self) -> Result<Step, StoreError> {
        self.into_step()
    }
}
