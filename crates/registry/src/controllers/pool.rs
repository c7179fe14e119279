//! The bounded concurrent pool that runs Workspace work items beside the controllers'
//! one-at-a-time worker: up to [`WORKSPACE_WORKERS`] Workspaces are bootstrapped or deleted
//! at once (their writes share the storage's group commits), and a long deletion never holds
//! up the other controllers' items, nor they it.
//!
//! Deletions are throttled apart from that bound ([`Registry::paced_deletion`]): at most
//! [`WORKSPACE_DELETIONS`] run at once, and each is followed by a pause proportional to
//! its time, so that mass deletion leaves the cores to other tenants' requests.
//!
//! An item never runs twice at the same time: one queued again while it runs is run once
//! more after it finishes (it may have changed meanwhile), one queued again while it waits
//! for a free slot is merged. Items wait in arrival order; the pool's tasks live in a
//! `JoinSet` owned by the worker's future, so stopping the controllers stops them too.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinSet;

use super::Work;
use crate::Registry;

/// Workspace items run at once (bootstrap or deletion).
pub const WORKSPACE_WORKERS: usize = 64;

/// Workspace deletions (a child cluster and its descendants) run at once.
pub const WORKSPACE_DELETIONS: usize = 2;
/// After a deletion its slot stays idle for the deletion's time divided by this.
const PAUSE_DIVISOR: u32 = 2;
/// Longest pause after one deletion.
const MAX_PAUSE: Duration = Duration::from_millis(50);

impl Registry {
    /// Runs the deletion `f` in one of the [`WORKSPACE_DELETIONS`] slots, then keeps the slot
    /// idle for a part of the time it took (at most [`MAX_PAUSE`]).
    pub(crate) async fn paced_deletion<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        // The semaphore is never closed; without a permit the deletion still runs.
        let _permit = self.controllers.deletions.acquire().await.ok();
        let started = Instant::now();
        let out = f.await;
        tokio::time::sleep((started.elapsed() / PAUSE_DIVISOR).min(MAX_PAUSE)).await;
        out
    }
}

/// Pool state: items waiting for a slot and items running.
#[derive(Default)]
struct Slots {
    waiting: VecDeque<Work>,
    /// Waiting or running (each item at most once).
    known: HashSet<Work>,
    running: HashSet<Work>,
    /// Running items queued again meanwhile: run once more when they finish.
    again: HashSet<Work>,
}

impl Slots {
    /// Takes in an item from the queue; `false` when it merged into one already known (the
    /// caller then counts it as done).
    fn submit(&mut self, w: Work) -> bool {
        if self.running.contains(&w) {
            return self.again.insert(w);
        }
        if !self.known.insert(w.clone()) {
            return false;
        }
        self.waiting.push_back(w);
        true
    }

    /// The next item to start, if a slot is free.
    fn next(&mut self, running: usize, limit: usize) -> Option<Work> {
        if running >= limit {
            return None;
        }
        let w = self.waiting.pop_front()?;
        self.running.insert(w.clone());
        Some(w)
    }

    /// An item finished; returns whether it must run again at once.
    fn finished(&mut self, w: &Work) -> bool {
        self.running.remove(w);
        self.known.remove(w);
        if self.again.remove(w) {
            self.known.insert(w.clone());
            self.waiting.push_back(w.clone());
            return true;
        }
        false
    }
}

/// Runs the Workspace items sent on `items` until that channel closes and every started
/// item has finished.
pub(super) async fn run_pool(registry: Arc<Registry>, mut items: UnboundedReceiver<Work>) {
    let mut slots = Slots::default();
    let mut tasks: JoinSet<(Work, bool)> = JoinSet::new();
    let mut open = true;
    loop {
        while let Some(w) = slots.next(tasks.len(), WORKSPACE_WORKERS) {
            let r = registry.clone();
            tasks.spawn(async move {
                let done = r.run_logged(&w).await;
                (w, done)
            });
        }
        tokio::select! {
            w = items.recv(), if open => match w {
                Some(w) => {
                    if !slots.submit(w) {
                        registry.controllers.queued.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                None => open = false,
            },
            Some(res) = tasks.join_next(), if !tasks.is_empty() => {
                let Ok((w, done)) = res else {
                    // A panicked item: its slot is free; it is found again on the next start.
                    tracing::warn!("a workspace work item panicked");
                    continue;
                };
                registry.controllers.queued.fetch_sub(1, Ordering::Relaxed);
                if !slots.finished(&w) && !done {
                    registry.retry_later(w);
                }
            },
            else => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::ClusterName;

    fn ws(name: &str) -> Work {
        Work::Workspace {
            cluster: ClusterName::root(),
            name: name.into(),
        }
    }

    #[test]
    fn an_item_never_runs_twice_at_once_and_slots_are_bounded() {
        let mut s = Slots::default();
        assert!(s.submit(ws("a")));
        assert!(!s.submit(ws("a")), "merged while waiting");
        assert!(s.submit(ws("b")));
        assert!(s.submit(ws("c")));
        assert_eq!(s.next(0, 2), Some(ws("a")));
        assert_eq!(s.next(1, 2), Some(ws("b")));
        assert_eq!(s.next(2, 2), None, "no free slot");
        // Queued again while running: runs once more afterwards, merged when repeated.
        assert!(s.submit(ws("a")));
        assert!(!s.submit(ws("a")));
        assert!(s.finished(&ws("a")));
        assert_eq!(s.next(1, 2), Some(ws("c")));
        assert!(!s.finished(&ws("b")));
        assert_eq!(s.next(1, 2), Some(ws("a")));
        assert!(!s.finished(&ws("a")));
        assert!(!s.finished(&ws("c")));
        assert_eq!(s.next(0, 2), None);
        assert!(s.known.is_empty() && s.running.is_empty() && s.again.is_empty());
    }
}
