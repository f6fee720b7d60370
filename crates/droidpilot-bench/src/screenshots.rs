//! `droidpilot bench screenshots`: the bytes and image tokens of the screenshot a model
//! receives per step, before (the device's full-size PNG) and after (the model's
//! `ScreenshotEncoding`, by default a JPEG whose long side is 1280 pixels with adaptive
//! quality 50 … 15), and the time the encoding takes.
//!
//! Each selected eval task runs its reference solution on a fresh virtual phone; at every
//! step (and the finish) the screenshot is taken as the runner takes it and encoded as an
//! agent would. Image tokens follow each provider's published rule (`tokens.rs`).

use std::time::Instant;

use serde::Serialize;

use crate::device::Device;
use crate::device::exec::{ExecContext, execute};
use crate::device::sim::{SimConfig, SimDevice, SimTask};
use crate::domain::{LinearTransform, ScreenSize};
use crate::llm::{ImageData, ScreenshotEncoding};
use crate::screen::{ReprOptions, Screen};
use crate::tokens::{
    TokensError, anthropic_image_tokens, gemini_image_tokens, openai_image_tokens,
};

/// One image's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ImageCost {
    pub bytes: f64,
    pub width: u32,
    pub height: u32,
    pub openai_tokens: f64,
    pub anthropic_tokens: f64,
    pub gemini_tokens: f64,
}

impl ImageCost {
    fn of(img: &ImageData) -> Self {
        let (w, h) = img.dimensions().unwrap_or_default();
        Self {
            bytes: img.bytes().len() as f64,
            width: w,
            height: h,
            openai_tokens: openai_image_tokens(w, h) as f64,
            anthropic_tokens: anthropic_image_tokens(w, h) as f64,
            gemini_tokens: gemini_image_tokens(w, h) as f64,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ScreenshotsReport {
    pub tasks: usize,
    pub steps: usize,
    pub encoding: ScreenshotEncoding,
    /// Means per step.
    pub before: ImageCost,
    pub after: ImageCost,
    /// The smallest and largest encoded image, in bytes.
    pub after_bytes_min: f64,
    pub after_bytes_max: f64,
    /// How often each JPEG quality was chosen: (quality, steps).
    pub qualities: Vec<(u8, usize)>,
    /// Mean milliseconds to decode, scale and encode one screenshot.
    pub encode_ms: f64,
}

/// The screenshots of one task's steps, as PNG.
async fn task_shots(task: &SimTask, size: ScreenSize) -> Result<Vec<ImageData>, TokensError> {
    let phone_err = |e: crate::device::DeviceError| TokensError::Phone(e.to_string());
    let phone = SimDevice::new(SimConfig {
        serial: "shots-1".into(),
        width: size.width,
        height: size.height,
        ..SimConfig::default()
    })
    .map_err(|e| TokensError::Phone(e.to_string()))?;
    phone.reset_to(task);
    let mut out = Vec::new();
    let reference = task.reference();
    for i in 0..=reference.len() {
        let png = phone.screenshot().await.and_then(|s| s.png());
        out.push(ImageData::from_bytes(png.map_err(phone_err)?).map_err(|e| {
            TokensError::Phone(format!("the phone's screenshot is not an image: {e}"))
        })?);
        let Some(action) = reference.get(i) else {
            break;
        };
        let xml = phone.hierarchy().await.map_err(phone_err)?;
        let opts = ReprOptions {
            screen: Some(size),
            ..ReprOptions::default()
        };
        let screen = Screen::from_xml(&xml, &opts).ok();
        let ctx = ExecContext {
            screen: screen.as_ref(),
            size,
            transform: &LinearTransform,
        };
        let _ = execute(&phone, action, &ctx).await;
    }
    Ok(out)
}

/// Runs the bench over `tasks` (id globs; all when empty) on a phone of `size`.
pub async fn bench_screenshots(
    tasks: &[String],
    size: ScreenSize,
    encoding: ScreenshotEncoding,
) -> Result<ScreenshotsReport, TokensError> {
    let tasks = crate::eval::select(tasks)?;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut qualities = std::collections::BTreeMap::<u8, usize>::new();
    let mut encode = std::time::Duration::ZERO;
    for t in &tasks {
        for shot in task_shots(t, size).await? {
            let started = Instant::now();
            let e = encoding.encode(&shot).map_err(TokensError::Phone)?;
            encode += started.elapsed();
            *qualities.entry(e.quality.unwrap_or(0)).or_default() += 1;
            before.push(ImageCost::of(&shot));
            after.push(ImageCost::of(&e.image));
        }
    }
    let steps = before.len();
    let sizes = after.iter().map(|c| c.bytes);
    Ok(ScreenshotsReport {
        tasks: tasks.len(),
        steps,
        encoding,
        before: mean(&before),
        after: mean(&after),
        after_bytes_min: sizes.clone().fold(f64::INFINITY, f64::min),
        after_bytes_max: sizes.fold(0.0, f64::max),
        qualities: qualities.into_iter().collect(),
        encode_ms: encode.as_secs_f64() * 1000.0 / steps.max(1) as f64,
    })
}

fn mean(v: &[ImageCost]) -> ImageCost {
    let n = v.len().max(1) as f64;
    let first = v.first().copied().unwrap_or_default();
    let sum = |f: fn(&ImageCost) -> f64| v.iter().map(f).sum::<f64>() / n;
    ImageCost {
        bytes: sum(|c| c.bytes),
        width: first.width,
        height: first.height,
        openai_tokens: sum(|c| c.openai_tokens),
        anthropic_tokens: sum(|c| c.anthropic_tokens),
        gemini_tokens: sum(|c| c.gemini_tokens),
    }
}

/// The report as a table.
pub fn format_report(r: &ScreenshotsReport) -> String {
    let row = |name: &str, c: &ImageCost| {
        format!(
            "{name:<7} {:>5}×{:<5} {:>9.0} {:>7.0} {:>9.0} {:>7.0}\n",
            c.width, c.height, c.bytes, c.openai_tokens, c.anthropic_tokens, c.gemini_tokens
        )
    };
    let mut s = format!(
        "Screenshot per step, the mean over {} steps of {} tasks\n{:<7} {:>11} {:>9} {:>7} {:>9} {:>7}\n",
        r.steps, r.tasks, "", "size", "bytes", "OpenAI", "Anthropic", "Gemini"
    );
    s += &row("before", &r.before);
    s += &row("after", &r.after);
    s += &format!(
        "after: {:.0} to {:.0} bytes; qualities chosen {:?}; {:.1} ms to encode a screenshot\n",
        r.after_bytes_min, r.after_bytes_max, r.qualities, r.encode_ms
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_is_measured_before_and_after() {
        let size = ScreenSize {
            width: 1080,
            height: 2400,
        };
        let r = bench_screenshots(
            &["clock.disable_0815".into()],
            size,
            ScreenshotEncoding::default(),
        )
        .await
        .unwrap();
        assert!(r.steps > r.tasks, "{r:?}");
        assert_eq!((r.before.width, r.after.width), (1080, 576));
        assert!(r.after.bytes < r.before.bytes / 2.0, "{r:?}");
        assert!(r.after.openai_tokens < r.before.openai_tokens, "{r:?}");
        assert!(r.qualities.iter().all(|(q, _)| (15..=50).contains(q)));
    }
}
