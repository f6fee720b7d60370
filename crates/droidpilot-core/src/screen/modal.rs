//! `has_modal`: is something on top of the app that must be answered first?
//!
//! Three signals, any of which counts: the framework's dialog ids (`alertTitle`,
//! `parentPanel`, `buttonPanel`, also used by AppCompat dialogs under the app's own
//! package, and System UI's own alerts such as "Battery low"; not inside a keyboard
//! window, which reuses `parentPanel`); a window of the
//! permission controller or package installer; and a window
//! that floats (inset from the top-left corner) or covers most of the screen over another
//! app's window. Status bar and keyboard windows never count, nor do thin strips along
//! an edge (a tablet's taskbar, an edge panel's handle), whichever package owns them.

use super::tree::UiTree;

const DIALOG_IDS: [&str; 3] = ["alertTitle", "parentPanel", "buttonPanel"];

/// Keyboard windows (Gboard, SwiftKey, Samsung's), whose panels reuse dialog ids.
pub fn is_keyboard_package(pkg: &str) -> bool {
    pkg.contains("inputmethod")
        || pkg.contains("keyboard")
        || pkg.contains("honeyboard")
        || pkg.contains("swiftkey")
}

pub fn has_modal(tree: &UiTree) -> bool {
    let screen = tree.screen_bounds();
    if tree.nodes.iter().any(|n| {
        // Gboard's window is an `android:id/parentPanel` too; keyboards are not dialogs.
        n.visible
            && !n.resource_id.is_empty()
            && DIALOG_IDS.contains(&n.short_id())
            && !is_keyboard_package(&n.package)
    }) {
        return true;
    }
    let screen_area = screen.width() as i64 * screen.height() as i64;
    let mut app_seen: Option<&str> = None;
    for r in tree.app_windows() {
        let n = &tree.nodes[r];
        if n.package.contains("permissioncontroller") || n.package.contains("packageinstaller") {
            return true;
        }
        if n.bounds.left > 0 && n.bounds.top > 0 {
            return true;
        }
        let area = n.bounds.width() as i64 * n.bounds.height() as i64;
        match app_seen {
            None => app_seen = Some(&n.package),
            Some(p) if p != n.package && area * 10 >= screen_area * 8 => return true,
            Some(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::parse;

    fn win(pkg: &str, b: &str, id: &str) -> String {
        format!(
            r#"<node package="{pkg}" class="android.widget.FrameLayout" resource-id="{id}" bounds="{b}"/>"#
        )
    }

    fn modal(windows: &[String]) -> bool {
        has_modal(&parse(&format!("<hierarchy>{}</hierarchy>", windows.concat())).unwrap())
    }

    #[test]
    fn plain_app_with_status_bar_and_keyboard_is_not_modal() {
        assert!(!modal(&[
            win("com.app", "[0,0][1080,2400]", ""),
            win("com.android.systemui", "[0,0][1080,60]", ""),
            win(
                "com.google.android.inputmethod.latin",
                "[0,1500][1080,2400]",
                ""
            ),
        ]));
    }

    #[test]
    fn dialog_signals() {
        assert!(modal(&[win(
            "com.app",
            "[0,0][1080,2400]",
            "android:id/alertTitle"
        )]));
        assert!(modal(&[
            win("com.app", "[0,0][1080,2400]", ""),
            win(
                "com.google.android.permissioncontroller",
                "[0,0][1080,2400]",
                ""
            ),
        ]));
        assert!(modal(&[
            win("com.app", "[0,0][1080,2400]", ""),
            win("com.app", "[50,800][1030,1600]", ""),
        ]));
        assert!(modal(&[
            win("com.app", "[0,0][1080,2400]", ""),
            win("com.ads.overlay", "[0,0][1080,2400]", ""),
        ]));
    }
}
