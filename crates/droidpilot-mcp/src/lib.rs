//! droidpilot as an MCP server: the pool, the queue and scripts as MCP tools for coding
//! agents (Claude Code, Claude Desktop, Cursor), over stdio (`droidpilot mcp`, `serve_stdio`)
//! and Streamable HTTP (`/mcp` on the HTTP server, `http_service`, behind its bearer token).
//!
//! One `McpServer` per MCP session (rmcp builds one per stdio connection and per HTTP
//! session), all on the one `Core`. Each holds a `Session`: its device leases and the
//! session tasks its actions are recorded in, released when the session ends. The tools
//! are a front end beside HTTP over the same use cases (`service::devices`,
//! `service::tasks`, `service::scripts`, `service::manual_step`), so they parse, refuse
//! and fail the same way; this module never imports the HTTP front end.
//!
//! - `tools.rs`: the catalogue (descriptions, input schemas).
//! - `session.rs`: leases bound to the session, session tasks.
//! - `device.rs`: screen and action tools; `task.rs`: task and script tools.
//! - `reply.rs`: results and tool errors in the one error shape.
//!
//! Leases are bound to the MCP session, which the 2026-07-28 protocol revision removed,
//! so this server speaks the revisions that have an `initialize` handshake (up to
//! 2025-11-25); clients that probe for the newer one fall back to it.

//!
//! A crate of its own above `droidpilot-app`, beside the HTTP front end; neither imports
//! the other.

// The application's modules under their usual names (`crate::core::Core`).
use droidpilot_app::{config, core, domain, run, screen, service, store};

mod device;
mod reply;
mod session;
mod task;
mod tools;

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::core::Core;
use reply::{ToolError, ToolResult, json_result, parse};
use session::Session;

pub use crate::config::frontends::McpServerConfig;

const INSTRUCTIONS: &str = "droidpilot drives Android phones. list_devices gives device ids. \
read_screen shows what a phone displays, with element ids and selectors; act with tap, type, \
scroll, launch_app and the other action tools, each taking device_id and a target (selector, \
element or coordinate). Acting on a phone leases it to this session (acquire_device does it \
up front); a phone another session or a running task holds is refused with its holder named. \
release_device when done. run_task hands a whole goal to droidpilot's own agent.";

/// The MCP handler of one session.
pub struct McpServer {
    core: Arc<Core>,
    session: Session,
}

impl McpServer {
    pub fn new(core: Arc<Core>) -> Self {
        Self {
            session: Session::new(core.clone()),
            core,
        }
    }

    /// Runs one tool; every failure is a tool error for the model to read.
    async fn dispatch(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolResult {
        match name {
            "list_devices" => self.list_devices(args),
            "acquire_device" => self.acquire_device(args).await,
            "release_device" => self.release_device(args).await,
            "read_screen" => self.read_screen(args).await,
            "screenshot" => self.screenshot(args).await,
            "read_element" => self.read_element(args).await,
            "list_apps" => self.list_apps(args).await,
            "scroll_to_find" => self.scroll_to_find(args).await,
            n if tools::ACTION_TOOLS.contains(&n) => self.act(n, args).await,
            "run_task" => self.run_task(args, ctx).await,
            "run_script" => self.run_script(args, ctx).await,
            "get_task" => self.get_task(args).await,
            "answer_task" => self.answer_task(args).await,
            "cancel_task" => self.cancel_task(args).await,
            other => Err(unknown_tool(other)),
        }
    }

    fn list_devices(&self, args: Map<String, Value>) -> ToolResult {
        let _: tools::NoArgs = parse("list_devices", args)?;
        let mine = self.session.devices();
        let devices: Vec<Value> = (self.core.pool.list().into_iter())
            .map(|d| {
                let yours = mine.contains(&d.id);
                json!({
                    "id": d.id, "backend": d.backend, "model": d.model, "state": d.state,
                    "screen": d.screen, "held_by": d.holder(), "held_by_you": yours,
                })
            })
            .collect();
        json_result(&json!({"devices": devices, "you_are": self.session.owner()}))
    }

    async fn acquire_device(&self, args: Map<String, Value>) -> ToolResult {
        let a: tools::AcquireArgs = parse("acquire_device", args)?;
        let ttl = match a.ttl_secs {
            Some(s) if !(10..=3600).contains(&s) => {
                return Err(ToolError::arguments(
                    "acquire_device",
                    format!("field `ttl_secs`: {s} is outside 10..=3600"),
                ));
            }
            s => s.map(std::time::Duration::from_secs),
        };
        json_result(&self.session.acquire(a.device_id.as_deref(), ttl).await?)
    }

    async fn release_device(&self, args: Map<String, Value>) -> ToolResult {
        let a: tools::DeviceArgs = parse("release_device", args)?;
        match self.session.release(&a.device_id).await {
            Some(task) => json_result(&json!({"released": a.device_id, "session_task": task})),
            None => Err(ToolError::new(
                "not_held",
                format!("this session does not hold {}", a.device_id),
                "list_devices shows which phones you hold (held_by_you).",
            )),
        }
    }
}

fn unknown_tool(name: &str) -> ToolError {
    let names: Vec<String> = tools::catalogue()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let near = crate::domain::action::closest(name, names.iter().map(String::as_str))
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    ToolError::new(
        "unknown_tool",
        format!("no tool `{name}`{near}"),
        format!("The tools are: {}.", names.join(", ")),
    )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("droidpilot", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::catalogue()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(info) = ctx.peer.peer_info() {
            self.session.set_client(&info.client_info.name);
        }
        let args = request.arguments.unwrap_or_default();
        let result = self.dispatch(&request.name, args, &ctx).await;
        Ok(result.unwrap_or_else(ToolError::into_result).into())
    }
}

/// `droidpilot mcp`: one session over stdin/stdout until the client closes it. Logs go
/// to stderr; stdout carries only the protocol.
pub async fn serve_stdio(core: Arc<Core>) -> anyhow::Result<()> {
    let service = McpServer::new(core)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the MCP handshake failed: {e}"))?;
    service.waiting().await?;
    Ok(())
}

/// The Streamable HTTP service for `/mcp`: one `McpServer` per MCP session. `cancel` ends
/// every session (server shutdown). `loopback`: keep rmcp's Host check (DNS rebinding)
/// for a server only this machine reaches; behind a public address the bearer token
/// guards it instead.
pub fn http_service(
    core: Arc<Core>,
    cancel: CancellationToken,
    loopback: bool,
) -> impl tower::Service<
    axum::extract::Request,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    let mut config =
        rmcp::transport::StreamableHttpServerConfig::default().with_cancellation_token(cancel);
    if !loopback {
        config = config.disable_allowed_hosts();
    }
    let rmcp: rmcp::transport::StreamableHttpService<
        McpServer,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    > = rmcp::transport::StreamableHttpService::new(
        move || Ok(McpServer::new(core.clone())),
        Default::default(),
        config,
    );
    tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn(session_closed))
        .service(rmcp)
}

/// A session ended by `DELETE /mcp` answers 204 No Content: rmcp says 202, which the
/// official SDKs log as a failed termination on every close (they accept 200 and 204).
async fn session_closed(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let mut resp = next.run(req).await;
    if delete && resp.status() == axum::http::StatusCode::ACCEPTED {
        *resp.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    resp
}
