//! The screen layer against the real-world corpus (`tests/fixtures/uiautomator`, each file's
//! source repository and commit in its `INDEX.tsv`):
//! every dump parses (or fails clearly), nothing panics, the three representations and
//! the selector engine behave on real screens, and arbitrary input never panics.

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use droidpilot::cli::screen::{Format, ScreenArgs, run, run_on_bytes};
use droidpilot::domain::{Bounds, Target};
use droidpilot::screen::parse::{clean, decode, parse_clean_roxmltree};
use droidpilot::screen::scan::scan;
use droidpilot::screen::{
    ElementAction, RedactionPattern, ReprOptions, Screen, Selector, diff, layout_hash, parse,
    parse_bytes,
};
use proptest::prelude::*;

fn fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/uiautomator");
    assert!(
        dir.join("INDEX.tsv").is_file(),
        "fixture corpus missing at {}: it is part of the repository (tests/fixtures/uiautomator)",
        dir.display()
    );
    dir
}

struct Entry {
    file: String,
    nodes: usize,
    packages: BTreeSet<String>,
}

fn index() -> Vec<Entry> {
    let text = std::fs::read_to_string(fixtures().join("INDEX.tsv")).expect("read INDEX.tsv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Entry {
                file: c[0].to_string(),
                nodes: c[4].parse().expect("nodes column"),
                packages: c[6]
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect(),
            }
        })
        .collect()
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A real dump by number prefix (`"005"`).
fn real(prefix: &str) -> Screen {
    let dir = fixtures().join("real");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no real/{prefix}*"));
    let bytes = read(&format!("real/{name}"));
    let text = droidpilot::screen::parse::decode(&bytes).unwrap();
    Screen::from_xml(&text, &ReprOptions::default()).unwrap()
}

fn files(sub: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures().join(sub))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    v
}

#[test]
fn every_real_dump_parses_completely_and_keeps_every_window() {
    let idx = index();
    let real: Vec<&Entry> = idx.iter().filter(|e| e.file.starts_with("real/")).collect();
    assert_eq!(
        real.len(),
        files("real").len(),
        "INDEX.tsv and real/ disagree"
    );
    assert!(real.len() >= 72);
    for e in real {
        let tree = catch_unwind(|| parse_bytes(&read(&e.file)))
            .unwrap_or_else(|_| panic!("{}: panicked", e.file))
            .unwrap_or_else(|err| panic!("{}: {err}", e.file));
        assert_eq!(tree.nodes.len(), e.nodes, "{}: node count", e.file);
        let pkgs: BTreeSet<String> = tree
            .nodes
            .iter()
            .map(|n| n.package.clone())
            .filter(|p| !p.is_empty())
            .collect();
        assert_eq!(pkgs, e.packages, "{}: packages (every window kept)", e.file);
        // Index paths are unique and resolve back to their node.
        for (i, n) in tree.nodes.iter().enumerate() {
            assert_eq!(
                tree.node_by_path(&n.path),
                Some(i),
                "{}: path {}",
                e.file,
                n.path
            );
        }
    }
}

/// Whether a person sees node `i`: it is on screen, and so is every ancestor, except
/// that inside a WebView (where Chrome gives some page containers zero-size bounds) only
/// an ancestor marked `visible-to-user="false"` hides it. Written out here, apart from
/// the element map's own loop, as the rule that loop must follow.
fn seen_by_a_person(tree: &droidpilot::screen::UiTree, i: usize, s: &Bounds) -> bool {
    let ancestors: Vec<usize> = tree.ancestors(i).collect();
    tree.is_on_screen(i, s)
        && ancestors.iter().enumerate().all(|(k, &a)| {
            let in_web_view = ancestors[k + 1..]
                .iter()
                .any(|&b| tree.nodes[b].class.ends_with("WebView"));
            if in_web_view {
                tree.nodes[a].visible
            } else {
                tree.is_on_screen(a, s)
            }
        })
}

#[test]
fn every_real_dump_yields_consistent_representations() {
    let opts = ReprOptions::default();
    for f in files("real") {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let result = catch_unwind(AssertUnwindSafe(|| {
            let bytes = std::fs::read(&f).unwrap();
            let text = droidpilot::screen::parse::decode(&bytes).unwrap();
            let screen = Screen::from_xml(&text, &opts).unwrap();
            let compact = screen.compact(&opts.compact);
            let repr = screen.representation(&opts);

            // The compact format keeps every actionable element, each on its own `[id]` line.
            let ids: Vec<u32> = compact
                .lines()
                .filter_map(|l| {
                    l.trim_start()
                        .strip_prefix('[')?
                        .split(']')
                        .next()?
                        .parse()
                        .ok()
                })
                .collect();
            let want: Vec<u32> = (0..screen.elements.elements.len() as u32).collect();
            assert_eq!(ids, want, "{name}: compact ids");
            // Every visible actionable node is an element (nothing dropped by the filter).
            let s = screen.elements.screen;
            for (i, n) in screen.tree.nodes.iter().enumerate() {
                let shown = n.is_actionable() && seen_by_a_person(&screen.tree, i, &s);
                assert_eq!(
                    shown,
                    screen.elements.for_node(i).is_some(),
                    "{name}: node {} ({})",
                    n.path,
                    n.class
                );
            }

            // JSON: one entry per element; selectors resolve back to the element.
            assert_eq!(
                repr.actionable_elements.len(),
                screen.elements.elements.len()
            );
            let json = serde_json::to_value(&repr).unwrap();
            assert!(json["actionable_elements"].is_array() && json["elements"].is_string());
            for a in &repr.actionable_elements {
                let node = screen.elements.get(a.element_id).unwrap().node;
                let sel = Selector::parse(&a.selector)
                    .unwrap_or_else(|e| panic!("{name}: {} does not parse: {e}", a.selector));
                let m = screen.find(&sel);
                assert!(
                    m.is_unique() && m.nodes[0] == node,
                    "{name}: {} → {:?}",
                    a.selector,
                    m
                );
                if sel.is_index_based() {
                    assert!(
                        !a.alternative_selectors.is_empty(),
                        "{name}: {} has no alternatives",
                        a.selector
                    );
                }
                for alt in &a.alternative_selectors {
                    Selector::parse(alt).unwrap_or_else(|e| panic!("{name}: alt {alt}: {e}"));
                }
                assert!(!a.actions.is_empty());
                assert_eq!(
                    screen.resolve(&Target::Element(a.element_id)).unwrap(),
                    a.bounds
                );
            }

            // Tree format: a header plus one line per node.
            let tree_text = screen.tree_text(None);
            assert_eq!(
                tree_text.lines().count(),
                screen.tree.nodes.len() + 1,
                "{name}"
            );

            // Hash is deterministic and a screen does not differ from itself.
            let again = Screen::from_xml(&text, &opts).unwrap();
            assert_eq!(layout_hash(&screen.tree), layout_hash(&again.tree));
            assert!(
                diff(
                    (&screen.tree, &screen.elements),
                    (&again.tree, &again.elements)
                )
                .is_empty()
            );
        }));
        assert!(result.is_ok(), "{name}: panicked");
    }
}

#[test]
fn malformed_dumps_parse_after_cleanup_or_fail_clearly() {
    let idx: HashMap<String, usize> = index().into_iter().map(|e| (e.file, e.nodes)).collect();
    for f in files("malformed") {
        let rel = format!("malformed/{}", f.file_name().unwrap().to_string_lossy());
        let bytes = std::fs::read(&f).unwrap();
        let r = catch_unwind(|| parse_bytes(&bytes)).unwrap_or_else(|_| panic!("{rel}: panicked"));
        match r {
            Ok(tree) => assert_eq!(Some(&tree.nodes.len()), idx.get(&rel), "{rel}"),
            Err(e) => {
                // Only the dump that is uiautomator's error line may fail, and it must be typed.
                assert_eq!(idx.get(&rel), Some(&0), "{rel}: {e}");
                assert_eq!(e.code(), "hierarchy_unavailable", "{rel}");
                assert!(e.to_string().contains("null root node"));
                assert!(!e.hint().is_empty());
            }
        }
    }
}

/// The scanner's contract on one clean document: the roxmltree tree, or no answer.
fn scanner_agrees(xml: &str) -> Result<bool, String> {
    match scan(xml) {
        None => Ok(false),
        Some(fast) => {
            let reference = parse_clean_roxmltree(xml);
            if reference.as_ref() == Ok(&fast) {
                Ok(true)
            } else {
                Err(format!(
                    "scanner built a tree that roxmltree does not: {:?}",
                    reference.map(|t| t.nodes.len())
                ))
            }
        }
    }
}

#[test]
fn the_scanner_builds_the_roxmltree_tree_for_every_fixture() {
    let mut fast = 0;
    for f in files("real").into_iter().chain(files("malformed")) {
        let rel = f.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&f).unwrap();
        let text = decode(&bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let Ok(xml) = clean(&text) else {
            // Only uiautomator's error line has no document to scan.
            assert!(rel.starts_with("M01"), "{rel}");
            continue;
        };
        let took = scanner_agrees(xml).unwrap_or_else(|e| panic!("{rel}: {e}"));
        // Real dumps are exactly what the scanner is for: none may fall back (that
        // fallback is the slow path the speed target is about).
        assert!(
            took || rel.starts_with('M'),
            "{rel}: scanner declined a real dump"
        );
        fast += usize::from(took);
        // And `parse` (scanner first) gives what roxmltree alone gives.
        assert_eq!(parse(&text), parse_clean_roxmltree(xml), "{rel}");
    }
    assert!(fast >= 72 + 4, "{fast} fixtures took the fast path");
}

// ---- table tests on real dumps ---------------------------------------------------------

#[test]
fn compact_format_table() {
    // (dump, lines that must appear verbatim, has_modal)
    let table: &[(&str, &[&str], bool)] = &[
        (
            "005",
            &[
                "com.google.android.permissioncontroller (dialog on top)",
                "  \"Allow Camera to access this device’s location?\"",
                "  [2] Radio \"Precise\" on @30,52",
                "  [6] Button \"Don’t allow\" @51,89",
            ],
            true,
        ),
        (
            "010",
            &["android (dialog on top)", "[1] Button \"Wait\" @51,91"],
            true,
        ),
        (
            "009",
            &[
                "[0] Button \"RAD\" @8,7",
                "  [6] Button \"7\" @13,47",
                " [23] View \"Advanced operations\" click @97,69",
            ],
            false,
        ),
        (
            "001",
            &[" [3] Switch \"Opcje programisty, Włączony\" on @93,11"],
            false,
        ),
        // The keyboard and status bar windows are kept but do not make a dialog.
        (
            "039",
            &[" [18] Edit \"littlest pet shop\" long focused @37,9"],
            false,
        ),
        ("059", &["[61] Button \"Create new task\" @93,95"], false),
    ];
    for (dump, lines, modal) in table {
        let s = real(dump);
        let c = s.compact(&Default::default());
        for l in *lines {
            assert!(
                c.lines().any(|x| x == *l),
                "{dump}: missing line {l:?} in\n{c}"
            );
        }
        assert_eq!(s.has_modal, *modal, "{dump}");
    }
}

#[test]
fn tree_format_table() {
    let s = real("009");
    let t = s.tree_text(Some("Calculator"));
    let mut lines = t.lines();
    assert_eq!(
        lines.next(),
        Some("[Screen: com.google.android.calculator / Calculator]")
    );
    assert_eq!(lines.next(), Some("  [0] FrameLayout"));
    assert!(
        t.contains("\n                [0.0.0.0.0.0.0.0] Button \"RAD\" @mode {clickable} desc=\"radian mode\"\n"),
        "{t}"
    );
    // The seed format's shape for an empty field with a hint.
    let xml = r#"<hierarchy><node class="android.widget.FrameLayout" package="com.example.app" bounds="[0,0][100,100]"><node class="android.widget.LinearLayout" bounds="[0,0][100,100]"><node class="android.widget.TextView" text="Welcome" resource-id="com.example.app:id/text_welcome" bounds="[0,0][100,10]"/><node class="android.widget.Button" text="Continue" resource-id="com.example.app:id/btn_continue" clickable="true" bounds="[0,10][100,20]"/><node class="android.widget.EditText" text="" resource-id="com.example.app:id/input_email" hint="Enter email" bounds="[0,20][100,30]"/></node></node></hierarchy>"#;
    let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
    assert_eq!(
        s.tree_text(Some("MainActivity")),
        "[Screen: com.example.app / MainActivity]\n  [0] FrameLayout\n    [0.0] LinearLayout\n      [0.0.0] TextView \"Welcome\" @text_welcome\n      [0.0.1] Button \"Continue\" @btn_continue {clickable}\n      [0.0.2] EditText \"\" @input_email {editable} hint=\"Enter email\"\n"
    );
}

#[test]
fn json_representation_table() {
    let s = real("005");
    let r = s.representation(&ReprOptions {
        activity: Some("GrantPermissionsActivity".into()),
        ..Default::default()
    });
    assert_eq!(
        r.app_package.as_deref(),
        Some("com.google.android.permissioncontroller")
    );
    assert_eq!(r.activity.as_deref(), Some("GrantPermissionsActivity"));
    assert!(r.has_modal);
    assert!(
        r.summary.contains("7 actionable elements") && r.summary.contains("dialog"),
        "{}",
        r.summary
    );
    let deny = r
        .actionable_elements
        .iter()
        .find(|a| a.text == "Don’t allow")
        .expect("deny button");
    assert_eq!(deny.kind, "Button");
    assert_eq!(deny.actions, vec![ElementAction::Click]);
    assert!(deny.selector.starts_with('#'), "{}", deny.selector);
    let precise = r
        .actionable_elements
        .iter()
        .find(|a| a.text == "Precise")
        .unwrap();
    assert_eq!(precise.kind, "RadioButton");

    let s = real("009");
    let r = s.representation(&ReprOptions::default());
    let rad = &r.actionable_elements[0];
    assert_eq!((rad.selector.as_str(), rad.text.as_str()), ("#mode", "RAD"));
    assert_eq!(
        rad.alternative_selectors[..2],
        [
            ":text(\"RAD\")".to_string(),
            ":desc(\"radian mode\")".to_string()
        ]
    );
    let more = &r.actionable_elements[1];
    assert_eq!(more.selector, ":desc(\"More options\")");
    assert_eq!(
        more.actions,
        vec![ElementAction::Click, ElementAction::LongClick]
    );
    let pager = r
        .actionable_elements
        .iter()
        .find(|a| a.selector == "#pad_pager")
        .unwrap();
    assert!(pager.actions.contains(&ElementAction::Scroll));
}

#[test]
fn password_fields_and_patterns_never_leave_the_layer() {
    // M03 holds a password field; its text must not appear anywhere.
    let bytes = read(&format!(
        "malformed/{}",
        files("malformed")
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .find(|n| n.starts_with("M03"))
            .unwrap()
    ));
    let tree = parse_bytes(&bytes).unwrap();
    let pw: Vec<_> = tree.nodes.iter().filter(|n| n.password).collect();
    assert!(!pw.is_empty());
    assert!(pw.iter().all(|n| n.text.is_empty() || n.text == "••••"));

    let xml = r#"<hierarchy><node class="android.widget.FrameLayout" package="p" bounds="[0,0][100,100]"><node class="android.widget.EditText" password="true" text="hunter2" clickable="true" bounds="[0,0][100,10]"/><node class="android.widget.TextView" text="Card 4111 1111 1111 1111" bounds="[0,10][100,20]"/></node></hierarchy>"#;
    let opts = ReprOptions {
        redact: vec![RedactionPattern::shape("9999 9999 9999 9999").unwrap()],
        ..Default::default()
    };
    let s = Screen::from_xml(xml, &opts).unwrap();
    let everything = format!(
        "{}{}{}{:?}",
        s.compact(&opts.compact),
        s.tree_text(None),
        serde_json::to_string(&s.representation(&opts)).unwrap(),
        s.tree
    );
    assert!(
        !everything.contains("hunter2") && !everything.contains("4111"),
        "{everything}"
    );
    assert!(everything.contains("Card ••••"));
}

#[test]
fn selector_engine_table() {
    let s = real("009");
    // (selector, matches, unique)
    let table: &[(&str, usize, bool)] = &[
        ("#mode", 1, true),
        ("#com.google.android.calculator:id/mode", 1, true),
        (":text(\"RAD\")", 1, true),
        (":desc(\"radian mode\")", 1, true),
        ("Button:text(\"7\")", 1, true),
        ("Button", 18, false),
        (":text(\"nope\")", 0, false),
        ("[0.0.0.0.0.0.0.0]", 1, true),
        ("[9]", 0, false),
    ];
    for (sel, n, unique) in table {
        let m = s.find(&Selector::parse(sel).unwrap());
        assert_eq!((m.nodes.len(), m.is_unique()), (*n, *unique), "{sel}");
    }
    // Resolution: unique → bounds; ambiguous → candidates; typo → suggestion.
    let b = s
        .resolve(&Target::Selector(":text(\"RAD\")".into()))
        .unwrap();
    assert_eq!(b, Bounds::new(0, 98, 259, 266));
    let e = s.resolve(&Target::Selector("Button".into())).unwrap_err();
    assert_eq!(e.code(), "element_ambiguous");
    assert!(
        e.to_string()
            .contains("element 0 [0.0.0.0.0.0.0.0] Button \"RAD\""),
        "{e}"
    );
    let e = s
        .resolve(&Target::Selector(":text(\"Rad\")".into()))
        .unwrap_err();
    assert_eq!(e.code(), "element_not_found");
    assert!(
        e.hint().contains("Did you mean :text(\"RAD\")"),
        "{}",
        e.hint()
    );
    let e = s
        .resolve(&Target::Selector(":text(\"RAD\"".into()))
        .unwrap_err();
    assert_eq!(e.code(), "invalid_selector");
    let e = s.resolve(&Target::Element(999)).unwrap_err();
    assert!(e.to_string().contains("numbered 0–23"), "{e}");

    // Share sheet: unlabeled `#item` targets fall back to an index path with alternatives.
    let s = real("012");
    let r = s.representation(&ReprOptions::default());
    let item = r
        .actionable_elements
        .iter()
        .find(|a| a.text == "item")
        .unwrap();
    assert!(item.selector.starts_with('['), "{}", item.selector);
    assert!(!item.alternative_selectors.is_empty());
}

#[test]
fn diff_and_hash_on_a_real_screen_change() {
    let before = real("001");
    let xml = String::from_utf8(read(&format!(
        "real/{}",
        files("real")[0].file_name().unwrap().to_string_lossy()
    )))
    .unwrap();
    // Turn one switch off and retitle a row: what a model should be told.
    let after_xml = xml
        .replacen("Pokaż dotknięcia", "Pokaż kliknięcia", 1)
        .replacen(r#"text="Włączono" resource-id="android:id/switch_widget" class="android.widget.Switch" package="com.android.settings" content-desc="" checkable="true" checked="true""#, r#"text="Wyłączono" resource-id="android:id/switch_widget" class="android.widget.Switch" package="com.android.settings" content-desc="" checkable="true" checked="false""#, 1);
    assert_ne!(after_xml, xml);
    let after = Screen::from_xml(&after_xml, &ReprOptions::default()).unwrap();
    let d = diff(
        (&before.tree, &before.elements),
        (&after.tree, &after.elements),
    );
    let p = d.to_prompt(10);
    assert!(!d.is_empty(), "{p}");
    assert!(p.lines().count() <= 11, "{p}");
    assert!(p.contains("Pokaż kliknięcia"), "{p}");
    assert_ne!(layout_hash(&before.tree), layout_hash(&after.tree));
}

// ---- Appium page sources -----------------------------------------------------------------

/// Real Appium UiAutomator2 page sources (`tests/fixtures/appium`, sources in its INDEX.tsv):
/// class-named elements instead of `<node>`.
fn appium_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/appium")
}

/// (file prefix, labels of actionable elements a person sees on that screen)
const APPIUM_EXPECTED: [(&str, &[&str]); 3] = [
    (
        "01__",
        &[
            "Español",
            "Iniciar sesión",
            "Crear cuenta nueva",
            "Contraseña",
        ],
    ),
    (
        "02__",
        &["Lanjutkan dengan Google", "Sudah memiliki akun? Masuk"],
    ),
    ("03__", &["English", "Select", "Dismiss"]),
];

#[test]
fn appium_page_sources_parse_to_the_views_they_show() {
    let index = std::fs::read_to_string(appium_dir().join("INDEX.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = index
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(rows.len() >= 3, "at least three real page sources");
    for row in &rows {
        let (file, nodes, package) = (row[0], row[4].parse::<usize>().unwrap(), row[6]);
        assert_eq!(row[3].len(), 40, "{file}: a full commit hash");
        let path = appium_dir().join(file);
        let bytes = std::fs::read(&path).unwrap();
        let text = decode(&bytes).unwrap();
        let tree = parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(tree.nodes.len(), nodes, "{file}: every element is a view");
        assert_eq!(
            tree,
            parse_clean_roxmltree(clean(&text).unwrap()).unwrap(),
            "{file}"
        );
        assert_eq!(tree.app_package(), Some(package), "{file}");
        let screen = Screen::new(tree, &ReprOptions::default());
        let labels: Vec<&str> = screen
            .elements
            .elements
            .iter()
            .map(|e| e.label.as_str())
            .collect();
        let (_, expected) = APPIUM_EXPECTED
            .iter()
            .find(|(p, _)| file.starts_with(p))
            .unwrap_or_else(|| panic!("{file}: expectations listed"));
        for want in *expected {
            assert!(
                labels.iter().any(|l| l.contains(want)),
                "{file}: `{want}` is an actionable element; got {labels:?}"
            );
        }
        // `droidpilot screen FILE` prints them too.
        let out = cli(&path, Format::Compact, false).unwrap();
        assert!(out.starts_with(package), "{file}: {out}");
        assert!(out.contains(expected[0]), "{file}: {out}");
    }
}

#[test]
fn appium_password_fields_and_visibility_are_read() {
    let bytes = std::fs::read(
        appium_dir().join("01__ErickPenafiel__facebook-app-testing__page_source.xml"),
    )
    .unwrap();
    let tree = parse_bytes(&bytes).unwrap();
    let pw: Vec<_> = tree.nodes.iter().filter(|n| n.password).collect();
    assert_eq!(pw.len(), 1);
    assert_eq!(pw[0].class, "android.widget.EditText");
    assert!(pw[0].is_editable() && pw[0].visible);
    // `displayed="false"` is Appium's `visible-to-user="false"`; a missing `class`
    // is taken from the element's name.
    let t = parse(r#"<hierarchy index="0" class="hierarchy" rotation="0" width="100" height="100"><android.widget.Button text="Hidden" clickable="true" bounds="[0,0][10,10]" displayed="false"/><android.widget.Button text="Shown" clickable="true" bounds="[0,10][10,20]" displayed="true"/></hierarchy>"#).unwrap();
    assert_eq!(t.nodes.len(), 2);
    assert!(!t.nodes[0].visible && t.nodes[1].visible);
    assert_eq!(t.nodes[0].class, "android.widget.Button");
    // A class-named root (some tools save one window) is that window.
    let t = parse(r#"<android.widget.FrameLayout class="android.widget.FrameLayout" bounds="[0,0][10,10]"><android.widget.TextView class="android.widget.TextView" text="a" bounds="[0,0][5,5]"/></android.widget.FrameLayout>"#).unwrap();
    assert_eq!(t.nodes.len(), 2);
}

#[test]
fn a_hierarchy_of_elements_that_are_not_views_is_an_error_not_an_empty_screen() {
    let ios = r#"<hierarchy rotation="0"><XCUIElementTypeApplication type="XCUIElementTypeApplication" name="App"><XCUIElementTypeButton type="XCUIElementTypeButton" name="OK"/></XCUIElementTypeApplication></hierarchy>"#;
    let e = parse(ios).unwrap_err();
    assert_eq!(e.code(), "hierarchy_invalid");
    assert!(e.to_string().contains("2 elements"), "{e}");
    assert!(e.to_string().contains("XCUIElementTypeApplication"), "{e}");
    assert!(e.hint().contains("Appium"), "{}", e.hint());
    // The CLI says so instead of printing an empty screen.
    let args = ScreenArgs {
        dump: "-".into(),
        format: Format::Compact,
        tokens: false,
    };
    let mut out = Vec::new();
    let err = format!(
        "{:#}",
        run_on_bytes(ios.as_bytes(), &args, &mut out).unwrap_err()
    );
    assert!(
        err.contains("none is a view") && err.contains("hint"),
        "{err}"
    );
    // A hierarchy with no elements at all is still an empty (no windows) screen.
    assert!(
        parse(r#"<hierarchy rotation="0"/>"#)
            .unwrap()
            .nodes
            .is_empty()
    );
}

// ---- CLI -------------------------------------------------------------------------------

fn cli(dump: &Path, format: Format, tokens: bool) -> anyhow::Result<String> {
    let mut out = Vec::new();
    run(
        &ScreenArgs {
            dump: dump.to_path_buf(),
            format,
            tokens,
        },
        &mut out,
    )?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn cli_prints_each_format_and_token_counts() {
    let f = files("real")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("/009"))
        .unwrap();
    let tree = cli(&f, Format::Tree, false).unwrap();
    assert!(tree.starts_with("[Screen: com.google.android.calculator]\n  [0] FrameLayout"));
    let compact = cli(&f, Format::Compact, false).unwrap();
    assert!(compact.starts_with("com.google.android.calculator\n[0] Button \"RAD\""));
    let json: serde_json::Value =
        serde_json::from_str(&cli(&f, Format::Json, false).unwrap()).unwrap();
    assert_eq!(json["actionable_elements"].as_array().unwrap().len(), 24);
    let with_tokens = cli(&f, Format::Compact, true).unwrap();
    let last = with_tokens.lines().rev().nth(1).unwrap();
    assert!(last.starts_with("o200k tokens: tree "), "{last}");
    assert!(with_tokens.contains("actionable elements: 24"));
}

#[test]
fn cli_errors_carry_hints() {
    let m01 = files("malformed")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("M01"))
        .unwrap();
    let e = cli(&m01, Format::Compact, false).unwrap_err().to_string();
    assert!(
        e.contains("UI hierarchy unavailable") && e.contains("hint: "),
        "{e}"
    );
    let e = cli(Path::new("/nonexistent/d.xml"), Format::Tree, false).unwrap_err();
    assert!(format!("{e:#}").contains("/nonexistent/d.xml"));
    let args = ScreenArgs {
        dump: "-".into(),
        format: Format::Compact,
        tokens: false,
    };
    let mut out = Vec::new();
    let e = run_on_bytes(b"", &args, &mut out).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
}

// ---- no panic on arbitrary input -------------------------------------------------------

/// Markup the scanner must decline or read exactly as roxmltree does.
const JUNK: &[&str] = &[
    "<!-- c -->",
    "<![CDATA[x]]>",
    "<?pi x?>",
    "<!DOCTYPE h>",
    "&",
    "&amp;",
    "&#10;",
    "&#0;",
    "&#xD800;",
    "&nbsp;",
    "<",
    ">",
    "\"",
    "'",
    "=",
    "/>",
    "</node>",
    "<node>",
    "<node/>",
    "</hierarchy>",
    "<hierarchy>",
    " xmlns=\"u\"",
    " a:b=\"c\"",
    " text=\"dup\"",
    " xpos=\"1\"",
    "\r\n",
    "\t",
    "\u{1}",
    "\u{fffe}",
    "é",
    "]]>",
    "<?xml version=\"1.0\"?>",
];

fn sample_dump() -> String {
    String::from_utf8(read(&format!(
        "real/{}",
        files("real")[4].file_name().unwrap().to_string_lossy()
    )))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_bytes(&b);
    }

    #[test]
    fn pipeline_never_panics_on_mangled_real_dumps(cut in 0usize..8000, at in 0usize..8000, junk in ".{0,12}") {
        let d = sample_dump();
        let mut s: String = d.chars().take(cut.max(1) * d.chars().count() / 8000).collect();
        let pos = s.char_indices().nth(at % (s.chars().count() + 1)).map_or(s.len(), |(i, _)| i);
        s.insert_str(pos, &junk);
        if let Ok(screen) = Screen::from_xml(&s, &ReprOptions::default()) {
            let _ = screen.representation(&ReprOptions::default());
            let _ = screen.tree_text(None);
            let _ = layout_hash(&screen.tree);
        }
    }

    /// Truncation, byte flips and inserted markup on real dumps: the scanner never
    /// panics and never builds a tree roxmltree would not.
    #[test]
    fn scanner_agrees_with_roxmltree_on_mangled_dumps(
        file in 0usize..58,
        edits in proptest::collection::vec((0usize..3, any::<prop::sample::Index>(), any::<u8>(), 0usize..JUNK.len()), 1..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let f = &files("real")[file];
        let mut b = std::fs::read(f).unwrap();
        for (kind, at, byte, junk) in edits {
            let at = at.index(b.len() + 1);
            match kind {
                0 => { if at < b.len() { b[at] ^= byte.max(1) } }
                1 => { let j = JUNK[junk].as_bytes(); b.splice(at..at, j.iter().copied()); }
                _ => { if at < b.len() { b[at] = byte } }
            }
        }
        if let Some(cut) = cut {
            b.truncate(cut.index(b.len() + 1));
        }
        let text = String::from_utf8_lossy(&b);
        if let Ok(xml) = clean(&text) {
            prop_assert_eq!(scanner_agrees(xml).err(), None);
            let _ = parse(&text);
        }
        // The raw text too, without the cleanup cutting anything off.
        prop_assert_eq!(scanner_agrees(&text).err(), None);
    }

    #[test]
    fn arbitrary_attribute_values_never_panic(text in ".{0,20}", bounds in ".{0,20}", flag in ".{0,6}") {
        let esc = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
        let xml = format!(r#"<hierarchy rotation="{}"><node text="{}" bounds="{}" clickable="{}" class="{}" resource-id="{}"/></hierarchy>"#, esc(&flag), esc(&text), esc(&bounds), esc(&flag), esc(&text), esc(&text));
        if let Ok(tree) = parse(&xml) {
            let s = Screen::new(tree, &ReprOptions::default());
            let _ = s.representation(&ReprOptions::default());
        }
    }

    #[test]
    fn selector_parser_never_panics_and_round_trips(s in ".{0,40}") {
        match Selector::parse(&s) {
            Ok(sel) => prop_assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel),
            Err(e) => prop_assert!(e.column >= 1 && e.column <= s.chars().count() + 1),
        }
    }

    #[test]
    fn selector_text_survives_any_string(t in ".{0,30}") {
        let sel = Selector::Text { class: Some("Button".into()), text: t };
        prop_assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
    }
}

// ---- screens nobody here had seen (real/061…074) ----------------------------------------

fn labels(s: &Screen) -> Vec<&str> {
    s.elements
        .elements
        .iter()
        .map(|e| e.label.as_str())
        .collect()
}

fn real_text(prefix: &str) -> String {
    let name = files("real")
        .into_iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .find(|n| n.starts_with(prefix))
        .unwrap_or_else(|| panic!("no real/{prefix}*"));
    String::from_utf8(read(&format!("real/{name}"))).unwrap()
}

#[test]
fn a_web_page_under_zero_size_containers_keeps_its_controls() {
    // 061: a sign-in page in a WebView; its page containers are zero-height
    // (`[0,63][1080,63]`) and hold every control on screen.
    let s = real("061");
    let l = labels(&s);
    for want in [
        "Cancel",
        "Get code",
        "I have a code",
        "I don't have any of these",
        "Terms of Use",
        "Privacy & Cookies",
    ] {
        assert!(l.contains(&want), "{want} missing from {l:?}");
    }
    let web = s.tree.nodes.iter().position(|n| n.is_web_view()).unwrap();
    let clickable: Vec<usize> = s
        .tree
        .subtree(web)
        .filter(|&i| s.tree.nodes[i].clickable && s.tree.is_on_screen(i, &s.elements.screen))
        .collect();
    assert!(clickable.len() >= 7, "{clickable:?}");
    for i in clickable {
        assert!(s.elements.for_node(i).is_some(), "{}", s.tree.nodes[i].path);
    }
    let c = s.compact(&Default::default());
    assert!(c.contains("Button \"Get code\""), "{c}");

    // Inside a WebView `visible-to-user="false"` still hides a subtree.
    let hidden = real_text("061").replacen(
        r#"bounds="[0,63][1080,63]""#,
        r#"visible-to-user="false" bounds="[0,63][1080,63]""#,
        1,
    );
    let s = Screen::from_xml(&hidden, &ReprOptions::default()).unwrap();
    assert!(!labels(&s).contains(&"Get code"), "{:?}", labels(&s));

    // Outside a WebView a zero-size parent hides its children, as Android clips them.
    let native = r#"<hierarchy><node class="android.widget.FrameLayout" package="p" bounds="[0,0][100,100]"><node class="android.widget.LinearLayout" bounds="[0,0][0,0]"><node class="android.widget.Button" text="Clipped" clickable="true" bounds="[0,0][50,50]"/></node><node class="android.widget.Button" text="Shown" clickable="true" bounds="[0,50][50,90]"/></node></hierarchy>"#;
    let s = Screen::from_xml(native, &ReprOptions::default()).unwrap();
    assert_eq!(labels(&s), ["Shown"]);
}

#[test]
fn a_thin_window_of_another_package_is_neither_the_app_nor_a_dialog() {
    // 065: Samsung's edge-panel handle (a 42 px wide window of its own package) is written
    // before Instagram's window, as is the navigation bar.
    let s = real("065");
    assert_eq!(s.tree.app_package(), Some("com.instagram.androim"));
    assert!(!s.has_modal);
    let c = s.compact(&Default::default());
    assert!(c.starts_with("com.instagram.androim\n"), "{c}");

    // A tablet's taskbar: a 68 px launcher strip at the bottom, top-most.
    let win = |pkg: &str, b: &str, text: &str| {
        format!(
            r#"<node class="android.widget.FrameLayout" package="{pkg}" bounds="{b}"><node class="android.widget.Button" package="{pkg}" text="{text}" clickable="true" bounds="{b}"/></node>"#
        )
    };
    let taskbar = win(
        "com.google.android.apps.nexuslauncher",
        "[0,2492][1600,2560]",
        "Taskbar",
    );
    let app = win("com.example.mail", "[0,0][1600,2492]", "Compose");
    let status = win("com.android.systemui", "[0,0][1600,60]", "Clock");
    let xml = format!("<hierarchy rotation=\"0\">{taskbar}{status}{app}</hierarchy>");
    let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
    assert_eq!(s.tree.app_package(), Some("com.example.mail"));
    assert!(!s.has_modal);
    // Its buttons are still on screen for the model.
    assert!(labels(&s).contains(&"Taskbar"));
    // A real dialog of another package over the app still is one.
    let dialog = win(
        "com.google.android.permissioncontroller",
        "[40,900][1560,1600]",
        "Allow",
    );
    let xml = format!("<hierarchy rotation=\"0\">{taskbar}{dialog}{app}</hierarchy>");
    let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
    assert_eq!(
        s.tree.app_package(),
        Some("com.google.android.permissioncontroller")
    );
    assert!(s.has_modal);
}

#[test]
fn the_new_dumps_name_their_app_and_dialogs() {
    // (dump, foreground app, dialog on top)
    let table: &[(&str, &str, bool)] = &[
        ("061", "com.microsoft.office.excel", false),
        ("062", "com.google.android.apps.maps", false),
        ("065", "com.instagram.androim", false),
        ("066", "com.scheler.superproxy", false),
        ("067", "com.audiometry.threshold", false),
        ("068", "com.audiometry.threshold", true),
        ("069", "com.philo.philo", false),
        ("070", "com.android.chrome", false),
        ("071", "com.google.android.permissioncontroller", true),
        ("072", "com.kabam.marvelbattle", false),
        ("073", "com.kakao.talk", false),
        ("074", "com.openai.chatgpt", false),
    ];
    for (dump, app, modal) in table {
        let s = real(dump);
        assert_eq!(s.tree.app_package(), Some(*app), "{dump}");
        assert_eq!(s.has_modal, *modal, "{dump}");
    }
}

#[test]
fn a_dump_with_no_views_is_an_error_not_an_empty_screen() {
    let args = ScreenArgs {
        dump: "-".into(),
        format: Format::Compact,
        tokens: false,
    };
    for xml in [
        r#"<hierarchy rotation="0"/>"#,
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">cut here</hierarchy>",
        "UI hierchary dumped to: /sdcard/window_dump.xml\n<hierarchy rotation=\"0\"></hierarchy>",
    ] {
        let mut out = Vec::new();
        let e = format!(
            "{:#}",
            run_on_bytes(xml.as_bytes(), &args, &mut out).unwrap_err()
        );
        assert!(e.contains("no views") && e.contains("hint: "), "{xml}: {e}");
        assert!(out.is_empty(), "{xml}: printed {out:?}");
    }
}

#[test]
fn xml_errors_point_at_the_files_line_and_hint_by_kind_of_damage() {
    use droidpilot::screen::ParseError;
    use droidpilot::screen::parse::XmlDamage;
    let junk = "UI hierchary dumped to: /sdcard/window_dump.xml\n";
    // A duplicated attribute on the file's third line (the junk line is its first).
    let text = format!(
        "{junk}<?xml version='1.0' ?><hierarchy rotation=\"0\">\n<node text=\"a\" text=\"b\"/></hierarchy>"
    );
    let e = parse(&text).unwrap_err();
    let ParseError::Xml { line, damage, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((*line, *damage), (3, XmlDamage::Markup), "{e}");
    assert!(e.to_string().contains("line 3"), "{e}");

    // Cut short: where the file ends, and "dump again, copy it whole".
    let dump = real_text("067");
    let cut = format!("{junk}{}", &dump[..dump.len() / 2]);
    let e = parse(&cut).unwrap_err();
    let ParseError::Xml { line, damage, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((*line, *damage), (2, XmlDamage::Truncated), "{e}");
    assert!(e.hint().contains("ends before") && e.hint().contains("adb pull"));

    // A control character from a text conversion: an encoding hint, not "adb pull".
    let damaged = format!(
        "{junk}{}",
        dump.replacen("Calibration", "Calibr\u{1}tion", 1)
    );
    assert_ne!(
        damaged,
        format!("{junk}{dump}"),
        "the fixture names the language"
    );
    let e = parse(&damaged).unwrap_err();
    let ParseError::Xml { line, damage, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((*line, *damage), (2, XmlDamage::Encoding), "{e}");
    assert!(e.hint().contains("conversion"), "{}", e.hint());
    assert!(!e.hint().contains("adb pull"), "{}", e.hint());

    // UTF-16 without a byte order mark, junk line included, is read, not misreported.
    let mut utf16 = Vec::new();
    for u in format!("{junk}{dump}").encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(
        parse_bytes(&utf16).unwrap(),
        parse(&dump).unwrap(),
        "UTF-16LE without BOM"
    );
    // Half of a UTF-16 file (a NUL in UTF-8 text) is encoding damage, said so.
    let e = parse_bytes(format!("{dump}\0").as_bytes()).unwrap_err();
    assert_eq!(e.code(), "hierarchy_invalid");
    assert!(e.to_string().contains("NUL"), "{e}");
}
