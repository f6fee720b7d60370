//! A small version of the drift suite (`droidpilot bench replay`): flows recorded once on
//! a clean phone through the real runner, then replayed under seeded drift. Asserts
//! behaviour, never wall-clock time.

use droidpilot::bench::replay::{
    DriftKind, FLOWS, FlowSource, Mode, ReplayBenchOptions, bench_replay, format_report,
    record_flow, report_json, select_flows,
};
use droidpilot::device::sim::task;
use droidpilot::domain::ScreenSize;

const SMALL: ScreenSize = ScreenSize {
    width: 540,
    height: 1200,
};

fn tasks(ids: &[&str]) -> Vec<FlowSource> {
    ids.iter()
        .map(|id| FlowSource::Task(id.to_string()))
        .collect()
}

#[test]
fn the_suite_covers_twenty_flows_over_every_app_and_the_launcher() {
    assert!(FLOWS.len() >= 20);
    let mut apps: Vec<_> = FLOWS.iter().map(|f| task(f).expect(f).app).collect();
    apps.sort_by_key(|a| a.package());
    apps.dedup();
    assert_eq!(apps.len(), 7, "all seven apps");
    assert!(
        FLOWS.contains(&"clock.open_from_home") && FLOWS.contains(&"notes.from_drawer"),
        "flows that start on the home launcher"
    );
}

/// `droidpilot bench replay --flows PATTERN --drifts LIST`: a subset, in the suite's order;
/// a name that matches nothing is refused, naming it, with the valid names in the hint.
#[test]
fn a_subset_is_chosen_by_flow_pattern_and_drift_list() {
    let all: Vec<String> = FLOWS.iter().map(|f| f.to_string()).collect();
    let select_flows = |p: &str| select_flows(p, &all);
    assert_eq!(
        select_flows("clock.*").unwrap(),
        [
            "clock.alarm_0730",
            "clock.disable_0815",
            "clock.delete_0600",
            "clock.open_from_home"
        ]
    );
    assert_eq!(
        select_flows("browser.*_site, notes.edit_groceries").unwrap(),
        ["notes.edit_groceries", "browser.open_site"]
    );
    let e = select_flows("clock.*,clocks.nope").unwrap_err();
    assert!(e.to_string().contains("`clocks.nope`"), "{e}");
    assert!(e.hint().contains("clock.alarm_0730"), "{}", e.hint());
    assert_eq!(
        DriftKind::parse_list("none,combo,popups,none").unwrap(),
        [DriftKind::None, DriftKind::IdsListsMoved, DriftKind::Popups]
    );
    let e = DriftKind::parse_list("none,moved").unwrap_err();
    assert!(e.to_string().contains("`moved`"), "{e}");
    assert_eq!(
        e.hint(),
        "drifts are a comma-separated list of: none, renamed_ids, reorder_lists, popups, \
         delayed_elements, moved_elements, changed_label, \
         renamed_ids+reorder_lists+moved_elements, app_update, other_phone, all, \
         icon_buttons, list_to_grid, overflow_menu, whats_new, confirm_destructive, \
         font_scale, realistic, german, real_renames, combo"
    );
    assert_eq!(
        DriftKind::parse_list(" renamed_ids+reorder_lists+moved_elements ,all").unwrap(),
        [DriftKind::IdsListsMoved, DriftKind::All],
        "the long name of `combo`, trimmed"
    );
    assert_eq!(
        DriftKind::IdsListsMoved.name(),
        "renamed_ids+reorder_lists+moved_elements"
    );
    assert_eq!(
        Mode::parse_list("aitm").unwrap(),
        [Mode::Aitm],
        "a single mode"
    );
    let e = Mode::parse_list("model").unwrap_err();
    assert_eq!(
        e.hint(),
        "modes are a comma-separated list of: selectors, aitm, aitm_noop, coordinates"
    );
}

#[tokio::test]
async fn a_recorded_flow_taps_by_resource_id() {
    let flow = record_flow("contacts.add_ada", SMALL).await.unwrap();
    let selectors: Vec<String> = flow
        .script
        .steps
        .iter()
        .filter_map(|s| s.selector.clone())
        .collect();
    assert!(!selectors.is_empty());
    assert!(
        selectors.iter().any(|s| s.starts_with('#')),
        "the recorder picks #id first: {selectors:?}"
    );
}

#[tokio::test]
async fn selectors_complete_where_coordinates_break_and_aitm_repairs_the_rest() {
    let opts = ReplayBenchOptions {
        flows: tasks(&[
            "contacts.edit_bob",
            "clock.delete_0600",
            "settings.wifi_off",
        ]),
        drifts: vec![
            DriftKind::None,
            DriftKind::MovedElements,
            DriftKind::ChangedLabel,
        ],
        modes: vec![Mode::Selectors, Mode::Aitm, Mode::Coordinates],
        screen: SMALL,
        ..Default::default()
    };
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    assert_eq!(r.flows, 3);
    let clean = r.cells[&(Mode::Coordinates, DriftKind::None)];
    let moved = r.cells[&(Mode::Coordinates, DriftKind::MovedElements)];
    assert_eq!(clean.completed, 3, "{}", format_report(&r));
    assert!(
        moved.completed < 3,
        "blind taps miss moved elements: {}",
        format_report(&r)
    );
    assert_eq!(clean.model_calls + moved.model_calls, 0);
    // The script with no model finds moved elements by their selectors where blind
    // coordinates miss them, and makes no model calls.
    let sel_moved = r.cells[&(Mode::Selectors, DriftKind::MovedElements)];
    assert!(
        sel_moved.completed > moved.completed,
        "{}",
        format_report(&r)
    );
    assert_eq!(sel_moved.model_calls, 0);
    // AI in the middle never does worse than the script alone, and pays for what it fixes.
    for d in [
        DriftKind::None,
        DriftKind::MovedElements,
        DriftKind::ChangedLabel,
    ] {
        let (aitm, plain) = (r.cells[&(Mode::Aitm, d)], r.cells[&(Mode::Selectors, d)]);
        assert!(
            aitm.completed >= plain.completed,
            "{d:?}: {}",
            format_report(&r)
        );
        assert!(aitm.model_calls >= (aitm.completed - plain.completed) as u64);
    }
    let j = report_json(&r);
    assert_eq!(j["flows"], 3);
    for k in ["completed", "rate", "model_calls", "ms_per_step"] {
        assert!(j["modes"]["coordinates"].get(k).is_some(), "{k}: {j}");
    }
    assert!(j["drifts"]["moved_elements"]["coordinates"]["rate"].is_number());
}

/// A script recorded on a 20:9 phone replays on a 16:9 one of the farm: "Accounts" is below
/// the fold there, so the script agent scrolls the list to find it (no model); blind
/// coordinates tap whatever now sits at the recorded fraction of the screen.
#[tokio::test]
async fn a_flow_recorded_on_a_tall_phone_replays_on_a_shorter_one_by_scrolling_to_its_target() {
    let opts = ReplayBenchOptions {
        flows: tasks(&["settings.sign_in"]),
        drifts: vec![DriftKind::OtherPhone],
        modes: vec![Mode::Selectors, Mode::Coordinates],
        screen: SMALL,
        ..Default::default()
    };
    let lines = std::sync::Mutex::new(Vec::<String>::new());
    let r = bench_replay(&opts, &|l| lines.lock().unwrap().push(l.to_string()))
        .await
        .unwrap();
    // Progress as it goes: the plan, the recording, then a line per flow and mode.
    let lines = lines.into_inner().unwrap();
    assert!(lines[0].contains("2 replay(s)"), "{lines:?}");
    assert!(lines[1].contains("recorded settings.sign_in"), "{lines:?}");
    assert!(
        lines[2].contains("settings.sign_in selectors: 1/1 drifts completed (1/2 replays"),
        "{lines:?}"
    );
    assert!(lines[3].contains("(2/2 replays"), "{lines:?}");
    let selectors = r.cells[&(Mode::Selectors, DriftKind::OtherPhone)];
    let blind = r.cells[&(Mode::Coordinates, DriftKind::OtherPhone)];
    assert_eq!(selectors.completed, 1, "{}", format_report(&r));
    assert_eq!(selectors.model_calls, 0);
    assert_eq!(blind.completed, 0, "{}", format_report(&r));
}

/// A script from outside the suite, judged by `task`'s checker.
fn file(name: &str, task: &str, script: droidpilot::script::Script) -> FlowSource {
    FlowSource::File {
        name: name.into(),
        task: task.into(),
        script: Box::new(script),
    }
}

/// A script that stops after its first step ends its task as succeeded (it ran to its
/// end), and the checker says the alarm is still there: one false "complete", counted per
/// mode and per flow, where the whole script counts none.
#[tokio::test]
async fn a_script_that_ends_complete_early_counts_one_false_complete() {
    let mut early = record_flow("clock.delete_0600", SMALL)
        .await
        .unwrap()
        .script;
    early.steps.truncate(1);
    let opts = ReplayBenchOptions {
        flows: vec![
            FlowSource::Task("clock.delete_0600".into()),
            file("clock.delete_0600.early.json", "clock.delete_0600", early),
        ],
        drifts: vec![DriftKind::None],
        modes: vec![Mode::Selectors],
        screen: SMALL,
        ..Default::default()
    };
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    let t = r.mode(Mode::Selectors);
    assert_eq!(
        (t.runs, t.completed, t.false_complete),
        (2, 1, 1),
        "{}",
        format_report(&r)
    );
    assert_eq!(
        r.flow("clock.delete_0600", Mode::Selectors).false_complete,
        0
    );
    assert_eq!(
        r.flow("clock.delete_0600.early.json", Mode::Selectors)
            .false_complete,
        1
    );
    assert_eq!(t.repeated_actions, 0, "{}", format_report(&r));
    let j = report_json(&r);
    for (k, v) in [
        ("runs", 2),
        ("completed", 1),
        ("false_complete", 1),
        ("wrong_element", 0),
        ("repeated_actions", 0),
    ] {
        assert_eq!(j["modes"]["selectors"][k], v, "{k}: {j}");
    }
    assert_eq!(
        j["per_flow"]["clock.delete_0600.early.json"]["selectors"]["false_complete"],
        1
    );
    assert!(
        format_report(&r).contains("false done"),
        "{}",
        format_report(&r)
    );
}

/// The no-op model is asked (its calls are counted) and answers nothing usable: a step
/// whose target is nowhere stays failed, and nothing is reported done. The table does not
/// call either model AI.
#[tokio::test]
async fn the_noop_model_is_asked_and_rescues_nothing() {
    let mut broken = record_flow("contacts.edit_bob", SMALL)
        .await
        .unwrap()
        .script;
    let step = broken
        .steps
        .iter_mut()
        .find(|s| s.selector.is_some())
        .unwrap();
    step.selector = Some("#no_such_element".into());
    step.alternative_selectors.clear();
    broken.fuzzy = false;
    let opts = ReplayBenchOptions {
        flows: vec![file(
            "contacts.edit_bob.broken.json",
            "contacts.edit_bob",
            broken,
        )],
        drifts: vec![DriftKind::None],
        modes: vec![Mode::Selectors, Mode::AitmNoop],
        screen: SMALL,
        ..Default::default()
    };
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    let (plain, noop) = (r.mode(Mode::Selectors), r.mode(Mode::AitmNoop));
    assert_eq!(
        (plain.completed, plain.model_calls),
        (0, 0),
        "{}",
        format_report(&r)
    );
    assert_eq!(noop.completed, 0, "{}", format_report(&r));
    assert!(
        noop.model_calls >= 1,
        "the no-op model was asked: {}",
        format_report(&r)
    );
    assert_eq!(noop.false_complete + plain.false_complete, 0);
    let j = report_json(&r);
    assert_eq!(j["modes"]["aitm_noop"]["runs"], 1, "{j}");
    let table = format_report(&r);
    assert!(table.contains("aitm_noop (no answer)"), "{table}");
    assert!(
        table.contains("answered by an in-process rule model, not a language model"),
        "{table}"
    );
}

/// Blind taps on a reordered list land on other rows: each is a wrong-element touch, by
/// the sim's drift-independent key, where the script's selectors touch only what the
/// clean run touched.
#[tokio::test]
async fn blind_taps_on_a_reordered_list_are_counted_as_wrong_elements() {
    let opts = ReplayBenchOptions {
        flows: tasks(&["settings.wifi_off", "notes.delete_ideas"]),
        drifts: vec![DriftKind::ReorderLists],
        modes: vec![Mode::Selectors, Mode::Coordinates],
        screen: SMALL,
        ..Default::default()
    };
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    let (sel, blind) = (r.mode(Mode::Selectors), r.mode(Mode::Coordinates));
    assert!(blind.wrong_element >= 1, "{}", format_report(&r));
    assert_eq!(sel.wrong_element, 0, "{}", format_report(&r));
    assert_eq!(
        report_json(&r)["modes"]["coordinates"]["wrong_element"],
        blind.wrong_element
    );
}

/// The realistic suite runs its own drifts and says so; the flow recorded on an English
/// phone replays on the German one (blind taps land where they did: same layout).
#[tokio::test]
async fn the_realistic_suite_replays_an_english_recording_on_a_german_phone() {
    use droidpilot::bench::replay::Suite;
    assert_eq!(Suite::Realistic.drifts().last(), Some(&DriftKind::German));
    let opts = ReplayBenchOptions {
        suite: Suite::Realistic,
        flows: tasks(&["settings.wifi_off"]),
        drifts: vec![DriftKind::German],
        modes: vec![Mode::Coordinates],
        screen: SMALL,
        ..Default::default()
    };
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    assert_eq!(r.cells[&(Mode::Coordinates, DriftKind::German)].runs, 1);
    let table = format_report(&r);
    assert!(
        table.contains("droidpilot bench replay (realistic)"),
        "{table}"
    );
    assert_eq!(report_json(&r)["suite"], "realistic");
}

/// Scripts from outside the suite: a script document and a Maestro flow written by hand,
/// each named after the sim task whose checker judges it, replayed through the flags a
/// user gives (`--scripts`, `--flows-from`).
#[tokio::test]
async fn hand_written_scripts_and_maestro_flows_from_folders_are_judged_by_their_task() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: droidpilot::bench::replay::ReplayArgs,
    }
    let scripts = tempfile::tempdir().unwrap();
    std::fs::write(
        scripts.path().join("settings.bluetooth_on.by_hand.json"),
        r#"{"name": "bluetooth on", "goal": "Turn on Bluetooth", "app": "com.android.settings",
            "steps": [
              {"action": "launch_app", "parameters": {"package": "com.android.settings"}},
              {"action": "tap", "selector": ":text(\"Bluetooth\")"}
            ]}"#,
    )
    .unwrap();
    let flows = tempfile::tempdir().unwrap();
    std::fs::write(
        flows.path().join("settings.wifi_off.yaml"),
        "appId: com.android.settings\nname: Wi-Fi off\n---\n- launchApp\n- tapOn: \"Wi-Fi\"\n",
    )
    .unwrap();
    let cli = Cli::try_parse_from([
        "replay",
        "--scripts",
        scripts.path().to_str().unwrap(),
        "--flows-from",
        flows.path().to_str().unwrap(),
        "--drifts",
        "none",
        "--modes",
        "selectors",
        "--screen",
        "540x1200",
    ])
    .unwrap();
    let opts = ReplayBenchOptions::from_args(&cli.args).unwrap();
    let r = bench_replay(&opts, &|_| {}).await.unwrap();
    assert_eq!(
        r.flow_names,
        [
            "settings.bluetooth_on.by_hand.json",
            "settings.wifi_off.yaml"
        ]
    );
    for f in &r.flow_names {
        let t = r.flow(f, Mode::Selectors);
        assert_eq!(
            (t.runs, t.completed, t.false_complete),
            (1, 1, 0),
            "{f}: {}",
            format_report(&r)
        );
    }
    assert!(format_report(&r).contains("(scripts from outside the suite)"));
}
