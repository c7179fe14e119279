//! Whether a ServiceAccount still exists, and its uid: what the token authenticator asks on
//! every request that carries a ServiceAccount token, so deleting the ServiceAccount (or
//! recreating it, with a new uid) revokes its tokens.
//!
//! Answers come from a map filled on first use and kept true by one storage watch of
//! ServiceAccounts in every logical cluster: any change of a ServiceAccount drops its entry
//! (the next request reads it again). An epoch counter, bumped by every change under the
//! map's lock, keeps a read that raced with a change from caching what it read. While the
//! watch is down (start-up, after it fell behind or failed) nothing is cached and every
//! lookup reads storage. Only ServiceAccounts that present tokens are held, at most
//! [`MAX_ENTRIES`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kplane_storage::{CloseReason, Clusters, Error as StorageError, Key, Prefix, Storage};
use kplane_storage::{WatchEvent, WatchReceiver};
use serde_json::Value;

/// The storage resource of ServiceAccounts.
pub const SERVICE_ACCOUNTS: &str = "/serviceaccounts";

/// The most ServiceAccounts remembered; past it the map starts over.
pub const MAX_ENTRIES: usize = 100_000;

/// (cluster, namespace, name).
type SaKey = (String, String, String);

#[derive(Default)]
struct Cache {
    entries: HashMap<SaKey, String>,
    epoch: u64,
}

/// The ServiceAccount uid cache (see the module doc).
pub struct ServiceAccountLookup {
    storage: Arc<dyn Storage>,
    cache: RwLock<Cache>,
    /// Whether the watch is live (only then are entries kept).
    watching: AtomicBool,
    /// The most entries kept ([`MAX_ENTRIES`]; smaller in tests).
    max_entries: usize,
}

impl std::fmt::Debug for ServiceAccountLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountLookup")
            .field("watching", &self.watching.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ServiceAccountLookup {
    pub fn new(storage: Arc<dyn Storage>) -> Arc<ServiceAccountLookup> {
        Arc::new(ServiceAccountLookup {
            storage,
            cache: RwLock::new(Cache::default()),
            watching: AtomicBool::new(false),
            max_entries: MAX_ENTRIES,
        })
    }

    /// Starts the invalidating watch on the current runtime; it ends with the store.
    pub fn start(self: &Arc<Self>) {
        let me = self.clone();
        tokio::spawn(async move { me.run().await });
    }

    /// The uid of the ServiceAccount, `None` when it does not exist or is being deleted.
    pub async fn uid(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, StorageError> {
        let key = (cluster.to_string(), namespace.to_string(), name.to_string());
        let epoch = {
            let c = self.cache.read().map_err(|_| poisoned())?;
            if self.watching.load(Ordering::Acquire) {
                if let Some(uid) = c.entries.get(&key) {
                    return Ok(Some(uid.clone()));
                }
            }
            c.epoch
        };
        let kv = self
            .storage
            .get(&Key::new(cluster, SERVICE_ACCOUNTS, namespace, name))
            .await?;
        let uid = kv.and_then(|kv| live_uid(&kv.value));
        if let Some(uid) = &uid {
            let mut c = self.cache.write().map_err(|_| poisoned())?;
            if c.epoch == epoch && self.watching.load(Ordering::Acquire) {
                if c.entries.len() >= self.max_entries {
                    c.entries.clear();
                }
                c.entries.insert(key, uid.clone());
            }
        }
        Ok(uid)
    }

    /// Forgets everything (also: one ServiceAccount) and bumps the epoch.
    fn invalidate(&self, key: Option<&Key>) {
        if let Ok(mut c) = self.cache.write() {
            match key {
                Some(k) => {
                    c.entries
                        .remove(&(k.cluster.clone(), k.namespace.clone(), k.name.clone()));
                }
                None => c.entries.clear(),
            }
            c.epoch += 1;
        }
    }

    async fn run(&self) {
        let prefix = Prefix {
            cluster: Clusters::All,
            resource: Some(SERVICE_ACCOUNTS.into()),
            namespace: None,
        };
        loop {
            self.watching.store(false, Ordering::Release);
            self.invalidate(None);
            let from = self.storage.current_revision();
            let rx = match self.storage.watch(&prefix, from, None).await {
                Ok(rx) => rx,
                Err(StorageError::ShuttingDown) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "ServiceAccount token cache: watch failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            // Everything read from now on is at or after `from`: later changes arrive.
            self.watching.store(true, Ordering::Release);
            if !self.follow(rx).await {
                self.watching.store(false, Ordering::Release);
                return;
            }
        }
    }

    /// Applies the watch's changes; `false` when the store shuts down.
    async fn follow(&self, mut rx: WatchReceiver) -> bool {
        while let Some(ev) = rx.recv().await {
            match ev {
                WatchEvent::Event(e) => self.invalidate(Some(&e.kv.key)),
                WatchEvent::Progress(_) => {}
                WatchEvent::Closed(CloseReason::TooSlow) => {
                    tracing::warn!("ServiceAccount token cache fell behind; starting over");
                    return true;
                }
                WatchEvent::Closed(CloseReason::ShuttingDown) => return false,
            }
        }
        false
    }
}

fn poisoned() -> StorageError {
    StorageError::Backend("ServiceAccount cache lock poisoned".into())
}

/// The uid of a stored ServiceAccount that is not being deleted.
fn live_uid(bytes: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let meta = v.get("metadata")?;
    if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return None;
    }
    meta.get("uid")?.as_str().map(str::to_string)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kplane_storage::{Precondition, SledStorage, SledStorageOptions};

    async fn put(s: &Arc<dyn Storage>, cluster: &str, name: &str, uid: &str, p: Precondition) {
        let body =
            serde_json::json!({"metadata": {"name": name, "namespace": "default", "uid": uid}})
                .to_string()
                .into_bytes();
        s.put(
            Key::new(cluster, SERVICE_ACCOUNTS, "default", name),
            p,
            Box::new(move |_| Ok(body)),
        )
        .await
        .unwrap();
    }

    /// Past its bound (here 3, so that the test can go ten times over it) the map starts
    /// over instead of growing, and every answer stays right.
    #[tokio::test]
    async fn the_map_stays_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> =
            SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
        let l = ServiceAccountLookup {
            storage: s.clone(),
            cache: RwLock::new(Cache::default()),
            watching: AtomicBool::new(true),
            max_entries: 3,
        };
        for i in 0..31 {
            put(
                &s,
                "root",
                &format!("sa-{i}"),
                &format!("u-{i}"),
                Precondition::MustNotExist,
            )
            .await;
        }
        for round in 0..2 {
            for i in 0..31 {
                let uid = l.uid("root", "default", &format!("sa-{i}")).await.unwrap();
                assert_eq!(
                    uid.as_deref(),
                    Some(format!("u-{i}").as_str()),
                    "{round}/{i}"
                );
                assert!(l.cache.read().unwrap().entries.len() <= 3);
            }
        }
        assert_eq!(l.uid("root", "default", "nope").await.unwrap(), None);
        s.shutdown().await.unwrap();
    }

    /// Waits until the cache has seen every change up to now (its epoch moved past them).
    async fn settle(l: &ServiceAccountLookup, epoch_at_least: u64) {
        for _ in 0..2000 {
            if l.cache.read().unwrap().epoch >= epoch_at_least {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the cache never saw the change");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletion_and_recreation_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> =
            SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
        let l = ServiceAccountLookup::new(s.clone());
        l.start();
        for _ in 0..2000 {
            if l.watching.load(Ordering::Acquire) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(l.watching.load(Ordering::Acquire));
        put(&s, "root:a", "sa", "u1", Precondition::MustNotExist).await;
        settle(&l, 2).await;
        assert_eq!(
            l.uid("root:a", "default", "sa").await.unwrap().as_deref(),
            Some("u1")
        );
        // Cached now; same name in another cluster is another ServiceAccount.
        assert_eq!(l.cache.read().unwrap().entries.len(), 1);
        assert_eq!(l.uid("root:b", "default", "sa").await.unwrap(), None);
        // Recreated with a new uid: the change drops the entry.
        let epoch = l.cache.read().unwrap().epoch;
        put(&s, "root:a", "sa", "u2", Precondition::MustExist).await;
        settle(&l, epoch + 1).await;
        assert_eq!(
            l.uid("root:a", "default", "sa").await.unwrap().as_deref(),
            Some("u2")
        );
        // Deleted.
        let epoch = l.cache.read().unwrap().epoch;
        s.delete(
            Key::new("root:a", SERVICE_ACCOUNTS, "default", "sa"),
            Precondition::MustExist,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await
        .unwrap();
        settle(&l, epoch + 1).await;
        assert_eq!(l.uid("root:a", "default", "sa").await.unwrap(), None);
        s.shutdown().await.unwrap();
    }

    #[test]
    fn terminating_accounts_are_gone() {
        assert_eq!(
            live_uid(br#"{"metadata":{"uid":"u"}}"#).as_deref(),
            Some("u")
        );
        assert_eq!(
            live_uid(br#"{"metadata":{"uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z"}}"#),
            None
        );
        assert_eq!(live_uid(b"not json"), None);
    }
}
