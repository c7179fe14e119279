//! Namespace bootstrap, part of the registry's own write path: the default namespaces of a
//! new logical cluster (on its first write) and the objects every new namespace starts with
//! (`default` ServiceAccount, `kube-root-ca.crt` ConfigMap), created in the same request.
//! Emptying and removing a Terminating namespace is a controller's job
//! (`controllers::namespace`).

use kplane_types::{ClusterName, ClusterScope};
use serde_json::json;

use super::{Registry, Target};
use crate::error::ApiResult;
use crate::options::WriteParams;

/// Namespaces every logical cluster starts with.
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Registry {
    /// Creates a logical cluster's default namespaces on its first write.
    pub async fn ensure_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
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
            cluster: ClusterScope::One(cluster.clone()),
            rt: nst,
            namespace: None,
        };
        for ns in DEFAULT_NAMESPACES {
            if self.get_stored(&target, ns).await?.is_none() {
                let obj =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                if let Ok(mut set) = self.bootstrapped.lock() {
                    // Mark first so the namespace create below does not recurse.
                    set.insert(cluster.clone());
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
            set.insert(cluster.clone());
        }
        Ok(())
    }

    /// Creates the `default` ServiceAccount and `kube-root-ca.crt` ConfigMap of a namespace.
    pub(super) async fn bootstrap_namespace(&self, cluster: &ClusterName, ns: &str) {
        let objs = [
            (
                "serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
            ),
            (
                "configmaps",
                super::controllers::root_ca::desired(ns, &self.root_ca_pem),
            ),
        ];
        for (plural, obj) in objs {
            let Some(rt) = self.builtin_catalog().get("", "v1", plural).cloned() else {
                continue;
            };
            let t = Target {
                cluster: ClusterScope::One(cluster.clone()),
                rt,
                namespace: Some(ns.to_string()),
            };
            let name = crate::meta::name_of(&obj).to_string();
            match Box::pin(self.create(&t, obj, &WriteParams::controller())).await {
                Ok(_) => {}
                Err(e) if e.code() == 409 => {}
                Err(e) => {
                    super::controllers::write_failed(
                        "namespace-bootstrap",
                        cluster.as_str(),
                        &t.rt,
                        ns,
                        &name,
                        &e,
                    );
                    if plural == "configmaps" {
                        // The root-CA publisher makes it later.
                        self.enqueue(super::controllers::Work::RootCa {
                            cluster: cluster.clone(),
                            namespace: ns.to_string(),
                        });
                    }
                }
            }
        }
    }
}
