//! The Python client (`clients/python`) tested by its own pytest suite against the
//! debug binary this build made: the suite starts one `droidpilot serve` (the virtual
//! phone, replay and script agents, no model key) and drives it with the installed
//! package, sync and async, including its documentation's examples and `mypy --strict`.
//!
//! The suite runs in the virtual environment named by `DROIDPILOT_PYCLIENT_VENV`, where
//! the package is installed from this checkout with its test extras (`.ci/run` makes it
//! under `target/ci-python/`). Without one the test prints a skip notice, unless
//! `DROIDPILOT_REQUIRE_PYCLIENT=1` (set by `.ci/run`), which makes it a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv's interpreter, when the venv has the package and pytest; otherwise `None`
/// after a loud notice, or a panic when the environment is required.
fn venv_python() -> Option<PathBuf> {
    let required = std::env::var("DROIDPILOT_REQUIRE_PYCLIENT").as_deref() == Ok("1");
    let venv = std::env::var_os("DROIDPILOT_PYCLIENT_VENV").map(PathBuf::from);
    let python = venv.map(|v| v.join("bin/python"));
    let ready = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-c", "import droidpilot, pytest"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if ready {
        return python;
    }
    let why = match &python {
        None => "DROIDPILOT_PYCLIENT_VENV is not set".to_string(),
        Some(p) => format!("{} cannot import droidpilot and pytest", p.display()),
    };
    assert!(
        !required,
        "DROIDPILOT_REQUIRE_PYCLIENT=1 but {why}: make the venv as .ci/run does \
         (python3 -m venv V && V/bin/pip install './clients/python[test]')"
    );
    eprintln!("\n########################################################################");
    eprintln!("## SKIPPED tests/python_client.rs: {why}.");
    eprintln!("## Make a venv with './clients/python[test]' installed and name it in   ##");
    eprintln!("## DROIDPILOT_PYCLIENT_VENV (.ci/run does); DROIDPILOT_REQUIRE_PYCLIENT=1 ##");
    eprintln!("## makes this a failure.                                                 ##");
    eprintln!("########################################################################\n");
    None
}

#[test]
fn the_python_clients_suite_passes_against_a_live_server() {
    let Some(python) = venv_python() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python");
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(&dir)
        .env("DROIDPILOT_BIN", env!("CARGO_BIN_EXE_droidpilot"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python client's tests failed ({})\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(" passed") && !stdout.contains(" skipped"),
        "every test of the suite runs:\n{stdout}"
    );
    println!("{stdout}");
}
