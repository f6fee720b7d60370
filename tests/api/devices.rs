//! Adding devices: by network address, by a serial the adb server lists, or as a virtual
//! phone; and refusing strings that are none of these.

use serde_json::{Value, json};

use crate::common::{error_of, spawn_app, spawn_app_with_toml};

#[tokio::test]
async fn a_deleted_virtual_phone_can_be_added_again() {
    let app = spawn_app_with_toml("[[devices.sim]]\nserial = \"sim-1\"\nwidth = 540\nheight = 1200\n[devices.adb]\nenabled = false\n", &[]).await;
    let r = app
        .client
        .delete(app.url("/v1/devices/sim-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = app.post_json("/v1/devices", &json!({"sim": "sim-1"})).await;
    assert_eq!(r.status(), 201);
    let d: Value = r.json().await.unwrap();
    assert_eq!(
        (d["id"].as_str(), d["backend"].as_str()),
        (Some("sim-1"), Some("sim"))
    );
    assert_eq!(
        d["screen"]["width"], 540,
        "the configured phone comes back as configured"
    );
    assert_eq!(d["state"], "available");

    // A new virtual phone gets the defaults; a second add of it is a conflict.
    let r = app.post_json("/v1/devices", &json!({"sim": "sim-2"})).await;
    assert_eq!(r.status(), 201);
    let (status, code, _, _) =
        error_of(app.post_json("/v1/devices", &json!({"sim": "sim-2"})).await).await;
    assert_eq!((status, code.as_str()), (409, "device_exists"));
    let list: Value = app.get("/v1/devices").await.json().await.unwrap();
    assert_eq!(list["devices"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn strings_that_are_no_device_are_refused_by_field() {
    let app = spawn_app().await;
    for (body, field) in [
        (json!({"address": "sim-1"}), "address"),
        (json!({"address": "../../tmp/zz"}), "address"),
        (json!({"address": "--help"}), "address"),
        (json!({"address": "x$(id):5555"}), "address"),
        (json!({"address": "Infinity"}), "address"),
        (json!({"address": "10.0.0.1:0"}), "address"),
        (json!({"address": "10.0.0.1:65536"}), "address"),
        (json!({"address": "10.0.0.1:+55"}), "address"),
        (json!({"address": "10.0.0.1:05555"}), "address"),
        (json!({"address": "-host:5555"}), "address"),
        (json!({"serial": "--help"}), "serial"),
        (json!({"serial": "../../tmp/zz"}), "serial"),
        (json!({"serial": "x$(id)"}), "serial"),
        (json!({"sim": "a b"}), "sim"),
        (json!({"sim": "-x"}), "sim"),
    ] {
        let (status, code, message, hint) =
            error_of(app.post_json("/v1/devices", &body).await).await;
        assert_eq!(
            (status, code.as_str()),
            (422, "invalid_device"),
            "{body}: {message}"
        );
        assert!(message.contains(&format!("`{field}`")), "{body}: {message}");
        assert!(!hint.is_empty());
    }
    let list: Value = app.get("/v1/devices").await.json().await.unwrap();
    assert_eq!(list["devices"], json!([]), "nothing was pooled");
    for body in [
        json!({}),
        json!({"address": "a:1", "sim": "b"}),
        json!({"adress": "a:1"}),
    ] {
        let (status, code, _, _) = error_of(app.post_json("/v1/devices", &body).await).await;
        assert_eq!((status, code.as_str()), (422, "invalid_request"), "{body}");
    }
}

#[tokio::test]
async fn a_serial_needs_the_adb_backend() {
    let app = spawn_app().await;
    let (status, code, _, _) = error_of(
        app.post_json("/v1/devices", &json!({"serial": "emulator-5554"}))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "adb_not_configured"));
}

/// The real adb server: a serial it lists is pooled; one it does not list is refused with
/// the list. Skipped (with a notice) without `adb`, like tests/adb.rs.
#[tokio::test]
async fn a_serial_is_pooled_only_if_the_adb_server_lists_it() {
    use std::process::Command;
    use std::sync::Arc;
    if !Command::new("adb")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert_ne!(
            std::env::var("DROIDPILOT_REQUIRE_ADB").as_deref(),
            Ok("1"),
            "adb is required"
        );
        eprintln!("SKIPPED: `adb` is not installed");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let adb = |args: &[&str]| {
        Command::new("adb")
            .arg("-P")
            .arg(port.to_string())
            .args(args)
            .output()
            .unwrap()
    };
    assert!(adb(&["start-server"]).status.success());
    struct Kill<F: Fn()>(F);
    impl<F: Fn()> Drop for Kill<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let _kill = Kill(|| {
        let _ = adb(&["kill-server"]);
    });
    let sim = Arc::new(droidpilot::device::sim::SimDevice::new(Default::default()).unwrap());
    let adbd = droidpilot::adbd::Adbd::new(sim, Default::default());
    let addr = adbd.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let serial = addr.to_string();
    assert!(adb(&["connect", &serial]).status.success());

    let server = format!("127.0.0.1:{port}");
    let app = spawn_app_with_toml(
        "[devices]\nsim = []\n",
        &[
            ("DROIDPILOT_DEVICES__ADB__ENABLED", "true"),
            ("DROIDPILOT_DEVICES__ADB__AUTO_DISCOVER", "false"),
            ("DROIDPILOT_DEVICES__ADB__SERVER", &server),
        ],
    )
    .await;
    let (status, code, message, _) = error_of(
        app.post_json("/v1/devices", &json!({"serial": "emulator-5554"}))
            .await,
    )
    .await;
    // The serial is in the body: 422, as docs/api.md says (404 is for ids in the path).
    assert_eq!((status, code.as_str()), (422, "unknown_serial"));
    assert!(
        message.contains(&serial),
        "the message lists what adb sees: {message}"
    );

    let r = app
        .post_json("/v1/devices", &json!({"serial": serial}))
        .await;
    assert_eq!(r.status(), 201);
    let d: Value = r.json().await.unwrap();
    assert_eq!(
        (d["backend"].as_str(), d["state"].as_str()),
        (Some("adb"), Some("available"))
    );
}
