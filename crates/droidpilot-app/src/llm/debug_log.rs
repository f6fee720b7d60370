//! Debug mode's model log: at `debug`, one line per model request and reply (provider,
//! URL, bytes, status, latency); at `trace`, the request body too. A reply's body is never
//! logged: it carries what the model is about to type, a password among it, before
//! anything knows that text is one (the model's reasoning may repeat it), so it cannot be
//! masked; the reply's effect is on the step's record instead, with typed passwords
//! masked there.
//!
//! What is logged never carries a key (keys travel in sensitive headers, and any key
//! text in a body is redacted as errors are, `error::redact`), the screenshot's base64
//! (a string of images is shown as its length), or a task's secrets: the runner wraps
//! each decision in `masking` with the agent's secrets and the text typed into
//! password fields so far, and every occurrence is written `••••`.

use std::sync::Arc;

use serde_json::Value;

use super::config::{ApiKey, ProviderKind};
use super::error::redact;

tokio::task_local! {
    static MASK: Arc<Vec<String>>;
}

/// Runs `f` with `secrets` masked in every model log line it writes.
pub async fn masking<F: std::future::Future>(secrets: Vec<String>, f: F) -> F::Output {
    let secrets: Vec<String> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
    MASK.scope(Arc::new(secrets), f).await
}

/// `text` with the key, key-looking strings and the task's secrets masked.
pub fn clean(text: &str, key: Option<&ApiKey>) -> String {
    let mut out = redact(text, key.map(ApiKey::expose));
    let _ = MASK.try_with(|m| {
        for s in m.iter() {
            out = out.replace(s.as_str(), "••••");
        }
    });
    out
}

/// A request or reply body for the log: images (long base64 strings, `data:` URLs)
/// shortened to their length, then `clean`.
fn loggable(body: &[u8], key: Option<&ApiKey>) -> String {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            shorten_images(&mut v);
            v.to_string()
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    clean(&text, key)
}

fn shorten_images(v: &mut Value) {
    match v {
        Value::String(s) if looks_like_image(s) => {
            *s = format!("<image: {} base64 characters>", s.len());
        }
        Value::Array(a) => a.iter_mut().for_each(shorten_images),
        Value::Object(o) => o.values_mut().for_each(shorten_images),
        _ => {}
    }
}

/// A `data:` URL, or a long run of base64 alone in a string (Anthropic's and Gemini's
/// image `data`).
fn looks_like_image(s: &str) -> bool {
    s.starts_with("data:image/")
        || (s.len() >= 64
            && (s.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')))
}

/// Logs a request about to be sent.
pub fn request(provider: ProviderKind, url: &str, body: &[u8], key: Option<&ApiKey>) {
    tracing::debug!(
        target: "droidpilot::llm",
        provider = provider.display_name(),
        url,
        bytes = body.len(),
        "model request"
    );
    if tracing::enabled!(target: "droidpilot::llm", tracing::Level::TRACE) {
        let body = loggable(body, key);
        tracing::trace!(target: "droidpilot::llm", %body, "model request body");
    }
}

/// Logs a 2xx reply as received.
pub fn reply(provider: ProviderKind, text: &str, latency_ms: u128, key: Option<&ApiKey>) {
    tracing::debug!(
        target: "droidpilot::llm",
        provider = provider.display_name(),
        bytes = text.len(),
        latency_ms,
        "model reply"
    );
    let _ = key;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn images_keys_and_secrets_never_reach_the_log_text() {
        let img = "iVBORw0KGgo".repeat(100);
        let body = serde_json::json!({"messages": [{"content": [
            {"type": "text", "text": "type hunter2 with sk-abcdefghijkl"},
            {"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{img}")}}]}]});
        let bytes = serde_json::to_vec(&body).unwrap();
        let key = ApiKey::new("sk-abcdefghijkl");
        let out = masking(vec!["hunter2".into()], async {
            loggable(&bytes, Some(&key))
        })
        .await;
        assert!(out.contains("type •••• with"), "{out}");
        assert!(out.contains("base64 characters"), "{out}");
        assert!(
            !out.contains("hunter2") && !out.contains("abcdefghijkl"),
            "{out}"
        );
        assert!(!out.contains("iVBORw0KGgo"), "{out}");
    }
}
