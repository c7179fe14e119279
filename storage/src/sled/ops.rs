//! Ordered writes to a sled tree without sled batches.
//!
//! sled 0.34 guards its trees with one process-wide `concurrency_control` lock that starts
//! out disabled: until the first `Tree::apply_batch` (or transaction, or checksum) of the
//! process, reads and single-key writes only count themselves in an atomic. The first
//! batch switches the process to a parking_lot `RwLock` for good: every read then takes a
//! read guard, every batch the write guard, so any read in the process (whatever tree,
//! database or logical cluster) waits while a batch is applied, and behind a batch that is
//! itself waiting for a background flush holding a read guard. This backend therefore
//! never uses sled batches (clippy's `disallowed-methods` in `clippy.toml` keeps it so):
//! it writes each group's entries one by one (in key order, as a batch does, which keeps
//! consecutive writes on the same leaves), in an order that keeps readers and crash
//! recovery correct without atomic batches:
//!
//! - the log: a group's versions and their index entries (a version before its index
//!   entry), then its commit-time entry, the group's end marker; then the flush (the commit
//!   point). sled recovers a prefix of what was written, so after a crash a group whose
//!   marker is missing is incomplete and is removed at start-up
//!   ([`super::recovery::discard_incomplete`]); it was never acknowledged.
//! - the latest database (after the flush): the values and index entries, then the
//!   revision counter, so a recovered counter means the entries before it are there too,
//!   and replay from it repairs the rest.
//!
//! Readers never rely on a group being applied at once: they read at a published revision
//! and check every latest value against it ([`super::read`]).

use sled::IVec;

/// Writes for one tree. [`Ops::apply`] writes them in key order, as a sled batch would
/// (consecutive writes reach the same leaves; of several writes to one key the last one
/// added wins), then the one added with [`Ops::insert_last`]. Callers rely on the key
/// order only where it is the tags' order: a log version (`V`) before its index entry
/// (`X`).
#[derive(Default)]
pub(crate) struct Ops {
    ops: Vec<(IVec, Option<IVec>)>,
    last: Option<(IVec, IVec)>,
}

/// Which tree [`Ops::apply`] is writing (for test hooks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Log,
    Latest,
}

impl Ops {
    pub(crate) fn insert(&mut self, k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) {
        self.ops
            .push((IVec::from(k.as_ref()), Some(IVec::from(v.as_ref()))));
    }

    pub(crate) fn remove(&mut self, k: impl AsRef<[u8]>) {
        self.ops.push((IVec::from(k.as_ref()), None));
    }

    /// Sets the insert written after all others (a group's end marker, a revision
    /// counter); replaces an earlier one.
    pub(crate) fn insert_last(&mut self, k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) {
        self.last = Some((IVec::from(k.as_ref()), IVec::from(v.as_ref())));
    }

    /// How many writes were added (those to the same key counted each).
    pub(crate) fn len(&self) -> usize {
        self.ops.len() + usize::from(self.last.is_some())
    }

    /// A copy of the writes to keys at or below `upto` (the one added with
    /// [`Ops::insert_last`] included when its key is): what a rebuild of the latest
    /// database mirrors into the part it has already copied ([`super::latest`]).
    pub(crate) fn clone_upto(&self, upto: &[u8]) -> Ops {
        Ops {
            ops: self
                .ops
                .iter()
                .filter(|(k, _)| k.as_ref() <= upto)
                .cloned()
                .collect(),
            last: self
                .last
                .as_ref()
                .filter(|(k, _)| k.as_ref() <= upto)
                .cloned(),
        }
    }

    /// Key order, the last write of each key only.
    fn sort(&mut self) {
        // Stable: writes to one key stay in the order they were added.
        self.ops.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(IVec, Option<IVec>)> = Vec::with_capacity(self.ops.len());
        for op in self.ops.drain(..) {
            match out.last_mut() {
                Some(prev) if prev.0 == op.0 => *prev = op,
                _ => out.push(op),
            }
        }
        self.ops = out;
    }

    /// Applies the writes (see [`Ops`] for the order); `before(i)` runs before the `i`-th
    /// and may stop the application with an error (test hooks simulate a crash between
    /// writes with it).
    pub(crate) fn apply(
        mut self,
        tree: &sled::Tree,
        mut before: impl FnMut(usize) -> sled::Result<()>,
    ) -> sled::Result<()> {
        self.sort();
        let last = self.last.take().map(|(k, v)| (k, Some(v)));
        for (i, (k, v)) in self.ops.into_iter().chain(last).enumerate() {
            before(i)?;
            match v {
                Some(v) => tree.insert(k, v)?,
                None => tree.remove(k)?,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn applies_in_key_order_the_last_one_last_and_stops_where_told() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let mut ops = Ops::default();
        ops.insert_last(b"0-marker", b"m");
        ops.insert(b"c", b"1");
        ops.insert(b"a", b"1");
        ops.insert(b"a", b"2");
        ops.insert(b"b", b"1");
        ops.remove(b"b");
        ops.remove(b"d");
        ops.insert(b"d", b"1");
        assert_eq!(ops.len(), 8);
        let mut seen = Vec::new();
        let tree = db.clone();
        ops.apply(&db, |i| {
            seen.push((i, tree.get(b"0-marker").unwrap().is_some()));
            Ok(())
        })
        .unwrap();
        // The marker, though first in key order, is written after the others.
        assert_eq!(
            seen,
            vec![(0, false), (1, false), (2, false), (3, false), (4, false)]
        );
        assert!(db.get(b"0-marker").unwrap().is_some());
        assert_eq!(db.get(b"a").unwrap().unwrap(), IVec::from(b"2"));
        assert_eq!(db.get(b"b").unwrap(), None);
        assert!(db.get(b"c").unwrap().is_some());
        assert!(db.get(b"d").unwrap().is_some());

        let mut ops = Ops::default();
        ops.insert(b"y", b"1");
        ops.insert(b"x", b"1");
        let stopped = ops.apply(&db, |i| {
            if i == 1 {
                Err(sled::Error::Unsupported("stop".into()))
            } else {
                Ok(())
            }
        });
        assert!(stopped.is_err());
        assert!(db.get(b"x").unwrap().is_some());
        assert_eq!(db.get(b"y").unwrap(), None);
    }
}
