//! The event-log seam: how the watch hub ([`crate::watch`]) reads a backend's persisted
//! history of changes to replay it to a watcher that starts behind the live stream.
//!
//! The hub owns the fan-out and the hand-over from replay to live delivery; a backend
//! owns where its log lives and how to read it. A backend implements [`EventLog`] and
//! passes it to [`crate::watch::Hub::watch`]; the hub reads it page by page with
//! back-pressure, so a backend never has to hold a whole replay in memory.

use crate::{Event, Prefix, Result, Revision};

/// One page of the event log, as [`EventLog::read`] returns it.
#[derive(Debug, Default)]
pub struct EventPage {
    /// The logged changes under the prefix with revisions in `(after, through]`, in
    /// revision order.
    pub events: Vec<Event>,
    /// The revision up to which the log was examined. The next page starts after it.
    pub through: Revision,
}

/// A backend's persisted event log: every committed change with its revision, kept at
/// least down to the compaction point.
#[async_trait::async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Reads the changes under `prefix` with a revision in `(after, upto]`, oldest first,
    /// at most `max_events` of them, each with its `prev` value when still retained.
    ///
    /// A backend may end a page early (for instance after examining a bounded number of
    /// entries of other prefixes) but must make progress: when `after < upto`, the page's
    /// `through` is greater than `after` and at most `upto`; at the end of the range it is
    /// `upto`.
    ///
    /// Compaction may remove entries while a page is read. The caller re-reads
    /// [`EventLog::compacted_revision`] after each page: the page is complete only if the
    /// compaction point is still at or below `after`.
    async fn read(
        &self,
        prefix: &Prefix,
        after: Revision,
        upto: Revision,
        max_events: usize,
    ) -> Result<EventPage>;

    /// The compaction point: changes at or below it may be gone from the log.
    fn compacted_revision(&self) -> Revision;
}
