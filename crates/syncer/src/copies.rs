//! Copies of the Secrets, ConfigMaps and ServiceAccounts synced objects reference: read from
//! kplane (through the sync endpoint, which serves exactly those), written to the host next
//! to the synced object (renamed like it under `--host-namespace`), kept up to date on every
//! reconcile and resync, and removed once no synced object references them.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{json, Map, Value};

use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::naming::{
    HostLayout, TargetRef, CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, NAME_ANNOTATION,
    TARGET_ANNOTATION, TARGET_LABEL,
};
use crate::state::{annotation, CopyKey, ObjectKey, State};
use kplane_types::pod_refs::RefKind;

pub fn core_resource(kind: RefKind) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", kind.kind()),
        kind.resource(),
    )
}

/// The fields of a copy that are compared and written (beside labels and annotations).
fn content_fields(kind: RefKind) -> &'static [&'static str] {
    match kind {
        RefKind::Secret => &["type", "data"],
        RefKind::ConfigMap => &["data", "binaryData"],
        RefKind::ServiceAccount => &["automountServiceAccountToken"],
    }
}

/// The host copy of `source` (a Secret, ConfigMap or ServiceAccount as read from kplane).
pub fn host_copy(target: &TargetRef, layout: &HostLayout, key: &CopyKey, source: &Value) -> Value {
    let (ns, name) = layout.place(&key.cluster, &key.namespace, &key.name);
    let uid = source
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (marks_l, marks_a) = target.host_marks(&key.cluster, &key.namespace, &key.name, uid);
    let mut labels: BTreeMap<String, String> = source
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    labels.extend(marks_l);
    let mut annotations: BTreeMap<String, String> = source
        .pointer("/metadata/annotations")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    annotations.retain(|k, _| {
        k != CLUSTER_ANNOTATION
            && k != "kubectl.kubernetes.io/last-applied-configuration"
            && !k.starts_with("kubernetes.io/")
    });
    annotations.extend(marks_a);
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!(key.kind.kind()));
    out.insert(
        "metadata".into(),
        json!({"name": name, "namespace": ns, "labels": labels, "annotations": annotations}),
    );
    for f in content_fields(key.kind) {
        if let Some(v) = source.get(*f).filter(|v| !v.is_null()) {
            out.insert((*f).to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// Whether the host copy `have` already shows `want`.
fn same_copy(kind: RefKind, want: &Value, have: &Value) -> bool {
    let meta = |v: &Value, f: &str| {
        v.pointer(&format!("/metadata/{f}"))
            .cloned()
            .unwrap_or(json!({}))
    };
    content_fields(kind)
        .iter()
        .all(|f| want.get(*f).filter(|v| !v.is_null()) == have.get(*f).filter(|v| !v.is_null()))
        && meta(want, "labels") == meta(have, "labels")
        && meta(want, "annotations") == meta(have, "annotations")
}

/// Whether host object `obj` was made by this target's syncer.
pub fn ours(state: &State, obj: &Value) -> bool {
    annotation(obj, TARGET_ANNOTATION) == Some(state.target.annotation().as_str())
}

/// Creates or updates the host copy of `key`. A referenced object missing in kplane is
/// logged and not copied (the host pod waits for it as it would in kplane).
pub async fn upsert(state: &State, key: &CopyKey) -> Result<()> {
    let ar = core_resource(key.kind);
    let source_api: Api<DynamicObject> =
        Api::namespaced_with(state.kplane.cluster(&key.cluster)?, &key.namespace, &ar);
    let source = match source_api.get_opt(&key.name).await {
        Ok(s) => s,
        // The endpoint answers 403 for objects no assigned object references (yet).
        Err(e) if is_status(&e, 403) => None,
        Err(e) => {
            return Err(e).ctx(|| {
                format!(
                    "reading {} {}/{} in {}",
                    key.kind.kind(),
                    key.namespace,
                    key.name,
                    key.cluster
                )
            })
        }
    };
    let Some(source) = source else {
        tracing::info!(kind = key.kind.kind(), cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
            "referenced object not found in kplane; not copied");
        return Ok(());
    };
    let source = serde_json::to_value(source).unwrap_or(Value::Null);
    let want = host_copy(&state.target, &state.layout, key, &source);
    let (ns, name) = state.layout.place(&key.cluster, &key.namespace, &key.name);
    let host_api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), &ns, &ar);
    let what = || format!("{} {ns}/{name} on the host", key.kind.kind());
    let have = host_api
        .get_opt(&name)
        .await
        .ctx(|| format!("reading {}", what()))?;
    let want_obj: DynamicObject = serde_json::from_value(want.clone())
        .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
    match have {
        None => {
            match host_api.create(&PostParams::default(), &want_obj).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 409) => {
                    return Err(Error::Retry(format!("{} appeared meanwhile", what())))
                }
                Err(e) => return Err(e).ctx(|| format!("creating {}", what())),
            }
            tracing::info!(kind = key.kind.kind(), cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                host_namespace = %ns, host_name = %name, "copied to the host");
        }
        Some(have) => {
            let have = serde_json::to_value(have).unwrap_or(Value::Null);
            if !ours(state, &have) {
                tracing::warn!(host_namespace = %ns, host_name = %name, kind = key.kind.kind(),
                    "a host object of that name exists and was not made by this syncer; not overwritten");
                return Ok(());
            }
            if same_copy(key.kind, &want, &have) {
                return Ok(());
            }
            if key.kind == RefKind::Secret && want.get("type") != have.get("type") {
                // A Secret's type is immutable.
                host_api
                    .delete(&name, &DeleteParams::background())
                    .await
                    .ctx(|| format!("deleting {} to change its type", what()))?;
                return Err(Error::Retry(format!(
                    "{} is recreated with a new type",
                    what()
                )));
            }
            let mut want_obj = want_obj;
            want_obj.metadata.resource_version = have
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match host_api
                .replace(&name, &PostParams::default(), &want_obj)
                .await
            {
                Ok(_) => {}
                Err(e) if is_status(&e, 409) => {
                    return Err(Error::Retry(format!("{} changed meanwhile", what())))
                }
                Err(e) => return Err(e).ctx(|| format!("updating {}", what())),
            }
            tracing::info!(kind = key.kind.kind(), cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                host_namespace = %ns, host_name = %name, "updated the host copy");
        }
    }
    Ok(())
}

/// Deletes the host copy of `key` (if it is this syncer's).
pub async fn remove(state: &State, key: &CopyKey) -> Result<()> {
    let (ns, name) = state.layout.place(&key.cluster, &key.namespace, &key.name);
    let api: Api<DynamicObject> =
        Api::namespaced_with(state.host.clone(), &ns, &core_resource(key.kind));
    let Some(have) = api
        .get_opt(&name)
        .await
        .ctx(|| format!("reading {} {ns}/{name} on the host", key.kind.kind()))?
    else {
        return Ok(());
    };
    if !ours(state, &serde_json::to_value(have).unwrap_or(Value::Null)) {
        return Ok(());
    }
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => {}
        Err(e) => {
            return Err(e).ctx(|| format!("deleting {} {ns}/{name} on the host", key.kind.kind()))
        }
    }
    state.copy_checked(key, false);
    tracing::info!(kind = key.kind.kind(), cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
        host_namespace = %ns, host_name = %name, "removed the host copy: no synced object references it");
    Ok(())
}

/// Records that `owner` now uses `now` (empty when it is gone), copies to the host those it
/// starts to use and those not checked within the resync period, and removes the copies it
/// used before that nothing else uses any more.
pub async fn sync_refs(state: &State, owner: &ObjectKey, now: BTreeSet<CopyKey>) -> Result<()> {
    let before = state
        .refs
        .lock()
        .ok()
        .and_then(|r| r.get(owner).cloned())
        .unwrap_or_default();
    let due: Vec<&CopyKey> = now
        .iter()
        .filter(|k| !before.contains(*k) || state.copy_due(k))
        .collect();
    if before == now && due.is_empty() {
        return Ok(());
    }
    let _guard = state.copy_lock.lock().await;
    if let Ok(mut refs) = state.refs.lock() {
        if now.is_empty() {
            refs.remove(owner);
        } else {
            refs.insert(owner.clone(), now.clone());
        }
    }
    for key in due {
        upsert(state, key).await?;
        state.copy_checked(key, true);
    }
    for key in before.difference(&now) {
        let used = state
            .refs
            .lock()
            .map(|r| r.values().any(|s| s.contains(key)))
            .unwrap_or(true);
        if !used {
            remove(state, key).await?;
        }
    }
    Ok(())
}

/// The copy key of host copy `obj`, from its annotations.
pub fn key_of_copy(kind: RefKind, obj: &Value) -> Option<CopyKey> {
    Some(CopyKey {
        kind,
        cluster: annotation(obj, CLUSTER_ANNOTATION)?.to_owned(),
        namespace: annotation(obj, NAMESPACE_ANNOTATION)?.to_owned(),
        name: annotation(obj, NAME_ANNOTATION)?.to_owned(),
    })
}

/// The label selector of every host object of the target.
pub fn selector(state: &State) -> String {
    format!("{TARGET_LABEL}={}", state.target.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> TargetRef {
        TargetRef {
            cluster: "root".into(),
            name: "east".into(),
        }
    }

    fn key(kind: RefKind, name: &str) -> CopyKey {
        CopyKey {
            kind,
            cluster: "root:a".into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    #[test]
    fn copies_keep_content_and_user_metadata_and_carry_the_marks() {
        let source = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default", "uid": "s-1", "resourceVersion": "7",
                         "labels": {"team": "a"},
                         "annotations": {"note": "x", "kplane.io/cluster": "root:a",
                                         "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "type": "Opaque", "data": {"TOKEN": "czNjcmV0"}, "immutable": true,
        });
        let k = key(RefKind::Secret, "creds");
        let copy = host_copy(&target(), &HostLayout::PerNamespace, &k, &source);
        assert_eq!(copy["metadata"]["name"], "creds");
        assert_eq!(
            copy["metadata"]["namespace"],
            crate::naming::host_namespace("root:a", "default")
        );
        assert_eq!(
            copy["metadata"]["labels"],
            json!({"team": "a", "sync.kplane.io/target": "east"})
        );
        let ann = &copy["metadata"]["annotations"];
        assert_eq!(ann["note"], "x");
        assert_eq!(ann["kplane.io/cluster"], "root:a");
        assert_eq!(ann["kplane.io/uid"], "s-1");
        assert_eq!(ann["sync.kplane.io/target"], "root/east");
        assert!(ann
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_none());
        assert_eq!(copy["data"], json!({"TOKEN": "czNjcmV0"}));
        assert_eq!(copy["type"], "Opaque");
        assert!(copy.get("immutable").is_none(), "copies stay updatable");
        assert!(copy["metadata"].get("resourceVersion").is_none());
        assert_eq!(key_of_copy(RefKind::Secret, &copy), Some(k.clone()));

        // The same copy as stored (with server fields) needs no update; changed data does.
        let mut stored = copy.clone();
        stored["metadata"]["resourceVersion"] = json!("99");
        stored["metadata"]["uid"] = json!("h-1");
        assert!(same_copy(RefKind::Secret, &copy, &stored));
        stored["data"]["TOKEN"] = json!("b3RoZXI=");
        assert!(!same_copy(RefKind::Secret, &copy, &stored));
    }

    #[test]
    fn shared_namespace_copies_are_renamed_and_service_accounts_copy_little() {
        let source = json!({
            "metadata": {"name": "runner", "namespace": "default", "uid": "sa-1"},
            "secrets": [{"name": "runner-token"}],
            "imagePullSecrets": [{"name": "pull"}],
            "automountServiceAccountToken": false,
        });
        let layout = HostLayout::Shared("jobs".into());
        let copy = host_copy(
            &target(),
            &layout,
            &key(RefKind::ServiceAccount, "runner"),
            &source,
        );
        assert_eq!(copy["kind"], "ServiceAccount");
        assert_eq!(copy["metadata"]["namespace"], "jobs");
        assert_eq!(
            copy["metadata"]["name"],
            crate::naming::shared_namespace_name("root:a", "default", "runner")
        );
        assert_eq!(copy["automountServiceAccountToken"], false);
        assert!(copy.get("secrets").is_none() && copy.get("imagePullSecrets").is_none());
    }
}
