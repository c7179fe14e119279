//! Namespace lifecycle: the default namespaces of a new logical cluster, the per-namespace
//! bootstrap objects (`default` ServiceAccount, `kube-root-ca.crt` ConfigMap), and emptying
//! a Terminating namespace before removing it (driven by `lifecycle`).

use kplane_storage::{Key, Precondition, Prefix};
use serde_json::{json, Value};

use super::{meta, Registry, Target};
use crate::error::{ApiError, ApiResult};
use crate::http::query::{ListParams, WriteParams};

/// Namespaces every logical cluster starts with.
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Registry {
    /// Creates a logical cluster's default namespaces on its first write.
    pub async fn ensure_cluster(&self, cluster: &str) -> ApiResult<()> {
        if self
            .bootstrapped
            .lock()
            .map(|s| s.contains(cluster))
            .unwrap_or(false)
        {
            return Ok(());
        }
        let nst = self.namespace_type()?;
        let target = Target {
            cluster: Some(cluster.to_string()),
            rt: nst,
            namespace: None,
        };
        for ns in DEFAULT_NAMESPACES {
            if self.get_stored(&target, ns).await?.is_none() {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                if let Ok(mut set) = self.bootstrapped.lock() {
                    // Mark first so the namespace create below does not recurse.
                    set.insert(cluster.to_string());
                }
                match Box::pin(self.create(&target, obj, &WriteParams::controller())).await {
                    Ok(_) => {}
                    Err(e) if e.code() == 409 => {}
                    Err(e) => {
                        if let Ok(mut set) = self.bootstrapped.lock() {
                            set.remove(cluster);
                        }
                        return Err(e);
                    }
                }
            }
        }
        if let Ok(mut set) = self.bootstrapped.lock() {
            set.insert(cluster.to_string());
        }
        Ok(())
    }

    /// Creates the `default` ServiceAccount and `kube-root-ca.crt` ConfigMap of a namespace.
    pub(super) async fn bootstrap_namespace(&self, cluster: &str, ns: &str) {
        let objs = [
            (
                "serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
            ),
            (
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns},
                "data": {"ca.crt": self.root_ca_pem}}),
            ),
        ];
        for (plural, obj) in objs {
            let Some(rt) = self.builtin_catalog().get("", "v1", plural).cloned() else {
                continue;
            };
            let t = Target {
                cluster: Some(cluster.to_string()),
                rt,
                namespace: Some(ns.to_string()),
            };
            match Box::pin(self.create(&t, obj, &WriteParams::controller())).await {
                Ok(_) => {}
                Err(e) if e.code() == 409 => {}
                Err(e) => {
                    tracing::warn!(cluster, namespace = ns, error = %e.0, "namespace bootstrap failed")
                }
            }
        }
    }

    /// Deletes everything in a Terminating namespace, then the namespace itself.
    /// Returns false when content with finalizers remains (retry later).
    pub(super) async fn finalize_namespace(&self, cluster: &str, ns: &str) -> ApiResult<bool> {
        let mut remaining = 0usize;
        let catalog = self.catalog_for(Some(cluster)).await?;
        for rt in catalog.namespaced_storage() {
            let t = Target {
                cluster: Some(cluster.to_string()),
                rt: rt.clone(),
                namespace: Some(ns.to_string()),
            };
            let (gone, _) = self
                .delete_collection(&t, &ListParams::default(), &Default::default())
                .await?;
            let _ = gone;
            let left = self
                .storage
                .count(&Prefix::namespace(cluster, rt.storage_resource.clone(), ns))
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            remaining += left as usize;
        }
        if remaining > 0 {
            return Ok(false);
        }
        // Drop the `kubernetes` finalizer; the update removes the namespace when no
        // metadata finalizers remain.
        let nst = self.namespace_type()?;
        let key = Key::new(cluster, nst.storage_resource.clone(), "", ns);
        let Some(kv) = self
            .storage
            .get(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
        else {
            return Ok(true);
        };
        let mut obj: Value =
            serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
        if let Some(f) = obj
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            f.retain(|x| x != "kubernetes");
        }
        if obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| a.is_empty())
        {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
        }
        let spec_left = obj.pointer("/spec/finalizers").is_some();
        if spec_left || !meta::finalizers(&obj).is_empty() {
            // Another party's finalizer: write the change and wait for them.
            let enc = super::write::encoder(obj);
            let _ = self
                .storage
                .put(key, Precondition::ModRevision(kv.mod_revision), enc)
                .await;
            return Ok(false);
        }
        let enc = super::write::encoder(obj);
        match self
            .storage
            .delete(key, Precondition::ModRevision(kv.mod_revision), enc)
            .await
        {
            Ok(_) | Err(kplane_storage::Error::NotFound) => Ok(true),
            Err(kplane_storage::Error::Conflict { .. }) => Ok(false),
            Err(e) => Err(ApiError::internal(e.to_string())),
        }
    }
}
