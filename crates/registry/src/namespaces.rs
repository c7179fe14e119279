//! Namespace bootstrap, part of the registry's own write path: the default namespaces of a
//! new logical cluster (when it is created: see `clusters.rs`) and the objects every new
//! namespace starts with (`default` ServiceAccount, `kube-root-ca.crt` ConfigMap), created
//! in the same request.
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
    /// Bootstraps logical cluster `cluster` unless it is known to exist: the server's
    /// `root` at start-up, and (in development mode only) a cluster on its first write.
    pub async fn ensure_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        if self.is_marked(cluster) {
            return Ok(());
        }
        self.bootstrap_cluster(cluster).await
    }

    /// Creates whichever of `cluster`'s default namespaces are missing; from then on the
    /// cluster exists (`clusters.rs`). Refused (403) while the cluster is terminating; on
    /// an error a cluster that did not exist before is forgotten again.
    pub(crate) async fn bootstrap_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        self.refuse_if_terminating(cluster)?;
        let nst = self.namespace_type()?;
        let target = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: nst,
            namespace: None,
        };
        // Marked first, so that the namespace creates below find the cluster existing. The
        // namespaces (and each one's bootstrap objects) are created concurrently, so their
        // durable writes share group commits instead of waiting for one fsync each in turn.
        let new = self.mark_cluster(cluster);
        let results = futures::future::join_all(
            DEFAULT_NAMESPACES
                .iter()
                .map(|ns| self.ensure_default_namespace(&target, ns)),
        )
        .await;
        if let Some(e) = results.into_iter().find_map(Result::err) {
            if new {
                self.unmark_cluster(cluster);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Creates default namespace `ns` of `target`'s cluster unless it exists.
    async fn ensure_default_namespace(&self, target: &Target, ns: &str) -> ApiResult<()> {
        if self.get_stored(target, ns).await?.is_some() {
            return Ok(());
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match Box::pin(self.create(target, obj, &WriteParams::controller())).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == 409 => Ok(()),
            Err(e) => Err(e),
        }
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
        futures::future::join_all(
            objs.into_iter()
                .map(|(plural, obj)| self.bootstrap_object(cluster, ns, plural, obj)),
        )
        .await;
    }

    /// Creates one bootstrap object of namespace `ns` (a failure is logged; the root-CA
    /// ConfigMap is then left to the root-CA publisher).
    async fn bootstrap_object(
        &self,
        cluster: &ClusterName,
        ns: &str,
        plural: &str,
        obj: serde_json::Value,
    ) {
        let Some(rt) = self.builtin_catalog().get("", "v1", plural).cloned() else {
            return;
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
