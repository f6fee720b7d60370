//! `[[actions.hooks]]`: HTTP middleware around each device action of a task.
//!
//! Before an action a hook is POSTed `{"when": "before", "task_id", "device", "step",
//! "action", "screen": {"summary", "app", "activity"}}` and answers
//! `{"decision": "continue"}`, `{"decision": "skip", "reason": "…"}` or
//! `{"decision": "rewrite", "action": {…}}`; after it, the same with `"when": "after"`
//! and `"outcome": {"ok", "detail" | "error"}` (its answer is not read). The action sent
//! is the step's recorded one: text typed into a password field and secret parameters
//! masked. No key, token or header of the server's goes with it.
//!
//! The URL is the operator's, and still goes by the outbound rules (`outbound`): an
//! internal address (loopback, private, link-local…) is refused at load unless
//! `actions.allowed_hosts` opens it, names resolve through `GuardedResolver`, and
//! redirects and proxies are off.
//!
//! A hook that fails (refused, unreachable, timed out, a non-2xx status, an answer that
//! is not one of the three) is handled by its `on_error`: `fail` (the default: the
//! action does not run and the step fails, because a hook that enforces a policy must
//! not be bypassed by its own outage) or `continue` (for hooks that only watch).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::outbound::{AllowList, GuardedResolver};

/// When a hook is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HookWhen {
    Before,
    After,
    #[default]
    Both,
}

impl HookWhen {
    pub fn before(self) -> bool {
        matches!(self, Self::Before | Self::Both)
    }
    pub fn after(self) -> bool {
        matches!(self, Self::After | Self::Both)
    }
}

/// What a failed hook call does to the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The action does not run; the step fails with the hook's error.
    #[default]
    Fail,
    /// The action runs as if the hook had said `continue`.
    Continue,
}

/// One hook, checked at load.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawHook")]
pub struct HookConfig {
    pub url: reqwest::Url,
    pub when: HookWhen,
    pub timeout: Duration,
    pub on_error: OnError,
    /// Internal hosts this hook may reach (`allowed_hosts`).
    allow: AllowList,
    client: reqwest::Client,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    url: String,
    #[serde(default)]
    when: HookWhen,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default)]
    on_error: OnError,
    #[serde(default)]
    allowed_hosts: Vec<String>,
}

fn default_timeout_ms() -> u64 {
    2000
}

impl TryFrom<RawHook> for HookConfig {
    type Error = String;

    fn try_from(raw: RawHook) -> Result<Self, String> {
        let at = format!("actions.hooks `{}`", raw.url);
        let url = reqwest::Url::parse(&raw.url).map_err(|e| format!("{at}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{at}: write it as http://HOST/PATH (or https://)"));
        }
        if !(1..=60_000).contains(&raw.timeout_ms) {
            return Err(format!("{at}: timeout_ms must be 1-60000"));
        }
        let allow = AllowList::parse(&raw.allowed_hosts, "actions.hooks.allowed_hosts")?;
        crate::outbound::check_literal(&url, &allow).map_err(|r| {
            format!("{at}: {r}; add the host to this hook's `allowed_hosts` to open it")
        })?;
        let timeout = Duration::from_millis(raw.timeout_ms);
        let client = client(&allow, timeout).map_err(|e| format!("{at}: {e}"))?;
        Ok(Self {
            url,
            when: raw.when,
            timeout,
            on_error: raw.on_error,
            allow,
            client,
        })
    }
}

/// A hook's answer before an action.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    Continue,
    Skip {
        #[serde(default)]
        reason: String,
    },
    /// The action to run instead, as JSON; parsed like any action by the caller.
    Rewrite {
        action: Value,
    },
}

/// What the runner tells a hook about the step.
pub struct Call<'a> {
    pub task_id: String,
    pub device: &'a str,
    pub step: u32,
    /// The action as recorded (secrets masked).
    pub action: Option<Value>,
    pub summary: &'a str,
    pub app: Option<&'a str>,
    pub activity: Option<&'a str>,
}

impl Call<'_> {
    fn body(&self, when: &str) -> Value {
        json!({
            "when": when,
            "task_id": self.task_id,
            "device": self.device,
            "step": self.step,
            "action": self.action,
            "screen": {"summary": self.summary, "app": self.app, "activity": self.activity},
        })
    }
}

impl HookConfig {
    /// The URL as events show it: no user info, no query.
    pub fn shown(&self) -> String {
        let mut u = self.url.clone();
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.set_query(None);
        u.to_string()
    }

    async fn post(&self, body: &Value) -> Result<bytes::Bytes, String> {
        crate::outbound::check_literal(&self.url, &self.allow).map_err(|r| r.to_string())?;
        let r = self.client.post(self.url.clone()).json(body).send().await;
        let r = r.map_err(|e| match e.is_timeout() {
            true => format!("no answer within {} ms", self.timeout.as_millis()),
            false => format!("cannot reach the hook: {}", without_url(&e)),
        })?;
        let status = r.status();
        if !status.is_success() {
            return Err(format!("the hook answered HTTP {}", status.as_u16()));
        }
        r.bytes().await.map_err(|e| match e.is_timeout() {
            true => format!("no answer within {} ms", self.timeout.as_millis()),
            false => format!("the hook's answer was cut: {}", without_url(&e)),
        })
    }

    /// Asks the hook about an action before it runs.
    pub async fn before(&self, call: &Call<'_>) -> Result<Decision, String> {
        let body = self.post(&call.body("before")).await?;
        serde_json::from_slice(&body).map_err(|e| {
            format!(
                "the hook's answer is not {{\"decision\": \"continue\" | \"skip\" | \"rewrite\"}}: {e}"
            )
        })
    }

    /// Tells the hook how an action went (`Ok(detail)` or `Err(message)`).
    pub async fn after(
        &self,
        call: &Call<'_>,
        outcome: &Result<Value, String>,
    ) -> Result<(), String> {
        let mut body = call.body("after");
        body["outcome"] = match outcome {
            Ok(detail) => json!({"ok": true, "detail": detail}),
            Err(e) => json!({"ok": false, "error": e}),
        };
        self.post(&body).await.map(|_| ())
    }
}

/// A hook's client: names resolve through the outbound guard, no proxy, no redirects.
fn client(allow: &AllowList, timeout: Duration) -> Result<reqwest::Client, String> {
    crate::run::webhooks::install_crypto();
    reqwest::Client::builder()
        .dns_resolver(std::sync::Arc::new(GuardedResolver::new(allow.clone())))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .user_agent(concat!("droidpilot/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// reqwest's error without the URL it carries (it may hold credentials).
fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(u.as_str(), "the hook");
    }
    s
}
