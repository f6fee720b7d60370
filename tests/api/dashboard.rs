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

#[tokio::test]
async fn presets_offer_the_configured_models_and_never_a_key() {
    let toml = r#"
[devices]
sim = []
[agent.navigator]
provider = "openai"
model = "gpt-4o-mini"
api_key = "sk-secret-in-config"
[[dashboard.models]]
name = "Local MAI-UI"
provider = "openai"
model = "MAI-UI-8B"
base_url = "http://user:pw@gpu:8000/v1?token=abc"
"#;
    let app = crate::common::spawn_app_with_toml(toml, &[]).await;
    let r = app.get("/v1/presets").await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        !text.contains("sk-") && !text.contains("pw@") && !text.contains("abc"),
        "no secrets: {text}"
    );
    let p: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        p["agent_kinds"],
        json!([
            "navigator",
            "vision",
            "replay",
            "script",
            "planned",
            "chain",
            "flow",
            "split"
        ]),
        "every kind a task may name, in the form's order"
    );
    let names: Vec<&str> = p["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"gpt-4o-mini") && names.contains(&"MAI-UI-8B"),
        "{p}"
    );
    let local = p["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "Local MAI-UI")
        .unwrap();
    assert_eq!(local["base_url"], "http://***@gpu:8000/v1?token=***");
    assert_eq!(p["defaults"]["agent"]["model"], "gpt-4o-mini");
    // Chosen in the configuration (and listed) models are configured.
    assert_eq!(p["defaults"]["agent_configured"], true, "{p}");
    assert_eq!(local["configured"], true, "{p}");
    assert_eq!(p["defaults"]["max_steps"], 50);
    assert_eq!(p["defaults"]["timeout_seconds"], 600);
    app.stop().await;
}

/// A fresh install chose no model: the defaults' navigator (hosted, no key) and vision
/// model (a local address) are not configured, so the form does not start on them; a
/// model the user names, or a key, configures one. (The test servers carry a placeholder
/// OpenAI key, so this reads the configuration as `droidpilot serve` would on a fresh
/// install, with an empty environment.)
#[test]
fn on_a_fresh_install_no_model_is_configured_until_chosen_or_keyed() {
    use droidpilot::agent::spec::AgentKind;
    use droidpilot::config::{Config, Overrides};
    let dir = tempfile::tempdir().unwrap();
    let load = |toml: &str, env: Vec<(String, String)>| {
        std::fs::write(dir.path().join("local.toml"), toml).unwrap();
        Config::load_with_env(dir.path(), &Overrides::default(), env).unwrap()
    };
    let none = |_: &str| None;
    let fresh = load("", Vec::new());
    for kind in [AgentKind::Navigator, AgentKind::Vision, AgentKind::Planned] {
        assert!(!fresh.model_configured(kind, none), "{kind:?}");
    }
    // Replay and script agents need no model.
    assert!(fresh.model_configured(AgentKind::Replay, none));
    // A key in the server's environment configures the hosted navigator.
    let key = |v: &str| (v == "OPENAI_API_KEY").then(|| "sk-x".to_string());
    assert!(fresh.model_configured(AgentKind::Navigator, key));
    // Naming a model in the user's file (or through DROIDPILOT_*) configures it.
    let chosen = load(
        "[agent.vision]\nbase_url = \"http://10.0.0.5:8000/v1\"\n",
        Vec::new(),
    );
    assert!(chosen.model_configured(AgentKind::Vision, none));
    assert!(!chosen.model_configured(AgentKind::Navigator, none));
    let by_env = load(
        "",
        vec![(
            "DROIDPILOT_AGENT__NAVIGATOR__MODEL".into(),
            "gpt-4o-mini".into(),
        )],
    );
    assert!(by_env.model_configured(AgentKind::Navigator, none));
}

/// Device commands the virtual phone has served (each screenshot is one).
fn commands(phone: &droidpilot::device::sim::SimDevice) -> u64 {
    phone.snapshot().commands
}

#[tokio::test]
async fn many_viewers_of_a_phone_cost_one_capture_per_frame_interval() {
    let app = bare_app(&[("DROIDPILOT_DASHBOARD__FRAME_INTERVAL_MS", "60000")]).await;
    let phone = add_phone(&app, "sim-1", None).await;
    let url = "/v1/devices/sim-1/screenshot?format=jpeg&scale=0.3&quality=60";
    let before = commands(&phone);
    let viewers = (0..8).map(|_| app.get(url));
    let shots = futures::future::join_all(viewers).await;
    let mut bodies = Vec::new();
    for r in shots {
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "image/jpeg");
        bodies.push(r.bytes().await.unwrap());
    }
    assert_eq!(commands(&phone) - before, 1, "eight viewers, one capture");
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "the same frame");
    let img = image::load_from_memory(&bodies[0]).unwrap();
    assert_eq!(
        (img.width(), img.height()),
        (162, 360),
        "scaled 0.3 from 540×1200"
    );
    // Another size within the interval: the same capture, encoded again.
    let r = app
        .get("/v1/devices/sim-1/screenshot?format=jpeg&scale=0.5")
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(commands(&phone) - before, 1);
    // PNG is not cached: each request reads the phone.
    assert_eq!(app.get("/v1/devices/sim-1/screenshot").await.status(), 200);
    assert_eq!(commands(&phone) - before, 2);
    app.stop().await;

    // A short interval: a poll after it captures again.
    let app = bare_app(&[("DROIDPILOT_DASHBOARD__FRAME_INTERVAL_MS", "50")]).await;
    let phone = add_phone(&app, "sim-1", None).await;
    let before = commands(&phone);
    assert_eq!(app.get(url).await.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    assert_eq!(app.get(url).await.status(), 200);
    assert_eq!(
        commands(&phone) - before,
        2,
        "a fresh frame after the interval"
    );
    app.stop().await;
}
