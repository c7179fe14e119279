//! Crash recovery: the log's flush is the commit point and the latest database is written
//! after it (and flushed in the background), so after a crash the latest database may lack
//! the last committed groups. On open they are replayed from the log, in revision order,
//! into one atomic batch of the latest database.

use super::encoding::{
    decode_version, encode_u64, index_key, index_key_bytes, latest_key, meta_key, META_REVISION,
};
use super::log::Log;
use super::read::backend;
use crate::{EventType, Result, Revision};

/// Applies every logged version after `latest_rev` (the latest database's recorded
/// revision) to the latest database; returns the store's current revision.
pub(crate) fn replay(latest: &sled::Tree, log: &Log, latest_rev: Revision) -> Result<Revision> {
    let mut batch = sled::Batch::default();
    let mut last = latest_rev;
    for entry in log.entries(latest_rev, Revision::MAX) {
        let (rev, raw) = entry?;
        let v = decode_version(raw)?;
        if v.event_type == EventType::Deleted {
            batch.remove(latest_key(&v.kb));
        } else {
            batch.insert(latest_key(&v.kb), v.record.encode());
            batch.insert(index_key(&index_key_bytes(&v.key)), &[]);
        }
        last = rev;
    }
    if last > latest_rev {
        tracing::info!(
            from = latest_rev,
            to = last,
            "replaying the log into latest values"
        );
        batch.insert(meta_key(META_REVISION), &encode_u64(last));
        latest.apply_batch(batch).map_err(backend)?;
        latest.flush().map_err(backend)?;
    }
    Ok(last)
}
