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
    let doc = built;
    cache.docs.insert(key, Arc::downgrade(&doc));
    if cache.docs.len() >= cache.sweep_at {
        cache.docs.retain(|_, weak| weak.strong_count() > 0);
        cache.sweep_at = (cache.docs.len() * 2).max(MIN_SWEEP);
    }
    Ok(doc)
}
