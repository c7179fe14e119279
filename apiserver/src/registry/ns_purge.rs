//! Emptying a Terminating namespace in bulk: every object without finalizers is deleted
//! through [`kplane_storage::Storage::write_batch`], [`PURGE_BATCH`] objects per storage
//! batch (one flush), instead of one delete (and one flush) per object.
//!
//! This is exactly what a Background-propagation delete of such an object does (no
//! finalizer to add, nothing to mark): each object still gets its own revision and its own
//! DELETED event carrying its last state, and the garbage collector sees those events as
//! it sees any delete. Objects with finalizers (their own, `orphan`, `foregroundDeletion`)
//! are left to the ordinary per-object path, which marks them and waits.

use std::time::{Duration, Instant};

use kplane_storage::{BatchWrite, Error as StorageError, KeyValue, ListOptions, Prefix};
use serde_json::Value;

use super::Registry;
use crate::error::{ApiError, ApiResult};

/// Objects deleted per storage batch. Each batch's events reach every watcher of the
/// namespace at once, so the batch stays well below the watch channel capacity (1024 by
/// default): a watcher that keeps up is never closed by one batch.
pub(super) const PURGE_BATCH: usize = 256;

/// After each batch the purge pauses for this fraction of the time the batch took, so
/// that other tenants' requests get the CPU and the store's writer between batches.
const PAUSE_PER_BATCH_TIME: u32 = 4;

/// Longest pause between two batches.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// The finalizers of a stored object, decoded without building a JSON tree.
#[derive(serde::Deserialize, Default)]
pub(super) struct FinalizersOnly {
    #[serde(default)]
    pub(super) metadata: FinalizersMeta,
}

#[derive(serde::Deserialize, Default)]
pub(super) struct FinalizersMeta {
    #[serde(default)]
    pub(super) finalizers: Vec<String>,
}

/// Whether a stored object has no finalizers (and so goes as soon as it is deleted).
/// Objects that cannot be read are left to the per-object path, which reports them.
fn finalizer_free(kv: &KeyValue) -> bool {
    serde_json::from_slice::<FinalizersOnly>(&kv.value)
        .is_ok_and(|o| o.metadata.finalizers.is_empty())
}

impl Registry {
    /// Deletes, in batches, every object of `storage_resource` in namespace `ns` of
    /// `cluster` that has no finalizers. Returns how many were deleted. Objects changed
    /// or removed meanwhile are skipped (the namespace worker's next pass sees them).
    pub(super) async fn purge_namespace_resource(
        &self,
        cluster: &str,
        ns: &str,
        storage_resource: &str,
    ) -> ApiResult<usize> {
        let prefix = Prefix::namespace(cluster, storage_resource, ns);
        let filter = finalizer_free;
        let mut opts = ListOptions {
            limit: Some(PURGE_BATCH),
            ..Default::default()
        };
        let mut deleted = 0;
        loop {
            let started = Instant::now();
            let page = self
                .storage
                .list(&prefix, &opts, Some(&filter))
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let writes: Vec<BatchWrite> = page
                .items
                .iter()
                .filter_map(|kv| {
                    let obj: Value = serde_json::from_slice(&kv.value).ok()?;
                    Some(BatchWrite {
                        key: kv.key.clone(),
                        delete: true,
                        precondition: kplane_storage::Precondition::ModRevision(kv.mod_revision),
                        encode: super::write::encoder(obj),
                    })
                })
                .collect();
            for res in self.storage.write_batch(writes).await {
                match res {
                    Ok(_) => deleted += 1,
                    Err(StorageError::Conflict { .. } | StorageError::NotFound) => {}
                    Err(e) => return Err(ApiError::internal(e.to_string())),
                }
            }
            match (page.more, page.items.last()) {
                (true, Some(last)) => opts.start_after = Some(last.key.clone()),
                _ => return Ok(deleted),
            }
            let pause = (started.elapsed() / PAUSE_PER_BATCH_TIME).min(MAX_PAUSE);
            tokio::time::sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kplane_storage::Key;

    fn kv(json: &str) -> KeyValue {
        KeyValue {
            key: Key::new("c", "/configmaps", "ns", "a"),
            value: Bytes::from(json.to_string()),
            create_revision: 1,
            mod_revision: 1,
        }
    }

    #[test]
    fn only_objects_without_finalizers_go_in_bulk() {
        assert!(finalizer_free(&kv(r#"{"metadata":{"name":"a"}}"#)));
        assert!(finalizer_free(&kv(r#"{"metadata":{"finalizers":[]}}"#)));
        assert!(!finalizer_free(&kv(
            r#"{"metadata":{"finalizers":["example.com/keep"]}}"#
        )));
        assert!(!finalizer_free(&kv(
            r#"{"metadata":{"finalizers":["foregroundDeletion"]}}"#
        )));
        assert!(!finalizer_free(&kv("not json")));
    }
}
