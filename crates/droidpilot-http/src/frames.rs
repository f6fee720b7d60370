//! The live-view frame cache: scaled JPEG screenshots for dashboards. However many
//! viewers poll a phone, it is captured at most once per `[dashboard] frame_interval_ms`:
//! the first request in an interval captures (others wait on the device's lock and get
//! the same frame, also when the capture took longer than the interval), and each
//! scale/quality is encoded once per capture. PNG requests and
//! everything else still go to the phone directly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::device::{Device, DeviceError, Screenshot};

/// Encodings are kept per (scale in thousandths, quality).
type Key = (u32, u8);

#[derive(Default)]
struct Latest {
    /// When the frame was captured, and its pixels (RGBA).
    shot: Option<(Instant, Arc<Screenshot>)>,
    encoded: HashMap<Key, Bytes>,
}

/// One lock per device; the map itself is only touched to find it.
pub struct FrameCache {
    interval: Duration,
    devices: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Latest>>>>,
}

/// Why a frame could not be served.
#[derive(Debug)]
pub enum FrameError {
    Device(DeviceError),
    Encode(String),
}

impl FrameCache {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            devices: Mutex::default(),
        }
    }

    fn slot(&self, id: &str) -> Arc<tokio::sync::Mutex<Latest>> {
        let mut m = self.devices.lock().expect("frame cache lock");
        m.entry(id.to_string()).or_default().clone()
    }

    /// Forgets a device's frames (it left the pool).
    pub fn forget(&self, id: &str) {
        self.devices.lock().expect("frame cache lock").remove(id);
    }

    /// The device's screen as a JPEG at `scale` and `quality`, captured at most once per
    /// interval.
    pub async fn jpeg(
        &self,
        id: &str,
        dev: &dyn Device,
        scale: f32,
        quality: u8,
    ) -> Result<Bytes, FrameError> {
        let arrived = Instant::now();
        let slot = self.slot(id);
        let mut latest = slot.lock().await;
        // Fresh: captured within the interval, or while this request waited for the lock
        // (a capture slower than the interval must not make every waiter capture again).
        let fresh = latest
            .shot
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < self.interval || *at >= arrived);
        if !fresh {
            let shot = dev.screenshot().await.map_err(FrameError::Device)?;
            let rgba = shot.rgba().map_err(FrameError::Device)?;
            let shot = Screenshot {
                data: crate::device::ScreenshotData::Rgba(rgba),
                ..shot
            };
            latest.shot = Some((Instant::now(), Arc::new(shot)));
            latest.encoded.clear();
        }
        let key = ((scale * 1000.0).round() as u32, quality);
        if let Some(b) = latest.encoded.get(&key) {
            return Ok(b.clone());
        }
        let shot = latest.shot.as_ref().expect("captured above").1.clone();
        let bytes = tokio::task::spawn_blocking(move || {
            let rgba = shot.rgba().map_err(|e| e.to_string())?;
            crate::service::images::encode(&rgba, shot.width, shot.height, scale, true, quality)
        })
        .await
        .map_err(|e| FrameError::Encode(e.to_string()))?
        .map_err(FrameError::Encode)?;
        let bytes = Bytes::from(bytes.0);
        latest.encoded.insert(key, bytes.clone());
        Ok(bytes)
    }
}
