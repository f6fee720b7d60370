//! Low-resolution screen fingerprints: the cheap signal the runner settles by. A
//! `Thumb` is a coarse grid of mean brightness over a screenshot; two thumbs that agree
//! cell for cell mean the screen did not visibly move between the two captures, without
//! paying for a UI dump (~2 s on a real phone) to find out.

use super::{Screenshot, ScreenshotData};

/// Grid cells across and down. 27 × 60 cells on a 1080 × 2400 screen are 40 px squares:
/// a glyph, a checkbox or a caret changes its cell.
const COLS: u32 = 27;
const ROWS: u32 = 60;
/// Every `STRIDE`-th pixel of a cell, both ways, is sampled: 1/64 of the pixels (about
/// 40,000 on a 1080 × 2400 screen, tens of µs). A glyph moves its cell; a 1 px caret may
/// fall between samples, which is as well: a blinking caret is not the screen moving.
const STRIDE: u32 = 8;

/// A screenshot reduced to `COLS × ROWS` mean-luma cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thumb {
    cells: Vec<u8>,
}

impl Thumb {
    /// The fingerprint of a screenshot; None when its pixels cannot be read.
    pub fn of(shot: &Screenshot) -> Option<Thumb> {
        let (w, h) = (shot.width, shot.height);
        if w < COLS || h < ROWS {
            return None;
        }
        let rgba = match &shot.data {
            ScreenshotData::Rgba(b) => b.clone(),
            // A PNG (real phones) is decoded once; that is server CPU, not device time.
            ScreenshotData::Png(_) => shot.rgba().ok()?,
        };
        if rgba.len() < (w * h * 4) as usize {
            return None;
        }
        let mut cells = Vec::with_capacity((COLS * ROWS) as usize);
        for row in 0..ROWS {
            let (y0, y1) = (row * h / ROWS, (row + 1) * h / ROWS);
            for col in 0..COLS {
                let (x0, x1) = (col * w / COLS, (col + 1) * w / COLS);
                cells.push(mean_luma(&rgba, w, x0..x1, y0..y1));
            }
        }
        Some(Thumb { cells })
    }

    /// Whether two captures show the same screen (every cell within one step of
    /// brightness, which absorbs rounding but not a changed glyph).
    pub fn same(&self, other: &Thumb) -> bool {
        self.cells.len() == other.cells.len()
            && self
                .cells
                .iter()
                .zip(&other.cells)
                .all(|(a, b)| a.abs_diff(*b) <= 1)
    }
}

fn mean_luma(rgba: &[u8], w: u32, xs: std::ops::Range<u32>, ys: std::ops::Range<u32>) -> u8 {
    let (mut sum, mut n) = (0u64, 0u64);
    for y in ys.step_by(STRIDE as usize) {
        for x in xs.clone().step_by(STRIDE as usize) {
            let i = ((y * w + x) * 4) as usize;
            let (r, g, b) = (rgba[i] as u64, rgba[i + 1] as u64, rgba[i + 2] as u64);
            sum += (r * 299 + g * 587 + b * 114) / 1000;
            n += 1;
        }
    }
    (sum / n.max(1)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn shot(raw: Vec<u8>) -> Screenshot {
        Screenshot {
            width: 1080,
            height: 2400,
            data: ScreenshotData::Rgba(Bytes::from(raw)),
        }
    }

    #[test]
    fn a_small_change_anywhere_is_seen_and_the_same_pixels_are_the_same() {
        let white = vec![255u8; 1080 * 2400 * 4];
        let a = Thumb::of(&shot(white.clone())).unwrap();
        assert!(a.same(&Thumb::of(&shot(white.clone())).unwrap()));
        // A 12 × 24 px dark glyph near the bottom right corner.
        let mut glyph = white;
        for y in 2300..2324 {
            for x in 1000..1012 {
                let i = (y * 1080 + x) * 4;
                glyph[i..i + 3].copy_from_slice(&[20, 20, 20]);
            }
        }
        let b = Thumb::of(&shot(glyph)).unwrap();
        assert!(!a.same(&b));
        // The PNG of a frame fingerprints like its pixels.
        let png = shot(vec![255u8; 1080 * 2400 * 4]).png().unwrap();
        let png = Screenshot {
            width: 1080,
            height: 2400,
            data: ScreenshotData::Png(png),
        };
        assert!(a.same(&Thumb::of(&png).unwrap()));
    }

    #[test]
    fn unreadable_pixels_have_no_fingerprint() {
        let short = Screenshot {
            width: 1080,
            height: 2400,
            data: ScreenshotData::Rgba(Bytes::from(vec![0u8; 16])),
        };
        assert!(Thumb::of(&short).is_none());
    }
}
