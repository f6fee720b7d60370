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
            let tmp = path.with_extension(format!("{ext}.tmp{}", std::process::id()));
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
