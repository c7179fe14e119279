//! Type info of a custom resource from its CRD `openAPIV3Schema`: `x-kubernetes-list-type`
//! (`atomic|set|map`), `x-kubernetes-list-map-keys` (with the items' key-field `default`s),
//! `x-kubernetes-map-type` (`atomic|granular`), `additionalProperties` (maps with
//! arbitrary keys), `x-kubernetes-preserve-unknown-fields` (schemaless, "deduced" data) and
//! `x-kubernetes-embedded-resource`. `metadata` at the root (and of embedded resources)
//! is typed as ObjectMeta from the built-in table, as the apiserver does.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::builtin::{parse_spec, Builder};
use crate::error::MergeError;
use crate::model::{Model, ModelTypeInfo, Node, DEDUCED, UNKNOWN};
use crate::types::{ListType, MapType, PatchMeta};

/// Deepest schema nesting converted (deeper levels are treated as schemaless).
const MAX_DEPTH: usize = 64;

/// Builds the type info of a custom resource from its structural `openAPIV3Schema`.
pub fn crd_type_info(schema: &Value) -> Result<ModelTypeInfo, MergeError> {
    let spec = parse_spec()?;
    let mut b = Builder::with_model(&spec, Model::new());
    let meta = b.named("ObjectMeta")?;
    let mut conv = Converter {
        model: b.model,
        meta,
    };
    let root = conv.node(schema, 0);
    conv.model.nodes[root]
        .fields
        .insert("metadata".into(), meta);
    conv.model.nodes[root].fields_from = None;
    Ok(ModelTypeInfo {
        model: Arc::new(conv.model),
        root,
        empty: json!({}),
    })
}

struct Converter {
    model: Model,
    meta: usize,
}

impl Converter {
    fn node(&mut self, s: &Value, depth: usize) -> usize {
        if depth > MAX_DEPTH {
            return DEDUCED;
        }
        let Some(obj) = s.as_object() else {
            return UNKNOWN;
        };
        let flag = |k: &str| obj.get(k).and_then(Value::as_bool).unwrap_or(false);
        let props = obj.get("properties").and_then(Value::as_object);
        let mut n = Node::default();
        if let Some(props) = props {
            for (k, v) in props {
                let c = self.node(v, depth + 1);
                n.fields.insert(k.clone(), c);
            }
        }
        if flag("x-kubernetes-embedded-resource") {
            n.fields.insert("metadata".into(), self.meta);
        }
        match obj.get("additionalProperties") {
            Some(Value::Object(ap)) => {
                n.is_map = true;
                n.elem = Some(self.node(&Value::Object(ap.clone()), depth + 1));
            }
            Some(Value::Bool(true)) => {
                n.is_map = true;
                n.elem = Some(DEDUCED);
            }
            _ => {}
        }
        if flag("x-kubernetes-preserve-unknown-fields") && props.is_none() && !n.is_map {
            n.is_map = true;
            n.elem = Some(DEDUCED);
        }
        if obj.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
            n.map = MapType::Atomic;
        }
        if let Some(items) = obj.get("items") {
            n.elem = Some(self.node(items, depth + 1));
            n.list = match obj.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListType::Set,
                Some("map") => {
                    let keys: Vec<String> = obj
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|k| k.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    for k in &keys {
                        let d = items
                            .get("properties")
                            .and_then(|p| p.get(k))
                            .and_then(|p| p.get("default"));
                        if let Some(d) = d {
                            n.key_defaults.push((k.clone(), d.clone()));
                        }
                    }
                    ListType::Map { keys }
                }
                _ => ListType::Atomic,
            };
            n.list_smp = Some(match &n.list {
                ListType::Atomic => PatchMeta::replace(),
                ListType::Set => PatchMeta::merge(None),
                ListType::Map { keys } => PatchMeta::merge(keys.first().cloned()),
            });
        }
        self.model.add(n)
    }
}
