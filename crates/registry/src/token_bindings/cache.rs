//! The ServiceAccount uid cache behind [`super::TokenBindings`]: a map filled on first use and
//! kept true by the process's informer ([`Invalidator`]; see the parent module's doc).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kplane_storage::{Key, KeyValue, Storage};
use serde_json::Value;

use crate::controllers::informer::InformerHandler;
use crate::error::{ApiError, ApiResult};

/// The storage resource of ServiceAccounts.
pub(crate) const SERVICE_ACCOUNTS: &str = "/serviceaccounts";

/// The storage resource of Secrets.
pub(crate) const SECRETS: &str = "/secrets";

/// The most ServiceAccounts remembered; past it the map starts over.
pub const MAX_ENTRIES: usize = 100_000;

/// (cluster, namespace, name).
type SaKey = (String, String, String);

#[derive(Default)]
struct Entries {
    map: HashMap<SaKey, String>,
    epoch: u64,
}

/// The ServiceAccount uid cache (see the module doc).
pub(crate) struct ServiceAccountCache {
    entries: RwLock<Entries>,
    /// Whether an informer pass has begun (only then are entries kept).
    following: AtomicBool,
    /// The most entries kept ([`MAX_ENTRIES`]; smaller in tests).
    max_entries: usize,
}

impl Default for ServiceAccountCache {
    fn default() -> ServiceAccountCache {
        ServiceAccountCache::with_bound(MAX_ENTRIES)
    }
}

impl ServiceAccountCache {
    fn with_bound(max_entries: usize) -> ServiceAccountCache {
        ServiceAccountCache {
            entries: RwLock::default(),
            following: AtomicBool::new(false),
            max_entries,
        }
    }

    pub(super) async fn uid(
        &self,
        storage: &dyn Storage,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<String>> {
        let key = (cluster.to_string(), namespace.to_string(), name.to_string());
        let epoch = {
            let e = self.entries.read().unwrap_or_else(PoisonError::into_inner);
            if self.following.load(Ordering::Acquire) {
                if let Some(uid) = e.map.get(&key) {
                    return Ok(Some(uid.clone()));
                }
            }
            e.epoch
        };
        let kv = storage
            .get(&Key::new(cluster, SERVICE_ACCOUNTS, namespace, name))
            .await
            .map_err(ApiError::from)?;
        let uid = kv.and_then(|kv| uid_of(&kv.value, true));
        if let Some(uid) = &uid {
            let mut e = self.entries.write().unwrap_or_else(PoisonError::into_inner);
            if e.epoch == epoch && self.following.load(Ordering::Acquire) {
                if e.map.len() >= self.max_entries {
                    e.map.clear();
                }
                e.map.insert(key, uid.clone());
            }
        }
        Ok(uid)
    }

    /// Forgets one ServiceAccount (`None`: all of them) and bumps the epoch.
    fn invalidate(&self, key: Option<&Key>) {
        let mut e = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        match key {
            Some(k) => {
                e.map
                    .remove(&(k.cluster.clone(), k.namespace.clone(), k.name.clone()));
            }
            None => e.map.clear(),
        }
        e.epoch += 1;
    }
}

/// Keeps the [`ServiceAccountCache`] true from the informer's events.
pub(crate) struct Invalidator(pub(crate) Arc<ServiceAccountCache>);

impl InformerHandler for Invalidator {
    /// Changes may have been missed: start over, caching nothing until the replay ends
    /// (the changes made during it are delivered only after it).
    fn on_resync(&self) {
        self.0.following.store(false, Ordering::Release);
        self.0.invalidate(None);
    }

    /// From now on every change after a read arrives as an event (the ones made during the
    /// replay first): entries may be kept.
    fn on_synced(&self) {
        self.0.invalidate(None);
        self.0.following.store(true, Ordering::Release);
    }

    fn on_object(&self, kv: &KeyValue, _deleted: bool, replay: bool) {
        if !replay && kv.key.resource == SERVICE_ACCOUNTS {
            self.0.invalidate(Some(&kv.key));
        }
    }
}

/// An informer that ends (the store shut down, or its task stopped) invalidates nothing
/// more: nothing is cached from then on.
impl Drop for Invalidator {
    fn drop(&mut self) {
        self.0.following.store(false, Ordering::Release);
        self.0.invalidate(None);
    }
}

/// The uid of a stored object; `None` for one being deleted when `live` is asked for.
pub(super) fn uid_of(bytes: &[u8], live: bool) -> Option<String> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let meta = v.get("metadata")?;
    if live && meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return None;
    }
    meta.get("uid")?.as_str().map(str::to_string)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kplane_storage::Precondition;

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

    fn event(cluster: &str, name: &str) -> KeyValue {
        KeyValue {
            key: Key::new(cluster, SERVICE_ACCOUNTS, "default", name),
            value: bytes::Bytes::from_static(b"{}"),
            create_revision: 1,
            mod_revision: 2,
        }
    }

    /// Past its bound (here 3, so that the test can go ten times over it) the map starts
    /// over instead of growing, and every answer stays right.
    #[tokio::test]
    async fn the_map_stays_within_its_bound() {
        let s: Arc<dyn Storage> = crate::testing::memory_store();
        let c = ServiceAccountCache::with_bound(3);
        c.following.store(true, Ordering::Release);
        for i in 0..31 {
            let (name, uid) = (format!("sa-{i}"), format!("u-{i}"));
            put(&s, "root", &name, &uid, Precondition::MustNotExist).await;
        }
        for round in 0..2 {
            for i in 0..31 {
                let uid = c.uid(&*s, "root", "default", &format!("sa-{i}")).await;
                assert_eq!(
                    uid.unwrap().as_deref(),
                    Some(format!("u-{i}").as_str()),
                    "{round}/{i}"
                );
                assert!(c.entries.read().unwrap().map.len() <= 3);
            }
        }
        assert_eq!(c.uid(&*s, "root", "default", "nope").await.unwrap(), None);
        s.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn nothing_is_cached_before_the_informer_follows_and_changes_drop_entries() {
        let s: Arc<dyn Storage> = crate::testing::memory_store();
        let cache = Arc::new(ServiceAccountCache::default());
        let inv = Invalidator(cache.clone());
        put(&s, "root:a", "sa", "u1", Precondition::MustNotExist).await;
        let uid = |c: &'static str| {
            let (cache, s) = (cache.clone(), s.clone());
            async move { cache.uid(&*s, c, "default", "sa").await.unwrap() }
        };
        assert_eq!(uid("root:a").await.as_deref(), Some("u1"));
        assert!(
            cache.entries.read().unwrap().map.is_empty(),
            "not following"
        );
        inv.on_resync();
        assert_eq!(uid("root:a").await.as_deref(), Some("u1"));
        assert!(
            cache.entries.read().unwrap().map.is_empty(),
            "during the replay"
        );
        inv.on_synced();
        assert_eq!(uid("root:a").await.as_deref(), Some("u1"));
        assert_eq!(cache.entries.read().unwrap().map.len(), 1);
        // Same name in another cluster is another ServiceAccount.
        assert_eq!(uid("root:b").await, None);
        // Recreated with a new uid: its event drops the entry (a replayed one does not
        // need to: the pass began by starting over).
        put(&s, "root:a", "sa", "u2", Precondition::MustExist).await;
        inv.on_object(&event("root:a", "sa"), false, true);
        assert_eq!(uid("root:a").await.as_deref(), Some("u1"), "still cached");
        inv.on_object(&event("root:a", "other"), false, false);
        inv.on_object(
            &KeyValue {
                key: Key::new("root:a", "/configmaps", "default", "sa"),
                ..event("root:a", "sa")
            },
            false,
            false,
        );
        assert_eq!(uid("root:a").await.as_deref(), Some("u1"), "other keys");
        inv.on_object(&event("root:a", "sa"), false, false);
        assert_eq!(uid("root:a").await.as_deref(), Some("u2"));
        // Deleted.
        s.delete(
            Key::new("root:a", SERVICE_ACCOUNTS, "default", "sa"),
            Precondition::MustExist,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await
        .unwrap();
        inv.on_object(&event("root:a", "sa"), true, false);
        assert_eq!(uid("root:a").await, None);
        // A new pass starts over; an ended informer leaves nothing cached.
        put(&s, "root:a", "sa", "u3", Precondition::MustNotExist).await;
        assert_eq!(uid("root:a").await.as_deref(), Some("u3"));
        assert_eq!(cache.entries.read().unwrap().map.len(), 1);
        inv.on_resync();
        assert!(cache.entries.read().unwrap().map.is_empty());
        inv.on_synced();
        assert_eq!(uid("root:a").await.as_deref(), Some("u3"));
        drop(inv);
        assert!(cache.entries.read().unwrap().map.is_empty());
        assert_eq!(uid("root:a").await.as_deref(), Some("u3"));
        assert!(cache.entries.read().unwrap().map.is_empty(), "no informer");
        s.shutdown().await.unwrap();
    }

    #[test]
    fn terminating_accounts_are_gone() {
        assert_eq!(
            uid_of(br#"{"metadata":{"uid":"u"}}"#, true).as_deref(),
            Some("u")
        );
        let deleting = br#"{"metadata":{"uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z"}}"#;
        assert_eq!(uid_of(deleting, true), None);
        assert_eq!(uid_of(deleting, false).as_deref(), Some("u"));
        assert_eq!(uid_of(b"not json", true), None);
    }
}
