//! One reconcile of one source object: make the host agree with kplane (namespace, copies,
//! the host object and its mutable spec), carry the host's status back, and on deletion
//! remove the host object before releasing the `sync.kplane.io/syncer` finalizer. Every step
//! reads before it writes, so running it again (after a crash, a restart, a retry) changes
//! nothing that already agrees: host objects are found by their deterministic names and
//! checked by the `kplane.io/uid` annotation, never created twice.

use std::collections::BTreeSet;

use chrono::{SecondsFormat, Utc};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

use crate::api_access;
use crate::copies::{self, ours};
use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::naming::{SYNCER_FINALIZER, UID_ANNOTATION};
use crate::pods;
use crate::policies;
use crate::state::{annotation, slim, CopyKey, ObjectKey, State};
use kplane_types::pod_refs::{self, Reference};

fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Reconciles `key` against the cached source object.
pub async fn reconcile(state: &State, key: &ObjectKey) -> Result<()> {
    match state.cached(key) {
        None => {
            remove_host_object(state, key, None).await?;
            copies::sync_refs(state, key, BTreeSet::new()).await?;
            policies::release_namespace(state, &key.cluster, &key.namespace).await?;
            state.mark_synced(key, false);
            state.forget(key);
            Ok(())
        }
        Some(source) if source.pointer("/metadata/deletionTimestamp").is_some() => {
            let uid = source.pointer("/metadata/uid").and_then(Value::as_str);
            remove_host_object(state, key, uid).await?;
            copies::sync_refs(state, key, BTreeSet::new()).await?;
            policies::release_namespace(state, &key.cluster, &key.namespace).await?;
            state.mark_synced(key, false);
            state.forget(key);
            release_finalizer(state, key, &source).await
        }
        Some(source) => sync(state, key, &source).await,
    }
}

fn host_api(state: &State, key: &ObjectKey, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        state.host.clone(),
        namespace,
        &state.kinds[key.kind].api_resource(),
    )
}

fn kplane_api(state: &State, key: &ObjectKey) -> Result<Api<DynamicObject>> {
    Ok(Api::namespaced_with(
        state.kplane.cluster(&key.cluster)?,
        &key.namespace,
        &state.kinds[key.kind].api_resource(),
    ))
}

/// Deletes the host object of `key` (background propagation, so its pods go too). With
/// `uid`, only the host object of that source incarnation.
pub async fn remove_host_object(state: &State, key: &ObjectKey, uid: Option<&str>) -> Result<()> {
    let (ns, name) = state.layout.place(&key.cluster, &key.namespace, &key.name);
    let api = host_api(state, key, &ns);
    let kind = state.kinds[key.kind].api_resource().kind;
    let Some(host) = api
        .get_opt(&name)
        .await
        .ctx(|| format!("reading {kind} {ns}/{name} on the host"))?
    else {
        return Ok(());
    };
    let host = serde_json::to_value(host).unwrap_or(Value::Null);
    if !ours(state, &host) || (uid.is_some() && annotation(&host, UID_ANNOTATION) != uid) {
        return Ok(());
    }
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => return Err(e).ctx(|| format!("deleting {kind} {ns}/{name} on the host")),
    }
    tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
        host_namespace = %ns, host_name = %name, "deleted the host {kind}");
    Ok(())
}

/// Whether host object `host` has finished (a `Complete` or `Failed` condition that is
/// `True`): its pods need no renewed token.
fn finished(host: &Value) -> bool {
    host.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
            })
        })
}

/// Rewrites the pod template of a host object about to be created so that its pods'
/// in-cluster API is their logical cluster (`api_access`); the host ServiceAccount name
/// whose token they get, or `None` when they get none (or the syncer gives no access).
async fn pod_api_access(
    state: &State,
    key: &ObjectKey,
    pointer: Option<&str>,
    desired: &mut Value,
    host_name: &str,
) -> Result<Option<String>> {
    let (Some(api), Some(pointer)) = (state.pod_api.as_ref(), pointer) else {
        return Ok(None);
    };
    let Some(pod_spec) = desired.pointer_mut(pointer) else {
        return Ok(None);
    };
    // The source's ServiceAccount name (the host spec's is renamed in a shared namespace).
    let source_sa = state
        .cached(key)
        .and_then(|s| {
            s.pointer(pointer)
                .map(|p| api_access::service_account(p).to_owned())
        })
        .unwrap_or_else(|| "default".to_owned());
    let explicit = pod_spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool);
    let sa_automount = match explicit {
        Some(_) => None,
        None => api_access::service_account_automount(state, key, &source_sa).await?,
    };
    if api_access::wants_token(pod_spec, sa_automount) {
        let secret = format!("{host_name}{}", api_access::SECRET_SUFFIX);
        api_access::rewrite(pod_spec, api, Some(&secret));
        Ok(Some(source_sa))
    } else {
        api_access::rewrite(pod_spec, api, None);
        Ok(None)
    }
}

/// Creates or renews the in-cluster API Secret of host object `host` (named `name` in
/// `ns`) for ServiceAccount `sa`. A failure is logged and retried at the next reconcile;
/// it does not hold up the status write-back.
async fn issue_access(
    state: &State,
    key: &ObjectKey,
    sa: &str,
    ns: &str,
    name: &str,
    host: &Value,
) {
    let Some(api) = state.pod_api.as_ref() else {
        return;
    };
    let uid = host
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match api_access::ensure_secret(state, api, key, sa, (ns, name, uid)).await {
        Ok(()) => state.access_checked(key, true),
        Err(e) => {
            state.access_checked(key, false);
            state.metrics.error();
            tracing::warn!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                error = %e, "the in-cluster API token could not be issued; retrying later");
        }
    }
}

/// Removes the syncer's finalizer from the source (guarded by its resourceVersion).
async fn release_finalizer(state: &State, key: &ObjectKey, source: &Value) -> Result<()> {
    let finalizers: Vec<&str> = source
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !finalizers.contains(&SYNCER_FINALIZER) {
        return Ok(());
    }
    let remaining: Vec<&str> = finalizers
        .into_iter()
        .filter(|f| *f != SYNCER_FINALIZER)
        .collect();
    let patch = json!({"metadata": {
        "resourceVersion": source.pointer("/metadata/resourceVersion"),
        "finalizers": remaining,
    }});
    let api = kplane_api(state, key)?;
    match api
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) if is_status(&e, 409) => {
            return Err(Error::Retry(format!(
                "{}/{} in {} changed while its finalizer was released",
                key.namespace, key.name, key.cluster
            )))
        }
        Err(e) => {
            return Err(e).ctx(|| {
                format!(
                    "releasing the finalizer of {}/{} in {}",
                    key.namespace, key.name, key.cluster
                )
            })
        }
    }
    tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
        "released the {SYNCER_FINALIZER} finalizer");
    Ok(())
}

/// Makes sure host namespace `ns` exists (per-namespace layout only).
async fn ensure_namespace(state: &State, key: &ObjectKey, ns: &str) -> Result<()> {
    if state.layout != crate::naming::HostLayout::PerNamespace {
        return Ok(());
    }
    if state
        .namespaces
        .lock()
        .map(|n| n.contains(ns))
        .unwrap_or(false)
    {
        return Ok(());
    }
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(state.host.clone());
    if api
        .get_opt(ns)
        .await
        .ctx(|| format!("reading namespace {ns} on the host"))?
        .is_none()
    {
        let (labels, annotations) = state
            .target
            .host_marks(&key.cluster, &key.namespace, "", "");
        let namespace = k8s_openapi::api::core::v1::Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(ns.to_owned()),
                labels: Some(labels),
                annotations: Some(annotations),
                ..Default::default()
            },
            ..Default::default()
        };
        match api.create(&PostParams::default(), &namespace).await {
            Ok(_) => {
                tracing::info!(cluster = %key.cluster, namespace = %key.namespace, host_namespace = %ns,
                "created the host namespace")
            }
            Err(e) if is_status(&e, 409) => {}
            Err(e) => return Err(e).ctx(|| format!("creating namespace {ns} on the host")),
        }
    }
    if let Ok(mut n) = state.namespaces.lock() {
        n.insert(ns.to_owned());
    }
    Ok(())
}

/// Creates or updates the host object of live source `source`, then writes its status back.
async fn sync(state: &State, key: &ObjectKey, source: &Value) -> Result<()> {
    let kind = &state.kinds[key.kind];
    let kind_name = kind.api_resource().kind;
    let (ns, name) = state.layout.place(&key.cluster, &key.namespace, &key.name);
    let uid = source
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    ensure_namespace(state, key, &ns).await?;

    // The copies first, so the host pods find them.
    let refs: BTreeSet<Reference> = kind
        .pod_spec_pointer()
        .and_then(|p| source.pointer(p))
        .map(pod_refs::extract)
        .unwrap_or_default();
    let copy_keys: BTreeSet<CopyKey> = refs
        .iter()
        .map(|r| CopyKey {
            kind: r.kind,
            cluster: key.cluster.clone(),
            namespace: key.namespace.clone(),
            name: r.name.clone(),
        })
        .collect();
    copies::sync_refs(state, key, copy_keys).await?;
    // The namespace's NetworkPolicies too, before a new host object's pods start.
    policies::sync_namespace(state, &key.cluster, &key.namespace, !state.is_synced(key)).await?;

    let mut desired = kind.host_object(source);
    if let Some(p) = kind.pod_spec_pointer() {
        if let Some(pod_spec) = desired.pointer_mut(p) {
            let layout = &state.layout;
            pod_refs::rewrite(pod_spec, &|r| {
                layout.place(&key.cluster, &key.namespace, &r.name).1
            });
        }
    }
    if let Some(template) = kind
        .pod_spec_pointer()
        .and_then(|p| p.strip_suffix("/spec"))
        .and_then(|t| desired.pointer_mut(t))
        .and_then(Value::as_object_mut)
    {
        // Every host pod carries the target's label and its source's annotations (the
        // host pod watch finds it by them, `pods`); with one shared host namespace also its
        // source namespace, which the carried NetworkPolicies select on.
        let (mut labels, annotations) = pods::template_marks(state, key, &uid);
        if let crate::naming::HostLayout::Shared(_) = &state.layout {
            labels[policies::SOURCE_LABEL] =
                json!(policies::source_label_value(&key.cluster, &key.namespace));
        }
        let m = template.entry("metadata").or_insert_with(|| json!({}));
        if let Some(m) = m.as_object_mut() {
            for (field, marks) in [("labels", labels), ("annotations", annotations)] {
                let entry = m.entry(field).or_insert_with(|| json!({}));
                if let (Some(map), Some(marks)) = (entry.as_object_mut(), marks.as_object()) {
                    for (k, v) in marks {
                        map.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    let (labels, annotations) =
        state
            .target
            .host_marks(&key.cluster, &key.namespace, &key.name, &uid);
    if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("name".into(), json!(name));
        meta.insert("namespace".into(), json!(ns));
        for (field, marks) in [("labels", labels), ("annotations", annotations)] {
            let entry = meta.entry(field).or_insert_with(|| json!({}));
            if let Some(map) = entry.as_object_mut() {
                for (k, v) in marks {
                    map.insert(k, json!(v));
                }
            }
        }
    }

    let api = host_api(state, key, &ns);
    let what = || format!("{kind_name} {ns}/{name} on the host");
    let found = match state.cached_host(key, &uid) {
        // A cached host object is only as good as the host's answers.
        Some(_) if !state.host_reachable() => return Err(Error::HostUnreachable),
        Some(h) => Some(h),
        None => api
            .get_opt(&name)
            .await
            .ctx(|| format!("reading {}", what()))?
            .map(|h| serde_json::to_value(h).unwrap_or(Value::Null)),
    };
    let host = match found {
        None => {
            let mut desired = desired;
            let access =
                pod_api_access(state, key, kind.pod_spec_pointer(), &mut desired, &name).await?;
            let obj: DynamicObject = serde_json::from_value(desired)
                .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
            let created = match api.create(&PostParams::default(), &obj).await {
                Ok(c) => c,
                Err(e) if is_status(&e, 409) => {
                    return Err(Error::Retry(format!("{} appeared meanwhile", what())))
                }
                Err(e) => return Err(e).ctx(|| format!("creating {}", what())),
            };
            tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                host_namespace = %ns, host_name = %name, "created the host {kind_name}");
            let created = slim(serde_json::to_value(created).unwrap_or(Value::Null));
            state.wrote_host(key, &created);
            if let Some(sa) = access {
                issue_access(state, key, &sa, &ns, &name, &created).await;
            }
            created
        }
        Some(host) => {
            if !ours(state, &host) {
                tracing::warn!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                    host_namespace = %ns, host_name = %name,
                    "a host object of that name exists and was not made by this syncer; not synced");
                state.metrics.error();
                return Ok(());
            }
            if annotation(&host, UID_ANNOTATION) != Some(uid.as_str()) {
                // Left from an earlier object of the same name: it goes first.
                api.delete(&name, &DeleteParams::background())
                    .await
                    .ctx(|| format!("deleting the stale {}", what()))?;
                tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                    host_namespace = %ns, host_name = %name, "deleted a host {kind_name} of an earlier object of the same name");
                return Err(Error::Retry(format!(
                    "the stale {} is being deleted",
                    what()
                )));
            }
            let host_spec = kind.pod_spec_pointer().and_then(|p| host.pointer(p));
            if host_spec.is_some_and(api_access::has_access)
                && !finished(&host)
                && state.access_due(key)
            {
                // The source's ServiceAccount (the host spec's is renamed in a shared
                // namespace): the token is kplane's.
                let sa = kind
                    .pod_spec_pointer()
                    .and_then(|p| source.pointer(p))
                    .map(api_access::service_account)
                    .unwrap_or("default")
                    .to_owned();
                issue_access(state, key, &sa, &ns, &name, &host).await;
            }
            match kind.push_down(source, &host) {
                None => host,
                Some(patch) => match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(patched) => {
                        tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                            host_namespace = %ns, host_name = %name, change = %patch, "pushed a spec change down");
                        let patched = slim(serde_json::to_value(patched).unwrap_or(Value::Null));
                        state.wrote_host(key, &patched);
                        patched
                    }
                    Err(e) if is_status(&e, 422) => {
                        // The host refuses this change (e.g. an immutable field); retrying
                        // cannot help, the next change of the source will try again.
                        tracing::warn!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                            error = %e, "the host refused a spec change");
                        state.metrics.error();
                        host
                    }
                    Err(e) => return Err(e).ctx(|| format!("patching {}", what())),
                },
            }
        }
    };

    let message = format!("synced to {ns}/{name} on the host");
    if let Some(patch) = kind.status_patch(source, &host, &message, &now()) {
        let api = kplane_api(state, key)?;
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(written) => {
                let written = serde_json::to_value(written).unwrap_or(Value::Null);
                State::note_write(&state.own_source_writes, key, &written);
                tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                "wrote the host status back")
            }
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                return Err(e).ctx(|| {
                    format!(
                        "writing the status of {}/{} in {}",
                        key.namespace, key.name, key.cluster
                    )
                })
            }
        }
    }
    state.mark_synced(key, true);
    // The host pods of the object, reflected into its logical cluster.
    pods::reconcile(state, key, source).await
}
