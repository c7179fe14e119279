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
//! it writes each group's entries one by one, in an order that keeps readers and crash
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

/// Writes for one tree, applied in order: `Some` inserts, `None` removes.
#[derive(Default)]
pub(crate) struct Ops {
    ops: Vec<(IVec, Option<IVec>)>,
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

    pub(crate) fn len(&self) -> usize {
        self.ops.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Applies the writes in order; `before(i)` runs before the `i`-th and may stop the
    /// application with an error (test hooks simulate a crash between writes with it).
    pub(crate) fn apply(
        self,
        tree: &sled::Tree,
        mut before: impl FnMut(usize) -> sled::Result<()>,
    ) -> sled::Result<()> {
        for (i, (k, v)) in self.ops.into_iter().enumerate() {
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
    fn applies_in_order_and_stops_where_told() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let mut ops = Ops::default();
        ops.insert(b"a", b"1");
        ops.insert(b"a", b"2");
        ops.insert(b"b", b"1");
        ops.remove(b"b");
        ops.insert(b"c", b"1");
        assert_eq!(ops.len(), 5);
        ops.apply(&db, |_| Ok(())).unwrap();
        assert_eq!(db.get(b"a").unwrap().unwrap(), IVec::from(b"2"));
        assert_eq!(db.get(b"b").unwrap(), None);
        assert!(db.get(b"c").unwrap().is_some());

        let mut ops = Ops::default();
        ops.insert(b"x", b"1");
        ops.insert(b"y", b"1");
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
