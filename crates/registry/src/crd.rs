//! CustomResourceDefinitions as objects: defaulting, spec validation (names, scope,
//! versions, structural schemas compiled through `kplane-schema`), and the status the
//! naming and establishing controllers of kube-apiserver would write (acceptedNames,
//! NamesAccepted, Established, Terminating, storedVersions). Also turns an established CRD
//! into the [`ResourceType`]s it serves.

use kplane_schema::SchemaCache;
use kplane_types::{validation, Cause};
use serde_json::{json, Map, Value};

use super::meta;

pub use info::{CustomInfo, PrinterColumn, ScalePaths};

mod conversion_rules;
pub mod info;
mod per_version;
#[cfg(test)]
mod ratcheting_tests;
pub mod served;
#[cfg(test)]
mod update_tests;

/// The process-wide cache of compiled schemas: identical schemas in any number of logical
/// clusters compile once.
pub fn schema_cache() -> &'static SchemaCache {
    static CACHE: std::sync::OnceLock<SchemaCache> = std::sync::OnceLock::new();
    CACHE.get_or_init(SchemaCache::new)
}

/// Storage resource of CRDs.
pub const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";
/// Finalizer that keeps a CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub(super) fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Defaults of a CRD (`SetDefaults_CustomResourceDefinition*`).
pub fn default_crd(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            for (field, value) in [
                ("singular", kind.to_ascii_lowercase()),
                ("listKind", format!("{kind}List")),
            ] {
                if names
                    .get(field)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    names.insert(field.into(), json!(value));
                }
            }
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(Value::Object(service)) =
        obj.pointer_mut("/spec/conversion/webhook/clientConfig/service")
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".into(), json!(443));
        }
    }
    super::crd_form::canonicalize(obj);
}

/// The rules of every CRD names block (`spec.names`, `status.acceptedNames`), as upstream's
/// `ValidateCustomResourceDefinitionNames`: plural, singular, short names and categories are
/// DNS-1035 labels; kind and listKind are too once lowercased (so `e2e-test-foo-crd` is a
/// valid kind); kind and listKind differ. Empty names are left to the callers' required checks.
pub fn validate_names(names: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (f, mixed_case) in [
        ("plural", false),
        ("singular", false),
        ("kind", true),
        ("listKind", true),
    ] {
        let v = s(names, &format!("/{f}"));
        if v.is_empty() {
            continue;
        }
        let errs = if mixed_case {
            validation::is_dns1035_label(&v.to_lowercase())
        } else {
            validation::is_dns1035_label(v)
        };
        if !errs.is_empty() {
            let joined = errs.join(",");
            let detail = if mixed_case {
                format!("may have mixed case, but should otherwise match: {joined}")
            } else {
                joined
            };
            causes.push(Cause::invalid(format!("{path}.{f}"), &json!(v), &detail));
        }
    }
    label_list(names, "shortNames", path, &mut causes);
    let kind = s(names, "/kind");
    if !kind.is_empty() && kind == s(names, "/listKind") {
        causes.push(Cause::invalid(
            format!("{path}.listKind"),
            &json!(kind),
            "kind and listKind may not be the same",
        ));
    }
    label_list(names, "categories", path, &mut causes);
    causes
}

/// Each entry of the string list `field` must be a DNS-1035 label.
fn label_list(names: &Value, field: &str, path: &str, causes: &mut Vec<Cause>) {
    let Some(Value::Array(items)) = names.get(field) else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let text = item.as_str().unwrap_or("");
        let errs = validation::is_dns1035_label(text);
        if !errs.is_empty() {
            causes.push(Cause::invalid(
                format!("{path}.{field}[{i}]"),
                item,
                &errs.join(","),
            ));
        }
    }
}

/// Validates a CRD. Compiles every version's schema (shared through `cache`).
pub fn validate_crd(obj: &Value, old: Option<&Value>, cache: &SchemaCache) -> Vec<Cause> {
    let mut causes = Vec::new();
    let group = s(obj, "/spec/group");
    let plural = s(obj, "/spec/names/plural");
    let name = meta::name_of(obj);
    if group.is_empty() {
        causes.push(Cause::required("spec.group"));
    } else if !validation::is_dns1123_subdomain(group).is_empty() || !group.contains('.') {
        causes.push(Cause::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    if name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match s(obj, "/spec/scope") {
        "Namespaced" | "Cluster" => {}
        "" => causes.push(Cause::required("spec.scope")),
        other => causes.push(Cause::not_supported(
            "spec.scope",
            &json!(other),
            &["Cluster", "Namespaced"],
        )),
    }
    // Required in spec (not in status.acceptedNames), then the names' own rules.
    for f in ["plural", "singular", "kind", "listKind"] {
        if s(obj, &format!("/spec/names/{f}")).is_empty() {
            causes.push(Cause::required(format!("spec.names.{f}")));
        }
    }
    if let Some(names) = obj.pointer("/spec/names") {
        causes.extend(validate_names(names, "spec.names"));
    }
    causes.extend(validate_versions(obj, old, cache));
    causes.extend(conversion_rules::validate(obj, old));
    if let Some(old) = old {
        // Once established, the scope and kind are fixed (they shape stored objects);
        // group and plural make up the name and never change.
        if is_established(old) {
            for (ptr, field) in [
                ("/spec/scope", "spec.scope"),
                ("/spec/names/kind", "spec.names.kind"),
            ] {
                if s(old, ptr) != s(obj, ptr) {
                    causes.push(Cause::invalid(
                        field,
                        &json!(s(obj, ptr)),
                        "field is immutable",
                    ));
                }
            }
        }
        if s(old, "/spec/group") != group {
            causes.push(Cause::invalid(
                "spec.group",
                &json!(group),
                "field is immutable",
            ));
        }
        if s(old, "/spec/names/plural") != plural {
            causes.push(Cause::invalid(
                "spec.names.plural",
                &json!(plural),
                "field is immutable",
            ));
        }
        // A version that held data stays listed while it is in storedVersions.
        let versions: Vec<&str> = versions(obj).iter().map(|v| s(v, "/name")).collect();
        if let Some(Value::Array(stored)) = old.pointer("/status/storedVersions") {
            for (i, sv) in stored.iter().enumerate() {
                let sv = sv.as_str().unwrap_or("");
                if !versions.contains(&sv) {
                    causes.push(Cause::invalid(
                        format!("status.storedVersions[{i}]"),
                        &json!(sv),
                        "must appear in spec.versions",
                    ));
                }
            }
        }
    }
    causes
}

pub(super) fn versions(obj: &Value) -> &[Value] {
    obj.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The versions: names, storage and served flags, deprecation warnings, and each schema,
/// scale subresource and printer column list. As upstream, which validates the internal
/// form the v1 object converts to, a schema (subresources, columns) that all versions
/// share is validated once as the top-level `spec.validation` (`spec.subresources`,
/// `spec.additionalPrinterColumns`), the paths its errors carry. On update (`old`), a
/// schema unchanged from the stored CRD is not held to the per-rule CEL cost limit.
fn validate_versions(obj: &Value, old: Option<&Value>, cache: &SchemaCache) -> Vec<Cause> {
    let mut causes = Vec::new();
    let vs = versions(obj);
    if vs.is_empty() {
        causes.push(Cause::invalid(
            "spec.versions",
            &json!([]),
            "must have exactly one version marked as storage version",
        ));
        return causes;
    }
    let storage = vs
        .iter()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .count();
    if storage != 1 {
        causes.push(Cause::invalid(
            "spec.versions",
            &Value::Array(vs.to_vec()),
            "must have exactly one version marked as storage version",
        ));
    }
    if !vs
        .iter()
        .any(|v| v.get("served") == Some(&Value::Bool(true)))
    {
        causes.push(Cause::invalid(
            "spec.versions",
            &Value::Array(vs.to_vec()),
            "must have at least one served version",
        ));
    }
    let shared = per_version::Shared::of(vs);
    let compile_schema = |schema: &Value, prefix: &str, version: &str| {
        let opts = per_version::compile_options(obj, old, version);
        cache.get_or_compile(schema, prefix, &opts).err()
    };
    let mut seen = Vec::new();
    for (i, v) in vs.iter().enumerate() {
        let base = format!("spec.versions[{i}]");
        for msg in deprecation_warning_problems(v) {
            causes.push(Cause::invalid(
                format!("{base}.deprecationWarning"),
                v.get("deprecationWarning").unwrap_or(&Value::Null),
                &msg,
            ));
        }
        let name = s(v, "/name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{base}.name")));
        } else if let errs @ [_, ..] = validation::is_dns1035_label(name).as_slice() {
            causes.push(Cause::invalid(
                format!("{base}.name"),
                &json!(name),
                &errs.join(","),
            ));
        } else if seen.contains(&name) {
            causes.push(Cause::duplicate(format!("{base}.name"), &json!(name)));
        }
        seen.push(name);
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                causes.push(Cause::required(format!("{base}.schema.openAPIV3Schema")))
            }
            Some(_) if shared.schema => {}
            Some(schema) => {
                let prefix = format!("{base}.schema.openAPIV3Schema");
                causes.extend(compile_schema(schema, &prefix, name).unwrap_or_default());
            }
        }
        if !shared.subresources {
            causes.extend(subresources_problems(v, &base));
        }
        if !shared.columns {
            causes.extend(column_problems(v, &base));
        }
    }
    // what all versions share, validated once at the top level (named after the first
    // version, as the internal form's `spec.version`)
    let first = &vs[0];
    if shared.schema {
        if let Some(schema) = first
            .pointer("/schema/openAPIV3Schema")
            .filter(|s| !s.is_null())
        {
            let prefix = "spec.validation.openAPIV3Schema";
            causes.extend(compile_schema(schema, prefix, s(first, "/name")).unwrap_or_default());
        }
    }
    if shared.subresources {
        causes.extend(subresources_problems(first, "spec"));
    }
    if shared.columns {
        causes.extend(column_problems(first, "spec"));
    }
    causes
}

/// The scale subresource of version `v`, its paths under `base`.
fn subresources_problems(v: &Value, base: &str) -> Vec<Cause> {
    match v.pointer("/subresources/scale") {
        Some(scale) => validate_scale(scale, &format!("{base}.subresources")),
        None => Vec::new(),
    }
}

/// The printer columns of version `v`, their paths under `base`.
fn column_problems(v: &Value, base: &str) -> Vec<Cause> {
    let Some(Value::Array(cols)) = v.get("additionalPrinterColumns") else {
        return Vec::new();
    };
    cols.iter()
        .enumerate()
        .flat_map(|(j, c)| validate_column(c, &format!("{base}.additionalPrinterColumns[{j}]")))
        .collect()
}

/// `validateDeprecationWarning`: only on deprecated versions, 1 to 256 printable characters.
fn deprecation_warning_problems(v: &Value) -> Vec<String> {
    let deprecated = v.get("deprecated") == Some(&Value::Bool(true));
    let Some(w) = v.get("deprecationWarning").filter(|w| !w.is_null()) else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let w = w.as_str().unwrap_or("");
    let mut out = Vec::new();
    if w.len() > 256 {
        out.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        out.push("must not be an empty string".into());
    }
    // Go's unicode.IsPrint: graphic characters and the ASCII space.
    if let Some((i, _)) = w
        .char_indices()
        .find(|(_, c)| *c != ' ' && (c.is_control() || c.is_whitespace()))
    {
        out.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    out
}

/// Printer column types (sorted, as upstream lists them in messages).
const COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
/// Printer column formats (sorted).
const COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// One `additionalPrinterColumns` entry (`ValidateCustomResourceColumnDefinition`).
fn validate_column(c: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if s(c, "/name").is_empty() {
        causes.push(Cause::required(format!("{path}.name")));
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    match s(c, "/type") {
        "" => causes.push(Cause::new(
            kplane_types::CauseType::FieldValueRequired,
            format!("{path}.type"),
            format!("Required value: {types}"),
        )),
        t if !COLUMN_TYPES.contains(&t) => {
            causes.push(Cause::invalid(format!("{path}.type"), &json!(t), &types))
        }
        _ => {}
    }
    let format = s(c, "/format");
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        causes.push(Cause::invalid(
            format!("{path}.format"),
            &json!(format),
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    // Upstream names this field by its Go name in the path.
    let json_path = s(c, "/jsonPath");
    if json_path.is_empty() {
        causes.push(Cause::required(format!("{path}.JSONPath")));
    } else {
        causes.extend(simple_json_path(json_path, &format!("{path}.JSONPath")));
    }
    causes
}

/// `validateSimpleJSONPath`: a path in dot notation starting with `.`.
fn simple_json_path(p: &str, field: &str) -> Option<Cause> {
    if p.is_empty() {
        Some(Cause::invalid(field, &json!(p), "must not be empty"))
    } else if !p.starts_with('.') {
        Some(Cause::invalid(
            field,
            &json!(p),
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

/// The scale subresource's paths: replicas under `.spec.` and `.status.`, the selector
/// under `.status.` (`ValidateCustomResourceDefinitionSubresources`).
fn validate_scale(scale: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (f, prefix, required) in [
        ("specReplicasPath", ".spec.", true),
        ("statusReplicasPath", ".status.", true),
        ("labelSelectorPath", ".status.", false),
    ] {
        let field = format!("{path}.scale.{f}");
        let p = s(scale, &format!("/{f}"));
        if p.is_empty() {
            if required {
                causes.push(Cause::required(field));
            }
            continue;
        }
        if let Some(c) = simple_json_path(p, &field) {
            causes.push(c);
        } else if !p.starts_with(prefix) {
            let under = prefix.trim_end_matches('.');
            causes.push(Cause::invalid(
                field,
                &json!(p),
                &format!("should be a json path under {under}"),
            ));
        }
    }
    causes
}

/// Name fields checked for conflicts, with the condition reason each one reports.
const NAME_FIELDS: &[(&str, &str)] = &[
    ("plural", "PluralConflict"),
    ("singular", "SingularConflict"),
    ("shortNames", "ShortNamesConflict"),
    ("kind", "KindConflict"),
    ("listKind", "ListKindConflict"),
];

fn name_values(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => vec![],
    }
}

/// The name fields of `obj` that collide with names other CRDs of the same group have
/// accepted (`NamesAccepted`, checked per field as the naming controller does).
fn name_conflicts(obj: &Value, others: &[Value]) -> Vec<(&'static str, &'static str, String)> {
    let group = s(obj, "/spec/group");
    let me = meta::name_of(obj);
    let mut out = Vec::new();
    for (field, reason) in NAME_FIELDS {
        let mine = name_values(obj.pointer(&format!("/spec/names/{field}")));
        let clash = others
            .iter()
            .filter(|o| {
                meta::name_of(o) != me && s(o, "/spec/group") == group && !meta::is_deleting(o)
            })
            .flat_map(|o| {
                NAME_FIELDS.iter().flat_map(move |(f, _)| {
                    name_values(o.pointer(&format!("/status/acceptedNames/{f}")))
                })
            })
            .find(|taken| mine.contains(taken));
        if let Some(taken) = clash {
            out.push((*field, *reason, format!("\"{taken}\" is already in use")));
        }
    }
    out
}

fn set_condition(conds: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str) {
    let want = crate::conditions::Condition {
        ty,
        status,
        reason,
        message,
    };
    crate::conditions::set(conds, want, &meta::now_time(), false);
}

/// Computes the controller-owned status (names, conditions, storedVersions), keeping
/// conditions of other types that clients set.
pub fn compute_status(obj: &Value, others: &[Value]) -> Value {
    let mut status = obj
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let mut conds: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let conflicts = name_conflicts(obj, others);
    let requested = obj
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    match conflicts.first() {
        None => {
            status["acceptedNames"] = requested;
            set_condition(
                &mut conds,
                "NamesAccepted",
                "True",
                "NoConflicts",
                "no conflicts found",
            );
            set_condition(
                &mut conds,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        }
        Some((_, reason, message)) => {
            // Names that do not conflict are accepted; conflicting ones keep what was
            // accepted before (nothing, for a new CRD).
            let mut accepted = status
                .get("acceptedNames")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            for f in [
                "plural",
                "singular",
                "shortNames",
                "kind",
                "listKind",
                "categories",
            ] {
                if !conflicts.iter().any(|(field, _, _)| *field == f) {
                    if let Some(v) = requested.get(f) {
                        accepted[f] = v.clone();
                    }
                }
            }
            for f in ["plural", "kind"] {
                if accepted.get(f).is_none() {
                    accepted[f] = json!("");
                }
            }
            status["acceptedNames"] = accepted;
            set_condition(&mut conds, "NamesAccepted", "False", reason, message);
            if !is_established(obj) {
                set_condition(
                    &mut conds,
                    "Established",
                    "False",
                    "NotAccepted",
                    "not all names are accepted",
                );
            }
        }
    }
    let group = s(obj, "/spec/group");
    if group.ends_with(".k8s.io")
        || group.ends_with(".kubernetes.io")
        || group == "k8s.io"
        || group == "kubernetes.io"
    {
        let approved = obj
            .pointer("/metadata/annotations/api-approved.kubernetes.io")
            .is_some();
        let (st, reason, msg) = if approved {
            (
                "True",
                "ApprovedAnnotation",
                "approved in the api-approved.kubernetes.io annotation",
            )
        } else {
            ("False", "MissingAnnotation", "protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111")
        };
        set_condition(
            &mut conds,
            "KubernetesAPIApprovalPolicyConformant",
            st,
            reason,
            msg,
        );
    }
    if meta::is_deleting(obj) {
        set_condition(
            &mut conds,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
    }
    status["conditions"] = Value::Array(conds);
    let mut stored: Vec<Value> = status
        .get("storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for v in versions(obj)
        .iter()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
    {
        let n = json!(s(v, "/name"));
        if !stored.contains(&n) {
            stored.push(n);
        }
    }
    status["storedVersions"] = Value::Array(stored);
    status
}

/// Whether the CRD is Established (its resources are served).
pub fn is_established(obj: &Value) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| s(c, "/type") == "Established" && s(c, "/status") == "True")
        })
}

/// OpenAPI definition name of a custom kind: reversed group + version + kind.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

pub(super) fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn has_default(schema: &Value, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match schema {
        Value::Object(m) => {
            m.contains_key("default") || m.values().any(|v| has_default(v, depth + 1))
        }
        Value::Array(a) => a.iter().any(|v| has_default(v, depth + 1)),
        _ => false,
    }
}

/// The highest-priority served, non-deprecated version (for deprecation warnings).
pub(super) fn recommended_version(crd: &Value) -> Option<String> {
    let mut candidates: Vec<&str> = versions(crd)
        .iter()
        .filter(|v| {
            v.get("served") == Some(&Value::Bool(true))
                && v.get("deprecated") != Some(&Value::Bool(true))
        })
        .map(|v| s(v, "/name"))
        .collect();
    candidates.sort_by(|a, b| version_priority_cmp(a, b));
    candidates.first().map(|v| v.to_string())
}

/// Sorts versions as Kubernetes does for discovery: GA > beta > alpha, higher numbers
/// first, then non-Kubernetes version strings alphabetically.
pub fn version_priority_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(v: &str) -> (u8, i64, i64, String) {
        let parse = |rest: &str| -> Option<(u8, i64)> {
            if rest.is_empty() {
                return Some((3, 0));
            }
            for (tag, rank) in [("beta", 2u8), ("alpha", 1u8)] {
                if let Some(n) = rest.strip_prefix(tag) {
                    return n.parse::<i64>().ok().map(|n| (rank, n));
                }
            }
            None
        };
        if let Some(rest) = v.strip_prefix('v') {
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(major) = digits.parse::<i64>() {
                if let Some((rank, minor)) = parse(&rest[digits.len()..]) {
                    return (rank, major, minor, String::new());
                }
            }
        }
        (0, 0, 0, v.to_string())
    }
    let (ka, kb) = (key(a), key(b));
    kb.0.cmp(&ka.0)
        .then(kb.1.cmp(&ka.1))
        .then(kb.2.cmp(&ka.2))
        .then(ka.3.cmp(&kb.3))
}

/// Adds the cleanup finalizer to a new CRD.
pub fn add_cleanup_finalizer(obj: &mut Value) {
    if let Ok(m) = meta::meta_mut(obj) {
        let fins = m.entry("finalizers").or_insert_with(|| json!([]));
        if let Value::Array(a) = fins {
            if !a.iter().any(|f| f == CLEANUP_FINALIZER) {
                a.push(json!(CLEANUP_FINALIZER));
            }
        }
    }
}

/// The CRD with its cleanup finalizer removed.
pub fn without_cleanup_finalizer(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(Value::Array(a)) = out.pointer_mut("/metadata/finalizers") {
        a.retain(|f| f != CLEANUP_FINALIZER);
    }
    if let Some(m) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        super::meta::strip_empty_meta(m);
    }
    out
}

/// A JSON map helper for building Scale objects.
pub fn object(pairs: Vec<(&str, Value)>) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec![
            "v1alpha1", "foo", "v2", "v1beta2", "v1", "v1beta1", "bar", "v10",
        ];
        v.sort_by(|a, b| version_priority_cmp(a, b));
        assert_eq!(
            v,
            vec!["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"]
        );
    }

    fn name_causes(names: Value) -> Vec<(String, String)> {
        validate_names(&names, "spec.names")
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    #[test]
    fn names_follow_upstream_rules() {
        // Kinds may have mixed case and dashes: a DNS-1035 label once lowercased.
        assert!(name_causes(
            json!({"plural": "e2e-test-foo-crds", "singular": "e2e-test-foo-crd",
            "kind": "e2e-test-foo-crd", "listKind": "e2e-test-foo-crdList",
            "shortNames": ["etf"], "categories": ["all", "e2e-tests"]})
        )
        .is_empty());
        let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        let got = name_causes(json!({"plural": "1widgets", "singular": "Widget",
            "kind": "Wid_get", "listKind": "Wid_get", "shortNames": ["ok", "w_"],
            "categories": ["Bad"]}));
        let want = vec![
            ("spec.names.plural".to_string(), format!("Invalid value: \"1widgets\": {dns1035}")),
            ("spec.names.singular".to_string(), format!("Invalid value: \"Widget\": {dns1035}")),
            ("spec.names.kind".to_string(), format!("Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {dns1035}")),
            ("spec.names.listKind".to_string(), format!("Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {dns1035}")),
            ("spec.names.shortNames[1]".to_string(), format!("Invalid value: \"w_\": {dns1035}")),
            ("spec.names.listKind".to_string(), "Invalid value: \"Wid_get\": kind and listKind may not be the same".to_string()),
            ("spec.names.categories[0]".to_string(), format!("Invalid value: \"Bad\": {dns1035}")),
        ];
        assert_eq!(got, want);
        let long = "a".repeat(64);
        assert_eq!(
            name_causes(json!({"plural": long})),
            vec![(
                "spec.names.plural".to_string(),
                format!("Invalid value: \"{long}\": must be no more than 63 characters")
            )]
        );
    }

    #[test]
    fn definition_names_reverse_the_group() {
        assert_eq!(
            definition_name("example.com", "v1", "Widget"),
            "com.example.v1.Widget"
        );
    }

    #[test]
    fn conflicting_plural_is_not_accepted() {
        let a = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}},
            "status": {"acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}}});
        let b = json!({"metadata": {"name": "gadgets.example.com"}, "spec": {"group": "example.com",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Widget", "listKind": "GadgetList"}}});
        let st = compute_status(&b, std::slice::from_ref(&a));
        assert_eq!(st["acceptedNames"]["plural"], "gadgets");
        assert_eq!(st["acceptedNames"]["kind"], "");
        let names_accepted = st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "NamesAccepted")
            .unwrap();
        assert_eq!(names_accepted["status"], "False");
        assert_eq!(names_accepted["reason"], "KindConflict");
        let ok = compute_status(&a, &[]);
        assert!(ok["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True"));
    }
}
