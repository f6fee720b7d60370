//! The relay: on a database several instances share, this instance's one listening
//! connection (`store::notify`) and what it does with what it hears.
//!
//! - An event pointer from another instance: the event is read back from the table and
//!   put on the local bus (`EventBus::broadcast_remote`), so WebSocket, SSE and MCP
//!   subscribers here see tasks running anywhere, live. Pointers arrive per stream in seq
//!   order; a feed that still sees a gap re-reads the stream (as after a lag).
//! - `Control::Answer`: a runner here waiting on that task's question gets the stored
//!   answer (`Prompts::deliver_stored`).
//! - `Control::Cancel`: a runner here for that task is signalled at once.
//!
//! Notifications sent while the connection is down are lost, so after every (re)connect
//! the bus is told to `resync` (each feed re-reads the streams it follows); a waiting
//! runner re-reads its question's row, and a running one the cancel flag, on their own.
//! A connection that silently died is found by a probe: a ping sent to ourselves every
//! `PROBE_EVERY` must come back before the next one goes, or the connection is replaced.
//! Reconnects back off with the shared `RetryPolicy`. Everything runs on the core's
//! tracker and stops with its cancel token.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::events::EventBus;
use super::interaction::Prompts;
use super::runner::StopSignal;
use super::scheduler::RunningTasks;
use crate::domain::RetryPolicy;
use crate::store::StoreError;
use crate::store::notify::{Control, ControlMsg, EventPointer, Listening, Notice, Notifier};

/// How often the listening connection proves it is alive.
const PROBE_EVERY: Duration = Duration::from_secs(10);

/// What the relay serves: the bus to put remote events on, and the runners to wake.
#[derive(Clone)]
pub struct Relay {
    /// This instance's name, for the logs.
    pub instance: String,
    pub notifier: Notifier,
    pub bus: EventBus,
    pub prompts: Arc<Prompts>,
    pub running: Arc<RunningTasks>,
}

/// Why a listening connection was given up.
enum Lost {
    Cancelled,
    Dropped,
}

impl Relay {
    /// Starts the relay on `tracker`; it stops when `cancel` fires.
    pub fn spawn(self, tracker: &TaskTracker, cancel: CancellationToken) {
        let t = tracker.clone();
        tracker.spawn(async move { self.run(t, cancel).await });
    }

    /// Connects, serves until the connection is lost, and connects again with backoff.
    async fn run(self, tracker: TaskTracker, cancel: CancellationToken) {
        let policy =
            RetryPolicy::doubling(Duration::from_millis(200), Duration::from_secs(5)).with_jitter();
        let mut delays = policy.delays();
        loop {
            let listening = tokio::select! {
                () = cancel.cancelled() => return,
                l = self.notifier.listen() => l,
            };
            match listening {
                Ok(l) => {
                    delays = policy.delays();
                    // What was committed while nobody listened is re-read by the feeds.
                    self.bus.resync();
                    metrics::counter!("droidpilot_relay_connects_total").increment(1);
                    tracing::info!(instance = %self.instance, origin = self.notifier.origin(), "event relay listening");
                    if let Lost::Cancelled = self.serve(l, &tracker, &cancel).await {
                        return;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the event relay cannot listen; retrying"),
            }
            let wait = delays.next().unwrap_or(Duration::from_secs(5));
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Handles notices from one connection until it is lost, its probe goes unanswered,
    /// or `cancel` fires.
    async fn serve(&self, l: Listening, tracker: &TaskTracker, cancel: &CancellationToken) -> Lost {
        let (tx, mut rx) = mpsc::channel(1024);
        let reader_stop = cancel.child_token();
        tracker.spawn(read(l, tx, reader_stop.clone()));
        let _stop_reader = reader_stop.drop_guard();
        let mut probe = tokio::time::interval(PROBE_EVERY);
        probe.tick().await;
        let mut outstanding: Option<u64> = None;
        loop {
            tokio::select! {
                () = cancel.cancelled() => return Lost::Cancelled,
                notice = rx.recv() => match notice {
                    Some(n) => self.handle(n, &mut outstanding).await,
                    None => return Lost::Dropped,
                },
                _ = probe.tick() => {
                    if outstanding.is_some() {
                        tracing::warn!("the event relay's connection stopped answering; reconnecting");
                        return Lost::Dropped;
                    }
                    let nonce = rand::random::<u64>();
                    if self.notifier.send(Control::Ping { nonce }).await.is_ok() {
                        outstanding = Some(nonce);
                    }
                }
            }
        }
    }

    async fn handle(&self, notice: Notice, outstanding: &mut Option<u64>) {
        let mine = notice.origin() == self.notifier.origin();
        match notice {
            Notice::Event(p) if !mine => {
                if let Err(e) = self.rebroadcast(&p).await {
                    tracing::warn!(stream = %p.stream, seq = p.seq, error = %e, "could not read a relayed event; feeds re-read");
                    self.bus.resync();
                }
            }
            Notice::Control(ControlMsg {
                control: Control::Ping { nonce },
                ..
            }) if mine && *outstanding == Some(nonce) => *outstanding = None,
            Notice::Control(ControlMsg { control, .. }) if !mine => self.control(control).await,
            _ => {}
        }
    }

    /// Reads the event the pointer names and puts it on the local bus.
    async fn rebroadcast(&self, p: &EventPointer) -> Result<(), StoreError> {
        let found = self
            .bus
            .store()
            .events_since(&p.stream, p.seq - 1, 1)
            .await?;
        if let Some(ev) = found.into_iter().find(|e| e.seq == p.seq) {
            metrics::counter!("droidpilot_events_relayed_total").increment(1);
            self.bus.broadcast_remote(ev);
        }
        Ok(())
    }

    async fn control(&self, control: Control) {
        match control {
            Control::Answer { task } => {
                let store = self.bus.store().clone();
                match self.prompts.deliver_stored(store.as_ref(), task).await {
                    Ok(true) => tracing::debug!(task = %task, "relayed answer delivered"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(task = %task, error = %e, "could not read a relayed answer; the runner re-reads it")
                    }
                }
            }
            Control::Cancel { task } => {
                if self.running.signal(task, StopSignal::Cancel) {
                    tracing::info!(task = %task, "relayed cancel delivered");
                }
            }
            Control::Ping { .. } => {}
        }
    }
}

/// Reads one connection's notices into `tx` until it is lost or `stop` fires. On its own
/// task so the relay's loop never drops a read half done.
async fn read(mut l: Listening, tx: mpsc::Sender<Notice>, stop: CancellationToken) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            n = l.next() => n,
        };
        match next {
            Ok(Some(n)) => {
                if tx.send(n).await.is_err() {
                    return;
                }
            }
            Ok(None) => {
                tracing::warn!("the event relay lost its connection; reconnecting");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the event relay's connection failed; reconnecting");
                return;
            }
        }
    }
}
