//! `RetryPolicy`: the one description of "try again later" used everywhere a call is
//! retried (model HTTP calls, device reconnects, webhook deliveries, the runner). It is
//! a plain value (first delay, cap, number of retries, growth factor, jitter); `backoff()`
//! turns it into backon's `ExponentialBuilder`, so every retry loop draws its delays from
//! the same schedule code. Lives in `domain` so that every layer may import it.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// An exponential backoff schedule: `base`, `base·factor`, `base·factor²`… each capped
/// at `max`, for at most `retries` retries after the first attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// The first retry's delay.
    pub base: Duration,
    /// No single delay is longer than this.
    pub max: Duration,
    /// Retries after the first attempt (so `retries + 1` attempts in all).
    pub retries: u32,
    /// Growth per retry.
    pub factor: f32,
    /// Spread each delay randomly (by up to one more delay), so that many clients
    /// failing together do not retry together.
    pub jitter: bool,
}

impl RetryPolicy {
    /// Doubling delays from `base`, capped at `max`, no jitter.
    pub const fn new(base: Duration, max: Duration, retries: u32) -> Self {
        Self {
            base,
            max,
            retries,
            factor: 2.0,
            jitter: false,
        }
    }

    pub const fn with_jitter(mut self) -> Self {
        self.jitter = true;
        self
    }

    pub const fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    pub const fn with_factor(mut self, factor: f32) -> Self {
        self.factor = factor;
        self
    }

    /// Attempts in all, the first included.
    pub const fn max_attempts(&self) -> u32 {
        self.retries.saturating_add(1)
    }

    /// The schedule as backon takes it (`.retry(policy.backoff())`).
    pub fn backoff(&self) -> ExponentialBuilder {
        let b = ExponentialBuilder::new()
            .with_min_delay(self.base)
            .with_max_delay(self.max)
            .with_factor(self.factor)
            .with_max_times(self.retries as usize);
        if self.jitter { b.with_jitter() } else { b }
    }

    /// The delays one by one, for loops written by hand (`None` when retries are spent).
    pub fn delays(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        self.backoff().build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_from_base_up_to_max_then_stop() {
        let p = RetryPolicy::new(Duration::from_millis(100), Duration::from_millis(300), 4);
        // backon multiplies in f32 seconds: round to whole milliseconds.
        let d: Vec<u128> = p.delays().map(|d| (d.as_micros() + 500) / 1000).collect();
        assert_eq!(d, [100, 200, 300, 300]);
        assert_eq!(p.max_attempts(), 5);
        assert_eq!(p.with_retries(0).delays().count(), 0);
    }

    #[test]
    fn jitter_stays_within_one_extra_delay() {
        let p =
            RetryPolicy::new(Duration::from_millis(100), Duration::from_secs(10), 3).with_jitter();
        for (i, d) in p.delays().enumerate() {
            let plain = 100_000u128 << i;
            let us = d.as_micros();
            assert!(us + 1_000 >= plain && us <= 2 * plain + 1_000, "{d:?}");
        }
    }
}
