//! What the syncer knows of the pods of each synced object ([`PodState`]): the host pods,
//! their reflections in kplane, and what the two pod watches of [`crate::pods`] have seen.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::object::{Compact, ObjectKey};

/// What the syncer knows of the pods of each synced object.
#[derive(Debug, Default)]
pub struct PodState {
    /// Host pods of each source object, by host pod name.
    pub host: Mutex<HashMap<ObjectKey, BTreeMap<String, Compact>>>,
    /// Reflections in kplane of each source object, by name.
    pub reflected: Mutex<HashMap<ObjectKey, BTreeMap<String, Compact>>>,
    /// Whether each watch has listed once (before that, a missing pod may just be unseen).
    pub host_listed: AtomicBool,
    pub reflected_listed: AtomicBool,
    /// Reflections the syncer itself deleted (their DELETED event is not a user's).
    pub own_deletes: Mutex<HashSet<(String, String, String)>>,
    /// Host pods to delete because their reflection was deleted in kplane.
    pub doomed: Mutex<HashSet<(ObjectKey, String)>>,
}

impl PodState {
    /// Whether both pod watches have listed once.
    pub(crate) fn listed(&self) -> bool {
        self.host_listed.load(Ordering::Acquire) && self.reflected_listed.load(Ordering::Acquire)
    }
}
