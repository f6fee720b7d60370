//! Turning a phone: the `rotate` action over REST and a flow's `setOrientation`, on the
//! virtual phone. The device's screen, its screenshots and where selectors land follow
//! the turn.

use serde_json::{Value, json};

use crate::common::error_of;
use crate::run::{add_phone, bare_app, submit, wait_done};
use crate::scripts::steps;
use droidpilot::domain::Orientation;

#[tokio::test]
async fn a_turned_phone_reports_and_shows_the_turned_screen_and_taps_land() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let size = |d: &Value| {
        (
            d["screen"]["width"].as_u64().unwrap(),
            d["screen"]["height"].as_u64().unwrap(),
        )
    };
    let before: Value = app.get("/v1/devices/p").await.json().await.unwrap();
    let (w, h) = size(&before);
    assert!(h > w, "starts in portrait");
    let act = |body: Value| {
        let app = &app;
        async move { app.post_json("/v1/devices/p/actions", &body).await }
    };
    let r = act(json!({"action": "rotate", "orientation": "landscape"})).await;
    assert_eq!(r.status(), 200);
    let done: Value = r.json().await.unwrap();
    assert_eq!(done["detail"]["screen"], json!([h, w]), "{done}");
    let after: Value = app.get("/v1/devices/p").await.json().await.unwrap();
    assert_eq!(size(&after), (h, w), "the device reports the turned size");
    let png = app
        .get("/v1/devices/p/screenshot")
        .await
        .bytes()
        .await
        .unwrap();
    let img = image::load_from_memory(&png).unwrap();
    assert_eq!((img.width() as u64, img.height() as u64), (h, w));
    // A selector resolves on the landscape layout and the tap lands on its element.
    let bluetooth = phone.state().settings.bluetooth;
    act(json!({"action": "launch_app", "package": "com.android.settings"})).await;
    let r = act(json!({"action": "tap", "selector": ":text(\"Bluetooth\")"})).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_ne!(
        phone.state().settings.bluetooth,
        bluetooth,
        "the tap landed"
    );
    // A mistake names the field and what it takes.
    let (status, _, msg, _) =
        error_of(act(json!({"action": "rotate", "orientation": "sideways"})).await).await;
    assert_eq!(status, 422);
    assert!(
        msg.contains("orientation") && msg.contains("portrait, landscape"),
        "{msg}"
    );
    act(json!({"action": "rotate", "orientation": "portrait"})).await;
    assert_eq!(phone.orientation(), Orientation::Portrait);
}

#[tokio::test]
async fn set_orientation_in_a_flow_turns_the_phone_and_back() {
    let app = bare_app(&[]).await;
    let phone = add_phone(&app, "p", None).await;
    let bluetooth = phone.state().settings.bluetooth;
    let flow = "appId: com.android.settings\n---\n- launchApp\n- setOrientation: LANDSCAPE_LEFT\n\
                - assertVisible: Bluetooth\n- tapOn: Bluetooth\n- setOrientation: UPSIDE_DOWN\n";
    let id = submit(
        &app,
        json!({"instruction": "turn and tap", "device_id": "p", "max_steps": 40,
               "agent": {"kind": "flow", "flow": flow}}),
    )
    .await;
    let done = wait_done(&app, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_ne!(
        phone.state().settings.bluetooth,
        bluetooth,
        "tapped in landscape"
    );
    assert_eq!(phone.orientation(), Orientation::ReversePortrait);
    let turns: Vec<Value> = steps(&app, &id)
        .await
        .into_iter()
        .filter(|s| s["action"]["action"] == "rotate")
        .map(|s| s["action"]["orientation"].clone())
        .collect();
    assert_eq!(turns, [json!("landscape"), json!("reverse_portrait")]);
}
