//! Multi-cluster reads: what `/clusters/*` and `/clusters/<root>:*` (a workspace and its
//! descendants) serve, and how their objects are marked.
//!
//! - The catalog of a multi-cluster scope: the built-in types plus every custom resource
//!   type (group, version, plural) that an established CRD serves in at least one cluster of
//!   the scope. It is built from one paged storage list of the scope's CRDs (the
//!   resource-first index, so no per-cluster work), deduplicated by CRD content, and cached
//!   per scope until any cluster's CRDs change ([`MultiCatalogs::invalidate`], called where
//!   a cluster's own catalog is refreshed or forgotten). The custom types carry no
//!   conversion: each object is returned as stored in its cluster. When clusters disagree
//!   on a type (same group, version and plural, different CRDs), the first cluster in key
//!   order decides its kind and scope.
//! - [`annotate`]: every object such a read returns carries the `kplane.io/cluster`
//!   annotation naming its cluster. It is added when serving, never stored; reads of one
//!   cluster never pass through here.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kplane_storage::{Clusters, ListOptions, Prefix};
use kplane_types::{ClusterName, ClusterScope};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::catalog::{Catalog, ResourceType};
use super::crd::{self, CRD_RESOURCE};
use super::{corrupt, Registry};
use crate::error::{ApiError, ApiResult};

/// The annotation naming the logical cluster of each object a multi-cluster list or watch
/// returns.
pub const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";

/// CRDs read per storage list while building a multi-cluster catalog.
pub(crate) const CRD_PAGE: usize = 500;

/// Distinct subtree roots whose catalogs are kept; the cache starts over past this.
const MAX_CACHED_SCOPES: usize = 1024;

/// The object with `metadata.annotations["kplane.io/cluster"] = cluster`.
pub(crate) fn annotate(obj: &[u8], cluster: &str) -> ApiResult<Bytes> {
    let mut v: Value = serde_json::from_slice(obj).map_err(|e| corrupt(&e))?;
    let Some(o) = v.as_object_mut() else {
        return Err(corrupt(&"a stored object is not a JSON object"));
    };
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return Err(corrupt(&"a stored object's metadata is not a JSON object"));
    };
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !ann.is_object() {
        *ann = Value::Object(Default::default());
    }
    if let Some(ann) = ann.as_object_mut() {
        ann.insert(CLUSTER_ANNOTATION.into(), Value::String(cluster.into()));
    }
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| corrupt(&e))
}

/// The cached catalogs of multi-cluster scopes (`None`: every cluster; `Some(root)`: a
/// subtree).
#[derive(Debug, Default)]
pub(crate) struct MultiCatalogs {
    state: Mutex<MultiState>,
}

#[derive(Debug, Default)]
struct MultiState {
    /// Bumped by every invalidation: a catalog built from CRDs read before it is not kept.
    generation: u64,
    by_scope: HashMap<Option<ClusterName>, Arc<Catalog>>,
}

impl MultiCatalogs {
    /// The cached catalog, or the generation a catalog built now belongs to.
    fn lookup(&self, key: &Option<ClusterName>) -> Result<Arc<Catalog>, u64> {
        let Ok(st) = self.state.lock() else {
            return Err(u64::MAX);
        };
        st.by_scope.get(key).cloned().ok_or(st.generation)
    }

    /// Keeps a catalog built at `generation`, unless CRDs changed meanwhile.
    fn store(&self, key: Option<ClusterName>, generation: u64, c: Arc<Catalog>) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        if st.generation != generation {
            return;
        }
        if st.by_scope.len() >= MAX_CACHED_SCOPES {
            st.by_scope.clear();
        }
        st.by_scope.insert(key, c);
    }

    /// Some cluster's CRDs changed: every multi-cluster catalog is rebuilt on next use.
    pub(crate) fn invalidate(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.generation = st.generation.wrapping_add(1);
            st.by_scope.clear();
        }
    }

    /// Number of cached scopes (for tests).
    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.state.lock().map(|s| s.by_scope.len()).unwrap_or(0)
    }
}

impl Registry {
    /// The catalog serving a multi-cluster scope (built-ins plus the custom resource types
    /// of the scope's CRDs); for one cluster, its own catalog.
    pub(crate) async fn multi_cluster_catalog(
        &self,
        scope: &ClusterScope,
    ) -> ApiResult<Arc<Catalog>> {
        let (key, clusters) = match scope {
            ClusterScope::One(c) => return self.cluster_catalog(c).await,
            ClusterScope::Wildcard => (None, Clusters::All),
            ClusterScope::Subtree { root, .. } => {
                (Some(root.clone()), Clusters::Subtree(root.as_str().into()))
            }
        };
        let generation = match self.catalogs.multi.lookup(&key) {
            Ok(c) => return Ok(c),
            Err(g) => g,
        };
        let c = self.build_multi_catalog(clusters).await?;
        self.catalogs.multi.store(key, generation, c.clone());
        Ok(c)
    }

    /// Reads the scope's established CRDs (each distinct content once) and builds the
    /// catalog, shared with any other catalog of the same content.
    async fn build_multi_catalog(&self, clusters: Clusters) -> ApiResult<Arc<Catalog>> {
        let prefix = Prefix {
            cluster: clusters,
            resource: Some(CRD_RESOURCE.into()),
            namespace: None,
        };
        let mut opts = ListOptions {
            limit: Some(CRD_PAGE),
            ..Default::default()
        };
        let mut seen = HashSet::new();
        let mut distinct: Vec<Value> = Vec::new();
        let mut h = Sha256::new();
        loop {
            let page = self
                .storage
                .list(&prefix, &opts, None)
                .await
                .map_err(ApiError::from)?;
            for kv in &page.items {
                let c: Value = serde_json::from_slice(&kv.value).map_err(|e| corrupt(&e))?;
                if !crd::is_established(&c) {
                    continue;
                }
                let content = super::catalogs::serving_content(&c).to_string();
                let digest = Sha256::digest(content.as_bytes());
                if seen.insert(digest) {
                    h.update(digest);
                    distinct.push(c);
                }
            }
            match (page.more, page.items.last()) {
                (true, Some(last)) => {
                    opts.start_after = Some(last.key.clone());
                    opts.at_revision = Some(page.revision);
                }
                _ => break,
            }
        }
        let builtin = self.catalogs.builtin().clone();
        if distinct.is_empty() {
            return Ok(builtin);
        }
        let fingerprint = format!("multi:{}", hex::encode(h.finalize()));
        Ok(self
            .catalogs
            .intern(fingerprint.clone(), move || union(&builtin, &distinct, fingerprint)))
    }
}

/// Built-ins plus each CRD's types, the first definition of a (group, version, plural)
/// winning, without conversions.
fn union(builtin: &Catalog, crds: &[Value], fingerprint: String) -> Catalog {
    let mut types: Vec<Arc<ResourceType>> = builtin.all().to_vec();
    let mut taken: HashSet<(String, String, String)> = types
        .iter()
        .map(|t| (t.group.clone(), t.version.clone(), t.plural.clone()))
        .collect();
    let mut custom: Vec<ResourceType> = Vec::new();
    for c in crds {
        for mut t in crd::resource_types(c, crd::schema_cache()) {
            if taken.insert((t.group.clone(), t.version.clone(), t.plural.clone())) {
                t.conversion = None;
                custom.push(t);
            }
        }
    }
    custom.sort_by(|a, b| {
        a.group
            .cmp(&b.group)
            .then(crd::version_priority_cmp(&a.version, &b.version))
            .then(a.plural.cmp(&b.plural))
    });
    types.extend(custom.into_iter().map(Arc::new));
    Catalog::from_arcs(types, fingerprint)
}
