//! What the dashboard reads besides tasks (issue 15): the replay GIF of a run, the submit
//! form's presets, and live screenshots behind a per-device frame cache.

use image::AnimationDecoder;
use serde_json::{Value, json};

use crate::common::error_of;
use crate::run::{add_phone, bare_app, submit, wait_done};

#[tokio::test]
async fn the_replay_gif_has_a_frame_per_step_with_the_tap_drawn_where_it_landed() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let actions = json!([
        {"action": "tap", "pixel": [270, 600]},
        {"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.3]},
        {"action": "home"}
    ]);
    let id = submit(
        &app,
        json!({"instruction": "gif", "agent": {"kind": "replay", "actions": actions}}),
    )
    .await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let steps: Vec<Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let with_shots = steps.iter().filter(|s| s["screenshot"].is_string()).count();
    assert!(with_shots >= 3, "{steps:?}");

    let r = app
        .get(&format!("/v1/tasks/{id}/replay.gif?width=270&frame_ms=200"))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/gif");
    let bytes = r.bytes().await.unwrap();
    let decoder =
        image::codecs::gif::GifDecoder::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let frames = decoder.into_frames().collect_frames().unwrap();
    assert_eq!(frames.len(), with_shots, "one frame per step screenshot");
    let first = frames[0].buffer();
    assert_eq!(first.width(), 270, "scaled to the width asked for");
    assert_eq!(first.height(), 600);
    assert_eq!(
        frames[0].delay().numer_denom_ms(),
        (200, 1),
        "each frame shows frame_ms"
    );
    // Step 1 tapped (270, 600) on a 540-wide screen: the mark is at (135, 300).
    let red = |p: &image::Rgba<u8>| p[0] > 180 && p[1] < 90 && p[2] < 90;
    assert!(
        red(first.get_pixel(135, 300)),
        "{:?}",
        first.get_pixel(135, 300)
    );
    let marks = first.pixels().filter(|p| red(p)).count();
    let all = (first.width() * first.height()) as usize;
    assert!(
        marks < all / 20,
        "a mark, not a red screen: {marks} red pixels"
    );
    // Step 2 swiped up the middle: red along the path, not at the tap's place.
    let second = frames[1].buffer();
    assert!(
        red(second.get_pixel(135, 300)),
        "the swipe ends at (135, 180) passing (135, 300)"
    );

    // Bad parameters are the caller's mistake; a task with no screenshots has no GIF.
    let (status, code, _, _) = error_of(
        app.get(&format!("/v1/tasks/{id}/replay.gif?width=10"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));
    let (status, _, msg, _) = error_of(
        app.get(&format!("/v1/tasks/{id}/replay.gif?widht=300"))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(msg.contains("widht"), "{msg}");
    for d in app.pool.list() {
        app.pool.remove(&d.id).await.unwrap();
    }
    let queued = submit(
        &app,
        json!({"instruction": "never runs", "agent": {"kind": "replay", "actions": [{"action": "home"}]}}),
    )
    .await;
    let (status, code, _, _) =
        error_of(app.get(&format!("/v1/tasks/{queued}/replay.gif")).await).await;
    assert_eq!((status, code.as_str()), (404, "no_screenshots"));
    app.stop().await;
}
