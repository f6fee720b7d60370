//! `ClusterStore` on PostgreSQL: the `instances` table and the cross-instance halves of
//! the queue and the device list (migration `0003_cluster.sql`). Every age is measured
//! with the database's clock (`now()`), so instances on hosts with skewed clocks agree on
//! who is dead.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::Row;

use super::cluster::{
    ClusterStore, FarmDevice, Heartbeat, InstanceRow, JoinOutcome, Reaped, ReasonFor,
};
use super::{PostgresStore, StoreError};
use droidpilot_core::domain::TaskId;

/// The statuses of a task a runner holds.
const HELD: &str = "('running', 'waiting_for_user', 'paused')";

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn ids(mut raw: Vec<String>) -> Result<Vec<TaskId>, StoreError> {
    raw.sort();
    raw.iter()
        .map(|s| {
            s.parse()
                .map_err(|e| StoreError::Corrupt(format!("task id `{s}`: {e}")))
        })
        .collect()
}

/// Ends (or requeues) the held tasks of `instance` inside `tx`; returns their ids.
async fn release_tasks(
    tx: &mut sqlx::PgConnection,
    instance_clause: &str,
    bind_name: &str,
    requeue: bool,
    reason: &str,
) -> Result<Vec<TaskId>, StoreError> {
    let sql = if requeue {
        format!(
            "UPDATE tasks SET status = 'queued', reason = $2, instance = NULL \
             WHERE status IN {HELD} AND {instance_clause} RETURNING id"
        )
    } else {
        format!(
            "UPDATE tasks SET status = 'interrupted', reason = $2, finished_at = date_trunc('microseconds', now()) \
             WHERE status IN {HELD} AND {instance_clause} RETURNING id"
        )
    };
    let raw: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(bind_name)
        .bind(reason)
        .fetch_all(&mut *tx)
        .await?;
    ids(raw)
}

#[async_trait]
impl ClusterStore for PostgresStore {
    async fn join(
        &self,
        me: &InstanceRow,
        dead_after: Duration,
    ) -> Result<JoinOutcome, StoreError> {
        let row = sqlx::query(
            "INSERT INTO instances (name, boot, advertise_url, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, now(), now()) \
             ON CONFLICT (name) DO UPDATE SET boot = EXCLUDED.boot, advertise_url = EXCLUDED.advertise_url, \
               started_at = now(), heartbeat_at = now() \
             WHERE instances.boot = EXCLUDED.boot \
                OR instances.heartbeat_at < now() - make_interval(secs => $4::double precision) \
             RETURNING name",
        )
        .bind(&me.name)
        .bind(&me.boot)
        .bind(&me.advertise_url)
        .bind(secs(dead_after))
        .fetch_optional(self.pool())
        .await?;
        if row.is_some() {
            return Ok(JoinOutcome::Joined);
        }
        let age: Option<f64> = sqlx::query_scalar(
            "SELECT EXTRACT(EPOCH FROM now() - heartbeat_at)::double precision FROM instances WHERE name = $1",
        )
        .bind(&me.name)
        .fetch_optional(self.pool())
        .await?;
        Ok(JoinOutcome::NameHeld {
            heartbeat_age_secs: age.unwrap_or(0.0) as i64,
        })
    }

    async fn heartbeat(&self, me: &InstanceRow) -> Result<Heartbeat, StoreError> {
        // `xmax = 0` is true for a row this statement inserted, false for one it updated.
        let row = sqlx::query(
            "INSERT INTO instances (name, boot, advertise_url, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, now(), now()) \
             ON CONFLICT (name) DO UPDATE SET heartbeat_at = now() WHERE instances.boot = EXCLUDED.boot \
             RETURNING (xmax = 0) AS inserted",
        )
        .bind(&me.name)
        .bind(&me.boot)
        .bind(&me.advertise_url)
        .fetch_optional(self.pool())
        .await?;
        Ok(match row {
            None => Heartbeat::NameTaken,
            Some(r) if r.try_get::<bool, _>("inserted")? => Heartbeat::Rejoined,
            Some(_) => Heartbeat::Alive,
        })
    }

    async fn leave(&self, me: &InstanceRow) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM instances WHERE name = $1 AND boot = $2")
            .bind(&me.name)
            .bind(&me.boot)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE devices SET state = 'offline' WHERE instance = $1")
            .bind(&me.name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn reap_one(
        &self,
        me: &str,
        dead_after: Duration,
        requeue: bool,
        reason: ReasonFor<'_>,
    ) -> Result<Option<Reaped>, StoreError> {
        let mut tx = self.pool().begin().await?;
        let dead: Option<String> = sqlx::query_scalar(
            "SELECT name FROM instances WHERE heartbeat_at < now() - make_interval(secs => $1::double precision) \
             AND name <> $2 ORDER BY name LIMIT 1 FOR UPDATE SKIP LOCKED",
        )
        .bind(secs(dead_after))
        .bind(me)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(name) = dead else {
            return Ok(None);
        };
        let tasks = release_tasks(&mut tx, "instance = $1", &name, requeue, &reason(&name)).await?;
        let devices = sqlx::query("UPDATE devices SET state = 'offline' WHERE instance = $1")
            .bind(&name)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM instances WHERE name = $1")
            .bind(&name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Some(Reaped {
            instance: name,
            tasks,
            devices,
        }))
    }

    async fn recover_instance(
        &self,
        me: &str,
        dead_after: Duration,
        requeue: bool,
        reason: &str,
    ) -> Result<Vec<TaskId>, StoreError> {
        let mut tx = self.pool().begin().await?;
        let others_live: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM instances WHERE name <> $1 \
             AND heartbeat_at >= now() - make_interval(secs => $2::double precision))",
        )
        .bind(me)
        .bind(secs(dead_after))
        .fetch_one(&mut *tx)
        .await?;
        // A task with no instance was started by a version before clustering (or on one
        // host): only when nobody else is live can it be ours to recover.
        let clause = if others_live {
            "instance = $1"
        } else {
            "(instance = $1 OR instance IS NULL)"
        };
        let tasks = release_tasks(&mut tx, clause, me, requeue, reason).await?;
        tx.commit().await?;
        Ok(tasks)
    }

    async fn claim_task(&self, id: TaskId, device: &str, me: &str) -> Result<bool, StoreError> {
        // SKIP LOCKED: a row another scheduler is claiming right now is not waited for;
        // `status = 'queued'` rechecked under the lock makes the claim happen once.
        let r = sqlx::query(
            "UPDATE tasks SET status = 'running', assigned_device = $1, instance = $2, \
             started_at = COALESCE(started_at, date_trunc('microseconds', now())), reason = NULL \
             WHERE id = (SELECT id FROM tasks WHERE id = $3 AND status = 'queued' FOR UPDATE SKIP LOCKED)",
        )
        .bind(device)
        .bind(me)
        .bind(id.to_string())
        .execute(self.pool())
        .await?;
        Ok(r.rows_affected() == 1)
    }

    async fn sync_devices(&self, me: &str, devices: &[FarmDevice]) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        let ids: Vec<&str> = devices.iter().map(|d| d.id.as_str()).collect();
        sqlx::query("DELETE FROM devices WHERE instance = $1 AND NOT (id = ANY($2))")
            .bind(me)
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
        for d in devices {
            sqlx::query(
                "INSERT INTO devices (instance, id, backend, serial, model, state, created_at, last_seen) \
                 VALUES ($1, $2, $3, $4, $5, $6, now(), now()) \
                 ON CONFLICT (instance, id) DO UPDATE SET backend = EXCLUDED.backend, serial = EXCLUDED.serial, \
                 model = EXCLUDED.model, state = EXCLUDED.state, last_seen = now()",
            )
            .bind(me)
            .bind(&d.id)
            .bind(&d.backend)
            .bind(&d.serial)
            .bind(&d.model)
            .bind(&d.state)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn farm_devices(&self, dead_after: Duration) -> Result<Vec<FarmDevice>, StoreError> {
        let rows = sqlx::query(
            "SELECT d.instance, d.id, d.backend, d.serial, d.model, d.state, d.last_seen, i.advertise_url, \
             COALESCE(i.heartbeat_at >= now() - make_interval(secs => $1::double precision), false) AS live \
             FROM devices d LEFT JOIN instances i ON i.name = d.instance ORDER BY d.id, d.instance",
        )
        .bind(secs(dead_after))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FarmDevice {
                    instance: r.try_get("instance")?,
                    id: r.try_get("id")?,
                    backend: r.try_get("backend")?,
                    serial: r.try_get("serial")?,
                    model: r.try_get::<Option<String>, _>("model")?.unwrap_or_default(),
                    state: r.try_get("state")?,
                    last_seen: r.try_get("last_seen")?,
                    owner_live: r.try_get("live")?,
                    owner_url: r.try_get("advertise_url")?,
                })
            })
            .collect()
    }
}
