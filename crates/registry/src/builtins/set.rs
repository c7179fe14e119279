//! One type's built-in objects ([`Builtins`]) and how one is rendered for a logical
//! cluster: its uid, its cluster's birth revision and timestamp.

use std::collections::BTreeMap;

use kplane_storage::Revision;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A type's built-in objects, by name (API form, without uid, timestamps and revision).
#[derive(Debug, Default)]
pub struct Builtins {
    pub(crate) by_name: BTreeMap<String, Value>,
}

/// When a logical cluster was bootstrapped: its built-in objects' `resourceVersion` and
/// `creationTimestamp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Birth {
    pub revision: Revision,
    pub created: String,
}

impl Builtins {
    /// Whether `name` is a built-in object.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Built-in `name` as every cluster shares it (no uid, timestamp or revision).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// The uid of built-in `name` of `resource` in `cluster`: a name-based UUID (version 8,
/// from SHA-256), the same on every read and every server.
pub fn uid(cluster: &str, resource: &str, name: &str) -> String {
    let mut h = Sha256::new();
    for part in ["kplane.io/builtin", cluster, resource, name] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}
