use serde_json::{Value, json};

use super::*;

fn el(id: u32, sel: &str, alts: &[&str], b: [i32; 4]) -> Value {
    json!({"element_id": id, "selector": sel, "alternative_selectors": alts, "type": "Button",
           "text": sel, "actions": ["click"], "bounds": {"left": b[0], "top": b[1], "right": b[2], "bottom": b[3]}})
}

fn step(n: u32, status: &str, action: Value, app: &str, hash: &str, elements: Vec<Value>) -> Step {
    serde_json::from_value(json!({
        "task_id": "01900000-0000-7000-8000-000000000000", "n": n, "started_at": "2026-11-24T10:00:00Z",
        "thinking": null, "action": action, "outcome": {"status": status},
        "screen": {"summary": "", "app": app, "layout_hash": hash, "size": [1000, 2000], "elements": elements},
        "screenshot": null, "timings": {"screenshot_ms": 0, "hierarchy_ms": 0, "inference_ms": 0, "action_ms": 0, "settle_ms": 0, "overhead_ms": 0.0}, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0
    }))
    .unwrap()
}

#[test]
fn coordinates_become_selectors_and_expect_comes_from_the_next_screen() {
    let list = vec![
        el(1, "[0.3]", &[":text(\"Ana\")"], [0, 400, 1000, 600]),
        el(2, "#fab_new", &[":desc(\"New\")"], [800, 1800, 1000, 2000]),
    ];
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "launch_app", "package": "com.droidpilot.messages"}),
            "com.android.launcher",
            "a",
            vec![],
        ),
        // A mis-tap that failed, and a tap undone by back: both left out.
        step(
            2,
            "failed",
            json!({"action": "tap", "element": 9}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            3,
            "ok",
            json!({"action": "tap", "coordinate": [0.9, 0.95]}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            4,
            "ok",
            json!({"action": "back"}),
            "com.droidpilot.messages",
            "c",
            vec![el(5, "#compose", &[], [0, 0, 10, 10])],
        ),
        step(
            5,
            "ok",
            json!({"action": "tap", "coordinate": [0.5, 0.25]}),
            "com.droidpilot.messages",
            "b",
            list.clone(),
        ),
        step(
            6,
            "ok",
            json!({"action": "type", "element": 7, "text": "••••"}),
            "com.droidpilot.messages",
            "d",
            vec![
                el(7, "#input_password", &[], [0, 0, 1000, 100]),
                el(8, "#btn_login", &[":text(\"Log in\")"], [0, 200, 1000, 300]),
            ],
        ),
        step(
            7,
            "ok",
            json!({"action": "finish", "success": true}),
            "com.droidpilot.messages",
            "e",
            vec![],
        ),
    ];
    let s = from_steps("open Ana's chat", &steps).unwrap();
    assert_eq!(s.app.as_deref(), Some("com.droidpilot.messages"));
    let got: Vec<_> = s
        .steps
        .iter()
        .map(|s| (s.action, s.selector.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (StepAction::LaunchApp, None),
            (StepAction::Tap, Some("[0.3]".into())),
            (StepAction::Type, Some("#input_password".into())),
        ]
    );
    assert_eq!(
        s.steps[0].expect.as_ref().unwrap().app.as_deref(),
        Some("com.droidpilot.messages")
    );
    // The index path keeps its text alternative; the coordinate stays for blind replay.
    assert_eq!(s.steps[1].alternative_selectors, [":text(\"Ana\")"]);
    assert_eq!(s.steps[1].parameters.coordinate, Some([0.5, 0.25]));
    assert_eq!(
        s.steps[1].expect.as_ref().unwrap().visible,
        ["#input_password"]
    );
    // The password becomes an input with no default: the secret is never stored.
    assert_eq!(s.steps[2].parameters.text.as_deref(), Some("${password}"));
    assert_eq!(
        s.inputs.get("password"),
        Some(&crate::script::model::Input::secret()),
        "a typed password becomes a secret input"
    );
}

#[test]
fn a_task_with_nothing_to_replay_is_refused() {
    let steps = vec![step(
        1,
        "ok",
        json!({"action": "finish", "success": true}),
        "x",
        "a",
        vec![],
    )];
    assert!(
        from_steps("x", &steps)
            .unwrap_err()
            .0
            .contains("no successful")
    );
}

/// The `expect` a recording writes survives an app update: structure first, an `#id`
/// (a translated or reworded UI keeps it), before a field's label, and a button's label
/// (updates reword them) last.
#[test]
fn expect_prefers_what_an_app_update_keeps() {
    let field = |id: u32, sel: &str, alts: &[&str], kind: &str| {
        let mut e = el(id, sel, alts, [0, 300, 1000, 400]);
        e["type"] = json!(kind);
        e
    };
    let before = vec![field(1, "#fab", &[":desc(\"New contact\")"], "ImageButton")];
    let after = vec![
        field(2, "#save_button", &[":text(\"Save\")"], "Button"),
        field(
            3,
            "#name_edit",
            &["EditText:text(\"Name\")", "[0.1]"],
            "EditText",
        ),
    ];
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "tap", "selector": "#fab"}),
            "com.droidpilot.contacts",
            "a",
            before,
        ),
        step(
            2,
            "ok",
            json!({"action": "back"}),
            "com.droidpilot.contacts",
            "b",
            after.clone(),
        ),
        step(
            3,
            "ok",
            json!({"action": "finish", "success": true}),
            "x",
            "c",
            vec![],
        ),
    ];
    let s = from_steps("new contact", &steps).unwrap();
    let visible = &s.steps[0].expect.as_ref().unwrap().visible;
    assert!(visible[0].starts_with('#'), "{visible:?}");
    // With only a button new, its id comes before its label.
    let e = expect(
        &s.steps[0],
        &SeenScreen::default(),
        &SeenScreen {
            elements: serde_json::from_value(json!([after[0]])).unwrap(),
            ..Default::default()
        },
    );
    assert_eq!(e.unwrap().visible, ["#save_button"]);
}

/// A slider's drag is recorded on the slider, its points relative to it, so a replay
/// drags it wherever an update moved it; a list's vertical swipe keeps screen points.
#[test]
fn a_sideways_drag_on_an_element_is_recorded_on_that_element() {
    let slider = el(1, ":desc(\"Brightness\")", &["[0.4]"], [40, 950, 960, 1050]);
    let swipe = |s: [f64; 2], e: [f64; 2]| json!({"action": "swipe", "start": s, "end": e});
    let steps = vec![
        step(
            1,
            "ok",
            swipe([0.5, 0.5], [0.99, 0.5]),
            "a",
            "h1",
            vec![slider.clone()],
        ),
        step(
            2,
            "ok",
            swipe([0.5, 0.5], [0.5, 0.2]),
            "a",
            "h2",
            vec![slider],
        ),
        step(
            3,
            "ok",
            json!({"action": "finish", "success": true}),
            "a",
            "h3",
            vec![],
        ),
    ];
    let s = from_steps("brightness", &steps).unwrap();
    let drag = &s.steps[0];
    assert_eq!(drag.selector.as_deref(), Some(":desc(\"Brightness\")"));
    assert!(drag.is_element_drag());
    assert_eq!(drag.parameters.start, Some([0.5, 0.5]));
    assert_eq!(
        drag.parameters.end,
        Some([1.0, 0.5]),
        "clamped to the element"
    );
    let scroll = &s.steps[1];
    assert_eq!(scroll.selector, None);
    assert_eq!(scroll.parameters.end, Some([0.5, 0.2]));
}

/// A tap on a slider sets the level where it lands: the point is kept within the
/// element (`at`); a tap on a button keeps none.
#[test]
fn a_tap_on_a_slider_keeps_its_point_within_the_slider() {
    let mut slider = el(
        1,
        "#seekbar",
        &[":desc(\"Brightness\")"],
        [100, 900, 900, 1000],
    );
    slider["type"] = json!("SeekBar");
    let button = el(2, "#ok", &[], [100, 1500, 900, 1600]);
    let tap = |x: f64, y: f64| json!({"action": "tap", "coordinate": [x, y]});
    let steps = vec![
        step(
            1,
            "ok",
            tap(0.3, 0.475),
            "a",
            "h1",
            vec![slider.clone(), button.clone()],
        ),
        step(2, "ok", tap(0.5, 0.775), "a", "h2", vec![slider, button]),
        step(
            3,
            "ok",
            json!({"action": "finish", "success": true}),
            "a",
            "h3",
            vec![],
        ),
    ];
    let s = from_steps("brightness", &steps).unwrap();
    assert_eq!(s.steps[0].selector.as_deref(), Some("#seekbar"));
    let at = s.steps[0].parameters.at.expect("a point within the slider");
    assert!(
        (at[0] - 0.25).abs() < 1e-9 && (at[1] - 0.5).abs() < 1e-9,
        "{at:?}"
    );
    assert_eq!(s.steps[1].parameters.at, None, "a button's centre does");
}

/// `tap` a field, then `type` with no target: the type step types into that field (by
/// its selector), so a replay refocuses it when a pop-up took the focus away.
#[test]
fn a_type_after_tapping_a_field_targets_that_field() {
    let mut title = el(
        1,
        "#title",
        &["EditText:text(\"Title\")"],
        [0, 300, 1000, 400],
    );
    title["actions"] = json!(["click", "set_text"]);
    let button = el(2, "#fab", &[], [800, 1800, 1000, 2000]);
    let screen = vec![title, button];
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "tap", "coordinate": [0.5, 0.175]}),
            "a",
            "h1",
            screen.clone(),
        ),
        step(
            2,
            "ok",
            json!({"action": "type", "text": "Buy milk"}),
            "a",
            "h2",
            screen.clone(),
        ),
        step(
            3,
            "ok",
            json!({"action": "tap", "coordinate": [0.9, 0.95]}),
            "a",
            "h3",
            screen.clone(),
        ),
        step(
            4,
            "ok",
            json!({"action": "type", "text": "x"}),
            "a",
            "h4",
            screen,
        ),
        step(
            5,
            "ok",
            json!({"action": "finish", "success": true}),
            "a",
            "h5",
            vec![],
        ),
    ];
    let s = from_steps("note", &steps).unwrap();
    assert_eq!(s.steps[1].selector.as_deref(), Some("#title"));
    assert_eq!(
        s.steps[1].alternative_selectors,
        ["EditText:text(\"Title\")"]
    );
    assert_eq!(
        s.steps[3].selector, None,
        "after a tap on a button: as recorded"
    );
}

/// A row's button with no locator of its own (every row has `#buy`) is recorded with a
/// witness: its row's texts that no other element has, never the ones every row shares.
#[test]
fn an_element_without_a_locator_of_its_own_is_recorded_with_its_rows_witness() {
    let row = |id: u32, name: &str, top: i32| {
        let mut label = el(id, &format!("[0.{id}]"), &[], [0, top, 700, top + 200]);
        label["text"] = json!(name);
        let mut buy = el(
            id + 10,
            &format!("[0.{id}.1]"),
            &[
                &format!(":text(\"{name}\") >> #buy"),
                "#buy",
                ":text(\"Buy\")",
            ],
            [700, top, 1000, top + 200],
        );
        buy["text"] = json!("Buy");
        vec![label, buy]
    };
    let screen: Vec<Value> = [row(1, "Pixel 8", 0), row(2, "Pixel 7", 200)].concat();
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "tap", "element": 12}),
            "shop",
            "a",
            screen,
        ),
        step(
            2,
            "ok",
            json!({"action": "finish", "success": true}),
            "shop",
            "b",
            vec![],
        ),
    ];
    let s = from_steps("buy", &steps).unwrap();
    assert_eq!(s.steps[0].selector.as_deref(), Some("[0.2.1]"));
    assert_eq!(s.steps[0].witness, ["Pixel 7"]);
}

/// Every step the next screen can vouch for gets an `expect`: a `type` by the text it
/// typed, a deletion by the label that went away.
#[test]
fn typed_text_and_removed_rows_are_expected() {
    let field = el(1, "#note_body", &[], [0, 0, 1000, 400]);
    let mut typed = el(1, "#note_body", &[":text(\"milk\")"], [0, 0, 1000, 400]);
    typed["text"] = json!("milk");
    let rows = vec![
        el(
            2,
            "[0.1]",
            &[":text(\"6:00 AM\") >> #delete", "#delete"],
            [0, 400, 1000, 600],
        ),
        el(3, ":text(\"6:00 AM\")", &[], [0, 400, 500, 600]),
        el(4, ":text(\"8:15 AM\")", &[], [0, 600, 500, 800]),
    ];
    let after_delete = vec![el(4, ":text(\"8:15 AM\")", &[], [0, 600, 500, 800])];
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "type", "selector": "#note_body", "text": "milk"}),
            "notes",
            "a",
            vec![field],
        ),
        step(
            2,
            "ok",
            json!({"action": "tap", "selector": "[0.1]"}),
            "notes",
            "b",
            [vec![typed], rows].concat(),
        ),
        step(
            3,
            "ok",
            json!({"action": "finish", "success": true}),
            "notes",
            "c",
            after_delete,
        ),
    ];
    let s = from_steps("note", &steps).unwrap();
    assert_eq!(
        s.steps[0].expect.as_ref().unwrap().visible,
        [":text(\"milk\")"]
    );
    let e = s.steps[1].expect.as_ref().unwrap();
    assert!(e.visible.is_empty(), "{e:?}");
    assert!(e.gone.iter().any(|g| g.contains("6:00 AM")), "{e:?}");
}

/// A list's container is on screen before its rows have loaded: its id is the last
/// choice for an `expect`, after a row's label.
#[test]
fn a_list_containers_id_is_the_last_expect() {
    let mut list = el(2, "#recycler_view", &[], [0, 200, 1000, 2000]);
    list["actions"] = json!(["scroll"]);
    list["type"] = json!("RecyclerView");
    let mut row = el(
        3,
        ":text(\"Wireless Earbuds\")",
        &["[0.1.0]"],
        [0, 200, 1000, 400],
    );
    row["type"] = json!("LinearLayout");
    let after = SeenScreen {
        elements: serde_json::from_value(json!([list, row])).unwrap(),
        ..Default::default()
    };
    let tap = ScriptStep::new(StepAction::Tap, Some("#open".into()));
    let e = expect(&tap, &SeenScreen::default(), &after).unwrap();
    assert_eq!(e.visible, [":text(\"Wireless Earbuds\")"]);
}

/// A step on an element records the structure of the screen it acted on (each element's
/// class at its index path, no words): the same screen in another language gives the
/// same structure, a screen with another row does not; a step with no element (an app
/// launch) records none.
#[test]
fn a_step_records_its_screens_structure_not_its_words() {
    let screen = |labels: &[&str]| -> Vec<Value> {
        labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let top = 200 * i as i32;
                let sel = format!(":text(\"{l}\")");
                let path = format!("[0.{i}]");
                el(i as u32, &sel, &[path.as_str()], [0, top, 1000, top + 200])
            })
            .collect()
    };
    let record = |labels: &[&str]| {
        let steps = vec![
            step(
                1,
                "ok",
                json!({"action": "launch_app", "package": "com.android.settings"}),
                "launcher",
                "a",
                vec![],
            ),
            step(
                2,
                "ok",
                json!({"action": "tap", "element": 0}),
                "com.android.settings",
                "b",
                screen(labels),
            ),
        ];
        from_steps("open", &steps).unwrap()
    };
    let en = record(&["Accounts", "Display"]);
    assert_eq!(en.steps[0].layout, None);
    let layout = en.steps[1].layout.clone().expect("a tap on an element");
    let elements: Vec<ActionableElement> =
        serde_json::from_value(json!(screen(&["Accounts", "Display"]))).unwrap();
    assert_eq!(Some(layout.clone()), layout_of(&elements));
    assert_eq!(
        record(&["Konten", "Anzeige"]).steps[1].layout,
        Some(layout.clone())
    );
    assert_ne!(
        record(&["Accounts", "Display", "Sound"]).steps[1].layout,
        Some(layout)
    );
}

/// A custom action the task ran is a `custom` step: its arguments as params, a secret
/// one (recorded as `••••`) a secret input of its own beside a typed password's, and the
/// definition's hash from the step's outcome.
#[test]
fn a_custom_action_is_recorded_with_its_secret_as_an_input() {
    let field = vec![el(1, "#pin", &[], [0, 0, 1000, 100])];
    let mut custom = step(
        2,
        "ok",
        json!({"action": "sign_in", "email": "a@b.c", "password": REDACTED, "tries": 3}),
        "com.x",
        "b",
        vec![],
    );
    custom.outcome.detail = Some(json!({"custom": "sign_in", "definition": "0123456789abcdef"}));
    let steps = vec![
        step(
            1,
            "ok",
            json!({"action": "type", "selector": "#pin", "text": REDACTED}),
            "com.x",
            "a",
            field,
        ),
        custom,
        step(
            3,
            "ok",
            json!({"action": "finish", "success": true}),
            "com.y",
            "c",
            vec![],
        ),
    ];
    let s = from_steps("sign in", &steps).unwrap();
    assert_eq!(s.steps[0].parameters.text.as_deref(), Some("${password}"));
    let c = &s.steps[1];
    assert_eq!(c.action, StepAction::Custom);
    let call = c.custom.as_ref().unwrap();
    assert_eq!(call.name, "sign_in");
    assert_eq!(call.params["email"], "a@b.c");
    assert_eq!(call.params["password"], "${password_2}");
    assert_eq!(call.params["tries"], "3");
    assert_eq!(call.definition.as_deref(), Some("0123456789abcdef"));
    assert!(s.inputs["password_2"].secret && s.inputs["password"].secret);
    assert_eq!(c.expect.as_ref().unwrap().app.as_deref(), Some("com.y"));
    let action = c.to_action(None, &{
        let mut v = crate::script::Vars::default();
        v.set("password_2", "hunter2".into());
        v
    });
    assert_eq!(
        serde_json::to_value(action.unwrap()).unwrap(),
        json!({"action": "sign_in", "email": "a@b.c", "password": "hunter2", "tries": "3"})
    );
}
