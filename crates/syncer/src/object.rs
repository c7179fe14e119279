//! How the syncer names and keeps the objects it handles: the keys of source objects
//! ([`ObjectKey`]) and of the copies they use ([`CopyKey`]), the compact form the caches
//! hold them in ([`Compact`]), and two helpers over JSON objects.

use std::sync::Arc;

use kplane_types::pod_refs::RefKind;
use serde_json::Value;

/// A source object: index of its synced kind, logical cluster, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub kind: usize,
    pub cluster: String,
    pub namespace: String,
    pub name: String,
}

/// A Secret, ConfigMap or ServiceAccount in kplane that synced objects reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CopyKey {
    pub kind: RefKind,
    pub cluster: String,
    pub namespace: String,
    pub name: String,
}

/// A cached JSON object kept as its text: a `serde_json::Value` takes several times the
/// memory of the text, and the caches hold every synced object twice (source and host).
/// Shared, so a whole-cache pass can copy the entries out cheaply and parse them unlocked.
#[derive(Debug, Clone)]
pub struct Compact(Arc<str>);

impl Compact {
    pub fn new(v: &Value) -> Self {
        Compact(Arc::from(serde_json::to_string(v).unwrap_or_default()))
    }

    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

/// An annotation of a JSON object.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// `obj` as cached: without managedFields, which the syncer never reads.
pub fn slim(mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    obj
}
