//! The OCR engine: Tesseract (Debian's `tesseract-ocr` with `tesseract-ocr-eng`), run
//! on a screenshot when a task (`"ocr": true`), a device (`[ocr] devices`) or a caller
//! (`GET /v1/devices/{id}/screen?ocr=true`) asks, its words merged into the element map
//! by `screen::ocr`. The model (the language data) is the Debian package's: nothing is
//! downloaded at run time.
//!
//! Tesseract runs as the `tesseract` command (`stdin stdout --psm 11 tsv`, sparse text:
//! a screen is scattered labels, not a page; `thresholding_method=2`, Sauvola: dark
//! text on a coloured image survives; light text on a saturated fill, a filled button's
//! label, is still not found), not through a Rust binding. The bindings
//! (`leptess`, `tesseract`) need libtesseract's and leptonica's headers and libclang at
//! build time (bindgen), which neither this machine nor CI has; and out of process, a
//! screenshot that hangs or crashes the engine is killed at `timeout_ms` instead of
//! taking the server down with it (`kill_on_drop`). `OMP_THREAD_LIMIT=1`: Tesseract's
//! OpenMP threads only contend on a shared machine (0.5 s instead of 1.4 s a 1080×2400
//! screenshot here); at most `max_concurrent` run at once.
//!
//! Results are cached per screenshot hash (SHA-256 of the PNG) in a bounded LRU
//! (`cache_entries`): a screen read twice (the stale-screen check, a retry, the API and
//! the task at once) is read by OCR once. Nothing here runs unless asked: a task that
//! did not ask never waits for OCR.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

use crate::screen::ocr::{MIN_CONFIDENCE, OcrBox, group, parse_tsv};

/// `[ocr]` in the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OcrConfig {
    /// The Tesseract command (a name on PATH or a path).
    pub binary: String,
    /// Tesseract's language (`eng`; `eng+deu` with `tesseract-ocr-deu` installed).
    pub language: String,
    /// A read that takes longer is killed, and the screen is used without OCR.
    pub timeout_ms: u64,
    /// Screenshots whose OCR is kept (by hash), least recently used dropped first.
    pub cache_entries: usize,
    /// Tesseract runs at once; more wait their turn.
    pub max_concurrent: usize,
    /// Words Tesseract is less sure of (0–100) are dropped.
    pub min_confidence: f32,
    /// Devices whose every task reads the screen with OCR, as if each asked `ocr: true`.
    pub devices: Vec<String>,
}

impl Default for OcrConfig {
    fn default() -> Self {
        Self {
            binary: "tesseract".into(),
            language: "eng".into(),
            timeout_ms: 10_000,
            cache_entries: 64,
            max_concurrent: 2,
            min_confidence: MIN_CONFIDENCE,
            devices: Vec::new(),
        }
    }
}

/// Why OCR could not read a screenshot.
#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    #[error("cannot run `{binary}`: {reason}")]
    NotInstalled { binary: String, reason: String },
    #[error("tesseract took longer than {0} ms")]
    Timeout(u64),
    #[error("tesseract failed: {0}")]
    Failed(String),
}

impl OcrError {
    pub fn hint(&self) -> &'static str {
        match self {
            OcrError::NotInstalled { .. } => {
                "Install Tesseract and its English data (Debian: apt-get install tesseract-ocr tesseract-ocr-eng), or set [ocr] binary to its path."
            }
            OcrError::Timeout(_) => {
                "Raise [ocr] timeout_ms, or lower [ocr] max_concurrent on a busy machine."
            }
            OcrError::Failed(_) => {
                "Check that the language in [ocr] language is installed (tesseract --list-langs)."
            }
        }
    }
}

/// One screenshot read: its boxes, and whether they came from the cache.
#[derive(Debug, Clone)]
pub struct OcrRead {
    pub boxes: Arc<Vec<OcrBox>>,
    pub cached: bool,
    /// Time spent here (waiting for a slot included); ~0 when cached.
    pub ms: u64,
}

/// The engine, its cache, and which devices' tasks asked for OCR.
pub struct Ocr {
    cfg: OcrConfig,
    cache: Mutex<lru::LruCache<String, Arc<Vec<OcrBox>>>>,
    slots: Semaphore,
    /// Device id → running tasks on it that asked (`ask`).
    asked: Mutex<HashMap<String, usize>>,
}

impl Ocr {
    pub fn new(cfg: OcrConfig) -> Self {
        let cap = NonZeroUsize::new(cfg.cache_entries).unwrap_or(NonZeroUsize::MIN);
        Self {
            slots: Semaphore::new(cfg.max_concurrent.max(1)),
            cache: Mutex::new(lru::LruCache::new(cap)),
            asked: Mutex::new(HashMap::new()),
            cfg,
        }
    }

    /// Whether screens of `device` are read with OCR: configured for the device, or a
    /// task running on it asked.
    pub fn wanted(&self, device: &str) -> bool {
        self.cfg.devices.iter().any(|d| d == device)
            || self
                .asked
                .lock()
                .map(|m| m.contains_key(device))
                .unwrap_or(false)
    }

    /// A task on `device` asked for OCR until the guard drops.
    pub fn ask(self: &Arc<Self>, device: &str) -> OcrAsk {
        if let Ok(mut m) = self.asked.lock() {
            *m.entry(device.to_string()).or_default() += 1;
        }
        OcrAsk {
            ocr: self.clone(),
            device: device.to_string(),
        }
    }

    /// The boxes of a screenshot (PNG) whose SHA-256 is `sha`, from the cache or read now.
    pub async fn read(&self, png: &[u8], sha: &str) -> Result<OcrRead, OcrError> {
        let t = Instant::now();
        if let Some(b) = self.cache.lock().ok().and_then(|mut c| c.get(sha).cloned()) {
            return Ok(OcrRead {
                boxes: b,
                cached: true,
                ms: t.elapsed().as_millis() as u64,
            });
        }
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|e| OcrError::Failed(e.to_string()))?;
        let tsv = self.run(png).await?;
        let boxes = Arc::new(group(&parse_tsv(&tsv, self.cfg.min_confidence)));
        if let Ok(mut c) = self.cache.lock() {
            c.put(sha.to_string(), boxes.clone());
        }
        Ok(OcrRead {
            boxes,
            cached: false,
            ms: t.elapsed().as_millis() as u64,
        })
    }

    /// `tesseract stdin stdout -l LANG --psm 11 -c thresholding_method=2 tsv`, the PNG on stdin, killed at the timeout.
    async fn run(&self, png: &[u8]) -> Result<String, OcrError> {
        let mut child = tokio::process::Command::new(&self.cfg.binary)
            .args(["stdin", "stdout", "-l", &self.cfg.language, "--psm", "11"])
            // Sauvola's local thresholds: text on a coloured banner survives, which the
            // default global (Otsu) threshold loses.
            .args(["-c", "thresholding_method=2", "tsv"])
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| OcrError::NotInstalled {
                binary: self.cfg.binary.clone(),
                reason: e.to_string(),
            })?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| OcrError::Failed("no stdin".into()))?;
        let png = png.to_vec();
        let feed = async move {
            let _ = stdin.write_all(&png).await;
            drop(stdin);
        };
        let limit = Duration::from_millis(self.cfg.timeout_ms);
        let out = tokio::time::timeout(limit, async {
            let (_, out) = tokio::join!(feed, child.wait_with_output());
            out
        })
        .await
        .map_err(|_| OcrError::Timeout(self.cfg.timeout_ms))?
        .map_err(|e| OcrError::Failed(e.to_string()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(OcrError::Failed(err.trim().chars().take(300).collect()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// Held while a task that asked for OCR runs on a device.
pub struct OcrAsk {
    ocr: Arc<Ocr>,
    device: String,
}

impl Drop for OcrAsk {
    fn drop(&mut self) {
        if let Ok(mut m) = self.ocr.asked.lock()
            && let Some(n) = m.get_mut(&self.device)
        {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.device);
            }
        }
    }
}

/// The SHA-256 of a screenshot, hex: the cache's key (as the artifact store names it).
pub fn screenshot_key(png: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(png))
}

/// Whether the `tesseract` command runs here (for tests that need it).
pub fn tesseract_available(binary: &str) -> bool {
    std::process::Command::new(binary)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_binary_is_an_error_with_an_install_hint() {
        let ocr = Ocr::new(OcrConfig {
            binary: "/nonexistent/tesseract".into(),
            ..Default::default()
        });
        let e = ocr.read(b"png", "k").await.unwrap_err();
        assert!(matches!(e, OcrError::NotInstalled { .. }), "{e}");
        assert!(e.hint().contains("tesseract-ocr-eng"));
    }

    #[test]
    fn asking_lasts_as_long_as_the_guard_and_config_devices_always_want() {
        let ocr = Arc::new(Ocr::new(OcrConfig {
            devices: vec!["sim-2".into()],
            ..Default::default()
        }));
        assert!(ocr.wanted("sim-2") && !ocr.wanted("sim-1"));
        let a = ocr.ask("sim-1");
        let b = ocr.ask("sim-1");
        assert!(ocr.wanted("sim-1"));
        drop(a);
        assert!(ocr.wanted("sim-1"));
        drop(b);
        assert!(!ocr.wanted("sim-1"));
    }
}
