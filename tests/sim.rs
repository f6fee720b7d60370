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

#[tokio::test]
async fn every_reference_solution_passes_and_every_checker_rejects_near_misses() {
    let all = tasks();
    assert!(all.len() >= 30, "{} tasks", all.len());
    let mut ids: Vec<_> = all.iter().map(|t| t.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "task ids are unique");
    for app in AppId::ALL {
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
