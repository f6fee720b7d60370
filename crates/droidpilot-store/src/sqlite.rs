//! The SQLite backend: one file in WAL mode, migrations embedded at compile time, runtime
//! queries only (the build needs no DATABASE_URL).
//!
//! WAL lets readers (dashboards, SSE) run while a runner commits steps; `synchronous =
//! NORMAL` is the documented safe pairing with WAL (a committed transaction survives a
//! process crash; only an OS crash may lose the last few). Step commits from many tasks
//! are written together, one transaction per group (`sqlite/group_commit.rs`), and the
//! WAL is checkpointed in the background (`checkpoints`); both run as a `Background` task.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::cursor::{decode_cursor, next_page};
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

mod group_commit;
mod workspaces;

use group_commit::GroupCommit;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Taken by the step path's writes (`commit_step`, `append_event`, `append_step`,
    /// `put_artifact`): SQLite has one writer at a time, and writers that meet its lock
    /// wait in its busy handler, which sleeps (1, 2, 5, 10… ms). Queued here instead, in
    /// order, each starts the moment the previous commits.
    writer: WriteQueue,
    /// Step commits, grouped (`group_commit.rs`).
    commits: Arc<GroupCommit>,
    /// The file's background WAL checkpoints; None in memory.
    checkpoints: Option<Arc<Background>>,
}

/// The step path's write queue (`SqliteStore::writer`).
type WriteQueue = Arc<tokio::sync::Mutex<()>>;

/// A store's background task (WAL checkpoints, the group-commit writer): it runs until
/// `stop` (which awaits it) or until the last handle is dropped, and is given the token
/// that says so.
#[derive(Debug)]
struct Background {
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    stop: tokio_util::sync::CancellationToken,
    _stop_on_drop: tokio_util::sync::DropGuard,
}

impl Background {
    fn spawn<F>(task: impl FnOnce(tokio_util::sync::CancellationToken) -> F) -> Self
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(task(stop.clone()));
        Background {
            task: std::sync::Mutex::new(Some(task)),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
        }
    }

    async fn stop(&self) {
        self.stop.cancel();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}

/// How often the WAL is folded into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// Folds the WAL into the database file once a `CHECKPOINT_EVERY`, in the background.
/// SQLite's own automatic checkpoint (every 1,000 pages) runs inside whichever commit
/// crosses the mark, and with `synchronous = NORMAL` it is the one place SQLite fsyncs:
/// that step's commit took 5–25 ms (the runner bench's p99). Automatic checkpoints are off
/// (`wal_autocheckpoint = 0`); a `PASSIVE` checkpoint here never blocks a writer.
fn checkpoints(pool: SqlitePool) -> Background {
    Background::spawn(|stop| async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(CHECKPOINT_EVERY) => {}
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                tracing::warn!(error = %e, "WAL checkpoint failed; it is tried again in a second");
            }
        }
    })
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and runs pending migrations.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5))
            .pragma("wal_autocheckpoint", "0")
            // Rows rewritten or deleted leave no old bytes in the file's free space (a
            // masked password, a deleted task).
            .pragma("secure_delete", "on");
        // Held until the migrations have run (dropped at the end of this function).
        let _migrating = migration_lock(path).await?;
        Self::connect(opts).await
    }

    /// An in-memory database, for benchmarks that must not touch the disk.
    pub async fn in_memory() -> Result<Self, StoreError> {
        let opts = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: each in-memory connection would be a separate database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await?;
        Self::on(pool, false).await
    }

    async fn connect(opts: SqliteConnectOptions) -> Result<Self, StoreError> {
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(opts)
            .await?;
        Self::on(pool, true).await
    }

    /// The store on `pool`, migrated, with its writer task (and, for a file, its
    /// checkpoints).
    async fn on(pool: SqlitePool, checkpointed: bool) -> Result<Self, StoreError> {
        MIGRATOR.run(&pool).await?;
        let writer = WriteQueue::default();
        Ok(Self {
            checkpoints: checkpointed.then(|| Arc::new(checkpoints(pool.clone()))),
            commits: Arc::new(GroupCommit::start(pool.clone(), writer.clone())),
            pool,
            writer,
        })
    }

    /// The journal mode the database reports (`wal` for a file).
    pub async fn journal_mode(&self) -> Result<String, StoreError> {
        Ok(sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&self.pool)
            .await?)
    }

    /// A transaction that reads, then writes: `BEGIN IMMEDIATE` takes the write lock up
    /// front (waiting up to the busy timeout). A deferred one that read first fails at
    /// once with SQLITE_BUSY when another writer committed meanwhile (it cannot upgrade a
    /// stale snapshot), which surfaced as a 500 on a cancel racing the runner's steps.
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StoreError> {
        Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?)
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// An exclusive lock on `<file>.migrate-lock`, next to the database. Two processes that
/// open a fresh file at once (`serve` and `mcp`, two `mcp` clients) would otherwise both
/// read "nothing applied" and run the same migrations, and the second died on
/// `duplicate column name`: sqlx's migrator locks only on PostgreSQL (an advisory lock).
/// A file lock (`flock`, through std's `File::lock`) is released when the process dies,
/// so a crash mid-migration never leaves it held. The empty file stays: removing it
/// while another process waits on it would split the lock in two.
async fn migration_lock(db: &Path) -> Result<std::fs::File, StoreError> {
    let mut name = db.as_os_str().to_owned();
    name.push(".migrate-lock");
    let io = |e| StoreError::Database(sqlx::Error::Io(e));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&name)
        .map_err(io)?;
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(|e| io(std::io::Error::other(e)))?
        .map_err(io)
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Now, at the precision `ts` writes (microseconds), so a record returned equals the one
/// read back.
fn now_stored() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

fn to_json<T: serde::Serialize>(v: &Option<T>) -> Option<String> {
    v.as_ref()
        .map(|v| serde_json::to_string(v).expect("serializing plain data cannot fail"))
}

const TASK_COLUMNS: &str = "id, status, instruction, priority, max_steps, timeout_seconds, device_id, constraints, agent, \
     external_id, session_id, metadata, assigned_device, created_at, started_at, finished_at, reason, answer, steps, \
     tokens_in, tokens_out, cost_usd, cancel_requested, webhook_url, record, model_calls, max_tokens, max_cost_usd, tokens_cached, \
     record_video, recording";

const STEP_SELECT_ALL: &str = "SELECT task_id, n, started_at, thinking, action, raw, rejected, result, screen, screenshot, timings, tokens_in, tokens_out, tokens_cached, cost_usd, model_calls, replay, calls, annotations, actor \
     FROM steps WHERE task_id = ? ORDER BY n";
const STEP_SELECT_ONE: &str = "SELECT task_id, n, started_at, thinking, action, raw, rejected, result, screen, screenshot, timings, tokens_in, tokens_out, tokens_cached, cost_usd, model_calls, replay, calls, annotations, actor \
     FROM steps WHERE task_id = ? AND n = ?";
const INTERVENTION_SELECT_ONE: &str = "SELECT id, task_id, kind, question, options, answer, answered_by, created_at, answered_at, actor, action, step, detail FROM interventions WHERE id = ?";
const INTERVENTION_SELECT_TASK: &str = "SELECT id, task_id, kind, question, options, answer, answered_by, created_at, answered_at, actor, action, step, detail FROM interventions WHERE task_id = ? ORDER BY created_at, id";

const SCRIPT_SELECT_VERSION: &str =
    "SELECT id, version, body, source, created_at FROM scripts WHERE id = ? AND version = ?";
const SCRIPT_SELECT_LATEST: &str = "SELECT id, version, body, source, created_at FROM scripts WHERE id = ? ORDER BY version DESC LIMIT 1";

async fn insert_script<'e, E: sqlx::Executor<'e, Database = sqlx::Sqlite>>(
    db: E,
    rec: &ScriptRecord,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO scripts (id, version, name, body, source, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(rec.id.to_string())
    .bind(rec.version as i64)
    .bind(&rec.script.name)
    .bind(to_json(&Some(&rec.script)))
    .bind(to_json(&Some(&rec.source)))
    .bind(ts(rec.created_at))
    .execute(db)
    .await?;
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_task(&self, spec: TaskSpec) -> Result<Task, StoreError> {
        let id = TaskId::new();
        let now = Utc::now();
        sqlx::query(
            "INSERT INTO tasks (id, status, instruction, priority, max_steps, timeout_seconds, device_id, constraints, \
             agent, external_id, session_id, metadata, created_at, webhook_url, record, max_tokens, max_cost_usd, \
             record_video) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(TaskStatus::Queued.as_str())
        .bind(&spec.instruction)
        .bind(spec.priority)
        .bind(spec.max_steps as i64)
        .bind(spec.timeout_seconds as i64)
        .bind(&spec.device_id)
        .bind(to_json(&spec.device))
        .bind(to_json(&spec.agent))
        .bind(&spec.external_id)
        .bind(&spec.session_id)
        .bind(to_json(&spec.metadata))
        .bind(ts(now))
        .bind(&spec.webhook_url)
        .bind(spec.record as i64)
        .bind(spec.max_tokens.map(|n| n.min(i64::MAX as u64) as i64))
        .bind(spec.max_cost_usd)
        .bind(spec.record_video as i64)
        .execute(&self.pool)
        .await?;
        self.get_task(id).await
    }

    async fn set_task_agent(
        &self,
        id: TaskId,
        agent: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE tasks SET agent = ? WHERE id = ?")
            .bind(agent.to_string())
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
        sqlx::query("UPDATE tasks SET recording = ? WHERE id = ?")
            .bind(to_json(&Some(segments)))
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn get_task(&self, id: TaskId) -> Result<Task, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?"
        )))
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
        let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE 1=1"
        ));
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

    async fn cancel_task(&self, id: TaskId) -> Result<(Task, CancelOutcome), StoreError> {
        let mut tx = self.write_tx().await?;
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM tasks WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        let status = super::stored_status(id, status)?;
        let outcome = match status {
            s if s.is_terminal() => return Err(StoreError::AlreadyFinished { id, status: s }),
            // A paused task's runner is held at a boundary: signalled, it ends the task.
            TaskStatus::Running | TaskStatus::Paused => {
                sqlx::query("UPDATE tasks SET cancel_requested = 1 WHERE id = ?")
                    .bind(id.to_string())
                    .execute(&mut *tx)
                    .await?;
                CancelOutcome::Requested
            }
            _ => {
                sqlx::query(
                    "UPDATE tasks SET status = 'cancelled', cancel_requested = 1, finished_at = ?, \
                     reason = 'cancelled by request' WHERE id = ?",
                )
                .bind(ts(Utc::now()))
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
        let _writing = self.writer.lock().await;
        let now = Utc::now();
        // The insert computes the next seq itself, so concurrent writers to one stream
        // serialize on SQLite's write lock instead of racing a read-then-write.
        let seq: i64 = sqlx::query_scalar(
            "INSERT INTO events (stream, seq, type, payload, created_at) \
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE stream = ?1), ?2, ?3, ?4) RETURNING seq",
        )
        .bind(stream)
        .bind(event.kind())
        .bind(event.payload().to_string())
        .bind(ts(now))
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
        let rows = sqlx::query("SELECT stream, seq, type, payload, created_at FROM events WHERE stream = ? AND seq > ? ORDER BY seq LIMIT ?")
            .bind(stream)
            .bind(since)
            .bind(limit.clamp(1, 10_000) as i64)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(read::<EventRow, _>).collect()
    }

    async fn queued_tasks(&self, limit: u32) -> Result<Vec<Task>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE status = 'queued' ORDER BY priority DESC, id ASC LIMIT ?"
        )))
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(read::<TaskRow, _>).collect()
    }

    async fn start_task(&self, id: TaskId, device: &str) -> Result<bool, StoreError> {
        let r = sqlx::query(
            "UPDATE tasks SET status = 'running', assigned_device = ?, started_at = COALESCE(started_at, ?), reason = NULL \
             WHERE id = ? AND status = 'queued'",
        )
        .bind(device)
        .bind(ts(Utc::now()))
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
        let r = sqlx::query("UPDATE tasks SET status = ?, reason = ? WHERE id = ? AND status IN ('running', 'waiting_for_user', 'paused')")
            .bind(status.as_str())
            .bind(reason)
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
        let r = sqlx::query(
            "UPDATE tasks SET status = ?, reason = ?, answer = ?, finished_at = ? \
             WHERE id = ? AND status IN ('queued', 'running', 'waiting_for_user', 'paused')",
        )
        .bind(status.as_str())
        .bind(reason)
        .bind(answer)
        .bind(ts(Utc::now()))
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
        // A step commit without events: a step already committed (a retry after a lost
        // reply) is not recorded or counted twice.
        let stream = step.task_id.to_string();
        let c = StepCommit {
            stream: &stream,
            step: Some(step),
            artifacts: &[],
            events: &[],
        };
        self.commits.commit(&c).await.map(drop)
    }

    async fn commit_step(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError> {
        self.commits.commit(c).await
    }

    async fn steps(&self, id: TaskId) -> Result<Vec<Step>, StoreError> {
        self.get_task(id).await?;
        let rows = sqlx::query(STEP_SELECT_ALL)
            .bind(id.to_string())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(read::<StepRow, _>).collect()
    }

    async fn step(&self, id: TaskId, n: u32) -> Result<Step, StoreError> {
        let row = sqlx::query(STEP_SELECT_ONE)
            .bind(id.to_string())
            .bind(n as i64)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::StepNotFound { task: id, n })?;
        read::<StepRow, _>(&row)
    }

    async fn put_artifact(&self, a: &Artifact) -> Result<(), StoreError> {
        let _writing = self.writer.lock().await;
        sqlx::query("INSERT INTO artifacts (sha256, kind, media_type, path, bytes, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING")
            .bind(&a.sha256)
            .bind(&a.kind)
            .bind(&a.media_type)
            .bind(&a.path)
            .bind(a.bytes as i64)
            .bind(ts(Utc::now()))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn artifact(&self, sha256: &str) -> Result<Option<Artifact>, StoreError> {
        let row = sqlx::query(
            "SELECT sha256, kind, media_type, path, bytes FROM artifacts WHERE sha256 = ?",
        )
        .bind(sha256)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(read::<ArtifactRow, _>).transpose()
    }

    async fn create_intervention(&self, iv: &Intervention) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO interventions (id, task_id, kind, question, options, answer, answered_by, created_at, answered_at, actor, action, step, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&iv.id)
        .bind(iv.task_id.to_string())
        .bind(iv.kind.as_str())
        .bind(&iv.question)
        .bind(to_json(&iv.options))
        .bind(&iv.answer)
        .bind(&iv.answered_by)
        .bind(ts(iv.created_at))
        .bind(iv.answered_at.map(ts))
        .bind(&iv.by)
        .bind(to_json(&iv.action))
        .bind(iv.step.map(i64::from))
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
        let r = sqlx::query("UPDATE interventions SET answer = ?, answered_by = ?, answered_at = ? WHERE id = ? AND answered_at IS NULL")
            .bind(answer)
            .bind(by)
            .bind(ts(Utc::now()))
            .bind(id)
            .execute(&self.pool)
            .await?;
        let row = sqlx::query(INTERVENTION_SELECT_ONE)
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
        let rows = sqlx::query(INTERVENTION_SELECT_TASK)
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
        let mut tx = self.write_tx().await?;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM tasks WHERE status IN ('running', 'waiting_for_user', 'paused') ORDER BY id",
        )
        .fetch_all(&mut *tx)
        .await?;
        if requeue {
            sqlx::query("UPDATE tasks SET status = 'queued', reason = ? WHERE status IN ('running', 'waiting_for_user', 'paused')")
                .bind(reason)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query("UPDATE tasks SET status = 'interrupted', reason = ?, finished_at = ? WHERE status IN ('running', 'waiting_for_user', 'paused')")
                .bind(reason)
                .bind(ts(Utc::now()))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        ids.iter()
            .map(|s| {
                s.parse()
                    .map_err(|e| StoreError::Corrupt(format!("task id `{s}`: {e}")))
            })
            .collect()
    }

    async fn create_script(
        &self,
        script: &Script,
        source: ScriptSource,
    ) -> Result<ScriptRecord, StoreError> {
        let rec = ScriptRecord {
            id: ScriptId::new(),
            version: 1,
            // At the precision it is stored with, so the record returned equals the one read.
            created_at: now_stored(),
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
        let mut tx = self.write_tx().await?;
        let latest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM scripts WHERE id = ?")
                .bind(id.to_string())
                .fetch_one(&mut *tx)
                .await?;
        let latest = latest.ok_or(StoreError::ScriptNotFound(id))?;
        let rec = ScriptRecord {
            id,
            version: latest as u32 + 1,
            // At the precision it is stored with, so the record returned equals the one read.
            created_at: now_stored(),
            source,
            script: script.clone(),
        };
        insert_script(&mut *tx, &rec).await?;
        tx.commit().await?;
        Ok(rec)
    }

    async fn script(&self, id: ScriptId, version: Option<u32>) -> Result<ScriptRecord, StoreError> {
        let row = match version {
            Some(v) => sqlx::query(SCRIPT_SELECT_VERSION)
                .bind(id.to_string())
                .bind(v as i64)
                .fetch_optional(&self.pool)
                .await?
                .ok_or(StoreError::ScriptVersionNotFound { id, version: v }),
            None => sqlx::query(SCRIPT_SELECT_LATEST)
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
        let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "SELECT s.id, s.version, s.body, s.source, s.created_at FROM scripts s \
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
        let rows = sqlx::query(
            "SELECT id, version, body, source, created_at FROM scripts WHERE id = ? ORDER BY version",
        )
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::ScriptNotFound(id));
        }
        rows.iter().map(read::<ScriptRow, _>).collect()
    }

    async fn delete_script(&self, id: ScriptId) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM scripts WHERE id = ?")
            .bind(id.to_string())
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::ScriptNotFound(id));
        }
        Ok(())
    }

    async fn delete_task(&self, id: TaskId) -> Result<Vec<Artifact>, StoreError> {
        let mut tx = self.write_tx().await?;
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM tasks WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        let status = super::stored_status(id, status)?;
        if !status.is_terminal() {
            return Err(StoreError::NotEnded { id, status });
        }
        let mut shots: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT screenshot FROM steps WHERE task_id = ? AND screenshot IS NOT NULL",
        )
        .bind(id.to_string())
        .fetch_all(&mut *tx)
        .await?;
        let recording: Option<String> =
            sqlx::query_scalar("SELECT recording FROM tasks WHERE id = ?")
                .bind(id.to_string())
                .fetch_one(&mut *tx)
                .await?;
        shots.extend(super::recording_artifacts(recording.as_deref()));
        for sql in [
            "DELETE FROM events WHERE stream = ?",
            "DELETE FROM interventions WHERE task_id = ?",
            "DELETE FROM steps WHERE task_id = ?",
            "DELETE FROM tasks WHERE id = ?",
        ] {
            sqlx::query(sql)
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?;
        }
        let mut gone = Vec::new();
        for sha in shots {
            // Content-addressed: another task's step may show the same picture.
            let row = sqlx::query(
                "DELETE FROM artifacts WHERE sha256 = ?1 \
                 AND NOT EXISTS (SELECT 1 FROM steps WHERE screenshot = ?1) \
                 RETURNING sha256, kind, media_type, path, bytes",
            )
            .bind(&sha)
            .fetch_optional(&mut *tx)
            .await?;
            gone.extend(row.as_ref().map(read::<ArtifactRow, _>).transpose()?);
        }
        tx.commit().await?;
        Ok(gone)
    }

    async fn ended_before(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ? \
             AND status NOT IN ('queued', 'running', 'waiting_for_user', 'paused') \
             ORDER BY finished_at LIMIT ?",
        )
        .bind(ts(before))
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&self.pool)
        .await?;
        ids.iter()
            .map(|s| {
                s.parse()
                    .map_err(|e| StoreError::Corrupt(format!("task id `{s}`: {e}")))
            })
            .collect()
    }

    async fn delete_artifacts_before(
        &self,
        before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Artifact>, StoreError> {
        let mut tx = self.write_tx().await?;
        let cut = ts(before);
        // Older than the cut, and shown by no step of a task that is live or ended after it.
        let shas: Vec<String> = sqlx::query_scalar(
            "SELECT a.sha256 FROM artifacts a WHERE a.created_at < ?1 AND NOT EXISTS \
             (SELECT 1 FROM steps s JOIN tasks t ON t.id = s.task_id WHERE s.screenshot = a.sha256 \
              AND (t.finished_at IS NULL OR t.finished_at >= ?1)) \
             ORDER BY a.created_at LIMIT ?2",
        )
        .bind(&cut)
        .bind(limit.clamp(1, 10_000) as i64)
        .fetch_all(&mut *tx)
        .await?;
        let mut gone = Vec::new();
        for sha in shas {
            sqlx::query("UPDATE steps SET screenshot = NULL WHERE screenshot = ?")
                .bind(&sha)
                .execute(&mut *tx)
                .await?;
            let row = sqlx::query(
                "DELETE FROM artifacts WHERE sha256 = ? RETURNING sha256, kind, media_type, path, bytes",
            )
            .bind(&sha)
            .fetch_one(&mut *tx)
            .await?;
            gone.push(read::<ArtifactRow, _>(&row)?);
        }
        tx.commit().await?;
        Ok(gone)
    }

    async fn app_description(
        &self,
        package: &str,
        version: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT description FROM app_knowledge WHERE package = ? AND version = ?",
        )
        .bind(package)
        .bind(version)
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn put_app_description(
        &self,
        package: &str,
        version: &str,
        description: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO app_knowledge (package, version, description, model, created_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (package, version) DO UPDATE SET description = excluded.description, model = excluded.model, created_at = excluded.created_at",
        )
        .bind(package)
        .bind(version)
        .bind(description)
        .bind(model)
        .bind(ts(chrono::Utc::now()))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn save_flow_run(&self, run: &FlowRun) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO flow_runs (id, status, body, created_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body",
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
        let row = sqlx::query("SELECT body FROM flow_runs WHERE id = ?")
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
        let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new("SELECT body FROM flow_runs");
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
        let rows = sqlx::query("SELECT body FROM flow_runs WHERE status = 'running' ORDER BY id")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(read::<FlowRunRow, _>).collect()
    }

    async fn create_workspace(
        &self,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError> {
        workspaces::create(&self.pool, draft).await
    }

    async fn add_workspace_version(
        &self,
        id: WorkspaceId,
        draft: StoredWorkspace,
    ) -> Result<WorkspaceVersion, StoreError> {
        workspaces::add_version(self, id, draft).await
    }

    async fn workspace(
        &self,
        id: WorkspaceId,
        version: Option<u32>,
    ) -> Result<StoredWorkspace, StoreError> {
        workspaces::get(&self.pool, id, version).await
    }

    async fn workspace_versions(
        &self,
        id: WorkspaceId,
    ) -> Result<Vec<WorkspaceVersion>, StoreError> {
        workspaces::versions(&self.pool, id).await
    }

    async fn list_workspaces(
        &self,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<WorkspacePage, StoreError> {
        workspaces::list(&self.pool, cursor, limit).await
    }

    async fn delete_workspace(&self, id: WorkspaceId) -> Result<(), StoreError> {
        workspaces::delete(&self.pool, id).await
    }

    async fn close(&self) {
        self.commits.stop().await;
        if let Some(c) = &self.checkpoints {
            c.stop().await;
        }
        // A checkpoint folds the WAL back into the main file so the database is one file again.
        let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await;
        self.pool.close().await;
    }
}

// The `Store` contract is tested once for both backends in tests/store; here only what is
// SQLite's own (WAL, rows written by older versions of the schema).
#[cfg(test)]
mod tests {
    use super::*;
    use droidpilot_core::domain::{NewTask, TaskSpec};
    use sqlx::Row;

    fn spec(i: &str) -> TaskSpec {
        TaskSpec::parse(NewTask {
            instruction: Some(i.into()),
            ..Default::default()
        })
        .unwrap()
    }

    fn step_of(task: TaskId, n: u32) -> Step {
        Step {
            task_id: task,
            n,
            started_at: Utc::now(),
            thinking: None,
            action: None,
            raw: None,
            rejected: None,
            outcome: droidpilot_core::domain::StepOutcome {
                status: droidpilot_core::domain::StepStatus::Ok,
                error: None,
                screen_changed: Some(true),
                detail: None,
            },
            screen: None,
            screenshot: None,
            timings: Default::default(),
            tokens_in: 3,
            tokens_out: 0,
            tokens_cached: 2,
            cost_usd: 0.0,
            model_calls: 1,
            replay: None,
            calls: Vec::new(),
            annotations: Vec::new(),
            by: None,
        }
    }

    /// Every table as text, task ids by their index in `ids`, times left out (a group and
    /// a commit alone are written at different moments); a REAL by its bits.
    async fn tables(store: &SqliteStore, ids: &[TaskId]) -> String {
        let name = |s: String| {
            ids.iter()
                .position(|id| id.to_string() == s)
                .map_or(s, |i| format!("t{i}"))
        };
        let mut out = String::new();
        for r in sqlx::query("SELECT stream, seq, type, payload FROM events ORDER BY stream, seq")
            .fetch_all(store.pool())
            .await
            .unwrap()
        {
            let (stream, seq, kind, payload): (String, i64, String, String) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            out += &format!("event {} {seq} {kind} {payload}\n", name(stream));
        }
        for r in sqlx::query(
            "SELECT task_id, n, thinking, action, raw, rejected, result, screen, screenshot, \
             timings, tokens_in, tokens_out, cost_usd, model_calls, replay, calls, annotations, \
             actor, tokens_cached FROM steps ORDER BY task_id, n",
        )
        .fetch_all(store.pool())
        .await
        .unwrap()
        {
            let texts: Vec<Option<String>> = [2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 17]
                .into_iter()
                .map(|i| r.get(i))
                .collect();
            let ints: Vec<i64> = [1, 10, 11, 13, 18].into_iter().map(|i| r.get(i)).collect();
            let cost: f64 = r.get(12);
            out += &format!(
                "step {} {ints:?} {:x} {texts:?}\n",
                name(r.get(0)),
                cost.to_bits()
            );
        }
        for id in ids {
            let t = store.get_task(*id).await.unwrap();
            let c = (
                t.steps,
                t.tokens_in,
                t.tokens_out,
                t.tokens_cached,
                t.model_calls,
            );
            out += &format!("task {c:?} {:x}\n", t.cost_usd.to_bits());
        }
        let arts: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT sha256, path, bytes FROM artifacts ORDER BY sha256")
                .fetch_all(store.pool())
                .await
                .unwrap();
        out + &format!("artifacts {arts:?}\n")
    }

    /// (stream, step, artifacts, events) of a `StepCommit`, owned.
    type Commit = (String, Option<Step>, Vec<Artifact>, Vec<TaskEvent>);

    /// A group writes exactly what its commits write one by one, in the same order:
    /// events of one stream from several commits, commits without a step, a step twice in
    /// one group, a step committed before (a retry), artifacts, and costs no decimal
    /// prints exactly.
    #[tokio::test]
    async fn a_group_writes_what_its_commits_write_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut dumps = Vec::new();
        for grouped in [true, false] {
            let store = SqliteStore::open(&dir.path().join(format!("{grouped}.db")))
                .await
                .unwrap();
            let mut ids = Vec::new();
            for i in 0..3 {
                ids.push(store.create_task(spec(&format!("t{i}"))).await.unwrap().id);
            }
            let at = "2026-11-26T12:00:00Z".parse().unwrap();
            let step = |t: usize, n: u32, cost: f64| Step {
                started_at: at,
                cost_usd: cost,
                thinking: Some(format!("step {n} of t{t}: \"quoted\" ✓")),
                ..step_of(ids[t], n)
            };
            let ev = |kind: &str, i: u32| {
                TaskEvent::from_parts(kind, serde_json::json!({"i": i, "f": 0.1 + 0.2}))
            };
            let art = |n: u8| Artifact {
                sha256: format!("{n:064x}"),
                kind: "screenshot".into(),
                media_type: "image/png".into(),
                path: format!("a/{n}.png"),
                bytes: u64::from(n) * 1000,
            };
            // Committed before: the group's copy of it is a retry.
            let before = step(2, 1, 0.5);
            let (s2, e2) = (ids[2].to_string(), [ev("step.executed", 0)]);
            store
                .commit_step(&StepCommit {
                    stream: &s2,
                    step: Some(&before),
                    artifacts: &[],
                    events: &e2,
                })
                .await
                .unwrap();
            let (s0, s1) = (ids[0].to_string(), ids[1].to_string());
            let commits: Vec<Commit> = vec![
                (
                    s0.clone(),
                    Some(step(0, 1, 1e-7 / 3.0)),
                    vec![art(1), art(2)],
                    vec![ev("step.observed", 1), ev("step.executed", 2)],
                ),
                (s0.clone(), None, vec![], vec![ev("note", 3)]),
                (s1.clone(), Some(step(1, 1, 0.1)), vec![art(2)], vec![]),
                (
                    s0.clone(),
                    Some(step(0, 1, 9.0)),
                    vec![],
                    vec![ev("step.executed", 4)],
                ),
                (
                    s1.clone(),
                    Some(step(1, 2, 0.30000000000000004)),
                    vec![art(3)],
                    vec![ev("a", 5), ev("b", 6), ev("c", 7)],
                ),
                (
                    s2.clone(),
                    Some(before.clone()),
                    vec![],
                    vec![ev("step.executed", 8)],
                ),
                ("devices".into(), None, vec![], vec![ev("device.added", 9)]),
            ];
            let groups_before = store.commits.counts().0;
            let write = |(stream, step, arts, events): (
                String,
                Option<Step>,
                Vec<Artifact>,
                Vec<TaskEvent>,
            )| {
                let s = store.clone();
                async move {
                    let c = StepCommit {
                        stream: &stream,
                        step: step.as_ref(),
                        artifacts: &arts,
                        events: &events,
                    };
                    s.commit_step(&c).await.unwrap().map(|seqs| seqs.first)
                }
            };
            let mut firsts = Vec::new();
            if grouped {
                // Queued in order behind the busy write queue, then written together.
                let busy = store.writer.try_lock().unwrap();
                let mut handles = Vec::new();
                for c in commits {
                    handles.push(tokio::spawn(write(c)));
                    tokio::task::yield_now().await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                drop(busy);
                for h in handles {
                    firsts.push(h.await.unwrap());
                }
            } else {
                for c in commits {
                    firsts.push(write(c).await);
                }
            }
            let groups = store.commits.counts().0 - groups_before;
            assert_eq!(groups, if grouped { 1 } else { 7 }, "grouped: {grouped}");
            assert_eq!(
                firsts,
                [Some(1), Some(3), Some(0), None, Some(1), None, Some(1)],
                "each commit's first seq (0: no events; None: written before), grouped: {grouped}"
            );
            dumps.push(tables(&store, &ids).await);
            store.close().await;
        }
        assert_eq!(dumps[0], dumps[1], "grouped, then one by one");
        assert!(dumps[0].contains("step t1 [2, 3, 0, 1, 2]"), "{}", dumps[0]);
    }

    /// Commits that wait while the write queue is busy go in one transaction, each gets its
    /// own seqs back, and one that fails (its task does not exist) fails alone.
    #[tokio::test]
    async fn commits_waiting_together_are_written_as_one_group_and_fail_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("dp.db")).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..12 {
            let id = store.create_task(spec(&format!("t{i}"))).await.unwrap().id;
            // Task i's stream holds i events already, so each commit's seqs are its own.
            for _ in 0..i {
                let e = TaskEvent::from_parts("note", serde_json::json!({}));
                store.append_event(&id.to_string(), e).await.unwrap();
            }
            tasks.push(id);
        }
        let ghost = TaskId::new();
        let busy = store.writer.lock().await;
        let mut handles = Vec::new();
        for (i, id) in tasks.iter().copied().chain([ghost]).enumerate() {
            let s = store.clone();
            handles.push(tokio::spawn(async move {
                let stream = id.to_string();
                let step = step_of(id, 1);
                let events = [
                    TaskEvent::from_parts("step.observed", serde_json::json!({"i": i})),
                    TaskEvent::from_parts("step.executed", serde_json::json!({"i": i})),
                ];
                let c = StepCommit {
                    stream: &stream,
                    step: Some(&step),
                    artifacts: &[],
                    events: &events,
                };
                s.commit_step(&c).await
            }));
        }
        // Every commit is queued behind the busy write queue before it frees.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before = store.commits.counts();
        drop(busy);
        let mut results = Vec::new();
        for h in handles {
            results.push(h.await.unwrap());
        }
        let (groups, commits) = store.commits.counts();
        assert_eq!(
            (groups - before.0, commits - before.1),
            (1, 13),
            "one transaction for all thirteen"
        );
        let ghost_result = results.pop().unwrap();
        assert!(ghost_result.is_err(), "{ghost_result:?}");
        for (i, (id, r)) in tasks.iter().zip(results).enumerate() {
            let first = i as i64 + 1;
            assert_eq!(r.unwrap().map(|s| s.first), Some(first), "task {i}");
            let events = store.events_since(&id.to_string(), 0, 20).await.unwrap();
            let kinds: Vec<_> = events[i..].iter().map(|e| (e.seq, e.kind())).collect();
            assert_eq!(
                kinds,
                [(first, "step.observed"), (first + 1, "step.executed")]
            );
            let t = store.get_task(*id).await.unwrap();
            assert_eq!((t.steps, t.tokens_in), (1, 3));
        }
        assert!(
            store
                .events_since(&ghost.to_string(), 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // A retry of one of them (its reply lost) writes nothing, alone or grouped.
        let stream = tasks[0].to_string();
        let step = step_of(tasks[0], 1);
        let events = [TaskEvent::from_parts(
            "step.executed",
            serde_json::json!({}),
        )];
        let c = StepCommit {
            stream: &stream,
            step: Some(&step),
            artifacts: &[],
            events: &events,
        };
        assert_eq!(store.commit_step(&c).await.unwrap(), None);
        store.close().await;
    }

    #[tokio::test]
    async fn committed_rows_reach_the_main_file_without_an_automatic_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dp.db");
        let store = SqliteStore::open(&path).await.unwrap();
        let task = store.create_task(spec("reaches the file")).await.unwrap();
        // SQLite's own checkpoint would leave this small write in the WAL (it waits for
        // 1,000 pages, and is off here); the background one folds it into the file.
        let copy = dir.path().join("copy.db");
        let mut seen = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            std::fs::copy(&path, &copy).unwrap();
            let alone = SqliteStore::connect(
                SqliteConnectOptions::new()
                    .filename(&copy)
                    .journal_mode(SqliteJournalMode::Delete),
            )
            .await
            .unwrap();
            seen = alone.get_task(task.id).await.is_ok();
            alone.pool.close().await;
            if seen {
                break;
            }
        }
        assert!(seen, "the task row never reached the database file");
        let auto: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(auto, 0, "commits never pay for a checkpoint");
        store.close().await;
        assert!(
            store
                .checkpoints
                .as_ref()
                .unwrap()
                .task
                .lock()
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_row_written_before_typed_steps_still_reads() {
        use droidpilot_core::domain::Action;
        let store = SqliteStore::in_memory().await.unwrap();
        let task = store.create_task(spec("t")).await.unwrap();
        let old_screen = r#"{"summary":"Home","app":null,"activity":null,"has_modal":false,"sensitive":false,"layout_hash":null}"#;
        for (n, action) in [
            (1, r#"{"action":"key","key":"back"}"#),
            (2, r#"{"action":"tap","coordinate":"nowhere"}"#),
        ] {
            sqlx::query("INSERT INTO steps (task_id, n, started_at, action, result, screen) VALUES (?, ?, ?, ?, ?, ?)")
                .bind(task.id.to_string())
                .bind(n)
                .bind(ts(Utc::now()))
                .bind(action)
                .bind(r#"{"status":"ok"}"#)
                .bind(old_screen)
                .execute(&store.pool)
                .await
                .unwrap();
        }
        let back = store.steps(task.id).await.unwrap();
        assert_eq!(back[0].action.as_ref().map(Action::name), Some("key"));
        let screen = back[0].screen.as_ref().unwrap();
        assert_eq!(
            (screen.summary.as_str(), screen.elements.len()),
            ("Home", 0)
        );
        assert_eq!(
            back[1].action, None,
            "an action that never parsed is not an action"
        );
        assert_eq!(
            back[1].rejected.as_ref().unwrap()["coordinate"],
            serde_json::json!("nowhere"),
            "what the model sent is kept as `rejected`"
        );
    }

    #[tokio::test]
    async fn file_database_runs_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("nested/dir/db.sqlite"))
            .await
            .unwrap();
        assert_eq!(s.journal_mode().await.unwrap(), "wal");
        s.close().await;
    }
}
