//! Configuration: the embedded `config/default.toml`, then `config/local.toml`, then
//! `--config PATH`, then `DROIDPILOT_*` variables, then flags. Parsed once at start-up
//! into typed structs, so a bad value stops the server with the key's name instead of
//! failing later.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::store::StorageConfig;

pub mod frontends;

/// The defaults, embedded so the binary runs with no files next to it.
pub const DEFAULT_TOML: &str = include_str!("../../../../config/default.toml");

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub log: LogConfig,
    pub devices: DevicesConfig,
    pub runner: crate::run::runner::RunnerConfig,
    pub scheduler: crate::run::scheduler::SchedulerConfig,
    /// Agent defaults: which kind and model a task gets when it does not say.
    #[serde(default)]
    pub agent: crate::agent::spec::AgentDefaults,
    /// Where finished tasks' results are posted.
    #[serde(default)]
    pub webhooks: crate::run::webhooks::WebhookConfig,
    /// MCP servers the agent's `mcp_call` reaches (`[[mcp.servers]]`).
    #[serde(default)]
    pub mcp: crate::mcp::client::McpConfig,
    /// droidpilot as an MCP server (`droidpilot mcp`, `/mcp`): device leases.
    #[serde(default)]
    pub mcp_server: frontends::McpServerConfig,
    /// The dashboard: live-view frame rate, models offered by the submit form.
    #[serde(default)]
    pub dashboard: frontends::DashboardConfig,
    /// Several instances on one PostgreSQL database: identity, heartbeats, dead instances.
    #[serde(default)]
    pub cluster: crate::cluster::ClusterConfig,
    /// OCR of screenshots merged into the element map (`ocr`): the engine, its cache,
    /// and the devices that always use it.
    #[serde(default)]
    pub ocr: crate::ocr::OcrConfig,
    /// Operator-defined custom actions and action hooks (`[[actions.custom]]`,
    /// `[[actions.hooks]]`), checked at load; `serve` reloads them on SIGHUP.
    #[serde(default)]
    pub actions: crate::run::extend::ActionsConfig,
    /// Which models the user's own layers name (`local.toml`, `--config`, `DROIDPILOT_*`):
    /// the defaults' models are examples until chosen (or given a key).
    #[serde(skip)]
    pub chosen: ChosenModels,
}

/// Whether the user's configuration sets anything under `[agent.navigator]` /
/// `[agent.vision]`, or picks that kind with `agent.kind`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChosenModels {
    pub navigator: bool,
    pub vision: bool,
}

impl Config {
    /// Whether the model a `kind` of agent uses is configured: the user's configuration
    /// names it, or a key for its provider is set. Until then the defaults' models (a
    /// hosted navigator, a vision model at a local address) are examples: `doctor` calls
    /// them "not configured", the dashboard does not offer them first. Replay and script
    /// agents need no model.
    pub fn model_configured(
        &self,
        kind: crate::agent::spec::AgentKind,
        env: impl Fn(&str) -> Option<String>,
    ) -> bool {
        use crate::agent::spec::AgentKind;
        let chosen = match kind {
            AgentKind::Replay | AgentKind::Script => return true,
            AgentKind::Vision => self.chosen.vision,
            _ => self.chosen.navigator,
        };
        let cfg = self.agent.model_for(kind);
        chosen
            || self.agent.keys.get(cfg.provider).is_some()
            || matches!(cfg.resolve_key_with(env), Ok(Some(_)))
    }
}

impl ChosenModels {
    /// Read from the user's layers alone (no defaults).
    fn of(user: &config::Config) -> Self {
        let agent = user.get_table("agent").unwrap_or_default();
        let kind = agent.get("kind").and_then(|k| k.clone().into_string().ok());
        let picks = |role: &str| agent.contains_key(role) || kind.as_deref() == Some(role);
        Self {
            navigator: picks("navigator"),
            vision: picks("vision"),
        }
    }
}

/// Where devices come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevicesConfig {
    /// Virtual phones (`[[devices.sim]]`); one by default.
    #[serde(default)]
    pub sim: Vec<crate::device::sim::SimConfig>,
    /// Every virtual phone's `latency_profile`, whatever its own table says (`fast`:
    /// instant, for tests and benches; unset: each phone's own).
    #[serde(default)]
    pub sim_latency_profile: Option<crate::device::sim::LatencyProfile>,
    pub adb: AdbConfig,
    pub health_interval_secs: u64,
    pub quarantine_after: u32,
    /// How a point becomes the pixel a device is touched at, on every path (tasks, REST,
    /// `scroll_to_find`, flows, take-over): scale and offset in normalized space.
    #[serde(default)]
    pub transform: crate::domain::AffineTransform,
    /// The longest segment of a `record_video` task's recording, 1–180 s: a phone's
    /// `screenrecord` stops at 180 s, so the recording restarts in a new segment.
    #[serde(default = "default_segment_secs")]
    pub screenrecord_segment_secs: u64,
}

fn default_segment_secs() -> u64 {
    180
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdbConfig {
    /// Use the ADB backend at all.
    pub enabled: bool,
    /// The adb server, `host:port` (IPv4).
    pub server: std::net::SocketAddrV4,
    /// The adb program (for starting a local server and for `doctor`).
    pub adb_path: String,
    /// Pool every device the adb server reports.
    pub auto_discover: bool,
    /// Serials to pool (USB serials or already-connected `host:port`).
    pub serials: Vec<String>,
    /// `host:port` addresses to `adb connect` at start.
    pub connect: Vec<String>,
    pub timeout_secs: u64,
    pub slow_timeout_secs: u64,
    /// `png` (exec-out screencap -p) or `framebuffer`.
    pub screenshot: String,
}

impl DevicesConfig {
    /// The pool's options from the configuration.
    pub fn pool_options(&self) -> crate::device::pool::PoolOptions {
        let adb = self.adb.enabled.then(|| crate::device::adb::AdbOptions {
            server: self.adb.server,
            adb_path: self.adb.adb_path.clone(),
            timeout: std::time::Duration::from_secs(self.adb.timeout_secs),
            slow_timeout: std::time::Duration::from_secs(self.adb.slow_timeout_secs),
            screenshot: if self.adb.screenshot == "framebuffer" {
                crate::device::adb::ScreenshotMethod::Framebuffer
            } else {
                crate::device::adb::ScreenshotMethod::Png
            },
            ..Default::default()
        });
        crate::device::pool::PoolOptions {
            sims: self.sim.clone(),
            adb,
            adb_serials: self.adb.serials.clone(),
            adb_connect: self.adb.connect.clone(),
            auto_discover: self.adb.enabled && self.adb.auto_discover,
            health_interval: std::time::Duration::from_secs(self.health_interval_secs.max(1)),
            quarantine_after: self.quarantine_after.max(1),
            ..Default::default()
        }
    }
}

/// What a token may do (`server::scope`); each includes the ones before it. The name
/// (`as_str`) is derived.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Deserialize,
    serde::Serialize,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Scope {
    Read,
    Operate,
    Admin,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One entry of `server.tokens`: a plain token (scope `admin`, no name), or a table
/// `{ token = "…", scope = "operate", name = "ci" }`.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum TokenEntry {
    Plain(String),
    Scoped(ScopedToken),
}

#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopedToken {
    pub token: String,
    pub scope: Scope,
    #[serde(default)]
    pub name: Option<String>,
}

impl From<&str> for TokenEntry {
    fn from(t: &str) -> Self {
        TokenEntry::Plain(t.to_string())
    }
}

impl From<String> for TokenEntry {
    fn from(t: String) -> Self {
        TokenEntry::Plain(t)
    }
}

impl TokenEntry {
    pub fn secret(&self) -> &str {
        match self {
            TokenEntry::Plain(t) => t.trim(),
            TokenEntry::Scoped(s) => s.token.trim(),
        }
    }

    pub fn scope(&self) -> Scope {
        match self {
            TokenEntry::Plain(_) => Scope::Admin,
            TokenEntry::Scoped(s) => s.scope,
        }
    }

    pub fn name(&self) -> Option<&str> {
        match self {
            TokenEntry::Plain(_) => None,
            TokenEntry::Scoped(s) => s.name.as_deref(),
        }
    }
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    pub tokens: Vec<TokenEntry>,
    pub request_timeout_secs: u64,
    pub body_limit_bytes: usize,
    pub cors_origins: Vec<String>,
    pub shutdown_grace_secs: u64,
    /// Serve `/docs` and `/openapi.json` without a token (they hold no secret).
    pub public_docs: bool,
    /// Longest time from a request's first byte to the end of its headers.
    pub header_read_timeout_secs: u64,
    /// Longest time a connection may wait, sending nothing, for its (next) request.
    pub idle_timeout_secs: u64,
    /// Connections served at once (WebSockets and SSE streams included). When all are
    /// taken, an idle connection is closed to make room, else the new one gets 503.
    pub max_connections: usize,
    /// Connections one client address may hold at once, before authentication.
    #[serde(default = "default_max_connections_per_ip")]
    pub max_connections_per_ip: usize,
    /// New connections one client address may open a second, before authentication,
    /// once its burst is spent; a connection whose request succeeds gives its place back.
    /// 0 turns the limit off.
    #[serde(default = "default_connection_rate_per_ip")]
    pub connection_rate_per_ip: f64,
    /// New connections one client address may open at once before the rate applies.
    #[serde(default = "default_connection_burst_per_ip")]
    pub connection_burst_per_ip: u32,
    /// Streams (SSE, WebSocket) one token may hold open at once (no tokens: all clients
    /// together).
    #[serde(default = "default_max_streams_per_token")]
    pub max_streams_per_token: usize,
    /// Host names (besides `localhost` and the bound address) requests may name in
    /// `Host`; `*` accepts any (DNS rebinding protection off).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

fn default_max_connections_per_ip() -> usize {
    128
}

fn default_connection_rate_per_ip() -> f64 {
    10.0
}

fn default_connection_burst_per_ip() -> u32 {
    256
}

fn default_max_streams_per_token() -> usize {
    256
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
    pub level: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

// Tokens are secrets: Debug shows how many there are, never what they are.
impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("bind", &self.bind)
            .field("tokens", &format_args!("[{} redacted]", self.tokens.len()))
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("body_limit_bytes", &self.body_limit_bytes)
            .field("cors_origins", &self.cors_origins)
            .field("shutdown_grace_secs", &self.shutdown_grace_secs)
            .field("public_docs", &self.public_docs)
            .field("header_read_timeout_secs", &self.header_read_timeout_secs)
            .field("idle_timeout_secs", &self.idle_timeout_secs)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("server", &self.server)
            .field("storage", &self.storage)
            .field("log", &self.log)
            .field("devices", &self.devices)
            .field("runner", &self.runner)
            .field("scheduler", &self.scheduler)
            .field("agent", &self.agent)
            .field("mcp", &self.mcp)
            .finish()
    }
}

/// Command-line overrides, applied last.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub bind: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {path} not found")]
    MissingFile { path: PathBuf },
    #[error("invalid configuration: {0}")]
    Invalid(#[from] config::ConfigError),
    #[error("invalid configuration: {0}")]
    Value(String),
}

impl Config {
    /// Loads the layered configuration. `local_dir` is where `local.toml` is looked for
    /// (`./config` for the binary).
    pub fn load(local_dir: &Path, o: &Overrides) -> Result<Self, ConfigError> {
        Self::load_with_env(local_dir, o, std::env::vars())
    }

    /// As `load`, with the environment given explicitly (tests must not mutate the
    /// process environment).
    pub fn load_with_env(
        local_dir: &Path,
        o: &Overrides,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut b = config::Config::builder()
            .add_source(config::File::from_str(
                DEFAULT_TOML,
                config::FileFormat::Toml,
            ))
            .add_source(config::File::from(local_dir.join("local.toml")).required(false));
        // The user's layers alone, to tell their choices from the defaults.
        let mut user = config::Config::builder()
            .add_source(config::File::from(local_dir.join("local.toml")).required(false));
        if let Some(p) = &o.config_file {
            if !p.exists() {
                return Err(ConfigError::MissingFile { path: p.clone() });
            }
            b = b.add_source(config::File::from(p.as_path()));
            user = user.add_source(config::File::from(p.as_path()));
        }
        let vars: config::Map<String, String> = env
            .into_iter()
            // Only DROIDPILOT_SECTION__KEY is configuration; other DROIDPILOT_* variables
            // (DROIDPILOT_REQUIRE_ADB for the tests) are switches read elsewhere.
            .filter(|(k, _)| {
                k.strip_prefix("DROIDPILOT_")
                    .is_some_and(|rest| rest.contains("__"))
            })
            .collect();
        user = user.add_source(
            config::Environment::with_prefix("DROIDPILOT")
                .prefix_separator("_")
                .separator("__")
                .source(Some(vars.clone())),
        );
        b = b.add_source(
            config::Environment::with_prefix("DROIDPILOT")
                .prefix_separator("_")
                .separator("__")
                .list_separator(",")
                .with_list_parse_key("server.tokens")
                .with_list_parse_key("server.cors_origins")
                .with_list_parse_key("server.allowed_hosts")
                .with_list_parse_key("devices.adb.serials")
                .with_list_parse_key("devices.adb.connect")
                .with_list_parse_key("agent.allowed_base_urls")
                .with_list_parse_key("webhooks.allowed_hosts")
                .try_parsing(true)
                .source(Some(vars)),
        );
        if let Some(bind) = o.bind {
            b = b.set_override("server.bind", bind.to_string())?;
        }
        if let Some(d) = &o.data_dir {
            b = b.set_override("storage.data_dir", d.to_string_lossy().to_string())?;
        }
        if let Some(f) = o.log_format {
            b = b.set_override(
                "log.format",
                if f == LogFormat::Json { "json" } else { "text" },
            )?;
        }
        let mut cfg: Config = b.build()?.try_deserialize()?;
        // The dashboard's preset base URLs are the operator's: keys may go there.
        cfg.agent.operator_urls = (cfg.dashboard.models.iter())
            .filter_map(|m| Some((m.provider, m.base_url.clone()?)))
            .collect();
        cfg.chosen = ChosenModels::of(&user.build()?);
        if let Some(profile) = cfg.devices.sim_latency_profile {
            for sim in &mut cfg.devices.sim {
                sim.latency_profile = profile;
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.devices.transform.check().map_err(ConfigError::Value)?;
        if self.server.tokens.iter().any(|t| t.secret().len() < 8) {
            return Err(ConfigError::Value(
                "server.tokens: every token must have at least 8 characters (generate one with `openssl rand -hex 32`)".into(),
            ));
        }
        if let Some(t) = self.server.tokens.iter().find(|t| {
            t.name()
                .is_some_and(|n| n.is_empty() || n.len() > 64 || n.chars().any(char::is_control))
        }) {
            return Err(ConfigError::Value(format!(
                "server.tokens: the name of a `{}` token must be 1-64 characters with no control characters",
                t.scope().as_str()
            )));
        }
        if self.server.body_limit_bytes < 1024 {
            return Err(ConfigError::Value(
                "server.body_limit_bytes must be at least 1024".into(),
            ));
        }
        if !matches!(self.devices.adb.screenshot.as_str(), "png" | "framebuffer") {
            return Err(ConfigError::Value(format!(
                "devices.adb.screenshot: `{}` is neither `png` nor `framebuffer`",
                self.devices.adb.screenshot
            )));
        }
        let mut serials = std::collections::HashSet::new();
        for s in &self.devices.sim {
            s.validate()
                .map_err(|e| ConfigError::Value(format!("devices.sim `{}`: {e}", s.serial)))?;
            if !serials.insert(s.serial.clone()) {
                return Err(ConfigError::Value(format!(
                    "devices.sim: serial `{}` is used twice; give each virtual phone its own serial",
                    s.serial
                )));
            }
        }
        if self.server.header_read_timeout_secs == 0
            || self.server.idle_timeout_secs == 0
            || self.server.max_connections == 0
            || self.server.max_connections_per_ip == 0
            || self.server.max_streams_per_token == 0
        {
            return Err(ConfigError::Value(
                "server.header_read_timeout_secs, server.idle_timeout_secs, server.max_connections, server.max_connections_per_ip and server.max_streams_per_token must be at least 1"
                    .into(),
            ));
        }
        let rate = self.server.connection_rate_per_ip;
        if !rate.is_finite()
            || rate < 0.0
            || (rate > 0.0 && self.server.connection_burst_per_ip == 0)
        {
            return Err(ConfigError::Value(
                "server.connection_rate_per_ip must be 0 (off) or positive, and server.connection_burst_per_ip at least 1 when it is on"
                    .into(),
            ));
        }
        if self.server.request_timeout_secs == 0 {
            return Err(ConfigError::Value(
                "server.request_timeout_secs must be at least 1".into(),
            ));
        }
        if !(1..=180).contains(&self.devices.screenrecord_segment_secs) {
            return Err(ConfigError::Value(format!(
                "devices.screenrecord_segment_secs must be 1-180 (Android's screenrecord stops at 180 s), not {}",
                self.devices.screenrecord_segment_secs
            )));
        }
        self.agent
            .check_screenshot_encodings()
            .map_err(ConfigError::Value)?;
        for u in &self.agent.allowed_base_urls {
            crate::agent::servers::check_allowed_entry(u).map_err(ConfigError::Value)?;
        }
        self.webhooks.allow_list().map_err(ConfigError::Value)?;
        self.mcp.validate().map_err(ConfigError::Value)?;
        self.cluster.validate().map_err(ConfigError::Value)?;
        if self.storage.pool_size == 0 {
            return Err(ConfigError::Value(
                "storage.pool_size must be at least 1".into(),
            ));
        }
        self.store_location()?;
        Ok(())
    }

    /// The SQLite file `database` names under `data_dir` (what `sqlite://` URLs bypass).
    pub fn database_path(&self) -> PathBuf {
        self.storage.data_dir.join(&self.storage.database)
    }

    /// The database to open: `storage.database_url` when set, else the SQLite file.
    pub fn store_location(&self) -> Result<crate::store::StoreLocation, ConfigError> {
        let url = self.storage.database_url.trim();
        if url.is_empty() {
            return Ok(crate::store::StoreLocation::Sqlite(self.database_path()));
        }
        crate::store::StoreLocation::from_url(url, self.storage.pool_size)
            .map_err(|e| ConfigError::Value(format!("storage.database_url: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scope refusals name a scope as the config file spells it.
    #[test]
    fn scope_names_are_the_config_names() {
        for (s, name) in [
            (Scope::Read, "read"),
            (Scope::Operate, "operate"),
            (Scope::Admin, "admin"),
        ] {
            assert_eq!(s.as_str(), name);
            assert_eq!(serde_json::to_value(s).unwrap(), name);
        }
    }

    fn load(env: &[(&str, &str)], o: Overrides) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        Config::load_with_env(
            dir.path(),
            &o,
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    #[test]
    fn defaults_need_no_files() {
        let c = load(&[], Overrides::default()).unwrap();
        assert_eq!(c.server.bind.to_string(), "127.0.0.1:8080");
        assert!(c.server.tokens.is_empty());
        assert_eq!(c.database_path(), PathBuf::from("./data/droidpilot.db"));
        assert_eq!(c.log.format, LogFormat::Text);
    }

    #[test]
    fn env_and_flags_override_in_order() {
        let c = load(
            &[
                ("DROIDPILOT_SERVER__BIND", "0.0.0.0:9000"),
                ("DROIDPILOT_SERVER__TOKENS", "secret-one,secret-two"),
                ("DROIDPILOT_LOG__FORMAT", "json"),
            ],
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.server.bind.to_string(), "0.0.0.0:9000");
        let plain: Vec<&str> = c.server.tokens.iter().map(TokenEntry::secret).collect();
        assert_eq!(plain, vec!["secret-one", "secret-two"]);
        assert!(c.server.tokens.iter().all(|t| t.scope() == Scope::Admin));
        assert_eq!(c.log.format, LogFormat::Json);
        let c = load(
            &[("DROIDPILOT_SERVER__BIND", "0.0.0.0:9000")],
            Overrides {
                bind: Some("127.0.0.1:1".parse().unwrap()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            c.server.bind.to_string(),
            "127.0.0.1:1",
            "flags beat the environment"
        );
    }

    #[test]
    fn other_droidpilot_variables_are_not_configuration() {
        let c = load(
            &[
                ("DROIDPILOT_REQUIRE_ADB", "1"),
                ("DROIDPILOT_LOG__LEVEL", "debug"),
            ],
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.log.level, "debug");
    }

    #[test]
    fn local_and_explicit_files_layer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("local.toml"),
            "[server]\nrequest_timeout_secs = 5\n",
        )
        .unwrap();
        let extra = dir.path().join("extra.toml");
        std::fs::write(&extra, "[storage]\ndata_dir = \"/var/lib/droidpilot\"\n").unwrap();
        let o = Overrides {
            config_file: Some(extra),
            ..Default::default()
        };
        let c = Config::load_with_env(dir.path(), &o, std::iter::empty()).unwrap();
        assert_eq!(c.server.request_timeout_secs, 5);
        assert_eq!(c.storage.data_dir, PathBuf::from("/var/lib/droidpilot"));
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = load(
            &[("DROIDPILOT_SERVER__BIND", "not-an-address")],
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bind"), "{e}");
        let e = load(
            &[("DROIDPILOT_SERVER__TOKENS", "short")],
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("server.tokens"), "{e}");
        let o = Overrides {
            config_file: Some("/nonexistent/x.toml".into()),
            ..Default::default()
        };
        assert!(matches!(load(&[], o), Err(ConfigError::MissingFile { .. })));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("local.toml"), "[server]\nbnd = \"x\"\n").unwrap();
        let e = Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bnd"), "unknown keys are refused by name: {e}");
    }

    #[test]
    fn scoped_tokens_are_tables_with_a_scope_and_a_name() {
        let dir = tempfile::tempdir().unwrap();
        let toml = "[[server.tokens]]\ntoken = \"ci-token-123\"\nscope = \"operate\"\nname = \"ci\"\n\
                    [[server.tokens]]\ntoken = \"viewer-token\"\nscope = \"read\"\n";
        std::fs::write(dir.path().join("local.toml"), toml).unwrap();
        let c =
            Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty()).unwrap();
        let got: Vec<(&str, Scope, Option<&str>)> = c
            .server
            .tokens
            .iter()
            .map(|t| (t.secret(), t.scope(), t.name()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("ci-token-123", Scope::Operate, Some("ci")),
                ("viewer-token", Scope::Read, None)
            ]
        );
        let bad = toml.replace("\"operate\"", "\"root\"");
        std::fs::write(dir.path().join("local.toml"), bad).unwrap();
        assert!(
            Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty()).is_err(),
            "an unknown scope is refused"
        );
    }

    #[test]
    fn virtual_phones_default_to_one_and_files_replace_the_list() {
        let c = load(&[], Overrides::default()).unwrap();
        assert_eq!(
            c.devices
                .sim
                .iter()
                .map(|s| s.serial.as_str())
                .collect::<Vec<_>>(),
            vec!["sim-1"]
        );
        assert!(c.devices.adb.enabled && c.devices.adb.auto_discover);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("local.toml"),
            "[[devices.sim]]\nserial = \"a\"\n[[devices.sim]]\nserial = \"b\"\nwidth = 720\nheight = 1600\n[devices.adb]\nenabled = false\n",
        )
        .unwrap();
        let c =
            Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty()).unwrap();
        assert_eq!(
            c.devices
                .sim
                .iter()
                .map(|s| s.serial.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert_eq!(c.devices.sim[1].width, 720);
        assert!(c.devices.pool_options().adb.is_none());
        std::fs::write(dir.path().join("local.toml"), "[devices]\nsim = []\n").unwrap();
        let c =
            Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty()).unwrap();
        assert!(
            c.devices.sim.is_empty(),
            "`sim = []` removes the default phone"
        );
        std::fs::write(
            dir.path().join("local.toml"),
            "[[devices.sim]]\nserial = \"x\"\n[[devices.sim]]\nserial = \"x\"\n",
        )
        .unwrap();
        let e = Config::load_with_env(dir.path(), &Overrides::default(), std::iter::empty())
            .unwrap_err()
            .to_string();
        assert!(e.contains("used twice"), "{e}");
    }

    #[test]
    fn the_database_url_chooses_the_store_and_its_password_stays_hidden() {
        let c = load(&[], Overrides::default()).unwrap();
        assert_eq!(
            c.store_location().unwrap(),
            crate::store::StoreLocation::Sqlite("./data/droidpilot.db".into())
        );
        let url = "postgres://dp:pw-hunter22@db:5432/dp";
        let c = load(
            &[("DROIDPILOT_STORAGE__DATABASE_URL", url)],
            Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.store_location().unwrap().backend(), "postgres");
        assert!(!format!("{c:?}").contains("hunter22"), "{c:?}");
        let e = load(
            &[(
                "DROIDPILOT_STORAGE__DATABASE_URL",
                "mysql://u:pw-hunter22@h/d",
            )],
            Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("storage.database_url") && !e.contains("hunter22"),
            "{e}"
        );
    }

    #[test]
    fn debug_never_shows_tokens() {
        let c = load(
            &[("DROIDPILOT_SERVER__TOKENS", "supersecrettoken")],
            Overrides::default(),
        )
        .unwrap();
        let dbg = format!("{c:?}");
        assert!(
            !dbg.contains("supersecrettoken") && dbg.contains("1 redacted"),
            "{dbg}"
        );
    }
}
