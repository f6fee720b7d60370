//! Probes and metrics: `/healthz` (the process answers), `/readyz` (the database answers),
//! `/metrics` (Prometheus text).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorResponse};
use super::extract::Json;
use super::state::AppState;

#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct Health {
    /// `ok` or `ready`.
    pub status: String,
    pub version: String,
    pub uptime_seconds: u64,
}

/// Liveness: answers as long as the process serves HTTP.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz(State(s): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_seconds: s.started_at.elapsed().as_secs(),
    })
}

/// Readiness: the database answers a query.
#[utoipa::path(get, path = "/readyz", tag = "health", responses((status = 200, body = Health), (status = 503, body = ErrorResponse)))]
pub async fn readyz(State(s): State<AppState>) -> Result<Json<Health>, ApiError> {
    s.store.ping().await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            format!("the database does not answer: {e}"),
            "Check that the database server in storage.database_url is up and reachable, or, on SQLite, the disk and the file under storage.data_dir.",
        )
    })?;
    Ok(Json(Health {
        status: "ready".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_seconds: s.started_at.elapsed().as_secs(),
    }))
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(get, path = "/metrics", tag = "health", responses((status = 200, content_type = "text/plain", body = String)))]
pub async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(),
    )
}
