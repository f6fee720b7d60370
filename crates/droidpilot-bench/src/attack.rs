//! `droidpilot bench attack`: does a normal authenticated GET still answer while one
//! client (or twenty) tries to take the server down before authenticating? Each attack
//! runs against a real `droidpilot serve` (this binary, a child process on a loopback
//! port, started with a soft open-file limit of 1,024 as systemd gives services, and the
//! shipped defaults) while a victim on another thread sends `GET /v1/tasks?limit=1` with
//! its token on a fresh connection every 50 ms and records how long each took. Figures,
//! not pass/fail: p50/p99 against the 1 s target.
//!
//! Attackers connect from 127.0.0.2 and up (one client, or twenty), the victim from
//! 127.0.0.1; every attacker socket reconnects 1 s after the server closes or refuses it.
//! Loopback only, bounded: each attack lasts `secs` (plus a 3 s ramp), the server is
//! killed at the end, its scratch directory removed.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

const VICTIM_TOKEN: &str = "bench-victim-token-0123456789";
const ATTACKER_TOKEN: &str = "bench-attacker-token-0123456789";
/// The victim's request timeout: a request that takes longer counts as failed at this.
const VICTIM_TIMEOUT: Duration = Duration::from_secs(5);
const VICTIM_INTERVAL: Duration = Duration::from_millis(50);
const RECONNECT: Duration = Duration::from_secs(1);
const RAMP: Duration = Duration::from_secs(2);

/// What an attacker socket does once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Sends nothing.
    Silent,
    /// Sends a request head one short line a second, never finishing it.
    Slowloris,
    /// Opens a WebSocket with the attacker's token and holds it.
    WebSocket,
    /// Resumes the SSE stream of an unfinished task past its end and holds it.
    Sse,
}

#[derive(Debug, Clone, Copy)]
struct Attack {
    kind: Kind,
    sockets: usize,
    /// Client addresses the sockets are spread over.
    clients: u8,
}

impl Attack {
    fn describe(&self) -> String {
        let what = match self.kind {
            Kind::Silent => "sockets that send nothing",
            Kind::Slowloris => "slowloris sockets (reconnecting)",
            Kind::WebSocket => "WebSockets held open",
            Kind::Sse => "SSE streams resumed past the end",
        };
        let who = if self.clients == 1 {
            "1 client".to_string()
        } else {
            format!("{} clients", self.clients)
        };
        format!("{} {what}, {who}", self.sockets)
    }
}

/// The attacks, in the order run.
fn attacks() -> Vec<Attack> {
    let a = |kind, sockets, clients| Attack {
        kind,
        sockets,
        clients,
    };
    vec![
        a(Kind::Silent, 2_000, 1),
        a(Kind::Silent, 2_000, 20),
        a(Kind::Slowloris, 1_100, 1),
        a(Kind::Slowloris, 1_100, 20),
        a(Kind::WebSocket, 10_000, 1),
        a(Kind::WebSocket, 10_000, 20),
        a(Kind::Sse, 1_150, 1),
        a(Kind::Sse, 1_150, 20),
    ]
}

/// How the victim fared during one attack, and what the attacker got.
#[derive(Debug)]
pub struct Row {
    pub attack: String,
    /// Attacker sockets the server kept open at once, at most.
    pub attacker_peak: usize,
    /// Attacker connections the server refused or closed.
    pub attacker_cut: usize,
    pub latencies: Vec<Duration>,
    pub failed: usize,
}

impl Row {
    fn percentile(&self, p: f64) -> Duration {
        let mut v = self.latencies.clone();
        v.sort();
        if v.is_empty() {
            return VICTIM_TIMEOUT;
        }
        v[((v.len() - 1) as f64 * p).round() as usize]
    }
}

/// `droidpilot bench attack`: runs every attack for `secs` and returns one row each
/// (the first with no attack).
pub async fn bench_attack(secs: u64) -> anyhow::Result<(String, Vec<Row>)> {
    let own = droidpilot_http::listen::raise_fd_limit();
    if let Some((_, soft)) = own
        && soft < 25_000
    {
        eprintln!(
            "note: this process may open {soft} files; the largest attack holds 10,000 sockets (raise `ulimit -n` for it)"
        );
    }
    let server = ServerProc::start().await?;
    let task = queued_task(server.addr).await?;
    let header = format!(
        "server: `droidpilot serve` on {} (child process; soft open-file limit 1024 at exec, {} after its start-up), shipped defaults",
        server.addr,
        server.fd_limit()
    );
    let mut rows = vec![measure(&server, None, &task, secs).await];
    for attack in attacks() {
        eprintln!("attack: {} …", attack.describe());
        rows.push(measure(&server, Some(attack), &task, secs).await);
        if !server.alive() {
            anyhow::bail!("the server exited during `{}`", attack.describe());
        }
    }
    Ok((header, rows))
}

/// Runs `attack` (or nothing) and the victim; the attack is torn down before returning.
async fn measure(server: &ServerProc, attack: Option<Attack>, task: &str, secs: u64) -> Row {
    let counters = Arc::new(Counters::default());
    let mut attackers = JoinSet::new();
    if let Some(a) = attack {
        for i in 0..a.sockets {
            let source = Ipv4Addr::new(127, 0, 0, 2 + (i % a.clients as usize) as u8);
            let start = RAMP.mul_f64(i as f64 / a.sockets as f64);
            let (addr, task, c) = (server.addr, task.to_string(), counters.clone());
            attackers.spawn(async move {
                tokio::time::sleep(start).await;
                attacker(a.kind, source, addr, task, c).await;
            });
        }
        tokio::time::sleep(RAMP + Duration::from_secs(1)).await;
    }
    let addr = server.addr;
    let victim = std::thread::spawn(move || victim(addr, Duration::from_secs(secs)));
    let (latencies, failed) = tokio::task::spawn_blocking(move || victim.join())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    attackers.shutdown().await;
    // Let the server notice the closed sockets before the next attack.
    tokio::time::sleep(Duration::from_secs(2)).await;
    Row {
        attack: attack.map_or("none".into(), |a| a.describe()),
        attacker_peak: counters.peak.load(Ordering::Relaxed),
        attacker_cut: counters.cut.load(Ordering::Relaxed),
        latencies,
        failed,
    }
}

#[derive(Debug, Default)]
struct Counters {
    open: AtomicUsize,
    peak: AtomicUsize,
    cut: AtomicUsize,
}

/// One attacker socket, reconnecting `RECONNECT` after each close, until aborted.
async fn attacker(kind: Kind, source: Ipv4Addr, addr: SocketAddr, task: String, c: Arc<Counters>) {
    loop {
        if let Ok(mut s) = connect_from(source, addr).await {
            let held = hold(kind, &mut s, addr, &task, &c).await;
            if held {
                c.open.fetch_sub(1, Ordering::Relaxed);
            }
            c.cut.fetch_add(1, Ordering::Relaxed);
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

async fn connect_from(source: Ipv4Addr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::V4(SocketAddrV4::new(source, 0)))?;
    socket.connect(addr).await
}

/// Plays `kind` on a connected socket until the server ends it; returns whether the
/// socket was counted open (and so must be uncounted).
async fn hold(kind: Kind, s: &mut TcpStream, addr: SocketAddr, task: &str, c: &Counters) -> bool {
    let request = match kind {
        Kind::Silent | Kind::Slowloris => None,
        Kind::WebSocket => Some(format!(
            "GET /v1/ws HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ATTACKER_TOKEN}\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )),
        Kind::Sse => Some(format!(
            "GET /v1/tasks/{task}/events?since=1000000 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {ATTACKER_TOKEN}\r\n\r\n"
        )),
    };
    if let Some(r) = request {
        if s.write_all(r.as_bytes()).await.is_err() {
            return false;
        }
        let mut head = [0u8; 12];
        if s.read_exact(&mut head).await.is_err()
            || !(head.ends_with(b"101") || head.ends_with(b"200"))
        {
            return false;
        }
    } else {
        // Accepted or refused? A refusal is written at once; wait a moment for it.
        let mut b = [0u8; 1];
        if let Ok(r) = tokio::time::timeout(Duration::from_millis(200), s.peek(&mut b)).await {
            let _ = r;
            return false;
        }
    }
    let now = c.open.fetch_add(1, Ordering::Relaxed) + 1;
    c.peak.fetch_max(now, Ordering::Relaxed);
    if kind == Kind::Slowloris {
        trickle(s).await;
    } else {
        let mut sink = vec![0u8; 4096];
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    }
    true
}

/// A request head that never ends: a short header line every second.
async fn trickle(s: &mut TcpStream) {
    if s.write_all(b"GET /v1/tasks HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .is_err()
    {
        return;
    }
    let mut b = [0u8; 256];
    loop {
        tokio::select! {
            r = s.read(&mut b) => if !matches!(r, Ok(n) if n > 0) { return },
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                if s.write_all(b"x-slow: 1\r\n").await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The victim: a normal authenticated GET on a fresh connection every 50 ms, for `dur`,
/// on a thread and runtime of its own. Returns the latencies of the answered ones and
/// how many failed (no 200 within `VICTIM_TIMEOUT`).
fn victim(addr: SocketAddr, dur: Duration) -> (Vec<Duration>, usize) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return (Vec::new(), 0);
    };
    rt.block_on(async move {
        let (mut lat, mut failed) = (Vec::new(), 0);
        let end = Instant::now() + dur;
        while Instant::now() < end {
            let t0 = Instant::now();
            match tokio::time::timeout(VICTIM_TIMEOUT, normal_get(addr)).await {
                Ok(true) => lat.push(t0.elapsed()),
                _ => {
                    lat.push(t0.elapsed().max(VICTIM_TIMEOUT));
                    failed += 1;
                }
            }
            tokio::time::sleep(VICTIM_INTERVAL.saturating_sub(t0.elapsed())).await;
        }
        (lat, failed)
    })
}

async fn normal_get(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!(
        "GET /v1/tasks?limit=1 HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {VICTIM_TOKEN}\r\nconnection: close\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    out.starts_with(b"HTTP/1.1 200")
}

/// Submits a replay task; with no phones it stays queued (unfinished) for the SSE attack.
async fn queued_task(addr: SocketAddr) -> anyhow::Result<String> {
    let body = r#"{"instruction":"wait","agent":{"kind":"replay","actions":[{"action":"home"}]}}"#;
    let req = format!(
        "POST /v1/tasks HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {VICTIM_TOKEN}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(req.as_bytes()).await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    let json = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| anyhow::anyhow!("submitting the task: {e}: {out}"))?;
    v["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("submitting the task: {out}"))
}

/// The server under attack: `droidpilot serve` as a child process.
struct ServerProc {
    child: std::process::Child,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

impl ServerProc {
    async fn start() -> anyhow::Result<Self> {
        let dir =
            std::env::temp_dir().join(format!("droidpilot-bench-attack-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("attack.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\ntokens = [\"{VICTIM_TOKEN}\", \"{ATTACKER_TOKEN}\"]\n[devices]\nsim = []\n[devices.adb]\nenabled = false\n[log]\nlevel = \"warn\"\n"
            ),
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let log = std::fs::File::create(dir.join("server.log"))?;
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--bind")
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(dir.join("data"))
            .current_dir(&dir)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log);
        soft_fd_limit(&mut cmd, 1024);
        let server = Self {
            child: cmd.spawn()?,
            addr,
            dir,
        };
        server.ready().await?;
        Ok(server)
    }

    async fn ready(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(self.addr).await {
                let req = format!(
                    "GET /readyz HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
                    self.addr
                );
                let mut out = Vec::new();
                if s.write_all(req.as_bytes()).await.is_ok()
                    && s.read_to_end(&mut out).await.is_ok()
                    && out.starts_with(b"HTTP/1.1 200")
                {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        anyhow::bail!("the server did not become ready in 60 s; its log:\n{log}")
    }

    fn alive(&self) -> bool {
        std::fs::metadata(format!("/proc/{}", self.child.id())).is_ok()
            && !std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
                .unwrap_or_default()
                .contains(") Z ")
    }

    /// The child's soft open-file limit now, as Linux reports it.
    fn fd_limit(&self) -> String {
        std::fs::read_to_string(format!("/proc/{}/limits", self.child.id()))
            .ok()
            .and_then(|l| {
                l.lines()
                    .find(|l| l.starts_with("Max open files"))
                    .and_then(|l| l.split_whitespace().nth(3).map(str::to_string))
            })
            .unwrap_or_else(|| "unknown".into())
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the child with this soft open-file limit (the hard one unchanged).
#[cfg(unix)]
fn soft_fd_limit(cmd: &mut std::process::Command, soft: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only calls getrlimit and setrlimit,
    // which are async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur = (soft as libc::rlim_t).min(lim.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn soft_fd_limit(_: &mut std::process::Command, _: u64) {}

/// The report as a table.
pub fn format_report(header: &str, rows: &[Row]) -> String {
    let mut out = format!(
        "{header}\nvictim: GET /v1/tasks?limit=1 with a token, a fresh connection every 50 ms; target p99 <= 1 s\n\n"
    );
    let _ = writeln!(
        out,
        "{:<58} {:>6} {:>6} {:>6} {:>8} {:>8} {:>8}  p99 <= 1 s",
        "attack", "held", "cut", "GETs", "p50 ms", "p99 ms", "failed"
    );
    for r in rows {
        let p99 = r.percentile(0.99);
        let _ = writeln!(
            out,
            "{:<58} {:>6} {:>6} {:>6} {:>8.1} {:>8.1} {:>8}  {}",
            r.attack,
            r.attacker_peak,
            r.attacker_cut,
            r.latencies.len(),
            r.percentile(0.5).as_secs_f64() * 1000.0,
            p99.as_secs_f64() * 1000.0,
            r.failed,
            if p99 <= Duration::from_secs(1) && r.failed == 0 {
                "yes"
            } else {
                "NO"
            }
        );
    }
    out.push_str("\nheld: attacker sockets the server kept open at once (peak); cut: attacker connections refused or closed by the server\n");
    out
}
