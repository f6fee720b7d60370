//! The HTTP server: axum router, middleware stack, OpenAPI + Swagger UI, start-up checks
//! and graceful shutdown. Handlers live one file per resource and stay thin.

//!
//! A crate of its own above `droidpilot-app`: it imports the application (through
//! `service` for every use case) and never the MCP front end, which `serve::build` mounts
//! at `/mcp` through `Server::build_with`. The dashboard's files (`dashboard/`) are
//! embedded from beside this crate.

// The application's modules under their usual names, so paths read `crate::core::Core`
// here as in the application itself.
use droidpilot_app::{
    agent, apps, config, core, device, domain, run, screen, script, service, store, video,
};

pub mod cluster;
pub mod conns;
pub mod dashboard;
pub mod devices;
pub mod error;
pub mod events;
pub mod extract;
pub mod flow_runs;
pub mod frames;
pub mod health;
pub mod hosts;
pub mod listen;
pub mod middleware;
pub mod openapi;
pub mod presets;
pub mod remote;
pub mod replay_gif;
pub mod replay_mp4;
pub mod scope;
pub mod scripts;
pub mod state;
pub mod streams;
pub mod takeover;
pub mod tasks;
pub mod workspaces;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::response::IntoResponse;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::SwaggerUi;

use crate::config::Config;
use crate::core::{Core, CoreError};
use crate::device::pool::DevicePool;
use crate::store::StoreError;
use error::ApiError;
use state::AppState;

/// Why the server did not start. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "refusing to listen on {addr} without authentication: anyone who can reach this address could drive your phones.\n\
         Fix: set server.tokens (e.g. DROIDPILOT_SERVER__TOKENS=$(openssl rand -hex 32)), or bind 127.0.0.1.\n\
         To accept the risk on a trusted network, pass --insecure-no-auth."
    )]
    NoAuthOnPublicAddress { addr: SocketAddr },
    #[error(
        "cannot listen on {addr}: {source}. Is another droidpilot running? Pick another port with --bind 127.0.0.1:PORT."
    )]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    // `cause`, not `source`: the message already holds it, and an error chain printed
    // with `{:#}` would repeat it.
    #[error("cannot open the database at {path}: {cause}")]
    Store { path: String, cause: StoreError },
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("server error: {0}")]
    Serve(#[from] std::io::Error),
}

/// Options that are not configuration values.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServeOptions {
    /// Allow a non-loopback bind without tokens (loudly).
    pub insecure_no_auth: bool,
}

/// The Prometheus recorder is process-global; tests build many servers in one process.
fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // Another recorder may already be installed (a host app embedding us); then our
            // handle renders only what we record through it, which is still correct.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The full OpenAPI document and the routes it describes.
pub fn api_router() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut api) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
        .routes(routes!(tasks::create_task, tasks::list_tasks))
        .routes(routes!(tasks::get_task, tasks::delete_task))
        .routes(routes!(tasks::cancel_task))
        .routes(routes!(tasks::answer_task))
        .routes(routes!(tasks::list_steps))
        .routes(routes!(tasks::list_interventions))
        .routes(routes!(takeover::pause_task))
        .routes(routes!(takeover::resume_task))
        .routes(routes!(takeover::task_action))
        .routes(routes!(events::task_events))
        .routes(routes!(events::websocket))
        .routes(routes!(tasks::step_screenshot))
        .routes(routes!(tasks::step_hierarchy))
        .routes(routes!(tasks::trajectory))
        .routes(routes!(tasks::export))
        .routes(routes!(tasks::metrics))
        .routes(routes!(tasks::estimate))
        .routes(routes!(tasks::steps_csv))
        .routes(routes!(tasks::replay_gif))
        .routes(routes!(tasks::replay_mp4))
        .routes(routes!(tasks::result))
        .routes(routes!(scripts::create_script, scripts::list_scripts))
        .routes(routes!(
            scripts::get_script,
            scripts::update_script,
            scripts::delete_script
        ))
        .routes(routes!(scripts::script_versions))
        .routes(routes!(scripts::run_script))
        .routes(routes!(scripts::import_script))
        .routes(routes!(scripts::export_script))
        .routes(routes!(devices::list_devices, devices::add_device))
        .routes(routes!(devices::get_device, devices::remove_device))
        .routes(routes!(devices::screenshot))
        .routes(routes!(devices::hierarchy))
        .routes(routes!(devices::screen))
        .routes(routes!(devices::apps))
        .routes(routes!(devices::app_strings))
        .routes(routes!(devices::context))
        .routes(routes!(devices::act))
        .routes(routes!(remote::take))
        .routes(routes!(remote::keep_alive, remote::release))
        .routes(routes!(remote::act))
        .routes(routes!(remote::recording))
        .routes(routes!(remote::inspect))
        .routes(routes!(presets::presets))
        .routes(routes!(
            flow_runs::create_flow_run,
            flow_runs::list_flow_runs
        ))
        .routes(routes!(flow_runs::get_flow_run))
        .routes(routes!(flow_runs::cancel_flow_run))
        .routes(routes!(flow_runs::flow_run_report))
        .routes(routes!(flow_runs::flow_run_events))
        .routes(routes!(
            workspaces::create_workspace,
            workspaces::list_workspaces
        ))
        .routes(routes!(
            workspaces::get_workspace,
            workspaces::delete_workspace
        ))
        .routes(routes!(
            workspaces::workspace_versions,
            workspaces::add_workspace_version
        ))
        .routes(routes!(workspaces::workspace_version))
        .routes(routes!(workspaces::workspace_zip))
        .split_for_parts();
    openapi::finish(&mut api);
    (router, api)
}

/// The OpenAPI document as committed at `openapi/openapi.json`.
pub fn openapi_json() -> String {
    let (_, api) = api_router();
    let mut s = api
        .to_pretty_json()
        .expect("the OpenAPI document serializes");
    s.push('\n');
    s
}

/// The service a `Mount` puts on its path.
pub type MountedService = tower::util::BoxCloneSyncService<
    axum::extract::Request,
    axum::response::Response,
    std::convert::Infallible,
>;

/// A service the top level mounts on a path inside the router's Host and auth layers
/// (the MCP front end at `/mcp`): the server does not know what it serves, so the front
/// ends never import each other. `make` gets the core and a token cancelled when the
/// server starts stopping (sessions end instead of holding connections through the
/// grace period).
#[derive(Clone)]
pub struct Mount {
    pub path: &'static str,
    pub make: Arc<dyn Fn(Arc<Core>, CancellationToken) -> MountedService + Send + Sync>,
}

/// Builds the complete application (routes + middleware) for a state, with nothing
/// mounted (`app_with`).
pub fn app(state: AppState) -> Router {
    app_with(state, &[])
}

/// Builds the complete application (routes + middleware) for a state, with `mounts`
/// inside the Host and auth layers.
pub fn app_with(state: AppState, mounts: &[Mount]) -> Router {
    let cfg = &state.config.server;
    let (api, spec) = api_router();
    let request_id = HeaderName::from_static("x-request-id");

    let cors = if cfg.cors_origins.is_empty() {
        None
    } else {
        let origins = if cfg.cors_origins.iter().any(|o| o == "*") {
            AllowOrigin::any()
        } else {
            AllowOrigin::list(cfg.cors_origins.iter().filter_map(|o| o.parse().ok()))
        };
        Some(
            CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]),
        )
    };

    let allowed_hosts = Arc::new(hosts::AllowedHosts::from_config(&state.config));
    let mut router = api.merge(SwaggerUi::new("/docs").url("/openapi.json", spec));
    // Mounted services (MCP over Streamable HTTP) sit inside the auth layer like every
    // other route; their Host check is `hosts::check`, the same as every route's.
    for m in mounts {
        let service = (m.make)(state.core.clone(), stopping_token(&state));
        router = router.route_service(m.path, service);
    }
    let router = router
        .route("/", axum::routing::get(dashboard::index))
        .route("/assets/{file}", axum::routing::get(dashboard::asset))
        .route("/favicon.ico", axum::routing::get(dashboard::favicon))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(
                StatusCode::METHOD_NOT_ALLOWED,
                "this method is not allowed on this path",
            )
            .into_response()
        })
        // Inside auth: a request is authenticated here before it is proxied to the
        // instance that owns its phone.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cluster::to_owner,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::auth,
        ))
        // Before the token check, so it sees the token a WebSocket presents; a request
        // the check refuses gives its stream permit back at once.
        .layer(axum::middleware::from_fn_with_state(
            streams::StreamLimits::new(cfg.max_streams_per_token, !cfg.tokens.is_empty()),
            streams::limit,
        ))
        // Before the token check, separate from it: DNS rebinding protection.
        .layer(axum::middleware::from_fn_with_state(
            allowed_hosts,
            hosts::check,
        ))
        .layer(DefaultBodyLimit::max(cfg.body_limit_bytes))
        .layer(axum::middleware::from_fn(middleware::http_metrics))
        .with_state(state.clone());

    // Outermost first: request ids and tracing see everything, the error rewriter sees
    // what every inner layer produced.
    let stack = ServiceBuilder::new()
        .layer(SetSensitiveRequestHeadersLayer::new([
            header::AUTHORIZATION,
            header::COOKIE,
            header::SEC_WEBSOCKET_PROTOCOL,
        ]))
        .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
                let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
                tracing::info_span!("http", method = %req.method(), path = %req.uri().path(), request_id = %id)
            }),
        )
        .layer(PropagateRequestIdLayer::new(request_id))
        // Compression wraps the error rewriter, never the reverse: the rewriter reads the
        // body it replaces, which must not be compressed yet.
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn(middleware::json_errors))
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, Duration::from_secs(cfg.request_timeout_secs)))
        .layer(RequestBodyLimitLayer::new(cfg.body_limit_bytes));
    let router = router.layer(stack);
    match cors {
        Some(c) => router.layer(c),
        None => router,
    }
}

/// Cancelled when the server starts shutting down, so a mounted service's long-lived
/// sessions (MCP's, which hold devices) end instead of holding connections through the
/// grace period.
fn stopping_token(state: &AppState) -> CancellationToken {
    let token = CancellationToken::new();
    let (mut stopping, t) = (state.shutdown.clone(), token.clone());
    // Ends when the server stops (or its sender is dropped); the core's tracker holds it.
    state.core.spawn(async move {
        let _ = stopping.wait_for(|s| *s).await;
        t.cancel();
    });
    token
}

/// A bound, ready-to-run server.
pub struct Server {
    listener: TcpListener,
    router: Router,
    core: Arc<Core>,
    grace: Duration,
    limits: listen::ConnLimits,
    /// The open-file limit before and after start-up raised it.
    fd_limit: Option<(u64, u64)>,
    stopping: tokio::sync::watch::Sender<bool>,
}

impl Server {
    /// Checks the configuration, builds the core (store, pool, runner, scheduler), binds
    /// the port. Nothing is mounted: `build_with` takes the other front ends.
    pub async fn build(config: Config, opts: ServeOptions) -> Result<Self, StartError> {
        Self::build_with(config, opts, &[]).await
    }

    /// `build`, with `mounts` served inside the router's Host and auth layers.
    pub async fn build_with(
        config: Config,
        opts: ServeOptions,
        mounts: &[Mount],
    ) -> Result<Self, StartError> {
        let addr = config.server.bind;
        if !addr.ip().is_loopback() && config.server.tokens.is_empty() {
            if !opts.insecure_no_auth {
                return Err(StartError::NoAuthOnPublicAddress { addr });
            }
            tracing::warn!(%addr, "!!! --insecure-no-auth: serving WITHOUT authentication on a non-loopback address. Anyone who can reach it can drive your devices. !!!");
        }
        let fd_limit = listen::raise_fd_limit();
        let core = Arc::new(Core::build(&config).await?);
        let listener = listen::bind(addr).map_err(|source| StartError::Bind { addr, source })?;
        let (stopping, shutdown) = tokio::sync::watch::channel(false);
        core.recover().await.map_err(|cause| StartError::Store {
            path: core
                .config
                .store_location()
                .map(|l| l.to_string())
                .unwrap_or_default(),
            cause,
        })?;
        let state = AppState::new(core.clone(), shutdown);
        Ok(Self {
            listener,
            router: app_with(state, mounts),
            core,
            grace: Duration::from_secs(config.server.shutdown_grace_secs),
            limits: listen::ConnLimits::from_config(&config.server),
            fd_limit,
            stopping,
        })
    }

    /// The operator's `[actions]` in force (`serve` replaces them on SIGHUP).
    pub fn actions(&self) -> Arc<crate::run::extend::LiveActions> {
        self.core.actions.clone()
    }

    /// The device pool (tests and embedders add devices they hold).
    pub fn pool(&self) -> DevicePool {
        self.core.pool.clone()
    }

    /// The process's open-file limit (soft) before and after start-up raised it.
    pub fn fd_limit(&self) -> Option<(u64, u64)> {
        self.fd_limit
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `shutdown` completes, then lets in-flight requests finish (up to the
    /// grace period), stops the core's tasks and closes the database cleanly.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let tx = self.stopping;
        let mut rx = tx.subscribe();
        // The scheduler runs with the server; on shutdown it stops taking work and tells
        // runners to stop after their current step (they mark their tasks interrupted).
        self.core.start_scheduler();
        self.core.start_retention();
        let core = self.core.clone();
        let signal = async move {
            shutdown.await;
            core.stop_taking_work();
            // Streams (SSE, WebSocket) watch this and end, so graceful shutdown does not
            // wait on them for the whole grace period.
            let _ = tx.send(true);
        };
        let serve = listen::serve(self.listener, self.router, self.limits, signal);
        let grace = self.grace;
        let forced = async move {
            let _ = rx.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(grace).await;
        };
        let result = tokio::select! {
            () = serve => Ok(()),
            _ = forced => {
                tracing::warn!(grace_secs = grace.as_secs(), "connections still open after the grace period; closing them");
                Ok(())
            }
        };
        self.core.shutdown(grace.max(Duration::from_secs(1))).await;
        tracing::info!("stopped; database closed");
        result
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled: a service manager may send SIGTERM as soon as the
/// server answers, and a signal that arrives before the handler exists kills the process
/// with no graceful shutdown.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            let recv = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = recv(int) => tracing::info!("SIGINT received; shutting down"),
                _ = recv(term) => tracing::info!("SIGTERM received; shutting down"),
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Ctrl+C received; shutting down");
    }
}
