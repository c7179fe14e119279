//! Integration tests of the published OpenAPI v3 documents.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use kplane_openapi::{
    builtin_definitions, builtin_served_resources_for_tests, group_version_path, OpenApiV3,
    SchemaSource, ServedResource,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha512};

const METHODS: &[&str] = &["get", "put", "post", "patch", "delete"];

fn doc(api: &OpenApiV3, gv: &str) -> Value {
    let (bytes, _) = api.group_version(gv).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn build_builtins() -> OpenApiV3 {
    OpenApiV3::build(&builtin_served_resources_for_tests()).unwrap()
}

/// Checks that every `$ref` of `doc` points into its own `components.schemas`, that no `$ref`
/// has sibling keywords, and that no JSON-Schema-only construct is left.
fn check_structure(gv: &str, doc: &Value) {
    assert_eq!(doc["openapi"], "3.0.0", "{gv}");
    assert!(doc["info"]["title"].is_string(), "{gv}");
    let schemas = doc["components"]["schemas"]
        .as_object()
        .unwrap_or_else(|| panic!("{gv}: no components.schemas"));
    let mut problems = Vec::new();
    walk(doc, "", &mut |path, obj| {
        // A non-string `$ref` is a property named "$ref" (JSONSchemaProps has one).
        if let Some(reference) = obj.get("$ref").filter(|r| r.is_string()) {
            match reference
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                Some(name) if schemas.contains_key(name) => {}
                _ => problems.push(format!("{path}: unresolved $ref {reference}")),
            }
            if obj.len() > 1 {
                problems.push(format!("{path}: $ref with siblings"));
            }
        }
    });
    for (name, schema) in schemas {
        walk_schema(schema, name, &mut |path, obj| {
            for key in ["$schema", "definitions", "$defs", "const"] {
                if obj.contains_key(key) {
                    problems.push(format!("{path}: has {key}"));
                }
            }
            if let Some(ty) = obj.get("type") {
                if !ty.is_string() {
                    problems.push(format!("{path}: non-string type {ty}"));
                }
            }
        });
    }
    assert!(problems.is_empty(), "{gv}: {problems:#?}");
}

/// Visits every JSON object of `value` (including data), with a JSON-pointer-ish path.
fn walk(value: &Value, path: &str, f: &mut impl FnMut(&str, &serde_json::Map<String, Value>)) {
    match value {
        Value::Object(obj) => {
            f(path, obj);
            for (k, v) in obj {
                walk(v, &format!("{path}/{k}"), f);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}/{i}"), f);
            }
        }
        _ => {}
    }
}

/// Visits schema objects only (following schema keywords, not data or property names).
fn walk_schema(
    value: &Value,
    path: &str,
    f: &mut impl FnMut(&str, &serde_json::Map<String, Value>),
) {
    let Value::Object(obj) = value else { return };
    f(path, obj);
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(children)) = obj.get(key) {
            for (k, v) in children {
                walk_schema(v, &format!("{path}.{k}"), f);
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = obj.get(key) {
            for (i, v) in children.iter().enumerate() {
                walk_schema(v, &format!("{path}.{key}[{i}]"), f);
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(v) = obj.get(key) {
            walk_schema(v, &format!("{path}.{key}"), f);
        }
    }
}

fn gvk_list(schema: &Value) -> Vec<(String, String, String)> {
    schema["x-kubernetes-group-version-kind"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|g| {
                    (
                        g["group"].as_str().unwrap().to_owned(),
                        g["version"].as_str().unwrap().to_owned(),
                        g["kind"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn find_kind<'a>(doc: &'a Value, group: &str, version: &str, kind: &str) -> Option<&'a Value> {
    let wanted = (group.to_owned(), version.to_owned(), kind.to_owned());
    doc["components"]["schemas"]
        .as_object()?
        .values()
        .find(|s| gvk_list(s).contains(&wanted))
}

fn widget(schema: Value) -> ServedResource {
    kplane_openapi::widget_for_tests("v1", &["status", "scale"], schema)
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "description": "A widget.",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "format": "int64"},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                },
                "required": ["size"],
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    })
}

#[test]
fn index_lists_every_group_version_with_its_hash() {
    let api = build_builtins();
    let index: Value = serde_json::from_slice(&api.index_json()).unwrap();
    let paths = index["paths"].as_object().unwrap();
    let expected: BTreeSet<String> = builtin_served_resources_for_tests()
        .iter()
        .map(|r| group_version_path(&r.group, &r.version))
        .collect();
    assert_eq!(paths.keys().cloned().collect::<BTreeSet<_>>(), expected);
    assert_eq!(
        api.group_version_paths()
            .map(String::from)
            .collect::<BTreeSet<_>>(),
        expected
    );
    for (gv, entry) in paths {
        let (bytes, hash) = api.group_version(gv).unwrap();
        assert_eq!(
            entry["serverRelativeURL"],
            format!("/openapi/v3/{gv}?hash={hash}")
        );
        assert_eq!(hash, hex::encode_upper(Sha512::digest(&bytes)));
        assert_eq!(hash.len(), 128);
    }
    assert!(api.group_version("apis/apps/v1").is_none());
    assert!(api.group_version("/api/v1").is_none());
}

#[test]
fn every_document_is_structurally_valid() {
    let api = build_builtins();
    for gv in api.group_version_paths() {
        check_structure(gv, &doc(&api, gv));
    }
}

#[test]
fn builtin_definitions_resolve_and_have_no_json_schema_leftovers() {
    let defs = builtin_definitions();
    assert!(defs.len() > 500, "only {} definitions", defs.len());
    let wrapped =
        json!({"openapi": "3.0.0", "info": {"title": "t"}, "components": {"schemas": defs}});
    check_structure("builtin", &wrapped);
}

#[test]
fn every_served_kind_has_paths_and_schemas() {
    let api = build_builtins();
    for r in builtin_served_resources_for_tests() {
        let gv = group_version_path(&r.group, &r.version);
        let d = doc(&api, &gv);
        let kind = find_kind(&d, &r.group, &r.version, &r.kind)
            .unwrap_or_else(|| panic!("{gv}: no schema for {}", r.kind));
        let props = &kind["properties"];
        assert_eq!(props["apiVersion"]["type"], "string", "{}", r.kind);
        assert_eq!(props["kind"]["type"], "string", "{}", r.kind);
        assert_eq!(
            props["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "{}",
            r.kind
        );
        assert!(props["metadata"]["description"].is_string(), "{}", r.kind);
        assert!(
            !kind["required"]
                .as_array()
                .is_some_and(|req| req.contains(&json!("metadata"))),
            "{} requires metadata",
            r.kind
        );
        let list_kind = format!("{}List", r.kind);
        let list = find_kind(&d, &r.group, &r.version, &list_kind);
        if r.verbs.iter().any(|v| v == "list") {
            let list = list.unwrap_or_else(|| panic!("{gv}: no {list_kind}"));
            assert_eq!(list["required"], json!(["items"]));
        } else {
            assert!(list.is_none(), "{gv}: unexpected {list_kind}");
        }

        let prefix = format!("/{gv}");
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        let paths = &d["paths"];
        assert_eq!(paths[&collection]["post"]["x-kubernetes-action"], "post");
        if r.verbs.iter().any(|v| v == "list") {
            assert_eq!(paths[&collection]["get"]["x-kubernetes-action"], "list");
            assert_eq!(
                paths[&collection]["delete"]["x-kubernetes-action"],
                "deletecollection"
            );
            let item = &paths[format!("{collection}/{{name}}")];
            for (method, action) in [
                ("get", "get"),
                ("put", "put"),
                ("patch", "patch"),
                ("delete", "delete"),
            ] {
                assert_eq!(item[method]["x-kubernetes-action"], action, "{collection}");
            }
            if r.namespaced {
                let all = &paths[format!("{prefix}/{}", r.plural)]["get"];
                assert_eq!(all["x-kubernetes-action"], "list");
                let names: Vec<&str> = all["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["name"].as_str().unwrap())
                    .collect();
                for wanted in [
                    "labelSelector",
                    "fieldSelector",
                    "limit",
                    "continue",
                    "resourceVersion",
                    "resourceVersionMatch",
                    "watch",
                    "timeoutSeconds",
                    "allowWatchBookmarks",
                    "sendInitialEvents",
                ] {
                    assert!(names.contains(&wanted), "{collection}: no {wanted}");
                }
            }
        } else {
            assert!(paths.get(format!("{collection}/{{name}}")).is_none());
        }
        for sub in &r.subresources {
            assert!(
                paths.get(format!("{collection}/{{name}}/{sub}")).is_some(),
                "{collection}: no {sub}"
            );
        }
    }
}

#[test]
fn every_operation_is_complete() {
    let api = build_builtins();
    let mut ids = BTreeSet::new();
    for gv in api.group_version_paths() {
        let d = doc(&api, gv);
        for (path, item) in d["paths"].as_object().unwrap() {
            for method in METHODS {
                let Some(op) = item.get(*method) else {
                    continue;
                };
                let id = op["operationId"].as_str().unwrap();
                assert!(ids.insert(id.to_owned()), "duplicate operationId {id}");
                assert!(op["responses"]["200"].is_object(), "{path} {method}");
                if path.ends_with('/') {
                    continue; // the group-version's resource list
                }
                assert!(op["x-kubernetes-action"].is_string(), "{path} {method}");
                assert!(
                    op["x-kubernetes-group-version-kind"]["kind"].is_string(),
                    "{path} {method}"
                );
            }
        }
    }
    assert!(ids.contains("listCoreV1NamespacedConfigMap"));
    assert!(ids.contains("listCoreV1ConfigMapForAllNamespaces"));
    assert!(ids.contains("patchCoreV1NamespaceStatus"));
    assert!(ids.contains("replaceCoreV1NamespaceFinalize"));
    assert!(ids.contains("createCoreV1NamespacedServiceAccountToken"));
    assert!(ids.contains("deleteRbacAuthorizationV1CollectionNamespacedRole"));
    assert!(ids.contains("createAuthorizationV1SelfSubjectAccessReview"));
}

#[test]
fn patch_operations_carry_gvk_and_field_validation() {
    let api = build_builtins();
    let mut patched = BTreeSet::new();
    for gv in api.group_version_paths() {
        let d = doc(&api, gv);
        for (path, item) in d["paths"].as_object().unwrap() {
            let Some(op) = item.get("patch") else {
                continue;
            };
            let gvk = &op["x-kubernetes-group-version-kind"];
            assert!(
                gvk["group"].is_string() && gvk["version"].is_string(),
                "{path}"
            );
            patched.insert(gvk["kind"].as_str().unwrap().to_owned());
            let params = op["parameters"].as_array().unwrap();
            for name in ["fieldValidation", "fieldManager", "dryRun", "force"] {
                assert!(
                    params
                        .iter()
                        .any(|p| p["name"] == name && p["in"] == "query"),
                    "{path}: PATCH lacks {name}"
                );
            }
            let content = op["requestBody"]["content"].as_object().unwrap();
            let types: BTreeSet<&str> = content.keys().map(String::as_str).collect();
            assert_eq!(
                types,
                BTreeSet::from([
                    "application/apply-patch+yaml",
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                ]),
                "{path}"
            );
        }
    }
    for r in builtin_served_resources_for_tests() {
        if r.verbs.iter().any(|v| v == "patch") {
            assert!(patched.contains(&r.kind), "no PATCH for {}", r.kind);
        }
    }
    // kubectl checks the Namespace PATCH of api/v1 for CRs (O4).
    let v1 = doc(&api, "api/v1");
    let ns_patch = &v1["paths"]["/api/v1/namespaces/{name}"]["patch"];
    assert_eq!(
        ns_patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Namespace"})
    );
}

#[test]
fn hash_changes_when_a_resource_is_added() {
    let mut resources = builtin_served_resources_for_tests();
    let before = OpenApiV3::build(&resources).unwrap();
    resources.push(ServedResource {
        group: String::new(),
        version: "v1".into(),
        kind: "Service".into(),
        plural: "services".into(),
        namespaced: true,
        verbs: vec!["get".into(), "list".into()],
        subresources: vec!["status".into()],
        schema: SchemaSource::BuiltIn("io.k8s.api.core.v1.Service".into()),
    });
    let after = OpenApiV3::build(&resources).unwrap();
    let hash = |api: &OpenApiV3, gv: &str| api.group_version(gv).unwrap().1.to_owned();
    assert_ne!(hash(&before, "api/v1"), hash(&after, "api/v1"));
    assert_eq!(
        hash(&before, "apis/batch/v1"),
        hash(&after, "apis/batch/v1")
    );
    assert_ne!(before.index_json(), after.index_json());
    let d = doc(&after, "api/v1");
    assert!(d["paths"]["/api/v1/namespaces/{namespace}/services/{name}/status"]["get"].is_object());
    assert!(find_kind(&d, "", "v1", "Service").is_some());
}

#[test]
fn output_is_deterministic() {
    let resources = builtin_served_resources_for_tests();
    let a = OpenApiV3::build(&resources).unwrap();
    let b = OpenApiV3::build(&resources).unwrap();
    let mut reversed = resources.clone();
    reversed.reverse();
    let c = OpenApiV3::build(&reversed).unwrap();
    assert_eq!(a.index_json(), b.index_json());
    assert_eq!(a.index_json(), c.index_json());
    for gv in a.group_version_paths() {
        let (x, hx) = a.group_version(gv).unwrap();
        let (y, hy) = b.group_version(gv).unwrap();
        let (z, _) = c.group_version(gv).unwrap();
        assert_eq!(x, y, "{gv}");
        assert_eq!(x, z, "{gv}");
        assert_eq!(hx, hy);
    }
    // Keys are sorted in the serialized bytes.
    let (bytes, _) = a.group_version("apis/batch/v1").unwrap();
    let text = std::str::from_utf8(&bytes).unwrap();
    let components = text.find("\"components\"").unwrap();
    let paths = text.find("\"paths\"").unwrap();
    assert!(components < paths);
}

#[test]
fn special_types_match_upstream() {
    let defs = builtin_definitions();
    let d = |name: &str| {
        let mut v = defs[name].clone();
        v.as_object_mut().unwrap().remove("description");
        v
    };
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1";
    assert_eq!(
        d(&format!("{meta}.Time")),
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        d(&format!("{meta}.MicroTime")),
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(d(&format!("{meta}.FieldsV1")), json!({"type": "object"}));
    assert_eq!(
        d("io.k8s.apimachinery.pkg.runtime.RawExtension"),
        json!({"type": "object"})
    );
    assert_eq!(
        d("io.k8s.apimachinery.pkg.api.resource.Quantity"),
        json!({"oneOf": [{"type": "string"}, {"type": "number"}]})
    );
    assert_eq!(
        d("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
        json!({
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        })
    );
    assert_eq!(
        d("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"),
        json!({})
    );
    for name in ["Time", "Quantity", "IntOrString", "ConfigMap", "JSON"] {
        let found = defs.iter().find(|(k, _)| k.ends_with(&format!(".{name}")));
        assert!(found.unwrap().1["description"].is_string(), "{name}");
    }
    // Kinds: descriptions, gvk, metadata wrapped like upstream.
    let cm = &defs["io.k8s.api.core.v1.ConfigMap"];
    assert!(cm["description"].as_str().unwrap().contains("ConfigMap"));
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    assert_eq!(cm["properties"]["metadata"]["default"], json!({}));
    assert!(cm.get("required").is_none());
    let list = &defs["io.k8s.api.core.v1.ConfigMapList"];
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
    assert_eq!(
        defs["io.k8s.api.rbac.v1.RoleBinding"]["required"],
        json!(["roleRef"])
    );
}

#[test]
fn custom_resources_are_published_like_crds() {
    let mut resources = builtin_served_resources_for_tests();
    resources.push(widget(widget_schema()));
    let api = OpenApiV3::build(&resources).unwrap();
    let d = doc(&api, "apis/example.com/v1");
    check_structure("apis/example.com/v1", &d);
    let schemas = &d["components"]["schemas"];
    let w = &schemas["com.example.v1.Widget"];
    assert_eq!(w["type"], "object");
    assert_eq!(w["description"], "A widget.");
    assert_eq!(
        w["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(w["properties"]["apiVersion"]["type"], "string");
    assert_eq!(w["properties"]["kind"]["type"], "string");
    assert_eq!(
        w["properties"]["metadata"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
    );
    assert_eq!(w["properties"]["spec"]["required"], json!(["size"]));
    assert_eq!(
        w["properties"]["spec"]["properties"]["tags"]["x-kubernetes-list-type"],
        "set"
    );
    assert_eq!(
        w["properties"]["status"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    let list = &schemas["com.example.v1.WidgetList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "WidgetList"}])
    );
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/components/schemas/com.example.v1.Widget"
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    assert!(schemas["io.k8s.api.autoscaling.v1.Scale"].is_object());

    let item = &d["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    let consumes: BTreeSet<&str> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let cr_types = BTreeSet::from([
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]);
    assert_eq!(consumes, cr_types);
    assert_eq!(patch["operationId"], "patchExampleComV1NamespacedWidget");
    let produces: BTreeSet<&str> = item["get"]["responses"]["200"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        produces,
        BTreeSet::from(["application/json", "application/yaml"])
    );
    let status = &d["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"];
    let status_types: BTreeSet<&str> = status["patch"]["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(status_types, cr_types);
    let scale = &d["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"];
    assert_eq!(
        scale["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );

    // The built-in documents are unaffected by the CRD.
    let plain = build_builtins();
    assert_eq!(
        plain.group_version("api/v1").unwrap().1,
        api.group_version("api/v1").unwrap().1
    );
}

#[test]
fn custom_schema_without_type_gets_object() {
    let api =
        OpenApiV3::build(&[widget(json!({"properties": {"spec": {"type": "object"}}}))]).unwrap();
    let d = doc(&api, "apis/example.com/v1");
    check_structure("apis/example.com/v1", &d);
    assert_eq!(
        d["components"]["schemas"]["com.example.v1.Widget"]["type"],
        "object"
    );
}

#[test]
fn invalid_input_is_rejected() {
    let mut unknown = builtin_served_resources_for_tests();
    unknown[0].schema = SchemaSource::BuiltIn("io.k8s.api.core.v1.NoSuchKind".into());
    assert!(matches!(
        OpenApiV3::build(&unknown),
        Err(kplane_openapi::Error::UnknownDefinition { .. })
    ));

    let mut duplicate = builtin_served_resources_for_tests();
    duplicate.push(duplicate[1].clone());
    assert!(matches!(
        OpenApiV3::build(&duplicate),
        Err(kplane_openapi::Error::DuplicateResource(_))
    ));

    assert!(matches!(
        OpenApiV3::build(&[widget(json!("not a schema"))]),
        Err(kplane_openapi::Error::InvalidCustomSchema { .. })
    ));
    assert!(matches!(
        OpenApiV3::build(&[widget(json!({"type": "string"}))]),
        Err(kplane_openapi::Error::InvalidCustomSchema { .. })
    ));
    let mut bad_plural = widget(widget_schema());
    bad_plural.plural = "wid/gets".into();
    assert!(OpenApiV3::build(&[bad_plural]).is_err());
}

#[test]
fn empty_build_has_an_empty_index() {
    let api = OpenApiV3::build(&[]).unwrap();
    assert_eq!(&*api.index_json(), br#"{"paths":{}}"#);
}

#[test]
fn identical_documents_are_shared_between_builds() {
    let a = build_builtins();
    let mut resources = builtin_served_resources_for_tests();
    resources.reverse();
    resources.push(widget(widget_schema()));
    let b = OpenApiV3::build(&resources).unwrap();
    for gv in a.group_version_paths() {
        let (x, hx) = a.group_version(gv).unwrap();
        let (y, hy) = b.group_version(gv).unwrap();
        assert!(std::sync::Arc::ptr_eq(&x, &y), "{gv} not shared");
        assert_eq!(hx, hy);
    }
    // A different CRD schema gives a different document.
    let mut other = widget_schema();
    other["properties"]["spec"]["properties"]["color"] = json!({"type": "string"});
    let c = OpenApiV3::build(&[widget(other)]).unwrap();
    assert_ne!(
        b.group_version("apis/example.com/v1").unwrap().1,
        c.group_version("apis/example.com/v1").unwrap().1
    );
}

#[test]
fn network_policies_are_published_under_networking_v1_as_upstream_names_them() {
    let api = build_builtins();
    let d = doc(&api, "apis/networking.k8s.io/v1");
    check_structure("apis/networking.k8s.io/v1", &d);
    let op = |path: &str, method: &str| {
        d["paths"][path][method]["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("no {method} {path}"))
            .to_owned()
    };
    let ns = "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies";
    assert_eq!(op(ns, "get"), "listNetworkingV1NamespacedNetworkPolicy");
    assert_eq!(op(ns, "post"), "createNetworkingV1NamespacedNetworkPolicy");
    assert_eq!(
        op(&format!("{ns}/{{name}}"), "patch"),
        "patchNetworkingV1NamespacedNetworkPolicy"
    );
    assert_eq!(
        op("/apis/networking.k8s.io/v1/networkpolicies", "get"),
        "listNetworkingV1NetworkPolicyForAllNamespaces"
    );
    let spec = &d["components"]["schemas"]["io.k8s.api.networking.v1.NetworkPolicySpec"];
    for field in ["podSelector", "ingress", "egress", "policyTypes"] {
        assert!(spec["properties"].get(field).is_some(), "{field}: {spec}");
    }
    // 1.32's NetworkPolicy has no status.
    let np = find_kind(&d, "networking.k8s.io", "v1", "NetworkPolicy").unwrap();
    assert!(np["properties"].get("status").is_none(), "{np}");
}

#[test]
fn pods_are_published_under_core_v1_with_their_status_as_upstream_names_them() {
    let api = build_builtins();
    let d = doc(&api, "api/v1");
    check_structure("api/v1", &d);
    let op = |path: &str, method: &str| {
        d["paths"][path][method]["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("no {method} {path}"))
            .to_owned()
    };
    let ns = "/api/v1/namespaces/{namespace}/pods";
    assert_eq!(op(ns, "get"), "listCoreV1NamespacedPod");
    assert_eq!(op(ns, "post"), "createCoreV1NamespacedPod");
    assert_eq!(
        op(&format!("{ns}/{{name}}"), "delete"),
        "deleteCoreV1NamespacedPod"
    );
    assert_eq!(
        op(&format!("{ns}/{{name}}/status"), "patch"),
        "patchCoreV1NamespacedPodStatus"
    );
    assert_eq!(op("/api/v1/pods", "get"), "listCoreV1PodForAllNamespaces");
    let status = &d["components"]["schemas"]["io.k8s.api.core.v1.PodStatus"];
    for field in [
        "phase",
        "conditions",
        "containerStatuses",
        "podIPs",
        "qosClass",
    ] {
        assert!(
            status["properties"].get(field).is_some(),
            "{field}: {status}"
        );
    }
    assert!(find_kind(&d, "", "v1", "Pod").is_some());
}
