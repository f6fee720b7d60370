use super::*;

const WIKI: &str = include_str!("../../../../tests/fixtures/maestro/wikipedia_search.yaml");

#[test]
fn imports_the_wikipedia_fixture() {
    let s = import(WIKI).unwrap();
    assert_eq!(s.app.as_deref(), Some("org.wikipedia"));
    assert_eq!(s.name, "search wikipedia");
    assert_eq!(
        s.inputs.get("QUERY").and_then(|i| i.default.as_deref()),
        Some("Sun")
    );
    let actions: Vec<_> = s.steps.iter().map(|st| st.action).collect();
    use StepAction::*;
    assert_eq!(
        actions,
        [
            LaunchApp,
            Tap,
            Tap,
            Type,
            WaitFor,
            Clear,
            Key,
            Scroll,
            Scroll,
            Wait,
            Tap,
            WaitForGone,
            Key,
            Key
        ]
    );
    assert_eq!(
        s.steps[0].parameters.package.as_deref(),
        Some("org.wikipedia")
    );
    assert!(s.steps[1].optional);
    assert_eq!(
        s.steps[1].selector.as_deref(),
        Some("#org.wikipedia:id/fragment_onboarding_skip_button")
    );
    assert_eq!(
        s.steps[2].selector.as_deref(),
        Some(":text(\"Search Wikipedia\")")
    );
    assert_eq!(s.steps[3].parameters.text.as_deref(), Some("${QUERY}"));
    assert_eq!(
        s.steps[6].parameters.key,
        Some(crate::domain::action::Key::Enter)
    );
    assert_eq!(
        s.steps[7].parameters.until.as_deref(),
        Some(":text(\"References\")")
    );
    assert_eq!(s.steps[9].parameters.ms, Some(1000));
    assert!(retry_block(&s.steps[10]).is_some() && retry_block(&s.steps[11]).is_some());
    assert!(retry_block(&s.steps[12]).is_none());
}

#[test]
fn import_export_import_is_the_same_script() {
    // Written from the steps (not the text it was imported from).
    let mut first = import(WIKI).unwrap();
    first.maestro = None;
    let yaml = export(&first).unwrap();
    let mut second = import(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    second.maestro = None;
    assert_eq!(first, second, "{yaml}");
    assert!(yaml.contains("- retry:\n    maxRetries: 3\n"), "{yaml}");
}

/// An `env` input written as `null` (or `~`) has no default, and comes back as `null`
/// through export and import, never as the text "null"; a quoted "null" is that text.
#[test]
fn an_input_with_no_default_stays_without_one_through_a_round_trip() {
    let yaml = "appId: a.b\nenv:\n  who: null\n  other: ~\n  word: \"null\"\n---\n- launchApp\n";
    let first = import(yaml).unwrap();
    assert_eq!(first.inputs["who"].default, None);
    assert_eq!(first.inputs["other"].default, None);
    assert_eq!(first.inputs["word"].default.as_deref(), Some("null"));
    let again = import(&export(&first).unwrap()).unwrap();
    assert_eq!(first.inputs, again.inputs);
}

/// A script imported from a flow exports as that flow, comments, tags and `eraseText`
/// counts included; once its steps change (edited, healed) it is written from the
/// steps, so the old text never comes back stale.
#[test]
fn an_imported_flow_exports_as_written_until_its_steps_change() {
    let yaml = "appId: a.b\nname: clear it\ntags: [smoke]\n---\n# open the app first\n- launchApp\n- eraseText: 12 # the whole field\n";
    let mut script = import(yaml).unwrap();
    assert_eq!(export(&script).unwrap(), yaml);
    script.steps[0].optional = true;
    let written = export(&script).unwrap();
    assert!(!written.contains("# open the app"), "{written}");
    assert!(written.contains("optional: true"), "{written}");
}

#[test]
fn refused_commands_name_their_line() {
    let yaml = "appId: a.b\n---\n- launchApp\n- evalScript: ${1+1}\n";
    let e = import(yaml).unwrap_err();
    assert_eq!(
        (e.location.as_str(), e.code),
        ("line 4", "unsupported_command")
    );
    assert!(
        e.message.contains("evalScript") && e.hint.contains("Supported"),
        "{e:?}"
    );
    let e = import("appId: a.b\n---\n- back\n- takeScreenshot: shot\n").unwrap_err();
    assert_eq!(e.location, "line 4");
}

#[test]
fn regex_ids_are_refused_and_plain_ids_map() {
    let e = import("appId: a.b\n---\n- back\n- tapOn:\n    id: \".*button\"\n").unwrap_err();
    assert!(e.location == "line 4" || e.location == "line 5", "{e:?}");
    assert!(e.message.contains("regex"), "{e:?}");
    let s = import("- tapOn: {id: \"btn_send\"}\n").unwrap();
    assert_eq!(s.steps[0].selector.as_deref(), Some("#btn_send"));
}

#[test]
fn runflow_of_a_file_is_refused() {
    let e = import("appId: a.b\n---\n- runFlow: login.yaml\n").unwrap_err();
    assert_eq!(e.location, "line 3");
}

#[test]
fn a_script_exports_to_yaml_that_imports_back() {
    let script = Script::from_json(&serde_json::json!({
    "name": "send", "goal": "send", "app": "com.chat",
    "steps": [
        {"action": "launch_app", "parameters": {"package": "com.chat"}},
        {"action": "tap", "selector": "#compose",
         "wait_condition": {"selector": ":text(\"Chats\")", "timeout_ms": 5000},
         "expect": {"visible": ["#input"]}},
        {"action": "type", "parameters": {"text": "hi"}},
        {"action": "key", "parameters": {"key": "back"}}
    ]}))
    .unwrap();
    let yaml = export(&script).unwrap();
    let back = import(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let actions: Vec<_> = back.steps.iter().map(|s| s.action).collect();
    use StepAction::*;
    assert_eq!(
        actions,
        [LaunchApp, WaitFor, Tap, WaitFor, Type, Key],
        "{yaml}"
    );
}

#[test]
fn export_refuses_what_maestro_cannot_say() {
    let script = Script::from_json(&serde_json::json!({
        "name": "s", "goal": "g",
        "steps": [{"action": "tap", "selector": ":desc(\"Back\")"}]}))
    .unwrap();
    let e = export(&script).unwrap_err();
    assert_eq!(
        (e.location.as_str(), e.code),
        ("steps[0]", "not_exportable")
    );
}

#[test]
fn bad_yaml_names_a_line() {
    let e = import("- tapOn: \"x\n- back\n").unwrap_err();
    assert_eq!(e.code, "invalid_yaml");
    assert!(e.location.starts_with("line "));
}

/// A custom step is exported as the primitives its definition gives, under a comment
/// naming the action; a primitive Maestro cannot say refuses the export, naming both.
#[test]
fn a_custom_step_exports_as_its_primitives_or_is_refused() {
    let mut step = ScriptStep::new(StepAction::Custom, None);
    step.custom = Some(CustomCall {
        name: "sign_in".into(),
        params: [("password".to_string(), "${pw}".to_string())].into(),
        definition: None,
    });
    let script = Script {
        name: "n".into(),
        goal: "g".into(),
        app: None,
        inputs: [("pw".to_string(), super::super::model::Input::secret())].into(),
        steps: vec![step],
        outputs: vec![],
        summary: None,
        fuzzy: true,
        max_recovery_attempts: 3,
        maestro: None,
    };
    let prims = |c: &CustomCall| {
        Ok(vec![
            serde_json::json!({"action": "type", "selector": "#password", "text": c.params["password"]}),
            serde_json::json!({"action": "key", "key": "enter"}),
        ])
    };
    let yaml = export_with(&script, &prims).unwrap();
    assert!(
        yaml.ends_with(
            "---\n# custom action sign_in\n- tapOn: {id: \"password\"}\n- inputText: \"${pw}\"\n- pressKey: Enter\n"
        ),
        "{yaml}"
    );
    let swipe = |_: &CustomCall| {
        Ok(vec![
            serde_json::json!({"action": "swipe", "start": [0.5, 0.2], "end": [0.5, 0.8]}),
        ])
    };
    let e = export_with(&script, &swipe).unwrap_err();
    assert_eq!(e.location, "steps[0]");
    assert!(
        e.message.contains("`sign_in`") && e.message.contains("step 1"),
        "{e:?}"
    );
    let e = export(&script).unwrap_err();
    assert_eq!(e.code, "not_exportable");
}

/// Maestro's `point` is a point of the screen: a tap at a point within its element
/// cannot be said, and export refuses it naming the step.
#[test]
fn a_touch_at_a_point_within_its_element_is_not_exported() {
    let script = Script::from_json(&serde_json::json!({
        "name": "s", "goal": "g",
        "steps": [{"action": "tap", "selector": "#seekbar", "parameters": {"at": [0.25, 0.5]}}]}))
    .unwrap();
    let e = export(&script).unwrap_err();
    assert_eq!(
        (e.location.as_str(), e.code),
        ("steps[0]", "not_exportable")
    );
    assert!(e.message.contains("parameters.at"), "{}", e.message);
}
