//! A policy and a binding as the plugin uses them: parsed once from their stored objects
//! when a cluster's entry is built (`cache.rs`), every expression compiled and every
//! selector parsed, so a request only matches, reads params and evaluates.

use kplane_schema::policy::{self, Declared, Env, Expression, Variable, Want};
use kplane_types::labels::LabelSelector;
use kplane_types::StatusReason;
use serde_json::Value;

use crate::json_map::strings;
use crate::webhooks::model::Rule;

/// A `NamedRuleWithOperations`.
#[derive(Debug)]
pub struct NamedRule {
    pub rule: Rule,
    /// `resourceNames`: empty matches every name.
    pub names: Vec<String>,
}

/// A `MatchResources` (the policy's `matchConstraints`, a binding's `matchResources`).
#[derive(Debug)]
pub struct MatchResources {
    pub rules: Vec<NamedRule>,
    pub exclude: Vec<NamedRule>,
    /// `matchPolicy: Exact`.
    pub exact: bool,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
}

/// An expression, or the message of its compilation error (kept, not refused: a stored
/// policy is evaluated as upstream evaluates it, `compilation error: ...`).
pub type Compiled = Result<Expression, String>;

/// One `validations[]` entry.
#[derive(Debug)]
pub struct Validation {
    pub expr: Compiled,
    /// The expression as written (the default message is `failed expression: <it>`).
    pub source: String,
    pub message: String,
    pub message_expr: Option<Compiled>,
    pub reason: StatusReason,
}

/// One `auditAnnotations[]` entry.
#[derive(Debug)]
pub struct AuditAnnotation {
    pub key: String,
    pub source: String,
    pub expr: Compiled,
}

/// A `paramKind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamKind {
    pub api_version: String,
    pub kind: String,
}

impl ParamKind {
    /// `(group, version)`.
    pub fn group_version(&self) -> (&str, &str) {
        self.api_version
            .split_once('/')
            .unwrap_or(("", &self.api_version))
    }
}

/// A ValidatingAdmissionPolicy.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    pub param_kind: Option<ParamKind>,
    /// `None`: the policy has none (a configuration error).
    pub constraints: Option<MatchResources>,
    pub match_conditions: Vec<Compiled>,
    pub variables: Vec<Variable>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<AuditAnnotation>,
}

/// A `paramRef`.
#[derive(Debug)]
pub struct ParamRef {
    pub name: String,
    pub namespace: String,
    pub selector: Option<LabelSelector>,
    /// `parameterNotFoundAction: Deny`.
    pub deny_not_found: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub struct Binding {
    pub name: String,
    pub policy_name: String,
    pub param_ref: Option<ParamRef>,
    pub match_resources: Option<MatchResources>,
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
    /// `validationActions` as written (an `Audit` annotation names them).
    pub actions: Vec<String>,
}

fn selector(v: Option<&Value>) -> LabelSelector {
    match v {
        None | Some(Value::Null) => LabelSelector::everything(),
        Some(s) => {
            LabelSelector::from_label_selector_json(s).unwrap_or_else(|_| LabelSelector::nothing())
        }
    }
}

fn named_rules(v: Option<&Value>) -> Vec<NamedRule> {
    v.and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|r| NamedRule {
            rule: Rule {
                operations: strings(r.get("operations")),
                api_groups: strings(r.get("apiGroups")),
                api_versions: strings(r.get("apiVersions")),
                resources: strings(r.get("resources")),
                scope: r
                    .get("scope")
                    .and_then(Value::as_str)
                    .unwrap_or("*")
                    .to_string(),
            },
            names: strings(r.get("resourceNames")),
        })
        .collect()
}

/// A stored `MatchResources`.
pub fn match_resources(v: &Value) -> MatchResources {
    MatchResources {
        rules: named_rules(v.get("resourceRules")),
        exclude: named_rules(v.get("excludeResourceRules")),
        exact: v.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
        namespace_selector: selector(v.get("namespaceSelector")),
        object_selector: selector(v.get("objectSelector")),
    }
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// `reason` of a validation (upstream allows these four; `Invalid` when unset).
fn reason(v: &str) -> StatusReason {
    match v {
        "Forbidden" => StatusReason::Forbidden,
        "Unauthorized" => StatusReason::Unauthorized,
        "RequestEntityTooLarge" => StatusReason::RequestEntityTooLarge,
        _ => StatusReason::Invalid,
    }
}

/// A stored policy, compiled.
pub fn parse_policy(obj: &Value) -> Policy {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let param_kind = spec
        .get("paramKind")
        .filter(|v| v.is_object())
        .map(|pk| ParamKind {
            api_version: s(pk, "apiVersion").to_string(),
            kind: s(pk, "kind").to_string(),
        });
    let params = param_kind.is_some();
    let mut names: Vec<Declared> = Vec::new();
    let mut variables = Vec::new();
    for v in list(spec, "variables") {
        let env = Env {
            params,
            authorizer: true,
            variables: &names,
        };
        match policy::compile(s(v, "expression"), env, Want::Any) {
            Ok(expr) => {
                names.push(Declared::new(s(v, "name"), Some(&expr)));
                variables.push(Variable {
                    name: s(v, "name").to_string(),
                    expr,
                });
            }
            Err(_) => names.push(Declared::new(s(v, "name"), None)),
        }
    }
    let env = Env {
        params,
        authorizer: true,
        variables: &names,
    };
    // match conditions: no variables; messages: no variables and no authorizer
    let conditions = Env {
        variables: &[],
        ..env
    };
    let bare = Env {
        authorizer: false,
        ..conditions
    };
    Policy {
        name: obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ignore_failures: s(spec, "failurePolicy") == "Ignore",
        param_kind,
        constraints: spec
            .get("matchConstraints")
            .filter(|v| v.is_object())
            .map(match_resources),
        match_conditions: list(spec, "matchConditions")
            .iter()
            .map(|c| policy::compile(s(c, "expression"), conditions, Want::Bool))
            .collect(),
        validations: list(spec, "validations")
            .iter()
            .map(|v| Validation {
                expr: policy::compile(s(v, "expression"), env, Want::Bool),
                source: s(v, "expression").to_string(),
                message: s(v, "message").to_string(),
                message_expr: Some(s(v, "messageExpression"))
                    .filter(|m| !m.trim().is_empty())
                    .map(|m| policy::compile(m, bare, Want::String)),
                reason: reason(s(v, "reason")),
            })
            .collect(),
        audit_annotations: list(spec, "auditAnnotations")
            .iter()
            .map(|a| AuditAnnotation {
                key: s(a, "key").to_string(),
                source: s(a, "valueExpression").to_string(),
                expr: policy::compile(s(a, "valueExpression").trim(), env, Want::StringOrNull),
            })
            .collect(),
        variables,
    }
}

/// A stored binding.
pub fn parse_binding(obj: &Value) -> Binding {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let actions = strings(spec.get("validationActions"));
    let has = |a: &str| actions.iter().any(|x| x == a);
    Binding {
        name: obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        policy_name: s(spec, "policyName").to_string(),
        param_ref: spec
            .get("paramRef")
            .filter(|v| v.is_object())
            .map(|pr| ParamRef {
                name: s(pr, "name").to_string(),
                namespace: s(pr, "namespace").to_string(),
                selector: pr
                    .get("selector")
                    .filter(|v| !v.is_null())
                    .map(|v| selector(Some(v))),
                deny_not_found: s(pr, "parameterNotFoundAction") == "Deny",
            }),
        match_resources: spec
            .get("matchResources")
            .filter(|v| v.is_object())
            .map(match_resources),
        deny: has("Deny"),
        warn: has("Warn"),
        audit: has("Audit"),
        actions: actions.clone(),
    }
}
