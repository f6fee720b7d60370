//! Each selector form on a small dump, asserting the element Maestro would pick.

use super::*;
use crate::parse::parse_flow;

/// A dump: one 1080×2400 window holding `rows` (`<node …/>` strings).
fn screen(rows: &str) -> UiTree {
    let xml = format!(
        r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" clickable="false" enabled="true" bounds="[0,0][1080,2400]">{rows}</node></hierarchy>"#
    );
    droidpilot_core::screen::parse(&xml).unwrap()
}

/// A node with `attrs` (text, resource-id, content-desc, clickable, … as given) and
/// bounds; other attributes take uiautomator's defaults.
fn node(attrs: &str, bounds: &str) -> String {
    let mut a = String::from(attrs);
    for (k, v) in [
        ("text", ""),
        ("resource-id", ""),
        ("content-desc", ""),
        ("class", "android.widget.TextView"),
        ("package", "app"),
        ("clickable", "false"),
        ("enabled", "true"),
        ("checked", "false"),
        ("focused", "false"),
        ("selected", "false"),
    ] {
        if !attrs.contains(&format!("{k}=")) {
            a.push_str(&format!(r#" {k}="{v}""#));
        }
    }
    format!(r#"<node {a} bounds="{bounds}"/>"#)
}

/// The selector of `- tapOn: <yaml>`.
fn sel(yaml: &str) -> Selector {
    let flow = parse_flow(&format!("appId: a\n---\n- assertVisible: {yaml}\n")).unwrap();
    match flow.commands.into_iter().next().unwrap().kind {
        crate::ast::CommandKind::AssertVisible(s) => s,
        _ => unreachable!(),
    }
}

/// The text (or id, when no text) of what Maestro picks.
fn pick(tree: &UiTree, yaml: &str) -> Option<String> {
    find(tree, &sel(yaml)).unwrap().map(|n| {
        let n = &tree.nodes[n];
        [&n.text, &n.content_desc, &n.resource_id]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned()
            .unwrap_or_default()
    })
}

#[test]
fn text_is_a_case_insensitive_regex_over_the_whole_string() {
    let t = screen(
        &(node(r#"text="Save""#, "[0,100][200,200]")
            + &node(r#"text="Wi-Fi is on""#, "[0,300][500,400]")),
    );
    assert_eq!(pick(&t, "save").as_deref(), Some("Save"));
    assert_eq!(pick(&t, "SAVE").as_deref(), Some("Save"));
    assert_eq!(pick(&t, "Sav"), None, "a part of the text is no match");
    assert_eq!(pick(&t, "Wi-Fi"), None);
    assert_eq!(pick(&t, "\".*Wi-Fi.*\"").as_deref(), Some("Wi-Fi is on"));
    assert_eq!(pick(&t, "\"Sa(v|w)e\"").as_deref(), Some("Save"));
}

#[test]
fn text_also_matches_the_content_description_and_the_hint() {
    let t = screen(
        &(node(
            r#"content-desc="Create contact" clickable="true""#,
            "[0,100][200,200]",
        ) + &node(
            r#"class="android.widget.EditText" hint="Search""#,
            "[0,300][500,400]",
        )),
    );
    assert_eq!(
        pick(&t, "Create contact").as_deref(),
        Some("Create contact")
    );
    let n = find(&t, &sel("search")).unwrap().unwrap();
    assert_eq!(t.nodes[n].hint, "Search");
}

#[test]
fn an_invalid_pattern_matches_as_literal_text_and_newlines_read_as_spaces() {
    let t = screen(
        &(node(r#"text="Price (USD""#, "[0,100][200,200]")
            + &node("text=\"Two&#10;lines\"", "[0,300][500,400]")),
    );
    assert_eq!(pick(&t, "\"price (usd\"").as_deref(), Some("Price (USD"));
    assert_eq!(pick(&t, "\"Two lines\"").as_deref(), Some("Two\nlines"));
}

#[test]
fn a_matching_child_is_picked_over_its_matching_parent() {
    let rows = r#"<node text="" content-desc="Save" resource-id="" class="android.widget.LinearLayout" package="app" clickable="true" enabled="true" bounds="[0,100][400,300]"><node text="Save" content-desc="" resource-id="" class="android.widget.TextView" package="app" clickable="false" enabled="true" bounds="[10,110][390,290]"/></node>"#;
    let t = screen(rows);
    let n = find(&t, &sel("Save")).unwrap().unwrap();
    assert_eq!(t.nodes[n].short_class(), "TextView");
}

#[test]
fn id_matches_with_or_without_the_package_prefix_and_as_a_regex() {
    let t = screen(
        &(node(r#"resource-id="com.app:id/btn_send""#, "[0,100][200,200]")
            + &node(r#"resource-id="com.app:id/btn_cancel""#, "[0,300][200,400]")),
    );
    assert_eq!(
        pick(&t, "{id: btn_send}").as_deref(),
        Some("com.app:id/btn_send")
    );
    assert_eq!(
        pick(&t, "{id: \"com.app:id/btn_send\"}").as_deref(),
        Some("com.app:id/btn_send")
    );
    assert_eq!(
        pick(&t, "{id: \"btn_.*cel\"}").as_deref(),
        Some("com.app:id/btn_cancel")
    );
    assert_eq!(pick(&t, "{id: btn}"), None);
}

#[test]
fn index_counts_top_to_bottom_then_left_to_right() {
    // Written bottom one first: the order on screen decides, not the dump's.
    let t = screen(
        &(node(r#"text="OK" resource-id="low""#, "[0,900][200,1000]")
            + &node(r#"text="OK" resource-id="right""#, "[600,100][800,200]")
            + &node(r#"text="OK" resource-id="left""#, "[0,100][200,200]")),
    );
    let id = |yaml: &str| {
        find(&t, &sel(yaml))
            .unwrap()
            .map(|n| t.nodes[n].resource_id.clone())
    };
    assert_eq!(id("{text: OK, index: 0}").as_deref(), Some("left"));
    assert_eq!(id("{text: OK, index: 1}").as_deref(), Some("right"));
    assert_eq!(id("{text: OK, index: 2}").as_deref(), Some("low"));
    assert_eq!(id("{text: OK, index: 3}"), None);
    // Without an index the first in the dump wins (none is clickable).
    assert_eq!(id("OK").as_deref(), Some("low"));
}

#[test]
fn without_index_a_clickable_match_goes_first() {
    let t = screen(
        &(node(r#"text="Next" resource-id="label""#, "[0,100][200,200]")
            + &node(
                r#"text="Next" resource-id="button" clickable="true""#,
                "[0,900][200,1000]",
            )),
    );
    let n = find(&t, &sel("Next")).unwrap().unwrap();
    assert_eq!(t.nodes[n].resource_id, "button");
}

#[test]
fn state_flags_filter() {
    let t = screen(
        &(node(
            r#"text="Pay" resource-id="off" enabled="false""#,
            "[0,100][200,200]",
        ) + &node(r#"text="Pay" resource-id="on""#, "[0,300][200,400]")
            + &node(
                r#"text="Wi-Fi" resource-id="sw" checked="true" focused="true" selected="true""#,
                "[0,500][200,600]",
            )),
    );
    let id = |yaml: &str| {
        find(&t, &sel(yaml))
            .unwrap()
            .map(|n| t.nodes[n].resource_id.clone())
    };
    assert_eq!(id("{text: Pay, enabled: true}").as_deref(), Some("on"));
    assert_eq!(id("{text: Pay, enabled: false}").as_deref(), Some("off"));
    assert_eq!(
        id("{text: Wi-Fi, checked: true, focused: true, selected: true}").as_deref(),
        Some("sw")
    );
    assert_eq!(id("{text: Wi-Fi, checked: false}"), None);
}

#[test]
fn relative_selectors_take_the_nearest_on_the_right_side() {
    // Two "Edit" buttons; "below: Profile" picks the one nearest under the header.
    let t = screen(
        &(node(r#"text="Edit" resource-id="top""#, "[0,100][200,200]")
            + &node(r#"text="Profile""#, "[0,400][400,500]")
            + &node(r#"text="Edit" resource-id="far""#, "[0,1500][200,1600]")
            + &node(r#"text="Edit" resource-id="near""#, "[0,600][200,700]")
            + &node(r#"text="Name""#, "[300,600][600,700]")),
    );
    let id = |yaml: &str| {
        find(&t, &sel(yaml))
            .unwrap()
            .map(|n| t.nodes[n].resource_id.clone())
    };
    assert_eq!(
        id("{text: Edit, below: Profile}").as_deref(),
        Some("far"),
        "the text part's order rules when it comes first"
    );
    assert_eq!(
        id("{below: Profile, text: Edit}").as_deref(),
        Some("far"),
        "parts are read in Maestro's fixed order, text first"
    );
    assert_eq!(id("{text: Edit, above: Profile}").as_deref(), Some("top"));
    assert_eq!(
        id("{text: Edit, leftOf: Name, index: 0}").as_deref(),
        Some("top")
    );
    let n = find(&t, &sel("{below: Profile}")).unwrap().unwrap();
    assert_eq!(
        t.nodes[n].resource_id, "near",
        "alone, the nearest element below comes first"
    );
    let n = find(&t, &sel("{rightOf: {text: Edit, index: 1}}"))
        .unwrap()
        .unwrap();
    assert_eq!(t.nodes[n].text, "Name");
}

#[test]
fn child_of_searches_inside_and_contains_selectors_look_down() {
    let rows = r#"<node text="" resource-id="first" content-desc="" class="android.widget.LinearLayout" package="app" clickable="true" enabled="true" bounds="[0,100][1080,300]"><node text="Alice" resource-id="name" content-desc="" class="android.widget.TextView" package="app" clickable="false" enabled="true" bounds="[0,100][500,300]"/><node text="Delete" resource-id="del1" content-desc="" class="android.widget.Button" package="app" clickable="true" enabled="true" bounds="[600,100][1000,300]"/></node><node text="" resource-id="second" content-desc="" class="android.widget.LinearLayout" package="app" clickable="true" enabled="true" bounds="[0,400][1080,600]"><node text="" resource-id="inner" content-desc="" class="android.widget.FrameLayout" package="app" clickable="false" enabled="true" bounds="[0,400][500,600]"><node text="Bob" resource-id="name" content-desc="" class="android.widget.TextView" package="app" clickable="false" enabled="true" bounds="[0,400][500,600]"/></node><node text="Delete" resource-id="del2" content-desc="" class="android.widget.Button" package="app" clickable="true" enabled="true" bounds="[600,400][1000,600]"/></node>"#;
    let t = screen(rows);
    let id = |yaml: &str| {
        find(&t, &sel(yaml))
            .unwrap()
            .map(|n| t.nodes[n].resource_id.clone())
    };
    assert_eq!(
        id("{text: Delete, childOf: {containsDescendants: [Bob]}}").as_deref(),
        Some("del2")
    );
    assert_eq!(
        id("{text: Delete, childOf: {containsChild: Alice}}").as_deref(),
        Some("del1")
    );
    // Bob is a grandchild of `second`, so `containsChild: Bob` names `inner` only.
    assert_eq!(id("{containsChild: Bob}").as_deref(), Some("inner"));
    assert_eq!(
        id("{containsDescendants: [Bob, Delete]}").as_deref(),
        Some("second")
    );
    assert_eq!(id("{text: Delete, childOf: {id: nowhere}}"), None);
}

#[test]
fn size_and_traits() {
    let t = screen(
        &(node(r#"text="wide" resource-id="a""#, "[0,100][300,200]")
            + &node(r#"text="box" resource-id="b""#, "[0,300][100,400]")),
    );
    let id = |yaml: &str| {
        find(&t, &sel(yaml))
            .unwrap()
            .map(|n| t.nodes[n].resource_id.clone())
    };
    assert_eq!(
        id("{width: 305, height: 98, tolerance: 5}").as_deref(),
        Some("a")
    );
    assert_eq!(id("{width: 305}"), None);
    assert_eq!(id("{traits: square, text: \".+\"}").as_deref(), Some("b"));
}

#[test]
fn elements_off_screen_are_not_matched() {
    let t = screen(
        &(node(r#"text="Gone" resource-id="off""#, "[0,2500][200,2600]")
            + &node(r#"text="Here""#, "[0,100][200,200]")),
    );
    assert_eq!(pick(&t, "Gone"), None);
    assert_eq!(pick(&t, "Here").as_deref(), Some("Here"));
}

#[test]
fn an_index_expression_must_be_evaluated_first() {
    let t = screen(&node(r#"text="A""#, "[0,100][200,200]"));
    let e = find(&t, &sel("{text: A, index: \"${I}\"}")).unwrap_err();
    assert!(matches!(e, MatchError::UnevaluatedIndex(_)));
}
