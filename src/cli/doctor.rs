//! `droidpilot doctor`: what is wrong with the ADB setup (the adb program, the adb
//! server, each device) and with the `[[mcp.servers]]` (each connected once, its tools
//! listed), with fixes a person can follow.

use std::path::PathBuf;
use std::time::Duration;

use crate::device::Device as _;
use crate::device::adb::{AdbDevice, AdbHost, AdbOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct DoctorArgs {
    /// The adb server, host:port (default: [devices.adb] server, 127.0.0.1:5037).
    #[arg(long, env = "DROIDPILOT_ADB_SERVER")]
    pub adb_server: Option<String>,
    /// The adb program (default: [devices.adb] adb_path, `adb`).
    #[arg(long)]
    pub adb_path: Option<String>,
    /// A TOML file layered over the defaults and config/local.toml, as for `serve`.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    /// What to do when it failed (or a recommendation when it passed with a caveat).
    pub fix: Option<String>,
}

const RESTART_FIX: &str =
    "Try: 1) replug USB 2) `droidpilot devices` 3) `adb kill-server && adb start-server`";

/// Runs every check; never fails, a failure is a line in the report.
pub async fn doctor(opts: &AdbOptions) -> Vec<Check> {
    let mut checks = Vec::new();
    let bin = tokio::process::Command::new(&opts.adb_path)
        .arg("version")
        .output()
        .await;
    match bin {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let detail = text.lines().take(2).collect::<Vec<_>>().join("; ");
            checks.push(Check { name: "adb binary".into(), ok: true, detail, fix: None });
        }
        Ok(o) => checks.push(Check {
            name: "adb binary".into(),
            ok: false,
            detail: String::from_utf8_lossy(&o.stderr).trim().to_string(),
            fix: Some("Reinstall adb (Debian/Ubuntu: `apt-get install adb`; others: Android platform-tools).".into()),
        }),
        Err(e) => checks.push(Check {
            name: "adb binary".into(),
            ok: false,
            detail: format!("`{}` not runnable: {e}", opts.adb_path),
            fix: Some("Install adb (Debian/Ubuntu: `apt-get install adb`; others: Android platform-tools) and put it on PATH.".into()),
        }),
    }
    let host = AdbHost::new(opts.clone());
    let _ = host.ensure_server().await;
    match host.version().await {
        Ok(v) => checks.push(Check {
            name: "adb server".into(),
            ok: true,
            detail: format!("{} answers, version {v}", opts.server),
            fix: None,
        }),
        Err(e) => {
            checks.push(Check {
                name: "adb server".into(),
                ok: false,
                detail: e.to_string(),
                fix: Some("Try: `adb kill-server && adb start-server`; for a remote server check the address and firewall.".into()),
            });
            return checks;
        }
    }
    let devices = match host.devices().await {
        Ok(d) => d,
        Err(e) => {
            checks.push(Check {
                name: "adb devices".into(),
                ok: false,
                detail: e.to_string(),
                fix: Some(RESTART_FIX.into()),
            });
            return checks;
        }
    };
    if devices.is_empty() {
        checks.push(Check {
            name: "adb devices".into(),
            ok: false,
            detail: "the server sees no device".into(),
            fix: Some("Try: 1) replug USB and accept the debugging prompt 2) `adb connect HOST:PORT` 3) `droidpilot sim` for a virtual phone".into()),
        });
    }
    for d in devices {
        let name = |what: &str| format!("{} {what}", d.serial);
        if !d.is_online() {
            let fix = match d.state.as_str() {
                "unauthorized" => {
                    "Unlock the phone and accept the USB debugging prompt (tick \"Always allow\")."
                        .to_string()
                }
                _ => RESTART_FIX.to_string(),
            };
            checks.push(Check {
                name: name("state"),
                ok: false,
                detail: d.state.clone(),
                fix: Some(fix),
            });
            continue;
        }
        let dev = AdbDevice::new(
            d.serial.clone(),
            AdbOptions {
                timeout: Duration::from_secs(8),
                ..opts.clone()
            },
        );
        let r = dev.shell("echo ok").await;
        match r {
            Ok(o) if o.stdout_str().trim() == "ok" && o.exit_code == 0 => checks.push(Check {
                name: name("shell"),
                ok: true,
                detail: "echo ok, exit code 0".into(),
                fix: None,
            }),
            Ok(o) => checks.push(Check {
                name: name("shell"),
                ok: false,
                detail: format!(
                    "unexpected answer {:?} (exit {})",
                    o.stdout_str(),
                    o.exit_code
                ),
                fix: Some(RESTART_FIX.into()),
            }),
            Err(e) => {
                checks.push(Check {
                    name: name("shell"),
                    ok: false,
                    detail: e.to_string(),
                    fix: Some(RESTART_FIX.into()),
                });
                continue;
            }
        }
        match dev.hierarchy().await {
            Ok(x) => checks.push(Check { name: name("uiautomator"), ok: true, detail: format!("dump of {} bytes", x.len()), fix: None }),
            Err(e) => checks.push(Check {
                name: name("uiautomator"),
                ok: false,
                detail: e.to_string(),
                fix: Some("Wake and unlock the phone, wait for animations to stop, and retry; some secure screens cannot be dumped.".into()),
            }),
        }
        match dev.screenshot().await {
            Ok(s) => checks.push(Check {
                name: name("screencap"),
                ok: true,
                detail: format!("{}x{}", s.width, s.height),
                fix: None,
            }),
            Err(e) => checks.push(Check {
                name: name("screencap"),
                ok: false,
                detail: e.to_string(),
                fix: Some(RESTART_FIX.into()),
            }),
        }
        match dev.has_adb_keyboard().await {
            Ok(true) => checks.push(Check {
                name: name("ADB Keyboard"),
                ok: true,
                detail: "installed (Unicode typing available)".into(),
                fix: None,
            }),
            Ok(false) => checks.push(Check {
                name: name("ADB Keyboard"),
                ok: false,
                detail: "not installed: typing is limited to ASCII via `input text`".into(),
                fix: Some(format!(
                    "To type any language, {}",
                    crate::device::adb::ADB_KEYBOARD_HINT
                )),
            }),
            Err(e) => checks.push(Check {
                name: name("ADB Keyboard"),
                ok: false,
                detail: e.to_string(),
                fix: None,
            }),
        }
    }
    checks
}

/// One check per `[[mcp.servers]]` entry: connected once (at most `within` each, all at
/// once) and its tools listed, or why not. Shows names, never header or env values.
pub async fn mcp_checks(cfg: &crate::mcp::client::McpConfig, within: Duration) -> Vec<Check> {
    use crate::mcp::client::ServerStatus;
    let reports = match crate::mcp::client::probe(cfg, within).await {
        Ok(r) => r,
        Err(e) => {
            return vec![Check {
                name: "mcp servers".into(),
                ok: false,
                detail: e,
                fix: Some("Fix the [[mcp.servers]] entry in the config file.".into()),
            }];
        }
    };
    (reports.into_iter())
        .map(|r| {
            let name = format!("mcp server {} ({})", r.name, r.transport);
            match r.status {
                ServerStatus::Connected => Check {
                    name,
                    ok: true,
                    detail: format!("connected, {} tool(s): {}", r.tools.len(), r.tools.join(", ")),
                    fix: None,
                },
                ServerStatus::Unavailable { reason } => Check {
                    name,
                    ok: false,
                    detail: reason,
                    fix: Some("Run the command (or open the URL) by hand to see its error; check `args`, `env` names and `headers`.".into()),
                },
                ServerStatus::Connecting => Check {
                    name,
                    ok: false,
                    detail: format!("no answer within {} s", within.as_secs()),
                    fix: Some("Check that the server starts and speaks MCP (stdio: on stdout only).".into()),
                },
            }
        })
        .collect()
}

pub fn format_report(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "[{}] {}: {}\n",
            if c.ok { " ok " } else { "FAIL" },
            c.name,
            c.detail
        ));
        if let Some(f) = &c.fix {
            out.push_str(&format!("       {f}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn doctor_explains_a_missing_server() {
        let opts = AdbOptions {
            adb_path: "/nonexistent/adb".into(),
            ..AdbOptions::local(1)
        };
        let checks = doctor(&opts).await;
        assert!(
            !checks[0].ok
                && checks[0]
                    .fix
                    .as_deref()
                    .unwrap()
                    .contains("apt-get install adb")
        );
        let server = checks.iter().find(|c| c.name == "adb server").unwrap();
        assert!(!server.ok && server.fix.as_deref().unwrap().contains("adb kill-server"));
    }
}
