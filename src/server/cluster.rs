//! The devices API across a cluster: the farm-wide device list (this instance's pool,
//! then the other instances' rows of the `devices` table), and requests for a phone
//! attached to another instance, which are proxied to that instance's `advertise_url`
//! (same method, path, query and body, the caller's `Authorization`; the owner's answer,
//! errors included, passes through) or refused with `device_on_other_instance` naming
//! the owner when it advertises no URL.
//!
//! Proxying (rather than refusing) keeps "any instance accepts any request" true for
//! clients behind one load balancer; an instance with no reachable URL is refused
//! clearly instead. A proxied request carries `x-droidpilot-forwarded-by`, and an
//! instance never proxies such a request again, so two instances with stale rows cannot
//! bounce it between them.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::AppState;
use crate::cluster::Membership;
use crate::core::Core;
use crate::device::pool::{DeviceState, DeviceSummary};
use crate::store::cluster::FarmDevice;

/// Set on a proxied request to the instance that forwarded it.
pub const FORWARDED_BY: HeaderName = HeaderName::from_static("x-droidpilot-forwarded-by");

/// The proxy's client: a connection must open within 5 s, and the owner must send
/// something at least every 60 s (an action may wait that long on a slow phone).
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(Duration::from_secs(60))
            .build()
            .expect("a plain HTTP client builds")
    })
}

/// The state another instance stored for its phone; an unknown one reads as offline.
fn state_of(s: &str) -> DeviceState {
    s.parse().unwrap_or(DeviceState::Offline)
}

/// A phone of another instance as `GET /v1/devices` shows it; offline when its owner is
/// dead.
fn remote_summary(f: &FarmDevice) -> DeviceSummary {
    DeviceSummary {
        id: f.id.clone(),
        backend: f.backend.clone(),
        model: f.model.clone(),
        state: if f.owner_live {
            state_of(&f.state)
        } else {
            DeviceState::Offline
        },
        screen: None,
        lease_owner: None,
        consecutive_failures: 0,
        last_error: (!f.owner_live).then(|| format!("instance `{}` is down", f.instance)),
        instance: Some(f.instance.clone()),
        local: false,
    }
}

/// Every phone of the farm: this instance's pool (marked with its name), then the other
/// instances' rows. On one host, the pool. If the database does not answer, the pool
/// alone (logged), so the local phones stay visible.
pub async fn farm_devices(s: &Core) -> Vec<DeviceSummary> {
    let mut local = s.pool.list();
    let (Some(m), Some(c)) = (&s.membership, s.store.cluster()) else {
        return local;
    };
    for d in &mut local {
        d.instance = Some(m.me.name.clone());
    }
    match c.farm_devices(m.cfg.dead_after()).await {
        Ok(rows) => local.extend(
            rows.iter()
                .filter(|f| f.instance != m.me.name)
                .map(remote_summary),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the farm's devices; listing this instance's only")
        }
    }
    local.sort_by(|a, b| (&a.id, &a.instance).cmp(&(&b.id, &b.instance)));
    local
}

/// Another instance's phone `id`, live owners first; None when no instance has it.
pub async fn remote_device(s: &Core, m: &Membership, id: &str) -> Option<FarmDevice> {
    let rows = s
        .store
        .cluster()?
        .farm_devices(m.cfg.dead_after())
        .await
        .ok()?;
    let mut rows: Vec<_> = rows
        .into_iter()
        .filter(|f| f.id == id && f.instance != m.me.name)
        .collect();
    rows.sort_by_key(|f| !f.owner_live);
    rows.into_iter().next()
}

/// `GET /v1/devices/{id}` for another instance's phone.
pub async fn remote_summary_of(s: &Core, id: &str) -> Option<DeviceSummary> {
    let m = s.membership.as_ref()?;
    remote_device(s, m, id).await.map(|f| remote_summary(&f))
}

/// The device a request is about, when it is one the owner must serve: anything under
/// `/v1/devices/{id}/`, and `DELETE /v1/devices/{id}`. (`GET /v1/devices/{id}` is
/// answered here from the farm table.)
fn device_of(method: &Method, path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1/devices/")?;
    let (id, sub) = rest.split_once('/').unwrap_or((rest, ""));
    if id.is_empty() || (sub.is_empty() && method != Method::DELETE) {
        return None;
    }
    Some(id.replace("%3A", ":").replace("%3a", ":"))
}

/// Middleware: requests for a phone this instance does not have, that another instance
/// owns, go to that instance.
pub async fn to_owner(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let Some(m) = s.membership.clone() else {
        return next.run(req).await;
    };
    let Some(id) = device_of(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    if s.pool.get(&id).is_some() || req.headers().contains_key(&FORWARDED_BY) {
        return next.run(req).await;
    }
    let Some(owner) = remote_device(&s, &m, &id).await else {
        return next.run(req).await; // nobody has it: the handler's 404
    };
    if !owner.owner_live {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "device_owner_down",
            format!(
                "device `{id}` is attached to instance `{}`, which has stopped sending heartbeats",
                owner.instance
            ),
            format!(
                "Wait for instance `{}` to come back, or use another device (GET /v1/devices).",
                owner.instance
            ),
        )
        .into_response();
    }
    let Some(url) = owner.owner_url else {
        return ApiError::new(
            StatusCode::CONFLICT,
            "device_on_other_instance",
            format!("device `{id}` is attached to instance `{}`, which advertises no URL to proxy to", owner.instance),
            format!("Send the request to instance `{}` itself, or set [cluster] advertise_url there (DROIDPILOT_CLUSTER__ADVERTISE_URL) so other instances can proxy to it.", owner.instance),
        )
        .into_response();
    };
    forward(req, &url, &m.me.name, s.config.server.body_limit_bytes).await
}

/// Sends the request on to `base` and streams the answer back as it is.
async fn forward(req: Request, base: &str, me: &str, limit: usize) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let url = format!("{base}{path}");
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the request body is larger than server.body_limit_bytes",
            "Send a smaller body.",
        )
        .into_response();
    };
    let mut rb = client()
        .request(parts.method.clone(), &url)
        .header(FORWARDED_BY, me)
        .body(body);
    for h in [header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(v) = parts.headers.get(&h) {
            rb = rb.header(h, v);
        }
    }
    match rb.send().await {
        Ok(r) => {
            let mut out = Response::builder().status(r.status());
            for h in [header::CONTENT_TYPE, header::CONTENT_DISPOSITION] {
                if let Some(v) = r.headers().get(&h) {
                    out = out.header(h, v);
                }
            }
            out.body(Body::from_stream(r.bytes_stream()))
                .unwrap_or_else(|e| ApiError::internal(e.to_string()).into_response())
        }
        Err(e) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "owner_unreachable",
            format!("the instance that owns this device did not answer at {base}: {e}"),
            "Check that its cluster.advertise_url is reachable from this host (firewall, bind address), or send the request to it directly.",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another instance's stored state reads back as the same state; anything else (a
    /// newer instance's name this one does not know) as offline.
    #[test]
    fn stored_states_read_back_and_unknown_ones_are_offline() {
        for s in [
            DeviceState::Available,
            DeviceState::Leased,
            DeviceState::Offline,
            DeviceState::Quarantined,
        ] {
            assert_eq!(state_of(s.as_str()), s);
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(state_of("rebooting"), DeviceState::Offline);
        assert_eq!(state_of("Available"), DeviceState::Offline);
    }

    #[test]
    fn only_requests_the_owner_must_serve_are_proxied() {
        let get = Method::GET;
        assert_eq!(
            device_of(&get, "/v1/devices/a-1/screenshot").as_deref(),
            Some("a-1")
        );
        assert_eq!(
            device_of(&Method::POST, "/v1/devices/127.0.0.1%3A5555/actions").as_deref(),
            Some("127.0.0.1:5555")
        );
        assert_eq!(
            device_of(&Method::DELETE, "/v1/devices/a-1").as_deref(),
            Some("a-1")
        );
        assert_eq!(device_of(&get, "/v1/devices/a-1"), None);
        assert_eq!(device_of(&get, "/v1/devices"), None);
        assert_eq!(device_of(&get, "/v1/tasks/x"), None);
    }
}
