//! `droidpilot serve` refuses to start on a database it cannot use, with a hint and without
//! ever printing the password: wrong credentials, nothing listening, a port that accepts
//! but never answers (bounded by the connect timeout, never a hang), a URL of another kind.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::pg::{admin_url, with_database};

const BIN: &str = env!("CARGO_BIN_EXE_droidpilot");

/// Runs `droidpilot serve` on `url` and returns its stderr once it exited; panics if it
/// was still running after a minute (it must give up long before).
async fn refused(url: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path())
        .current_dir(dir.path())
        .env("DROIDPILOT_STORAGE__DATABASE_URL", url)
        .env("DROIDPILOT_SERVER__BIND", "127.0.0.1:0")
        .env("DROIDPILOT_DEVICES__ADB__ENABLED", "false")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .unwrap_or_else(|_| {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("droidpilot serve on {url} neither started nor gave up")
    })
    .unwrap()
    .unwrap();
    assert!(!out.status.success(), "it must not start on {url}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SECRET: &str = "pw-not-to-be-printed";

#[tokio::test]
async fn a_wrong_password_is_refused_with_a_hint() {
    let Some(admin) = admin_url() else { return };
    // The CI cluster's address with a password that is not its own.
    let (_, host) = admin.rsplit_once('@').unwrap();
    let url = format!("postgres://postgres:{SECRET}@{host}");
    let err = refused(&url).await;
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("check the user and password"), "{err}");
    assert!(err.contains("postgres:***@"), "the URL is named: {err}");
    assert!(!err.contains(SECRET), "{err}");
}

#[tokio::test]
async fn a_missing_database_is_refused_with_a_hint() {
    let Some(admin) = admin_url() else { return };
    let err = refused(&with_database(&admin, "dp_does_not_exist")).await;
    assert!(
        err.contains("dp_does_not_exist") && err.contains("createdb"),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_that_is_down_is_refused_with_a_hint() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = refused(&format!("postgres://dp:{SECRET}@127.0.0.1:{port}/dp")).await;
    assert!(err.contains("is running and reachable"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_on() {
    // Accepts connections (the kernel's backlog) but never speaks.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let err = refused(&format!("postgres://dp:{SECRET}@127.0.0.1:{port}/dp")).await;
    assert!(err.contains("no answer within"), "{err}");
    drop(silent);
}

#[tokio::test]
async fn a_url_of_another_kind_names_the_key() {
    let err = refused(&format!("mysql://dp:{SECRET}@127.0.0.1/dp")).await;
    assert!(err.contains("storage.database_url"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
}
