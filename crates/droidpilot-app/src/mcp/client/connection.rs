//! One configured MCP server, kept connected: `RemoteServer` connects with `rmcp` (a
//! child process over stdio, or Streamable HTTP), lists its tools at every (re)connect
//! and on `notifications/tools/list_changed`, and is the `ToolSource` the registry calls.
//! When the server dies (the process exits, the HTTP session fails) its tools stay
//! listed but calls answer "unavailable" while `supervise` reconnects on the shared
//! retry policy. Cancelling the supervisor's token closes the session (the child is
//! told to stop, then killed).

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{NotificationContext, Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::config::{McpServerConfig, Transport};
use super::result::{from_call_result, tool_of};
use crate::agent::McpTool;
use crate::domain::retry::RetryPolicy;
use crate::run::mcp::{McpResult, ToolSource};

/// Longest wait for a server to start, initialize and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A session that lasted this long starts the backoff from its first delay again.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How a server's restarts are spaced: 0.5 s doubling up to 30 s, never giving up.
pub fn reconnect_policy() -> RetryPolicy {
    RetryPolicy::doubling(Duration::from_millis(500), Duration::from_secs(30)).with_jitter()
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStatus {
    /// Not connected yet (start-up).
    Connecting,
    Connected,
    /// Down; `reason` says why. Reconnecting in the background.
    Unavailable {
        reason: String,
    },
}

/// The live session, for calls.
#[derive(Clone)]
struct Session {
    peer: Peer<RoleClient>,
    /// Cancels this session only (a call that found it broken).
    stop: CancellationToken,
}

struct Link {
    status: ServerStatus,
    tools: Vec<McpTool>,
    session: Option<Session>,
    /// Successful connections so far (1 after start-up; more after restarts).
    connects: u32,
}

/// One `[[mcp.servers]]` entry and its connection.
pub struct RemoteServer {
    cfg: McpServerConfig,
    transport: Transport,
    link: RwLock<Link>,
}

/// What the server may tell the client: that its tool list changed.
struct Events {
    changed: Arc<Notify>,
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info.name = "droidpilot".into();
        info.client_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }
}

type Running = RunningService<RoleClient, Events>;

impl RemoteServer {
    /// A server not yet connected; `supervise` connects it.
    pub fn new(cfg: McpServerConfig) -> Result<Self, String> {
        let transport = cfg.transport()?;
        Ok(Self {
            cfg,
            transport,
            link: RwLock::new(Link {
                status: ServerStatus::Connecting,
                tools: Vec::new(),
                session: None,
                connects: 0,
            }),
        })
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.cfg
    }

    pub fn status(&self) -> ServerStatus {
        self.link().status.clone()
    }

    /// Successful connections so far.
    pub fn connects(&self) -> u32 {
        self.link().connects
    }

    fn link(&self) -> std::sync::RwLockReadGuard<'_, Link> {
        self.link.read().expect("mcp link lock")
    }

    fn set_down(&self, reason: String) {
        let mut link = self.link.write().expect("mcp link lock");
        link.session = None;
        link.status = ServerStatus::Unavailable { reason };
    }

    /// Keeps the server connected until `cancel`: connect, serve until the session
    /// ends, wait out the backoff, again.
    pub async fn supervise(self: Arc<Self>, cancel: CancellationToken, policy: RetryPolicy) {
        let mut delays = policy.delays();
        while !cancel.is_cancelled() {
            match self.connect(&cancel).await {
                Ok((running, changed)) => {
                    let began = Instant::now();
                    self.serve(running, changed).await;
                    if began.elapsed() >= STABLE_AFTER {
                        delays = policy.delays();
                    }
                }
                Err(reason) => {
                    tracing::warn!(server = %self.cfg.name, %reason, "MCP server unavailable; retrying");
                    self.set_down(reason);
                }
            }
            let wait = delays.next().unwrap_or(Duration::from_secs(30));
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        self.set_down("droidpilot is shutting down".into());
    }

    /// Starts a session and lists the tools; the server is then `Connected`.
    async fn connect(&self, cancel: &CancellationToken) -> Result<(Running, Arc<Notify>), String> {
        let stop = cancel.child_token();
        let changed = Arc::new(Notify::new());
        let events = Events {
            changed: changed.clone(),
        };
        let start = async {
            let running = match &self.transport {
                Transport::Stdio { command, args, env } => {
                    let mut cmd = tokio::process::Command::new(command);
                    cmd.args(args).envs(env).kill_on_drop(true);
                    let (child, _) = TokioChildProcess::builder(cmd)
                        .stderr(std::process::Stdio::inherit())
                        .spawn()
                        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                    events.serve_with_ct(child, stop.clone()).await
                }
                Transport::Http { url, headers } => {
                    events
                        .serve_with_ct(http_transport(url, headers)?, stop.clone())
                        .await
                }
            }
            .map_err(|e| format!("MCP handshake failed: {}", readable(&e.to_string())))?;
            let tools = running
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((running, tools))
        };
        let (running, tools) = match tokio::time::timeout(CONNECT_TIMEOUT, start).await {
            Ok(r) => r.inspect_err(|_| stop.cancel())?,
            Err(_) => {
                stop.cancel();
                return Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()));
            }
        };
        let mut link = self.link.write().expect("mcp link lock");
        link.tools = tools.into_iter().map(tool_of).collect();
        link.session = Some(Session {
            peer: running.peer().clone(),
            stop,
        });
        link.status = ServerStatus::Connected;
        link.connects += 1;
        tracing::info!(server = %self.cfg.name, tools = link.tools.len(), "MCP server connected");
        Ok((running, changed))
    }

    /// Until the session ends: relists the tools when the server says they changed.
    async fn serve(&self, running: Running, changed: Arc<Notify>) {
        let peer = running.peer().clone();
        let ended = running.waiting();
        tokio::pin!(ended);
        loop {
            tokio::select! {
                quit = &mut ended => {
                    let reason = match quit {
                        Ok(q) => format!("connection ended ({q:?})"),
                        Err(e) => format!("connection task failed: {e}"),
                    };
                    tracing::warn!(server = %self.cfg.name, %reason, "MCP server lost");
                    self.set_down(reason);
                    return;
                }
                () = changed.notified() => match peer.list_all_tools().await {
                    Ok(tools) => {
                        self.link.write().expect("mcp link lock").tools =
                            tools.into_iter().map(tool_of).collect();
                    }
                    Err(e) => tracing::warn!(server = %self.cfg.name, error = %e, "tools/list after a change failed"),
                },
            }
        }
    }
}

/// The Streamable HTTP transport with the configured headers, on a client with a
/// connect timeout (calls are bounded by the registry's timeout).
fn http_transport(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut map = std::collections::HashMap::new();
    for (k, v) in headers {
        // Checked at config time; the message names the header, never its value.
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("bad header `{k}`"))?;
        let value = HeaderValue::from_str(v).map_err(|_| format!("bad header `{k}`"))?;
        map.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let cfg = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
    Ok(StreamableHttpClientTransport::with_client(client, cfg))
}

#[async_trait]
impl ToolSource for RemoteServer {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn tools(&self) -> Vec<McpTool> {
        self.link().tools.clone()
    }

    fn call_timeout(&self) -> Option<Duration> {
        self.cfg.call_timeout()
    }

    async fn call(&self, tool: &str, args: Value) -> McpResult {
        let (session, status) = {
            let link = self.link();
            (link.session.clone(), link.status.clone())
        };
        let Some(session) = session else {
            return McpResult::error(unavailable(&self.cfg.name, tool, &status));
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        match args {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return McpResult::error(format!(
                    "the arguments of `{tool}` must be a JSON object, not {other}"
                ));
            }
        }
        match session.peer.call_tool(params).await {
            Ok(r) => from_call_result(r),
            Err(ServiceError::McpError(e)) => {
                McpResult::error(format!("`{tool}` was refused: {}", e.message))
            }
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                // The session is broken: end it, so the supervisor reconnects.
                session.stop.cancel();
                let status = ServerStatus::Unavailable {
                    reason: e.to_string(),
                };
                McpResult::error(unavailable(&self.cfg.name, tool, &status))
            }
            Err(e) => McpResult::error(format!("`{tool}` failed: {e}")),
        }
    }
}

/// An rmcp error without the transport's type name (`Transport [rmcp::…<…>] error: …`).
fn readable(error: &str) -> String {
    match error.split_once("] error: ") {
        Some((head, tail)) if head.contains("Transport [") => {
            let before = head.split("Transport [").next().unwrap_or_default();
            format!("{before}transport error: {tail}")
        }
        _ => error.to_string(),
    }
}

/// The agent's message for a call to a server that is down.
fn unavailable(server: &str, tool: &str, status: &ServerStatus) -> String {
    let why = match status {
        ServerStatus::Unavailable { reason } => format!(" ({reason})"),
        _ => String::new(),
    };
    format!(
        "tool `{tool}` is unavailable: MCP server `{server}` is not connected{why}; \
         droidpilot is restarting it, so try again in a later step or do without it"
    )
}
