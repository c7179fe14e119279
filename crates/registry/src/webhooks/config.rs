//! The admissionregistration.k8s.io/v1 webhook configuration rules, as kube-apiserver
//! 1.32 has them (`pkg/apis/admissionregistration/v1/defaults.go`,
//! `pkg/apis/admissionregistration/validation/validation.go`,
//! `k8s.io/apiserver/pkg/util/webhook/validation.go`): the defaults of each webhook and
//! rule, and the validation of `webhooks` on create and update, their `matchConditions`
//! compiled (`kplane_schema::policy::compile_condition`). The ObjectMeta rules are the
//! caller's.

use std::collections::HashSet;

use kplane_types::{validation, Cause, CauseType};
use serde_json::{json, Value};

use crate::json_map::strings;
use crate::json_map::{each_struct, set_default};
use crate::label_selector::validate_label_selector;
use crate::pod_template::required;
use crate::policies::config::validate_match_conditions;

/// Which of the two configuration kinds an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Validating,
    Mutating,
}

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const NO_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REINVOCATION: &[&str] = &["IfNeeded", "Never"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const URL_FORM: &str = "; desired format: https://host[/path]";

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`, `SetDefaults_Rule`,
/// `SetDefaults_ServiceReference` on every webhook of `obj`.
pub fn default(kind: Kind, obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    for hook in each_struct(o, "webhooks") {
        set_default(hook, "failurePolicy", json!("Fail"));
        set_default(hook, "matchPolicy", json!("Equivalent"));
        set_default(hook, "namespaceSelector", json!({}));
        set_default(hook, "objectSelector", json!({}));
        set_default(hook, "timeoutSeconds", json!(10));
        if kind == Kind::Mutating {
            set_default(hook, "reinvocationPolicy", json!("Never"));
        }
        for rule in each_struct(hook, "rules") {
            set_default(rule, "scope", json!("*"));
        }
        if let Some(Value::Object(cc)) = hook.get_mut("clientConfig") {
            if let Some(Value::Object(svc)) = cc.get_mut("service") {
                set_default(svc, "port", json!(443));
            }
        }
    }
}

/// What an update's validation relaxes because the stored object already breaks it
/// (`ValidateValidatingWebhookConfigurationUpdate`).
#[derive(Clone, Copy, Debug)]
struct Options {
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
    allow_invalid_label_values: bool,
    /// No webhook's `matchConditions` changed (`ignore*WebhookMatchConditions`): they are
    /// not validated again.
    ignore_match_conditions: bool,
}

impl Options {
    fn strict() -> Self {
        Options {
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
            allow_invalid_label_values: false,
            ignore_match_conditions: false,
        }
    }

    fn for_update(new: &Value, old: &Value) -> Self {
        let hooks = webhooks(old);
        let mut names = HashSet::new();
        Options {
            require_no_side_effects: hooks.iter().all(|h| {
                h.get("sideEffects")
                    .and_then(Value::as_str)
                    .is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))
            }),
            require_recognized_review_version: hooks.iter().all(|h| {
                strings(h.get("admissionReviewVersions"))
                    .iter()
                    .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
            }),
            require_unique_names: hooks
                .iter()
                .all(|h| names.insert(h.get("name").and_then(Value::as_str).unwrap_or(""))),
            allow_invalid_label_values: hooks.iter().any(|h| {
                ["namespaceSelector", "objectSelector"].iter().any(|s| {
                    h.get(*s)
                        .is_some_and(|sel| !validate_label_selector(sel, "", false).is_empty())
                })
            }),
            ignore_match_conditions: webhooks(new).len() == hooks.len()
                && webhooks(new)
                    .iter()
                    .zip(hooks)
                    .all(|(n, o)| conditions(n) == conditions(o)),
        }
    }
}

/// The webhooks of a configuration.
fn webhooks(obj: &Value) -> &[Value] {
    obj.get("webhooks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// A webhook's `matchConditions` (absent or null: empty).
fn conditions(hook: &Value) -> &[Value] {
    hook.get("matchConditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// Go's `%#v` of a `[]string`, as field errors print list values.
pub(crate) fn go_strings(list: &[String]) -> Value {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    Value::String(format!("[]string{{{}}}", items.join(", ")))
}

/// An Invalid cause whose value is printed as it is (a Go `%#v` rendering).
pub(crate) fn invalid_raw(field: String, shown: &Value, detail: &str) -> Cause {
    let shown = shown.as_str().unwrap_or_default();
    Cause::new(
        CauseType::FieldValueInvalid,
        field,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// The configuration's validation on create (`old` None) and update.
pub fn validate(kind: Kind, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let opts = old.map_or_else(Options::strict, |o| Options::for_update(obj, o));
    let mut causes = Vec::new();
    let mut names = HashSet::new();
    for (i, hook) in webhooks(obj).iter().enumerate() {
        let path = format!("webhooks[{i}]");
        causes.extend(validate_webhook(kind, hook, opts, &path));
        causes.extend(validate_review_versions(
            &strings(hook.get("admissionReviewVersions")),
            opts.require_recognized_review_version,
            &format!("{path}.admissionReviewVersions"),
        ));
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
            causes.push(Cause::duplicate(format!("{path}.name"), &json!(name)));
        }
    }
    causes
}

/// `validateValidatingWebhook` / `validateMutatingWebhook`.
fn validate_webhook(kind: Kind, hook: &Value, opts: Options, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let str_of = |k: &str| hook.get(k).and_then(Value::as_str);
    causes.extend(fully_qualified_name(
        &format!("{path}.name"),
        str_of("name").unwrap_or(""),
    ));
    for (i, rule) in hook
        .get("rules")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        causes.extend(validate_rule(rule, &format!("{path}.rules[{i}]")));
    }
    let mut one_of = |field: &str, supported: &[&str]| {
        if let Some(v) = hook.get(field).filter(|v| !v.is_null()) {
            if !v.as_str().is_some_and(|s| supported.contains(&s)) {
                causes.push(Cause::not_supported(
                    format!("{path}.{field}"),
                    v,
                    supported,
                ));
            }
        }
    };
    one_of("failurePolicy", FAILURE_POLICIES);
    one_of("matchPolicy", MATCH_POLICIES);
    let allowed = if opts.require_no_side_effects {
        NO_SIDE_EFFECTS
    } else {
        SIDE_EFFECTS
    };
    match hook.get("sideEffects").filter(|v| !v.is_null()) {
        None => causes.push(required(
            format!("{path}.sideEffects"),
            &format!("must specify one of {}", allowed.join(", ")),
        )),
        Some(_) => one_of("sideEffects", allowed),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
        if !(1..=30).contains(&t) {
            causes.push(Cause::invalid(
                format!("{path}.timeoutSeconds"),
                &json!(t),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(sel).filter(|v| !v.is_null()) {
            causes.extend(validate_label_selector(
                s,
                &format!("{path}.{sel}"),
                opts.allow_invalid_label_values,
            ));
        }
    }
    if kind == Kind::Mutating {
        let mut one_of = |field: &str, supported: &[&str]| {
            if let Some(v) = hook.get(field).filter(|v| !v.is_null()) {
                if !v.as_str().is_some_and(|s| supported.contains(&s)) {
                    causes.push(Cause::not_supported(
                        format!("{path}.{field}"),
                        v,
                        supported,
                    ));
                }
            }
        };
        one_of("reinvocationPolicy", REINVOCATION);
    }
    causes.extend(validate_client_config(
        hook.get("clientConfig").unwrap_or(&Value::Null),
        &format!("{path}.clientConfig"),
    ));
    if !opts.ignore_match_conditions {
        causes.extend(validate_match_conditions(
            conditions(hook),
            false,
            &format!("{path}.matchConditions"),
        ));
    }
    causes
}

/// `utilvalidation.IsFullyQualifiedName`.
fn fully_qualified_name(path: &str, name: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::required(path)];
    }
    let errs = validation::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![Cause::invalid(path, &json!(name), &errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![Cause::invalid(
            path,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
pub(crate) fn validate_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ops = strings(rule.get("operations"));
    if ops.is_empty() {
        causes.push(Cause::required(format!("{path}.operations")));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        causes.push(invalid_raw(
            format!("{path}.operations"),
            &go_strings(&ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            causes.push(Cause::not_supported(
                format!("{path}.operations[{i}]"),
                &json!(op),
                OPERATIONS,
            ));
        }
    }
    for (field, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let list = strings(rule.get(field));
        if list.is_empty() {
            causes.push(Cause::required(format!("{path}.{field}")));
        }
        if list.len() > 1 && list.iter().any(|s| s == "*") {
            causes.push(invalid_raw(
                format!("{path}.{field}"),
                &go_strings(&list),
                &format!("if '*' is present, must not specify other {what}"),
            ));
        }
        if field == "apiVersions" {
            for (i, v) in list.iter().enumerate() {
                if v.is_empty() {
                    causes.push(Cause::required(format!("{path}.{field}[{i}]")));
                }
            }
        }
    }
    causes.extend(validate_resources(
        &strings(rule.get("resources")),
        &format!("{path}.resources"),
    ));
    if let Some(scope) = rule.get("scope").filter(|v| !v.is_null()) {
        if !scope.as_str().is_some_and(|s| SCOPES.contains(&s)) {
            causes.push(Cause::not_supported(format!("{path}.scope"), scope, SCOPES));
        }
    }
    causes
}

/// `validateResources`: `res`, `res/sub`, and the wildcard rules between them.
fn validate_resources(resources: &[String], path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if resources.is_empty() {
        causes.push(Cause::required(path));
    }
    let mut with_wildcard_sub = HashSet::new();
    let mut sub_with_wildcard_res = HashSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, res_sub) in resources.iter().enumerate() {
        if res_sub.is_empty() {
            causes.push(Cause::required(format!("{path}[{i}]")));
            continue;
        }
        double |= res_sub == "*/*";
        single |= res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            plain = res_sub != "*";
            continue;
        };
        if with_wildcard_sub.contains(res) {
            causes.push(Cause::invalid(
                format!("{path}[{i}]"),
                &json!(res_sub),
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if sub_with_wildcard_res.contains(sub) {
            causes.push(Cause::invalid(
                format!("{path}[{i}]"),
                &json!(res_sub),
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            with_wildcard_sub.insert(res);
        }
        if res == "*" {
            sub_with_wildcard_res.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        causes.push(invalid_raw(
            path.to_string(),
            &go_strings(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        causes.push(invalid_raw(
            path.to_string(),
            &go_strings(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    causes
}

/// `validateAdmissionReviewVersions`.
fn validate_review_versions(versions: &[String], require_known: bool, path: &str) -> Vec<Cause> {
    if versions.is_empty() {
        return vec![required(
            path,
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        )];
    }
    let mut causes = Vec::new();
    let mut seen = HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v.as_str()) {
            causes.push(Cause::invalid(
                format!("{path}[{i}]"),
                &json!(v),
                "duplicate version",
            ));
            continue;
        }
        for e in validation::is_dns1035_label(v) {
            causes.push(Cause::invalid(format!("{path}[{i}]"), &json!(v), &e));
        }
    }
    if require_known
        && !versions
            .iter()
            .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    {
        causes.push(invalid_raw(
            path.to_string(),
            &go_strings(versions),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    causes
}

/// The `clientConfig` rules: exactly one of `url` and `service`, then theirs.
pub(crate) fn validate_client_config(cc: &Value, path: &str) -> Vec<Cause> {
    let url = cc.get("url").filter(|v| !v.is_null());
    let service = cc.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(u), None) => validate_url(u.as_str().unwrap_or(""), &format!("{path}.url")),
        (None, Some(s)) => validate_service(s, &format!("{path}.service")),
        _ => vec![required(path, "exactly one of url or service is required")],
    }
}

/// The parts of a URL that `ValidateWebhookURL` checks, split as Go's `url.Parse` splits
/// them.
#[derive(Debug, Default, PartialEq)]
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    pub user: &'a str,
    pub host: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub fragment: &'a str,
}

/// Splits `url` into scheme, user information, host, path, query and fragment.
pub fn split_url(url: &str) -> UrlParts<'_> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once("://") {
        Some((s, r)) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric()) => (s, r),
        _ => {
            return UrlParts {
                path: rest,
                query,
                fragment,
                ..UrlParts::default()
            }
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (user, host) = authority.rsplit_once('@').unwrap_or(("", authority));
    UrlParts {
        scheme,
        user,
        host,
        path,
        query,
        fragment,
    }
}

/// `ValidateWebhookURL` with `forceHttps`.
fn validate_url(url: &str, path: &str) -> Vec<Cause> {
    let u = split_url(url);
    let mut causes = Vec::new();
    if u.scheme != "https" {
        causes.push(Cause::invalid(
            path,
            &json!(u.scheme),
            &format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if u.host.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(u.host),
            &format!("host must be specified{URL_FORM}"),
        ));
    }
    if !u.user.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(u.user),
            "user information is not permitted in the URL",
        ));
    }
    if !u.fragment.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(u.fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !u.query.is_empty() {
        causes.push(Cause::invalid(
            path,
            &json!(u.query),
            "query parameters are not permitted in the URL",
        ));
    }
    causes
}

/// `ValidateWebhookService`.
fn validate_service(svc: &Value, path: &str) -> Vec<Cause> {
    let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
    let mut causes = Vec::new();
    if s("name").is_empty() {
        causes.push(required(format!("{path}.name"), "service name is required"));
    }
    if s("namespace").is_empty() {
        causes.push(required(
            format!("{path}.namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        causes.push(Cause::invalid(
            format!("{path}.port"),
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let url_path = s("path");
    if url_path.is_empty() || url_path == "/" {
        return causes;
    }
    let p = format!("{path}.path");
    if url_path == "//" {
        causes.push(Cause::invalid(
            p,
            &json!(url_path),
            "segment[0] may not be empty",
        ));
        return causes;
    }
    if !url_path.starts_with('/') {
        causes.push(Cause::invalid(
            &p,
            &json!(url_path),
            "must start with a '/'",
        ));
    }
    let check = url_path.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            causes.push(Cause::invalid(
                &p,
                &json!(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for e in validation::is_dns1123_subdomain(step) {
            causes.push(Cause::invalid(
                &p,
                &json!(url_path),
                &format!("segment[{i}]: {e}"),
            ));
        }
    }
    causes
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
