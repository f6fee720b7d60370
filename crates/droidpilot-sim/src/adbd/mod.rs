//! A simulated adbd: serves any `Arc<dyn Device>` over TCP with the adb wire protocol, so
//! the real `adb` tool and the ADB backend can be exercised end to end without a phone.
//!
//! Pieces: `packet` (message codec), `shell_v2` (shell protocol framing), `cmdline` (the
//! POSIX-style command line, never executing anything), `commands` (built-in Android
//! commands over the `Device` trait plus adbd-local state), `screenrecord` (a real MP4 of the
//! screen, `pkill -INT screenrecord` to stop it), `server` (connections, streams,
//! services), `sync` (the `sync:` file service behind `adb pull`/`push`); `droidpilot sim`
//! serves it from `cli::sim`.

pub mod cmdline;
pub mod commands;
pub mod packet;
pub mod screenrecord;
pub mod server;

pub use server::{Adbd, AdbdOptions, serve};
pub mod shell_v2;
pub mod sync;
