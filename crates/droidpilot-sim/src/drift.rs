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
//!   around them, per app at the frequencies mined from real releases (`Release`, `MINED`):
//!   a view added where those releases added one (under the toolbar, in the middle of the
//!   page, after its views, or a line in every list row: `Place`), taller list rows, or
//!   nothing.

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
/// `tests/fixtures/drift-real/pairs.tsv`, file by file (995 layout files, 38 apps), into
/// `tests/fixtures/drift-real/layout/changes.tsv` by `mining/layout.py`: whether the same
/// commit added a view, and where (`MINED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Ids and strings renamed, nothing moved: no other change, views removed (the sim
    /// keeps every view a task needs), or a view added beside or over the others.
    Same,
    /// A view added where it takes vertical room (`Place`).
    NewView(Place),
    /// List rows' vertical paddings grow (`SPACING` in all).
    Spacing,
}

/// Where a release's added view goes, as the mined commits put it: in the screen's own
/// layout or in a list row's, before the views that were there (`First`), between them
/// (`Middle`) or after them (`Last`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A row under the toolbar: the page's content moves down.
    ScreenFirst,
    /// A row between the page's views near its middle: what is below moves down.
    ScreenMiddle,
    /// A row after the page's views: a list's viewport ends that much higher.
    ScreenLast,
    /// A line in every list row: above its texts, between its first text and the rest,
    /// or below them; every row grows by the line, the rows below move down.
    RowFirst,
    RowMiddle,
    RowLast,
}

/// What the mined commits did to the layout files whose ids they renamed, one entry per
/// kind, with the number of files (of 995) it happened to. An added view counts by the
/// first one in the file; `only` (a new container's first child) counts as first; a view
/// added in a horizontal row, or placed over the others (a frame, a constraint layout
/// with no constraint to a sibling), takes no vertical room. A test recounts this from
/// the fixture.
pub const MINED: [(&str, Release, u32); 11] = [
    (
        "screen vertical first",
        Release::NewView(Place::ScreenFirst),
        21,
    ),
    (
        "screen vertical middle",
        Release::NewView(Place::ScreenMiddle),
        74,
    ),
    (
        "screen vertical last",
        Release::NewView(Place::ScreenLast),
        26,
    ),
    ("row vertical first", Release::NewView(Place::RowFirst), 2),
    ("row vertical middle", Release::NewView(Place::RowMiddle), 7),
    ("row vertical last", Release::NewView(Place::RowLast), 7),
    ("added beside or over", Release::Same, 122),
    ("spacing", Release::Spacing, 103),
    ("removed", Release::Same, 85),
    ("none", Release::Same, 548),
    ("unparsed", Release::Same, 0),
];

/// How much taller a list row gets under `Release::Spacing`, in design pixels: 8 dp more
/// padding above and below.
pub const SPACING: i32 = 42;

/// The resource-id of the row `Release::NewView` adds to a screen.
pub const RELEASE_ROW_ID: &str = "sync_status";

/// The resource-id of the line `Release::NewView` adds to each list row.
pub const RELEASE_LINE_ID: &str = "item_status";

/// The layout change a release brings to `package` (seeded, at the mined frequencies).
pub fn release_layout(seed: u64, package: &str) -> Release {
    let total: u32 = MINED.iter().map(|m| m.2).sum();
    let mut at = (mix(seed, &format!("release/{package}")) % u64::from(total)) as u32;
    for (_, release, n) in MINED {
        if at < n {
            return release;
        }
        at -= n;
    }
    Release::Same
}

/// The room a release's new screen row takes from a list, in device pixels: a row under
/// the toolbar or after the page's views shortens the list's viewport by its height (as
/// a real layout gives it room), as does one in the middle, which the list makes room for
/// by ending higher too.
pub fn list_room(release: Release, cx: &Ctx) -> i32 {
    match release {
        Release::NewView(Place::ScreenFirst | Place::ScreenMiddle | Place::ScreenLast) => cx.d(ROW),
        _ => 0,
    }
}

fn release_widget(cx: &Ctx, top: i32) -> Widget {
    Widget::text_view(
        Bounds::new(cx.d(48), top, cx.w, top + cx.d(ROW)),
        "Backed up to your account",
    )
    .id(RELEASE_ROW_ID)
    .fg(SUBTLE)
    .size(TextSize::Small)
}

/// Adds a release's new screen row where `place` says; `bottom` is the bottom of the
/// app's area (bars anchored there stay). Row places are laid out by the list
/// (`release_line`).
pub fn release_row(root: &mut Widget, cx: &Ctx, bottom: i32, place: Place) {
    match place {
        Place::ScreenFirst => push_content(root, cx, bottom, release_widget(cx, cx.content_top())),
        Place::ScreenMiddle => insert_middle(root, cx, bottom),
        Place::ScreenLast => insert_last(root, cx, bottom),
        _ => {}
    }
}

/// Whether a widget is a bar anchored to the bottom of the app's area (see
/// `push_content`).
fn is_anchored(b: &Bounds, cx: &Ctx, bottom: i32) -> bool {
    (bottom - cx.d(60) - 1..=bottom).contains(&b.bottom)
}

/// Every widget's shown bounds under `w`, with whether it has no children.
fn frames(w: &Widget, out: &mut Vec<(Bounds, bool)>) {
    for c in &w.children {
        out.push((c.bounds, c.children.is_empty()));
        frames(c, out);
    }
}

/// The page's views under the toolbar, as (frame, is a leaf), bars anchored at the bottom
/// left out.
fn page_frames(content: &Widget, cx: &Ctx, bottom: i32) -> Vec<(Bounds, bool)> {
    let mut out = Vec::new();
    for c in content.children.iter().skip(1) {
        if !is_anchored(&c.frame, cx, bottom) {
            out.push((c.bounds, c.children.is_empty()));
            frames(c, &mut out);
        }
    }
    out
}

/// A row between the page's views: at the first top at or below the middle of the page
/// where no view shorter than half the page is cut (a list or a scrolling page may
/// span it: it makes room).
fn insert_middle(root: &mut Widget, cx: &Ctx, bottom: i32) {
    let dy = cx.d(ROW);
    let Some(content) = root.find_mut("android:id/content") else {
        return;
    };
    let top = cx.content_top();
    let mid = (top + bottom) / 2;
    let all = page_frames(content, cx, bottom);
    let cuts = |y: i32| {
        all.iter()
            .any(|(b, _)| b.top < y && y < b.bottom && b.height() * 2 < bottom - top)
    };
    let mut tops: Vec<i32> = all
        .iter()
        .map(|(b, _)| b.top)
        .filter(|t| *t >= mid)
        .collect();
    tops.sort_unstable();
    let Some(y) = tops.into_iter().find(|&y| !cuts(y) && y + dy <= bottom) else {
        return insert_last(root, cx, bottom);
    };
    for c in content.children.iter_mut().skip(1) {
        if !is_anchored(&c.frame, cx, bottom) {
            open_below(c, y, dy);
        }
    }
    content.children.insert(1, release_widget(cx, y));
    root.clip(&Bounds::new(0, 0, cx.w, cx.h));
}

/// Opens a gap of `dy` at `y`: what starts there or below moves down, what spans it
/// grows (a view that ends at `y` stays as it is, unlike `Widget::open_gap`).
fn open_below(w: &mut Widget, y: i32, dy: i32) {
    if w.frame.top >= y {
        w.shift(dy);
    } else if w.frame.bottom > y {
        w.frame.bottom += dy;
        w.bounds.bottom += dy;
        for c in &mut w.children {
            open_below(c, y, dy);
        }
    }
}

/// A row after the page's views: below the lowest one, when it fits above the bars
/// anchored at the bottom (a floating button floats over it; a long page has it below
/// the fold, where it moves nothing).
fn insert_last(root: &mut Widget, cx: &Ctx, bottom: i32) {
    let dy = cx.d(ROW);
    let Some(content) = root.find_mut("android:id/content") else {
        return;
    };
    let bars = content
        .children
        .iter()
        .skip(1)
        .filter(|c| is_anchored(&c.frame, cx, bottom) && c.frame.width() * 2 > cx.w)
        .map(|c| c.frame.top)
        .min()
        .unwrap_or(bottom);
    let all = page_frames(content, cx, bottom);
    let y = all
        .iter()
        .map(|(b, _)| b.bottom)
        .max()
        .unwrap_or(cx.content_top())
        .max(cx.content_top());
    if y + dy <= bars {
        content.children.insert(1, release_widget(cx, y));
    }
}

/// Adds a release's new line to a list row laid out from its own top (`Place::Row*`):
/// above its views, after its first text, or below them; the row grows by the line and
/// what is below the line in it moves down.
pub fn release_line(row: &mut Widget, cx: &Ctx, place: Place) {
    let line = super::render::line_height(TextSize::Small, cx.font_scale, cx.s);
    let first = row
        .children
        .iter()
        .find(|c| !c.text.is_empty())
        .map(|c| c.frame);
    let y = match place {
        Place::RowFirst => row.frame.top,
        Place::RowMiddle => first.map_or(row.frame.bottom, |b| b.bottom.min(row.frame.bottom)),
        Place::RowLast => row.frame.bottom,
        _ => return,
    };
    for c in &mut row.children {
        open_below(c, y, line);
    }
    row.frame.bottom += line;
    row.bounds.bottom += line;
    let left = first.map_or(cx.d(48), |b| b.left);
    let right = first
        .map_or(row.frame.right - cx.d(48), |b| b.right)
        .max(left + 1);
    let l = Widget::text_view(Bounds::new(left, y, right, y + line), "Updated")
        .id(RELEASE_LINE_ID)
        .fg(SUBTLE)
        .size(TextSize::Small);
    row.children.push(l);
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
    /// releases (`MINED`): every kind within two points of its share.
    #[test]
    fn release_layouts_follow_the_mined_frequencies() {
        let total: u32 = MINED.iter().map(|m| m.2).sum();
        let apps = ["a.one", "b.two", "c.three", "d.four"];
        let n = 4000;
        let drawn: Vec<Release> = (0..n / 4)
            .flat_map(|seed| apps.map(|app| release_layout(seed, app)))
            .collect();
        let mut kinds: Vec<Release> = MINED.iter().map(|m| m.1).collect();
        kinds.dedup();
        for kind in kinds {
            let want: u32 = MINED.iter().filter(|m| m.1 == kind).map(|m| m.2).sum();
            let got = drawn.iter().filter(|r| **r == kind).count() as f64 / n as f64;
            let want = f64::from(want) / f64::from(total);
            assert!((got - want).abs() < 0.02, "{kind:?}: {got:.3} vs {want:.3}");
        }
    }

    /// `MINED` is what the fixture says: recounted from the mined layout changes, a file
    /// by its first added view.
    #[test]
    fn the_mined_table_is_the_fixtures() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/drift-real/layout/changes.tsv"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        let mut count = std::collections::BTreeMap::<String, u32>::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            if !seen.insert((f[0], f[1], f[2])) {
                continue;
            }
            let key = match (f[4], f[6]) {
                ("added", "vertical") => {
                    let pos = if f[7] == "only" { "first" } else { f[7] };
                    format!("{} vertical {pos}", f[3])
                }
                ("added", _) => "added beside or over".into(),
                (kind, _) => kind.into(),
            };
            *count.entry(key).or_default() += 1;
        }
        for (key, _, n) in MINED {
            assert_eq!(count.remove(key).unwrap_or(0), n, "{key}");
        }
        assert!(count.is_empty(), "kinds the table lacks: {count:?}");
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

    const PLACES: [Place; 6] = [
        Place::ScreenFirst,
        Place::ScreenMiddle,
        Place::ScreenLast,
        Place::RowFirst,
        Place::RowMiddle,
        Place::RowLast,
    ];

    /// The contact list under a release: the centre of the first and of a lower row
    /// (`Alice Martin`, `Grace Hopper`).
    fn contacts(release: Option<Release>) -> ((i32, i32), (i32, i32), String) {
        let p = match release {
            Some(kind) => release_phone(seed_for(AppId::Contacts, kind)),
            None => phone(SimFaults::default()),
        };
        p.apply(Cmd::Launch {
            app: AppId::Contacts,
        });
        let xml = p.hierarchy_now();
        let at = |name: &str| centre_and_half(&bounds_of(&xml, name).expect(name));
        (at("Alice Martin"), at("Grace Hopper"), xml)
    }

    /// Each place moves what it says and nothing else: a row under the toolbar or a line
    /// in every row moves the rows; a row in the middle leaves the first row and moves a
    /// lower one; a row after the page's views moves no row. A release without a layout
    /// change leaves them where they were.
    #[test]
    fn each_place_moves_what_is_below_it() {
        let (first, low, _) = contacts(None);
        for place in PLACES {
            let (f, l, xml) = contacts(Some(Release::NewView(place)));
            let shows = xml.contains(RELEASE_ROW_ID) || xml.contains(RELEASE_LINE_ID);
            assert!(shows, "{place:?}: the added view is shown");
            let moved = |a: (i32, i32), b: (i32, i32)| b.0 - a.0 > a.1;
            let (first_moved, low_moved) = (moved(first, f), moved(low, l));
            match place {
                Place::ScreenFirst => assert!(first_moved && low_moved, "{place:?}"),
                Place::ScreenMiddle => assert!(!first_moved && low_moved, "{place:?}"),
                Place::ScreenLast => assert!(f == first && l == low, "{place:?}"),
                Place::RowFirst => assert!(f.0 > first.0 && low_moved, "{place:?}"),
                Place::RowMiddle | Place::RowLast => {
                    assert!(f.0 >= first.0 && low_moved, "{place:?}")
                }
            }
        }
        assert_eq!(contacts(Some(Release::Same)).0, first);
        let (f, l, _) = contacts(Some(Release::Spacing));
        assert!(l.0 - low.0 > low.1 && f.0 >= first.0);
    }

    /// Every place keeps the screen valid in every app, on a phone, a short phone, a
    /// tablet and in landscape: nothing outside the screen, and no two texts of the app
    /// that were apart on the clean phone on top of each other.
    #[test]
    fn every_place_lays_out_without_overlap_or_overflow() {
        use crate::widget::Widget;
        fn overlaps(ws: &[&Widget]) -> std::collections::BTreeSet<(String, String)> {
            let texts: Vec<_> = ws
                .iter()
                .filter(|w| !w.text.is_empty() && w.children.is_empty() && !w.drawn_only)
                .collect();
            let mut out = std::collections::BTreeSet::new();
            for a in &texts {
                for b in &texts {
                    let (fa, fb) = (a.bounds, b.bounds);
                    let inter = fa.left.max(fb.left) < fa.right.min(fb.right)
                        && fa.top.max(fb.top) < fa.bottom.min(fb.bottom);
                    if inter && a.text < b.text {
                        out.insert((a.text.clone(), b.text.clone()));
                    }
                }
            }
            out
        }
        for (width, height) in [(1080, 2400), (1080, 1920), (1600, 2560), (2400, 1080)] {
            for app in [AppId::Contacts, AppId::Settings, AppId::Notes, AppId::Shop] {
                let cfg = |seed, release_layout| SimConfig {
                    seed,
                    width,
                    height,
                    faults: SimFaults {
                        release_layout,
                        ..SimFaults::default()
                    },
                    ..SimConfig::default()
                };
                let clean = SimDevice::new(cfg(7, false)).unwrap();
                clean.apply(Cmd::Launch { app });
                let app_widgets = |screen: &crate::widget::Screen| {
                    let mut out = Vec::new();
                    for w in screen.windows.iter().filter(|w| w.package == app.package()) {
                        w.root.walk(&mut out);
                    }
                    overlaps(&out)
                };
                let clean = app_widgets(&clean.screen());
                for place in PLACES {
                    let p =
                        SimDevice::new(cfg(seed_for(app, Release::NewView(place)), true)).unwrap();
                    p.apply(Cmd::Launch { app });
                    let screen = p.screen();
                    let all = screen.all();
                    let case = format!("{app:?} {place:?} {width}x{height}");
                    for w in &all {
                        let b = w.bounds;
                        assert!(
                            b.top >= 0
                                && b.left >= 0
                                && b.bottom <= height as i32
                                && b.right <= width as i32,
                            "{case}: {w:?} off the screen"
                        );
                    }
                    let new: Vec<_> = app_widgets(&screen).difference(&clean).cloned().collect();
                    assert!(new.is_empty(), "{case}: overlapping texts {new:?}");
                }
            }
        }
    }

    #[test]
    fn drifts_are_off_by_default() {
        let f = SimFaults::default();
        assert!(!f.moved_elements && !f.changed_labels);
    }
}
