//! Webhooks: a finished task's [`CoordinatorResult`] POSTed as JSON to a receiver's URL,
//! signed, and retried with exponential backoff until it lands or the attempts run out.
//!
//! ## Signature scheme (what receivers check)
//!
//! Each attempt carries:
//!
//! - `X-Droidpilot-Timestamp: <unix seconds>`: when the attempt was signed;
//! - `X-Droidpilot-Signature: sha256=<hex>`: HMAC-SHA256, keyed with the shared secret,
//!   over the bytes `<timestamp>.<body>` (the timestamp header's exact text, one `.`,
//!   then the exact request body bytes, not a re-serialization of the JSON);
//! - `X-Droidpilot-Event`, `X-Droidpilot-Delivery` (one id for all attempts of a
//!   delivery, for de-duplication) and `X-Droidpilot-Attempt` (1-based).
//!
//! Signing the timestamp with the body stops replays of an old captured request: a
//! receiver checks the signature with [`verify`] and rejects timestamps too far from its
//! clock ([`verify_fresh`]; five minutes is usual). Retries are signed afresh, so a late
//! retry still passes that check. Compare signatures in constant time (as [`verify`]
//! does via `hmac::Mac::verify_slice`), never with `==`.
//!
//! With no secret configured, deliveries go out unsigned (no signature header).
//!
//! ## Retries
//!
//! Connection errors, timeouts, `429` and `5xx` are retried; `Retry-After` (seconds) on
//! a `429`/`503` replaces the next delay, capped at `backoff_max_ms`. Any other `4xx`
//! means the receiver refused this payload and sending it again would not help, so it
//! is not retried. Redirects are not followed: an HTTP client turns a redirected POST
//! into a GET, which would drop the signed body; a `3xx` is reported with its target so
//! the URL can be fixed. The schedule is `WebhookConfig::retry_policy` (a jittered
//! `RetryPolicy`) fed to backon.
//!
//! The secret never appears in logs or `Debug` output, and URLs are logged without their
//! query string or credentials (receivers often put a token there).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use backon::Retryable as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use utoipa::ToSchema;
use uuid::Uuid;

use super::result::CoordinatorResult;
use crate::domain::{RetryPolicy, TaskEvent};
use crate::outbound::{AllowList, GuardedResolver, Refusal};

type HmacSha256 = Hmac<Sha256>;

pub const SIGNATURE_HEADER: &str = "X-Droidpilot-Signature";
pub const TIMESTAMP_HEADER: &str = "X-Droidpilot-Timestamp";
pub const EVENT_HEADER: &str = "X-Droidpilot-Event";
pub const DELIVERY_HEADER: &str = "X-Droidpilot-Delivery";
pub const ATTEMPT_HEADER: &str = "X-Droidpilot-Attempt";

/// The shared signing secret. `Debug` never shows it; an empty string means "unsigned".
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    fn key(&self) -> Option<&[u8]> {
        (!self.0.is_empty()).then_some(self.0.as_bytes())
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "[none]"
        } else {
            "[redacted]"
        })
    }
}

/// `[webhooks]` in the configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where to send `task.finished` for tasks that name no URL of their own; empty: none.
    pub url: String,
    /// HMAC-SHA256 key for `X-Droidpilot-Signature`; empty: deliveries are unsigned.
    pub secret: WebhookSecret,
    /// Attempts per delivery, the first included (at least 1).
    pub max_attempts: u32,
    /// Time allowed for one attempt, connect to last response byte.
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    /// The first retry's delay; it doubles per retry up to `backoff_max_ms`.
    pub backoff_initial_ms: u64,
    pub backoff_max_ms: u64,
    /// Internal hosts webhooks may reach (`crate::outbound`): host names, addresses
    /// and ranges (`10.0.0.0/8`). Loopback, private, link-local and the like are refused
    /// otherwise; the host of `url` is always allowed (the operator wrote it).
    pub allowed_hosts: Vec<String>,
}

impl WebhookConfig {
    /// The delivery schedule: doubling from `backoff_initial_ms` up to `backoff_max_ms`,
    /// with jitter, `max_attempts - 1` retries.
    /// The hosts deliveries may reach although internal: `allowed_hosts` and the host
    /// of the configured `url`.
    pub fn allow_list(&self) -> Result<AllowList, String> {
        let mut list = AllowList::parse(&self.allowed_hosts, "webhooks.allowed_hosts")?;
        if let Some(host) = reqwest::Url::parse(&self.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
        {
            list.add(&host)
                .map_err(|why| format!("webhooks.url: the host `{host}` {why}"))?;
        }
        Ok(list)
    }

    /// Refuses a webhook URL whose host is internal and not allowed, as a delivery
    /// would; the message names `field`. A name that does not resolve now (a DNS
    /// hiccup) is let through: each delivery resolves and checks it again.
    pub async fn check_url(&self, url: &str, field: &str) -> Result<(), String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("{field}: {e}"))?;
        let allow = self.allow_list()?;
        match crate::outbound::check_url(&parsed, &allow).await {
            Ok(()) | Err(Refusal::Unresolved { .. }) => Ok(()),
            Err(e) => Err(format!("{field}: {e}")),
        }
    }

    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy::new(
            Duration::from_millis(self.backoff_initial_ms),
            Duration::from_millis(self.backoff_max_ms),
            self.max_attempts.saturating_sub(1),
        )
        .with_jitter()
    }
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            secret: WebhookSecret::default(),
            max_attempts: 5,
            timeout_ms: 10_000,
            connect_timeout_ms: 5_000,
            backoff_initial_ms: 1_000,
            backoff_max_ms: 60_000,
            allowed_hosts: Vec::new(),
        }
    }
}

/// What a receiver gets: event metadata beside the result's fields (flattened, so a
/// coordinator reads `task_id`, `status`… at the top level).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookPayload {
    /// `task.finished`.
    pub event: String,
    /// The same for every attempt of one delivery; receivers de-duplicate on it.
    pub delivery_id: Uuid,
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    #[serde(flatten)]
    pub result: CoordinatorResult,
}

impl WebhookPayload {
    pub fn task_finished(result: CoordinatorResult) -> Self {
        Self {
            event: TaskEvent::FINISHED.into(),
            delivery_id: Uuid::now_v7(),
            occurred_at: chrono::Utc::now(),
            result,
        }
    }
}

/// A delivery that landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub attempts: u32,
    pub status: u16,
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(
        "webhook URL `{url}` is not usable: {reason}. Use an absolute http(s) URL such as https://example.com/hooks/droidpilot"
    )]
    InvalidUrl { url: String, reason: String },
    #[error("webhook configuration is invalid: {0}")]
    Config(String),
    #[error(
        "webhook to {url} refused: {refusal}. Add the host to [webhooks] allowed_hosts to deliver there"
    )]
    Refused { url: String, refusal: Refusal },
    #[error("cannot encode the webhook payload: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(
        "webhook to {url} was refused with HTTP {status} after {attempts} attempt(s), not retried: {detail}"
    )]
    Rejected {
        url: String,
        status: u16,
        attempts: u32,
        detail: String,
    },
    #[error(
        "webhook to {url} gave up after {attempts} attempt(s); last error: {last}. Check that the receiver is up and answers 2xx within the timeout"
    )]
    GaveUp {
        url: String,
        attempts: u32,
        last: String,
    },
}

/// The signature header's value for `body` sent at `timestamp`: `sha256=<hex>`.
pub fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    format!(
        "sha256={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// Checks a delivery as a receiver would: `signature` is the `X-Droidpilot-Signature`
/// header, `timestamp` the `X-Droidpilot-Timestamp` header, `body` the raw request body.
/// Constant-time; false for any malformed header.
pub fn verify(secret: &[u8], timestamp: &str, body: &[u8], signature: &str) -> bool {
    let Some(hex_sig) = signature.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(sig) = hex::decode(hex_sig) else {
        return false;
    };
    mac(secret, timestamp, body).verify_slice(&sig).is_ok()
}

/// [`verify`], and the timestamp is within `tolerance_secs` of `now_unix` (replay guard).
pub fn verify_fresh(
    secret: &[u8],
    timestamp: &str,
    body: &[u8],
    signature: &str,
    now_unix: i64,
    tolerance_secs: u64,
) -> bool {
    let Ok(ts) = timestamp.trim().parse::<i64>() else {
        return false;
    };
    ts.abs_diff(now_unix) <= tolerance_secs && verify(secret, timestamp, body, signature)
}

/// `scheme://host[:port]/path`, without credentials or query, for logs and errors.
pub fn redact_url(url: &reqwest::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Why one attempt failed.
#[derive(Debug)]
enum AttemptError {
    /// Connection refused/reset, DNS, timeout, a body that could not be sent.
    Transport(String),
    /// 429 or 5xx.
    Retryable {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// Any other non-2xx.
    Final { status: u16, detail: String },
}

impl AttemptError {
    fn retryable(&self) -> bool {
        !matches!(self, AttemptError::Final { .. })
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptError::Transport(e) => f.write_str(e),
            AttemptError::Retryable { status, .. } => write!(f, "HTTP {status}"),
            AttemptError::Final { status, detail } => write!(f, "HTTP {status}: {detail}"),
        }
    }
}

/// Sends webhooks. Cheap to clone (the HTTP client is shared).
#[derive(Debug, Clone)]
pub struct WebhookSender {
    client: reqwest::Client,
    cfg: WebhookConfig,
    allow: AllowList,
}

pub(crate) fn install_crypto() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // Another part of the process may have installed one already; that is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl WebhookSender {
    pub fn new(cfg: WebhookConfig) -> Result<Self, WebhookError> {
        if cfg.max_attempts == 0 {
            return Err(WebhookError::Config(
                "`webhooks.max_attempts` must be at least 1".into(),
            ));
        }
        if cfg.timeout_ms == 0 || cfg.connect_timeout_ms == 0 {
            return Err(WebhookError::Config(
                "`webhooks.timeout_ms` and `webhooks.connect_timeout_ms` must be above 0".into(),
            ));
        }
        if cfg.backoff_max_ms < cfg.backoff_initial_ms {
            return Err(WebhookError::Config(format!(
                "`webhooks.backoff_max_ms` ({}) is below `webhooks.backoff_initial_ms` ({})",
                cfg.backoff_max_ms, cfg.backoff_initial_ms
            )));
        }
        let allow = cfg.allow_list().map_err(WebhookError::Config)?;
        install_crypto();
        // Names resolve through the guard: the connection goes to the address checked.
        let client = reqwest::Client::builder()
            .dns_resolver(std::sync::Arc::new(GuardedResolver::new(allow.clone())))
            .no_proxy()
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("droidpilot/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| WebhookError::Config(format!("cannot build an HTTP client: {e}")))?;
        Ok(Self { client, cfg, allow })
    }

    pub fn config(&self) -> &WebhookConfig {
        &self.cfg
    }

    /// Delivers `payload` to `url`, retrying as the module doc says.
    pub async fn deliver(
        &self,
        url: &str,
        payload: &WebhookPayload,
    ) -> Result<Delivered, WebhookError> {
        let body = serde_json::to_vec(payload)?;
        self.deliver_bytes(url, &payload.event, payload.delivery_id, body)
            .await
    }

    /// Delivers an already-encoded body (what gets signed is exactly `body`).
    pub async fn deliver_bytes(
        &self,
        url: &str,
        event: &str,
        delivery_id: Uuid,
        body: Vec<u8>,
    ) -> Result<Delivered, WebhookError> {
        let parsed = reqwest::Url::parse(url).map_err(|e| WebhookError::InvalidUrl {
            url: crate::domain::task::redact_url_secrets(url),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(WebhookError::InvalidUrl {
                url: redact_url(&parsed),
                reason: format!("scheme `{}` is not http or https", parsed.scheme()),
            });
        }
        let shown = redact_url(&parsed);
        // An address literal never reaches the resolver: checked here, before any attempt.
        crate::outbound::check_literal(&parsed, &self.allow).map_err(|refusal| {
            tracing::warn!(url = %shown, %refusal, "webhook refused: internal host");
            WebhookError::Refused {
                url: shown.clone(),
                refusal,
            }
        })?;
        let body = bytes::Bytes::from(body);
        let attempts = AtomicU32::new(0);
        let max_delay = Duration::from_millis(self.cfg.backoff_max_ms);
        let schedule = self.cfg.retry_policy();
        let outcome = (|| {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            self.attempt(parsed.clone(), event, delivery_id, body.clone(), n)
        })
        .retry(schedule)
        .sleep(tokio::time::sleep)
        .when(AttemptError::retryable)
        .adjust(|e, next| match (e, next) {
            (
                AttemptError::Retryable {
                    retry_after: Some(ra),
                    ..
                },
                Some(_),
            ) => Some((*ra).min(max_delay)),
            (_, next) => next,
        })
        .notify(|e, wait| {
            tracing::warn!(url = %shown, error = %e, retry_in_ms = wait.as_millis() as u64, "webhook attempt failed; retrying");
        })
        .await;
        let attempts = attempts.load(Ordering::SeqCst);
        match outcome {
            Ok(status) => {
                tracing::info!(url = %shown, event, %delivery_id, attempts, status, "webhook delivered");
                Ok(Delivered { attempts, status })
            }
            Err(AttemptError::Final { status, detail }) => {
                tracing::warn!(url = %shown, event, %delivery_id, status, "webhook refused by the receiver");
                Err(WebhookError::Rejected {
                    url: shown,
                    status,
                    attempts,
                    detail,
                })
            }
            Err(e) => {
                tracing::warn!(url = %shown, event, %delivery_id, attempts, error = %e, "webhook gave up");
                Err(WebhookError::GaveUp {
                    url: shown,
                    attempts,
                    last: e.to_string(),
                })
            }
        }
    }

    async fn attempt(
        &self,
        url: reqwest::Url,
        event: &str,
        delivery_id: Uuid,
        body: bytes::Bytes,
        n: u32,
    ) -> Result<u16, AttemptError> {
        let ts = chrono::Utc::now().timestamp().to_string();
        let mut req = self
            .client
            .post(url)
            .timeout(Duration::from_millis(self.cfg.timeout_ms))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(EVENT_HEADER, event)
            .header(DELIVERY_HEADER, delivery_id.to_string())
            .header(ATTEMPT_HEADER, n.to_string())
            .header(TIMESTAMP_HEADER, &ts);
        if let Some(key) = self.cfg.secret.key() {
            req = req.header(SIGNATURE_HEADER, sign(key, &ts, &body));
        }
        let resp = req.body(body).send().await.map_err(|e| {
            // reqwest's message can include the URL with its query; keep only the kind.
            let kind = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "could not connect"
            } else {
                "request failed"
            };
            AttemptError::Transport(format!("{kind}: {}", e.without_url()))
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(status.as_u16());
        }
        if status.as_u16() == 429 || status.is_server_error() {
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Err(AttemptError::Retryable {
                status: status.as_u16(),
                retry_after,
            });
        }
        let detail = if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?");
            format!(
                "redirected to `{to}`; configure the final URL (redirects are not followed, they would drop the signed body)"
            )
        } else {
            let text = resp.text().await.unwrap_or_default();
            let excerpt: String = text.chars().take(200).collect();
            if excerpt.is_empty() {
                "the receiver gave no reason".into()
            } else {
                excerpt
            }
        };
        Err(AttemptError::Final {
            status: status.as_u16(),
            detail,
        })
    }
}

/// Follows the endings this process publishes and, for each `task.finished`, posts the task's
/// `CoordinatorResult` to its `webhook_url` (or the configured default). Each delivery
/// runs in its own task, so a slow receiver delays no other. Failures are logged with
/// what was tried; they never affect the task.
///
/// The deliverer and every delivery run on `tracker`. On `cancel` the deliverer stops
/// reading; a delivery already under way finishes (bounded by the webhook timeout and
/// retry policy), so a shutdown waiting on the tracker does not lose the last
/// `task.finished` POST.
pub fn spawn_deliverer(
    bus: super::events::EventBus,
    sender: WebhookSender,
    default_url: Option<String>,
    tracker: &TaskTracker,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let deliveries = tracker.clone();
    // Subscribed before the spawn: an event published right after `Core::build` is seen.
    // Endings published by this process only: on a shared database every instance sees
    // every ending, and the one that ended the task posts it, once.
    let mut finished = bus.finished_here();
    tracker.spawn(async move {
        loop {
            let next = tokio::select! {
                () = cancel.cancelled() => break,
                next = finished.recv() => next,
            };
            let ev = match next {
                Ok(ev) => ev,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "webhook deliverer fell behind; endings skipped");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let Ok(id) = ev.stream.parse::<crate::domain::TaskId>() else {
                continue;
            };
            let store = bus.store().clone();
            let (sender, default_url) = (sender.clone(), default_url.clone());
            deliveries.spawn(async move {
                let Ok(task) = store.get_task(id).await else {
                    return;
                };
                let Some(url) = task.spec.webhook_url.clone().or(default_url) else {
                    return;
                };
                let steps = store.steps(id).await.unwrap_or_default();
                let Ok(result) = CoordinatorResult::new(&task, &steps) else {
                    return;
                };
                match sender
                    .deliver(&url, &WebhookPayload::task_finished(result))
                    .await
                {
                    Ok(d) => {
                        tracing::info!(task = %id, attempts = d.attempts, status = d.status, "webhook delivered")
                    }
                    Err(e) => tracing::warn!(task = %id, error = %e, "webhook delivery failed"),
                }
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_round_trips_and_rejects_tampering() {
        let body = br#"{"task_id":"c-1","status":"success"}"#;
        let sig = sign(b"s3cret", "1700000000", body);
        assert!(sig.starts_with("sha256=") && sig.len() == 7 + 64, "{sig}");
        assert!(verify(b"s3cret", "1700000000", body, &sig));
        assert!(!verify(b"other", "1700000000", body, &sig), "wrong secret");
        assert!(
            !verify(b"s3cret", "1700000001", body, &sig),
            "timestamp is signed"
        );
        assert!(
            !verify(b"s3cret", "1700000000", b"{}", &sig),
            "body is signed"
        );
        assert!(
            !verify(b"s3cret", "1700000000", body, &sig[7..]),
            "prefix required"
        );
        assert!(
            !verify(b"s3cret", "1700000000", body, "sha256=zz"),
            "bad hex"
        );
    }

    #[test]
    fn known_vector_matches_a_plain_hmac_of_timestamp_dot_body() {
        // Receivers in other languages compute HMAC-SHA256(secret, "1.{}"); pin it.
        let sig = sign(b"key", "1", b"{}");
        let mut m = <HmacSha256 as Mac>::new_from_slice(b"key").unwrap();
        m.update(b"1.{}");
        assert_eq!(
            sig,
            format!("sha256={}", hex::encode(m.finalize().into_bytes()))
        );
    }

    #[test]
    fn freshness_window() {
        let sig = sign(b"k", "1000", b"x");
        assert!(verify_fresh(b"k", "1000", b"x", &sig, 1200, 300));
        assert!(
            !verify_fresh(b"k", "1000", b"x", &sig, 1400, 300),
            "too old"
        );
        assert!(!verify_fresh(b"k", "soon", b"x", &sig, 1000, 300));
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let cfg: WebhookConfig = serde_json::from_value(serde_json::json!({
            "url": "https://example.com/hook", "secret": "hunter2-very-secret", "max_attempts": 3
        }))
        .unwrap();
        assert_eq!(cfg.max_attempts, 3);
        assert_eq!(
            cfg.timeout_ms,
            WebhookConfig::default().timeout_ms,
            "defaults fill in"
        );
        let dbg = format!("{cfg:?}");
        assert!(
            !dbg.contains("hunter2") && dbg.contains("[redacted]"),
            "{dbg}"
        );
        let e = serde_json::from_value::<WebhookConfig>(serde_json::json!({"max_attempt": 3}))
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `max_attempt`"), "{e}");
    }

    #[test]
    fn urls_are_logged_without_credentials_or_query() {
        let u = reqwest::Url::parse("https://user:pw@hooks.example.com/a/b?token=xyz#f").unwrap();
        assert_eq!(redact_url(&u), "https://hooks.example.com/a/b");
    }

    use crate::domain::{NewTask, Task, TaskId, TaskSpec, TaskStatus};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn payload() -> WebhookPayload {
        let spec = TaskSpec::parse(NewTask {
            ai_prompt: Some("open Clock".into()),
            task_id: Some("coord-42".into()),
            ..Default::default()
        })
        .unwrap();
        let task = Task {
            id: TaskId::new(),
            status: TaskStatus::Succeeded,
            spec,
            assigned_device: Some("sim-1".into()),
            created_at: chrono::Utc::now(),
            started_at: None,
            finished_at: Some(chrono::Utc::now()),
            reason: Some("alarm set".into()),
            answer: None,
            steps: 3,
            tokens_in: 0,
            tokens_out: 0,
            tokens_cached: 0,
            recording: Vec::new(),
            cost_usd: 0.0,
            cancel_requested: false,
            model_calls: 0,
        };
        WebhookPayload::task_finished(CoordinatorResult::new(&task, &[]).unwrap())
    }

    /// The test receivers are wiremock on loopback: allowed the normal way.
    fn loopback() -> Vec<String> {
        vec!["127.0.0.1".into()]
    }

    fn sender(max_attempts: u32) -> WebhookSender {
        WebhookSender::new(WebhookConfig {
            allowed_hosts: loopback(),
            secret: WebhookSecret::new("topsecret"),
            max_attempts,
            timeout_ms: 2_000,
            backoff_initial_ms: 5,
            backoff_max_ms: 20,
            ..Default::default()
        })
        .unwrap()
    }

    #[tokio::test]
    async fn delivery_is_signed_and_verifies_on_the_receiver_side() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/hook"))
            .respond_with(ResponseTemplate::new(204))
            .expect(1)
            .mount(&server)
            .await;
        let p = payload();
        let d = sender(3)
            .deliver(&format!("{}/hook?token=abc", server.uri()), &p)
            .await
            .unwrap();
        assert_eq!(
            d,
            Delivered {
                attempts: 1,
                status: 204
            }
        );
        let req = &server.received_requests().await.unwrap()[0];
        let h = |k: &str| req.headers.get(k).unwrap().to_str().unwrap().to_string();
        assert!(verify(
            b"topsecret",
            &h(TIMESTAMP_HEADER),
            &req.body,
            &h(SIGNATURE_HEADER)
        ));
        assert!(verify_fresh(
            b"topsecret",
            &h(TIMESTAMP_HEADER),
            &req.body,
            &h(SIGNATURE_HEADER),
            chrono::Utc::now().timestamp(),
            300
        ));
        assert!(!verify(
            b"wrong",
            &h(TIMESTAMP_HEADER),
            &req.body,
            &h(SIGNATURE_HEADER)
        ));
        assert_eq!(h(EVENT_HEADER), "task.finished");
        assert_eq!(h(DELIVERY_HEADER), p.delivery_id.to_string());
        assert_eq!(h("content-type"), "application/json");
        let v: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(
            (v["task_id"].as_str(), v["status"].as_str()),
            (Some("coord-42"), Some("success"))
        );
        assert_eq!(
            (v["steps_taken"].as_u64(), v["event"].as_str()),
            (Some(3), Some("task.finished"))
        );
    }

    #[tokio::test]
    async fn a_server_error_is_retried_then_succeeds() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(500))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200))
            .expect(1)
            .mount(&server)
            .await;
        let d = sender(3).deliver(&server.uri(), &payload()).await.unwrap();
        assert_eq!(
            d,
            Delivered {
                attempts: 2,
                status: 200
            }
        );
        let reqs = server.received_requests().await.unwrap();
        let ids: Vec<_> = reqs
            .iter()
            .map(|r| r.headers.get(DELIVERY_HEADER).unwrap().clone())
            .collect();
        assert_eq!(ids[0], ids[1], "one delivery id across attempts");
        assert_eq!(reqs[1].headers.get(ATTEMPT_HEADER).unwrap(), "2");
    }

    #[tokio::test]
    async fn too_many_requests_with_retry_after_is_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(202))
            .mount(&server)
            .await;
        let d = sender(2).deliver(&server.uri(), &payload()).await.unwrap();
        assert_eq!(d.attempts, 2);
    }

    #[tokio::test]
    async fn a_client_error_is_not_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(400).set_body_string("unknown task_id"))
            .expect(1)
            .mount(&server)
            .await;
        let e = sender(5)
            .deliver(&server.uri(), &payload())
            .await
            .unwrap_err();
        match &e {
            WebhookError::Rejected {
                status,
                attempts,
                detail,
                ..
            } => {
                assert_eq!((*status, *attempts), (400, 1));
                assert!(detail.contains("unknown task_id"), "{detail}");
            }
            other => panic!("expected Rejected, got {other:?}"),
        }
        assert!(e.to_string().contains("not retried"), "{e}");
    }

    #[tokio::test]
    async fn gives_up_after_max_attempts_and_says_how_many() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503))
            .expect(3)
            .mount(&server)
            .await;
        let e = sender(3)
            .deliver(&server.uri(), &payload())
            .await
            .unwrap_err();
        assert!(
            matches!(e, WebhookError::GaveUp { attempts: 3, .. }),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("after 3 attempt(s)") && msg.contains("HTTP 503"),
            "{msg}"
        );
        assert!(!msg.contains("topsecret"));
    }

    #[tokio::test]
    async fn slow_receivers_and_closed_ports_are_retried_as_transport_errors() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_millis(800)))
            .expect(2)
            .mount(&server)
            .await;
        let s = WebhookSender::new(WebhookConfig {
            allowed_hosts: loopback(),
            timeout_ms: 100,
            max_attempts: 2,
            backoff_initial_ms: 5,
            backoff_max_ms: 10,
            ..Default::default()
        })
        .unwrap();
        let e = s.deliver(&server.uri(), &payload()).await.unwrap_err();
        assert!(
            e.to_string().contains("timed out") && e.to_string().contains("2 attempt"),
            "{e}"
        );

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = s
            .deliver(&format!("http://127.0.0.1:{port}/h"), &payload())
            .await
            .unwrap_err();
        assert!(
            matches!(e, WebhookError::GaveUp { attempts: 2, .. }),
            "{e:?}"
        );
    }

    /// A URL that reached the deliverer without the submission check (stored before it,
    /// or the operator's list changed) is still refused, before any connection.
    #[tokio::test]
    async fn an_internal_host_is_refused_at_delivery_unless_allowed() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(204))
            .mount(&server)
            .await;
        let closed = WebhookSender::new(WebhookConfig {
            max_attempts: 1,
            ..Default::default()
        })
        .unwrap();
        let port = server.address().port();
        for url in [
            server.uri(),
            format!("http://localhost:{port}/h"),
            format!("http://[::ffff:127.0.0.1]:{port}/h"),
        ] {
            let e = closed.deliver(&url, &payload()).await.unwrap_err();
            assert!(matches!(e, WebhookError::Refused { .. }), "{url}: {e:?}");
            assert!(e.to_string().contains("allowed_hosts"), "{e}");
        }
        assert!(server.received_requests().await.unwrap().is_empty());
        let d = sender(1).deliver(&server.uri(), &payload()).await.unwrap();
        assert_eq!(d.status, 204);
    }

    /// The configured `url` is the operator's: its host needs no separate allowance.
    #[tokio::test]
    async fn the_configured_url_is_allowed_and_bad_entries_are_named() {
        let cfg = WebhookConfig {
            url: "http://hooks.internal:8080/x".into(),
            allowed_hosts: vec!["10.0.0.0/8".into()],
            ..Default::default()
        };
        assert!(
            cfg.check_url("http://hooks.internal/y", "webhook_url")
                .await
                .is_ok()
        );
        assert!(
            cfg.check_url("http://10.2.3.4/y", "webhook_url")
                .await
                .is_ok()
        );
        assert!(
            cfg.check_url("http://no-such-host.invalid/y", "webhook_url")
                .await
                .is_ok(),
            "checked again at delivery"
        );
        let e = cfg
            .check_url("http://127.0.0.1/y", "webhook_url")
            .await
            .unwrap_err();
        assert_eq!(e, "webhook_url: `127.0.0.1` is a loopback address");
        let bad = WebhookConfig {
            allowed_hosts: vec!["http://x".into()],
            ..Default::default()
        };
        let e = WebhookSender::new(bad).unwrap_err();
        assert!(
            e.to_string().contains("webhooks.allowed_hosts: `http://x`"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn unusable_urls_fail_fast() {
        let e = sender(3)
            .deliver("ftp://example.com/x", &payload())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not http or https"), "{e}");
        let e = sender(3)
            .deliver("not a url", &payload())
            .await
            .unwrap_err();
        assert!(matches!(e, WebhookError::InvalidUrl { .. }), "{e:?}");
    }

    #[test]
    fn bad_configuration_is_refused_with_the_key_name() {
        let e = WebhookSender::new(WebhookConfig {
            max_attempts: 0,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("webhooks.max_attempts"), "{e}");
        let e = WebhookSender::new(WebhookConfig {
            backoff_initial_ms: 10,
            backoff_max_ms: 5,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("backoff_max_ms"), "{e}");
    }
}
