//! Interruptions replay dismisses by rule, recognised from Android's own structure,
//! never from a button's word (a "Cancel" on the flow's own "Delete alarm?" is the flow's
//! business, not an obstacle).
//!
//! First, what a dialog window asks of a person (`dialog`, `Kind`), from its structure
//! alone: a permission request (the permission controller's window), the system's
//! "isn't responding", a *notice* (one labelled button and nothing to fill or pick: a
//! "what's new", a tip, an onboarding card), a *choice* (two or more buttons: a
//! confirmation, a rating prompt) or a *form* (a field, a list of options). Then what
//! replay may do about it:
//!
//! - a permission request: its deny button by id (`permission_deny_button`, …); a
//!   permission is never granted by rule;
//! - "isn't responding": waited out (`android:id/aerr_wait`);
//! - a dialog of the system or the Play Store (System UI, Play's in-app review and
//!   update, Play services): its negative button by id (the framework's
//!   `android:id/button2`, or an id that says `negative`, `dismiss`, `close`, `later`,
//!   `skip`, `cancel`, …), else, for a notice, Back;
//! - the app's own dialog the same way, but only when the flow did not cause it: the
//!   caller says whether an app dialog may be one (not after the step's own action, and
//!   not after a step whose effect was never verified) and which dialogs the flow's
//!   actions brought up (`signature`). It is closed with Back, Android's "cancel" (it
//!   agrees to nothing and opens nothing; a real app's "negative" button can open a
//!   page, its one button can agree to an update); when Back leaves it there, a choice
//!   by its negative button's id, never by guessing which button declines, and a notice
//!   not at all; a form never.
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
    /// Press Back: a notice with nothing to decline closes without agreeing to anything.
    Back { title: String },
    /// The soft keyboard is up: Back hides it.
    Keyboard,
}

/// What a dialog window asks of a person, read from its structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The permission controller's (or package installer's) request.
    Permission,
    /// The system's "isn't responding" dialog.
    NotResponding,
    /// One labelled button, nothing to fill in or pick: read it and go on.
    Notice,
    /// Two or more buttons: a decision (a confirmation, a rating prompt).
    Choice,
    /// A field to fill in or a list to pick from.
    Form,
}

/// A dialog on top of the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    /// Its window.
    pub root: usize,
    pub kind: Kind,
    /// The system's, System UI's, the Play Store's or Play services' (never the app's flow).
    pub system: bool,
    /// Its labelled buttons, in document order.
    pub buttons: Vec<usize>,
}

/// Deny buttons of the permission controller and the older package installer.
const PERMISSION_DENY: &[&str] = &[
    "permission_deny_button",
    "permission_deny_and_dont_ask_again_button",
    "permission_deny_dont_ask_again_button",
];

/// Id words of a button that closes a dialog without agreeing to anything.
const NEGATIVE_ID_WORDS: &[&str] = &[
    "negative", "dismiss", "close", "later", "skip", "cancel", "deny", "decline", "no", "not",
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

/// The dialog on top of `screen`, if any, and what it asks.
pub fn dialog(screen: &Screen) -> Option<Dialog> {
    let root = modal_root(screen)?;
    let tree = &screen.tree;
    let package = tree.nodes[root].package.as_str();
    let buttons = buttons(tree, root);
    let id = |i: usize| tree.nodes[i].short_id();
    let kind = if is_permission(package) {
        Kind::Permission
    } else if tree.subtree(root).any(|i| id(i) == "aerr_wait") {
        Kind::NotResponding
    } else if is_form(tree, root) {
        Kind::Form
    } else if buttons.len() == 1 {
        Kind::Notice
    } else if buttons.is_empty() {
        Kind::Form
    } else {
        Kind::Choice
    };
    Some(Dialog {
        root,
        kind,
        system: is_system(package),
        buttons,
    })
}

/// The clickable, enabled elements of window `root` a person can read (their own or a
/// child's text, or a description), outermost only: a dialog's buttons.
fn buttons(tree: &UiTree, root: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for i in tree.subtree(root).skip(1) {
        let n = &tree.nodes[i];
        if !(n.clickable && n.enabled && n.visible) || n.is_editable() {
            continue;
        }
        if out.iter().any(|&b| tree.subtree(b).contains(&i)) {
            continue;
        }
        let labelled = tree
            .subtree(i)
            .any(|c| !tree.nodes[c].text.trim().is_empty())
            || !n.content_desc.trim().is_empty();
        if labelled {
            out.push(i);
        }
    }
    out
}

/// A field to fill in, or options to pick from (a list's rows, radio buttons or check
/// boxes, two or more): what the dialog asks is an answer only the flow knows.
fn is_form(tree: &UiTree, root: usize) -> bool {
    let (mut options, mut checks) = (0, 0);
    for i in tree.subtree(root) {
        let n = &tree.nodes[i];
        if n.is_editable() {
            return true;
        }
        // One check box ("don't show again") is no choice; radio buttons are.
        checks += usize::from(n.checkable);
        let in_list = n.parent.is_some_and(|p| {
            let c = tree.nodes[p].short_class();
            c.ends_with("ListView") || c.ends_with("RecyclerView")
        });
        if n.clickable && in_list {
            options += 1;
        }
    }
    options >= 2 || checks >= 2
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
    interruption_after(screen, app_dialogs, caused, false)
}

/// `interruption`, knowing whether Back was already pressed on this same dialog. The
/// app's own dialog is closed with Back first (Android's cancel: it agrees to nothing and
/// goes nowhere, whatever the buttons say; a real app's "negative" button can open a
/// page), and by its negative button's id only when Back left it there.
pub fn interruption_after(
    screen: &Screen,
    app_dialogs: bool,
    caused: &[String],
    back_tried: bool,
) -> Option<Interruption> {
    let tree = &screen.tree;
    if let Some(d) = dialog(screen) {
        let own_app = d.kind != Kind::Permission && !d.system;
        let flows = signature(screen).is_some_and(|s| caused.contains(&s));
        if own_app && (!app_dialogs || flows) {
            return None;
        }
        let cancel = matches!(d.kind, Kind::Notice | Kind::Choice);
        if own_app && cancel && !back_tried {
            return Some(Interruption::Back {
                title: title(tree, d.root),
            });
        }
        return dismissal(tree, &d).filter(|i| !(back_tried && *i == back(tree, &d)));
    }
    let keyboard = tree.nodes.iter().any(|n| n.package.contains("inputmethod"));
    keyboard.then_some(Interruption::Keyboard)
}

fn back(tree: &UiTree, d: &Dialog) -> Interruption {
    Interruption::Back {
        title: title(tree, d.root),
    }
}

/// How a dialog that may be dismissed is closed: a permission's deny button, the
/// system's "wait", a negative button by id, or Back for a notice.
fn dismissal(tree: &UiTree, d: &Dialog) -> Option<Interruption> {
    let id = |i: usize| tree.nodes[i].short_id().to_string();
    let clickable: Vec<usize> = tree
        .subtree(d.root)
        .filter(|&i| tree.nodes[i].clickable && tree.nodes[i].enabled)
        .collect();
    let found = match d.kind {
        Kind::Permission => clickable
            .into_iter()
            .find(|&i| PERMISSION_DENY.contains(&id(i).as_str())),
        Kind::NotResponding => clickable.into_iter().find(|&i| id(i) == "aerr_wait"),
        Kind::Form => None,
        Kind::Notice | Kind::Choice => negative(tree, &d.buttons),
    };
    if let Some(n) = found {
        return Some(tap(tree, n));
    }
    (d.kind == Kind::Notice).then(|| back(tree, d))
}

/// The button that declines, by id: the framework's negative button
/// (`android:id/button2`; an app's own `button2` is any button), or an id that says so.
fn negative(tree: &UiTree, buttons: &[usize]) -> Option<usize> {
    let full = |i: usize| tree.nodes[i].resource_id.as_str();
    buttons
        .iter()
        .copied()
        .find(|&i| full(i) == "android:id/button2")
        .or_else(|| {
            buttons.iter().copied().find(|&i| {
                id_words(full(i))
                    .iter()
                    .any(|w| NEGATIVE_ID_WORDS.contains(&w.as_str()))
            })
        })
}

/// Whether `n` is a button that declines, by its id (see `negative`).
pub fn declines(tree: &UiTree, n: usize) -> bool {
    negative(tree, &[n]).is_some()
}

/// A dialog's first text, for the step's record.
fn title(tree: &UiTree, root: usize) -> String {
    tree.subtree(root)
        .map(|i| tree.nodes[i].text.trim())
        .find(|t| !t.is_empty())
        .unwrap_or_default()
        .to_string()
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

    /// An app's own dialog (a real Settings dialog, in Vietnamese): Back, then its
    /// negative button (`android:id/button2`), dismiss it only when the flow did not
    /// bring it up; after
    /// the step's own action, or once the flow caused it, it is the flow's business.
    #[test]
    fn an_apps_own_dialog_is_dismissed_only_when_the_flow_did_not_cause_it() {
        let s = real("003__77x17__autotickexitbox__window_dump.xml");
        assert!(matches!(
            interruption(&s, true, &[]),
            Some(Interruption::Back { .. })
        ));
        assert!(tapped(interruption_after(&s, true, &[], true)).contains("button2"));
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

    /// What replay does about each real dialog of the corpus when the flow did not bring
    /// it up, first and once Back has left it there (a label: taps that button; `Back`;
    /// `None`: nothing), and that it does nothing about the app's own dialogs once the
    /// flow caused them.
    #[test]
    fn real_dialogs_are_told_apart_by_structure() {
        use Kind::*;
        let b = || Some("Back".to_string());
        let l = |s: &str| Some(s.to_string());
        // A dump, what it is, what replay does first, and once Back has left it there.
        type Case = (&'static str, Option<Kind>, Option<String>, Option<String>);
        let cases: [Case; 17] = [
            // The system's own: a permission is denied, "isn't responding" waited out.
            (
                "005__Ferruolo__chaos-monkey-ai__window_dump.xml",
                Some(Permission),
                l("Don’t allow"),
                l("Don’t allow"),
            ),
            (
                "010__chainnexlink__zijide__ui.xml",
                Some(NotResponding),
                l("Wait"),
                l("Wait"),
            ),
            // "What's new" (one OK), an app update prompt (one button, whose own id is
            // `button2`), a notice: Back, and their one button is never tapped.
            (
                "075__konrad-jamrozik__droidmate__com.estrongs.android.taskmanager_version_popup.xml",
                Some(Notice),
                b(),
                None,
            ),
            (
                "085__cygnuxflutter-admin__RTO-Vehicle-App__dialog_dump.xml",
                Some(Notice),
                b(),
                None,
            ),
            (
                "078__konrad-jamrozik__droidmate__com.cleanmaster.security_confirm_report_success.xml",
                Some(Notice),
                b(),
                None,
            ),
            // Choices: Back, then the button whose id declines (the framework's
            // `button2`, `…_closeButton`, `dialog_btn_close`).
            (
                "003__77x17__autotickexitbox__window_dump.xml",
                Some(Choice),
                b(),
                l("HỦY"),
            ),
            (
                "076__konrad-jamrozik__droidmate__com.picsart.studio_stretch_tool_popup.xml",
                Some(Choice),
                b(),
                l("Close"),
            ),
            (
                "079__konrad-jamrozik__droidmate__com.cleanmaster.security_report_app.xml",
                Some(Choice),
                b(),
                l("Close"),
            ),
            // A chooser of seven buttons: Back, then its cancel button by id.
            (
                "082__konrad-jamrozik__droidmate__com.picsart.studio_save_location_popup.xml",
                Some(Choice),
                b(),
                l("Cancel"),
            ),
            // Google Maps calls the button that opens another page its negative one:
            // why Back comes first.
            (
                "086__LlamaTouch__Evaluator__case1_10.xml",
                Some(Choice),
                b(),
                l("Go to Web & App Activity"),
            ),
            // Compose, no ids at all: no button is guessed.
            (
                "084__uzeyireshref__PhotoSelector__dialog_dump.xml",
                Some(Choice),
                b(),
                None,
            ),
            // A field, a list of options: the flow's answer, never dismissed.
            (
                "080__konrad-jamrozik__droidmate__com.rhmsoft.fm_new_dir_popup.xml",
                Some(Form),
                None,
                None,
            ),
            (
                "081__konrad-jamrozik__droidmate__com.rhmsoft.fm_create_popup.xml",
                Some(Form),
                None,
                None,
            ),
            (
                "087__chainnexlink__zijide__ui_dump5.xml",
                Some(Form),
                None,
                None,
            ),
            (
                "068__garcezv__reabLITA-Tablet__ui_lang.xml",
                Some(Form),
                None,
                None,
            ),
            // Full-width windows: a page, and a welcome card uiautomator dumped alone
            // that nothing marks as floating: not dialogs here.
            (
                "083__konrad-jamrozik__droidmate__com.ebay.mobile_terms_of_use.xml",
                None,
                None,
                None,
            ),
            (
                "077__konrad-jamrozik__droidmate__com.frank_weber.forex2_welcome.xml",
                None,
                None,
                None,
            ),
        ];
        let said = |i: Option<Interruption>| match i {
            Some(Interruption::Tap { label, .. }) => Some(label),
            Some(Interruption::Back { .. }) => Some("Back".to_string()),
            Some(Interruption::Keyboard) | None => None,
        };
        for (dump, kind, first, then) in cases {
            let s = real(dump);
            let d = dialog(&s);
            assert_eq!(d.as_ref().map(|d| d.kind), kind, "{dump}");
            assert_eq!(said(interruption(&s, true, &[])), first, "{dump}");
            assert_eq!(
                said(interruption_after(&s, true, &[], true)),
                then,
                "{dump}: after Back"
            );
            let own = d.is_some_and(|d| !d.system && d.kind != Permission);
            if own {
                assert_eq!(
                    interruption(&s, false, &[]),
                    None,
                    "{dump}: after the action"
                );
                let caused = [signature(&s).unwrap()];
                assert_eq!(interruption(&s, true, &caused), None, "{dump}: caused");
            }
        }
    }

    /// "Delete alarm?" with Cancel / Delete, without ids that say negative: no rule
    /// taps "Cancel" by its word. After the step's own action it is the flow's; before
    /// it (the flow did not bring it up) Back cancels it, and nothing more.
    #[test]
    fn a_cancel_button_is_never_tapped_by_its_word() {
        let xml = r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[0,0][1080,2400]"/><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.clock" content-desc="" bounds="[100,900][980,1500]"><node index="0" text="Delete alarm?" resource-id="android:id/alertTitle" class="android.widget.TextView" package="com.clock" content-desc="" bounds="[150,900][900,1100]"/><node index="1" text="Cancel" resource-id="com.clock:id/secondary" class="android.widget.Button" package="com.clock" content-desc="" clickable="true" enabled="true" bounds="[150,1300][500,1450]"/><node index="2" text="Delete" resource-id="com.clock:id/primary" class="android.widget.Button" package="com.clock" content-desc="" clickable="true" enabled="true" bounds="[600,1300][950,1450]"/></node></hierarchy>"#;
        let s = Screen::from_xml(xml, &ReprOptions::default()).unwrap();
        assert!(s.has_modal);
        assert_eq!(
            interruption(&s, false, &[]),
            None,
            "after the step's own action"
        );
        assert!(matches!(
            interruption(&s, true, &[]),
            Some(Interruption::Back { .. })
        ));
        assert_eq!(
            interruption_after(&s, true, &[], true),
            None,
            "no id declines"
        );
    }
}
