//! A database that went back in revisions (a failover to a standby that had not received
//! the last commits): the lost revisions become a permanent gap that no write reuses and
//! no reader waits on.
//!
//! - **Detection.** A process whose position (the revision it published) is above the
//!   database's counter, read under the counter row's lock, knows the database lost
//!   revisions it published ([`super::transaction::lock_revision`], used by the writer and by
//!   the tailer when it sees the counter below the position).
//! - **The raise.** In the same transaction, still under the lock, it writes ONE log row of
//!   kind [`GAP_EVENT`] at the revision after its position `p` (`at = p + 1`), recording that
//!   revisions `from..=p` are lost, and moves the counter to `at`. So the next write takes
//!   `at + 1`, above everything any client of this process saw, and however many revisions
//!   were lost, the gap costs one row. `from` is the counter's next revision, or earlier
//!   where the database's rows differ from what this process published recently
//!   ([`Recent`]: another replica raised before it, or wrote over revisions it had
//!   published), so the range covers every revision this process published that the
//!   database does not hold as published.
//! - **Contiguity.** Every revision is still accounted for by exactly one log row or one
//!   gap row's range, in order, so the tailer's rule ("the next revision not there yet is
//!   not committed yet") holds: a gap row continues the position when its range starts at
//!   or before the next revision ([`super::publish::publish`]).
//! - **Every process** that publishes a gap row whose range starts at or below its
//!   position (it published lost revisions) closes its watchers and clears its GET cache;
//!   its position does not move back: it moves to the gap row's revision.
//! - **Readers.** Every process keeps the lost ranges it has seen ([`LostRanges`], loaded
//!   at open from the log's gap rows): a read or watch at a revision in one fails like a
//!   compacted one (410 Gone: the client relists, dropping what it saw of the lost writes).
//!   The state at a gap row's own revision is the state before its range: nothing happened
//!   there, and a watch replaying across it receives the next change after it.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hasher};
use std::sync::Mutex;

use deadpool_postgres::{GenericClient, Transaction};

use super::counter::finish;
use super::errors::pg_err;
use super::schema::{event_code, from_rev, to_rev};
use crate::{Error, Event, Result, Revision};

/// `kplane_log.event` of a gap row: revisions `create_revision..revision` (exclusive) are
/// lost; its own revision is a no-op. Its key parts and value are empty.
pub(crate) const GAP_EVENT: i16 = 3;

/// How many recently published revisions a process remembers to find where the database
/// diverged from what it published.
pub(crate) const RECENT: usize = 4096;

/// A gap row: revisions `from..at` (exclusive) are lost; `at` is the row's revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) from: Revision,
    pub(crate) at: Revision,
}

/// One revision of the log as the tailer and the writer publish it.
#[derive(Debug)]
pub(crate) enum Entry {
    Event(Event),
    Gap(Gap),
}

impl Entry {
    pub(crate) fn revision(&self) -> Revision {
        match self {
            Entry::Event(e) => e.kv.mod_revision,
            Entry::Gap(g) => g.at,
        }
    }

    fn fingerprint(&self) -> u64 {
        match self {
            Entry::Event(e) => fingerprint(
                event_code(e.event_type),
                [
                    e.kv.key.cluster.as_bytes(),
                    e.kv.key.resource.as_bytes(),
                    e.kv.key.namespace.as_bytes(),
                    e.kv.key.name.as_bytes(),
                ],
                e.kv.create_revision,
                e.kv.value.len(),
            ),
            Entry::Gap(g) => fingerprint(GAP_EVENT, [&[]; 4], g.from, 0),
        }
    }
}

/// What identifies a log row for the comparison of [`Recent`] with the database: its
/// kind, key, creation revision and value length.
fn fingerprint(code: i16, key: [&[u8]; 4], create: Revision, value_len: usize) -> u64 {
    let mut h = DefaultHasher::new();
    h.write_i16(code);
    for part in key {
        h.write_usize(part.len());
        h.write(part);
    }
    h.write_u64(create);
    h.write_usize(value_len);
    h.finish()
}

/// The fingerprints of the last [`RECENT`] revisions this process published, guarded by
/// the publish lock.
#[derive(Default)]
pub(crate) struct Recent {
    entries: VecDeque<(Revision, u64)>,
}

impl Recent {
    pub(crate) fn push(&mut self, e: &Entry) {
        if self.entries.len() >= RECENT {
            self.entries.pop_front();
        }
        self.entries.push_back((e.revision(), e.fingerprint()));
    }

    /// Forgets the revisions from `from` on (they are lost).
    pub(crate) fn truncate_from(&mut self, from: Revision) {
        while self.entries.back().is_some_and(|(r, _)| *r >= from) {
            self.entries.pop_back();
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<(Revision, u64)> {
        self.entries.iter().copied().collect()
    }

    /// The fingerprint of what was published at `rev`, if it is the last one remembered.
    pub(crate) fn last_at(&self, rev: Revision) -> Option<u64> {
        self.entries
            .back()
            .filter(|(r, _)| *r == rev)
            .map(|(_, fp)| *fp)
    }
}

/// The lost revision ranges (`from..=last`) this process knows of.
#[derive(Default)]
pub(crate) struct LostRanges {
    ranges: Mutex<Vec<(Revision, Revision)>>,
}

impl LostRanges {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Revision, Revision)>> {
        self.ranges
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn record(&self, g: Gap) {
        if g.from < g.at {
            let range = (g.from, g.at - 1);
            let mut ranges = self.lock();
            if !ranges.contains(&range) {
                ranges.push(range);
            }
        }
    }

    /// The gap row's revision of a lost range holding `rev`, if any.
    pub(crate) fn covering(&self, rev: Revision) -> Option<Revision> {
        self.lock()
            .iter()
            .find(|(from, last)| *from <= rev && rev <= *last)
            .map(|(_, last)| last + 1)
    }

    /// Drops the ranges entirely below the compaction point (reads there fail anyway).
    pub(crate) fn prune(&self, compacted: Revision) {
        self.lock().retain(|(_, last)| *last >= compacted);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The gap rows of the log above `compacted` (a partial index holds them).
pub(crate) async fn load(client: &impl GenericClient, compacted: Revision) -> Result<Vec<Gap>> {
    let stmt = client
        .prepare_cached(
            "SELECT create_revision, revision FROM kplane_log \
             WHERE event = 3 AND revision > $1 ORDER BY revision",
        )
        .await
        .map_err(pg_err)?;
    let rows = client
        .query(&stmt, &[&from_rev(compacted)?])
        .await
        .map_err(pg_err)?;
    rows.iter()
        .map(|r| {
            Ok(Gap {
                from: to_rev(r.try_get(0).map_err(pg_err)?)?,
                at: to_rev(r.try_get(1).map_err(pg_err)?)?,
            })
        })
        .collect()
}

/// The one row (or none) statement `sql` returns for revision `rev` (its only parameter).
async fn row_for(
    client: &impl GenericClient,
    sql: &str,
    rev: Revision,
) -> Result<Option<tokio_postgres::Row>> {
    let stmt = client.prepare_cached(sql).await.map_err(pg_err)?;
    client
        .query_opt(&stmt, &[&from_rev(rev)?])
        .await
        .map_err(pg_err)
}

/// The gap row whose lost range holds `rev`, if the database has one (for a revision
/// above this process's position, from another replica's client).
pub(crate) async fn find_covering(
    client: &impl GenericClient,
    rev: Revision,
) -> Result<Option<Gap>> {
    let sql = "SELECT create_revision, revision FROM kplane_log \
               WHERE event = 3 AND revision > $1 AND create_revision <= $1 \
               ORDER BY revision LIMIT 1";
    let Some(row) = row_for(client, sql, rev).await? else {
        return Ok(None);
    };
    Ok(Some(Gap {
        from: to_rev(row.try_get(0).map_err(pg_err)?)?,
        at: to_rev(row.try_get(1).map_err(pg_err)?)?,
    }))
}

/// Under the counter row's lock, with the counter at `counter` below `position` (the
/// revision this process published): writes the gap row at `position + 1` and moves the
/// counter there. `recent` is what this process published lately, `compacted` the
/// database's compaction point. Returns the gap; the caller commits and publishes it.
pub(crate) async fn raise(
    tx: &Transaction<'_>,
    counter: Revision,
    position: Revision,
    compacted: Revision,
    recent: &[(Revision, u64)],
) -> Result<Gap> {
    let at = position
        .checked_add(1)
        .ok_or_else(|| Error::Backend("revision out of range".into()))?;
    let from = diverged(tx, counter, compacted, recent).await?;
    tracing::error!(
        database = counter,
        published = position,
        lost_from = from,
        lost_through = position,
        gap_row = at,
        "postgres storage: the database went back in revisions: it is at revision {counter}, \
         this process published up to {position} (a failover to a standby that had not \
         received them; acknowledged writes among them are lost). Revisions {from}..={position} \
         are recorded as lost (one gap row at {at}); writes continue after it, reads and \
         watches at a lost revision get 410 Gone, and every replica closes its watchers"
    );
    let gap = Gap { from, at };
    write_gap(tx, gap).await?;
    Ok(gap)
}

/// Writes the gap row and moves the counter to it (under the counter row's lock).
async fn write_gap(tx: &Transaction<'_>, gap: Gap) -> Result<()> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO kplane_log (revision, event, cluster, resource, namespace, name, \
             value, create_revision) VALUES ($1, 3, '', '', '', '', '', $2)",
        )
        .await
        .map_err(pg_err)?;
    tx.execute(&stmt, &[&from_rev(gap.at)?, &from_rev(gap.from)?])
        .await
        .map_err(pg_err)?;
    finish(tx, gap.at).await
}

/// Under the counter row's lock, with the counter at `counter` at or above `position`
/// but the database's row at `position` not the one this process published there
/// (another replica, which had not seen the lost revisions, wrote over them before this
/// one noticed): records the revisions from the first that differs as lost, with a gap
/// row after the counter, unless a gap row already does. Returns the gap written, if any.
pub(crate) async fn realign(
    tx: &Transaction<'_>,
    counter: Revision,
    position: Revision,
    compacted: Revision,
    recent: &[(Revision, u64)],
) -> Result<Option<Gap>> {
    let from = diverged(tx, counter, compacted, recent).await?;
    if from > position {
        // The database holds what this process published, after all.
        return Ok(None);
    }
    if find_covering(tx, from)
        .await?
        .is_some_and(|g| g.at > position)
    {
        // Another gap row tells every replica already.
        return Ok(None);
    }
    let at = counter
        .checked_add(1)
        .ok_or_else(|| Error::Backend("revision out of range".into()))?;
    tracing::error!(
        database = counter,
        published = position,
        lost_from = from,
        gap_row = at,
        "postgres storage: the database holds other writes at revisions this process \
         published (from {from} on: a failover lost them and another replica wrote over \
         them before this one noticed). Revisions {from}..={counter} are recorded as lost \
         (one gap row at {at}): reads and watches there get 410 Gone, and every replica \
         closes its watchers"
    );
    let gap = Gap { from, at };
    write_gap(tx, gap).await?;
    Ok(Some(gap))
}

/// Whether the log's row at `rev` is the one with fingerprint `fp` (what this process
/// published there).
pub(crate) async fn holds(client: &impl GenericClient, rev: Revision, fp: u64) -> Result<bool> {
    let sql = "SELECT event, cluster, resource, namespace, name, create_revision, \
               octet_length(value) FROM kplane_log WHERE revision = $1";
    let Some(row) = row_for(client, sql, rev).await? else {
        return Ok(false);
    };
    let part = |i: usize| -> Result<&[u8]> { row.try_get(i).map_err(pg_err) };
    let len: i32 = row.try_get(6).map_err(pg_err)?;
    Ok(fingerprint(
        row.try_get(0).map_err(pg_err)?,
        [part(1)?, part(2)?, part(3)?, part(4)?],
        to_rev(row.try_get(5).map_err(pg_err)?)?,
        usize::try_from(len).unwrap_or(0),
    ) == fp)
}

/// The first revision this process published that the database does not hold as
/// published: the counter's next revision, or the first of `recent` (at or below the
/// counter, above the compaction point) whose log row differs or is gone.
async fn diverged(
    tx: &Transaction<'_>,
    counter: Revision,
    compacted: Revision,
    recent: &[(Revision, u64)],
) -> Result<Revision> {
    let candidates: Vec<(Revision, u64)> = recent
        .iter()
        .copied()
        .filter(|(r, _)| *r > compacted && *r <= counter)
        .collect();
    let Some(first) = candidates.first().map(|(r, _)| *r) else {
        return Ok(counter + 1);
    };
    let stmt = tx
        .prepare_cached(
            "SELECT revision, event, cluster, resource, namespace, name, create_revision, \
             octet_length(value) FROM kplane_log \
             WHERE revision >= $1 AND revision <= $2 ORDER BY revision",
        )
        .await
        .map_err(pg_err)?;
    let rows = tx
        .query(&stmt, &[&from_rev(first)?, &from_rev(counter)?])
        .await
        .map_err(pg_err)?;
    let mut db = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        let rev = to_rev(row.try_get(0).map_err(pg_err)?)?;
        let code: i16 = row.try_get(1).map_err(pg_err)?;
        let part = |i: usize| -> Result<&[u8]> { row.try_get(i).map_err(pg_err) };
        let len: i32 = row.try_get(7).map_err(pg_err)?;
        let fp = fingerprint(
            code,
            [part(2)?, part(3)?, part(4)?, part(5)?],
            to_rev(row.try_get(6).map_err(pg_err)?)?,
            usize::try_from(len).unwrap_or(0),
        );
        db.insert(rev, fp);
    }
    Ok(candidates
        .iter()
        .find(|(r, fp)| db.get(r) != Some(fp))
        .map_or(counter + 1, |(r, _)| *r))
}

/// A key's parts as the fingerprint takes them (for tests).
#[cfg(test)]
fn key_parts(k: &crate::Key) -> [&[u8]; 4] {
    [
        k.cluster.as_bytes(),
        k.resource.as_bytes(),
        k.namespace.as_bytes(),
        k.name.as_bytes(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventType, Key, KeyValue};

    fn event(rev: Revision, name: &str) -> Entry {
        Entry::Event(Event {
            event_type: EventType::Added,
            kv: KeyValue {
                key: Key {
                    cluster: "c".into(),
                    resource: "r".into(),
                    namespace: "n".into(),
                    name: name.into(),
                },
                value: bytes::Bytes::from_static(b"v"),
                create_revision: rev,
                mod_revision: rev,
            },
            prev: None,
        })
    }

    #[test]
    fn fingerprints_match_the_database_form() {
        let e = event(7, "a");
        let Entry::Event(ev) = &e else { unreachable!() };
        let db = fingerprint(0, key_parts(&ev.kv.key), 7, 1);
        assert_eq!(e.fingerprint(), db);
        assert_ne!(event(7, "b").fingerprint(), db);
        let g = Entry::Gap(Gap { from: 3, at: 9 });
        assert_eq!(g.fingerprint(), fingerprint(GAP_EVENT, [&[]; 4], 3, 0));
    }

    #[test]
    fn recent_is_bounded_and_forgets_lost_revisions() {
        let mut r = Recent::default();
        for rev in 1..=(RECENT as u64 + 10) {
            r.push(&event(rev, "k"));
        }
        let snap = r.snapshot();
        assert_eq!(snap.len(), RECENT);
        assert_eq!(snap[0].0, 11);
        r.truncate_from(100);
        assert_eq!(r.snapshot().last().map(|e| e.0), Some(99));
    }

    #[test]
    fn lost_ranges_cover_their_revisions_only() {
        let l = LostRanges::default();
        l.record(Gap { from: 5, at: 9 });
        l.record(Gap { from: 5, at: 9 });
        l.record(Gap { from: 12, at: 12 });
        assert_eq!(l.len(), 1);
        assert_eq!(l.covering(4), None);
        assert_eq!(l.covering(5), Some(9));
        assert_eq!(l.covering(8), Some(9));
        assert_eq!(l.covering(9), None);
        l.prune(9);
        assert_eq!(l.covering(8), None);
    }
}
