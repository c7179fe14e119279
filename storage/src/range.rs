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
