//! Interruptions replay dismisses by rule, recognised from Android's own structure,
//! never from a button's word (a "Cancel" on the flow's own "Delete alarm?" is the flow's
//! business, not an obstacle):
//!
//! - a runtime permission request (the permission controller's or the package
//!   installer's window): its deny button by id (`permission_deny_button`, …); a
//!   permission is never granted by rule;
//! - an "isn't responding" dialog of the system (`android:id/aerr_wait`);
//! - a dialog of the system or the Play Store (System UI, Play's in-app review and
//!   update, Play services): its negative button by id (`android:id/button2`, or an id
//!   that says `negative`, `dismiss`, `close`, `later`, `skip`, `cancel`, …);
//! - the app's own pop-up (a promo, a rating prompt, "what's new") the same way, but only
//!   when the flow did not cause it: the caller says whether an app dialog may be one
//!   (not after the step's own action, and not after a step whose effect was never
//!   verified) and which dialogs the flow's actions brought up (`signature`).
//!
//! Anything else stays: the step fails, or AI in the middle gets it.

use super::find::modal_root;
use super::similar::id_words;
use crate::screen::{Screen, SelectorIndex, UiTree};

/// A known interruption and how replay dismisses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Interruption {
    /// Tap this button (a permission's deny, a pop-up's negative button).
    Tap { selector: String, label: String },
    /// The soft keyboard is up: Back hides it.
    Keyboard,
}

/// Deny buttons of the permission controller and the older package installer.
const PERMISSION_DENY: &[&str] = &[
    "permission_deny_button",
    "permission_deny_and_dont_ask_again_button",
    "permission_deny_dont_ask_again_button",
];

/// Id words of a button that closes a dialog without agreeing to anything.
const NEGATIVE_ID_WORDS: &[&str] = &[
    "negative", "dismiss", "close", "later", "skip", "cancel", "deny", "decline", "no",
];

/// Packages whose dialogs are never the app's flow: the system, its UI, the Play Store
/// and Play services.
fn is_system(package: &str) -> bool {
    package == "android"
        || package == "com.android.systemui"
        || package == "com.android.vending"
        || package.starts_with("com.google.android.gms")
        || package.starts_with("com.google.android.finsky")
}

fn is_permission(package: &str) -> bool {
    package.contains("permissioncontroller") || package.contains("packageinstaller")
}

/// What identifies a dialog window across screens: its texts, in order.
pub fn signature(screen: &Screen) -> Option<String> {
    let root = modal_root(screen)?;
    let tree = &screen.tree;
    let texts: Vec<&str> = tree
        .subtree(root)
        .map(|i| tree.nodes[i].text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    Some(format!("{}|{}", tree.nodes[root].package, texts.join("|")))
}

/// What the screen shows outside the dialog on top (its texts and ids, in order): the
/// same before and after an action means the action never reached the app.
pub fn beneath(screen: &Screen) -> String {
    let tree = &screen.tree;
    let top = modal_root(screen);
    let inside = |i: usize| top.is_some_and(|r| tree.subtree(r).contains(&i));
    (0..tree.nodes.len())
        .filter(|&i| !inside(i))
        .map(|i| format!("{}#{}", tree.nodes[i].text, tree.nodes[i].resource_id))
        .collect::<Vec<_>>()
        .join("|")
}

/// The interruption on this screen that may be dismissed by rule, if any.
/// `app_dialogs`: whether an app's own dialog may count; `caused`: the signatures of
/// dialogs the flow's own actions brought up (never dismissed by rule).
pub fn interruption(screen: &Screen, app_dialogs: bool, caused: &[String]) -> Option<Interruption> {
    let tree = &screen.tree;
    if let Some(root) = modal_root(screen) {
        let package = tree.nodes[root].package.as_str();
        let own_app = !is_permission(package) && !is_system(package);
        let flows = signature(screen).is_some_and(|s| caused.contains(&s));
        if own_app && (!app_dialogs || flows) {
            return None;
        }
        return dismiss_button(tree, root, package).map(|n| tap(tree, n));
    }
    let keyboard = tree.nodes.iter().any(|n| n.package.contains("inputmethod"));
    keyboard.then_some(Interruption::Keyboard)
}

/// The button of window `root` that closes it without agreeing, by id.
fn dismiss_button(tree: &UiTree, root: usize, package: &str) -> Option<usize> {
    let buttons: Vec<usize> = tree
        .subtree(root)
        .filter(|&i| tree.nodes[i].clickable && tree.nodes[i].enabled)
        .collect();
    let id = |i: usize| tree.nodes[i].short_id().to_string();
    if is_permission(package) {
        return buttons
            .into_iter()
            .find(|&i| PERMISSION_DENY.contains(&id(i).as_str()));
    }
    if let Some(wait) = buttons.iter().copied().find(|&i| id(i) == "aerr_wait") {
        return Some(wait);
    }
    buttons
        .iter()
        .copied()
        .find(|&i| id(i) == "button2")
        .or_else(|| {
            buttons.into_iter().find(|&i| {
                id_words(&id(i))
                    .iter()
                    .any(|w| NEGATIVE_ID_WORDS.contains(&w.as_str()))
            })
        })
}

fn tap(tree: &UiTree, n: usize) -> Interruption {
    let (sel, _) = SelectorIndex::new(tree).recommend(n);
    let node = &tree.nodes[n];
    let label = if node.text.is_empty() {
        node.content_desc.clone()
    } else {
        node.text.clone()
    };
    Interruption::Tap {
        selector: sel.to_string(),
        label,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::ReprOptions;

    fn real(name: &str) -> Screen {
        let path = format!(
            "{}/../../tests/fixtures/uiautomator/real/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let xml = std::fs::read_to_string(&path).unwrap();
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    fn tapped(i: Option<Interruption>) -> String {
        match i {
            Some(Interruption::Tap { selector, .. }) => selector,
            other => panic!("expected a tap, got {other:?}"),
        }
    }

    /// Real permission requests (Android 12+'s permission controller, an older package
    /// installer in Chinese): denied by the deny button's id, whatever its words.
    #[test]
    fn a_permission_request_is_denied_by_its_button_id() {
        for (dump, want) in [
            (
                "005__Ferruolo__chaos-monkey-ai__window_dump.xml",
                "Don’t allow",
            ),
            (
                "071__Aloknova__FIT-NOVS__window_dump_post_notification_build.xml",
                "Don’t allow",
            ),
            ("008__wyw121__employeeGUI__current_state.xml", "拒绝"),
        ] {
            let s = real(dump);
            match interruption(&s, false, &[]) {
                Some(Interruption::Tap { selector, label }) => {
                    assert_eq!(label, want, "{dump}");
                    assert!(
                        selector.contains("permission_deny_button"),
                        "{dump}: {selector}"
                    );
                }
                other => panic!("{dump}: {other:?}"),
            }
        }
    }

    /// The system's "isn't responding" dialog is waited out (`aerr_wait`), never its app
    /// closed.
    #[test]
    fn a_system_not_responding_dialog_is_waited_out() {
        let s = real("010__chainnexlink__zijide__ui.xml");
        assert!(tapped(interruption(&s, false, &[])).contains("aerr_wait"));
    }

    /// An app's own dialog (a real Settings dialog, in Vietnamese): its negative button
    /// (`android:id/button2`) dismisses it only when the flow did not bring it up; after
    /// the step's own action, or once the flow caused it, it is the flow's business.
    #[test]
    fn an_apps_own_dialog_is_dismissed_only_when_the_flow_did_not_cause_it() {
        let s = real("003__77x17__autotickexitbox__window_dump.xml");
        assert!(tapped(interruption(&s, true, &[])).contains("button2"));
        assert_eq!(
            interruption(&s, false, &[]),
            None,
            "after the step's action"
        );
        let caused = [signature(&s).unwrap()];
        assert_eq!(
            interruption(&s, true, &caused),
            None,
            "the flow brought it up"
        );
    }

    /// "Delete alarm?" with Cancel / Delete, without ids that say negative: no rule
    /// taps "Cancel" by its word.
    #[test]
    fn a_cancel_button_is_never_tapped_by_its_word() {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[0,0][1080,2400]"/><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[100,900][980,1500]"><node index="0" text="Delete alarm?" resource-id="android:id/alertTitle" class="android.widget.TextView" package="com.clock" content-desc="" bounds="[150,900][900,1100]"/><node index="1" text="Cancel" resource-id="com.clock:id/secondary" class="android.widget.Button" package="com.clock" content-desc="" clickable="true" enabled="true" bounds="[150,1300][500,1450]"/><node index="2" text="Delete" resource-id="com.clock:id/primary" class="android.widget.Button" package="com.clock" content-desc="" clickable="true" enabled="true" bounds="[600,1300][950,1450]"/></node></hierarchy>"#;
        let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
        assert!(s.has_modal);
        assert_eq!(interruption(&s, true, &[]), None);
    }
}
