//! The built-in type table: list/map semantics and strategic-merge-patch metadata of the
//! built-in kinds kplane serves, kept as data in `data/builtin.yaml` (compiled into the
//! binary, parsed once on first use).
//!
//! k8s-openapi's schemas lack Kubernetes' patch metadata, so the facts are transcribed from
//! the Kubernetes Go type definitions (`k8s.io/api/*/types.go`,
//! `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`,
//! `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go`): each field entry
//! of the table records the `+listType`/`+listMapKey`/`+mapType` markers and the
//! `patchStrategy`/`patchMergeKey` tags of that field, with the source type named in the
//! table's comments. Fields not in the table get the defaults (structs granular, lists
//! atomic for server-side apply and replaced by strategic merge patch), which is also what
//! Kubernetes gives fields without markers.
//!
//! Table format: `types.<Name>.fields.<field>` with
//! - `type: <Name>` — the value is a struct of a named type;
//! - `list: atomic|set|map`, `keys: [..]`, `keyDefaults: {..}`, `item: <Name>` — a list;
//! - `values: <Name>|scalar` — a map with arbitrary keys (`map: atomic` makes it atomic);
//! - `map: atomic|granular` — map type of a struct or map;
//! - `smp: merge|replace|merge,retainKeys`, `mergeKey: <field>` — SMP metadata;
//! - `fields: {..}` — an inline anonymous struct.
//!
//! `kinds` lists each served kind's group, kind, root type and zero object (`empty`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::MergeError;
use crate::model::{Model, ModelTypeInfo, Node, UNKNOWN};
use crate::types::{ListType, MapType, PatchMeta, PatchStrategy, TypeInfo};

const TABLE_YAML: &str = include_str!("../data/builtin.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct FieldSpec {
    #[serde(rename = "type")]
    ty: Option<String>,
    list: Option<String>,
    keys: Option<Vec<String>>,
    key_defaults: Option<BTreeMap<String, Value>>,
    item: Option<String>,
    values: Option<String>,
    map: Option<String>,
    smp: Option<String>,
    merge_key: Option<String>,
    fields: Option<BTreeMap<String, FieldSpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TypeSpec {
    #[serde(default)]
    fields: BTreeMap<String, FieldSpec>,
    map: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindSpec {
    group: String,
    kind: String,
    #[serde(rename = "type")]
    ty: String,
    empty: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TableSpec {
    types: BTreeMap<String, TypeSpec>,
    kinds: Vec<KindSpec>,
}

/// Materialises named types of a [`TableSpec`] into a [`Model`].
pub(crate) struct Builder<'a> {
    pub model: Model,
    spec: &'a TableSpec,
    named: HashMap<String, usize>,
}

impl<'a> Builder<'a> {
    pub fn new(spec: &'a TableSpec) -> Self {
        Builder {
            model: Model::new(),
            spec,
            named: HashMap::new(),
        }
    }

    pub fn with_model(spec: &'a TableSpec, model: Model) -> Self {
        Builder {
            model,
            spec,
            named: HashMap::new(),
        }
    }

    /// Node of the named type `name` (built on first use; recursion-safe).
    pub fn named(&mut self, name: &str) -> Result<usize, MergeError> {
        if name == "scalar" {
            return Ok(UNKNOWN);
        }
        if let Some(&i) = self.named.get(name) {
            return Ok(i);
        }
        let spec = self.spec;
        let ty = spec
            .types
            .get(name)
            .ok_or_else(|| MergeError::internal(format!("builtin table: unknown type {name}")))?;
        let idx = self.model.add(Node::default());
        self.named.insert(name.to_string(), idx);
        let mut fields = crate::model::FieldMap::default();
        for (fname, f) in &ty.fields {
            fields.insert(fname.clone(), self.field(f, fname)?);
        }
        let map = parse_map_type(ty.map.as_deref())?;
        let n = &mut self.model.nodes[idx];
        n.fields = fields;
        n.map = map;
        Ok(idx)
    }

    fn field(&mut self, f: &FieldSpec, name: &str) -> Result<usize, MergeError> {
        let plain = f.list.is_none()
            && f.values.is_none()
            && f.map.is_none()
            && f.smp.is_none()
            && f.fields.is_none();
        if plain {
            return match &f.ty {
                Some(t) => self.named(t),
                None => Ok(UNKNOWN),
            };
        }
        let mut n = Node::default();
        if let Some(t) = &f.ty {
            n.fields_from = Some(self.named(t)?);
        }
        if let Some(inline) = &f.fields {
            for (k, v) in inline {
                let c = self.field(v, k)?;
                n.fields.insert(k.clone(), c);
            }
        }
        n.map = parse_map_type(f.map.as_deref())?;
        if let Some(v) = &f.values {
            n.is_map = true;
            n.elem = Some(self.named(v)?);
        }
        if let Some(l) = &f.list {
            n.list = match l.as_str() {
                "atomic" => ListType::Atomic,
                "set" => ListType::Set,
                "map" => ListType::Map {
                    keys: f.keys.clone().unwrap_or_default(),
                },
                other => {
                    return Err(MergeError::internal(format!(
                        "builtin table: field {name}: bad list type {other}"
                    )))
                }
            };
            if let Some(d) = &f.key_defaults {
                n.key_defaults = d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            }
            if let Some(item) = &f.item {
                n.elem = Some(self.named(item)?);
            }
        }
        if let Some(s) = &f.smp {
            let retain = s.contains("retainKeys");
            let strategy = if s.split(',').any(|p| p == "merge") {
                PatchStrategy::Merge
            } else {
                PatchStrategy::Replace
            };
            if f.list.is_some() {
                n.list_smp = Some(PatchMeta {
                    strategy,
                    merge_key: f.merge_key.clone(),
                    retain_keys: retain,
                });
            } else {
                n.map_strategy = Some(strategy);
            }
        }
        Ok(self.model.add(n))
    }
}

fn parse_map_type(s: Option<&str>) -> Result<MapType, MergeError> {
    match s {
        None | Some("granular") => Ok(MapType::Granular),
        Some("atomic") => Ok(MapType::Atomic),
        Some(o) => Err(MergeError::internal(format!(
            "builtin table: bad map type {o}"
        ))),
    }
}

/// The parsed built-in table: one shared model and a root per kind.
#[derive(Debug)]
pub struct BuiltinTable {
    kinds: HashMap<(String, String), Arc<ModelTypeInfo>>,
}

impl BuiltinTable {
    fn load() -> Result<BuiltinTable, MergeError> {
        let spec = parse_spec()?;
        let mut b = Builder::new(&spec);
        let mut roots = Vec::new();
        for k in &spec.kinds {
            let root = b.named(&k.ty)?;
            if !b.model.nodes[root].fields.contains_key("metadata") {
                let meta = b.named("ObjectMeta")?;
                b.model.nodes[root].fields.insert("metadata".into(), meta);
            }
            roots.push((k, root));
        }
        let model = Arc::new(b.model);
        let kinds = roots
            .into_iter()
            .map(|(k, root)| {
                let info = ModelTypeInfo {
                    model: model.clone(),
                    root,
                    empty: k.empty.clone().unwrap_or_else(|| json!({})),
                };
                ((k.group.clone(), k.kind.clone()), Arc::new(info))
            })
            .collect();
        Ok(BuiltinTable { kinds })
    }

    /// Type info of a built-in kind (`group` is `""` for the core group).
    pub fn get(&self, group: &str, kind: &str) -> Option<Arc<ModelTypeInfo>> {
        self.kinds
            .get(&(group.to_string(), kind.to_string()))
            .cloned()
    }

    /// Every `(group, kind)` the table covers.
    pub fn kinds(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = self.kinds.keys().cloned().collect();
        v.sort();
        v
    }
}

pub(crate) fn parse_spec() -> Result<TableSpec, MergeError> {
    serde_saphyr::from_str(TABLE_YAML)
        .map_err(|e| MergeError::internal(format!("builtin table: {e}")))
}

static TABLE: OnceLock<Result<BuiltinTable, MergeError>> = OnceLock::new();

/// The built-in table, parsed on first use.
pub fn builtin_table() -> Result<&'static BuiltinTable, MergeError> {
    TABLE
        .get_or_init(BuiltinTable::load)
        .as_ref()
        .map_err(Clone::clone)
}

/// Type info of a built-in kind, or `None` when the table has no such kind (use
/// [`crate::DefaultTypeInfo`] or a CRD schema then).
pub fn builtin_type_info(group: &str, kind: &str) -> Option<Arc<dyn TypeInfo>> {
    let t = builtin_table().ok()?.get(group, kind)?;
    Some(t as Arc<dyn TypeInfo>)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::types::PathElement::{Field, Item};

    #[test]
    fn table_covers_served_kinds() {
        let t = builtin_table().unwrap();
        for (g, k) in [
            ("", "Namespace"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "ServiceAccount"),
            ("", "Event"),
            ("", "Pod"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("batch", "Job"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("", "PodTemplate"),
            ("", "PersistentVolumeClaim"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("sync.kplane.io", "SyncTarget"),
        ] {
            let ti = t.get(g, k).unwrap_or_else(|| panic!("{g}/{k} missing"));
            let fin = [Field("metadata"), Field("finalizers")];
            assert_eq!(ti.list_type(&fin), ListType::Set, "{g}/{k}");
            assert!(ti.is_map(&[Field("metadata"), Field("labels")]));
        }
        assert!(builtin_type_info("apps", "Deployment").is_none());
        let st = builtin_type_info("sync.kplane.io", "SyncTarget").unwrap();
        let conditions = [Field("status"), Field("conditions")];
        assert_eq!(
            st.list_type(&conditions),
            ListType::Map {
                keys: vec!["type".into()]
            }
        );
        assert_eq!(
            st.list_patch_meta(&conditions).merge_key.as_deref(),
            Some("type")
        );
        let resources = [Field("spec"), Field("resources")];
        assert_eq!(st.list_type(&resources), ListType::Atomic);
    }

    #[test]
    fn network_policy_facts() {
        let np = builtin_type_info("networking.k8s.io", "NetworkPolicy").unwrap();
        for list in ["ingress", "egress", "policyTypes"] {
            assert_eq!(
                np.list_type(&[Field("spec"), Field(list)]),
                ListType::Atomic,
                "{list}"
            );
        }
        let selector = [Field("spec"), Field("podSelector")];
        assert_eq!(np.map_type(&selector), MapType::Atomic);
        assert_eq!(
            np.empty_object(),
            json!({"metadata": {}, "spec": {"podSelector": {}}})
        );
    }

    #[test]
    fn pod_facts() {
        let pod = builtin_type_info("", "Pod").unwrap();
        let keys = |k: &[&str]| ListType::Map {
            keys: k.iter().map(|s| s.to_string()).collect(),
        };
        let containers = [Field("spec"), Field("containers")];
        assert_eq!(pod.list_type(&containers), keys(&["name"]));
        assert_eq!(
            pod.list_patch_meta(&containers).merge_key.as_deref(),
            Some("name")
        );
        let status = |f: &'static str| [Field("status"), Field(f)];
        assert_eq!(pod.list_type(&status("conditions")), keys(&["type"]));
        assert_eq!(pod.list_type(&status("podIPs")), keys(&["ip"]));
        assert_eq!(pod.list_type(&status("hostIPs")), ListType::Atomic);
        assert_eq!(
            pod.list_patch_meta(&status("hostIPs")).merge_key.as_deref(),
            Some("ip")
        );
        assert_eq!(
            pod.list_type(&status("containerStatuses")),
            ListType::Atomic
        );
        assert_eq!(
            pod.empty_object(),
            json!({"metadata": {}, "spec": {"containers": null}, "status": {}})
        );
    }

    #[test]
    fn job_pod_spec_facts() {
        let job = builtin_type_info("batch", "Job").unwrap();
        let pod = [Field("spec"), Field("template"), Field("spec")];
        let at = |rest: &[crate::types::PathElement<'static>]| {
            let mut p = pod.to_vec();
            p.extend_from_slice(rest);
            p
        };
        let keys = |k: &[&str]| ListType::Map {
            keys: k.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(job.list_type(&at(&[Field("containers")])), keys(&["name"]));
        let ports = at(&[Field("containers"), Item, Field("ports")]);
        assert_eq!(job.list_type(&ports), keys(&["containerPort", "protocol"]));
        assert_eq!(job.key_default(&ports, "protocol"), Some("TCP".into()));
        assert_eq!(
            job.list_patch_meta(&ports).merge_key.as_deref(),
            Some("containerPort")
        );
        let env = at(&[Field("initContainers"), Item, Field("env")]);
        assert_eq!(job.list_type(&env), keys(&["name"]));
        assert_eq!(
            job.list_type(&at(&[Field("tolerations")])),
            ListType::Atomic
        );
        assert_eq!(
            job.list_patch_meta(&at(&[Field("tolerations")])).strategy,
            PatchStrategy::Replace
        );
        assert!(job.list_patch_meta(&at(&[Field("volumes")])).retain_keys);
        assert_eq!(job.map_type(&at(&[Field("nodeSelector")])), MapType::Atomic);
        let mounts = at(&[Field("containers"), Item, Field("volumeMounts")]);
        assert_eq!(job.list_type(&mounts), keys(&["mountPath"]));
    }
}
