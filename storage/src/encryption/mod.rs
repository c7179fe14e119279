//! Encryption at rest: [`EncryptedStorage`] wraps any [`Storage`] and gives the values of
//! the resources an encryption configuration covers ([`Rules`], kube-apiserver's
//! `EncryptionConfiguration`) their encrypted stored form on every write, and back on every
//! read, list, scan and watch event, so the backend (sled's files, PostgreSQL's tables,
//! their history) never holds them in the clear while everything above the storage trait
//! sees plain values. Values of other resources pass through untouched, without a copy.
//!
//! The key a value is stored under is its AES-GCM additional data: a value moved to
//! another key does not decrypt. A value that cannot be decrypted (a key no longer in the
//! configuration, or tampering) is a [`Error::Corrupt`] for the read that meets it, as
//! kube-apiserver answers an internal error; a list filter skips it.

mod config;
mod providers;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

pub use config::Rules;

use crate::{
    BatchWrite, Claim, Encoder, Error, Event, Filter, Key, KeyValue, ListOptions, ListResult,
    Precondition, Prefix, RangeScan, Result, Revision, Storage, StorageStats, Tombstone,
    WatchReceiver,
};

/// The most stale reads remembered (see [`EncryptedStorage::stale`]); past it the set
/// starts over.
const MAX_STALE: usize = 65_536;

/// A store whose values of configured resources are encrypted (see the module doc).
pub struct EncryptedStorage {
    inner: Arc<dyn Storage>,
    rules: Arc<Rules>,
    /// Keys and revisions read in a stale stored form, for [`Storage::stale`].
    stale: Mutex<HashSet<(Key, Revision)>>,
}

impl std::fmt::Debug for EncryptedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncryptedStorage").finish_non_exhaustive()
    }
}

impl EncryptedStorage {
    /// `inner` with `rules` applied.
    pub fn new(inner: Arc<dyn Storage>, rules: Arc<Rules>) -> Arc<EncryptedStorage> {
        Arc::new(EncryptedStorage {
            inner,
            rules,
            stale: Mutex::default(),
        })
    }

    /// Decrypts what `inner` returned, noting a stale stored form.
    fn opened(&self, kv: KeyValue) -> Result<KeyValue> {
        let (kv, stale) = self.rules.open_kv(kv)?;
        if stale {
            let mut set = self.stale.lock().unwrap_or_else(PoisonError::into_inner);
            if set.len() >= MAX_STALE {
                set.clear();
            }
            set.insert((kv.key.clone(), kv.mod_revision));
        }
        Ok(kv)
    }
}

/// The additional data that binds a value to its key.
fn context(key: &Key) -> Vec<u8> {
    format!(
        "{}|{}|{}|{}",
        key.cluster, key.resource, key.namespace, key.name
    )
    .into_bytes()
}

impl Rules {
    /// `plain` as stored under `key`.
    fn seal(&self, key: &Key, plain: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
        match self.entry(&key.resource) {
            None => Ok(plain),
            Some(e) => providers::seal(&e.providers, &context(key), plain),
        }
    }

    /// The plain value `stored` under `key` holds (the same bytes when stored plain), and
    /// whether its stored form is stale (not what a write would store now).
    fn open(&self, key: &Key, stored: &Bytes) -> Result<(Bytes, bool)> {
        let Some(e) = self.entry(&key.resource) else {
            return Ok((stored.clone(), false));
        };
        match providers::open(&e.providers, &context(key), stored) {
            Ok((None, stale)) => Ok((stored.clone(), stale)),
            Ok((Some(plain), stale)) => Ok((Bytes::from(plain), stale)),
            Err(why) => Err(Error::Corrupt(format!(
                "{}/{}/{}/{}: {why}",
                key.cluster, key.resource, key.namespace, key.name
            ))),
        }
    }

    fn open_kv(&self, mut kv: KeyValue) -> Result<(KeyValue, bool)> {
        let (value, stale) = self.open(&kv.key, &kv.value)?;
        kv.value = value;
        Ok((kv, stale))
    }

    fn encoder(self: &Arc<Self>, key: &Key, encode: Encoder) -> Encoder {
        if self.entry(&key.resource).is_none() {
            return encode;
        }
        let (rules, key) = (self.clone(), key.clone());
        Box::new(move |rev| rules.seal(&key, encode(rev)?))
    }

    /// Whether any configured entry could cover keys under `prefix`.
    fn touches(&self, prefix: &Prefix) -> bool {
        match &prefix.resource {
            Some(r) => self.entry(r).is_some(),
            None => !self.entries.is_empty(),
        }
    }
}

/// A scan whose pages are decrypted.
struct OpenScan {
    inner: Box<dyn RangeScan>,
    rules: Arc<Rules>,
}

#[async_trait::async_trait]
impl RangeScan for OpenScan {
    fn revision(&self) -> Revision {
        self.inner.revision()
    }

    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        match self.inner.next_page().await? {
            None => Ok(None),
            Some(page) => page
                .into_iter()
                .map(|kv| self.rules.open_kv(kv).map(|(kv, _)| kv))
                .collect::<Result<Vec<_>>>()
                .map(Some),
        }
    }
}

#[async_trait::async_trait]
impl Storage for EncryptedStorage {
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
        match self.inner.get(key).await? {
            Some(kv) => self.opened(kv).map(Some),
            None => Ok(None),
        }
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        if !self.rules.touches(prefix) {
            return self.inner.list(prefix, opts, filter).await;
        }
        let rules = &self.rules;
        // A filter sees the plain values (what it keeps is decrypted again below).
        let opened = move |kv: &KeyValue| match (filter, rules.open(&kv.key, &kv.value)) {
            (Some(f), Ok((value, _))) => f(&KeyValue {
                value,
                ..kv.clone()
            }),
            // Kept, so that the read below reports it.
            (_, _) => true,
        };
        let f: Option<Filter<'_>> = match filter {
            Some(_) => Some(&opened),
            None => None,
        };
        let mut out = self.inner.list(prefix, opts, f).await?;
        out.items = std::mem::take(&mut out.items)
            .into_iter()
            .map(|kv| self.opened(kv))
            .collect::<Result<Vec<_>>>()?;
        Ok(out)
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        self.inner.count(prefix).await
    }

    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        self.inner.count_after(prefix, start_after, at).await
    }

    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue> {
        let encode = self.rules.encoder(&key, encode);
        let kv = self.inner.put(key, precondition, encode).await?;
        self.opened(kv)
    }

    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        let encode = self.rules.encoder(&key, encode);
        let kv = self.inner.delete(key, precondition, encode).await?;
        self.opened(kv)
    }

    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let writes = writes
            .into_iter()
            .map(|w| BatchWrite {
                encode: self.rules.encoder(&w.key, w.encode),
                ..w
            })
            .collect();
        self.inner
            .write_batch(writes)
            .await
            .into_iter()
            .map(|r| r.and_then(|kv| self.opened(kv)))
            .collect()
    }

    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64> {
        let rules = self.rules.clone();
        let sealed: Tombstone = Arc::new(move |kv: &KeyValue, rev: Revision| {
            let (plain, _) = rules.open_kv(kv.clone()).map_err(|e| e.to_string())?;
            rules.seal(&kv.key, tombstone(&plain, rev)?)
        });
        self.inner.delete_cluster(cluster, batch, sealed).await
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
        let inner = self.inner.scan(prefix, at, page_size).await?;
        if !self.rules.touches(prefix) {
            return Ok(inner);
        }
        Ok(Box::new(OpenScan {
            inner,
            rules: self.rules.clone(),
        }))
    }

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<std::time::Duration>,
    ) -> Result<WatchReceiver> {
        let rx = self.inner.watch(prefix, from, progress_every).await?;
        if !self.rules.touches(prefix) {
            return Ok(rx);
        }
        let rules = self.rules.clone();
        Ok(rx.map_events(Arc::new(move |e: Arc<Event>| {
            if rules.entry(&e.kv.key.resource).is_none() {
                return e;
            }
            // A value that does not decrypt is passed on as stored; its reader's decoding
            // fails, as a read of it would.
            let key = &e.kv.key;
            let value = match rules.open(key, &e.kv.value) {
                Ok((v, _)) => v,
                Err(err) => {
                    tracing::warn!(error = %err, "watch event value could not be decrypted");
                    e.kv.value.clone()
                }
            };
            let prev = e.prev.as_ref().map(|p| match rules.open(key, p) {
                Ok((v, _)) => v,
                Err(_) => p.clone(),
            });
            Arc::new(Event {
                event_type: e.event_type,
                kv: KeyValue {
                    value,
                    ..e.kv.clone()
                },
                prev,
            })
        })))
    }

    /// Whether this value was read in a stale stored form (an older key, or in the clear
    /// where a key is configured): remembered per key and revision by the reads above.
    fn stale(&self, kv: &KeyValue) -> bool {
        self.stale
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(kv.key.clone(), kv.mod_revision))
    }

    fn encrypts(&self, storage_resource: &str) -> bool {
        self.rules.encrypts(storage_resource)
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
