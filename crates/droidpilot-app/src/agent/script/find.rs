//! Finding a script step's target on the current screen: the primary selector, then the
//! alternatives in order, then (only when the script allows it) a bounded fuzzy match;
//! and recognising the known interruptions that replay dismisses by rule.
//!
//! The fuzzy match accepts exactly one candidate, never a guess between several:
//! - a renamed id: the same id once case and `_` are ignored (`switch_widget` →
//!   `switchWidget`, what an app update does), or with a version suffix (`title` →
//!   `title_v2`);
//! - the same text or description elsewhere (a list item that moved, a new id);
//! - a changed label or description that still starts with the recorded one (`Send` →
//!   `Send message`);
//! - for `anchor >> target`, the anchor as recorded and the target by the tests above,
//!   in the group nearest the anchor (a row's renamed `#delete`).
//!
//! An `expect` is checked the same way (`expected`), so a step whose action worked is
//! not failed because the element it expected was renamed.
//!
//! While a dialog is on top (`has_modal`), only the dialog's window can be touched: an
//! element behind it counts as absent, so the dialog is dismissed first instead of a tap
//! that the dialog would swallow.

use crate::domain::Fallback;
use crate::screen::resolve::visible_chain;
use crate::screen::{Screen, Selector, SelectorIndex, UiNode, UiTree};

/// A target found on the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub selector: String,
    pub node: usize,
    pub fallback: Fallback,
}

/// The root (window) a node belongs to.
fn root_of(tree: &UiTree, mut n: usize) -> usize {
    while let Some(p) = tree.nodes[n].parent {
        n = p;
    }
    n
}

/// The window of the dialog on top, when there is one and it can be told apart: the last
/// window holding the framework's dialog ids, or a permission controller's window.
fn modal_root(screen: &Screen) -> Option<usize> {
    if !screen.has_modal {
        return None;
    }
    let tree = &screen.tree;
    tree.roots.iter().rev().copied().find(|&r| {
        let pkg = &tree.nodes[r].package;
        if is_keyboard(pkg) {
            return false;
        }
        pkg.contains("permissioncontroller")
            || pkg.contains("packageinstaller")
            || (0..tree.nodes.len()).any(|n| {
                let node = &tree.nodes[n];
                ["alertTitle", "parentPanel", "buttonPanel"].contains(&node.short_id())
                    && root_of(tree, n) == r
            })
    })
}

/// Whether a person could touch node `n`: on screen, not behind a dialog, and not under
/// the soft keyboard (a tap there types a key; the keyboard is dismissed by rule first).
fn reachable(screen: &Screen, modal: Option<usize>, n: usize) -> bool {
    visible_chain(&screen.tree, n, &screen.elements.screen)
        && modal.is_none_or(|r| root_of(&screen.tree, n) == r)
        && !under_keyboard(&screen.tree, n)
}

/// Whether the centre of node `n` lies inside a keyboard window drawn above its own
/// (windows come bottom to top; a system pop-up over the keyboard is not under it).
fn under_keyboard(tree: &UiTree, n: usize) -> bool {
    let c = tree.nodes[n].bounds.center();
    let own = root_of(tree, n);
    let mut above = tree.roots.iter().skip_while(|&&r| r != own).skip(1);
    above.any(|&r| is_keyboard(&tree.nodes[r].package) && tree.nodes[r].bounds.contains(c))
}

fn is_keyboard(package: &str) -> bool {
    package.contains("inputmethod") || package.contains("keyboard")
}

/// The unique visible node `sel` matches.
pub fn unique(screen: &Screen, sel: &str) -> Option<usize> {
    let parsed = Selector::parse(sel).ok()?;
    let modal = modal_root(screen);
    let on: Vec<usize> = parsed
        .find(&screen.tree)
        .nodes
        .into_iter()
        .filter(|&n| reachable(screen, modal, n))
        .collect();
    match on.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// Whether any visible node matches `sel` (for waits and `expect`).
pub fn visible(screen: &Screen, sel: &str) -> bool {
    let Ok(parsed) = Selector::parse(sel) else {
        return false;
    };
    let modal = modal_root(screen);
    parsed
        .find(&screen.tree)
        .nodes
        .into_iter()
        .any(|n| reachable(screen, modal, n))
}

/// Primary, then alternatives (each must match exactly one visible node). `path`: the
/// step's primary and alternatives as recorded. An index path among them (primary or
/// alternative) is trusted only when its node still fits one of the step's other
/// selectors (`#switch_widget` that several rows share, say): after a layout shift the
/// path names a different node, and a tap there would "work" on the wrong element.
pub fn by_selectors(
    screen: &Screen,
    selectors: &[String],
    path: Option<(&str, &[String])>,
) -> Option<Found> {
    // Every index path among the selectors (the primary or an alternative) needs a
    // witness: a non-index selector of the step that its node fits.
    let witnesses: Vec<Selector> = path
        .into_iter()
        .flat_map(|(p, alternatives)| {
            std::iter::once(p).chain(alternatives.iter().map(String::as_str))
        })
        .filter_map(|a| Selector::parse(a).ok())
        .filter(|a| !a.is_index_based())
        .collect();
    selectors.iter().enumerate().find_map(|(i, s)| {
        let node = unique(screen, s)?;
        // A path AI in the middle proposed (not one the step recorded) is its own evidence.
        let recorded = path.is_some_and(|(p, alts)| p == s || alts.contains(s));
        let index_based = Selector::parse(s).is_ok_and(|p| p.is_index_based());
        if recorded && index_based && !witnesses.is_empty() && !fits(screen, node, &witnesses) {
            return None;
        }
        Some(Found {
            selector: s.clone(),
            node,
            fallback: if i == 0 {
                Fallback::None
            } else {
                Fallback::Alternative
            },
        })
    })
}

/// Whether `node`, or a node inside it (alternatives may name a row by its label's
/// text), matches one of `sels`.
fn fits(screen: &Screen, node: usize, sels: &[Selector]) -> bool {
    let tree = &screen.tree;
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if sels.iter().any(|s| s.matches_node(&tree.nodes[n])) {
            return true;
        }
        stack.extend(&tree.nodes[n].children);
    }
    false
}

/// The bounded fuzzy match over what the step's selectors say about the element.
pub fn fuzzy(screen: &Screen, selectors: &[String]) -> Option<Found> {
    let parsed: Vec<Selector> = selectors
        .iter()
        .filter_map(|s| Selector::parse(s).ok())
        .collect();
    let tree = &screen.tree;
    let modal = modal_root(screen);
    // Nodes under the keyboard take part: a unique candidate there is the target, which
    // the keyboard hides (dismissed by rule, then found), not a reason to take a weaker
    // match elsewhere (a "Sign in to sync" label for a covered "Sign in" button).
    let on = |n: usize| {
        visible_chain(tree, n, &screen.elements.screen)
            && modal.is_none_or(|r| root_of(tree, n) == r)
            && !is_keyboard(&tree.nodes[root_of(tree, n)].package)
    };
    let all: Vec<usize> = (0..tree.nodes.len()).filter(|&n| on(n)).collect();
    let node = parsed.iter().find_map(|sel| match sel {
        // `anchor >> target`: the anchor as recorded (a row's label), the target fuzzily,
        // in the nearest group around each anchor that holds a candidate.
        Selector::Near { anchor, target } => {
            let tests = tests(target);
            let mut found: Vec<usize> = Vec::new();
            for a in anchor.find(tree).nodes.into_iter().filter(|&a| on(a)) {
                for c in std::iter::once(a).chain(tree.ancestors(a)) {
                    let group: Vec<usize> = tree.subtree(c).filter(|&n| on(n)).collect();
                    if !group
                        .iter()
                        .any(|&n| tests.iter().any(|t| t(&tree.nodes[n])))
                    {
                        continue;
                    }
                    found.extend(pick_one(tree, &group, &tests));
                    break;
                }
            }
            found.sort_unstable();
            found.dedup();
            (found.len() == 1).then(|| found[0])
        }
        other @ (Selector::Text { .. } | Selector::Desc { .. }) => {
            pick_one(tree, &all, &tests(other))
                .filter(|_| labels_present(tree, &all, &parsed, other))
        }
        other => pick_one(tree, &all, &tests(other)),
    })?;
    if under_keyboard(tree, node) {
        return None;
    }
    let (primary, _) = SelectorIndex::new(tree).recommend(node);
    Some(Found {
        selector: primary.to_string(),
        node,
        fallback: Fallback::Fuzzy,
    })
}

/// Whether every other label the step recorded for its element (a row's title beside
/// its summary) is still on screen, by the same fuzzy tests. A label found only by its
/// text is weak evidence: when the row's title is gone (scrolled off, say), a summary
/// "Off" that matches another row's switch "OFF" names a different element.
fn labels_present(tree: &UiTree, among: &[usize], all: &[Selector], hit: &Selector) -> bool {
    all.iter()
        .filter(|s| *s != hit && matches!(s, Selector::Text { .. } | Selector::Desc { .. }))
        .all(|s| {
            let tests = tests(s);
            among
                .iter()
                .any(|&n| tests.iter().any(|t| t(&tree.nodes[n])))
        })
}

/// A node test: what a fuzzy match accepts.
type Test<'a> = Box<dyn Fn(&UiNode) -> bool + 'a>;

/// The fuzzy tests for what one selector says about its element, strictest first: an id
/// renamed by an update; the same text or description up to case, then one that starts
/// with the recorded one (a reworded label).
fn tests(sel: &Selector) -> Vec<Test<'_>> {
    match sel {
        Selector::Id(id) => {
            let want = squash(short(id));
            vec![Box::new(move |n: &UiNode| {
                !n.resource_id.is_empty() && renamed(n.short_id(), &want)
            })]
        }
        Selector::Text { text, .. } => vec![
            Box::new(move |n: &UiNode| n.text.trim().eq_ignore_ascii_case(text.trim())),
            Box::new(move |n: &UiNode| !text.is_empty() && n.text.starts_with(text.as_str())),
        ],
        Selector::Desc { desc, .. } => vec![
            Box::new(move |n: &UiNode| n.content_desc.trim().eq_ignore_ascii_case(desc.trim())),
            Box::new(move |n: &UiNode| {
                !desc.is_empty() && n.content_desc.starts_with(desc.as_str())
            }),
        ],
        _ => Vec::new(),
    }
}

/// The one node of `among` that a test accepts, the strictest test first; never a
/// guess between several.
fn pick_one(tree: &UiTree, among: &[usize], tests: &[Test<'_>]) -> Option<usize> {
    tests.iter().find_map(|t| {
        let hits: Vec<usize> = among
            .iter()
            .copied()
            .filter(|&n| t(&tree.nodes[n]))
            .collect();
        (hits.len() == 1).then(|| hits[0])
    })
}

/// Whether a screen id is the (squashed) recorded one: equal, or the recorded one plus a
/// version suffix (`title` → `title_v2`).
fn renamed(have: &str, want: &str) -> bool {
    let have = squash(have);
    have == want
        || have
            .strip_prefix(want)
            .and_then(|rest| rest.strip_prefix('v'))
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Whether what `sel` names is on screen: exactly, or (when the script allows fuzzy
/// matching) through the same bounded fuzzy match as a target.
pub fn expected(screen: &Screen, sel: &str, fuzzy_ok: bool) -> bool {
    visible(screen, sel) || (fuzzy_ok && fuzzy(screen, &[sel.to_string()]).is_some())
}

fn short(id: &str) -> &str {
    id.rsplit_once(":id/").map_or(id, |(_, s)| s)
}

/// Lower case without `_`: `switch_widget` and `switchWidget` are the same id.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A known interruption and how replay dismisses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Interruption {
    /// Tap this button (a pop-up's "Not now", a permission dialog's "Don't allow").
    Tap { selector: String, label: String },
    /// The soft keyboard is up: Back hides it.
    Keyboard,
}

/// Buttons that close a dialog without agreeing to anything. A permission is denied,
/// never granted, by rule: a flow that needs it recorded the tap on "Allow" itself.
const DISMISS: &[&str] = &[
    "not now",
    "later",
    "no thanks",
    "no, thanks",
    "don't allow",
    "deny",
    "dismiss",
    "close",
    "skip",
    "cancel",
    "maybe later",
    "got it",
];

/// The interruption on this screen, if any (checked only when the step's target is
/// missing, so a step that means to tap "Later" still does).
pub fn interruption(screen: &Screen) -> Option<Interruption> {
    let tree = &screen.tree;
    // Only a button a person could touch: one in the dialog on top, not a dialog's
    // "Cancel" left underneath a pop-up (a tap there is swallowed).
    let modal = modal_root(screen);
    let on = |n: usize| reachable(screen, modal, n);
    if screen.has_modal {
        let button = (0..tree.nodes.len()).find(|&n| {
            let node = &tree.nodes[n];
            let label = if node.text.is_empty() {
                &node.content_desc
            } else {
                &node.text
            };
            on(n) && node.clickable && DISMISS.contains(&label.trim().to_lowercase().as_str())
        });
        if let Some(n) = button {
            let (sel, _) = SelectorIndex::new(tree).recommend(n);
            let node = &tree.nodes[n];
            let label = if node.text.is_empty() {
                node.content_desc.clone()
            } else {
                node.text.clone()
            };
            return Some(Interruption::Tap {
                selector: sel.to_string(),
                label,
            });
        }
    }
    let keyboard = tree.nodes.iter().any(|n| n.package.contains("inputmethod"));
    keyboard.then_some(Interruption::Keyboard)
}

/// The text a `store_as` reads from a node: its text, else its description.
pub fn text_of(screen: &Screen, node: usize) -> String {
    let n = &screen.tree.nodes[node];
    if n.text.is_empty() {
        n.content_desc.clone()
    } else {
        n.text.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    fn screen(banner: bool) -> Screen {
        let node = |class: &str, id: &str, text: &str, top: u32| {
            format!(
                r#"<node index="0" text="{text}" resource-id="{id}" class="android.widget.{class}" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{}]"/>"#,
                top + 200
            )
        };
        let mut rows = Vec::new();
        if banner {
            rows.push(node("TextView", "", "Update available", 0));
        }
        let base = if banner { 200 } else { 0 };
        rows.push(node("Switch", "app:id/switch_widget", "", base));
        rows.push(node("Switch", "app:id/switch_widget", "", base + 200));
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}</node></hierarchy>"#,
            rows.join("")
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    /// A send button the keyboard covers cannot be tapped: it counts as missing (the
    /// keyboard is then dismissed by rule), and is found again once the keyboard is gone.
    #[test]
    fn an_element_under_the_keyboard_is_not_reachable() {
        let xml = |keyboard: bool| {
            let ime = if keyboard {
                r#"<node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1520][1080,2400]"><node index="0" text="q" resource-id="" class="android.widget.Button" package="com.google.android.inputmethod.latin" content-desc="" clickable="true" enabled="true" bounds="[0,1520][108,1700]"/></node>"#
            } else {
                ""
            };
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/send" class="android.widget.ImageButton" package="app" content-desc="Send" clickable="true" enabled="true" bounds="[900,1550][1080,1700]"/></node>{ime}</hierarchy>"#
            )
        };
        let covered = Screen::from_xml(&xml(true), &ReprOptions::default()).unwrap();
        assert_eq!(unique(&covered, "#send"), None);
        assert!(
            unique(&covered, ":text(\"q\")").is_some(),
            "the keyboard's own keys are"
        );
        assert_eq!(interruption(&covered), Some(Interruption::Keyboard));
        let clear = Screen::from_xml(&xml(false), &ReprOptions::default()).unwrap();
        assert!(unique(&clear, "#send").is_some());
    }

    /// A renamed "Sign in" button the keyboard covers is the fuzzy match's one candidate
    /// for `#sign_in`: the step counts it as missing (so the keyboard is dismissed by
    /// rule), never taking the page's "Sign in to sync" label for it.
    #[test]
    fn a_fuzzy_target_under_the_keyboard_is_missing_not_replaced() {
        let xml = |keyboard: bool| {
            let ime = if keyboard {
                r#"<node index="1" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.inputmethod.latin" content-desc="" bounds="[0,1400][1080,2400]"/>"#
            } else {
                ""
            };
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="Sign in to sync your settings" resource-id="app:id/intro" class="android.widget.TextView" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,300][1080,400]"/><node index="1" text="Log in" resource-id="app:id/signIn" class="android.widget.Button" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,1500][1080,1650]"/></node>{ime}</hierarchy>"#
            )
        };
        let step = ["#sign_in".to_string(), ":text(\"Sign in\")".to_string()];
        let covered = Screen::from_xml(&xml(true), &ReprOptions::default()).unwrap();
        assert_eq!(fuzzy(&covered, &step), None);
        assert_eq!(interruption(&covered), Some(Interruption::Keyboard));
        let clear = Screen::from_xml(&xml(false), &ReprOptions::default()).unwrap();
        let f = fuzzy(&clear, &step).expect("found once the keyboard is gone");
        assert_eq!(clear.tree.nodes[f.node].text, "Log in");
    }

    /// A settings row recorded by its title and summary ("Bluetooth" / "Off"): when the
    /// title is not on screen (the row scrolled away), another row's switch "OFF" is not
    /// taken for it; with the title back, the summary alone still finds its row.
    #[test]
    fn a_fuzzy_label_match_needs_the_elements_other_labels() {
        let row = |title: &str, summary: &str, switch: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="app" content-desc="" clickable="true" enabled="true" bounds="[0,{top}][1080,{b}]"><node index="0" text="{title}" resource-id="android:id/title" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{top}][800,{m}]"/><node index="1" text="{summary}" resource-id="android:id/summary" class="android.widget.TextView" package="app" content-desc="" bounds="[40,{m}][800,{b}]"/><node index="2" text="{switch}" resource-id="app:id/switchWidget" class="android.widget.Switch" package="app" content-desc="" clickable="true" enabled="true" bounds="[880,{top}][1040,{b}]"/></node>"#,
                m = top + 100,
                b = top + 200
            )
        };
        let xml = |rows: String| {
            format!(
                r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{rows}</node></hierarchy>"#
            )
        };
        let step = [
            "[0.0.1.1]".to_string(),
            ":text(\"Bluetooth\")".to_string(),
            ":text(\"Off\")".to_string(),
        ];
        let without = xml(row("Airplane mode", "", "OFF", 0) + &row("Wi-Fi", "HomeNet", "ON", 200));
        let s = Screen::from_xml(&without, &ReprOptions::default()).unwrap();
        assert_eq!(fuzzy(&s, &step), None, "the Bluetooth row is not on screen");
        let with = xml(row("Airplane mode", "", "ON", 0) + &row("Bluetooth ›", "Off", "OFF", 200));
        let s = Screen::from_xml(&with, &ReprOptions::default()).unwrap();
        let f = fuzzy(&s, &step).expect("the retitled Bluetooth row");
        assert_eq!(s.tree.nodes[f.node].bounds.top, 200);
    }

    /// An app update renamed the ids (`header` → `header_v2`, `menu_edit` → `menuEdit`)
    /// and reworded a description: an `expect` recorded before it still holds when the
    /// script allows fuzzy matching, and never by a guess between two candidates.
    #[test]
    fn an_expect_survives_renamed_ids_and_reworded_labels() {
        let node = |id: &str, desc: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="app:id/{id}" class="android.widget.ImageButton" package="app" content-desc="{desc}" clickable="true" enabled="true" bounds="[0,{top}][1080,{}]"/>"#,
                top + 200
            )
        };
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}{}{}{}</node></hierarchy>"#,
            node("header_v2", "", 0),
            node("menuEdit", "Edit now", 200),
            node("row_a", "Call", 400),
            node("row_b", "Call", 600),
        );
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        for sel in ["#header", "#menu_edit", ":desc(\"Edit\")"] {
            assert!(!visible(&s, sel), "{sel} is not there as recorded");
            assert!(expected(&s, sel, true), "{sel}");
            assert!(!expected(&s, sel, false), "{sel}: the script said no fuzzy");
        }
        assert!(
            !expected(&s, ":desc(\"Cal\")", true),
            "two candidates: no guess"
        );
        assert!(
            !expected(&s, "#head", true),
            "a prefix is not a version suffix"
        );
    }

    /// `:text("6:00 AM") >> #delete` after an update renamed every row's `#delete`: the
    /// anchor as recorded, the renamed target in that row, never another row's.
    #[test]
    fn a_pop_up_over_a_dialog_is_dismissed_by_its_own_button_not_the_dialogs_cancel() {
        // The clock's time picker (with "Cancel") and, on top, a system pop-up. A tap on
        // the picker's "Cancel" would be swallowed by the pop-up.
        let button = |id: &str, text: &str, pkg: &str, left: u32, top: u32| {
            format!(
                r#"<node index="0" text="{text}" resource-id="{id}" class="android.widget.Button" package="{pkg}" content-desc="" clickable="true" enabled="true" bounds="[{left},{top}][{},{}]"/>"#,
                left + 300,
                top + 150
            )
        };
        let window = |pkg: &str, title: &str, buttons: String, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="{pkg}" content-desc="" bounds="[100,{top}][980,{b}]"><node index="0" text="{title}" resource-id="android:id/alertTitle" class="android.widget.TextView" package="{pkg}" content-desc="" bounds="[150,{top}][900,{t2}]"/><node index="1" text="" resource-id="android:id/buttonPanel" class="android.widget.LinearLayout" package="{pkg}" content-desc="" bounds="[100,{t2}][980,{b}]">{buttons}</node></node>"#,
                b = top + 600,
                t2 = top + 200
            )
        };
        let picker = window(
            "com.google.android.deskclock",
            "Set alarm",
            button(
                "android:id/button2",
                "Cancel",
                "com.google.android.deskclock",
                150,
                900,
            ) + &button(
                "android:id/button1",
                "OK",
                "com.google.android.deskclock",
                600,
                900,
            ),
            700,
        );
        let popup = window(
            "com.android.systemui",
            "Battery low",
            button(
                "android:id/button2",
                "Not now",
                "com.android.systemui",
                150,
                1100,
            ) + &button(
                "android:id/button1",
                "Turn on",
                "com.android.systemui",
                600,
                1100,
            ),
            900,
        );
        let xml =
            format!(r#"<?xml version="1.0"?><hierarchy rotation="0">{picker}{popup}</hierarchy>"#);
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        assert!(s.has_modal);
        match interruption(&s) {
            Some(Interruption::Tap { label, .. }) => assert_eq!(label, "Not now"),
            other => panic!("expected a tap on the pop-up's button, got {other:?}"),
        }
    }

    #[test]
    fn an_anchored_selector_finds_its_rows_renamed_target() {
        let row = |time: &str, top: u32| {
            format!(
                r#"<node index="0" text="" resource-id="app:id/row" class="android.widget.LinearLayout" package="app" content-desc="" bounds="[0,{top}][1080,{b}]"><node index="0" text="{time}" resource-id="app:id/time" class="android.widget.TextView" package="app" content-desc="" bounds="[0,{top}][500,{b}]"/><node index="1" text="" resource-id="app:id/delete_v2" class="android.widget.ImageButton" package="app" content-desc="Delete alarm now" clickable="true" enabled="true" bounds="[800,{top}][1000,{b}]"/></node>"#,
                b = top + 200
            )
        };
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]">{}{}</node></hierarchy>"#,
            row("6:00 AM", 0),
            row("8:15 AM", 200),
        );
        let s = Screen::from_xml(&xml, &ReprOptions::default()).unwrap();
        for sel in [
            ":text(\"8:15 AM\") >> #delete",
            ":text(\"8:15 AM\") >> :desc(\"Delete alarm\")",
        ] {
            assert_eq!(unique(&s, sel), None, "{sel} as recorded is gone");
            let f = fuzzy(&s, &[sel.to_string()]).expect(sel);
            assert_eq!(
                s.tree.nodes[f.node].bounds.top, 200,
                "{sel}: the 8:15 row's"
            );
        }
        assert_eq!(
            fuzzy(&s, &["#delete".to_string()]),
            None,
            "two rows: no guess"
        );
    }

    #[test]
    fn an_index_path_that_now_names_another_kind_of_node_is_not_trusted() {
        let sels = ["[0.0]".to_string(), "#switch_widget".to_string()];
        let guard = Some(("[0.0]", &sels[1..]));
        let before = by_selectors(&screen(false), &sels, guard).expect("the recorded layout");
        assert_eq!(before.selector, "[0.0]");
        // A banner row pushed the rows down: [0.0] is the banner now, not a switch.
        assert_eq!(by_selectors(&screen(true), &sels, guard), None);
        // A path AI in the middle proposed is its own evidence.
        assert!(by_selectors(&screen(true), &sels, None).is_some());
    }
}
