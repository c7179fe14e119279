//! Emptying a Terminating namespace in bulk: every object without finalizers is deleted
//! through [`Registry::delete_stored_batch`] (`bulk_delete`), [`BULK_DELETE_BATCH`]
//! objects per storage batch, instead of one delete (and one flush) per object.
//!
//! This is exactly what a Background-propagation delete of such an object does (no
//! finalizer to add, nothing to mark): each object still gets its own revision and its own
//! DELETED event carrying its last state, and the garbage collector sees those events as
//! it sees any delete. Objects with finalizers (their own, `orphan`, `foregroundDeletion`)
//! are left to the ordinary per-object path, which marks them and waits.

use kplane_types::ClusterName;
use std::time::{Duration, Instant};

use kplane_storage::{Error as StorageError, KeyValue, ListOptions, Prefix};
use serde_json::Value;

use crate::bulk_delete::{Doomed, BULK_DELETE_BATCH};
use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// After each batch the purge pauses for the time the batch took divided by this (a
/// quarter), so that other tenants' requests get the CPU and the store's writer between
/// batches.
const PAUSE_DIVISOR: u32 = 4;

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

/// Deletes, in batches, every object of `storage_resource` in namespace `ns` of
/// `cluster` that has no finalizers. Returns how many were deleted. Objects changed
/// or removed meanwhile are skipped (the namespace worker's next pass sees them).
pub(super) async fn purge_namespace_resource(
    reg: &Registry,
    cluster: &ClusterName,
    ns: &str,
    storage_resource: &str,
) -> ApiResult<usize> {
    let prefix = Prefix::namespace(cluster, storage_resource, ns);
    let filter = finalizer_free;
    let mut opts = ListOptions {
        limit: Some(BULK_DELETE_BATCH),
        ..Default::default()
    };
    let mut deleted = 0;
    loop {
        let started = Instant::now();
        let page = reg.list_by_prefix(&prefix, &opts, Some(&filter)).await?;
        let doomed: Vec<Doomed> = page
            .items
            .iter()
            .filter_map(|kv| {
                let obj: Value = serde_json::from_slice(&kv.value).ok()?;
                Some(Doomed {
                    key: kv.key.clone(),
                    revision: kv.mod_revision,
                    obj,
                })
            })
            .collect();
        for res in reg.delete_stored_batch(doomed).await? {
            match res {
                Ok(_) => deleted += 1,
                Err(StorageError::Conflict { .. } | StorageError::NotFound) => {}
                Err(e) => return Err(ApiError::from(e)),
            }
        }
        match (page.more, page.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return Ok(deleted),
        }
        let pause = (started.elapsed() / PAUSE_DIVISOR).min(MAX_PAUSE);
        tokio::time::sleep(pause).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kplane_storage::{BatchWrite, Key, Precondition, Storage, WatchEvent};
    use std::sync::Arc;

    async fn registry() -> Arc<Registry> {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(crate::Catalog::new(crate::builtin_types::builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
        reg
    }

    fn stored_cm(ns: &str, name: &str, finalizer: bool) -> BatchWrite {
        let fins = if finalizer {
            r#","finalizers":["example.com/keep"]"#
        } else {
            ""
        };
        let json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{ns}"{fins}}},"data":{{"v":"x"}}}}"#
        );
        BatchWrite {
            key: Key::new("root", "/configmaps", ns, name),
            delete: false,
            precondition: Precondition::MustNotExist,
            encode: Box::new(move |_| Ok(json.into_bytes())),
        }
    }

    /// Below, at and above the batch size: every object without finalizers goes, each with
    /// its own DELETED event and revision; objects with finalizers and other namespaces stay.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn purge_deletes_every_finalizer_free_object_across_batches() {
        for n in [
            BULK_DELETE_BATCH - 1,
            BULK_DELETE_BATCH,
            BULK_DELETE_BATCH + 1,
            2 * BULK_DELETE_BATCH + 3,
        ] {
            let reg = registry().await;
            let mut writes: Vec<BatchWrite> = (0..n)
                .map(|i| stored_cm("doomed", &format!("cm-{i:05}"), false))
                .collect();
            // Held objects in the middle of the range and at its end, and a neighbour.
            writes.push(stored_cm("doomed", "cm-00100-held", true));
            writes.push(stored_cm("doomed", "zz-held", true));
            writes.push(stored_cm("other", "cm-00000", false));
            for r in reg.storage.write_batch(writes).await {
                r.unwrap();
            }
            let from = reg.storage.current_revision();
            let prefix = Prefix::namespace("root", "/configmaps", "doomed");
            let mut rx = reg.storage.watch(&prefix, from, None).await.unwrap();
            let deleted = purge_namespace_resource(
                &reg,
                &kplane_types::ClusterName::root(),
                "doomed",
                "/configmaps",
            )
            .await
            .unwrap();
            assert_eq!(deleted, n, "n = {n}");
            let left: Vec<String> = reg
                .storage
                .list(&prefix, &ListOptions::default(), None)
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|kv| kv.key.name)
                .collect();
            assert_eq!(left, ["cm-00100-held", "zz-held"], "n = {n}");
            let other = Prefix::namespace("root", "/configmaps", "other");
            assert_eq!(reg.storage.count(&other).await.unwrap(), 1);
            let mut revs = Vec::new();
            while revs.len() < n {
                match rx.recv().await.unwrap() {
                    WatchEvent::Event(e) => {
                        assert_eq!(e.event_type, kplane_storage::EventType::Deleted);
                        let obj: Value = serde_json::from_slice(&e.kv.value).unwrap();
                        assert_eq!(
                            obj["metadata"]["resourceVersion"],
                            e.kv.mod_revision.to_string(),
                            "the tombstone carries the delete's revision"
                        );
                        revs.push(e.kv.mod_revision);
                    }
                    WatchEvent::Progress(_) => {}
                    WatchEvent::Closed(r) => panic!("watch closed: {r:?}"),
                }
            }
            let want: Vec<u64> = (from + 1..=from + n as u64).collect();
            assert_eq!(revs, want, "one revision per object, n = {n}");
            reg.storage.shutdown().await.unwrap();
        }
    }

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
