//! The namespace controller (kube-controller-manager's namespace deleter): empties a
//! Terminating namespace — content without finalizers in bulk (`ns_purge`), the rest
//! through the per-object delete path — records what blocks it in the namespace's
//! conditions (`ns_conditions`, written through `/status`), then drops the `kubernetes`
//! finalizer through `/finalize`, which removes it. Both writes are recorded under
//! kube-controller-manager's field manager, with the resourceVersion read as precondition.

use kplane_storage::{Key, Prefix};
use kplane_types::{ClusterName, ClusterScope};
use serde_json::Value;

use super::ns_conditions::{self, DeletionReport};
use super::ns_purge::FinalizersOnly;
use super::write_failed;
use super::{Controller, Named};
use crate::error::ApiResult;
use crate::options::{ListParams, WriteParams};
use crate::{meta, Registry, Target};

/// The controller's name in logs.
const CONTROLLER: &str = "namespace-controller";

/// Deletes everything in a Terminating namespace, then the namespace itself.
/// While content remains (objects with finalizers), the namespace keeps the
/// namespace controller's conditions saying what blocks it; returns false to retry.
pub(crate) async fn finalize_namespace(
    reg: &Registry,
    cluster: &ClusterName,
    ns: &str,
) -> ApiResult<bool> {
    let nst = reg.namespace_type()?;
    let key = Key::new(cluster, nst.storage_resource.clone(), "", ns);
    let current = reg.get_by_key(&key).await?;
    let deleting = current.is_some_and(|kv| {
        serde_json::from_slice::<Value>(&kv.value).is_ok_and(|v| meta::is_deleting(&v))
    });
    if !deleting {
        return Ok(true);
    }
    let report = delete_namespace_content(reg, cluster, ns).await?;
    if !record_deletion_conditions(reg, cluster, ns, &report).await? || !report.is_clean() {
        return Ok(false);
    }
    // Drop the `kubernetes` finalizer; the update removes the namespace when no
    // metadata finalizers remain.
    let Some((_, mut obj)) = reg.get_decoded(&key).await? else {
        return Ok(true);
    };
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
    // Another party's finalizer (in spec or metadata) keeps the namespace: the update
    // records the change and the work waits for them.
    let waiting = obj.pointer("/spec/finalizers").is_some() || !meta::finalizers(&obj).is_empty();
    let t = Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt: nst,
        namespace: None,
    };
    // `obj` carries the resourceVersion it was read at: the update's precondition.
    match reg
        .update(&t, ns, Some("finalize"), obj, &WriteParams::controller())
        .await
    {
        Ok(_) => Ok(!waiting),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", ns, &e);
            Ok(false)
        }
    }
}

/// One pass of the namespace deleter: deletes every namespaced resource's content
/// (Background propagation, as the namespace controller asks) and reports what is left.
/// Objects without finalizers go first, in storage batches (`ns_purge`); the rest
/// take the per-object path, which marks them and leaves them to their finalizers.
async fn delete_namespace_content(
    reg: &Registry,
    cluster: &ClusterName,
    ns: &str,
) -> ApiResult<DeletionReport> {
    let mut report = DeletionReport::default();
    let catalog = reg.cluster_catalog(cluster).await?;
    let background = crate::DeleteParams {
        propagation_policy: Some("Background".into()),
        ..Default::default()
    };
    for rt in catalog.namespaced_storage() {
        let t = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: rt.clone(),
            namespace: Some(ns.to_string()),
        };
        if let Err(e) = crate::controllers::ns_purge::purge_namespace_resource(
            reg,
            cluster,
            ns,
            &rt.storage_resource,
        )
        .await
        {
            write_failed(CONTROLLER, cluster.as_str(), &rt, ns, "", &e);
            report.errors.push(e.0.message.clone());
        }
        if let Err(e) = reg
            .delete_all(&t, &ListParams::default(), &background)
            .await
        {
            write_failed(CONTROLLER, cluster.as_str(), &rt, ns, "", &e);
            report.errors.push(e.0.message.clone());
        }
        let left = reg
            .list_by_prefix(
                &Prefix::namespace(cluster, rt.storage_resource.clone(), ns),
                &Default::default(),
                None,
            )
            .await?;
        if left.items.is_empty() {
            continue;
        }
        let fins: Vec<String> = left
            .items
            .iter()
            .flat_map(|kv| {
                serde_json::from_slice::<FinalizersOnly>(&kv.value)
                    .map(|o| o.metadata.finalizers)
                    .unwrap_or_default()
            })
            .collect();
        if fins.is_empty() {
            report.errors.push(format!(
                "unexpected items still remain in namespace: {ns} for gvr: {}/{}, Resource={}",
                rt.group, rt.version, rt.plural
            ));
        }
        // Every served group/resource over this storage counts, as discovery lists them.
        let mut served: Vec<(&str, &str)> = catalog
            .all()
            .iter()
            .filter(|s| s.namespaced && s.storage_resource == rt.storage_resource)
            .map(|s| (s.plural.as_str(), s.group.as_str()))
            .collect();
        served.sort_unstable();
        served.dedup();
        for (plural, group) in served {
            report.add_remaining(plural, group, left.items.len(), &fins);
        }
    }
    Ok(report)
}

/// Writes the deletion conditions into the namespace's status when they changed.
/// Returns false when the write failed (retry later).
async fn record_deletion_conditions(
    reg: &Registry,
    cluster: &ClusterName,
    ns: &str,
    report: &DeletionReport,
) -> ApiResult<bool> {
    let nst = reg.namespace_type()?;
    let key = Key::new(cluster, nst.storage_resource.clone(), "", ns);
    let Some((_, mut obj)) = reg.get_decoded(&key).await? else {
        return Ok(true);
    };
    if !ns_conditions::apply(&mut obj, report, &meta::now_time()) {
        return Ok(true);
    }
    let t = Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt: nst,
        namespace: None,
    };
    match reg
        .update(&t, ns, Some("status"), obj, &WriteParams::controller())
        .await
    {
        Ok(_) => Ok(true),
        // Gone meanwhile: the next pass finds nothing to do.
        Err(e) if e.code() == 404 => Ok(false),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", ns, &e);
            Ok(false)
        }
    }
}

/// The namespace controller: empties a Terminating namespace, then removes it.
pub struct Namespaces;

impl Controller<Registry> for Namespaces {
    type Key = Named;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        finalize_namespace(registry, &key.cluster, &key.name).await
    }
}
