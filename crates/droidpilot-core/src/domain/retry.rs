//! `RetryPolicy`: how often to try again and how long to wait in between, as one type
//! for every retry in the crate (runner, pool, LLM clients, webhooks). It is a backon
//! `BackoffBuilder`, so it feeds `Retryable::retry` directly, or hand-written loops that
//! need to do something between attempts (re-observe the screen, honour `Retry-After`)
//! through `delays()`. Lives in `domain` so that every layer may import it.

use std::time::Duration;

use backon::{Backoff, BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// The delays before each retry and how many retries there are.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryPolicy {
    /// These delays in order; the last one repeats until `max_retries` is spent.
    Listed {
        delays: Vec<Duration>,
        max_retries: usize,
    },
    /// `first`, then `factor` times the previous delay, capped at `max`; `max_retries`
    /// None retries until the caller's own deadline.
    Exponential {
        first: Duration,
        factor: f32,
        max: Duration,
        max_retries: Option<usize>,
        jitter: bool,
    },
}

impl RetryPolicy {
    /// A list in milliseconds (a `[runner] retry_backoff_ms` setting); an empty list waits 500 ms.
    pub fn listed_ms(delays_ms: &[u64], max_retries: u32) -> Self {
        Self::Listed {
            delays: delays_ms
                .iter()
                .map(|&d| Duration::from_millis(d))
                .collect(),
            max_retries: max_retries as usize,
        }
    }

    /// Doubling from `first` up to `max`, without jitter, with no limit on the count.
    pub fn doubling(first: Duration, max: Duration) -> Self {
        Self::Exponential {
            first,
            factor: 2.0,
            max,
            max_retries: None,
            jitter: false,
        }
    }

    /// Doubling from `base` up to `max`, no jitter, `retries` retries after the first try.
    pub fn new(base: Duration, max: Duration, retries: u32) -> Self {
        Self::doubling(base, max).with_retries(retries)
    }

    /// Spread each exponential delay randomly (by up to one more delay), so that many
    /// clients failing together do not retry together. A listed policy is kept as listed.
    pub fn with_jitter(mut self) -> Self {
        if let Self::Exponential { jitter, .. } = &mut self {
            *jitter = true;
        }
        self
    }

    pub fn with_retries(mut self, retries: u32) -> Self {
        match &mut self {
            Self::Listed { max_retries, .. } => *max_retries = retries as usize,
            Self::Exponential { max_retries, .. } => *max_retries = Some(retries as usize),
        }
        self
    }

    /// Growth per retry (exponential policies).
    pub fn with_factor(mut self, f: f32) -> Self {
        if let Self::Exponential { factor, .. } = &mut self {
            *factor = f;
        }
        self
    }

    /// Retries after the first attempt (`u32::MAX` for an unbounded policy).
    pub fn retries(&self) -> u32 {
        match self {
            Self::Listed { max_retries, .. } => *max_retries as u32,
            Self::Exponential { max_retries, .. } => {
                max_retries.map_or(u32::MAX, |n| n.min(u32::MAX as usize) as u32)
            }
        }
    }

    /// Attempts in all, the first included.
    pub fn max_attempts(&self) -> u32 {
        self.retries().saturating_add(1)
    }

    /// The delays one by one, for loops written by hand (`None` when retries are spent).
    pub fn delays(&self) -> RetryBackoff {
        self.clone().build()
    }
}

/// The delays a `RetryPolicy` yields, one per retry; `None` when retries are spent.
#[derive(Debug)]
pub enum RetryBackoff {
    Listed {
        delays: Vec<Duration>,
        left: usize,
        next: usize,
    },
    Exponential(ExponentialBackoff),
}

impl Iterator for RetryBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        match self {
            Self::Listed { delays, left, next } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let d = delays
                    .get(*next)
                    .or(delays.last())
                    .copied()
                    .unwrap_or(Duration::from_millis(500));
                *next += 1;
                Some(d)
            }
            Self::Exponential(e) => e.next(),
        }
    }
}

impl BackoffBuilder for RetryPolicy {
    type Backoff = RetryBackoff;

    fn build(self) -> RetryBackoff {
        match self {
            Self::Listed {
                delays,
                max_retries,
            } => RetryBackoff::Listed {
                delays,
                left: max_retries,
                next: 0,
            },
            Self::Exponential {
                first,
                factor,
                max,
                max_retries,
                jitter,
            } => {
                let mut b = ExponentialBuilder::new()
                    .with_min_delay(first)
                    .with_factor(factor)
                    .with_max_delay(max);
                b = match max_retries {
                    Some(n) => b.with_max_times(n),
                    None => b.without_max_times(),
                };
                if jitter {
                    b = b.with_jitter();
                }
                RetryBackoff::Exponential(b.build())
            }
        }
    }
}

// `Backoff` is implemented for every `Iterator<Item = Duration> + Send + Sync + Unpin`.
const _: fn() = || {
    fn is_backoff<B: Backoff>() {}
    is_backoff::<RetryBackoff>();
};

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&d| Duration::from_millis(d)).collect()
    }

    #[test]
    fn a_listed_policy_repeats_its_last_delay_until_spent() {
        let got: Vec<_> = RetryPolicy::listed_ms(&[10, 20], 4).build().collect();
        assert_eq!(got, ms(&[10, 20, 20, 20]));
        let none: Vec<_> = RetryPolicy::listed_ms(&[], 1).build().collect();
        assert_eq!(none, ms(&[500]));
        assert_eq!(RetryPolicy::listed_ms(&[10], 0).build().next(), None);
    }

    #[test]
    fn doubling_is_capped_and_unbounded() {
        let got: Vec<_> = RetryPolicy::doubling(Duration::from_millis(200), Duration::from_secs(3))
            .build()
            .take(6)
            .map(|d| d.as_millis() as u64)
            .collect();
        // backon multiplies in f32: 400.000006 ms is 400 ms.
        assert_eq!(got, [200, 400, 800, 1600, 3000, 3000]);
    }

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
