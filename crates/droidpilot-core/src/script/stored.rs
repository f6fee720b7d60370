//! A script as stored: its id, version, origin and time around the document. Versions
//! of one script share the id; a healed or edited script is a new version and the old
//! ones are kept.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ScriptId;
use super::model::{Script, ScriptSource};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScriptRecord {
    #[schema(value_type = String)]
    pub id: ScriptId,
    /// 1 for the first version.
    pub version: u32,
    pub created_at: DateTime<Utc>,
    pub source: ScriptSource,
    #[serde(flatten)]
    pub script: Script,
}

/// A page of scripts (the latest version of each), newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScriptPage {
    pub scripts: Vec<ScriptRecord>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}
