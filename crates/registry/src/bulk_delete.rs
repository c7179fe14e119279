//! Deleting many objects in storage batches: [`Registry::delete_stored_batch`] deletes up
//! to [`BULK_DELETE_BATCH`] already-read objects in one
//! [`kplane_storage::Storage::write_batch`] (few flushes instead of one per object), and
//! [`Registry::delete_listed_in_bulk`] is how a deletecollection uses it.
//!
//! Only what an ordinary Background delete would remove at once goes this way: an object
//! without finalizers, whose delete preconditions hold, deleted without dry-run and without
//! an Orphan/Foreground policy (those add a finalizer), of a type whose delete has no side
//! effect beyond its `after_delete` hook, which runs for each object once its batch is
//! written (namespaces and CRDs are marked or rechecked: never in bulk). Each object still
//! gets its own revision and its own DELETED event carrying its last state, so watchers and
//! the garbage collector see exactly what per-object deletes would show them, and passes
//! the admission chain before its batch as a per-object delete would. Everything else, and
//! any object changed between its read and the batch, takes the per-object path.

use bytes::Bytes;
use kplane_storage::{BatchWrite, Error as StorageError, Key, KeyValue, Precondition, Revision};
use serde_json::Value;

use super::write::{check_delete_preconditions, encoder, DeleteParams};
use super::{corrupt, meta, storage_error, Registry, ResourceType, Target};
use crate::admission::chain::{Attributes, Operation};
use crate::error::ApiResult;

/// Objects deleted per storage batch. Each batch's events reach every watcher of the
/// collection at once, so the batch stays well below the watch channel capacity (1024 by
/// default): a watcher that keeps up is never closed by one batch.
pub(super) const BULK_DELETE_BATCH: usize = 256;

/// One object to delete in bulk: its key, the revision it was read at (the delete fails
/// if it changed since) and its stored form (the tombstone its DELETED event carries).
pub(super) struct Doomed {
    pub(super) key: Key,
    pub(super) revision: Revision,
    pub(super) obj: Value,
}

/// Whether a deletecollection of `rt` with options `d` may delete finalizer-free objects
/// in storage batches (see the module comment).
pub(super) fn collection_in_bulk(rt: &ResourceType, d: &DeleteParams) -> bool {
    let marks = matches!(
        d.propagation_policy.as_deref(),
        Some("Orphan" | "Foreground")
    );
    !d.dry_run && !marks && rt.strategy.deletes_in_bulk()
}

/// An object of a listed collection waiting for its batch: the listed item (for the
/// per-object path if the batch cannot delete it) and its name.
struct Pending {
    item: Bytes,
    name: String,
}

impl Registry {
    /// Deletes `doomed` (at most [`BULK_DELETE_BATCH`] objects) in one storage batch.
    /// One result per object, in order: the tombstone, or the storage error (`Conflict`
    /// when the object changed since it was read, `NotFound` when it is gone). Refused
    /// as a whole while one of the objects' clusters is fenced or moved (`cluster_states`).
    pub(super) async fn delete_stored_batch(
        &self,
        doomed: Vec<Doomed>,
    ) -> crate::error::ApiResult<Vec<kplane_storage::Result<KeyValue>>> {
        let clusters: Vec<String> = doomed.iter().map(|d| d.key.cluster.clone()).collect();
        let _gate = self.write_gate(clusters.iter().map(String::as_str)).await?;
        let writes = doomed
            .into_iter()
            .map(|d| BatchWrite {
                key: d.key,
                delete: true,
                precondition: Precondition::ModRevision(d.revision),
                encode: encoder(d.obj),
            })
            .collect();
        Ok(self.storage.write_batch(writes).await)
    }

    /// Deletes one batch of a listed collection (`items`, in the API's form) as
    /// deletecollection does, handing each deleted or marked object to `gone` in list
    /// order. Objects that may go at once are deleted in storage batches; the others
    /// (finalizers, failed preconditions) and those changed meanwhile take the per-object
    /// path, which marks them or reports the error. Only for options
    /// [`collection_in_bulk`] accepts.
    pub(super) async fn delete_listed_in_bulk(
        &self,
        t: &Target,
        items: Vec<Bytes>,
        d: &DeleteParams,
        gone: &mut (impl FnMut(Bytes) + Send),
    ) -> ApiResult<()> {
        let mut pending = Vec::with_capacity(BULK_DELETE_BATCH);
        let mut doomed = Vec::with_capacity(BULK_DELETE_BATCH);
        let admitted = self.admission.handles(Operation::Delete);
        let cluster = t.cluster()?;
        for item in items {
            let v: Value = serde_json::from_slice(&item).map_err(|e| corrupt(&e))?;
            let name = meta::name_of(&v).to_string();
            let target = item_target(t, &v);
            let Some(current) = self.get_stored(&target, &name).await? else {
                continue; // already gone, as the per-object path answers 404
            };
            let obj: Value = serde_json::from_slice(&current.value).map_err(|e| corrupt(&e))?;
            let at_once = meta::finalizers(&obj).is_empty()
                && check_delete_preconditions(&t.rt, &name, &obj, current.mod_revision, d).is_ok();
            if !at_once {
                // In list order: what is pending goes first.
                self.delete_pending(t, &mut pending, &mut doomed, d, gone)
                    .await?;
                if let Some(out) = self.delete_listed(t, &item, d).await? {
                    gone(out);
                }
                continue;
            }
            if admitted {
                let attrs = Attributes {
                    operation: Operation::Delete,
                    resource: &target.rt,
                    subresource: None,
                    cluster,
                    namespace: target.namespace.as_deref().unwrap_or(""),
                    name: &name,
                    old: Some(&obj),
                    user: d.user.as_ref(),
                    dry_run: d.dry_run,
                    new_namespace: None,
                    options: d.admission_options(),
                };
                if let Err(e) = self.admission.admit_delete(self, &attrs).await {
                    // As the per-object path: what was listed before it goes, then the
                    // refusal ends the deletecollection.
                    self.delete_pending(t, &mut pending, &mut doomed, d, gone)
                        .await?;
                    return Err(e);
                }
            }
            doomed.push(Doomed {
                key: current.key,
                revision: current.mod_revision,
                obj,
            });
            pending.push(Pending { item, name });
            if doomed.len() == BULK_DELETE_BATCH {
                self.delete_pending(t, &mut pending, &mut doomed, d, gone)
                    .await?;
            }
        }
        self.delete_pending(t, &mut pending, &mut doomed, d, gone)
            .await
    }

    /// Deletes the pending objects in one storage batch; those changed since they were
    /// read are retried through the per-object path.
    async fn delete_pending(
        &self,
        t: &Target,
        pending: &mut Vec<Pending>,
        doomed: &mut Vec<Doomed>,
        d: &DeleteParams,
        gone: &mut (impl FnMut(Bytes) + Send),
    ) -> ApiResult<()> {
        if doomed.is_empty() {
            return Ok(());
        }
        let results = self.delete_stored_batch(std::mem::take(doomed)).await?;
        let cluster = t.cluster()?;
        let mut changed = Vec::new();
        for (p, res) in pending.drain(..).zip(results) {
            match res {
                Ok(kv) => {
                    // The type's hook (a cache of the cluster's objects dropped), before
                    // the deletecollection answers, as after a delete of one.
                    self.hooks
                        .of(&t.rt)
                        .after_delete(self, cluster, &p.name)
                        .await?;
                    gone(self.api_bytes(&t.rt, kv.value).await?)
                }
                Err(StorageError::NotFound) => {}
                Err(StorageError::Conflict { .. }) => changed.push(p.item),
                Err(e) => return Err(storage_error(e, &t.rt, &p.name)),
            }
        }
        for item in changed {
            if let Some(out) = self.delete_listed(t, &item, d).await? {
                gone(out);
            }
        }
        Ok(())
    }
}

/// The target of one listed item: a list across namespaces names each item's namespace.
pub(super) fn item_target(t: &Target, item: &Value) -> Target {
    let mut target = t.clone();
    if t.rt.namespaced && target.namespace.is_none() {
        target.namespace = meta::meta_str(item, "namespace").map(str::to_string);
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{ListParams, WriteParams};
    use kplane_storage::{EventType, Prefix, Storage, WatchEvent};
    use serde_json::json;
    use std::sync::Arc;

    struct Fixture {
        _dir: tempfile::TempDir,
        _shutdown: tokio::sync::watch::Sender<bool>,
        reg: Arc<Registry>,
        t: Target,
    }

    /// A registry with namespace `doomed` and `n` ConfigMaps in it without finalizers, plus
    /// `held` ones (`example.com/keep`) sorting among and after them, all labelled `t=x`
    /// ([`ours`]): the namespace also holds the server's `kube-root-ca.crt`.
    async fn fixture(n: usize, held: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(super::super::Catalog::new(
            super::super::builtin_types::builtin(),
        ));
        let (tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
        reg.ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .unwrap();
        let find = |plural: &str| {
            reg.builtin_catalog()
                .all()
                .iter()
                .find(|rt| rt.group.is_empty() && rt.plural == plural)
                .unwrap()
                .clone()
        };
        let w = WriteParams::default();
        let nst = Target {
            cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
            rt: find("namespaces"),
            namespace: None,
        };
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}});
        reg.create(&nst, ns, &w).await.unwrap();
        let t = Target {
            cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
            rt: find("configmaps"),
            namespace: Some("doomed".into()),
        };
        let mut objs: Vec<Value> = (0..n)
            .map(|i| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": format!("cm-{i:05}"), "labels": {"t": "x"}},
                            "data": {"k": "v"}})
            })
            .collect();
        objs.extend(held.iter().map(|name| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "labels": {"t": "x"},
                                "finalizers": ["example.com/keep"]}})
        }));
        for chunk in objs.chunks(256) {
            let creates = chunk.iter().map(|o| reg.create(&t, o.clone(), &w));
            for r in futures::future::join_all(creates).await {
                r.unwrap();
            }
        }
        Fixture {
            _dir: dir,
            _shutdown: tx,
            reg,
            t,
        }
    }

    fn ours() -> ListParams {
        ListParams {
            label_selector: Some("t=x".into()),
            ..Default::default()
        }
    }

    fn names(items: &[Bytes]) -> Vec<String> {
        items
            .iter()
            .map(|b| {
                let v: Value = serde_json::from_slice(b).unwrap();
                v["metadata"]["name"].as_str().unwrap().to_string()
            })
            .collect()
    }

    /// Below, at, above and ~10x the storage batch: the answer lists every object in list
    /// order (held ones marked), only held objects remain, and every object has its own
    /// event and revision (DELETED with its last state, MODIFIED for the marked ones).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delete_collection_in_bulk_gives_each_object_its_event_around_the_batch_size() {
        let held = ["cm-00100-held", "zz-held"];
        for n in [
            BULK_DELETE_BATCH - 1,
            BULK_DELETE_BATCH,
            BULK_DELETE_BATCH + 1,
            10 * BULK_DELETE_BATCH + 3,
        ] {
            let f = fixture(n, &held).await;
            let reg = &f.reg;
            let prefix = Prefix::namespace("root", "/configmaps", "doomed");
            let from = reg.storage.current_revision();
            let mut rx = reg.storage.watch(&prefix, from, None).await.unwrap();
            let total = n + held.len();
            // Read concurrently: the events outnumber the watch channel's capacity.
            let events = tokio::spawn(async move {
                let mut got = Vec::new();
                while got.len() < total {
                    match rx.recv().await.unwrap() {
                        WatchEvent::Event(e) => got.push(e),
                        WatchEvent::Progress(_) => {}
                        WatchEvent::Closed(r) => panic!("watch closed: {r:?}"),
                    }
                }
                got
            });
            let (deleted, _) = reg
                .delete_collection(&f.t, &ours(), &DeleteParams::default())
                .await
                .unwrap();
            let mut want: Vec<String> = (0..n).map(|i| format!("cm-{i:05}")).collect();
            want.extend(held.iter().map(|s| s.to_string()));
            want.sort();
            assert_eq!(names(&deleted), want, "n = {n}");
            for item in &deleted {
                let v: Value = serde_json::from_slice(item).unwrap();
                let name = v["metadata"]["name"].as_str().unwrap();
                assert_eq!(
                    v["metadata"]["deletionTimestamp"].is_string(),
                    held.contains(&name),
                    "{name}: only held objects are marked"
                );
            }
            let left = reg
                .storage
                .list(&prefix, &Default::default(), None)
                .await
                .unwrap();
            assert_eq!(
                left.items
                    .iter()
                    .map(|kv| kv.key.name.as_str())
                    .collect::<Vec<_>>(),
                ["cm-00100-held", "kube-root-ca.crt", "zz-held"],
                "n = {n}"
            );
            let events = events.await.unwrap();
            let revs: Vec<u64> = events.iter().map(|e| e.kv.mod_revision).collect();
            let all: Vec<u64> = (from + 1..=from + total as u64).collect();
            assert_eq!(revs, all, "one revision per object, n = {n}");
            let deletes = events
                .iter()
                .filter(|e| e.event_type == EventType::Deleted)
                .inspect(|e| {
                    let v: Value = serde_json::from_slice(&e.kv.value).unwrap();
                    assert_eq!(v["metadata"]["name"], e.kv.key.name.as_str());
                    assert_eq!(v["data"]["k"], "v", "the tombstone is the last state");
                    assert_eq!(
                        v["metadata"]["resourceVersion"],
                        e.kv.mod_revision.to_string()
                    );
                })
                .count();
            assert_eq!(deletes, n, "one DELETED event per deleted object");
            reg.storage.shutdown().await.unwrap();
        }
    }

    /// Options the bulk path must not change: a failed precondition fails the request and
    /// deletes nothing, dry-run deletes nothing, Orphan and Foreground mark every object.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn preconditions_dry_run_and_policies_keep_their_meaning() {
        let n = BULK_DELETE_BATCH + 1;
        let f = fixture(n, &[]).await;
        let reg = &f.reg;
        let prefix = Prefix::namespace("root", "/configmaps", "doomed");
        let all = ours();
        let uid = DeleteParams {
            precondition_uid: Some("not-the-uid".into()),
            ..Default::default()
        };
        let err = reg.delete_collection(&f.t, &all, &uid).await.unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(reg.storage.count(&prefix).await.unwrap(), n as u64 + 1);
        let dry = DeleteParams {
            dry_run: true,
            ..Default::default()
        };
        let (items, _) = reg.delete_collection(&f.t, &all, &dry).await.unwrap();
        assert_eq!(items.len(), n);
        assert_eq!(reg.storage.count(&prefix).await.unwrap(), n as u64 + 1);
        for (policy, finalizer) in [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")] {
            let d = DeleteParams {
                propagation_policy: Some(policy.into()),
                ..Default::default()
            };
            assert!(!collection_in_bulk(&f.t.rt, &d));
            let (items, _) = reg.delete_collection(&f.t, &all, &d).await.unwrap();
            assert_eq!(items.len(), n, "{policy}");
            let mut left = reg
                .storage
                .list(&prefix, &Default::default(), None)
                .await
                .unwrap();
            left.items.retain(|kv| kv.key.name != "kube-root-ca.crt");
            assert_eq!(left.items.len(), n, "{policy}: every object is only marked");
            for kv in &left.items {
                let v: Value = serde_json::from_slice(&kv.value).unwrap();
                assert!(v["metadata"]["finalizers"]
                    .as_array()
                    .unwrap()
                    .contains(&json!(finalizer)));
            }
            // Unmark them for the next policy.
            for kv in left.items {
                let mut v: Value = serde_json::from_slice(&kv.value).unwrap();
                v["metadata"]["finalizers"] = json!([]);
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("deletionTimestamp");
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("deletionGracePeriodSeconds");
                reg.storage
                    .put(
                        kv.key,
                        Precondition::ModRevision(kv.mod_revision),
                        encoder(v),
                    )
                    .await
                    .unwrap();
            }
        }
        assert!(collection_in_bulk(&f.t.rt, &DeleteParams::default()));
        reg.storage.shutdown().await.unwrap();
    }
}
