use super::*;
use crate::ast::*;

fn one(cmd: &str) -> Command {
    let flow =
        parse_flow(&format!("appId: a.b\n---\n{cmd}\n")).unwrap_or_else(|e| panic!("{cmd}: {e:?}"));
    assert_eq!(flow.commands.len(), 1, "{cmd}");
    flow.commands.into_iter().next().unwrap()
}

fn err(cmd: &str) -> ParseError {
    parse_flow(&format!("appId: a.b\n---\n{cmd}\n")).unwrap_err()
}

#[test]
fn the_header_keeps_every_key_and_env_inputs_without_default_stay_unset() {
    let flow = parse_flow(
        "appId: ${APP_ID}\nname: Login\ntags:\n  - smoke\n  - login\nenv:\n  USER: bob\n  PASSWORD: null\n  EMPTY: \"null\"\njsEngine: graaljs\nproperties:\n  team: core\nonFlowStart:\n  - launchApp\nonFlowComplete:\n  commands:\n    - takeScreenshot: end\n---\n- back\n",
    )
    .unwrap();
    let h = &flow.header;
    assert_eq!(h.app_id.as_deref(), Some("${APP_ID}"));
    assert_eq!(h.name.as_deref(), Some("Login"));
    assert_eq!(h.tags, ["smoke", "login"]);
    let env: Vec<_> = h
        .env
        .iter()
        .map(|e| (e.name.as_str(), e.value.as_deref()))
        .collect();
    assert_eq!(
        env,
        [
            ("USER", Some("bob")),
            ("PASSWORD", None),
            ("EMPTY", Some("null"))
        ]
    );
    assert_eq!(
        h.on_flow_start[0].kind,
        CommandKind::LaunchApp(LaunchApp {
            app_id: None,
            clear_state: false,
            clear_keychain: false,
            stop_app: true,
            permissions: Default::default(),
            arguments: Default::default(),
        })
    );
    assert_eq!(
        h.on_flow_complete[0].kind,
        CommandKind::TakeScreenshot("end".into())
    );
    assert_eq!(h.js_engine.as_deref(), Some("graaljs"));
    assert_eq!(h.other, [("properties".to_string(), 11)]);
    assert_eq!(flow.commands[0].line, 19);
}

#[test]
fn tags_may_be_one_string_and_a_flow_may_have_no_header() {
    let flow = parse_flow("appId: a\ntags: smoke\n---\n- back\n").unwrap();
    assert_eq!(flow.header.tags, ["smoke"]);
    let flow = parse_flow("- back\n- scroll\n").unwrap();
    assert_eq!(flow.header.app_id, None);
    assert_eq!(flow.commands[1].line, 2);
}

#[test]
fn text_selectors_and_their_shorthand() {
    let c = one("- tapOn: \"Save\"");
    let CommandKind::Tap(t) = c.kind else {
        panic!()
    };
    assert_eq!(t.kind, TapKind::Tap);
    assert!(t.retry_if_no_change);
    let Target::Element(s) = t.target else {
        panic!()
    };
    assert_eq!((s.text.as_deref(), s.line), (Some("Save"), 3));
    // A number is text too, as Jackson reads it.
    let c = one("- assertVisible: 42");
    assert!(
        matches!(c.kind, CommandKind::AssertVisible(Selector { text: Some(ref t), .. }) if t == "42")
    );
}

#[test]
fn every_selector_field_is_read() {
    let c = one(
        "- tapOn:\n    text: \"Item.*\"\n    id: \"row_${N}\"\n    index: 2\n    enabled: true\n    checked: false\n    focused: true\n    selected: false\n    below: \"Header\"\n    above: {id: footer}\n    leftOf: {text: Right}\n    rightOf: Left\n    childOf: {id: list}\n    containsChild: Child\n    containsDescendants:\n      - A\n      - {id: b}\n    width: 100\n    height: 50\n    tolerance: 5\n    traits: text long-text\n    optional: true\n    label: Tap the row",
    );
    assert!(c.optional);
    assert_eq!(c.label.as_deref(), Some("Tap the row"));
    let CommandKind::Tap(Tap {
        target: Target::Element(s),
        ..
    }) = c.kind
    else {
        panic!()
    };
    assert_eq!(s.text.as_deref(), Some("Item.*"));
    assert_eq!(s.id.as_deref(), Some("row_${N}"));
    assert_eq!(s.index, Some(Amount::Fixed(2.0)));
    assert_eq!(
        (s.enabled, s.checked, s.focused, s.selected),
        (Some(true), Some(false), Some(true), Some(false))
    );
    assert_eq!(s.below.unwrap().text.as_deref(), Some("Header"));
    assert_eq!(s.above.unwrap().id.as_deref(), Some("footer"));
    assert_eq!(s.left_of.unwrap().text.as_deref(), Some("Right"));
    assert_eq!(s.right_of.unwrap().text.as_deref(), Some("Left"));
    assert_eq!(s.child_of.unwrap().id.as_deref(), Some("list"));
    assert_eq!(s.contains_child.unwrap().text.as_deref(), Some("Child"));
    assert_eq!(s.contains_descendants.len(), 2);
    assert_eq!(
        s.size,
        Some(Size {
            width: Some(100),
            height: Some(50),
            tolerance: Some(5)
        })
    );
    assert_eq!(s.traits, [Trait::Text, Trait::LongText]);
}

#[test]
fn tap_options_points_and_double_and_long_press() {
    let CommandKind::Tap(t) = one("- tapOn: {point: \"50%, 90%\", retryTapIfNoChange: false, repeat: 3, delay: 200, waitToSettleTimeoutMs: 99999}").kind else { panic!() };
    assert_eq!(t.target, Target::Point(Point::Percent(50, 90)));
    assert!(!t.retry_if_no_change);
    assert_eq!(t.repeat, Some((3, 200)));
    assert_eq!(t.wait_to_settle_ms, Some(30_000));
    let CommandKind::Tap(t) = one("- tapOn:\n    point: 100,200").kind else {
        panic!()
    };
    assert_eq!(t.target, Target::Point(Point::Pixels(100, 200)));
    let CommandKind::Tap(t) = one("- doubleTapOn: Like").kind else {
        panic!()
    };
    assert_eq!((t.kind, t.repeat), (TapKind::Double, Some((2, 100))));
    let CommandKind::Tap(t) = one("- longPressOn: {id: item}").kind else {
        panic!()
    };
    assert_eq!(t.kind, TapKind::Long);
}

#[test]
fn swipe_in_all_its_forms() {
    let k = |s: &str| match one(s).kind {
        CommandKind::Swipe(s) => s,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        k("- swipe: {direction: left}").motion,
        SwipeMotion::Direction(Direction::Left)
    );
    let s = k("- swipe:\n    start: 90%, 50%\n    end: 10%, 50%\n    duration: 1000");
    assert_eq!(
        s.motion,
        SwipeMotion::Points {
            start: Point::Percent(90, 50),
            end: Point::Percent(10, 50)
        }
    );
    assert_eq!(s.duration_ms, 1000);
    let s = k("- swipe: {start: \"100, 200\", end: \"300, 400\"}");
    assert_eq!(
        s.motion,
        SwipeMotion::Points {
            start: Point::Pixels(100, 200),
            end: Point::Pixels(300, 400)
        }
    );
    assert_eq!(s.duration_ms, 400);
    let s = k("- swipe: {from: {id: card}, direction: UP}");
    assert!(matches!(
        s.motion,
        SwipeMotion::Element {
            direction: Direction::Up,
            ..
        }
    ));
    let e = err("- swipe: {direction: UP, start: \"1,1\", end: \"2,2\"}");
    assert_eq!((e.line, e.code), (3, "invalid_command"));
    let e = err("- swipe: {start: \"10%,1%\", end: \"2,2\"}");
    assert!(e.message.contains("mixes"), "{e:?}");
}

#[test]
fn scroll_until_visible_reads_every_option_with_maestros_defaults() {
    let CommandKind::ScrollUntilVisible(s) =
        one("- scrollUntilVisible:\n    element: {text: Item 20}\n").kind
    else {
        panic!()
    };
    assert_eq!(
        (s.direction, s.timeout.clone(), s.speed.clone()),
        (
            Direction::Down,
            Amount::Fixed(20_000.0),
            Amount::Fixed(40.0)
        )
    );
    assert_eq!((s.visibility_percentage, s.center_element), (100, false));
    // `optional` inside `element` is accepted and ignored, as Maestro does.
    let CommandKind::ScrollUntilVisible(s) = one("- scrollUntilVisible:\n    element: {text: Item, optional: true}\n    direction: UP\n    timeout: 5000\n    speed: 80\n    visibilityPercentage: 150\n    centerElement: true\n    waitToSettleTimeoutMs: 500").kind else { panic!() };
    assert_eq!(
        (s.direction, s.visibility_percentage, s.center_element),
        (Direction::Up, 100, true)
    );
    assert_eq!(s.wait_to_settle_ms, Some(500));
}

#[test]
fn text_commands_in_both_forms() {
    assert_eq!(
        one("- inputText: hello").kind,
        CommandKind::InputText("hello".into())
    );
    let c = one("- inputText:\n    text: \"${USER}\"\n    label: user name");
    assert_eq!(c.kind, CommandKind::InputText("${USER}".into()));
    assert_eq!(c.label.as_deref(), Some("user name"));
    assert_eq!(one("- eraseText").kind, CommandKind::EraseText(None));
    assert_eq!(one("- eraseText: 5").kind, CommandKind::EraseText(Some(5)));
    assert_eq!(
        one("- eraseText: {charactersToErase: 7}").kind,
        CommandKind::EraseText(Some(7))
    );
    assert_eq!(
        one("- inputRandomNumber: {length: 4}").kind,
        CommandKind::InputRandom {
            kind: RandomKind::Number,
            length: Some(4)
        }
    );
    assert_eq!(
        one("- inputRandomEmail").kind,
        CommandKind::InputRandom {
            kind: RandomKind::Email,
            length: None
        }
    );
    assert_eq!(
        one("- inputRandomCityName").kind,
        CommandKind::InputRandom {
            kind: RandomKind::CityName,
            length: None
        }
    );
    assert!(matches!(
        one("- copyTextFrom: {id: code}").kind,
        CommandKind::CopyTextFrom(_)
    ));
    assert_eq!(one("- pasteText").kind, CommandKind::PasteText);
    assert_eq!(
        one("- setClipboard: abc").kind,
        CommandKind::SetClipboard("abc".into())
    );
    assert_eq!(one("- hideKeyboard").kind, CommandKind::HideKeyboard);
    assert_eq!(one("- hide keyboard").kind, CommandKind::HideKeyboard);
}

#[test]
fn assertions_waits_and_ai_commands() {
    assert!(matches!(
        one("- assertNotVisible: {text: \".*Wi-Fi.*\", optional: true}").kind,
        CommandKind::AssertNotVisible(_)
    ));
    assert_eq!(
        one("- assertTrue: ${output.n > 2}").kind,
        CommandKind::AssertTrue("${output.n > 2}".into())
    );
    assert_eq!(
        one("- assertTrue: {condition: \"${ok}\"}").kind,
        CommandKind::AssertTrue("${ok}".into())
    );
    let CommandKind::ExtendedWaitUntil {
        visible,
        not_visible,
        timeout,
    } = one("- extendedWaitUntil:\n    visible: Done\n    timeout: 10000").kind
    else {
        panic!()
    };
    assert!(visible.is_some() && not_visible.is_none());
    assert_eq!(timeout, Some(Amount::Fixed(10_000.0)));
    assert_eq!(
        one("- waitForAnimationToEnd").kind,
        CommandKind::WaitForAnimationToEnd(None)
    );
    assert_eq!(
        one("- waitForAnimationToEnd: {timeout: 5000}").kind,
        CommandKind::WaitForAnimationToEnd(Some(5000))
    );
    let c = one("- assertWithAI: The cart is empty");
    assert!(c.optional, "AI commands are optional by default");
    let c = one("- extractTextWithAI: {query: the total, outputVariable: total, optional: false}");
    assert_eq!(
        c.kind,
        CommandKind::ExtractTextWithAi {
            query: "the total".into(),
            output_variable: "total".into()
        }
    );
    assert!(!c.optional);
    assert!(one("- assertNoDefectsWithAI").optional);
}

#[test]
fn keys_apps_and_device_commands() {
    assert_eq!(one("- back").kind, CommandKind::Back);
    assert_eq!(
        one("- pressKey: enter").kind,
        CommandKind::PressKey(KeyName::Enter)
    );
    assert_eq!(
        one("- pressKey: Volume Up").kind,
        CommandKind::PressKey(KeyName::VolumeUp)
    );
    assert_eq!(
        one("- pressKey: remote dpad up").kind,
        CommandKind::PressKey(KeyName::Remote("Remote Dpad Up"))
    );
    let CommandKind::LaunchApp(l) = one("- launchApp:\n    appId: com.x\n    clearState: true\n    clearKeychain: true\n    stopApp: false\n    permissions: {all: deny, camera: allow}\n    arguments: {isE2E: true, n: 3}").kind else { panic!() };
    assert_eq!(l.app_id.as_deref(), Some("com.x"));
    assert!(l.clear_state && l.clear_keychain && !l.stop_app);
    assert_eq!(
        l.permissions.get("camera").map(String::as_str),
        Some("allow")
    );
    assert_eq!(l.arguments.get("n").map(String::as_str), Some("3"));
    assert!(
        matches!(one("- launchApp: com.y").kind, CommandKind::LaunchApp(LaunchApp { app_id: Some(ref a), .. }) if a == "com.y")
    );
    assert_eq!(one("- stopApp").kind, CommandKind::StopApp(None));
    assert_eq!(
        one("- killApp: com.z").kind,
        CommandKind::KillApp(Some("com.z".into()))
    );
    assert_eq!(
        one("- clearState: {appId: com.z}").kind,
        CommandKind::ClearState(Some("com.z".into()))
    );
    assert_eq!(one("- clearKeychain").kind, CommandKind::ClearKeychain);
    assert!(matches!(
        one("- setPermissions: {permissions: {notifications: allow}}").kind,
        CommandKind::SetPermissions { .. }
    ));
    assert_eq!(
        one("- openLink: https://x.org").kind,
        CommandKind::OpenLink {
            link: "https://x.org".into(),
            browser: false,
            auto_verify: false
        }
    );
    assert_eq!(
        one("- openLink: {link: \"app://a\", autoVerify: true, browser: true}").kind,
        CommandKind::OpenLink {
            link: "app://a".into(),
            browser: true,
            auto_verify: true
        }
    );
    assert_eq!(
        one("- setLocation: {latitude: 52.3, longitude: 4.9}").kind,
        CommandKind::SetLocation {
            latitude: "52.3".into(),
            longitude: "4.9".into()
        }
    );
    assert!(
        matches!(one("- travel: {points: [\"0.0,0.0\", \"0.1,0.1\"], speed: 7.9}").kind, CommandKind::Travel { speed: Some(s), .. } if s == 7.9)
    );
    assert_eq!(
        one("- setOrientation: landscapeLeft").kind,
        CommandKind::SetOrientation("LANDSCAPE_LEFT".into())
    );
    assert_eq!(
        one("- setOrientation: {orientation: PORTRAIT}").kind,
        CommandKind::SetOrientation("PORTRAIT".into())
    );
    assert_eq!(
        one("- setAirplaneMode: enabled").kind,
        CommandKind::SetAirplaneMode(true)
    );
    assert_eq!(
        one("- setAirplaneMode: {value: disabled}").kind,
        CommandKind::SetAirplaneMode(false)
    );
    assert_eq!(
        one("- toggleAirplaneMode").kind,
        CommandKind::ToggleAirplaneMode
    );
    assert_eq!(
        one("- takeScreenshot: home").kind,
        CommandKind::TakeScreenshot("home".into())
    );
    assert_eq!(
        one("- takeScreenshot: {path: home}").kind,
        CommandKind::TakeScreenshot("home".into())
    );
    assert_eq!(
        one("- startRecording: rec").kind,
        CommandKind::StartRecording("rec".into())
    );
    assert_eq!(one("- stopRecording").kind, CommandKind::StopRecording);
    assert_eq!(
        one("- addMedia: [a.png, b.mp4]").kind,
        CommandKind::AddMedia(vec!["a.png".into(), "b.mp4".into()])
    );
    assert_eq!(one("- action: back").kind, CommandKind::Back);
    assert_eq!(
        one("- openBrowser: https://x.org").kind,
        CommandKind::OpenLink {
            link: "https://x.org".into(),
            browser: true,
            auto_verify: false
        }
    );
}

#[test]
fn scripts_and_control_flow_nest_with_their_lines() {
    assert_eq!(
        one("- evalScript: ${output.x = 1}").kind,
        CommandKind::EvalScript("${output.x = 1}".into())
    );
    let CommandKind::RunScript(r) =
        one("- runScript: {file: s.js, env: {A: b}, when: {platform: Android}}").kind
    else {
        panic!()
    };
    assert_eq!((r.file.as_str(), r.env.len()), ("s.js", 1));
    assert_eq!(r.when.unwrap().platform, Some(Platform::Android));
    let CommandKind::RunFlow(r) = one("- runFlow: login.yaml").kind else {
        panic!()
    };
    assert_eq!(
        r.source,
        FlowSource::File {
            path: "login.yaml".into()
        }
    );
    let flow = parse_flow("appId: a\n---\n- runFlow:\n    when:\n      visible: Allow\n      true: ${!output.skip}\n    env:\n      WHO: null\n    commands:\n      - tapOn: Allow\n      - repeat:\n          while:\n            notVisible: End\n          commands:\n            - scroll\n      - retry:\n          maxRetries: 3\n          commands:\n            - back\n").unwrap();
    let run = &flow.commands[0];
    assert!(run.is_control_flow());
    let CommandKind::RunFlow(r) = &run.kind else {
        panic!()
    };
    let w = r.when.as_ref().unwrap();
    assert!(w.visible.is_some());
    assert_eq!(w.script.as_deref(), Some("${!output.skip}"));
    assert_eq!(r.env[0].value, None);
    let inner = run.children()[0];
    assert_eq!(
        inner.iter().map(|c| c.line).collect::<Vec<_>>(),
        [10, 11, 16]
    );
    let CommandKind::Repeat(rep) = &inner[1].kind else {
        panic!()
    };
    assert!(rep.times.is_none() && rep.while_.is_some());
    assert_eq!(rep.commands[0].line, 15);
    let CommandKind::Retry(rt) = &inner[2].kind else {
        panic!()
    };
    assert_eq!(rt.max_retries, Amount::Fixed(3.0));
    let CommandKind::Repeat(rep) = one("- repeat: {times: \"${N}\", commands: [back]}").kind else {
        panic!()
    };
    assert_eq!(rep.times, Some(Amount::Expr("${N}".into())));
}

#[test]
fn errors_name_the_line_the_reason_and_a_hint() {
    let e = err("- back\n- tapOnn: Save");
    assert_eq!((e.line, e.code), (4, "unknown_command"));
    assert!(e.hint.contains("`tapOn`"), "{e:?}");
    let e = err("- tapOn:\n    txt: Save");
    assert_eq!((e.line, e.code), (4, "unknown_field"));
    assert!(
        e.message.contains("`txt`") && e.hint.contains("`text`"),
        "{e:?}"
    );
    // A field indented as a second key of the list item.
    let e = err("- tapOn: Save\n  optional: true");
    assert_eq!((e.line, e.code), (4, "invalid_command"));
    assert!(e.hint.contains("indent `optional` under `tapOn`"), "{e:?}");
    let e = err("- scrollUntilVisible: {direction: DOWN}");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("`element`"));
    let e = err("- tapOn: {}");
    assert!(e.message.contains("no element"), "{e:?}");
    let e = err("- inputRandomText:\n    length: ${N}");
    assert!(e.message.contains("whole number"), "{e:?}");
    let e = err("- inputText:");
    assert_eq!((e.line, e.code), (3, "invalid_command"));
    assert!(e.message.contains("`text`"), "{e:?}");
    let e = parse_flow("appId: a\n").unwrap_err();
    assert!(e.hint.contains("---"), "{e:?}");
    let e = parse_flow("appId: a\n---\n- tapOn: \"x\n- back\n").unwrap_err();
    assert_eq!(e.code, "invalid_yaml");
}

#[test]
fn what_cannot_work_on_android_or_here_is_refused_with_the_reason() {
    let e = err("- back\n- tapOn: {css: \"#login\"}");
    assert_eq!((e.line, e.code), (4, "not_on_android"));
    assert!(e.message.contains("CSS"), "{e:?}");
    let e = parse_flow("url: https://example.com\n---\n- back\n").unwrap_err();
    assert_eq!((e.line, e.code), (1, "not_on_android"));
    let e = err("- assertScreenshot: home.png");
    assert_eq!((e.line, e.code), (3, "not_supported"));
    assert!(e.message.contains("baseline"), "{e:?}");
}
