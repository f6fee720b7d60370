//! `[[mcp.servers]]`: the MCP servers the agent's `mcp_call` may reach, each a stdio
//! command or a Streamable HTTP URL, checked at start-up so a mistake names its key.
//! Header and `env` values are secrets: `Debug` and `describe` show their names only.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Deserialize;

/// The `[mcp]` table.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    #[serde(default)]
    pub servers: Vec<McpServerConfig>,
    /// How long start-up waits for the servers' first connection, so that the first
    /// tasks are offered their tools; a server not up by then keeps being retried in
    /// the background (and is offered from the next task on).
    #[serde(default = "default_startup_wait_secs")]
    pub startup_wait_secs: u64,
}

fn default_startup_wait_secs() -> u64 {
    10
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            startup_wait_secs: default_startup_wait_secs(),
        }
    }
}

/// One `[[mcp.servers]]` entry as written.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name: the prefix of its colliding tools, and what doctor shows.
    pub name: String,
    /// A program to run; the server speaks MCP on its stdin/stdout.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for the command (values are secrets).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A Streamable HTTP endpoint (`http://…/mcp`).
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request (values are secrets), e.g. `Authorization`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Bound on one call to this server's tools (default: `[runner] mcp_timeout_secs`).
    #[serde(default)]
    pub call_timeout_secs: Option<u64>,
}

/// How a server is reached, once checked.
#[derive(Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// The transport, or why the entry is wrong (naming the key).
    pub fn transport(&self) -> Result<Transport, String> {
        let key = |k: &str| format!("mcp.servers `{}`: {k}", self.name);
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(key(
                "has both `command` and `url`; give one (a stdio command or a Streamable HTTP URL)",
            )),
            (None, None) => Err(key(
                "needs `command` (a stdio server) or `url` (a Streamable HTTP server)",
            )),
            (Some(c), None) => {
                if !self.headers.is_empty() {
                    return Err(key(
                        "`headers` is for `url` servers; use `env` for a command",
                    ));
                }
                if c.trim().is_empty() {
                    return Err(key("`command` is empty"));
                }
                Ok(Transport::Stdio {
                    command: c.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                })
            }
            (None, Some(u)) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err(key("`args` and `env` are for `command` servers"));
                }
                let parsed = reqwest::Url::parse(u)
                    .map_err(|e| key(&format!("`url` is not a URL ({e})")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(key("`url` must start with http:// or https://"));
                }
                for (name, value) in &self.headers {
                    let bad = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err()
                        || reqwest::header::HeaderValue::from_str(value).is_err();
                    if bad {
                        return Err(key(&format!("header `{name}` is not a valid HTTP header")));
                    }
                }
                Ok(Transport::Http {
                    url: u.clone(),
                    headers: self.headers.clone(),
                })
            }
        }
    }

    pub fn call_timeout(&self) -> Option<Duration> {
        self.call_timeout_secs.map(Duration::from_secs)
    }

    /// How the server is reached, without secrets: the program (not its arguments,
    /// which may hold tokens) and env names, or the URL without its query and header
    /// names.
    pub fn describe(&self) -> String {
        let names = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>().join(", ");
        match (&self.command, &self.url) {
            (Some(c), _) if self.env.is_empty() => format!("stdio `{c}`"),
            (Some(c), _) => format!("stdio `{c}` (env: {})", names(&self.env)),
            (None, Some(u)) => {
                let shown = reqwest::Url::parse(u).map_or_else(
                    |_| "(invalid url)".to_string(),
                    |mut p| {
                        p.set_query(None);
                        let _ = p.set_password(None);
                        let _ = p.set_username("");
                        p.to_string()
                    },
                );
                match self.headers.is_empty() {
                    true => format!("http {shown}"),
                    false => format!("http {shown} (headers: {})", names(&self.headers)),
                }
            }
            (None, None) => "(no transport)".into(),
        }
    }
}

impl McpConfig {
    /// Every entry has one transport, a usable name, and no name is used twice.
    pub fn validate(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for s in &self.servers {
            let ok = !s.name.is_empty()
                && s.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(format!(
                    "mcp.servers: name `{}` must be letters, digits, `_` or `-` (it prefixes tool names as `name.tool`)",
                    s.name
                ));
            }
            if !names.insert(s.name.as_str()) {
                return Err(format!(
                    "mcp.servers: name `{}` is used twice; give each server its own name",
                    s.name
                ));
            }
            s.transport()?;
            if s.call_timeout_secs == Some(0) {
                return Err(format!(
                    "mcp.servers `{}`: call_timeout_secs must be at least 1",
                    s.name
                ));
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.describe())
            .field("args", &format_args!("[{} redacted]", self.args.len()))
            .field("call_timeout_secs", &self.call_timeout_secs)
            .finish()
    }
}

impl std::fmt::Debug for McpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConfig")
            .field("servers", &self.servers)
            .field("startup_wait_secs", &self.startup_wait_secs)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `toml` as `config/local.toml` through the real configuration loader.
    fn parse(toml: &str) -> Result<McpConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("local.toml"), toml).unwrap();
        let o = crate::config::Overrides::default();
        crate::config::Config::load_with_env(dir.path(), &o, std::iter::empty())
            .map(|c| c.mcp)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn each_mistake_names_its_key() {
        let cases = [
            ("[[mcp.servers]]\nname = \"a\"\n", "needs `command`"),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
                "both `command` and `url`",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\nurl = \"http://h/mcp\"\n",
                "`a` is used twice",
            ),
            ("[[mcp.servers]]\nname = \"a\"\ncomand = \"x\"\n", "comand"),
            (
                "[[mcp.servers]]\nname = \"a.b\"\ncommand = \"x\"\n",
                "name `a.b`",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\nurl = \"ftp://h\"\n",
                "http://",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\nurl = \"http://h\"\nenv = {K = \"v\"}\n",
                "`env` are for `command`",
            ),
        ];
        for (toml, expected) in cases {
            let e = parse(toml)
                .err()
                .unwrap_or_else(|| panic!("accepted: {toml}"));
            assert!(e.contains(expected), "{toml}: {e}");
        }
    }

    #[test]
    fn secrets_stay_out_of_descriptions() {
        let c = parse(
            "[[mcp.servers]]\nname = \"a\"\nurl = \"https://u:pw@h/mcp?key=s3cret\"\nheaders = {Authorization = \"Bearer s3cret\"}\n\
             [[mcp.servers]]\nname = \"b\"\ncommand = \"srv\"\nargs = [\"--token\", \"s3cret\"]\nenv = {API_KEY = \"s3cret\"}\n",
        )
        .unwrap();
        let shown = format!(
            "{c:?} {} {}",
            c.servers[0].describe(),
            c.servers[1].describe()
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains("pw"),
            "{shown}"
        );
        assert!(
            shown.contains("Authorization") && shown.contains("API_KEY"),
            "{shown}"
        );
    }
}
