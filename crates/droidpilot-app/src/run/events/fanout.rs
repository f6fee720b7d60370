//! Per-stream fan-out: which subscribers an event wakes. Each feed has its own bounded
//! inbox, registered under the streams it follows (or under "everything"); a published
//! event is pushed into the inboxes of its stream's followers and of the feeds over
//! everything, and no other feed is woken. With 1,000 dashboards each watching one task,
//! an event costs one or two wake-ups, not 1,000 (one channel shared by every feed made
//! each of them wake, and filter, for every event).
//!
//! A slow feed never slows a publisher: its inbox drops its oldest item when full and
//! counts it, and the feed hears `Lagged` first and re-reads from the store what it
//! missed (`EventFeed` does that). When the last handle of the bus is dropped every
//! inbox closes, so feeds end as they did with a broadcast channel.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use tokio::sync::Notify;

use crate::store::StoredEvent;

/// What travels to a feed.
#[derive(Debug, Clone)]
pub(super) enum Carried {
    Event(Arc<StoredEvent>),
    /// Events may have been missed (the relay's connection was lost): every feed re-reads
    /// the streams it follows.
    Resync,
}

/// What a subscription hands its feed next.
#[derive(Debug)]
pub(super) enum Received {
    Carried(Carried),
    /// The inbox overflowed: this many items were dropped (oldest first).
    Lagged(u64),
    /// The bus is gone.
    Closed,
}

/// The routing table: the inboxes of each stream's followers and of the feeds over
/// everything. Every inbox is in exactly one of the two (never both), so no feed gets
/// an event twice.
pub(super) struct Hub {
    routes: RwLock<Routes>,
    capacity: usize,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Routes {
    by_stream: HashMap<String, Vec<Arc<Inbox>>>,
    all: Vec<Arc<Inbox>>,
    /// Every live inbox, for a resync and for closing.
    every: HashMap<u64, Arc<Inbox>>,
    closed: bool,
}

struct Inbox {
    id: u64,
    state: Mutex<InboxState>,
    wake: Notify,
}

#[derive(Default)]
struct InboxState {
    items: VecDeque<Carried>,
    missed: u64,
    closed: bool,
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, item: Carried, capacity: usize) {
        {
            let mut st = self.lock();
            if st.items.len() >= capacity {
                st.items.pop_front();
                st.missed += 1;
            }
            st.items.push_back(item);
        }
        self.wake.notify_one();
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }
}

fn remove(list: &mut Vec<Arc<Inbox>>, id: u64) {
    if let Some(i) = list.iter().position(|b| b.id == id) {
        list.swap_remove(i);
    }
}

impl Hub {
    /// `capacity` bounds each feed's inbox.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            routes: RwLock::default(),
            capacity: capacity.max(16),
            next_id: AtomicU64::new(0),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Routes> {
        self.routes.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Routes> {
        self.routes.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `ev` to the followers of its stream and to the feeds over everything.
    pub(super) fn send(&self, ev: Arc<StoredEvent>) {
        let routes = self.read();
        let followers = routes.by_stream.get(&ev.stream).into_iter().flatten();
        for inbox in followers.chain(&routes.all) {
            inbox.push(Carried::Event(ev.clone()), self.capacity);
        }
    }

    /// Tells every feed to re-read what it follows.
    pub(super) fn resync(&self) {
        for inbox in self.read().every.values() {
            inbox.push(Carried::Resync, self.capacity);
        }
    }

    /// Closes every inbox: their feeds end once they have read what is queued.
    pub(super) fn close(&self) {
        let mut routes = self.write();
        routes.closed = true;
        for inbox in routes.every.values() {
            inbox.close();
        }
    }

    /// A new subscription that follows nothing yet.
    pub(super) fn subscribe(self: &Arc<Self>) -> Subscription {
        let inbox = Arc::new(Inbox {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            state: Mutex::default(),
            wake: Notify::new(),
        });
        let mut routes = self.write();
        if routes.closed {
            inbox.lock().closed = true;
        }
        routes.every.insert(inbox.id, inbox.clone());
        Subscription {
            hub: self.clone(),
            inbox,
            streams: HashSet::new(),
            all: false,
        }
    }
}

/// One feed's place in the hub; dropping it unregisters the inbox.
pub(super) struct Subscription {
    hub: Arc<Hub>,
    inbox: Arc<Inbox>,
    streams: HashSet<String>,
    all: bool,
}

impl Subscription {
    /// From now on, events of `stream` reach this inbox (a no-op over everything).
    pub(super) fn follow(&mut self, stream: &str) {
        if self.all || !self.streams.insert(stream.to_string()) {
            return;
        }
        let mut routes = self.hub.write();
        let list = routes.by_stream.entry(stream.to_string()).or_default();
        list.push(self.inbox.clone());
    }

    /// From now on, every event reaches this inbox (once, whatever it also follows).
    pub(super) fn follow_all(&mut self) {
        if self.all {
            return;
        }
        self.all = true;
        let mut routes = self.hub.write();
        for stream in &self.streams {
            Self::unfollow(&mut routes, stream, self.inbox.id);
        }
        routes.all.push(self.inbox.clone());
    }

    fn unfollow(routes: &mut Routes, stream: &str, id: u64) {
        if let Some(list) = routes.by_stream.get_mut(stream) {
            remove(list, id);
            if list.is_empty() {
                routes.by_stream.remove(stream);
            }
        }
    }

    /// The next item; waits for one. Cancel-safe: nothing is taken until it is returned.
    pub(super) async fn recv(&self) -> Received {
        loop {
            {
                let mut st = self.inbox.lock();
                if st.missed > 0 {
                    return Received::Lagged(std::mem::take(&mut st.missed));
                }
                if let Some(item) = st.items.pop_front() {
                    return Received::Carried(item);
                }
                if st.closed {
                    return Received::Closed;
                }
            }
            // A push between the check and here leaves a permit: no wake-up is lost.
            self.inbox.wake.notified().await;
        }
    }

    /// Items waiting in the inbox.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.inbox.lock().items.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut routes = self.hub.write();
        let id = self.inbox.id;
        routes.every.remove(&id);
        if self.all {
            remove(&mut routes.all, id);
        }
        for stream in &self.streams {
            Self::unfollow(&mut routes, stream, id);
        }
    }
}

/// The bus's owning handle on the hub: when the last bus clone drops it, every feed ends.
pub(super) struct HubOwner(pub(super) Arc<Hub>);

impl Drop for HubOwner {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TaskEvent;

    fn ev(stream: &str, seq: i64) -> Arc<StoredEvent> {
        Arc::new(StoredEvent {
            stream: stream.into(),
            seq,
            created_at: chrono::Utc::now(),
            event: TaskEvent::from_parts("step", serde_json::json!({})),
        })
    }

    fn seq(r: Received) -> i64 {
        match r {
            Received::Carried(Carried::Event(e)) => e.seq,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_follower_is_handed_only_its_streams_events() {
        let hub = Arc::new(Hub::new(16));
        let mut a = hub.subscribe();
        a.follow("a");
        let mut all = hub.subscribe();
        all.follow_all();
        for i in 1..=100 {
            hub.send(ev("b", i));
        }
        hub.send(ev("a", 1));
        assert_eq!(a.queued(), 1, "b's events never reach a's inbox");
        assert_eq!(seq(a.recv().await), 1);
        assert!(matches!(all.recv().await, Received::Lagged(85)));
    }

    #[tokio::test]
    async fn a_feed_following_a_stream_and_everything_gets_each_event_once() {
        let hub = Arc::new(Hub::new(16));
        let mut s = hub.subscribe();
        s.follow("a");
        s.follow_all();
        s.follow("a");
        hub.send(ev("a", 1));
        assert_eq!(s.queued(), 1);
        drop(s);
        let routes = hub.read();
        assert!(routes.by_stream.is_empty() && routes.all.is_empty() && routes.every.is_empty());
    }

    #[tokio::test]
    async fn dropping_the_owner_ends_every_feed_after_what_is_queued() {
        let hub = Arc::new(Hub::new(16));
        let mut s = hub.subscribe();
        s.follow("a");
        hub.send(ev("a", 1));
        drop(HubOwner(hub.clone()));
        assert_eq!(seq(s.recv().await), 1);
        assert!(matches!(s.recv().await, Received::Closed));
    }
}
