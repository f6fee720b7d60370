//! Waiting for a device that dropped: publish `task.device_lost`, try to reconnect on
//! the runner's reconnect policy until `reconnect_wait_secs`, publish `task.device_back`.
//! (The pool reconnects its idle devices on its own; a leased device is reconnected here.)

use std::time::{Duration, Instant};

use backon::BackoffBuilder;

use super::state::RunState;
use super::stop::unless_cancelled;
use super::{Fatal, Runner};
use crate::device::{Device, DeviceError};
use crate::domain::TaskEvent;

impl Runner {
    /// Waits for the device unless the task is cancelled meanwhile (the boundary then
    /// ends it); the loop resumes from the last committed step.
    pub(super) async fn reconnect(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        err: &DeviceError,
    ) -> Result<(), Fatal> {
        let waiting = self.await_reconnect(device, &st.stream, err);
        if let Some(back) = unless_cancelled(&mut st.stop, waiting).await {
            back?;
        }
        Ok(())
    }

    async fn await_reconnect(
        &self,
        device: &dyn Device,
        stream: &str,
        err: &DeviceError,
    ) -> Result<(), Fatal> {
        self.bus
            .publish(
                stream,
                TaskEvent::DeviceLost {
                    task_id: stream.parse().ok(),
                    device: device.serial().to_string(),
                    error: err.to_string(),
                },
            )
            .await?;
        let deadline = Instant::now() + Duration::from_secs(self.cfg.reconnect_wait_secs);
        let mut delays = self.cfg.reconnect_retries().build();
        loop {
            let _ = device.reconnect().await;
            if device.health().await.is_ok() {
                self.bus
                    .publish(
                        stream,
                        TaskEvent::DeviceBack {
                            task_id: stream.parse().ok(),
                            device: device.serial().to_string(),
                        },
                    )
                    .await?;
                return Ok(());
            }
            let delay = delays.next();
            if Instant::now() >= deadline || delay.is_none() {
                return Err(Fatal::Device(format!(
                    "device {} disconnected and did not come back within {} s. {}",
                    device.serial(),
                    self.cfg.reconnect_wait_secs,
                    err.hint()
                )));
            }
            tokio::time::sleep(delay.unwrap_or_default()).await;
        }
    }
}
