//! SQLite's step commits (`Store::commit_step`), grouped: one writer task takes every
//! commit that is waiting and writes them in one transaction.
//!
//! SQLite has one writer at a time, so with hundreds of tasks running their commits
//! queue; each paid its own `BEGIN`/`COMMIT` and its own round trip (~0.3 ms), and that
//! serial cost capped a 500-phone run at ~730 steps/s with events waiting ~150 ms to be
//! written. A group costs one commit however many it holds.
//!
//! Two ways to write, one result:
//! - **One commit alone** (a quiet server; a failed group's fallback; a store whose
//!   writer task is gone) is one multi-statement query built for it, one round trip:
//!   every statement of a commit with a step is guarded by "this step is not committed
//!   yet", so a retried commit writes nothing twice, and its rows (`seq`, `inserted`) say
//!   what was written.
//! - **A group** (`write_set`) is one query whose text never changes, its rows passed as
//!   JSON arrays (`json_each`): prepared once per connection, one round trip and one row
//!   back however many commits it holds. Built per group, the query had to be parsed
//!   every time (its text differed) and sent back a row per event and per commit, each a
//!   hand-off from sqlx's connection thread: at 500 phones that was a fifth and a quarter
//!   of the SQLite thread's time. The guards are written once, as `WITH` clauses every
//!   statement of the group shares.
//!
//! `a_group_writes_what_its_commits_write_alone` (in `sqlite.rs`) holds the two to the
//! same rows. A group whose transaction fails is rolled back and its commits are written
//! one by one, so one bad commit fails alone.
//!
//! Hand-written rather than a crate: the batching is a loop around one channel, and what
//! makes it correct (the guards, the shared plan, the fallback) is specific to this schema.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use chrono::{DateTime, Utc};
use sqlx::{Row, SqlitePool};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Background, WriteQueue};
use crate::step_row::StepRow;
use crate::{Artifact, EventSeqs, StepCommit, StoreError};

/// The most commits written in one transaction: bounds the work a group holds the write
/// lock for (its rows travel as JSON, so there is no parameter limit).
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
    let commits: Vec<&Prepared> = group.iter().map(|(p, _)| p).collect();
    match write_set(pool, &commits, now).await {
        Ok(results) => {
            for ((_, reply), r) in group.into_iter().zip(results) {
                let _ = reply.send(Ok(r));
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

/// A group as one fixed query (`GROUP_SQL`: a plan, then one statement per table, in one
/// transaction), its rows passed as JSON arrays: the text never changes, so it is
/// prepared once per connection, and a group costs one round trip and one row back
/// however many commits it holds. A query built per group (as `write_alone` builds one)
/// was parsed again every time and answered with a row per event and per commit, each a
/// hand-off from sqlx's connection thread.
///
/// The plan row says which commits are fresh (with a step: not committed before, and the
/// first of the group for that step) and each of their streams' last seq; the inserts
/// that follow compute the same from the same `WITH` clauses inside the same
/// transaction, so the seqs worked out here from the plan are the ones written.
async fn write_set(
    pool: &SqlitePool,
    group: &[&Prepared],
    now: DateTime<Utc>,
) -> Result<Vec<Option<EventSeqs>>, StoreError> {
    let set = SetRows::of(group);
    let (at, commits) = (super::ts(now), json(&set.commits));
    let (artifacts, events, steps) = (json(&set.artifacts), json(&set.events), json(&set.steps));
    // The binds in the order of the `?`s in `GROUP_SQL`'s text (`binds_follow_the_text`).
    let q = sqlx::query(GROUP_SQL.as_str())
        .bind(commits.as_str())
        .bind(at.as_str())
        .bind(artifacts)
        .bind(commits.as_str())
        .bind(at.as_str())
        .bind(events)
        .bind(commits.as_str())
        .bind(steps.as_str())
        .bind(commits.as_str())
        .bind(steps.as_str());
    let rows = execute(pool, q).await?;
    let plan = rows
        .first()
        .ok_or_else(|| StoreError::Corrupt("a grouped commit returned no plan row".into()))?;
    let fresh: Vec<usize> = plan_column(plan, "fresh")?;
    let mut next: HashMap<String, i64> = plan_column(plan, "bases")?;
    let mut out = vec![None; group.len()];
    for c in fresh {
        let p = group
            .get(c)
            .ok_or_else(|| StoreError::Corrupt(format!("the plan names commit {c}")))?;
        let last = next.entry(p.stream.clone()).or_insert(0);
        let first = if p.events.is_empty() { 0 } else { *last + 1 };
        *last += p.events.len() as i64;
        out[c] = Some(EventSeqs { first, at: now });
    }
    Ok(out)
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain rows serialize")
}

fn plan_column<T: serde::de::DeserializeOwned>(
    row: &sqlx::sqlite::SqliteRow,
    col: &str,
) -> Result<T, StoreError> {
    let text: String = row.try_get(col)?;
    serde_json::from_str(&text)
        .map_err(|e| StoreError::Corrupt(format!("grouped commit plan `{col}`: {e}")))
}

/// A group's rows, borrowed, in the JSON shapes `GROUP_SQL` reads (`c` is the commit's
/// index in the group; an array's order is the order things are written in).
#[derive(Default)]
struct SetRows<'a> {
    artifacts: Vec<(&'a str, &'a str, &'a str, &'a str, i64)>,
    /// (stream, task_id, n): the step's key when the commit has one.
    commits: Vec<(&'a str, Option<&'a str>, Option<i64>)>,
    /// (c, stream, type, payload).
    events: Vec<(usize, &'a str, &'a str, &'a str)>,
    steps: Vec<SetStep<'a>>,
}

#[derive(serde::Serialize)]
struct SetStep<'a> {
    c: usize,
    #[serde(flatten)]
    row: StepCols<'a>,
}

/// A `StepRow`'s columns by name (`started_at` as stored).
#[derive(serde::Serialize)]
struct StepCols<'a> {
    task_id: &'a str,
    n: i64,
    started_at: String,
    thinking: Option<&'a str>,
    action: Option<&'a str>,
    raw: Option<&'a str>,
    rejected: Option<&'a str>,
    result: Option<&'a str>,
    screen: Option<&'a str>,
    screenshot: Option<&'a str>,
    timings: Option<&'a str>,
    tokens_in: i64,
    tokens_out: i64,
    tokens_cached: i64,
    cost_usd: f64,
    model_calls: i64,
    replay: Option<&'a str>,
    calls: Option<&'a str>,
    annotations: Option<&'a str>,
    actor: Option<&'a str>,
}

impl<'a> SetRows<'a> {
    fn of(group: &[&'a Prepared]) -> Self {
        let mut set = SetRows::default();
        for (c, p) in group.iter().enumerate() {
            set.artifacts.extend(p.artifacts.iter().map(|a| {
                (
                    a.sha256.as_str(),
                    a.kind.as_str(),
                    a.media_type.as_str(),
                    a.path.as_str(),
                    a.bytes as i64,
                )
            }));
            let step = p.step.as_ref();
            set.commits.push((
                &p.stream,
                step.map(|s| s.task_id.as_str()),
                step.map(|s| s.n),
            ));
            set.events.extend(
                p.events
                    .iter()
                    .map(|(k, v)| (c, p.stream.as_str(), k.as_str(), v.as_str())),
            );
            if let Some(s) = step {
                set.steps.push(SetStep {
                    c,
                    row: StepCols::of(&s.row),
                });
            }
        }
        set
    }
}

impl<'a> StepCols<'a> {
    fn of(r: &'a StepRow) -> Self {
        StepCols {
            task_id: &r.task_id,
            n: r.n,
            started_at: super::ts(r.started_at),
            thinking: r.thinking.as_deref(),
            action: r.action.as_deref(),
            raw: r.raw.as_deref(),
            rejected: r.rejected.as_deref(),
            result: r.result.as_deref(),
            screen: r.screen.as_deref(),
            screenshot: r.screenshot.as_deref(),
            timings: r.timings.as_deref(),
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
            tokens_cached: r.tokens_cached,
            cost_usd: r.cost_usd,
            model_calls: r.model_calls,
            replay: r.replay.as_deref(),
            calls: r.calls.as_deref(),
            annotations: r.annotations.as_deref(),
            actor: r.actor.as_deref(),
        }
    }
}

/// Which of a group's commits are written, as `WITH` clauses over `commits` (?, by
/// index `c`): `fresh`, those without a step, and those whose step is neither committed
/// nor earlier in the group. Every statement of a group starts with it, so they all
/// agree: `steps`, the one table it reads, is written last. The others read it as
/// `x IN (SELECT c FROM fresh)`, which SQLite builds once per statement, where a join
/// scanned `fresh` again for every row of JSON (and parsed each row again).
const GROUP_PLAN: &str = "WITH commits AS (\
    SELECT key AS c, value->>0 AS stream, value->>1 AS task_id, value->>2 AS n, \
      row_number() OVER (PARTITION BY value->>1, value->>2 ORDER BY key) AS k \
    FROM json_each(?)), \
  fresh AS (SELECT c, stream FROM commits m WHERE m.task_id IS NULL OR (m.k = 1 AND \
    NOT EXISTS (SELECT 1 FROM steps s WHERE s.task_id = m.task_id AND s.n = m.n))) ";

/// A stream's last seq before the group: read by the events insert before it inserts
/// (SQLite runs a select that reads the table it fills, or numbers rows with a window
/// function, to completion first), and by the plan.
const BASE: &str = "COALESCE((SELECT MAX(seq) FROM events x WHERE x.stream = {s}), 0)";

/// The plan as one row: the fresh commits in order, and each fresh stream's base seq.
static PLAN_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{GROUP_PLAN} SELECT (SELECT json_group_array(c) FROM (SELECT c FROM fresh ORDER BY c)) \
           AS fresh, (SELECT json_group_object(f.stream, {}) FROM (SELECT DISTINCT stream FROM fresh) f) \
           AS bases",
        BASE.replace("{s}", "f.stream")
    )
});

/// Every artifact of the group (?), unguarded, as a commit alone writes them.
const ARTIFACTS_SQL: &str = "INSERT INTO artifacts (sha256, kind, media_type, path, bytes, created_at) \
    SELECT value->>0, value->>1, value->>2, value->>3, value->>4, ? FROM json_each(?) WHERE 1 \
    ON CONFLICT (sha256) DO NOTHING";

/// The fresh commits' events (?: [c, stream, type, payload]), each stream's numbered on
/// from its base in group order.
static EVENTS_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{GROUP_PLAN} INSERT INTO events (stream, seq, type, payload, created_at) \
         SELECT stream, {} + row_number() OVER (PARTITION BY stream ORDER BY ord), \
           type, payload, ? \
         FROM (SELECT key AS ord, value->>1 AS stream, value->>2 AS type, \
           value->>3 AS payload FROM json_each(?) WHERE value->>0 IN (SELECT c FROM fresh)) e \
         ORDER BY ord",
        BASE.replace("{s}", "e.stream")
    )
});

/// The fresh steps' (?) counters, added to their tasks.
static TASKS_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{GROUP_PLAN} UPDATE tasks SET steps = steps + d.k, tokens_in = tokens_in + d.ti, \
           tokens_out = tokens_out + d.tout, cost_usd = cost_usd + d.cost, \
           model_calls = model_calls + d.mc, tokens_cached = tokens_cached + d.tc \
         FROM (SELECT s.value->>'task_id' AS task_id, count(*) AS k, \
             sum(s.value->>'tokens_in') AS ti, sum(s.value->>'tokens_out') AS tout, \
             total(s.value->>'cost_usd') AS cost, sum(s.value->>'model_calls') AS mc, \
             coalesce(sum(s.value->>'tokens_cached'), 0) AS tc \
           FROM json_each(?) s WHERE s.value->>'c' IN (SELECT c FROM fresh) GROUP BY 1) d \
         WHERE tasks.id = d.task_id"
    )
});

/// The fresh steps' (?) rows; last, as everything before reads `steps` through the plan.
static STEPS_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{GROUP_PLAN} INSERT INTO steps (task_id, n, started_at, thinking, action, raw, \
           rejected, result, screen, screenshot, timings, tokens_in, tokens_out, cost_usd, \
           model_calls, replay, calls, annotations, actor, tokens_cached) \
         SELECT v->>'task_id', v->>'n', v->>'started_at', v->>'thinking', v->>'action', \
           v->>'raw', v->>'rejected', v->>'result', v->>'screen', v->>'screenshot', \
           v->>'timings', v->>'tokens_in', v->>'tokens_out', v->>'cost_usd', \
           v->>'model_calls', v->>'replay', v->>'calls', v->>'annotations', v->>'actor', \
           coalesce(v->>'tokens_cached', 0) \
         FROM (SELECT value AS v FROM json_each(?) \
           WHERE value->>'c' IN (SELECT c FROM fresh) ORDER BY key) \
         WHERE 1 ON CONFLICT (task_id, n) DO NOTHING"
    )
});

/// A whole group, one text, one round trip: the plan's row is the only one it returns.
/// Its binds are positional (`?`), in the order they appear. Numbered ones (`?3`) do not
/// work across statements in sqlx: a number a statement does not use is taken as a
/// positional parameter, and once those run past the last argument sqlx stops binding
/// that statement, so its later numbers were NULL (the steps insert then wrote nothing).
static GROUP_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "BEGIN IMMEDIATE; {}; {ARTIFACTS_SQL}; {}; {}; {}; COMMIT;",
        *PLAN_SQL, *EVENTS_SQL, *TASKS_SQL, *STEPS_SQL
    )
});

/// One commit in its own transaction.
async fn write_alone(
    pool: &SqlitePool,
    p: &Prepared,
    now: DateTime<Utc>,
) -> Result<Option<EventSeqs>, StoreError> {
    let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new("BEGIN IMMEDIATE; ");
    push_commit(&mut q, p, &super::ts(now));
    q.push("COMMIT;");
    let rows = execute(pool, q.build()).await?;
    Ok(result_of(p, &rows, now))
}

/// Runs a `BEGIN … COMMIT` query; rolls back if a statement in it failed.
async fn execute(
    pool: &SqlitePool,
    q: sqlx::query::Query<'_, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
) -> Result<Vec<sqlx::sqlite::SqliteRow>, StoreError> {
    let mut conn = pool.acquire().await?;
    match q.fetch_all(&mut *conn).await {
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
        .push(", tokens_cached = tokens_cached + ")
        .push_bind(step.row.tokens_cached)
        .push(" WHERE id = ")
        .push_bind(&step.task_id);
}

fn push_step_row(q: &mut sqlx::QueryBuilder<sqlx::Sqlite>, row: &StepRow) {
    q.push("INSERT INTO steps (task_id, n, started_at, thinking, action, raw, rejected, result, screen, screenshot, timings, tokens_in, tokens_out, cost_usd, model_calls, replay, calls, annotations, actor, tokens_cached) VALUES (");
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
        .push_bind(&row.actor)
        .push_bind(row.tokens_cached);
    q.push(") ON CONFLICT (task_id, n) DO NOTHING; SELECT changes() AS inserted; ");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `write_set` binds ten values, in the order of the `?`s in the text.
    #[test]
    fn binds_follow_the_text() {
        let marks: Vec<usize> = GROUP_SQL.match_indices('?').map(|(i, _)| i).collect();
        assert_eq!(marks.len(), 10, "{}", *GROUP_SQL);
        let json_each = GROUP_SQL.matches("json_each(?)").count();
        assert_eq!(json_each, 8, "commits ×4, artifacts, events, steps ×2");
    }
}
