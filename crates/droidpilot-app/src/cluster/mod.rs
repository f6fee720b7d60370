//! Several droidpilot instances on one PostgreSQL database: the `[cluster]` settings,
//! this process's identity (`Membership`: joining with a name no live instance holds,
//! refusing device ids a live instance already owns) and its background duty
//! (`heartbeat`: heartbeats, the farm-wide device rows, reaping dead instances).
//!
//! On SQLite (one host) the store has no `ClusterStore` and nothing here runs.

pub mod heartbeat;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::device::pool::DeviceSummary;
use crate::run::scheduler::SchedulerInstance;
use crate::store::cluster::{ClusterStore, FarmDevice, InstanceRow, JoinOutcome};

/// `[cluster]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// This instance's name, unique among live instances. Empty: the host name.
    pub instance: String,
    /// How other instances reach this one's REST API (`http://host:port`), to proxy
    /// requests for its phones. Empty: they refuse such requests, naming this instance.
    pub advertise_url: String,
    /// Seconds between heartbeats.
    pub heartbeat_secs: u64,
    /// An instance with no heartbeat for this long is dead: its tasks and phones are
    /// taken over.
    pub dead_after_secs: u64,
    /// A dead instance's running tasks go back to the queue (resuming after their last
    /// committed step) instead of ending `interrupted`.
    pub requeue_dead: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            instance: String::new(),
            advertise_url: String::new(),
            heartbeat_secs: 2,
            dead_after_secs: 10,
            requeue_dead: false,
        }
    }
}

impl ClusterConfig {
    /// Errors name the key.
    pub fn validate(&self) -> Result<(), String> {
        let name = &self.instance;
        let name_ok = name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !name_ok {
            return Err(format!(
                "cluster.instance `{name}`: use at most 64 letters, digits, `.`, `_` and `-`"
            ));
        }
        if self.heartbeat_secs == 0 || self.dead_after_secs <= 2 * self.heartbeat_secs {
            return Err(format!(
                "cluster.dead_after_secs ({}) must be more than twice cluster.heartbeat_secs ({}), which must be at least 1, so one late heartbeat does not look like a death",
                self.dead_after_secs, self.heartbeat_secs
            ));
        }
        if !self.advertise_url.is_empty() {
            let url = reqwest::Url::parse(&self.advertise_url).map_err(|e| {
                format!(
                    "cluster.advertise_url `{}`: {e}; write it as http://HOST:PORT",
                    self.advertise_url
                )
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err(format!(
                    "cluster.advertise_url `{}`: write it as http://HOST:PORT (or https://)",
                    self.advertise_url
                ));
            }
        }
        Ok(())
    }

    /// The configured name, or the host name when none is set.
    pub fn instance_name(&self) -> String {
        if !self.instance.is_empty() {
            return self.instance.clone();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_default();
        let host: String = host
            .trim()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .take(64)
            .collect();
        if host.is_empty() {
            "droidpilot".into()
        } else {
            host
        }
    }

    /// For a one-off command (`droidpilot run`, `droidpilot mcp`): its own name,
    /// `<instance>-<command>-<pid>`, so it neither waits for nor takes over the name of a
    /// server on the same host. Its tasks are reaped like any instance's if it dies.
    pub fn for_command(&self, command: &str) -> ClusterConfig {
        ClusterConfig {
            instance: format!("{}-{command}-{}", self.instance_name(), std::process::id()),
            ..self.clone()
        }
    }

    pub fn heartbeat(&self) -> Duration {
        Duration::from_secs(self.heartbeat_secs)
    }

    pub fn dead_after(&self) -> Duration {
        Duration::from_secs(self.dead_after_secs)
    }
}

/// This process as a member of the cluster.
#[derive(Debug, Clone)]
pub struct Membership {
    pub me: InstanceRow,
    pub cfg: ClusterConfig,
}

impl Membership {
    /// Takes the instance name in the `instances` table. A name held by a process whose
    /// heartbeat keeps coming for `dead_after + heartbeat` is a live duplicate: refused,
    /// naming the key. A name held by this host's crashed predecessor frees up within
    /// `dead_after`, so a restart after a crash waits at most that long.
    pub async fn join(cfg: &ClusterConfig, store: &dyn ClusterStore) -> Result<Self, String> {
        let me = InstanceRow {
            name: cfg.instance_name(),
            boot: uuid::Uuid::new_v4().simple().to_string(),
            advertise_url: Some(cfg.advertise_url.trim_end_matches('/').to_string())
                .filter(|u| !u.is_empty()),
        };
        let deadline = tokio::time::Instant::now() + cfg.dead_after() + cfg.heartbeat();
        loop {
            match store.join(&me, cfg.dead_after()).await {
                Ok(JoinOutcome::Joined) => break,
                Ok(JoinOutcome::NameHeld { heartbeat_age_secs }) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(format!(
                            "instance name `{}` is held by a live droidpilot (its heartbeat is {heartbeat_age_secs}s old); give each instance its own cluster.instance (DROIDPILOT_CLUSTER__INSTANCE)",
                            me.name
                        ));
                    }
                    tracing::info!(instance = %me.name, "the instance name is held; waiting to see whether its holder is alive");
                }
                Err(e) => return Err(format!("cannot register this instance: {e}")),
            }
            tokio::time::sleep(cfg.heartbeat()).await;
        }
        Ok(Self {
            me,
            cfg: cfg.clone(),
        })
    }

    /// What the scheduler needs to know of us.
    pub fn scheduler_instance(&self) -> SchedulerInstance {
        SchedulerInstance {
            name: self.me.name.clone(),
            dead_after: self.cfg.dead_after(),
        }
    }

    /// Refuses local device ids a live other instance already owns: a request for that
    /// id could not tell the two phones apart.
    pub fn check_device_ids(
        &self,
        local: &[DeviceSummary],
        farm: &[FarmDevice],
    ) -> Result<(), String> {
        for d in local {
            if let Some(other) = farm
                .iter()
                .find(|f| f.id == d.id && f.owner_live && f.instance != self.me.name)
            {
                return Err(format!(
                    "device id `{}` is already owned by live instance `{}`; device ids are farm-wide: give this phone another id (devices.sim serial), or do not pool it here",
                    d.id, other.instance
                ));
            }
        }
        Ok(())
    }

    /// This instance's row for `id` as the farm table holds it.
    pub fn farm_row(&self, d: &DeviceSummary, serial: &str) -> FarmDevice {
        FarmDevice {
            instance: self.me.name.clone(),
            id: d.id.clone(),
            backend: d.backend.clone(),
            serial: serial.to_string(),
            model: d.model.clone(),
            state: d.state.as_str().to_string(),
            last_seen: None,
            owner_live: true,
            owner_url: self.me.advertise_url.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides};

    fn load(toml: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("local.toml"), toml).unwrap();
        Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_cluster_section_has_working_defaults_and_refuses_bad_values_by_key() {
        let c = load("").unwrap().cluster;
        assert_eq!(
            (c.heartbeat_secs, c.dead_after_secs, c.requeue_dead),
            (2, 10, false)
        );
        assert!(!c.instance_name().is_empty(), "the host name by default");
        let named = load("[cluster]\ninstance = \"rack-3\"\n").unwrap().cluster;
        assert_eq!(named.instance_name(), "rack-3");

        let e = load("[cluster]\ninstanse = \"a\"\n").unwrap_err();
        assert!(
            e.contains("instanse"),
            "unknown keys are refused by name: {e}"
        );
        let e = load("[cluster]\nheartbeat_secs = 5\ndead_after_secs = 10\n").unwrap_err();
        assert!(e.contains("cluster.dead_after_secs"), "{e}");
        let e = load("[cluster]\ninstance = \"a b\"\n").unwrap_err();
        assert!(e.contains("cluster.instance"), "{e}");
        let e = load("[cluster]\nadvertise_url = \"10.0.0.5:8080\"\n").unwrap_err();
        assert!(e.contains("cluster.advertise_url"), "{e}");
        assert!(load("[cluster]\nadvertise_url = \"http://10.0.0.5:8080/\"\n").is_ok());
    }

    fn summary(id: &str) -> DeviceSummary {
        DeviceSummary {
            id: id.into(),
            backend: "sim".into(),
            model: String::new(),
            state: crate::device::pool::DeviceState::Available,
            screen: None,
            lease_owner: None,
            consecutive_failures: 0,
            last_error: None,
            instance: None,
            local: true,
        }
    }

    #[test]
    fn a_device_id_a_live_other_instance_owns_is_refused_naming_it() {
        let m = Membership {
            me: InstanceRow {
                name: "A".into(),
                boot: "x".into(),
                advertise_url: None,
            },
            cfg: ClusterConfig::default(),
        };
        let mut other = m.farm_row(&summary("sim-1"), "sim-1");
        other.instance = "B".into();
        let e = m
            .check_device_ids(&[summary("sim-1")], std::slice::from_ref(&other))
            .unwrap_err();
        assert!(
            e.contains("`sim-1`") && e.contains("`B`") && e.contains("serial"),
            "{e}"
        );
        // A dead instance's rows, and our own previous rows, do not block.
        other.owner_live = false;
        assert!(m.check_device_ids(&[summary("sim-1")], &[other]).is_ok());
        let mine = m.farm_row(&summary("sim-1"), "sim-1");
        assert!(m.check_device_ids(&[summary("sim-1")], &[mine]).is_ok());
    }
}
