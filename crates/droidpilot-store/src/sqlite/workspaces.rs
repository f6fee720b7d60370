//! The `workspaces` table on SQLite: one row per version, like `scripts`. The trait's
//! methods in `sqlite.rs` call these.

use sqlx::SqlitePool;

use super::super::cursor::{decode_cursor, next_page};
use super::super::row::{WorkspaceFilesRow, WorkspaceRow, read};
use super::{SqliteStore, StoreError, now_stored, to_json, ts};
use droidpilot_core::domain::{StoredWorkspace, WorkspaceId, WorkspacePage, WorkspaceVersion};

async fn insert<'e, E: sqlx::Executor<'e, Database = sqlx::Sqlite>>(
    db: E,
    w: &StoredWorkspace,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO workspaces (id, version, name, body, files, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(w.info.id.to_string())
    .bind(w.info.version as i64)
    .bind(&w.info.name)
    .bind(to_json(&Some(&w.info)))
    .bind(to_json(&Some(&w.files)))
    .bind(ts(w.info.created_at))
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn create(
    pool: &SqlitePool,
    mut w: StoredWorkspace,
) -> Result<WorkspaceVersion, StoreError> {
    w.info.id = WorkspaceId::new();
    w.info.version = 1;
    w.info.created_at = now_stored();
    insert(pool, &w).await?;
    Ok(w.info)
}

pub(super) async fn add_version(
    s: &SqliteStore,
    id: WorkspaceId,
    mut w: StoredWorkspace,
) -> Result<WorkspaceVersion, StoreError> {
    let mut tx = s.write_tx().await?;
    let latest: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM workspaces WHERE id = ?")
            .bind(id.to_string())
            .fetch_one(&mut *tx)
            .await?;
    let latest = latest.ok_or(StoreError::WorkspaceNotFound(id))?;
    w.info.id = id;
    w.info.version = latest as u32 + 1;
    w.info.created_at = now_stored();
    insert(&mut *tx, &w).await?;
    tx.commit().await?;
    Ok(w.info)
}

pub(super) async fn get(
    pool: &SqlitePool,
    id: WorkspaceId,
    version: Option<u32>,
) -> Result<StoredWorkspace, StoreError> {
    let row = match version {
        Some(v) => sqlx::query("SELECT body, files FROM workspaces WHERE id = ? AND version = ?")
            .bind(id.to_string())
            .bind(v as i64)
            .fetch_optional(pool)
            .await?
            .ok_or(StoreError::WorkspaceVersionNotFound { id, version: v }),
        None => sqlx::query(
            "SELECT body, files FROM workspaces WHERE id = ? ORDER BY version DESC LIMIT 1",
        )
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

pub(super) async fn versions(
    pool: &SqlitePool,
    id: WorkspaceId,
) -> Result<Vec<WorkspaceVersion>, StoreError> {
    let rows = sqlx::query("SELECT body FROM workspaces WHERE id = ? ORDER BY version")
        .bind(id.to_string())
        .fetch_all(pool)
        .await?;
    if rows.is_empty() {
        return Err(StoreError::WorkspaceNotFound(id));
    }
    rows.iter().map(read::<WorkspaceRow, _>).collect()
}

pub(super) async fn list(
    pool: &SqlitePool,
    cursor: Option<&str>,
    limit: u32,
) -> Result<WorkspacePage, StoreError> {
    let limit = limit.clamp(1, 500);
    let before = cursor.map(decode_cursor::<WorkspaceId>).transpose()?;
    let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
        "SELECT w.body FROM workspaces w \
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

pub(super) async fn delete(pool: &SqlitePool, id: WorkspaceId) -> Result<(), StoreError> {
    let done = sqlx::query("DELETE FROM workspaces WHERE id = ?")
        .bind(id.to_string())
        .execute(pool)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::WorkspaceNotFound(id));
    }
    Ok(())
}
