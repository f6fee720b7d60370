//! Where a URL a caller supplied may make this server connect (a task's `webhook_url`).
//!
//! Internal addresses are refused: loopback, private (RFC 1918, IPv6 unique local),
//! link-local, shared (CGNAT), unspecified, multicast, reserved and broadcast, an
//! IPv4-mapped IPv6 address by its IPv4 address, and the names `localhost` and
//! `*.localhost`. The operator opens them with an allow-list of host names, addresses
//! and ranges (`10.0.0.0/8`).
//!
//! A host name is checked on what it resolves to, and resolving twice would let a name
//! answer a public address to the check and an internal one to the connection (DNS
//! rebinding). So the check is also reqwest's resolver (`GuardedResolver`): the
//! addresses it hands to the connector are the ones it just checked. An address
//! literal never reaches a resolver, so `check_literal` runs before each request.
//! A proxy from the environment would resolve names itself, so the guarded client uses
//! none.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Hosts the operator opened: names (exact, any case) and address ranges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowList {
    names: Vec<String>,
    nets: Vec<IpNet>,
}

impl AllowList {
    /// Reads entries: a host name, an address (`127.0.0.1`, `::1`) or a range
    /// (`10.0.0.0/8`). `field` names the setting in the error.
    pub fn parse(entries: &[String], field: &str) -> Result<Self, String> {
        let mut list = AllowList::default();
        for e in entries {
            list.add(e).map_err(|why| format!("{field}: `{e}` {why}"))?;
        }
        Ok(list)
    }

    /// Adds one entry (see `parse`).
    pub fn add(&mut self, entry: &str) -> Result<(), &'static str> {
        let e = entry.trim().trim_start_matches('[').trim_end_matches(']');
        if let Ok(net) = e.parse::<IpNet>() {
            self.nets.push(net);
        } else if let Ok(ip) = e.parse::<IpAddr>() {
            self.nets.push(IpNet::from(ip));
        } else if !e.is_empty() && !e.contains(['/', ':', ' ']) {
            self.names.push(e.to_ascii_lowercase());
        } else {
            return Err("is not a host name, an address or a range such as 10.0.0.0/8");
        }
        Ok(())
    }

    fn allows_name(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.names.iter().any(|n| n.eq_ignore_ascii_case(host))
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(&ip))
    }
}

/// Why a URL's host is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("`{host}` is {kind}")]
    Internal { host: String, kind: &'static str },
    #[error("`{host}` resolves to {addr}, {kind}")]
    ResolvesInternal {
        host: String,
        addr: IpAddr,
        kind: &'static str,
    },
    #[error("`{host}` does not resolve: {reason}")]
    Unresolved { host: String, reason: String },
    #[error("the URL has no host")]
    NoHost,
}

/// What kind of internal address `ip` is; `None` for a public one.
pub fn internal_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_kind(v4);
            }
            if v6.is_unspecified() {
                Some("the unspecified address")
            } else if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unicast_link_local() {
                Some("a link-local address")
            } else if v6.is_unique_local() {
                Some("a private address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else {
                None
            }
        }
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_unspecified() || o[0] == 0 {
        Some("the unspecified address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if ip.is_private() {
        Some("a private address")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() || o[0] >= 240 {
        Some("a multicast, reserved or broadcast address")
    } else if (o[0], o[1], o[2]) == (192, 0, 0) || (o[0] == 198 && (o[1] & 0xfe) == 18) {
        Some("a reserved address")
    } else {
        None
    }
}

fn is_localhost(name: &str) -> bool {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    n == "localhost" || n.ends_with(".localhost")
}

/// The checks that need no resolution: an address literal, a `localhost` name. `Ok(true)`:
/// the host is settled (an allowed or public literal, an allowed name); `Ok(false)`: a
/// name still to be resolved.
pub fn check_literal(url: &Url, allow: &AllowList) -> Result<bool, Refusal> {
    let ip = match url.host().ok_or(Refusal::NoHost)? {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(d) => {
            if allow.allows_name(d) {
                return Ok(true);
            }
            if is_localhost(d) {
                return Err(Refusal::Internal {
                    host: d.to_string(),
                    kind: "a loopback name",
                });
            }
            return Ok(false);
        }
    };
    match internal_kind(ip).filter(|_| !allow.allows_ip(ip)) {
        Some(kind) => Err(Refusal::Internal {
            host: ip.to_string(),
            kind,
        }),
        None => Ok(true),
    }
}

/// The addresses `host` resolves to, every one of them public or allowed.
async fn resolve_checked(
    host: &str,
    port: u16,
    allow: &AllowList,
) -> Result<Vec<SocketAddr>, Refusal> {
    let unresolved = |reason: String| Refusal::Unresolved {
        host: host.to_string(),
        reason,
    };
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| unresolved(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(unresolved("no addresses".into()));
    }
    if allow.allows_name(host) {
        return Ok(addrs);
    }
    for a in &addrs {
        if let Some(kind) = internal_kind(a.ip()).filter(|_| !allow.allows_ip(a.ip())) {
            return Err(Refusal::ResolvesInternal {
                host: host.to_string(),
                addr: a.ip(),
                kind,
            });
        }
    }
    Ok(addrs)
}

/// Checks a URL's host as a connection to it would be checked: a literal at once, a name
/// by resolving it.
pub async fn check_url(url: &Url, allow: &AllowList) -> Result<(), Refusal> {
    if check_literal(url, allow)? {
        return Ok(());
    }
    let host = url.host_str().ok_or(Refusal::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(80);
    resolve_checked(host, port, allow).await.map(drop)
}

/// reqwest's resolver for guarded clients: resolves a name and hands the connector only
/// addresses it checked (a name resolving to any refused address fails as a whole).
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    allow: Arc<AllowList>,
}

impl GuardedResolver {
    pub fn new(allow: AllowList) -> Self {
        Self {
            allow: Arc::new(allow),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        Box::pin(async move {
            let host = name.as_str();
            if is_localhost(host) && !allow.allows_name(host) {
                return Err(Box::new(Refusal::Internal {
                    host: host.to_string(),
                    kind: "a loopback name",
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs = resolve_checked(host, 0, &allow).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn internal_addresses_are_named_and_public_ones_pass() {
        for (ip, kind) in [
            ("127.0.0.1", "a loopback address"),
            ("10.1.2.3", "a private address"),
            ("172.16.0.1", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.169.254", "a link-local address"),
            ("0.0.0.0", "the unspecified address"),
            ("100.64.0.1", "a shared (carrier-grade NAT) address"),
            (
                "255.255.255.255",
                "a multicast, reserved or broadcast address",
            ),
            ("::1", "a loopback address"),
            ("::", "the unspecified address"),
            ("fe80::1", "a link-local address"),
            ("fd00::1", "a private address"),
            ("::ffff:127.0.0.1", "a loopback address"),
        ] {
            assert_eq!(internal_kind(ip.parse().unwrap()), Some(kind), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:2800:220:1::1",
            "100.128.0.1",
            "172.32.0.1",
        ] {
            assert_eq!(internal_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn literals_and_localhost_are_refused_unless_allowed() {
        let none = AllowList::default();
        let refused = |u: &str, a: &AllowList| check_literal(&url(u), a).is_err();
        assert!(refused("http://127.0.0.1:9/h", &none));
        assert!(refused("http://[::1]/h", &none));
        assert!(refused("http://LOCALHOST./h", &none));
        assert!(refused("http://api.localhost/h", &none));
        assert_eq!(
            check_literal(&url("https://93.184.216.34/h"), &none),
            Ok(true)
        );
        assert_eq!(
            check_literal(&url("https://hooks.example/h"), &none),
            Ok(false)
        );
        let allow = AllowList::parse(
            &[
                "127.0.0.1".into(),
                "10.0.0.0/8".into(),
                "Hooks.Internal".into(),
                "localhost".into(),
            ],
            "webhooks.allowed_hosts",
        )
        .unwrap();
        assert_eq!(
            check_literal(&url("http://127.0.0.1:9/h"), &allow),
            Ok(true)
        );
        assert_eq!(check_literal(&url("http://10.9.8.7/h"), &allow), Ok(true));
        assert_eq!(
            check_literal(&url("http://hooks.internal/h"), &allow),
            Ok(true)
        );
        assert_eq!(check_literal(&url("http://localhost/h"), &allow), Ok(true));
        assert!(refused("http://192.168.0.1/h", &allow));
        let e = AllowList::parse(&["http://x/y".into()], "webhooks.allowed_hosts").unwrap_err();
        assert!(e.starts_with("webhooks.allowed_hosts: `http://x/y`"), "{e}");
    }

    #[tokio::test]
    async fn a_name_is_judged_by_what_it_resolves_to() {
        let none = AllowList::default();
        // `localhost.` with a trailing dot is still loopback; a name that resolves to
        // 127.0.0.1 through the resolver is refused by address.
        let e = check_url(&url("http://localhost./h"), &none)
            .await
            .unwrap_err();
        assert!(matches!(e, Refusal::Internal { .. }), "{e}");
        let r = GuardedResolver::new(none);
        let err = match r.resolve("localhost".parse().unwrap()).await {
            Ok(_) => panic!("localhost resolved through the guard"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("loopback"), "{err}");
        // Past the name check, the addresses decide: localhost resolves to loopback.
        let e = resolve_checked("localhost", 80, &AllowList::default())
            .await
            .unwrap_err();
        assert!(matches!(e, Refusal::ResolvesInternal { .. }), "{e}");
        let open = AllowList::parse(&["127.0.0.0/8".into(), "::1".into()], "t").unwrap();
        let addrs = resolve_checked("localhost", 80, &open).await.unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
