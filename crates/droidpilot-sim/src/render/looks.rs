//! How each `Look` is painted, in Material 3's shapes: one method per look.

use droidpilot_core::domain::Bounds;

use super::super::widget::{ACCENT, Flags, Look, PILL, SUBTLE, TEXT, WHITE, Widget};
use super::{Align, Face, Painter, Style};

/// The outline and thumb of a switch that is off, and its track.
const OUTLINE: [u8; 3] = [121, 116, 126];
const TRACK_OFF: [u8; 3] = [231, 224, 236];
/// A slider's inactive track.
const TRACK: [u8; 3] = [211, 227, 253];

fn shown_text(w: &Widget) -> (&str, bool) {
    if w.text.is_empty() {
        (&w.hint, true)
    } else {
        (&w.text, false)
    }
}

/// A launcher tile's colour, from its label.
fn tile_color(label: &str) -> [u8; 3] {
    const C: [[u8; 3]; 6] = [
        [26, 115, 232],
        [217, 48, 37],
        [30, 142, 62],
        [249, 171, 0],
        [161, 66, 244],
        [0, 137, 123],
    ];
    let h = label
        .bytes()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(b as u32));
    C[(h % 6) as usize]
}

fn inset(b: Bounds, dx: i32, dy: i32) -> Bounds {
    Bounds::new(b.left + dx, b.top + dy, b.right - dx, b.bottom - dy)
}

impl Painter<'_> {
    pub(super) fn widget(&mut self, w: &Widget, clip: Bounds) {
        match w.look {
            Look::Switch => self.switch(w, clip),
            Look::Seek => self.seek(w, clip),
            Look::AppIcon => self.app_icon(w, clip),
            Look::Progress => self.progress(w, clip),
            look => {
                if let Some(bg) = w.bg {
                    let r = self.radius(w.radius);
                    self.cv.fill_round(w.frame, clip, bg, r);
                }
                match look {
                    Look::Text => self.text_view(w, clip),
                    Look::Button | Look::Fab => self.button(w, clip),
                    Look::Key => self.key(w, clip),
                    Look::Icon => self.icon_button(w, clip),
                    Look::StatusIcon => self.status_icon(w, clip),
                    Look::Edit => self.edit(w, clip),
                    _ => {}
                }
            }
        }
    }

    fn text_view(&mut self, w: &Widget, clip: Bounds) {
        let (t, _) = shown_text(w);
        // Text on a filled shape (a message bubble) keeps off its edges.
        let pad = if w.bg.is_some() { self.d(30) } else { 0 };
        let st = self.style(w, w.fg, Align::Start);
        self.text(inset(w.frame, pad, 0), clip, t, st);
    }

    /// Buttons and FABs: their icon, or their label centred in Roboto Medium.
    fn button(&mut self, w: &Widget, clip: Bounds) {
        if let Some(sym) = w.icon {
            let size = self.d(72);
            self.icon(sym, w.frame, size, w.fg, clip);
            return;
        }
        let (t, _) = shown_text(w);
        let mut st = self.style(w, w.fg, Align::Center);
        st.face = Face::Medium;
        let pad = self.d(24);
        self.text(inset(w.frame, pad, 0), clip, t, st);
    }

    /// A keyboard key: its icon, or its label when that is one character (the space
    /// bar, like Gboard's, shows none).
    fn key(&mut self, w: &Widget, clip: Bounds) {
        if let Some(sym) = w.icon {
            let size = self.d(66);
            self.icon(sym, w.frame, size, w.fg, clip);
            return;
        }
        let (t, _) = shown_text(w);
        if t.chars().count() == 1 {
            let st = Style {
                face: Face::Regular,
                px: self.line_px(super::TextSize::Title),
                color: w.fg,
                align: Align::Center,
                top: false,
            };
            self.text(w.frame, clip, t, st);
        }
    }

    /// An icon-only button: a 24dp symbol on its (round) background, if any.
    fn icon_button(&mut self, w: &Widget, clip: Bounds) {
        if let Some(sym) = w.icon {
            let size = self.d(63);
            self.icon(sym, w.frame, size, w.fg, clip);
        }
    }

    /// A status bar icon, right-aligned, with its text (a battery level) before it.
    fn status_icon(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let size = self.d(44);
        let icon_left = f.right - size;
        if let Some(sym) = w.icon {
            let area = Bounds::new(icon_left, f.top, f.right, f.bottom);
            self.icon(sym, area, size, w.fg, clip);
        }
        if !w.text.is_empty() {
            let area = Bounds::new(f.left, f.top, icon_left - self.d(6), f.bottom);
            let mut st = self.style(w, w.fg, Align::End);
            st.face = Face::Medium;
            self.text(area, clip, &w.text, st);
        }
    }

    /// A launcher icon: a round tile with the app's symbol, the label below.
    fn app_icon(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let side = (f.width().min(f.height()) * 6 / 10).max(8);
        let left = f.left + (f.width() - side) / 2;
        let top = f.top + self.d(10);
        let tile = Bounds::new(left, top, left + side, top + side);
        self.cv
            .fill_round(tile, clip, tile_color(&w.text), i32::MAX);
        match w.icon {
            Some(sym) => self.icon(sym, tile, side / 2, WHITE, clip),
            None => {
                let initial: String = w.text.chars().take(1).collect();
                let mut st = self.style(w, WHITE, Align::Center);
                st.px = side / 2;
                self.text(tile, clip, &initial, st);
            }
        }
        let label = Bounds::new(f.left, tile.bottom + self.d(6), f.right, f.bottom);
        let st = self.style(w, TEXT, Align::Center);
        self.text(label, clip, &w.text, st);
    }

    /// A Material 3 switch: a pill track, a small outlined thumb when off, a large white
    /// thumb with a check when on.
    fn switch(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let on = w.flags.contains(Flags::CHECKED);
        let cy = (f.top + f.bottom) / 2;
        let th = f.height().min(self.d(84));
        let track = Bounds::new(
            f.left + self.d(16),
            cy - th / 2,
            f.right - self.d(16),
            cy + th / 2,
        );
        if on {
            self.cv.fill_round(track, clip, ACCENT, i32::MAX);
            let r = th * 12 / 32;
            let cx = track.right - th / 2;
            self.cv.circle(cx, cy, r, clip, WHITE);
            let b = Bounds::new(cx - r, cy - r, cx + r, cy + r);
            self.icon(super::Symbol::Check, b, r * 3 / 2, ACCENT, clip);
        } else {
            self.cv.fill_round(track, clip, OUTLINE, i32::MAX);
            let ring = self.d(5).max(1);
            self.cv
                .fill_round(inset(track, ring, ring), clip, TRACK_OFF, i32::MAX);
            self.cv
                .circle(track.left + th / 2, cy, th / 4, clip, OUTLINE);
        }
    }

    /// A slider: the active part of the track in the accent colour, a round thumb.
    fn seek(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let mid = (f.top + f.bottom) / 2;
        let t = self.d(8).max(2);
        let x = f.left + (f.width() as i64 * w.value as i64 / 255) as i32;
        let track = Bounds::new(f.left, mid - t, f.right, mid + t);
        self.cv.fill_round(track, clip, TRACK, t);
        let active = Bounds::new(f.left, mid - t, x, mid + t);
        self.cv.fill_round(active, clip, ACCENT, t);
        let r = (f.height() / 2 - self.d(10)).clamp(2, self.d(30));
        self.cv.circle(x, mid, r, clip, ACCENT);
    }

    /// A text field: filled (a pill for search bars, no underline) or underlined, its
    /// leading icon, its text or hint, and a caret when focused.
    fn edit(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let (t, hint) = shown_text(w);
        let focused = w.flags.contains(Flags::FOCUSED);
        let pill = w.radius == PILL;
        let mut left = f.left + self.d(if pill { 48 } else { 36 });
        if let Some(sym) = w.icon {
            let size = self.d(60);
            let area = Bounds::new(left, f.top, left + size, f.bottom);
            self.icon(sym, area, size, SUBTLE, clip);
            left += size + self.d(30);
        }
        let tall = f.height() > self.d(240);
        let pad_y = if tall { self.d(30) } else { 0 };
        let inner = Bounds::new(left, f.top + pad_y, f.right - self.d(36), f.bottom);
        let masked;
        let t = if w.flags.contains(Flags::PASSWORD) && !hint {
            masked = "•".repeat(t.chars().count());
            masked.as_str()
        } else {
            t
        };
        let mut st = self.style(w, if hint { SUBTLE } else { w.fg }, Align::Start);
        st.top = tall;
        let end = self.text(inner, clip, t, st);
        if !pill {
            let h = if focused { self.d(6) } else { self.d(2) }.max(1);
            let line = Bounds::new(f.left, f.bottom - h, f.right, f.bottom);
            self.cv
                .fill(line, clip, if focused { ACCENT } else { SUBTLE });
        }
        if focused {
            self.caret(inner, st, if hint { None } else { end }, clip);
        }
    }

    /// The text cursor after the last character (before the hint of an empty field).
    fn caret(&mut self, inner: Bounds, st: Style, end: Option<super::LineEnd>, clip: Bounds) {
        let (x, top, px) = match end {
            Some(e) => (e.x + self.d(4), e.top, e.px),
            None if st.top => (inner.left - self.d(10), inner.top, st.px),
            None => (
                inner.left - self.d(10),
                inner.top + (inner.height() - st.px) / 2,
                st.px,
            ),
        };
        let wd = self.d(5).max(2);
        let b = Bounds::new(x, top + px / 8, x + wd, top + px - px / 8);
        self.cv.fill(b, clip, ACCENT);
    }

    /// An indeterminate linear progress indicator.
    fn progress(&mut self, w: &Widget, clip: Bounds) {
        let f = w.frame;
        let c = w.bg.unwrap_or(ACCENT);
        let h = f.height();
        let bar = Bounds::new(f.left, f.top, f.left + f.width() / 3, f.bottom);
        self.cv.fill(f, clip, TRACK);
        self.cv.fill_round(bar, clip, c, h / 2);
    }
}
