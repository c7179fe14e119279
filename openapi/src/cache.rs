//! Process-wide sharing of identical group-version documents.
//!
//! Every logical cluster builds its own [`crate::OpenApiV3`], yet most of their group-versions
//! (all the built-in ones, and CRDs installed in several clusters) have identical resources and
//! therefore identical documents. Documents are looked up by a fingerprint of the resources
//! that produce them and shared while any `OpenApiV3` still holds them (the cache keeps only
//! weak references).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::{json, Value};

use crate::{canonical, Error, SchemaSource, ServedResource};

/// One serialized group-version document and its hash.
#[derive(Debug)]
pub(crate) struct GroupVersionDoc {
    pub json: Arc<[u8]>,
    pub hash: String,
}

struct Cache {
    docs: HashMap<String, Weak<GroupVersionDoc>>,
    /// Dead entries are swept when the map reaches this size.
    sweep_at: usize,
}

const MIN_SWEEP: usize = 64;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            docs: HashMap::new(),
            sweep_at: MIN_SWEEP,
        })
    })
}

/// A digest of everything about `members` that the document depends on (their order, and the
/// order of verbs and subresources, do not matter).
pub(crate) fn fingerprint(members: &[&ServedResource]) -> Result<String, Error> {
    let mut entries: Vec<Value> = members
        .iter()
        .map(|r| {
            let mut verbs = r.verbs.clone();
            verbs.sort();
            verbs.dedup();
            let mut subresources = r.subresources.clone();
            subresources.sort();
            subresources.dedup();
            let schema = match &r.schema {
                SchemaSource::BuiltIn(name) => json!({"builtIn": name}),
                SchemaSource::Custom { schema } => json!({"custom": schema}),
            };
            json!([
                r.group,
                r.version,
                r.plural,
                r.kind,
                r.namespaced,
                verbs,
                subresources,
                schema
            ])
        })
        .collect();
    entries.sort_by(|a, b| a[2].as_str().cmp(&b[2].as_str()));
    Ok(canonical::hash(&canonical::to_json(&Value::Array(
        entries,
    ))?))
}

/// The document for `members`, shared with other builds that have the same resources, or made
/// by `build` and remembered.
pub(crate) fn get_or_build(
    members: &[&ServedResource],
    build: impl FnOnce() -> Result<GroupVersionDoc, Error>,
) -> Result<Arc<GroupVersionDoc>, Error> {
    let key = fingerprint(members)?;
    let lock = || {
        cache()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(doc) = lock().docs.get(&key).and_then(Weak::upgrade) {
        return Ok(doc);
    }
    // Built outside the lock. If a concurrent build of the same resources got there first,
    // its document is kept and ours is dropped, so identical resources always share one.
    let built = Arc::new(build()?);
    let mut cache = lock();
    if let Some(existing) = cache.docs.get(&key).and_then(Weak::upgrade) {
        return Ok(existing);
    }
    cache.remember(key, &built);
    Ok(built)
}

impl Cache {
    /// Remembers `doc` under `key`. Once the map reaches `sweep_at` entries, the dead ones
    /// go and the next sweep is due at twice the live entries (at least [`MIN_SWEEP`]), so
    /// the map stays within about twice the documents in use.
    fn remember(&mut self, key: String, doc: &Arc<GroupVersionDoc>) {
        self.docs.insert(key, Arc::downgrade(doc));
        if self.docs.len() >= self.sweep_at {
            self.docs.retain(|_, weak| weak.strong_count() > 0);
            self.sweep_at = (self.docs.len() * 2).max(MIN_SWEEP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Arc<GroupVersionDoc> {
        Arc::new(GroupVersionDoc {
            json: Arc::from(b"{}".as_slice()),
            hash: String::new(),
        })
    }

    #[test]
    fn dead_documents_are_swept_once_the_map_reaches_its_bound() {
        for dead in [MIN_SWEEP - 2, MIN_SWEEP - 1, MIN_SWEEP, 10 * MIN_SWEEP] {
            let mut cache = Cache {
                docs: HashMap::new(),
                sweep_at: MIN_SWEEP,
            };
            let live = doc();
            cache.remember("live".into(), &live);
            for i in 0..dead {
                cache.remember(format!("dead-{i}"), &doc());
            }
            let entries = 1 + dead;
            if entries < MIN_SWEEP {
                assert_eq!(cache.docs.len(), entries, "{dead} dead: no sweep yet");
            } else {
                // Swept when the bound was reached; only what came after it is left.
                assert!(
                    cache.docs.len() < MIN_SWEEP,
                    "{dead} dead: {}",
                    cache.docs.len()
                );
            }
            assert!(cache.docs.get("live").and_then(Weak::upgrade).is_some());
            assert_eq!(cache.sweep_at, MIN_SWEEP, "one live document");
        }
    }

    #[test]
    fn the_sweep_bound_follows_the_documents_in_use() {
        let mut cache = Cache {
            docs: HashMap::new(),
            sweep_at: MIN_SWEEP,
        };
        let live: Vec<_> = (0..10 * MIN_SWEEP).map(|_| doc()).collect();
        for (i, d) in live.iter().enumerate() {
            cache.remember(format!("live-{i}"), d);
        }
        assert_eq!(
            cache.docs.len(),
            live.len(),
            "live documents are never swept"
        );
        assert!(cache.sweep_at > live.len() && cache.sweep_at <= 2 * live.len());
    }
}
