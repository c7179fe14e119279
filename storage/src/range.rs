//! Operations over whole key ranges, for workspace deletion and export: the tombstone
//! producer of [`crate::Storage::delete_cluster`] and the consistent scan that
//! [`crate::Storage::scan`] returns.

use std::sync::Arc;

use crate::{KeyValue, Result, Revision};

/// Produces the tombstone of one key that [`crate::Storage::delete_cluster`] deletes, from
/// the key's last value and the revision of its delete: the value its `Deleted` event
/// carries, like the encoder of [`crate::Storage::delete`]. An error stops the range
/// delete with [`crate::Error::Encode`] and leaves that key in place.
pub type Tombstone =
    Arc<dyn Fn(&KeyValue, Revision) -> std::result::Result<Vec<u8>, String> + Send + Sync>;

/// The suggested batch of [`crate::Storage::delete_cluster`]: keys deleted per commit, and
/// the most events a watcher of the cluster receives at once (as `bulk_delete` in the
/// registry, one batch fits a default watch queue several times over).
pub const CLUSTER_DELETE_BATCH: usize = 256;

/// A scan of every key under a prefix at one revision, page by page, as
/// [`crate::Storage::scan`] starts it. Pages come in the order [`crate::Storage::list`]
/// returns keys, and together hold exactly the state at [`RangeScan::revision`], however
/// the store changes meanwhile.
#[async_trait::async_trait]
pub trait RangeScan: Send {
    /// The revision every page is read at.
    fn revision(&self) -> Revision;

    /// The next page: at least one and at most the scan's page size of keys, or `None`
    /// once every key was returned. Fails with [`crate::Error::Compacted`] once the
    /// scan's revision fell out of the retained window (the scan outlasted it), and so
    /// does every later call: start a new scan at a newer revision.
    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>>;
}

/// Where a [`RangeScan`] served by repeated [`crate::Storage::list`] calls stands: the
/// options of its next page, and the step past each page read. The backends whose scan is
/// paged lists (sled, the in-memory store) share it.
#[derive(Debug)]
pub(crate) struct ListCursor {
    pub(crate) revision: Revision,
    page_size: usize,
    /// The last key returned; the next page starts after it.
    after: Option<crate::Key>,
    done: bool,
}

impl ListCursor {
    /// A cursor at `revision` reading `page_size` keys a page (at least one).
    pub(crate) fn new(revision: Revision, page_size: usize) -> ListCursor {
        ListCursor {
            revision,
            page_size: page_size.max(1),
            after: None,
            done: false,
        }
    }

    /// The options of the next page's list, `None` once every key was returned.
    pub(crate) fn next_options(&self) -> Option<crate::ListOptions> {
        (!self.done).then(|| crate::ListOptions {
            at_revision: Some(self.revision),
            start_after: self.after.clone(),
            limit: Some(self.page_size),
        })
    }

    /// Steps past `page` (the list the options asked for): its keys, `None` when empty.
    pub(crate) fn advance(&mut self, page: crate::ListResult) -> Option<Vec<KeyValue>> {
        self.done = !page.more;
        match page.items.last() {
            Some(last) => {
                self.after = Some(last.key.clone());
                Some(page.items)
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}
