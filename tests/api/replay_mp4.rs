//! The run as an MP4 (`GET /v1/tasks/{id}/replay.mp4`): its box structure read by hand
//! (ftyp, moov with an avc1 track, mdat), a sample per step screenshot held for its time,
//! the first frame decoded with the tap drawn where it landed, and byte ranges for seeking.

use serde_json::json;

use crate::common::error_of;
use crate::run::{add_phone, bare_app, submit, wait_done};

/// An MP4 box: its type and its body.
fn boxes(b: &[u8]) -> Vec<(String, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 8 <= b.len() {
        let size = u32::from_be_bytes(b[i..i + 4].try_into().unwrap()) as usize;
        let kind = String::from_utf8_lossy(&b[i + 4..i + 8]).to_string();
        assert!(
            size >= 8 && i + size <= b.len(),
            "box {kind} of {size} bytes overruns"
        );
        out.push((kind, &b[i + 8..i + size]));
        i += size;
    }
    assert_eq!(i, b.len(), "boxes fill their parent exactly");
    out
}

/// The body of the box at `path` (each name a child of the one before).
fn find<'a>(b: &'a [u8], path: &[&str]) -> &'a [u8] {
    let mut body = b;
    for name in path {
        body = boxes(body)
            .into_iter()
            .find(|(k, _)| k == name)
            .unwrap_or_else(|| panic!("no {name} box on the path {path:?}"))
            .1;
    }
    body
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i..i + 4].try_into().unwrap())
}

const STBL: [&str; 5] = ["moov", "trak", "mdia", "minf", "stbl"];

/// The sample durations from `stts` (millisecond timescale).
fn durations(mp4: &[u8]) -> Vec<u32> {
    let stts = find(mp4, &[&STBL[..], &["stts"]].concat());
    let entries = u32_at(stts, 4) as usize;
    let mut out = Vec::new();
    for e in 0..entries {
        let (count, delta) = (u32_at(stts, 8 + e * 8), u32_at(stts, 12 + e * 8));
        out.extend(std::iter::repeat_n(delta, count as usize));
    }
    out
}

/// The first sample decoded to RGB: SPS and PPS from `avcC`, the sample's length-prefixed
/// NAL units turned back into an Annex B stream.
fn first_frame(mp4: &[u8]) -> image::RgbImage {
    let stsd = find(mp4, &[&STBL[..], &["stsd"]].concat());
    let avc1 = &boxes(&stsd[8..])[0];
    assert_eq!(avc1.0, "avc1");
    let avcc = find(&avc1.1[78..], &["avcC"]);
    let sps_len = u16::from_be_bytes([avcc[6], avcc[7]]) as usize;
    let sps = &avcc[8..8 + sps_len];
    let p = 8 + sps_len + 1;
    let pps = &avcc[p + 2..p + 2 + u16::from_be_bytes([avcc[p], avcc[p + 1]]) as usize];
    let stbl = find(mp4, &STBL);
    let size = u32_at(find(stbl, &["stsz"]), 12) as usize;
    let offset = u32_at(find(stbl, &["stco"]), 8) as usize;
    let mut annex_b = Vec::new();
    for nal in [sps, pps] {
        annex_b.extend_from_slice(&[0, 0, 0, 1]);
        annex_b.extend_from_slice(nal);
    }
    let mut i = offset;
    while i < offset + size {
        let n = u32_at(mp4, i) as usize;
        annex_b.extend_from_slice(&[0, 0, 0, 1]);
        annex_b.extend_from_slice(&mp4[i + 4..i + 4 + n]);
        i += 4 + n;
    }
    let mut dec = openh264::decoder::Decoder::new().expect("a decoder");
    let yuv = dec.decode(&annex_b).expect("decodes").expect("a picture");
    use openh264::formats::YUVSource as _;
    let (w, h) = yuv.dimensions();
    let mut rgb = vec![0; w * h * 3];
    yuv.write_rgb8(&mut rgb);
    image::RgbImage::from_raw(w as u32, h as u32, rgb).unwrap()
}

#[tokio::test]
async fn the_replay_mp4_is_h264_with_a_sample_per_step_and_the_tap_drawn() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let actions = json!([
        {"action": "tap", "pixel": [270, 600]},
        {"action": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.3]},
        {"action": "home"}
    ]);
    let body = json!({"instruction": "mp4", "agent": {"kind": "replay", "actions": actions}});
    let id = submit(&app, body).await;
    assert_eq!(wait_done(&app, &id).await["status"], "succeeded");
    let steps: Vec<serde_json::Value> = app
        .get(&format!("/v1/tasks/{id}/steps"))
        .await
        .json()
        .await
        .unwrap();
    let shots = steps.iter().filter(|s| s["screenshot"].is_string()).count();
    assert!(shots >= 3, "{steps:?}");

    let r = app
        .get(&format!("/v1/tasks/{id}/replay.mp4?width=270"))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "video/mp4");
    assert_eq!(r.headers()["accept-ranges"], "bytes");
    let mp4 = r.bytes().await.unwrap().to_vec();
    let top: Vec<String> = boxes(&mp4).into_iter().map(|(k, _)| k).collect();
    assert_eq!(top[0], "ftyp", "{top:?}");
    assert!(
        top.contains(&"moov".into()) && top.contains(&"mdat".into()),
        "{top:?}"
    );
    assert_eq!(
        &find(&mp4, &["moov", "trak", "mdia", "hdlr"])[8..12],
        b"vide"
    );
    let stbl = find(&mp4, &STBL);
    assert_eq!(
        u32_at(find(stbl, &["stsz"]), 8),
        shots as u32,
        "a frame per screenshot"
    );
    let ms = durations(&mp4);
    assert_eq!(ms.len(), shots);
    assert_eq!(*ms.last().unwrap(), 2000, "the last frame shows 2 s");
    assert!(ms.iter().all(|d| (200..=5000).contains(d)), "{ms:?}");

    // Step 1 tapped (270, 600) on a 540×1200 screen: at width 270 the mark is at (135, 300).
    let first = first_frame(&mp4);
    assert_eq!(first.dimensions(), (270, 600));
    let p = first.get_pixel(135, 300);
    assert!(
        p[0] > 180 && p[1] < 90 && p[2] < 90,
        "a red mark, got {p:?}"
    );
    let elsewhere = first.get_pixel(20, 1100 / 2);
    assert!(
        elsewhere[1] > 90,
        "the mark is a dot, not a red screen: {elsewhere:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn the_replay_mp4_answers_ranges_and_refuses_what_it_cannot_show() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let body =
        json!({"instruction": "mp4", "agent": {"kind": "replay", "actions": [{"action": "home"}]}});
    let id = submit(&app, body).await;
    wait_done(&app, &id).await;
    let whole = app.get(&format!("/v1/tasks/{id}/replay.mp4")).await;
    let whole = whole.bytes().await.unwrap();
    let ranged = |range: &'static str| {
        app.client
            .get(app.url(&format!("/v1/tasks/{id}/replay.mp4")))
            .header("range", range)
            .send()
    };
    let r = ranged("bytes=4-11").await.unwrap();
    assert_eq!(r.status(), 206);
    let want = format!("bytes 4-11/{}", whole.len());
    assert_eq!(r.headers()["content-range"], want.as_str());
    assert_eq!(&r.bytes().await.unwrap()[..], &whole[4..12]);
    let tail = ranged("bytes=-8").await.unwrap().bytes().await.unwrap();
    assert_eq!(&tail[..], &whole[whole.len() - 8..]);
    assert_eq!(ranged("bytes=999999999-").await.unwrap().status(), 416);

    let (status, code, _, _) = error_of(
        app.get(&format!("/v1/tasks/{id}/replay.mp4?width=10"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"));
    let (status, _, msg, _) = error_of(
        app.get(&format!("/v1/tasks/{id}/replay.mp4?widht=300"))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(msg.contains("widht"), "{msg}");
    let unknown = uuid::Uuid::now_v7();
    let (status, ..) = error_of(app.get(&format!("/v1/tasks/{unknown}/replay.mp4")).await).await;
    assert_eq!(status, 404);
    for d in app.pool.list() {
        app.pool.remove(&d.id).await.unwrap();
    }
    let body = json!({"instruction": "never runs", "agent": {"kind": "replay", "actions": [{"action": "home"}]}});
    let queued = submit(&app, body).await;
    let (status, code, _, _) =
        error_of(app.get(&format!("/v1/tasks/{queued}/replay.mp4")).await).await;
    assert_eq!((status, code.as_str()), (409, "no_screenshots"));
    app.stop().await;
}

/// A `record_video` task on the virtual phone: the phone records its own frames, one per
/// change of its screen (not one per step), stored as the task's recording and served as
/// `replay.mp4` (the default when there is one); the step video stays at `source=steps`.
#[tokio::test]
async fn a_recorded_sim_task_serves_its_own_frames_a_frame_per_screen_change() {
    let app = bare_app(&[]).await;
    add_phone(&app, "sim-1", None).await;
    let mut actions = vec![json!({"action": "launch_app", "package": "com.android.settings"})];
    actions.extend((0..5).map(|_| json!({"action": "wait", "ms": 100})));
    actions.push(json!({"action": "home"}));
    let body = json!({"instruction": "record", "record_video": true,
        "agent": {"kind": "replay", "actions": actions}});
    let id = submit(&app, body).await;
    let task = wait_done(&app, &id).await;
    assert_eq!(task["status"], "succeeded");
    assert_eq!(task["record_video"], true);
    let segments = task["recording"].as_array().expect("a recording");
    assert_eq!(
        segments.len(),
        1,
        "the virtual phone has no time limit: {segments:?}"
    );
    assert_eq!(segments[0]["width"], 540);
    let steps = task["steps"].as_u64().unwrap();

    let r = app.get(&format!("/v1/tasks/{id}/replay.mp4")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "video/mp4");
    let mp4 = r.bytes().await.unwrap().to_vec();
    let info = droidpilot::video::probe(&mp4).expect("an MP4");
    assert_eq!((info.width, info.height), (540, 1200));
    assert_eq!(
        u64::from(info.frames),
        u64::from(u32_at(find(find(&mp4, &STBL), &["stsz"]), 8))
    );
    // The launcher, Settings, the launcher again: the waits changed nothing on screen.
    assert!(
        info.frames >= 3 && u64::from(info.frames) < steps,
        "{} frames for {steps} steps",
        info.frames
    );
    let same = app
        .get(&format!("/v1/tasks/{id}/replay.mp4?source=recording"))
        .await;
    assert_eq!(same.bytes().await.unwrap().to_vec(), mp4);
    let from_steps = app
        .get(&format!("/v1/tasks/{id}/replay.mp4?source=steps"))
        .await;
    assert_eq!(from_steps.status(), 200);
    let from_steps = from_steps.bytes().await.unwrap().to_vec();
    assert_eq!(droidpilot::video::probe(&from_steps).unwrap().width, 360);
    let ranged = app
        .client
        .get(app.url(&format!("/v1/tasks/{id}/replay.mp4")))
        .header("range", "bytes=0-7")
        .send()
        .await
        .unwrap();
    assert_eq!(ranged.status(), 206);
    assert_eq!(&ranged.bytes().await.unwrap()[..], &mp4[..8]);

    let (status, code, msg, _) = error_of(
        app.get(&format!(
            "/v1/tasks/{id}/replay.mp4?source=recording&width=300"
        ))
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "invalid_query"), "{msg}");
    let (status, _, msg, _) = error_of(
        app.get(&format!("/v1/tasks/{id}/replay.mp4?source=screen"))
            .await,
    )
    .await;
    assert_eq!(status, 400);
    assert!(msg.contains("screen") && msg.contains("recording"), "{msg}");
    let body = json!({"instruction": "plain", "agent": {"kind": "replay", "actions": [{"action": "home"}]}});
    let plain = submit(&app, body).await;
    wait_done(&app, &plain).await;
    let (status, code, _, _) = error_of(
        app.get(&format!("/v1/tasks/{plain}/replay.mp4?source=recording"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "no_recording"));
    let (status, _, msg, _) = error_of(
        app.post_json(
            "/v1/tasks",
            &json!({"instruction": "x", "record_video": "yes"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 422, "a body of the wrong shape");
    assert!(msg.contains("record_video"), "{msg}");
    app.stop().await;
}
