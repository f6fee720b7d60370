//! A finished (or running) run as an animated GIF, for bug reports: one frame per step
//! screenshot, scaled to a width, with the step's tap point (a red dot in a white ring)
//! or swipe (a red line to a dot) drawn where the action landed. Bounded: at most
//! `MAX_FRAMES` frames (evenly sampled, the last step always kept) and `MAX_BYTES` of
//! output (frames past it are dropped, and the GIF ends there).
//!
//! The same frames, marks included, make the MP4 (`replay_mp4`).

use image::codecs::gif::{GifEncoder, Repeat};
use image::{Delay, Frame, Rgba, RgbaImage};
use serde_json::Value;

use crate::domain::Step;

/// The most frames a GIF holds.
pub const MAX_FRAMES: usize = 120;
/// The most bytes a GIF may grow to.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// One step's frame, before drawing: its PNG and what its action did.
pub struct StepFrame {
    pub png: Vec<u8>,
    /// The action's outcome detail: `point` for taps, `from`/`to` for swipes (pixels).
    pub detail: Option<Value>,
}

/// The steps whose screenshots make the frames, at most `MAX_FRAMES`, evenly spread
/// (the first and last always in).
pub fn pick(steps: &[Step]) -> Vec<&Step> {
    let shots: Vec<&Step> = steps.iter().filter(|s| s.screenshot.is_some()).collect();
    if shots.len() <= MAX_FRAMES {
        return shots;
    }
    let last = shots.len() - 1;
    (0..MAX_FRAMES)
        .map(|i| shots[i * last / (MAX_FRAMES - 1)])
        .collect()
}

/// Encodes the frames: each scaled to `width` pixels wide, shown `frame_ms`, looping.
pub fn render(frames: Vec<StepFrame>, width: u32, frame_ms: u32) -> Result<Vec<u8>, String> {
    let written = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let mut out = Vec::new();
    {
        let sink = Counted {
            out: &mut out,
            written: written.clone(),
        };
        let mut enc = GifEncoder::new_with_speed(sink, 10);
        enc.set_repeat(Repeat::Infinite)
            .map_err(|e| format!("GIF encode failed: {e}"))?;
        let delay = Delay::from_numer_denom_ms(frame_ms, 1);
        for f in frames {
            if written.get() > MAX_BYTES {
                break;
            }
            let img = frame(&f, width)?;
            enc.encode_frame(Frame::from_parts(img, 0, 0, delay))
                .map_err(|e| format!("GIF encode failed: {e}"))?;
        }
    }
    Ok(out)
}

/// The output buffer, counting what the encoder has written so far.
struct Counted<'a> {
    out: &'a mut Vec<u8>,
    written: std::rc::Rc<std::cell::Cell<usize>>,
}

impl std::io::Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.extend_from_slice(buf);
        self.written.set(self.out.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One frame: the screenshot scaled to `width`, with the action drawn on it.
pub(crate) fn frame(f: &StepFrame, width: u32) -> Result<RgbaImage, String> {
    let img = image::load_from_memory_with_format(&f.png, image::ImageFormat::Png)
        .map_err(|e| format!("bad screenshot: {e}"))?
        .to_rgba8();
    let (w0, h0) = img.dimensions();
    let w = width.min(w0).max(1);
    let h = ((h0 as u64 * w as u64) / w0.max(1) as u64).max(1) as u32;
    let scaled = crate::service::images::resize(img.as_raw(), w0, h0, w, h)?;
    let mut img = RgbaImage::from_raw(w, h, scaled).ok_or("resize gave a bad buffer")?;
    let k = w as f32 / w0.max(1) as f32;
    let at = |v: &Value| -> Option<(f32, f32)> {
        let p = v.as_array()?;
        Some((
            p.first()?.as_f64()? as f32 * k,
            p.get(1)?.as_f64()? as f32 * k,
        ))
    };
    let radius = (w as f32 / 40.0).max(4.0);
    if let Some(d) = &f.detail {
        match (
            d.get("point").and_then(at),
            d.get("from").and_then(at),
            d.get("to").and_then(at),
        ) {
            (Some(p), _, _) => dot(&mut img, p, radius),
            (None, Some(a), Some(b)) => {
                line(&mut img, a, b, (radius / 2.5).max(2.0));
                dot(&mut img, b, radius);
            }
            _ => {}
        }
    }
    Ok(img)
}

const RED: Rgba<u8> = Rgba([230, 20, 20, 255]);
const WHITE: Rgba<u8> = Rgba([255, 255, 255, 255]);

/// A red dot in a white ring, centred on `p`.
fn dot(img: &mut RgbaImage, p: (f32, f32), r: f32) {
    disc(img, p, r + 2.0, WHITE);
    disc(img, p, r, RED);
}

fn disc(img: &mut RgbaImage, (cx, cy): (f32, f32), r: f32, c: Rgba<u8>) {
    let (w, h) = img.dimensions();
    let x0 = (cx - r).floor().max(0.0) as u32;
    let y0 = (cy - r).floor().max(0.0) as u32;
    let x1 = ((cx + r).ceil() as u32).min(w.saturating_sub(1));
    let y1 = ((cy + r).ceil() as u32).min(h.saturating_sub(1));
    for y in y0..=y1 {
        for x in x0..=x1 {
            let (dx, dy) = (x as f32 - cx, y as f32 - cy);
            if dx * dx + dy * dy <= r * r {
                img.put_pixel(x, y, c);
            }
        }
    }
}

/// A thick red line from `a` to `b` (discs along it).
fn line(img: &mut RgbaImage, a: (f32, f32), b: (f32, f32), thickness: f32) {
    let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
    let n = (len / (thickness / 2.0).max(1.0)).ceil().max(1.0) as u32;
    for i in 0..=n {
        let t = i as f32 / n as f32;
        let p = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
        disc(img, p, thickness, RED);
    }
}
