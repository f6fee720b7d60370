//! Interventions: what people (and things outside droidpilot) did to a task while it ran.
//! The agent's questions and their answers (`ask_user`), a person's actions on the phone
//! during a take-over (`manual_action`), and screen changes between two agent steps that
//! no agent action explains (`external_change`). Each is a stored row and a
//! `task.intervention` event (an `ask_user` has its own `task.ask_user`/`task.answered`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::TaskId;

/// What kind of intervention a row records.
// Its name (`as_str`, `Display`, `FromStr`) is derived; `serialize_all` matches serde's
// `rename_all`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(
    serialize_all = "snake_case",
    parse_err_ty = String,
    parse_err_fn = unknown_kind
)]
pub enum InterventionKind {
    /// The agent asked a person a question (`question`, `options`, then `answer`).
    AskUser,
    /// A person acted on the phone of a paused task (`by`, `action`, `step`).
    ManualAction,
    /// The screen changed between two agent steps with no agent action to explain it
    /// (someone touched the phone): `detail` says what changed.
    ExternalChange,
}

fn unknown_kind(s: &str) -> String {
    format!("unknown intervention kind `{s}`")
}

impl InterventionKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One intervention: a question and its answer, a person's action, or an outside change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Intervention {
    /// The prompt id clients answer to (`ask_user`); a fresh id otherwise.
    pub id: String,
    pub task_id: TaskId,
    pub kind: InterventionKind,
    pub question: Option<String>,
    pub options: Option<Vec<String>>,
    pub answer: Option<String>,
    /// Who closed a question: `rest`, `websocket`, `timeout`, `cancelled`, `shutdown`, `restart`,
    /// `deadline` (the task's `timeout_seconds` ran out while it waited).
    pub answered_by: Option<String>,
    /// When it happened (asked, acted, detected).
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub answered_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Who acted (`manual_action`): the name the person gave, or `anonymous`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The action a person ran, as recorded (text typed into a password field is `••••`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub action: Option<Value>,
    /// The step of the trajectory that records it (`manual_action`), or the agent step
    /// before which it was seen (`external_change`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// What came of it: the action's detail or error (`manual_action`), what changed on
    /// screen (`external_change`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub detail: Option<Value>,
}

impl Intervention {
    /// A new intervention of `kind` on `task`, now, with a fresh id and nothing else set.
    pub fn new(task_id: TaskId, kind: InterventionKind) -> Self {
        Self {
            id: format!("iv-{}", uuid::Uuid::now_v7().simple()),
            task_id,
            kind,
            question: None,
            options: None,
            answer: None,
            answered_by: None,
            created_at: chrono::Utc::now(),
            answered_at: None,
            by: None,
            action: None,
            step: None,
            detail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store writes `as_str` and reads it back with `FromStr`; both are serde's name.
    #[test]
    fn kind_names_round_trip_and_match_serde() {
        for (k, name) in [
            (InterventionKind::AskUser, "ask_user"),
            (InterventionKind::ManualAction, "manual_action"),
            (InterventionKind::ExternalChange, "external_change"),
        ] {
            assert_eq!(k.as_str(), name);
            assert_eq!(k.to_string(), name);
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert_eq!(name.parse::<InterventionKind>().unwrap(), k);
        }
        assert_eq!(
            "ask".parse::<InterventionKind>().unwrap_err(),
            "unknown intervention kind `ask`"
        );
    }
}
