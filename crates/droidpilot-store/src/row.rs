//! The tables' rows: one struct per table, read by both backends with
//! `#[derive(sqlx::FromRow)]`, and its conversion to the domain type written once
//! (`IntoDomain`; `read` does both). A field's Rust type is one both drivers decode from
//! their column: `DateTime<Utc>` from SQLite's RFC 3339 text and PostgreSQL's
//! `timestamptz`, `bool` from SQLite's 0/1 and `boolean`, `i32` where PostgreSQL has
//! `integer`. The steps table's row, `StepRow`, is in `step_row.rs` (it is also what
//! both backends write).
//!
//! Two kinds of column are not stored alike, so they are types here with a codec per
//! backend (PostgreSQL cannot hold NUL: `pg_text`):
//! - `Text`, free text: as it is on SQLite, through `pg_text::enc`/`dec` on PostgreSQL;
//! - `JsonText`, a JSON column's text: as it is on SQLite; on PostgreSQL the `jsonb` read
//!   as `::text` (and bound as text cast `::jsonb`), its strings through `pg_text`.
//!
//! `Json<T>` is a JSON column parsed: `sqlx::types::Json<T>` on SQLite; on PostgreSQL the
//! `JsonText` parsed, since sqlx's `jsonb` decoder would hand back the NUL escapes.

use std::ops::Deref;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef, Postgres};
use sqlx::sqlite::{Sqlite, SqliteArgumentsBuffer, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Encode, FromRow, Type};

use super::pg_text::{dec, dec_json, enc, enc_json};
use super::{Artifact, StoreError, StoredEvent};
use droidpilot_core::domain::task::DeviceConstraints;
use droidpilot_core::domain::{Intervention, RecordingSegment, Task, TaskEvent, TaskSpec};
use droidpilot_core::script::ScriptRecord;

/// Free text (`instruction`, `reason`, a step's `thinking`…).
#[derive(Debug, Clone, PartialEq)]
pub struct Text(pub String);

/// A JSON column's text.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonText(pub String);

/// A JSON column, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Deref for JsonText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Both text types are `text` to each driver.
macro_rules! text_type {
    ($t:ty) => {
        impl Type<Sqlite> for $t {
            fn type_info() -> SqliteTypeInfo {
                <String as Type<Sqlite>>::type_info()
            }
            fn compatible(ty: &SqliteTypeInfo) -> bool {
                <String as Type<Sqlite>>::compatible(ty)
            }
        }
        impl Type<Postgres> for $t {
            fn type_info() -> PgTypeInfo {
                <String as Type<Postgres>>::type_info()
            }
            fn compatible(ty: &PgTypeInfo) -> bool {
                <String as Type<Postgres>>::compatible(ty)
            }
        }
        impl Encode<'_, Sqlite> for $t {
            fn encode_by_ref(
                &self,
                buf: &mut SqliteArgumentsBuffer,
            ) -> Result<IsNull, BoxDynError> {
                <String as Encode<Sqlite>>::encode_by_ref(&self.0, buf)
            }
        }
    };
}
text_type!(Text);
text_type!(JsonText);

impl<'r> Decode<'r, Sqlite> for Text {
    fn decode(v: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <String as Decode<Sqlite>>::decode(v).map(Text)
    }
}

impl<'r> Decode<'r, Postgres> for Text {
    fn decode(v: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        <String as Decode<Postgres>>::decode(v).map(|s| Text(dec(s)))
    }
}

impl Encode<'_, Postgres> for Text {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        <&str as Encode<Postgres>>::encode_by_ref(&enc(&self.0).as_ref(), buf)
    }
}

impl<'r> Decode<'r, Sqlite> for JsonText {
    fn decode(v: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <String as Decode<Sqlite>>::decode(v).map(JsonText)
    }
}

impl<'r> Decode<'r, Postgres> for JsonText {
    fn decode(v: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        <String as Decode<Postgres>>::decode(v).map(|s| JsonText(dec_json(s)))
    }
}

impl Encode<'_, Postgres> for JsonText {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        <String as Encode<Postgres>>::encode(enc_json(self.0.clone()), buf)
    }
}

impl<T> Type<Sqlite> for Json<T> {
    fn type_info() -> SqliteTypeInfo {
        <sqlx::types::Json<T> as Type<Sqlite>>::type_info()
    }
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <sqlx::types::Json<T> as Type<Sqlite>>::compatible(ty)
    }
}

impl<T> Type<Postgres> for Json<T> {
    fn type_info() -> PgTypeInfo {
        <JsonText as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <JsonText as Type<Postgres>>::compatible(ty)
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, Sqlite> for Json<T> {
    fn decode(v: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        <sqlx::types::Json<T> as Decode<Sqlite>>::decode(v).map(|j| Json(j.0))
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, Postgres> for Json<T> {
    fn decode(v: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <JsonText as Decode<Postgres>>::decode(v)?;
        Ok(Json(serde_json::from_str(&text)?))
    }
}

/// A row made the domain type it stores.
pub trait IntoDomain {
    type Domain;
    fn into_domain(self) -> Result<Self::Domain, StoreError>;
}

/// One row of either backend, as its domain type. A column whose value does not read as
/// its type is corrupt data, named (not a database failure, which a caller may retry).
pub fn read<'r, X, R>(row: &'r R) -> Result<X::Domain, StoreError>
where
    R: sqlx::Row,
    X: FromRow<'r, R> + IntoDomain,
{
    let row = X::from_row(row).map_err(|e| match e {
        sqlx::Error::ColumnDecode { index, source } => {
            StoreError::Corrupt(format!("column {}: {source}", index.trim_matches('"')))
        }
        e => StoreError::Database(e),
    })?;
    row.into_domain()
}

fn parse<T: FromStr>(s: &str, what: &str) -> Result<T, StoreError>
where
    T::Err: std::fmt::Display,
{
    s.parse()
        .map_err(|e| StoreError::Corrupt(format!("{what} `{s}`: {e}")))
}

fn text(t: Option<Text>) -> Option<String> {
    t.map(|t| t.0)
}

fn json<T>(j: Option<Json<T>>) -> Option<T> {
    j.map(|j| j.0)
}

/// One row of `tasks`.
#[derive(FromRow)]
pub struct TaskRow {
    id: String,
    status: String,
    instruction: Text,
    priority: i32,
    max_steps: i64,
    timeout_seconds: i64,
    device_id: Option<Text>,
    constraints: Option<Json<DeviceConstraints>>,
    agent: Option<Json<Value>>,
    external_id: Option<Text>,
    session_id: Option<Text>,
    metadata: Option<Json<Value>>,
    webhook_url: Option<Text>,
    record: bool,
    max_tokens: Option<i64>,
    max_cost_usd: Option<f64>,
    assigned_device: Option<Text>,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    reason: Option<Text>,
    answer: Option<Text>,
    steps: i64,
    tokens_in: i64,
    tokens_out: i64,
    tokens_cached: i64,
    cost_usd: f64,
    cancel_requested: bool,
    model_calls: i64,
    record_video: bool,
    recording: Option<Json<Vec<RecordingSegment>>>,
}

impl IntoDomain for TaskRow {
    type Domain = Task;
    fn into_domain(self) -> Result<Task, StoreError> {
        Ok(Task {
            id: parse(&self.id, "task id")?,
            status: self.status.parse().map_err(StoreError::Corrupt)?,
            spec: TaskSpec {
                instruction: self.instruction.0,
                priority: self.priority,
                max_steps: self.max_steps as u32,
                timeout_seconds: self.timeout_seconds as u64,
                device_id: text(self.device_id),
                device: json(self.constraints),
                agent: json(self.agent),
                external_id: text(self.external_id),
                session_id: text(self.session_id),
                metadata: json(self.metadata),
                webhook_url: text(self.webhook_url),
                record: self.record,
                max_tokens: self.max_tokens.map(|n| n as u64),
                max_cost_usd: self.max_cost_usd,
                record_video: self.record_video,
            },
            assigned_device: text(self.assigned_device),
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            reason: text(self.reason),
            answer: text(self.answer),
            steps: self.steps as u32,
            tokens_in: self.tokens_in as u64,
            tokens_out: self.tokens_out as u64,
            tokens_cached: self.tokens_cached as u64,
            cost_usd: self.cost_usd,
            cancel_requested: self.cancel_requested,
            model_calls: self.model_calls as u64,
            recording: json(self.recording).unwrap_or_default(),
        })
    }
}

/// One row of `interventions`.
#[derive(FromRow)]
pub struct InterventionRow {
    id: String,
    task_id: String,
    kind: String,
    question: Option<Text>,
    options: Option<Json<Vec<String>>>,
    answer: Option<Text>,
    answered_by: Option<Text>,
    created_at: DateTime<Utc>,
    answered_at: Option<DateTime<Utc>>,
    actor: Option<Text>,
    action: Option<Json<Value>>,
    step: Option<i32>,
    detail: Option<Json<Value>>,
}

impl IntoDomain for InterventionRow {
    type Domain = Intervention;
    fn into_domain(self) -> Result<Intervention, StoreError> {
        Ok(Intervention {
            id: self.id,
            task_id: parse(&self.task_id, "intervention task id")?,
            kind: self.kind.parse().map_err(StoreError::Corrupt)?,
            question: text(self.question),
            options: json(self.options),
            answer: text(self.answer),
            answered_by: text(self.answered_by),
            created_at: self.created_at,
            answered_at: self.answered_at,
            by: text(self.actor),
            action: json(self.action),
            step: self.step.map(|n| n as u32),
            detail: json(self.detail),
        })
    }
}

/// One row of `scripts` (its `name` is the body's, kept as a column for listing).
#[derive(FromRow)]
pub struct ScriptRow {
    id: String,
    version: i32,
    body: Json<droidpilot_core::script::Script>,
    source: Json<droidpilot_core::script::ScriptSource>,
    created_at: DateTime<Utc>,
}

impl IntoDomain for ScriptRow {
    type Domain = ScriptRecord;
    fn into_domain(self) -> Result<ScriptRecord, StoreError> {
        Ok(ScriptRecord {
            id: parse(&self.id, "script id")?,
            version: self.version as u32,
            created_at: self.created_at,
            source: self.source.0,
            script: self.body.0,
        })
    }
}

/// One row of `artifacts` (its `created_at` is for expiry only).
#[derive(FromRow)]
pub struct ArtifactRow {
    sha256: String,
    kind: String,
    media_type: String,
    path: String,
    bytes: i64,
}

impl IntoDomain for ArtifactRow {
    type Domain = Artifact;
    fn into_domain(self) -> Result<Artifact, StoreError> {
        Ok(Artifact {
            sha256: self.sha256,
            kind: self.kind,
            media_type: self.media_type,
            path: self.path,
            bytes: self.bytes as u64,
        })
    }
}

/// One row of `events`.
#[derive(FromRow)]
pub struct EventRow {
    stream: String,
    seq: i64,
    #[sqlx(rename = "type")]
    kind: String,
    payload: Json<Value>,
    created_at: DateTime<Utc>,
}

impl IntoDomain for EventRow {
    type Domain = StoredEvent;
    fn into_domain(self) -> Result<StoredEvent, StoreError> {
        Ok(StoredEvent {
            stream: self.stream,
            seq: self.seq,
            event: TaskEvent::from_parts(&self.kind, self.payload.0),
            created_at: self.created_at,
        })
    }
}

/// One row of `flow_runs`: the run is its `body`; `status` is a copy for lookups.
#[derive(FromRow)]
pub struct FlowRunRow {
    body: Json<droidpilot_core::domain::FlowRun>,
}

impl IntoDomain for FlowRunRow {
    type Domain = droidpilot_core::domain::FlowRun;
    fn into_domain(self) -> Result<droidpilot_core::domain::FlowRun, StoreError> {
        Ok(self.body.0)
    }
}

/// One row of `workspaces` read for a list: the version without its files' text.
#[derive(FromRow)]
pub struct WorkspaceRow {
    body: Json<droidpilot_core::domain::WorkspaceVersion>,
}

impl IntoDomain for WorkspaceRow {
    type Domain = droidpilot_core::domain::WorkspaceVersion;
    fn into_domain(self) -> Result<Self::Domain, StoreError> {
        Ok(self.body.0)
    }
}

/// One row of `workspaces` with its files' text.
#[derive(FromRow)]
pub struct WorkspaceFilesRow {
    body: Json<droidpilot_core::domain::WorkspaceVersion>,
    files: Json<std::collections::BTreeMap<String, String>>,
}

impl IntoDomain for WorkspaceFilesRow {
    type Domain = droidpilot_core::domain::StoredWorkspace;
    fn into_domain(self) -> Result<Self::Domain, StoreError> {
        Ok(droidpilot_core::domain::StoredWorkspace {
            info: self.body.0,
            files: self.files.0,
        })
    }
}
