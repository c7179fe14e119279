//! The sled backend's [`RangeScan`]: pages of a snapshot list at one fixed revision, each
//! continuing after the last key of the page before.
//!
//! sled has no snapshots to hold; a list at revision `R` is exact for as long as `R` is at
//! or above the compaction point (every page re-checks it after reading), so pages read
//! minutes apart still show the same state.

use std::sync::Arc;

use super::Shared;
use crate::range::RangeScan;
use crate::{Key, KeyValue, ListOptions, Prefix, Result, Revision};

/// One scan. It holds the store's shared state (so its database stays open) until dropped.
pub(crate) struct SledScan {
    shared: Arc<Shared>,
    prefix: Prefix,
    revision: Revision,
    page_size: usize,
    /// The last key returned; the next page starts after it.
    after: Option<Key>,
    done: bool,
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
            revision,
            page_size: page_size.max(1),
            after: None,
            done: false,
        })
    }
}

#[async_trait::async_trait]
impl RangeScan for SledScan {
    fn revision(&self) -> Revision {
        self.revision
    }

    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        if self.done {
            return Ok(None);
        }
        let opts = ListOptions {
            at_revision: Some(self.revision),
            start_after: self.after.clone(),
            limit: Some(self.page_size),
        };
        let page = self.shared.list(&self.prefix, &opts, None).await?;
        self.done = !page.more;
        match page.items.last() {
            Some(last) => {
                self.after = Some(last.key.clone());
                Ok(Some(page.items))
            }
            None => {
                self.done = true;
                Ok(None)
            }
        }
    }
}
