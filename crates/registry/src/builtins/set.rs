//! One type's built-in objects ([`Builtins`]) and how one is rendered for a logical
//! cluster: its uid, its cluster's birth revision and timestamp.

use std::collections::BTreeMap;

use bytes::Bytes;
use kplane_storage::Revision;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::catalog::ResourceType;
use crate::error::ApiError;

/// A type's built-in objects, by name (API form, without uid, timestamps and revision).
#[derive(Debug, Default)]
pub struct Builtins {
    by_name: BTreeMap<String, Value>,
}

/// When a logical cluster was bootstrapped: its built-in objects' `resourceVersion` and
/// `creationTimestamp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Birth {
    pub revision: Revision,
    pub created: String,
}

impl Builtins {
    /// The objects (each with `metadata.name`).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Builtins {
        let by_name = objects
            .into_iter()
            .map(|o| (crate::meta::name_of(&o).to_string(), o))
            .collect();
        Builtins { by_name }
    }

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

    /// Built-in `name` as `cluster` serves it, with `resourceVersion` `rv`.
    pub fn render(
        &self,
        rt: &ResourceType,
        cluster: &str,
        name: &str,
        birth: &Birth,
        rv: Revision,
    ) -> Option<Bytes> {
        let mut obj = self.by_name.get(name)?.clone();
        let o = obj.as_object_mut()?;
        o.insert("apiVersion".into(), json!(rt.api_version()));
        o.insert("kind".into(), json!(rt.kind));
        let meta = o.entry("metadata").or_insert_with(|| json!({}));
        let m = meta.as_object_mut()?;
        m.insert(
            "uid".into(),
            json!(uid(cluster, &rt.storage_resource, name)),
        );
        m.insert("resourceVersion".into(), json!(rv.to_string()));
        m.insert("creationTimestamp".into(), json!(birth.created));
        serde_json::to_vec(&obj).ok().map(Bytes::from)
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

/// The 403 a delete of a built-in object gets when the cluster stores none of its name
/// (as kube-apiserver refuses to delete the `default` namespace): kplane keeps it, where
/// kube-apiserver would delete it and re-create it at its next start.
pub fn undeletable(rt: &ResourceType, name: &str) -> ApiError {
    ApiError::from(kplane_types::Status::forbidden(
        &rt.group,
        &rt.plural,
        name,
        &format!(
            "this default {} is part of every logical cluster and may not be deleted; \
             write one of the same name to replace it",
            rt.kind
        ),
    ))
}
