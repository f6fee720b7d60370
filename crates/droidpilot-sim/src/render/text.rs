//! Glyphs for the painter: Roboto (Android's UI font, regular and medium, from
//! `damascene-fonts-roboto`) and the Material Icons font (from `material-icons`), both
//! embedded in the binary, rasterised with ab_glyph.
//!
//! Each glyph is rasterised once per (face, glyph, pixel size) into a process-wide cache,
//! so a frame only blends cached coverage bytes. Glyphs sit on whole pixels (the pen
//! position is rounded), which keeps one bitmap per size valid everywhere. Output is
//! byte-identical on every machine: ab_glyph's outline scaling and its rasteriser use
//! plain IEEE f32 arithmetic (add, mul, div, sqrt, floor), which Rust never fuses or
//! reorders, and coverage becomes a byte by one rounding. No system font is read.
//!
//! Line breaking has two metrics: `wrap` measures with the font (what the picture
//! shows), `wrap_count` with the fixed 14-pixel cell the layout was designed with (the
//! bounds in the hierarchy must not move with the font).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use ab_glyph::{Font, FontRef, GlyphId, PxScale, point};
use damascene_fonts_roboto::{ROBOTO_MEDIUM, ROBOTO_REGULAR};

/// A typeface the painter draws with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Face {
    Regular,
    /// Titles, buttons and other emphasised text (Android's bold UI text is mostly
    /// Roboto Medium).
    Medium,
    /// Material Icons: a symbol's code point is a glyph of this face.
    Icons,
}

fn font(face: Face) -> &'static FontRef<'static> {
    static FONTS: OnceLock<[FontRef<'static>; 3]> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let load = |b: &'static [u8]| FontRef::try_from_slice(b).expect("embedded font parses");
        [
            load(ROBOTO_REGULAR),
            load(ROBOTO_MEDIUM),
            load(material_icons::FONT),
        ]
    });
    &fonts[face as usize]
}

/// The ab_glyph scale for `px`: text faces take `px` as the line height (ascent to
/// descent), the icon face as the em square, which is what an icon's size means.
fn scale(face: Face, px: i32) -> PxScale {
    let f = font(face);
    match face {
        Face::Icons => {
            let em = f.units_per_em().unwrap_or(1.0);
            PxScale::from(px as f32 * f.height_unscaled() / em)
        }
        _ => PxScale::from(px as f32),
    }
}

/// The distance from a line's top to its baseline, for text `px` high.
pub fn ascent(face: Face, px: i32) -> i32 {
    let f = font(face);
    (px as f32 * f.ascent_unscaled() / f.height_unscaled()).round() as i32
}

/// One rasterised glyph: coverage bytes, `left`/`top` from the pen on the baseline.
pub struct Bitmap {
    pub left: i32,
    pub top: i32,
    pub w: i32,
    pub h: i32,
    pub alpha: Box<[u8]>,
}

type Key = (Face, u16, i32);
/// Past this many cached bitmaps the cache starts over (a bound on memory for a process
/// that renders unusual text at many sizes; the output does not depend on it).
const CACHE_LIMIT: usize = 20_000;

fn cache() -> &'static RwLock<HashMap<Key, Arc<Bitmap>>> {
    static CACHE: OnceLock<RwLock<HashMap<Key, Arc<Bitmap>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn rasterize(face: Face, id: GlyphId, px: i32) -> Bitmap {
    let glyph = id.with_scale_and_position(scale(face, px), point(0.0, 0.0));
    let Some(outline) = font(face).outline_glyph(glyph) else {
        return Bitmap {
            left: 0,
            top: 0,
            w: 0,
            h: 0,
            alpha: Box::new([]),
        };
    };
    let b = outline.px_bounds();
    let (w, h) = (b.width() as i32, b.height() as i32);
    let mut alpha = vec![0u8; (w * h).max(0) as usize];
    outline.draw(|x, y, c| {
        if let Some(a) = alpha.get_mut(y as usize * w as usize + x as usize) {
            *a = (c.clamp(0.0, 1.0) * 255.0).round() as u8;
        }
    });
    Bitmap {
        left: b.min.x as i32,
        top: b.min.y as i32,
        w,
        h,
        alpha: alpha.into_boxed_slice(),
    }
}

/// The bitmap of `c` in `face` at `px`; None when the face has no such glyph.
pub fn glyph(face: Face, c: char, px: i32) -> Option<Arc<Bitmap>> {
    let id = font(face).glyph_id(c);
    if id.0 == 0 {
        return None;
    }
    let key = (face, id.0, px);
    if let Some(b) = cache()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return Some(b.clone());
    }
    let bitmap = Arc::new(rasterize(face, id, px));
    let mut map = cache().write().unwrap_or_else(PoisonError::into_inner);
    if map.len() >= CACHE_LIMIT {
        map.clear();
    }
    Some(map.entry(key).or_insert(bitmap).clone())
}

/// How far the pen moves after `c`; a glyph the face lacks takes half the size (the box
/// drawn in its place).
pub fn advance(face: Face, c: char, px: i32) -> f32 {
    let f = font(face);
    let id = f.glyph_id(c);
    if id.0 == 0 && !c.is_whitespace() {
        return (px / 2) as f32;
    }
    let em_scale = scale(face, px).x / f.height_unscaled();
    f.h_advance_unscaled(id) * em_scale
}

/// The width of `s` in pixels.
pub fn width(face: Face, px: i32, s: &str) -> i32 {
    s.chars().map(|c| advance(face, c, px)).sum::<f32>().round() as i32
}

/// Splits text into lines no wider than `limit` by `adv`, on spaces where possible; a
/// word longer than a line is broken, and every line holds at least one character.
fn wrap_with(text: &str, limit: f32, adv: impl Fn(char) -> f32) -> Vec<String> {
    let mut lines = Vec::new();
    let space = adv(' ');
    for para in text.split('\n') {
        let mut cur = String::new();
        let mut x = 0.0f32;
        for word in para.split(' ') {
            let ww: f32 = word.chars().map(&adv).sum();
            if !cur.is_empty() && x + space + ww > limit {
                lines.push(std::mem::take(&mut cur));
                x = 0.0;
            }
            if !cur.is_empty() {
                cur.push(' ');
                x += space;
            }
            for c in word.chars() {
                let a = adv(c);
                if !cur.is_empty() && x + a > limit {
                    lines.push(std::mem::take(&mut cur));
                    x = 0.0;
                }
                cur.push(c);
                x += a;
            }
        }
        lines.push(cur);
    }
    lines
}

/// Lines of `text` in `face` at `px` that fit `width` pixels.
pub fn wrap(text: &str, width: i32, face: Face, px: i32) -> Vec<String> {
    wrap_with(text, width.max(1) as f32, |c| advance(face, c, px))
}

/// The character cell the layout measures text with (the monospace font the screens
/// were laid out for).
const LAYOUT_CELL: usize = 14;

/// How many lines `text` takes in `width` pixels by the layout's metric. Layout (dialog
/// and message heights) uses this, so bounds stay where they were whatever the font.
pub fn wrap_count(text: &str, width: usize) -> usize {
    let limit = (width / LAYOUT_CELL).max(1) * LAYOUT_CELL;
    wrap_with(text, limit as f32, |_| LAYOUT_CELL as f32).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_wrap_breaks_on_words_and_long_words() {
        let cell = LAYOUT_CELL;
        assert_eq!(wrap_count("hello world", cell * 7), 2);
        assert_eq!(wrap_count("hello world", cell * 11), 1);
        assert_eq!(wrap_count("abcdefghij", cell * 4), 3);
        assert_eq!(wrap_count("a\nb", cell * 10), 2);
        // A width under one cell still fits one character per line.
        assert_eq!(wrap_count("abc", 3), 3);
    }

    #[test]
    fn proportional_wrap_measures_with_the_font() {
        let px = 49;
        let w = width(Face::Regular, px, "hello");
        assert!(
            width(Face::Regular, px, "iiiii") < width(Face::Regular, px, "MMMMM"),
            "the font is proportional"
        );
        assert_eq!(
            wrap("hello hello", w + 2, Face::Regular, px),
            vec!["hello", "hello"]
        );
        assert_eq!(
            wrap("hello hello", 3 * w, Face::Regular, px),
            vec!["hello hello"]
        );
        let broken = wrap("abcdefghijklmnop", w, Face::Regular, px);
        assert!(broken.len() > 1 && broken.concat() == "abcdefghijklmnop");
    }

    #[test]
    fn glyphs_are_cached_and_missing_ones_are_none() {
        let a = glyph(Face::Regular, 'a', 40).unwrap();
        let b = glyph(Face::Regular, 'a', 40).unwrap();
        assert!(Arc::ptr_eq(&a, &b) || a.alpha == b.alpha);
        assert!(a.alpha.contains(&255), "solid ink inside the stem");
        assert!(glyph(Face::Regular, '日', 40).is_none());
        assert!(advance(Face::Regular, '日', 40) > 0.0);
    }
}
