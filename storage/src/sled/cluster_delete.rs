//! [`crate::Storage::delete_cluster`] on sled: the cluster's keys are deleted batch by
//! batch, each batch one request to the writer.
//!
//! The writer picks the batch itself: at the start of a write group it takes the next
//! `limit` live keys of the range from the latest keyspace and turns each into an ordinary
//! delete with the key's exact `ModRevision` as precondition, so every key gets its own
//! revision, history entry, event-log entry and `Deleted` event, and the batch commits with
//! one flush like any group. Because the writer reads the keys and deletes them with no
//! write in between, a batch never conflicts; the next batch is only requested once the
//! previous one replied, so writes of other clusters queued meanwhile commit in between.
//! Space is reclaimed by compaction once the deletes leave the event window.

use tokio::sync::oneshot;

use super::db::backend;
use super::encoding::{decode_key, Plan, Record, TreeRange, TAG_LATEST};
use super::request::{WriteRequest, MAX_WRITE_GROUP};
use crate::range::Tombstone;
use crate::{Error, KeyValue, Precondition, Prefix, Result};

/// The writer's part of one batch: delete the first `limit` live keys of `range`.
pub(crate) struct RangeDelete {
    range: TreeRange,
    limit: usize,
    tombstone: Tombstone,
    reply: oneshot::Sender<Result<BatchDeleted>>,
}

/// What one batch did.
pub(crate) struct BatchDeleted {
    deleted: u64,
    /// Keys may remain: the batch was full, or a key changed under it.
    more: bool,
}

/// A batch whose deletes are in the group being committed; answered once it is durable.
pub(crate) struct PendingBatch {
    replies: Vec<oneshot::Receiver<Result<KeyValue>>>,
    full: bool,
    reply: oneshot::Sender<Result<BatchDeleted>>,
}

/// Deletes every key of `cluster`, `batch` keys per request to the writer, which `send`
/// queues (it fails once the writer is gone).
pub(super) async fn delete_cluster(
    send: impl Fn(RangeDelete) -> Result<()>,
    cluster: &str,
    batch: usize,
    tombstone: Tombstone,
) -> Result<u64> {
    let limit = batch.clamp(1, MAX_WRITE_GROUP);
    let Some(range) = Plan::for_prefix(&Prefix::cluster(cluster)).range(TAG_LATEST, None) else {
        return Ok(0);
    };
    let mut total = 0;
    loop {
        let (reply, rx) = oneshot::channel();
        let req = RangeDelete {
            range: range.clone(),
            limit,
            tombstone: tombstone.clone(),
            reply,
        };
        send(req)?;
        let done = rx.await.map_err(|_| Error::ShuttingDown)??;
        total += done.deleted;
        if !done.more {
            return Ok(total);
        }
    }
}

/// Called by the writer at the start of a group: appends the batch's deletes to `group`.
/// `None` when the batch failed before any write (its caller already has the error).
pub(crate) fn expand(
    tree: &sled::Tree,
    req: RangeDelete,
    group: &mut Vec<WriteRequest>,
) -> Option<PendingBatch> {
    let mut kvs = Vec::new();
    for entry in tree.range(req.range.clone()).take(req.limit) {
        let kv = entry.map_err(backend).and_then(|(k, v)| {
            let (key, _) = decode_key(k.get(1..).unwrap_or_default())?;
            Ok(Record::decode(v)?.into_kv(key))
        });
        match kv {
            Ok(kv) => kvs.push(kv),
            Err(e) => {
                let _ = req.reply.send(Err(e));
                return None;
            }
        }
    }
    let full = kvs.len() >= req.limit;
    let mut replies = Vec::with_capacity(kvs.len());
    for kv in kvs {
        let (reply, rx) = oneshot::channel();
        let tombstone = req.tombstone.clone();
        group.push(WriteRequest {
            key: kv.key.clone(),
            delete: true,
            precondition: Precondition::ModRevision(kv.mod_revision),
            encode: Box::new(move |rev| tombstone(&kv, rev)),
            reply,
        });
        replies.push(rx);
    }
    Some(PendingBatch {
        replies,
        full,
        reply: req.reply,
    })
}

impl RangeDelete {
    /// Answers a batch the writer will not run.
    pub(crate) fn refuse(self, e: Error) {
        let _ = self.reply.send(Err(e));
    }
}

impl PendingBatch {
    /// Called by the writer after the group's commit, when every delete has its result.
    pub(crate) fn finish(self) {
        let mut deleted = 0;
        let mut more = self.full;
        let mut error = None;
        for mut rx in self.replies {
            match rx.try_recv() {
                Ok(Ok(_)) => deleted += 1,
                // Deleted by someone else meanwhile.
                Ok(Err(Error::NotFound)) => {}
                // Changed meanwhile: the next batch sees it again.
                Ok(Err(Error::Conflict { .. })) => more = true,
                Ok(Err(e)) => {
                    error.get_or_insert(e);
                }
                Err(_) => {
                    error.get_or_insert(Error::ShuttingDown);
                }
            }
        }
        let _ = self.reply.send(match error {
            Some(e) => Err(e),
            None => Ok(BatchDeleted { deleted, more }),
        });
    }
}
