//! The storage watchdog: ends the process when its storage has reported itself unhealthy
//! ([`Storage::health`]) for longer than a bound, so that whatever supervises it (systemd,
//! a Deployment, a shell loop) starts it again instead of it hanging.
//!
//! It was added for a defect of sled 0.34 seen under heavy load: the storage writer and
//! every request reading through sled wait inside sled for a log buffer to become durable
//! that nothing will write (docs/performance-history.md, "Creation rate: session 13"; its cause,
//! 16 MiB segments, is avoided since session 14, and the watchdog stays as the guard
//! against any other stop). Such a process answers nothing, not even `/livez`, so only a
//! supervisor's timeout would end it. A restart recovers from the log: every acknowledged
//! write was durable before it was acknowledged. The watchdog runs on a plain thread of its
//! own, because a stuck store can hold every worker of the async runtime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kplane_storage::Storage;

/// The exit status after a stall (EX_SOFTWARE).
pub const STALL_EXIT_STATUS: i32 = 70;

/// Whether the storage has been unhealthy for longer than `after`.
#[derive(Debug)]
struct Watch {
    after: Duration,
    unhealthy_since: Option<Instant>,
}

impl Watch {
    /// Takes one health reading made at `now`; the reason to exit once the storage has
    /// been unhealthy, without a healthy reading, for `after`.
    fn step(&mut self, health: Result<(), String>, now: Instant) -> Option<String> {
        match health {
            Ok(()) => {
                self.unhealthy_since = None;
                None
            }
            Err(reason) => {
                let since = *self.unhealthy_since.get_or_insert(now);
                (now.duration_since(since) >= self.after).then_some(reason)
            }
        }
    }
}

/// Starts the watchdog of `storage`: the process exits with [`STALL_EXIT_STATUS`] once the
/// storage has been unhealthy for `after`. The watchdog holds no reference to the storage
/// between readings and ends once the storage is gone (the server stopped).
pub fn spawn(storage: &Arc<dyn Storage>, after: Duration) -> std::io::Result<()> {
    let storage = Arc::downgrade(storage);
    let every = (after / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    std::thread::Builder::new()
        .name("kplane-watchdog".into())
        .spawn(move || {
            let mut watch = Watch {
                after,
                unhealthy_since: None,
            };
            loop {
                std::thread::sleep(every);
                let Some(health) = storage.upgrade().map(|s| s.health()) else {
                    return;
                };
                if let Some(reason) = watch.step(health, Instant::now()) {
                    tracing::error!(
                        %reason,
                        after_s = after.as_secs(),
                        "storage unhealthy for too long; exiting so that the server is restarted"
                    );
                    std::process::exit(STALL_EXIT_STATUS);
                }
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_only_after_being_unhealthy_for_the_whole_bound() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut w = Watch {
            after: s(120),
            unhealthy_since: None,
        };
        let bad = || Err("stuck".to_string());
        assert_eq!(w.step(Ok(()), t0), None);
        assert_eq!(w.step(bad(), t0 + s(10)), None);
        assert_eq!(w.step(bad(), t0 + s(129)), None);
        // A healthy reading starts the count again.
        assert_eq!(w.step(Ok(()), t0 + s(130)), None);
        assert_eq!(w.step(bad(), t0 + s(140)), None);
        assert_eq!(w.step(bad(), t0 + s(259)), None);
        assert_eq!(w.step(bad(), t0 + s(260)), Some("stuck".into()));
    }
}
