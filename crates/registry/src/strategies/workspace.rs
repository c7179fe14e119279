//! tenancy.kplane.io/v1alpha1 Workspace: a cluster-scoped object whose name is one segment
//! of a logical cluster path. A Workspace NAME in logical cluster P stands for the child
//! cluster `P:NAME`: it starts Initializing with the `tenancy.kplane.io/workspace`
//! finalizer, turns Terminating when marked for deletion (from that write on, writes into
//! the child are refused, `clusters.rs`), and the workspace controller
//! (`controllers::workspace`) bootstraps the child, reports it Ready, and deletes the
//! child's key range (and its descendants') before it drops the finalizer. A Workspace
//! without a template is usually stored Ready at once: its create commits the child's
//! bootstrap with it (`created_together`), and the controller finds nothing left to do.

use kplane_types::{Cause, ClusterName};
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::meta::{self, NameRule};
use crate::strategy::{with_field_from, TypeStrategy};

/// The group of the tenancy API.
pub const TENANCY_GROUP: &str = "tenancy.kplane.io";
/// The storage resource of Workspaces.
pub const WORKSPACE_RESOURCE: &str = "tenancy.kplane.io/workspaces";
/// Holds a deleted Workspace until its logical cluster (and every descendant) is gone.
pub const WORKSPACE_FINALIZER: &str = "tenancy.kplane.io/workspace";
/// The phases a Workspace reports.
pub const PHASES: &[&str] = &["Initializing", "Ready", "Terminating", "Failed"];

#[derive(Debug)]
pub struct Workspace;

impl TypeStrategy for Workspace {
    /// A workspace name is one segment of a logical cluster path.
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Label
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Ok(m) = meta::meta_mut(obj) {
            let fins = m.entry("finalizers").or_insert_with(|| json!([]));
            if !fins.is_array() {
                *fins = json!([]);
            }
            if let Value::Array(a) = fins {
                if !a.iter().any(|f| f == WORKSPACE_FINALIZER) {
                    a.push(json!(WORKSPACE_FINALIZER));
                }
            }
        }
        obj["status"] = json!({
            "phase": "Initializing",
            "conditions": [ready_condition(
                "False",
                "Initializing",
                "the logical cluster is being created",
            )],
        });
    }

    /// `spec.template`, when set, is a template's name, and it cannot change: the template
    /// is applied once, when the logical cluster is created.
    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = Vec::new();
        let template = obj.pointer("/spec/template");
        match template {
            None | Some(Value::Null) => {}
            Some(Value::String(t)) => {
                for msg in kplane_types::validation::is_dns1123_subdomain(t) {
                    causes.push(Cause::invalid("spec.template", &json!(t), &msg));
                }
            }
            Some(other) => causes.push(Cause::invalid("spec.template", other, "must be a string")),
        }
        if let Err((field, why)) = crate::quota::Limits::from_workspace(obj) {
            let value = obj.pointer("/spec/quota").cloned().unwrap_or(Value::Null);
            causes.push(Cause::invalid(&field, &value, &why));
        }
        if let Some(old) = old {
            let before = old.pointer("/spec/template").filter(|v| !v.is_null());
            if before != template.filter(|v| !v.is_null()) {
                causes.push(Cause::invalid(
                    "spec.template",
                    template.unwrap_or(&Value::Null),
                    "field is immutable",
                ));
            }
        }
        causes
    }

    /// `status.phase`, when set, is one of [`PHASES`].
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value) -> Vec<Cause> {
        match obj.pointer("/status/phase") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(p)) if PHASES.contains(&p.as_str()) => Vec::new(),
            Some(other) => vec![Cause::not_supported("status.phase", other, PHASES)],
        }
    }

    /// `/status` takes the request's status, except that a Workspace being deleted stays
    /// `Terminating`: a deleted workspace is never reported Ready again.
    fn prepare_for_subresource_update(
        &self,
        rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        match sub {
            "status" => {
                let mut next = with_field_from(old.clone(), &new, "status");
                if meta::is_deleting(old) {
                    self.prepare_for_delete(rt, &mut next);
                }
                Ok(next)
            }
            other => Err(ApiError::not_found_sub(other)),
        }
    }

    fn prepare_for_delete(&self, _rt: &ResourceType, marked: &mut Value) {
        if !marked.get("status").is_some_and(Value::is_object) {
            marked["status"] = json!({});
        }
        marked["status"]["phase"] = json!("Terminating");
    }

    fn deletes_in_bulk(&self) -> bool {
        false
    }
}

/// The `Ready` condition with `status` ("True"/"False"), `reason` and `message`.
/// A Ready Workspace's status: its child's `url` and a `Ready` condition, after the other
/// conditions of `status` (the status it had).
pub(crate) fn ready_status(child: &ClusterName, url: &str, status: Option<&Value>) -> Value {
    let mut conditions: Vec<Value> = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map(|c| c.iter().filter(|c| c["type"] != "Ready").cloned().collect())
        .unwrap_or_default();
    conditions.push(ready_condition(
        "True",
        "LogicalClusterReady",
        &format!("the logical cluster {child} is ready"),
    ));
    json!({"phase": "Ready", "URL": url, "conditions": conditions})
}

pub(crate) fn ready_condition(status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": meta::now_time(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;

    #[test]
    fn the_template_is_a_name_and_cannot_change() {
        let all = builtin();
        let rt = all.iter().find(|r| r.plural == "workspaces").unwrap();
        let ws = |t: Value| json!({"metadata": {"name": "a"}, "spec": {"template": t}});
        let rendered = |obj: &Value, old: Option<&Value>| -> Vec<String> {
            Workspace
                .validate(rt, obj, old)
                .iter()
                .map(Cause::render)
                .collect()
        };
        assert!(rendered(&ws(json!("base")), None).is_empty());
        assert!(rendered(&json!({"metadata": {"name": "a"}}), None).is_empty());
        assert_eq!(
            rendered(&ws(json!("Not_A_Name")), None)[0],
            "spec.template: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            rendered(&ws(json!(1)), None),
            ["spec.template: Invalid value: 1: must be a string"]
        );
        let old = ws(json!("base"));
        assert!(rendered(&ws(json!("base")), Some(&old)).is_empty());
        assert_eq!(
            rendered(&ws(json!("other")), Some(&old)),
            ["spec.template: Invalid value: \"other\": field is immutable"]
        );
        assert_eq!(
            rendered(&json!({"metadata": {"name": "a"}}), Some(&old)),
            ["spec.template: Invalid value: null: field is immutable"]
        );
        let none = json!({"metadata": {"name": "a"}});
        assert_eq!(
            rendered(&ws(json!("late")), Some(&none)),
            ["spec.template: Invalid value: \"late\": field is immutable"]
        );
    }
}
