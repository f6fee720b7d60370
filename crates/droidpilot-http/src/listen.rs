//! The accept loop: connections are served by hyper's HTTP/1 server, admitted first by
//! the connection registry (`conns.rs`: a per-client limit, a total limit that closes
//! idle connections to make room), with an idle timeout (hyper's header timer, which runs
//! from the moment a connection waits for a request) and a header-read timeout
//! (`HeaderClock`: from a request's first byte to the end of its head), all before
//! authentication, so slow, silent or numerous clients cannot exhaust the server.
//! hyper's own answers to unreadable requests (400, 414, 431, written before any of our
//! layers run) are given the one JSON error shape here.

use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use super::conns::{ConnRate, Guarded, Phase, Registry, Slot};
use super::error::ApiError;

/// The largest request head (request line and headers) the server reads; a larger one
/// gets 431. Without it hyper's only bound is its read buffer (~408 KiB), checked before
/// each read: a head that arrived in a few large reads was parsed and served whatever its
/// size, so the limit depended on how the kernel split the bytes.
const MAX_HEAD_BYTES: usize = 400 * 1024;

/// Connection limits, from `[server]`.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// From a request's first byte to the end of its headers.
    pub header_read_timeout: Duration,
    /// A connection waiting for its (next) request, with nothing sent.
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// New connections per client address that do not succeed.
    pub connection_rate: ConnRate,
}

impl ConnLimits {
    pub fn from_config(server: &crate::config::ServerConfig) -> Self {
        Self {
            header_read_timeout: Duration::from_secs(server.header_read_timeout_secs),
            idle_timeout: Duration::from_secs(server.idle_timeout_secs),
            max_connections: server.max_connections,
            max_connections_per_ip: server.max_connections_per_ip,
            connection_rate: ConnRate {
                per_sec: server.connection_rate_per_ip,
                burst: server.connection_burst_per_ip as f64,
            },
        }
    }
}

/// Accepts connections until `stop` resolves, then asks every connection to finish its
/// request in flight and close, and returns once they all have.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) {
    let registry = Registry::new(
        limits.max_connections,
        limits.max_connections_per_ip,
        limits.connection_rate,
    );
    // Connections watch `closing`; each holds a clone of `open`, so `closed()` resolves
    // when the last one ends.
    let (closing, _) = watch::channel(false);
    let (open, _) = watch::channel(());
    let mut stop = pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let slot = match registry.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(refusal) => {
                // Never waits: a refused client that does not read loses the answer.
                let _ = stream.try_write(registry.answer(refusal));
                tracing::debug!(%peer, ?refusal, "connection refused");
                metrics::counter!("droidpilot_connections_refused_total").increment(1);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tracing::trace!(%peer, "connection accepted");
        let conn = serve_connection(stream, slot, router.clone(), limits, closing.subscribe());
        let open = open.subscribe();
        // Untracked by design: each connection holds `open`, and `serve` waits for the last
        // one to close (after `closing`) before it returns, which is before `Core::shutdown`.
        tokio::spawn(async move {
            conn.await;
            drop(open);
        });
    }
    drop(listener);
    let _ = closing.send(true);
    open.closed().await;
}

async fn serve_connection(
    stream: TcpStream,
    slot: Slot,
    router: Router,
    limits: ConnLimits,
    mut closing: watch::Receiver<bool>,
) {
    let state = slot.state.clone();
    let per_request = state.clone();
    // Each request is counted in flight until its response body ends (an SSE stream: until
    // it closes), and can reach its connection (a WebSocket keeps its stream permit there).
    let service = tower::service_fn(move |req: axum::http::Request<Incoming>| {
        let (router, conn) = (router.clone(), per_request.clone());
        async move {
            let mut req = req.map(Body::new);
            let in_flight = conn.request_started();
            req.extensions_mut().insert(conn.clone());
            let resp = router.oneshot(req).await?;
            conn.answered(resp.status().as_u16());
            Ok::<_, std::convert::Infallible>(resp.map(|b| Guarded::wrap(b, in_flight)))
        }
    });
    let service = TowerToHyperService::new(service);
    // The slot lives in the socket: a WebSocket takes the socket, and its slot, along.
    let io = TokioIo::new(HeaderClock::new(
        ParseErrorsAsJson::new(stream),
        limits.header_read_timeout,
        slot,
    ));
    let mut builder = hyper::server::conn::http1::Builder::new();
    // hyper's header timer starts when the connection waits for a request, before any
    // byte: that makes it the idle timeout. `HeaderClock` times the head itself.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .max_header_size(MAX_HEAD_BYTES)
        .keep_alive(true);
    let mut conn = pin!(builder.serve_connection(io, service).with_upgrades());
    let r = tokio::select! {
        r = conn.as_mut() => r,
        // Closed to make room for another connection (it was doing nothing).
        () = state.shed_now.notified() => return,
        _ = stopping(&mut closing) => {
            // Finish the request in flight (an idle connection closes at once).
            conn.as_mut().graceful_shutdown();
            conn.as_mut().await
        }
    };
    if let Err(e) = r {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// Pending connections the kernel queues before the accept loop takes them (capped by
/// `net.core.somaxconn`). tokio's default, 1,024, overflows under a connection flood,
/// and a dropped SYN costs a normal client a 1 s retransmit.
const BACKLOG: u32 = 4096;

/// Binds `addr` for `serve` (address reuse as `TcpListener::bind` sets it, a deeper backlog).
pub fn bind(addr: std::net::SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// The process's open-file limit, before and after raising the soft limit to the hard
/// one: every connection is a file descriptor, and systemd's default soft limit (1,024)
/// is below `max_connections` plus the database, adb and log files. libc directly (a
/// dependency already): two calls do not need a crate.
#[cfg(unix)]
pub fn raise_fd_limit() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let before: u64 = lim.rlim_cur;
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given; a refusal leaves the limit as is.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Some((before, lim.rlim_max));
        }
    }
    Some((before, before))
}

#[cfg(not(unix))]
pub fn raise_fd_limit() -> Option<(u64, u64)> {
    None
}

/// Resolves when the server starts closing (the guard `wait_for` returns is not Send).
async fn stopping(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|c| *c).await.map(|_| ());
}

/// The response hyper writes by itself for a request it cannot parse: a status line,
/// `content-length: 0`, a date. Only these statuses come from hyper's parser.
fn is_hyper_parse_error(buf: &[u8]) -> Option<StatusCode> {
    let status = [
        (b"HTTP/1.1 400 ", StatusCode::BAD_REQUEST),
        (b"HTTP/1.1 414 ", StatusCode::URI_TOO_LONG),
        (
            b"HTTP/1.1 431 ",
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ),
    ]
    .into_iter()
    .find(|(prefix, _)| buf.starts_with(*prefix))?
    .1;
    let head = std::str::from_utf8(buf).ok()?;
    (head.ends_with("\r\n\r\n")
        && head
            .to_ascii_lowercase()
            .contains("\r\ncontent-length: 0\r\n"))
    .then_some(status)
}

/// The same response with the one error shape as its body. hyper closes the connection
/// after it, which `connection: close` says.
fn json_parse_error(status: StatusCode) -> Vec<u8> {
    let (code, message, hint) = match status {
        StatusCode::URI_TOO_LONG => (
            "uri_too_long",
            "the request URI is longer than the server accepts (64 KiB)",
            "Send long values in a JSON body instead of the URL; a list cursor is always short.",
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            "headers_too_large",
            "the request headers are larger than the server accepts (at most 100 headers, 400 KiB in all)",
            "Send fewer or smaller headers (large cookies are the usual cause).",
        ),
        _ => (
            "bad_request",
            "the request is not valid HTTP/1.1",
            "Check the request line and headers; any HTTP client library sends valid requests.",
        ),
    };
    let body = serde_json::to_string(&ApiError::new(status, code, message, hint).body())
        .unwrap_or_default();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
        body
    )
    .into_bytes()
}

/// A socket whose writes pass through unchanged, except hyper's bodiless parse-error
/// responses, which are replaced by `json_parse_error`. Such a response is a head alone,
/// so it arrives as one buffer (or one non-empty slice of a vectored write).
struct ParseErrorsAsJson<T> {
    inner: T,
    /// A replacement being written: bytes, how many are written, the length of the
    /// buffer it replaces (reported to hyper once all are written).
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<T> ParseErrorsAsJson<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            replacing: None,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ParseErrorsAsJson<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ParseErrorsAsJson<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.replacing.is_none() {
            match is_hyper_parse_error(buf) {
                Some(status) => this.replacing = Some((json_parse_error(status), 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        this.poll_replacement(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.replacing.is_none() {
            let mut filled = bufs.iter().filter(|b| !b.is_empty());
            match (filled.next(), filled.next()) {
                (Some(head), None) if is_hyper_parse_error(head).is_some() => {
                    let status = is_hyper_parse_error(head).expect("checked");
                    this.replacing = Some((json_parse_error(status), 0, head.len()));
                }
                _ => return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
            }
        }
        this.poll_replacement(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<T: AsyncWrite + Unpin> ParseErrorsAsJson<T> {
    /// Writes the replacement; reports the replaced buffer as written once all of it is.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let (bytes, written, replaced) = self.replacing.as_mut().expect("a replacement is set");
        while *written < bytes.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        let replaced = *replaced;
        self.replacing = None;
        Poll::Ready(Ok(replaced))
    }
}

/// Where a connection is in its request cycle, as seen from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// Waiting for a request; hyper's idle timer applies.
    Idle,
    /// A request has begun and its head has not ended (`\r\n\r\n`): the clock runs.
    Reading,
    /// The head is complete; the body and the response are the handler's business.
    InRequest,
    /// Switched protocols (WebSocket): no more HTTP heads.
    Upgraded,
}

/// Closes a connection whose request head does not end within `limit` of its first byte
/// (a slowloris sending a byte at a time). A write (the response) ends a request cycle; a
/// `101 Switching Protocols` ends HTTP on the connection.
struct HeaderClock<T> {
    inner: T,
    limit: Duration,
    /// The connection's place in the registry, told where the connection is; freed when
    /// the socket is dropped (after a WebSocket closes, for an upgraded one).
    slot: Option<Slot>,
    state: Head,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The last bytes read, for a `\r\n\r\n` split across reads.
    tail: Vec<u8>,
}

impl<T> HeaderClock<T> {
    fn new(inner: T, limit: Duration, slot: impl Into<Option<Slot>>) -> Self {
        Self {
            inner,
            limit,
            slot: slot.into(),
            state: Head::Idle,
            deadline: None,
            tail: Vec::new(),
        }
    }

    fn on_read(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.state == Head::Idle {
            self.set(Head::Reading);
            self.deadline = Some(Box::pin(tokio::time::sleep(self.limit)));
            self.tail.clear();
        }
        if self.state != Head::Reading {
            return;
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.windows(4).any(|w| w == b"\r\n\r\n") {
            self.set(Head::InRequest);
            self.deadline = None;
            self.tail.clear();
        } else {
            let keep = self.tail.len().saturating_sub(3);
            self.tail.drain(..keep);
        }
    }

    fn on_write(&mut self, first: &[u8]) {
        if self.state == Head::Upgraded || first.is_empty() {
            return;
        }
        self.set(if first.starts_with(b"HTTP/1.1 101 ") {
            Head::Upgraded
        } else {
            Head::Idle
        });
        self.deadline = None;
    }

    fn set(&mut self, state: Head) {
        if self.state == state {
            return;
        }
        self.state = state;
        if let Some(slot) = &self.slot {
            slot.state.set_phase(match state {
                Head::Idle => Phase::Idle,
                Head::Reading => Phase::Reading,
                Head::InRequest => Phase::InRequest,
                Head::Upgraded => Phase::Upgraded,
            });
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for HeaderClock<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.on_read(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = this
                    .deadline
                    .as_mut()
                    .is_some_and(|d| d.as_mut().poll(cx).is_ready());
                if expired {
                    tracing::debug!("request headers not received in time; closing");
                    return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for HeaderClock<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.on_write(buf);
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            this.on_write(first);
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hyper_bodiless_parse_errors_are_replaced() {
        let hyper_414 = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Tue, 24 Nov 2026 06:00:00 GMT\r\n\r\n";
        assert_eq!(
            is_hyper_parse_error(hyper_414),
            Some(StatusCode::URI_TOO_LONG)
        );
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 80\r\n\r\n";
        assert_eq!(is_hyper_parse_error(ours), None);
        assert_eq!(
            is_hyper_parse_error(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            None
        );
        let out = String::from_utf8(json_parse_error(StatusCode::URI_TOO_LONG)).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "uri_too_long");
    }

    #[tokio::test]
    async fn the_header_clock_follows_request_cycles() {
        let mut c = HeaderClock::new((), Duration::from_secs(1), None);
        c.on_read(b"GET / HTTP/1.1\r\nhost: x\r");
        assert_eq!(c.state, Head::Reading);
        assert!(c.deadline.is_some());
        c.on_read(b"\n\r");
        c.on_read(b"\n");
        assert_eq!(
            c.state,
            Head::InRequest,
            "the end of a head split across reads"
        );
        assert!(c.deadline.is_none());
        c.on_read(b"a body\r\n\r\n");
        assert_eq!(c.state, Head::InRequest);
        c.on_write(b"HTTP/1.1 200 OK\r\n");
        assert_eq!(c.state, Head::Idle);
        c.on_read(b"GET /v1/ws HTTP/1.1\r\n\r\n");
        c.on_write(b"HTTP/1.1 101 Switching Protocols\r\n");
        assert_eq!(c.state, Head::Upgraded);
        c.on_read(b"\x81\x05hello");
        c.on_write(b"\x81\x04pong");
        assert_eq!(c.state, Head::Upgraded, "WebSocket frames are not requests");
        assert!(c.deadline.is_none());
    }
}
