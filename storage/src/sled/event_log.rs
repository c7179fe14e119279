//! The sled backend's [`EventLog`]: one scan of the log's versions by revision (values
//! inline); the previous value of a change is looked up in the log's per-key index.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::encoding::{decode_key, decode_version, peek_version};
use super::log::Log;
use crate::event_log::{EventLog, EventPage};
use crate::{Error, Event, EventType, Prefix, Result, Revision};

/// A page also ends after this many times `max_events` log entries examined, so a watcher
/// of a quiet prefix does not hold a blocking thread for a long run of other changes.
pub(crate) const SCAN_FACTOR: usize = 16;

/// The event log of the log database.
pub(crate) struct SledEventLog {
    pub(crate) log: Arc<Log>,
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
        let log = self.log.clone();
        let prefix = prefix.clone();
        tokio::task::spawn_blocking(move || read_page(&log, &prefix, after, upto, max_events))
            .await
            .map_err(|e| Error::Backend(format!("event log read failed: {e}")))?
    }

    fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }
}

/// Reads the logged events after `after` (up to `upto`) that match `prefix`.
fn read_page(
    log: &Log,
    prefix: &Prefix,
    after: Revision,
    upto: Revision,
    max_events: usize,
) -> Result<EventPage> {
    let max_events = max_events.max(1);
    let mut events = Vec::new();
    let mut through = after;
    let mut scanned = 0usize;
    for entry in log.entries(after, upto) {
        let (rev, raw) = entry?;
        let (_, kb) = peek_version(&raw)?;
        let (key, _) = decode_key(kb)?;
        if prefix.contains(&key) {
            let v = decode_version(raw)?;
            let prev = match v.event_type {
                EventType::Added => None,
                _ => log
                    .version_at(&v.kb, rev.saturating_sub(1))?
                    .map(|r| r.value),
            };
            events.push(Event {
                event_type: v.event_type,
                kv: v.record.into_kv(v.key),
                prev,
            });
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
