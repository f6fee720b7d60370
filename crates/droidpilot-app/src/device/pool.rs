//! The device pool: which devices exist, which are usable, who holds them.
//!
//! Owns registration (virtual phones and adb devices from configuration, adb
//! auto-discovery, `add`/`remove` at run time), states (available, leased, offline,
//! quarantined), periodic health checks, reconnection with exponential backoff (backon),
//! quarantine after N consecutive failures, leases with an owner and an expiry, and
//! `device.online` / `device.offline` events on a broadcast channel. It only sees
//! `Arc<dyn Device>`, so every backend is pooled the same way.
//!
//! The pool is the only one that reconnects a device: a runner whose leased device
//! dropped calls `wait_back`, which marks the device failed and waits (on a watch
//! channel of pool changes) while the pool's own reconnect rounds bring it back. The
//! health loop and every reconnect round run on the `PoolTasks` tracker and token the
//! core hands in, so `Core::shutdown` ends them before the store closes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use backon::Retryable as _;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::device::adb::{AdbDevice, AdbHost, AdbOptions, is_tcp_serial};
use crate::device::sim::{SimConfig, SimDevice};
use crate::device::{Device, DeviceError};
use crate::domain::{RetryPolicy, ScreenSize, TaskEvent};

// A phone's state in the pool; its name (`as_str`, `FromStr`) is derived. (A doc
// comment would enter the OpenAPI.)
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DeviceState {
    Available,
    Leased,
    Offline,
    Quarantined,
}

impl DeviceState {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One row of `droidpilot devices` / `GET /v1/devices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeviceSummary {
    pub id: String,
    pub backend: String,
    pub model: String,
    pub state: DeviceState,
    pub screen: Option<ScreenSize>,
    pub lease_owner: Option<String>,
    pub consecutive_failures: u32,
    pub last_error: Option<String>,
    /// The droidpilot instance that owns the phone, on a database several instances
    /// share (`[cluster] instance`); absent on one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Whether the phone is attached to the instance that answered. Requests for a phone
    /// that is not are proxied to its owner (or refused, naming it).
    #[serde(default = "yes")]
    pub local: bool,
}

fn yes() -> bool {
    true
}

impl DeviceSummary {
    /// Who holds the device, in words: `running task <id>` for a task's lease (its owner
    /// is the task id), the owner as given otherwise (an MCP session names itself).
    pub fn holder(&self) -> Option<String> {
        self.lease_owner.as_deref().map(|o| {
            if o.parse::<crate::domain::TaskId>().is_ok() {
                format!("running task {o}")
            } else {
                o.to_string()
            }
        })
    }
}

/// Published on every state change that dashboards care about; on the bus it is the
/// matching `TaskEvent::Device*` variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceEvent {
    Online { id: String },
    Offline { id: String, reason: String },
    Quarantined { id: String, reason: String },
    Removed { id: String },
}

impl DeviceEvent {
    /// The event's name on the bus (`device.online`…).
    pub fn name(&self) -> String {
        TaskEvent::from(self.clone()).kind().to_string()
    }
}

impl From<DeviceEvent> for TaskEvent {
    fn from(ev: DeviceEvent) -> Self {
        match ev {
            DeviceEvent::Online { id } => TaskEvent::DeviceOnline { id },
            DeviceEvent::Offline { id, reason } => TaskEvent::DeviceOffline { id, reason },
            DeviceEvent::Quarantined { id, reason } => TaskEvent::DeviceQuarantined { id, reason },
            DeviceEvent::Removed { id } => TaskEvent::DeviceRemoved { id },
        }
    }
}

#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Virtual phones to create.
    pub sims: Vec<SimConfig>,
    /// The adb server; `None` disables the ADB backend.
    pub adb: Option<AdbOptions>,
    /// adb serials to pool (USB serials or already-connected `host:port`).
    pub adb_serials: Vec<String>,
    /// `host:port` addresses to `adb connect` at start.
    pub adb_connect: Vec<String>,
    /// Pool every device the adb server reports.
    pub auto_discover: bool,
    pub health_interval: Duration,
    /// Consecutive failed checks/reconnects before a device is quarantined.
    pub quarantine_after: u32,
    /// Backoff for reconnects (first delay, cap, attempts per round).
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub reconnect_attempts: usize,
}

impl PoolOptions {
    /// The reconnect schedule of one round.
    pub fn reconnect_policy(&self) -> RetryPolicy {
        RetryPolicy::new(
            self.reconnect_min,
            self.reconnect_max,
            u32::try_from(self.reconnect_attempts).unwrap_or(u32::MAX),
        )
    }
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            sims: Vec::new(),
            adb: None,
            adb_serials: Vec::new(),
            adb_connect: Vec::new(),
            auto_discover: false,
            health_interval: Duration::from_secs(10),
            quarantine_after: 5,
            reconnect_min: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(5),
            reconnect_attempts: 3,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("no device with id `{0}`")]
    NotFound(String),
    #[error("no available device matches {0}")]
    NoneAvailable(String),
    #[error("device `{0}` is already in the pool")]
    Duplicate(String),
    #[error("the ADB backend is not configured")]
    NoAdb,
    #[error(transparent)]
    Device(#[from] DeviceError),
}

impl PoolError {
    pub fn code(&self) -> &'static str {
        match self {
            PoolError::NotFound(_) => "device_not_found",
            PoolError::NoneAvailable(_) => "no_device_available",
            PoolError::Duplicate(_) => "device_exists",
            PoolError::NoAdb => "adb_not_configured",
            PoolError::Device(e) => e.code(),
        }
    }
    pub fn hint(&self) -> String {
        match self {
            PoolError::NotFound(_) => "List devices with `droidpilot devices` or GET /v1/devices.".into(),
            PoolError::NoneAvailable(_) => "Wait for a lease to end, add a device (POST /v1/devices), or run `droidpilot devices`.".into(),
            PoolError::Duplicate(_) => "The device is already pooled; use its id.".into(),
            PoolError::NoAdb => "Enable the adb section in the configuration, and check `droidpilot doctor`.".into(),
            PoolError::Device(e) => e.hint(),
        }
    }
}

/// Which device a lease wants. Empty fields match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceMatcher {
    pub id: Option<String>,
    pub backend: Option<String>,
    /// Substring of the model, case-insensitive.
    pub model: Option<String>,
}

impl DeviceMatcher {
    pub fn any() -> Self {
        Self::default()
    }
    pub fn id(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ..Self::default()
        }
    }
    fn matches(&self, e: &Entry) -> bool {
        self.id.as_ref().is_none_or(|i| *i == e.id)
            && self.backend.as_ref().is_none_or(|b| *b == e.backend)
            && self
                .model
                .as_ref()
                .is_none_or(|m| e.model.to_lowercase().contains(&m.to_lowercase()))
    }
}

impl std::fmt::Display for DeviceMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "id={} backend={} model={}",
            self.id.as_deref().unwrap_or("*"),
            self.backend.as_deref().unwrap_or("*"),
            self.model.as_deref().unwrap_or("*")
        )
    }
}

struct LeaseInfo {
    token: u64,
    owner: String,
    expires: Instant,
}

struct Entry {
    id: String,
    backend: String,
    model: String,
    screen: Option<ScreenSize>,
    device: Arc<dyn Device>,
    online: bool,
    quarantined: bool,
    failures: u32,
    last_error: Option<String>,
    lease: Option<LeaseInfo>,
    reconnecting: bool,
}

impl Entry {
    /// The lease, unless it has lapsed: a lapsed lease is reclaimed by the next lease
    /// request or health round, but nobody is shown as holding the device meanwhile.
    fn live_lease(&self) -> Option<&LeaseInfo> {
        self.lease.as_ref().filter(|l| l.expires > Instant::now())
    }
    fn state(&self) -> DeviceState {
        if self.quarantined {
            DeviceState::Quarantined
        } else if !self.online {
            DeviceState::Offline
        } else if self.live_lease().is_some() {
            DeviceState::Leased
        } else {
            DeviceState::Available
        }
    }
    fn summary(&self) -> DeviceSummary {
        DeviceSummary {
            id: self.id.clone(),
            backend: self.backend.clone(),
            model: self.model.clone(),
            state: self.state(),
            screen: self.screen,
            lease_owner: self.live_lease().map(|l| l.owner.clone()),
            consecutive_failures: self.failures,
            last_error: self.last_error.clone(),
            instance: None,
            local: true,
        }
    }
}

/// Where the pool's background work runs: the health loop and reconnect rounds are
/// spawned on `tracker` and end when `cancel` fires. The core passes its own, so its
/// shutdown waits for them; `DevicePool::new` makes a private pair.
#[derive(Clone, Default)]
pub struct PoolTasks {
    pub tracker: TaskTracker,
    pub cancel: CancellationToken,
}

struct Inner {
    opts: PoolOptions,
    devices: Mutex<BTreeMap<String, Entry>>,
    events: broadcast::Sender<DeviceEvent>,
    /// Bumped on every change of a device's state or reconnecting flag (`wait_back`).
    changed: watch::Sender<u64>,
    tasks: PoolTasks,
    next_token: Mutex<u64>,
    host: Option<AdbHost>,
}

/// The pool. Cloning shares it; background health checks stop when the last clone drops.
#[derive(Clone)]
pub struct DevicePool {
    inner: Arc<Inner>,
}

/// Exclusive use of one device until released, dropped or expired.
pub struct Lease {
    pub id: String,
    pub owner: String,
    pub device: Arc<dyn Device>,
    token: u64,
    pool: Weak<Inner>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .finish()
    }
}

impl Lease {
    /// Whether this lease still holds the device (not expired and reclaimed).
    pub fn is_valid(&self) -> bool {
        let Some(p) = self.pool.upgrade() else {
            return false;
        };
        let devices = p.devices.lock().unwrap_or_else(|e| e.into_inner());
        devices
            .get(&self.id)
            .and_then(|e| e.lease.as_ref())
            .is_some_and(|l| l.token == self.token && l.expires > Instant::now())
    }

    /// Pushes the expiry to `ttl` from now.
    pub fn renew(&self, ttl: Duration) -> bool {
        let Some(p) = self.pool.upgrade() else {
            return false;
        };
        let mut devices = p.devices.lock().unwrap_or_else(|e| e.into_inner());
        match devices.get_mut(&self.id).and_then(|e| e.lease.as_mut()) {
            Some(l) if l.token == self.token => {
                l.expires = Instant::now() + ttl;
                true
            }
            _ => false,
        }
    }

    pub fn release(self) {}
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(p) = self.pool.upgrade() {
            let mut devices = p.devices.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(e) = devices.get_mut(&self.id)
                && e.lease.as_ref().is_some_and(|l| l.token == self.token)
            {
                e.lease = None;
            }
        }
    }
}

impl DevicePool {
    /// At shutdown: stops the adb server if this pool started it (a server that was
    /// already running is left alone). Returns whether one was stopped.
    pub async fn stop_started_adb_server(&self) -> bool {
        let Some(host) = &self.inner.host else {
            return false;
        };
        match host.stop_started_server().await {
            Ok(stopped) => stopped,
            Err(e) => {
                tracing::warn!(error = %e, "could not stop the adb server this process started");
                false
            }
        }
    }

    /// Builds the pool from configuration and starts health checks (and discovery) on
    /// a tracker of its own.
    pub async fn new(opts: PoolOptions) -> Result<DevicePool, PoolError> {
        Self::with_tasks(opts, PoolTasks::default()).await
    }

    /// Like `new`, with the background work on `tasks` (the core's tracker and token).
    pub async fn with_tasks(opts: PoolOptions, tasks: PoolTasks) -> Result<DevicePool, PoolError> {
        let host = opts.adb.clone().map(AdbHost::new);
        let pool = DevicePool {
            inner: Arc::new(Inner {
                opts: opts.clone(),
                devices: Mutex::new(BTreeMap::new()),
                events: broadcast::channel(256).0,
                changed: watch::channel(0).0,
                tasks,
                next_token: Mutex::new(1),
                host,
            }),
        };
        for cfg in &opts.sims {
            let sim = SimDevice::new(cfg.clone())?;
            pool.add_device(Arc::new(sim), "sim").await?;
        }
        if let Some(host) = &pool.inner.host {
            if let Err(e) = host.ensure_server().await {
                tracing::warn!(error = %e, "adb server is not available; adb devices will show as offline");
            }
            for addr in &opts.adb_connect {
                if let Err(e) = pool.add(addr).await {
                    tracing::warn!(address = %addr, error = %e, "could not add device");
                }
            }
            for serial in &opts.adb_serials {
                if let Err(e) = pool.add(serial).await {
                    tracing::warn!(serial = %serial, error = %e, "could not add device");
                }
            }
            if opts.auto_discover {
                pool.discover().await;
            }
        }
        pool.start_health_loop();
        Ok(pool)
    }

    /// Discovery and health checks every `health_interval`, until the pool's token is
    /// cancelled or its last clone drops.
    fn start_health_loop(&self) {
        let weak = Arc::downgrade(&self.inner);
        let interval = self.inner.opts.health_interval;
        let cancel = self.inner.tasks.cancel.clone();
        self.inner.tasks.tracker.spawn(async move {
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(interval) => {}
                }
                let Some(inner) = weak.upgrade() else { break };
                let pool = DevicePool { inner };
                let round = async {
                    if pool.inner.opts.auto_discover {
                        pool.discover().await;
                    }
                    pool.check_health().await;
                };
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = round => {}
                }
            }
        });
    }

    fn bump(&self) {
        self.inner.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.inner.devices.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, ev: DeviceEvent) {
        // No subscriber is fine: events are for whoever listens.
        let _ = self.inner.events.send(ev);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<DeviceEvent> {
        self.inner.events.subscribe()
    }

    /// Pools an already-built device (any backend).
    pub async fn add_device(
        &self,
        device: Arc<dyn Device>,
        backend: &str,
    ) -> Result<DeviceSummary, PoolError> {
        let id = device.serial().to_string();
        if self.lock().contains_key(&id) {
            return Err(PoolError::Duplicate(id));
        }
        let info = device.info().await;
        let (online, model, screen, err) = match info {
            Ok(i) => (true, i.model, Some(i.screen), None),
            Err(e) => (false, String::new(), None, Some(e.to_string())),
        };
        let entry = Entry {
            id: id.clone(),
            backend: backend.to_string(),
            model,
            screen,
            device,
            online,
            quarantined: false,
            failures: u32::from(!online),
            last_error: err,
            lease: None,
            reconnecting: false,
        };
        let summary = entry.summary();
        self.lock().insert(id.clone(), entry);
        self.publish(if online {
            DeviceEvent::Online { id }
        } else {
            DeviceEvent::Offline {
                id,
                reason: summary.last_error.clone().unwrap_or_default(),
            }
        });
        Ok(summary)
    }

    /// Adds an adb device: `host:port` is `adb connect`ed first; anything else is a serial.
    pub async fn add(&self, address: &str) -> Result<DeviceSummary, PoolError> {
        let host = self.inner.host.as_ref().ok_or(PoolError::NoAdb)?;
        if self.lock().contains_key(address) {
            return Err(PoolError::Duplicate(address.to_string()));
        }
        if is_tcp_serial(address) {
            host.connect(address).await?;
        }
        let dev = AdbDevice::new(address, host.options().clone());
        // Right after `adb connect` the server may still list the device as connecting.
        let mut healthy = false;
        for _ in 0..20 {
            if dev.health().await.is_ok() {
                healthy = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // `adb connect` answers OKAY when no adbd answered at the address (its "failed to
        // connect" is only text) and then lists the address `offline`. Such an address is
        // refused rather than pooled offline for ever; a phone that answered but waits for
        // its person (`unauthorized`, until the debugging prompt is accepted) is pooled.
        if !healthy && is_tcp_serial(address) {
            let listed = host.devices().await?;
            let state = listed
                .iter()
                .find(|l| l.serial == address)
                .map(|l| l.state.as_str());
            if matches!(state, None | Some("offline")) {
                let _ = host.disconnect(address).await;
                return Err(PoolError::Device(DeviceError::Disconnected {
                    serial: format!("{address} (adb connect reached no phone there)"),
                }));
            }
        }
        self.add_device(Arc::new(dev), "adb").await
    }

    /// Every serial the adb server lists, in any state (for checking a requested serial).
    pub async fn adb_serials(&self) -> Result<Vec<String>, PoolError> {
        let host = self.inner.host.as_ref().ok_or(PoolError::NoAdb)?;
        Ok(host
            .devices()
            .await?
            .into_iter()
            .map(|d| d.serial)
            .collect())
    }

    /// Removes a device (its lease, if any, becomes invalid).
    pub async fn remove(&self, id: &str) -> Result<(), PoolError> {
        let entry = self
            .lock()
            .remove(id)
            .ok_or_else(|| PoolError::NotFound(id.to_string()))?;
        if entry.backend == "adb"
            && is_tcp_serial(id)
            && let Some(host) = &self.inner.host
        {
            let _ = host.disconnect(id).await;
        }
        self.bump();
        self.publish(DeviceEvent::Removed { id: id.to_string() });
        Ok(())
    }

    pub fn list(&self) -> Vec<DeviceSummary> {
        self.lock().values().map(Entry::summary).collect()
    }

    pub fn get(&self, id: &str) -> Option<Arc<dyn Device>> {
        self.lock().get(id).map(|e| e.device.clone())
    }

    pub fn summary(&self, id: &str) -> Option<DeviceSummary> {
        self.lock().get(id).map(Entry::summary)
    }

    /// Reads `dev`'s screen size again (after it turned) for the pool's view of it.
    pub async fn refresh_screen(&self, dev: &dyn Device) {
        let Ok(info) = dev.info().await else { return };
        for e in self.lock().values_mut() {
            if e.device.serial() == dev.serial() {
                e.screen = Some(info.screen);
            }
        }
    }

    /// Leases the first available device matching `matcher` for `ttl`.
    pub fn lease(
        &self,
        owner: &str,
        matcher: &DeviceMatcher,
        ttl: Duration,
    ) -> Result<Lease, PoolError> {
        let token = {
            let mut t = self
                .inner
                .next_token
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *t += 1;
            *t
        };
        let mut devices = self.lock();
        let now = Instant::now();
        for e in devices.values_mut() {
            if e.lease.as_ref().is_some_and(|l| l.expires <= now) {
                e.lease = None;
            }
        }
        if let Some(id) = &matcher.id
            && !devices.contains_key(id)
        {
            return Err(PoolError::NotFound(id.clone()));
        }
        let entry = devices
            .values_mut()
            .find(|e| e.state() == DeviceState::Available && matcher.matches(e))
            .ok_or_else(|| PoolError::NoneAvailable(matcher.to_string()))?;
        entry.lease = Some(LeaseInfo {
            token,
            owner: owner.to_string(),
            expires: now + ttl,
        });
        Ok(Lease {
            id: entry.id.clone(),
            owner: owner.to_string(),
            device: entry.device.clone(),
            token,
            pool: Arc::downgrade(&self.inner),
        })
    }

    /// Pools devices the adb server reports that are not pooled yet.
    pub async fn discover(&self) {
        let Some(host) = &self.inner.host else { return };
        let Ok(list) = host.devices().await else {
            return;
        };
        for d in list.into_iter().filter(|d| d.is_online()) {
            if self.lock().contains_key(&d.serial) {
                continue;
            }
            let dev = AdbDevice::new(d.serial.clone(), host.options().clone());
            if let Err(e) = self.add_device(Arc::new(dev), "adb").await {
                tracing::debug!(serial = %d.serial, error = %e, "discovered device not added");
            }
        }
    }

    /// One round of health checks over every device (the background loop calls this).
    pub async fn check_health(&self) {
        let targets: Vec<(String, Arc<dyn Device>)> = {
            let now = Instant::now();
            let mut devices = self.lock();
            for e in devices.values_mut() {
                if e.lease.as_ref().is_some_and(|l| l.expires <= now) {
                    tracing::info!(id = %e.id, "lease expired; device reclaimed");
                    e.lease = None;
                }
            }
            devices
                .values()
                .filter(|e| !e.reconnecting)
                .map(|e| (e.id.clone(), e.device.clone()))
                .collect()
        };
        let checks = targets.into_iter().map(|(id, dev)| async move {
            let r = dev.health().await;
            (id, dev, r)
        });
        for (id, dev, r) in futures::future::join_all(checks).await {
            match r {
                Ok(()) => self.mark_ok(&id, &dev).await,
                Err(e) => {
                    self.mark_failed(&id, &e);
                    self.spawn_reconnect(id, dev);
                }
            }
        }
    }

    async fn mark_ok(&self, id: &str, dev: &Arc<dyn Device>) {
        let was_down = self
            .lock()
            .get(id)
            .is_some_and(|e| !e.online || e.quarantined);
        let info = if was_down {
            dev.info().await.ok()
        } else {
            None
        };
        let mut devices = self.lock();
        let Some(e) = devices.get_mut(id) else { return };
        e.failures = 0;
        e.last_error = None;
        if let Some(i) = info {
            e.model = i.model;
            e.screen = Some(i.screen);
        }
        if !e.online || e.quarantined {
            e.online = true;
            e.quarantined = false;
            drop(devices);
            self.bump();
            self.publish(DeviceEvent::Online { id: id.to_string() });
        }
    }

    fn mark_failed(&self, id: &str, err: &DeviceError) {
        let mut devices = self.lock();
        let Some(e) = devices.get_mut(id) else { return };
        e.failures += 1;
        e.last_error = Some(err.to_string());
        let mut events = Vec::new();
        if e.online {
            e.online = false;
            events.push(DeviceEvent::Offline {
                id: id.to_string(),
                reason: err.to_string(),
            });
        }
        if !e.quarantined && e.failures >= self.inner.opts.quarantine_after {
            e.quarantined = true;
            events.push(DeviceEvent::Quarantined {
                id: id.to_string(),
                reason: format!("{} consecutive failures; last: {err}", e.failures),
            });
        }
        drop(devices);
        self.bump();
        for ev in events {
            self.publish(ev);
        }
    }

    /// Reconnects in the background with exponential backoff (one round at a time per
    /// device); quarantined devices get one attempt per round only. Nothing starts once
    /// the pool's token is cancelled, and a round in flight stops at the cancel.
    fn spawn_reconnect(&self, id: String, dev: Arc<dyn Device>) {
        let cancel = self.inner.tasks.cancel.clone();
        let quarantined = {
            let mut devices = self.lock();
            let Some(e) = devices.get_mut(&id) else {
                return;
            };
            if e.reconnecting || cancel.is_cancelled() {
                return;
            }
            e.reconnecting = true;
            e.quarantined
        };
        let pool = self.clone();
        let o = &self.inner.opts;
        let retries = if quarantined { 0 } else { o.reconnect_attempts };
        let policy = o.reconnect_policy().with_retries(retries as u32);
        self.inner.tasks.tracker.spawn(async move {
            tokio::select! {
                () = cancel.cancelled() => {}
                r = reconnect_round(dev.as_ref(), policy) => match r {
                    Ok(()) => pool.mark_ok(&id, &dev).await,
                    Err(e) => pool.mark_failed(&id, &e),
                },
            }
            if let Some(e) = pool.lock().get_mut(&id) {
                e.reconnecting = false;
            }
            pool.bump();
        });
    }

    /// For a runner whose device dropped with `err`: waits until the device answers again
    /// (true) or `deadline` passes (false). The pool does the reconnecting: a pooled device
    /// is marked failed (`device.offline`) and brought back by the pool's reconnect rounds,
    /// the same ones the health loop starts (never two at once), with a pause of
    /// `reconnect_max` between failed rounds. A device the pool does not hold (a caller's
    /// own) is reconnected here on the same policy. Dropping the future stops the wait.
    pub async fn wait_back(
        &self,
        device: &dyn Device,
        err: &DeviceError,
        deadline: Instant,
    ) -> bool {
        let id = device.serial().to_string();
        let mut changed = self.inner.changed.subscribe();
        if !self.lock().contains_key(&id) {
            let policy = self.inner.opts.reconnect_policy();
            let pause = self.inner.opts.reconnect_max;
            return reconnect_until(device, policy, pause, deadline).await;
        }
        self.mark_failed(&id, err);
        let mut rounds = 0u32;
        loop {
            let (online, reconnecting, dev) = match self.lock().get(&id) {
                None => return false,
                Some(e) => (e.online && !e.quarantined, e.reconnecting, e.device.clone()),
            };
            if online {
                return true;
            }
            if self.inner.tasks.cancel.is_cancelled() {
                return false;
            }
            if !reconnecting {
                if rounds > 0 {
                    let pause = Instant::now() + self.inner.opts.reconnect_max;
                    tokio::time::sleep_until(pause.min(deadline).into()).await;
                    if Instant::now() >= deadline {
                        return false;
                    }
                }
                rounds += 1;
                self.spawn_reconnect(id.clone(), dev);
            }
            let woke = tokio::select! {
                () = self.inner.tasks.cancel.cancelled() => return false,
                r = tokio::time::timeout_at(deadline.into(), changed.changed()) => r,
            };
            if woke.is_err() {
                return false;
            }
        }
    }
}

/// One round of reconnecting: `reconnect` then `health`, retried on `policy`.
async fn reconnect_round(dev: &dyn Device, policy: RetryPolicy) -> Result<(), DeviceError> {
    let attempt = || async {
        dev.reconnect().await?;
        dev.health().await
    };
    attempt.retry(policy).await
}

/// Rounds of `reconnect_round`, `pause` apart, until one succeeds (true) or `deadline`.
async fn reconnect_until(
    dev: &dyn Device,
    policy: RetryPolicy,
    pause: Duration,
    deadline: Instant,
) -> bool {
    let rounds = async {
        while reconnect_round(dev, policy.clone()).await.is_err() {
            tokio::time::sleep(pause).await;
        }
    };
    tokio::time::timeout_at(deadline.into(), rounds)
        .await
        .is_ok()
}

/// For a device no pool holds (a runner built without one): the pool's reconnect rounds
/// on default `PoolOptions`, until `deadline`.
pub async fn reconnect_unpooled(dev: &dyn Device, deadline: Instant) -> bool {
    let o = PoolOptions::default();
    reconnect_until(dev, o.reconnect_policy(), o.reconnect_max, deadline).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::sim::SimFaults;

    fn sim(serial: &str) -> SimConfig {
        SimConfig {
            serial: serial.into(),
            ..SimConfig::default()
        }
    }

    async fn pool(sims: Vec<SimConfig>) -> DevicePool {
        DevicePool::new(PoolOptions {
            sims,
            health_interval: Duration::from_secs(3600),
            ..PoolOptions::default()
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn leases_are_exclusive_released_on_drop_and_expire() {
        let p = pool(vec![sim("a"), sim("b")]).await;
        assert_eq!(p.list().len(), 2);
        let l1 = p
            .lease("task-1", &DeviceMatcher::any(), Duration::from_secs(60))
            .unwrap();
        let l2 = p
            .lease("task-2", &DeviceMatcher::any(), Duration::from_secs(60))
            .unwrap();
        assert_ne!(l1.id, l2.id);
        assert!(matches!(
            p.lease("task-3", &DeviceMatcher::any(), Duration::from_secs(60)),
            Err(PoolError::NoneAvailable(_))
        ));
        assert_eq!(
            p.summary(&l1.id).unwrap().lease_owner.as_deref(),
            Some("task-1")
        );
        let id = l1.id.clone();
        drop(l1);
        assert_eq!(p.summary(&id).unwrap().state, DeviceState::Available);
        let short = p
            .lease("task-4", &DeviceMatcher::id(&id), Duration::from_millis(1))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!short.is_valid());
        // Lapsed: nobody is shown holding it, before anything reclaims it.
        let lapsed = p.summary(&id).unwrap();
        assert_eq!(
            (lapsed.state, lapsed.lease_owner),
            (DeviceState::Available, None)
        );
        let again = p
            .lease("task-5", &DeviceMatcher::id(&id), Duration::from_secs(60))
            .unwrap();
        drop(short); // an expired lease must not release its successor's
        assert!(again.is_valid());
        assert!(matches!(
            p.lease("x", &DeviceMatcher::id("nope"), Duration::from_secs(1)),
            Err(PoolError::NotFound(_))
        ));
    }

    fn quick_opts() -> PoolOptions {
        PoolOptions {
            health_interval: Duration::from_secs(3600),
            quarantine_after: 2,
            reconnect_attempts: 1,
            reconnect_min: Duration::from_millis(1),
            reconnect_max: Duration::from_millis(2),
            ..PoolOptions::default()
        }
    }

    #[tokio::test]
    async fn a_dropped_sim_goes_offline_and_reconnects() {
        let p = DevicePool::new(quick_opts()).await.unwrap();
        let simdev = Arc::new(SimDevice::new(sim("s")).unwrap());
        p.add_device(simdev.clone(), "sim").await.unwrap();
        let mut events = p.subscribe();
        simdev
            .set_faults(SimFaults {
                disconnect_after: Some(0),
                ..SimFaults::default()
            })
            .unwrap();
        // The next command trips the fault; from then on the link is down.
        assert!(simdev.info().await.unwrap_err().is_disconnect());
        p.check_health().await;
        wait_idle(&p, "s").await;
        assert_eq!(next_event(&mut events).await, "device.offline");
        assert_eq!(next_event(&mut events).await, "device.online");
        assert_eq!(p.summary("s").unwrap().state, DeviceState::Available);
    }

    #[tokio::test]
    async fn an_unreachable_device_is_quarantined_and_never_leased() {
        let p = DevicePool::new(quick_opts()).await.unwrap();
        // An adb server that is not there: every call is refused.
        let dead = AdbDevice::new("R58M-dead", AdbOptions::local(1));
        let s = p.add_device(Arc::new(dead), "adb").await.unwrap();
        assert_eq!(s.state, DeviceState::Offline);
        let mut events = p.subscribe();
        p.check_health().await;
        wait_idle(&p, "R58M-dead").await;
        let s = p.summary("R58M-dead").unwrap();
        assert_eq!(s.state, DeviceState::Quarantined, "{s:?}");
        assert!(s.consecutive_failures >= 2);
        assert_eq!(next_event(&mut events).await, "device.quarantined");
        assert!(
            p.lease("t", &DeviceMatcher::any(), Duration::from_secs(1))
                .is_err()
        );
        p.remove("R58M-dead").await.unwrap();
        assert!(p.list().is_empty());
        assert!(matches!(
            p.remove("R58M-dead").await,
            Err(PoolError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn wait_back_lets_the_pool_reconnect_a_leased_device() {
        let p = DevicePool::new(quick_opts()).await.unwrap();
        let simdev = Arc::new(SimDevice::new(sim("s")).unwrap());
        p.add_device(simdev.clone(), "sim").await.unwrap();
        let lease = p
            .lease("task-1", &DeviceMatcher::any(), Duration::from_secs(60))
            .unwrap();
        let mut events = p.subscribe();
        simdev
            .set_faults(SimFaults {
                disconnect_after: Some(0),
                ..SimFaults::default()
            })
            .unwrap();
        let err = simdev.info().await.unwrap_err();
        assert!(err.is_disconnect());
        let deadline = Instant::now() + Duration::from_secs(30);
        assert!(p.wait_back(lease.device.as_ref(), &err, deadline).await);
        // The pool saw the drop (the runner's report) and brought it back itself.
        assert_eq!(next_event(&mut events).await, "device.offline");
        assert_eq!(next_event(&mut events).await, "device.online");
        assert_eq!(p.summary("s").unwrap().state, DeviceState::Leased);
        assert!(lease.is_valid());
    }

    #[tokio::test]
    async fn wait_back_gives_up_at_the_deadline_and_stops_with_the_pool() {
        let tasks = PoolTasks::default();
        let p = DevicePool::with_tasks(quick_opts(), tasks.clone())
            .await
            .unwrap();
        let dead = Arc::new(AdbDevice::new("R58M-dead", AdbOptions::local(1)));
        p.add_device(dead.clone(), "adb").await.unwrap();
        let err = DeviceError::Disconnected {
            serial: "R58M-dead".into(),
        };
        let deadline = Instant::now() + Duration::from_millis(300);
        assert!(!p.wait_back(dead.as_ref(), &err, deadline).await);
        // A device the pool does not hold is reconnected on the pool's policy too.
        let other = AdbDevice::new("R58M-other", AdbOptions::local(1));
        let deadline = Instant::now() + Duration::from_millis(100);
        assert!(!p.wait_back(&other, &err, deadline).await);
        // The health loop and any reconnect round end with the token.
        tasks.tracker.close();
        tasks.cancel.cancel();
        tasks.tracker.wait().await;
        assert_eq!(tasks.tracker.len(), 0);
        let far = Instant::now() + Duration::from_secs(600);
        assert!(
            !p.wait_back(dead.as_ref(), &err, far).await,
            "a stopped pool does not wait"
        );
    }

    async fn next_event(rx: &mut broadcast::Receiver<DeviceEvent>) -> String {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("an event within 10 s")
            .unwrap()
            .name()
    }

    async fn wait_idle(p: &DevicePool, id: &str) {
        for _ in 0..400 {
            if p.lock().get(id).is_some_and(|e| !e.reconnecting) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
