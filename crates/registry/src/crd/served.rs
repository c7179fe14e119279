//! The served resource types of a CRD ([`resource_types`]): one `ResourceType` per served
//! version, with the custom resource strategy, its schema and its conversion.

use std::sync::Arc;

use kplane_schema::SchemaCache;
use serde_json::{json, Value};

use super::info::{CustomInfo, PrinterColumn, ScalePaths};
use super::{
    definition_name, has_default, is_established, recommended_version, s, str_list, versions,
};
use crate::catalog::ResourceType;
use crate::meta;
use kplane_schema::CompileOptions;

/// The resource types an established CRD serves (one per served version).
pub fn resource_types(crd: &Value, cache: &SchemaCache) -> Vec<ResourceType> {
    if !is_established(crd) {
        return vec![];
    }
    let group = s(crd, "/spec/group").to_string();
    let names = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let plural = s(&names, "/plural").to_string();
    let kind = s(&names, "/kind").to_string();
    let terminating = meta::is_deleting(crd);
    let storage_version = versions(crd)
        .iter()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .map(|v| s(v, "/name").to_string())
        .unwrap_or_default();
    let webhook = crate::conversion::WebhookConversion::of_crd(crd).map(Arc::new);
    let storage_schema = webhook.as_ref().and_then(|_| {
        let v = versions(crd)
            .iter()
            .find(|v| s(v, "/name") == storage_version)?;
        let raw = v.pointer("/schema/openAPIV3Schema")?;
        let serving = CompileOptions::default().without_cost_limits();
        cache.get_or_compile(raw, "openAPIV3Schema", &serving).ok()
    });
    let mut out = Vec::new();
    for v in versions(crd)
        .iter()
        .filter(|v| v.get("served") == Some(&Value::Bool(true)))
    {
        let version = s(v, "/name").to_string();
        let raw_schema = v
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // serving checks no estimated cost (kube-apiserver's handler compiles the rules
        // with the runtime limits only), so a stored rule over today's static limits works
        let serving = CompileOptions::default().without_cost_limits();
        let compiled = cache
            .get_or_compile(&raw_schema, "openAPIV3Schema", &serving)
            .ok();
        let columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: s(c, "/name").to_string(),
                        type_: s(c, "/type").to_string(),
                        format: s(c, "/format").to_string(),
                        description: s(c, "/description").to_string(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: s(c, "/jsonPath").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let scale = v.pointer("/subresources/scale").map(|sc| ScalePaths {
            spec_replicas: s(sc, "/specReplicasPath").to_string(),
            status_replicas: s(sc, "/statusReplicasPath").to_string(),
            label_selector: sc
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        let deprecation_warning = (v.get("deprecated") == Some(&Value::Bool(true))).then(|| {
            v.get("deprecationWarning")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    let mut msg = format!("{group}/{version} {kind} is deprecated");
                    if let Some(better) = recommended_version(crd) {
                        msg.push_str(&format!("; use {group}/{better} {kind}"));
                    }
                    msg
                })
        });
        let has_status = v.pointer("/subresources/status").is_some();
        let mut subresources = Vec::new();
        if has_status {
            subresources.push(("status".to_string(), vec!["get", "patch", "update"]));
        }
        if scale.is_some() {
            subresources.push(("scale".to_string(), vec!["get", "patch", "update"]));
        }
        let info = CustomInfo {
            crd_name: meta::name_of(crd).to_string(),
            has_defaults: has_default(&raw_schema, 0),
            schema: compiled,
            raw_schema,
            columns,
            scale,
            storage_version: storage_version.clone(),
            deprecation_warning,
            terminating,
            merge_types: Default::default(),
            webhook: webhook.clone(),
            storage_schema: storage_schema.clone(),
        };
        // While the CRD terminates only create is refused: updates must still work so
        // that finalizers on the remaining instances can be removed.
        let verbs: Vec<&'static str> = if terminating {
            vec![
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        } else {
            vec![
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
        };
        out.push(ResourceType {
            group: group.clone(),
            version: version.clone(),
            kind: kind.clone(),
            list_kind: names
                .get("listKind")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{kind}List")),
            plural: plural.clone(),
            singular: s(&names, "/singular").to_string(),
            namespaced: s(crd, "/spec/scope") == "Namespaced",
            short_names: str_list(names.get("shortNames")),
            categories: str_list(names.get("categories")),
            verbs,
            subresources,
            schema_name: definition_name(&group, &version, &kind),
            storage_resource: format!("{group}/{plural}"),
            strategy: Arc::new(crate::strategies::Custom),
            conversion: Some(Arc::new(crate::strategies::CustomConversion)),
            status_subresource: has_status,
            selectable_fields: v
                .get("selectableFields")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|f| s(f, "/jsonPath").trim_start_matches('.').to_string())
                        .collect()
                })
                .unwrap_or_default(),
            custom: Some(Arc::new(info)),
        });
    }
    out
}
