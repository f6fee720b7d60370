//! A task's screen recording on an ADB phone: Android's own `screenrecord`, run in
//! segments because it stops at `--time-limit` (180 s at most), each written to
//! `/sdcard/droidpilot-<tag>-<n>.mp4`, pulled over the sync service (`adb pull`) and
//! removed from the phone as soon as it ends.
//!
//! The recording runs on a worker thread of its own (a `screenrecord` blocks its shell
//! for the whole segment, which must not hold up the phone's commands or screenshots);
//! the loop is a tokio task owned by `AdbRecording` (aborted if the recording is dropped).
//! `stop` asks the loop not to start another segment, then sends `pkill -INT screenrecord`
//! (Android's tool finishes its file on SIGINT) until the running segment has ended and
//! been pulled. `pkill` interrupts every `screenrecord` on the phone, a person's own too.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

use super::worker::Worker;
use super::{AdbOptions, gaps};
use crate::device::{DeviceError, RecordOptions, RecordedVideo, ScreenRecording, VideoSegment};
use crate::domain::shell::quote;

/// How often `stop` repeats its `pkill` while the segment has not ended (the interrupt
/// may land before `screenrecord` started).
const KILL_EVERY: Duration = Duration::from_millis(300);

/// A recording in progress on one phone.
pub struct AdbRecording {
    stopping: watch::Sender<bool>,
    job: AbortOnDropHandle<RecordedVideo>,
    ctl: Worker,
    serial: String,
    opts: AdbOptions,
}

impl AdbRecording {
    /// Starts the segment loop on `serial`.
    pub fn start(serial: &str, opts: &AdbOptions, ro: &RecordOptions) -> Self {
        let (stopping, rx) = watch::channel(false);
        let rec = Worker::new(serial, opts.server);
        let job = tokio::spawn(segments(
            rec,
            serial.to_string(),
            opts.clone(),
            ro.clone(),
            rx,
        ));
        Self {
            stopping,
            job: AbortOnDropHandle::new(job),
            ctl: Worker::new(serial, opts.server),
            serial: serial.to_string(),
            opts: opts.clone(),
        }
    }

    async fn interrupt(&self) {
        let serial = self.serial.clone();
        let cmd = "pkill -INT screenrecord";
        let _ = self
            .ctl
            .call(cmd, self.opts.timeout, move |dev| {
                gaps::shell(dev, &serial, cmd)
            })
            .await;
    }
}

#[async_trait]
impl ScreenRecording for AdbRecording {
    async fn stop(mut self: Box<Self>) -> RecordedVideo {
        let _ = self.stopping.send(true);
        // The segment in flight has `slow_timeout` to be pulled after its interrupt.
        let bound = tokio::time::Instant::now() + self.opts.slow_timeout * 2;
        loop {
            self.interrupt().await;
            let wait = tokio::time::sleep(KILL_EVERY);
            tokio::select! {
                done = &mut self.job => {
                    return done.unwrap_or_else(|e| RecordedVideo {
                        segments: Vec::new(),
                        problems: vec![format!("the recording's task ended: {e}")],
                    });
                }
                () = wait => {}
            }
            if tokio::time::Instant::now() >= bound {
                self.job.abort();
                return RecordedVideo {
                    segments: Vec::new(),
                    problems: vec![format!(
                        "screenrecord did not end within {} s of its interrupt",
                        (self.opts.slow_timeout * 2).as_secs()
                    )],
                };
            }
        }
    }
}

/// Records segment after segment until `stopping`, or until one fails.
async fn segments(
    rec: Worker,
    serial: String,
    opts: AdbOptions,
    ro: RecordOptions,
    stopping: watch::Receiver<bool>,
) -> RecordedVideo {
    let mut out = RecordedVideo::default();
    for n in 0u32.. {
        if *stopping.borrow() {
            break;
        }
        let file = format!("/sdcard/droidpilot-{}-{n}.mp4", ro.tag);
        let started_at = chrono::Utc::now();
        let ended = record_one(&rec, &serial, &opts, &ro, &file).await;
        let pulled = pull(&rec, &serial, &opts, &file).await;
        let _ = shell(&rec, &serial, &opts, &format!("rm -f {}", quote(&file))).await;
        match pulled {
            Ok(mp4) if !mp4.is_empty() => out.segments.push(VideoSegment { mp4, started_at }),
            Ok(_) => out.problems.push(format!("segment {n}: {file} was empty")),
            Err(e) => out
                .problems
                .push(format!("segment {n}: pulling {file}: {e}")),
        }
        if let Err(e) = ended {
            out.problems.push(format!("segment {n}: {e}"));
            break;
        }
    }
    out
}

/// Runs one `screenrecord` to its limit or interrupt.
async fn record_one(
    rec: &Worker,
    serial: &str,
    opts: &AdbOptions,
    ro: &RecordOptions,
    file: &str,
) -> Result<(), String> {
    let secs = ro.segment_secs.clamp(1, 180);
    let cmd = format!("screenrecord --time-limit {secs} {}", quote(file));
    let deadline = Duration::from_secs(secs) + opts.slow_timeout;
    let serial = serial.to_string();
    let line = cmd.clone();
    let out = rec
        .call(&cmd, deadline, move |dev| gaps::shell(dev, &serial, &line))
        .await
        .map_err(|e| e.to_string())?;
    if out.exit_code != 0 {
        return Err(format!(
            "`{cmd}` exited with {}: {}",
            out.exit_code,
            out.stderr_str().trim()
        ));
    }
    Ok(())
}

async fn shell(
    rec: &Worker,
    serial: &str,
    opts: &AdbOptions,
    cmd: &str,
) -> Result<gaps::ShellOutput, DeviceError> {
    let (serial, line) = (serial.to_string(), cmd.to_string());
    rec.call(cmd, opts.timeout, move |dev| {
        gaps::shell(dev, &serial, &line)
    })
    .await
}

/// `adb pull FILE` into memory.
async fn pull(
    rec: &Worker,
    serial: &str,
    opts: &AdbOptions,
    file: &str,
) -> Result<Bytes, DeviceError> {
    let (serial, path) = (serial.to_string(), file.to_string());
    rec.call("pull", opts.slow_timeout, move |dev| {
        let mut buf = Vec::new();
        dev.pull(&path, &mut buf)
            .map_err(|e| gaps::map_err(&serial, "pull", e))?;
        Ok(Bytes::from(buf))
    })
    .await
}
