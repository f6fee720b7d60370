//! The one state struct every handler receives.

use std::sync::Arc;
use std::time::Instant;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::config::Config;
use crate::device::pool::DevicePool;
use crate::run::artifacts::ArtifactStore;
use crate::run::events::EventBus;
use crate::run::interaction::Prompts;
use crate::run::scheduler::RunningTasks;
use crate::store::Store;

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub config: Arc<Config>,
    pub metrics: PrometheusHandle,
    /// SHA-256 of each configured bearer token; the tokens themselves are not kept.
    pub token_digests: Arc<Vec<[u8; 32]>>,
    pub started_at: Instant,
    pub bus: EventBus,
    pub prompts: Arc<Prompts>,
    /// Flips to true when the server starts shutting down; long-lived streams end then.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    pub pool: DevicePool,
    pub artifacts: ArtifactStore,
    /// Wakes the scheduler (a task was queued or cancelled).
    pub wake: Arc<tokio::sync::Notify>,
    /// Running tasks, for cancels.
    pub running: Arc<RunningTasks>,
}
