//! The relay: on a database several instances share, this instance's one listening
//! connection (`store::notify`) and what it does with what it hears.
//!
//! - An event pointer from another instance: the event is read back from the table and
//!   put on the local bus (`EventBus::broadcast_remote`), so WebSocket, SSE and MCP
//!   subscribers here see tasks running anywhere, live. Pointers arrive per stream in seq
//!   order; a feed that still sees a gap re-reads the stream (as after a lag). Pointers
//!   that queued up meanwhile are taken together (up to `BATCH`) and each stream is read
//!   once over its range, a few streams at a time: one query per event fell seconds
//!   behind with a few hundred busy phones on the other instance.
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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::events::EventBus;
use super::interaction::Prompts;
use super::scheduler::RunningTasks;
use super::stop::StopSignal;
use crate::domain::RetryPolicy;
use crate::store::StoreError;
use crate::store::notify::{Control, ControlMsg, Listening, Notice, Notifier};

/// How often the listening connection proves it is alive.
const PROBE_EVERY: Duration = Duration::from_secs(10);
/// The most notices handled together.
const BATCH: usize = 1024;
/// Streams read back at once (each read holds one pooled connection).
const READS_AT_ONCE: usize = 4;

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
                    Some(n) => {
                        let mut batch = vec![n];
                        while batch.len() < BATCH && let Ok(n) = rx.try_recv() {
                            batch.push(n);
                        }
                        self.handle(batch, &mut outstanding).await;
                    }
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

    /// Controls one by one, in order; other instances' event pointers grouped by stream
    /// and read back once per stream.
    async fn handle(&self, batch: Vec<Notice>, outstanding: &mut Option<u64>) {
        let mut pointed: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
        for notice in batch {
            let mine = notice.origin() == self.notifier.origin();
            match notice {
                Notice::Event(p) if !mine => {
                    pointed.entry(p.stream).or_default().insert(p.seq);
                }
                Notice::Control(ControlMsg {
                    control: Control::Ping { nonce },
                    ..
                }) if mine && *outstanding == Some(nonce) => *outstanding = None,
                Notice::Control(ControlMsg { control, .. }) if !mine => self.control(control).await,
                _ => {}
            }
        }
        futures::stream::iter(pointed)
            .for_each_concurrent(READS_AT_ONCE, |(stream, seqs)| async move {
                if let Err(e) = self.rebroadcast(&stream, &seqs).await {
                    tracing::warn!(stream = %stream, error = %e, "could not read relayed events; feeds re-read");
                    self.bus.resync();
                }
            })
            .await;
    }

    /// Reads the pointed events of one stream (one query over their range) and puts them
    /// on the local bus in seq order.
    async fn rebroadcast(&self, stream: &str, seqs: &BTreeSet<i64>) -> Result<(), StoreError> {
        let (Some(&first), Some(&last)) = (seqs.first(), seqs.last()) else {
            return Ok(());
        };
        let span = u32::try_from(last - first + 1).unwrap_or(u32::MAX);
        let found = self
            .bus
            .store()
            .events_since(stream, first - 1, span)
            .await?;
        for ev in found.into_iter().filter(|e| seqs.contains(&e.seq)) {
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
