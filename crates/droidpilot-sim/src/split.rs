//! Split-screen: two apps side by side, one above the other, as Android's split-screen
//! shows them on a phone in portrait.
//!
//! The state is `PhoneState::split` (`Split`: the top and bottom apps and where the
//! divider sits); the focused window is the phone's foreground app (`PhoneState::fg`),
//! so every command an app already understands goes to the window that has the focus,
//! and a touch in the other window moves the focus there first (`focus_window`), as
//! Android moves the focused task. The screen (`windows`) is the two app windows laid out
//! in their own bounds, each built as the app builds itself for a screen of that height
//! and moved into place, and the divider window between them. The divider is the
//! systemui window Android's accessibility always shows in split-screen
//! (`com.android.systemui:id/docked_divider_handle`, content-desc "Split screen
//! divider"), which is how a dump tells split-screen apart; dragging it moves the split
//! to one of Android's snap targets (a third, a half, two thirds) or, to an edge, ends
//! split-screen and leaves the other app full screen. `active_windows` lists the app
//! windows with their packages and bounds, for the device context.

use droidpilot_core::domain::Bounds;
use serde::{Deserialize, Serialize};

use super::state::{AppId, Fg, PhoneState, SYSTEMUI};
use super::ui::{Ctx, STATUS_BAR};
use super::widget::{Look, PILL, Widget, Window};

/// Two apps on screen at once. The divider's centre is `ratio` permille of the way down
/// the area under the status bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub top: AppId,
    pub bottom: AppId,
    pub ratio: u16,
}

/// Android's snap targets for the divider (`DividerSnapAlgorithm`: 1/3, 1/2, 2/3), permille.
pub const SNAP_TARGETS: [u16; 3] = [333, 500, 667];
/// A drag that ends this close to an edge (permille) dismisses split-screen.
pub const DISMISS_EDGE: u16 = 100;
/// The divider's thickness in design pixels (48 px at 420 dpi, about 18 dp).
pub const DIVIDER: i32 = 48;
/// The least of the top window (design pixels) left above a divider moved up for the
/// keyboard.
pub const MIN_TOP: i32 = 200;
pub const DIVIDER_HANDLE_ID: &str = "com.android.systemui:id/docked_divider_handle";
pub const DIVIDER_BACKGROUND_ID: &str = "com.android.systemui:id/docked_divider_background";
pub const DIVIDER_DESC: &str = "Split screen divider";

/// Which of the two windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Half {
    Top,
    Bottom,
}

/// One app window on screen: what the device context lists as an active window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppWindow {
    pub app: AppId,
    pub bounds: Bounds,
    pub focused: bool,
    /// `Some` in split-screen.
    pub half: Option<Half>,
}

impl Split {
    pub fn app(&self, half: Half) -> AppId {
        match half {
            Half::Top => self.top,
            Half::Bottom => self.bottom,
        }
    }
    pub fn half_of(&self, app: AppId) -> Option<Half> {
        match app {
            a if a == self.top => Some(Half::Top),
            a if a == self.bottom => Some(Half::Bottom),
            _ => None,
        }
    }
}

/// Where the two windows and the divider lie on a `w` × `h` screen (device pixels).
pub struct Layout {
    pub top: Bounds,
    pub divider: Bounds,
    pub bottom: Bounds,
}

impl Layout {
    /// While the keyboard is open for the bottom window, the divider and that window move
    /// up by the keyboard's height (the top window shrinks, keeping `MIN_TOP` under the
    /// status bar), so the focused app stays above the keyboard, as Android's split
    /// layout adjusts for the IME.
    pub fn of(split: &Split, st: &PhoneState, cx: &Ctx) -> Self {
        let sb = cx.d(STATUS_BAR);
        let mid = sb + (cx.h - sb) * split.ratio as i32 / 1000;
        let half = cx.d(DIVIDER) / 2;
        let ime = st.keyboard && st.focus.is_some() && st.fg == Fg::App(split.bottom);
        let lift = match ime {
            true => (cx.h - cx.keyboard_top())
                .min(mid - half - sb - cx.d(MIN_TOP))
                .max(0),
            false => 0,
        };
        let (mid, bottom) = (mid - lift, cx.h - lift);
        Layout {
            top: Bounds::new(0, 0, cx.w, mid - half),
            divider: Bounds::new(0, mid - half, cx.w, mid + half),
            bottom: Bounds::new(0, mid + half, cx.w, bottom),
        }
    }
    pub fn bounds(&self, half: Half) -> Bounds {
        match half {
            Half::Top => self.top,
            Half::Bottom => self.bottom,
        }
    }
}

impl PhoneState {
    /// Starts split-screen with `top` above `bottom` (both launched, their back stacks
    /// kept), the divider in the middle and the top window focused.
    pub fn start_split(&mut self, top: AppId, bottom: AppId) {
        self.split = None;
        self.launch(bottom);
        self.launch(top);
        self.split = Some(Split {
            top,
            bottom,
            ratio: 500,
        });
    }

    /// Ends split-screen, leaving `keep` full screen.
    pub fn end_split(&mut self, keep: AppId) {
        self.split = None;
        self.launch(keep);
    }

    /// A touch landed in `app`'s window: it takes the focus (the field and keyboard of
    /// the other window close) before the touch does anything.
    pub fn focus_window(&mut self, app: AppId) {
        if self.fg != Fg::App(app) && self.split.is_some_and(|s| s.half_of(app).is_some()) {
            self.fg = Fg::App(app);
            self.focus = None;
            self.keyboard = false;
        }
    }

    /// The other app of the split, when `app` is one of its two.
    pub fn split_partner(&self, app: AppId) -> Option<AppId> {
        let s = self.split?;
        s.half_of(app).map(|h| match h {
            Half::Top => s.bottom,
            Half::Bottom => s.top,
        })
    }

    /// The divider was dragged to `y` (device pixels): it snaps to the nearest target, or
    /// ends split-screen at an edge (the window the divider moved away from stays).
    pub fn drag_divider(&mut self, y: i32, cx: &Ctx) {
        let Some(s) = self.split else { return };
        let sb = cx.d(STATUS_BAR);
        let at = ((y - sb).max(0) as i64 * 1000 / (cx.h - sb).max(1) as i64) as u16;
        if at < DISMISS_EDGE {
            return self.end_split(s.bottom);
        }
        if at > 1000 - DISMISS_EDGE {
            return self.end_split(s.top);
        }
        let ratio = *SNAP_TARGETS
            .iter()
            .min_by_key(|t| (**t as i32 - at as i32).abs())
            .expect("snap targets");
        self.split = Some(Split { ratio, ..s });
    }
}

/// The app windows on screen, focused one marked: both halves in split-screen, else the
/// foreground app full screen (none on the launcher).
pub fn active_windows(st: &PhoneState, cx: &Ctx) -> Vec<AppWindow> {
    if let Some(s) = st.split {
        let l = Layout::of(&s, st, cx);
        return [Half::Top, Half::Bottom]
            .into_iter()
            .map(|h| AppWindow {
                app: s.app(h),
                bounds: l.bounds(h),
                focused: st.fg == Fg::App(s.app(h)),
                half: Some(h),
            })
            .collect();
    }
    match st.fg {
        Fg::App(app) => vec![AppWindow {
            app,
            bounds: cx.full(),
            focused: true,
            half: None,
        }],
        _ => Vec::new(),
    }
}

/// The split-screen windows, bottom to top: the two apps, then the divider.
pub fn windows(
    s: &Split,
    st: &PhoneState,
    cx: &Ctx,
    build: &dyn Fn(AppId, &Ctx) -> Window,
) -> Vec<Window> {
    let l = Layout::of(s, st, cx);
    let mut out = Vec::with_capacity(3);
    for half in [Half::Top, Half::Bottom] {
        let app = s.app(half);
        out.push(app_in(app, l.bounds(half), st, cx, build));
    }
    out.push(divider(&l, cx));
    out
}

/// `app` laid out for a screen as tall as its window (its toolbar under the status bar
/// in the top window, at the window's top in the bottom one), moved into `at` and
/// clipped to it. The keyboard covers the focused window's bottom (its bars move above
/// it, as adjustResize does); the other window keeps its height.
fn app_in(
    app: AppId,
    at: Bounds,
    st: &PhoneState,
    cx: &Ctx,
    build: &dyn Fn(AppId, &Ctx) -> Window,
) -> Window {
    let sb = cx.d(STATUS_BAR);
    let shift = (at.top - sb).max(0);
    let focused = st.fg == Fg::App(app);
    let local = Ctx {
        h: at.bottom - shift,
        ime_top: Some(if focused {
            cx.keyboard_top() - shift
        } else {
            i32::MAX
        }),
        ..cx.clone()
    };
    let mut w = build(app, &local);
    w.root.shift(shift);
    w.root.clip(&at);
    w
}

/// The divider: a systemui window across the screen with its handle in the middle.
fn divider(l: &Layout, cx: &Ctx) -> Window {
    let b = l.divider;
    let mid = (b.top + b.bottom) / 2;
    let handle = Widget::new(
        "android.view.View",
        Bounds::new(
            cx.w / 2 - cx.d(80),
            mid - cx.d(8),
            cx.w / 2 + cx.d(80),
            mid + cx.d(8),
        ),
    )
    .id(DIVIDER_HANDLE_ID)
    .desc(DIVIDER_DESC)
    .look(Look::Plain)
    .bg([255, 255, 255])
    .rounded(PILL);
    let root = Widget::frame_layout(b).child(
        Widget::frame_layout(b)
            .id(DIVIDER_BACKGROUND_ID)
            .bg([32, 33, 36])
            .child(handle),
    );
    Window::new(SYSTEMUI, root)
}

/// Whether a touch at `y` starts on the divider.
pub fn on_divider(st: &PhoneState, cx: &Ctx, y: i32) -> bool {
    st.split.is_some_and(|s| {
        let d = Layout::of(&s, st, cx).divider;
        // The touch target is wider than the bar, as Android's divider window is.
        (d.top - cx.d(24)..d.bottom + cx.d(24)).contains(&y)
    })
}

#[cfg(test)]
mod tests {
    use droidpilot_core::device::Device;
    use droidpilot_core::domain::{AppRef, Key, PixelPoint};

    use crate::state::{Fg, Page, field};
    use crate::{AppId, SimConfig, SimDevice};

    fn split_phone() -> SimDevice {
        let p = SimDevice::new(SimConfig::default()).unwrap();
        p.lock().st.start_split(AppId::Messages, AppId::Notes);
        p
    }

    fn centre_of(p: &SimDevice, text: &str) -> PixelPoint {
        let screen = p.screen();
        let w = screen
            .all()
            .into_iter()
            .find(|w| w.text == text || w.desc == text || w.hint == text)
            .unwrap_or_else(|| panic!("`{text}` on screen"));
        w.bounds.center()
    }

    /// The dump has one top-level node per window, as Android's does in split-screen:
    /// the two apps in their own bounds, one above the other, and systemui's divider
    /// between them with the handle accessibility services look for.
    #[test]
    fn the_dump_shows_two_app_windows_and_the_divider_between_them() {
        let p = split_phone();
        let xml = p.hierarchy_now();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let tops: Vec<(String, String)> = doc
            .root_element()
            .children()
            .filter(|n| n.is_element())
            .map(|n| {
                (
                    n.attribute("package").unwrap().to_string(),
                    n.attribute("bounds").unwrap().to_string(),
                )
            })
            .collect();
        let messages = AppId::Messages.package();
        let notes = AppId::Notes.package();
        let pkgs: Vec<&str> = tops.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(&pkgs[..3], [messages, notes, super::SYSTEMUI], "{tops:?}");
        // 1080×2400: the divider's centre half way down the area under the status bar.
        assert_eq!(tops[0].1, "[0,0][1080,1218]");
        assert_eq!(tops[1].1, "[0,1266][1080,2400]");
        assert_eq!(tops[2].1, "[0,1218][1080,1266]");
        let handle = doc
            .descendants()
            .find(|n| n.attribute("resource-id") == Some(super::DIVIDER_HANDLE_ID))
            .expect("the divider handle");
        assert_eq!(handle.attribute("content-desc"), Some(super::DIVIDER_DESC));
        // Each app's content stays inside its window.
        let screen = p.screen();
        for (i, w) in screen.windows[..2].iter().enumerate() {
            let mut all = Vec::new();
            w.root.walk(&mut all);
            let win = w.root.bounds;
            assert!(
                all.iter().all(|n| n.bounds.is_empty()
                    || (n.bounds.top >= win.top && n.bounds.bottom <= win.bottom)),
                "window {i}"
            );
        }
        let windows = p.app_windows();
        assert_eq!(windows.len(), 2);
        assert!(windows[0].focused && !windows[1].focused);
    }

    /// A touch goes to the app whose window it lands in, which takes the focus: a thread
    /// opens in Messages above, a note is written in Notes below, and typing goes to the
    /// focused window's field.
    #[tokio::test]
    async fn input_to_each_window_goes_to_its_app() {
        let p = split_phone();
        p.tap(centre_of(&p, "Bob Smith")).await.unwrap();
        assert_eq!(
            p.state().stacks[&AppId::Messages].last(),
            Some(&Page::Thread {
                contact: "Bob Smith".into()
            })
        );
        p.tap(centre_of(&p, "New text note")).await.unwrap();
        let st = p.state();
        assert_eq!(
            st.fg,
            Fg::App(AppId::Notes),
            "the bottom window took the focus"
        );
        assert_eq!(
            st.stacks[&AppId::Notes].last(),
            Some(&Page::NoteEdit { id: None })
        );
        assert!(matches!(
            st.stacks[&AppId::Messages].last(),
            Some(Page::Thread { .. })
        ));
        // The keyboard is open for the note's body: the bottom window moved up above it.
        let kb_top = 2400 - 880;
        let notes = p.app_windows()[1].bounds;
        assert_eq!(notes.bottom, kb_top, "{notes:?}");
        p.tap(centre_of(&p, "Title")).await.unwrap();
        p.type_text("Lunch").await.unwrap();
        assert_eq!(p.state().field(field::NOTE_TITLE), "Lunch");
        assert_eq!(
            p.current_app().await.unwrap().package,
            AppId::Notes.package()
        );
        // Back closes the keyboard, then saves the note and leaves the editor; the split stays.
        p.key(Key::Back).await.unwrap();
        p.key(Key::Back).await.unwrap();
        let st = p.state();
        assert_eq!(st.notes[0].title, "Lunch");
        assert!(st.split.is_some());
        // The keyboard was drawn over the bottom window only while its field was focused.
        assert!(!st.keyboard);
    }

    /// Dragging the divider snaps it to Android's targets; to an edge it ends
    /// split-screen and the other app fills the screen.
    #[tokio::test]
    async fn the_divider_snaps_and_an_edge_ends_the_split() {
        let p = split_phone();
        let handle = centre_of(&p, super::DIVIDER_DESC);
        p.swipe(handle, PixelPoint { x: 540, y: 900 }, 300)
            .await
            .unwrap();
        assert_eq!(p.state().split.unwrap().ratio, 333);
        let windows = p.app_windows();
        assert!(windows[0].bounds.bottom < 900 && windows[1].bounds.top > 800);
        let handle = centre_of(&p, super::DIVIDER_DESC);
        p.swipe(handle, PixelPoint { x: 540, y: 2390 }, 300)
            .await
            .unwrap();
        let st = p.state();
        assert_eq!(st.split, None);
        assert_eq!(st.fg, Fg::App(AppId::Messages));
        assert_eq!(
            p.app_windows()[0].bounds,
            crate::ui::Ctx::new(1080, 2400).full()
        );
    }

    /// The screenshot draws both apps and the dark divider band between them.
    #[test]
    fn the_screenshot_shows_both_windows_and_the_divider() {
        let p = split_phone();
        let px = p.render_now();
        let at = |x: usize, y: usize| &px[(y * 1080 + x) * 4..(y * 1080 + x) * 4 + 3];
        assert_eq!(at(20, 1242), [32, 33, 36], "the divider band");
        let ink = |top: usize, bottom: usize| {
            (top..bottom)
                .flat_map(|y| (0..1080).map(move |x| (x, y)))
                .filter(|&(x, y)| at(x, y)[0] < 100)
                .count()
        };
        assert!(ink(84, 1200) > 500, "Messages is drawn above");
        assert!(ink(1270, 2380) > 500, "Notes is drawn below");
        let full = SimDevice::new(SimConfig::default()).unwrap();
        full.apply(crate::Cmd::Launch { app: AppId::Notes });
        assert_ne!(px, full.render_now());
    }

    /// Split-screen over the `Device` trait: two different apps, and the launcher refused.
    #[tokio::test]
    async fn the_device_starts_a_split_of_two_apps_only() {
        let p = SimDevice::new(SimConfig::default()).unwrap();
        let app = |s: &str| AppRef::Label(s.into());
        p.split_screen(&app("Shop"), &app("Notes")).await.unwrap();
        let w = p.windows().await.unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].package, AppId::Shop.package());
        assert_eq!(w[1].package, AppId::Notes.package());
        let same = p.split_screen(&app("Notes"), &app("Notes")).await;
        assert!(same.unwrap_err().to_string().contains("two different apps"));
        let home = p.split_screen(&app("home"), &app("Notes")).await;
        assert!(home.is_err());
        // Home ends split-screen.
        p.key(Key::Home).await.unwrap();
        assert!(p.state().split.is_none());
    }
}
