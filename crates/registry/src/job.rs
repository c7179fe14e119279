//! The Job (batch/v1) strategy, as kube-apiserver 1.32 has it (`pkg/apis/batch/v1/defaults.go`,
//! `pkg/registry/batch/job/strategy.go`, `pkg/apis/batch/validation/validation.go`):
//! defaults; on create the status is cleared and, unless `manualSelector`, the selector and
//! the pod template's labels are generated from the Job's uid and name; validation of the
//! spec (counts, completion modes, pod failure and success policies, the pod template,
//! restart policy, selector) on create and update, the immutable fields on update, and
//! the status rules on a status change (`job_status`).
//!
//! Values inside messages are printed as Go prints them where that is stable (numbers,
//! strings, label maps and selectors); pod templates and policies are shown as JSON,
//! since Go's dump of them holds memory addresses.

use kplane_types::{validation, Cause};
use serde_json::{json, Map, Value};

use super::json_map::set_default;
use super::label_selector::{
    go_label_selector, go_string_map, has_invalid_label_value, selector_matches,
    validate_label_selector,
};
use super::meta;
use super::pod_template::{self, invalid_shown, required};

pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

const IMMUTABLE: &str = "field is immutable";
const MAX_PARALLELISM_INDEXED: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_MANAGED_BY_LENGTH: usize = 63;

/// `SetDefaults_Job` and the pod template's defaults.
pub fn default(obj: &mut Value) {
    let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let set = |spec: &Map<String, Value>, k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    if !set(spec, "completions") && !set(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if set(spec, "backoffLimitPerIndex") {
        json!(i32::MAX)
    } else {
        json!(6)
    };
    set_default(spec, "backoffLimit", backoff);
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    if let Some(Value::Array(rules)) = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
    {
        for r in rules {
            if let Some(Value::Array(pats)) = r.get_mut("onPodConditions") {
                for p in pats.iter_mut().filter_map(Value::as_object_mut) {
                    if p.get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                    {
                        p.insert("status".into(), json!("True"));
                    }
                }
            }
        }
    }
    let replacement = if set(spec, "podFailurePolicy") {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    set_default(spec, "podReplacementPolicy", json!(replacement));
    set_default(spec, "manualSelector", json!(false));
    if let Some(pod) = spec
        .get_mut("template")
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        pod_template::default_pod_spec(pod);
    }
    if let Some(Value::Object(l)) = template_labels {
        labels_from_template(obj, l);
    }
}

/// A Job without labels takes its template's labels (`SetDefaults_Job`).
fn labels_from_template(obj: &mut Value, labels: Map<String, Value>) {
    let has = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_some_and(|l| !l.is_empty());
    if !has {
        if let Ok(m) = meta::meta_mut(obj) {
            m.insert("labels".into(), Value::Object(labels));
        }
    }
}

/// `PrepareForCreate`: no status, and the generated selector and template labels.
pub fn prepare_create(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("status".into(), json!({}));
    }
    let manual = obj.pointer("/spec/manualSelector") == Some(&Value::Bool(true));
    if !manual {
        generate_selector(obj);
    }
    // Kubernetes defaults the labels again whenever it reads the Job back; here they are
    // stored as a reader would see them.
    if let Some(Value::Object(l)) = obj.pointer("/spec/template/metadata/labels").cloned() {
        labels_from_template(obj, l);
    }
}

/// `generateSelector`: the template gets the job-name and controller-uid labels it lacks,
/// the selector `batch.kubernetes.io/controller-uid` unless it has one.
fn generate_selector(obj: &mut Value) {
    let uid = meta::meta_str(obj, "uid").unwrap_or("").to_string();
    let name = meta::name_of(obj).to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(labels) = object_entry(spec, "template")
        .and_then(|t| object_entry(t, "metadata"))
        .and_then(|m| object_entry(m, "labels"))
    else {
        return;
    };
    for (k, v) in [
        (LEGACY_JOB_NAME_LABEL, &name),
        (JOB_NAME_LABEL, &name),
        (LEGACY_CONTROLLER_UID_LABEL, &uid),
        (CONTROLLER_UID_LABEL, &uid),
    ] {
        labels.entry(k).or_insert_with(|| json!(v));
    }
    if let Some(match_labels) =
        object_entry(spec, "selector").and_then(|s| object_entry(s, "matchLabels"))
    {
        match_labels
            .entry(CONTROLLER_UID_LABEL)
            .or_insert_with(|| json!(uid));
    }
}

/// The object at `m[k]`, made an empty object when absent or null.
fn object_entry<'a>(m: &'a mut Map<String, Value>, k: &str) -> Option<&'a mut Map<String, Value>> {
    let v = m.entry(k).or_insert_with(|| json!({}));
    if v.is_null() {
        *v = json!({});
    }
    v.as_object_mut()
}

/// Validation on create (`old` None) and update (`ValidateJob` + `ValidateJobUpdate`), and
/// the status rules when the status changed.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let opts = Options::for_update(old);
    let mut causes = validate_job(obj, &opts);
    if let Some(old) = old {
        causes.extend(validate_spec_update(obj, old, &opts));
        if obj.get("status") != old.get("status") {
            causes.extend(super::job_status::validate_status_update(obj, old));
        }
    }
    causes
}

/// `WarningsOnCreate` (a name that is not a DNS label) and, when the spec changed,
/// `WarningsForJobSpec`'s own warning (pod template warnings are not produced).
pub fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    if old.is_none() {
        let msgs = validation::is_dns1123_label(meta::name_of(obj));
        if !msgs.is_empty() {
            out.push(format!(
                "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [{}]",
                msgs.join(" ")
            ));
        }
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let spec_changed = old.is_none_or(|o| o.get("spec") != obj.get("spec"));
    if spec_changed
        && is_indexed(spec)
        && int(spec, "completions").unwrap_or(0) > COMPLETIONS_SOFT_LIMIT
        && int(spec, "parallelism").unwrap_or(0) > PARALLELISM_LIMIT_HIGH_COMPLETIONS
    {
        out.push("spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail".into());
    }
    out
}

/// `JobValidationOptions` that matter here.
struct Options {
    /// The Job must carry the `batch.kubernetes.io/*` labels (true unless an old Job lacks them).
    require_prefixed_labels: bool,
    /// Scheduling directives of a suspended Job that never started may change.
    mutable_scheduling: bool,
    /// The stored selector has expression values that are not label values: keep allowing them.
    allow_invalid_selector_values: bool,
}

impl Options {
    fn for_update(old: Option<&Value>) -> Options {
        let Some(old) = old else {
            return Options {
                require_prefixed_labels: true,
                mutable_scheduling: false,
                allow_invalid_selector_values: false,
            };
        };
        let labels = old.pointer("/spec/template/metadata/labels");
        let has = |k: &str| labels.and_then(|l| l.get(k)).is_some();
        Options {
            require_prefixed_labels: has(JOB_NAME_LABEL) && has(CONTROLLER_UID_LABEL),
            mutable_scheduling: old.pointer("/spec/suspend") == Some(&Value::Bool(true))
                && old.pointer("/status/startTime").is_none_or(Value::is_null),
            allow_invalid_selector_values: has_invalid_label_value(old.pointer("/spec/selector")),
        }
    }
}

fn int(spec: &Value, k: &str) -> Option<i64> {
    spec.get(k).and_then(Value::as_i64)
}

fn present(spec: &Value, k: &str) -> bool {
    spec.get(k).is_some_and(|v| !v.is_null())
}

fn is_indexed(spec: &Value) -> bool {
    spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
}

/// `ValidateJob` (object meta is checked by the generic path first, as upstream does).
fn validate_job(obj: &Value, opts: &Options) -> Vec<Cause> {
    let mut causes = validate_generated_selector(obj, opts.require_prefixed_labels);
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    causes.extend(validate_job_spec_with_selector(spec, opts));
    if is_indexed(spec) {
        if let Some(c) = int(spec, "completions").filter(|c| *c > 0) {
            let name = meta::name_of(obj);
            let host = format!("{name}-{}", c - 1);
            if !validation::is_dns1123_label(&host).is_empty() {
                causes.push(Cause::invalid(
                    "metadata.name",
                    &json!(name),
                    &format!("will not able to create pod with invalid DNS label: {host}"),
                ));
            }
        }
    }
    causes
}

/// `validateGeneratedSelector`.
fn validate_generated_selector(obj: &Value, prefixed: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(spec) = obj.get("spec") else {
        return causes;
    };
    if spec.get("manualSelector") == Some(&Value::Bool(true)) || !present(spec, "selector") {
        return causes;
    }
    let uid = meta::meta_str(obj, "uid").unwrap_or("");
    let name = meta::name_of(obj);
    if uid.is_empty() {
        causes.push(Cause::required("metadata.uid"));
    }
    let labels = spec.pointer("/template/metadata/labels");
    let mut expected = Map::new();
    let mut checks = vec![
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (LEGACY_JOB_NAME_LABEL, name),
    ];
    if prefixed {
        checks.push((CONTROLLER_UID_LABEL, uid));
        checks.push((JOB_NAME_LABEL, name));
    }
    for (k, want) in checks {
        let field = format!("spec.template.metadata.labels[{k}]");
        match labels.and_then(|l| l.get(k)) {
            None => causes.push(required(field, &format!("must be '{want}'"))),
            Some(v) if v.as_str() != Some(want) => causes.push(invalid_shown(
                field,
                &go_string_map(labels),
                &format!("must be '{want}'"),
            )),
            Some(_) => {}
        }
        expected.insert(k.to_string(), json!(want));
    }
    let selector = &spec["selector"];
    if selector_matches(selector, &expected) == Some(false) {
        causes.push(invalid_shown(
            "spec.selector",
            &go_label_selector(selector),
            "`selector` not auto-generated",
        ));
    }
    causes
}

/// `ValidateJobSpec`: the spec, then the selector and that it matches the template.
fn validate_job_spec_with_selector(spec: &Value, opts: &Options) -> Vec<Cause> {
    let mut causes = validate_job_spec(spec);
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => causes.push(Cause::required("spec.selector")),
        Some(sel) => causes.extend(validate_label_selector(
            sel,
            "spec.selector",
            opts.allow_invalid_selector_values,
        )),
    }
    let labels = spec
        .pointer("/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        if selector_matches(sel, &labels) == Some(false) {
            causes.push(invalid_shown(
                "spec.template.metadata.labels",
                &go_string_map(spec.pointer("/template/metadata/labels")),
                "`selector` does not match template `labels`",
            ));
        }
    }
    causes
}

fn nonnegative(spec: &Value, k: &str, causes: &mut Vec<Cause>) {
    if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
        if v.as_i64().is_none_or(|n| n < 0) {
            causes.push(Cause::invalid(
                format!("spec.{k}"),
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// `validateJobSpec`.
fn validate_job_spec(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for k in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        nonnegative(spec, k, &mut causes);
    }
    let per_index = present(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    if present(spec, "maxFailedIndexes") {
        nonnegative(spec, "maxFailedIndexes", &mut causes);
        if !per_index {
            causes.push(required(
                "spec.backoffLimitPerIndex",
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(m) = spec.get("managedBy").and_then(Value::as_str) {
        causes.extend(domain_prefixed_path("spec.managedBy", m));
        if m.len() > MAX_MANAGED_BY_LENGTH {
            causes.push(Cause::too_long("spec.managedBy", MAX_MANAGED_BY_LENGTH));
        }
    }
    let completions = int(spec, "completions");
    let parallelism = int(spec, "parallelism");
    if let Some(mode) = spec.get("completionMode").and_then(Value::as_str) {
        if mode != "NonIndexed" && mode != "Indexed" {
            causes.push(Cause::not_supported(
                "spec.completionMode",
                &json!(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
    }
    if is_indexed(spec) {
        if !present(spec, "completions") {
            causes.push(required(
                "spec.completions",
                "when completion mode is Indexed",
            ));
        }
        if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_INDEXED) {
            causes.push(Cause::invalid(
                "spec.parallelism",
                &json!(p),
                "must be less than or equal to 100000 when completion mode is Indexed",
            ));
        }
        if let (Some(c), Some(m)) = (completions, max_failed) {
            if m > c {
                causes.push(Cause::invalid(
                    "spec.maxFailedIndexes",
                    &json!(m),
                    "must be less than or equal to completions",
                ));
            }
        }
        if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
            causes.push(Cause::invalid(
                "spec.maxFailedIndexes",
                &json!(m),
                "must be less than or equal to 100000",
            ));
        }
        if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index {
            let high = "when completions are above 100000 and used with backoff limit per index";
            if max_failed.is_none() {
                causes.push(required(
                    "spec.maxFailedIndexes",
                    "must be specified when completions is above 100000",
                ));
            }
            if let Some(p) = parallelism.filter(|p| *p > PARALLELISM_LIMIT_HIGH_COMPLETIONS) {
                causes.push(Cause::invalid(
                    "spec.parallelism",
                    &json!(p),
                    &format!("must be less than or equal to 10000 {high}"),
                ));
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_HIGH_COMPLETIONS) {
                causes.push(Cause::invalid(
                    "spec.maxFailedIndexes",
                    &json!(m),
                    &format!("must be less than or equal to 10000 {high}"),
                ));
            }
        }
    } else {
        for k in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
                causes.push(Cause::invalid(
                    format!("spec.{k}"),
                    v,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    if let Some(pfp) = spec.get("podFailurePolicy").filter(|v| !v.is_null()) {
        causes.extend(super::job_policies::validate_pod_failure_policy(spec, pfp));
    }
    if let Some(sp) = spec.get("successPolicy").filter(|v| !v.is_null()) {
        if !is_indexed(spec) {
            causes.push(invalid_shown(
                "spec.successPolicy",
                &sp.to_string(),
                "requires indexed completion mode",
            ));
        } else {
            causes.extend(super::job_policies::validate_success_policy(spec, sp));
        }
    }
    if let Some(rp) = spec.get("podReplacementPolicy").and_then(Value::as_str) {
        if present(spec, "podFailurePolicy") {
            if rp != "Failed" {
                causes.push(Cause::not_supported(
                    "spec.podReplacementPolicy",
                    &json!(rp),
                    &["Failed"],
                ));
            }
        } else if rp != "Failed" && rp != "TerminatingOrFailed" {
            causes.push(Cause::not_supported(
                "spec.podReplacementPolicy",
                &json!(rp),
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let empty = json!({});
    let template = spec.get("template").unwrap_or(&empty);
    causes.extend(pod_template::validate_template(template, "spec.template"));
    causes.extend(validate_restart_policy(spec, template));
    causes
}

/// A Job's pods may only restart `OnFailure` or `Never`; `Never` with a pod failure policy.
fn validate_restart_policy(spec: &Value, template: &Value) -> Option<Cause> {
    let field = "spec.template.spec.restartPolicy";
    let rp = template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    match rp {
        "" | "Always" => Some(required(field, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" if present(spec, "podFailurePolicy") => Some(Cause::invalid(
            field,
            &json!(rp),
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => None,
        other => Some(Cause::not_supported(
            field,
            &json!(other),
            &["OnFailure", "Never"],
        )),
    }
}

/// `IsDomainPrefixedPath`: `<DNS-1123 subdomain>/<path>`.
fn domain_prefixed_path(field: &str, v: &str) -> Vec<Cause> {
    let Some((host, path)) = v.split_once('/') else {
        return vec![Cause::invalid(
            field,
            &json!(v),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut causes: Vec<Cause> = validation::is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| Cause::invalid(field, &json!(host), &m))
        .collect();
    let ok = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !ok {
        causes.push(Cause::invalid(
            field,
            &json!(path),
            "Invalid path: must match the regex [A-Za-z0-9/\\-._~%!$&'()*+,;=:]+",
        ));
    }
    causes
}

/// `ValidateJobSpecUpdate`: the spec again, then what may not change.
fn validate_spec_update(obj: &Value, old: &Value, opts: &Options) -> Vec<Cause> {
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let mut causes = validate_job_spec_with_selector(spec, opts);
    causes.extend(validate_completions_update(spec, old_spec));
    let changed = |k: &str| !semantic_eq(spec.get(k), old_spec.get(k));
    if changed("selector") {
        let shown = match spec.get("selector").filter(|s| !s.is_null()) {
            Some(s) => go_label_selector(s),
            None => "null".into(),
        };
        causes.push(invalid_shown("spec.selector", &shown, IMMUTABLE));
    }
    if template_changed(spec, old_spec, opts.mutable_scheduling) {
        let t = spec.get("template").cloned().unwrap_or(Value::Null);
        causes.push(invalid_shown("spec.template", &t.to_string(), IMMUTABLE));
    }
    for k in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        if changed(k) {
            let shown = match spec.get(k).filter(|v| !v.is_null()) {
                None => "null".to_string(),
                Some(Value::String(s)) => validation::go_quote(s),
                Some(v) => v.to_string(),
            };
            causes.push(invalid_shown(format!("spec.{k}"), &shown, IMMUTABLE));
        }
    }
    causes
}

/// `validateCompletions`: immutable, except that an Indexed Job may scale completions
/// together with parallelism.
fn validate_completions_update(spec: &Value, old: &Value) -> Option<Cause> {
    let new_c = spec.get("completions").filter(|v| !v.is_null());
    if semantic_eq(new_c, old.get("completions")) {
        return None;
    }
    if !is_indexed(spec) {
        let shown = new_c.map_or_else(|| "null".to_string(), Value::to_string);
        return Some(invalid_shown("spec.completions", &shown, IMMUTABLE));
    }
    let c = new_c?;
    (c.as_i64() != int(spec, "parallelism")).then(|| {
        invalid_shown(
            "spec.completions",
            &c.to_string(),
            "can only be modified in tandem with spec.parallelism",
        )
    })
}

/// Whether the pod template changed, ignoring (for a suspended Job that never started)
/// node affinity, node selector, tolerations, scheduling gates, labels and annotations.
fn template_changed(spec: &Value, old: &Value, mutable_scheduling: bool) -> bool {
    let mut new_t = normalized(spec.get("template"));
    let mut old_t = normalized(old.get("template"));
    if mutable_scheduling {
        for t in [&mut new_t, &mut old_t] {
            if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("labels");
                m.remove("annotations");
            }
            if let Some(s) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for k in ["nodeSelector", "tolerations", "schedulingGates"] {
                    s.remove(k);
                }
                if let Some(a) = s.get_mut("affinity").and_then(Value::as_object_mut) {
                    a.remove("nodeAffinity");
                }
                if s.get("affinity")
                    .and_then(Value::as_object)
                    .is_some_and(Map::is_empty)
                {
                    s.remove("affinity");
                }
            }
        }
    }
    new_t != old_t
}

/// Equality as `apiequality.Semantic` sees JSON: absent, null, empty lists and empty
/// maps are alike.
fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    normalized(a) == normalized(b)
}

fn normalized(v: Option<&Value>) -> Value {
    fn strip(v: &Value) -> Option<Value> {
        match v {
            Value::Null => None,
            Value::Array(a) if a.is_empty() => None,
            Value::Array(a) => Some(Value::Array(
                a.iter().map(|x| strip(x).unwrap_or(Value::Null)).collect(),
            )),
            Value::Object(o) => {
                let m: Map<String, Value> = o
                    .iter()
                    .filter_map(|(k, v)| strip(v).map(|v| (k.clone(), v)))
                    .collect();
                Some(Value::Object(m))
            }
            other => Some(other.clone()),
        }
    }
    v.and_then(strip).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0b5e3c1a-1111-2222-3333-444455556666";

    /// A Job as the create path leaves it: defaulted, uid and name set, prepared.
    fn created(name: &str, spec: Value) -> Value {
        let mut job =
            json!({"metadata": {"name": name, "namespace": "default", "uid": UID}, "spec": spec});
        default(&mut job);
        prepare_create(&mut job);
        job
    }

    fn basic() -> Value {
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}})
    }

    fn rendered(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::render).collect()
    }

    #[test]
    fn create_defaults_and_generates_the_selector_and_labels() {
        let job = created("pi", basic());
        assert!(
            validate(&job, None).is_empty(),
            "{:?}",
            rendered(&validate(&job, None))
        );
        let spec = &job["spec"];
        for (k, v) in [
            ("completions", json!(1)),
            ("parallelism", json!(1)),
            ("backoffLimit", json!(6)),
            ("completionMode", json!("NonIndexed")),
            ("suspend", json!(false)),
            ("manualSelector", json!(false)),
            ("podReplacementPolicy", json!("TerminatingOrFailed")),
        ] {
            assert_eq!(spec[k], v, "{k}");
        }
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {CONTROLLER_UID_LABEL: UID}})
        );
        let want = json!({
            CONTROLLER_UID_LABEL: UID, JOB_NAME_LABEL: "pi",
            LEGACY_CONTROLLER_UID_LABEL: UID, LEGACY_JOB_NAME_LABEL: "pi",
        });
        assert_eq!(spec["template"]["metadata"]["labels"], want);
        assert_eq!(
            job["metadata"]["labels"], want,
            "labels default from the template"
        );
        assert_eq!(job["status"], json!({}));

        let mut per_index = basic();
        per_index["backoffLimitPerIndex"] = json!(1);
        per_index["completionMode"] = json!("Indexed");
        per_index["completions"] = json!(2);
        per_index["podFailurePolicy"] = json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
        let job = created("pi", per_index);
        assert_eq!(job["spec"]["backoffLimit"], json!(i32::MAX));
        assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(
            job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        assert!(
            validate(&job, None).is_empty(),
            "{:?}",
            rendered(&validate(&job, None))
        );
    }

    #[test]
    fn create_validation_reports_upstreams_causes() {
        let with = |f: &dyn Fn(&mut Value)| {
            let mut s = basic();
            f(&mut s);
            s
        };
        let cases: Vec<(&str, &str, Value, Vec<&str>)> = vec![
            ("restart Always", "j", with(&|s| s["template"]["spec"]["restartPolicy"] = json!("Always")),
             vec!["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]),
            ("restart unset", "j", with(&|s| { s["template"]["spec"].as_object_mut().unwrap().remove("restartPolicy"); }),
             vec!["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]),
            ("negative counts", "j", with(&|s| { s["parallelism"] = json!(-1); s["backoffLimit"] = json!(-2); }),
             vec!["spec.parallelism: Invalid value: -1: must be greater than or equal to 0", "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"]),
            ("no containers", "j", with(&|s| s["template"]["spec"]["containers"] = json!([])),
             vec!["spec.template.spec.containers: Required value"]),
            ("bad completion mode", "j", with(&|s| s["completionMode"] = json!("Sometimes")),
             vec!["spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\""]),
            ("per-index limit on a non-indexed job", "j", with(&|s| s["backoffLimitPerIndex"] = json!(1)),
             vec!["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"]),
            ("success policy on a non-indexed job", "j", with(&|s| s["successPolicy"] = json!({"rules": [{"succeededCount": 1}]})),
             vec!["spec.successPolicy: Invalid value: {\"rules\":[{\"succeededCount\":1}]}: requires indexed completion mode"]),
            ("pod failure policy needs Never", "j", with(&|s| {
                s["template"]["spec"]["restartPolicy"] = json!("OnFailure");
                s["podFailurePolicy"] = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]});
             }),
             vec!["spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"]),
            ("replacement policy with pod failure policy", "j", with(&|s| {
                s["podReplacementPolicy"] = json!("TerminatingOrFailed");
                s["podFailurePolicy"] = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]});
             }),
             vec!["spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\""]),
            ("indexed name too long for pod hostnames", "a-very-long-job-name-that-is-almost-sixty-three-characters-xyz", with(&|s| {
                s["completionMode"] = json!("Indexed"); s["completions"] = json!(100);
             }),
             vec!["metadata.name: Invalid value: \"a-very-long-job-name-that-is-almost-sixty-three-characters-xyz\": will not able to create pod with invalid DNS label: a-very-long-job-name-that-is-almost-sixty-three-characters-xyz-99"]),
            ("a selector of the user's without manualSelector", "j", with(&|s| {
                s["selector"] = json!({"matchLabels": {"app": "x"}});
                s["template"]["metadata"] = json!({"labels": {"app": "x"}});
             }),
             vec![&*Box::leak(format!("spec.selector: Invalid value: v1.LabelSelector{{MatchLabels:map[string]string{{\"app\":\"x\", \"batch.kubernetes.io/controller-uid\":\"{UID}\"}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}: `selector` not auto-generated").into_boxed_str())]),
            ("manual selector not matching the template", "j", with(&|s| {
                s["manualSelector"] = json!(true);
                s["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]});
                s["template"]["metadata"] = json!({"labels": {"app": "y"}});
             }),
             vec!["spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`"]),
            ("manual selector without one", "j", with(&|s| s["manualSelector"] = json!(true)),
             vec!["spec.selector: Required value"]),
        ];
        for (what, name, spec, want) in cases {
            let job = created(name, spec);
            assert_eq!(rendered(&validate(&job, None)), want, "{what}");
        }
    }

    fn update(old: &Value, f: impl Fn(&mut Value)) -> Vec<String> {
        let mut new = old.clone();
        f(&mut new);
        default(&mut new);
        let mut seen = Vec::new();
        for c in rendered(&validate(&new, Some(old))) {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen
    }

    #[test]
    fn immutable_fields_are_refused_on_update() {
        let old = created("j", basic());
        assert!(update(&old, |_| {}).is_empty());
        assert!(
            update(&old, |j| j["spec"]["parallelism"] = json!(3)).is_empty(),
            "parallelism may change"
        );
        assert!(
            update(&old, |j| j["spec"]["suspend"] = json!(true)).is_empty(),
            "suspend may change"
        );
        assert_eq!(
            update(&old, |j| j["spec"]["selector"]["matchLabels"][CONTROLLER_UID_LABEL] = json!("other")),
            [
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"batch.kubernetes.io/controller-uid\":\"other\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated".to_string(),
                format!("spec.template.metadata.labels: Invalid value: map[string]string{{\"batch.kubernetes.io/controller-uid\":\"{UID}\", \"batch.kubernetes.io/job-name\":\"j\", \"controller-uid\":\"{UID}\", \"job-name\":\"j\"}}: `selector` does not match template `labels`"),
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"batch.kubernetes.io/controller-uid\":\"other\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable".to_string(),
            ]
        );
        let image = update(&old, |j| {
            j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx")
        });
        assert_eq!(image.len(), 1, "{image:?}");
        assert!(
            image[0].starts_with("spec.template: Invalid value: {")
                && image[0].ends_with("}: field is immutable"),
            "{image:?}"
        );
        assert_eq!(
            update(&old, |j| j["spec"]["completions"] = json!(5)),
            ["spec.completions: Invalid value: 5: field is immutable"]
        );
        assert_eq!(
            update(&old, |j| j["spec"]["completionMode"] = json!("Indexed")),
            ["spec.completionMode: Invalid value: \"Indexed\": field is immutable"]
        );
        assert_eq!(
            update(&old, |j| j["spec"]["managedBy"] =
                json!("example.com/syncer")),
            ["spec.managedBy: Invalid value: \"example.com/syncer\": field is immutable"]
        );
        let pfp = update(
            &old,
            |j| j["spec"]["podFailurePolicy"] = json!({"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}),
        );
        assert_eq!(pfp.last().map(String::as_str), Some("spec.podFailurePolicy: Invalid value: {\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":{\"operator\":\"In\",\"values\":[1]}}]}: field is immutable"));
    }

    #[test]
    fn invalid_selector_values_stay_allowed_only_where_already_stored() {
        let mut spec = basic();
        spec["manualSelector"] = json!(true);
        spec["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["not valid!"]}]});
        spec["template"]["metadata"] = json!({"labels": {"app": "x"}});
        let job = created("j", spec);
        let msg = "spec.selector.matchExpressions[0].values[0]: Invalid value: \"not valid!\"";
        let on_create = rendered(&validate(&job, None));
        assert!(
            on_create.iter().any(|c| c.starts_with(msg)),
            "{on_create:?}"
        );
        // A Job stored with such a selector (by an older server) can still be updated.
        assert!(update(&job, |j| j["spec"]["parallelism"] = json!(2)).is_empty());
    }

    #[test]
    fn indexed_jobs_scale_completions_with_parallelism() {
        let mut spec = basic();
        spec["completionMode"] = json!("Indexed");
        spec["completions"] = json!(2);
        spec["parallelism"] = json!(2);
        let old = created("j", spec);
        assert!(update(&old, |j| {
            j["spec"]["completions"] = json!(4);
            j["spec"]["parallelism"] = json!(4);
        })
        .is_empty());
        assert_eq!(
            update(&old, |j| j["spec"]["completions"] = json!(4)),
            ["spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"]
        );
    }

    #[test]
    fn a_suspended_job_that_never_started_may_change_scheduling_directives_only() {
        let mut spec = basic();
        spec["suspend"] = json!(true);
        let old = created("j", spec);
        assert!(update(&old, |j| {
            j["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
            j["spec"]["template"]["spec"]["tolerations"] =
                json!([{"key": "k", "operator": "Exists"}]);
            j["spec"]["template"]["metadata"]["annotations"] = json!({"a": "b"});
        })
        .is_empty());
        let image = update(&old, |j| {
            j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx")
        });
        assert!(
            image
                .iter()
                .any(|c| c.starts_with("spec.template: Invalid value:")),
            "{image:?}"
        );

        let mut started = old.clone();
        started["status"] = json!({"startTime": "2024-01-01T00:00:00Z"});
        let node = update(&started, |j| {
            j["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"})
        });
        assert!(
            node.iter().any(|c| c.ends_with("field is immutable")),
            "{node:?}"
        );
    }
}
