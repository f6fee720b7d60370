//! Waiting for a device that dropped: publish `task.device_lost`, wait for the pool to
//! bring it back (`DevicePool::wait_back`; the pool is the only one that reconnects)
//! until `reconnect_wait_secs`, publish `task.device_back`. A runner built without a pool
//! reconnects through the pool module's `reconnect_unpooled`, on the same policy.

use std::time::{Duration, Instant};

use super::state::RunState;
use super::{Fatal, Runner};
use crate::device::pool::reconnect_unpooled;
use crate::device::{Device, DeviceError};
use crate::domain::TaskEvent;
use crate::run::stop::unless_cancelled;

impl Runner {
    /// Waits for the device unless the task is cancelled meanwhile (the boundary then
    /// ends it); the loop resumes from the last committed step.
    pub(super) async fn reconnect(
        &self,
        st: &mut RunState<'_>,
        device: &dyn Device,
        err: &DeviceError,
    ) -> Result<(), Fatal> {
        let (stream, stop) = st.stream_and_stop();
        let waiting = self.await_reconnect(device, stream, err);
        if let Some(back) = unless_cancelled(stop, waiting).await {
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
        let back = match &self.pool {
            Some(pool) => pool.wait_back(device, err, deadline).await,
            None => reconnect_unpooled(device, deadline).await,
        };
        if !back {
            return Err(Fatal::Device(format!(
                "device {} disconnected and did not come back within {} s. {}",
                device.serial(),
                self.cfg.reconnect_wait_secs,
                err.hint()
            )));
        }
        self.bus
            .publish(
                stream,
                TaskEvent::DeviceBack {
                    task_id: stream.parse().ok(),
                    device: device.serial().to_string(),
                },
            )
            .await?;
        Ok(())
    }
}
