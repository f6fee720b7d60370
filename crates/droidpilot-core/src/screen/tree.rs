//! `UiTree`: one uiautomator dump as an arena of `UiNode`s in document (pre-)order.
//!
//! An arena rather than boxed children keeps a dump in two allocations-per-node at most,
//! lets callers hold plain `usize` handles, and lets whole-tree walks be a slice iteration.
//! Every window of the dump is kept: `roots` lists each top-level `<node>` (app, status
//! bar, keyboard, dialog…), in the order uiautomator wrote them.

use serde::Serialize;

use crate::domain::{Bounds, ElementSource};

/// A parsed hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiTree {
    /// `rotation` of `<hierarchy>` (0–3), when the dump carries it.
    pub rotation: Option<u8>,
    /// All nodes, parents before children, siblings in document order.
    pub nodes: Vec<UiNode>,
    /// The top-level nodes (one per window).
    pub roots: Vec<usize>,
}

/// One `<node>` with every attribute generation seen in the wild.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct UiNode {
    /// Index path by position among siblings, roots first: `0.1.2`. Unique in a tree,
    /// unlike the `index` attribute (every window root says `index="0"`).
    pub path: String,
    pub depth: u16,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// The `index` attribute as written, when present and numeric.
    pub index: Option<u32>,
    pub text: String,
    pub resource_id: String,
    pub class: String,
    pub package: String,
    pub content_desc: String,
    pub hint: String,
    pub bounds: Bounds,
    pub checkable: bool,
    pub checked: bool,
    pub clickable: bool,
    pub long_clickable: bool,
    pub enabled: bool,
    pub focusable: bool,
    pub focused: bool,
    pub scrollable: bool,
    pub selected: bool,
    pub password: bool,
    /// `visible-to-user`; dumps that predate the attribute count as visible.
    pub visible: bool,
    /// `NAF="true"`: uiautomator found a clickable node with no accessible label.
    pub naf: bool,
    pub drawing_order: Option<i32>,
    pub display_id: Option<i32>,
    /// Where the node came from: the dump, or OCR of the screenshot (`screen::ocr`).
    pub source: ElementSource,
    /// What OCR read on the node (empty when OCR did not run or read nothing there).
    pub ocr_text: String,
}

/// Classes that take typed text even when the dump does not say `focusable`.
const EDIT_CLASSES: [&str; 4] = [
    "EditText",
    "AutoCompleteTextView",
    "MultiAutoCompleteTextView",
    "SearchView$SearchAutoComplete",
];

impl UiNode {
    /// `android.widget.Button` → `Button`.
    pub fn short_class(&self) -> &str {
        short_class(&self.class)
    }

    /// `com.app:id/btn_send` → `btn_send`; ids without `:id/` are returned whole.
    pub fn short_id(&self) -> &str {
        short_id(&self.resource_id)
    }

    /// Takes typed text (`set_text`).
    pub fn is_editable(&self) -> bool {
        let c = self.short_class();
        EDIT_CLASSES.contains(&c) || c.ends_with("EditText")
    }

    /// A web page's host view (`android.webkit.WebView`, Chrome's page too). Inside one,
    /// the page's own containers report bounds that need not hold their children.
    pub fn is_web_view(&self) -> bool {
        self.short_class().ends_with("WebView")
    }

    /// Clickable, long-clickable, editable, scrollable or checkable.
    pub fn is_actionable(&self) -> bool {
        self.clickable
            || self.long_clickable
            || self.scrollable
            || self.checkable
            || self.is_editable()
    }
}

pub fn short_class(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

pub fn short_id(id: &str) -> &str {
    match id.find(":id/") {
        Some(i) => &id[i + 4..],
        None => id,
    }
}

/// A window at most a tenth of the screen thick (a taskbar, a navigation strip, an edge
/// panel's handle): chrome around the app, never the app or a dialog, whoever owns it.
pub(crate) fn is_strip(window: &Bounds, screen: &Bounds) -> bool {
    let thin = |size: i32, of: i32| i64::from(size) * 10 <= i64::from(of);
    thin(window.width(), screen.width()) || thin(window.height(), screen.height())
}

/// Packages whose windows float over the app rather than being the app.
pub(crate) fn is_system_overlay_package(pkg: &str) -> bool {
    pkg == "com.android.systemui"
        || pkg.starts_with("miui.systemui")
        || pkg.contains("inputmethod")
        || pkg.contains("keyboard")
        || pkg.contains("honeyboard")
        || pkg.contains("swiftkey")
        || pkg.ends_with(".aod")
}

impl UiTree {
    /// The node with this index path (`"0.1.2"`), if any.
    pub fn node_by_path(&self, path: &str) -> Option<usize> {
        let mut cur: Option<usize> = None;
        for part in path.split('.') {
            let i: usize = part.trim().parse().ok()?;
            let list = match cur {
                None => &self.roots,
                Some(n) => &self.nodes[n].children,
            };
            cur = Some(*list.get(i)?);
        }
        cur
    }

    /// The screen rectangle: from the origin to the furthest edge of any window. Dumps do
    /// not record the display size, and a floating dialog alone would otherwise be mistaken
    /// for the whole screen.
    pub fn screen_bounds(&self) -> Bounds {
        let mut b = Bounds::new(0, 0, 0, 0);
        for &r in &self.roots {
            let nb = self.nodes[r].bounds;
            b.right = b.right.max(nb.right);
            b.bottom = b.bottom.max(nb.bottom);
        }
        b
    }

    /// The foreground app: the package of the first window (uiautomator writes the
    /// top-most first) that is an app's window: not the status bar or a keyboard, and not
    /// a thin strip along an edge (`is_strip`: a tablet's taskbar, an edge-panel handle),
    /// whatever its package. Else the first window's package.
    pub fn app_package(&self) -> Option<&str> {
        let pkg = |r: &usize| self.nodes[*r].package.as_str();
        self.app_windows()
            .map(|r| pkg(&r))
            .find(|p| !p.is_empty())
            .or_else(|| self.roots.iter().map(pkg).find(|p| !p.is_empty()))
    }

    /// The windows that can be an app or a dialog, top-most first: every root but the
    /// system overlays (status bar, keyboards), empty windows and thin strips.
    pub fn app_windows(&self) -> impl Iterator<Item = usize> + '_ {
        let screen = self.screen_bounds();
        self.roots.iter().copied().filter(move |&r| {
            let n = &self.nodes[r];
            !is_system_overlay_package(&n.package)
                && !n.bounds.is_empty()
                && !is_strip(&n.bounds, &screen)
        })
    }

    /// Ancestors of `node`, nearest first.
    pub fn ancestors(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.nodes[node].parent, move |&p| self.nodes[p].parent)
    }

    /// `node` and all its descendants, in document order. Relies on the arena being
    /// pre-order: a subtree is a contiguous range.
    pub fn subtree(&self, node: usize) -> std::ops::Range<usize> {
        let depth = self.nodes[node].depth;
        let end = self.nodes[node + 1..]
            .iter()
            .position(|n| n.depth <= depth)
            .map_or(self.nodes.len(), |p| node + 1 + p);
        node..end
    }

    /// Whether something on screen says "loading": a visible progress indicator
    /// (`ProgressBar` and its subclasses, Material's `…ProgressIndicator`). A screen that
    /// holds still while one shows is still expecting content.
    pub fn shows_progress(&self) -> bool {
        let screen = self.screen_bounds();
        (0..self.nodes.len()).any(|i| {
            let c = self.nodes[i].short_class();
            (c.ends_with("ProgressBar") || c.ends_with("ProgressIndicator"))
                && self.is_on_screen(i, &screen)
        })
    }

    /// Whether a node can be seen: `visible-to-user`, non-empty and at least partly on
    /// the screen.
    pub fn is_on_screen(&self, node: usize, screen: &Bounds) -> bool {
        let n = &self.nodes[node];
        n.visible && !n.bounds.is_empty() && !n.bounds.intersect(screen).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_class("android.widget.Button"), "Button");
        assert_eq!(short_class("Button"), "Button");
        assert_eq!(short_id("com.app:id/btn_send"), "btn_send");
        assert_eq!(short_id("android:id/title"), "title");
        assert_eq!(short_id("plain"), "plain");
    }

    #[test]
    fn editable_classes() {
        let mut n = UiNode {
            class: "android.widget.EditText".into(),
            ..Default::default()
        };
        assert!(n.is_editable() && n.is_actionable());
        n.class = "androidx.appcompat.widget.AppCompatEditText".into();
        assert!(n.is_editable());
        n.class = "android.widget.TextView".into();
        assert!(!n.is_editable() && !n.is_actionable());
    }
}
