//! The virtual phone's own screen recording (`Device::record_screen` on `SimDevice`).
//!
//! While a recording runs, every command the phone serves first hands the recorder the
//! screen as it stands (the widget tree, built under the phone's lock, so no command can
//! change it in between); the recorder renders it off the runtime, compares the pixels
//! with the frame on screen and, when they differ, ends that frame at the real time the
//! change was seen and starts the new one. A still screen is one long frame, as in
//! Android's `screenrecord`. A state is seen when the phone is next asked anything (the
//! runner reads the screen after every action), so a frame starts within one command of
//! its change. Frames are encoded as they come by `droidpilot_core::video`, at the size
//! the recording started with (a turned screen is scaled to it), and the MP4 is one
//! segment: the phone has no 180 s limit.

use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use droidpilot_core::device::{RecordedVideo, ScreenRecording, VideoSegment};
use droidpilot_core::video::Mp4Recorder;
use tokio::sync::mpsc;

use crate::render;
use crate::widget::Screen;

/// A screen as a command found it.
pub(crate) struct Seen {
    pub at: Instant,
    pub screen: Screen,
    pub black: bool,
    pub size: (u32, u32),
}

pub(crate) enum Msg {
    Frame(Box<Seen>),
    Stop(Instant),
}

/// A recording of the virtual phone; the phone holds the sending side.
pub struct SimRecording {
    tx: mpsc::UnboundedSender<Msg>,
    job: tokio::task::JoinHandle<RecordedVideo>,
}

impl SimRecording {
    /// Starts the recorder with the screen as it is now; `tx` goes to the phone.
    pub(crate) fn start(first: Seen) -> (Self, mpsc::UnboundedSender<Msg>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let started_at = chrono::Utc::now();
        let job = tokio::spawn(encode(rx, first, started_at));
        (
            Self {
                tx: tx.clone(),
                job,
            },
            tx,
        )
    }
}

impl Drop for SimRecording {
    fn drop(&mut self) {
        self.job.abort();
    }
}

#[async_trait]
impl ScreenRecording for SimRecording {
    async fn stop(mut self: Box<Self>) -> RecordedVideo {
        let _ = self.tx.send(Msg::Stop(Instant::now()));
        (&mut self.job).await.unwrap_or_else(|e| RecordedVideo {
            segments: Vec::new(),
            problems: vec![format!("the virtual phone's recorder stopped: {e}")],
        })
    }
}

/// The recorder's state between frames (moved into the blocking job and back).
struct Encoder {
    rec: Mp4Recorder,
    size: (u32, u32),
    shown: Option<(Vec<u8>, Instant)>,
}

impl Encoder {
    /// Adds the frame on screen, shown until `until`, and keeps `next` as on screen.
    fn show(&mut self, next: Vec<u8>, at: Instant) -> Result<(), String> {
        if self.shown.as_ref().is_some_and(|(f, _)| *f == next) {
            return Ok(());
        }
        self.flush(at)?;
        self.shown = Some((next, at));
        Ok(())
    }

    fn flush(&mut self, until: Instant) -> Result<(), String> {
        if let Some((f, since)) = self.shown.take() {
            let ms = until.saturating_duration_since(since).as_millis();
            self.rec
                .push(&f, ms.clamp(1, u128::from(u32::MAX)) as u32)?;
        }
        Ok(())
    }
}

/// Renders `seen` at `size` (scaled when the screen turned).
fn pixels(seen: &Seen, size: (u32, u32)) -> Vec<u8> {
    let (w, h) = seen.size;
    let rgba = render::render(&seen.screen, w, h, seen.black);
    if (w, h) == size {
        return rgba;
    }
    match image::RgbaImage::from_raw(w, h, rgba) {
        Some(img) => {
            image::imageops::resize(&img, size.0, size.1, image::imageops::FilterType::Triangle)
                .into_raw()
        }
        None => vec![0; (size.0 * size.1 * 4) as usize],
    }
}

async fn encode(
    mut rx: mpsc::UnboundedReceiver<Msg>,
    first: Seen,
    started_at: chrono::DateTime<chrono::Utc>,
) -> RecordedVideo {
    let size = (first.size.0.max(2) & !1, first.size.1.max(2) & !1);
    let mut enc = match Mp4Recorder::new(size.0, size.1) {
        Ok(rec) => Encoder {
            rec,
            size,
            shown: None,
        },
        Err(e) => return failed(e),
    };
    let mut next = Msg::Frame(Box::new(first));
    loop {
        let step = tokio::task::spawn_blocking(move || {
            let r = match &next {
                Msg::Frame(seen) => enc.show(pixels(seen, enc.size), seen.at),
                Msg::Stop(at) => enc.flush(*at),
            };
            (enc, r, matches!(next, Msg::Stop(_)))
        })
        .await;
        let (back, r, stopped) = match step {
            Ok(v) => v,
            Err(e) => return failed(e.to_string()),
        };
        enc = back;
        if let Err(e) = r {
            return failed(e);
        }
        if stopped {
            break;
        }
        match rx.recv().await {
            Some(m) => next = m,
            None => next = Msg::Stop(Instant::now()),
        }
    }
    match enc.rec.finish() {
        Ok(mp4) => RecordedVideo {
            segments: vec![VideoSegment {
                mp4: Bytes::from(mp4),
                started_at,
            }],
            problems: Vec::new(),
        },
        Err(e) => failed(e),
    }
}

fn failed(e: String) -> RecordedVideo {
    RecordedVideo {
        segments: Vec::new(),
        problems: vec![format!("the virtual phone's recording failed: {e}")],
    }
}
