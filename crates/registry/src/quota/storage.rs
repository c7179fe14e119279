//! [`QuotaStorage`]: the storage decorator that counts and limits what each logical
//! cluster holds. Every write of the registry (requests, controllers, bulk deletes,
//! imports) passes it; reads pass through untouched.
//!
//! A write's change of its cluster's usage is applied inside its encoder, which the
//! storage writer calls once it has assigned the write's revision, after the precondition
//! held: a create that would exceed a limit makes the encoder fail (nothing is written,
//! and the error becomes [`Error::Refused`]); a write that fails after its encoder ran
//! gives its change back, and one whose outcome is unknown (a timeout) makes the cluster
//! be counted from storage again. An update or delete reads the stored value first, for
//! its size: with a `ModRevision` precondition that read is exactly what the write
//! replaces; a `MustExist` precondition becomes the `ModRevision` read (retried on a
//! conflict), so that it is too.

use std::sync::{Arc, Mutex, PoisonError};

use kplane_storage::{
    BatchWrite, Claim, Clusters, Encoder, Error, KeyValue, ListOptions, ListResult, Prefix,
    RangeScan, Result, Revision, Storage, StorageStats, Tombstone, WatchReceiver,
};
use kplane_storage::{Filter, Key, Precondition};

use super::model::{resource_name, ClusterUsage, Delta, Quotas};
use crate::cluster_states::{HIDDEN_PREFIX, STATE_RESOURCE};

/// Keys read at a time when a cluster is counted from storage.
pub(super) const DERIVE_PAGE: usize = 1000;

/// How many times a `MustExist` write is retried after a conflict with another writer.
const MUST_EXIST_RETRIES: usize = 16;

/// Counts and limits each cluster's objects and bytes in front of a backend.
pub struct QuotaStorage {
    inner: Arc<dyn Storage>,
    quotas: Arc<Quotas>,
}

impl std::fmt::Debug for QuotaStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotaStorage").finish_non_exhaustive()
    }
}

/// What happened in a write's encoder.
#[derive(Debug, Default)]
enum Outcome {
    /// The encoder did not run (the precondition failed first, or the write never reached
    /// the writer).
    #[default]
    NotRun,
    /// The change was applied.
    Applied(Delta),
    /// A limit refused the write.
    Refused(String),
}

type Shared<T> = Arc<Mutex<T>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One accounted write on its way to the backend.
struct Guarded {
    usage: Arc<ClusterUsage>,
    outcome: Shared<Outcome>,
    /// The caller's encoder, until the writer calls it (kept for a retry).
    encode: Shared<Option<Encoder>>,
    /// The precondition given to the backend.
    precondition: Precondition,
    /// Whether a conflict is retried (`MustExist` made into `ModRevision`).
    retry: bool,
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether writes of `key` are counted: objects of a logical cluster but `root` (which
/// has no limit and no Workspace to show its usage: its writes pay nothing, and a large
/// `root` is never scanned), not the server's own records (import journals, phases,
/// resourceVersion floors).
fn counted(key: &Key) -> bool {
    key.cluster != "root"
        && !key.cluster.starts_with(HIDDEN_PREFIX)
        && key.resource != STATE_RESOURCE
}

impl QuotaStorage {
    /// `inner`, counted and limited by `quotas`.
    pub fn wrap(inner: Arc<dyn Storage>, quotas: Arc<Quotas>) -> Arc<dyn Storage> {
        Arc::new(QuotaStorage { inner, quotas })
    }

    /// The counts of `cluster`, derived from storage if this is its first write.
    async fn usage(&self, cluster: &str) -> Result<Arc<ClusterUsage>> {
        let u = self.quotas.entry(cluster);
        u.init.get_or_try_init(|| self.derive(cluster, &u)).await?;
        Ok(u)
    }

    /// Counts every object `cluster` holds (one consistent scan, in pages). Writes into
    /// the cluster wait for it (they wait on the same `init`).
    async fn derive(&self, cluster: &str, u: &ClusterUsage) -> Result<()> {
        let prefix = Prefix {
            cluster: Clusters::One(cluster.to_string()),
            resource: None,
            namespace: None,
        };
        let mut scan = self.inner.scan(&prefix, None, DERIVE_PAGE).await?;
        while let Some(page) = scan.next_page().await? {
            for kv in page.iter().filter(|kv| counted(&kv.key)) {
                u.apply(&Delta {
                    resource: resource_name(&kv.key.resource),
                    objects: 1,
                    bytes: len_i64(kv.value.len()),
                });
            }
        }
        Ok(())
    }

    /// Prepares one write of `key`: its cluster's counts, the stored value it replaces,
    /// and the encoder that applies its change. `None` when the write is not counted, or
    /// cannot succeed (nothing to replace, another revision than the one required): it
    /// goes to the backend as it is.
    async fn guard(
        &self,
        key: &Key,
        delete: bool,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<std::result::Result<(Guarded, Encoder), Encoder>> {
        if !counted(key) {
            return Ok(Err(encode));
        }
        let usage = self.usage(&key.cluster).await?;
        let (objects, old_len, precondition, retry) = match precondition {
            Precondition::MustNotExist if !delete => (1, 0, precondition, false),
            Precondition::MustNotExist => return Ok(Err(encode)),
            Precondition::ModRevision(r) => match self.inner.get(key).await? {
                Some(old) if old.mod_revision == r => (
                    if delete { -1 } else { 0 },
                    old.value.len(),
                    precondition,
                    false,
                ),
                _ => return Ok(Err(encode)),
            },
            Precondition::MustExist => match self.inner.get(key).await? {
                Some(old) => (
                    if delete { -1 } else { 0 },
                    old.value.len(),
                    Precondition::ModRevision(old.mod_revision),
                    true,
                ),
                None => return Ok(Err(encode)),
            },
        };
        let g = Guarded {
            usage,
            outcome: Arc::default(),
            encode: Arc::new(Mutex::new(Some(encode))),
            precondition,
            retry,
        };
        let resource = resource_name(&key.resource);
        let limits = self.quotas.effective(&key.cluster);
        let (usage, outcome, slot) = (g.usage.clone(), g.outcome.clone(), g.encode.clone());
        let wrapped: Encoder = Box::new(move |rev| {
            let Some(encode) = lock(&slot).take() else {
                return Err("the write's encoder was called twice".into());
            };
            let bytes = encode(rev)?;
            let new_len = if delete { 0 } else { bytes.len() };
            let d = Delta {
                resource,
                objects,
                bytes: len_i64(new_len) - len_i64(old_len),
            };
            match usage.reserve(&d, &limits) {
                Ok(()) => {
                    *lock(&outcome) = Outcome::Applied(d);
                    Ok(bytes)
                }
                Err(why) => {
                    *lock(&outcome) = Outcome::Refused(why.clone());
                    Err(why)
                }
            }
        });
        Ok(Ok((g, wrapped)))
    }

    /// Settles a guarded write's result: a refusal becomes [`Error::Refused`], a failure
    /// after the change was applied gives it back (or, outcome unknown, recounts the
    /// cluster). `Err(encoder)` when the write should be retried with it.
    fn settle(
        &self,
        key: &Key,
        g: &Guarded,
        r: Result<KeyValue>,
    ) -> std::result::Result<Result<KeyValue>, Encoder> {
        let outcome = std::mem::take(&mut *lock(&g.outcome));
        match (r, outcome) {
            (Ok(kv), _) => Ok(Ok(kv)),
            (Err(_), Outcome::Refused(why)) => {
                self.quotas.count_rejection(&resource_name(&key.resource));
                Ok(Err(Error::Refused(why)))
            }
            (Err(e), Outcome::Applied(d)) => {
                if matches!(e, Error::Timeout(_) | Error::Backend(_)) {
                    self.quotas.forget(&key.cluster);
                } else {
                    g.usage.apply(&d.inverse());
                }
                Ok(Err(e))
            }
            (Err(Error::Conflict { current }), Outcome::NotRun) if g.retry => {
                match lock(&g.encode).take() {
                    Some(encode) => Err(encode),
                    None => Ok(Err(Error::Conflict { current })),
                }
            }
            (Err(e), Outcome::NotRun) => Ok(Err(e)),
        }
    }

    /// A put or delete, accounted.
    async fn write(
        &self,
        key: Key,
        delete: bool,
        precondition: Precondition,
        mut encode: Encoder,
    ) -> Result<KeyValue> {
        for _ in 0..MUST_EXIST_RETRIES {
            let (g, wrapped) = match self.guard(&key, delete, precondition, encode).await? {
                Ok(guarded) => guarded,
                Err(plain) => return self.raw(key, delete, precondition, plain).await,
            };
            let r = self.raw(key.clone(), delete, g.precondition, wrapped).await;
            match self.settle(&key, &g, r) {
                Ok(r) => return r,
                Err(again) => encode = again,
            }
        }
        Err(Error::Conflict {
            current: self.inner.current_revision(),
        })
    }

    async fn raw(
        &self,
        key: Key,
        delete: bool,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        if delete {
            self.inner.delete(key, precondition, encode).await
        } else {
            self.inner.put(key, precondition, encode).await
        }
    }
}

#[async_trait::async_trait]
impl Storage for QuotaStorage {
    fn current_revision(&self) -> Revision {
        self.inner.current_revision()
    }

    fn health(&self) -> std::result::Result<(), String> {
        self.inner.health()
    }

    fn compacted_revision(&self) -> Revision {
        self.inner.compacted_revision()
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        self.inner.get(key).await
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        self.inner.list(prefix, opts, filter).await
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        self.inner.count(prefix).await
    }

    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        self.inner.count_after(prefix, start_after, at).await
    }

    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue> {
        self.write(key, false, precondition, encode).await
    }

    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        self.write(key, true, precondition, encode).await
    }

    /// Each write guarded as alone, committed in one batch; a `MustExist` write that met
    /// a conflict is retried alone. A batch that writes one key more than once (an
    /// import's changes) is written one write after the other: each guard must read what
    /// the write before it left.
    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let mut keys = std::collections::HashSet::with_capacity(writes.len());
        if !writes.iter().all(|w| keys.insert(&w.key)) {
            let mut out = Vec::with_capacity(writes.len());
            for w in writes {
                out.push(self.write(w.key, w.delete, w.precondition, w.encode).await);
            }
            return out;
        }
        drop(keys);
        let mut guards: Vec<Option<(Key, bool, Guarded)>> = Vec::with_capacity(writes.len());
        let mut sent = Vec::with_capacity(writes.len());
        let mut failed: Vec<(usize, Error)> = Vec::new();
        for (i, w) in writes.into_iter().enumerate() {
            let BatchWrite {
                key,
                delete,
                precondition,
                encode,
            } = w;
            match self.guard(&key, delete, precondition, encode).await {
                Ok(Ok((g, wrapped))) => {
                    sent.push(BatchWrite {
                        key: key.clone(),
                        delete,
                        precondition: g.precondition,
                        encode: wrapped,
                    });
                    guards.push(Some((key, delete, g)));
                }
                Ok(Err(plain)) => {
                    sent.push(BatchWrite {
                        key,
                        delete,
                        precondition,
                        encode: plain,
                    });
                    guards.push(None);
                }
                Err(e) => {
                    failed.push((i, e));
                    guards.push(None);
                }
            }
        }
        // Writes whose preparation failed are not sent; their results go back in place.
        let mut results = self.inner.write_batch(sent).await.into_iter();
        let mut failed = failed.into_iter().peekable();
        let mut out = Vec::with_capacity(guards.len());
        for (i, guard) in guards.into_iter().enumerate() {
            if failed.peek().is_some_and(|(at, _)| *at == i) {
                if let Some((_, e)) = failed.next() {
                    out.push(Err(e));
                }
                continue;
            }
            let r = results
                .next()
                .unwrap_or_else(|| Err(Error::Backend("a batch write lost its result".into())));
            let Some((key, delete, g)) = guard else {
                out.push(r);
                continue;
            };
            out.push(match self.settle(&key, &g, r) {
                Ok(r) => r,
                Err(again) => {
                    self.write(key, delete, Precondition::MustExist, again)
                        .await
                }
            });
        }
        out
    }

    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64> {
        let r = self.inner.delete_cluster(cluster, batch, tombstone).await;
        self.quotas.forget(cluster);
        r
    }

    async fn fence_cluster(&self, cluster: &str, fenced: bool) -> Result<Revision> {
        self.inner.fence_cluster(cluster, fenced).await
    }

    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.inner.clusters(start_after, limit).await
    }

    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        self.inner.scan(prefix, at, page_size).await
    }

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<std::time::Duration>,
    ) -> Result<WatchReceiver> {
        self.inner.watch(prefix, from, progress_every).await
    }

    fn stale(&self, kv: &KeyValue) -> bool {
        self.inner.stale(kv)
    }

    fn encrypts(&self, storage_resource: &str) -> bool {
        self.inner.encrypts(storage_resource)
    }

    fn stats(&self) -> StorageStats {
        self.inner.stats()
    }

    fn leadership(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.leadership()
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }

    async fn claim(&self, name: &str) -> Result<Option<Claim>> {
        self.inner.claim(name).await
    }

    async fn shutdown(&self) -> Result<()> {
        self.inner.shutdown().await
    }
}
