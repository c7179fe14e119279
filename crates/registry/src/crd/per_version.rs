//! The per-version fields of a CRD as kube-apiserver sees them. Upstream validates the
//! internal form a v1 CRD converts to, and that conversion moves a schema (subresources,
//! printer columns) that every version has identical to the top level
//! (`spec.validation`, `spec.subresources`, `spec.additionalPrinterColumns`): errors then
//! carry those paths. An update that leaves a version's schema unchanged is not held to
//! the per-rule CEL cost limit (`ValidateCustomResourceDefinitionUpdate`'s
//! `versionsWithUnchangedSchemas`), so a CRD stored under other limits stays writable; the
//! per-CRD total still applies.

use kplane_schema::CompileOptions;
use serde_json::Value;

use super::{s, versions};

/// Which per-version fields all versions have identical (then validated once, at the top
/// level).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shared {
    pub schema: bool,
    pub subresources: bool,
    pub columns: bool,
}

impl Shared {
    pub(super) fn of(versions: &[Value]) -> Shared {
        Shared {
            schema: identical(versions, "schema"),
            subresources: identical(versions, "subresources"),
            columns: identical(versions, "additionalPrinterColumns"),
        }
    }
}

/// A version's field; `null` and an empty list read as absent (Go's semantic equality
/// does not tell a nil slice from an empty one).
fn field<'a>(v: &'a Value, f: &str) -> Option<&'a Value> {
    v.get(f)
        .filter(|x| !x.is_null() && x.as_array().is_none_or(|a| !a.is_empty()))
}

/// Whether every version has the same `f` (at least one version).
fn identical(versions: &[Value], f: &str) -> bool {
    match versions.split_first() {
        Some((first, rest)) => rest.iter().all(|v| field(v, f) == field(first, f)),
        None => false,
    }
}

/// `GetSchemaForVersion` on the internal form: the shared schema when all versions have
/// the same (whatever `version` is), else that version's; `None` when it has no such
/// version.
fn schema_for_version<'a>(crd: &'a Value, version: &str) -> Option<Option<&'a Value>> {
    let vs = versions(crd);
    match vs.first() {
        None => Some(None),
        Some(first) if identical(vs, "schema") => Some(field(first, "schema")),
        Some(_) => vs
            .iter()
            .find(|v| s(v, "/name") == version)
            .map(|v| field(v, "schema")),
    }
}

/// The options `version`'s schema is compiled with: on an update that leaves it unchanged,
/// without the per-rule cost limit.
pub(super) fn compile_options(obj: &Value, old: Option<&Value>, version: &str) -> CompileOptions {
    let unchanged = old.is_some_and(|old| {
        matches!(
            (schema_for_version(obj, version), schema_for_version(old, version)),
            (Some(new), Some(old)) if new == old
        )
    });
    if unchanged {
        CompileOptions {
            max_cel_cost: u64::MAX,
            ..CompileOptions::default()
        }
    } else {
        CompileOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: Value) -> Value {
        json!({"spec": {"versions": versions}})
    }

    fn schema(prop: &str) -> Value {
        json!({"openAPIV3Schema": {"type": "object", "properties": {prop: {"type": "string"}}}})
    }

    #[test]
    fn shared_fields_are_those_all_versions_have_identical() {
        let one =
            crd(json!([{"name": "v1", "schema": schema("a"), "additionalPrinterColumns": []}]));
        let s = Shared::of(versions(&one));
        assert!(s.schema && s.subresources && s.columns);
        let two = crd(json!([
            {"name": "v1", "schema": schema("a"), "subresources": {"status": {}}},
            {"name": "v2", "schema": schema("b"), "subresources": {"status": {}}},
        ]));
        let s = Shared::of(versions(&two));
        assert!(!s.schema && s.subresources && s.columns);
    }

    #[test]
    fn a_schema_is_unchanged_as_get_schema_for_version_compares_it() {
        let limited = CompileOptions::default();
        let unchanged = CompileOptions {
            max_cel_cost: u64::MAX,
            ..CompileOptions::default()
        };
        let old = crd(
            json!([{"name": "v1", "schema": schema("a")}, {"name": "v2", "schema": schema("b")}]),
        );
        // on create, and for a changed or a new version: the limits
        assert_eq!(compile_options(&old, None, "v1"), limited);
        let changed = crd(
            json!([{"name": "v1", "schema": schema("a")}, {"name": "v2", "schema": schema("c")}]),
        );
        assert_eq!(compile_options(&changed, Some(&old), "v1"), unchanged);
        assert_eq!(compile_options(&changed, Some(&old), "v2"), limited);
        let added = crd(json!([
            {"name": "v1", "schema": schema("a")}, {"name": "v2", "schema": schema("b")},
            {"name": "v3", "schema": schema("b")},
        ]));
        assert_eq!(compile_options(&added, Some(&old), "v3"), limited);
        // all versions sharing one schema compare as that schema, whatever the name
        let shared_old = crd(json!([{"name": "v1", "schema": schema("a")}]));
        let shared_new = crd(
            json!([{"name": "v1", "schema": schema("a")}, {"name": "v2", "schema": schema("a")}]),
        );
        assert_eq!(
            compile_options(&shared_new, Some(&shared_old), "v2"),
            unchanged
        );
    }
}
