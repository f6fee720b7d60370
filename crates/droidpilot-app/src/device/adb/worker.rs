//! One blocking worker thread per ADB device, with a deadline on every call.
//!
//! adb_client is blocking and has no read timeouts, so calls run on a dedicated thread
//! and the async side waits with `tokio::time::timeout`. A call that overruns leaves its
//! thread stuck on a socket; the worker is then replaced by a fresh thread with its own
//! connection (each adb_client call opens a new socket to the server anyway), and the old
//! thread ends by itself when its socket finally fails or answers.

use std::net::SocketAddrV4;
use std::sync::Mutex;
use std::time::Duration;

use adb_client::server_device::ADBServerDevice;
use tokio::sync::oneshot;

use crate::device::DeviceError;

type Job = Box<dyn FnOnce(&mut ADBServerDevice) + Send>;

pub struct Worker {
    serial: String,
    server: SocketAddrV4,
    tx: Mutex<std::sync::mpsc::Sender<Job>>,
}

fn spawn_thread(serial: &str, server: SocketAddrV4) -> std::sync::mpsc::Sender<Job> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let serial_owned = serial.to_string();
    let spawned = std::thread::Builder::new()
        .name(format!("adb-{serial}"))
        .spawn(move || {
            let mut dev = ADBServerDevice::new(serial_owned, Some(server));
            while let Ok(job) = rx.recv() {
                job(&mut dev);
            }
        });
    if let Err(e) = spawned {
        tracing::error!(serial, error = %e, "could not spawn the adb worker thread");
    }
    tx
}

impl Worker {
    pub fn new(serial: &str, server: SocketAddrV4) -> Self {
        Self {
            serial: serial.to_string(),
            server,
            tx: Mutex::new(spawn_thread(serial, server)),
        }
    }

    /// Runs `f` on the worker thread; fails with `Timeout` after `deadline`.
    pub async fn call<T, F>(&self, op: &str, deadline: Duration, f: F) -> Result<T, DeviceError>
    where
        T: Send + 'static,
        F: FnOnce(&mut ADBServerDevice) -> Result<T, DeviceError> + Send + 'static,
    {
        let (rtx, rrx) = oneshot::channel();
        let job: Job = Box::new(move |dev| {
            let _ = rtx.send(f(dev));
        });
        {
            let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(std::sync::mpsc::SendError(job)) = tx.send(job) {
                // The thread died (it could not be spawned): start another and retry once.
                *tx = spawn_thread(&self.serial, self.server);
                let _ = tx.send(job);
            }
        }
        match tokio::time::timeout(deadline, rrx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(DeviceError::Protocol(format!(
                "{op}: the adb worker thread stopped"
            ))),
            Err(_) => {
                tracing::warn!(serial = %self.serial, op, "adb call timed out; replacing the worker thread");
                *self.tx.lock().unwrap_or_else(|p| p.into_inner()) =
                    spawn_thread(&self.serial, self.server);
                Err(DeviceError::Timeout {
                    op: op.to_string(),
                    after: deadline,
                })
            }
        }
    }
}
