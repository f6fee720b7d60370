//! The one state struct every handler receives: the core, plus what only HTTP needs.

use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// What each of those tokens may do, and its name (same order).
    pub token_grants: Arc<Vec<super::scope::Caller>>,
    pub started_at: Instant,
    /// Flips to true when the server starts shutting down; long-lived streams end then.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    /// Scaled JPEG screenshots for live views, one capture per device per interval.
    pub frames: Arc<super::frames::FrameCache>,
    /// Phones people hold by hand from the dashboard's phone panel.
    pub controls: Arc<crate::service::remote::Controls>,
    /// Finished tasks' replay videos, so a player's range requests do not re-encode.
    pub replays: Arc<super::replay_mp4::Cache>,
}

impl AppState {
    /// The state for `core`: its configured tokens (as digests), the process's metrics
    /// recorder, a fresh frame cache. `shutdown` flipping to true ends long-lived streams.
    pub fn new(core: Arc<Core>, shutdown: tokio::sync::watch::Receiver<bool>) -> Self {
        use sha2::{Digest, Sha256};
        let token_digests = core
            .config
            .server
            .tokens
            .iter()
            .map(|t| Sha256::digest(t.secret().as_bytes()).into())
            .collect();
        let token_grants = core
            .config
            .server
            .tokens
            .iter()
            .map(|t| super::scope::Caller {
                scope: t.scope(),
                name: t.name().map(str::to_string),
            })
            .collect();
        let control_ttl = Duration::from_secs(core.config.dashboard.control_ttl_secs);
        let frame_interval = Duration::from_millis(core.config.dashboard.frame_interval_ms);
        Self {
            core,
            shutdown,
            token_digests: Arc::new(token_digests),
            token_grants: Arc::new(token_grants),
            metrics: super::metrics_handle(),
            started_at: Instant::now(),
            frames: Arc::new(super::frames::FrameCache::new(frame_interval)),
            controls: crate::service::remote::Controls::new(control_ttl),
            replays: Arc::default(),
        }
    }
}

impl Deref for AppState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
