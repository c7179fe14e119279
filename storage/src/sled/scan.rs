//! The sled backend's [`RangeScan`]: pages of a snapshot list at one fixed revision, each
//! continuing after the last key of the page before.
//!
//! sled has no snapshots to hold; a list at revision `R` is exact for as long as `R` is at
//! or above the compaction point (every page re-checks it after reading), so pages read
//! minutes apart still show the same state.

use std::sync::Arc;

use super::shared::Shared;
use crate::range::{ListCursor, RangeScan};
use crate::{KeyValue, Prefix, Result, Revision};

/// One scan. It holds the store's shared state (so its database stays open) until dropped.
pub(crate) struct SledScan {
    shared: Arc<Shared>,
    prefix: Prefix,
    cursor: ListCursor,
}

impl SledScan {
    /// A scan of `prefix` at `at` (the current revision when `None`), validated now.
    pub(crate) fn start(
        shared: Arc<Shared>,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<SledScan> {
        let revision = shared.read_revision(at)?;
        Ok(SledScan {
            shared,
            prefix: prefix.clone(),
            cursor: ListCursor::new(revision, page_size),
        })
    }
}

#[async_trait::async_trait]
impl RangeScan for SledScan {
    fn revision(&self) -> Revision {
        self.cursor.revision
    }

    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        let Some(opts) = self.cursor.next_options() else {
            return Ok(None);
        };
        let page = self.shared.list(&self.prefix, &opts, None).await?;
        Ok(self.cursor.advance(page))
    }
}
