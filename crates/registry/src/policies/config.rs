//! The defaults and validation of ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding, as kube-apiserver 1.32 has them
//! (`pkg/apis/admissionregistration/v1/defaults.go`, `validation/validation.go`): every
//! expression is compiled (`kplane_schema::policy`) and its error reported at its field.
//! The ObjectMeta rules are the caller's.

use std::collections::HashSet;

use kplane_schema::policy::{self, Declared, Env, Want};
use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use crate::json_map::strings;
use crate::json_map::{each_struct, set_default};
use crate::label_selector::validate_label_selector;
use crate::pod_template::required;
use crate::webhooks::config::{invalid_raw, validate_rule};

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const REASONS: &[&str] = &[
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
const NOT_FOUND_ACTIONS: &[&str] = &["Deny", "Allow"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;
const MAX_MATCH_CONDITIONS: usize = 64;

/// `SetDefaults_MatchResources` and `SetDefaults_Rule` on a `MatchResources` object.
fn default_match_resources(mr: &mut serde_json::Map<String, Value>) {
    set_default(mr, "matchPolicy", json!("Equivalent"));
    set_default(mr, "namespaceSelector", json!({}));
    set_default(mr, "objectSelector", json!({}));
    for field in ["resourceRules", "excludeResourceRules"] {
        for rule in each_struct(mr, field) {
            set_default(rule, "scope", json!("*"));
        }
    }
}

/// The defaults of a policy: `failurePolicy: Fail` and the match constraints'.
pub fn default_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    set_default(spec, "failurePolicy", json!("Fail"));
    if let Some(Value::Object(mr)) = spec.get_mut("matchConstraints") {
        default_match_resources(mr);
    }
}

/// The defaults of a binding: its `matchResources`'.
pub fn default_binding(obj: &mut Value) {
    if let Some(Value::Object(mr)) = obj.pointer_mut("/spec/matchResources") {
        default_match_resources(mr);
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

fn one_of(v: &Value, key: &str, supported: &[&str], path: &str, out: &mut Vec<Cause>) {
    match v.get(key).filter(|x| !x.is_null()) {
        None => out.push(Cause::required(format!("{path}.{key}"))),
        Some(x) if !x.as_str().is_some_and(|s| supported.contains(&s)) => {
            out.push(Cause::not_supported(format!("{path}.{key}"), x, supported));
        }
        Some(_) => {}
    }
}

/// A policy's validation on create (`old` None) and update.
pub fn validate_policy(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    one_of(spec, "failurePolicy", FAILURE_POLICIES, "spec", &mut out);
    let params = spec.get("paramKind").filter(|v| !v.is_null());
    if let Some(pk) = params {
        out.extend(validate_param_kind(pk, "spec.paramKind"));
    }
    match spec.get("matchConstraints").filter(|v| !v.is_null()) {
        None => out.push(Cause::required("spec.matchConstraints")),
        Some(mc) => {
            out.extend(validate_match_resources(mc, "spec.matchConstraints"));
            if list(mc, "resourceRules").is_empty() {
                out.push(Cause::required("spec.matchConstraints.resourceRules"));
            }
        }
    }
    let unchanged_conditions =
        old.is_some_and(|o| o.pointer("/spec/matchConditions") == spec.get("matchConditions"));
    if !unchanged_conditions {
        out.extend(validate_match_conditions(
            list(spec, "matchConditions"),
            params.is_some(),
            "spec.matchConditions",
        ));
    }
    let mut declared = Vec::new();
    for (i, v) in list(spec, "variables").iter().enumerate() {
        out.extend(validate_variable(
            v,
            params.is_some(),
            &mut declared,
            &format!("spec.variables[{i}]"),
        ));
    }
    let env = Env {
        params: params.is_some(),
        authorizer: true,
        variables: &declared,
    };
    let validations = list(spec, "validations");
    let annotations = list(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        out.push(required("spec.validations", why));
        out.push(required("spec.auditAnnotations", why));
        return out;
    }
    for (i, v) in validations.iter().enumerate() {
        out.extend(validate_validation(
            v,
            env,
            &format!("spec.validations[{i}]"),
        ));
    }
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        out.push(Cause::invalid(
            "spec.auditAnnotations",
            &json!(annotations),
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut keys = HashSet::new();
    for (i, a) in annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        out.extend(validate_audit_annotation(a, name, env, &path));
        let key = str_at(a, "key").unwrap_or("");
        if !keys.insert(key) {
            out.push(Cause::duplicate(format!("{path}.key"), &json!(key)));
        }
    }
    out
}

/// `validateParamKind`.
fn validate_param_kind(pk: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let api_version = str_at(pk, "apiVersion").unwrap_or("");
    if api_version.is_empty() {
        out.push(Cause::required(format!("{path}.apiVersion")));
    } else {
        let p = format!("{path}.apiVersion");
        let (group, version) = match api_version.matches('/').count() {
            0 => ("", api_version),
            1 => api_version.split_once('/').unwrap_or(("", api_version)),
            _ => {
                let why = format!("unexpected GroupVersion string: {api_version}");
                out.push(Cause::invalid(&p, &json!(api_version), &why));
                ("", "")
            }
        };
        let errs = validation::is_dns1123_subdomain(group);
        if !group.is_empty() && !errs.is_empty() {
            out.push(Cause::invalid(&p, &json!(group), &errs.join(",")));
        }
        if version.is_empty() && api_version.matches('/').count() < 2 {
            out.push(Cause::invalid(
                &p,
                &json!(api_version),
                "version must be specified",
            ));
        } else if !version.is_empty() {
            let errs = validation::is_dns1035_label(version);
            if !errs.is_empty() {
                out.push(Cause::invalid(&p, &json!(version), &errs.join(",")));
            }
        }
    }
    let kind = str_at(pk, "kind").unwrap_or("");
    if kind.is_empty() {
        out.push(Cause::required(format!("{path}.kind")));
    } else {
        let errs = validation::is_dns1035_label(&kind.to_lowercase());
        if !errs.is_empty() {
            out.push(Cause::invalid(
                format!("{path}.kind"),
                &json!(kind),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            ));
        }
    }
    out
}

/// `validateMatchResources` (the policy's and the binding's).
pub(crate) fn validate_match_resources(mr: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    one_of(mr, "matchPolicy", MATCH_POLICIES, path, &mut out);
    for sel in ["namespaceSelector", "objectSelector"] {
        match mr.get(sel).filter(|v| !v.is_null()) {
            None => out.push(Cause::required(format!("{path}.{sel}"))),
            Some(s) => out.extend(validate_label_selector(s, &format!("{path}.{sel}"), false)),
        }
    }
    for field in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in list(mr, field).iter().enumerate() {
            let p = format!("{path}.{field}[{i}]");
            let mut seen = HashSet::new();
            for (j, name) in strings(rule.get("resourceNames")).iter().enumerate() {
                let np = format!("{p}.resourceNames[{j}]");
                for msg in validation::validate_path_segment_name(name, false) {
                    out.push(Cause::invalid(&np, &json!(name), &msg));
                }
                if !seen.insert(name.clone()) {
                    out.push(Cause::duplicate(&np, &json!(name)));
                }
            }
            out.extend(validate_rule(rule, &p));
        }
    }
    out
}

/// `validateMatchConditions` (names, count, and each expression compiled by the stateless
/// compiler: `params` only when allowed, no `variables`), for policies and webhooks.
pub(crate) fn validate_match_conditions(
    conditions: &[Value],
    params: bool,
    path: &str,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if conditions.len() > MAX_MATCH_CONDITIONS {
        out.push(Cause::new(
            kplane_types::CauseType::FieldValueTooMany,
            path,
            format!(
                "Too many: {}: must have at most {MAX_MATCH_CONDITIONS} items",
                conditions.len()
            ),
        ));
    }
    let mut names = HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let expr = str_at(c, "expression").unwrap_or("").trim();
        if expr.is_empty() {
            out.push(Cause::required(format!("{p}.expression")));
        } else if let Err(e) = policy::compile_condition(expr, params) {
            out.push(Cause::invalid(format!("{p}.expression"), &json!(expr), &e));
        }
        let name = str_at(c, "name").unwrap_or("");
        if name.is_empty() {
            out.push(Cause::required(format!("{p}.name")));
        } else {
            out.extend(validation::validate_qualified_name(
                name,
                &format!("{p}.name"),
            ));
            if !names.insert(name) {
                out.push(Cause::duplicate(format!("{p}.name"), &json!(name)));
            }
        }
    }
    out
}

/// `isCELIdentifier`.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !kplane_schema::is_reserved_word(name)
}

/// `validateVariable`; a variable that compiles is declared for the ones after it.
fn validate_variable(
    v: &Value,
    params: bool,
    declared: &mut Vec<Declared>,
    path: &str,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = str_at(v, "name").unwrap_or("");
    if name.trim().is_empty() {
        out.push(required(format!("{path}.name"), "name is not specified"));
    } else if !is_cel_identifier(name) {
        out.push(Cause::invalid(
            format!("{path}.name"),
            &json!(name),
            "name is not a valid CEL identifier",
        ));
    }
    let expr = str_at(v, "expression").unwrap_or("");
    if expr.trim().is_empty() {
        out.push(required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
        return out;
    }
    let env = Env {
        params,
        authorizer: true,
        variables: declared,
    };
    // upstream declares a variable whatever its compilation gave (as `dyn` on failure)
    let compiled = policy::compile(expr, env, Want::Any);
    if let Err(e) = &compiled {
        out.push(Cause::invalid(
            format!("{path}.expression"),
            &json!(expr),
            e,
        ));
    }
    declared.push(Declared::new(name, compiled.as_ref().ok()));
    out
}

/// `validateValidation`.
fn validate_validation(v: &Value, env: Env<'_>, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let expr = str_at(v, "expression").unwrap_or("");
    if expr.trim().is_empty() {
        out.push(required(
            format!("{path}.expression"),
            "expression is not specified",
        ));
    } else if let Err(e) = policy::compile(expr, env, Want::Bool) {
        out.push(Cause::invalid(
            format!("{path}.expression"),
            &json!(expr),
            &e,
        ));
    }
    let me = str_at(v, "messageExpression").unwrap_or("");
    if !me.is_empty() && me.trim().is_empty() {
        out.push(Cause::invalid(
            format!("{path}.messageExpression"),
            &json!(me),
            "must be non-empty if specified",
        ));
    } else if !me.trim().is_empty() {
        // upstream compiles messageExpressions without the policy's variables and
        // without `authorizer`
        let menv = Env {
            params: env.params,
            authorizer: false,
            variables: &[],
        };
        if let Err(e) = policy::compile(me, menv, Want::String) {
            out.push(Cause::invalid(
                format!("{path}.messageExpression"),
                &json!(me),
                &e,
            ));
        }
    }
    let msg = str_at(v, "message").unwrap_or("");
    if !msg.is_empty() && msg.trim().is_empty() {
        out.push(Cause::invalid(
            format!("{path}.message"),
            &json!(msg),
            "message must be non-empty if specified",
        ));
    } else if msg.trim().contains(['\n', '\r']) {
        out.push(Cause::invalid(
            format!("{path}.message"),
            &json!(msg),
            "message must not contain line breaks",
        ));
    }
    if let Some(r) = v.get("reason").filter(|r| !r.is_null()) {
        if !r.as_str().is_some_and(|s| REASONS.contains(&s)) {
            out.push(Cause::not_supported(format!("{path}.reason"), r, REASONS));
        }
    }
    out
}

/// `validateAuditAnnotation`.
fn validate_audit_annotation(a: &Value, policy_name: &str, env: Env<'_>, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let key = str_at(a, "key").unwrap_or("");
    if policy_name.is_empty() {
        out.push(Cause::invalid(
            format!("{path}.key"),
            &json!(key),
            "requires metadata.name be non-empty",
        ));
    } else {
        out.extend(validation::validate_qualified_name(
            &format!("{policy_name}/{key}"),
            &format!("{path}.key"),
        ));
    }
    let raw = str_at(a, "valueExpression").unwrap_or("");
    let expr = raw.trim();
    let p = format!("{path}.valueExpression");
    if expr.is_empty() {
        out.push(required(p, "valueExpression is not specified"));
    } else if expr.len() > MAX_VALUE_EXPRESSION_BYTES {
        let why = format!("must not exceed {MAX_VALUE_EXPRESSION_BYTES} bytes in length");
        out.push(required(p, &why));
    } else if let Err(e) = policy::compile(expr, env, Want::StringOrNull) {
        out.push(Cause::invalid(p, &json!(raw), &e));
    }
    out
}

/// Go's `%#v` of a `[]ValidationAction`.
fn go_actions(list: &[String]) -> Value {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    Value::String(format!(
        "[]admissionregistration.ValidationAction{{{}}}",
        items.join(", ")
    ))
}

/// A binding's validation (the same on create and update).
pub fn validate_binding(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    let policy_name = str_at(spec, "policyName").unwrap_or("");
    if policy_name.is_empty() {
        out.push(Cause::required("spec.policyName"));
    } else {
        for msg in validation::name_is_dns1123_subdomain(policy_name, false) {
            out.push(Cause::invalid("spec.policyName", &json!(policy_name), &msg));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|v| !v.is_null()) {
        out.extend(validate_param_ref(pr, "spec.paramRef"));
    }
    if let Some(mr) = spec.get("matchResources").filter(|v| !v.is_null()) {
        out.extend(validate_match_resources(mr, "spec.matchResources"));
    }
    let actions = strings(spec.get("validationActions"));
    let path = "spec.validationActions";
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !ACTIONS.contains(&a.as_str()) {
            out.push(Cause::not_supported(
                format!("{path}[{i}]"),
                &json!(a),
                ACTIONS,
            ));
        }
        if !seen.insert(a.as_str()) {
            out.push(Cause::duplicate(format!("{path}[{i}]"), &json!(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(invalid_raw(
            path.to_string(),
            &go_actions(&actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(required(path, "at least one validation action is required"));
    }
    out
}

/// `validateParamRef`.
fn validate_param_ref(pr: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = str_at(pr, "name").unwrap_or("");
    let selector = pr.get("selector").filter(|v| !v.is_null());
    let exclusive = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for msg in validation::validate_path_segment_name(name, false) {
            out.push(Cause::invalid(format!("{path}.name"), &json!(name), &msg));
        }
        if selector.is_some() {
            out.push(Cause::forbidden(format!("{path}.name"), exclusive));
        }
    }
    if let Some(sel) = selector {
        out.extend(validate_label_selector(
            sel,
            &format!("{path}.selector"),
            false,
        ));
        if !name.is_empty() {
            out.push(Cause::forbidden(format!("{path}.selector"), exclusive));
        }
    }
    if name.is_empty() && selector.is_none() {
        out.push(required(path, "one of name or selector must be specified"));
    }
    match pr.get("parameterNotFoundAction").and_then(Value::as_str) {
        None | Some("") => out.push(Cause::required(format!("{path}.parameterNotFoundAction"))),
        Some(a) if !NOT_FOUND_ACTIONS.contains(&a) => out.push(Cause::not_supported(
            format!("{path}.parameterNotFoundAction"),
            &json!(a),
            NOT_FOUND_ACTIONS,
        )),
        Some(_) => {}
    }
    out
}
