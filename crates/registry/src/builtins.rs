//! Built-in objects: objects every logical cluster holds without storing them (the RBAC
//! bootstrap ClusterRoles and ClusterRoleBindings), shared by content across clusters and
//! shown by the read path of one logical cluster wherever the cluster stores no object of
//! the same name.
//!
//! A type offers them through its strategy ([`crate::TypeStrategy::builtins`]); the generic
//! verbs merge them in here, without asking which type they serve:
//!
//! - get: a built-in object when storage has none of that name;
//! - list (and a watch's initial events): merged into each page in key order, after the
//!   selection, with `limit`/`continue` counting them like stored items (a continue token
//!   may point after a built-in name); a built-in object hidden by a stored one at the
//!   list's revision is left out;
//! - watch: the stored object that takes a built-in's place is a MODIFIED of it (not an
//!   ADDED), and its deletion is a MODIFIED back to the built-in (not a DELETED);
//! - update, patch and apply start from the built-in object when none is stored: the write
//!   creates the stored object (the "override") with the built-in's uid and creation time;
//!   create of a built-in name is a 409 AlreadyExists, delete a 403 (the object cannot go).
//!
//! A rendered object carries what is particular to its cluster, computed, never held: a uid
//! derived from (cluster, resource, name), the cluster's birth (the creation revision and
//! timestamp of its `default` namespace, which every bootstrapped cluster has) as
//! `resourceVersion` and `creationTimestamp`. Multi-cluster reads (`/clusters/*`) show
//! stored objects only.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use kplane_storage::{Key, KeyValue, ListOptions, Prefix, Revision};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::{storage_error, Registry, ResourceType, Target};

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

/// Used when a cluster has no `default` namespace (clusters created on a first write in
/// development mode before it was bootstrapped).
const UNKNOWN_BIRTH_REVISION: Revision = 1;
const UNKNOWN_BIRTH_TIME: &str = "1970-01-01T00:00:00Z";

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
        m.insert("uid".into(), json!(uid(cluster, &rt.storage_resource, name)));
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

/// What a list or watch of one cluster needs to show its built-in objects.
#[derive(Debug, Clone)]
pub(crate) struct Overlay {
    pub builtins: &'static Builtins,
    pub cluster: String,
    pub birth: Birth,
    /// Built-in names the cluster stores an object of (at the list's revision).
    pub hidden: HashSet<String>,
}

impl Overlay {
    /// Built-in `name` with the cluster's birth revision.
    pub fn render(&self, rt: &ResourceType, name: &str) -> Option<Bytes> {
        self.builtins
            .render(rt, &self.cluster, name, &self.birth, self.birth.revision)
    }

    /// The shown built-in names after `after` (exclusive) up to `upto` (inclusive, `None`:
    /// no bound).
    pub fn names_between<'a>(
        &'a self,
        after: Option<&'a str>,
        upto: Option<&'a str>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.builtins
            .names()
            .filter(move |n| after.is_none_or(|a| *n > a))
            .filter(move |n| upto.is_none_or(|u| *n <= u))
            .filter(move |n| !self.hidden.contains(*n))
    }
}

impl Registry {
    /// The built-in objects `t` shows: its type's, for a request into one cluster.
    pub(crate) fn builtins_of(&self, t: &Target) -> Option<(&'static Builtins, String)> {
        let cluster = t.cluster.one()?;
        let b = t.rt.strategy.builtins(&t.rt)?;
        Some((b, cluster.as_str().to_string()))
    }

    /// When `cluster` was bootstrapped (see the module doc).
    pub(crate) async fn cluster_birth(&self, cluster: &str) -> ApiResult<Birth> {
        let key = Key::new(
            cluster,
            "/namespaces",
            "",
            crate::namespaces::DEFAULT_NAMESPACES[0],
        );
        let Some(kv) = self.storage.get(&key).await.map_err(ApiError::from)? else {
            return Ok(Birth {
                revision: UNKNOWN_BIRTH_REVISION,
                created: UNKNOWN_BIRTH_TIME.into(),
            });
        };
        let created = serde_json::from_slice::<Value>(&kv.value)
            .ok()
            .and_then(|v| {
                v.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| UNKNOWN_BIRTH_TIME.into());
        Ok(Birth {
            revision: kv.create_revision,
            created,
        })
    }

    /// Built-in `name` of `t` as a write's current object when storage has none: a
    /// [`KeyValue`] whose `create_revision` is 0 (no stored key), `mod_revision` the
    /// revision it is served with.
    pub(crate) async fn builtin_current(&self, t: &Target, name: &str) -> ApiResult<Option<KeyValue>> {
        let Some((b, cluster)) = self.builtins_of(t) else {
            return Ok(None);
        };
        if !b.contains(name) {
            return Ok(None);
        }
        let birth = self.cluster_birth(&cluster).await?;
        let Some(value) = b.render(&t.rt, &cluster, name, &birth, birth.revision) else {
            return Ok(None);
        };
        Ok(Some(KeyValue {
            key: t.key(name)?,
            value,
            create_revision: 0,
            mod_revision: birth.revision,
        }))
    }

    /// The stored object of `t` named `name`, or else its built-in object.
    pub(crate) async fn get_current(&self, t: &Target, name: &str) -> ApiResult<Option<KeyValue>> {
        match self.get_stored(t, name).await? {
            Some(kv) => Ok(Some(kv)),
            None => self.builtin_current(t, name).await,
        }
    }

    /// The overlay of a list of `t` read at `revision` (`None`: not a one-cluster read of
    /// a type with built-in objects).
    pub(crate) async fn list_overlay(
        &self,
        t: &Target,
        revision: Revision,
    ) -> ApiResult<Option<Overlay>> {
        let Some((builtins, cluster)) = self.builtins_of(t) else {
            return Ok(None);
        };
        let birth = self.cluster_birth(&cluster).await?;
        let prefix = Prefix::resource(cluster.as_str(), t.rt.storage_resource.as_str());
        let opts = ListOptions {
            at_revision: Some(revision),
            ..Default::default()
        };
        let filter = |kv: &KeyValue| builtins.contains(&kv.key.name);
        let res = self
            .storage
            .list(&prefix, &opts, Some(&filter))
            .await
            .map_err(|e| storage_error(e, &t.rt, ""))?;
        let hidden = res.items.into_iter().map(|kv| kv.key.name).collect();
        Ok(Some(Overlay {
            builtins,
            cluster,
            birth,
            hidden,
        }))
    }
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
