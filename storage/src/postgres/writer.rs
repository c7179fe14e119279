//! The single writer task of a [`super::PostgresStorage`]: group commit.
//!
//! Requests queue on a channel; the task takes every write waiting (up to
//! [`crate::MAX_WRITE_GROUP`]) and commits them in one transaction:
//! 1. lock the `kplane_meta` row (`SELECT ... FOR UPDATE`): the revision counter. Every
//!    writer of the database, in any process, takes this lock before assigning revisions
//!    and holds it until its commit, so revisions commit in revision order and a reader
//!    that sees revision `r` committed sees every revision below it (no gaps to detect);
//! 2. read the current rows of the group's keys in one statement;
//! 3. check each write's precondition and run its encoder in order, in memory, each
//!    successful write taking the next revision (a failed precondition or encoder takes
//!    none and fails that write only);
//! 4. write the latest values, the log rows and the counter (with `NOTIFY kplane_log`) with
//!    one statement each, all sent at once (pipelined), and commit. Only then are the
//!    writes published ([`super::publish`], after any earlier revisions this process has
//!    not published yet) and acknowledged.
//!
//! A commit whose outcome is unknown (the connection broke during `COMMIT`) is reported as
//! an error, never as a success; the log tailer publishes its revisions from the log if it
//! did commit.
//! [`delete_batch`] is the same transaction for one batch of a cluster delete (never
//! fenced), [`fence`] the one of a fence: writes into a fenced cluster fail in step 3
//! with [`Error::Fenced`], from the fence table read in step 2 under the lock.
//!
//! A counter found below this process's position in step 1 means the database lost
//! revisions it published (a failover): the same transaction first raises the counter
//! past the position with one gap row ([`super::lost`]), so the group's revisions follow
//! every revision a client of this process saw; the gap is published before the group.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use deadpool_postgres::{GenericClient, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::counter::finish;
use super::errors::pg_err;
use super::lost::{Entry, Gap};
use super::publish::{self, Outcome};
use super::schema::{event_code, from_rev};
use super::shared::Shared;
use super::sql::{key_arrays, kv, KEY_COLS};
use super::tail;
use super::transaction::{commit, lock_revision, publish_gap};
use crate::range::Tombstone;
use crate::{
    Encoder, Error, Event, EventType, Key, KeyValue, Precondition, Result, Revision,
    MAX_WRITE_GROUP,
};

/// One write waiting for the writer.
pub(crate) struct WriteRequest {
    pub(crate) key: Key,
    pub(crate) delete: bool,
    pub(crate) precondition: Precondition,
    pub(crate) encode: Encoder,
    pub(crate) reply: oneshot::Sender<Result<KeyValue>>,
}

/// One batch of [`crate::Storage::delete_cluster`].
pub(crate) struct DeleteBatch {
    pub(crate) cluster: String,
    pub(crate) limit: usize,
    pub(crate) tombstone: Tombstone,
    pub(crate) reply: oneshot::Sender<Result<u64>>,
}

pub(crate) enum Request {
    Write(WriteRequest),
    DeleteBatch(DeleteBatch),
}

/// Runs until every sender is gone, then returns (the queue drained).
pub(crate) async fn run(shared: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<Request>) {
    let mut next: Option<Request> = None;
    loop {
        let first = match next.take() {
            Some(r) => r,
            None => match rx.recv().await {
                Some(r) => r,
                None => return,
            },
        };
        match first {
            Request::DeleteBatch(d) => {
                let res = delete_batch(&shared, &d.cluster, d.limit, &d.tombstone).await;
                let _ = d.reply.send(res);
            }
            Request::Write(w) => {
                let mut group = vec![w];
                while group.len() < MAX_WRITE_GROUP {
                    match rx.try_recv() {
                        Ok(Request::Write(w)) => group.push(w),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                commit_group(&shared, group).await;
            }
        }
    }
}

fn check(delete: bool, pre: Precondition, current: Option<&KeyValue>) -> Result<()> {
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

/// The rows a group writes: its log entries and the final state of the keys it touched.
#[derive(Default)]
struct Changes {
    events: Vec<Event>,
    /// `(create_revision, mod_revision)` of each event's previous version.
    prev_revs: Vec<Option<(Revision, Revision)>>,
    /// Every key a successful write touched (its final state is in the group's state map).
    touched: BTreeSet<Key>,
}

impl Changes {
    fn push(&mut self, event_type: EventType, kv: KeyValue, prev: Option<&KeyValue>) {
        self.touched.insert(kv.key.clone());
        self.prev_revs
            .push(prev.map(|p| (p.create_revision, p.mod_revision)));
        self.events.push(Event {
            event_type,
            kv,
            prev: prev.map(|p| p.value.clone()),
        });
    }
}

async fn commit_group(shared: &Shared, group: Vec<WriteRequest>) {
    let started = Instant::now();
    let n = group.len() as u64;
    let mut replies = Vec::with_capacity(group.len());
    let mut ops = Vec::with_capacity(group.len());
    for w in group {
        replies.push(w.reply);
        ops.push((w.key, w.delete, w.precondition, w.encode));
    }
    match apply_group(shared, ops).await {
        Ok((results, base, entries)) => {
            if let Some(last) = entries.last().map(Entry::revision) {
                publish_group(shared, base, entries, last).await;
                let c = &shared.stats;
                c.groups.fetch_add(1, Ordering::Relaxed);
                c.writes.fetch_add(n, Ordering::Relaxed);
                c.max_group.fetch_max(n, Ordering::Relaxed);
                let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                c.micros.fetch_add(micros, Ordering::Relaxed);
            }
            for (reply, res) in replies.into_iter().zip(results) {
                let _ = reply.send(res);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, writes = n, "postgres storage: a write group failed");
            for reply in replies {
                let _ = reply.send(Err(clone_err(&e)));
            }
        }
    }
}

/// The same error for every write of a failed group.
fn clone_err(e: &Error) -> Error {
    match e {
        Error::Timeout(m) => Error::Timeout(m.clone()),
        Error::ShuttingDown => Error::ShuttingDown,
        other => Error::Backend(other.to_string()),
    }
}

/// After a commit on `client`: publishes what the database committed up to `base` (the
/// revision the group started from) that this process has not published yet, usually
/// other processes' writes since its last publish, in one statement on the same
/// connection. Best effort: [`publish_group`] falls back to the tailer's catch-up.
async fn catch_up_before(shared: &Shared, client: &deadpool_postgres::Object, base: Revision) {
    if shared.current_revision() >= base {
        return;
    }
    if let Err(e) = tail::catch_up_to(shared, client, base).await {
        tracing::debug!(error = %e, "postgres storage: reading the log before a group failed");
    }
}

/// Publishes a committed group (revisions `(base, last]`) through the one publish path,
/// after whatever the database committed up to `base` that this process has not published
/// (normally done by [`catch_up_before`]; here the tailer's catch-up, which also resyncs).
/// A failure here loses nothing: the writes are committed and the tailer publishes them
/// from the log.
async fn publish_group(shared: &Shared, base: Revision, entries: Vec<Entry>, last: Revision) {
    if shared.current_revision() < base {
        if let Err(e) = tail::catch_up(shared).await {
            tracing::debug!(error = %e, "postgres storage: catching up before publishing failed");
        }
    }
    match publish::publish(shared, entries, base, last) {
        Ok(Outcome::Done) => {}
        Ok(Outcome::Deferred { position }) => {
            tracing::debug!(
                position,
                base,
                "postgres storage: a group left to the log tailer (revisions before it are not published yet)"
            );
            shared.tail_wake.notify_one();
        }
        Err(e) => {
            tracing::error!(error = %e, "postgres storage: publishing a committed group failed");
            shared.tail_wake.notify_one();
        }
    }
}

/// Loads the current rows of `keys`.
async fn load(tx: &Transaction<'_>, keys: &BTreeSet<&Key>) -> Result<HashMap<Key, KeyValue>> {
    let [c, r, ns, n] = key_arrays(keys.iter().copied());
    let stmt = tx
        .prepare_cached(
            "SELECT o.cluster, o.resource, o.namespace, o.name, o.value, o.create_revision, \
             o.mod_revision FROM kplane_objects o \
             JOIN unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[]) AS k(c, r, ns, n) \
             ON o.cluster = k.c AND o.resource = k.r AND o.namespace = k.ns AND o.name = k.n",
        )
        .await
        .map_err(pg_err)?;
    let rows = tx.query(&stmt, &[&c, &r, &ns, &n]).await.map_err(pg_err)?;
    let mut out = HashMap::with_capacity(rows.len());
    for row in rows {
        let kv = kv(&row)?;
        out.insert(kv.key.clone(), kv);
    }
    Ok(out)
}

/// The clusters of `keys` that are fenced (read under the revision lock).
async fn fenced_clusters(tx: &Transaction<'_>, keys: &BTreeSet<&Key>) -> Result<BTreeSet<String>> {
    let clusters: BTreeSet<&[u8]> = keys.iter().map(|k| k.cluster.as_bytes()).collect();
    let clusters: Vec<&[u8]> = clusters.into_iter().collect();
    let stmt = tx
        .prepare_cached("SELECT cluster FROM kplane_fences WHERE cluster = ANY($1::bytea[])")
        .await
        .map_err(pg_err)?;
    let rows = tx.query(&stmt, &[&clusters]).await.map_err(pg_err)?;
    Ok(rows
        .iter()
        .map(|r| String::from_utf8_lossy(r.get::<_, &[u8]>(0)).into_owned())
        .collect())
}

/// [`crate::Storage::fence_cluster`]: sets or lifts the fence of `cluster` under the
/// revision lock, so it orders exactly between two write groups, and returns the revision
/// the database is at (every write before the fence is at or below it).
pub(crate) async fn fence(shared: &Shared, cluster: &str, fenced: bool) -> Result<Revision> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(pg_err)?;
    let locked = lock_revision(shared, &tx).await?;
    let sql = if fenced {
        "INSERT INTO kplane_fences (cluster) VALUES ($1) ON CONFLICT (cluster) DO NOTHING"
    } else {
        "DELETE FROM kplane_fences WHERE cluster = $1"
    };
    let stmt = tx.prepare_cached(sql).await.map_err(pg_err)?;
    tx.execute(&stmt, &[&cluster.as_bytes()])
        .await
        .map_err(pg_err)?;
    if let Err(e) = commit(shared, tx).await {
        // Perhaps mid-commit: the connection must not go back to the pool. The caller
        // retries (setting or lifting a fence is idempotent).
        drop(deadpool_postgres::Object::take(client));
        return Err(e);
    }
    if let Some(gap) = locked.gap {
        publish_gap(shared, locked.counter, gap);
    }
    Ok(locked.base)
}

type Op = (Key, bool, Precondition, Encoder);

/// Commits a group; returns each write's result, the counter before the group and the
/// entries to publish (a gap row if the group raised the counter, then its events).
async fn apply_group(
    shared: &Shared,
    ops: Vec<Op>,
) -> Result<(Vec<Result<KeyValue>>, Revision, Vec<Entry>)> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(pg_err)?;
    let locked = lock_revision(shared, &tx).await?;
    let base = locked.base;
    let keys: BTreeSet<&Key> = ops.iter().map(|op| &op.0).collect();
    // After the lock: a fence committed before it is seen, one after it orders after
    // this group (both statements sent at once).
    let (loaded, fenced) = tokio::try_join!(load(&tx, &keys), fenced_clusters(&tx, &keys))?;
    let mut state: HashMap<Key, Option<KeyValue>> =
        loaded.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let mut rev = base;
    let mut changes = Changes::default();
    let mut results = Vec::with_capacity(ops.len());
    for (key, delete, precondition, encode) in ops {
        if fenced.contains(key.cluster.as_str()) {
            results.push(Err(Error::Fenced {
                cluster: key.cluster.clone(),
            }));
            continue;
        }
        let cur = state.get(&key).cloned().flatten();
        if let Err(e) = check(delete, precondition, cur.as_ref()) {
            results.push(Err(e));
            continue;
        }
        let next = rev + 1;
        let value = match encode(next) {
            Ok(v) => Bytes::from(v),
            Err(m) => {
                results.push(Err(Error::Encode(m)));
                continue;
            }
        };
        rev = next;
        let kv = KeyValue {
            key: key.clone(),
            value,
            create_revision: cur.as_ref().map_or(next, |c| c.create_revision),
            mod_revision: next,
        };
        let ty = match (delete, &cur) {
            (true, _) => EventType::Deleted,
            (false, Some(_)) => EventType::Modified,
            (false, None) => EventType::Added,
        };
        changes.push(ty, kv.clone(), cur.as_ref());
        state.insert(key, (!delete).then(|| kv.clone()));
        results.push(Ok(kv));
    }
    if changes.events.is_empty() && locked.gap.is_none() {
        tx.rollback().await.map_err(pg_err)?;
        return Ok((results, base, Vec::new()));
    }
    if !changes.events.is_empty() {
        write_changes(&tx, &changes, &state, rev).await?;
    }
    if let Err(e) = commit(shared, tx).await {
        // Perhaps mid-commit: the connection must not go back to the pool.
        drop(deadpool_postgres::Object::take(client));
        return Err(e);
    }
    catch_up_before(shared, &client, locked.counter).await;
    Ok((results, locked.counter, entries(locked.gap, changes.events)))
}

/// What a transaction publishes: its gap row, if it raised the counter, then its events.
fn entries(gap: Option<Gap>, events: Vec<Event>) -> Vec<Entry> {
    gap.map(Entry::Gap)
        .into_iter()
        .chain(events.into_iter().map(Entry::Event))
        .collect()
}

/// Writes the latest values, the log rows, the commit time and the counter.
async fn write_changes(
    tx: &Transaction<'_>,
    changes: &Changes,
    state: &HashMap<Key, Option<KeyValue>>,
    last: Revision,
) -> Result<()> {
    let (live, gone): (Vec<&Key>, Vec<&Key>) = changes
        .touched
        .iter()
        .partition(|k| state.get(*k).is_some_and(Option::is_some));
    // The statements touch disjoint rows: sent together (pipelined on the connection),
    // they cost one round trip instead of four.
    let upsert = async {
        if live.is_empty() {
            return Ok(());
        }
        upsert_objects(tx, &live, state).await
    };
    let delete = async {
        if gone.is_empty() {
            return Ok(());
        }
        delete_objects(tx, gone.iter().copied()).await
    };
    tokio::try_join!(upsert, delete, insert_log(tx, changes), finish(tx, last))?;
    Ok(())
}

/// Writes the latest values of `live` (keys whose final state in `state` is a value).
async fn upsert_objects(
    tx: &Transaction<'_>,
    live: &[&Key],
    state: &HashMap<Key, Option<KeyValue>>,
) -> Result<()> {
    let [c, r, ns, n] = key_arrays(live.iter().copied());
    let mut values = Vec::with_capacity(live.len());
    let mut creates = Vec::with_capacity(live.len());
    let mut mods = Vec::with_capacity(live.len());
    for k in live {
        if let Some(Some(kv)) = state.get(*k) {
            values.push(kv.value.to_vec());
            creates.push(from_rev(kv.create_revision)?);
            mods.push(from_rev(kv.mod_revision)?);
        }
    }
    let stmt = tx
        .prepare_cached(&format!(
            "INSERT INTO kplane_objects ({KEY_COLS}, value, create_revision, mod_revision) \
             SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[], \
             $5::bytea[], $6::bigint[], $7::bigint[]) \
             ON CONFLICT ({KEY_COLS}) DO UPDATE SET value = EXCLUDED.value, \
             create_revision = EXCLUDED.create_revision, mod_revision = EXCLUDED.mod_revision"
        ))
        .await
        .map_err(pg_err)?;
    tx.execute(&stmt, &[&c, &r, &ns, &n, &values, &creates, &mods])
        .await
        .map_err(pg_err)?;
    Ok(())
}

async fn delete_objects<'a>(
    tx: &Transaction<'_>,
    keys: impl Iterator<Item = &'a Key>,
) -> Result<()> {
    let [c, r, ns, n] = key_arrays(keys);
    let stmt = tx
        .prepare_cached(
            "DELETE FROM kplane_objects o \
             USING unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::bytea[]) AS k(c, r, ns, n) \
             WHERE o.cluster = k.c AND o.resource = k.r AND o.namespace = k.ns AND o.name = k.n",
        )
        .await
        .map_err(pg_err)?;
    tx.execute(&stmt, &[&c, &r, &ns, &n])
        .await
        .map_err(pg_err)?;
    Ok(())
}

async fn insert_log(tx: &Transaction<'_>, changes: &Changes) -> Result<()> {
    let events = &changes.events;
    let mut revs = Vec::with_capacity(events.len());
    let mut types = Vec::with_capacity(events.len());
    let mut values = Vec::with_capacity(events.len());
    let mut creates = Vec::with_capacity(events.len());
    let mut prev_values: Vec<Option<Vec<u8>>> = Vec::with_capacity(events.len());
    let mut prev_creates: Vec<Option<i64>> = Vec::with_capacity(events.len());
    let mut prev_mods: Vec<Option<i64>> = Vec::with_capacity(events.len());
    for (e, prev) in events.iter().zip(&changes.prev_revs) {
        revs.push(from_rev(e.kv.mod_revision)?);
        types.push(event_code(e.event_type));
        values.push(e.kv.value.to_vec());
        creates.push(from_rev(e.kv.create_revision)?);
        prev_values.push(e.prev.as_ref().map(|p| p.to_vec()));
        prev_creates.push(prev.map(|p| from_rev(p.0)).transpose()?);
        prev_mods.push(prev.map(|p| from_rev(p.1)).transpose()?);
    }
    let [c, r, ns, n] = key_arrays(events.iter().map(|e| &e.kv.key));
    let stmt = tx
        .prepare_cached(&format!(
            "INSERT INTO kplane_log (revision, event, {KEY_COLS}, value, create_revision, \
             prev_value, prev_create_revision, prev_mod_revision) \
             SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bytea[], $4::bytea[], \
             $5::bytea[], $6::bytea[], $7::bytea[], $8::bigint[], $9::bytea[], $10::bigint[], \
             $11::bigint[])"
        ))
        .await
        .map_err(pg_err)?;
    tx.execute(
        &stmt,
        &[
            &revs,
            &types,
            &c,
            &r,
            &ns,
            &n,
            &values,
            &creates,
            &prev_values,
            &prev_creates,
            &prev_mods,
        ],
    )
    .await
    .map_err(pg_err)?;
    Ok(())
}

/// Deletes up to `limit` keys of `cluster` in one transaction, each at its own revision
/// with the tombstone `tombstone` makes; all or nothing. Returns how many it deleted.
pub(crate) async fn delete_batch(
    shared: &Shared,
    cluster: &str,
    limit: usize,
    tombstone: &Tombstone,
) -> Result<u64> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(pg_err)?;
    let locked = lock_revision(shared, &tx).await?;
    let base = locked.base;
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {KEY_COLS}, value, create_revision, mod_revision FROM kplane_objects \
             WHERE cluster = $1 ORDER BY {KEY_COLS} LIMIT $2"
        ))
        .await
        .map_err(pg_err)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = tx
        .query(&stmt, &[&cluster.as_bytes(), &limit])
        .await
        .map_err(pg_err)?;
    if rows.is_empty() {
        let Some(gap) = locked.gap else {
            tx.rollback().await.map_err(pg_err)?;
            return Ok(0);
        };
        if let Err(e) = commit(shared, tx).await {
            drop(deadpool_postgres::Object::take(client));
            return Err(e);
        }
        publish_gap(shared, locked.counter, gap);
        return Ok(0);
    }
    let mut changes = Changes::default();
    let mut rev = base;
    for row in &rows {
        let old = kv(row)?;
        rev += 1;
        let value = tombstone(&old, rev).map_err(Error::Encode)?;
        let dead = KeyValue {
            key: old.key.clone(),
            value: Bytes::from(value),
            create_revision: old.create_revision,
            mod_revision: rev,
        };
        changes.push(EventType::Deleted, dead, Some(&old));
    }
    tokio::try_join!(
        delete_objects(&tx, changes.touched.iter()),
        insert_log(&tx, &changes),
        finish(&tx, rev)
    )?;
    if let Err(e) = commit(shared, tx).await {
        // Perhaps mid-commit: the connection must not go back to the pool.
        drop(deadpool_postgres::Object::take(client));
        return Err(e);
    }
    catch_up_before(shared, &client, locked.counter).await;
    let n = changes.events.len() as u64;
    publish_group(
        shared,
        locked.counter,
        entries(locked.gap, changes.events),
        rev,
    )
    .await;
    shared.stats.groups.fetch_add(1, Ordering::Relaxed);
    shared.stats.writes.fetch_add(n, Ordering::Relaxed);
    Ok(n)
}
