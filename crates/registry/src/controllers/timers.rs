//! Deadlines of the controllers that act when time passes rather than when something is
//! written: a SyncTarget whose heartbeat is about to time out (`sync_target`), a finished
//! Job whose `ttlSecondsAfterFinished` is about to elapse (`job_ttl`). Each work item has
//! at most one deadline (scheduling it again moves it); one task sleeps until the earliest
//! deadline and queues the items that are due. Nothing is polled: a controller with no
//! deadline costs nothing, and a thousand deadlines cost one sleeping task.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::Item;
use crate::Registry;

/// The deadlines, earliest first.
#[derive(Debug, Default)]
struct Wheel {
    /// (deadline, sequence number) → item; the sequence keeps equal deadlines apart.
    by_time: BTreeMap<(Instant, u64), Item>,
    /// item → its key in `by_time`.
    by_item: HashMap<Item, (Instant, u64)>,
    seq: u64,
}

/// Work items waiting for their deadline.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    wheel: Mutex<Wheel>,
    /// Woken when an earlier deadline may have been added.
    changed: Notify,
}

impl Timers {
    fn wheel(&self) -> MutexGuard<'_, Wheel> {
        // Nothing panics while holding it; a poisoned wheel is still a valid wheel.
        self.wheel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `w` at `at` (replacing an earlier deadline of the same item).
    pub(crate) fn schedule(&self, w: Item, at: Instant) {
        let mut wheel = self.wheel();
        if let Some(old) = wheel.by_item.remove(&w) {
            wheel.by_time.remove(&old);
        }
        wheel.seq += 1;
        let key = (at, wheel.seq);
        let earliest = wheel.by_time.keys().next().is_none_or(|first| key < *first);
        wheel.by_time.insert(key, w.clone());
        wheel.by_item.insert(w, key);
        drop(wheel);
        if earliest {
            self.changed.notify_one();
        }
    }

    /// Queues `w` at `at` unless it already has a deadline at or before `at`.
    pub(crate) fn schedule_unless_sooner(&self, w: Item, at: Instant) {
        if self.wheel().by_item.get(&w).is_some_and(|k| k.0 <= at) {
            return;
        }
        self.schedule(w, at);
    }

    /// Forgets the deadline of `w`, if any.
    pub(crate) fn cancel(&self, w: &Item) {
        let mut wheel = self.wheel();
        if let Some(old) = wheel.by_item.remove(w) {
            wheel.by_time.remove(&old);
        }
    }

    /// Forgets every deadline (this replica stopped leading: the next leader's controllers
    /// schedule them again from what they replay).
    pub(crate) fn clear(&self) {
        let mut wheel = self.wheel();
        wheel.by_time.clear();
        wheel.by_item.clear();
    }

    /// The deadline of `w`, if it has one.
    #[cfg(test)]
    pub(crate) fn deadline(&self, w: &Item) -> Option<Instant> {
        self.wheel().by_item.get(w).map(|k| k.0)
    }

    /// How many items wait for a deadline.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.wheel().by_item.len()
    }

    /// Removes and returns the items due at `now`; and the next deadline after them.
    fn take_due(&self, now: Instant) -> (Vec<Item>, Option<Instant>) {
        let mut wheel = self.wheel();
        let mut due = Vec::new();
        while let Some(entry) = wheel.by_time.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let w = entry.remove();
            wheel.by_item.remove(&w);
            due.push(w);
        }
        let next = wheel.by_time.keys().next().map(|k| k.0);
        (due, next)
    }
}

/// Queues each item on `registry`'s work queue when its deadline comes, until aborted.
pub(crate) async fn run(registry: Arc<Registry>) {
    let timers = &registry.controllers.timers;
    loop {
        // Registered before reading the wheel, so an earlier deadline added meanwhile
        // wakes this sleep.
        let changed = timers.changed.notified();
        let (due, next) = timers.take_due(Instant::now());
        for w in due {
            registry.enqueue_item(w);
        }
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = changed => {}
                }
            }
            None => changed.await,
        }
    }
}

/// The [`Instant`] at which the wall-clock time `at` comes (now when it has passed).
pub(crate) fn instant_at(at: chrono::DateTime<chrono::Utc>) -> Instant {
    let left = (at - chrono::Utc::now()).to_std().unwrap_or_default();
    Instant::now() + left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use kplane_storage::Storage;
    use kplane_types::ClusterName;
    use std::time::Duration;

    fn w(name: &str) -> Item {
        let key = super::super::Named::new(ClusterName::root(), name);
        Item::new(Arc::new(super::super::Namespaces), key)
    }

    #[test]
    fn an_item_has_one_deadline_and_due_items_come_out_in_order() {
        let t = Timers::default();
        let now = Instant::now();
        let s = Duration::from_secs(1);
        t.schedule(w("b"), now + 2 * s);
        t.schedule(w("a"), now + s);
        t.schedule(w("c"), now + 5 * s);
        // Moved: later, then earlier again.
        t.schedule(w("a"), now + 3 * s);
        t.schedule(w("c"), now + s / 2);
        assert_eq!(t.len(), 3);
        assert_eq!(t.deadline(&w("a")), Some(now + 3 * s));
        let (due, next) = t.take_due(now);
        assert!(due.is_empty());
        assert_eq!(next, Some(now + s / 2));
        let (due, next) = t.take_due(now + 2 * s);
        assert_eq!(due, [w("c"), w("b")]);
        assert_eq!(next, Some(now + 3 * s));
        t.cancel(&w("a"));
        assert_eq!(t.take_due(now + 10 * s), (vec![], None));
        assert_eq!(t.len(), 0);
    }

    /// The task queues each item when its deadline comes, not before, and an earlier
    /// deadline added while it sleeps wakes it.
    #[tokio::test]
    async fn items_are_queued_when_due() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, mut queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
        let task = tokio::spawn(run(reg.clone()));
        let start = Instant::now();
        let ms = Duration::from_millis(1);
        reg.controllers.timers.schedule(w("late"), start + 600 * ms);
        tokio::task::yield_now().await;
        reg.controllers.timers.schedule(w("soon"), start + 200 * ms);
        let got = queue.recv().await.unwrap();
        assert_eq!(got, w("soon"));
        assert!(
            Instant::now() >= start + 200 * ms,
            "not before its deadline"
        );
        let got = queue.recv().await.unwrap();
        assert_eq!(got, w("late"));
        assert!(Instant::now() >= start + 600 * ms);
        assert_eq!(reg.controllers.timers.len(), 0);
        task.abort();
        storage.shutdown().await.unwrap();
    }
}
