//! How a screenshot is sent to a model: `ScreenshotEncoding`, one per model
//! (`[agent.navigator.screenshot]`…, or an agent spec's `screenshot`). By default a
//! scaled JPEG (long side at most 1280 pixels) with seed 002's adaptive quality: the
//! highest of four qualities from `max_quality` down to `min_quality` (50 … 15) whose
//! bytes fit `target_bytes`. A phone's full-size PNG (1080×2400, ~140 KB) is several
//! times the bytes and up to twice the image tokens of what a model needs to read it.
//!
//! Agents call `ScreenshotEncoding::apply` where they put the screenshot into a request
//! and read the point a vision model answers against the encoded image's size, so a
//! model's pixel coordinates are those of the image it saw. Scaling reuses
//! fast_image_resize (as `service::images` does for the API's screenshots), JPEG is
//! jpeg-encoder's, decoding is the image crate's.

use fast_image_resize as fr;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::types::{ImageData, ImageMime};

/// The file format a model receives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    #[default]
    Jpeg,
    Png,
}

fn default_max_side() -> u32 {
    1280
}
fn default_min_quality() -> u8 {
    15
}
fn default_max_quality() -> u8 {
    50
}
fn default_target_bytes() -> u32 {
    60_000
}

/// How screenshots are encoded for one model. `{"format": "png", "max_side": 0}` sends
/// the device's image unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotEncoding {
    /// `jpeg` (default) or `png`.
    #[serde(default)]
    pub format: ImageFormat,
    /// The longest side in pixels after scaling (never enlarged); 0 keeps the size.
    #[serde(default = "default_max_side")]
    #[schema(maximum = 8192)]
    pub max_side: u32,
    /// JPEG only: the lowest quality tried (1–100).
    #[serde(default = "default_min_quality")]
    #[schema(minimum = 1, maximum = 100)]
    pub min_quality: u8,
    /// JPEG only: the first, highest quality tried (1–100, at least `min_quality`).
    #[serde(default = "default_max_quality")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_quality: u8,
    /// JPEG only: the quality is lowered until the image fits this many bytes (or
    /// reaches `min_quality`).
    #[serde(default = "default_target_bytes")]
    #[schema(minimum = 1)]
    pub target_bytes: u32,
}

impl Default for ScreenshotEncoding {
    fn default() -> Self {
        Self {
            format: ImageFormat::Jpeg,
            max_side: default_max_side(),
            min_quality: default_min_quality(),
            max_quality: default_max_quality(),
            target_bytes: default_target_bytes(),
        }
    }
}

/// The screenshot as encoded, with the quality chosen.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub image: ImageData,
    /// The JPEG quality used; `None` for a PNG or an image sent unchanged.
    pub quality: Option<u8>,
}

impl ScreenshotEncoding {
    /// The same image, kept as it came (PNG at full size).
    pub fn unchanged() -> Self {
        Self {
            format: ImageFormat::Png,
            max_side: 0,
            ..Self::default()
        }
    }

    /// What is wrong with these settings, for a config or spec error.
    pub fn problem(&self) -> Option<String> {
        let q = 1..=100;
        if !q.contains(&self.min_quality) || !q.contains(&self.max_quality) {
            return Some("`min_quality` and `max_quality` must be between 1 and 100".into());
        }
        if self.min_quality > self.max_quality {
            return Some(format!(
                "`min_quality` ({}) must not be above `max_quality` ({})",
                self.min_quality, self.max_quality
            ));
        }
        if self.max_side != 0 && !(64..=8192).contains(&self.max_side) {
            return Some(format!(
                "`max_side` must be 0 (keep the size) or 64 to 8192 pixels, got {}",
                self.max_side
            ));
        }
        if self.target_bytes == 0 {
            return Some("`target_bytes` must be at least 1".into());
        }
        None
    }

    /// The screenshot as this model receives it; the original when it cannot be
    /// decoded (the provider then gets what the device gave).
    pub fn apply(&self, img: &ImageData) -> ImageData {
        match self.encode(img) {
            Ok(e) => e.image,
            Err(e) => {
                tracing::debug!(error = %e, "screenshot sent unchanged");
                img.clone()
            }
        }
    }

    /// Scales and encodes `img`; see the module doc.
    pub fn encode(&self, img: &ImageData) -> Result<Encoded, String> {
        let (w, h) = img.dimensions().ok_or("the image has no readable size")?;
        let (tw, th) = self.target_size(w, h);
        let same_format = matches!(
            (self.format, img.mime()),
            (ImageFormat::Png, ImageMime::Png)
        );
        if (tw, th) == (w, h) && same_format {
            let quality = None;
            return Ok(Encoded {
                image: img.clone(),
                quality,
            });
        }
        let rgba = image::load_from_memory(img.bytes())
            .map_err(|e| format!("cannot decode the screenshot: {e}"))?
            .into_rgba8();
        let pixels = resize(rgba.as_raw(), w, h, tw, th)?;
        match self.format {
            ImageFormat::Png => Ok(Encoded {
                image: png(&pixels, tw, th)?,
                quality: None,
            }),
            ImageFormat::Jpeg => self.adaptive_jpeg(&pixels, tw, th),
        }
    }

    /// The size after scaling: the long side to `max_side`, the aspect kept.
    pub fn target_size(&self, w: u32, h: u32) -> (u32, u32) {
        let long = w.max(h);
        if self.max_side == 0 || long <= self.max_side {
            return (w, h);
        }
        let k = f64::from(self.max_side) / f64::from(long);
        let s = |v: u32| ((f64::from(v) * k).round() as u32).max(1);
        (s(w), s(h))
    }

    /// The qualities tried, highest first: `max_quality`, two between, `min_quality`.
    pub fn qualities(&self) -> Vec<u8> {
        let (lo, hi) = (self.min_quality, self.max_quality.max(self.min_quality));
        let span = f32::from(hi - lo);
        let mut q: Vec<u8> = (0..4)
            .map(|i| hi - (span * i as f32 / 3.0).round() as u8)
            .collect();
        q.dedup();
        q
    }

    fn adaptive_jpeg(&self, rgba: &[u8], w: u32, h: u32) -> Result<Encoded, String> {
        let mut last = None;
        for q in self.qualities() {
            let bytes = jpeg(rgba, w, h, q)?;
            let fits = bytes.len() <= self.target_bytes as usize;
            last = Some((bytes, q));
            if fits {
                break;
            }
        }
        let (bytes, q) = last.ok_or("no quality to try")?;
        let image = ImageData::from_bytes(bytes).map_err(|e| e.to_string())?;
        Ok(Encoded {
            image,
            quality: Some(q),
        })
    }
}

fn jpeg(rgba: &[u8], w: u32, h: u32, quality: u8) -> Result<Vec<u8>, String> {
    let (w16, h16) = (
        u16::try_from(w).map_err(|_| "image too wide for JPEG")?,
        u16::try_from(h).map_err(|_| "image too tall for JPEG")?,
    );
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, quality)
        .encode(rgba, w16, h16, jpeg_encoder::ColorType::Rgba)
        .map_err(|e| format!("JPEG encode failed: {e}"))?;
    Ok(out)
}

fn png(rgba: &[u8], w: u32, h: u32) -> Result<ImageData, String> {
    let buf = image::RgbaImage::from_raw(w, h, rgba.to_vec()).ok_or("bad pixel buffer")?;
    let mut out = std::io::Cursor::new(Vec::new());
    buf.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| format!("PNG encode failed: {e}"))?;
    ImageData::from_bytes(out.into_inner()).map_err(|e| e.to_string())
}

/// RGBA pixels of `width`×`height` resized to `w`×`h` (bilinear; a copy when equal).
pub fn resize(rgba: &[u8], width: u32, height: u32, w: u32, h: u32) -> Result<Vec<u8>, String> {
    if (w, h) == (width, height) {
        return Ok(rgba.to_vec());
    }
    let src = fr::images::ImageRef::new(width, height, rgba, fr::PixelType::U8x4)
        .map_err(|e| format!("bad frame: {e}"))?;
    let mut dst = fr::images::Image::new(w, h, fr::PixelType::U8x4);
    fr::Resizer::new()
        .resize(
            &src,
            &mut dst,
            &fr::ResizeOptions::new()
                .resize_alg(fr::ResizeAlg::Convolution(fr::FilterType::Bilinear)),
        )
        .map_err(|e| format!("resize failed: {e}"))?;
    Ok(dst.into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phone-sized PNG with some structure (bands of colour, as a UI has).
    fn phone_png(w: u32, h: u32) -> ImageData {
        let img = image::RgbaImage::from_fn(w, h, |x, y| {
            let band = (y / 120) as u8;
            image::Rgba([band.wrapping_mul(37), (x / 8) as u8, 200, 255])
        });
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        ImageData::from_bytes(out.into_inner()).unwrap()
    }

    #[test]
    fn a_phone_screenshot_becomes_a_scaled_jpeg_within_the_quality_range() {
        let shot = phone_png(1080, 2400);
        let e = ScreenshotEncoding::default().encode(&shot).unwrap();
        assert_eq!(e.image.mime(), ImageMime::Jpeg);
        assert_eq!(e.image.dimensions(), Some((576, 1280)));
        let q = e.quality.unwrap();
        assert!((15..=50).contains(&q), "{q}");
    }

    #[test]
    fn quality_drops_until_the_bytes_fit_and_stops_at_the_minimum() {
        let shot = phone_png(1080, 2400);
        let roomy = ScreenshotEncoding {
            target_bytes: 10_000_000,
            ..Default::default()
        };
        assert_eq!(roomy.encode(&shot).unwrap().quality, Some(50));
        let tight = ScreenshotEncoding {
            target_bytes: 1,
            ..Default::default()
        };
        let t = tight.encode(&shot).unwrap();
        assert_eq!(t.quality, Some(15));
        assert!(t.image.bytes().len() < roomy.encode(&shot).unwrap().image.bytes().len());
        assert_eq!(
            ScreenshotEncoding::default().qualities(),
            vec![50, 38, 27, 15]
        );
    }

    #[test]
    fn unchanged_keeps_the_png_and_png_scaling_stays_png() {
        let shot = phone_png(1080, 2400);
        let same = ScreenshotEncoding::unchanged().encode(&shot).unwrap();
        assert_eq!(same.image, shot);
        let small = ScreenshotEncoding {
            format: ImageFormat::Png,
            max_side: 640,
            ..Default::default()
        };
        let p = small.encode(&shot).unwrap().image;
        assert_eq!(
            (p.mime(), p.dimensions()),
            (ImageMime::Png, Some((288, 640)))
        );
    }

    #[test]
    fn a_small_image_is_never_enlarged_and_bad_settings_are_named() {
        let s = ScreenshotEncoding::default();
        assert_eq!(s.target_size(4, 8), (4, 8));
        let bad = ScreenshotEncoding {
            min_quality: 60,
            ..Default::default()
        };
        assert!(bad.problem().unwrap().contains("min_quality"));
        let tiny = ScreenshotEncoding {
            max_side: 10,
            ..Default::default()
        };
        assert!(tiny.problem().unwrap().contains("max_side"));
        assert_eq!(ScreenshotEncoding::default().problem(), None);
    }
}
