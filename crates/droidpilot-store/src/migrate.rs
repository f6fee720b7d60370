//! Copying a SQLite database into PostgreSQL (`droidpilot migrate-store`): every table row
//! for row, ids and times kept, in one transaction on the target, then verified by
//! counting rows per table on both sides.
//!
//! The target must be empty (no task, step, event, script, artifact or intervention):
//! merging two histories, or emptying a database other instances may be using, is not
//! something one flag should do. Because the copy is one transaction, a copy that fails
//! leaves the target empty and can simply be run again.

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{PostgresStore, SqliteStore, StoreError};

/// How a column is read from SQLite and written to PostgreSQL.
#[derive(Clone, Copy)]
enum Col {
    Text,
    /// `bigint`.
    Int,
    /// `integer`.
    Int32,
    Real,
    /// 0/1 in SQLite, `boolean` in PostgreSQL.
    Bool,
    /// RFC 3339 text in SQLite, `timestamptz` in PostgreSQL.
    Time,
    /// JSON text in SQLite, `jsonb` in PostgreSQL.
    Json,
}

struct Table {
    name: &'static str,
    cols: &'static [(&'static str, Col)],
}

use Col::*;

/// In copy order (referenced tables first).
const TABLES: &[Table] = &[
    Table {
        name: "tasks",
        cols: &[
            ("id", Text),
            ("status", Text),
            ("instruction", Text),
            ("priority", Int32),
            ("max_steps", Int),
            ("timeout_seconds", Int),
            ("device_id", Text),
            ("constraints", Json),
            ("agent", Json),
            ("external_id", Text),
            ("session_id", Text),
            ("metadata", Json),
            ("webhook_url", Text),
            ("record", Bool),
            ("assigned_device", Text),
            ("created_at", Time),
            ("started_at", Time),
            ("finished_at", Time),
            ("reason", Text),
            ("answer", Text),
            ("steps", Int),
            ("tokens_in", Int),
            ("tokens_out", Int),
            ("tokens_cached", Int),
            ("cost_usd", Real),
            ("model_calls", Int),
            ("cancel_requested", Bool),
            ("max_tokens", Int),
            ("max_cost_usd", Real),
            ("record_video", Bool),
            ("recording", Json),
        ],
    },
    Table {
        name: "artifacts",
        cols: &[
            ("sha256", Text),
            ("kind", Text),
            ("media_type", Text),
            ("path", Text),
            ("bytes", Int),
            ("created_at", Time),
        ],
    },
    Table {
        name: "steps",
        cols: &[
            ("task_id", Text),
            ("n", Int),
            ("started_at", Time),
            ("thinking", Text),
            ("action", Json),
            ("raw", Text),
            ("rejected", Json),
            ("result", Json),
            ("screen", Json),
            ("screenshot", Text),
            ("timings", Json),
            ("tokens_in", Int),
            ("tokens_out", Int),
            ("tokens_cached", Int),
            ("cost_usd", Real),
            ("model_calls", Int),
            ("replay", Json),
            ("calls", Json),
            ("annotations", Json),
            ("actor", Text),
        ],
    },
    Table {
        name: "events",
        cols: &[
            ("stream", Text),
            ("seq", Int),
            ("type", Text),
            ("payload", Json),
            ("created_at", Time),
        ],
    },
    Table {
        name: "interventions",
        cols: &[
            ("id", Text),
            ("task_id", Text),
            ("kind", Text),
            ("question", Text),
            ("options", Json),
            ("answer", Text),
            ("answered_by", Text),
            ("created_at", Time),
            ("answered_at", Time),
            ("actor", Text),
            ("action", Json),
            ("step", Int32),
            ("detail", Json),
        ],
    },
    Table {
        name: "scripts",
        cols: &[
            ("id", Text),
            ("version", Int32),
            ("name", Text),
            ("body", Json),
            ("source", Json),
            ("created_at", Time),
        ],
    },
    Table {
        name: "workspaces",
        cols: &[
            ("id", Text),
            ("version", Int32),
            ("name", Text),
            ("body", Json),
            ("files", Json),
            ("created_at", Time),
        ],
    },
    Table {
        name: "app_knowledge",
        cols: &[
            ("package", Text),
            ("version", Text),
            ("description", Text),
            ("model", Text),
            ("created_at", Time),
        ],
    },
    Table {
        name: "flow_runs",
        cols: &[
            ("id", Text),
            ("status", Text),
            ("body", Json),
            ("created_at", Time),
        ],
    },
    Table {
        name: "devices",
        cols: &[
            ("id", Text),
            ("backend", Text),
            ("serial", Text),
            ("model", Text),
            ("state", Text),
            ("info", Json),
            ("created_at", Time),
            ("last_seen", Time),
        ],
    },
];

/// Rows of one table on both sides after the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCount {
    pub table: &'static str,
    pub source: i64,
    pub target: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error(
        "the target database is not empty ({0}); migrate-store only fills an empty database. \
         Point --to at a new one (`createdb droidpilot`), or drop and recreate this one if its data is disposable"
    )]
    TargetNotEmpty(String),
    #[error("copying {table}.{column}: {why}")]
    Value {
        table: &'static str,
        column: &'static str,
        why: String,
    },
    #[error("the counts differ after the copy: {0}")]
    Mismatch(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for CopyError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(StoreError::Database(e))
    }
}

/// Copies every table of `from` into the empty `to` and returns the row counts of both.
pub async fn copy_sqlite_to_postgres(
    from: &SqliteStore,
    to: &PostgresStore,
) -> Result<Vec<TableCount>, CopyError> {
    let used = counts(to.pool()).await?;
    let used: Vec<String> = used
        .iter()
        .filter(|(t, n)| *n > 0 && *t != "devices")
        .map(|(t, n)| format!("{n} rows in {t}"))
        .collect();
    if !used.is_empty() {
        return Err(CopyError::TargetNotEmpty(used.join(", ")));
    }
    // One read transaction: a consistent snapshot of the source (WAL) even if a server
    // still writes to it.
    let mut src = from.pool().begin().await?;
    let mut dst = to.pool().begin().await?;
    for t in TABLES {
        copy_table(t, &mut src, &mut dst).await?;
    }
    // Event seqs continue after the copied ones.
    sqlx::query(
        "INSERT INTO streams (stream, last_seq) SELECT stream, MAX(seq) FROM events GROUP BY stream \
         ON CONFLICT (stream) DO UPDATE SET last_seq = GREATEST(streams.last_seq, EXCLUDED.last_seq)",
    )
    .execute(&mut *dst)
    .await?;
    let source = source_counts(&mut src).await?;
    dst.commit().await?;
    src.rollback().await?;
    let target = counts(to.pool()).await?;
    let table: Vec<TableCount> = source
        .iter()
        .zip(&target)
        .map(|(s, t)| TableCount {
            table: s.0,
            source: s.1,
            target: t.1,
        })
        .collect();
    let off: Vec<String> = table
        .iter()
        .filter(|c| c.source != c.target)
        .map(|c| format!("{} {} → {}", c.table, c.source, c.target))
        .collect();
    if !off.is_empty() {
        return Err(CopyError::Mismatch(off.join(", ")));
    }
    Ok(table)
}

/// `SELECT COUNT(*)` of a table.
fn count_sql(t: &Table) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {}", t.name))
}

/// Rows per table of the target, in `TABLES` order.
async fn counts(pool: &sqlx::PgPool) -> Result<Vec<(&'static str, i64)>, sqlx::Error> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push((
            t.name,
            sqlx::query_scalar(count_sql(t)).fetch_one(pool).await?,
        ));
    }
    Ok(out)
}

/// Rows per table of the source, in `TABLES` order, in its snapshot.
async fn source_counts(
    src: &mut sqlx::SqliteConnection,
) -> Result<Vec<(&'static str, i64)>, sqlx::Error> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push((
            t.name,
            sqlx::query_scalar(count_sql(t))
                .fetch_one(&mut *src)
                .await?,
        ));
    }
    Ok(out)
}

async fn copy_table(
    t: &Table,
    src: &mut sqlx::SqliteConnection,
    dst: &mut sqlx::PgConnection,
) -> Result<(), CopyError> {
    let names: Vec<&str> = t.cols.iter().map(|c| c.0).collect();
    let select = format!("SELECT {} FROM {}", names.join(", "), t.name);
    let params: Vec<String> = t
        .cols
        .iter()
        .enumerate()
        .map(|(i, (_, kind))| match kind {
            Json => format!("${}::jsonb", i + 1),
            _ => format!("${}", i + 1),
        })
        .collect();
    let insert = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        t.name,
        names.join(", "),
        params.join(", ")
    );
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(select)).fetch(&mut *src);
    while let Some(row) = rows.try_next().await? {
        let mut q = sqlx::query(sqlx::AssertSqlSafe(insert.clone()));
        for (i, (col, kind)) in t.cols.iter().enumerate() {
            q = bind(q, &row, i, *kind).map_err(|why| CopyError::Value {
                table: t.name,
                column: col,
                why,
            })?;
        }
        q.execute(&mut *dst).await?;
    }
    Ok(())
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Binds column `i` of a SQLite row as PostgreSQL wants it.
fn bind<'q>(q: PgQuery<'q>, r: &SqliteRow, i: usize, kind: Col) -> Result<PgQuery<'q>, String> {
    let e = |e: sqlx::Error| e.to_string();
    Ok(match kind {
        // NULs encoded as the PostgreSQL store writes them (`pg_text`).
        Text => q.bind(
            r.try_get::<Option<String>, _>(i)
                .map_err(e)?
                .map(|s| super::pg_text::enc(&s).into_owned()),
        ),
        Json => q.bind(super::pg_text::enc_json_opt(
            r.try_get::<Option<String>, _>(i).map_err(e)?,
        )),
        Int => q.bind(r.try_get::<Option<i64>, _>(i).map_err(e)?),
        Int32 => q.bind(
            r.try_get::<Option<i64>, _>(i)
                .map_err(e)?
                .map(|v| i32::try_from(v).map_err(|_| format!("{v} does not fit an integer")))
                .transpose()?,
        ),
        Real => q.bind(r.try_get::<Option<f64>, _>(i).map_err(e)?),
        Bool => q.bind(r.try_get::<Option<i64>, _>(i).map_err(e)?.map(|v| v != 0)),
        Time => q.bind(
            r.try_get::<Option<String>, _>(i)
                .map_err(e)?
                .map(|s| {
                    DateTime::parse_from_rfc3339(&s)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(|err| format!("bad timestamp `{s}`: {err}"))
                })
                .transpose()?,
        ),
    })
}
