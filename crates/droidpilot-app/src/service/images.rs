//! Screenshot re-encoding for every front end (the API's screenshots and live frames, the
//! replay GIF's frames, the MCP `screenshot` tool): scale with fast_image_resize (SIMD, much faster
//! than image's resize for the 10-megapixel frames phones produce) and encode JPEG with
//! jpeg-encoder or PNG with image.

/// Scales RGBA pixels by `scale` and encodes them. Returns the bytes and the media type.
pub fn encode(
    rgba: &[u8],
    width: u32,
    height: u32,
    scale: f32,
    jpeg: bool,
    quality: u8,
) -> Result<(Vec<u8>, &'static str), String> {
    let (w, h) = (
        ((width as f32 * scale).round() as u32).max(1),
        ((height as f32 * scale).round() as u32).max(1),
    );
    let pixels = resize(rgba, width, height, w, h)?;
    if jpeg {
        let mut out = Vec::new();
        let enc = jpeg_encoder::Encoder::new(&mut out, quality);
        enc.encode(&pixels, w as u16, h as u16, jpeg_encoder::ColorType::Rgba)
            .map_err(|e| format!("JPEG encode failed: {e}"))?;
        Ok((out, "image/jpeg"))
    } else {
        let shot = crate::device::Screenshot {
            width: w,
            height: h,
            data: crate::device::ScreenshotData::Rgba(pixels.into()),
        };
        let png = shot.png().map_err(|e| e.to_string())?;
        Ok((png.to_vec(), "image/png"))
    }
}

/// RGBA pixels resized (bilinear; a copy when equal): the one resize models' screenshots use too.
pub use crate::llm::image::resize;
