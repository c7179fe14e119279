//! Workspace templates: what the workspace controller does, between bootstrapping a new
//! Workspace's logical cluster and reporting it Ready, for a Workspace with
//! `spec.template: NAME`.
//!
//! - The WorkspaceTemplate NAME is looked up in the Workspace's own (parent) cluster, then
//!   in each ancestor up to `root`; the nearest one wins.
//! - Its `spec.manifests` are applied into the child in order, each with server-side apply
//!   under the field manager `kplane-template`, forced: a rerun (after a retry or a
//!   restart) applies the same configuration again and changes nothing, and fields that
//!   tenants later set under other managers are not taken back beyond the template's own.
//!   Namespaced manifests without a namespace go to `default`, as kubectl's do; metadata
//!   only the server sets (`resourceVersion`, `uid`, `managedFields`, ...) is dropped, so a
//!   manifest copied from `kubectl get -o yaml` applies.
//! - A custom resource whose CRD came earlier in the same template waits (at most
//!   [`CRD_WAIT`]) until that CRD is Established and its type is in the child's catalog.
//! - A template that is not found, or a manifest the server refuses, is a
//!   [`TemplateFailure`]: the Workspace turns `Failed` with a `Ready=False` condition whose
//!   reason is `TemplateNotFound` or `TemplateApplyFailed` and whose message names the
//!   manifest and the server's answer. A Failed Workspace stays Failed (the controller
//!   leaves it alone, also after a restart) until it is deleted, which works as for any
//!   Workspace. Transient errors (conflicts, throttling, unavailability) are retried.

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::Key;
use kplane_types::ClusterName;
use serde_json::{json, Value};

use super::workspace::CONTROLLER;
use super::write_failed;
use crate::error::ApiResult;
use crate::options::{FieldValidation, WriteParams};
use crate::patch::Document;
use crate::strategies::workspace::ready_condition;
use crate::strategies::workspace_template::WORKSPACE_TEMPLATE_RESOURCE;
use crate::{meta, Registry, ResourceType, Target};

/// The field manager of everything a template applies.
pub const TEMPLATE_MANAGER: &str = "kplane-template";
/// How long a custom resource waits for the CRD before it in the same template to be
/// served in the new cluster.
pub(crate) const CRD_WAIT: Duration = Duration::from_secs(10);
const CRD_POLL: Duration = Duration::from_millis(50);
/// Metadata a manifest copied from a live object may carry but a configuration does not:
/// dropped before applying (a `resourceVersion` or `uid` would be a precondition that no
/// new cluster can meet).
const SERVER_SET_METADATA: &[&str] = &[
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Why a Workspace's template could not be applied; the Workspace turns Failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateFailure {
    /// `TemplateNotFound` or `TemplateApplyFailed`.
    pub reason: &'static str,
    pub message: String,
}

/// Applies the template a Workspace (`ws`, stored in `parent`) names, if any, into its
/// logical cluster `child`. `Ok(Some(_))` is a failure that will not heal by retrying;
/// `Err` is one that may (the work item is retried).
pub(crate) async fn apply_workspace_template(
    reg: &Registry,
    parent: &ClusterName,
    child: &ClusterName,
    ws: &Value,
) -> ApiResult<Option<TemplateFailure>> {
    let Some(name) = ws
        .pointer("/spec/template")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    let Some((found_in, template)) = find_workspace_template(reg, parent, name).await? else {
        return Ok(Some(TemplateFailure {
            reason: "TemplateNotFound",
            message: format!(
                "WorkspaceTemplate \"{name}\" was not found in logical cluster \"{parent}\" or any of its ancestors"
            ),
        }));
    };
    let manifests = template
        .pointer("/spec/manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, m) in manifests.iter().enumerate() {
        if let Some(why) = apply_manifest(reg, child, m, &manifests[..i]).await? {
            return Ok(Some(TemplateFailure {
                reason: "TemplateApplyFailed",
                message: format!(
                    "{} of WorkspaceTemplate \"{name}\" (logical cluster \"{found_in}\"): {why}",
                    describe(i, m)
                ),
            }));
        }
    }
    Ok(None)
}

/// Applies manifest `m` (which follows `earlier` in its template) into `child`.
/// `Ok(Some(why))` when the server refuses it for good.
async fn apply_manifest(
    reg: &Registry,
    child: &ClusterName,
    m: &Value,
    earlier: &[Value],
) -> ApiResult<Option<String>> {
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(obj_name) = meta::meta_str(m, "name").filter(|n| !n.is_empty()) else {
        return Ok(Some("metadata.name: Required value".into()));
    };
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let defined_earlier = crd_defines(earlier, group, kind);
    let Some(rt) = template_type(reg, child, group, version, kind, defined_earlier).await? else {
        let why = if defined_earlier {
            format!(
                " (its CustomResourceDefinition earlier in the template was not \
                 Established within {}s)",
                CRD_WAIT.as_secs()
            )
        } else {
            String::new()
        };
        return Ok(Some(format!(
            "the server does not serve kind \"{kind}\" in version \"{api_version}\" \
             in logical cluster \"{child}\"{why}"
        )));
    };
    if !rt.is_stored() || !rt.has_verb("patch") {
        return Ok(Some(format!("kind \"{kind}\" cannot be applied")));
    }
    let mut doc = m.clone();
    let namespace = rt.namespaced.then(|| {
        meta::meta_str(m, "namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_string()
    });
    if let Ok(md) = meta::meta_mut(&mut doc) {
        for f in SERVER_SET_METADATA {
            md.remove(*f);
        }
        match &namespace {
            Some(ns) => md.insert("namespace".into(), json!(ns)),
            None => md.remove("namespace"),
        };
    }
    let w = WriteParams {
        field_manager: Some(TEMPLATE_MANAGER.into()),
        default_manager: TEMPLATE_MANAGER.into(),
        force: Some(true),
        field_validation: FieldValidation::Strict,
        ..Default::default()
    };
    let t = Target::new(child, rt, namespace);
    match reg.apply(&t, obj_name, None, Document::new(doc), &w).await {
        Ok(_) => Ok(None),
        Err(e) if matches!(e.code(), 409 | 429 | 503 | 504) => Err(e),
        Err(e) => Ok(Some(e.0.message)),
    }
}

/// The WorkspaceTemplate `name` seen from `cluster`: its own, else the nearest
/// ancestor's; with the cluster it was found in.
async fn find_workspace_template(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<Option<(ClusterName, Value)>> {
    let mut at = Some(cluster.clone());
    while let Some(c) = at {
        let key = Key::new(c.as_str(), WORKSPACE_TEMPLATE_RESOURCE, "", name);
        if let Some((_, obj)) = reg.get_decoded(&key).await? {
            return Ok(Some((c, obj)));
        }
        at = c.parent();
    }
    Ok(None)
}

/// The served type of `kind` in `group/version` in `cluster`; when a CRD earlier in the
/// template defines it, waits (bounded) for it to be served.
async fn template_type(
    reg: &Registry,
    cluster: &ClusterName,
    group: &str,
    version: &str,
    kind: &str,
    wait: bool,
) -> ApiResult<Option<Arc<ResourceType>>> {
    let deadline = tokio::time::Instant::now() + CRD_WAIT;
    loop {
        let catalog = reg.cluster_catalog(cluster).await?;
        if let Some(rt) = catalog
            .in_group_version(group, version)
            .find(|rt| rt.kind == kind)
        {
            return Ok(Some(rt.clone()));
        }
        if !wait || tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(CRD_POLL).await;
        reg.refresh_catalog(cluster).await?;
    }
}

/// Reports Workspace `name` (read as `ws`) Failed with `failure`; `Ok(false)` to retry
/// the write.
pub(crate) async fn report_workspace_failed(
    reg: &Registry,
    t: &Target,
    name: &str,
    ws: Value,
    failure: TemplateFailure,
) -> ApiResult<bool> {
    let cluster = t.cluster()?;
    tracing::warn!(
        %cluster,
        name,
        reason = failure.reason,
        message = %failure.message,
        "workspace failed"
    );
    let mut next = ws;
    let mut conditions: Vec<Value> = next
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter(|c| c["type"] != "Ready").cloned().collect())
        .unwrap_or_default();
    conditions.push(ready_condition("False", failure.reason, &failure.message));
    next["status"] = json!({"phase": "Failed", "conditions": conditions});
    // `next` carries the resourceVersion it was read at: the update's precondition.
    let w = WriteParams::controller_named(CONTROLLER);
    match reg.update(t, name, Some("status"), next, &w).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", name, &e);
            Ok(false)
        }
    }
}

/// Whether a CustomResourceDefinition among `earlier` defines `kind` in `group`.
fn crd_defines(earlier: &[Value], group: &str, kind: &str) -> bool {
    earlier.iter().any(|m| {
        m.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
            && m.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
            && m.pointer("/spec/group").and_then(Value::as_str) == Some(group)
            && m.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind)
    })
}

/// `spec.manifests[3] (apiVersion example.com/v1, kind Widget, name team/w1)`.
fn describe(i: usize, m: &Value) -> String {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let name = s(m.pointer("/metadata/name"));
    let name = match m.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name,
    };
    format!(
        "spec.manifests[{i}] (apiVersion {}, kind {}, name {name})",
        s(m.get("apiVersion")),
        s(m.get("kind")),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kplane_storage::{EventType, Prefix, WatchEvent};
    use kplane_types::ClusterScope;

    use super::*;
    use crate::strategies::workspace::WORKSPACE_RESOURCE;
    use crate::testing::{fixture, Fixture};
    use crate::DeleteParams;

    const URL: &str = "https://kplane.test:6443";

    fn name(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    async fn setup() -> Fixture {
        let f = fixture().await;
        f.reg.set_external_url(URL);
        f
    }

    /// The target of `group`/`plural` (built-in or custom) in `cluster`.
    async fn target(
        reg: &Registry,
        cluster: &str,
        group: &str,
        plural: &str,
        ns: Option<&str>,
    ) -> Target {
        let catalog = reg.cluster_catalog(&name(cluster)).await.unwrap();
        let rt = catalog
            .all()
            .iter()
            .find(|rt| rt.group == group && rt.plural == plural)
            .unwrap_or_else(|| panic!("{group}/{plural} not served in {cluster}"))
            .clone();
        Target::new(&name(cluster), rt, ns.map(str::to_string))
    }

    async fn get(reg: &Registry, t: &Target, n: &str) -> Option<Value> {
        match reg.get(t, n).await {
            Ok(b) => Some(serde_json::from_slice(&b).unwrap()),
            Err(e) if e.code() == 404 => None,
            Err(e) => panic!("{e:?}"),
        }
    }

    async fn create_template(reg: &Registry, cluster: &str, tpl: &str, manifests: Vec<Value>) {
        let t = target(
            reg,
            cluster,
            "tenancy.kplane.io",
            "workspacetemplates",
            None,
        )
        .await;
        let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "WorkspaceTemplate",
                         "metadata": {"name": tpl}, "spec": {"manifests": manifests}});
        reg.create(&t, obj, &WriteParams::default()).await.unwrap();
    }

    /// Creates Workspace `ws` in `cluster` (with `template`) and runs the controller on it.
    async fn create_ws(reg: &Registry, cluster: &str, ws: &str, template: Option<&str>) -> Value {
        let t = target(reg, cluster, "tenancy.kplane.io", "workspaces", None).await;
        let mut obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                             "metadata": {"name": ws}});
        if let Some(tpl) = template {
            obj["spec"] = json!({"template": tpl});
        }
        reg.create(&t, obj, &WriteParams::default()).await.unwrap();
        assert!(
            crate::controllers::workspace::sync_workspace(reg, &name(cluster), ws)
                .await
                .unwrap()
        );
        get(reg, &t, ws).await.unwrap()
    }

    fn ns(n: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": n, "labels": {"tier": "tenant"}}})
    }

    fn cm(n: &str, namespace: Option<&str>) -> Value {
        let mut m = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n},
                           "data": {"from": "template"}});
        if let Some(namespace) = namespace {
            m["metadata"]["namespace"] = json!(namespace);
        }
        m
    }

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                          "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer"}}}}}}}]
            }
        })
    }

    fn widget(n: &str, namespace: &str) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": n, "namespace": namespace}, "spec": {"size": 3}})
    }

    fn rv(obj: &Value) -> u64 {
        obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    fn ready(ws: &Value) -> (&Value, &Value, &Value) {
        let c = &ws["status"]["conditions"][0];
        assert_eq!(c["type"], "Ready", "{ws}");
        (&ws["status"]["phase"], &c["status"], &c["reason"])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_template_is_applied_in_order_with_a_crd_and_its_custom_resource() {
        let f = setup().await;
        let reg = &f.reg;
        create_template(
            reg,
            "root",
            "base",
            vec![
                ns("team"),
                cm("settings", Some("team")),
                widget_crd(),
                widget("w1", "team"),
                cm("plain", None),
            ],
        )
        .await;
        let ws = create_ws(reg, "root", "acme", Some("base")).await;
        assert_eq!(
            ready(&ws),
            (
                &json!("Ready"),
                &json!("True"),
                &json!("LogicalClusterReady")
            )
        );
        let c = "root:acme";
        let namespace = get(reg, &target(reg, c, "", "namespaces", None).await, "team")
            .await
            .unwrap();
        let settings = get(
            reg,
            &target(reg, c, "", "configmaps", Some("team")).await,
            "settings",
        )
        .await
        .unwrap();
        let crd = get(
            reg,
            &target(
                reg,
                c,
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                None,
            )
            .await,
            "widgets.example.com",
        )
        .await
        .unwrap();
        let w1 = get(
            reg,
            &target(reg, c, "example.com", "widgets", Some("team")).await,
            "w1",
        )
        .await
        .unwrap();
        let plain = get(
            reg,
            &target(reg, c, "", "configmaps", Some("default")).await,
            "plain",
        )
        .await
        .unwrap();
        assert_eq!(w1["spec"]["size"], 3);
        assert_eq!(plain["data"]["from"], "template");
        // Written in the template's order.
        let rvs = [&namespace, &settings, &crd, &w1, &plain].map(rv);
        assert!(rvs.windows(2).all(|p| p[0] < p[1]), "{rvs:?}");
        // With server-side apply, as the template's manager.
        for obj in [&namespace, &settings, &crd, &w1, &plain] {
            let mf = &obj["metadata"]["managedFields"][0];
            assert_eq!(
                (&mf["manager"], &mf["operation"]),
                (&json!(TEMPLATE_MANAGER), &json!("Apply")),
                "{obj}"
            );
        }
        // The workspace is Ready only now; the template lives on in the parent only.
        assert!(get(
            reg,
            &target(reg, c, "tenancy.kplane.io", "workspacetemplates", None).await,
            "base"
        )
        .await
        .is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_template_is_found_up_the_ancestry_the_nearest_first() {
        let f = setup().await;
        let reg = &f.reg;
        create_template(reg, "root", "base", vec![cm("from-root", None)]).await;
        create_ws(reg, "root", "acme", None).await;
        // Not in root:acme: found in root, the grandparent of root:acme:team-a.
        let ws = create_ws(reg, "root:acme", "team-a", Some("base")).await;
        assert_eq!(ws["status"]["phase"], "Ready", "{ws}");
        let cms = target(reg, "root:acme:team-a", "", "configmaps", Some("default")).await;
        assert!(get(reg, &cms, "from-root").await.is_some());
        // One of the same name in root:acme is nearer.
        create_template(reg, "root:acme", "base", vec![cm("from-acme", None)]).await;
        create_ws(reg, "root:acme", "team-b", Some("base")).await;
        let cms = target(reg, "root:acme:team-b", "", "configmaps", Some("default")).await;
        assert!(get(reg, &cms, "from-acme").await.is_some());
        assert!(get(reg, &cms, "from-root").await.is_none());
        // A template of a sibling's branch is not an ancestor's.
        create_ws(reg, "root", "other", None).await;
        create_template(reg, "root:other", "only-other", vec![cm("x", None)]).await;
        let ws = create_ws(reg, "root:acme", "team-c", Some("only-other")).await;
        assert_eq!(ws["status"]["phase"], "Failed", "{ws}");
    }

    /// Every state Workspace `ws` of `cluster` was stored in since revision `from`, up to
    /// the current revision.
    async fn phases_since(reg: &Registry, cluster: &str, ws: &str, from: u64) -> Vec<String> {
        let upto = reg.storage().current_revision();
        let mut w = reg
            .storage()
            .watch(&Prefix::resource(cluster, WORKSPACE_RESOURCE), from, None)
            .await
            .unwrap();
        let mut phases = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(10), w.recv())
                .await
                .unwrap()
                .unwrap();
            let WatchEvent::Event(ev) = ev else { continue };
            if ev.kv.key.name == ws && ev.event_type != EventType::Deleted {
                let v: Value = serde_json::from_slice(&ev.kv.value).unwrap();
                phases.push(v["status"]["phase"].as_str().unwrap_or("").to_string());
            }
            if ev.kv.mod_revision >= upto {
                return phases;
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_template_fails_the_workspace_for_good_and_it_can_be_deleted() {
        let f = setup().await;
        let reg = &f.reg;
        let from = reg.storage().current_revision();
        let ws = create_ws(reg, "root", "acme", Some("nowhere")).await;
        assert_eq!(
            ready(&ws),
            (
                &json!("Failed"),
                &json!("False"),
                &json!("TemplateNotFound")
            )
        );
        let msg = ws["status"]["conditions"][0]["message"].as_str().unwrap();
        assert!(
            msg.contains("WorkspaceTemplate \"nowhere\"") && msg.contains("\"root\""),
            "{msg}"
        );
        assert_eq!(
            phases_since(reg, "root", "acme", from).await,
            ["Initializing", "Failed"]
        );
        // Running again (a retry, a restart) leaves it as it is, even once the template
        // exists: nothing is retried endlessly.
        create_template(reg, "root", "nowhere", vec![cm("late", None)]).await;
        assert!(
            crate::controllers::workspace::sync_workspace(reg, &name("root"), "acme")
                .await
                .unwrap()
        );
        crate::controllers::leader::replay_pending(reg).await;
        let t = target(reg, "root", "tenancy.kplane.io", "workspaces", None).await;
        let again = get(reg, &t, "acme").await.unwrap();
        assert_eq!(rv(&again), rv(&ws));
        // Deleting it works as for any Workspace.
        reg.delete(&t, "acme", &DeleteParams::default())
            .await
            .unwrap();
        assert!(
            crate::controllers::workspace::sync_workspace(reg, &name("root"), "acme")
                .await
                .unwrap()
        );
        assert!(get(reg, &t, "acme").await.is_none());
        assert_eq!(
            reg.storage()
                .count(&Prefix::cluster("root:acme"))
                .await
                .unwrap(),
            0
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_manifest_the_server_refuses_fails_the_workspace_naming_it_never_ready() {
        let f = setup().await;
        let reg = &f.reg;
        create_template(
            reg,
            "root",
            "broken",
            vec![
                cm("first", None),
                ns("team"),
                cm("lost", Some("missing")),
                cm("never", None),
            ],
        )
        .await;
        let from = reg.storage().current_revision();
        let ws = create_ws(reg, "root", "acme", Some("broken")).await;
        assert_eq!(
            ready(&ws),
            (
                &json!("Failed"),
                &json!("False"),
                &json!("TemplateApplyFailed")
            )
        );
        assert!(ws["status"].get("URL").is_none(), "{ws}");
        let msg = ws["status"]["conditions"][0]["message"].as_str().unwrap();
        for want in [
            "spec.manifests[2]",
            "apiVersion v1",
            "kind ConfigMap",
            "name missing/lost",
            "WorkspaceTemplate \"broken\"",
            "namespaces \"missing\" not found",
        ] {
            assert!(msg.contains(want), "{want:?} not in {msg}");
        }
        assert_eq!(
            phases_since(reg, "root", "acme", from).await,
            ["Initializing", "Failed"]
        );
        // Applied up to the failing manifest, nothing after it.
        let cms = target(reg, "root:acme", "", "configmaps", Some("default")).await;
        assert!(get(reg, &cms, "first").await.is_some());
        assert!(get(reg, &cms, "never").await.is_none());

        // A kind the cluster does not serve, and an invalid object, name the manifest too.
        create_template(reg, "root", "unknown-kind", vec![widget("w", "default")]).await;
        let ws = create_ws(reg, "root", "b", Some("unknown-kind")).await;
        let msg = ws["status"]["conditions"][0]["message"].as_str().unwrap();
        assert!(
            msg.contains(
                "spec.manifests[0] (apiVersion example.com/v1, kind Widget, name default/w)"
            ) && msg.contains("does not serve kind \"Widget\""),
            "{msg}"
        );
        let mut bad = cm("bad", None);
        bad["data"] = json!({"not a key!": "x"});
        create_template(reg, "root", "invalid", vec![bad]).await;
        let ws = create_ws(reg, "root", "c", Some("invalid")).await;
        assert_eq!(ws["status"]["phase"], "Failed");
        let msg = ws["status"]["conditions"][0]["message"].as_str().unwrap();
        assert!(msg.contains("data[not a key!]"), "{msg}");
    }

    /// A custom resource whose CRD (earlier in the template) never becomes Established
    /// fails after the bounded wait, saying so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_custom_resource_of_a_crd_that_is_not_established_fails_after_the_wait() {
        let f = setup().await;
        let reg = &f.reg;
        let mut conflicting = widget_crd();
        conflicting["metadata"]["name"] = json!("things.example.com");
        conflicting["spec"]["names"] = json!({"plural": "things", "singular": "widget",
                                              "kind": "Thing", "listKind": "ThingList"});
        let thing = json!({"apiVersion": "example.com/v1", "kind": "Thing",
                           "metadata": {"name": "t"}});
        create_template(reg, "root", "clash", vec![widget_crd(), conflicting, thing]).await;
        let ws = create_ws(reg, "root", "acme", Some("clash")).await;
        assert_eq!(ws["status"]["phase"], "Failed", "{ws}");
        let msg = ws["status"]["conditions"][0]["message"].as_str().unwrap();
        assert!(
            msg.contains("spec.manifests[2]")
                && msg.contains("does not serve kind \"Thing\"")
                && msg.contains("was not Established within"),
            "{msg}"
        );
    }

    /// A manifest copied from a live object (resourceVersion, uid, managedFields) applies.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn server_set_metadata_of_a_manifest_is_dropped() {
        let f = setup().await;
        let reg = &f.reg;
        let mut copied = cm("copied", None);
        copied["metadata"]["resourceVersion"] = json!("999");
        copied["metadata"]["uid"] = json!("0c6c9d0e-0000-4000-8000-000000000000");
        copied["metadata"]["creationTimestamp"] = json!("2020-01-01T00:00:00Z");
        copied["metadata"]["managedFields"] =
            json!([{"manager": "someone", "operation": "Update", "apiVersion": "v1"}]);
        create_template(reg, "root", "copied", vec![copied]).await;
        let ws = create_ws(reg, "root", "acme", Some("copied")).await;
        assert_eq!(ws["status"]["phase"], "Ready", "{ws}");
        let cms = target(reg, "root:acme", "", "configmaps", Some("default")).await;
        let obj = get(reg, &cms, "copied").await.unwrap();
        assert_ne!(
            obj["metadata"]["uid"],
            "0c6c9d0e-0000-4000-8000-000000000000"
        );
        assert_eq!(
            obj["metadata"]["managedFields"][0]["manager"],
            TEMPLATE_MANAGER
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reapplying_changes_nothing_and_does_not_fight_other_managers() {
        let f = setup().await;
        let reg = &f.reg;
        create_template(
            reg,
            "root",
            "base",
            vec![ns("team"), cm("settings", Some("team"))],
        )
        .await;
        let ws = create_ws(reg, "root", "acme", Some("base")).await;
        // A tenant adds a key of their own.
        let cms = target(reg, "root:acme", "", "configmaps", Some("team")).await;
        let mut edited = get(reg, &cms, "settings").await.unwrap();
        edited["data"]["mine"] = json!("tenant");
        let w = WriteParams {
            field_manager: Some("tenant".into()),
            ..Default::default()
        };
        reg.update(&cms, "settings", None, edited, &w)
            .await
            .unwrap();
        let before = get(reg, &cms, "settings").await.unwrap();
        // Applying the template again (as after a restart while Initializing).
        let child = name("root:acme");
        assert_eq!(
            apply_workspace_template(reg, &name("root"), &child, &ws)
                .await
                .unwrap(),
            None
        );
        let after = get(reg, &cms, "settings").await.unwrap();
        assert_eq!(after["data"], json!({"from": "template", "mine": "tenant"}));
        assert_eq!(rv(&after), rv(&before), "{after}");
    }

    /// Identical templated CRDs in many workspaces share one catalog and one compiled type.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workspaces_from_one_template_share_the_catalog_of_its_crds() {
        let f = setup().await;
        let reg = &f.reg;
        create_template(
            reg,
            "root",
            "base",
            vec![widget_crd(), widget("w", "default")],
        )
        .await;
        let distinct_before = reg.distinct_catalogs();
        for ws in ["a", "b", "c"] {
            let ws = create_ws(reg, "root", ws, Some("base")).await;
            assert_eq!(ws["status"]["phase"], "Ready", "{ws}");
        }
        let catalogs: Vec<_> =
            futures::future::join_all(["root:a", "root:b", "root:c"].map(|c| async move {
                reg.catalog_for(&ClusterScope::One(name(c))).await.unwrap()
            }))
            .await;
        assert!(Arc::ptr_eq(&catalogs[0], &catalogs[1]));
        assert!(Arc::ptr_eq(&catalogs[0], &catalogs[2]));
        let widgets: Vec<_> = catalogs
            .iter()
            .map(|c| c.get("example.com", "v1", "widgets").unwrap().clone())
            .collect();
        assert!(Arc::ptr_eq(&widgets[0], &widgets[1]));
        assert!(Arc::ptr_eq(
            widgets[0].custom.as_ref().unwrap(),
            widgets[2].custom.as_ref().unwrap()
        ));
        assert_eq!(reg.distinct_catalogs(), distinct_before + 1);
    }
}
