//! The transport under every model client: one JSON POST with a per-attempt timeout and
//! retries on 429, 5xx, 408 and timeouts, the delays drawn from the model's
//! `RetryPolicy` (`ModelConfig::retry_policy`) but replaced by `Retry-After` (seconds or
//! HTTP-date) and `retry-after-ms` when the server sends them. A refused connection gets
//! a short budget of its own (`CONNECT_RETRIES` quick attempts, under a second): a closed
//! port does not open by itself. Every retry is reported (`retry::report`). The reply
//! comes back as text: the client decodes it into its provider's typed reply.
//!
//! backon's `Retryable` helper cannot replace its next delay with a server-sent one,
//! so the loop is written here and only the delay schedule comes from backon.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::config::{ApiKey, ModelConfig, ProviderKind};
use super::error::{LlmError, redact};
use crate::domain::RetryPolicy;

/// A body that came back with 2xx, and how long the successful attempt took.
pub struct HttpReply {
    pub text: String,
    pub latency: Duration,
    pub attempts: u32,
}

pub struct HttpClient {
    client: reqwest::Client,
    provider: ProviderKind,
    timeout: Duration,
    policy: RetryPolicy,
    max_retry_after: Duration,
}

fn install_crypto() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // Another part of the process may have installed one already; that is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What one attempt came to.
enum Attempt {
    Done(HttpReply),
    /// Not worth another attempt whatever the schedule says.
    Fatal(LlmError),
    Failed(Failure),
}

impl HttpClient {
    pub fn new(cfg: &ModelConfig) -> Result<Self, LlmError> {
        install_crypto();
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.timeout().min(Duration::from_secs(10)))
            .build()
            .map_err(|e| LlmError::Config {
                message: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(Self {
            client,
            provider: cfg.provider,
            timeout: cfg.timeout(),
            policy: cfg.retry_policy(),
            max_retry_after: Duration::from_secs(cfg.max_retry_after_secs),
        })
    }

    /// POSTs `body` (JSON bytes) and returns the 2xx reply's text. `key` is only used to
    /// scrub it from error messages; the caller has put it into `headers`.
    pub async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: Vec<u8>,
        key: Option<&ApiKey>,
    ) -> Result<HttpReply, LlmError> {
        let body = bytes::Bytes::from(body);
        let mut schedule = self.policy.delays();
        let mut connect_schedule = connect_policy(self.policy.retries()).delays();
        // URLs for Gemini carry no key (it goes in a header), but strip any query anyway.
        let shown_url = url.split('?').next().unwrap_or(url).to_string();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let failure = match self.attempt(url, &headers, body.clone(), key).await {
                Attempt::Done(mut reply) => {
                    reply.attempts = attempts;
                    return Ok(reply);
                }
                Attempt::Fatal(e) => return Err(self.name_url(e, &shown_url, attempts)),
                Attempt::Failed(f) => f,
            };
            let next = match &failure {
                Failure::Connect(_) => connect_schedule.next(),
                f if f.retryable() => schedule.next(),
                _ => None,
            };
            match self.wait(&failure, next) {
                Some(d) => {
                    let cause = failure.describe();
                    tracing::warn!(
                        provider = %self.provider, url = %shown_url, attempt = attempts,
                        delay_ms = d.as_millis() as u64, cause = %cause, "model call failed, retrying"
                    );
                    super::retry::report(attempts, d, cause);
                    tokio::time::sleep(d).await;
                }
                None => return Err(self.final_error(failure, shown_url, attempts)),
            }
        }
    }

    /// One POST, its body read to the end.
    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: bytes::Bytes,
        key: Option<&ApiKey>,
    ) -> Attempt {
        let started = Instant::now();
        let sent = self
            .client
            .post(url)
            .headers(headers.clone())
            .header("content-type", "application/json")
            .timeout(self.timeout)
            .body(body)
            .send()
            .await;
        let scrub = |s: &str| redact(s, key.map(ApiKey::expose));
        let resp = match sent {
            Ok(resp) => resp,
            Err(e) if e.is_timeout() => return Attempt::Failed(Failure::Timeout),
            // reqwest's message and its sources each name the URL: it is shown once,
            // by `LlmError`, so the chain is taken without it.
            Err(e) if e.is_connect() || e.is_request() => {
                return Attempt::Failed(Failure::Connect(scrub(&error_chain(&e.without_url()))));
            }
            Err(e) => {
                return Attempt::Fatal(LlmError::Unreachable {
                    url: String::new(),
                    message: scrub(&error_chain(&e.without_url())),
                });
            }
        };
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let text = match resp.text().await {
            Ok(t) => t,
            // A body that stalls mid-read is not retried: the tokens generated so far
            // are already billed.
            Err(e) if e.is_timeout() => {
                return Attempt::Fatal(LlmError::Timeout {
                    url: String::new(),
                    after: self.timeout,
                    attempts: 0,
                });
            }
            Err(e) => {
                return Attempt::Fatal(LlmError::Malformed {
                    provider: self.provider,
                    message: format!("reading the body failed: {e}"),
                });
            }
        };
        if (200..300).contains(&status) {
            return Attempt::Done(HttpReply {
                text,
                latency: started.elapsed(),
                attempts: 0,
            });
        }
        Attempt::Failed(Failure::Status {
            status,
            message: scrub(&error_message(&text)),
            retry_after,
        })
    }

    /// Fills in the URL and attempt count a fatal error was built without.
    fn name_url(&self, e: LlmError, shown_url: &str, n: u32) -> LlmError {
        match e {
            LlmError::Unreachable { message, .. } => LlmError::Unreachable {
                url: shown_url.to_string(),
                message,
            },
            LlmError::Timeout { after, .. } => LlmError::Timeout {
                url: shown_url.to_string(),
                after,
                attempts: n,
            },
            e => e,
        }
    }

    /// The delay before the next attempt: the server's `Retry-After` when it sent one
    /// (and it is within `max_retry_after`; a longer one ends the call), else the
    /// schedule's. `None`: no more attempts.
    fn wait(&self, failure: &Failure, next: Option<Duration>) -> Option<Duration> {
        match (failure, next) {
            (
                Failure::Status {
                    retry_after: Some(ra),
                    ..
                },
                Some(_),
            ) => (*ra <= self.max_retry_after).then_some(*ra),
            (_, d) => d,
        }
    }

    fn final_error(&self, f: Failure, url: String, attempts: u32) -> LlmError {
        let provider = self.provider;
        match f {
            Failure::Timeout => LlmError::Timeout {
                url,
                after: self.timeout,
                attempts,
            },
            Failure::Connect(message) => LlmError::Unreachable { url, message },
            Failure::Status {
                status,
                message,
                retry_after,
            } => match status {
                401 | 403 => LlmError::Unauthorized {
                    provider,
                    status,
                    message,
                },
                // Gemini answers a bad key with 400 INVALID_ARGUMENT / API_KEY_INVALID.
                400 if message.contains("API key not valid")
                    || message.contains("API_KEY_INVALID") =>
                {
                    LlmError::Unauthorized {
                        provider,
                        status,
                        message,
                    }
                }
                429 => LlmError::RateLimited {
                    provider,
                    attempts,
                    retry_after,
                    message,
                },
                s if s >= 500 => LlmError::Server {
                    provider,
                    status,
                    attempts,
                    message,
                },
                _ => LlmError::BadRequest {
                    provider,
                    status,
                    message,
                },
            },
        }
    }
}

/// Quick retries for a refused connection, and the first delay (doubling): 250 + 500 ms.
const CONNECT_RETRIES: u32 = 2;
const CONNECT_BACKOFF: Duration = Duration::from_millis(250);

/// The refused-connection schedule: never more retries than the model's own.
fn connect_policy(max_retries: u32) -> RetryPolicy {
    RetryPolicy::new(
        CONNECT_BACKOFF,
        Duration::from_secs(60),
        CONNECT_RETRIES.min(max_retries),
    )
}

enum Failure {
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    Timeout,
    Connect(String),
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Status { status, .. } => *status == 429 || *status == 408 || *status >= 500,
            Failure::Timeout | Failure::Connect(_) => true,
        }
    }

    /// Why an attempt failed, for retry notices.
    fn describe(&self) -> String {
        match self {
            Failure::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            Failure::Timeout => "no reply within the request timeout".into(),
            Failure::Connect(m) => m.clone(),
        }
    }
}

/// An error and its sources, `a: b: c`, leaving out a source that repeats the text
/// before it.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        src = inner.source();
    }
    s
}

/// The most characters of a model server's text a task's reason or events may hold.
pub const MAX_SHOWN: usize = 160;

/// Text from a model server as a task may show it: one line, no control characters,
/// at most `MAX_SHOWN` characters.
pub fn status_text(s: &str) -> String {
    let line = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match line.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The status line of a failed call: the provider's own error message (OpenAI,
/// Anthropic and Gemini put it at `error.message`; vLLM's older servers at top-level
/// `message`), cleaned by `status_text`. A body of any other shape is never shown, only
/// its size: a task must not read what some other HTTP service answers through the
/// server.
pub fn error_message(text: &str) -> String {
    let v: Option<Value> = serde_json::from_str(text).ok();
    let from_json = v.as_ref().and_then(|v| {
        let e = v.get("error");
        let msg = e
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .or_else(|| e.and_then(Value::as_str))
            .or_else(|| v.get("message").and_then(Value::as_str))
            .or_else(|| v.get("detail").and_then(Value::as_str))?;
        let status = e
            .and_then(|e| e.get("status").or_else(|| e.get("type")))
            .and_then(Value::as_str);
        Some(match status {
            Some(s) => format!("{msg} ({s})"),
            None => msg.to_string(),
        })
    });
    match from_json {
        Some(m) => status_text(&m),
        None if text.trim().is_empty() => "empty body".into(),
        None => format!(
            "the body is not a model server's error ({} bytes, not shown)",
            text.len()
        ),
    }
}

/// `Retry-After: 7`, `Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`, or `retry-after-ms: 1500`.
pub fn retry_after(h: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = h
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse_retry_after(h.get("retry-after")?, chrono::Utc::now())
}

pub fn parse_retry_after(v: &HeaderValue, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let s = v.to_str().ok()?.trim();
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(s).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = chrono::Utc
            .with_ymd_and_hms(2015, 10, 21, 7, 27, 50)
            .unwrap();
        let p = |s: &'static str| parse_retry_after(&HeaderValue::from_static(s), now);
        assert_eq!(p("3"), Some(Duration::from_secs(3)));
        assert_eq!(
            p("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(p("Wed, 21 Oct 2015 07:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(p("soon"), None);
        assert_eq!(p("-1"), None);
        let mut h = HeaderMap::new();
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
    }

    #[test]
    fn error_messages_come_from_each_providers_shape() {
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#
            ),
            "Incorrect API key (invalid_request_error)"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded (overloaded_error)"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}"#
            ),
            "Resource exhausted (RESOURCE_EXHAUSTED)"
        );
        assert_eq!(
            error_message("<html>502 Bad Gateway</html>"),
            "the body is not a model server's error (28 bytes, not shown)"
        );
        assert_eq!(error_message(""), "empty body");
        let long = format!(r#"{{"error": {{"message": "a\nb {}"}}}}"#, "x".repeat(500));
        let shown = error_message(&long);
        assert!(
            shown.starts_with("a b xxx") && shown.chars().count() == MAX_SHOWN + 1,
            "{shown}"
        );
    }
}
