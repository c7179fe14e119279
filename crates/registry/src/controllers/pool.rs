//! The bounded concurrent pool that runs Workspace work items beside the controllers'
//! one-at-a-time worker: up to [`WORKSPACE_WORKERS`] Workspaces are bootstrapped or deleted
//! at once (their writes share the storage's group commits), and a long deletion never holds
//! up the other controllers' items, nor they it.
//!
//! Deletions are throttled apart from that bound ([`super::workspace::paced_deletion`]): at most
//! [`super::workspace::WORKSPACE_DELETIONS`] run at once, and each is followed by a pause proportional to
//! its time, so that mass deletion leaves the cores to other tenants' requests. With a
//! background runtime (`Places`), deletions run there, at a lower OS priority; bootstraps
//! stay on the foreground (their creators wait for Ready).
//!
//! An item never runs twice at the same time: one queued again while it runs is run once
//! more after it finishes (it may have changed meanwhile), one queued again while it waits
//! for a free slot is merged. Items wait in arrival order; the pool's tasks live in a
//! `JoinSet` owned by the worker's future, so stopping the controllers stops them too.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinSet;

use super::{Item, Places};
use crate::Registry;

/// Workspace items run at once (bootstrap or deletion).
pub const WORKSPACE_WORKERS: usize = 64;

/// The runtime for item `w`: the foreground when its controller says a client waits for
/// it (a Workspace bootstrap), else the background (a Workspace deletion). Only the place
/// depends on it; the item's work is the same wherever it runs.
fn place<'a>(places: &'a Places, registry: &Registry, w: &Item) -> &'a Handle {
    match &places.background {
        Some(bg) if !w.in_foreground(registry) => bg,
        _ => &places.foreground,
    }
}

/// Pool state: items waiting for a slot and items running.
#[derive(Default)]
struct Slots {
    waiting: VecDeque<Item>,
    /// Waiting or running (each item at most once).
    known: HashSet<Item>,
    running: HashSet<Item>,
    /// Running items queued again meanwhile: run once more when they finish.
    again: HashSet<Item>,
}

impl Slots {
    /// Takes in an item from the queue; `false` when it merged into one already known (the
    /// caller then counts it as done).
    fn submit(&mut self, w: Item) -> bool {
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
    fn next(&mut self, running: usize, limit: usize) -> Option<Item> {
        if running >= limit {
            return None;
        }
        let w = self.waiting.pop_front()?;
        self.running.insert(w.clone());
        Some(w)
    }

    /// An item finished; returns whether it must run again at once.
    fn finished(&mut self, w: &Item) -> bool {
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
pub(super) async fn run_pool(
    registry: Arc<Registry>,
    mut items: UnboundedReceiver<Item>,
    places: Places,
) {
    let mut slots = Slots::default();
    let mut tasks: JoinSet<(Item, bool)> = JoinSet::new();
    let mut open = true;
    loop {
        while let Some(w) = slots.next(tasks.len(), WORKSPACE_WORKERS) {
            let rt = place(&places, &registry, &w).clone();
            let r = registry.clone();
            tasks.spawn_on(
                async move {
                    let done = r.run_logged(&w).await;
                    (w, done)
                },
                &rt,
            );
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
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::{DeleteParams, Target};
    use kplane_storage::{Prefix, Storage};
    use kplane_types::ClusterName;
    use serde_json::{json, Value};

    fn ws(name: &str) -> Item {
        let key = super::super::Named::new(ClusterName::root(), name);
        Item::new(Arc::new(super::super::Workspaces::default()), key)
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

    /// More Workspaces than the pool runs at once all turn Ready, and more deletions than
    /// run at once all finish, each cluster emptied; meanwhile the controllers' own worker
    /// keeps serving other items (a Terminating namespace goes away).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_workspaces_than_slots_are_created_and_deleted() {
        create_and_delete(None).await;
    }

    /// The same with a background runtime of one thread for the deletions and the other
    /// items, as `kplane serve` runs them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn more_workspaces_than_slots_are_created_and_deleted_with_a_background_runtime() {
        let bg = background_runtime();
        create_and_delete(Some(bg.handle().clone())).await;
        bg.shutdown_background();
    }

    fn background_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("test-background")
            .enable_all()
            .build()
            .unwrap()
    }

    /// A deletion item (its child cluster terminating) goes to the background runtime, a
    /// bootstrap to the foreground; without a background runtime, both to the foreground.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn deletions_run_in_the_background_and_bootstraps_do_not() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
        reg.set_terminating(&ClusterName::parse("root:going").unwrap(), true);
        let bg = background_runtime();
        let thread =
            |h: &Handle| h.spawn(async { std::thread::current().name().map(str::to_string) });
        let with = Places {
            foreground: Handle::current(),
            background: Some(bg.handle().clone()),
        };
        let without = Places {
            foreground: Handle::current(),
            background: None,
        };
        let on = |places: &Places, name: &str| thread(place(places, &reg, &ws(name)));
        assert_eq!(
            on(&with, "going").await.unwrap().as_deref(),
            Some("test-background")
        );
        assert_ne!(
            on(&with, "new").await.unwrap().as_deref(),
            Some("test-background")
        );
        assert_ne!(
            on(&without, "going").await.unwrap().as_deref(),
            Some("test-background")
        );
        bg.shutdown_background();
    }

    async fn create_and_delete(background: Option<Handle>) {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, queue) = Registry::new(storage, catalog, String::new(), shutdown);
        reg.set_external_url("https://kplane.test");
        reg.ensure_cluster(&ClusterName::root()).await.unwrap();
        let places = Places {
            foreground: Handle::current(),
            background,
        };
        let worker_reg = reg.clone();
        let worker = tokio::spawn(async move {
            let mut queue = queue;
            super::super::run_worker_on(worker_reg, &mut queue, places).await
        });
        let rt = reg
            .builtin_catalog()
            .get("tenancy.kplane.io", "v1alpha1", "workspaces")
            .cloned()
            .unwrap();
        let t = Target::new(&ClusterName::root(), rt, None);
        // Above the slots, and ten times their number.
        let n = 10 * WORKSPACE_WORKERS;
        let names: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        for name in &names {
            let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                             "metadata": {"name": name}});
            reg.create(&t, obj, &WriteParams::default()).await.unwrap();
        }
        let phase = |reg: Arc<Registry>, t: Target, name: String| async move {
            match reg.get(&t, &name).await {
                Ok(b) => serde_json::from_slice::<Value>(&b).unwrap()["status"]["phase"]
                    .as_str()
                    .map(str::to_string),
                Err(e) if e.code() == 404 => None,
                Err(e) => panic!("{e:?}"),
            }
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(120);
        for name in &names {
            while phase(reg.clone(), t.clone(), name.clone()).await.as_deref() != Some("Ready") {
                assert!(tokio::time::Instant::now() < deadline, "{name} not Ready");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        for name in &names {
            reg.delete(&t, name, &DeleteParams::default())
                .await
                .unwrap();
        }
        // The other controllers are not held up: a namespace deletion completes meanwhile.
        let ns = crate::testing::target(&reg, "", "namespaces", None);
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        reg.create(&ns, obj, &WriteParams::default()).await.unwrap();
        reg.delete(&ns, "x", &DeleteParams::default())
            .await
            .unwrap();
        while reg.get(&ns, "x").await.is_ok() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "namespace not deleted"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        for name in &names {
            while phase(reg.clone(), t.clone(), name.clone()).await.is_some() {
                assert!(tokio::time::Instant::now() < deadline, "{name} not gone");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            let keys = reg
                .storage()
                .count(&Prefix::cluster(format!("root:{name}")))
                .await
                .unwrap();
            assert_eq!(keys, 0, "{name}");
        }
        // Every item was counted out (the last ones just after their writes).
        while reg.queued_work() != 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}",
                reg.queued_work()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        worker.abort();
    }
}
