//! The one place that works around adb_client 3.2.3's gaps. Everything else in the ADB
//! backend calls these functions instead of the crate directly, so when the crate fixes a
//! gap, one function changes.
//!
//! | gap (see `shared/notes/adbd-protocol.md`) | workaround here |
//! | --- | --- |
//! | `shell_command` returns `None` for the exit code even over shell v2 (its loop returns `Ok(None)` at EOF after reading the exit packet), and a dropped device also ends in `Ok(None)` with partial output | [`shell`] appends `\necho __DP_EXIT:$?` and parses the marker; no marker means the stream was cut, reported as a disconnect |
//! | `exec` returns as soon as its input reader hits EOF, possibly before the output arrived (the output is copied by a detached thread) | [`exec_out`] hands it a writer that signals when that thread drops it, keeps the device (and so the socket) alive until then, and waits with a deadline |
//! | no read timeouts on the server transport | every call runs on the device's worker thread behind a deadline (`worker.rs`); a stuck thread is abandoned and replaced |
//! | `ADBServer::devices()` (and every host command) spawns `adb start-server` on each call when the server is on loopback, ~3 ms, and *without* `-P`, so a server on a private port gets a second server started on 5037 | [`host`] builds the `ADBServer` with a no-op program (`true`) as its "adb path"; [`ensure_server`] starts the right server once, with `-P PORT` |
//! | `framebuffer_inner()` ignores the colour offsets in the header (assumes RGBA order) | used only when asked for (`ScreenshotMethod::Framebuffer`); `exec-out screencap -p` is the default |

use std::io::Write;
use std::net::SocketAddrV4;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adb_client::ADBDeviceExt as _;
use adb_client::RustADBError;
use adb_client::server::ADBServer;
use adb_client::server_device::ADBServerDevice;

use crate::device::DeviceError;

const EXIT_MARKER: &str = "__DP_EXIT:";

/// What a shell command produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl ShellOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Maps a crate error to ours, recognising the ways a lost device shows up.
pub fn map_err(serial: &str, op: &str, e: RustADBError) -> DeviceError {
    let text = e.to_string();
    let lower = text.to_ascii_lowercase();
    let gone = matches!(e, RustADBError::DeviceNotFound(_))
        || lower.contains("offline")
        || lower.contains("not found")
        || lower.contains("closed")
        || lower.contains("connection refused")
        || lower.contains("broken pipe")
        || lower.contains("connection reset")
        || lower.contains("unauthorized");
    if gone {
        DeviceError::Disconnected {
            serial: serial.to_string(),
        }
    } else {
        DeviceError::Protocol(format!("{op}: {text}"))
    }
}

/// Runs `command` through `sh -c` on the device and returns its real exit code.
pub fn shell(
    dev: &mut ADBServerDevice,
    serial: &str,
    command: &str,
) -> Result<ShellOutput, DeviceError> {
    let wrapped = format!("{command}\necho {EXIT_MARKER}$?");
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    dev.shell_command(&wrapped, Some(&mut stdout), Some(&mut stderr))
        .map_err(|e| map_err(serial, "shell", e))?;
    let Some(pos) = find_last(&stdout, EXIT_MARKER.as_bytes()) else {
        // The stream ended before our trailing echo ran: the device went away mid-command,
        // or the command line never finished parsing (reported by sh on stderr).
        if !stderr.is_empty() {
            return Err(DeviceError::CommandFailed {
                command: command.to_string(),
                exit_code: -1,
                stderr: String::from_utf8_lossy(&stderr).into_owned(),
            });
        }
        return Err(DeviceError::Disconnected {
            serial: serial.to_string(),
        });
    };
    let code_text = String::from_utf8_lossy(&stdout[pos + EXIT_MARKER.len()..])
        .trim()
        .to_string();
    let exit_code = code_text
        .parse::<i32>()
        .map_err(|_| DeviceError::Protocol(format!("unreadable exit status {code_text:?}")))?;
    stdout.truncate(pos);
    Ok(ShellOutput {
        stdout,
        stderr,
        exit_code,
    })
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| &hay[i..i + needle.len()] == needle)
}

/// A writer that tells its owner when the crate's reader thread lets go of it.
struct DoneWriter {
    buf: Arc<Mutex<Vec<u8>>>,
    done: std::sync::mpsc::Sender<()>,
}

impl Write for DoneWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for DoneWriter {
    fn drop(&mut self) {
        let _ = self.done.send(());
    }
}

/// `exec-out`: raw stdout of `command` (no shell-v2 framing, binary-safe), complete.
pub fn exec_out(
    dev: &mut ADBServerDevice,
    serial: &str,
    command: &str,
    deadline: Duration,
) -> Result<Vec<u8>, DeviceError> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = DoneWriter {
        buf: buf.clone(),
        done: tx,
    };
    dev.exec(command, &mut std::io::empty(), Box::new(writer))
        .map_err(|e| map_err(serial, "exec", e))?;
    // `dev` still owns the socket here, so the reader thread can finish.
    rx.recv_timeout(deadline)
        .map_err(|_| DeviceError::Timeout {
            op: format!("exec-out {command}"),
            after: deadline,
        })?;
    let out = std::mem::take(
        &mut *buf
            .lock()
            .map_err(|_| DeviceError::Protocol("poisoned buffer".into()))?,
    );
    Ok(out)
}

/// Raw RGBA through the `framebuffer:` service.
pub fn framebuffer(
    dev: &mut ADBServerDevice,
    serial: &str,
) -> Result<(u32, u32, Vec<u8>), DeviceError> {
    let img = dev
        .framebuffer_inner()
        .map_err(|e| map_err(serial, "framebuffer", e))?;
    let (w, h) = img.dimensions();
    Ok((w, h, img.into_raw()))
}

/// A program that does nothing, for `ADBServer` to "start" on every call.
fn noop_program() -> Option<String> {
    ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(str::to_owned)
}

/// An `ADBServer` for host commands (devices, connect, version) that does not spawn
/// `adb start-server` per call.
pub fn host(addr: SocketAddrV4) -> ADBServer {
    ADBServer::new_from_path(addr, noop_program().or_else(|| Some("adb".into())))
}

/// Starts the adb server on `addr`'s port when it is local and not already answering;
/// `Ok(true)` when this call started it.
pub fn ensure_server(addr: SocketAddrV4, adb_path: &str) -> Result<bool, String> {
    let ip = addr.ip();
    if !(ip.is_loopback() || ip.is_unspecified()) {
        return Ok(false);
    }
    if std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::V4(addr),
        Duration::from_millis(300),
    )
    .is_ok()
    {
        return Ok(false);
    }
    let out = Command::new(adb_path)
        .args(["-P", &addr.port().to_string(), "start-server"])
        .output()
        .map_err(|e| format!("could not run `{adb_path}`: {e}. Install it (Debian/Ubuntu: apt-get install adb) or set the adb path"))?;
    if !out.status.success() {
        return Err(format!(
            "`{adb_path} -P {} start-server` failed: {}",
            addr.port(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_that_mean_gone_map_to_disconnected() {
        let e = map_err(
            "s",
            "shell",
            RustADBError::ADBRequestFailed("device offline".into()),
        );
        assert!(e.is_disconnect());
        let e = map_err(
            "s",
            "shell",
            RustADBError::ADBRequestFailed("device 's' not found".into()),
        );
        assert!(e.is_disconnect());
        let e = map_err("s", "shell", RustADBError::ConversionError);
        assert!(!e.is_disconnect());
    }

    #[test]
    fn marker_is_found_from_the_end() {
        assert_eq!(
            find_last(b"a__DP_EXIT:0\nx__DP_EXIT:3\n", EXIT_MARKER.as_bytes()),
            Some(14)
        );
        assert_eq!(find_last(b"", EXIT_MARKER.as_bytes()), None);
    }
}
