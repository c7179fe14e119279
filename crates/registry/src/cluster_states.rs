//! The per-cluster state table: logical clusters that are not simply "existing" or
//! "absent". One entry per such cluster, holding its phase (being imported, being
//! replaced by an import) and its resourceVersion floor (the revision at which an import
//! or replace made it what it is: older resourceVersions describe another cluster).
//!
//! - **Importing** (a new path being imported): not existing yet, so requests into it
//!   are 404 (`clusters.rs`); wildcard and subtree reads and the internal informer skip
//!   its objects ([`ClusterTable::hides`]).
//! - **Replacing** (an existing path being replaced): requests into it are 503 with
//!   Retry-After; wildcard and subtree reads skip its objects.
//! - **Floor** `F`: any list, continue or watch of the cluster (or of a wildcard or
//!   subtree that spans it) from a resourceVersion below `F` is 410 Expired, and a watch
//!   that started below `F` and is still running when the floor is set ends with a 410
//!   ERROR event ([`ClusterTable::subscribe`]).
//!
//! Pseudo-clusters whose name starts with [`HIDDEN_PREFIX`] (an import's staging copy, the
//! import journal) are never valid cluster names: no request can address them and every
//! multi-cluster read skips them.
//!
//! Floors are durable: an ordinary key under the reserved resource [`STATE_RESOURCE`]
//! (never served) in the cluster's own key range, loaded at start-up
//! ([`crate::Registry::load_cluster_state`]) and removed with the cluster. Phases are
//! durable through the import journal (`archive/journal.rs`), which start-up resolves
//! before anything is served. V6's fenced and moved states belong in [`Phase`] too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use kplane_storage::{Clusters, Revision};
use kplane_types::{ClusterName, Status, StatusReason};

use crate::error::{ApiError, ApiResult};

/// The storage resource of per-cluster state records (the floor). Not a resource any
/// catalog serves, so no request reads or writes it.
pub const STATE_RESOURCE: &str = "kplane.io/clusterstates";

/// The name of a cluster's floor record under [`STATE_RESOURCE`].
pub const FLOOR_NAME: &str = "floor";

/// The first character of the pseudo-clusters of imports (staging copies, the journal):
/// never part of a valid logical cluster name.
pub const HIDDEN_PREFIX: char = '~';

/// Seconds a client is asked to wait before retrying a cluster being replaced.
pub const REPLACING_RETRY_SECONDS: u32 = 2;

/// A phase a logical cluster passes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A new path being imported: it does not exist until the import finishes.
    Importing,
    /// An existing path whose content an import is replacing.
    Replacing,
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    phase: Option<Phase>,
    floor: Revision,
}

/// The table of clusters with a phase or a floor (see the module doc).
#[derive(Debug)]
pub struct ClusterTable {
    entries: RwLock<HashMap<String, Entry>>,
    /// Entries with a phase: while 0, only [`HIDDEN_PREFIX`] names are hidden.
    phased: AtomicUsize,
    /// Bumped whenever a floor rises, so running watches re-check theirs.
    floors: tokio::sync::watch::Sender<u64>,
}

impl Default for ClusterTable {
    fn default() -> Self {
        ClusterTable {
            entries: RwLock::default(),
            phased: AtomicUsize::new(0),
            floors: tokio::sync::watch::channel(0).0,
        }
    }
}

/// The 410 of a resourceVersion below a cluster's floor, worded as kube-apiserver words a
/// compacted one.
pub fn below_floor(rv: Revision, floor: Revision) -> ApiError {
    ApiError::from(Status::expired(format!(
        "too old resource version: {rv} ({floor})"
    )))
}

impl ClusterTable {
    /// Whether multi-cluster reads and the informer must skip `cluster`'s objects: a
    /// pseudo-cluster, or a cluster being imported or replaced.
    pub fn hides(&self, cluster: &str) -> bool {
        if cluster.starts_with(HIDDEN_PREFIX) {
            return true;
        }
        self.phased.load(Ordering::Acquire) > 0 && self.phase(cluster).is_some()
    }

    /// The phase of `cluster`, if any.
    pub fn phase(&self, cluster: &str) -> Option<Phase> {
        self.read().get(cluster).and_then(|e| e.phase)
    }

    /// Sets (or with `None` clears) the phase of `cluster`.
    pub fn set_phase(&self, cluster: &str, phase: Option<Phase>) {
        let mut map = self.write();
        let e = map.entry(cluster.to_string()).or_default();
        match (e.phase.is_some(), phase.is_some()) {
            (false, true) => {
                self.phased.fetch_add(1, Ordering::AcqRel);
            }
            (true, false) => {
                self.phased.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
        e.phase = phase;
        if e.phase.is_none() && e.floor == 0 {
            map.remove(cluster);
        }
    }

    /// Raises the floor of `cluster` to `floor` (never lowers it) and tells running
    /// watches.
    pub fn raise_floor(&self, cluster: &str, floor: Revision) {
        {
            let mut map = self.write();
            let e = map.entry(cluster.to_string()).or_default();
            e.floor = e.floor.max(floor);
        }
        self.floors.send_modify(|g| *g += 1);
    }

    /// Forgets everything about `cluster` (its key range is gone).
    pub fn forget(&self, cluster: &str) {
        let mut map = self.write();
        if let Some(e) = map.remove(cluster) {
            if e.phase.is_some() {
                self.phased.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// The highest floor among the clusters `scope` covers (0 when none has one).
    pub fn floor(&self, scope: &Clusters) -> Revision {
        let map = self.read();
        if map.is_empty() {
            return 0;
        }
        match scope {
            Clusters::One(c) => map.get(c).map_or(0, |e| e.floor),
            _ => map
                .iter()
                .filter(|(c, _)| scope.contains(c))
                .map(|(_, e)| e.floor)
                .max()
                .unwrap_or(0),
        }
    }

    /// 410 Expired when `rv` is below the floor of a cluster `scope` covers.
    pub fn check_rv(&self, scope: &Clusters, rv: Revision) -> ApiResult<()> {
        let floor = self.floor(scope);
        if rv < floor {
            return Err(below_floor(rv, floor));
        }
        Ok(())
    }

    /// A receiver that changes whenever a floor rises.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.floors.subscribe()
    }

    /// The answer to a request into `cluster` while it has a phase: 404 while a new path
    /// is imported (it does not exist yet), 503 with Retry-After while it is replaced.
    pub fn check_request(&self, cluster: &ClusterName) -> ApiResult<()> {
        if self.phased.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        match self.phase(cluster.as_str()) {
            None => Ok(()),
            Some(Phase::Importing) => Err(crate::clusters::no_such_cluster(cluster)),
            Some(Phase::Replacing) => {
                let mut s = Status::new(
                    StatusReason::ServiceUnavailable,
                    format!("logical cluster \"{cluster}\" is being replaced by an import"),
                );
                s.retry_after = Some(REPLACING_RETRY_SECONDS);
                Err(ApiError::from(s))
            }
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_hide_and_answer_requests() {
        let t = ClusterTable::default();
        let a = ClusterName::parse("root:a").unwrap();
        assert!(!t.hides("root:a"));
        assert!(t.hides("~import:root:a"));
        t.check_request(&a).unwrap();
        t.set_phase("root:a", Some(Phase::Importing));
        assert!(t.hides("root:a") && !t.hides("root:ab"));
        assert_eq!(t.check_request(&a).unwrap_err().code(), 404);
        t.set_phase("root:a", Some(Phase::Replacing));
        let e = t.check_request(&a).unwrap_err();
        assert_eq!(e.code(), 503);
        assert_eq!(e.0.retry_after, Some(REPLACING_RETRY_SECONDS));
        t.set_phase("root:a", None);
        assert!(!t.hides("root:a"));
        t.check_request(&a).unwrap();
        assert_eq!(t.phased.load(Ordering::Acquire), 0);
    }

    #[test]
    fn floors_cover_their_cluster_and_the_scopes_spanning_it() {
        let t = ClusterTable::default();
        let mut rx = t.subscribe();
        t.raise_floor("root:a", 50);
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        t.raise_floor("root:a", 40);
        assert_eq!(
            t.floor(&Clusters::One("root:a".into())),
            50,
            "never lowered"
        );
        assert_eq!(t.floor(&Clusters::One("root:b".into())), 0);
        assert_eq!(t.floor(&Clusters::All), 50);
        assert_eq!(t.floor(&Clusters::Subtree("root".into())), 50);
        assert_eq!(t.floor(&Clusters::Subtree("root:ab".into())), 0);
        let e = t.check_rv(&Clusters::All, 49).unwrap_err();
        assert_eq!(e.code(), 410);
        assert_eq!(e.0.message, "too old resource version: 49 (50)");
        t.check_rv(&Clusters::One("root:a".into()), 50).unwrap();
        t.forget("root:a");
        t.check_rv(&Clusters::All, 1).unwrap();
    }
}
