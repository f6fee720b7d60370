//! The PostgreSQL backend: the same `Store` semantics as `sqlite`, on a server several
//! droidpilot instances can share. Migrations embedded from `migrations/postgres/`, runtime
//! queries only (the build needs no DATABASE_URL).
//!
//! What concurrency needs here and not in SQLite (one writer at a time there):
//! - event `seq` comes from the `streams` counter row, bumped in the event's own statement,
//!   so concurrent appenders to one stream get 1, 2, 3… with no gap or repeat;
//! - `start_task` is the claim (`… WHERE status = 'queued'`): one caller wins;
//! - read-then-write operations (cancel, new script version) lock the row (or the script
//!   id) they read first.
//!
//! JSON columns are `jsonb`; they are bound as text with a `::jsonb` cast and read back as
//! `::text`, so `StepRow` (shared with SQLite) does the conversion once. Free text and
//! JSON strings go through `pg_text` both ways, so a NUL is stored like any character.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};

use super::cursor::{decode_cursor, next_page};
use super::location::redact_url;
use super::pg_text::{enc, enc_json, enc_opt};
use super::row::{ArtifactRow, EventRow, FlowRunRow, InterventionRow, ScriptRow, TaskRow, read};
use super::{
    Artifact, CancelOutcome, EventSeqs, StepCommit, StepRow, Store, StoreError, StoredEvent,
    TaskFilter, TaskPage,
};
use droidpilot_core::domain::{
    FlowRun, FlowRunId, FlowRunPage, Intervention, Step, Task, TaskEvent, TaskId, TaskSpec,
    TaskStatus,
};
use droidpilot_core::domain::{StoredWorkspace, WorkspaceId, WorkspacePage, WorkspaceVersion};
use droidpilot_core::script::{Script, ScriptId, ScriptPage, ScriptRecord, ScriptSource};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long opening the store may wait for the server before refusing to start.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    /// Sends and receives the instances' notifications (`store::notify`).
    notifier: super::notify::Notifier,
}

impl PostgresStore {
    /// Connects (at most `CONNECT_TIMEOUT`), runs pending migrations, and keeps a pool of
    /// `pool_size` connections. A wrong URL, wrong credentials or a server that is down
    /// fail here with `StoreError::Connect`, naming the URL without its password.
    pub async fn connect(url: &str, pool_size: u32) -> Result<Self, StoreError> {
        let shown = redact_url(url);
        let opts: PgConnectOptions = url.parse().map_err(|e| StoreError::Connect {
            url: shown.clone(),
            reason: format!("not a PostgreSQL URL ({e})"),
            hint: "write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE",
        })?;
        let opts = opts.disable_statement_logging();
        // One direct attempt first: the pool retries refused connections until its timeout
        // and then reports only "timed out", which hides why.
        match tokio::time::timeout(CONNECT_TIMEOUT, sqlx::PgConnection::connect_with(&opts)).await {
            Ok(Ok(c)) => {
                let _ = c.close().await;
            }
            Ok(Err(e)) => return Err(connect_error(&shown, e)),
            Err(_) => {
                return Err(StoreError::Connect {
                    url: shown,
                    reason: format!("no answer within {}s", CONNECT_TIMEOUT.as_secs()),
                    hint: "check that PostgreSQL is running and reachable at that host and port (firewall, listen_addresses)",
                });
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(pool_size.max(1))
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(opts.clone())
            .await
            .map_err(|e| connect_error(&shown, e))?;
        MIGRATOR.run(&pool).await?;
        let origin = uuid::Uuid::now_v7().simple().to_string();
        let notifier = super::notify::Notifier::new(pool.clone(), opts, origin);
        Ok(Self { pool, notifier })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// A failed connection as the operator needs it: what went wrong and what to check.
fn connect_error(url: &str, e: sqlx::Error) -> StoreError {
    let code = e
        .as_database_error()
        .and_then(|d| d.code().map(|c| c.into_owned()));
    let hint = match code.as_deref() {
        // invalid_password, invalid_authorization_specification
        Some("28P01") | Some("28000") => {
            "check the user and password in storage.database_url (or DROIDPILOT_STORAGE__DATABASE_URL)"
        }
        // invalid_catalog_name
        Some("3D000") => "create the database first (`createdb NAME`) or fix its name in the URL",
        _ if matches!(e, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) => {
            "check that PostgreSQL is running and reachable at that host and port"
        }
        _ => "check storage.database_url and that the server accepts this client",
    };
    // The server's own words ("password authentication failed for user …"), without
    // sqlx's wrapping.
    let reason = match e.as_database_error() {
        Some(d) => d.message().to_string(),
        None => e.to_string(),
    };
    StoreError::Connect {
        url: url.into(),
        reason,
        hint,
    }
}

/// JSON text for a `jsonb` column, NULs encoded (`pg_text`).
fn to_json<T: serde::Serialize>(v: &Option<T>) -> Option<String> {
    v.as_ref()
        .map(|v| enc_json(serde_json::to_string(v).expect("serializing plain data cannot fail")))
}

/// Now, at the precision PostgreSQL keeps (microseconds), so a record returned equals the
/// one read back.
fn now_micros() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

fn parse_id<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, StoreError>
where
    T::Err: std::fmt::Display,
{
    s.parse()
        .map_err(|e| StoreError::Corrupt(format!("{what} `{s}`: {e}")))
}

const TASK_SELECT: &str = "SELECT id, status, instruction, priority, max_steps, timeout_seconds, device_id, \
     constraints::text AS constraints, agent::text AS agent, external_id, session_id, metadata::text AS metadata, \
     assigned_device, created_at, started_at, finished_at, reason, answer, steps, tokens_in, tokens_out, cost_usd, \
     cancel_requested, webhook_url, record, model_calls, max_tokens, max_cost_usd, tokens_cached, \
     record_video, recording::text AS recording FROM tasks";

const STEP_SELECT: &str = "SELECT task_id, n, started_at, thinking, action::text AS action, raw, rejected::text AS rejected, \
     result::text AS result, screen::text AS screen, screenshot, timings::text AS timings, tokens_in, tokens_out, tokens_cached, cost_usd, \
     model_calls, replay::text AS replay, calls::text AS calls, annotations::text AS annotations, actor FROM steps";

const INTERVENTION_SELECT: &str = "SELECT id, task_id, kind, question, options::text AS options, answer, answered_by, \
     created_at, answered_at, actor, action::text AS action, step, detail::text AS detail FROM interventions";

const SCRIPT_SELECT: &str =
    "SELECT id, version, body::text AS body, source::text AS source, created_at FROM scripts";

async fn insert_script<'e, E: sqlx::Executor<'e, Database = sqlx::Postgres>>(
    db: E,
    rec: &ScriptRecord,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO scripts (id, version, name, body, source, created_at) \
         VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6)",
    )
    .bind(rec.id.to_string())
    .bind(rec.version as i32)
    .bind(enc(&rec.script.name))
    .bind(to_json(&Some(&rec.script)))
    .bind(to_json(&Some(&rec.source)))
    .bind(rec.created_at)
    .execute(db)
    .await?;
    Ok(())
}

const LIVE: &str = "('queued', 'running', 'waiting_for_user', 'paused')";
/// The statuses of a task a runner holds.
const HELD: &str = "('running', 'waiting_for_user', 'paused')";

#[async_trait]
impl Store for PostgresStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_task(&self, spec: TaskSpec) -> Result<Task, StoreError> {
        let id = TaskId::new();
        sqlx::query(
            "INSERT INTO tasks (id, status, instruction, priority, max_steps, timeout_seconds, device_id, constraints, \
             agent, external_id, session_id, metadata, created_at, webhook_url, record, max_tokens, max_cost_usd, \
             record_video) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12::jsonb, $13, $14, $15, $16, $17, $18)",
        )
        .bind(id.to_string())
        .bind(TaskStatus::Queued.as_str())
        .bind(enc(&spec.instruction))
        .bind(spec.priority)
        .bind(spec.max_steps as i64)
        .bind(spec.timeout_seconds as i64)
        .bind(enc_opt(spec.device_id.as_deref()))
        .bind(to_json(&spec.device))
        .bind(to_json(&spec.agent))
        .bind(enc_opt(spec.external_id.as_deref()))
        .bind(enc_opt(spec.session_id.as_deref()))
        .bind(to_json(&spec.metadata))
        .bind(now_micros())
        .bind(enc_opt(spec.webhook_url.as_deref()))
        .bind(spec.record)
        .bind(spec.max_tokens.map(|n| n.min(i64::MAX as u64) as i64))
        .bind(spec.max_cost_usd)
        .bind(spec.record_video)
        .execute(&self.pool)
        .await?;
        self.get_task(id).await
    }

    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{TASK_SELECT} WHERE id = $1")))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::TaskNotFound(id))?;
        read::<TaskRow, _>(&row)
    }

    async fn list_tasks(&self, f: TaskFilter) -> Result<TaskPage, StoreError> {
        let limit = f.limit.clamp(1, 500);
        let before = f
            .cursor
            .as_deref()
            .map(decode_cursor::<TaskId>)
            .transpose()?;
        let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(format!("{TASK_SELECT} WHERE true"));
        if let Some(s) = f.status {
            q.push(" AND status = ").push_bind(s.as_str());
        }
        if let Some(b) = before {
            q.push(" AND id < ").push_bind(b.to_string());
        }
        // One extra row tells whether another page exists.
        q.push(" ORDER BY id DESC LIMIT ")
            .push_bind(limit as i64 + 1);
        let rows = q.build().fetch_all(&self.pool).await?;
        let mut tasks = rows
            .iter()
            .map(read::<TaskRow, _>)
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_page(&mut tasks, limit, |t| t.id);
        Ok(TaskPage { tasks, next_cursor })
    }

    async fn set_task_agent(
        &self,
        id: TaskId,
        agent: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE tasks SET agent = $1::jsonb WHERE id = $2")
            .bind(to_json(&Some(agent)))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn set_task_recording(
        &self,
        id: TaskId,
        segments: &[droidpilot_core::domain::RecordingSegment],
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE tasks SET recording = $1::jsonb WHERE id = $2")
            .bind(to_json(&Some(segments)))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn cancel_task(&self, id: TaskId) -> Result<(Task, CancelOutcome), StoreError> {
        let mut tx = self.pool.begin().await?;
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1 FOR UPDATE")
                .bind(id.to_string())
                .fetch_optional(&mut *tx)
                .await?;
        let status = super::stored_status(id, status)?;
        let outcome = match status {
            s if s.is_terminal() => return Err(StoreError::AlreadyFinished { id, status: s }),
            TaskStatus::Running | TaskStatus::Paused => {
                sqlx::query("UPDATE tasks SET cancel_requested = true WHERE id = $1")
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
                CancelOutcome::Requested
            }
            _ => {
                sqlx::query(
                    "UPDATE tasks SET status = 'cancelled', cancel_requested = true, finished_at = $1, \
                     reason = 'cancelled by request' WHERE id = $2",
                )
                .bind(now_micros())
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
                CancelOutcome::Cancelled
            }
        };
        tx.commit().await?;
        Ok((self.get_task(id).await?, outcome))
    }

    async fn append_event(
        &self,
        stream: &str,
        event: TaskEvent,
    ) -> Result<StoredEvent, StoreError> {
        let now = now_micros();
        // One statement: the counter row's lock orders concurrent writers of a stream (on
        // any instance), and the event is inserted with the seq it handed out. Its pointer
        // is sent in the same transaction, so other instances hear of it only once it is
        // committed, and per stream in seq order (commits are, under that lock).
        let seq: i64 = sqlx::query_scalar(
            "WITH s AS (INSERT INTO streams (stream, last_seq) VALUES ($1, 1) \
               ON CONFLICT (stream) DO UPDATE SET last_seq = streams.last_seq + 1 RETURNING last_seq), \
             e AS (INSERT INTO events (stream, seq, type, payload, created_at) \
               SELECT $1, s.last_seq, $2, $3::jsonb, $4 FROM s RETURNING seq) \
             SELECT e.seq FROM e, LATERAL (SELECT pg_notify($5, \
               json_build_object('s', $1::text, 'q', e.seq, 'o', $6::text)::text)) n",
        )
        .bind(stream)
        .bind(event.kind())
        .bind(enc_json(event.payload().to_string()))
        .bind(now)
        .bind(super::notify::EVENTS_CHANNEL)
        .bind(self.notifier.origin())
        .fetch_one(&self.pool)
        .await?;
        Ok(StoredEvent {
            stream: stream.into(),
            seq,
            event,
            created_at: now,
        })
    }

    async fn events_since(
        &self,
        stream: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT stream, seq, type, payload::text AS payload, created_at FROM events \
             WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(stream)
        .bind(since)
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<EventRow, _>).collect()
    }

    async fn queued_tasks(&self, limit: u32) -> Result<Vec<Task>, StoreError> {
        // A read: the claim is `start_task`'s conditional update, which one caller wins.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{TASK_SELECT} WHERE status = 'queued' ORDER BY priority DESC, id ASC LIMIT $1"
        )))
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<TaskRow, _>).collect()
    }

    async fn start_task(&self, id: TaskId, device: &str) -> Result<bool, StoreError> {
        let r = sqlx::query(
            "UPDATE tasks SET status = 'running', assigned_device = $1, started_at = COALESCE(started_at, $2), \
             reason = NULL WHERE id = $3 AND status = 'queued'",
        )
        .bind(enc(device))
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn set_task_status(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
    ) -> Result<Task, StoreError> {
        debug_assert!(!status.is_terminal(), "use finish_task to end a task");
        let r = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE tasks SET status = $1, reason = $2 WHERE id = $3 AND status IN {HELD}"
        )))
        .bind(status.as_str())
        .bind(enc_opt(reason))
        .bind(id.to_string())
        .execute(&self.pool)
        .await?;
        let task = self.get_task(id).await?;
        if r.rows_affected() == 0 {
            return Err(StoreError::WrongStatus {
                id,
                status: task.status,
                expected: "running, waiting_for_user or paused",
            });
        }
        Ok(task)
    }

    async fn finish_task(
        &self,
        id: TaskId,
        status: TaskStatus,
        reason: Option<&str>,
        answer: Option<&str>,
    ) -> Result<Task, StoreError> {
        let r = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE tasks SET status = $1, reason = $2, answer = $3, finished_at = $4 \
             WHERE id = $5 AND status IN {LIVE}"
        )))
        .bind(status.as_str())
        .bind(enc_opt(reason))
        .bind(enc_opt(answer))
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&self.pool)
        .await?;
        let task = self.get_task(id).await?;
        if r.rows_affected() == 0 {
            return Err(StoreError::WrongStatus {
                id,
                status: task.status,
                expected: "queued, running, waiting_for_user or paused",
            });
        }
        Ok(task)
    }

    async fn append_step(&self, step: &Step) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        // A step already committed (a retry after a commit whose reply was lost) is not
        // recorded, nor counted, twice.
        if insert_step(&mut tx, step).await? {
            tx.commit().await?;
        }
        Ok(())
    }

    async fn commit_step(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError> {
        self.commit_step_tx(c).await
    }

    async fn steps(&self, id: TaskId) -> Result<Vec<Step>, StoreError> {
        self.get_task(id).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{STEP_SELECT} WHERE task_id = $1 ORDER BY n"
        )))
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<StepRow, _>).collect()
    }

    async fn step(&self, id: TaskId, n: u32) -> Result<Step, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{STEP_SELECT} WHERE task_id = $1 AND n = $2"
        )))
        .bind(id.to_string())
        .bind(n as i64)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::StepNotFound { task: id, n })?;
        read::<StepRow, _>(&row)
    }

    async fn put_artifact(&self, a: &Artifact) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO artifacts (sha256, kind, media_type, path, bytes, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (sha256) DO NOTHING",
        )
        .bind(&a.sha256)
        .bind(&a.kind)
        .bind(&a.media_type)
        .bind(&a.path)
        .bind(a.bytes as i64)
        .bind(now_micros())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn artifact(&self, sha256: &str) -> Result<Option<Artifact>, StoreError> {
        let row = sqlx::query(
            "SELECT sha256, kind, media_type, path, bytes FROM artifacts WHERE sha256 = $1",
        )
        .bind(sha256)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(read::<ArtifactRow, _>).transpose()
    }

    async fn create_intervention(&self, iv: &Intervention) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO interventions (id, task_id, kind, question, options, answer, answered_by, created_at, answered_at, \
             actor, action, step, detail) \
             VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11::jsonb, $12, $13::jsonb)",
        )
        .bind(&iv.id)
        .bind(iv.task_id.to_string())
        .bind(iv.kind.as_str())
        .bind(enc_opt(iv.question.as_deref()))
        .bind(to_json(&iv.options))
        .bind(enc_opt(iv.answer.as_deref()))
        .bind(enc_opt(iv.answered_by.as_deref()))
        .bind(iv.created_at)
        .bind(iv.answered_at)
        .bind(enc_opt(iv.by.as_deref()))
        .bind(to_json(&iv.action))
        .bind(iv.step.map(|n| n as i32))
        .bind(to_json(&iv.detail))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn answer_intervention(
        &self,
        id: &str,
        answer: &str,
        by: &str,
    ) -> Result<Intervention, StoreError> {
        let r = sqlx::query(
            "UPDATE interventions SET answer = $1, answered_by = $2, answered_at = $3 \
             WHERE id = $4 AND answered_at IS NULL",
        )
        .bind(enc(answer))
        .bind(enc(by))
        .bind(now_micros())
        .bind(id)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{INTERVENTION_SELECT} WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        let iv = row
            .as_ref()
            .map(read::<InterventionRow, _>)
            .transpose()?
            .ok_or_else(|| StoreError::InterventionNotFound(id.into()))?;
        if r.rows_affected() == 0 {
            return Err(StoreError::AlreadyAnswered(id.into()));
        }
        Ok(iv)
    }

    async fn interventions(&self, task: TaskId) -> Result<Vec<Intervention>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{INTERVENTION_SELECT} WHERE task_id = $1 ORDER BY created_at, id"
        )))
        .bind(task.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<InterventionRow, _>).collect()
    }

    async fn recover_running(
        &self,
        requeue: bool,
        reason: &str,
    ) -> Result<Vec<TaskId>, StoreError> {
        let q = if requeue {
            sqlx::query_scalar(
                "UPDATE tasks SET status = 'queued', reason = $1 \
                 WHERE status IN ('running', 'waiting_for_user', 'paused') RETURNING id",
            )
            .bind(enc(reason))
        } else {
            sqlx::query_scalar(
                "UPDATE tasks SET status = 'interrupted', reason = $1, finished_at = $2 \
                 WHERE status IN ('running', 'waiting_for_user', 'paused') RETURNING id",
            )
            .bind(enc(reason))
            .bind(now_micros())
        };
        let mut ids: Vec<String> = q.fetch_all(&self.pool).await?;
        ids.sort();
        ids.iter().map(|s| parse_id(s, "task id")).collect()
    }

    async fn create_script(
        &self,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError> {
        let rec = ScriptRecord {
            id: ScriptId::new(),
            version: 1,
            created_at: now_micros(),
            source,
            script: script.clone(),
        };
        insert_script(&self.pool, &rec).await?;
        Ok(rec)
    }

    async fn add_script_version(
        &self,
        id: ScriptId,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Two new versions of one script at once (two instances healing it) queue here
        // instead of both reading the same latest version.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('script:' || $1))")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
        let latest: Option<i32> =
            sqlx::query_scalar("SELECT MAX(version) FROM scripts WHERE id = $1")
                .bind(id.to_string())
                .fetch_one(&mut *tx)
                .await?;
        let latest = latest.ok_or(StoreError::ScriptNotFound(id))?;
        let rec = ScriptRecord {
            id,
            version: latest as u32 + 1,
            created_at: now_micros(),
            source,
            script: script.clone(),
        };
        insert_script(&mut *tx, &rec).await?;
        tx.commit().await?;
        Ok(rec)
    }

    async fn script(&self, id: ScriptId, version: Option<u32>) -> Result<ScriptRecord, StoreError> {
        let row = match version {
            Some(v) => sqlx::query(sqlx::AssertSqlSafe(format!(
                "{SCRIPT_SELECT} WHERE id = $1 AND version = $2"
            )))
            .bind(id.to_string())
            .bind(v as i32)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::ScriptVersionNotFound { id, version: v }),
            None => sqlx::query(sqlx::AssertSqlSafe(format!(
                "{SCRIPT_SELECT} WHERE id = $1 ORDER BY version DESC LIMIT 1"
            )))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::ScriptNotFound(id)),
        };
        if let Err(StoreError::ScriptVersionNotFound { .. }) = &row {
            // Say "no such script" rather than "no such version" when the id is unknown.
            self.script(id, None).await?;
        }
        read::<ScriptRow, _>(&row?)
    }

    async fn list_scripts(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<ScriptPage, StoreError> {
        let limit = limit.clamp(1, 500);
        let before = cursor.map(decode_cursor::<ScriptId>).transpose()?;
        let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(
            "SELECT s.id, s.version, s.body::text AS body, s.source::text AS source, s.created_at FROM scripts s \
             WHERE s.version = (SELECT MAX(version) FROM scripts WHERE id = s.id)",
        );
        if let Some(b) = before {
            q.push(" AND s.id < ").push_bind(b.to_string());
        }
        q.push(" ORDER BY s.id DESC LIMIT ")
            .push_bind(limit as i64 + 1);
        let rows = q.build().fetch_all(&self.pool).await?;
        let mut scripts = rows
            .iter()
            .map(read::<ScriptRow, _>)
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_page(&mut scripts, limit, |s| s.id);
        Ok(ScriptPage {
            scripts,
            next_cursor,
        })
    }

    async fn script_versions(&self, id: ScriptId) -> Result<Vec<ScriptRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SCRIPT_SELECT} WHERE id = $1 ORDER BY version"
        )))
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::ScriptNotFound(id));
        }
        rows.iter().map(read::<ScriptRow, _>).collect()
    }

    async fn delete_script(&self, id: ScriptId) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM scripts WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::ScriptNotFound(id));
        }
        Ok(())
    }

    async fn delete_task(&self, id: TaskId) -> Result<Vec<Artifact>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1 FOR UPDATE")
                .bind(id.to_string())
                .fetch_optional(&mut *tx)
                .await?;
        let status = super::stored_status(id, status)?;
        if !status.is_terminal() {
            return Err(StoreError::NotEnded { id, status });
        }
        let mut shots: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT screenshot FROM steps WHERE task_id = $1 AND screenshot IS NOT NULL",
        )
        .bind(id.to_string())
        .fetch_all(&mut *tx)
        .await?;
        let recording: Option<String> =
            sqlx::query_scalar("SELECT recording::text FROM tasks WHERE id = $1")
                .bind(id.to_string())
                .fetch_one(&mut *tx)
                .await?;
        shots.extend(super::recording_artifacts(recording.as_deref()));
        for sql in [
            "DELETE FROM events WHERE stream = $1",
            "DELETE FROM streams WHERE stream = $1",
            "DELETE FROM interventions WHERE task_id = $1",
            "DELETE FROM steps WHERE task_id = $1",
            "DELETE FROM tasks WHERE id = $1",
        ] {
            sqlx::query(sql)
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
        }
        // Content-addressed: another task's step may show the same picture.
        let rows = sqlx::query(
            "DELETE FROM artifacts a WHERE a.sha256 = ANY($1) \
             AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.screenshot = a.sha256) \
             RETURNING sha256, kind, media_type, path, bytes",
        )
        .bind(&shots)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.iter().map(read::<ArtifactRow, _>).collect()
    }

    async fn ended_before(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < $1 \
             AND status NOT IN {LIVE} ORDER BY finished_at LIMIT $2"
        )))
        .bind(before)
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&self.pool)
        .await?;
        ids.iter().map(|s| parse_id(s, "task id")).collect()
    }

    async fn delete_artifacts_before(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Artifact>, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Older than the cut, and shown by no step of a task that is live or ended after it.
        let shas: Vec<String> = sqlx::query_scalar(
            "SELECT a.sha256 FROM artifacts a WHERE a.created_at < $1 AND NOT EXISTS \
             (SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE s.screenshot = a.sha256 \
              AND (t.finished_at IS NULL OR t.finished_at >= $1)) \
             ORDER BY a.created_at LIMIT $2 FOR UPDATE OF a SKIP LOCKED",
        )
        .bind(before)
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&mut *tx)
        .await?;
        sqlx::query("UPDATE steps SET screenshot = NULL WHERE screenshot = ANY($1)")
            .bind(&shas)
            .execute(&mut *tx)
            .await?;
        let rows = sqlx::query(
            "DELETE FROM artifacts WHERE sha256 = ANY($1) RETURNING sha256, kind, media_type, path, bytes",
        )
        .bind(&shas)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.iter().map(read::<ArtifactRow, _>).collect()
    }

    async fn app_description(
        &self,
        package: &str,
        version: &str,
    ) -> Result<Option<String>, StoreError> {
        let d: Option<String> = sqlx::query_scalar(
            "SELECT description FROM app_knowledge WHERE package = $1 AND version = $2",
        )
        .bind(enc(package))
        .bind(enc(version))
        .fetch_optional(&self.pool)
        .await?;
        Ok(d.map(super::pg_text::dec))
    }

    async fn put_app_description(
        &self,
        package: &str,
        version: &str,
        description: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO app_knowledge (package, version, description, model, created_at) VALUES ($1, $2, $3, $4, now()) \
             ON CONFLICT (package, version) DO UPDATE SET description = EXCLUDED.description, model = EXCLUDED.model, created_at = EXCLUDED.created_at",
        )
        .bind(enc(package))
        .bind(enc(version))
        .bind(enc(description))
        .bind(enc(model))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn save_flow_run(&self, run: &FlowRun) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO flow_runs (id, status, body, created_at) VALUES ($1, $2, $3::jsonb, $4) \
             ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, body = EXCLUDED.body",
        )
        .bind(run.id.to_string())
        .bind(run.status.as_str())
        .bind(to_json(&Some(run)))
        .bind(run.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn flow_run(&self, id: FlowRunId) -> Result<FlowRun, StoreError> {
        let row = sqlx::query("SELECT body::text AS body FROM flow_runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::FlowRunNotFound(id))?;
        read::<FlowRunRow, _>(&row)
    }

    async fn list_flow_runs(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<FlowRunPage, StoreError> {
        let limit = limit.clamp(1, 500);
        let before = cursor.map(decode_cursor::<FlowRunId>).transpose()?;
        let mut q =
            sqlx::QueryBuilder::<sqlx::Postgres>::new("SELECT body::text AS body FROM flow_runs");
        if let Some(b) = before {
            q.push(" WHERE id < ").push_bind(b.to_string());
        }
        q.push(" ORDER BY id DESC LIMIT ")
            .push_bind(limit as i64 + 1);
        let rows = q.build().fetch_all(&self.pool).await?;
        let mut runs = rows
            .iter()
            .map(read::<FlowRunRow, _>)
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = next_page(&mut runs, limit, |r| r.id);
        Ok(FlowRunPage { runs, next_cursor })
    }

    async fn running_flow_runs(&self) -> Result<Vec<FlowRun>, StoreError> {
        let rows = sqlx::query(
            "SELECT body::text AS body FROM flow_runs WHERE status = 'running' ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<FlowRunRow, _>).collect()
    }

    async fn create_workspace(
        &self,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError> {
        super::postgres_workspaces::create(&self.pool, draft).await
    }

    async fn add_workspace_version(
        &self,
        id: WorkspaceId,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError> {
        super::postgres_workspaces::add_version(&self.pool, id, draft).await
    }

    async fn workspace(
        &self,
        id: WorkspaceId,
        version: Option<u32>,
    ) -> Result<StoredWorkspace, StoreError> {
        super::postgres_workspaces::get(&self.pool, id, version).await
    }

    async fn workspace_versions(
        &self,
        id: WorkspaceId,
    ) -> Result<Vec<WorkspaceVersion>, StoreError> {
        super::postgres_workspaces::versions(&self.pool, id).await
    }

    async fn list_workspaces(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<WorkspacePage, StoreError> {
        super::postgres_workspaces::list(&self.pool, cursor, limit).await
    }

    async fn delete_workspace(&self, id: WorkspaceId) -> Result<(), StoreError> {
        super::postgres_workspaces::delete(&self.pool, id).await
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    fn cluster(&self) -> Option<&dyn super::cluster::ClusterStore> {
        Some(self)
    }

    fn notifier(&self) -> Option<super::notify::Notifier> {
        Some(self.notifier.clone())
    }
}

// ---------------------------------------------------------------------------------------
// One transaction per step (`Store::commit_step`)

/// Inserts a step and adds its tokens and cost to the task's totals. False when the step
/// number was already committed (nothing written).
async fn insert_step(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    step: &Step,
) -> Result<bool, StoreError> {
    let row = StepRow::from(step);
    let inserted = sqlx::query(
        "INSERT INTO steps (task_id, n, started_at, thinking, action, raw, rejected, result, screen, screenshot, \
         timings, tokens_in, tokens_out, cost_usd, model_calls, replay, calls, annotations, actor, tokens_cached) \
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8::jsonb, $9::jsonb, $10, $11::jsonb, $12, $13, $14, $15, \
         $16::jsonb, $17::jsonb, $18::jsonb, $19, $20) ON CONFLICT (task_id, n) DO NOTHING",
    )
    .bind(row.task_id)
    .bind(row.n)
    .bind(row.started_at)
    .bind(row.thinking)
    .bind(row.action)
    .bind(row.raw)
    .bind(row.rejected)
    .bind(row.result)
    .bind(row.screen)
    .bind(row.screenshot)
    .bind(row.timings)
    .bind(row.tokens_in)
    .bind(row.tokens_out)
    .bind(row.cost_usd)
    .bind(row.model_calls)
    .bind(row.replay)
    .bind(row.calls)
    .bind(row.annotations)
    .bind(row.actor)
    .bind(row.tokens_cached)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE tasks SET steps = steps + 1, tokens_in = tokens_in + $1, tokens_out = tokens_out + $2, \
         cost_usd = cost_usd + $3, model_calls = model_calls + $4, tokens_cached = tokens_cached + $6 \
         WHERE id = $5",
    )
    .bind(step.tokens_in as i64)
    .bind(step.tokens_out as i64)
    .bind(step.cost_usd)
    .bind(step.model_calls as i64)
    .bind(step.task_id.to_string())
    .bind(step.tokens_cached as i64)
    .execute(&mut **tx)
    .await?;
    Ok(true)
}

impl PostgresStore {
    /// `commit_step`: artifact rows, then the step, then the events with their pointers
    /// for the other instances (`store::notify`), one commit. The
    /// events' seqs come from the stream's counter row, bumped by their number in one
    /// statement (its lock orders concurrent writers of the stream, on any instance).
    async fn commit_step_tx(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError> {
        let now = now_micros();
        let mut tx = self.pool.begin().await?;
        if !c.artifacts.is_empty() {
            let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "INSERT INTO artifacts (sha256, kind, media_type, path, bytes, created_at) ",
            );
            q.push_values(c.artifacts, |mut b, a| {
                b.push_bind(&a.sha256)
                    .push_bind(&a.kind)
                    .push_bind(&a.media_type)
                    .push_bind(&a.path)
                    .push_bind(a.bytes as i64)
                    .push_bind(now);
            });
            q.push(" ON CONFLICT (sha256) DO NOTHING");
            q.build().execute(&mut *tx).await?;
        }
        if let Some(step) = c.step
            && !insert_step(&mut tx, step).await?
        {
            // Committed before: roll back (the artifact rows were no-ops), write nothing.
            return Ok(None);
        }
        let n = c.events.len() as i64;
        let mut first = 0;
        if n > 0 {
            let last: i64 = sqlx::query_scalar(
                "INSERT INTO streams (stream, last_seq) VALUES ($1, $2) \
                 ON CONFLICT (stream) DO UPDATE SET last_seq = streams.last_seq + $2 RETURNING last_seq",
            )
            .bind(c.stream)
            .bind(n)
            .fetch_one(&mut *tx)
            .await?;
            first = last - n + 1;
            let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(
                "WITH e AS (INSERT INTO events (stream, seq, type, payload, created_at) ",
            );
            q.push_values(c.events.iter().zip(first..), |mut b, (e, seq)| {
                b.push_bind(c.stream)
                    .push_bind(seq)
                    .push_bind(e.kind())
                    .push_bind(enc_json(e.payload().to_string()))
                    .push_unseparated("::jsonb")
                    .push_bind(now);
            });
            // One pointer per event, in seq order, sent at the commit (as `append_event`
            // does for one), so the relay puts each on the other instances' buses.
            q.push(") SELECT count(pg_notify(")
                .push_bind(super::notify::EVENTS_CHANNEL)
                .push(", json_build_object('s', ")
                .push_bind(c.stream)
                .push("::text, 'q', q, 'o', ")
                .push_bind(self.notifier.origin())
                .push("::text)::text)) FROM generate_series(")
                .push_bind(first)
                .push("::bigint, ")
                .push_bind(last)
                .push("::bigint) AS q");
            q.build().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(Some(EventSeqs { first, at: now }))
    }
}
