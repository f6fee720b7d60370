//! The adb server as a whole: which devices it sees, `adb connect`/`disconnect`, version.
//!
//! Owns host-side (not per-device) requests. They are blocking adb_client calls, so each
//! runs on the blocking pool behind a deadline.

use std::net::{SocketAddrV4, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::AdbOptions;
use super::gaps;
use crate::device::DeviceError;

/// One line of `adb devices`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdbListing {
    pub serial: String,
    /// `device`, `offline`, `unauthorized`, …
    pub state: String,
}

impl AdbListing {
    pub fn is_online(&self) -> bool {
        self.state == "device"
    }
}

/// A handle on one adb server. Clones share whether this process started the server.
#[derive(Debug, Clone)]
pub struct AdbHost {
    opts: AdbOptions,
    started: Arc<AtomicBool>,
}

fn server_down(addr: SocketAddrV4, e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Protocol(format!(
        "adb server at {addr} is not answering ({e}). Try: `adb kill-server && adb start-server`, then `droidpilot doctor`"
    ))
}

impl AdbHost {
    pub fn new(opts: AdbOptions) -> Self {
        Self {
            opts,
            started: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn options(&self) -> &AdbOptions {
        &self.opts
    }

    async fn blocking<T: Send + 'static>(
        &self,
        op: &str,
        f: impl FnOnce(AdbOptions) -> Result<T, DeviceError> + Send + 'static,
    ) -> Result<T, DeviceError> {
        let opts = self.opts.clone();
        let deadline = self.opts.timeout;
        match tokio::time::timeout(deadline, tokio::task::spawn_blocking(move || f(opts))).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(DeviceError::Protocol(format!("{op}: {e}"))),
            Err(_) => Err(DeviceError::Timeout {
                op: op.to_string(),
                after: deadline,
            }),
        }
    }

    /// Starts the server when it is local and down (with the right `-P`), remembering
    /// that we did, so [`stop_started_server`](Self::stop_started_server) can undo it.
    pub async fn ensure_server(&self) -> Result<(), DeviceError> {
        let started = self
            .blocking("start adb server", |o| {
                gaps::ensure_server(o.server, &o.adb_path).map_err(DeviceError::Protocol)
            })
            .await?;
        if started {
            tracing::info!(server = %self.opts.server, "started the adb server; it is stopped again on exit");
            self.started.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Whether this process started the adb server.
    pub fn started_server(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// Stops the adb server (`host:kill`, what `adb kill-server` sends) if this process
    /// started it; a server that was already running belongs to someone else and stays.
    /// Returns whether it was stopped.
    pub async fn stop_started_server(&self) -> Result<bool, DeviceError> {
        if !self.started.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        self.blocking("adb kill-server", |o| {
            gaps::host(o.server)
                .kill()
                .map_err(|e| server_down(o.server, e))
        })
        .await?;
        Ok(true)
    }

    /// `adb devices`.
    pub async fn devices(&self) -> Result<Vec<AdbListing>, DeviceError> {
        self.blocking("adb devices", |o| {
            let mut host = gaps::host(o.server);
            let list = host.devices().map_err(|e| server_down(o.server, e))?;
            Ok(list
                .into_iter()
                .map(|d| AdbListing {
                    serial: d.identifier,
                    state: d.state.to_string(),
                })
                .collect())
        })
        .await
    }

    /// The server's protocol version (`adb version` prints it as 1.0.N).
    pub async fn version(&self) -> Result<String, DeviceError> {
        self.blocking("adb version", |o| {
            let mut host = gaps::host(o.server);
            let v = host.version().map_err(|e| server_down(o.server, e))?;
            Ok(format!("{}.{}.{}", v.major, v.minor, v.revision))
        })
        .await
    }

    /// `adb connect host:port`. Unlike the CLI (which exits 0 on failure), a failure is an error.
    pub async fn connect(&self, address: &str) -> Result<(), DeviceError> {
        let address = address.to_string();
        self.blocking("adb connect", move |o| {
            let addr = resolve(&address)?;
            let mut host = gaps::host(o.server);
            host.connect_device(addr)
                .map_err(|e| DeviceError::Disconnected {
                    serial: format!("{address} ({e})"),
                })
        })
        .await
    }

    /// `adb disconnect host:port`.
    pub async fn disconnect(&self, address: &str) -> Result<(), DeviceError> {
        let address = address.to_string();
        self.blocking("adb disconnect", move |o| {
            let addr = resolve(&address)?;
            let mut host = gaps::host(o.server);
            host.disconnect_device(addr)
                .map_err(|e| DeviceError::Protocol(format!("adb disconnect {address}: {e}")))
        })
        .await
    }
}

/// Whether a serial is a TCP address (`host:port`) that `adb connect` can re-establish.
pub fn is_tcp_serial(serial: &str) -> bool {
    serial
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
}

pub fn resolve(address: &str) -> Result<SocketAddrV4, DeviceError> {
    let bad = || {
        DeviceError::InvalidInput(format!(
            "`{address}` is not a host:port address (example: 192.168.1.20:5555)"
        ))
    };
    if !is_tcp_serial(address) {
        return Err(bad());
    }
    address
        .to_socket_addrs()
        .map_err(|_| bad())?
        .find_map(|a| match a {
            std::net::SocketAddr::V4(v4) => Some(v4),
            std::net::SocketAddr::V6(_) => None,
        })
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_serials_are_recognised() {
        assert!(is_tcp_serial("127.0.0.1:5555"));
        assert!(is_tcp_serial("phone.lan:5555"));
        assert!(!is_tcp_serial("emulator-5554"));
        assert!(!is_tcp_serial("R58M123ABC"));
        assert!(resolve("nonsense").is_err());
        assert_eq!(resolve("127.0.0.1:5555").unwrap().port(), 5555);
    }
}
