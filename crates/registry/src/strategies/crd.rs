//! apiextensions.k8s.io/v1 CustomResourceDefinition: the rules are in the crate's `crd`
//! module (defaults and stored form, validation, the cleanup finalizer, the controllers'
//! status); this is how they plug into the write path. CRD writes are serialised (name
//! conflicts), carry the status the naming and establishing controllers would write, and
//! change the cluster's catalog; a deleted CRD's instances are removed in the background.

use kplane_types::Cause;
use kplane_types::ClusterName;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::controllers::crd_cleanup::CrdCleanup;
use crate::controllers::queue::Named;
use crate::crd;
use crate::error::ApiResult;
use crate::hooks::WriteHooks;
use crate::strategy::{default_reset_fields, status_keeps_spec, TypeStrategy};
use crate::Registry;

#[derive(Debug)]
pub struct CustomResourceDefinition;

impl TypeStrategy for CustomResourceDefinition {
    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn has_generation(&self) -> bool {
        true
    }

    /// Defaults, then the CRD's stored form (`crd_form`).
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        crd::default_crd(obj);
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        crd::add_cleanup_finalizer(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        crd::validate_crd(obj, old, crd::schema_cache())
    }

    /// `/status` takes the request's metadata and status and keeps the stored spec (in
    /// 1.32 the status strategy's metadata reset is a no-op, kubernetes/kubernetes#137681).
    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        status_keeps_spec(sub, new, old)
    }

    fn reset_fields(&self, rt: &ResourceType, sub: Option<&str>) -> &'static [&'static str] {
        match sub {
            Some("status") => &["metadata", "spec"],
            _ => default_reset_fields(rt, sub),
        }
    }

    /// Instances go with the CRD (its cleanup finalizer), not through the collector.
    fn delete_propagates(&self) -> bool {
        false
    }

    fn deletes_in_bulk(&self) -> bool {
        false
    }

    fn serialize_writes(&self) -> bool {
        true
    }
}

#[async_trait::async_trait]
impl WriteHooks<Registry> for CustomResourceDefinition {
    async fn controller_status(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        obj: &mut Value,
    ) -> ApiResult<()> {
        let others = reg.cluster_crds(cluster).await?;
        obj["status"] = crd::compute_status(obj, &others);
        Ok(())
    }

    async fn after_create(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<()> {
        self.after_update(reg, cluster, name, false).await
    }

    /// The catalog follows the CRDs; the collector re-examines owners of kinds it could
    /// not resolve; a CRD being deleted has its instances removed.
    async fn after_update(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
        deleting: bool,
    ) -> ApiResult<()> {
        reg.refresh_catalog(cluster).await?;
        crate::controllers::gc::gc_kinds_changed(reg, cluster);
        if deleting {
            reg.enqueue::<CrdCleanup>(Named::new(cluster.clone(), name));
        }
        Ok(())
    }

    /// CRDs refused for a name conflict with the deleted one may be acceptable now.
    async fn after_delete(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        _name: &str,
    ) -> ApiResult<()> {
        reg.recheck_crd_names(cluster).await
    }
}
