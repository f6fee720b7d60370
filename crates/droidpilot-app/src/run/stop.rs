//! Stopping a running task: the signal the scheduler sends, the task's deadline, and the
//! wrappers that let either cut short whatever the step is waiting on.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Why the loop stops early, sent by the scheduler. A cancel also aborts what the step
/// is waiting on (a model call, a device wait); a shutdown lets the step finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopSignal {
    #[default]
    None,
    /// Cancelled over REST or WebSocket.
    Cancel,
    /// The server is shutting down: finish the step, mark the task interrupted.
    Shutdown,
    /// The server is shutting down and resumes interrupted tasks at its next start:
    /// finish the step and leave the task `running`, as a crash would, so start-up
    /// requeues it (`scheduler.resume_interrupted`).
    Suspend,
}

/// What ends a task from outside its steps: the scheduler's signal, and the deadline
/// (`timeout_seconds` after the start, moved on by the time a person held it paused).
pub(super) struct Stop {
    pub signal: watch::Receiver<StopSignal>,
    /// Moved only by `extend`.
    deadline: Instant,
}

impl Stop {
    /// `timeout` from now (a timeout too far to represent never comes).
    pub fn new(signal: watch::Receiver<StopSignal>, timeout: Duration) -> Self {
        let now = Instant::now();
        let far = Duration::from_secs(100 * 365 * 86_400);
        Self {
            signal,
            deadline: now.checked_add(timeout.min(far)).unwrap_or(now + far),
        }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Time held paused (take-over) does not count toward the timeout.
    pub fn extend(&mut self, held: Duration) {
        self.deadline = self.deadline.checked_add(held).unwrap_or(self.deadline);
    }
}

/// Runs `f` unless the task is cancelled or reaches its deadline first (`None` then): a
/// model call, its retries, an action and its retries, a device wait, a settle or a
/// reconnect is cut at once. The caller goes back to the top of the loop, whose boundary
/// ends the task (`cancelled` or `timed_out`).
pub(super) async fn unless_cancelled<F: std::future::Future>(
    stop: &mut Stop,
    f: F,
) -> Option<F::Output> {
    tokio::select! {
        r = f => Some(r),
        _ = cancelled(&mut stop.signal) => None,
        _ = tokio::time::sleep_until(stop.deadline) => None,
    }
}

/// Runs `f` unless any stop signal arrives first (a hook holding the step boundary).
pub(super) async fn unless_stopped<F: std::future::Future>(
    stop: &mut watch::Receiver<StopSignal>,
    f: F,
) -> Option<F::Output> {
    let stopped = async {
        if stop.wait_for(|s| *s != StopSignal::None).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = f => Some(r),
        _ = stopped => None,
    }
}

/// Resolves on a cancel; never when the sender is gone (nobody can cancel any more).
async fn cancelled(stop: &mut watch::Receiver<StopSignal>) {
    if stop.wait_for(|s| *s == StopSignal::Cancel).await.is_err() {
        std::future::pending::<()>().await;
    }
}
