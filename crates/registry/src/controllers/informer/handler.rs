//! What follows the shared informer ([`InformerHandler`]): the contract between the one
//! scan-then-watch of the store and the caches and controllers fed by it.

use kplane_storage::{KeyValue, Revision};

/// Something that follows every object of the store.
pub trait InformerHandler: Send + Sync {
    /// A fresh scan begins: what the handler knows may be stale (changes were missed), and
    /// every stored object follows with `replay` set, then [`InformerHandler::on_synced`].
    fn on_resync(&self);

    /// [`InformerHandler::on_resync`], for a replay of the store as of revision `at`.
    fn on_resync_at(&self, at: Revision) {
        let _ = at;
        self.on_resync();
    }

    /// One object: from the scan (`replay`, never `deleted`) or a change after it (`deleted`
    /// for a DELETED event, whose `kv` is the object's last state).
    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool);

    /// The replay ended; live changes follow.
    fn on_synced(&self) {}

    /// Whether the handler also follows the records of the hidden pseudo-clusters that
    /// hold clusters' phases (the move's phases, the import journal: `is_phase_record`),
    /// which an informer following imports shows no other handler.
    fn follows_phases(&self) -> bool {
        false
    }
}
