//! The ValidatingAdmissionPolicy status controller (kube-controller-manager's
//! `validatingadmissionpolicy-status` controller): when a policy is new or its generation
//! passed `status.observedGeneration`, its validations' `expression` and
//! `messageExpression` are type checked against the kinds it matches in its own logical
//! cluster, and `status.observedGeneration` and `status.typeChecking` are applied through
//! `/status` (server-side apply, forced, as [`MANAGER`]).
//!
//! The kinds are upstream's `typesToCheck`: from each of `matchConstraints.resourceRules`,
//! unless a group or version is a wildcard, every group × version × resource (resources
//! with `*` or `/` left out) the cluster serves, at most [`MAX_TYPES`] per rule (counting
//! stops there), sorted by group, version and kind. A custom resource is typed by its
//! served version's schema (`metadata` as the ObjectMeta definition, as its published
//! OpenAPI has it), a built-in by its OpenAPI definition with `$ref`s inlined (a definition
//! met again inside itself is left untyped); a kind without a schema is skipped. `params`
//! is typed by the param kind's schema, and undeclared when it has none. Each warning is
//! `<group>/<version>, Kind=<kind>: <issues>\n` per kind with issues, joined by newlines.
//!
//! A CRD created after the policy does not trigger a new check (as upstream: a change of
//! the policy's spec does).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use kplane_schema::typecheck::{NamedExpression, PolicyTypes, TypeSchema};
use kplane_storage::KeyValue;
use kplane_types::ClusterName;
use serde_json::{json, Map, Value};

use super::POLICY_RESOURCE;
use crate::catalog::{Catalog, ResourceType};
use crate::controllers::informer::InformerHandler;
use crate::controllers::queue::{Controller, Named};
use crate::controllers::runtime::{stored_cluster, write_failed};
use crate::error::ApiResult;
use crate::json_map::strings;
use crate::meta::OBJECT_META;
use crate::options::WriteParams;
use crate::patch::Document;
use crate::{Registry, Target};

/// The field manager of the status writes (upstream's controller name).
pub const MANAGER: &str = "validatingadmissionpolicy-status";
/// The most kinds one rule contributes (`maxTypesToCheck`).
pub const MAX_TYPES: usize = 10;

const REF_PREFIX: &str = "#/components/schemas/";
/// Deepest nesting of inlined definitions followed (deeper is left untyped).
const MAX_INLINE_DEPTH: usize = 48;

/// A group, version and kind, ordered as upstream sorts them.
type Gvk = (String, String, String);

/// One entry of `status.typeChecking.expressionWarnings`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpressionWarning {
    pub field_ref: String,
    pub warning: String,
}

/// Whether a stored policy still needs its status written.
fn needs_check(policy: &Value) -> bool {
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);
    let observed = policy
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    generation.unwrap_or(0) > observed
}

/// The served type of `resource` (its plural, else its singular) in `group/version`.
fn resolve(
    catalog: &Catalog,
    group: &str,
    version: &str,
    resource: &str,
) -> Option<Arc<ResourceType>> {
    if let Some(rt) = catalog.get(group, version, resource) {
        return Some(rt.clone());
    }
    catalog
        .all()
        .iter()
        .find(|rt| rt.group == group && rt.version == version && rt.singular == resource)
        .cloned()
}

/// Upstream's `typesToCheck` over `policy`'s resource rules, in `catalog`.
pub fn types_to_check(policy: &Value, catalog: &Catalog) -> Vec<(Gvk, Arc<ResourceType>)> {
    let mut found: BTreeMap<Gvk, Arc<ResourceType>> = BTreeMap::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    for rule in rules.into_iter().flatten() {
        let mut groups = strings(rule.get("apiGroups"));
        let mut versions = strings(rule.get("apiVersions"));
        let mut resources: Vec<String> = strings(rule.get("resources"))
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        let wildcard = |v: &[String]| v.iter().any(|s| s.contains('*'));
        if groups.is_empty() || wildcard(&groups) || versions.is_empty() || wildcard(&versions) {
            continue;
        }
        groups.sort();
        versions.sort();
        resources.sort();
        let mut count = 0;
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let Some(rt) = resolve(catalog, g, v, r) else {
                        continue;
                    };
                    let gvk = (rt.group.clone(), rt.version.clone(), rt.kind.clone());
                    found.insert(gvk, rt);
                    count += 1;
                    if count == MAX_TYPES {
                        return found.into_iter().collect();
                    }
                }
            }
        }
    }
    found.into_iter().collect()
}

/// Copies what typing needs of `schema`, `$ref`s to `defs` inlined (`stack`: the
/// definitions being inlined, whose repetition is left untyped).
fn inline(schema: &Value, defs: &BTreeMap<String, Value>, stack: &mut Vec<String>) -> Value {
    let Some(o) = schema.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    let reference = o.get("$ref").and_then(Value::as_str);
    let wrapped = match o.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        Some([only]) => Some(only),
        _ => None,
    };
    if let Some(r) = reference {
        let name = r.strip_prefix(REF_PREFIX).unwrap_or(r);
        let def = defs.get(name);
        if stack.len() >= MAX_INLINE_DEPTH || stack.iter().any(|s| s == name) || def.is_none() {
            return json!({});
        }
        stack.push(name.to_string());
        let resolved = def.map(|d| inline(d, defs, stack));
        stack.pop();
        if let Some(Value::Object(m)) = resolved {
            out.extend(m);
        }
    } else if let Some(w) = wrapped {
        if let Value::Object(m) = inline(w, defs, stack) {
            out.extend(m);
        }
    }
    for (k, v) in o {
        let copied = match k.as_str() {
            "type"
            | "format"
            | "required"
            | "nullable"
            | "x-kubernetes-int-or-string"
            | "x-kubernetes-preserve-unknown-fields"
            | "x-kubernetes-embedded-resource" => v.clone(),
            "items" | "additionalProperties" if v.is_object() => inline(v, defs, stack),
            "additionalProperties" => v.clone(),
            "properties" => {
                let Some(props) = v.as_object() else { continue };
                let inlined = props
                    .iter()
                    .map(|(name, p)| (name.clone(), inline(p, defs, stack)))
                    .collect();
                Value::Object(inlined)
            }
            _ => continue,
        };
        out.insert(k.clone(), copied);
    }
    Value::Object(out)
}

/// The map under `m` (only inserts happen under it; a poisoned map is still a valid map).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The type schema of a built-in definition, built once per process.
fn builtin_schema(name: &str) -> Option<Arc<TypeSchema>> {
    static BUILT: OnceLock<Mutex<HashMap<String, Option<Arc<TypeSchema>>>>> = OnceLock::new();
    let built = BUILT.get_or_init(Mutex::default);
    if let Some(s) = lock(built).get(name) {
        return s.clone();
    }
    let defs = kplane_openapi::builtin_definitions();
    let schema = defs.get(name).map(|d| {
        let mut stack = vec![name.to_string()];
        Arc::new(TypeSchema::new(&inline(d, defs, &mut stack)))
    });
    lock(built).insert(name.to_string(), schema.clone());
    schema
}

/// A custom resource's type schema: its served version's schema, with `metadata` the
/// ObjectMeta definition and `apiVersion` and `kind` strings (its published OpenAPI).
fn custom_schema(raw: &Value) -> Option<Arc<TypeSchema>> {
    let defs = kplane_openapi::builtin_definitions();
    let mut schema = inline(raw, defs, &mut Vec::new());
    let meta = defs.get(OBJECT_META).map(|m| {
        let mut stack = vec![OBJECT_META.to_string()];
        inline(m, defs, &mut stack)
    })?;
    let o = schema.as_object_mut()?;
    o.entry("type").or_insert_with(|| json!("object"));
    let props = o.entry("properties").or_insert_with(|| json!({}));
    let props = props.as_object_mut()?;
    props.insert("metadata".into(), meta);
    for f in ["apiVersion", "kind"] {
        props.entry(f).or_insert_with(|| json!({"type": "string"}));
    }
    Some(Arc::new(TypeSchema::new(&schema)))
}

/// The type schema of a served kind; `None` when it has none (skipped, as upstream skips a
/// schema it cannot find).
fn kind_schema(rt: &ResourceType) -> Option<Arc<TypeSchema>> {
    match &rt.custom {
        Some(c) => custom_schema(&c.raw_schema),
        None => builtin_schema(&rt.schema_name),
    }
}

/// The param kind's type schema (`spec.paramKind`), if the cluster serves it with one.
fn param_schema(policy: &Value, catalog: &Catalog) -> Option<Arc<TypeSchema>> {
    let pk = policy.pointer("/spec/paramKind")?;
    let api_version = pk.get("apiVersion")?.as_str()?;
    let kind = pk.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let rt = catalog
        .all()
        .iter()
        .find(|rt| rt.group == group && rt.version == version && rt.kind == kind)?;
    kind_schema(rt)
}

/// The warnings of `policy` (upstream's `TypeChecker.Check`) against the kinds it matches
/// in `catalog`.
pub fn check_policy(policy: &Value, catalog: &Catalog) -> Vec<ExpressionWarning> {
    let kinds: Vec<(Gvk, Arc<TypeSchema>)> = types_to_check(policy, catalog)
        .into_iter()
        .filter_map(|(gvk, rt)| Some((gvk, kind_schema(&rt)?)))
        .collect();
    let params = param_schema(policy, catalog);
    let variables: Vec<NamedExpression> = policy
        .pointer("/spec/variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| NamedExpression {
            name: v
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            expression: v
                .get("expression")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
        .collect();
    let check = |expression: &str| -> Option<String> {
        let issues: Vec<String> = kinds
            .iter()
            .filter_map(|((g, v, k), schema)| {
                let types = PolicyTypes {
                    object: schema,
                    params: params.as_deref(),
                    variables: &variables,
                };
                let issue = types.check(expression)?;
                Some(format!("{g}/{v}, Kind={k}: {issue}\n"))
            })
            .collect();
        (!issues.is_empty()).then(|| issues.join("\n"))
    };
    let mut warnings = Vec::new();
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let src = v.get(field).and_then(Value::as_str).unwrap_or("");
            if field == "messageExpression" && src.is_empty() {
                continue;
            }
            if let Some(warning) = check(src) {
                warnings.push(ExpressionWarning {
                    field_ref: format!("spec.validations[{i}].{field}"),
                    warning,
                });
            }
        }
    }
    warnings
}

/// The status applied for `generation` with `warnings` (`typeChecking` is there, `{}`,
/// when there are none, as upstream's apply configuration has it).
fn status_document(name: &str, generation: i64, warnings: &[ExpressionWarning]) -> Value {
    let mut type_checking = Map::new();
    if !warnings.is_empty() {
        let list: Vec<Value> = warnings
            .iter()
            .map(|w| json!({"fieldRef": w.field_ref, "warning": w.warning}))
            .collect();
        type_checking.insert("expressionWarnings".into(), Value::Array(list));
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "status": {"observedGeneration": generation, "typeChecking": type_checking},
    })
}

/// Type checks the policy `name` of `cluster` and applies its status, unless its
/// generation was observed already; false to be retried.
pub(crate) async fn sync_policy_status(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<bool> {
    let key = kplane_storage::Key::new(cluster.as_str(), POLICY_RESOURCE, "", name);
    let Some((_, policy)) = reg.get_decoded(&key).await? else {
        return Ok(true);
    };
    if !needs_check(&policy) {
        return Ok(true);
    }
    let catalog = reg.cluster_catalog(cluster).await?;
    let Some(rt) = catalog
        .get(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )
        .cloned()
    else {
        return Ok(true);
    };
    let checked = policy.clone();
    let checked_catalog = catalog.clone();
    // CPU work (schemas built, expressions checked): off the async threads
    let warnings = tokio::task::spawn_blocking(move || check_policy(&checked, &checked_catalog))
        .await
        .map_err(|e| crate::error::ApiError::internal(e.to_string()))?;
    let generation = policy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let doc = status_document(name, generation, &warnings);
    let w = WriteParams {
        field_manager: Some(MANAGER.into()),
        default_manager: MANAGER.into(),
        force: Some(true),
        ..Default::default()
    };
    let t = Target::new(cluster, rt.clone(), None);
    // When earlier warnings are gone, the apply removes them and the `typeChecking` map
    // they emptied with them, as upstream's server-side apply does: the status is then
    // only `observedGeneration`.
    let applied = reg
        .apply(&t, name, Some("status"), Document::new(doc), &w)
        .await;
    match applied {
        Ok(_) => Ok(true),
        // Deleted meanwhile: nothing to report.
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(MANAGER, cluster.as_str(), &rt, "", name, &e);
            Ok(false)
        }
    }
}

/// The controller's informer handler (on the leader): queues every policy whose
/// generation was not observed yet, when written and at every informer pass.
pub(crate) struct Feed(pub(crate) Arc<Registry>);

impl InformerHandler for Feed {
    fn on_resync(&self) {}

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        let key = &kv.key;
        if deleted || key.resource != POLICY_RESOURCE {
            return;
        }
        let pending = serde_json::from_slice::<Value>(&kv.value).is_ok_and(|p| needs_check(&p));
        if !pending {
            return;
        }
        let Some(cluster) = stored_cluster(key) else {
            return;
        };
        if self.0.cluster_going(&cluster) {
            return;
        }
        self.0
            .enqueue::<PolicyStatus>(Named::new(cluster, key.name.clone()));
    }
}

/// The ValidatingAdmissionPolicy status controller: type checks a policy whose generation
/// was not observed yet and applies its status.
pub struct PolicyStatus;

impl Controller<Registry> for PolicyStatus {
    type Key = Named;

    fn name(&self) -> &'static str {
        MANAGER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        sync_policy_status(registry, &key.cluster, &key.name).await
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
