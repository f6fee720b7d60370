//! Retention: the server deletes what is older than the operator keeps, in the
//! background (`[storage] retain_days`, `retain_artifact_days`; 0 keeps forever). One
//! tracked task wakes every `retention_interval_secs` (and once at start) and sweeps:
//! - tasks that ended more than `retain_days` ago, whole (`Store::delete_task`: steps,
//!   events, interventions, and the screenshots no other task's steps show);
//! - screenshots older than `retain_artifact_days` that no step of a live or more recent
//!   task shows (`Store::delete_artifacts_before`); the older steps keep their record
//!   without the picture.
//!
//! Work is done in batches, so a large backlog never holds a transaction for long. Every
//! instance on a shared database may sweep; deleting is idempotent (a task another
//! instance deleted first is skipped).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::artifacts::ArtifactStore;
use crate::store::StorageConfig;
use crate::store::{Store, StoreError};

const TASK_BATCH: u32 = 200;
const ARTIFACT_BATCH: u32 = 500;

pub struct Retention {
    store: Arc<dyn Store>,
    artifacts: ArtifactStore,
    keep_tasks: Option<chrono::Duration>,
    keep_artifacts: Option<chrono::Duration>,
    every: Duration,
}

/// What one sweep deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub tasks: usize,
    pub files: usize,
    pub bytes: u64,
}

impl Retention {
    /// None when nothing expires (both ages 0).
    pub fn new(
        cfg: &StorageConfig,
        store: Arc<dyn Store>,
        artifacts: ArtifactStore,
    ) -> Option<Self> {
        let days = |d: u32| (d > 0).then(|| chrono::Duration::days(i64::from(d)));
        let (keep_tasks, keep_artifacts) = (days(cfg.retain_days), days(cfg.retain_artifact_days));
        (keep_tasks.is_some() || keep_artifacts.is_some()).then(|| Self {
            store,
            artifacts,
            keep_tasks,
            keep_artifacts,
            every: Duration::from_secs(cfg.retention_interval_secs.max(1)),
        })
    }

    /// Deletes what is older than kept, as of `now`.
    pub async fn sweep(&self, now: DateTime<Utc>) -> Result<Swept, StoreError> {
        let mut swept = Swept::default();
        if let Some(keep) = self.keep_tasks {
            loop {
                let ids = self.store.ended_before(now - keep, TASK_BATCH).await?;
                for id in &ids {
                    match self.store.delete_task(*id).await {
                        Ok(gone) => {
                            swept.tasks += 1;
                            self.remove(gone, &mut swept).await;
                        }
                        Err(StoreError::TaskNotFound(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
                if ids.len() < TASK_BATCH as usize {
                    break;
                }
            }
        }
        if let Some(keep) = self.keep_artifacts {
            loop {
                let gone = self
                    .store
                    .delete_artifacts_before(now - keep, ARTIFACT_BATCH)
                    .await?;
                let full = gone.len() == ARTIFACT_BATCH as usize;
                self.remove(gone, &mut swept).await;
                if !full {
                    break;
                }
            }
        }
        Ok(swept)
    }

    async fn remove(&self, gone: Vec<crate::store::Artifact>, swept: &mut Swept) {
        swept.files += gone.len();
        swept.bytes += self.artifacts.remove_files(gone).await;
    }

    /// Sweeps now and then every interval until `cancel`.
    pub fn spawn(self, tracker: &TaskTracker, cancel: CancellationToken) {
        tracker.spawn(async move {
            loop {
                match self.sweep(Utc::now()).await {
                    Ok(s) if s != Swept::default() => tracing::info!(
                        tasks = s.tasks,
                        files = s.files,
                        bytes = s.bytes,
                        "retention: deleted what is older than kept"
                    ),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "retention sweep failed; trying again later")
                    }
                }
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(self.every) => {}
                }
            }
        });
    }
}
