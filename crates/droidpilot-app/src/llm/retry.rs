//! Retry notices: each retry a model call is about to make (the HTTP layer's, or the
//! runner asking the agent again), reported to whoever runs the call, so a task's event
//! stream says "the model is being retried" instead of going quiet. The sink is a tokio
//! task-local set around the call, so the clients need no handle to the event bus.

use std::future::Future;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

/// One retry about to happen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryNotice {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// How long until the next attempt.
    pub delay_ms: u64,
    /// Why the attempt failed, in words (`HTTP 429: …`, `connection refused`).
    pub cause: String,
}

tokio::task_local! {
    static SINK: UnboundedSender<RetryNotice>;
}

/// Runs `f`, sending every retry its model calls make to `tx`.
pub async fn with_retry_sink<F: Future>(tx: UnboundedSender<RetryNotice>, f: F) -> F::Output {
    SINK.scope(tx, f).await
}

/// Reports a retry to the sink around the current call, if there is one.
pub fn report(attempt: u32, delay: Duration, cause: impl Into<String>) {
    let _ = SINK.try_with(|tx| {
        tx.send(RetryNotice {
            attempt,
            delay_ms: delay.as_millis() as u64,
            cause: cause.into(),
        })
    });
}
