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

/// `GET /v1/devices/{id}/context`: the phone's locale, language, country and time zone,
/// the keyboard, and its visible windows top first with their packages, the activity's
/// window focused; after tapping a text field the keyboard's window is on top.
#[tokio::test]
async fn a_phones_context_names_its_place_keyboard_and_windows() {
    let app = spawn_app_with_toml("", &[]).await;
    let c: Value = app
        .get("/v1/devices/sim-1/context")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&c["locale"], &c["language"], &c["country"], &c["timezone"]),
        (
            &json!("en-US"),
            &json!("en"),
            &json!("us"),
            &json!("America/Los_Angeles")
        ),
        "{c}"
    );
    assert_eq!(c["keyboard_visible"], false, "{c}");
    let focused: Vec<&Value> = c["windows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["focused"] == true)
        .collect();
    assert_eq!(focused.len(), 1, "{c}");
    assert_eq!(
        (&focused[0]["package"], &focused[0]["type"]),
        (
            &json!("com.google.android.apps.nexuslauncher"),
            &json!("BASE_APPLICATION")
        )
    );
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "launch_app", "package": "com.android.chrome"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "tap", "selector": "#url_bar"}),
        )
        .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let c: Value = app
        .get("/v1/devices/sim-1/context")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(c["keyboard_visible"], true, "{c}");
    let kinds: Vec<&str> = c["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["type"].as_str().unwrap())
        .collect();
    let ime = kinds
        .iter()
        .position(|k| *k == "INPUT_METHOD")
        .expect("the keyboard's window");
    let app_at = kinds.iter().position(|k| *k == "BASE_APPLICATION").unwrap();
    assert!(ime < app_at, "top first: {kinds:?}");
    assert_eq!(
        c["windows"][ime]["package"],
        "com.google.android.inputmethod.latin"
    );

    let (status, code, _, _) = error_of(app.get("/v1/devices/nope/context").await).await;
    assert_eq!((status, code.as_str()), (404, "device_not_found"));
}

/// The screen document carries seed 004's `SemanticUITree` identity: `screen_id` (the
/// same for the same screen, another for another), `device_id` and `app_name`, the
/// foreground app's label.
#[tokio::test]
async fn the_screen_document_names_its_screen_device_and_app() {
    let app = spawn_app_with_toml("", &[]).await;
    let r = app
        .post_json(
            "/v1/devices/sim-1/actions",
            &json!({"action": "launch_app", "package": "com.android.settings"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let a: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&a["device_id"], &a["app_name"]),
        (&json!("sim-1"), &json!("Settings")),
        "{a}"
    );
    assert_eq!(a["app_package"], "com.android.settings");
    let id = a["screen_id"].as_str().unwrap();
    assert!(
        id.len() == 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    let again: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again["screen_id"], a["screen_id"], "the same screen");
    let r = app
        .post_json("/v1/devices/sim-1/actions", &json!({"action": "home"}))
        .await;
    assert_eq!(r.status(), 200);
    let home: Value = app
        .get("/v1/devices/sim-1/screen")
        .await
        .json()
        .await
        .unwrap();
    assert_ne!(home["screen_id"], a["screen_id"], "another screen");
}
