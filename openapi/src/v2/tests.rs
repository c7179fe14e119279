use prost::Message as _;
use serde_json::{json, Value};

use super::gnostic::{self, non_body_parameter, parameter, parameters_item};
use super::*;
use crate::builtin_served_resources_for_tests;

fn widget(version: &str, schema: Value) -> ServedResource {
    crate::widget_for_tests(version, &["status"], schema)
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "color": {"type": "string", "default": "red"},
                    "size": {"type": "integer", "nullable": true},
                },
            },
        },
    })
}

fn doc_of(v2: &OpenApiV2) -> Value {
    serde_json::from_slice(&v2.json()).unwrap()
}

/// The parse rules of kube-openapi's `pkg/util/proto` (`NewOpenAPIData`), which kubectl runs
/// over the whole document: a failure there fails every validated kubectl command.
fn check_like_kube_openapi(defs: &serde_json::Map<String, Value>, path: &str, s: &Value) {
    let obj = s
        .as_object()
        .unwrap_or_else(|| panic!("{path}: not an object"));
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        assert!(
            !obj.contains_key("properties") && !obj.contains_key("type"),
            "{path}: a reference with a type or properties"
        );
        let name = reference
            .strip_prefix("#/definitions/")
            .unwrap_or_else(|| panic!("{path}: reference {reference} outside definitions"));
        assert!(defs.contains_key(name), "{path}: unknown model {name}");
        return;
    }
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    assert!(types.len() <= 1, "{path}: several types");
    let props = obj.get("properties").and_then(Value::as_object);
    match types.first().copied() {
        None | Some("object") => {
            for (name, p) in props.into_iter().flatten() {
                check_like_kube_openapi(defs, &format!("{path}.{name}"), p);
            }
            if let Some(a @ Value::Object(_)) = obj.get("additionalProperties") {
                check_like_kube_openapi(defs, &format!("{path}.*"), a);
            }
        }
        Some("array") => {
            let items = obj
                .get("items")
                .unwrap_or_else(|| panic!("{path}: array without items"));
            assert!(
                items.is_object(),
                "{path}: array should have exactly one sub-item"
            );
            check_like_kube_openapi(defs, &format!("{path}[]"), items);
        }
        Some("string" | "number" | "integer" | "boolean") => {}
        Some(other) => panic!("{path}: unknown primitive type {other}"),
    }
}

/// Every place a schema keyword sits in a definition.
fn schema_keywords(s: &Value, found: &mut Vec<String>) {
    let Some(obj) = s.as_object() else { return };
    found.extend(obj.keys().cloned());
    for p in obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        schema_keywords(p.1, found);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get(key) {
            schema_keywords(child, found);
        }
    }
}

#[test]
fn builtin_document_parses_like_kubectl_and_has_no_v3_keywords() {
    let v2 = OpenApiV2::build(&builtin_served_resources_for_tests()).unwrap();
    let doc = doc_of(&v2);
    assert_eq!(doc["swagger"], "2.0");
    let defs = doc["definitions"].as_object().unwrap();
    let cm = &defs["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    assert_eq!(
        cm["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    for (name, def) in defs {
        check_like_kube_openapi(defs, name, def);
        let mut keywords = Vec::new();
        schema_keywords(def, &mut keywords);
        for bad in ["default", "nullable", "oneOf", "anyOf"] {
            assert!(!keywords.iter().any(|k| k == bad), "{name} has {bad}");
        }
    }
    assert!(!String::from_utf8_lossy(&v2.json()).contains("#/components/"));
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
        "string"
    );
    // Shared envelope kinds name every group-version.
    let delete_options = defs["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
        ["x-kubernetes-group-version-kind"]
        .as_array()
        .unwrap();
    assert!(delete_options.len() > 1, "{delete_options:?}");
    let patch = &doc["paths"]["/api/v1/namespaces/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Namespace", "version": "v1"})
    );
    assert_eq!(patch["parameters"][0]["in"], "body");
}

/// What kubectl's `supportsQueryParam` (cli-runtime `query_param_verifier.go`) finds in the
/// protobuf document: whether the PATCH operation of `kind` has the query parameter.
fn patch_supports(doc: &gnostic::Document, kind: &str, param: &str) -> Option<bool> {
    for path in &doc.paths.as_ref()?.path {
        let Some(patch) = path.value.as_ref().and_then(|p| p.patch.as_ref()) else {
            continue;
        };
        let Some(ext) = patch
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
        else {
            continue;
        };
        let gvk: Value = serde_json::from_str(&ext.value.as_ref()?.yaml).ok()?;
        if gvk["kind"] != kind {
            continue;
        }
        return Some(patch.parameters.iter().any(|p| {
            let Some(parameters_item::Oneof::Parameter(p)) = &p.oneof else {
                return false;
            };
            matches!(&p.oneof, Some(parameter::Oneof::NonBodyParameter(gnostic::NonBodyParameter {
                oneof: Some(non_body_parameter::Oneof::QueryParameterSubSchema(q)),
            })) if q.name == param)
        }));
    }
    None
}

#[test]
fn protobuf_decodes_to_the_same_document() {
    let resources = {
        let mut r = builtin_served_resources_for_tests();
        r.push(widget("v1", widget_schema()));
        r
    };
    let v2 = OpenApiV2::build(&resources).unwrap();
    let json = doc_of(&v2);
    let pb = gnostic::Document::decode(&*v2.protobuf()).unwrap();
    assert_eq!(pb.swagger, "2.0");
    let names: Vec<&str> = pb
        .definitions
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let json_names: Vec<&str> = json["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names.len(), json_names.len());
    for name in &json_names {
        assert!(names.contains(name), "{name} missing from protobuf");
    }
    assert!(names.contains(&"io.k8s.api.core.v1.ConfigMap"));
    assert!(names.contains(&"com.example.v1.Widget"));
    assert_eq!(
        pb.paths.as_ref().unwrap().path.len(),
        json["paths"].as_object().unwrap().len()
    );
    assert_eq!(
        patch_supports(&pb, "Namespace", "fieldValidation"),
        Some(true)
    );
    assert_eq!(patch_supports(&pb, "Widget", "fieldValidation"), Some(true));
    assert_eq!(patch_supports(&pb, "NoSuchKind", "fieldValidation"), None);

    // The custom kind, field by field.
    let widget_def = pb
        .definitions
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .find(|d| d.name == "com.example.v1.Widget")
        .and_then(|d| d.value.clone())
        .unwrap();
    assert_eq!(widget_def.r#type.unwrap().value, vec!["object".to_owned()]);
    let props = widget_def.properties.unwrap().additional_properties;
    let prop_names: Vec<&str> = props.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(prop_names, vec!["apiVersion", "kind", "metadata", "spec"]);
    let spec = props[3].value.clone().unwrap();
    let spec_props = spec.properties.unwrap().additional_properties;
    let color = spec_props[0].value.clone().unwrap();
    assert_eq!(color.r#type.unwrap().value, vec!["string".to_owned()]);
    assert!(color.default.is_none(), "defaults are pruned");
    let size = spec_props[1].value.clone().unwrap();
    assert!(
        size.r#type.is_none(),
        "nullable fields lose their type in v2"
    );
    assert_eq!(
        widget_def.vendor_extension[0].name,
        "x-kubernetes-group-version-kind"
    );
}

#[test]
fn custom_resources_follow_their_crd() {
    let base = builtin_served_resources_for_tests();
    let with = |extra: Vec<ServedResource>| {
        let mut r = base.clone();
        r.extend(extra);
        OpenApiV2::build(&r).unwrap()
    };
    let plain = OpenApiV2::build(&base).unwrap();
    let v1 = with(vec![widget("v1", widget_schema())]);
    let v1_again = with(vec![widget("v1", widget_schema())]);
    let renamed = with(vec![widget("v2", widget_schema())]);

    assert_eq!(v1.etag(), v1_again.etag());
    assert_eq!(v1.json(), v1_again.json());
    assert_eq!(v1.protobuf(), v1_again.protobuf());
    assert_eq!(v1.etag().len(), 128);
    assert_ne!(v1.etag(), plain.etag());
    assert_ne!(v1.etag(), renamed.etag());

    let defs = |d: &OpenApiV2| -> Vec<String> {
        doc_of(d)["definitions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert!(defs(&v1).contains(&"com.example.v1.Widget".to_owned()));
    assert!(defs(&v1).contains(&"com.example.v1.WidgetList".to_owned()));
    assert!(!defs(&plain).iter().any(|d| d.starts_with("com.example")));
    assert!(defs(&renamed).contains(&"com.example.v2.Widget".to_owned()));
    assert!(!defs(&renamed).contains(&"com.example.v1.Widget".to_owned()));
    let paths = doc_of(&renamed)["paths"].as_object().unwrap().clone();
    assert!(paths.contains_key("/apis/example.com/v2/namespaces/{namespace}/widgets/{name}"));
    assert!(!paths.keys().any(|p| p.starts_with("/apis/example.com/v1/")));

    let defs_all = doc_of(&v1)["definitions"].as_object().unwrap().clone();
    for (name, def) in &defs_all {
        check_like_kube_openapi(&defs_all, name, def);
    }
}

#[test]
fn builtin_part_is_shared_and_custom_parts_hold_only_their_own() {
    let base = builtin_served_resources_for_tests();
    let plain = OpenApiV2::build(&base).unwrap();
    let mut with_widgets = base.clone();
    with_widgets.push(widget("v1", widget_schema()));
    let mut with_other = base.clone();
    with_other.push(widget("v2", widget_schema()));
    let a = OpenApiV2::build(&with_widgets).unwrap();
    let b = OpenApiV2::build(&with_other).unwrap();
    assert!(a.shares_builtins_with(&plain));
    assert!(b.shares_builtins_with(&a));

    // Each definition once, and the custom part is small next to the shared one.
    let json = String::from_utf8(a.json()).unwrap();
    for name in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "com.example.v1.Widget",
    ] {
        assert_eq!(json.matches(&format!("\"{name}\":{{")).count(), 1, "{name}");
    }
    let own: usize = a.protobuf().len() - plain.protobuf().len();
    assert!(own * 10 < plain.protobuf().len(), "custom part {own} bytes");
    let doc = doc_of(&a);
    assert!(doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"].is_object());
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"].is_object());
}
