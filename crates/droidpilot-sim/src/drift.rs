//! UI drift as an app update brings it: the layout moves and labels are reworded. Both
//! are transforms of an app's widget tree after it is built, seeded by the phone's seed
//! and the app's package, so the same seed always gives the same drifted screen. Touch
//! hit-testing, the dump and the screenshot all use the drifted tree, so a tap at the
//! old coordinates lands wherever the new layout put something else.
//!
//! - `moved_elements`: an "update" banner row is inserted under the toolbar and pushes
//!   the page's content down by one to two rows (seeded per app); content anchored to the
//!   bottom of the screen (bottom bars, floating buttons) stays. On the launcher the
//!   home-screen icon grid moves up by the same amount.
//! - `changed_labels`: the text of buttons is reworded (`Send` → `Send message`, `Save` →
//!   `Save changes`); labels without a known rewording get a seeded suffix.
//! - `release_layout`: what a release that renames ids and strings does to the layout
//!   around them, per app at the frequencies mined from real releases (`Release`): a new
//!   row under the toolbar, taller list rows, or nothing.

use droidpilot_core::domain::Bounds;

use super::ui::{Ctx, ROW};
use super::widget::{SUBTLE, SURFACE, TextSize, Widget};

/// The resource-id of the banner `moved_elements` inserts.
pub const BANNER_ID: &str = "update_banner";

/// A stable hash of the seed and a key (FNV-1a), so drift is the same on every build.
pub fn mix(seed: u64, key: &str) -> u64 {
    let mut h: u64 = seed ^ 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The layout shift for an app, in design pixels: one, one and a half, or two rows.
pub fn shift_for(seed: u64, package: &str) -> i32 {
    [ROW, ROW * 3 / 2, ROW * 2][(mix(seed, package) % 3) as usize]
}

/// Pushes an app's content down under a banner (see the module doc). `root` is what
/// `apps::build` returned: a frame holding `android:id/content`, whose first child is
/// the toolbar; `bottom` is the bottom of the app's area (`Ctx::bottom`: the keyboard's
/// top while it is up), to which bottom bars stay anchored.
pub fn move_app_content(root: &mut Widget, cx: &Ctx, bottom: i32, seed: u64, package: &str) {
    let dy = cx.d(shift_for(seed, package));
    let top = cx.content_top();
    let banner = Widget::text_view(
        Bounds::new(0, top, cx.w, top + dy),
        "What's new: this app was updated",
    )
    .id(BANNER_ID)
    .bg(SURFACE)
    .fg(SUBTLE)
    .size(TextSize::Small);
    push_content(root, cx, bottom, banner);
}

/// Inserts `row` under the toolbar and pushes the page's content down by its height;
/// bars anchored to `bottom` stay.
fn push_content(root: &mut Widget, cx: &Ctx, bottom: i32, row: Widget) {
    let dy = row.frame.height();
    let Some(content) = root.find_mut("android:id/content") else {
        return;
    };
    // Bars anchored to the bottom of the app's area (above the keyboard when it is up):
    // what ends there, as a compose bar does, or a floating button 60 above it. Told by
    // where a widget ends, not where it starts: on a short screen with the keyboard up a
    // form's lower fields start near the bottom too, and they move with the form.
    let anchored = |b: &Bounds| (bottom - cx.d(60) - 1..=bottom).contains(&b.bottom);
    for c in content.children.iter_mut().skip(1) {
        if !anchored(&c.frame) {
            c.shift(dy);
        }
    }
    content.children.insert(1, row);
    let screen = Bounds::new(0, 0, cx.w, cx.h);
    root.clip(&screen);
}

/// The layout change a release makes in an app around its renamed ids and strings
/// (`release_layout`). Mined from the commits that renamed an id in
/// `tests/fixtures/drift-real/pairs.tsv`: of 995 layout files (38 apps) whose ids a
/// commit renamed, the same commit added a view to 30%, changed only paddings, margins or
/// sizes in 14%, and left the rest of the layout as it was in 54%.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Ids and strings renamed, nothing moved.
    Same,
    /// A new row (a view added) under the toolbar pushes the page's content down.
    NewRow,
    /// List rows' vertical paddings grow (`SPACING` in all).
    Spacing,
}

/// How much taller a list row gets under `Release::Spacing`, in design pixels: 8 dp more
/// padding above and below.
pub const SPACING: i32 = 42;

/// The resource-id of the row `Release::NewRow` adds.
pub const RELEASE_ROW_ID: &str = "sync_status";

/// The layout change a release brings to `package` (seeded, at the mined frequencies).
pub fn release_layout(seed: u64, package: &str) -> Release {
    match mix(seed, &format!("release/{package}")) % 100 {
        0..30 => Release::NewRow,
        30..44 => Release::Spacing,
        _ => Release::Same,
    }
}

/// Adds `Release::NewRow`'s row: one row under the toolbar, the page below it.
pub fn release_row(root: &mut Widget, cx: &Ctx, bottom: i32) {
    let top = cx.content_top();
    let row = Widget::text_view(
        Bounds::new(cx.d(48), top, cx.w, top + cx.d(ROW)),
        "Backed up to your account",
    )
    .id(RELEASE_ROW_ID)
    .fg(SUBTLE)
    .size(TextSize::Small);
    push_content(root, cx, bottom, row);
}

/// Moves the launcher's home-screen icon grid up (see the module doc).
pub fn move_launcher(root: &mut Widget, cx: &Ctx, seed: u64, package: &str) {
    let dy = cx.d(shift_for(seed, package));
    if let Some(ws) = root.find_mut("workspace") {
        ws.shift(-dy);
    }
}

/// Known rewordings of button labels, as app updates make them.
const REWORDED: [(&str, &str); 13] = [
    ("Send", "Send message"),
    ("Send SMS", "Send message"),
    ("Save", "Save changes"),
    ("OK", "Confirm"),
    ("Cancel", "Dismiss"),
    ("Delete", "Delete now"),
    ("Add to cart", "Add to basket"),
    ("Checkout", "Go to checkout"),
    ("Place order", "Place your order"),
    ("Sign in", "Log in"),
    ("Allow", "Allow access"),
    ("Search", "Search now"),
    ("Done", "Finish"),
];

/// The drifted label for `text` in `package`: a known rewording, or a seeded suffix.
pub fn reword(seed: u64, package: &str, text: &str) -> String {
    if let Some((_, new)) = REWORDED
        .iter()
        .find(|(old, _)| old.eq_ignore_ascii_case(text))
    {
        return (*new).to_string();
    }
    const SUFFIX: [&str; 3] = [" now", " ›", "…"];
    format!("{text}{}", SUFFIX[(mix(seed, package) % 3) as usize])
}

/// Rewords the label of every button in the tree: a button's text when it has words
/// (not a picker's digits), an icon button's content-desc (not the system's up arrow).
pub fn relabel(w: &mut Widget, seed: u64, package: &str) {
    let worded = |t: &str| t.chars().any(char::is_alphabetic);
    if w.on_tap.is_some() && w.class.ends_with("Button") {
        if worded(&w.text) {
            w.text = reword(seed, package, &w.text);
        } else if w.text.is_empty() && worded(&w.desc) && w.id != "android:id/home" {
            w.desc = reword(seed, package, &w.desc);
        }
    }
    for c in &mut w.children {
        relabel(c, seed, package);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{AppId, Cmd};
    use crate::{SimConfig, SimDevice, SimFaults};

    fn phone(faults: SimFaults) -> SimDevice {
        SimDevice::new(SimConfig {
            seed: 7,
            faults,
            ..SimConfig::default()
        })
        .unwrap()
    }

    /// The bounds attribute of the first node whose text or desc is `label`.
    fn bounds_of(xml: &str, label: &str) -> Option<String> {
        let at = xml
            .find(&format!("text=\"{label}\""))
            .or_else(|| xml.find(&format!("content-desc=\"{label}\"")))?;
        let rest = &xml[at..];
        let b = rest.find("bounds=\"")? + 8;
        Some(rest[b..b + rest[b..].find('"')?].to_string())
    }

    fn top(bounds: &str) -> i32 {
        let inner = &bounds[1..bounds.find(']').unwrap()];
        inner.split(',').nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn moved_elements_push_app_content_down_under_a_banner() {
        let clean = phone(SimFaults::default());
        let moved = phone(SimFaults {
            moved_elements: true,
            ..SimFaults::default()
        });
        for p in [&clean, &moved] {
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
        }
        let (a, b) = (clean.hierarchy_now(), moved.hierarchy_now());
        assert!(!a.contains(BANNER_ID) && b.contains(BANNER_ID));
        let dy = shift_for(7, AppId::Contacts.package());
        let name = "Alice Martin";
        let (ta, tb) = (
            top(&bounds_of(&a, name).expect("a contact row")),
            top(&bounds_of(&b, name).expect("the row, moved")),
        );
        assert_eq!(tb - ta, dy, "the row moved down by the seeded shift");
        assert_eq!(moved.hierarchy_now(), b, "deterministic");
    }

    /// A bar anchored above the keyboard (a chat's compose bar) stays there: the banner
    /// pushes the page's content, never a bar under the keyboard.
    #[test]
    fn moved_elements_leave_a_bar_above_the_keyboard_where_it_is() {
        use crate::state::field;
        let clean = phone(SimFaults::default());
        let moved = phone(SimFaults {
            moved_elements: true,
            ..SimFaults::default()
        });
        for p in [&clean, &moved] {
            p.apply(Cmd::Launch {
                app: AppId::Messages,
            });
            p.apply(Cmd::OpenThread {
                contact: "Alice Martin".into(),
            });
            p.apply(Cmd::Focus {
                field: field::MSG_COMPOSE.into(),
            });
        }
        let send = |p: &SimDevice| bounds_of(&p.hierarchy_now(), "Send SMS").expect("send");
        assert_eq!(send(&moved), send(&clean));
    }

    fn bottom(bounds: &str) -> i32 {
        let second = &bounds[bounds.find("][").unwrap() + 2..bounds.len() - 1];
        second.split(',').nth(1).unwrap().parse().unwrap()
    }

    fn short_phone(faults: SimFaults) -> SimDevice {
        SimDevice::new(SimConfig {
            seed: 7,
            width: 1080,
            height: 1920,
            faults,
            ..SimConfig::default()
        })
        .unwrap()
    }

    /// The banner takes room from a list as a real layout gives it room: scrolled to its
    /// end, the list still shows its last row whole, on a short phone too.
    #[test]
    fn moved_elements_keep_a_lists_last_row_within_reach() {
        let p = short_phone(SimFaults {
            moved_elements: true,
            ..SimFaults::default()
        });
        p.apply(Cmd::Launch {
            app: AppId::Settings,
        });
        let mut st = p.state();
        st.scroll.insert("settings.main".into(), i32::MAX / 2);
        p.set_state(st);
        let xml = p.hierarchy_now();
        let last = bounds_of(&xml, "Accounts").expect("the last row, scrolled into view");
        assert!(bottom(&last) <= 1920, "whole on screen: {last}");
    }

    /// With the keyboard up on a short phone a sign-in form's lower fields start near the
    /// bottom; they still move with the form, so no field ends up over another.
    #[test]
    fn moved_elements_move_a_form_as_one() {
        use crate::state::{Page, field};
        let p = short_phone(SimFaults {
            moved_elements: true,
            ..SimFaults::default()
        });
        p.apply(Cmd::Launch {
            app: AppId::Settings,
        });
        p.apply(Cmd::Push {
            page: Page::SettingsAccount,
        });
        p.apply(Cmd::Focus {
            field: field::ACCOUNT_EMAIL.into(),
        });
        let xml = p.hierarchy_now();
        let email = bounds_of(&xml, "Email").expect("the email field");
        let sign_in = bounds_of(&xml, "Sign in").expect("the button");
        assert!(
            top(&sign_in) - top(&email) > 300,
            "the button kept its place below the field: {email} {sign_in}"
        );
    }

    #[test]
    fn moved_elements_move_the_home_screen_icons() {
        let clean = phone(SimFaults::default()).hierarchy_now();
        let moved = phone(SimFaults {
            moved_elements: true,
            ..SimFaults::default()
        })
        .hierarchy_now();
        let (ta, tb) = (
            top(&bounds_of(&clean, "Messages").unwrap()),
            top(&bounds_of(&moved, "Messages").unwrap()),
        );
        assert!(tb < ta, "icons moved up: {ta} -> {tb}");
    }

    #[test]
    fn changed_labels_reword_buttons_only() {
        let clean = phone(SimFaults::default());
        let drifted = phone(SimFaults {
            changed_labels: true,
            ..SimFaults::default()
        });
        for p in [&clean, &drifted] {
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
            p.apply(Cmd::ContactNew);
        }
        let (a, b) = (clean.hierarchy_now(), drifted.hierarchy_now());
        assert!(a.contains("text=\"Save\""));
        assert!(b.contains("text=\"Save changes\"") && !b.contains("text=\"Save\""));
        assert!(
            b.contains("content-desc=\"Navigate up\""),
            "system chrome keeps its label"
        );
        assert_eq!(reword(1, "x", "Send SMS"), "Send message");
        assert!(reword(1, "x", "Buy").starts_with("Buy") && reword(1, "x", "Buy") != "Buy");
    }

    /// Under delayed elements a list shows a sync row on top that pushes its rows down,
    /// until its content has loaded; then the rows are where a clean phone has them.
    #[test]
    fn a_syncing_list_pushes_its_rows_down_until_it_has_loaded() {
        let clean = phone(SimFaults::default());
        let slow = phone(SimFaults {
            delayed_elements_ms: 2_000,
            ..SimFaults::default()
        });
        for p in [&clean, &slow] {
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
        }
        let name = "Alice Martin";
        let at = |p: &SimDevice| top(&bounds_of(&p.hierarchy_now(), name).expect("a row"));
        let syncing = slow.hierarchy_now();
        assert!(syncing.contains(crate::ui::SYNC_ID), "{syncing}");
        assert_eq!(at(&slow) - at(&clean), super::ROW, "one row down");
        slow.advance_clock(2_000);
        assert!(!slow.hierarchy_now().contains(crate::ui::SYNC_ID));
        assert_eq!(at(&slow), at(&clean), "loaded: back in place");
    }

    /// A release's layout change is drawn per app at the frequencies mined from real
    /// releases (a view added 30%, paddings or sizes only 14%, nothing else 54%).
    #[test]
    fn release_layouts_follow_the_mined_frequencies() {
        let mut n = [0; 3];
        for seed in 0..300 {
            for app in ["a.one", "b.two", "c.three", "d.four"] {
                n[release_layout(seed, app) as usize] += 1;
            }
        }
        let pct = |i: usize| n[i] * 100 / 1200;
        assert!((25..=35).contains(&pct(1)), "new row {n:?}");
        assert!((10..=18).contains(&pct(2)), "spacing {n:?}");
        assert!((49..=60).contains(&pct(0)), "same {n:?}");
    }

    /// The seed whose release gives `app` the layout `kind`.
    fn seed_for(app: AppId, kind: Release) -> u64 {
        (0..)
            .find(|s| release_layout(*s, app.package()) == kind)
            .unwrap()
    }

    fn release_phone(seed: u64) -> SimDevice {
        SimDevice::new(SimConfig {
            seed,
            faults: SimFaults {
                release_layout: true,
                ..SimFaults::default()
            },
            ..SimConfig::default()
        })
        .unwrap()
    }

    fn centre_and_half(bounds: &str) -> (i32, i32) {
        let (t, b) = (top(bounds), bottom(bounds));
        ((t + b) / 2, (b - t) / 2)
    }

    /// Under a release's new row or larger paddings a contact's row is no longer where a
    /// tap recorded before the update would land: its centre moved by more than half its
    /// height. A release without a layout change leaves it where it was.
    #[test]
    fn a_release_layout_moves_a_rows_centre_beyond_its_half_height() {
        let name = "Carol White";
        let at = |seed: u64, release: bool| {
            let p = if release {
                release_phone(seed)
            } else {
                phone(SimFaults::default())
            };
            p.apply(Cmd::Launch {
                app: AppId::Contacts,
            });
            let xml = p.hierarchy_now();
            centre_and_half(&bounds_of(&xml, name).expect("the row"))
        };
        let (clean, half) = at(7, false);
        for kind in [Release::NewRow, Release::Spacing] {
            let seed = seed_for(AppId::Contacts, kind);
            let (moved, _) = at(seed, true);
            assert!(moved - clean > half, "{kind:?}: {clean} -> {moved}");
            let xml = release_phone(seed).hierarchy_now();
            assert!(
                !xml.contains(RELEASE_ROW_ID),
                "the launcher keeps its layout"
            );
        }
        let (same, _) = at(seed_for(AppId::Contacts, Release::Same), true);
        assert_eq!(same, clean);
    }

    #[test]
    fn drifts_are_off_by_default() {
        let f = SimFaults::default();
        assert!(!f.moved_elements && !f.changed_labels);
    }
}
