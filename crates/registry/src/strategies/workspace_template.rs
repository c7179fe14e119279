//! tenancy.kplane.io/v1alpha1 WorkspaceTemplate: a cluster-scoped, named, ordered list of
//! manifests (`spec.manifests`, full objects of any served kind) that the workspace
//! controller applies into the logical cluster of every Workspace naming it in
//! `spec.template` (`controllers::workspace_template`). The strategy checks that each
//! manifest names what it is: `apiVersion`, `kind` and `metadata.name`; everything else
//! in a manifest is the business of the kind it is applied as, at apply time.

use kplane_types::Cause;
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::strategy::TypeStrategy;

/// The storage resource of WorkspaceTemplates.
pub const WORKSPACE_TEMPLATE_RESOURCE: &str = "tenancy.kplane.io/workspacetemplates";

#[derive(Debug)]
pub struct WorkspaceTemplate;

#[async_trait::async_trait]
impl TypeStrategy for WorkspaceTemplate {
    fn validate(&self, _rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        validate_template(obj)
    }
}

/// `spec.manifests[i]` each an object with a non-empty `apiVersion` (`version` or
/// `group/version`), `kind` and `metadata.name`, and a string `metadata.namespace` if any.
pub(crate) fn validate_template(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let manifests = match obj.pointer("/spec/manifests") {
        None | Some(Value::Null) => return causes,
        Some(Value::Array(a)) => a,
        Some(other) => {
            causes.push(Cause::invalid("spec.manifests", other, "must be a list"));
            return causes;
        }
    };
    for (i, m) in manifests.iter().enumerate() {
        let at = format!("spec.manifests[{i}]");
        let Value::Object(m) = m else {
            causes.push(Cause::invalid(&at, m, "must be an object"));
            continue;
        };
        match m.get("apiVersion") {
            None | Some(Value::Null) => causes.push(Cause::required(format!("{at}.apiVersion"))),
            Some(Value::String(v)) if v.is_empty() => {
                causes.push(Cause::required(format!("{at}.apiVersion")))
            }
            Some(Value::String(v)) if !api_version_ok(v) => causes.push(Cause::invalid(
                format!("{at}.apiVersion"),
                &json!(v),
                "must be VERSION or GROUP/VERSION",
            )),
            Some(Value::String(_)) => {}
            Some(other) => causes.push(Cause::invalid(
                format!("{at}.apiVersion"),
                other,
                "must be a string",
            )),
        }
        string_required(m.get("kind"), &format!("{at}.kind"), &mut causes);
        match m.get("metadata") {
            None | Some(Value::Null) => {
                causes.push(Cause::required(format!("{at}.metadata.name")));
            }
            Some(Value::Object(md)) => {
                string_required(md.get("name"), &format!("{at}.metadata.name"), &mut causes);
                match md.get("namespace") {
                    None | Some(Value::Null | Value::String(_)) => {}
                    Some(other) => causes.push(Cause::invalid(
                        format!("{at}.metadata.namespace"),
                        other,
                        "must be a string",
                    )),
                }
            }
            Some(other) => causes.push(Cause::invalid(
                format!("{at}.metadata"),
                other,
                "must be an object",
            )),
        }
    }
    causes
}

fn string_required(v: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    match v {
        None | Some(Value::Null) => causes.push(Cause::required(field)),
        Some(Value::String(s)) if s.is_empty() => causes.push(Cause::required(field)),
        Some(Value::String(_)) => {}
        Some(other) => causes.push(Cause::invalid(field, other, "must be a string")),
    }
}

/// `v1` or `group/v1`: one or two non-empty parts.
fn api_version_ok(v: &str) -> bool {
    let parts: Vec<&str> = v.split('/').collect();
    parts.len() <= 2 && parts.iter().all(|p| !p.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(obj: Value) -> Vec<String> {
        validate_template(&obj)
            .into_iter()
            .map(|c| c.render())
            .collect()
    }

    #[test]
    fn each_manifest_names_its_api_version_kind_and_name() {
        let ok = json!({"spec": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {"apiVersion": "example.com/v1", "kind": "Widget",
             "metadata": {"name": "w", "namespace": "a"}, "spec": {"x": 1}},
        ]}});
        assert!(fields(ok).is_empty());
        assert!(fields(json!({"spec": {}})).is_empty());
        assert!(fields(json!({})).is_empty());

        let bad = json!({"spec": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {"kind": "ConfigMap", "metadata": {"name": "c"}},
            {"apiVersion": "v1", "metadata": {"name": "c"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
            {"apiVersion": "v1", "kind": "ConfigMap"},
            "text",
            {"apiVersion": "a/b/c", "kind": "X", "metadata": {"name": "", "namespace": 3}},
        ]}});
        assert_eq!(
            fields(bad),
            [
                "spec.manifests[1].apiVersion: Required value",
                "spec.manifests[2].kind: Required value",
                "spec.manifests[3].metadata.name: Required value",
                "spec.manifests[4].metadata.name: Required value",
                "spec.manifests[5]: Invalid value: \"text\": must be an object",
                "spec.manifests[6].apiVersion: Invalid value: \"a/b/c\": must be VERSION or GROUP/VERSION",
                "spec.manifests[6].metadata.name: Required value",
                "spec.manifests[6].metadata.namespace: Invalid value: 3: must be a string",
            ]
        );
    }
}
