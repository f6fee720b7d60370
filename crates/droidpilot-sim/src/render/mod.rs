//! Paints a `Screen` into RGBA8 pixels: the screenshot of exactly what the hierarchy
//! describes, since both come from the same widget tree.
//!
//! It is drawn to look like a phone to a vision model: Roboto text (`text.rs`: embedded
//! fonts, glyphs rasterised once per face and size and cached), Material Icons for icon
//! buttons, launcher icons, keyboard keys and the status bar, Material 3 shapes (pill
//! buttons, rounded dialogs and cards, M3 switches and sliders, anti-aliased edges,
//! `canvas.rs`) and a gesture-navigation handle. Sizes are in design pixels of a
//! 1080-wide phone, scaled by the frame's width like the layout.
//!
//! The picture never moves the hierarchy: bounds come from the layout (`ui.rs`,
//! `apps/`); text is fitted into them (wrapped with the font, and shrunk step by step
//! when it would not fit, as Android's autosizing text does). Characters the font lacks
//! (CJK, emoji, Arabic…) are drawn as an outlined box and RTL text in logical order; the
//! hierarchy always carries the exact text. The same screen renders to the same bytes on
//! every machine (integer geometry, IEEE f32 glyph coverage, no system fonts).

mod canvas;
mod looks;
mod text;

pub use text::wrap_count;

use droidpilot_core::domain::Bounds;

use super::widget::{PILL, Screen, Symbol, TextSize, WHITE, Widget};
use canvas::Canvas;
use text::Face;

/// The line height in device pixels of `size` text: Material's 14, 16 and 22 sp at 420
/// dpi, grown by Android's font size `font` on a screen scaled `s` from design pixels.
pub fn line_height(size: TextSize, font: f32, s: f32) -> i32 {
    let design = match size {
        TextSize::Small => 42.0,
        TextSize::Normal => 49.0,
        TextSize::Title => 66.0,
    };
    ((design * font * s).round() as i32).max(6)
}

/// How many lines `s` takes in `width` pixels at line height `px`, measured with the
/// font the painter draws it in (Roboto Medium when `bold`): what layout asks when a
/// longer text (a translation, a reworded label) may need another line.
pub fn lines(s: &str, width: i32, bold: bool, px: i32) -> usize {
    let face = if bold { Face::Medium } else { Face::Regular };
    if s.is_empty() || text::width(face, px, s) <= width {
        return 1;
    }
    text::wrap(s, width, face, px).len()
}

/// Horizontal placement of text inside its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Start,
    Center,
    End,
}

/// How a piece of text is drawn.
#[derive(Debug, Clone, Copy)]
struct Style {
    face: Face,
    /// Line height in device pixels.
    px: i32,
    color: [u8; 3],
    align: Align,
    /// Top-aligned (a tall text field) instead of vertically centred.
    top: bool,
}

/// The canvas and the scale from design pixels (1080 wide) to device pixels.
struct Painter<'a> {
    cv: Canvas<'a>,
    s: f32,
    /// Android's font size (`Screen::font_scale`).
    font: f32,
}

/// Where the last line of a text block ended: the caret's place.
#[derive(Debug, Clone, Copy)]
struct LineEnd {
    x: i32,
    top: i32,
    px: i32,
}

fn codepoint(sym: Symbol) -> char {
    use material_icons::{Icon, icon_to_char};
    icon_to_char(match sym {
        Symbol::Back => Icon::ArrowBack,
        Symbol::Send => Icon::Send,
        Symbol::Delete => Icon::Delete,
        Symbol::Edit => Icon::Edit,
        Symbol::Cart => Icon::ShoppingCart,
        Symbol::Apps => Icon::Apps,
        Symbol::Add => Icon::Add,
        Symbol::Search => Icon::Search,
        Symbol::Battery => Icon::BatteryStd,
        Symbol::Wifi => Icon::SignalWifi4Bar,
        Symbol::Airplane => Icon::AirplanemodeActive,
        Symbol::Bluetooth => Icon::Bluetooth,
        Symbol::Backspace => Icon::Backspace,
        Symbol::Enter => Icon::KeyboardReturn,
        Symbol::Check => Icon::Check,
        Symbol::Chat => Icon::Chat,
        Symbol::Person => Icon::Person,
        Symbol::Web => Icon::Public,
        Symbol::Alarm => Icon::Alarm,
        Symbol::Settings => Icon::Settings,
        Symbol::Note => Icon::Lightbulb,
        Symbol::Shop => Icon::ShoppingBag,
        Symbol::Close => Icon::Close,
        Symbol::MoreVert => Icon::MoreVert,
    })
}

impl Painter<'_> {
    /// Design pixels → device pixels.
    fn d(&self, v: i32) -> i32 {
        (v as f32 * self.s).round() as i32
    }

    /// A corner radius in device pixels (`PILL`: half the shorter side).
    fn radius(&self, design: i32) -> i32 {
        if design == PILL {
            i32::MAX
        } else {
            self.d(design)
        }
    }

    /// The line height of a text size: Material's 14, 16 and 22 sp at 420 dpi.
    fn line_px(&self, size: TextSize) -> i32 {
        line_height(size, self.font, self.s)
    }

    fn style(&self, w: &Widget, color: [u8; 3], align: Align) -> Style {
        Style {
            face: if w.bold { Face::Medium } else { Face::Regular },
            px: self.line_px(w.size),
            color,
            align,
            top: false,
        }
    }

    /// `s` fitted into `frame` (see `fit`); returns where the last line ends.
    fn text(&mut self, frame: Bounds, clip: Bounds, s: &str, st: Style) -> Option<LineEnd> {
        if s.is_empty() || frame.width() <= 0 {
            return None;
        }
        let (lines, px) = fit(frame, s, st);
        let total = px * lines.len() as i32;
        let mut top = if st.top {
            frame.top
        } else {
            frame.top + (frame.height() - total) / 2
        };
        let mut end = None;
        for l in &lines {
            let lw = text::width(st.face, px, l);
            let x = match st.align {
                Align::Start => frame.left,
                Align::Center => frame.left + (frame.width() - lw).max(0) / 2,
                Align::End => frame.right - lw,
            };
            self.line(
                x,
                top + text::ascent(st.face, px),
                l,
                st.face,
                px,
                st.color,
                clip,
            );
            end = Some(LineEnd { x: x + lw, top, px });
            top += px;
        }
        end
    }

    /// One line with its pen starting at `x` on `baseline`, clipped.
    #[allow(clippy::too_many_arguments)] // private primitive: a struct would only rename these
    fn line(
        &mut self,
        x: i32,
        baseline: i32,
        s: &str,
        face: Face,
        px: i32,
        c: [u8; 3],
        clip: Bounds,
    ) {
        let mut pen = x as f32;
        for ch in s.chars() {
            let gx = pen.round() as i32;
            if gx >= clip.right {
                break;
            }
            let adv = text::advance(face, ch, px);
            match text::glyph(face, ch, px) {
                Some(g) => self
                    .cv
                    .mask(gx + g.left, baseline + g.top, g.w, &g.alpha, c, clip),
                None if ch.is_whitespace() => {}
                None => {
                    // A glyph the font lacks (CJK, emoji): a box, like a missing-glyph tofu.
                    let t = (px / 24).max(1);
                    let b =
                        Bounds::new(gx + t, baseline - px * 3 / 5, gx + adv as i32 - t, baseline);
                    self.cv.outline(b, clip, c, t);
                }
            }
            pen += adv;
        }
    }

    /// `sym` at `size` pixels, its ink centred in `area`.
    fn icon(&mut self, sym: Symbol, area: Bounds, size: i32, c: [u8; 3], clip: Bounds) {
        if let Some(g) = text::glyph(Face::Icons, codepoint(sym), size) {
            let x = area.left + (area.width() - g.w) / 2;
            let y = area.top + (area.height() - g.h) / 2;
            self.cv.mask(x, y, g.w, &g.alpha, c, clip);
        }
    }
}

/// The lines of `s` in `frame` and the line height they fit at: the style's, or smaller
/// (down to 60%) until they fit the frame's height; lines that still do not are dropped.
fn fit(frame: Bounds, s: &str, st: Style) -> (Vec<String>, i32) {
    let min = (st.px * 3 / 5).max(6);
    let mut px = st.px;
    loop {
        let mut lines = text::wrap(s, frame.width(), st.face, px);
        let room = (frame.height() / px).max(1) as usize;
        if lines.len() <= room || px <= min {
            lines.truncate(room);
            return (lines, px);
        }
        px = (px * 9 / 10).min(px - 1).max(min);
    }
}

fn paint(p: &mut Painter, w: &Widget, clip: Bounds) {
    let clip = clip.intersect(&w.bounds);
    if clip.is_empty() {
        return;
    }
    p.widget(w, clip);
    for c in &w.children {
        paint(p, c, clip);
    }
}

/// Renders the screen; `black` paints nothing (a secure screen under capture).
pub fn render(screen: &Screen, width: u32, height: u32, black: bool) -> Vec<u8> {
    let mut px = vec![0u8; width as usize * height as usize * 4];
    if black {
        for chunk in px.chunks_exact_mut(4) {
            chunk[3] = 255;
        }
        return px;
    }
    let mut p = Painter {
        cv: Canvas {
            w: width as i32,
            h: height as i32,
            px: &mut px,
        },
        s: if screen.scale > 0.0 {
            screen.scale
        } else {
            width as f32 / 1080.0
        },
        font: screen.font_scale,
    };
    let full = Bounds::new(0, 0, width as i32, height as i32);
    p.cv.fill(full, full, WHITE);
    for win in &screen.windows {
        if win.dim {
            p.cv.dim();
        }
        paint(&mut p, &win.root, full);
    }
    px
}

#[cfg(test)]
mod tests;
