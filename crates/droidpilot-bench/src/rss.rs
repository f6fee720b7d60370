//! Resident memory while a bench level runs: `VmRSS` from `/proc/self/status`, sampled
//! every 20 ms, reported as the peak's growth over the level's start. The allocator keeps
//! what earlier levels freed, so a level's growth is what it needed beyond that.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The process's resident memory in bytes; 0 where there is no procfs.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Samples RSS until `stop`. Awaited by the bench itself, so not on a tracker.
pub struct RssSampler {
    base: u64,
    stop: watch::Sender<bool>,
    peak: JoinHandle<u64>,
}

impl RssSampler {
    pub fn start() -> Self {
        let base = rss_bytes();
        let (stop, mut stopped) = watch::channel(false);
        let peak = tokio::spawn(async move {
            let mut peak = base;
            loop {
                peak = peak.max(rss_bytes());
                tokio::select! {
                    _ = stopped.changed() => return peak.max(rss_bytes()),
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        });
        Self { base, stop, peak }
    }

    /// The peak's growth over the start, in bytes.
    pub async fn stop(self) -> u64 {
        let _ = self.stop.send(true);
        self.peak
            .await
            .unwrap_or(self.base)
            .saturating_sub(self.base)
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn growth_is_seen_while_sampling() {
        let sampler = super::RssSampler::start();
        // 64 MiB, touched so that it is resident.
        let block = vec![1u8; 64 << 20];
        tokio::time::sleep(std::time::Duration::from_millis(60)).await;
        let grown = sampler.stop().await;
        assert!(
            std::hint::black_box(&block)
                .iter()
                .step_by(4096)
                .all(|b| *b == 1)
        );
        if super::rss_bytes() > 0 {
            assert!(grown >= 48 << 20, "grew {grown} bytes");
        }
    }
}
