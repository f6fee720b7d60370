//! A run as an H.264 MP4 (`GET /v1/tasks/{id}/replay.mp4`): the frames the GIF shows (the
//! same step screenshots, sampled the same way, with the same tap and swipe marks drawn by
//! `replay_gif::frame`), each held for the real time until the next step (capped), at an
//! even size, encoded by `core::video`. A finished task's video is kept in a small cache
//! (per task and width), so the `<video>` element's range requests do not re-encode it.
//!
//! A `record_video` task's own screen recording is served instead (`recording`) when the
//! caller asks for it or leaves the choice to the server: its segments joined into one
//! file, cached under the same key with width 0. It has no tap marks: they would have to
//! be drawn on decoded frames and the video encoded again.
//!
//! Range requests: a browser seeks a video only when its server answers `Range`
//! (without it Chromium's `seekable` is empty and a seek lands back at 0). The video is
//! bytes in memory, so tower-http's `ServeFile`, which ranges files on disk, does not fit;
//! one `bytes=a-b` range is parsed here (a multi-range request gets the whole video).

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::domain::{Step, Task, TaskId};
use crate::error::ApiError;
use crate::replay_gif::{self, StepFrame};
use crate::state::AppState;
use crate::video::{VideoFrame, encode_mp4};

/// The longest a frame is held: a step that waited minutes shows for this long.
pub const MAX_FRAME_MS: u32 = 5_000;
/// The shortest a frame shows, so each step is visible.
pub const MIN_FRAME_MS: u32 = 200;
/// How long the last frame shows (no next step says when it ended).
pub const LAST_FRAME_MS: u32 = 2_000;
/// The most bytes a video may grow to (frames past it are dropped).
pub const MAX_BYTES: usize = 32 * 1024 * 1024;

/// How long each picked step's frame shows: until the next picked step started, within
/// `MIN_FRAME_MS..=MAX_FRAME_MS`; the last one `LAST_FRAME_MS`.
pub fn durations(steps: &[&Step]) -> Vec<u32> {
    let mut out: Vec<u32> = steps
        .windows(2)
        .map(|w| {
            let ms = (w[1].started_at - w[0].started_at).num_milliseconds();
            ms.clamp(i64::from(MIN_FRAME_MS), i64::from(MAX_FRAME_MS)) as u32
        })
        .collect();
    if !steps.is_empty() {
        out.push(LAST_FRAME_MS);
    }
    out
}

/// Draws and encodes the frames at `width` (rounded down to even; the height follows the
/// first screenshot's aspect, rounded down to even). A screenshot of another size (the
/// phone turned) is scaled to the first one's.
pub fn render(frames: Vec<(StepFrame, u32)>, width: u32) -> Result<Vec<u8>, String> {
    let mut size = None;
    let mut video = Vec::with_capacity(frames.len());
    for (f, ms) in frames {
        let img = replay_gif::frame(&f, width)?;
        let (w0, h0) = img.dimensions();
        let (w, h) = *size.get_or_insert(((w0 & !1).max(2), (h0 & !1).max(2)));
        let rgba = if (w0, h0) == (w, h) {
            img.into_raw()
        } else if (w0 - w.min(w0)) <= 1 && (h0 - h.min(h0)) <= 1 && w0 >= w && h0 >= h {
            image::imageops::crop_imm(&img, 0, 0, w, h)
                .to_image()
                .into_raw()
        } else {
            crate::service::images::resize(img.as_raw(), w0, h0, w, h)?
        };
        video.push(VideoFrame { rgba, ms });
    }
    let (w, h) = size.ok_or("no frames to encode")?;
    encode_mp4(video, w, h, MAX_BYTES)
}

/// The cache key's width for a task's screen recording (served at its own size).
const RECORDING: u32 = 0;

/// A task's screen recording (`record_video`) as one MP4: its segments read from the
/// artifact store and joined by `video::join` (remuxed, not re-encoded), each placed at
/// its start time after the first one's. Segments whose stream parameters differ cannot
/// share a track: that is a 409 naming the segment, and the step video still answers.
pub async fn recording(s: &AppState, task: &Task) -> Result<Bytes, ApiError> {
    if let Some(v) = s.replays.get(task.id, RECORDING) {
        return Ok(v);
    }
    let Some(first) = task.recording.first() else {
        return Err(no_recording(task));
    };
    let mut parts = Vec::with_capacity(task.recording.len());
    for seg in &task.recording {
        let got = s
            .artifacts
            .get(&seg.sha256)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let Some((_, mp4)) = got else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "recording_gone",
                format!(
                    "a segment of task {}'s recording is no longer stored",
                    task.id
                ),
                "Artifacts expire with `[storage] retention`; ask for `source=steps` (screenshots expire the same way).",
            ));
        };
        let offset = (seg.started_at - first.started_at)
            .num_milliseconds()
            .max(0) as u64;
        parts.push((mp4, offset));
    }
    let video = if parts.len() == 1 {
        parts.pop().map(|(b, _)| b).unwrap_or_default()
    } else {
        tokio::task::spawn_blocking(move || {
            let refs: Vec<(&[u8], u64)> = parts.iter().map(|(b, o)| (b.as_slice(), *o)).collect();
            crate::video::join(&refs)
        })
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(|e| {
            ApiError::new(
                StatusCode::CONFLICT,
                "recording_segments_differ",
                format!(
                    "task {}'s recording cannot be joined into one video: {e}",
                    task.id
                ),
                "Ask for `source=steps`, the video built from the step screenshots.",
            )
        })?
    };
    let video = Bytes::from(video);
    if task.status.is_terminal() {
        s.replays.put(task.id, RECORDING, video.clone());
    }
    Ok(video)
}

fn no_recording(task: &Task) -> ApiError {
    let (message, hint) = if !task.spec.record_video {
        (
            format!("task {} was not recorded", task.id),
            "Submit the task with `\"record_video\": true`, or ask for `source=steps`.",
        )
    } else if !task.status.is_terminal() {
        (
            format!("task {}'s recording is stored when the task ends", task.id),
            "Wait for `task.recording` on the task's events, or ask for `source=steps`.",
        )
    } else {
        (
            format!(
                "task {}'s recording failed; its `task.recording` event says why",
                task.id
            ),
            "Ask for `source=steps`, the video built from the step screenshots.",
        )
    };
    ApiError::new(StatusCode::CONFLICT, "no_recording", message, hint)
}

/// Finished tasks' videos, most recent first, at most `CACHE_ENTRIES`.
#[derive(Default)]
pub struct Cache {
    entries: Mutex<VecDeque<((TaskId, u32), Bytes)>>,
}

const CACHE_ENTRIES: usize = 8;

impl Cache {
    pub fn get(&self, task: TaskId, width: u32) -> Option<Bytes> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let hit = entries.iter().find(|(k, _)| *k == (task, width));
        hit.map(|(_, v)| v.clone())
    }

    pub fn put(&self, task: TaskId, width: u32, video: Bytes) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|(k, _)| *k != (task, width));
        entries.push_front(((task, width), video));
        entries.truncate(CACHE_ENTRIES);
    }
}

/// The video as a response: the whole of it (200), or the one range asked for (206), or
/// 416 for a range past its end. `Accept-Ranges: bytes` either way.
pub fn respond(video: Bytes, headers: &HeaderMap, filename: &str) -> Response {
    let len = video.len() as u64;
    let mut h = HeaderMap::new();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("video/mp4"));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(v) = HeaderValue::from_str(&format!("inline; filename=\"{filename}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    let asked = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    match asked.map(|r| range(r, len)) {
        None | Some(Range::Whole) => (StatusCode::OK, h, video).into_response(),
        Some(Range::Part(a, b)) => {
            let v = format!("bytes {a}-{b}/{len}");
            h.insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&v).expect("ascii"),
            );
            let part = video.slice(a as usize..=b as usize);
            (StatusCode::PARTIAL_CONTENT, h, part).into_response()
        }
        Some(Range::Unsatisfiable) => {
            let v = format!("bytes */{len}");
            h.insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&v).expect("ascii"),
            );
            (StatusCode::RANGE_NOT_SATISFIABLE, h).into_response()
        }
    }
}

#[derive(Debug, PartialEq)]
enum Range {
    /// No usable single range: send everything.
    Whole,
    /// Inclusive byte offsets.
    Part(u64, u64),
    Unsatisfiable,
}

/// One `bytes=a-b`, `bytes=a-` or `bytes=-n` range of a `len`-byte body.
fn range(header: &str, len: u64) -> Range {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return Range::Whole;
    };
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Range::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let parsed = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) if a <= b => Some((a, b.min(len.saturating_sub(1)))),
        (Ok(a), Err(_)) if b.is_empty() => Some((a, len.saturating_sub(1))),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => {
            Some((len.saturating_sub(n), len.saturating_sub(1)))
        }
        _ => return Range::Whole,
    };
    match parsed {
        Some((a, b)) if a < len && a <= b => Range::Part(a, b),
        _ => Range::Unsatisfiable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_is_parsed_and_the_rest_is_the_whole_body() {
        assert_eq!(range("bytes=0-99", 1000), Range::Part(0, 99));
        assert_eq!(range("bytes=900-", 1000), Range::Part(900, 999));
        assert_eq!(range("bytes=-100", 1000), Range::Part(900, 999));
        assert_eq!(range("bytes=990-5000", 1000), Range::Part(990, 999));
        assert_eq!(range("bytes=1000-", 1000), Range::Unsatisfiable);
        assert_eq!(range("bytes=0-1,5-9", 1000), Range::Whole);
        assert_eq!(range("items=0-1", 1000), Range::Whole);
        assert_eq!(range("bytes=9-1", 1000), Range::Whole);
    }
}
