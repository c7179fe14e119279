//! A ResourceQuota's validation, as upstream's `ValidateResourceQuota`,
//! `ValidateResourceQuotaUpdate` and `ValidateResourceQuotaStatusUpdate`: resource names
//! of `spec.hard`, `status.hard` and `status.used` (standard quota names, or qualified
//! names with a `/`), their quantities (parsed, not negative, whole for the counted
//! resources), the scopes and the scope selector (known scopes, each valid for the
//! limited resources, no conflicting pair, operators and values), and scopes immutable on
//! update. Also the stored form: quantities in their canonical text.

use kplane_types::validation::is_qualified_name;
use kplane_types::Cause;
use serde_json::{json, Map, Value};

use crate::quantity::{self, Quantity};

/// Standard resource names (`helper.IsStandardResourceName`, without the huge pages
/// prefixes, which are checked apart).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Standard resource names a quota tracks (`helper.IsStandardQuotaResourceName`): the
/// standard ones but `storage`.
fn is_standard_quota_name(name: &str) -> bool {
    (name != "storage" && STANDARD_RESOURCES.contains(&name)) || is_quota_huge_pages(name)
}

fn is_standard_name(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name) || is_quota_huge_pages(name)
}

fn is_quota_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// Resources measured in whole numbers (`helper.IsIntegerResourceName`).
fn is_integer_name(name: &str) -> bool {
    const INTEGER: &[&str] = &[
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    ];
    INTEGER.contains(&name) || is_extended_name(name)
}

/// `helper.IsExtendedResourceName`: not native (has a `/` outside `kubernetes.io/`), no
/// `requests.` prefix, and a qualified name once prefixed with `requests.`.
fn is_extended_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// Scopes a quota may name (`helper.IsStandardResourceQuotaScope`).
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Whether `scope` may limit `resource` (`helper.IsResourceQuotaScopeValidForResource`).
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    const COMPUTE: &[&str] = &[
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// `ValidateResourceQuotaResourceName`.
fn resource_name(name: &str, path: &str, out: &mut Vec<Cause>) {
    let shown = json!(name);
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        out.extend(msgs.iter().map(|m| Cause::invalid(path, &shown, m)));
        return;
    }
    if !name.contains('/') {
        if !is_standard_name(name) {
            out.push(Cause::invalid(
                path,
                &shown,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !is_standard_quota_name(name) {
            out.push(Cause::invalid(
                path,
                &shown,
                "must be a standard resource for quota",
            ));
        }
    }
}

/// `ValidateResourceQuantityValue` (and the decoder's refusal of a malformed quantity).
fn quantity_value(name: &str, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(q) = quantity::parse_value(v) else {
        out.push(Cause::invalid(path, v, quantity::FORMAT_ERROR));
        return;
    };
    if q.is_negative() {
        out.push(Cause::invalid(
            path,
            &json!(q.to_string()),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_name(name) && !q.is_integer() {
        out.push(Cause::invalid(
            path,
            &json!(q.to_string()),
            "must be an integer",
        ));
    }
}

/// The entries of a resource list at `path` (`spec.hard`, `status.used`, ...).
fn resource_list(obj: &Value, pointer: &str, path: &str, out: &mut Vec<Cause>) {
    match obj.pointer(pointer) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let p = format!("{path}[{k}]");
                resource_name(k, &p, out);
                quantity_value(k, v, &p, out);
            }
        }
        Some(other) => out.push(Cause::invalid(path, other, "must be an object")),
    }
}

/// The names of `spec.hard`.
fn hard_names(obj: &Value) -> Vec<String> {
    let mut names: Vec<String> = obj
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// `validateResourceQuotaScopes`.
fn scopes(obj: &Value, out: &mut Vec<Cause>) {
    let Some(list) = obj.pointer("/spec/scopes").and_then(Value::as_array) else {
        return;
    };
    if list.is_empty() {
        return;
    }
    let shown = Value::Array(list.clone());
    let hard = hard_names(obj);
    let mut seen = Vec::new();
    for s in list {
        let scope = s.as_str().unwrap_or_default();
        if !SCOPES.contains(&scope) {
            out.push(Cause::invalid("spec.scopes", &shown, "unsupported scope"));
        }
        for k in &hard {
            if is_standard_quota_name(k) && !scope_valid_for(scope, k) {
                out.push(Cause::invalid(
                    "spec.scopes",
                    &shown,
                    "unsupported scope applied to resource",
                ));
            }
        }
        seen.push(scope);
    }
    if conflicting(&seen) {
        out.push(Cause::invalid("spec.scopes", &shown, "conflicting scopes"));
    }
}

fn conflicting(scopes: &[&str]) -> bool {
    let has = |s: &str| scopes.contains(&s);
    (has("BestEffort") && has("NotBestEffort")) || (has("Terminating") && has("NotTerminating"))
}

/// `validateScopeSelector`.
fn scope_selector(obj: &Value, out: &mut Vec<Cause>) {
    let Some(sel) = obj.pointer("/spec/scopeSelector").filter(|v| !v.is_null()) else {
        return;
    };
    const BASE: &str = "spec.scopeSelector.matchExpressions";
    let hard = hard_names(obj);
    let mut seen = Vec::new();
    let exprs = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for req in &exprs {
        let scope = req.get("scopeName").and_then(Value::as_str).unwrap_or("");
        let op = req.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = req
            .get("values")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !SCOPES.contains(&scope) {
            out.push(Cause::invalid(
                format!("{BASE}.scopeName"),
                &json!(scope),
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard_quota_name(k) && !scope_valid_for(scope, k) {
                out.push(Cause::invalid(
                    BASE,
                    sel,
                    "unsupported scope applied to resource",
                ));
            }
        }
        if matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && op != "Exists"
        {
            out.push(Cause::invalid(
                format!("{BASE}.operator"),
                &json!(op),
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match op {
            "In" | "NotIn" if values.is_empty() => out.push(Cause::new(
                kplane_types::CauseType::FieldValueRequired,
                format!("{BASE}.values"),
                "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "In" | "NotIn" => {}
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(Cause::invalid(
                format!("{BASE}.values"),
                &Value::Array(values.clone()),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "Exists" | "DoesNotExist" => {}
            _ => out.push(Cause::invalid(
                format!("{BASE}.operator"),
                &json!(op),
                "not a valid selector operator",
            )),
        }
        seen.push(scope);
    }
    if conflicting(&seen) {
        let shown = obj.pointer("/spec/scopes").cloned().unwrap_or(Value::Null);
        out.push(Cause::invalid(BASE, &shown, "conflicting scopes"));
    }
}

/// The type's validation on create (`old` is `None`) and on update through the main
/// endpoint.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    resource_list(obj, "/spec/hard", "spec.hard", &mut out);
    scopes(obj, &mut out);
    scope_selector(obj, &mut out);
    match old {
        None => status(obj, &mut out),
        Some(old) => {
            let set = |v: &Value| {
                let mut s: Vec<String> = v
                    .pointer("/spec/scopes")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                s.sort();
                s.dedup();
                s
            };
            if set(obj) != set(old) {
                let shown = obj.pointer("/spec/scopes").cloned().unwrap_or(Value::Null);
                out.push(Cause::invalid("spec.scopes", &shown, "field is immutable"));
            }
        }
    }
    out
}

/// The status's resource lists (`ValidateResourceQuotaStatus`).
pub fn status(obj: &Value, out: &mut Vec<Cause>) {
    resource_list(obj, "/status/hard", "status.hard", out);
    resource_list(obj, "/status/used", "status.used", out);
}

/// A resource list with each quantity in its canonical text (entries that do not parse
/// are left for validation to refuse).
fn canonical_list(m: &mut Map<String, Value>) {
    for v in m.values_mut() {
        if let Some(c) = quantity::canonical(v) {
            *v = Value::String(c);
        }
    }
}

/// The form the Go type encodes: `spec` and `status` always written, empty lists and
/// maps dropped, quantities canonical.
pub fn canonicalize(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    for (field, lists) in [("spec", &["hard"][..]), ("status", &["hard", "used"][..])] {
        let part = o.entry(field).or_insert_with(|| Value::Object(Map::new()));
        if part.is_null() {
            *part = Value::Object(Map::new());
        }
        let Some(p) = part.as_object_mut() else {
            continue;
        };
        for l in lists {
            match p.get_mut(*l) {
                Some(Value::Object(m)) if m.is_empty() => {
                    p.remove(*l);
                }
                Some(Value::Object(m)) => canonical_list(m),
                Some(Value::Null) => {
                    p.remove(*l);
                }
                _ => {}
            }
        }
        if field == "spec" {
            if p.get("scopes")
                .is_some_and(|s| s.as_array().is_some_and(Vec::is_empty) || s.is_null())
            {
                p.remove("scopes");
            }
            if p.get("scopeSelector").is_some_and(Value::is_null) {
                p.remove("scopeSelector");
            }
        }
    }
}

/// A parsed resource list (entries that do not parse are skipped: validation refused them
/// before they were stored).
pub fn parse_list(v: Option<&Value>) -> std::collections::BTreeMap<String, Quantity> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), quantity::parse_value(v)?)))
                .collect()
        })
        .unwrap_or_default()
}
