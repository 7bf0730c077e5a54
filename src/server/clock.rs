//! What time it is, as every part of the server that depends on it asks: sales, sessions, settlement,
//! purges, signing keys, and (next) limits, breaks and reality checks. In service it is the system's
//! clock; a test moves a [`ManualClock`] instead of sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Unix seconds, from the system, a test's hand, or (end-to-end tests only) the system's run faster.
#[derive(Clone, Default)]
pub struct Clock(Source);

#[derive(Clone, Default)]
enum Source {
    #[default]
    System,
    Manual(Arc<AtomicI64>),
    /// From `since` on, `factor` seconds pass for each real one.
    Faster {
        since: i64,
        factor: i64,
    },
}

fn system_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock(Source::System)
    }

    /// For end-to-end tests only: the system's time now, then `factor` times faster (a reality check
    /// due in 15 minutes comes in 15 seconds at 60).
    pub fn faster_for_tests(factor: i64) -> Clock {
        Clock(Source::Faster { since: system_now(), factor })
    }

    pub fn now(&self) -> i64 {
        match &self.0 {
            Source::System => system_now(),
            Source::Manual(set) => set.load(Ordering::Relaxed),
            Source::Faster { since, factor } => since + (system_now() - since) * factor,
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Source::System => f.write_str("Clock::system"),
            Source::Manual(set) => write!(f, "Clock::manual({})", set.load(Ordering::Relaxed)),
            Source::Faster { factor, .. } => write!(f, "Clock::faster_for_tests({factor})"),
        }
    }
}

/// A clock that stands still until a test moves it, and the [`Clock`] the server reads it through.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn at(unix_seconds: i64) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(unix_seconds)))
    }

    pub fn clock(&self) -> Clock {
        Clock(Source::Manual(self.0.clone()))
    }

    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_the_system_clock_is_the_time() {
        let hand = ManualClock::at(1_800_000_000);
        let clock = hand.clock();
        assert_eq!(clock.now(), 1_800_000_000);
        hand.advance(48 * 3600 - 60);
        assert_eq!(clock.now(), 1_800_000_000 + 48 * 3600 - 60, "read through every copy");
        let system = Clock::system().now();
        assert!(system > 1_764_000_000, "{system}");
        let faster = Clock::faster_for_tests(1_000);
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        assert!(faster.now() >= system + 1_000, "a second is a thousand: {}", faster.now() - system);
    }
}
