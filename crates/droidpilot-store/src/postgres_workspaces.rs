//! The `workspaces` table on PostgreSQL: one row per version, like `scripts`; JSON columns
//! through `pg_text` (a file's text may hold NUL). The trait's methods in `postgres.rs`
//! call these.

use sqlx::PgPool;

use super::StoreError;
use super::cursor::{decode_cursor, next_page};
use super::pg_text::{enc, enc_json};
use super::row::{WorkspaceFilesRow, WorkspaceRow, read};
use droidpilot_core::domain::{StoredWorkspace, WorkspaceId, WorkspacePage, WorkspaceVersion};

fn json<T: serde::Serialize>(v: &T) -> String {
    enc_json(serde_json::to_string(v).expect("serializing plain data cannot fail"))
}

/// Now, at the precision PostgreSQL keeps (microseconds).
fn now_micros() -> chrono::DateTime<chrono::Utc> {
    let now = chrono::Utc::now();
    chrono::DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

async fn insert<'e, E: sqlx::Executor<'e, Database = sqlx::Postgres>>(
    db: E,
    w: &StoredWorkspace,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO workspaces (id, version, name, body, files, created_at) \
         VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6)",
    )
    .bind(w.info.id.to_string())
    .bind(w.info.version as i32)
    .bind(enc(&w.info.name))
    .bind(json(&w.info))
    .bind(json(&w.files))
    .bind(w.info.created_at)
    .execute(db)
    .await?;
    Ok(())
}

pub(crate) async fn create(
    pool: &PgPool,
    mut w: StoredWorkspace,
) -> Result<WorkspaceVersion, StoreError> {
    w.info.id = WorkspaceId::new();
    w.info.version = 1;
    w.info.created_at = now_micros();
    insert(pool, &w).await?;
    Ok(w.info)
}

pub(crate) async fn add_version(
    pool: &PgPool,
    id: WorkspaceId,
    mut w: StoredWorkspace,
) -> Result<WorkspaceVersion, StoreError> {
    let mut tx = pool.begin().await?;
    // Two new versions at once (two instances healing it) queue here instead of both
    // reading the same latest version.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('workspace:' || $1))")
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
    let latest: Option<i32> =
        sqlx::query_scalar("SELECT MAX(version) FROM workspaces WHERE id = $1")
            .bind(id.to_string())
            .fetch_one(&mut *tx)
            .await?;
    let latest = latest.ok_or(StoreError::WorkspaceNotFound(id))?;
    w.info.id = id;
    w.info.version = latest as u32 + 1;
    w.info.created_at = now_micros();
    insert(&mut *tx, &w).await?;
    tx.commit().await?;
    Ok(w.info)
}

pub(crate) async fn get(
    pool: &PgPool,
    id: WorkspaceId,
    version: Option<u32>,
) -> Result<StoredWorkspace, StoreError> {
    const SELECT: &str = "SELECT body::text AS body, files::text AS files FROM workspaces";
    let row = match version {
        Some(v) => sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE id = $1 AND version = $2"
        )))
        .bind(id.to_string())
        .bind(v as i32)
        .fetch_optional(pool)
        .await?
        .ok_or(StoreError::WorkspaceVersionNotFound { id, version: v }),
        None => sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE id = $1 ORDER BY version DESC LIMIT 1"
        )))
        .bind(id.to_string())
        .fetch_optional(pool)
        .await?
        .ok_or(StoreError::WorkspaceNotFound(id)),
    };
    if let Err(StoreError::WorkspaceVersionNotFound { .. }) = &row {
        // Say "no such workspace" rather than "no such version" when the id is unknown.
        versions(pool, id).await?;
    }
    read::<WorkspaceFilesRow, _>(&row?)
}

pub(crate) async fn versions(
    pool: &PgPool,
    id: WorkspaceId,
) -> Result<Vec<WorkspaceVersion>, StoreError> {
    let rows =
        sqlx::query("SELECT body::text AS body FROM workspaces WHERE id = $1 ORDER BY version")
            .bind(id.to_string())
            .fetch_all(pool)
            .await?;
    if rows.is_empty() {
        return Err(StoreError::WorkspaceNotFound(id));
    }
    rows.iter().map(read::<WorkspaceRow, _>).collect()
}

pub(crate) async fn list(
    pool: &PgPool,
    cursor: Option<&str>,
    limit: u32,
) -> Result<WorkspacePage, StoreError> {
    let limit = limit.clamp(1, 500);
    let before = cursor.map(decode_cursor::<WorkspaceId>).transpose()?;
    let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new(
        "SELECT w.body::text AS body FROM workspaces w \
         WHERE w.version = (SELECT MAX(version) FROM workspaces WHERE id = w.id)",
    );
    if let Some(b) = before {
        q.push(" AND w.id < ").push_bind(b.to_string());
    }
    q.push(" ORDER BY w.id DESC LIMIT ")
        .push_bind(limit as i64 + 1);
    let rows = q.build().fetch_all(pool).await?;
    let mut workspaces = rows
        .iter()
        .map(read::<WorkspaceRow, _>)
        .collect::<Result<Vec<_>, _>>()?;
    let next_cursor = next_page(&mut workspaces, limit, |w| w.id);
    Ok(WorkspacePage {
        workspaces,
        next_cursor,
    })
}

pub(crate) async fn delete(pool: &PgPool, id: WorkspaceId) -> Result<(), StoreError> {
    let done = sqlx::query("DELETE FROM workspaces WHERE id = $1")
        .bind(id.to_string())
        .execute(pool)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::WorkspaceNotFound(id));
    }
    Ok(())
}
