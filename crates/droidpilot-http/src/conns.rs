//! Which connections are open, from which client, doing what: the accept loop admits a
//! connection here before reading a byte of it, so one client cannot take the server
//! down before it authenticates.
//!
//! - At most `max_connections_per_ip` per client address (an IPv6 client: per /64, what
//!   one host is usually given); the next is refused with 429.
//! - New connections per client address through a token bucket
//!   (`connection_rate_per_ip` a second, `connection_burst_per_ip` at once): each new
//!   connection takes a token, and one that gets a successful answer (below 400, a
//!   WebSocket's 101 included) gives it back. So a client whose requests succeed (a
//!   dashboard, a test suite, a script opening a connection per request) is never slowed,
//!   while one whose connections are all refused (no token, over a limit) or say nothing
//!   is held to the rate: the rest are refused at accept, which costs the server a write,
//!   not a request. Hand-written: governor-style crates count every event alike and have
//!   no way to give a token back.
//! - At most `max_connections` in all. When all are taken, one that is doing nothing is
//!   closed to make room: first one whose requests were all refused (unauthenticated,
//!   over a limit), then one that never completed a request (silent, slow), then one
//!   idle between successful requests; the longest idle first within each. A connection inside a request, an SSE stream or a WebSocket is never
//!   closed for another; if every one is, the newcomer gets 503.
//!
//! A connection's slot lives in its socket (see `listen.rs`), so a WebSocket, which
//! leaves hyper's connection once upgraded, keeps its slot until it closes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::StatusCode;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

use super::error::ApiError;

const REFUSED: u8 = 0;
const UNANSWERED: u8 = 1;
const PROVEN: u8 = 2;

/// Where a connection's bytes are (`HeaderClock` in `listen.rs` moves it along).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Waiting for a request.
    Idle = 0,
    /// A request head has begun and not ended.
    Reading = 1,
    /// The head is complete; the request is the handler's.
    InRequest = 2,
    /// A WebSocket: no more HTTP.
    Upgraded = 3,
}

/// One connection as the registry and the connection itself see it.
#[derive(Debug)]
pub struct ConnState {
    phase: AtomicU8,
    /// Requests whose response has not ended (an SSE stream is one until it closes).
    in_flight: AtomicUsize,
    /// How it has been answered: `REFUSED` (errors only), `UNANSWERED`, `PROVEN` (a
    /// request had a non-error answer). Lower is closed first for room.
    standing: AtomicU8,
    /// When it last did something, in ms since the registry started.
    last_active: AtomicU64,
    /// Told to close to make room for another.
    shed: AtomicBool,
    pub shed_now: Notify,
    /// What must live as long as the connection (a WebSocket's stream permit).
    held: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
    epoch: Instant,
    /// Where its new-connection token goes back on its first successful answer.
    refund: Option<(Weak<Registry>, IpAddr)>,
}

impl ConnState {
    fn new(epoch: Instant, refund: Option<(Weak<Registry>, IpAddr)>) -> Self {
        Self {
            refund,
            phase: AtomicU8::new(Phase::Idle as u8),
            in_flight: AtomicUsize::new(0),
            standing: AtomicU8::new(UNANSWERED),
            last_active: AtomicU64::new(epoch.elapsed().as_millis() as u64),
            shed: AtomicBool::new(false),
            shed_now: Notify::new(),
            held: Mutex::new(Vec::new()),
            epoch,
        }
    }

    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
        self.touch();
    }

    fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Idle,
            1 => Phase::Reading,
            2 => Phase::InRequest,
            _ => Phase::Upgraded,
        }
    }

    /// A response with this status was sent.
    pub fn answered(&self, status: u16) {
        if status < 400 {
            let was = self.standing.swap(PROVEN, Ordering::Relaxed);
            if was != PROVEN
                && let Some((registry, client)) = &self.refund
                && let Some(registry) = registry.upgrade()
            {
                registry.refund(*client);
            }
        } else {
            let _ = self.standing.compare_exchange(
                UNANSWERED,
                REFUSED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        self.touch();
    }

    fn touch(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_active.store(now, Ordering::Relaxed);
    }

    /// Keeps `thing` until the connection closes.
    pub fn hold(&self, thing: Box<dyn std::any::Any + Send + Sync>) {
        self.held.lock().expect("not poisoned").push(thing);
    }

    /// Counts a request until the returned guard (kept by its response body) drops.
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(self.clone())
    }

    /// Whether it may be closed for a newcomer, and how gladly: lower sheds first.
    fn shed_rank(&self) -> Option<(u8, u64)> {
        let busy = self.in_flight.load(Ordering::Relaxed) > 0
            || self.phase() == Phase::Upgraded
            || self.shed.load(Ordering::Relaxed);
        (!busy).then(|| {
            (
                self.standing.load(Ordering::Relaxed),
                self.last_active.load(Ordering::Relaxed),
            )
        })
    }
}

/// A request in flight on a connection; see [`ConnState::request_started`].
#[derive(Debug)]
pub struct InFlight(Arc<ConnState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A response body that keeps `guard` until its last frame is taken or it is dropped
/// (hyper may drop a body some time after writing all of it).
pub struct Guarded<G> {
    inner: axum::body::Body,
    guard: Option<G>,
}

impl<G: Send + Unpin + 'static> Guarded<G> {
    pub fn wrap(body: axum::body::Body, guard: G) -> axum::body::Body {
        let guard = (!body.is_end_stream()).then_some(guard);
        axum::body::Body::new(Self { inner: body, guard })
    }
}

impl<G: Unpin> Body for Guarded<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.guard = None;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    /// Its address opens new connections faster than its token bucket allows.
    Rate(ConnRate),
    /// Its address holds `max_connections_per_ip` already.
    PerIp(usize),
    /// All `max_connections` are busy.
    Full(usize),
}

impl Refusal {
    /// The whole HTTP response written to the refused socket before it closes.
    pub fn response(self) -> Vec<u8> {
        let (error, retry) = match self {
            Refusal::Rate(rate) => (
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_new_connections",
                    format!(
                        "this client address opens new connections faster than {} a second (after a burst of {}), and their requests did not succeed",
                        rate.per_sec, rate.burst
                    ),
                    "Reuse connections (HTTP keep-alive) and check the answers you get (a missing token, a limit); a connection whose request succeeds does not count. An operator can raise server.connection_rate_per_ip and server.connection_burst_per_ip.",
                ),
                rate.retry_after_secs(),
            ),
            Refusal::PerIp(n) => (
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_connections",
                    format!("this client address already holds {n} connections"),
                    "Reuse connections (HTTP keep-alive) and close streams you no longer read; an operator can raise server.max_connections_per_ip (behind a reverse proxy every client shares its address).",
                ),
                5,
            ),
            Refusal::Full(n) => (
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "server_busy",
                    format!("all {n} connections are in use by requests and streams"),
                    "Retry shortly; an operator can raise server.max_connections.",
                ),
                1,
            ),
        };
        let body = serde_json::to_string(&error.body()).unwrap_or_default();
        format!(
            "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: {retry}\r\nconnection: close\r\n\r\n{body}",
            error.status.as_u16(),
            error.status.canonical_reason().unwrap_or(""),
            body.len(),
        )
        .into_bytes()
    }
}

/// New connections one client address may open: `per_sec` a second after a burst of
/// `burst`; a connection whose request succeeds gives its token back. `per_sec` 0: no limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnRate {
    pub per_sec: f64,
    pub burst: f64,
}

impl ConnRate {
    pub const OFF: ConnRate = ConnRate {
        per_sec: 0.0,
        burst: 0.0,
    };

    fn is_off(&self) -> bool {
        self.per_sec <= 0.0
    }

    /// Seconds until a refused client has a token again (at least 1).
    fn retry_after_secs(&self) -> u64 {
        (1.0 / self.per_sec).ceil().max(1.0) as u64
    }
}

/// One client's tokens, as of `at`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Tokens now, refilled since `at` and capped at the burst.
    fn refill(&mut self, rate: ConnRate, now: Instant) -> f64 {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * rate.per_sec;
        self.tokens = (self.tokens + gained).min(rate.burst);
        self.at = now;
        self.tokens
    }
}

/// How often buckets that are full again (as good as none) are forgotten.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The open connections.
#[derive(Debug)]
pub struct Registry {
    max_total: usize,
    max_per_ip: usize,
    rate: ConnRate,
    epoch: Instant,
    inner: Mutex<Inner>,
    answers: std::sync::OnceLock<[Vec<u8>; 3]>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    conns: HashMap<u64, Arc<ConnState>>,
    per_ip: HashMap<IpAddr, usize>,
    buckets: HashMap<IpAddr, Bucket>,
    pruned: Option<Instant>,
}

impl Inner {
    /// Takes a new-connection token from `client`'s bucket; false if it has none.
    fn take_token(&mut self, client: IpAddr, rate: ConnRate, now: Instant) -> bool {
        if self
            .pruned
            .is_none_or(|t| now.duration_since(t) >= PRUNE_EVERY)
        {
            self.pruned = Some(now);
            let per_ip = &self.per_ip;
            self.buckets
                .retain(|ip, b| per_ip.contains_key(ip) || b.refill(rate, now) < rate.burst);
        }
        let bucket = self.buckets.entry(client).or_insert(Bucket {
            tokens: rate.burst,
            at: now,
        });
        if bucket.refill(rate, now) < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }
}

/// A connection's place in the registry; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    registry: Arc<Registry>,
    id: u64,
    client: IpAddr,
    pub state: Arc<ConnState>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.registry.inner.lock().expect("not poisoned");
        inner.conns.remove(&self.id);
        if let Some(n) = inner.per_ip.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                inner.per_ip.remove(&self.client);
            }
        }
    }
}

/// The address limits count by: IPv4 as is, IPv6 by its /64.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

impl Registry {
    pub fn new(max_total: usize, max_per_ip: usize, rate: ConnRate) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_ip,
            rate,
            epoch: Instant::now(),
            inner: Mutex::new(Inner::default()),
            answers: std::sync::OnceLock::new(),
        })
    }

    /// Admits a connection from `ip`, closing an idle one if all are taken.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Refusal> {
        let client = client_key(ip);
        let mut inner = self.inner.lock().expect("not poisoned");
        if !self.rate.is_off() && !inner.take_token(client, self.rate, Instant::now()) {
            return Err(Refusal::Rate(self.rate));
        }
        let from_client = inner.per_ip.get(&client).copied().unwrap_or(0);
        if from_client >= self.max_per_ip {
            return Err(Refusal::PerIp(self.max_per_ip));
        }
        // Connections already told to close are on their way out: they do not count.
        let open = inner
            .conns
            .values()
            .filter(|c| !c.shed.load(Ordering::Relaxed))
            .count();
        if open >= self.max_total {
            let victim = inner
                .conns
                .values()
                .filter_map(|c| c.shed_rank().map(|rank| (rank, c)))
                .min_by_key(|(rank, _)| *rank)
                .map(|(_, c)| c.clone());
            let Some(victim) = victim else {
                return Err(Refusal::Full(self.max_total));
            };
            victim.shed.store(true, Ordering::Relaxed);
            victim.shed_now.notify_one();
            metrics::counter!("droidpilot_connections_shed_total").increment(1);
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let refund = (!self.rate.is_off()).then(|| (Arc::downgrade(self), client));
        let state = Arc::new(ConnState::new(self.epoch, refund));
        inner.conns.insert(id, state.clone());
        *inner.per_ip.entry(client).or_default() += 1;
        Ok(Slot {
            registry: self.clone(),
            id,
            client,
            state,
        })
    }

    /// Gives `client` back the token its connection took (that connection succeeded).
    fn refund(&self, client: IpAddr) {
        let mut inner = self.inner.lock().expect("not poisoned");
        if let Some(b) = inner.buckets.get_mut(&client) {
            b.refill(self.rate, Instant::now());
            b.tokens = (b.tokens + 1.0).min(self.rate.burst);
        }
    }

    /// The answer to write for `refusal`, built once per kind: under a flood of refused
    /// connections each costs the accept loop a write, not a JSON serialization.
    pub fn answer(&self, refusal: Refusal) -> &[u8] {
        let answers = self.answers.get_or_init(|| {
            [
                Refusal::Rate(self.rate),
                Refusal::PerIp(self.max_per_ip),
                Refusal::Full(self.max_total),
            ]
            .map(Refusal::response)
        });
        match refusal {
            Refusal::Rate(_) => &answers[0],
            Refusal::PerIp(_) => &answers[1],
            Refusal::Full(_) => &answers[2],
        }
    }

    /// Open connections (those told to close included).
    pub fn len(&self) -> usize {
        self.inner.lock().expect("not poisoned").conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_per_client_limit_counts_open_connections() {
        let r = Registry::new(100, 2, ConnRate::OFF);
        let a = r.admit(ip("10.0.0.1")).unwrap();
        let _b = r.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(r.admit(ip("10.0.0.1")).unwrap_err(), Refusal::PerIp(2));
        assert!(
            r.admit(ip("10.0.0.2")).is_ok(),
            "another client is not affected"
        );
        drop(a);
        assert!(
            r.admit(ip("10.0.0.1")).is_ok(),
            "a closed one frees its place"
        );
        // One IPv6 host: its /64.
        let _c = r.admit(ip("2001:db8::1")).unwrap();
        let _d = r.admit(ip("2001:db8::2")).unwrap();
        assert!(r.admit(ip("2001:db8::3")).is_err());
    }

    #[test]
    fn when_full_refused_then_silent_then_idle_connections_go_and_busy_ones_never() {
        let shed = |s: &Slot| s.state.shed.load(Ordering::Relaxed);
        let r = Registry::new(4, 10, ConnRate::OFF);
        let proven = r.admit(ip("10.0.0.1")).unwrap();
        proven.state.answered(200);
        let silent = r.admit(ip("10.0.0.2")).unwrap();
        let refused = r.admit(ip("10.0.0.3")).unwrap();
        refused.state.answered(401);
        let streaming = r.admit(ip("10.0.0.4")).unwrap();
        let _stream = streaming.state.request_started();

        let new1 = r.admit(ip("10.0.0.5")).unwrap();
        assert!(shed(&refused) && !shed(&silent) && !shed(&proven));
        drop(refused);
        let _r1 = new1.state.request_started();
        let new2 = r.admit(ip("10.0.0.6")).unwrap();
        assert!(shed(&silent) && !shed(&proven), "then the silent one");
        drop(silent);
        let _r2 = new2.state.request_started();
        let new3 = r.admit(ip("10.0.0.7")).unwrap();
        assert!(shed(&proven), "then the idle one");
        drop(proven);
        let _r3 = new3.state.request_started();
        assert!(!shed(&streaming));
        assert_eq!(r.admit(ip("10.0.0.8")).unwrap_err(), Refusal::Full(4));
    }

    #[test]
    fn a_client_whose_connections_fail_is_held_to_the_rate_and_success_gives_tokens_back() {
        let rate = ConnRate {
            per_sec: 0.001,
            burst: 3.0,
        };
        let r = Registry::new(100, 100, rate);
        let ok = r.admit(ip("10.0.0.1")).unwrap();
        ok.state.answered(200);
        ok.state.answered(200);
        let failed: Vec<_> = (0..3).map(|_| r.admit(ip("10.0.0.1")).unwrap()).collect();
        failed[0].state.answered(401);
        assert_eq!(
            r.admit(ip("10.0.0.1")).unwrap_err(),
            Refusal::Rate(rate),
            "three tokens: one given back by the success, none by the failures"
        );
        assert!(
            r.admit(ip("10.0.0.2")).is_ok(),
            "another client has its own"
        );
        failed[1].state.answered(101);
        assert!(
            r.admit(ip("10.0.0.1")).is_ok(),
            "a late success gives its token back"
        );
    }
}
