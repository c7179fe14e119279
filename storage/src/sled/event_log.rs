//! The sled backend's [`EventLog`]: reads the `E` keyspace (one entry per revision) and
//! rebuilds each event's value and previous value from the latest and history keyspaces.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::encoding::{decode_event, decode_key, event_key, rev_of_tagged};
use super::read::{backend, load_event};
use crate::event_log::{EventLog, EventPage};
use crate::{Error, Prefix, Result, Revision};

/// A page also ends after this many times `max_events` log entries examined, so a watcher
/// of a quiet prefix does not hold a blocking thread for a long run of other changes.
pub(crate) const SCAN_FACTOR: usize = 16;

/// The event log of one sled tree.
pub(crate) struct SledEventLog {
    pub(crate) tree: sled::Tree,
    pub(crate) compacted: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl EventLog for SledEventLog {
    async fn read(
        &self,
        prefix: &Prefix,
        after: Revision,
        upto: Revision,
        max_events: usize,
    ) -> Result<EventPage> {
        let tree = self.tree.clone();
        let prefix = prefix.clone();
        tokio::task::spawn_blocking(move || read_page(&tree, &prefix, after, upto, max_events))
            .await
            .map_err(|e| Error::Backend(format!("event log read failed: {e}")))?
    }

    fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }
}

/// Reads the logged events after `after` (up to `upto`) that match `prefix`.
fn read_page(
    tree: &sled::Tree,
    prefix: &Prefix,
    after: Revision,
    upto: Revision,
    max_events: usize,
) -> Result<EventPage> {
    let max_events = max_events.max(1);
    let mut events = Vec::new();
    let mut through = after;
    let mut scanned = 0usize;
    let hi = upto.saturating_add(1);
    for entry in tree.range(event_key(after.saturating_add(1))..event_key(hi)) {
        let (k, v) = entry.map_err(backend)?;
        let rev = rev_of_tagged(&k)?;
        let (event_type, kb) = decode_event(&v)?;
        let (key, _) = decode_key(kb)?;
        if prefix.contains(&key) {
            if let Some(ev) = load_event(tree, rev, event_type, kb, key)? {
                events.push(ev);
            }
        }
        through = rev;
        scanned += 1;
        if events.len() >= max_events || scanned >= max_events.saturating_mul(SCAN_FACTOR) {
            return Ok(EventPage { events, through });
        }
    }
    Ok(EventPage {
        events,
        through: upto.max(through),
    })
}
