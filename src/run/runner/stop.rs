//! Stopping a running task: the signal the scheduler sends, and the wrappers that let a
//! cancel cut short whatever the step is waiting on.

use tokio::sync::watch;

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

/// Runs `f` unless the task is cancelled first (`None` then): a cancel does not wait for
/// a model call's retries, an action's retries, a settle or a reconnect to end. The
/// caller goes back to the top of the loop, which ends the task.
pub(super) async fn unless_cancelled<F: std::future::Future>(
    stop: &mut watch::Receiver<StopSignal>,
    f: F,
) -> Option<F::Output> {
    tokio::select! {
        r = f => Some(r),
        _ = cancelled(stop) => None,
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
