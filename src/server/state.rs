//! The one state struct every handler receives: the core, plus what only HTTP needs.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::core::Core;

#[derive(Clone)]
pub struct AppState {
    /// Store, bus, pool, artifacts, prompts, running tasks; handlers reach them through
    /// `Deref` (`state.store`, `state.pool`, …).
    pub core: Arc<Core>,
    pub metrics: PrometheusHandle,
    /// SHA-256 of each configured bearer token; the tokens themselves are not kept.
    pub token_digests: Arc<Vec<[u8; 32]>>,
    pub started_at: Instant,
    /// Flips to true when the server starts shutting down; long-lived streams end then.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Scaled JPEG screenshots for live views, one capture per device per interval.
    pub frames: Arc<super::frames::FrameCache>,
}

impl Deref for AppState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
