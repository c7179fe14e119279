//! The table of clusters being imported, replaced or moved, and their resourceVersion
//! floors ([`ClusterTable`]): the in-memory half of `cluster_states`, held by the registry
//! and consulted on every write.

use crate::error::{ApiError, ApiResult};
use kplane_storage::{Clusters, Revision};
use kplane_types::status::Details;
use kplane_types::{Cause, CauseType, ClusterName, Status, StatusReason};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

/// The storage resource of per-cluster state records (the floor). Not a resource any
/// catalog serves, so no request reads or writes it.
pub const STATE_RESOURCE: &str = "kplane.io/clusterstates";

/// The name of a cluster's floor record under [`STATE_RESOURCE`].
pub const FLOOR_NAME: &str = "floor";

/// The first character of the pseudo-clusters of imports (staging copies, the journal):
/// never part of a valid logical cluster name.
pub const HIDDEN_PREFIX: char = '~';

/// The pseudo-cluster holding the durable fenced and moved phases (hidden: see
/// [`HIDDEN_PREFIX`]), under [`STATE_RESOURCE`], one key per cluster named by its path.
pub const PHASES_CLUSTER: &str = "~cluster-phases";

/// Shards of the write gate: a fence waits only for the writes of its shard.
pub(crate) const GATE_SHARDS: usize = 64;

/// Tries, 100 ms apart, of a move's `moved` step to find the fence record that another
/// replica may have written (its store's publication delay, docs/storage-postgres.md).
pub(crate) const FENCE_RECORD_WAITS: usize = 30;

/// Seconds a client is asked to wait before retrying a cluster being replaced.
pub const REPLACING_RETRY_SECONDS: u32 = 2;

/// A phase a logical cluster passes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A new path being imported: it does not exist until the import finishes.
    Importing,
    /// An existing path whose content an import is replacing.
    Replacing,
    /// Writes paused for a move; reads served.
    Fenced,
    /// Moved to another server (the entry's location).
    Moved,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Entry {
    pub(crate) phase: Option<Phase>,
    pub(crate) floor: Revision,
    /// Where a [`Phase::Moved`] cluster lives now.
    pub(crate) location: Option<String>,
    /// The revision of the stored change the phase was last set from (or the revision this
    /// process had reached when it set the phase itself): an older change seen later (an
    /// informer's delivery on this replica) does not undo a newer one.
    pub(crate) phase_rev: Revision,
}

/// A move's phase as stored (the durable form of [`Phase::Fenced`] and [`Phase::Moved`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state")]
pub enum ClusterPhase {
    /// Writes are paused for a move (429 with `Retry-After: 1`); reads are served.
    Fenced,
    /// The cluster lives at `location` now; every request gets a 410 naming it.
    Moved { location: String },
}

/// The table of clusters with a phase or a floor (see the module doc).
#[derive(Debug)]
pub struct ClusterTable {
    pub(crate) entries: RwLock<HashMap<String, Entry>>,
    /// Entries with a phase: while 0, only [`HIDDEN_PREFIX`] names are hidden.
    pub(crate) phased: AtomicUsize,
    /// Bumped whenever a floor rises, so running watches re-check theirs (and when a
    /// cluster stops being hidden, so that the informers replay it).
    pub(crate) floors: tokio::sync::watch::Sender<u64>,

    /// The write gate of fences (see the module doc).
    pub(crate) gate: Vec<tokio::sync::RwLock<()>>,
}

impl Default for ClusterTable {
    fn default() -> Self {
        ClusterTable {
            entries: RwLock::default(),
            phased: AtomicUsize::new(0),
            floors: tokio::sync::watch::channel(0).0,
            gate: (0..GATE_SHARDS)
                .map(|_| tokio::sync::RwLock::new(()))
                .collect(),
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
        self.phased.load(Ordering::Acquire) > 0
            && self.phase(cluster).is_some_and(|p| p != Phase::Fenced)
    }

    /// Whether the phase of `cluster` was set (or ended) from a change at or after revision
    /// `at`: a replay as of `at` may have hidden the cluster though it is not hidden now.
    pub(crate) fn phase_changed_since(&self, cluster: &str, at: Revision) -> bool {
        self.read().get(cluster).is_some_and(|e| e.phase_rev >= at)
    }

    /// The phase of `cluster`, if any.
    pub fn phase(&self, cluster: &str) -> Option<Phase> {
        if self.phased.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.read().get(cluster).and_then(|e| e.phase)
    }

    /// The move's phase of `cluster` (fenced, or moved with its location), if any.
    pub fn move_phase(&self, cluster: &str) -> Option<ClusterPhase> {
        if self.phased.load(Ordering::Acquire) == 0 {
            return None;
        }
        let map = self.read();
        let e = map.get(cluster)?;
        match e.phase? {
            Phase::Fenced => Some(ClusterPhase::Fenced),
            Phase::Moved => Some(ClusterPhase::Moved {
                location: e.location.clone().unwrap_or_default(),
            }),
            Phase::Importing | Phase::Replacing => None,
        }
    }

    /// Sets (or with `None` clears) the move's phase of `cluster` from a change at
    /// revision `rev`, `own` or followed (see [`ClusterTable::set_phase_at`]); whether it
    /// did.
    pub(crate) fn set_move_phase(
        &self,
        cluster: &str,
        phase: Option<&ClusterPhase>,
        rev: Revision,
        own: bool,
    ) -> bool {
        let (p, location) = match phase {
            None => (None, None),
            Some(ClusterPhase::Fenced) => (Some(Phase::Fenced), None),
            Some(ClusterPhase::Moved { location }) => (Some(Phase::Moved), Some(location.clone())),
        };
        let mut map = self.write();
        if !self.apply_phase(&mut map, cluster, p, rev, own) {
            return false;
        }
        if let Some(e) = map.get_mut(cluster) {
            e.location = location;
        }
        true
    }

    pub(crate) fn shard_of(&self, cluster: &str) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        cluster.hash(&mut h);
        (h.finish() as usize) % self.gate.len()
    }

    /// Sets (or with `None` clears) the phase of `cluster`: this process's own change
    /// (see [`ClusterTable::set_phase_at`]), stamped with no revision.
    pub fn set_phase(&self, cluster: &str, phase: Option<Phase>) {
        self.set_phase_at(cluster, phase, 0, true);
    }

    /// Sets (or with `None` clears) the phase of `cluster`; whether it did. Phases reach
    /// the table both synchronously from this process's own changes (`own`: they always
    /// apply, `rev` being the revision the store had reached once the stored change was
    /// durable) and from the informer following the stored changes (`rev` their revision),
    /// in any order: a followed change no newer than the last change applied is stale
    /// and skipped.
    pub fn set_phase_at(
        &self,
        cluster: &str,
        phase: Option<Phase>,
        rev: Revision,
        own: bool,
    ) -> bool {
        let mut map = self.write();
        self.apply_phase(&mut map, cluster, phase, rev, own)
    }

    pub(crate) fn apply_phase(
        &self,
        map: &mut HashMap<String, Entry>,
        cluster: &str,
        phase: Option<Phase>,
        rev: Revision,
        own: bool,
    ) -> bool {
        let e = map.entry(cluster.to_string()).or_default();
        if !own && rev <= e.phase_rev {
            return false;
        }
        e.phase_rev = e.phase_rev.max(rev);
        match (e.phase.is_some(), phase.is_some()) {
            (false, true) => {
                self.phased.fetch_add(1, Ordering::AcqRel);
            }
            (true, false) => {
                self.phased.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
        let unhidden = matches!(e.phase, Some(Phase::Importing | Phase::Replacing))
            && !matches!(phase, Some(Phase::Importing | Phase::Replacing));
        e.phase = phase;
        if unhidden {
            // The informers skipped its objects: they replay them.
            self.floors.send_modify(|g| *g += 1);
        }
        true
    }

    /// After a replay of the stored phase records as of revision `at` that showed the
    /// phases of `shown` only: ends every other phase set from a change at or before `at`
    /// (its record went while the informer was not following the store).
    pub(crate) fn end_phases_not_shown(
        &self,
        shown: &std::collections::HashSet<String>,
        at: Revision,
    ) {
        let stale: Vec<String> = self
            .read()
            .iter()
            .filter(|(c, e)| e.phase.is_some() && e.phase_rev <= at && !shown.contains(*c))
            .map(|(c, _)| c.clone())
            .collect();
        for c in stale {
            let mut map = self.write();
            if map.get(&c).is_some_and(|e| e.phase_rev <= at) {
                tracing::debug!(cluster = %c, "a phase whose record went while not followed ends");
                self.apply_phase(&mut map, &c, None, at, true);
            }
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
    /// is imported (it does not exist yet), 503 with Retry-After while it is replaced,
    /// 410 naming the new location once it has moved (a fenced cluster answers: only its
    /// writes are refused, [`Registry::refuse_if_fenced`]).
    pub fn check_request(&self, cluster: &ClusterName) -> ApiResult<()> {
        if self.phased.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        match self.phase(cluster.as_str()) {
            None | Some(Phase::Fenced) => Ok(()),
            Some(Phase::Moved) => match self.move_phase(cluster.as_str()) {
                Some(ClusterPhase::Moved { location }) => Err(moved(cluster, &location)),
                _ => Ok(()),
            },
            Some(Phase::Importing) => Err(no_such_cluster(cluster)),
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

    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Held by a storage write from its state check to its commit ([`Registry::write_gate`]).
pub(crate) struct WriteGate<'a> {
    pub(crate) _guards: Vec<tokio::sync::RwLockReadGuard<'a, ()>>,
}

/// 410 Gone for any request into a moved cluster, naming the new location (also as the
/// `location` cause, for clients).
pub fn moved(cluster: &ClusterName, location: &str) -> ApiError {
    let s = Status::new(
        StatusReason::Gone,
        format!("logical cluster \"{cluster}\" has moved to {location}"),
    )
    .with_details(Details {
        name: cluster.to_string(),
        kind: "logicalclusters".into(),
        causes: vec![Cause::new(CauseType::Moved, "location", location)],
        ..Default::default()
    });
    ApiError::from(s)
}

/// The 404 of a request into a logical cluster that does not exist.
pub fn no_such_cluster(cluster: &ClusterName) -> ApiError {
    ApiError::from(Status::new(
        StatusReason::NotFound,
        format!("logical cluster \"{cluster}\" does not exist"),
    ))
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

    /// Phases reach the table from this process's changes and from the informer, in any
    /// order: a followed change no newer than the last applied one is skipped; ending a
    /// hiding phase wakes the informers (they replay its objects); a replay ends the phases
    /// whose records it no longer showed, unless set after it.
    #[test]
    fn late_changes_never_undo_newer_ones() {
        let t = ClusterTable::default();
        let fenced = Some(&ClusterPhase::Fenced);
        // Fenced at 10 (seen late), unfenced by this process once at 12.
        t.set_move_phase("root:a", None, 12, true);
        assert!(!t.set_move_phase("root:a", fenced, 10, false));
        assert_eq!(t.move_phase("root:a"), None);
        // A newer followed change applies; the same one again does not.
        assert!(t.set_move_phase("root:a", fenced, 13, false));
        assert!(!t.set_move_phase("root:a", None, 13, false));
        assert_eq!(t.move_phase("root:a"), Some(ClusterPhase::Fenced));
        // An own change always applies, whatever the revision it names.
        t.set_move_phase("root:a", None, 5, true);
        assert_eq!(t.move_phase("root:a"), None);
        assert!(!t.set_move_phase("root:a", fenced, 13, false));
        // Ending an import wakes the informers; a replay ends what it did not show.
        let rx = t.subscribe();
        assert!(t.set_phase_at("root:new", Some(Phase::Importing), 20, false));
        assert!(!rx.has_changed().unwrap());
        assert!(t.set_phase_at("root:old", Some(Phase::Replacing), 21, false));
        assert!(t.set_phase_at("root:later", Some(Phase::Importing), 31, false));
        let shown = ["root:old".to_string()].into_iter().collect();
        t.end_phases_not_shown(&shown, 30);
        assert!(rx.has_changed().unwrap());
        assert_eq!(t.phase("root:new"), None);
        assert_eq!(t.phase("root:old"), Some(Phase::Replacing));
        assert_eq!(t.phase("root:later"), Some(Phase::Importing));
        // The journal's events after the replay still apply.
        assert!(t.set_phase_at("root:new", Some(Phase::Importing), 32, false));
        assert_eq!(t.phase("root:new"), Some(Phase::Importing));
    }
}
