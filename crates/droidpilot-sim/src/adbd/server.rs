//! Connections and streams of the simulated adbd.
//!
//! Owns the accept loop, the handshake (CNXN, optional AUTH), the stream table (OPEN,
//! OKAY, WRTE, CLSE; several streams per connection, one WRTE in flight per stream) and
//! the services behind a stream (`shell:`, `shell,v2,…:`, `exec:`, `framebuffer:`,
//! `sync:`).
//! Each connection has one writer task that sends one encoded message per `write_all`
//! with TCP_NODELAY set, because a header and payload in two writes meet delayed ACKs on
//! loopback and cost ~40 ms per round trip.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::cmdline::{self, CmdOutput};
use super::commands::{Commands, PhoneState};
use super::packet::{self, A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_WRTE, Packet, PacketError};
use super::shell_v2;
use droidpilot_core::device::Device;

/// How a simulated adbd presents itself.
#[derive(Debug, Clone)]
pub struct AdbdOptions {
    /// `ro.product.name` in the CNXN banner.
    pub product: String,
    /// `ro.product.model` in the banner; `None` takes the device's model.
    pub model: Option<String>,
    /// `ro.product.device` in the banner.
    pub device_name: String,
    /// Require the AUTH exchange (token, then signature or public key) before CNXN.
    pub auth: bool,
    /// Our maximum payload; the connection uses min(host's, ours).
    pub max_payload: u32,
    /// Whether the ADB Keyboard IME (`com.android.adbkeyboard/.AdbIME`) is installed. It
    /// starts installed but not selected, as on a phone where a user installed it.
    pub adb_keyboard: bool,
}

impl Default for AdbdOptions {
    fn default() -> Self {
        Self {
            product: "droidpilot_sim".into(),
            model: None,
            device_name: "sim".into(),
            auth: false,
            max_payload: 256 * 1024,
            adb_keyboard: true,
        }
    }
}

/// Listener modes the test harness and `droidpilot sim` switch between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Serving,
    /// Connections are closed as they arrive (the device looks unplugged).
    Refusing,
    Closed,
}

/// A running simulated adbd. Cloning shares it.
#[derive(Clone)]
pub struct Adbd {
    device: Arc<dyn Device>,
    opts: AdbdOptions,
    state: Arc<Mutex<PhoneState>>,
    /// Bumped to drop every live connection.
    generation: watch::Sender<u64>,
    mode: watch::Sender<Mode>,
}

impl std::fmt::Debug for Adbd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adbd")
            .field("serial", &self.device.serial())
            .field("opts", &self.opts)
            .finish()
    }
}

/// Serves `device` on `listener` until the listener fails. For control over connections
/// (dropping them, refusing new ones) use [`Adbd::new`] and [`Adbd::serve`].
pub async fn serve(
    listener: TcpListener,
    device: Arc<dyn Device>,
    opts: AdbdOptions,
) -> std::io::Result<()> {
    Adbd::new(device, opts).serve(listener).await
}

impl Adbd {
    pub fn new(device: Arc<dyn Device>, opts: AdbdOptions) -> Self {
        let state = Arc::new(Mutex::new(PhoneState::new(opts.adb_keyboard)));
        Self {
            device,
            opts,
            state,
            generation: watch::channel(0).0,
            mode: watch::channel(Mode::Serving).0,
        }
    }

    /// The phone's adbd-local state (files, settings, IMEs, the log of dispatched commands).
    pub fn state(&self) -> Arc<Mutex<PhoneState>> {
        self.state.clone()
    }

    /// Every simple command dispatched so far, as argv.
    pub fn executed(&self) -> Vec<Vec<String>> {
        self.state
            .lock()
            .map(|s| s.executed.clone())
            .unwrap_or_default()
    }

    /// Binds `addr` and serves in a background task; returns the bound address.
    pub async fn spawn(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let me = self.clone();
        // Untracked: the simulated adbd is a stand-in phone, not part of the core; it
        // serves until its listener is dropped with the process or the test.
        tokio::spawn(async move {
            if let Err(e) = me.serve(listener).await {
                tracing::warn!(error = %e, "simulated adbd stopped");
            }
        });
        Ok(local)
    }

    /// Drops every live connection; the listener keeps accepting (adb reconnects by itself).
    pub fn drop_connections(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// Drops every connection and closes new ones as they arrive, until [`Adbd::resume`].
    pub fn unplug(&self) {
        self.mode.send_replace(Mode::Refusing);
        self.drop_connections();
    }

    pub fn resume(&self) {
        self.mode.send_replace(Mode::Serving);
    }

    /// Drops every connection and stops the accept loop (the listener is closed).
    pub fn shutdown(&self) {
        self.mode.send_replace(Mode::Closed);
        self.drop_connections();
    }

    pub async fn serve(&self, listener: TcpListener) -> std::io::Result<()> {
        let mut mode = self.mode.subscribe();
        loop {
            if *mode.borrow() == Mode::Closed {
                return Ok(());
            }
            let (sock, peer) = tokio::select! {
                r = listener.accept() => r?,
                _ = mode.changed() => continue,
            };
            if *self.mode.borrow() != Mode::Serving {
                drop(sock);
                continue;
            }
            let me = self.clone();
            // Untracked: one connection of the simulated adbd; ends when the host hangs up.
            tokio::spawn(async move {
                if let Err(e) = me.connection(sock).await {
                    tracing::debug!(%peer, error = %e, "adb connection ended");
                }
            });
        }
    }

    async fn connection(self, sock: TcpStream) -> Result<(), PacketError> {
        sock.set_nodelay(true)?;
        // A host connecting again is a replug: a device that had dropped comes back.
        if self.device.health().await.is_err_and(|e| e.is_disconnect()) {
            let _ = self.device.reconnect().await;
        }
        let (mut rd, mut wr) = sock.into_split();
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(64);
        // Untracked: the connection's writer; ends when the connection drops its sender.
        let writer = tokio::spawn(async move {
            while let Some(buf) = rx.recv().await {
                if wr.write_all(&buf).await.is_err() {
                    break;
                }
            }
            let _ = wr.shutdown().await;
        });
        let mut gen_rx = self.generation.subscribe();
        gen_rx.mark_unchanged();
        let result = tokio::select! {
            r = self.read_loop(&mut rd, tx) => r,
            _ = gen_rx.changed() => Ok(()),
        };
        writer.abort();
        result
    }

    fn banner(&self, model: &str) -> Vec<u8> {
        format!(
            "device::ro.product.name={};ro.product.model={};ro.product.device={};features=shell_v2,cmd,stat_v2\0",
            self.opts.product, model, self.opts.device_name
        )
        .into_bytes()
    }

    async fn read_loop(
        &self,
        rd: &mut tokio::net::tcp::OwnedReadHalf,
        tx: mpsc::Sender<Vec<u8>>,
    ) -> Result<(), PacketError> {
        let send = |p: Packet| {
            let tx = tx.clone();
            async move { tx.send(p.encode()).await.map_err(|_| PacketError::Closed) }
        };
        let model = match &self.opts.model {
            Some(m) => m.clone(),
            None => self
                .device
                .info()
                .await
                .map(|i| i.model)
                .unwrap_or_else(|_| "droidpilot-sim".into()),
        };
        // Handshake: ignore everything until the host's CNXN (and AUTH in auth mode).
        let mut max_payload;
        loop {
            let p = Packet::read(rd, packet::MAX_PAYLOAD_CEILING).await?;
            if p.command == A_CNXN {
                max_payload = p.arg1.clamp(4096, self.opts.max_payload);
                let version = p.arg0.clamp(packet::A_VERSION_MIN, packet::A_VERSION);
                if !self.opts.auth {
                    send(Packet::new(
                        A_CNXN,
                        version,
                        max_payload,
                        self.banner(&model),
                    ))
                    .await?;
                    break;
                }
                let token: [u8; 20] = rand::random();
                send(Packet::new(A_AUTH, 1, 0, token.to_vec())).await?;
                // Accept a signature (type 2) or a public key (type 3), then connect.
                loop {
                    let a = Packet::read(rd, packet::MAX_PAYLOAD_CEILING).await?;
                    if a.command == A_AUTH && (a.arg0 == 2 || a.arg0 == 3) {
                        break;
                    }
                }
                send(Packet::new(
                    A_CNXN,
                    version,
                    max_payload,
                    self.banner(&model),
                ))
                .await?;
                break;
            }
        }
        let mut streams: HashMap<u32, mpsc::UnboundedSender<HostMsg>> = HashMap::new();
        let mut next_id: u32 = 1;
        loop {
            let p = Packet::read(rd, max_payload.max(packet::MAX_PAYLOAD_CEILING)).await?;
            match p.command {
                A_CNXN => {
                    // A host reconnecting on the same socket: streams are gone, renegotiate.
                    streams.clear();
                    max_payload = p.arg1.clamp(4096, self.opts.max_payload);
                    let version = p.arg0.clamp(packet::A_VERSION_MIN, packet::A_VERSION);
                    send(Packet::new(
                        A_CNXN,
                        version,
                        max_payload,
                        self.banner(&model),
                    ))
                    .await?;
                }
                A_OPEN => {
                    let remote = p.arg0;
                    let service = String::from_utf8_lossy(&p.payload)
                        .trim_end_matches('\0')
                        .to_string();
                    let Some(kind) = Service::parse(&service) else {
                        tracing::debug!(%service, "refusing unsupported service");
                        send(Packet::new(A_CLSE, 0, remote, Vec::new())).await?;
                        continue;
                    };
                    let local = next_id;
                    next_id = next_id.wrapping_add(1).max(1);
                    let (htx, hrx) = mpsc::unbounded_channel();
                    streams.insert(local, htx);
                    send(Packet::new(A_OKAY, local, remote, Vec::new())).await?;
                    let io = StreamIo {
                        local,
                        remote,
                        max_payload,
                        tx: tx.clone(),
                        inbox: hrx,
                        pending: VecDeque::new(),
                        stdin_closed: false,
                    };
                    let me = self.clone();
                    // Untracked: one adb service stream; ends with its connection.
                    tokio::spawn(async move { me.run_service(kind, io).await });
                }
                A_WRTE => {
                    // arg0 = host id, arg1 = our id.
                    if let Some(s) = streams.get(&p.arg1) {
                        send(Packet::new(A_OKAY, p.arg1, p.arg0, Vec::new())).await?;
                        let _ = s.send(HostMsg::Data(p.payload));
                    }
                }
                A_OKAY => {
                    if let Some(s) = streams.get(&p.arg1) {
                        let _ = s.send(HostMsg::Okay);
                    }
                }
                A_CLSE => {
                    if let Some(s) = streams.remove(&p.arg1) {
                        let _ = s.send(HostMsg::Close);
                    }
                }
                _ => {}
            }
            streams.retain(|_, s| !s.is_closed());
        }
    }

    async fn run_service(self, kind: Service, mut io: StreamIo) {
        let commands = Commands::new(self.device.clone(), self.state.clone());
        let res = self.serve_stream(kind, &mut io, &commands).await;
        // A device that dropped its link (the sim's disconnect fault) drops the TCP
        // connection too, as an unplugged phone does, instead of answering.
        if self.gone().await {
            self.drop_connections();
            return;
        }
        if res.is_ok() {
            io.close().await;
        }
    }

    /// Whether the device has dropped its link.
    async fn gone(&self) -> bool {
        self.device.health().await.is_err_and(|e| e.is_disconnect())
    }

    async fn serve_stream(
        &self,
        kind: Service,
        io: &mut StreamIo,
        commands: &Commands,
    ) -> Result<(), Closed> {
        match kind {
            Service::Shell { v2, command } => {
                if command.trim().is_empty() {
                    let msg = b"droidpilot sim: interactive shells are not supported; pass a command (adb shell CMD)\n";
                    if v2 {
                        let _ = io.write(&shell_v2::encode(shell_v2::ID_STDERR, msg)).await;
                        io.write(&shell_v2::encode(shell_v2::ID_EXIT, &[1])).await
                    } else {
                        io.write(msg).await
                    }
                } else if v2 {
                    let stdin = if needs_stdin(&command) {
                        io.read_stdin_v2().await
                    } else {
                        Vec::new()
                    };
                    let out = run_with_stdin(&command, commands, stdin).await;
                    if self.gone().await {
                        return Err(Closed);
                    }
                    let chunk = (io.max_payload as usize).saturating_sub(5).max(1);
                    let mut r = Ok(());
                    for (stream, data) in &out.events {
                        for piece in data.chunks(chunk) {
                            r = io.write(&shell_v2::encode(*stream, piece)).await;
                            if r.is_err() {
                                break;
                            }
                        }
                    }
                    if r.is_ok() {
                        r = io
                            .write(&shell_v2::encode(
                                shell_v2::ID_EXIT,
                                &[(out.code & 0xff) as u8],
                            ))
                            .await;
                    }
                    r
                } else {
                    let out = cmdline::run_line(&command, commands).await;
                    if self.gone().await {
                        return Err(Closed);
                    }
                    let merged: Vec<u8> = out.events.into_iter().flat_map(|(_, d)| d).collect();
                    io.write(&merged).await
                }
            }
            Service::Exec(command) => {
                let out = cmdline::run_line(&command, commands).await;
                if self.gone().await {
                    return Err(Closed);
                }
                let merged: Vec<u8> = out.events.into_iter().flat_map(|(_, d)| d).collect();
                io.write(&merged).await
            }
            Service::Sync => self.serve_sync(io).await,
            Service::Framebuffer => match commands_framebuffer(&self.device).await {
                Ok(bytes) => io.write(&bytes).await,
                Err(_) => Ok(()),
            },
        }
    }
}

impl Adbd {
    /// `sync:` until the host's QUIT, a FAIL, or the stream closing.
    async fn serve_sync(&self, io: &mut StreamIo) -> Result<(), Closed> {
        let mut dec = super::sync::Decoder::default();
        let mut session = super::sync::Session::new(self.state.clone());
        while let Some(data) = io.read().await {
            let requests = match dec.push(&data) {
                Ok(r) => r,
                Err(e) => {
                    let mut v = b"FAIL".to_vec();
                    v.extend_from_slice(&(e.len() as u32).to_le_bytes());
                    v.extend_from_slice(e.as_bytes());
                    return io.write(&v).await;
                }
            };
            for req in requests {
                let reply = session.handle(req);
                if !reply.bytes.is_empty() {
                    io.write(&reply.bytes).await?;
                }
                if reply.end {
                    return Ok(());
                }
            }
        }
        Err(Closed)
    }
}

/// `framebuffer:`: version 1 header (RGBA_8888) then the pixels.
async fn commands_framebuffer(
    device: &Arc<dyn Device>,
) -> Result<Vec<u8>, droidpilot_core::device::DeviceError> {
    let shot = device.screenshot().await?;
    let rgba = shot.rgba()?;
    let mut v = Vec::with_capacity(52 + rgba.len());
    // version, bpp, size, width, height, then (offset, length) for red, blue, green, alpha.
    for w in [
        1u32,
        32,
        rgba.len() as u32,
        shot.width,
        shot.height,
        0,
        8,
        16,
        8,
        8,
        8,
        24,
        8,
    ] {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v.extend_from_slice(&rgba);
    Ok(v)
}

/// Whether the command line's first command reads stdin (`cat`, `grep P`, `head` without
/// files), so a v2 shell must collect stdin until the host closes it.
fn needs_stdin(line: &str) -> bool {
    let Ok(script) = cmdline::parse(line) else {
        return false;
    };
    let Some(first) = script.0.first().and_then(|ao| ao.first.0.first()) else {
        return false;
    };
    let words: Vec<String> = first
        .words
        .iter()
        .map(|w| {
            w.0.iter()
                .map(|p| {
                    if let cmdline::Part::Lit(l) = p {
                        l.as_str()
                    } else {
                        "$"
                    }
                })
                .collect()
        })
        .collect();
    let operands = words.iter().skip(1).filter(|w| !w.starts_with('-')).count();
    let has_input_redir = first
        .redirs
        .iter()
        .any(|r| matches!(r, cmdline::Redir::FromFile(_)));
    !has_input_redir
        && match words.first().map(String::as_str) {
            Some("cat") => operands == 0,
            Some("head") => operands == 0 || words.iter().any(|w| w == "-n") && operands == 1,
            Some("grep") => operands == 1,
            _ => false,
        }
}

/// Runs a line whose first command gets `stdin` (the collected v2 stdin).
async fn run_with_stdin(line: &str, commands: &Commands, stdin: Vec<u8>) -> cmdline::ScriptOutput {
    if stdin.is_empty() {
        return cmdline::run_line(line, commands).await;
    }
    struct WithStdin<'a> {
        inner: &'a Commands,
        stdin: Mutex<Option<Vec<u8>>>,
    }
    #[async_trait::async_trait]
    impl cmdline::Builtins for WithStdin<'_> {
        async fn run(&self, argv: &[String], stdin: &[u8]) -> CmdOutput {
            let first = self.stdin.lock().ok().and_then(|mut s| s.take());
            match first {
                Some(data) => self.inner.run(argv, &data).await,
                None => self.inner.run(argv, stdin).await,
            }
        }
        async fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), String> {
            self.inner.write_file(path, data, append).await
        }
        async fn read_file(&self, path: &str) -> Result<Vec<u8>, String> {
            self.inner.read_file(path).await
        }
    }
    let b = WithStdin {
        inner: commands,
        stdin: Mutex::new(Some(stdin)),
    };
    cmdline::run_line(line, &b).await
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Service {
    Shell { v2: bool, command: String },
    Exec(String),
    Framebuffer,
    Sync,
}

impl Service {
    /// `shell:CMD`, `shell,v2,TERM=xterm,raw:CMD`, `exec:CMD`, `framebuffer:`, `sync:`.
    fn parse(s: &str) -> Option<Service> {
        if s == "sync:" {
            return Some(Service::Sync);
        }
        if let Some(rest) = s.strip_prefix("exec:") {
            return Some(Service::Exec(rest.to_string()));
        }
        if s == "framebuffer:" {
            return Some(Service::Framebuffer);
        }
        let (head, command) = s.split_once(':')?;
        let mut parts = head.split(',');
        if parts.next()? != "shell" {
            return None;
        }
        let v2 = parts.any(|p| p == "v2");
        Some(Service::Shell {
            v2,
            command: command.to_string(),
        })
    }
}

#[derive(Debug)]
enum HostMsg {
    Data(Vec<u8>),
    Okay,
    Close,
}

#[derive(Debug)]
struct Closed;

/// One stream's side of the flow control: a WRTE goes out only after the host's OKAY for
/// the previous one.
struct StreamIo {
    local: u32,
    remote: u32,
    max_payload: u32,
    tx: mpsc::Sender<Vec<u8>>,
    inbox: mpsc::UnboundedReceiver<HostMsg>,
    /// Host data that arrived while we waited for an OKAY.
    pending: VecDeque<Vec<u8>>,
    stdin_closed: bool,
}

/// How long a stream waits for the host's OKAY before giving up on it.
const OKAY_TIMEOUT: Duration = Duration::from_secs(30);

impl StreamIo {
    async fn write(&mut self, data: &[u8]) -> Result<(), Closed> {
        for chunk in data.chunks(self.max_payload.max(1) as usize) {
            self.tx
                .send(Packet::new(A_WRTE, self.local, self.remote, chunk.to_vec()).encode())
                .await
                .map_err(|_| Closed)?;
            loop {
                match tokio::time::timeout(OKAY_TIMEOUT, self.inbox.recv()).await {
                    Ok(Some(HostMsg::Okay)) => break,
                    Ok(Some(HostMsg::Data(d))) => self.pending.push_back(d),
                    Ok(Some(HostMsg::Close) | None) | Err(_) => return Err(Closed),
                }
            }
        }
        Ok(())
    }

    /// The host's next data (what arrived while we waited for an OKAY first); `None` once
    /// the stream is closed.
    async fn read(&mut self) -> Option<Vec<u8>> {
        if let Some(d) = self.pending.pop_front() {
            return Some(d);
        }
        loop {
            match self.inbox.recv().await? {
                HostMsg::Data(d) => return Some(d),
                HostMsg::Okay => continue,
                HostMsg::Close => return None,
            }
        }
    }

    /// Collects shell-v2 stdin until close-stdin (or the stream closes), capped in time.
    async fn read_stdin_v2(&mut self) -> Vec<u8> {
        let mut dec = shell_v2::Decoder::default();
        let mut stdin = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if self.stdin_closed {
                return stdin;
            }
            let data = match self.pending.pop_front() {
                Some(d) => d,
                None => match tokio::time::timeout_at(deadline, self.inbox.recv()).await {
                    Ok(Some(HostMsg::Data(d))) => d,
                    Ok(Some(HostMsg::Okay)) => continue,
                    _ => return stdin,
                },
            };
            let Ok(packets) = dec.push(&data) else {
                return stdin;
            };
            for (id, body) in packets {
                match id {
                    shell_v2::ID_STDIN => stdin.extend_from_slice(&body),
                    shell_v2::ID_CLOSE_STDIN => self.stdin_closed = true,
                    _ => {}
                }
            }
        }
    }

    async fn close(self) {
        let _ = self
            .tx
            .send(Packet::new(A_CLSE, self.local, self.remote, Vec::new()).encode())
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_parse_as_adb_sends_them() {
        assert_eq!(
            Service::parse("shell,v2,TERM=xterm,raw:wm size"),
            Some(Service::Shell {
                v2: true,
                command: "wm size".into()
            })
        );
        assert_eq!(
            Service::parse("shell:echo hi"),
            Some(Service::Shell {
                v2: false,
                command: "echo hi".into()
            })
        );
        assert_eq!(
            Service::parse("exec:screencap '-p'"),
            Some(Service::Exec("screencap '-p'".into()))
        );
        assert_eq!(Service::parse("framebuffer:"), Some(Service::Framebuffer));
        assert_eq!(Service::parse("sync:"), Some(Service::Sync));
        assert_eq!(Service::parse("reboot:"), None);
    }

    #[test]
    fn stdin_is_awaited_only_for_readers() {
        assert!(needs_stdin("cat"));
        assert!(needs_stdin("grep foo"));
        assert!(!needs_stdin("cat /sdcard/x.xml"));
        assert!(!needs_stdin("grep foo < /f"));
        assert!(!needs_stdin("wm size"));
        assert!(!needs_stdin("echo x | grep x"));
    }
}
