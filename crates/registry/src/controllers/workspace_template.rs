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
//!   Namespaced manifests without a namespace go to `default`, as kubectl's do.
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

/// Why a Workspace's template could not be applied; the Workspace turns Failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateFailure {
    /// `TemplateNotFound` or `TemplateApplyFailed`.
    pub reason: &'static str,
    pub message: String,
}

impl Registry {
    /// Applies the template a Workspace (`ws`, stored in `parent`) names, if any, into its
    /// logical cluster `child`. `Ok(Some(_))` is a failure that will not heal by retrying;
    /// `Err` is one that may (the work item is retried).
    pub(crate) async fn apply_workspace_template(
        &self,
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
        let Some((found_in, template)) = self.find_workspace_template(parent, name).await? else {
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
            let fail = |why: String| {
                Ok(Some(TemplateFailure {
                    reason: "TemplateApplyFailed",
                    message: format!(
                        "{} of WorkspaceTemplate \"{name}\" (logical cluster \"{found_in}\"): {why}",
                        describe(i, m)
                    ),
                }))
            };
            let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
            let Some(obj_name) = meta::meta_str(m, "name").filter(|n| !n.is_empty()) else {
                return fail("metadata.name: Required value".into());
            };
            let (group, version) = match api_version.split_once('/') {
                Some((g, v)) => (g, v),
                None => ("", api_version),
            };
            let defined_earlier = crd_defines(&manifests[..i], group, kind);
            let Some(rt) = self
                .template_type(child, group, version, kind, defined_earlier)
                .await?
            else {
                return fail(format!(
                    "the server does not serve kind \"{kind}\" in version \"{api_version}\" in logical cluster \"{child}\""
                ));
            };
            if !rt.is_stored() || !rt.has_verb("patch") {
                return fail(format!("kind \"{kind}\" cannot be applied"));
            }
            let mut doc = m.clone();
            let namespace = if rt.namespaced {
                let ns = meta::meta_str(m, "namespace")
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_string();
                if let Ok(md) = meta::meta_mut(&mut doc) {
                    md.insert("namespace".into(), json!(ns));
                }
                Some(ns)
            } else {
                if let Ok(md) = meta::meta_mut(&mut doc) {
                    md.remove("namespace");
                }
                None
            };
            let w = WriteParams {
                field_manager: Some(TEMPLATE_MANAGER.into()),
                default_manager: TEMPLATE_MANAGER.into(),
                force: Some(true),
                field_validation: FieldValidation::Strict,
                ..Default::default()
            };
            let t = Target::new(child, rt, namespace);
            match self.apply(&t, obj_name, None, Document::new(doc), &w).await {
                Ok(_) => {}
                Err(e) if matches!(e.code(), 409 | 429 | 503 | 504) => return Err(e),
                Err(e) => return fail(e.0.message),
            }
        }
        Ok(None)
    }

    /// The WorkspaceTemplate `name` seen from `cluster`: its own, else the nearest
    /// ancestor's; with the cluster it was found in.
    async fn find_workspace_template(
        &self,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<Option<(ClusterName, Value)>> {
        let mut at = Some(cluster.clone());
        while let Some(c) = at {
            let key = Key::new(c.as_str(), WORKSPACE_TEMPLATE_RESOURCE, "", name);
            if let Some((_, obj)) = self.get_decoded(&key).await? {
                return Ok(Some((c, obj)));
            }
            at = c.parent();
        }
        Ok(None)
    }

    /// The served type of `kind` in `group/version` in `cluster`; when a CRD earlier in the
    /// template defines it, waits (bounded) for it to be served.
    async fn template_type(
        &self,
        cluster: &ClusterName,
        group: &str,
        version: &str,
        kind: &str,
        wait: bool,
    ) -> ApiResult<Option<Arc<ResourceType>>> {
        let deadline = tokio::time::Instant::now() + CRD_WAIT;
        loop {
            let catalog = self.cluster_catalog(cluster).await?;
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
            self.refresh_catalog(cluster).await?;
        }
    }

    /// Reports Workspace `name` (read as `ws`) Failed with `failure`; `Ok(false)` to retry
    /// the write.
    pub(crate) async fn report_workspace_failed(
        &self,
        t: &Target,
        name: &str,
        ws: Value,
        failure: TemplateFailure,
    ) -> ApiResult<bool> {
        let cluster = t.cluster()?;
        tracing::warn!(%cluster, name, reason = failure.reason, message = %failure.message, "workspace failed");
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
        match self.update(t, name, Some("status"), next, &w).await {
            Ok(_) => Ok(true),
            Err(e) if e.code() == 404 => Ok(true),
            Err(e) => {
                write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", name, &e);
                Ok(false)
            }
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
