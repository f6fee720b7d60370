//! What a redesigning app update does to an app's structure, as drifts of the widget
//! tree after it is built (keys for the touch log are stamped before, so an action keeps
//! its identity wherever it moves):
//!
//! - `icon_buttons`: a text button becomes an icon-only `ImageButton` whose content-desc
//!   is its old label, a square at the start, centre or end of its old place (seeded per
//!   app and label).
//! - `list_to_grid`: an app's item list (alarms, contacts, conversations, notes, the
//!   shop's catalogue and cart) becomes a grid of two or three columns (seeded per list),
//!   rows becoming cells in the same order
//!   (`ui::scroll_list`); settings and web pages stay lists.
//! - `overflow_menu`: the toolbar's actions and the floating action button move into an
//!   overflow menu: a "More options" ⋮ button, then the action by its label (the items'
//!   order seeded per app).
//! - `whats_new_dialog`: a "What's new" dialog the first time each app comes to the
//!   foreground (its wording and its button's id seeded per app: "Got it", "Continue"
//!   or "OK" closes it);
//!   `SimDevice` shows it after a command.
//! - `confirm_destructive`: deleting an alarm, a contact or a note, or removing an item
//!   from the cart, asks first ("Delete alarm?" Cancel / Delete; the confirming label and
//!   which side Cancel is on seeded per app); Cancel keeps the item.

use droidpilot_core::domain::Bounds;

use super::drift::mix;
use super::state::{AppId, Cmd, Dialog, DialogButton};
use super::ui::{Ctx, action_slot};
use super::widget::{Look, Symbol, Widget};

/// The resource-id of the "More options" button `overflow_menu` adds to a toolbar.
pub const OVERFLOW_ID: &str = "overflow_menu";
/// The dialog kind of the overflow menu.
pub const OVERFLOW_KIND: &str = "overflow";
/// The dialog kind of the "what's new" dialog (in the phone's state, never on screen).
pub const WHATS_NEW_KIND: &str = "whats_new";
/// The dialog kind of a confirmation `confirm_destructive` asks.
pub const CONFIRM_KIND: &str = "confirm";

/// The lists `list_to_grid` lays out as grids (by their scroll key's start).
pub fn grid_list(key: &str) -> bool {
    ["clock.", "contacts.", "notes.", "shop.", "messages.threads"]
        .iter()
        .any(|p| key.starts_with(p))
}

/// How many columns list `key` has as a grid: two or three, seeded per list.
pub fn columns(seed: u64, key: &str) -> i32 {
    2 + (mix(seed, &format!("grid/{key}")) % 2) as i32
}

/// The icon a button's label suggests, as a designer would pick it.
fn symbol_for(label: &str) -> Symbol {
    let l = label.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| l.contains(w));
    if has(&["send"]) {
        Symbol::Send
    } else if has(&["delete", "remove", "discard"]) {
        Symbol::Delete
    } else if has(&["cart", "basket", "checkout"]) {
        Symbol::Cart
    } else if has(&["search"]) {
        Symbol::Search
    } else if has(&["edit"]) {
        Symbol::Edit
    } else if has(&["add", "new", "create"]) {
        Symbol::Add
    } else if has(&["cancel", "dismiss", "close"]) {
        Symbol::Close
    } else {
        Symbol::Check
    }
}

/// Text buttons → icon-only buttons (see the module doc).
pub fn iconify(w: &mut Widget, cx: &Ctx, seed: u64, package: &str) {
    let worded = w.text.chars().any(char::is_alphabetic);
    if w.on_tap.is_some() && w.class == "android.widget.Button" && worded {
        let label = std::mem::take(&mut w.text);
        let side = w.frame.height().min(w.frame.width()).min(cx.d(144));
        let b = w.frame;
        let left = match mix(seed, &format!("{package}/{label}")) % 3 {
            0 => b.left,
            1 => b.left + (b.width() - side) / 2,
            _ => b.right - side,
        };
        let top = b.top + (b.height() - side) / 2;
        let square = Bounds::new(left, top, left + side, top + side);
        w.bounds = square.intersect(&w.bounds);
        w.frame = square;
        w.class = "android.widget.ImageButton";
        w.icon = Some(symbol_for(&label));
        w.desc = label;
        w.look = Look::Icon;
        w.radius = super::widget::PILL;
    }
    for c in &mut w.children {
        iconify(c, cx, seed, package);
    }
}

/// One action moved into the overflow menu: its id, label, command and key.
fn take_actions(w: &mut Widget, in_toolbar: bool, out: &mut Vec<DialogButton>) {
    let mut i = 0;
    while i < w.children.len() {
        let c = &w.children[i];
        let action = c.on_tap.is_some()
            && c.id != "android:id/home"
            && ((in_toolbar && c.look == Look::Icon) || c.look == Look::Fab);
        if action {
            let c = w.children.remove(i);
            let label = [&c.desc, &c.text, &c.hint]
                .into_iter()
                .find(|s| s.chars().any(char::is_alphabetic))
                .cloned()
                .unwrap_or_else(|| "Action".into());
            out.push(DialogButton {
                id: c.id.clone(),
                text: label,
                cmd: c.on_tap.clone().unwrap_or(Cmd::Nop),
                key: c.key.clone(),
            });
            continue;
        }
        let toolbar = c.id == "toolbar";
        take_actions(&mut w.children[i], toolbar, out);
        i += 1;
    }
}

/// Moves an app's toolbar actions and floating button into a "More options" menu (see
/// the module doc). `root` is what `apps::build` returned.
pub fn overflow(root: &mut Widget, cx: &Ctx, seed: u64, package: &str) {
    let mut items = Vec::new();
    take_actions(root, false, &mut items);
    if items.is_empty() {
        return;
    }
    if mix(seed, &format!("overflow/{package}")) % 2 == 1 {
        items.reverse();
    }
    let menu = Dialog {
        buttons: items,
        ..Dialog::menu(package, OVERFLOW_KIND, vec![])
    };
    let more = Widget::image_button(
        action_slot(cx, 0),
        "More options",
        Symbol::MoreVert,
        Cmd::ShowDialog {
            dialog: Box::new(menu),
        },
    )
    .id(OVERFLOW_ID);
    if let Some(tb) = root.find_mut("toolbar") {
        tb.children.push(more);
    }
}

/// A destructive command's confirmation: its title and the confirming button's labels.
fn confirmation(cmd: &Cmd) -> Option<(&'static str, [&'static str; 2])> {
    Some(match cmd {
        Cmd::AlarmDelete { .. } => ("Delete alarm?", ["Delete", "Yes, delete"]),
        Cmd::ContactDelete { .. } => ("Delete contact?", ["Delete", "Yes, delete"]),
        Cmd::NoteDelete { .. } => ("Delete note?", ["Delete", "Yes, delete"]),
        Cmd::ShopRemove { .. } => ("Remove from cart?", ["Remove", "Yes, remove"]),
        _ => return None,
    })
}

/// Puts a confirmation before every destructive action of a tree (see the module doc).
/// The confirming button is always `android:id/button1` and Cancel `button2`, as in an
/// AlertDialog; the label and the order are seeded per app.
pub fn confirm(w: &mut Widget, seed: u64, package: &str) {
    if let Some(cmd) = w.on_tap.clone()
        && let Some((title, yes)) = confirmation(&cmd)
    {
        let h = mix(seed, &format!("confirm/{package}"));
        let cancel = ("android:id/button2", "Cancel", Cmd::CloseDialog);
        let ok = ("android:id/button1", yes[(h % 2) as usize], cmd);
        let [a, b] = if (h / 2).is_multiple_of(2) {
            [cancel, ok]
        } else {
            [ok, cancel]
        };
        let d = Dialog::alert(package, CONFIRM_KIND, title, "")
            .button(a.0, a.1, a.2)
            .button(b.0, b.1, b.2);
        w.on_tap = Some(Cmd::ShowDialog {
            dialog: Box::new(d),
        });
    }
    for c in &mut w.children {
        confirm(c, seed, package);
    }
}

/// The "what's new" dialog an app shows on its first open under `whats_new_dialog`.
pub fn whats_new(app: AppId, seed: u64) -> Dialog {
    // Title, message, button and the button's resource-id, as three apps might word it.
    const WORDING: [(&str, &str, &str, &str); 3] = [
        (
            "What's new",
            "A fresh new look: your actions have new places.",
            "Got it",
            "got_it_button",
        ),
        (
            "New in this version",
            "We redesigned the app. Some buttons have moved.",
            "Continue",
            "onboarding_continue",
        ),
        (
            "Welcome back",
            "Take a look around the new design.",
            "OK",
            "android:id/button1",
        ),
    ];
    let (title, message, ok, id) =
        WORDING[(mix(seed, &format!("intro/{}", app.package())) % 3) as usize];
    Dialog::alert(app.package(), WHATS_NEW_KIND, title, message).button(id, ok, Cmd::CloseDialog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Page;
    use crate::{SimConfig, SimDevice, SimFaults};
    use droidpilot_core::device::Device;
    use droidpilot_core::domain::{AppRef, PixelPoint};

    fn phone(faults: SimFaults) -> SimDevice {
        SimDevice::new(SimConfig {
            seed: 7,
            faults,
            ..SimConfig::default()
        })
        .unwrap()
    }

    /// The centre of the first widget on screen whose text or content-desc is `label`.
    fn at(p: &SimDevice, label: &str) -> PixelPoint {
        let screen = p.screen();
        let w = screen
            .all()
            .into_iter()
            .rev()
            .find(|w| w.text == label || w.desc == label)
            .unwrap_or_else(|| panic!("no `{label}` in {}", p.hierarchy_now()));
        w.bounds.center()
    }

    fn by_id(p: &SimDevice, id: &str) -> PixelPoint {
        let screen = p.screen();
        let w = screen.all().into_iter().rev().find(|w| w.id == id);
        w.unwrap_or_else(|| panic!("no `{id}`")).bounds.center()
    }

    /// Seeds vary what a user reads: the what's-new wording, the confirmation's label
    /// and button order, a grid's columns; one seed always gives the same.
    #[test]
    fn the_redesign_varies_with_the_seed() {
        let mut intros = std::collections::BTreeSet::new();
        let mut confirms = std::collections::BTreeSet::new();
        let mut cols = std::collections::BTreeSet::new();
        for seed in 0..12 {
            let d = whats_new(AppId::Clock, seed);
            assert_eq!(d, whats_new(AppId::Clock, seed));
            intros.insert(d.buttons[0].text.clone());
            let mut w = Widget::new("x", Bounds::new(0, 0, 1, 1)).tap(Cmd::AlarmDelete { id: 1 });
            confirm(&mut w, seed, "pkg");
            let Some(Cmd::ShowDialog { dialog }) = w.on_tap else {
                panic!("no confirmation")
            };
            let texts: Vec<_> = dialog.buttons.iter().map(|b| b.text.clone()).collect();
            confirms.insert(texts.join("|"));
            cols.insert(columns(seed, "contacts.list"));
        }
        assert_eq!(intros.len(), 3, "{intros:?}");
        assert_eq!(confirms.len(), 4, "{confirms:?}");
        assert_eq!(cols.len(), 2, "{cols:?}");
    }

    #[tokio::test]
    async fn icon_buttons_turn_a_text_button_into_an_icon_with_its_label_as_desc() {
        let p = phone(SimFaults {
            icon_buttons: true,
            ..SimFaults::default()
        });
        p.apply(Cmd::Launch {
            app: AppId::Contacts,
        });
        p.apply(Cmd::ContactNew);
        let xml = p.hierarchy_now();
        assert!(!xml.contains("text=\"Save\""), "{xml}");
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let save = doc
            .descendants()
            .find(|n| n.attribute("content-desc") == Some("Save"))
            .expect("the icon button");
        assert_eq!(save.attribute("class"), Some("android.widget.ImageButton"));
        assert_eq!(save.attribute("text"), Some(""));
        assert_ne!(phone(SimFaults::default()).render_now(), p.render_now());
        p.apply(Cmd::Focus {
            field: crate::state::field::CONTACT_NAME.into(),
        });
        p.type_text("Zed").await.unwrap();
        p.tap(at(&p, "Save")).await.unwrap();
        assert!(p.state().contacts.iter().any(|c| c.name == "Zed"));
    }

    #[test]
    fn list_to_grid_lays_rows_out_two_a_line() {
        let p = phone(SimFaults {
            list_to_grid: true,
            ..SimFaults::default()
        });
        p.apply(Cmd::Launch {
            app: AppId::Contacts,
        });
        let screen = p.screen();
        let list = crate::widget::find(&screen, "recycler_view").unwrap();
        let (a, b) = (&list.children[0], &list.children[1]);
        assert_eq!(a.bounds.top, b.bounds.top, "side by side");
        assert_eq!(a.bounds.right, b.bounds.left);
        assert_eq!(a.bounds.width(), 540);
        let c = &list.children[2];
        assert_eq!(
            c.bounds.top, a.bounds.bottom,
            "the third starts the next line"
        );
        let xml = p.hierarchy_now();
        let clean = phone(SimFaults::default()).hierarchy_now();
        assert!(xml.contains("text=\"Alice Martin\"") && xml != clean);
    }

    #[tokio::test]
    async fn overflow_menu_hides_an_action_behind_more_options() {
        let p = phone(SimFaults {
            overflow_menu: true,
            ..SimFaults::default()
        });
        p.launch_app(&AppRef::Label("Clock".into())).await.unwrap();
        let xml = p.hierarchy_now();
        assert!(!xml.contains("content-desc=\"Add alarm\""), "{xml}");
        assert!(xml.contains(&format!("id/{OVERFLOW_ID}\"")));
        p.tap(at(&p, "More options")).await.unwrap();
        let menu = p.hierarchy_now();
        assert!(menu.contains("text=\"Add alarm\""), "{menu}");
        p.tap(at(&p, "Add alarm")).await.unwrap();
        assert_eq!(p.state().page(), Some(&Page::AlarmEdit));
        assert!(p.state().dialog.is_none());
        // The menu item carries the key of the button it replaced.
        let log = p.touched();
        assert!(log.last().unwrap().key.starts_with("fab#"), "{log:?}");
    }

    #[tokio::test]
    async fn whats_new_shows_once_per_app_before_its_first_screen() {
        let p = phone(SimFaults {
            whats_new_dialog: true,
            ..SimFaults::default()
        });
        let delete = {
            let p = phone(SimFaults::default());
            p.apply(Cmd::Launch { app: AppId::Clock });
            at(&p, "Delete alarm")
        };
        p.launch_app(&AppRef::Label("Clock".into())).await.unwrap();
        let d = p.state().dialog.expect("the dialog");
        assert_eq!(d.kind, WHATS_NEW_KIND);
        let ok = d.buttons[0].id.clone();
        assert!(p.hierarchy_now().contains(&format!("{ok}\"")), "its button");
        // It is modal: a tap on the list behind it does nothing.
        let before = p.state().alarms.clone();
        p.tap(delete).await.unwrap();
        assert_eq!(p.state().alarms, before);
        assert!(p.state().dialog.is_some());
        p.tap(by_id(&p, &ok)).await.unwrap();
        assert!(p.state().dialog.is_none());
        p.key(droidpilot_core::domain::Key::Home).await.unwrap();
        p.launch_app(&AppRef::Label("Clock".into())).await.unwrap();
        assert!(p.state().dialog.is_none(), "once per app");
        p.launch_app(&AppRef::Label("Notes".into())).await.unwrap();
        assert_eq!(p.state().dialog.unwrap().kind, WHATS_NEW_KIND);
    }

    #[tokio::test]
    async fn a_new_confirmation_guards_a_delete_and_cancel_keeps_the_item() {
        let p = phone(SimFaults {
            confirm_destructive: true,
            ..SimFaults::default()
        });
        p.launch_app(&AppRef::Label("Clock".into())).await.unwrap();
        let n = p.state().alarms.len();
        p.tap(at(&p, "Delete alarm")).await.unwrap();
        let xml = p.hierarchy_now();
        assert!(xml.contains("text=\"Delete alarm?\""), "{xml}");
        assert_eq!(p.state().alarms.len(), n, "not yet");
        p.tap(by_id(&p, "android:id/button2")).await.unwrap();
        assert_eq!(p.state().alarms.len(), n, "Cancel keeps the alarm");
        p.tap(at(&p, "Delete alarm")).await.unwrap();
        p.tap(by_id(&p, "android:id/button1")).await.unwrap();
        assert_eq!(p.state().alarms.len(), n - 1, "Delete deletes one");
        assert!(p.state().dialog.is_none());
        // The long-press menu's Delete asks too.
        let left = &p.state().alarms[0];
        let label = crate::apps::clock::time_label(left.hour, left.minute);
        let screen = p.screen();
        let row = screen.all().into_iter().find(|w| w.text == label).unwrap();
        p.long_press(row.bounds.center(), 800).await.unwrap();
        p.tap(at(&p, "Delete")).await.unwrap();
        assert_eq!(p.state().dialog.unwrap().kind, CONFIRM_KIND);
    }

    #[test]
    fn the_redesign_turns_on_every_structural_drift_and_nothing_else() {
        let r = SimFaults::redesign();
        assert!(r.icon_buttons && r.list_to_grid && r.overflow_menu);
        assert!(r.whats_new_dialog && r.confirm_destructive);
        assert!(!r.moved_elements && !r.changed_labels && !r.renamed_ids);
        let d = SimFaults::default();
        assert!(!d.icon_buttons && !d.list_to_grid && !d.overflow_menu);
        assert!(!d.whats_new_dialog && !d.confirm_destructive);
    }
}
