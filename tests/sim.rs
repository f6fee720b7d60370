//! The virtual phone, end to end through the `Device` trait: every task's reference
//! solution and checker, input semantics (hit-testing, z-order, keyboard, scrolling, back
//! order), hierarchy shape per app screen, determinism, and every fault type.

use droidpilot::device::sim::state::field;
use droidpilot::device::sim::*;
use droidpilot::device::{Device, DeviceError};
use droidpilot::domain::{AppRef, Key, PixelPoint};

fn phone() -> SimDevice {
    SimDevice::new(SimConfig::default()).unwrap()
}

fn p(x: i32, y: i32) -> PixelPoint {
    PixelPoint { x, y }
}

/// A parsed node: what a person sees on the screen, from the XML alone.
#[derive(Debug, Clone)]
#[allow(dead_code)]
struct Node {
    text: String,
    id: String,
    class: String,
    package: String,
    desc: String,
    clickable: bool,
    checked: bool,
    focused: bool,
    scrollable: bool,
    bounds: (i32, i32, i32, i32),
}

fn parse(xml: &str) -> Vec<Node> {
    let doc = roxmltree::Document::parse(xml).expect("hierarchy is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "hierarchy");
    assert_eq!(doc.root_element().attribute("rotation"), Some("0"));
    doc.descendants()
        .filter(|n| n.has_tag_name("node"))
        .map(|n| {
            let a = |k: &str| {
                n.attribute(k)
                    .unwrap_or_else(|| panic!("node lacks {k}"))
                    .to_string()
            };
            let b: Vec<i32> = a("bounds")
                .split(&[',', ']', '['][..])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            Node {
                text: a("text"),
                id: a("resource-id"),
                class: a("class"),
                package: a("package"),
                desc: a("content-desc"),
                clickable: a("clickable") == "true",
                checked: a("checked") == "true",
                focused: a("focused") == "true",
                scrollable: a("scrollable") == "true",
                bounds: (b[0], b[1], b[2], b[3]),
            }
        })
        .collect()
}

async fn nodes(d: &SimDevice) -> Vec<Node> {
    parse(&d.hierarchy().await.unwrap())
}

fn find<'a>(ns: &'a [Node], text: &str) -> Option<&'a Node> {
    ns.iter().find(|n| n.text == text || n.desc == text)
}

fn center(n: &Node) -> PixelPoint {
    p((n.bounds.0 + n.bounds.2) / 2, (n.bounds.1 + n.bounds.3) / 2)
}

/// Taps the element showing `text`, as a person would.
async fn tap_text(d: &SimDevice, text: &str) {
    let ns = nodes(d).await;
    let n = find(&ns, text).unwrap_or_else(|| {
        panic!(
            "`{text}` not on screen: {:?}",
            ns.iter().map(|n| &n.text).collect::<Vec<_>>()
        )
    });
    d.tap(center(n)).await.unwrap();
}

async fn tap_id(d: &SimDevice, id: &str) {
    let ns = nodes(d).await;
    let n = ns
        .iter()
        .find(|n| n.id == id)
        .unwrap_or_else(|| panic!("no {id}"));
    d.tap(center(n)).await.unwrap();
}

/// The phone lists its apps in the order of their names, and a launch of an app it does
/// not have names them all.
#[tokio::test]
async fn installed_apps_are_listed_in_name_order() {
    let d = phone();
    let apps: Vec<String> = d
        .installed_apps()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.package)
        .collect();
    assert_eq!(
        apps,
        [
            "com.android.chrome",
            "com.google.android.deskclock",
            "com.android.contacts",
            "com.google.android.apps.messaging",
            "com.google.android.keep",
            "com.android.settings",
            "com.droidpilot.shop",
        ]
    );
    let e = d
        .launch_app(&AppRef::Label("Maps".into()))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "app not found: `Maps` is not installed on the virtual phone; installed: \
         Chrome (com.android.chrome), Clock (com.google.android.deskclock), \
         Contacts (com.android.contacts), Messages (com.google.android.apps.messaging), \
         Notes (com.google.android.keep), Settings (com.android.settings), \
         Shop (com.droidpilot.shop)"
    );
}

#[tokio::test]
async fn every_reference_solution_passes_and_every_checker_rejects_near_misses() {
    let all = tasks();
    assert!(all.len() >= 30, "{} tasks", all.len());
    let mut ids: Vec<_> = all.iter().map(|t| t.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "task ids are unique");
    for &app in <AppId as strum::VariantArray>::VARIANTS {
        assert!(all.iter().any(|t| t.app == app), "{app:?} has tasks");
    }
    let mut failures = Vec::new();
    for t in &all {
        let d = phone();
        d.reset_to(t);
        assert!(!t.check(&d.state()), "{}: doing nothing must fail", t.id);
        let steps = t.reference();
        let counted = steps
            .iter()
            .filter(|a| !matches!(a, droidpilot::domain::Action::Wait { .. }))
            .count();
        if Difficulty::of_steps(counted) != t.difficulty {
            failures.push(format!("{}: {counted} steps but {:?}", t.id, t.difficulty));
        }
        run_reference(&d, t).await.unwrap();
        if !t.check(&d.state()) {
            failures.push(format!(
                "{}: reference failed; screen:\n{}",
                t.id,
                d.hierarchy_now()
            ));
            continue;
        }
        // A near miss: everything but the last step.
        let d2 = phone();
        d2.reset_to(t);
        tasks::run_actions(&d2, &steps[..steps.len() - 1])
            .await
            .unwrap();
        if t.check(&d2.state()) {
            failures.push(format!(
                "{}: checker accepted the sequence without its last step",
                t.id
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

async fn launched(app: &str) -> SimDevice {
    let d = phone();
    d.launch_app(&AppRef::Label(app.into())).await.unwrap();
    d.advance_clock(1_000);
    d
}

fn ids_are_qualified(ns: &[Node]) {
    for n in ns {
        if !n.id.is_empty() {
            let (pkg, name) =
                n.id.split_once(":id/")
                    .unwrap_or_else(|| panic!("unqualified id {}", n.id));
            assert!(!pkg.is_empty() && !name.is_empty(), "{}", n.id);
        }
        assert!(
            n.class.starts_with("android.") || n.class.starts_with("androidx."),
            "{}",
            n.class
        );
    }
}

#[tokio::test]
async fn each_app_screen_reads_like_a_real_dump() {
    // (label, package, texts a person sees)
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "Settings",
            "com.android.settings",
            &[
                "Settings",
                "Wi-Fi",
                "Bluetooth",
                "Airplane mode",
                "About phone",
            ],
        ),
        (
            "Contacts",
            "com.android.contacts",
            &["Contacts", "Alice Martin", "Bob Smith", "Search contacts"],
        ),
        (
            "Clock",
            "com.google.android.deskclock",
            &["Alarm", "6:00 AM", "8:15 AM", "Add alarm"],
        ),
        (
            "Messages",
            "com.google.android.apps.messaging",
            &["Messages", "Alice Martin", "Where are you?", "Start chat"],
        ),
        (
            "Notes",
            "com.google.android.keep",
            &["Keep Notes", "Groceries", "Milk, eggs, bread"],
        ),
        (
            "Chrome",
            "com.android.chrome",
            &["Search or type web address", "Google"],
        ),
    ];
    for (label, pkg, texts) in cases {
        let d = launched(label).await;
        let xml = d.hierarchy().await.unwrap();
        assert!(xml.starts_with("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\""), "{xml:.300}");
        let ns = parse(&xml);
        assert_eq!(ns[0].package, *pkg);
        assert_eq!(ns[0].bounds, (0, 0, 1080, 2400));
        ids_are_qualified(&ns);
        for t in *texts {
            assert!(find(&ns, t).is_some(), "{label}: `{t}` not shown");
        }
        let clock = ns
            .iter()
            .find(|n| n.id == "com.android.systemui:id/clock")
            .expect("status bar clock");
        assert!(clock.text.starts_with("9:4"), "{}", clock.text);
        assert_eq!(d.current_app().await.unwrap().package, *pkg);
    }
    // Settings switches carry real flags.
    let d = launched("Settings").await;
    let ns = nodes(&d).await;
    let switches: Vec<_> = ns
        .iter()
        .filter(|n| n.id == "com.android.settings:id/switch_widget")
        .collect();
    assert_eq!(switches.len(), 3);
    assert!(
        switches[0].checked && !switches[1].checked,
        "Wi-Fi on, Bluetooth off"
    );
    assert_eq!(switches[0].class, "android.widget.Switch");
    // The launcher shows icons by label.
    let d = phone();
    let ns = nodes(&d).await;
    assert_eq!(ns[0].package, "com.google.android.apps.nexuslauncher");
    for l in [
        "Messages", "Contacts", "Chrome", "Clock", "Settings", "All apps",
    ] {
        assert!(find(&ns, l).is_some_and(|n| n.clickable), "{l}");
    }
}

#[tokio::test]
async fn browser_results_are_webview_nodes_without_ids() {
    let d = launched("Chrome").await;
    tap_text(&d, "Search or type web address").await;
    d.type_text("rust").await.unwrap();
    d.key(Key::Enter).await.unwrap();
    let loading = nodes(&d).await;
    assert!(
        find(&loading, "Rust (programming language) - Wikipedia").is_none(),
        "results load after a delay"
    );
    assert!(
        loading
            .iter()
            .any(|n| n.class == "android.widget.ProgressBar")
    );
    d.advance_clock(2_000);
    let ns = nodes(&d).await;
    let link = find(&ns, "Rust (programming language) - Wikipedia").expect("result shown");
    assert_eq!(link.class, "android.view.View");
    assert_eq!(link.id, "");
    assert!(ns.iter().any(|n| n.class == "android.webkit.WebView"));
    tap_text(&d, "Rust (programming language) - Wikipedia").await;
    assert_eq!(
        d.state().browser.history.last().unwrap(),
        "https://en.wikipedia.org/wiki/Rust_(programming_language)"
    );
}

#[tokio::test]
async fn shop_interrupts_with_permission_then_promo_and_checkout_is_secure() {
    let d = launched("Shop").await;
    let ns = nodes(&d).await;
    let allow = find(&ns, "Allow").expect("permission dialog");
    assert_eq!(
        allow.id,
        "com.android.permissioncontroller:id/permission_allow_button"
    );
    assert_eq!(allow.package, "com.android.permissioncontroller");
    // The dialog blocks the catalogue under it: a tap where a product is does nothing.
    d.tap(p(540, 400)).await.unwrap();
    assert!(d.state().dialog.is_some());
    assert_eq!(d.state().stacks[&AppId::Shop].len(), 1);
    d.tap(center(allow)).await.unwrap();
    assert_eq!(d.state().shop.notifications_allowed, Some(true));
    d.advance_clock(2_500);
    let ns = nodes(&d).await;
    assert!(find(&ns, "No thanks").is_some(), "the promo interrupts");
    tap_text(&d, "No thanks").await;
    tap_text(&d, "Wireless Earbuds").await;
    tap_text(&d, "Add to cart").await;
    tap_text(&d, "Cart, 1 items").await;
    tap_text(&d, "Checkout").await;
    assert!(d.screen().secure(), "checkout is FLAG_SECURE");
    let shot = d.screenshot().await.unwrap().rgba().unwrap();
    assert!(
        shot.chunks(4).any(|p| p[0] > 0),
        "secure screens render normally without the fault"
    );
    tap_text(&d, "Place order").await;
    let ns = nodes(&d).await;
    assert!(find(&ns, "Pay $49.99 with Visa •••• 4242?").is_some());
    tap_text(&d, "Pay now").await;
    assert_eq!(d.state().shop.orders.len(), 1);
    assert!(find(&nodes(&d).await, "Thank you!").is_some());
}

#[tokio::test]
async fn keyboard_is_a_separate_window_that_covers_content_and_types() {
    let d = launched("Contacts").await;
    tap_text(&d, "Create contact").await;
    tap_id(&d, "com.android.contacts:id/name_edit").await;
    let xml = d.hierarchy().await.unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let tops: Vec<_> = doc
        .root_element()
        .children()
        .filter_map(|n| n.attribute("package"))
        .collect();
    assert!(
        tops.contains(&"com.google.android.inputmethod.latin"),
        "{tops:?}"
    );
    let ns = parse(&xml);
    let name = ns
        .iter()
        .find(|n| n.id == "com.android.contacts:id/name_edit")
        .unwrap();
    assert!(name.focused);
    // Tapping where the keyboard is hits a key, not the app below.
    let key_a = ns
        .iter()
        .find(|n| n.desc == "a" && n.package == "com.google.android.inputmethod.latin")
        .unwrap();
    d.tap(center(key_a)).await.unwrap();
    d.tap(center(key_a)).await.unwrap();
    d.type_text("da").await.unwrap();
    assert_eq!(d.state().fields[field::CONTACT_NAME], "aada");
    d.clear_text().await.unwrap();
    assert_eq!(d.state().fields[field::CONTACT_NAME], "");
}

#[tokio::test]
async fn back_closes_keyboard_then_dialog_then_screen() {
    let d = launched("Contacts").await;
    tap_text(&d, "Create contact").await;
    tap_id(&d, "com.android.contacts:id/name_edit").await;
    d.type_text("Zed").await.unwrap();
    assert!(d.state().keyboard);
    d.key(Key::Back).await.unwrap();
    assert!(!d.state().keyboard, "first back: keyboard");
    assert_eq!(d.state().page(), Some(&Page::ContactEdit { id: None }));
    d.key(Key::Back).await.unwrap();
    assert_eq!(
        d.state().dialog.as_ref().map(|x| x.title.as_str()),
        Some("Discard changes?")
    );
    d.key(Key::Back).await.unwrap();
    assert!(d.state().dialog.is_none(), "second back: the dialog");
    assert_eq!(d.state().page(), Some(&Page::ContactEdit { id: None }));
    d.key(Key::Back).await.unwrap();
    tap_text(&d, "Discard").await;
    assert_eq!(
        d.state().page(),
        Some(&Page::ContactsList),
        "then the screen"
    );
    d.key(Key::Back).await.unwrap();
    assert_eq!(d.state().fg, Fg::Home);
}

#[tokio::test]
async fn swipes_scroll_lists_by_the_swiped_distance() {
    let d = launched("Contacts").await;
    let before = nodes(&d).await;
    let carol = find(&before, "Carol White").unwrap().bounds;
    d.swipe(p(540, 2000), p(540, 1500), 300).await.unwrap();
    let after = nodes(&d).await;
    assert_eq!(find(&after, "Carol White").unwrap().bounds.1, carol.1 - 500);
    assert!(
        find(&after, "Ada Byron").is_none(),
        "scrolled off rows leave the dump"
    );
    let list = after.iter().find(|n| n.scrollable).unwrap();
    assert_eq!(list.class, "androidx.recyclerview.widget.RecyclerView");
    // Lists stop at their ends.
    d.swipe(p(540, 600), p(540, 2300), 300).await.unwrap();
    d.swipe(p(540, 600), p(540, 2300), 300).await.unwrap();
    assert_eq!(find(&nodes(&d).await, "Ada Byron").unwrap().bounds.1, 422);
}

#[tokio::test]
async fn pickers_step_by_distance_and_long_press_opens_menus() {
    let d = launched("Clock").await;
    tap_text(&d, "Add alarm").await;
    // Drag the minute wheel up by three rows (170 px each).
    d.swipe(p(770, 900), p(770, 900 - 3 * 170), 300)
        .await
        .unwrap();
    assert_eq!(d.state().fields[field::ALARM_MINUTE], "03");
    d.key(Key::Back).await.unwrap();
    let ns = nodes(&d).await;
    let row = find(&ns, "6:00 AM").unwrap();
    d.long_press(center(row), 800).await.unwrap();
    let ns = nodes(&d).await;
    assert!(find(&ns, "Delete").is_some());
    tap_text(&d, "Delete").await;
    assert_eq!(d.state().alarms.len(), 1);
    assert!(
        find(&nodes(&d).await, "Alarm deleted").is_some(),
        "a toast confirms"
    );
    d.advance_clock(3_000);
    assert!(
        find(&nodes(&d).await, "Alarm deleted").is_none(),
        "and goes away"
    );
}

#[tokio::test]
async fn unicode_text_is_kept_exactly() {
    let d = launched("Notes").await;
    tap_text(&d, "New text note").await;
    let text = "日本語 ✓ 👩‍👩‍👧 مرحبا <&> \"q\"";
    d.type_text(text).await.unwrap();
    assert_eq!(d.state().fields[field::NOTE_BODY], text);
    let ns = nodes(&d).await;
    assert!(
        find(&ns, text).is_some(),
        "the hierarchy carries the exact text"
    );
    d.key(Key::Back).await.unwrap();
    d.key(Key::Back).await.unwrap();
    assert_eq!(d.state().notes[0].body, text);
}

#[tokio::test]
async fn apps_keep_state_across_switches_and_recents_lists_them() {
    let d = launched("Contacts").await;
    tap_text(&d, "Search contacts").await;
    d.type_text("bo").await.unwrap();
    d.key(Key::Home).await.unwrap();
    d.launch_app(&AppRef::Package("com.android.settings".into()))
        .await
        .unwrap();
    d.key(Key::Recents).await.unwrap();
    let ns = nodes(&d).await;
    let cards: Vec<_> = ns
        .iter()
        .filter(|n| n.id.ends_with(":id/snapshot"))
        .map(|n| n.desc.clone())
        .collect();
    assert_eq!(cards, ["Settings", "Contacts"]);
    tap_text(&d, "Contacts").await;
    let ns = nodes(&d).await;
    assert!(find(&ns, "bo").is_some(), "search text kept");
    assert!(find(&ns, "Bob Smith").is_some() && find(&ns, "Alice Martin").is_none());
}

#[tokio::test]
async fn launcher_drawer_opens_by_swipe_and_unknown_apps_get_a_hint() {
    let d = phone();
    d.swipe(p(540, 2000), p(540, 800), 300).await.unwrap();
    assert_eq!(d.state().fg, Fg::Drawer);
    tap_text(&d, "Shop").await;
    assert_eq!(d.state().fg, Fg::App(AppId::Shop));
    let e = d
        .launch_app(&AppRef::Label("Calculator".into()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "app_not_found");
    assert!(
        e.to_string().contains("Settings (com.android.settings)"),
        "{e}"
    );
    assert_eq!(
        d.open_url("ftp://x").await.unwrap_err().code(),
        "invalid_input"
    );
    d.open_url("https://example.org/").await.unwrap();
    assert_eq!(d.current_app().await.unwrap().package, "com.android.chrome");
}

#[tokio::test]
async fn power_locks_and_a_swipe_unlocks() {
    let d = phone();
    d.key(Key::Power).await.unwrap();
    let s = d.screen_state().await.unwrap();
    assert!(!s.awake && s.locked);
    let shot = d.screenshot().await.unwrap().rgba().unwrap();
    assert!(
        shot.chunks(4).all(|p| p[..3] == [0, 0, 0]),
        "a sleeping screen is black"
    );
    d.key(Key::Power).await.unwrap();
    assert!(find(&nodes(&d).await, "Swipe up to unlock").is_some());
    d.swipe(p(540, 2000), p(540, 800), 300).await.unwrap();
    assert!(!d.screen_state().await.unwrap().locked);
}

#[tokio::test]
async fn same_commands_give_same_bytes() {
    let cfg = SimConfig {
        seed: 7,
        faults: SimFaults {
            popup_rate: 0.3,
            dropped_tap_rate: 0.2,
            hierarchy_error_rate: 0.2,
            ..Default::default()
        },
        ..Default::default()
    };
    let run = || async {
        let d = SimDevice::new(cfg.clone()).unwrap();
        let mut log = Vec::new();
        for t in tasks().iter().take(12) {
            let _ = run_reference(&d, t).await;
            log.push(format!("{:?}", d.hierarchy().await.map(|x| x.len())));
        }
        let shot = d.screenshot().await.unwrap().rgba().unwrap();
        (log, d.state(), shot)
    };
    let (a, b) = (run().await, run().await);
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    assert!(a.2 == b.2, "screenshots are byte-identical");
    let other = SimDevice::new(SimConfig {
        seed: 8,
        ..cfg.clone()
    })
    .unwrap();
    let mut log = Vec::new();
    for t in tasks().iter().take(12) {
        let _ = run_reference(&other, t).await;
        log.push(format!("{:?}", other.hierarchy().await.map(|x| x.len())));
    }
    assert_ne!(log, a.0, "another seed, another run");
}

#[tokio::test]
async fn screenshot_shows_what_the_hierarchy_describes() {
    let d = launched("Settings").await;
    let ns = nodes(&d).await;
    let bt = ns
        .iter()
        .filter(|n| n.id == "com.android.settings:id/switch_widget")
        .nth(1)
        .unwrap()
        .clone();
    let px = |shot: &[u8], x: i32, y: i32| {
        let i = ((y * 1080 + x) * 4) as usize;
        [shot[i], shot[i + 1], shot[i + 2]]
    };
    let off = d.screenshot().await.unwrap().rgba().unwrap();
    d.tap(center(&bt)).await.unwrap();
    let on = d.screenshot().await.unwrap().rgba().unwrap();
    let c = center(&bt);
    let (l, r) = (bt.bounds.0 + 30, bt.bounds.2 - 30);
    assert_ne!(
        px(&off, r, c.y),
        px(&on, r, c.y),
        "the switch knob moved right"
    );
    assert_ne!(px(&off, l, c.y), px(&on, l, c.y));
    // Text is painted where the hierarchy puts it: the title row is not blank.
    let title = find(&ns, "Bluetooth").unwrap();
    let inked = (title.bounds.1..title.bounds.3)
        .any(|y| (title.bounds.0..title.bounds.0 + 200).any(|x| px(&on, x, y)[0] < 128));
    assert!(inked);
    // A dialog dims what is under it.
    let d2 = launched("Shop").await;
    let shot = d2.screenshot().await.unwrap().rgba().unwrap();
    assert!(px(&shot, 5, 2390)[0] < 140, "dimmed background");
}

fn faulty(f: SimFaults) -> SimDevice {
    SimDevice::new(SimConfig {
        seed: 42,
        faults: f,
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn fault_hierarchy_failures() {
    let d = faulty(SimFaults {
        hierarchy_error_rate: 1.0,
        ..Default::default()
    });
    match d.hierarchy().await {
        Err(DeviceError::HierarchyUnavailable(m)) => {
            assert_eq!(m, "ERROR: could not get idle state.")
        }
        other => panic!("{other:?}"),
    }
    assert!(d.screenshot().await.is_ok(), "screenshots still work");
    let d = faulty(SimFaults {
        null_root_rate: 1.0,
        ..Default::default()
    });
    match d.hierarchy().await {
        Err(DeviceError::HierarchyUnavailable(m)) => assert!(m.contains("null root"), "{m}"),
        other => panic!("{other:?}"),
    }
    // At a partial rate some dumps fail and some succeed.
    let d = faulty(SimFaults {
        hierarchy_error_rate: 0.5,
        ..Default::default()
    });
    let mut ok = 0;
    for _ in 0..40 {
        ok += d.hierarchy().await.is_ok() as u32;
    }
    assert!((5..35).contains(&ok), "{ok}");
}

#[tokio::test]
async fn fault_slow_dumps_and_screenshots() {
    // The fault sleeps for real (callers' timeouts must see it); a lower bound only.
    let d = faulty(SimFaults {
        slow_dump_rate: 1.0,
        slow_dump_ms: 300,
        slow_screenshot_rate: 1.0,
        slow_screenshot_ms: 200,
        ..Default::default()
    });
    let t0 = std::time::Instant::now();
    d.hierarchy().await.unwrap();
    assert!(t0.elapsed() >= std::time::Duration::from_millis(300));
    let t1 = std::time::Instant::now();
    d.screenshot().await.unwrap();
    assert!(t1.elapsed() >= std::time::Duration::from_millis(200));
    let timed = tokio::time::timeout(std::time::Duration::from_millis(50), d.hierarchy()).await;
    assert!(timed.is_err(), "a caller's timeout fires on a slow dump");
}

#[tokio::test]
async fn fault_dropped_taps_and_popups() {
    let d = faulty(SimFaults {
        dropped_tap_rate: 1.0,
        ..Default::default()
    });
    d.launch_app(&AppRef::Label("Settings".into()))
        .await
        .unwrap();
    tap_text(&d, "Bluetooth").await;
    assert!(!d.state().settings.bluetooth, "the tap was lost");

    let d = faulty(SimFaults {
        popup_rate: 1.0,
        ..Default::default()
    });
    d.launch_app(&AppRef::Label("Settings".into()))
        .await
        .unwrap();
    assert!(d.state().dialog.is_none());
    d.tap(p(540, 1300)).await.unwrap();
    let dialog = d.state().dialog.expect("a pop-up interrupted");
    assert!(!dialog.buttons.is_empty());
    // It blocks the app until dismissed.
    d.tap(p(540, 552)).await.unwrap();
    assert!(!d.state().settings.bluetooth);
    d.set_faults(SimFaults::default()).unwrap();
    d.key(Key::Back).await.unwrap();
    assert!(d.state().dialog.is_none(), "back dismisses it");
    d.tap(p(540, 552)).await.unwrap();
    assert!(d.state().settings.bluetooth);
}

#[tokio::test]
async fn fault_renamed_ids_and_reordered_lists() {
    let d = faulty(SimFaults {
        renamed_ids: true,
        ..Default::default()
    });
    d.launch_app(&AppRef::Label("Settings".into()))
        .await
        .unwrap();
    let xml = d.hierarchy().await.unwrap();
    assert!(xml.contains("com.android.settings:id/switchWidget"));
    assert!(!xml.contains("switch_widget"));
    assert!(
        xml.contains("android:id/title"),
        "framework ids never change"
    );

    let names = |d: &SimDevice| {
        let d = d.hierarchy_now();
        parse(&d)
            .into_iter()
            .filter(|n| n.id.ends_with("cliv_name_textview"))
            .map(|n| n.text)
            .collect::<Vec<_>>()
    };
    let plain = launched("Contacts").await;
    let shuffled = faulty(SimFaults {
        reorder_lists: true,
        ..Default::default()
    });
    shuffled
        .launch_app(&AppRef::Label("Contacts".into()))
        .await
        .unwrap();
    let again = faulty(SimFaults {
        reorder_lists: true,
        ..Default::default()
    });
    again
        .launch_app(&AppRef::Label("Contacts".into()))
        .await
        .unwrap();
    assert_eq!(names(&plain)[..2], ["Ada Byron", "Alice Martin"]);
    assert_ne!(names(&plain), names(&shuffled));
    assert_eq!(names(&shuffled), names(&again), "same seed, same order");
}

#[tokio::test]
async fn fault_delayed_elements() {
    let d = faulty(SimFaults {
        delayed_elements_ms: 5_000,
        ..Default::default()
    });
    d.set_state({
        let mut s = d.state();
        s.shop.notifications_allowed = Some(true);
        s.shop.promo_shown = true;
        s
    });
    d.launch_app(&AppRef::Label("Shop".into())).await.unwrap();
    d.advance_clock(1_000);
    assert!(
        find(&nodes(&d).await, "Wireless Earbuds").is_none(),
        "still loading"
    );
    d.advance_clock(5_000);
    assert!(find(&nodes(&d).await, "Wireless Earbuds").is_some());
}

#[tokio::test]
async fn fault_disconnect_after_n_commands_and_reconnect() {
    let d = faulty(SimFaults {
        disconnect_after: Some(3),
        ..Default::default()
    });
    for _ in 0..3 {
        d.info().await.unwrap();
    }
    let e = d.tap(p(1, 1)).await.unwrap_err();
    assert!(e.is_disconnect());
    assert!(
        d.hierarchy().await.unwrap_err().is_disconnect(),
        "stays down"
    );
    assert!(d.health().await.is_err());
    d.reconnect().await.unwrap();
    d.health().await.unwrap();
    d.hierarchy().await.unwrap();
}

#[tokio::test]
async fn fault_black_screenshots_on_secure_screens() {
    let d = faulty(SimFaults {
        secure_black: true,
        ..Default::default()
    });
    let mut s = d.state();
    s.shop.notifications_allowed = Some(true);
    s.shop.promo_shown = true;
    s.shop.cart = vec![(1, 1)];
    d.set_state(s);
    d.launch_app(&AppRef::Label("Shop".into())).await.unwrap();
    let catalogue = d.screenshot().await.unwrap().rgba().unwrap();
    assert!(catalogue.chunks(4).any(|p| p[0] > 0));
    d.apply(Cmd::Push {
        page: Page::Checkout,
    });
    let shot = d.screenshot().await.unwrap();
    let px = shot.rgba().unwrap();
    assert!(
        px.chunks(4).all(|p| p == [0, 0, 0, 255]),
        "secure screen is black"
    );
    assert!(
        find(&nodes(&d).await, "Place order").is_some(),
        "the hierarchy still works"
    );
}

#[tokio::test]
async fn settings_accounts_has_a_real_password_field_that_never_shows_its_text() {
    let d = phone();
    d.launch_app(&AppRef::Package("com.android.settings".into()))
        .await
        .unwrap();
    tap_text(&d, "Accounts").await;
    let xml = d.hierarchy().await.unwrap();
    let field_xml = xml
        .split("<node ")
        .find(|n| n.contains("com.android.settings:id/password\""))
        .expect("a password field");
    assert!(field_xml.contains("password=\"true\""), "{field_xml}");
    assert!(field_xml.contains("class=\"android.widget.EditText\""));

    // A wrong password is refused and the field emptied.
    tap_id(&d, "com.android.settings:id/email").await;
    d.type_text("alex@example.com").await.unwrap();
    tap_id(&d, "com.android.settings:id/password").await;
    d.type_text("hunter2-wrong").await.unwrap();
    let xml = d.hierarchy().await.unwrap();
    assert!(
        !xml.contains("hunter2"),
        "the typed password is not in the dump"
    );
    assert!(
        xml.contains(&"•".repeat("hunter2-wrong".len())),
        "shown as bullets, as Android does"
    );
    tap_text(&d, "Sign in").await;
    assert_eq!(d.state().settings.account, None);
    assert_eq!(d.state().field(field::ACCOUNT_PASSWORD), "");
    assert!(find(&nodes(&d).await, "Wrong e-mail or password").is_some());

    // The right one signs in.
    tap_id(&d, "com.android.settings:id/password").await;
    d.type_text("correct-horse-42").await.unwrap();
    assert!(!d.hierarchy().await.unwrap().contains("correct-horse"));
    tap_text(&d, "Sign in").await;
    assert_eq!(
        d.state().settings.account.as_deref(),
        Some("alex@example.com")
    );
    assert!(find(&nodes(&d).await, "Signed in as alex@example.com").is_some());
}

#[tokio::test]
async fn snapshot_restore_and_reset() {
    let d = launched("Notes").await;
    let snap = d.snapshot();
    let json = serde_json::to_string(&snap).unwrap();
    tap_text(&d, "New text note").await;
    d.type_text("scratch").await.unwrap();
    d.key(Key::Back).await.unwrap();
    d.key(Key::Back).await.unwrap();
    assert_eq!(d.state().notes.len(), 3);
    let before = d.hierarchy_now();
    d.restore(serde_json::from_str(&json).unwrap());
    assert_eq!(d.state(), snap.state);
    assert_ne!(d.hierarchy_now(), before);
    let t = task("clock.alarm_0730").unwrap();
    d.reset_to(&t);
    assert_eq!(d.state(), t.initial_state());
    assert_eq!(d.state().fg, Fg::Home);
}

#[tokio::test]
async fn config_deserializes_and_refuses_mistakes() {
    let cfg: SimConfig = serde_json::from_value(serde_json::json!({
        "serial": "sim-2", "width": 720, "height": 1600, "seed": 9,
        "faults": {"dropped_tap_rate": 0.1, "disconnect_after": 100},
        "task": "settings.bluetooth_on"
    }))
    .unwrap();
    let d = SimDevice::new(cfg).unwrap();
    let info = d.info().await.unwrap();
    assert_eq!(
        (
            info.serial.as_str(),
            info.screen.width,
            info.screen.height,
            info.density
        ),
        ("sim-2", 720, 1600, 420)
    );
    let shot = d.screenshot().await.unwrap();
    assert_eq!(shot.rgba().unwrap().len(), 720 * 1600 * 4);
    assert!(shot.png().unwrap().starts_with(b"\x89PNG"));
    parse(&d.hierarchy().await.unwrap());

    assert!(
        serde_json::from_value::<SimConfig>(serde_json::json!({"faults": {"droped_tap_rate": 1}}))
            .is_err()
    );
    let bad = SimDevice::new(SimConfig {
        task: Some("nope".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        bad.to_string().contains("settings.bluetooth_on"),
        "lists known tasks: {bad}"
    );
    let bad = SimDevice::new(SimConfig {
        faults: SimFaults {
            popup_rate: 2.0,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    assert!(bad.to_string().contains("popup_rate"));
}

/// Every screen the virtual phone shows on the way through every task goes through the
/// real screen parser, and what the model reads holds what a person sees: every visible
/// label on screen appears in the compact text or in its element's label, unless that
/// label was visibly clipped (ends with `…`) at the label length cap.
#[tokio::test]
async fn every_screen_parses_and_its_representation_holds_what_a_person_sees() {
    use droidpilot::screen::{ReprOptions, Screen};
    let mut screens = 0;
    for t in droidpilot::device::sim::tasks::tasks() {
        let phone = SimDevice::new(SimConfig::default()).unwrap();
        phone.reset_to(&t);
        let mut actions = t.reference();
        actions.insert(0, droidpilot::domain::Action::Wait { ms: 0 });
        for (i, a) in actions.iter().enumerate() {
            droidpilot::device::sim::tasks::run_actions(&phone, std::slice::from_ref(a))
                .await
                .unwrap();
            let xml = phone.hierarchy().await.unwrap();
            let screen = Screen::from_xml(&xml, &ReprOptions::default())
                .unwrap_or_else(|e| panic!("{} step {i}: {e}", t.id));
            let repr = screen.representation(&ReprOptions::default());
            assert!(
                !repr.actionable_elements.is_empty(),
                "{} step {i}: nothing to act on",
                t.id
            );
            for n in &screen.tree.nodes {
                let text = n.text.trim();
                let visible = n.visible
                    && !n.bounds.is_empty()
                    && n.bounds.top >= 0
                    && n.bounds.bottom <= 2400;
                if !visible
                    || text.chars().count() < 2
                    || n.password
                    || n.package.contains("systemui")
                {
                    continue;
                }
                // Labels show a multi-line text on one line (a note's lines joined by spaces).
                let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
                let probe: String = one_line.chars().take(12).collect();
                // Labels merge child text and are capped (MAX_LABEL_CHARS) to bound tokens:
                // text may be missing only inside an element whose label says it was clipped.
                let in_labels = repr
                    .actionable_elements
                    .iter()
                    .any(|e| e.text.contains(probe.trim()));
                let inside_clipped = repr.actionable_elements.iter().any(|e| {
                    e.text.ends_with('…')
                        && e.bounds.intersect(&n.bounds) == n.bounds
                        && !n.bounds.is_empty()
                });
                assert!(
                    repr.elements.contains(probe.trim()) || in_labels || inside_clipped,
                    "{} step {i}: `{text}` is on screen but not in what the model reads:\n{}",
                    t.id,
                    repr.elements
                );
            }
            screens += 1;
        }
    }
    assert!(screens > 200, "{screens} screens checked");
}

/// `droidpilot sim …` as a user runs it: output, stderr and exit status.
fn sim_cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_droidpilot"))
        .arg("sim")
        .args(args)
        .output()
        .expect("the droidpilot binary runs")
}

#[test]
fn sim_cli_with_an_unknown_task_lists_the_valid_ones() {
    let out = sim_cli(&["--task", "bogus", "--port", "0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown sim task `bogus`"), "{err}");
    for t in tasks() {
        assert!(err.contains(t.id), "`{}` is listed: {err}", t.id);
    }
    assert!(err.contains("--list-tasks"), "{err}");
    assert!(
        !err.contains("action's arguments"),
        "no hint about actions: {err}"
    );
    // A typo gets a suggestion.
    let err =
        String::from_utf8_lossy(&sim_cli(&["--task", "settings.bluetoth_on"]).stderr).into_owned();
    assert!(
        err.contains("did you mean `settings.bluetooth_on`?"),
        "{err}"
    );
}

#[test]
fn sim_cli_lists_tasks_with_app_difficulty_and_instruction() {
    let out = sim_cli(&["--list-tasks"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        tasks().len() + 1,
        "a header, then one line a task"
    );
    for t in tasks() {
        let line = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(t.id))
            .unwrap_or_else(|| panic!("`{}` is listed:\n{text}", t.id));
        assert!(line.contains(t.app.label()), "{line}");
        assert!(line.contains(t.instruction), "{line}");
    }
    assert!(text.contains("easy") && text.contains("hard"), "{text}");
}

#[tokio::test]
async fn realistic_pacing_spends_each_commands_virtual_duration_in_real_time() {
    let d = SimDevice::new(SimConfig {
        pacing: Pacing::Realistic,
        ..SimConfig::default()
    })
    .unwrap();
    let start = std::time::Instant::now();
    d.tap(p(540, 1200)).await.unwrap();
    d.wait(600).await;
    let took = start.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(TAP_MS + 600),
        "a tap and a 600 ms wait took only {took:?}"
    );
    // Pacing changes time, not behaviour: the clock moved exactly as unpaced.
    assert_eq!(d.state().clock_ms, phone_after_tap_and_wait().await);
}

async fn phone_after_tap_and_wait() -> u64 {
    let d = phone();
    d.tap(p(540, 1200)).await.unwrap();
    d.wait(600).await;
    d.state().clock_ms
}

#[test]
fn pacing_is_configured_per_phone_and_refuses_absurd_values() {
    let cfg: SimConfig =
        serde_json::from_str(r#"{"serial": "s", "pace_ms": 500, "pacing": "realistic"}"#).unwrap();
    assert_eq!((cfg.pace_ms, cfg.pacing), (500, Pacing::Realistic));
    assert_eq!(SimConfig::default().pace_ms, 0, "off by default");
    assert_eq!(SimConfig::default().pacing, Pacing::Virtual);
    assert!(serde_json::from_str::<SimConfig>(r#"{"pacing": "fast"}"#).is_err());
    let e = SimDevice::new(SimConfig {
        pace_ms: 3_600_000,
        ..SimConfig::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("pace_ms"), "{e}");
    // And on the command line.
    let out = sim_cli(&["--pace-ms", "3600000", "--port", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pace_ms"));
}

/// The virtual phone's guide states how many scored tasks the phone ships; the number must
/// stay true.
#[test]
fn the_guide_counts_the_scored_tasks_truly() {
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/virtual-phone.md"
    ))
    .expect("docs/virtual-phone.md is readable");
    let stated: usize = guide
        .split("It ships ")
        .nth(1)
        .and_then(|rest| rest.split(" scored tasks").next())
        .and_then(|n| n.parse().ok())
        .expect("docs/virtual-phone.md says \"It ships N scored tasks\"");
    assert_eq!(stated, droidpilot::device::sim::tasks::tasks().len());
}
