//! Deadlines of the controllers that act when time passes rather than when something is
//! written: a SyncTarget whose heartbeat is about to time out (`sync::controllers`), a finished
//! Job whose `ttlSecondsAfterFinished` is about to elapse (`job_ttl`). Each work item has
//! at most one deadline (scheduling it again moves it); one task sleeps until the earliest
//! deadline and queues the items that are due. Nothing is polled: a controller with no
//! deadline costs nothing, and a thousand deadlines cost one sleeping task.

use std::sync::Arc;

use tokio::time::Instant;

use crate::Registry;

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
    use crate::controllers::queue::Timers;
    use crate::controllers::Item;
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
