//! Layout hash: "did the screen change?" in one `u64`, for stuck and loop detection.
//!
//! Hashed: class, resource-id, bounds quantized to 1/64 of the screen, and the
//! checked/selected/enabled/focused state of every visible node of the app's windows.
//! Not hashed: the status bar and keyboards (clocks, battery, notification icons) and
//! the digits of any text (`12:30` → `##:##`, `3 unread` → `# unread`), so a screen that
//! only ticks by itself keeps its hash while typing, navigating or toggling changes it.
//!
//! `content_hash` is the same with the digits kept: "did anything the user could read
//! change?", for the stuck detector, where a counter that moves (tapping "Build number"
//! while the toast counts down, a minute wheel turning) is progress, not a loop.
//!
//! FNV-1a, hand-written: eight lines, no dependency, and stable across processes and
//! Rust versions (std's `DefaultHasher` is not), so hashes can be stored.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::tree::{UiTree, is_system_overlay_package};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LayoutHash(pub u64);

impl fmt::Display for LayoutHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn num(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }
}

/// The layout hash of `tree`: digits do not count.
pub fn layout_hash(tree: &UiTree) -> LayoutHash {
    tree_hash(tree, false)
}

/// The layout hash with the digits of every text counted too.
pub fn content_hash(tree: &UiTree) -> LayoutHash {
    tree_hash(tree, true)
}

fn tree_hash(tree: &UiTree, digits: bool) -> LayoutHash {
    let screen = tree.screen_bounds();
    let qx = (screen.width() / 64).max(1);
    let qy = (screen.height() / 64).max(1);
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut skip_below: Option<u16> = None;
    for (i, n) in tree.nodes.iter().enumerate() {
        if let Some(d) = skip_below {
            if n.depth > d {
                continue;
            }
            skip_below = None;
        }
        if !tree.is_on_screen(i, &screen)
            || (n.parent.is_none() && is_system_overlay_package(&n.package))
        {
            skip_below = Some(n.depth);
            continue;
        }
        h.num(n.depth as i64);
        h.bytes(n.class.as_bytes());
        h.bytes(n.resource_id.as_bytes());
        let b = n.bounds;
        for v in [b.left / qx, b.top / qy, b.right / qx, b.bottom / qy] {
            h.num(v as i64);
        }
        let state = n.checked as u8
            | (n.selected as u8) << 1
            | (n.enabled as u8) << 2
            | (n.focused as u8) << 3;
        h.bytes(&[state]);
        for s in [&n.text, &n.content_desc] {
            for c in s.chars() {
                let c = if !digits && c.is_numeric() { '#' } else { c };
                let mut buf = [0u8; 4];
                h.bytes(c.encode_utf8(&mut buf).as_bytes());
            }
            h.bytes(&[0]);
        }
    }
    LayoutHash(h.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::parse;

    fn dump(clock: &str, title: &str, checked: bool, x: i32) -> String {
        format!(
            r#"<hierarchy><node class="android.widget.FrameLayout" package="com.app" bounds="[0,0][1080,2400]"><node class="android.widget.TextView" text="{title}" bounds="[{x},100][500,200]"/><node class="android.widget.Switch" checkable="true" checked="{checked}" bounds="[0,300][1080,400]"/><node class="android.widget.TextView" text="{clock} · 3 new" bounds="[0,500][300,600]"/></node><node class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,60]"><node class="android.widget.TextView" text="{clock}" bounds="[0,0][100,60]"/></node></hierarchy>"#
        )
    }

    fn h(s: &str) -> LayoutHash {
        layout_hash(&parse(s).unwrap())
    }

    #[test]
    fn ignores_clocks_and_counters() {
        assert_eq!(
            h(&dump("12:30", "Wi-Fi", false, 0)),
            h(&dump("12:31", "Wi-Fi", false, 0))
        );
    }

    #[test]
    fn the_content_hash_counts_digits_but_not_the_status_bar() {
        let c =
            |clock: &str, title: &str| content_hash(&parse(&dump(clock, title, false, 0)).unwrap());
        // The in-app text "12:30 · 3 new" changed: progress for the stuck detector.
        assert_ne!(c("12:30", "Wi-Fi"), c("12:31", "Wi-Fi"));
        assert_ne!(c("12:30", "Wi-Fi"), c("12:30", "Bluetooth"));
        // Only the status bar's clock changed: the same screen.
        let status_only = |clock: &str| {
            let d = dump("12:30", "Wi-Fi", false, 0);
            let (app, bar) = d.split_at(d.find("com.android.systemui").unwrap());
            content_hash(&parse(&format!("{app}{}", bar.replace("12:30", clock))).unwrap())
        };
        assert_eq!(status_only("12:30"), status_only("12:45"));
    }

    #[test]
    fn changes_on_navigation_toggles_and_moves() {
        let base = h(&dump("12:30", "Wi-Fi", false, 0));
        assert_ne!(base, h(&dump("12:30", "Bluetooth", false, 0)));
        assert_ne!(base, h(&dump("12:30", "Wi-Fi", true, 0)));
        assert_ne!(base, h(&dump("12:30", "Wi-Fi", false, 200)));
        // A move smaller than the 1/64 grid is noise (a scroll settling by a pixel).
        assert_eq!(base, h(&dump("12:30", "Wi-Fi", false, 1)));
    }
}
