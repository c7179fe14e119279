//! The target side of the online move (docs/architecture.md "Moving a logical cluster"): a
//! *staged* import is an ordinary import ([`Registry::write_import`]) that stops before the
//! flip, its journal in step `writing` with the source it came from and the revision of
//! the source it is complete through. It stays hidden (404, skipped by multi-cluster
//! reads), also across restarts (start-up keeps a staged journal instead of rolling it
//! back), while the source's later changes are applied to it; the commit is the import's
//! own flip (`journal.rs`), the abort its own rollback.
//!
//! Each step (the bulk copy, each round of changes, the commit, the abort) claims the
//! import (`journal.rs`) for its duration, whichever replica runs it: two steps of one move
//! never run at once (the second is refused with 409), and between steps the staged
//! journal is claimed by nobody, yet never resolved by another replica (`recovery.rs`):
//! it waits for the move's next call.
//!
//! Applying changes is idempotent: each change sets a key's whole value or deletes it, so
//! re-applying changes from an earlier revision (after a crash between the writes and
//! the journal update) ends in the same state. The journal records the new revision
//! only after the changes are written.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use kplane_archive::{Change, ChangeReader};
use kplane_storage::{BatchWrite, Claim, Key, Precondition};
use kplane_types::{ClusterName, StatusReason};
use serde_json::{json, Value};

use super::common::{ImportSummary, IMPORT_BATCH};
use super::journal::{still_claimed, Journal, Step};
use crate::cluster_states::STATE_RESOURCE;
use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// A staged import as the move's client sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedImport {
    pub cluster: String,
    pub source_server: String,
    pub source_cluster: String,
    /// Every change of the source up to this revision is applied.
    pub applied: u64,
    /// Objects written by the bulk copy (0 when read back from the journal).
    pub objects: u64,
}

impl StagedImport {
    /// The HTTP answer (`kind: StagedImport`).
    pub fn to_json(&self) -> Value {
        json!({"apiVersion": "kplane.io/v1alpha1", "kind": "StagedImport",
               "cluster": self.cluster, "sourceServer": self.source_server,
               "sourceCluster": self.source_cluster, "applied": self.applied,
               "objects": self.objects})
    }

    fn of(j: &Journal, objects: u64) -> Option<Self> {
        let s = j.staged.as_ref()?;
        Some(StagedImport {
            cluster: j.target.clone(),
            source_server: s.source_server.clone(),
            source_cluster: s.source_cluster.clone(),
            applied: s.applied,
            objects,
        })
    }
}

/// What [`Registry::apply_staged_changes`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedChanges {
    /// Changes in the stream.
    pub changes: u64,
    /// The staged import is complete through this source revision now.
    pub applied: u64,
}

impl AppliedChanges {
    pub fn to_json(&self) -> Value {
        json!({"apiVersion": "kplane.io/v1alpha1", "kind": "AppliedChanges",
               "changes": self.changes, "applied": self.applied})
    }
}

fn no_staged(target: &ClusterName) -> ApiError {
    ApiError::new(
        StatusReason::NotFound,
        format!("no staged import into logical cluster \"{target}\""),
    )
}

impl Registry {
    /// The work of [`Archive::import_staged`](crate::archive::Archive::import_staged).
    pub(crate) async fn import_staged(
        &self,
        archive: &Path,
        target: &ClusterName,
    ) -> ApiResult<StagedImport> {
        let (journal, claim, objects) = self.write_import(archive, target, false, true).await?;
        claim.release().await;
        StagedImport::of(&journal, objects)
            .ok_or_else(|| ApiError::internal("the staged import lost its source"))
    }

    /// The work of [`Archive::staged_import`](crate::archive::Archive::staged_import).
    pub(crate) async fn staged_import(&self, target: &ClusterName) -> ApiResult<StagedImport> {
        self.staged_journal(target)
            .await
            .and_then(|j| StagedImport::of(&j, 0).ok_or_else(|| no_staged(target)))
    }

    async fn staged_journal(&self, target: &ClusterName) -> ApiResult<Journal> {
        match self.get_journal(target.as_str()).await? {
            Some(j) if j.staged.is_some() && j.step == Step::Writing => Ok(j),
            Some(_) => Err(ApiError::new(
                StatusReason::Conflict,
                format!("the import into logical cluster \"{target}\" is not a staged one waiting for changes"),
            )),
            None => Err(no_staged(target)),
        }
    }

    /// The work of
    /// [`Archive::apply_staged_changes`](crate::archive::Archive::apply_staged_changes).
    pub(crate) async fn apply_staged_changes(
        &self,
        changes: &Path,
        target: &ClusterName,
        since: u64,
    ) -> ApiResult<AppliedChanges> {
        let claim = self.claim_import(target.as_str()).await?;
        let done = self.apply_claimed(changes, target, since, &claim).await;
        claim.release().await;
        done
    }

    /// [`Registry::apply_staged_changes`] under the import's claim.
    async fn apply_claimed(
        &self,
        changes: &Path,
        target: &ClusterName,
        since: u64,
        claim: &Claim,
    ) -> ApiResult<AppliedChanges> {
        let mut journal = self.staged_journal(target).await?;
        // Rewritten first: a journal read before another replica's last step (a commit,
        // an abort, changes) fails here, before anything is written into the target.
        self.put_journal(&mut journal, false).await?;
        let (source, applied) = match &journal.staged {
            Some(s) => (s.source_cluster.clone(), s.applied),
            None => return Err(no_staged(target)),
        };
        if since > applied {
            return Err(ApiError::new(
                StatusReason::Conflict,
                format!("changes after revision {since} cannot follow the staged import of \"{target}\", which is complete through {applied} only"),
            ));
        }
        let dest = journal
            .clusters
            .first()
            .map(|m| m.destination().to_string())
            .ok_or_else(|| ApiError::internal("a staged import without a cluster"))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<ApiResult<Vec<Change>>>(2);
        let reader = tokio::task::spawn_blocking(read_changes(changes.to_path_buf(), tx));
        let mut count = 0;
        while let Some(batch) = rx.recv().await {
            still_claimed(claim, target.as_str())?;
            let batch = batch?;
            count += batch.len() as u64;
            if let Some(c) = batch.iter().find(|c| c.record.cluster != source) {
                return Err(ApiError::bad_request(format!(
                    "change at revision {} is of logical cluster \"{}\", not of \"{source}\"",
                    c.revision, c.record.cluster
                )));
            }
            self.apply_batch(&dest, batch).await?;
        }
        let through = reader
            .await
            .map_err(|e| ApiError::internal(format!("the change reader failed: {e}")))??;
        if let Some(s) = journal.staged.as_mut() {
            s.applied = s.applied.max(through);
        }
        still_claimed(claim, target.as_str())?;
        self.put_journal(&mut journal, false).await?;
        Ok(AppliedChanges {
            changes: count,
            applied: journal.staged.map_or(through, |s| s.applied),
        })
    }

    /// Writes one batch of changes into `dest`: puts set the whole value, deletes remove
    /// (a key already absent is skipped), each key's precondition following the batch's
    /// own earlier changes of it.
    async fn apply_batch(&self, dest: &str, batch: Vec<Change>) -> ApiResult<()> {
        let key_of = |c: &Change| {
            Key::new(
                dest,
                c.record.resource.clone(),
                c.record.namespace.clone(),
                c.record.name.clone(),
            )
        };
        let mut exists: HashMap<Key, bool> = HashMap::new();
        for c in &batch {
            let k = key_of(c);
            if let std::collections::hash_map::Entry::Vacant(slot) = exists.entry(k) {
                let there = self.storage.get(slot.key()).await?.is_some();
                slot.insert(there);
            }
        }
        let mut writes = Vec::with_capacity(batch.len());
        for c in batch {
            let key = key_of(&c);
            let there = exists.get(&key).copied().unwrap_or(false);
            if c.delete && !there {
                continue;
            }
            exists.insert(key.clone(), !c.delete);
            let value = c.record.value;
            writes.push(BatchWrite {
                key,
                delete: c.delete,
                precondition: if there {
                    Precondition::MustExist
                } else {
                    Precondition::MustNotExist
                },
                encode: Box::new(move |rev| super::common::with_resource_version(&value, rev)),
            });
        }
        for r in self.storage.write_batch(writes).await {
            r?;
        }
        Ok(())
    }

    /// The work of
    /// [`Archive::commit_staged_import`](crate::archive::Archive::commit_staged_import).
    pub(crate) async fn commit_staged_import(
        &self,
        target: &ClusterName,
    ) -> ApiResult<ImportSummary> {
        let claim = self.claim_import(target.as_str()).await?;
        let done = self.commit_claimed(target, &claim).await;
        claim.release().await;
        done
    }

    async fn commit_claimed(
        &self,
        target: &ClusterName,
        claim: &Claim,
    ) -> ApiResult<ImportSummary> {
        let mut journal = self.staged_journal(target).await?;
        journal.step = Step::DeletingOld;
        self.put_journal(&mut journal, false).await?;
        let clusters = journal.clusters.iter().map(|m| m.target.clone()).collect();
        let revision = self.roll_forward_import(journal, claim).await?;
        Ok(ImportSummary {
            cluster: target.to_string(),
            clusters,
            objects: 0,
            revision,
        })
    }

    /// The work of [`Archive::abort_staged_import`](crate::archive::Archive::abort_staged_import).
    pub(crate) async fn abort_staged_import(&self, target: &ClusterName) -> ApiResult<()> {
        let claim = self.claim_import(target.as_str()).await?;
        let done = match self.staged_journal(target).await {
            // Rewritten first: a journal read before another replica's commit fails here
            // instead of rolling the committed import back.
            Ok(mut j) => match self.put_journal(&mut j, false).await {
                Ok(()) => self.roll_back_import(&j).await,
                Err(e) => Err(e),
            },
            Err(e) if e.code() == 404 => Ok(()),
            Err(e) => Err(e),
        };
        claim.release().await;
        done
    }
}

/// Reads the change stream at `path` and sends its changes in batches of [`IMPORT_BATCH`];
/// returns the revision the stream is complete through (after its end frame).
fn read_changes(
    path: PathBuf,
    tx: tokio::sync::mpsc::Sender<ApiResult<Vec<Change>>>,
) -> impl FnOnce() -> ApiResult<u64> + Send + 'static {
    move || {
        let bad = |e: kplane_archive::Error| ApiError::bad_request(format!("change stream: {e}"));
        let file = std::fs::File::open(&path)
            .map_err(|e| ApiError::internal(format!("reading the spooled changes: {e}")))?;
        let mut reader = ChangeReader::open(BufReader::new(file)).map_err(bad)?;
        let mut batch = Vec::with_capacity(IMPORT_BATCH);
        while let Some(c) = reader.next().map_err(bad)? {
            if c.record.resource == STATE_RESOURCE {
                continue;
            }
            batch.push(c);
            if batch.len() == IMPORT_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(IMPORT_BATCH));
                if tx.blocking_send(Ok(full)).is_err() {
                    return Err(ApiError::internal("the change stream's reader was dropped"));
                }
            }
        }
        if !batch.is_empty() && tx.blocking_send(Ok(batch)).is_err() {
            return Err(ApiError::internal("the change stream's reader was dropped"));
        }
        reader
            .through()
            .ok_or_else(|| ApiError::bad_request("change stream: it has no end"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kplane_storage::{Prefix, Storage};
    use kplane_types::ClusterScope;
    use serde_json::json;

    use super::*;

    fn name(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    // A registry over `storage` as after a restart: the archive tests' fixture.
    use super::super::tests::restart as open;

    fn store() -> Arc<dyn Storage> {
        crate::testing::memory_store()
    }

    /// Puts (`Some`) or deletes (`None`) ConfigMaps of `cluster` directly in storage.
    async fn write(storage: &Arc<dyn Storage>, cluster: &str, cms: Vec<(String, Option<i64>)>) {
        for (n, v) in cms {
            let key = Key::new(cluster, "/configmaps", "default", n.clone());
            let there = storage.get(&key).await.unwrap().is_some();
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": n, "namespace": "default",
                                          "uid": format!("uid-{n}")},
                             "data": {"v": v.unwrap_or(-1).to_string()}});
            let enc: kplane_storage::Encoder = Box::new(move |rev| {
                crate::archive::common::with_resource_version(obj.to_string().as_bytes(), rev)
            });
            let pre = if there {
                Precondition::MustExist
            } else {
                Precondition::MustNotExist
            };
            if v.is_some() {
                storage.put(key, pre, enc).await.unwrap();
            } else if there {
                storage.delete(key, pre, enc).await.unwrap();
            }
        }
    }

    async fn contents(storage: &Arc<dyn Storage>, cluster: &str) -> Vec<(String, String, Value)> {
        let res = storage
            .list(&Prefix::cluster(cluster), &Default::default(), None)
            .await
            .unwrap();
        res.items
            .into_iter()
            .filter(|kv| kv.key.resource != STATE_RESOURCE)
            .map(|kv| {
                let mut v: Value = serde_json::from_slice(&kv.value).unwrap();
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("resourceVersion");
                (kv.key.resource, kv.key.name, v)
            })
            .collect()
    }

    async fn changes_to(
        reg: &Registry,
        cluster: &str,
        since: u64,
        until: Option<u64>,
        path: &Path,
    ) {
        let mut c = reg.changes(&name(cluster), since, until).await.unwrap();
        let mut out = Vec::new();
        while let Some(chunk) = c.next_chunk().await.unwrap() {
            out.extend_from_slice(&chunk);
        }
        std::fs::write(path, out).unwrap();
    }

    /// The target side of a move: the bulk copy staged (hidden, kept over a restart),
    /// two rounds of changes above the write batch (puts, updates, deletes, one key
    /// changed several times in one batch), a gap refused, then the commit: the target
    /// holds exactly the source's objects. An aborted staged import leaves nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_staged_import_takes_the_sources_changes_and_commits() {
        let dir = tempfile::tempdir().unwrap();
        let (src_store, dst_store) = (store(), store());
        let (src, _t1) = open(src_store.clone()).await;
        let (dst, t2) = open(dst_store.clone()).await;
        src.ensure_cluster(&name("root:a")).await.unwrap();
        let n = 2 * IMPORT_BATCH + 7;
        write(
            &src_store,
            "root:a",
            (0..n)
                .map(|i| (format!("cm-{i}"), Some(i as i64)))
                .collect(),
        )
        .await;

        let archive = dir.path().join("a.kpa");
        let mut ex = src.export(&name("root:a"), false, true).await.unwrap();
        let r0 = ex.header().revision;
        let mut bytes = Vec::new();
        while let Some(c) = ex.next_chunk().await.unwrap() {
            bytes.extend_from_slice(&c);
        }
        std::fs::write(&archive, bytes).unwrap();
        let staged = dst.import_staged(&archive, &name("root:b")).await.unwrap();
        assert_eq!(staged.applied, r0);
        assert_eq!(staged.source_cluster, "root:a");
        let e = dst
            .check_cluster(&ClusterScope::One(name("root:b")))
            .unwrap_err();
        assert_eq!(e.code(), 404, "hidden while staged");

        // Round one: updates, deletes, new keys, a key changed three times.
        let mut round: Vec<(String, Option<i64>)> = Vec::new();
        round.extend((0..10).map(|i| (format!("cm-{i}"), Some(1000 + i))));
        round.extend((10..15).map(|i| (format!("cm-{i}"), None)));
        round.extend((0..IMPORT_BATCH + 3).map(|i| (format!("new-{i}"), Some(i as i64))));
        round.push(("twice".into(), Some(1)));
        round.push(("twice".into(), None));
        round.push(("twice".into(), Some(3)));
        write(&src_store, "root:a", round).await;
        let file = dir.path().join("c1");
        changes_to(&src, "root:a", r0, None, &file).await;
        let r1 = src_store.current_revision();
        let a = dst
            .apply_staged_changes(&file, &name("root:b"), r0)
            .await
            .unwrap();
        assert_eq!(a.applied, r1);
        assert_eq!(a.changes as usize, 10 + 5 + IMPORT_BATCH + 3 + 3);
        // Re-applied (as after a crash before the journal update): the same state.
        dst.apply_staged_changes(&file, &name("root:b"), r0)
            .await
            .unwrap();

        // The target restarts: the staged import waits, still hidden.
        drop(dst);
        drop(t2);
        let (dst, _t2) = open(dst_store.clone()).await;
        assert_eq!(
            dst.staged_import(&name("root:b")).await.unwrap().applied,
            r1
        );
        assert_eq!(
            dst.check_cluster(&ClusterScope::One(name("root:b")))
                .unwrap_err()
                .code(),
            404
        );

        // Round two after the fence; a gap is refused.
        write(
            &src_store,
            "root:a",
            vec![("cm-20".into(), None), ("late".into(), Some(7))],
        )
        .await;
        let fence = src.fence_cluster(&name("root:a")).await.unwrap();
        let file = dir.path().join("c2");
        changes_to(&src, "root:a", r1, Some(fence), &file).await;
        let e = dst
            .apply_staged_changes(&file, &name("root:b"), r1 + 1)
            .await
            .unwrap_err();
        assert_eq!(e.code(), 409, "{}", e.0.message);
        let a = dst
            .apply_staged_changes(&file, &name("root:b"), r1)
            .await
            .unwrap();
        assert_eq!((a.changes, a.applied), (2, fence));
        dst.commit_staged_import(&name("root:b")).await.unwrap();
        dst.check_cluster(&ClusterScope::One(name("root:b")))
            .unwrap();
        assert_eq!(
            dst.staged_import(&name("root:b")).await.unwrap_err().code(),
            404
        );
        let (want, got) = (
            contents(&src_store, "root:a").await,
            contents(&dst_store, "root:b").await,
        );
        assert_eq!(want.len(), got.len());
        assert_eq!(want, got);

        // An aborted staged import leaves nothing; aborting again is fine.
        dst.import_staged(&archive, &name("root:c")).await.unwrap();
        dst.abort_staged_import(&name("root:c")).await.unwrap();
        dst.abort_staged_import(&name("root:c")).await.unwrap();
        assert_eq!(
            dst_store.count(&Prefix::cluster("root:c")).await.unwrap(),
            0
        );
        assert_eq!(
            dst.check_cluster(&ClusterScope::One(name("root:c")))
                .unwrap_err()
                .code(),
            404
        );
        dst.import_staged(&archive, &name("root:c")).await.unwrap();
    }
}
