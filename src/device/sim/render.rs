//! Paints a `Screen` into RGBA8 pixels: the screenshot of exactly what the hierarchy
//! describes, since both come from the same widget tree.
//!
//! Text uses the prerendered Noto Sans Mono glyphs of `noto-sans-mono-bitmap` (no font
//! files or rasterizer, so output is byte-identical everywhere). It covers Latin, Latin-1
//! and a few specials; other characters (CJK, emoji, Arabic…) are drawn as an outlined
//! box, and RTL text is drawn in logical order. The hierarchy always carries the exact
//! text, so only the picture is approximate for those scripts. Shapes are plain
//! rectangles; the painter is hand-written because it is ~200 lines and an
//! embedded-graphics dependency would add more API surface than it saves.

use noto_sans_mono_bitmap::{FontWeight, RasterHeight, get_raster, get_raster_width};

use crate::domain::Bounds;

use super::widget::{ACCENT, Look, SUBTLE, Screen, TextSize, WHITE, Widget, flag};

struct Canvas<'a> {
    w: i32,
    h: i32,
    px: &'a mut [u8],
}

fn raster(size: TextSize) -> RasterHeight {
    match size {
        TextSize::Small => RasterHeight::Size24,
        TextSize::Normal | TextSize::Title => RasterHeight::Size32,
    }
}

fn weight(bold: bool, size: TextSize) -> FontWeight {
    if bold || size == TextSize::Title {
        FontWeight::Bold
    } else {
        FontWeight::Regular
    }
}

pub fn char_width(size: TextSize, bold: bool) -> usize {
    get_raster_width(weight(bold, size), raster(size))
}

/// Splits text into lines that fit `width` pixels, on word boundaries where possible.
pub fn wrap(text: &str, width: usize, size: TextSize, bold: bool) -> Vec<String> {
    let cw = char_width(size, bold).max(1);
    let per = (width / cw).max(1);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut cur = String::new();
        let mut n = 0;
        for word in para.split(' ') {
            let wl = word.chars().count();
            if n > 0 && n + 1 + wl > per {
                lines.push(std::mem::take(&mut cur));
                n = 0;
            }
            if n > 0 {
                cur.push(' ');
                n += 1;
            }
            // A word longer than the line is hard-broken.
            for c in word.chars() {
                if n == per {
                    lines.push(std::mem::take(&mut cur));
                    n = 0;
                }
                cur.push(c);
                n += 1;
            }
        }
        lines.push(cur);
    }
    lines
}

/// How many lines `text` takes at normal size in `width` pixels (layout uses this).
pub fn wrap_count(text: &str, width: usize) -> usize {
    wrap(text, width, TextSize::Normal, false).len()
}

impl Canvas<'_> {
    fn fill(&mut self, b: Bounds, clip: Bounds, c: [u8; 3]) {
        let r = b
            .intersect(&clip)
            .intersect(&Bounds::new(0, 0, self.w, self.h));
        if r.is_empty() {
            return;
        }
        let pixel = [c[0], c[1], c[2], 255];
        for y in r.top..r.bottom {
            let start = ((y * self.w + r.left) * 4) as usize;
            let end = ((y * self.w + r.right) * 4) as usize;
            for chunk in self.px[start..end].chunks_exact_mut(4) {
                chunk.copy_from_slice(&pixel);
            }
        }
    }
    fn outline(&mut self, b: Bounds, clip: Bounds, c: [u8; 3], t: i32) {
        self.fill(Bounds::new(b.left, b.top, b.right, b.top + t), clip, c);
        self.fill(
            Bounds::new(b.left, b.bottom - t, b.right, b.bottom),
            clip,
            c,
        );
        self.fill(Bounds::new(b.left, b.top, b.left + t, b.bottom), clip, c);
        self.fill(Bounds::new(b.right - t, b.top, b.right, b.bottom), clip, c);
    }
    fn dim(&mut self) {
        for chunk in self.px.chunks_exact_mut(4) {
            chunk[0] >>= 1;
            chunk[1] >>= 1;
            chunk[2] >>= 1;
        }
    }
    fn blend(&mut self, x: i32, y: i32, c: [u8; 3], a: u8) {
        if a == 0 || x < 0 || y < 0 || x >= self.w || y >= self.h {
            return;
        }
        let i = ((y * self.w + x) * 4) as usize;
        let a = a as u32;
        for (dst, src) in self.px[i..i + 3].iter_mut().zip(c) {
            *dst = ((*dst as u32 * (255 - a) + src as u32 * a) / 255) as u8;
        }
    }
    /// One line of text with its top-left at (x, y), clipped.
    // Private painter primitives: a style struct would only rename these arguments.
    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        x: i32,
        y: i32,
        s: &str,
        size: TextSize,
        bold: bool,
        c: [u8; 3],
        clip: Bounds,
    ) {
        let (wt, rh) = (weight(bold, size), raster(size));
        let cw = get_raster_width(wt, rh) as i32;
        let ch = rh.val() as i32;
        let mut cx = x;
        for g in s.chars() {
            if cx >= clip.right {
                break;
            }
            match get_raster(g, wt, rh) {
                Some(r) => {
                    for (dy, row) in r.rows().enumerate() {
                        let py = y + dy as i32;
                        if py < clip.top || py >= clip.bottom {
                            continue;
                        }
                        for (dx, &a) in row.iter().enumerate() {
                            let px = cx + dx as i32;
                            if px >= clip.left && px < clip.right {
                                self.blend(px, py, c, a);
                            }
                        }
                    }
                }
                None if g.is_whitespace() => {}
                None => {
                    // A glyph the font lacks (CJK, emoji): a box, like a missing-glyph tofu.
                    self.outline(
                        Bounds::new(cx + 2, y + 3, cx + cw - 2, y + ch - 3),
                        clip,
                        c,
                        2,
                    );
                }
            }
            cx += cw;
        }
    }
    /// Wrapped text inside `frame`, vertically centred, clipped to `clip`.
    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        frame: Bounds,
        clip: Bounds,
        s: &str,
        size: TextSize,
        bold: bool,
        c: [u8; 3],
        center: bool,
    ) {
        if s.is_empty() {
            return;
        }
        let lines = wrap(s, frame.width().max(1) as usize, size, bold);
        let lh = raster(size).val() as i32 + 8;
        let max_lines = (frame.height() / lh).max(1) as usize;
        let lines = &lines[..lines.len().min(max_lines)];
        let total = lh * lines.len() as i32;
        let mut y = frame.top + (frame.height() - total) / 2 + 4;
        let cw = char_width(size, bold) as i32;
        for l in lines {
            let x = if center {
                frame.left + (frame.width() - cw * l.chars().count() as i32).max(0) / 2
            } else {
                frame.left
            };
            self.line(x, y, l, size, bold, c, clip);
            y += lh;
        }
    }
}

fn shown_text(w: &Widget) -> (&str, bool) {
    if w.text.is_empty() {
        (&w.hint, true)
    } else {
        (&w.text, false)
    }
}

/// The symbol an icon-only button shows, from its content-desc.
fn symbol(desc: &str) -> &'static str {
    let d = desc.to_ascii_lowercase();
    if d.starts_with("navigate up") {
        "<"
    } else if d.starts_with("send") {
        ">"
    } else if d.starts_with("delete") {
        "X"
    } else if d.starts_with("edit") {
        "E"
    } else if d.starts_with("cart") {
        "$"
    } else if d.starts_with("all apps") {
        "^"
    } else {
        "+"
    }
}

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

fn paint(cv: &mut Canvas, w: &Widget, clip: Bounds) {
    let clip = clip.intersect(&w.bounds);
    if clip.is_empty() {
        return;
    }
    let f = w.frame;
    if let Some(bg) = w.bg
        && !matches!(
            w.look,
            Look::Switch | Look::Seek | Look::AppIcon | Look::Progress
        )
    {
        cv.fill(f, clip, bg);
    }
    let pad = 16;
    match w.look {
        Look::Plain => {}
        Look::Text => {
            let (t, _) = shown_text(w);
            let inner = Bounds::new(
                f.left + if w.bg.is_some() { pad } else { 0 },
                f.top,
                f.right - if w.bg.is_some() { pad } else { 0 },
                f.bottom,
            );
            cv.text(inner, clip, t, w.size, w.bold, w.fg, false);
        }
        Look::Button | Look::Key | Look::Fab => {
            let (t, _) = shown_text(w);
            if w.look == Look::Key {
                cv.outline(f, clip, [200, 200, 200], 2);
            }
            cv.text(f, clip, t, w.size, true, w.fg, true);
        }
        Look::Icon => {
            cv.text(
                f,
                clip,
                symbol(&w.desc),
                TextSize::Title,
                true,
                super::widget::TEXT,
                true,
            );
        }
        Look::AppIcon => {
            let side = (f.width().min(f.height()) * 6 / 10).max(8);
            let tile = Bounds::new(
                f.left + (f.width() - side) / 2,
                f.top + 10,
                f.left + (f.width() + side) / 2,
                f.top + 10 + side,
            );
            cv.fill(tile, clip, tile_color(&w.text));
            let initial: String = w.text.chars().take(1).collect();
            cv.text(tile, clip, &initial, TextSize::Title, true, WHITE, true);
            cv.text(
                Bounds::new(f.left, tile.bottom + 6, f.right, f.bottom),
                clip,
                &w.text,
                TextSize::Small,
                false,
                super::widget::TEXT,
                true,
            );
        }
        Look::Switch => {
            let on = w.flags & flag::CHECKED != 0;
            let th = f.height() / 2;
            let track = Bounds::new(f.left + 10, f.top + th / 2, f.right - 10, f.bottom - th / 2);
            cv.fill(
                track,
                clip,
                if on { [138, 180, 248] } else { [189, 193, 198] },
            );
            let knob = (f.height() - 8).min(f.width() / 2);
            let kx = if on { f.right - knob - 4 } else { f.left + 4 };
            cv.fill(
                Bounds::new(kx, f.top + 4, kx + knob, f.bottom - 4),
                clip,
                if on { ACCENT } else { WHITE },
            );
            cv.outline(
                Bounds::new(kx, f.top + 4, kx + knob, f.bottom - 4),
                clip,
                SUBTLE,
                2,
            );
        }
        Look::Seek => {
            let mid = (f.top + f.bottom) / 2;
            cv.fill(
                Bounds::new(f.left, mid - 6, f.right, mid + 6),
                clip,
                [189, 193, 198],
            );
            let x = f.left + (f.width() as i64 * w.value as i64 / 255) as i32;
            cv.fill(Bounds::new(f.left, mid - 6, x, mid + 6), clip, ACCENT);
            cv.fill(
                Bounds::new(x - 20, f.top + 10, x + 20, f.bottom - 10),
                clip,
                ACCENT,
            );
        }
        Look::Edit => {
            let (t, hint) = shown_text(w);
            let focused = w.flags & flag::FOCUSED != 0;
            let inner = Bounds::new(f.left + pad, f.top, f.right - pad, f.bottom);
            let masked;
            let t = if w.flags & flag::PASSWORD != 0 && !hint {
                masked = "•".repeat(t.chars().count());
                masked.as_str()
            } else {
                t
            };
            cv.text(
                inner,
                clip,
                t,
                w.size,
                w.bold,
                if hint { SUBTLE } else { w.fg },
                false,
            );
            let line_c = if focused { ACCENT } else { SUBTLE };
            cv.fill(
                Bounds::new(
                    f.left,
                    f.bottom - if focused { 6 } else { 3 },
                    f.right,
                    f.bottom,
                ),
                clip,
                line_c,
            );
        }
        Look::Progress => {
            cv.fill(
                Bounds::new(f.left, f.top, f.left + f.width() / 3, f.bottom),
                clip,
                w.bg.unwrap_or(ACCENT),
            );
        }
    }
    for c in &w.children {
        paint(cv, c, clip);
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
    let mut cv = Canvas {
        w: width as i32,
        h: height as i32,
        px: &mut px,
    };
    let full = Bounds::new(0, 0, width as i32, height as i32);
    cv.fill(full, full, WHITE);
    for win in &screen.windows {
        if win.dim {
            cv.dim();
        }
        paint(&mut cv, &win.root, full);
    }
    px
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_on_words_and_long_words() {
        let cw = char_width(TextSize::Normal, false);
        assert_eq!(
            wrap("hello world", cw * 7, TextSize::Normal, false),
            vec!["hello", "world"]
        );
        assert_eq!(
            wrap("abcdefghij", cw * 4, TextSize::Normal, false),
            vec!["abcd", "efgh", "ij"]
        );
        assert_eq!(
            wrap("a\nb", cw * 10, TextSize::Normal, false),
            vec!["a", "b"]
        );
    }

    #[test]
    fn missing_glyphs_draw_a_box_not_nothing() {
        let mut px = vec![255u8; 64 * 64 * 4];
        let mut cv = Canvas {
            w: 64,
            h: 64,
            px: &mut px,
        };
        let all = Bounds::new(0, 0, 64, 64);
        cv.line(0, 0, "日", TextSize::Normal, false, [0, 0, 0], all);
        assert!(
            px.chunks_exact(4).any(|p| p[0] == 0),
            "a tofu box was drawn"
        );
    }
}
