//! `RBACEscalation`: the escalation and bind checks of kube-apiserver's RBAC storage
//! (`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`) on
//! every create and update (so also patch and apply) of an RBAC object:
//!
//! - a Role or ClusterRole may carry only rules its writer holds in that namespace (or
//!   cluster-wide, for a ClusterRole), unless the writer may `escalate` that resource;
//!   setting or changing a ClusterRole's `aggregationRule` needs every permission
//!   (`*` on `*.*` and on every URL);
//! - a RoleBinding or ClusterRoleBinding may refer only to a role whose rules its writer
//!   holds, unless the writer may `bind` that role (in the binding's namespace);
//! - members of `system:masters` and writes of the server's own controllers (no user) skip
//!   the checks; an update that changes only finalizers or ownerReferences (or nothing)
//!   is not checked, as upstream.
//!
//! Held rules and the `escalate`/`bind` decisions come from the logical cluster's RBAC
//! (`crate::rbac`), the refusal is upstream's 403 (`... is attempting to grant RBAC
//! permissions not currently held:` with the missing rules).

use kplane_types::request::SYSTEM_MASTERS;
use kplane_types::{ClusterScope, RequestInfo, UserInfo, Verb};
use serde_json::Value;

use super::chain::{forbidden, Attributes, Operation, ValidatingAdmission};
use crate::error::ApiResult;
use crate::rbac::covers::escalation_message;
use crate::rbac::{Rule, Verdict};
use crate::Registry;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

#[derive(Debug)]
pub struct RbacEscalation;

/// The rules of a Role or ClusterRole object.
fn rules_of(obj: &Value) -> Vec<Rule> {
    obj.get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

/// `IsOnlyMutatingGCFields`: whether `new` differs from `old` at most in finalizers and
/// ownerReferences (and the fields the server maintains).
fn only_gc_fields(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "finalizers",
                "ownerReferences",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                m.remove(k);
            }
        }
        v
    };
    strip(old) == strip(new)
}

/// Whether RBAC allows `user` the `verb` on `resource` (of the RBAC group) named `name`.
async fn allowed(
    reg: &Registry,
    user: &UserInfo,
    a: &Attributes<'_>,
    verb: &str,
    resource: &str,
    name: &str,
) -> bool {
    let request = RequestInfo {
        cluster: ClusterScope::One(a.cluster.clone()),
        path: String::new(),
        verb: Verb::Other(verb.to_string()),
        is_resource_request: true,
        api_group: RBAC_GROUP.to_string(),
        api_version: "*".to_string(),
        namespace: Some(a.namespace)
            .filter(|n| !n.is_empty())
            .map(str::to_string),
        resource: resource.to_string(),
        subresource: None,
        name: Some(name).filter(|n| !n.is_empty()).map(str::to_string),
    };
    matches!(reg.rbac_authorize(user, &request).await, Verdict::Allow(_))
}

/// `ConfirmNoEscalation`: refuses unless the rules `user` holds in `a`'s namespace cover
/// `wanted`; `why` replaces the message when given.
async fn confirm_no_escalation(
    reg: &Registry,
    user: &UserInfo,
    a: &Attributes<'_>,
    wanted: &[Rule],
    why: Option<&str>,
) -> ApiResult<()> {
    let cluster = ClusterScope::One(a.cluster.clone());
    let namespace = Some(a.namespace).filter(|n| !n.is_empty());
    let (held, errors) = reg.rbac_rules(&cluster, user, namespace).await?;
    match escalation_message(&user.username, &user.groups, &held, wanted, &errors) {
        None => Ok(()),
        Some(msg) => Err(forbidden(a, why.unwrap_or(&msg))),
    }
}

/// Every permission: what setting an `aggregationRule` needs.
fn full_authority() -> [Rule; 2] {
    [
        Rule::resource(&["*"], &["*"], &["*"]),
        Rule::urls(&["*"], &["*"]),
    ]
}

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for RbacEscalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    async fn validate(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let rt = a.resource;
        if rt.group != RBAC_GROUP || a.subresource.is_some() {
            return Ok(());
        }
        let (Some(obj), Some(user)) = (obj, a.user) else {
            return Ok(());
        };
        if user.in_group(SYSTEM_MASTERS) {
            return Ok(());
        }
        if let (Operation::Update, Some(old)) = (a.operation, a.old) {
            if only_gc_fields(old, obj) {
                return Ok(());
            }
        }
        match rt.plural.as_str() {
            "roles" | "clusterroles" => {
                // Upstream asks with the request's name: none on a create.
                let name = if a.operation == Operation::Create {
                    ""
                } else {
                    a.name
                };
                if allowed(reg, user, a, "escalate", &rt.plural, name).await {
                    return Ok(());
                }
                confirm_no_escalation(reg, user, a, &rules_of(obj), None).await?;
                let aggregation = obj.get("aggregationRule").filter(|v| !v.is_null());
                let changed = match a.old {
                    Some(old) => old.get("aggregationRule").filter(|v| !v.is_null()) != aggregation,
                    None => true,
                };
                if rt.plural == "clusterroles" && aggregation.is_some() && changed {
                    let why = "must have cluster-admin privileges to use the aggregationRule";
                    confirm_no_escalation(reg, user, a, &full_authority(), Some(why)).await?;
                }
                Ok(())
            }
            "rolebindings" | "clusterrolebindings" => {
                let str_at = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
                let (kind, role) = (str_at("/roleRef/kind"), str_at("/roleRef/name"));
                let resource = match kind {
                    "Role" => "roles",
                    "ClusterRole" => "clusterroles",
                    _ => "",
                };
                if !resource.is_empty() && allowed(reg, user, a, "bind", resource, role).await {
                    return Ok(());
                }
                let namespace = Some(a.namespace).filter(|n| !n.is_empty());
                let rules = match reg
                    .rbac_role_ref_rules(a.cluster, kind, role, namespace)
                    .await?
                {
                    Ok(rules) => rules,
                    Err(why) => return Err(forbidden(a, &why)),
                };
                confirm_no_escalation(reg, user, a, &rules, None).await
            }
            _ => Ok(()),
        }
    }
}
