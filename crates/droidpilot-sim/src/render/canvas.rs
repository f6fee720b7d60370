//! The pixel buffer and its primitives: rectangles, anti-aliased rounded rectangles and
//! circles, coverage masks (glyphs), dimming. Integer coordinates; the only float math
//! is a corner's coverage (sqrt), computed once per radius and cached.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use droidpilot_core::domain::Bounds;

pub struct Canvas<'a> {
    pub w: i32,
    pub h: i32,
    pub px: &'a mut [u8],
}

/// Coverage of the top-left quarter of a circle of radius `r` inside an r×r square:
/// `mask[y * r + x]`, 255 fully inside, 0 outside.
fn corner_mask(r: i32) -> Arc<[u8]> {
    static MASKS: OnceLock<RwLock<HashMap<i32, Arc<[u8]>>>> = OnceLock::new();
    let masks = MASKS.get_or_init(Default::default);
    if let Some(m) = masks.read().unwrap_or_else(PoisonError::into_inner).get(&r) {
        return m.clone();
    }
    let rf = r as f32;
    let mut m = Vec::with_capacity((r * r) as usize);
    for y in 0..r {
        for x in 0..r {
            // Distance from the pixel's centre to the circle's centre at (r, r).
            let (dx, dy) = (rf - (x as f32 + 0.5), rf - (y as f32 + 0.5));
            let cover = (rf - (dx * dx + dy * dy).sqrt() + 0.5).clamp(0.0, 1.0);
            m.push((cover * 255.0).round() as u8);
        }
    }
    let m: Arc<[u8]> = m.into();
    let mut map = masks.write().unwrap_or_else(PoisonError::into_inner);
    if map.len() > 512 {
        map.clear();
    }
    map.entry(r).or_insert(m).clone()
}

impl Canvas<'_> {
    fn visible(&self, b: Bounds, clip: Bounds) -> Bounds {
        b.intersect(&clip)
            .intersect(&Bounds::new(0, 0, self.w, self.h))
    }

    pub fn fill(&mut self, b: Bounds, clip: Bounds, c: [u8; 3]) {
        let r = self.visible(b, clip);
        if r.is_empty() {
            return;
        }
        let pixel = [c[0], c[1], c[2], 255];
        // The first row pixel by pixel, the others copied from it (a memcpy each: most
        // of a frame is large flat rectangles, and this was the sim's hottest loop).
        let first = ((r.top * self.w + r.left) * 4) as usize;
        let len = ((r.right - r.left) * 4) as usize;
        for chunk in self.px[first..first + len].chunks_exact_mut(4) {
            chunk.copy_from_slice(&pixel);
        }
        for y in r.top + 1..r.bottom {
            let start = ((y * self.w + r.left) * 4) as usize;
            self.px.copy_within(first..first + len, start);
        }
    }

    /// A rectangle with its corners rounded by `radius` (clamped to half the shorter
    /// side: a pill, or a circle for a square), edges anti-aliased.
    pub fn fill_round(&mut self, b: Bounds, clip: Bounds, c: [u8; 3], radius: i32) {
        let r = radius.min(b.width() / 2).min(b.height() / 2);
        if r <= 0 {
            return self.fill(b, clip, c);
        }
        // The cross without the four corner squares is solid.
        self.fill(
            Bounds::new(b.left + r, b.top, b.right - r, b.bottom),
            clip,
            c,
        );
        self.fill(
            Bounds::new(b.left, b.top + r, b.left + r, b.bottom - r),
            clip,
            c,
        );
        self.fill(
            Bounds::new(b.right - r, b.top + r, b.right, b.bottom - r),
            clip,
            c,
        );
        let mask = corner_mask(r);
        let vis = self.visible(b, clip);
        for y in 0..r {
            for x in 0..r {
                let a = mask[(y * r + x) as usize];
                if a == 0 {
                    continue;
                }
                let (l, t) = (b.left + x, b.top + y);
                let (rt, bt) = (b.right - 1 - x, b.bottom - 1 - y);
                for (px, py) in [(l, t), (rt, t), (l, bt), (rt, bt)] {
                    if vis.contains_xy(px, py) {
                        self.blend(px, py, c, a);
                    }
                }
            }
        }
    }

    /// A filled circle of radius `r` around (cx, cy).
    pub fn circle(&mut self, cx: i32, cy: i32, r: i32, clip: Bounds, c: [u8; 3]) {
        let b = Bounds::new(cx - r, cy - r, cx + r, cy + r);
        self.fill_round(b, clip, c, r);
    }

    pub fn outline(&mut self, b: Bounds, clip: Bounds, c: [u8; 3], t: i32) {
        self.fill(Bounds::new(b.left, b.top, b.right, b.top + t), clip, c);
        self.fill(
            Bounds::new(b.left, b.bottom - t, b.right, b.bottom),
            clip,
            c,
        );
        self.fill(Bounds::new(b.left, b.top, b.left + t, b.bottom), clip, c);
        self.fill(Bounds::new(b.right - t, b.top, b.right, b.bottom), clip, c);
    }

    /// Halves every pixel: the scrim under a dialog.
    pub fn dim(&mut self) {
        for chunk in self.px.chunks_exact_mut(4) {
            chunk[0] >>= 1;
            chunk[1] >>= 1;
            chunk[2] >>= 1;
        }
    }

    pub fn blend(&mut self, x: i32, y: i32, c: [u8; 3], a: u8) {
        if a == 0 || x < 0 || y < 0 || x >= self.w || y >= self.h {
            return;
        }
        let i = ((y * self.w + x) * 4) as usize;
        let a = a as u32;
        for (dst, src) in self.px[i..i + 3].iter_mut().zip(c) {
            *dst = ((*dst as u32 * (255 - a) + src as u32 * a + 127) / 255) as u8;
        }
    }

    /// A coverage mask `w` wide with its top-left at (x, y), in colour `c`, clipped.
    pub fn mask(&mut self, x: i32, y: i32, w: i32, alpha: &[u8], c: [u8; 3], clip: Bounds) {
        if w <= 0 {
            return;
        }
        let h = alpha.len() as i32 / w;
        let r = self.visible(Bounds::new(x, y, x + w, y + h), clip);
        for py in r.top..r.bottom {
            let row = ((py - y) * w) as usize;
            for px in r.left..r.right {
                let a = alpha[row + (px - x) as usize];
                if a == 0 {
                    continue;
                }
                if a == 255 {
                    let i = ((py * self.w + px) * 4) as usize;
                    self.px[i..i + 3].copy_from_slice(&c);
                } else {
                    self.blend(px, py, c, a);
                }
            }
        }
    }
}

trait ContainsXy {
    fn contains_xy(&self, x: i32, y: i32) -> bool;
}

impl ContainsXy for Bounds {
    fn contains_xy(&self, x: i32, y: i32) -> bool {
        x >= self.left && x < self.right && y >= self.top && y < self.bottom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canvas(px: &mut [u8], side: i32) -> Canvas<'_> {
        Canvas {
            w: side,
            h: side,
            px,
        }
    }

    #[test]
    fn rounded_corners_are_cut_and_edges_blend() {
        let mut px = vec![255u8; 40 * 40 * 4];
        let all = Bounds::new(0, 0, 40, 40);
        canvas(&mut px, 40).fill_round(all, all, [0, 0, 0], 10);
        let at = |x: i32, y: i32| px[((y * 40 + x) * 4) as usize];
        assert_eq!(at(0, 0), 255, "the corner pixel stays background");
        assert_eq!(at(20, 20), 0, "the middle is filled");
        assert_eq!(at(20, 0), 0, "the straight edge is filled");
        assert!((1..255).contains(&at(3, 2)), "the arc is anti-aliased");
        // The four corners are mirror images.
        assert_eq!(at(3, 2), at(36, 2));
        assert_eq!(at(3, 2), at(3, 37));
        assert_eq!(at(3, 2), at(36, 37));
    }

    #[test]
    fn a_mask_blends_by_coverage() {
        let mut px = vec![255u8; 4 * 4 * 4];
        let all = Bounds::new(0, 0, 4, 4);
        canvas(&mut px, 4).mask(1, 1, 2, &[255, 0, 128, 255], [0, 0, 0], all);
        let at = |x: i32, y: i32| px[((y * 4 + x) * 4) as usize];
        assert_eq!((at(1, 1), at(2, 1), at(2, 2)), (0, 255, 0));
        assert_eq!(at(1, 2), 127);
        assert_eq!(at(0, 0), 255);
    }
}
