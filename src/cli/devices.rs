//! `droidpilot devices`: what the pool sees (configured phones plus what the adb server
//! discovers), as a table or JSON. `adb_options` is shared with `doctor`.

use std::path::PathBuf;

use crate::device::adb::AdbOptions;
use crate::device::pool::{DevicePool, DeviceSummary, PoolOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct DevicesArgs {
    /// The adb server, host:port (default: [devices.adb] server, 127.0.0.1:5037).
    #[arg(long, env = "DROIDPILOT_ADB_SERVER")]
    pub adb_server: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// A TOML file layered over the defaults and config/local.toml, as for `serve`.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// `base` (from the configuration) with the command line's `--adb-server` and
/// `--adb-path` over it.
pub fn adb_options(
    base: AdbOptions,
    server: Option<&str>,
    adb_path: Option<&str>,
) -> anyhow::Result<AdbOptions> {
    let mut opts = base;
    if let Some(s) = server {
        opts.server = crate::device::adb::host::resolve(s)
            .map_err(|e| anyhow::anyhow!("--adb-server: {e}"))?;
    }
    if let Some(p) = adb_path {
        opts.adb_path = p.to_string();
    }
    Ok(opts)
}

/// The `devices` table.
pub fn format_devices_table(rows: &[DeviceSummary]) -> String {
    let mut lines = vec![[
        "ID".to_string(),
        "BACKEND".into(),
        "MODEL".into(),
        "STATE".into(),
        "SCREEN".into(),
    ]];
    for r in rows {
        lines.push([
            r.id.clone(),
            r.backend.clone(),
            if r.model.is_empty() {
                "-".into()
            } else {
                r.model.clone()
            },
            r.state.as_str().into(),
            r.screen
                .map_or("-".into(), |s| format!("{}x{}", s.width, s.height)),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &lines {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if rows.is_empty() {
        out.push_str("(no devices) Try: 1) replug USB and accept the debugging prompt 2) `adb connect HOST:PORT` 3) `droidpilot sim` for a virtual phone\n");
    }
    out
}

/// `droidpilot devices`: `base` carries the configured devices (virtual phones, serials);
/// the devices of the adb server `adb` are discovered on top.
pub async fn run_devices(json: bool, adb: AdbOptions, base: PoolOptions) -> anyhow::Result<()> {
    let opts = PoolOptions {
        adb: Some(adb),
        auto_discover: true,
        ..base
    };
    let pool = DevicePool::new(opts)
        .await
        .map_err(|e| anyhow::anyhow!("{e}. {}", e.hint()))?;
    let rows = pool.list();
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", format_devices_table(&rows));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::pool::DeviceState;
    use crate::domain::ScreenSize;

    #[test]
    fn table_lists_every_column() {
        let rows = vec![DeviceSummary {
            id: "127.0.0.1:5555".into(),
            backend: "adb".into(),
            model: "Pixel 8".into(),
            state: DeviceState::Available,
            screen: Some(ScreenSize {
                width: 1080,
                height: 2400,
            }),
            lease_owner: None,
            consecutive_failures: 0,
            last_error: None,
            instance: None,
            local: true,
        }];
        let t = format_devices_table(&rows);
        assert!(t.starts_with("ID"));
        assert!(
            t.contains("127.0.0.1:5555  adb      Pixel 8  available  1080x2400"),
            "{t}"
        );
        assert!(format_devices_table(&[]).contains("droidpilot sim"));
    }
}
