//! DNS rebinding protection: a request whose `Host` names something this server is not
//! known as gets 421 before anything else looks at it. A web page that points its own
//! name at 127.0.0.1 makes the browser send that name in `Host`; refusing unknown names
//! keeps such a page from driving the phones of a server without tokens.
//!
//! Accepted: `localhost`, the bound address (any IP address when bound to 0.0.0.0 or
//! `::`; `127.0.0.1` and `::1` when bound to loopback), the host of
//! `cluster.advertise_url` (other instances proxy there), and `server.allowed_hosts`
//! (`*` turns the check off). The port is not compared: a rebinding page can pick any
//! port, its name is what gives it away. A request without `Host` (HTTP/1.0) passes: a
//! browser always sends one. The probes (`/healthz`, `/readyz`) hold nothing and pass
//! too, for load balancers that probe by a name of their own.
//!
//! This layer is separate from the token check and runs before it; `/mcp` is covered by
//! it as well (rmcp's own check, which knows only loopback names, is off).

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::config::Config;

/// The names a request may carry in `Host`.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    /// `allowed_hosts = ["*"]`: no check.
    any: bool,
    /// Bound to 0.0.0.0 or `::`: every IP address is one of ours, and an IP address in
    /// `Host` cannot come from a rebound name.
    any_ip: bool,
    /// Lower-case, without brackets, port or trailing dot.
    names: HashSet<String>,
}

impl AllowedHosts {
    pub fn from_config(config: &Config) -> Self {
        let bind = config.server.bind.ip();
        let mut names: HashSet<String> = HashSet::from(["localhost".to_string()]);
        names.insert(bind.to_string());
        if bind.is_loopback() {
            names.extend(["127.0.0.1".to_string(), "::1".to_string()]);
        }
        if let Ok(url) = reqwest::Url::parse(&config.cluster.advertise_url)
            && let Some(host) = url.host_str()
        {
            names.insert(normalize(host));
        }
        let configured = &config.server.allowed_hosts;
        names.extend(configured.iter().filter_map(|h| host_of(h)));
        Self {
            any: configured.iter().any(|h| h.trim() == "*"),
            any_ip: bind.is_unspecified(),
            names,
        }
    }

    /// Whether a `Host` value (or an absolute URI's authority) names this server.
    pub fn allows(&self, authority: &str) -> bool {
        if self.any {
            return true;
        }
        let Some(host) = host_of(authority) else {
            return false;
        };
        (self.any_ip && host.parse::<IpAddr>().is_ok()) || self.names.contains(&host)
    }
}

/// The host part of an authority (`name`, `name:port`, `[v6]:port`), normalized.
fn host_of(authority: &str) -> Option<String> {
    let a: axum::http::uri::Authority = authority.trim().parse().ok()?;
    let host = normalize(a.host());
    (!host.is_empty()).then_some(host)
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Refuses requests whose `Host` (or absolute URI) names an unknown host.
pub async fn check(State(allowed): State<Arc<AllowedHosts>>, req: Request, next: Next) -> Response {
    if super::openapi::PUBLIC_OPERATIONS.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let named = match req.uri().authority() {
        Some(a) => Some(a.as_str().to_string()),
        None => req
            .headers()
            .get(header::HOST)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
    };
    match named {
        Some(host) if !allowed.allows(&host) => refused(&host),
        _ => next.run(req).await,
    }
}

fn refused(host: &str) -> Response {
    let shown: String = host.chars().take(100).collect();
    tracing::debug!(host = %shown, "request for an unknown host refused");
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "host_not_allowed",
        format!("this server does not answer to the host `{shown}`"),
        "Reach the server as localhost or by the address it is bound to; if clients use this name, add it to server.allowed_hosts (DROIDPILOT_SERVER__ALLOWED_HOSTS).",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(bind: &str, allowed: &[&str]) -> AllowedHosts {
        let mut config = Config::load_with_env(
            std::path::Path::new("/nonexistent"),
            &Default::default(),
            Vec::<(String, String)>::new(),
        )
        .expect("the defaults load");
        config.server.bind = bind.parse().unwrap();
        config.server.allowed_hosts = allowed.iter().map(|s| s.to_string()).collect();
        AllowedHosts::from_config(&config)
    }

    #[test]
    fn loopback_accepts_its_own_names_and_nothing_else() {
        let h = hosts("127.0.0.1:8080", &[]);
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.",
            "127.0.0.1:9",
            "[::1]:8080",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:8080", "10.0.0.1", "", "a b"] {
            assert!(!h.allows(bad), "{bad}");
        }
    }

    #[test]
    fn configured_names_and_the_wildcard() {
        let h = hosts("127.0.0.1:8080", &["Phones.Example.com:443"]);
        assert!(h.allows("phones.example.com"));
        assert!(!h.allows("example.com"));
        assert!(hosts("127.0.0.1:8080", &["*"]).allows("anything.example"));
    }

    #[test]
    fn all_interfaces_accept_any_address_but_not_any_name() {
        let h = hosts("0.0.0.0:8080", &[]);
        assert!(h.allows("192.168.1.20:8080"));
        assert!(h.allows("[fe80::1]:8080"));
        assert!(!h.allows("rebound.example:8080"));
        assert!(!hosts("10.0.0.5:8080", &[]).allows("10.0.0.6"));
    }
}
