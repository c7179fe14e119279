//! The NetworkPolicies of a namespace whose objects the syncer runs, carried to the host
//! namespace of those objects, where they govern the pods: read through the sync endpoint
//! (which lists a namespace's policies while it holds an assigned object), written before
//! the host object is created, checked again once per resync period, and removed with the
//! last synced object of that namespace (or when removed in kplane).
//!
//! A policy only allows traffic, so what cannot mean the same on the host is left out,
//! never widened: peers with a `namespaceSelector` name tenant namespaces, which do not
//! exist on the host, and are dropped, and a rule whose peers were all dropped is dropped
//! (an empty peer list would allow everyone). With one shared `--host-namespace`, every
//! pod selector (the policy's and its pod peers') also requires the label
//! [`SOURCE_LABEL`] that the syncer puts on the pods of that source namespace, so a
//! tenant's policy selects only its own pods.

use std::collections::BTreeMap;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::{json, Value};

use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::naming::{hash_hex, HostLayout, CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, TARGET_LABEL};
use crate::state::{annotation, State};

/// Pod template label, with one shared host namespace: which source (logical cluster,
/// namespace) the pod belongs to (10 hex digits of sha256(`<cluster>/<namespace>`)).
pub const SOURCE_LABEL: &str = "sync.kplane.io/source";

/// The value of [`SOURCE_LABEL`] for `cluster`/`namespace`.
pub fn source_label_value(cluster: &str, namespace: &str) -> String {
    hash_hex(&format!("{cluster}/{namespace}"), 10)
}

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("networking.k8s.io", "v1", "NetworkPolicy"),
        "networkpolicies",
    )
}

/// A pod selector that also requires `extra` labels.
fn scoped(selector: Option<&Value>, extra: &BTreeMap<String, String>) -> Value {
    let mut sel = selector.cloned().unwrap_or_else(|| json!({}));
    if extra.is_empty() {
        return sel;
    }
    if let Some(obj) = sel.as_object_mut() {
        let labels = obj.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            for (k, v) in extra {
                l.insert(k.clone(), json!(v));
            }
        }
    }
    sel
}

/// The rules of `rules` (`from` or `to` peers under `peers_field`) as they can hold on
/// the host; `None` for a rule whose every peer was dropped.
fn host_rules(rules: &[Value], peers_field: &str, extra: &BTreeMap<String, String>) -> Vec<Value> {
    rules
        .iter()
        .filter_map(|rule| {
            let mut rule = rule.clone();
            let Some(peers) = rule.get(peers_field).and_then(Value::as_array).cloned() else {
                return Some(rule);
            };
            if peers.is_empty() {
                return Some(rule);
            }
            let kept: Vec<Value> = peers
                .into_iter()
                .filter(|p| p.get("namespaceSelector").is_none_or(Value::is_null))
                .map(|mut p| {
                    if let Some(sel) = p.get("podSelector").filter(|s| !s.is_null()).cloned() {
                        p["podSelector"] = scoped(Some(&sel), extra);
                    }
                    p
                })
                .collect();
            if kept.is_empty() {
                return None;
            }
            rule[peers_field] = Value::Array(kept);
            Some(rule)
        })
        .collect()
}

/// The host form of the spec of policy `spec` of source `cluster`/`namespace`.
pub fn host_spec(spec: &Value, layout: &HostLayout, cluster: &str, namespace: &str) -> Value {
    let extra: BTreeMap<String, String> = match layout {
        HostLayout::PerNamespace => BTreeMap::new(),
        HostLayout::Shared(_) => BTreeMap::from([(
            SOURCE_LABEL.to_owned(),
            source_label_value(cluster, namespace),
        )]),
    };
    let mut out = spec.as_object().cloned().unwrap_or_default();
    out.insert(
        "podSelector".into(),
        scoped(spec.get("podSelector"), &extra),
    );
    for (field, peers) in [("ingress", "from"), ("egress", "to")] {
        if let Some(rules) = spec.get(field).and_then(Value::as_array) {
            out.insert(field.into(), Value::Array(host_rules(rules, peers, &extra)));
        }
    }
    Value::Object(out)
}

/// The host object of kplane policy `source` of `cluster`/`namespace`.
fn host_policy(state: &State, cluster: &str, namespace: &str, source: &Value) -> Value {
    let name = source
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let uid = source
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (ns, host_name) = state.layout.place(cluster, namespace, name);
    let (marks_l, marks_a) = state.target.host_marks(cluster, namespace, name, uid);
    let mut labels: BTreeMap<String, String> = source
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    labels.extend(marks_l);
    // Which source namespace it carries: the host lists a namespace's policies by it.
    labels.insert(
        SOURCE_LABEL.to_owned(),
        source_label_value(cluster, namespace),
    );
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": host_name, "namespace": ns, "labels": labels, "annotations": marks_a},
        "spec": host_spec(source.get("spec").unwrap_or(&Value::Null), &state.layout, cluster, namespace),
    })
}

/// Whether host policy `have` already shows `want`.
fn same(want: &Value, have: &Value) -> bool {
    let meta = |v: &Value, f: &str| {
        v.pointer(&format!("/metadata/{f}"))
            .cloned()
            .unwrap_or(json!({}))
    };
    want.get("spec") == have.get("spec")
        && meta(want, "labels") == meta(have, "labels")
        && meta(want, "annotations") == meta(have, "annotations")
}

/// This target's host policies of source `cluster`/`namespace`.
async fn host_policies(state: &State, cluster: &str, namespace: &str) -> Result<Vec<Value>> {
    let (ns, _) = state.layout.place(cluster, namespace, "");
    let api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), &ns, &resource());
    let selector = format!(
        "{TARGET_LABEL}={},{SOURCE_LABEL}={}",
        state.target.name,
        source_label_value(cluster, namespace)
    );
    let list = match api.list(&ListParams::default().labels(&selector)).await {
        Ok(l) => l,
        Err(e) if is_status(&e, 404) => return Ok(Vec::new()),
        Err(e) => return Err(e).ctx(|| format!("listing NetworkPolicies in {ns} on the host")),
    };
    Ok(list
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
        .filter(|o| {
            crate::copies::ours(state, o)
                && annotation(o, CLUSTER_ANNOTATION) == Some(cluster)
                && annotation(o, NAMESPACE_ANNOTATION) == Some(namespace)
        })
        .collect())
}

/// Makes the host policies of `cluster`/`namespace` agree with kplane's, at most once per
/// resync period unless `force`.
pub async fn sync_namespace(
    state: &State,
    cluster: &str,
    namespace: &str,
    force: bool,
) -> Result<()> {
    if !force && !state.policies_due(cluster, namespace) {
        return Ok(());
    }
    let _guard = state.policy_lock.lock().await;
    let source_api: Api<DynamicObject> =
        Api::namespaced_with(state.kplane.cluster(cluster)?, namespace, &resource());
    let sources = match source_api.list(&ListParams::default()).await {
        Ok(l) => l.items,
        // Not (or no longer) a namespace with assigned objects, or NetworkPolicies not
        // served: nothing to carry, and nothing removed on that answer alone.
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => {
            return Err(e)
                .ctx(|| format!("listing the NetworkPolicies of {namespace} in {cluster}"))
        }
    };
    let want: Vec<Value> = sources
        .iter()
        .map(|s| {
            host_policy(
                state,
                cluster,
                namespace,
                &serde_json::to_value(s).unwrap_or(Value::Null),
            )
        })
        .collect();
    let have = host_policies(state, cluster, namespace).await?;
    let name_of = |v: &Value| {
        v.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let have_by_name: BTreeMap<String, &Value> = have.iter().map(|h| (name_of(h), h)).collect();
    for w in &want {
        let name = name_of(w);
        let ns = w
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), &ns, &resource());
        let what = || format!("NetworkPolicy {ns}/{name} on the host");
        let mut obj: DynamicObject = serde_json::from_value(w.clone())
            .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
        match have_by_name.get(&name) {
            None => match api.create(&PostParams::default(), &obj).await {
                Ok(_) => {
                    tracing::info!(cluster, namespace, host_namespace = %ns, host_name = %name,
                    "carried a NetworkPolicy to the host")
                }
                Err(e) if is_status(&e, 409) => {
                    // One that is not ours (the list showed only ours) is left alone.
                    tracing::warn!(host_namespace = %ns, host_name = %name,
                        "a host NetworkPolicy of that name exists and was not made by this syncer; not overwritten");
                }
                Err(e) => return Err(e).ctx(|| format!("creating {}", what())),
            },
            Some(h) if same(w, h) => {}
            Some(h) => {
                obj.metadata.resource_version = h
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                match api.replace(&name, &PostParams::default(), &obj).await {
                    Ok(_) => {
                        tracing::info!(cluster, namespace, host_namespace = %ns, host_name = %name,
                        "updated a host NetworkPolicy")
                    }
                    Err(e) if is_status(&e, 409) => {
                        return Err(Error::Retry(format!("{} changed meanwhile", what())))
                    }
                    Err(e) => return Err(e).ctx(|| format!("updating {}", what())),
                }
            }
        }
    }
    let wanted: std::collections::BTreeSet<String> = want.iter().map(name_of).collect();
    for h in have.iter().filter(|h| !wanted.contains(&name_of(h))) {
        delete(state, h).await?;
    }
    state.policies_checked(cluster, namespace, true);
    Ok(())
}

async fn delete(state: &State, h: &Value) -> Result<()> {
    let ns = h
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = h
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), ns, &resource());
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => return Err(e).ctx(|| format!("deleting NetworkPolicy {ns}/{name} on the host")),
    }
    tracing::info!(host_namespace = %ns, host_name = %name, "removed a host NetworkPolicy");
    Ok(())
}

/// Removes the host policies of `cluster`/`namespace` when no synced object of that
/// namespace is left.
pub async fn release_namespace(state: &State, cluster: &str, namespace: &str) -> Result<()> {
    if state.namespace_in_use(cluster, namespace) {
        return Ok(());
    }
    let _guard = state.policy_lock.lock().await;
    // Again under the lock: a new object of the namespace may have come meanwhile.
    if state.namespace_in_use(cluster, namespace) {
        return Ok(());
    }
    for h in host_policies(state, cluster, namespace).await? {
        delete(state, &h).await?;
    }
    state.policies_checked(cluster, namespace, false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Value {
        json!({
            "podSelector": {"matchLabels": {"hive.openshift.io/job-type": "provision"}},
            "policyTypes": ["Egress", "Ingress"],
            "egress": [{}],
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": {"app": "web"}}},
                          {"namespaceSelector": {"matchLabels": {"team": "a"}}}],
                 "ports": [{"protocol": "TCP", "port": 80}]},
                {"from": [{"namespaceSelector": {}, "podSelector": {}}]},
                {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}
            ]
        })
    }

    #[test]
    fn per_namespace_policies_keep_their_selectors_and_lose_tenant_namespaces() {
        let out = host_spec(&policy(), &HostLayout::PerNamespace, "root:a", "default");
        assert_eq!(out["podSelector"], policy()["podSelector"]);
        assert_eq!(out["policyTypes"], json!(["Egress", "Ingress"]));
        assert_eq!(
            out["egress"],
            json!([{}]),
            "allow-all egress stays allow-all"
        );
        // The namespace peer is dropped, the pod peer kept; the rule whose only peer named
        // namespaces is dropped whole (never an empty `from`, which would allow everyone).
        assert_eq!(
            out["ingress"],
            json!([
                {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                 "ports": [{"protocol": "TCP", "port": 80}]},
                {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}
            ])
        );
    }

    #[test]
    fn shared_namespace_policies_select_only_their_source_namespace_pods() {
        let layout = HostLayout::Shared("jobs".into());
        let out = host_spec(&policy(), &layout, "root:a", "default");
        let v = source_label_value("root:a", "default");
        assert_eq!(
            out["podSelector"],
            json!({"matchLabels": {"hive.openshift.io/job-type": "provision", SOURCE_LABEL: v}})
        );
        assert_eq!(
            out["ingress"][0]["from"][0]["podSelector"],
            json!({"matchLabels": {"app": "web", SOURCE_LABEL: v}})
        );
        // An empty pod selector (every pod of the namespace) becomes "every pod of the
        // source namespace".
        let all = host_spec(&json!({"podSelector": {}}), &layout, "root:a", "default");
        assert_eq!(
            all["podSelector"],
            json!({"matchLabels": {SOURCE_LABEL: v}})
        );
        assert_ne!(v, source_label_value("root:b", "default"));
    }
}
