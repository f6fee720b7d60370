//! The overflow ("More options", ⋮) button of a toolbar, recognised by Android's structure,
//! so replay can look for a step's target that an update moved into the overflow menu.
//!
//! A button is the overflow button when it is reachable, clickable and has no text, and
//! one of these holds:
//! - it is the last child of an `ActionMenuView` and has no id (how the framework's and
//!   AppCompat's action bars add it: `ActionMenuPresenter$OverflowMenuButton`, reported as
//!   an `ImageView`/`ImageButton`);
//! - its class says so (`…OverflowMenuButton`), or its id's words do (`overflow`, `more`:
//!   `overflow_menu`, `action_overflow`, `btn_more`);
//! - its description is the framework's and AppCompat's English one, "More options"
//!   (a translated phone still has the id or the action-bar structure).
//!
//! Exactly one such button, or none: two candidates are no clear overflow. A trailing
//! icon in a toolbar is not enough by itself (it can be "Delete"), so nothing is tapped on
//! position alone.

use super::find::{modal_root, reachable};
use super::similar::{id_words, label_words};
use crate::screen::Screen;

/// The overflow button on `screen`, if exactly one button is one.
pub fn button(screen: &Screen) -> Option<usize> {
    let tree = &screen.tree;
    let modal = modal_root(screen);
    let found: Vec<usize> = (0..tree.nodes.len())
        .filter(|&i| {
            let n = &tree.nodes[i];
            n.clickable && n.enabled && n.text.trim().is_empty() && reachable(screen, modal, i)
        })
        .filter(|&i| is_overflow(screen, i))
        .collect();
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

fn is_overflow(screen: &Screen, i: usize) -> bool {
    let tree = &screen.tree;
    let n = &tree.nodes[i];
    let last_in_action_menu = n.resource_id.is_empty()
        && n.parent.is_some_and(|p| {
            tree.nodes[p].short_class().ends_with("ActionMenuView")
                && tree.nodes[p].children.last() == Some(&i)
        });
    let ids = id_words(&n.resource_id);
    let desc = label_words(&n.content_desc);
    last_in_action_menu
        || n.short_class().ends_with("OverflowMenuButton")
        || ids.iter().any(|w| w == "overflow" || w == "more")
        || desc == ["more", "options"]
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

    fn toolbar(icons: &str) -> Screen {
        let xml = format!(
            r#"<?xml version="1.0"?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="app" content-desc="" bounds="[0,0][1080,2400]"><node index="0" text="" resource-id="app:id/toolbar" class="android.view.ViewGroup" package="app" content-desc="" bounds="[0,0][1080,200]">{icons}</node></node></hierarchy>"#
        );
        Screen::from_xml(&xml, &ReprOptions::default()).unwrap()
    }

    fn icon(id: &str, desc: &str, class: &str, left: u32) -> String {
        format!(
            r#"<node index="0" text="" resource-id="{id}" class="{class}" package="app" content-desc="{desc}" clickable="true" enabled="true" bounds="[{left},20][{r},180]"/>"#,
            r = left + 140
        )
    }

    /// Real dumps: Google Calculator's ⋮ ("More options", no id) is found; a Settings
    /// list, a permission dialog and a chat screen have none.
    #[test]
    fn real_overflow_buttons_are_found_and_nothing_else() {
        let calc = real("009__SebasRiosR__AutomatorAccenture__uidump.xml");
        let b = button(&calc).expect("the calculator's overflow");
        assert_eq!(calc.tree.nodes[b].content_desc, "More options");
        for dump in [
            "002__zytzjx__anthenacmc__dump1.xml",
            "005__Ferruolo__chaos-monkey-ai__window_dump.xml",
            "026__Chegolin123__helper-android__ui6_v2.xml",
        ] {
            assert_eq!(button(&real(dump)), None, "{dump}");
        }
    }

    /// By structure: the id-less last child of an `ActionMenuView`, whatever its
    /// description's language; by id; never a trailing icon on its place alone.
    #[test]
    fn the_overflow_is_told_by_structure_not_by_place() {
        let menu = format!(
            r#"<node index="0" text="" resource-id="" class="androidx.appcompat.widget.ActionMenuView" package="app" content-desc="" bounds="[700,0][1080,200]">{}{}</node>"#,
            icon(
                "app:id/action_search",
                "Suchen",
                "android.widget.TextView",
                700
            ),
            icon("", "Weitere Optionen", "android.widget.ImageView", 900),
        );
        let s = toolbar(&menu);
        let b = button(&s).expect("the action menu's last child");
        assert_eq!(s.tree.nodes[b].content_desc, "Weitere Optionen");
        let s = toolbar(&icon(
            "app:id/menu_overflow",
            "",
            "android.widget.ImageButton",
            900,
        ));
        assert!(button(&s).is_some(), "by its id");
        let s = toolbar(&icon(
            "app:id/delete",
            "Delete",
            "android.widget.ImageButton",
            900,
        ));
        assert_eq!(button(&s), None, "a trailing delete icon is no overflow");
    }
}
