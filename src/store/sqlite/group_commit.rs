//! SQLite's step commits (`Store::commit_step`), grouped: one writer task takes every
//! commit that is waiting and writes them in one transaction, one round trip to sqlx's
//! connection thread.
//!
//! SQLite has one writer at a time, so with hundreds of tasks running their commits
//! queue; each paid its own `BEGIN`/`COMMIT` and its own round trip (~0.3 ms), and that
//! serial cost capped a 500-phone run at ~730 steps/s with events waiting ~150 ms to be
//! written. A group costs one round trip and one commit however many it holds. One commit
//! alone is written exactly as before, so a quiet server's latency is unchanged.
//!
//! Each commit in a group is closed by a marker row (`commit_no`), so its `seq` and
//! `inserted` rows are told apart. A group whose transaction fails is rolled back and its
//! commits are written one by one, so one bad commit fails alone. Every statement of a
//! commit with a step is guarded by "this step is not committed yet", so a retried commit
//! writes nothing twice.
//!
//! Hand-written rather than a crate: the batching is a loop around one channel, and what
//! makes it correct (the guards, the markers, the fallback) is specific to this schema.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use sqlx::{Row, SqlitePool};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Background, WriteQueue};
use crate::store::step_row::StepRow;
use crate::store::{Artifact, EventSeqs, StepCommit, StoreError};

/// The most commits written in one transaction (its statements are prepared one by one,
/// so this bounds the work a group holds the write lock for, not a parameter limit).
const MAX_GROUP: usize = 64;

type Reply = oneshot::Sender<Result<Option<EventSeqs>, StoreError>>;

/// A `StepCommit` with its parameters computed and owned, so the writer task can take it.
struct Prepared {
    stream: String,
    artifacts: Vec<Artifact>,
    /// (type, JSON payload), in order.
    events: Vec<(String, String)>,
    step: Option<PreparedStep>,
}

struct PreparedStep {
    task_id: String,
    n: i64,
    row: StepRow,
}

impl Prepared {
    fn of(c: &StepCommit<'_>) -> Self {
        Prepared {
            stream: c.stream.to_string(),
            artifacts: c.artifacts.to_vec(),
            events: c
                .events
                .iter()
                .map(|e| (e.kind().to_string(), e.payload().to_string()))
                .collect(),
            step: c.step.map(|s| PreparedStep {
                task_id: s.task_id.to_string(),
                n: s.n as i64,
                row: StepRow::from(s),
            }),
        }
    }
}

/// The writer task and the way to it; one per store (its clones share it).
#[derive(Debug)]
pub(super) struct GroupCommit {
    queue: mpsc::UnboundedSender<(Prepared, Reply)>,
    task: Background,
    counts: Arc<Counts>,
    /// For a commit written here, alone, when the task is gone.
    pool: SqlitePool,
    writer: WriteQueue,
}

/// Transactions the writer task wrote, and the commits in them.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub groups: AtomicU64,
    pub commits: AtomicU64,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Starts the writer task; its groups take `writer` (the store's write queue) while
    /// they write.
    pub(super) fn start(pool: SqlitePool, writer: WriteQueue) -> Self {
        let (queue, rx) = mpsc::unbounded_channel();
        let counts = Arc::<Counts>::default();
        let task = Background::spawn({
            let (pool, writer, counts) = (pool.clone(), writer.clone(), counts.clone());
            move |stop| run(pool, writer, rx, stop, counts)
        });
        GroupCommit {
            queue,
            task,
            counts,
            pool,
            writer,
        }
    }

    /// (transactions, commits) written by the writer task so far.
    pub(super) fn counts(&self) -> (u64, u64) {
        (
            self.counts.groups.load(Ordering::Relaxed),
            self.counts.commits.load(Ordering::Relaxed),
        )
    }

    /// Writes `c` in the next group and returns its result. Where the writer task is gone
    /// (its runtime ended), `c` is written here, alone.
    pub(super) async fn commit(&self, c: &StepCommit<'_>) -> Result<Option<EventSeqs>, StoreError> {
        let (reply, result) = oneshot::channel();
        match self.queue.send((Prepared::of(c), reply)) {
            Ok(()) => result
                .await
                .unwrap_or(Err(StoreError::Database(sqlx::Error::WorkerCrashed))),
            Err(mpsc::error::SendError((p, _))) => {
                let _writing = self.writer.lock().await;
                write_alone(&self.pool, &p, Utc::now()).await
            }
        }
    }

    /// Stops the writer task once the group in hand is written; commits still queued
    /// fail (the store is closing).
    pub(super) async fn stop(&self) {
        self.task.stop().await;
        let (groups, commits) = self.counts();
        tracing::debug!(groups, commits, "SQLite step commits written");
    }
}

/// The writer task: waits for a commit, takes the write queue, gathers whatever else is
/// waiting (up to `MAX_GROUP`), writes them, replies to each.
async fn run(
    pool: SqlitePool,
    writer: WriteQueue,
    mut rx: mpsc::UnboundedReceiver<(Prepared, Reply)>,
    stop: CancellationToken,
    counts: Arc<Counts>,
) {
    loop {
        let first = tokio::select! {
            _ = stop.cancelled() => break,
            r = rx.recv() => match r {
                Some(r) => r,
                None => break,
            },
        };
        let _writing = writer.lock().await;
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        counts.groups.fetch_add(1, Ordering::Relaxed);
        counts
            .commits
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        metrics::histogram!("droidpilot_store_commit_group_size").record(group.len() as f64);
        write_group(&pool, group).await;
    }
    rx.close();
    while let Ok((_, reply)) = rx.try_recv() {
        let _ = reply.send(Err(StoreError::Database(sqlx::Error::PoolClosed)));
    }
}

/// Writes a group in one transaction; if that fails, each of its commits alone.
async fn write_group(pool: &SqlitePool, group: Vec<(Prepared, Reply)>) {
    let now = Utc::now();
    if let [(p, _)] = group.as_slice() {
        let result = write_alone(pool, p, now).await;
        if let Some((_, reply)) = group.into_iter().next() {
            let _ = reply.send(result);
        }
        return;
    }
    let at = super::ts(now);
    let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new("BEGIN IMMEDIATE; ");
    for (i, (p, _)) in group.iter().enumerate() {
        push_commit(&mut q, p, &at);
        q.push(format_args!("SELECT {i} AS commit_no; "));
    }
    q.push("COMMIT;");
    match execute(pool, q).await {
        Ok(rows) => {
            let mut results = results_by_marker(&group, &rows, now).into_iter();
            for (_, reply) in group {
                let r = results.next().unwrap_or(Err(StoreError::Corrupt(
                    "a grouped commit returned no marker row".into(),
                )));
                let _ = reply.send(r);
            }
        }
        Err(e) => {
            tracing::debug!(error = %e, commits = group.len(), "a grouped commit failed; writing its commits one by one");
            for (p, reply) in group {
                let _ = reply.send(write_alone(pool, &p, Utc::now()).await);
            }
        }
    }
}

/// One commit in its own transaction.
async fn write_alone(
    pool: &SqlitePool,
    p: &Prepared,
    now: DateTime<Utc>,
) -> Result<Option<EventSeqs>, StoreError> {
    let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new("BEGIN IMMEDIATE; ");
    push_commit(&mut q, p, &super::ts(now));
    q.push("COMMIT;");
    let rows = execute(pool, q).await?;
    Ok(result_of(p, &rows, now))
}

/// Runs a `BEGIN … COMMIT` query; rolls back if a statement in it failed.
async fn execute(
    pool: &SqlitePool,
    mut q: sqlx::QueryBuilder<sqlx::Sqlite>,
) -> Result<Vec<sqlx::sqlite::SqliteRow>, StoreError> {
    let mut conn = pool.acquire().await?;
    match q.build().fetch_all(&mut *conn).await {
        Ok(rows) => Ok(rows),
        Err(e) => {
            // A statement failed inside the transaction the query opened.
            if sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err() {
                conn.close_on_drop();
            }
            Err(e.into())
        }
    }
}

/// Splits a group's rows at its `commit_no` markers: one result per commit, in order.
fn results_by_marker(
    group: &[(Prepared, Reply)],
    rows: &[sqlx::sqlite::SqliteRow],
    now: DateTime<Utc>,
) -> Vec<Result<Option<EventSeqs>, StoreError>> {
    let mut out = Vec::with_capacity(group.len());
    let mut start = 0;
    for (i, r) in rows.iter().enumerate() {
        if r.try_get::<i64, _>("commit_no").is_ok() {
            let Some((p, _)) = group.get(out.len()) else {
                break;
            };
            out.push(Ok(result_of(p, &rows[start..i], now)));
            start = i + 1;
        }
    }
    out
}

/// What one commit's rows say: the seq of its first event, or None when the step was
/// committed before (a retry after a lost reply) and nothing was written.
fn result_of(
    p: &Prepared,
    rows: &[sqlx::sqlite::SqliteRow],
    now: DateTime<Utc>,
) -> Option<EventSeqs> {
    let mut seqs = Vec::with_capacity(p.events.len());
    let mut inserted = true;
    for r in rows {
        if let Ok(seq) = r.try_get::<i64, _>("seq") {
            seqs.push(seq);
        } else if let Ok(n) = r.try_get::<i64, _>("inserted") {
            inserted = n == 1;
        }
    }
    (inserted && seqs.len() == p.events.len()).then(|| EventSeqs {
        first: seqs.first().copied().unwrap_or(0),
        at: now,
    })
}

/// The statements of one commit, binds in order. With a step, everything but the artifact
/// rows is guarded by "this step is not committed yet"; the step row goes in last and
/// reports whether it did (`inserted`). Each event takes the stream's next seq (`seq`
/// rows, in order).
fn push_commit(q: &mut sqlx::QueryBuilder<sqlx::Sqlite>, p: &Prepared, at: &str) {
    let fresh = |q: &mut sqlx::QueryBuilder<sqlx::Sqlite>| {
        if let Some(step) = &p.step {
            q.push(" AND NOT EXISTS (SELECT 1 FROM steps WHERE task_id = ")
                .push_bind(&step.task_id)
                .push(" AND n = ")
                .push_bind(step.n)
                .push(")");
        }
    };
    if !p.artifacts.is_empty() {
        q.push("INSERT INTO artifacts (sha256, kind, media_type, path, bytes, created_at) ");
        q.push_values(&p.artifacts, |mut b, a| {
            b.push_bind(&a.sha256)
                .push_bind(&a.kind)
                .push_bind(&a.media_type)
                .push_bind(&a.path)
                .push_bind(a.bytes as i64)
                .push_bind(at);
        });
        q.push(" ON CONFLICT (sha256) DO NOTHING; ");
    }
    for (kind, payload) in &p.events {
        q.push("INSERT INTO events (stream, seq, type, payload, created_at) SELECT ")
            .push_bind(&p.stream)
            .push(", COALESCE((SELECT MAX(seq) FROM events WHERE stream = ")
            .push_bind(&p.stream)
            .push("), 0) + 1, ")
            .push_bind(kind)
            .push(", ")
            .push_bind(payload)
            .push(", ")
            .push_bind(at)
            .push(" WHERE 1");
        fresh(q);
        q.push(" RETURNING seq; ");
    }
    if let Some(step) = &p.step {
        push_step(q, step);
        fresh(q);
        q.push("; ");
        push_step_row(q, &step.row);
    }
}

fn push_step(q: &mut sqlx::QueryBuilder<sqlx::Sqlite>, step: &PreparedStep) {
    q.push("UPDATE tasks SET steps = steps + 1, tokens_in = tokens_in + ")
        .push_bind(step.row.tokens_in)
        .push(", tokens_out = tokens_out + ")
        .push_bind(step.row.tokens_out)
        .push(", cost_usd = cost_usd + ")
        .push_bind(step.row.cost_usd)
        .push(", model_calls = model_calls + ")
        .push_bind(step.row.model_calls)
        .push(" WHERE id = ")
        .push_bind(&step.task_id);
}

fn push_step_row(q: &mut sqlx::QueryBuilder<sqlx::Sqlite>, row: &StepRow) {
    q.push("INSERT INTO steps (task_id, n, started_at, thinking, action, raw, rejected, result, screen, screenshot, timings, tokens_in, tokens_out, cost_usd, model_calls, replay, calls, annotations, actor) VALUES (");
    let mut v = q.separated(", ");
    v.push_bind(&row.task_id)
        .push_bind(row.n)
        .push_bind(super::ts(row.started_at))
        .push_bind(&row.thinking)
        .push_bind(&row.action)
        .push_bind(&row.raw)
        .push_bind(&row.rejected)
        .push_bind(&row.result)
        .push_bind(&row.screen)
        .push_bind(&row.screenshot)
        .push_bind(&row.timings)
        .push_bind(row.tokens_in)
        .push_bind(row.tokens_out)
        .push_bind(row.cost_usd)
        .push_bind(row.model_calls)
        .push_bind(&row.replay)
        .push_bind(&row.calls)
        .push_bind(&row.annotations)
        .push_bind(&row.actor);
    q.push(") ON CONFLICT (task_id, n) DO NOTHING; SELECT changes() AS inserted; ");
}
