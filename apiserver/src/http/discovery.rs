//! API discovery: legacy (`APIVersions`, `APIGroupList`, `APIGroup`, `APIResourceList`) and
//! aggregated (`apidiscovery.k8s.io` v2 and v2beta1, chosen by Accept and announced by the
//! exact response Content-Type that client-go keys on). Bodies are computed once from the
//! catalog and served from memory with an ETag.

use super::error::StatusResponse;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256, Sha512};

use super::negotiation::{wants_aggregated_discovery, MediaType};
use kplane_registry::error::ApiError;
use kplane_registry::{Catalog, ResourceType};

/// A precomputed body with its ETag.
#[derive(Debug, Clone)]
struct Doc {
    body: Bytes,
    etag: String,
}

impl Doc {
    fn new(v: &Value) -> Doc {
        let body = Bytes::from(v.to_string());
        let etag = format!("\"{}\"", hex::encode(Sha512::digest(&body)));
        Doc { body, etag }
    }
}

/// The discovery documents of the served resources.
#[derive(Debug)]
pub struct Discovery {
    core_legacy: Value,
    groups_legacy: Doc,
    groups: Map<String, Value>,
    resource_lists: Map<String, Value>,
    aggregated: [(Doc, Doc); 2],
}

fn gv_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `storageVersionHash`: base64 of the first 8 bytes of SHA-256 of `group/version/kind`.
fn storage_version_hash(rt: &ResourceType) -> String {
    let d = Sha256::digest(format!("{}/{}/{}", rt.group, rt.version, rt.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&d[..8])
}

/// The kind a subresource answers with: (group, version, kind).
fn subresource_kind(rt: &ResourceType, sub: &str) -> (String, String, String) {
    match sub {
        "scale" => ("autoscaling".into(), "v1".into(), "Scale".into()),
        "token" => (
            "authentication.k8s.io".into(),
            "v1".into(),
            "TokenRequest".into(),
        ),
        _ if rt.is_custom() => (rt.group.clone(), rt.version.clone(), rt.kind.clone()),
        _ => (String::new(), String::new(), rt.kind.clone()),
    }
}

fn legacy_resource(rt: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": discovery_verbs(rt),
    });
    if !rt.short_names.is_empty() {
        main["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        main["categories"] = json!(rt.categories);
    }
    if rt.verbs.contains(&"get") {
        main["storageVersionHash"] = json!(storage_version_hash(rt));
    }
    let mut out = vec![main];
    for (sub, verbs) in &rt.subresources {
        let (g, v, k) = subresource_kind(rt, sub);
        let mut e = json!({"name": format!("{}/{sub}", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": k, "verbs": verbs});
        if !g.is_empty() {
            e["group"] = json!(g);
            e["version"] = json!(v);
        }
        out.push(e);
    }
    out
}

/// Built-ins leave group/version empty (= the containing group-version); custom resources
/// fill all three, as kube-apiserver does.
fn response_kind(rt: &ResourceType) -> Value {
    if rt.is_custom() {
        json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
    } else {
        json!({"group": "", "version": "", "kind": rt.kind})
    }
}

/// The verbs discovery shows: a terminating CRD's resources advertise only reads and deletes.
fn discovery_verbs(rt: &ResourceType) -> Vec<&'static str> {
    if rt.custom.as_ref().is_some_and(|c| c.terminating) {
        rt.verbs
            .iter()
            .copied()
            .filter(|v| !matches!(*v, "create" | "patch" | "update"))
            .collect()
    } else {
        rt.verbs.clone()
    }
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": response_kind(rt),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": discovery_verbs(rt),
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    if !rt.subresources.is_empty() {
        let subs: Vec<Value> = rt
            .subresources
            .iter()
            .map(|(sub, verbs)| {
                let (g, v, k) = subresource_kind(rt, sub);
                json!({"subresource": sub, "responseKind": {"group": g, "version": v, "kind": k}, "verbs": verbs})
            })
            .collect();
        r["subresources"] = json!(subs);
    }
    r
}

impl Discovery {
    pub fn new(catalog: &Catalog) -> Discovery {
        let mut groups = Map::new();
        let mut group_list = Vec::new();
        let mut resource_lists = Map::new();
        let mut agg_core = Vec::new();
        let mut agg_groups = Vec::new();
        for group in catalog.groups() {
            let versions = catalog.versions(&group);
            let version_entries: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": gv_string(&group, v), "version": v}))
                .collect();
            let mut agg_versions = Vec::new();
            for v in &versions {
                let rts: Vec<_> = catalog.in_group_version(&group, v).collect();
                let resources: Vec<Value> = rts.iter().flat_map(|rt| legacy_resource(rt)).collect();
                resource_lists.insert(
                    gv_string(&group, v),
                    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv_string(&group, v), "resources": resources}),
                );
                let agg: Vec<Value> = rts.iter().map(|rt| aggregated_resource(rt)).collect();
                agg_versions.push(json!({"version": v, "resources": agg, "freshness": "Current"}));
            }
            if group.is_empty() {
                agg_core.push(json!({"metadata": {}, "versions": agg_versions}));
                continue;
            }
            let preferred = version_entries
                .first()
                .cloned()
                .unwrap_or_else(|| json!({}));
            let g =
                json!({"name": group, "versions": version_entries, "preferredVersion": preferred});
            groups.insert(group.clone(), g.clone());
            group_list.push(g);
            agg_groups.push(json!({"metadata": {"name": group}, "versions": agg_versions}));
        }
        let aggregated = ["apidiscovery.k8s.io/v2", "apidiscovery.k8s.io/v2beta1"].map(|av| {
            let list = |items: &Vec<Value>| {
                Doc::new(&json!({"kind": "APIGroupDiscoveryList", "apiVersion": av, "metadata": {}, "items": items}))
            };
            (list(&agg_core), list(&agg_groups))
        });
        Discovery {
            core_legacy: json!({"kind": "APIVersions", "versions": ["v1"]}),
            groups_legacy: Doc::new(
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": group_list}),
            ),
            groups,
            resource_lists,
            aggregated,
        }
    }
}

fn json_response(body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.into()).into_response()
}

fn serve_aggregated(doc: &Doc, version: &str, headers: &HeaderMap) -> Response {
    let ct = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == doc.etag);
    let mut r = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, doc.body.clone()).into_response()
    };
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&ct) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&doc.etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    r
}

fn aggregated_index(version: &str) -> usize {
    if version == "v2" {
        0
    } else {
        1
    }
}

/// `GET /api`
pub fn core_root(
    discovery: &Discovery,
    server_address: &str,
    accept: &[MediaType],
    headers: &HeaderMap,
) -> Response {
    if let Some(v) = wants_aggregated_discovery(accept) {
        return serve_aggregated(&discovery.aggregated[aggregated_index(v)].0, v, headers);
    }
    let mut body = discovery.core_legacy.clone();
    body["serverAddressByClientCIDRs"] =
        json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]);
    json_response(body.to_string())
}

/// `GET /apis`
pub fn groups_root(discovery: &Discovery, accept: &[MediaType], headers: &HeaderMap) -> Response {
    if let Some(v) = wants_aggregated_discovery(accept) {
        return serve_aggregated(&discovery.aggregated[aggregated_index(v)].1, v, headers);
    }
    json_response(discovery.groups_legacy.body.clone())
}

/// `GET /apis/<group>`
pub fn group(discovery: &Discovery, group: &str) -> Response {
    match discovery.groups.get(group) {
        Some(g) => {
            let mut body = g.clone();
            if let Some(o) = body.as_object_mut() {
                o.insert("kind".into(), json!("APIGroup"));
                o.insert("apiVersion".into(), json!("v1"));
            }
            json_response(body.to_string())
        }
        None => ApiError::not_found_path().into_response(),
    }
}

/// `GET /api/v1`, `GET /apis/<group>/<version>`
pub fn group_version(discovery: &Discovery, group: &str, version: &str) -> Response {
    match discovery.resource_lists.get(&gv_string(group, version)) {
        Some(list) => json_response(list.to_string()),
        None => ApiError::not_found_path().into_response(),
    }
}
