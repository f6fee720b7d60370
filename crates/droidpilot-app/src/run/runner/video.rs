//! A `record_video` task's screen recording: started on the task's device before the
//! loop, stopped when the loop ends however it ends (finish, cancel, timeout, a panic, a
//! suspension), each segment checked (`video::probe`) and stored as an artifact, the list
//! written to the task (`Task::recording`, appended to on a resumed run) and announced by
//! `task.recording`. A recording that cannot start, or loses a segment, is a warning in
//! that event and the log, never the task's failure.

use std::sync::Arc;

use crate::device::{Device, RecordOptions, RecordedVideo, ScreenRecording};
use crate::domain::{RecordingSegment, Task, TaskEvent};
use crate::store::StoreError;

use super::Runner;

/// The recording a task started, or why it could not start.
pub(super) struct Recording {
    live: Option<Box<dyn ScreenRecording>>,
    problems: Vec<String>,
}

impl Runner {
    /// Starts recording when the task asked for it (`None` when it did not).
    pub(super) async fn start_recording(
        &self,
        task: &Task,
        device: &Arc<dyn Device>,
    ) -> Option<Recording> {
        if !task.spec.record_video {
            return None;
        }
        let opts = RecordOptions {
            segment_secs: self.record_segment_secs,
            tag: task.id.to_string(),
        };
        Some(match device.record_screen(&opts).await {
            Ok(live) => Recording {
                live: Some(live),
                problems: Vec::new(),
            },
            Err(e) => Recording {
                live: None,
                problems: vec![format!("the recording did not start: {e}")],
            },
        })
    }

    /// Stops the recording, stores its segments and says so on the task's stream. Only
    /// a store failure is an error (the task's own writes would fail the same way).
    pub(super) async fn finish_recording(
        &self,
        task: &Task,
        rec: Recording,
    ) -> Result<(), StoreError> {
        let mut got = match rec.live {
            Some(live) => live.stop().await,
            None => RecordedVideo::default(),
        };
        got.problems.splice(0..0, rec.problems);
        let mut segments = task.recording.clone();
        let mut added = Vec::new();
        for (n, seg) in got.segments.into_iter().enumerate() {
            match self.store_segment(seg).await {
                Ok(s) => added.push(s),
                Err(e) => got.problems.push(format!("segment {n}: {e}")),
            }
        }
        segments.extend(added.iter().cloned());
        if !added.is_empty() {
            self.bus
                .store()
                .set_task_recording(task.id, &segments)
                .await?;
        }
        for p in &got.problems {
            tracing::warn!(task = %task.id, problem = %p, "screen recording");
        }
        let event = TaskEvent::Recording {
            task_id: task.id,
            segments: added,
            problems: got.problems,
        };
        self.bus.publish(&task.id.to_string(), event).await?;
        Ok(())
    }

    /// Checks one segment is a readable H.264 MP4 and stores it as an artifact.
    async fn store_segment(
        &self,
        seg: crate::device::VideoSegment,
    ) -> Result<RecordingSegment, String> {
        let info = droidpilot_core::video::probe(&seg.mp4)?;
        let bytes = seg.mp4.len() as u64;
        let sha256 = self
            .artifacts
            .put("screenrecord", "video/mp4", "mp4", seg.mp4)
            .await
            .map_err(|e| e.to_string())?;
        Ok(RecordingSegment {
            sha256,
            bytes,
            started_at: seg.started_at,
            duration_ms: info.duration_ms,
            width: info.width,
            height: info.height,
        })
    }
}
