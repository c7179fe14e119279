//! Per-logical-cluster catalogs: the built-in types plus the cluster's established CRDs.
//!
//! A cluster's catalog is loaded lazily on first use (one prefix scan of its CRDs) and
//! rebuilt after every CRD write in that cluster. Catalogs are shared by content: clusters
//! that install identical CRDs get the same `Arc<Catalog>` (and so the same discovery and
//! OpenAPI documents and compiled schemas), so 10,000 tenants running the same operator
//! cost one catalog, not 10,000. A cluster without CRDs uses the built-in catalog.

use kplane_types::{ClusterName, ClusterScope};
use std::sync::Arc;

use kplane_storage::Prefix;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::catalog::{Catalog, ResourceType};
use super::crd::{self, CRD_RESOURCE};
use super::{corrupt, meta, Registry};
use crate::error::{ApiError, ApiResult};
use crate::options::{WriteParams, APISERVER_MANAGER};

pub(crate) mod cache;
pub use cache::Catalogs;

/// The part of a CRD that decides what it serves.
pub(crate) fn serving_content(crd: &Value) -> Value {
    json!({
        "name": meta::name_of(crd),
        "spec": crd.get("spec"),
        "acceptedNames": crd.pointer("/status/acceptedNames"),
        "established": crd::is_established(crd),
        "terminating": meta::is_deleting(crd),
    })
}

impl Registry {
    /// The catalog serving `scope`: one cluster's, or for the wildcard and subtrees the
    /// built-ins plus the custom resource types of their clusters' CRDs
    /// ([`crate::wildcard`]).
    pub async fn catalog_for(&self, scope: &ClusterScope) -> ApiResult<Arc<Catalog>> {
        match scope {
            ClusterScope::One(cluster) => self.cluster_catalog(cluster).await,
            ClusterScope::Wildcard | ClusterScope::Subtree { .. } => {
                self.multi_cluster_catalog(scope).await
            }
        }
    }

    /// The catalog serving one logical cluster: built-ins and its established CRDs.
    pub(crate) async fn cluster_catalog(&self, cluster: &ClusterName) -> ApiResult<Arc<Catalog>> {
        if let Some(c) = self.catalogs.cached(cluster) {
            return Ok(c);
        }
        let generation = self
            .catalogs
            .generation
            .load(std::sync::atomic::Ordering::Acquire);
        let c = self.load_catalog(cluster).await?;
        self.catalogs.store_loaded(cluster, c.clone(), generation);
        Ok(c)
    }

    /// Rebuilds a cluster's catalog from its CRDs (after a CRD write).
    pub(super) async fn refresh_catalog(&self, cluster: &ClusterName) -> ApiResult<()> {
        let c = self.load_catalog(cluster).await?;
        self.catalogs.store(cluster, c);
        self.catalogs.multi.invalidate();
        Ok(())
    }

    /// After a CRD is gone, CRDs refused for a name conflict may be acceptable now: recompute
    /// their status (the naming controller re-queues the whole group) and refresh the catalog.
    /// Each CRD is rewritten through its `/status` (the write computes the status) under
    /// kube-apiserver's field manager, as upstream's naming controller does. Called without
    /// the CRD write lock held: each rewrite takes it.
    pub(super) async fn recheck_crd_names(&self, cluster: &ClusterName) -> ApiResult<()> {
        let crds = self.cluster_crds(cluster).await?;
        let crd_type = self
            .builtin_catalog()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .cloned()
            .ok_or_else(|| ApiError::internal("customresourcedefinitions are not registered"))?;
        let t = super::Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: crd_type,
            namespace: None,
        };
        let w = WriteParams::controller_named(APISERVER_MANAGER);
        for c in crds
            .iter()
            .filter(|c| !crd::is_established(c) && !meta::is_deleting(c))
        {
            if crd::compute_status(c, &crds) == c.get("status").cloned().unwrap_or_default() {
                continue;
            }
            let name = meta::name_of(c);
            // `c` carries the resourceVersion it was read at: the update's precondition.
            // Boxed: the update may remove a CRD, which rechecks names again.
            match Box::pin(self.update(&t, name, Some("status"), c.clone(), &w)).await {
                Ok(_) => {}
                // Gone meanwhile: nothing to recompute.
                Err(e) if e.code() == 404 => {}
                Err(e) => super::controllers::write_failed(
                    "crd-naming-controller",
                    cluster.as_str(),
                    &t.rt,
                    "",
                    name,
                    &e,
                ),
            }
        }
        self.refresh_catalog(cluster).await
    }

    /// Every CRD object of a cluster.
    pub(super) async fn cluster_crds(&self, cluster: &ClusterName) -> ApiResult<Vec<Value>> {
        let prefix = Prefix::resource(cluster, CRD_RESOURCE);
        let res = self
            .storage
            .list(&prefix, &Default::default(), None)
            .await
            .map_err(ApiError::from)?;
        res.items
            .iter()
            .map(|kv| serde_json::from_slice(&kv.value).map_err(|e| corrupt(&e)))
            .collect()
    }

    async fn load_catalog(&self, cluster: &ClusterName) -> ApiResult<Arc<Catalog>> {
        let mut crds = self.cluster_crds(cluster).await?;
        crds.retain(crd::is_established);
        if crds.is_empty() {
            return Ok(self.catalogs.builtin().clone());
        }
        crds.sort_by(|a, b| meta::name_of(a).cmp(meta::name_of(b)));
        let mut h = Sha256::new();
        for c in &crds {
            h.update(serving_content(c).to_string().as_bytes());
            h.update([0u8]);
        }
        let fingerprint = hex::encode(h.finalize());
        let builtin = self.catalogs.builtin().clone();
        Ok(self.catalogs.intern(fingerprint.clone(), move || {
            let mut types: Vec<Arc<ResourceType>> = builtin.all().to_vec();
            let mut custom: Vec<ResourceType> = crds
                .iter()
                .flat_map(|c| crd::served::resource_types(c, crd::schema_cache()))
                .collect();
            // Group by group (in first-seen order), versions by Kubernetes priority.
            custom.sort_by(|a, b| {
                a.group
                    .cmp(&b.group)
                    .then(crd::version_priority_cmp(&a.version, &b.version))
                    .then(a.plural.cmp(&b.plural))
            });
            types.extend(custom.into_iter().map(Arc::new));
            Catalog::from_arcs(types, fingerprint)
        }))
    }
}
