//! The parts every kind's definition shares, built-in or not: the group/version/kind tags of
//! `x-kubernetes-group-version-kind`, the type-meta property schemas (`apiVersion`, `kind`,
//! `metadata`) and the `<Kind>List` definition made for a listable kind.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::convert::schema_ref;
use crate::names::{LIST_META, OBJECT_META};

/// A group/version/kind triple as found in `x-kubernetes-group-version-kind`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub(crate) fn new(group: &str, version: &str, kind: &str) -> Self {
        Gvk {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        serde_json::json!({"group": self.group, "version": self.version, "kind": self.kind})
    }
}

/// A definition whose `apiVersion`, `kind` and `metadata` property schemas are reused for
/// custom resources and list kinds (they are identical on every built-in kind).
const TYPE_META_SOURCE: &str = "io.k8s.api.core.v1.ConfigMap";

/// Appends `gvk` to the schema's `x-kubernetes-group-version-kind` array unless present.
pub(crate) fn add_gvk(schema: &mut Value, gvk: &Gvk) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let entry = obj
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !entry.is_array() {
        *entry = Value::Array(Vec::new());
    }
    if let Value::Array(list) = entry {
        let value = gvk.to_value();
        if !list.contains(&value) {
            list.push(value);
            list.sort_by_key(|v| {
                (
                    v["group"].as_str().unwrap_or_default().to_owned(),
                    v["version"].as_str().unwrap_or_default().to_owned(),
                    v["kind"].as_str().unwrap_or_default().to_owned(),
                )
            });
        }
    }
}

/// Whether the schema's `x-kubernetes-group-version-kind` contains `gvk`.
pub(crate) fn has_gvk(schema: &Value, gvk: &Gvk) -> bool {
    schema
        .get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|list| list.contains(&gvk.to_value()))
}

/// The `apiVersion`, `kind` and `metadata` property schemas shared by every kind, as published
/// by `k8s-openapi` on its built-in kinds.
#[derive(Clone)]
pub(crate) struct TypeMeta {
    pub api_version: Value,
    pub kind: Value,
    pub object_meta: Value,
}

impl TypeMeta {
    /// The type-meta schemas of [`TYPE_META_SOURCE`] in `defs`, or plain fallbacks.
    pub(crate) fn from_definitions(defs: &BTreeMap<String, Value>) -> Self {
        let props = defs
            .get(TYPE_META_SOURCE)
            .and_then(|d| d.get("properties"))
            .cloned()
            .unwrap_or(Value::Null);
        let prop = |name: &str, fallback: Value| {
            props
                .get(name)
                .cloned()
                .filter(Value::is_object)
                .unwrap_or(fallback)
        };
        TypeMeta {
            api_version: prop("apiVersion", serde_json::json!({"type": "string"})),
            kind: prop("kind", serde_json::json!({"type": "string"})),
            object_meta: prop(
                "metadata",
                serde_json::json!({
                    "allOf": [{"$ref": schema_ref(OBJECT_META)}],
                    "default": {},
                }),
            ),
        }
    }
}

/// Builds the `<Kind>List` definition for the kind defined under `item_name`.
pub(crate) fn list_definition(
    type_meta: &TypeMeta,
    item_name: &str,
    kind: &str,
    gvk: &Gvk,
) -> Value {
    let mut list = serde_json::json!({
        "description": format!("{} is a list of {kind} objects.", gvk.kind),
        "type": "object",
        "properties": {
            "apiVersion": type_meta.api_version,
            "kind": type_meta.kind,
            "items": {
                "description": format!("The {kind} objects of the list."),
                "type": "array",
                "items": {"$ref": schema_ref(item_name)},
            },
            "metadata": {
                "allOf": [{"$ref": schema_ref(LIST_META)}],
                "default": {},
                "description": "Standard list metadata: resourceVersion, continue token and remaining item count.",
            },
        },
        "required": ["items"],
    });
    add_gvk(&mut list, gvk);
    list
}
