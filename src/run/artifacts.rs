//! Content-addressed files under the data directory: `artifacts/ab/abcdef….png`, named
//! by the sha256 of their bytes, so identical screenshots (a screen that did not change)
//! are stored once. Each file is written to a temporary name and renamed, so a crash
//! never leaves a half-written artifact behind a recorded hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::store::{Artifact, Store, StoreError};

/// Makes temporary file names unique within the process.
static TMP_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
        bytes: &[u8],
    ) -> Result<String, ArtifactError> {
        let sha = hex::encode(Sha256::digest(bytes));
        let rel = format!("artifacts/{}/{}.{}", &sha[..2], sha, ext);
        let path = self.root.join(&rel);
        if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
            let io = |source| ArtifactError::Io {
                path: path.display().to_string(),
                source,
            };
            if let Some(dir) = path.parent() {
                tokio::fs::create_dir_all(dir).await.map_err(io)?;
            }
            // A name of its own per write: two runners storing the same bytes at once
            // (phones on the same screen) must not rename each other's file away.
            let n = TMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = path.with_extension(format!("{ext}.tmp{}-{n}", std::process::id()));
            tokio::fs::write(&tmp, bytes).await.map_err(io)?;
            tokio::fs::rename(&tmp, &path).await.map_err(io)?;
        }
        self.store
            .put_artifact(&Artifact {
                sha256: sha.clone(),
                kind: kind.into(),
                media_type: media_type.into(),
                path: rel,
                bytes: bytes.len() as u64,
            })
            .await?;
        Ok(sha)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_puts_of_the_same_bytes_all_succeed() {
        let dir =
            std::env::temp_dir().join(format!("droidpilot-artifacts-test-{}", std::process::id()));
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&dir.join("db.sqlite")).await.unwrap());
        let arts = ArtifactStore::new(&dir, store);
        let bytes = vec![7u8; 256 * 1024];
        let puts: Vec<_> = (0..16)
            .map(|_| {
                let (a, b) = (arts.clone(), bytes.clone());
                tokio::spawn(async move { a.put("screenshot", "image/png", "png", &b).await })
            })
            .collect();
        let mut shas = Vec::new();
        for p in puts {
            shas.push(
                p.await
                    .unwrap()
                    .expect("every concurrent put of identical bytes succeeds"),
            );
        }
        shas.dedup();
        assert_eq!(shas.len(), 1);
        let (_, read) = arts.get(&shas[0]).await.unwrap().unwrap();
        assert_eq!(read, bytes);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
