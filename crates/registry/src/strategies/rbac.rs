//! rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding
//! (one strategy; `rt.kind` tells them apart): created on update, path-segment names,
//! subject defaults, the roleRef rules (required, immutable) and rule validation, and the
//! default ClusterRoles and ClusterRoleBindings every logical cluster shows as built-in
//! objects.

use kplane_types::Cause;
use serde_json::{json, Value};

use crate::builtins::Builtins;
use crate::catalog::ResourceType;
use crate::meta::NameRule;
use crate::rbac::defaults;
use crate::stored_form;
use crate::strategy::TypeStrategy;

#[derive(Debug)]
pub struct Rbac;

impl TypeStrategy for Rbac {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    /// The bootstrap ClusterRoles and ClusterRoleBindings (`rbac::defaults`).
    fn builtins(&self, rt: &ResourceType) -> Option<&'static Builtins> {
        match rt.kind.as_str() {
            "ClusterRole" => Some(defaults::cluster_role_objects()),
            "ClusterRoleBinding" => Some(defaults::cluster_role_binding_objects()),
            _ => None,
        }
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        default_subjects(obj);
    }

    fn canonicalize(&self, rt: &ResourceType, obj: &mut Value) {
        stored_form::rbac(obj, &rt.kind);
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        validate_rbac(obj, old, rt)
    }
}

fn default_subjects(obj: &mut Value) {
    // SetDefaults_RoleBinding / _ClusterRoleBinding.
    if let Some(Value::Object(role_ref)) = obj.get_mut("roleRef") {
        if role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            role_ref.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
    let Some(Value::Array(subjects)) = obj.get_mut("subjects") else {
        return;
    };
    for s in subjects.iter_mut() {
        let kind = s
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let has_group = s
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_some_and(|g| !g.is_empty());
        if !has_group && s.is_object() {
            // A ServiceAccount's group defaults to "", which the stored form omits.
            if matches!(kind.as_str(), "User" | "Group") {
                s["apiGroup"] = json!("rbac.authorization.k8s.io");
            }
        }
    }
}

fn validate_rbac(obj: &Value, old: Option<&Value>, rt: &ResourceType) -> Vec<Cause> {
    let mut causes = Vec::new();
    if rt.kind.ends_with("Binding") {
        match obj.get("roleRef") {
            Some(Value::Object(r)) => {
                let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
                let allowed: &[&str] = if rt.kind == "RoleBinding" {
                    &["Role", "ClusterRole"]
                } else {
                    &["ClusterRole"]
                };
                if !allowed.contains(&kind) {
                    causes.push(Cause::not_supported("roleRef.kind", &json!(kind), allowed));
                }
                if r.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    causes.push(Cause::required("roleRef.name"));
                }
            }
            _ => causes.push(Cause::required("roleRef")),
        }
        if let Some(old) = old {
            if old.get("roleRef") != obj.get("roleRef") {
                causes.push(Cause::invalid(
                    "roleRef",
                    obj.get("roleRef").unwrap_or(&Value::Null),
                    "cannot change roleRef",
                ));
            }
        }
        if let Some(Value::Array(subjects)) = obj.get("subjects") {
            for (i, s) in subjects.iter().enumerate() {
                let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
                if !["User", "Group", "ServiceAccount"].contains(&kind) {
                    causes.push(Cause::not_supported(
                        format!("subjects[{i}].kind"),
                        &json!(kind),
                        &["ServiceAccount", "User", "Group"],
                    ));
                }
                if s.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    causes.push(Cause::required(format!("subjects[{i}].name")));
                }
            }
        }
    } else if let Some(Value::Array(rules)) = obj.get("rules") {
        for (i, r) in rules.iter().enumerate() {
            let empty = |f: &str| {
                r.get(f)
                    .and_then(Value::as_array)
                    .is_none_or(|a| a.is_empty())
            };
            if empty("verbs") {
                causes.push(Cause::required(format!("rules[{i}].verbs")));
            }
            if empty("nonResourceURLs") && r.get("apiGroups").is_none() {
                causes.push(Cause::required(format!("rules[{i}].apiGroups")));
            }
        }
    }
    causes
}
