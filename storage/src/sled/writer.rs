//! The single writer: a dedicated thread that assigns revisions, checks preconditions and
//! commits each group of pending writes: its entries into the current log generation, the
//! group's end marker last, made durable with one flush (the commit point, group commit),
//! then its entries into the latest database (flushed in the background: after a crash it
//! is replayed from the log), then replies to the callers and publishes the events to
//! watchers. Entries are written one by one, never as a sled batch, so that sled's
//! process-wide lock stays off and no read waits for a group ([`super::ops`]); readers at
//! the published revision never see a group half-applied as anything but newer versions,
//! and recovery removes a group whose marker did not reach the disk.
//! It also runs compaction chunks between groups, and picks the keys of each batch of a
//! cluster delete ([`super::cluster_delete`]) at the start of a group.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::cluster_delete::{self, PendingBatch, RangeDelete};
use super::compaction::{unix_millis, Compactor};
use super::compress::Compressor;
use super::encoding::{
    encode_u64, encode_version, index_key, index_key_bytes, key_bytes, latest_key, meta_key,
    version_key, xref_key, Record, META_REVISION,
};
use super::log::{log_commit_time, SizedBatch};
use super::ops::{Ops, Target};
use super::read::read_latest;
use super::request::{WriteRequest, MAX_WRITE_GROUP};
use super::shared::{mono_millis, Shared};
use crate::{Error, Event, EventType, KeyValue, Precondition, Result, Revision};

pub(crate) enum Request {
    Write(WriteRequest),
    /// Writes committed in the same group (at most [`MAX_WRITE_GROUP`]).
    Batch(Vec<WriteRequest>),
    /// One batch of a cluster delete; it starts a group, so it sees every earlier write.
    DeleteRange(RangeDelete),
    /// Commit what is queued before this, flush, close watchers, stop.
    Shutdown(oneshot::Sender<Result<()>>),
}

pub(crate) struct Writer {
    shared: Arc<Shared>,
    rx: Receiver<Request>,
    /// The last committed revision.
    rev: Revision,
    /// Commit times are kept monotonic even if the wall clock steps back.
    last_commit_millis: u64,
    compactor: Compactor,
    /// A request that must start the next group (a range delete met mid-group).
    carry: Option<Request>,
    /// Compresses the records logged.
    compressor: Compressor,
    /// After a failed compaction step, none is tried before this (a failure that repeats,
    /// e.g. a database that reads back corrupted, must not spin the writer or flood the log).
    compaction_retry_at: Option<std::time::Instant>,
}

/// How long the writer waits before it tries compaction again after a failure.
const COMPACTION_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

type Reply = (oneshot::Sender<Result<KeyValue>>, Result<KeyValue>);

fn check(delete: bool, pre: Precondition, current: Option<&Record>) -> Result<()> {
    match (pre, current) {
        (_, None) if delete => Err(Error::NotFound),
        (Precondition::MustNotExist, None) => Ok(()),
        (Precondition::MustNotExist, Some(_)) => Err(Error::AlreadyExists),
        (Precondition::MustExist | Precondition::ModRevision(_), None) => Err(Error::NotFound),
        (Precondition::MustExist, Some(_)) => Ok(()),
        (Precondition::ModRevision(r), Some(c)) if c.mod_revision == r => Ok(()),
        (Precondition::ModRevision(_), Some(c)) => Err(Error::Conflict {
            current: c.mod_revision,
        }),
    }
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        rx: Receiver<Request>,
        rev: Revision,
        compactor: Compactor,
        compressor: Compressor,
    ) -> Writer {
        Writer {
            shared,
            rx,
            rev,
            last_commit_millis: 0,
            compactor,
            carry: None,
            compressor,
            compaction_retry_at: None,
        }
    }

    pub(crate) fn run(mut self) {
        let mut shutdown_reply = None;
        loop {
            let first = match self.carry.take() {
                Some(req) => Some(req),
                None => {
                    self.shared.writer_busy_since.store(0, Ordering::Release);
                    match self.rx.recv_timeout(self.wait()) {
                        Ok(req) => Some(req),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            self.shared
                .writer_busy_since
                .store(mono_millis(), Ordering::Release);
            if let Some(first) = first {
                let mut group = Vec::new();
                let mut range_deletes: Vec<PendingBatch> = Vec::new();
                let mut next = Some(first);
                while let Some(req) = next {
                    match req {
                        Request::Write(w) => group.push(w),
                        Request::Batch(ws) => group.extend(ws),
                        Request::DeleteRange(d) if group.is_empty() => {
                            range_deletes.extend(cluster_delete::expand(
                                &self.shared.latest().tree,
                                d,
                                &mut group,
                            ));
                        }
                        Request::DeleteRange(d) => {
                            self.carry = Some(Request::DeleteRange(d));
                            break;
                        }
                        Request::Shutdown(reply) => {
                            shutdown_reply = Some(reply);
                            break;
                        }
                    }
                    if group.len() >= MAX_WRITE_GROUP {
                        break;
                    }
                    next = self.rx.try_recv().ok();
                }
                self.commit(group);
                for batch in range_deletes {
                    batch.finish();
                }
                if shutdown_reply.is_some() {
                    break;
                }
            }
            if !self.shared.failed.load(Ordering::Acquire) {
                let due = self
                    .compaction_retry_at
                    .is_none_or(|t| std::time::Instant::now() >= t);
                if due {
                    match self.compactor.run_due(&self.shared) {
                        Ok(()) => self.compaction_retry_at = None,
                        Err(e) => {
                            tracing::error!(error = %e, retry_in_s = COMPACTION_RETRY.as_secs(), "compaction failed");
                            self.compaction_retry_at =
                                Some(std::time::Instant::now() + COMPACTION_RETRY);
                        }
                    }
                }
                let logical = self.shared.latest_bytes.load(Ordering::Relaxed);
                if let Err(e) = self.shared.latest_store.step(logical) {
                    tracing::error!(error = %e, "latest database rebuild failed");
                }
            }
        }
        self.stop(shutdown_reply);
    }

    fn stop(self, shutdown_reply: Option<oneshot::Sender<Result<()>>>) {
        let Writer {
            shared, rx, carry, ..
        } = self;
        shared.closing.store(true, Ordering::Release);
        let mut other_shutdowns = Vec::new();
        for req in carry
            .into_iter()
            .chain(std::iter::from_fn(|| rx.try_recv().ok()))
        {
            match req {
                Request::Write(w) => {
                    let _ = w.reply.send(Err(Error::ShuttingDown));
                }
                Request::Batch(ws) => {
                    for w in ws {
                        let _ = w.reply.send(Err(Error::ShuttingDown));
                    }
                }
                Request::DeleteRange(d) => d.refuse(Error::ShuttingDown),
                Request::Shutdown(reply) => other_shutdowns.push(reply),
            }
        }
        let result = shared.log.flush_all().and_then(|()| {
            shared
                .latest()
                .flush()
                .map(|_| ())
                .map_err(|e| Error::Backend(e.to_string()))
        });
        shared.hub.close_all();
        // Release the database before answering, so the caller can reopen it.
        drop(shared);
        drop(rx);
        for reply in other_shutdowns {
            let _ = reply.send(Ok(()));
        }
        if let Some(reply) = shutdown_reply {
            let _ = reply.send(result);
        }
    }

    /// Applies one group: everything or nothing becomes durable, then callers get their
    /// results and watchers the events.
    fn commit(&mut self, group: Vec<WriteRequest>) {
        if self.shared.failed.load(Ordering::Acquire) {
            for w in group {
                let _ = w
                    .reply
                    .send(Err(Error::Backend("storage failed earlier".into())));
            }
            return;
        }
        let latest_db = self.shared.latest();
        let latest = &latest_db.tree;
        let compacted = self.shared.compacted_revision();
        let mut overlay: HashMap<Vec<u8>, Option<Record>> = HashMap::new();
        let mut log_batch = SizedBatch::default();
        let mut latest_batch = Ops::default();
        // Change of the latest database's logical size, and the index entries this group
        // adds (an index entry may outlive its key's delete and be reused).
        let mut latest_delta: i64 = 0;
        let mut indexed: HashSet<Vec<u8>> = HashSet::new();
        let mut rev = self.rev;
        let mut replies: Vec<Reply> = Vec::with_capacity(group.len());
        let mut events = Vec::new();
        for req in group {
            let kb = key_bytes(&req.key);
            let current = match overlay.get(&kb) {
                Some(c) => c.clone(),
                None => match read_latest(latest, &kb) {
                    Ok(c) => c,
                    Err(e) => {
                        replies.push((req.reply, Err(e)));
                        continue;
                    }
                },
            };
            if let Err(e) = check(req.delete, req.precondition, current.as_ref()) {
                replies.push((req.reply, Err(e)));
                continue;
            }
            let next = rev + 1;
            let value = match (req.encode)(next) {
                Ok(v) => Bytes::from(v),
                Err(msg) => {
                    replies.push((req.reply, Err(Error::Encode(msg))));
                    continue;
                }
            };
            rev = next;
            let create_revision = current.as_ref().map_or(next, |c| c.create_revision);
            let record = Record {
                tombstone: req.delete,
                create_revision,
                mod_revision: next,
                value,
            };
            let event_type = match (&current, req.delete) {
                (_, true) => EventType::Deleted,
                (Some(_), false) => EventType::Modified,
                (None, false) => EventType::Added,
            };
            if let Some(cur) = current.as_ref().filter(|c| c.mod_revision <= compacted) {
                // The superseded value may be in no retained generation any more: log it
                // again so reads between the compaction point and now still find it.
                let t = if cur.create_revision == cur.mod_revision {
                    EventType::Added
                } else {
                    EventType::Modified
                };
                let (v, logical) = encode_version(t, &kb, cur, &mut self.compressor);
                log_batch.insert_logical(version_key(cur.mod_revision), v, logical);
                log_batch.insert(xref_key(&kb, cur.mod_revision), [0u8]);
            }
            let (v, logical) = encode_version(event_type, &kb, &record, &mut self.compressor);
            log_batch.insert_logical(version_key(next), v, logical);
            log_batch.insert(xref_key(&kb, next), [u8::from(req.delete)]);
            let lk = latest_key(&kb);
            if let Some(cur) = &current {
                latest_delta -= (lk.len() + cur.encoded_len()) as i64;
            }
            if req.delete {
                latest_batch.remove(lk);
            } else {
                latest_delta += (lk.len() + record.encoded_len()) as i64;
                latest_batch.insert(lk, record.encode());
                if current.is_none() {
                    let ik = index_key(&index_key_bytes(&req.key));
                    if !indexed.contains(&ik) && !latest.contains_key(&ik).unwrap_or(true) {
                        latest_delta += ik.len() as i64;
                    }
                    latest_batch.insert(ik.clone(), []);
                    indexed.insert(ik);
                }
            }
            overlay.insert(kb, (!req.delete).then(|| record.clone()));
            let kv = record.into_kv(req.key);
            events.push(Event {
                event_type,
                kv: kv.clone(),
                prev: current.map(|c| c.value),
            });
            replies.push((req.reply, Ok(kv)));
        }
        if rev > self.rev {
            let mk = meta_key(META_REVISION);
            if self.rev == 0 && !latest.contains_key(&mk).unwrap_or(true) {
                latest_delta += (mk.len() + 8) as i64;
            }
            latest_batch.insert_last(mk, encode_u64(rev));
            self.last_commit_millis = self.last_commit_millis.max(unix_millis());
            log_commit_time(&mut log_batch, rev, self.last_commit_millis);
            let writes = replies.len() as u64;
            let flush_started = std::time::Instant::now();
            let log_bytes = log_batch.bytes;
            let durable = self.log_group(log_batch);
            let stats = &self.shared.stats;
            stats.groups.fetch_add(1, Ordering::Relaxed);
            stats.writes.fetch_add(writes, Ordering::Relaxed);
            stats.flush_micros.fetch_add(
                flush_started.elapsed().as_micros() as u64,
                Ordering::Relaxed,
            );
            stats.max_group.fetch_max(writes, Ordering::Relaxed);
            if let Err(e) = durable {
                tracing::error!(error = %e, "commit failed; storage stops accepting writes");
                self.shared.failed.store(true, Ordering::Release);
                for (reply, result) in replies {
                    let _ = reply.send(result.and(Err(Error::Backend(e.to_string()))));
                }
                return;
            }
            // Committed. A failure from here on is repaired from the log at the next start.
            self.shared
                .log
                .note_commit(self.last_commit_millis, log_bytes);
            self.shared.add_latest_bytes(latest_delta);
            if let Err(e) = self.apply_latest(latest_batch) {
                tracing::error!(error = %e, "latest values not updated; storage stops accepting writes");
                self.shared.failed.store(true, Ordering::Release);
            }
            self.rev = rev;
            // Every batch up to `rev` is now durable and visible.
            self.shared.applied.store(rev, Ordering::Release);
            self.shared.current.store(rev, Ordering::Release);
        }
        for (reply, result) in replies {
            let _ = reply.send(result);
        }
        if !events.is_empty() {
            self.shared.hub.publish(events, rev);
        }
    }
}

impl Writer {
    /// Writes one group's log entries (its end marker last) into the current generation
    /// (starting a new one when due) and flushes the log: the commit point.
    fn log_group(&self, batch: SizedBatch) -> sled::Result<()> {
        let log = &self.shared.log;
        let mut gen = log.current();
        if self.compactor.rotation_due(&gen, self.rev) {
            if let Some(next) = log
                .try_rotate(self.rev + 1)
                .map_err(|e| sled::Error::Unsupported(e.to_string()))?
            {
                gen = next;
            }
        }
        gen.add_bytes(batch.bytes);
        self.apply(Target::Log, &gen.tree, batch.ops)?;
        // A group is in one generation: flushing its database is the commit point.
        gen.flush()
    }

    /// Writes one committed group's latest values, the revision counter last.
    fn apply_latest(&self, batch: Ops) -> sled::Result<()> {
        #[cfg(test)]
        if self.shared.skip_latest.load(Ordering::Acquire) {
            return Ok(());
        }
        self.shared
            .latest_store
            .apply(batch, self.before(Target::Latest))
    }

    /// Runs before each write to a tree (test hooks).
    fn before(&self, target: Target) -> impl FnMut(usize) -> sled::Result<()> + '_ {
        #[cfg(test)]
        let before = move |i| {
            let mut hook = self
                .shared
                .apply_hook
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            hook.as_mut().map_or(Ok(()), |h| h(target, i))
        };
        #[cfg(not(test))]
        let before = move |_| {
            let _ = (self, target);
            Ok(())
        };
        before
    }

    /// How long to wait for work: until the compactor's next plan, or a moment while the
    /// latest database is being rebuilt (its steps run between groups).
    fn wait(&self) -> std::time::Duration {
        let wait = self.compactor.wait();
        if self.shared.latest_store.rebuilding() {
            wait.min(std::time::Duration::from_millis(5))
        } else {
            wait
        }
    }

    fn apply(&self, target: Target, tree: &sled::Tree, ops: Ops) -> sled::Result<()> {
        ops.apply(tree, self.before(target))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn rec(m: Revision) -> Record {
        Record {
            tombstone: false,
            create_revision: 1,
            mod_revision: m,
            value: Bytes::new(),
        }
    }

    #[test]
    fn preconditions() {
        use Precondition::*;
        assert!(check(false, MustNotExist, None).is_ok());
        assert!(matches!(
            check(false, MustNotExist, Some(&rec(2))),
            Err(Error::AlreadyExists)
        ));
        assert!(matches!(
            check(false, MustExist, None),
            Err(Error::NotFound)
        ));
        assert!(check(false, MustExist, Some(&rec(2))).is_ok());
        assert!(check(false, ModRevision(2), Some(&rec(2))).is_ok());
        assert!(matches!(
            check(false, ModRevision(1), Some(&rec(2))),
            Err(Error::Conflict { current: 2 })
        ));
        assert!(matches!(
            check(false, ModRevision(1), None),
            Err(Error::NotFound)
        ));
        assert!(matches!(check(true, MustExist, None), Err(Error::NotFound)));
        assert!(matches!(
            check(true, MustNotExist, None),
            Err(Error::NotFound)
        ));
        assert!(check(true, ModRevision(2), Some(&rec(2))).is_ok());
    }
}
