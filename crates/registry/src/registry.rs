//! The registry's core value: [`Registry`] (its state; `assembly.rs` builds it). The verbs
//! are `impl Registry` blocks in `read`, `write` and `watch`; the features' operations in
//! their own modules; where a request points is [`crate::Target`].

use std::sync::Arc;

use crate::admission::chain::Admission;
use crate::catalog::{Catalog, ResourceType};
use crate::catalogs::cache::Catalogs;
use crate::clusters::state::ClusterState;
use crate::controllers::queue::Shared;
use crate::error::{ApiError, ApiResult};
use crate::hooks::Table as Hooks;
use crate::policies::cache::Cache as PolicyCache;
use crate::quota::Quotas;
use crate::rbac::cache::Cache as RbacCache;
use crate::resource_quota::index::QuotaIndex;
use crate::sync::ref_index::RefIndex;
use crate::sync::targets::Cache as SyncTargetCache;
use crate::token_bindings::cache::ServiceAccountCache;
use crate::webhooks::cache::Cache as WebhookCache;

use bytes::Bytes;
use kplane_storage::Storage;
use kplane_types::Status;
use serde_json::Value;

/// Converts a stored value to the representation of `rt`'s API version (per item of a
/// LIST and per watch event: a type stored as served costs one test).
pub(crate) fn to_api(rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes> {
    match &rt.conversion {
        None => Ok(stored),
        Some(c) => c.to_api(rt, stored),
    }
}

/// Object semantics for every served type.
pub struct Registry {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) catalogs: Catalogs,
    /// Which logical clusters exist and which are terminating (`clusters.rs`).
    pub(crate) clusters: ClusterState,
    /// The CA published in every namespace's `kube-root-ca.crt`.
    pub(crate) root_ca_pem: String,
    /// Flips to true when the server shuts down; long-running watches end.
    pub(crate) shutdown: tokio::sync::watch::Receiver<bool>,
    /// The registered controllers, their work queue and deadlines (`controllers`).
    pub(crate) controllers: Shared<Registry>,
    /// The admission chain every write passes between validation and storage.
    pub(crate) admission: Admission<Registry>,
    /// The base URL clients reach the server at, for Workspace URLs.
    pub(crate) external_url: std::sync::OnceLock<String>,
    /// The server's version (`/version`'s gitVersion), for archive headers.
    pub(crate) server_version: std::sync::OnceLock<String>,
    /// Compiled RBAC objects per logical cluster (`rbac::cache`).
    pub(crate) rbac: Arc<RbacCache>,
    /// The SyncTargets that apply to each logical cluster (`sync::targets`).
    pub(crate) sync_targets: Arc<SyncTargetCache>,
    /// What the objects assigned to each target refer to (`sync::ref_index`).
    pub(crate) sync_refs: Arc<RefIndex>,
    /// Each logical cluster's admission webhooks (`webhooks::cache`).
    pub(crate) webhooks: Arc<WebhookCache>,
    /// Each logical cluster's admission policies (`policies::cache`).
    pub(crate) policies: Arc<PolicyCache>,
    /// ServiceAccount uids for the token authenticator (`token_bindings`).
    pub(crate) service_accounts: Arc<ServiceAccountCache>,
    /// The built-in types' work around their writes (`hooks`).
    pub(crate) hooks: Hooks<Registry>,
    /// Each logical cluster's quota limits and usage (`quota`), kept by the storage
    /// decorator every write passes.
    pub(crate) quotas: Arc<Quotas>,
    /// The namespaces holding ResourceQuotas (`resource_quota::index`).
    pub(crate) quota_index: Arc<QuotaIndex>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    /// Sets the base URL clients reach this server at (`https://host:port`), from which
    /// Workspace URLs are made. Only the first call counts.
    pub fn set_external_url(&self, url: impl Into<String>) {
        let _ = self
            .external_url
            .set(url.into().trim_end_matches('/').to_string());
    }

    /// The base URL set by [`Registry::set_external_url`].
    pub(crate) fn external_url(&self) -> Option<&str> {
        self.external_url.get().map(String::as_str)
    }
}

impl Registry {
    /// The admission chain every write passes.
    pub fn admission(&self) -> &Admission<Registry> {
        &self.admission
    }

    /// The namespaces holding ResourceQuotas.
    pub(crate) fn quota_index(&self) -> &Arc<QuotaIndex> {
        &self.quota_index
    }

    /// The built-in types (served in every logical cluster).
    pub fn builtin_catalog(&self) -> &Arc<Catalog> {
        self.catalogs.builtin()
    }

    /// Distinct catalogs alive (clusters with identical CRDs share one).
    #[cfg(test)]
    pub(crate) fn distinct_catalogs(&self) -> usize {
        self.catalogs.distinct()
    }

    /// Sets the server's version as `/version` reports it (`v1.32.x-kplane.<version>+<commit>`),
    /// which archive headers carry. Only the first call counts.
    pub fn set_server_version(&self, version: impl Into<String>) {
        let _ = self.server_version.set(version.into());
    }

    /// The version set by [`Registry::set_server_version`], or the registry crate's.
    pub(crate) fn server_version(&self) -> String {
        self.server_version
            .get()
            .cloned()
            .unwrap_or_else(|| format!("kplane {}", env!("CARGO_PKG_VERSION")))
    }

    /// Each logical cluster's quota limits and usage.
    pub fn quotas(&self) -> &Arc<Quotas> {
        &self.quotas
    }

    pub(crate) fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    pub(crate) fn namespace_type(&self) -> ApiResult<Arc<ResourceType>> {
        self.builtin_catalog()
            .get("", "v1", "namespaces")
            .cloned()
            .ok_or_else(|| ApiError::internal("namespaces are not registered"))
    }

    /// Converts a request object of `rt`'s API version to the stored form.
    pub(crate) fn to_storage(&self, rt: &ResourceType, obj: Value) -> Value {
        match &rt.conversion {
            None => obj,
            Some(c) => c.to_storage(rt, obj),
        }
    }

    /// Converts a decoded stored object to `rt`'s API version.
    pub(crate) fn stored_to_api(&self, rt: &ResourceType, obj: Value) -> Value {
        match &rt.conversion {
            None => obj,
            Some(c) => c.to_api_value(rt, obj),
        }
    }
}

pub(crate) fn corrupt(e: &dyn std::fmt::Display) -> ApiError {
    ApiError::internal(format!("stored object could not be decoded: {e}"))
}

/// Maps a storage error into a Status for `rt`/`name`: the errors that name an object get
/// its resource and name; every other one takes the one storage mapping
/// (`From<kplane_storage::Error> for ApiError`).
pub fn storage_error(e: kplane_storage::Error, rt: &ResourceType, name: &str) -> ApiError {
    use kplane_storage::Error as E;
    match e {
        E::NotFound => ApiError::from(Status::not_found(&rt.group, &rt.plural, name)),
        E::AlreadyExists => ApiError::from(Status::already_exists(&rt.group, &rt.plural, name)),
        E::Conflict { .. } => ApiError::from(Status::stale(&rt.group, &rt.plural, name)),
        E::Refused(why) => ApiError::from(Status::forbidden(&rt.group, &rt.plural, name, &why)),
        other => ApiError::from(other),
    }
}
