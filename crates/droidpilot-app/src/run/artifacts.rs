//! Content-addressed files under the data directory: `artifacts/ab/abcdef….png`, named
//! by the sha256 of their bytes, so identical screenshots (a screen that did not change)
//! are stored once. Each file is written to a temporary name and renamed, so a crash
//! never leaves a half-written artifact behind a recorded hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::store::{Artifact, Store, StoreError};

#[derive(Clone)]
pub struct ArtifactStore {
    root: PathBuf,
    store: Arc<dyn Store>,
}

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("cannot write artifact {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ArtifactError {
    /// As a store error, for a write that goes with a store commit (`EventBus::commit_soon`).
    pub fn into_store(self) -> StoreError {
        match self {
            ArtifactError::Store(e) => e,
            ArtifactError::Io { path, source } => {
                StoreError::io(format_args!("artifact {path}"), &source)
            }
        }
    }
}

impl ArtifactStore {
    /// `data_dir` is the server's data directory; files go under `data_dir/artifacts`.
    pub fn new(data_dir: &Path, store: Arc<dyn Store>) -> Self {
        Self {
            root: data_dir.to_path_buf(),
            store,
        }
    }

    /// Stores bytes, returns their sha256 (hex). Storing the same bytes again is cheap.
    pub async fn put(
        &self,
        kind: &str,
        media_type: &str,
        ext: &str,
        bytes: bytes::Bytes,
    ) -> Result<String, ArtifactError> {
        let a = self
            .record(self.stage(kind, media_type, ext, bytes))
            .await?;
        Ok(a.sha256)
    }

    /// Writes a staged file and records its row on its own (for a hash handed out before
    /// any commit names it; the runner commits the row with `step.observed` instead).
    pub async fn record(&self, staged: Staged) -> Result<Artifact, ArtifactError> {
        let a = staged.write().await?;
        self.store.put_artifact(&a).await?;
        Ok(a)
    }

    /// Hashes the bytes (here, at once: 0.03 ms for a 540×1200 screenshot) and returns
    /// the file to write: its row is known before the file exists, so the runner can name
    /// the hash in `step.observed` and write the file while the step goes on.
    pub fn stage(&self, kind: &str, media_type: &str, ext: &str, bytes: bytes::Bytes) -> Staged {
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let path = format!("artifacts/{}/{}.{}", &sha256[..2], sha256, ext);
        Staged {
            root: self.root.clone(),
            row: Artifact {
                sha256,
                kind: kind.into(),
                media_type: media_type.into(),
                path,
                bytes: bytes.len() as u64,
            },
            bytes,
        }
    }

    /// Reads an artifact's bytes by hash.
    pub async fn get(&self, sha256: &str) -> Result<Option<(Artifact, Vec<u8>)>, ArtifactError> {
        let Some(a) = self.store.artifact(sha256).await? else {
            return Ok(None);
        };
        let path = self.root.join(&a.path);
        match tokio::fs::read(&path).await {
            Ok(b) => Ok(Some((a, b))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ArtifactError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }
}

impl ArtifactStore {
    /// Removes the files of artifact rows the store deleted (`Store::delete_task`,
    /// `delete_artifacts_before`); a file already gone is fine. Returns how many bytes
    /// were freed.
    pub async fn remove_files(&self, gone: Vec<Artifact>) -> u64 {
        let root = self.root.clone();
        let job = move || {
            let mut freed = 0;
            for a in gone {
                match std::fs::remove_file(root.join(&a.path)) {
                    Ok(()) => freed += a.bytes,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        tracing::warn!(path = %a.path, error = %e, "could not remove an artifact")
                    }
                }
            }
            freed
        };
        tokio::task::spawn_blocking(job).await.unwrap_or(0)
    }
}

/// A file hashed but not written yet (`ArtifactStore::stage`).
#[derive(Clone)]
pub struct Staged {
    root: PathBuf,
    pub row: Artifact,
    bytes: bytes::Bytes,
}

impl Staged {
    /// Writes the file (unless one of that hash is there) and returns its row, not
    /// recorded. The file work (exists? mkdir, write, rename) is one blocking job: as four
    /// `tokio::fs` calls it was four trips to the blocking pool.
    pub async fn write(self) -> Result<Artifact, ArtifactError> {
        let Staged { root, row, bytes } = self;
        let rel = row.path.clone();
        let at = root.display().to_string();
        tokio::task::spawn_blocking(move || place(&root, &rel, &bytes))
            .await
            .map_err(|e| ArtifactError::Io {
                path: at,
                source: std::io::Error::other(e),
            })??;
        Ok(row)
    }
}

/// Writes `bytes` at `rel` under `root` (a content-addressed name) unless that file is
/// there.
fn place(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), ArtifactError> {
    let path = root.join(rel);
    if path.exists() {
        return Ok(());
    }
    let io = |source| ArtifactError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    // A unique temporary name: identical bytes (two phones showing the same screen) may
    // be written by several tasks at once.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("bin");
    let tmp = path.with_extension(format!("{ext}.{}.{n}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io)?;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        // Losing the race to a writer of the same bytes is success.
        if !path.exists() {
            return Err(io(e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;

    #[tokio::test]
    async fn concurrent_writers_of_the_same_bytes_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&dir.path().join("db")).await.unwrap());
        let a = ArtifactStore::new(dir.path(), store);
        let bytes = vec![7u8; 256 * 1024];
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (a, b) = (a.clone(), bytes.clone());
                tokio::spawn(async move { a.put("screenshot", "image/png", "png", b.into()).await })
            })
            .collect();
        let mut shas = std::collections::HashSet::new();
        for h in handles {
            shas.insert(h.await.unwrap().unwrap());
        }
        assert_eq!(shas.len(), 1);
        let sha = shas.into_iter().next().unwrap();
        let (meta, got) = a.get(&sha).await.unwrap().unwrap();
        assert_eq!(got, bytes);
        assert_eq!(meta.bytes, bytes.len() as u64);
        let leftovers = std::fs::read_dir(dir.path().join("artifacts").join(&sha[..2]))
            .unwrap()
            .count();
        assert_eq!(leftovers, 1, "no temporary files left behind");
    }
}
