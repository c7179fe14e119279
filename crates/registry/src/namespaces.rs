//! Namespace bootstrap, part of the registry's own write path: the default namespaces of a
//! new logical cluster (when it is created: see `clusters.rs`) and the objects every new
//! namespace starts with (`default` ServiceAccount, `kube-root-ca.crt` ConfigMap), created
//! in the same request (for a new cluster's default namespaces, in the same storage batch).
//! Emptying and removing a Terminating namespace is a controller's job
//! (`controllers::namespace`).

use bytes::Bytes;
use kplane_types::{ClusterName, ClusterScope};
use serde_json::{json, Value};

use std::sync::Arc;

use super::{Registry, ResourceType, Target};
use crate::controllers::queue::InNamespace;
use crate::controllers::root_ca::RootCa;
use crate::error::ApiResult;
use crate::hooks::BatchCreate;
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

    /// Whether `cluster` is known to exist and holds each of its default namespaces (read
    /// from storage: a few point reads, no write).
    pub(crate) async fn has_default_namespaces(&self, cluster: &ClusterName) -> ApiResult<bool> {
        if !self.is_marked(cluster) {
            return Ok(false);
        }
        let target = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: self.namespace_type()?,
            namespace: None,
        };
        for ns in DEFAULT_NAMESPACES {
            if self.get_stored(&target, ns).await?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Creates whichever of `cluster`'s default namespaces are missing; from then on the
    /// cluster exists (`clusters.rs`). Refused (403) while the cluster is terminating; on
    /// an error a cluster that did not exist before is forgotten again.
    pub(crate) async fn bootstrap_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        self.bootstrap_cluster_with(cluster, Vec::new()).await
    }

    /// [`Registry::bootstrap_cluster`], with more cluster-scoped objects of `cluster`
    /// (`extra`: the Workspace owner's binding) created in the same batch as the
    /// namespaces, so that they take no commit of their own; an existing one is left as it
    /// is. An error of one of them is returned too (the cluster stays known: its
    /// namespaces are there).
    ///
    /// A cluster this process did not know (a new Workspace's) gets each namespace's
    /// bootstrap objects in that same batch too, right after the namespaces (one commit
    /// round for all; [`BatchCreate::in_new_namespace`]); in a known one they follow as
    /// the new namespaces' own batches (the namespace's `after_create`), so that nothing is
    /// written into an existing namespace.
    pub(crate) async fn bootstrap_cluster_with(
        &self,
        cluster: &ClusterName,
        extra: Vec<(Target, Value, WriteParams)>,
    ) -> ApiResult<()> {
        self.refuse_if_terminating(cluster)?;
        if !self.is_marked(cluster) {
            // Before anything can be written into it: it has no SyncTargets of its own.
            self.cache_sync_targets_of_new_cluster(cluster).await;
        }
        // Marked first, so that the namespace creates below find the cluster existing. An
        // existing namespace is left as it is (409). Pinned while its keys are written: a
        // rescan of the derived state meanwhile (whose replay may not show them yet) leaves
        // the mark alone.
        let new = self.pin_cluster(cluster);
        let n_extra = extra.len();
        let items = match self.bootstrap_items(cluster, new, extra) {
            Ok(items) => items,
            Err(e) => {
                self.unpin_cluster(cluster);
                if new {
                    self.unmark_cluster(cluster);
                }
                return Err(e);
            }
        };
        // The namespaces' own objects (a new cluster's), after the namespaces and `extra`.
        let bootstrap: Vec<(Arc<ResourceType>, String, String)> = items
            .iter()
            .skip(DEFAULT_NAMESPACES.len() + n_extra)
            .map(|i| {
                let ns = i.t.namespace.clone().unwrap_or_default();
                (i.t.rt.clone(), ns, crate::meta::name_of(&i.obj).to_string())
            })
            .collect();
        let results = Box::pin(self.create_batch(items)).await;
        self.unpin_cluster(cluster);
        let failed = |r: ApiResult<Bytes>| match r {
            Err(e) if e.code() != 409 => Some(e),
            _ => None,
        };
        let mut results = results.into_iter();
        let namespaces = results.by_ref().take(DEFAULT_NAMESPACES.len());
        if let Some(e) = namespaces.filter_map(failed).next() {
            if new {
                self.unmark_cluster(cluster);
            }
            return Err(e);
        }
        let extra_failed = results.by_ref().take(n_extra).find_map(failed);
        for ((rt, ns, name), r) in bootstrap.into_iter().zip(results) {
            if let Err(e) = r {
                self.namespace_bootstrap_failed(cluster, &ns, &rt, &name, &e);
            }
        }
        match extra_failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The objects `cluster`'s bootstrap creates, in one batch's order: its default
    /// namespaces, `extra` (cluster-scoped), then, for a cluster new to this process
    /// (`new`), each namespace's own objects, created in their namespace of the same batch
    /// (so the namespaces' `after_create` hooks do not run); in a known cluster the hooks
    /// make them, so that nothing is written into an existing namespace.
    pub(crate) fn bootstrap_items(
        &self,
        cluster: &ClusterName,
        new: bool,
        extra: Vec<(Target, Value, WriteParams)>,
    ) -> ApiResult<Vec<BatchCreate>> {
        let target = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: self.namespace_type()?,
            namespace: None,
        };
        let mut items: Vec<BatchCreate> = DEFAULT_NAMESPACES
            .iter()
            .map(|ns| BatchCreate {
                t: target.clone(),
                obj: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                w: WriteParams::controller(),
                in_new_namespace: None,
                hook: !new,
            })
            .collect();
        items.extend(extra.into_iter().map(|(t, obj, w)| BatchCreate {
            t,
            obj,
            w,
            in_new_namespace: None,
            hook: true,
        }));
        if new {
            for (i, ns) in DEFAULT_NAMESPACES.iter().enumerate() {
                for (t, obj) in self.namespace_bootstrap_objects(cluster, ns) {
                    items.push(BatchCreate {
                        t,
                        obj,
                        w: WriteParams::controller(),
                        in_new_namespace: Some(i),
                        hook: true,
                    });
                }
            }
        }
        Ok(items)
    }

    /// The objects every new namespace `ns` starts with: its `default` ServiceAccount and
    /// `kube-root-ca.crt` ConfigMap.
    fn namespace_bootstrap_objects(&self, cluster: &ClusterName, ns: &str) -> Vec<(Target, Value)> {
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
        let mut out = Vec::with_capacity(objs.len());
        for (plural, obj) in objs {
            let Some(rt) = self.builtin_catalog().get("", "v1", plural).cloned() else {
                continue;
            };
            out.push((Target::new(cluster, rt, Some(ns.to_string())), obj));
        }
        out
    }

    /// A namespace's bootstrap object could not be created: logged (one that exists
    /// already is left as it is), and a missing root-CA ConfigMap left to the root-CA
    /// publisher.
    fn namespace_bootstrap_failed(
        &self,
        cluster: &ClusterName,
        ns: &str,
        rt: &ResourceType,
        name: &str,
        e: &crate::error::ApiError,
    ) {
        if e.code() == 409 {
            return;
        }
        super::controllers::write_failed("namespace-bootstrap", cluster.as_str(), rt, ns, name, e);
        if rt.plural == "configmaps" {
            // The root-CA publisher makes it later.
            self.enqueue::<RootCa>(InNamespace::new(cluster.clone(), ns.to_string()));
        }
    }

    /// Creates the `default` ServiceAccount and `kube-root-ca.crt` ConfigMap of a namespace,
    /// as one batch. A failure is logged (an object that exists already is left as it
    /// is); the root-CA ConfigMap is then left to the root-CA publisher.
    pub(super) async fn bootstrap_namespace(&self, cluster: &ClusterName, ns: &str) {
        let objs = self.namespace_bootstrap_objects(cluster, ns);
        let targets: Vec<(Arc<ResourceType>, String)> = objs
            .iter()
            .map(|(t, obj)| (t.rt.clone(), crate::meta::name_of(obj).to_string()))
            .collect();
        let items = objs
            .into_iter()
            .map(|(t, obj)| BatchCreate::new(t, obj, WriteParams::controller()))
            .collect();
        let results = self.create_batch(items).await;
        for ((rt, name), r) in targets.into_iter().zip(results) {
            if let Err(e) = r {
                self.namespace_bootstrap_failed(cluster, ns, &rt, &name, &e);
            }
        }
    }
}
