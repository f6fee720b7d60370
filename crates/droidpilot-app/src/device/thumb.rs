//! Low-resolution screen fingerprints: the cheap signal that tells whether the picture
//! moved when the UI tree cannot (a canvas, a map, a web view without accessibility
//! nodes). A `Thumb` is a coarse grid of mean brightness over a screenshot; two thumbs
//! that agree cell for cell mean the screen did not visibly change between the captures.
//!
//! A PNG (what `screencap -p` sends) is read row by row with the `png` crate's streaming
//! decoder and only every `STRIDE`-th row is sampled, so no full RGBA frame is allocated;
//! the inflate itself still costs a few ms at 1080 × 2400, which is why the runner asks
//! for a fingerprint only when the tree says nothing changed.

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

/// Running sums per cell while rows arrive.
struct Grid {
    w: u32,
    h: u32,
    sums: Vec<(u64, u64)>,
}

impl Grid {
    fn new(w: u32, h: u32) -> Option<Grid> {
        (w >= COLS && h >= ROWS).then(|| Grid {
            w,
            h,
            sums: vec![(0, 0); (COLS * ROWS) as usize],
        })
    }

    /// Adds row `y` (`bpp` bytes per pixel, colour in the first three, or one grey
    /// sample when `bpp` < 3) if it is a sampled row.
    fn row(&mut self, y: u32, px: &[u8], bpp: usize) {
        let cell_row = y * ROWS / self.h;
        // Sample rows at a stride within each cell, as columns are.
        let y0 = cell_row * self.h / ROWS;
        if !(y - y0).is_multiple_of(STRIDE) || px.len() < self.w as usize * bpp {
            return;
        }
        for col in 0..COLS {
            let (x0, x1) = (col * self.w / COLS, (col + 1) * self.w / COLS);
            let cell = &mut self.sums[(cell_row * COLS + col) as usize];
            for x in (x0..x1).step_by(STRIDE as usize) {
                let p = &px[x as usize * bpp..];
                let luma = if bpp >= 3 {
                    (p[0] as u64 * 299 + p[1] as u64 * 587 + p[2] as u64 * 114) / 1000
                } else {
                    p[0] as u64
                };
                cell.0 += luma;
                cell.1 += 1;
            }
        }
    }

    fn finish(self) -> Thumb {
        let cells = self.sums.iter().map(|(s, n)| (s / n.max(&1)) as u8);
        Thumb {
            cells: cells.collect(),
        }
    }
}

impl Thumb {
    /// The fingerprint of a screenshot; None when its pixels cannot be read.
    pub fn of(shot: &Screenshot) -> Option<Thumb> {
        match &shot.data {
            ScreenshotData::Rgba(raw) => Thumb::of_rgba(raw, shot.width, shot.height),
            ScreenshotData::Png(png) => Thumb::of_png(png),
        }
    }

    fn of_rgba(raw: &[u8], w: u32, h: u32) -> Option<Thumb> {
        let mut grid = Grid::new(w, h)?;
        let stride = w as usize * 4;
        if raw.len() < stride * h as usize {
            return None;
        }
        for (y, px) in raw.chunks_exact(stride).take(h as usize).enumerate() {
            grid.row(y as u32, px, 4);
        }
        Some(grid.finish())
    }

    /// The fingerprint of PNG bytes, row by row; palettes expanded and 16-bit samples stripped (8-bit grey, grey+alpha,
    /// RGB or RGBA rows).
    pub fn of_png(png: &[u8]) -> Option<Thumb> {
        let mut decoder = ::png::Decoder::new(std::io::Cursor::new(png));
        decoder.set_transformations(::png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().ok()?;
        let (w, h) = (reader.info().width, reader.info().height);
        if reader.info().interlaced {
            // Adam7 rows arrive pass by pass (no phone sends these): decode whole.
            let img = image::load_from_memory_with_format(png, image::ImageFormat::Png).ok()?;
            return Thumb::of_rgba(&img.to_rgba8(), w, h);
        }
        let bpp = match reader.output_color_type().0 {
            ::png::ColorType::Grayscale => 1,
            ::png::ColorType::GrayscaleAlpha => 2,
            ::png::ColorType::Rgb | ::png::ColorType::Indexed => 3,
            ::png::ColorType::Rgba => 4,
        };
        let mut grid = Grid::new(w, h)?;
        let mut y = 0;
        while let Some(row) = reader.next_row().ok()? {
            if y >= h {
                break;
            }
            grid.row(y, row.data(), bpp);
            y += 1;
        }
        (y == h).then(|| grid.finish())
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
