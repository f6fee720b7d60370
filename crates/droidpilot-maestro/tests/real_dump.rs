//! Maestro selectors on a real uiautomator dump (AOSP Settings, "Back up and reset";
//! `tests/fixtures/uiautomator/INDEX.tsv` row 002 gives its source), each asserting the
//! element Maestro would pick.

use droidpilot_core::screen::UiTree;
use droidpilot_maestro::ast::{CommandKind, Selector};
use droidpilot_maestro::{parse_flow, selector};

fn dump() -> UiTree {
    let xml =
        include_str!("../../../tests/fixtures/uiautomator/real/002__zytzjx__anthenacmc__dump1.xml");
    droidpilot_core::screen::parse(xml).unwrap()
}

fn sel(yaml: &str) -> Selector {
    let flow = parse_flow(&format!("appId: a\n---\n- assertVisible: {yaml}\n")).unwrap();
    match flow.commands.into_iter().next().unwrap().kind {
        CommandKind::AssertVisible(s) => s,
        _ => unreachable!(),
    }
}

/// (text, top edge, checked) of the element picked.
fn pick(tree: &UiTree, yaml: &str) -> Option<(String, i32, bool)> {
    selector::find(tree, &sel(yaml)).unwrap().map(|n| {
        let n = &tree.nodes[n];
        (n.text.clone(), n.bounds.top, n.checked)
    })
}

#[test]
fn maestro_selectors_on_a_real_settings_screen() {
    let t = dump();
    let text = |yaml: &str| pick(&t, yaml).map(|p| p.0);
    assert_eq!(
        text("\"back up & restore\"").as_deref(),
        Some("Back Up & Restore")
    );
    assert_eq!(text("\"Back Up\""), None, "the whole text must match");
    assert!(
        text("\".*Wi-Fi.*\"")
            .unwrap()
            .starts_with("Back up your app data, Wi-Fi")
    );
    // "Back Up.*" matches five texts, case-insensitively; the third from the top.
    assert_eq!(
        text("{text: \"Back Up.*\", index: 2}").as_deref(),
        Some("Back Up My Data")
    );
    assert_eq!(
        text("{id: title, index: 0}").as_deref(),
        Some("DATA BACKUP")
    );
    // The switch of the "Automatic Restore" row, two ways.
    let on = pick(&t, "{id: switch_widget, checked: true}").unwrap();
    assert_eq!((on.1, on.2), (792, true));
    assert_eq!(
        pick(&t, "{id: switch_widget, below: Automatic Restore}"),
        Some(on)
    );
    let off = pick(&t, "{id: \"android:id/switch_widget\"}").unwrap();
    assert_eq!((off.1, off.2), (499, false), "the first switch in the dump");
}
