//! Whether the official MCP Python SDK is installed, and the skip-or-fail rule.
#![allow(dead_code)]

use std::process::Command;

/// The Python interpreter to run SDK scripts with (`DROIDPILOT_PYTHON`, else `python3`).
pub fn python() -> String {
    std::env::var("DROIDPILOT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// True when `import mcp` works. Otherwise prints a loud skip notice and returns false,
/// or panics when DROIDPILOT_REQUIRE_MCP_SDK=1 (CI installs the SDK and sets it).
pub fn available() -> bool {
    let found = Command::new(python())
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var("DROIDPILOT_REQUIRE_MCP_SDK").as_deref() == Ok("1") {
            panic!(
                "DROIDPILOT_REQUIRE_MCP_SDK=1 but the MCP Python SDK is not installed \
                 (pip install mcp)"
            );
        }
        eprintln!("\n########################################################################");
        eprintln!("## SKIPPED: the MCP Python SDK is not installed (pip install mcp).     ##");
        eprintln!("## Set DROIDPILOT_REQUIRE_MCP_SDK=1 to make this a failure.            ##");
        eprintln!("########################################################################\n");
    }
    found
}
