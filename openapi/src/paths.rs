//! The `paths` section of a group-version document: the REST operations of each resource and
//! its subresources, shaped like the upstream API server's (operation ids, tags,
//! `x-kubernetes-action`, `x-kubernetes-group-version-kind`, parameters, media types).

use serde_json::{json, Map, Value};

use crate::catalog::builtin_definitions;
use crate::convert::schema_ref;
use crate::kind_schema::Gvk;
use crate::names::{API_RESOURCE_LIST, DELETE_OPTIONS, PATCH, STATUS};
use crate::ServedResource;

/// What the operations of one resource refer to.
pub(crate) struct Target<'a> {
    pub resource: &'a ServedResource,
    /// Definition name of the kind.
    pub kind_name: &'a str,
    /// Definition name of the `<Kind>List`.
    pub list_name: &'a str,
    /// Built-in kinds support protobuf and strategic merge patch; custom resources do not.
    pub builtin: bool,
}

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON_WATCH: &str = "application/json;stream=watch";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// An HTTP method of a path item, with the `x-kubernetes-action` it maps to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Post,
    Put,
    Patch,
}

/// What a subresource's operations carry.
enum SubSchema {
    /// The parent kind itself (`status`, `finalize`, ...).
    Parent,
    /// Another built-in kind, e.g. `scale` → `autoscaling/v1` `Scale`.
    Other(&'static str, Gvk),
}

/// The subresources whose operations are published, with their methods.
fn subresource_spec(name: &str) -> Option<(SubSchema, &'static [Method])> {
    use Method::*;
    const READ_WRITE: &[Method] = &[Get, Put, Patch];
    Some(match name {
        "status" | "ephemeralcontainers" | "resize" | "approval" => (SubSchema::Parent, READ_WRITE),
        "finalize" => (SubSchema::Parent, &[Put]),
        "scale" => (
            SubSchema::Other(
                "io.k8s.api.autoscaling.v1.Scale",
                Gvk::new("autoscaling", "v1", "Scale"),
            ),
            READ_WRITE,
        ),
        "token" => (
            SubSchema::Other(
                "io.k8s.api.authentication.v1.TokenRequest",
                Gvk::new("authentication.k8s.io", "v1", "TokenRequest"),
            ),
            &[Post],
        ),
        "eviction" => (
            SubSchema::Other(
                "io.k8s.api.policy.v1.Eviction",
                Gvk::new("policy", "v1", "Eviction"),
            ),
            &[Post],
        ),
        "binding" => (
            SubSchema::Other("io.k8s.api.core.v1.Binding", Gvk::new("", "v1", "Binding")),
            &[Post],
        ),
        _ => return None,
    })
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub(crate) fn url_prefix(group: &str, version: &str) -> String {
    format!("/{}", crate::group_version_path(group, version))
}

/// The operation-id fragment of a group: `Core`, `Batch`, `RbacAuthorization`, `ExampleCom`.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".to_owned();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed
        .split(['.', '-'])
        .filter(|part| !part.is_empty())
        .map(capitalize)
        .collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn lower_first(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The tag of a group-version's operations, e.g. `core_v1`, `rbacAuthorization_v1`.
pub(crate) fn tag(group: &str, version: &str) -> String {
    format!("{}_{version}", lower_first(&group_camel(group)))
}

/// The `get` operation on `/<prefix>/` that lists the group-version's resources.
pub(crate) fn discovery_path(group: &str, version: &str) -> (String, Value) {
    let gv = format!("{}{}", group_camel(group), capitalize(version));
    let op = json!({
        "description": "get available resources",
        "operationId": format!("get{gv}APIResources"),
        "responses": responses(&[("200", "OK")], API_RESOURCE_LIST, &[JSON, YAML, PROTOBUF]),
        "tags": [tag(group, version)],
    });
    (
        format!("{}/", url_prefix(group, version)),
        json!({"get": op}),
    )
}

fn query(name: &str, description: &str, ty: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "description": description,
        "schema": {"type": "string"},
    })
}

fn pretty() -> Value {
    query(
        "pretty",
        "If 'true', the output is pretty printed.",
        "string",
    )
}

/// The description of a `DeleteOptions` field, from the built-in definition.
fn delete_option_description(field: &str) -> Option<String> {
    builtin_definitions()
        .get(DELETE_OPTIONS)?
        .get("properties")?
        .get(field)?
        .get("description")?
        .as_str()
        .map(str::to_owned)
}

fn dry_run() -> Value {
    let description = delete_option_description("dryRun").unwrap_or_else(|| {
        "When present, the modification is validated but not persisted; the only value is 'All'."
            .to_owned()
    });
    query("dryRun", &description, "string")
}

/// Query parameters of a single delete: every `DeleteOptions` field but the type meta and
/// preconditions (which only the body can carry).
fn delete_params() -> Vec<Value> {
    let mut params = Vec::new();
    let properties = builtin_definitions()
        .get(DELETE_OPTIONS)
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        if matches!(name.as_str(), "apiVersion" | "kind" | "preconditions") {
            continue;
        }
        let ty = schema
            .get("type")
            .and_then(Value::as_str)
            .filter(|t| matches!(*t, "integer" | "boolean"))
            .unwrap_or("string");
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        params.push(query(name, description, ty));
    }
    params
}

/// Query parameters of a list (or watch).
fn list_params(with_watch: bool) -> Vec<Value> {
    let mut params = vec![
        query(
            "continue",
            "The opaque token returned by a previous chunked list call, to fetch the next chunk \
             with otherwise identical query parameters.",
            "string",
        ),
        query(
            "fieldSelector",
            "Only return objects whose fields match this selector. Defaults to everything.",
            "string",
        ),
        query(
            "labelSelector",
            "Only return objects whose labels match this selector. Defaults to everything.",
            "string",
        ),
        query(
            "limit",
            "The maximum number of objects in one response; when more exist the list metadata \
             carries a continue token.",
            "integer",
        ),
        query(
            "resourceVersion",
            "Constrains which resource version the result may be served from (see the API \
             concepts documentation on resource versions). Defaults to unset.",
            "string",
        ),
        query(
            "resourceVersionMatch",
            "How resourceVersion applies to a list: 'NotOlderThan' or 'Exact'. Defaults to unset.",
            "string",
        ),
        query(
            "sendInitialEvents",
            "With watch=true, begin the stream with synthetic ADDED events for the current \
             objects, followed by a BOOKMARK event marking the end of that initial state.",
            "boolean",
        ),
        query(
            "timeoutSeconds",
            "Upper bound, in seconds, on the duration of the list or watch call.",
            "integer",
        ),
    ];
    if with_watch {
        params.push(query(
            "allowWatchBookmarks",
            "Ask for BOOKMARK events on a watch. The server decides when to send them; ignored \
             when not watching.",
            "boolean",
        ));
        params.push(query(
            "watch",
            "Instead of a list, return a stream of ADDED, MODIFIED and DELETED events, starting \
             after resourceVersion.",
            "boolean",
        ));
    }
    params
}

fn field_manager(apply: bool) -> Value {
    let mut description = "The name of the actor making the change; at most 128 printable \
                           characters."
        .to_owned();
    if apply {
        description.push_str(" Required for apply patches (application/apply-patch+yaml).");
    }
    query("fieldManager", &description, "string")
}

fn field_validation() -> Value {
    query(
        "fieldValidation",
        "How the server treats unknown or duplicate fields in the request object: 'Ignore' drops \
         them silently, 'Warn' (the default) drops them with a warning header, 'Strict' rejects \
         the request.",
        "string",
    )
}

fn write_params() -> Vec<Value> {
    vec![dry_run(), field_manager(false), field_validation()]
}

fn patch_params() -> Vec<Value> {
    vec![
        dry_run(),
        field_manager(true),
        field_validation(),
        query(
            "force",
            "On an apply patch, take ownership of fields that conflict with other managers. Must \
             be unset for other patch types.",
            "boolean",
        ),
    ]
}

fn media(schema_name: &str, types: &[&str]) -> Value {
    let reference = json!({"schema": {"$ref": schema_ref(schema_name)}});
    let content: Map<String, Value> = types
        .iter()
        .map(|t| ((*t).to_owned(), reference.clone()))
        .collect();
    Value::Object(content)
}

fn responses(codes: &[(&str, &str)], schema_name: &str, types: &[&str]) -> Value {
    let mut out = Map::new();
    for (code, description) in codes {
        out.insert(
            (*code).to_owned(),
            json!({"description": description, "content": media(schema_name, types)}),
        );
    }
    out.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(out)
}

fn body(schema_name: &str, required: bool) -> Value {
    let mut body = json!({"content": media(schema_name, &["*/*"])});
    if required {
        body["required"] = Value::Bool(true);
    }
    body
}

fn patch_body(builtin: bool) -> Value {
    let types: &[&str] = if builtin {
        &[JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH]
    } else {
        &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    };
    json!({"content": media(PATCH, types), "required": true})
}

/// Everything an operation needs besides its method-specific parts.
struct OpContext<'a> {
    tag: String,
    gvk: Gvk,
    /// `CoreV1` etc.
    gv_camel: String,
    /// `Namespaced` or empty.
    scope: &'a str,
    kind: &'a str,
    builtin: bool,
}

impl OpContext<'_> {
    fn object_types(&self) -> &'static [&'static str] {
        if self.builtin {
            &[JSON, YAML, PROTOBUF]
        } else {
            &[JSON, YAML]
        }
    }

    fn list_types(&self) -> &'static [&'static str] {
        if self.builtin {
            &[JSON, JSON_WATCH, PROTOBUF, PROTOBUF_WATCH, YAML]
        } else {
            &[JSON, JSON_WATCH, YAML]
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn operation(
        &self,
        description: String,
        operation_id: String,
        action: &str,
        gvk: &Gvk,
        params: Vec<Value>,
        request_body: Option<Value>,
        responses: Value,
    ) -> Value {
        let mut op = json!({
            "description": description,
            "operationId": operation_id,
            "responses": responses,
            "tags": [self.tag],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk.to_value(),
        });
        if !params.is_empty() {
            op["parameters"] = Value::Array(params);
        }
        if let Some(request_body) = request_body {
            op["requestBody"] = request_body;
        }
        op
    }

    /// An operation on an object (the kind itself or a subresource).
    fn object_op(
        &self,
        method: Method,
        schema_name: &str,
        gvk: &Gvk,
        subresource: Option<&str>,
    ) -> Value {
        let suffix = subresource.map(capitalize).unwrap_or_default();
        let id = |verb: &str| format!("{verb}{}{}{}{suffix}", self.gv_camel, self.scope, self.kind);
        let what = match subresource {
            Some(sub) => format!("{sub} of the specified {}", self.kind),
            None => format!("the specified {}", self.kind),
        };
        let types = self.object_types();
        match method {
            Method::Get => self.operation(
                format!("read {what}"),
                id("read"),
                "get",
                gvk,
                Vec::new(),
                None,
                responses(&[("200", "OK")], schema_name, types),
            ),
            Method::Put => self.operation(
                format!("replace {what}"),
                id("replace"),
                "put",
                gvk,
                write_params(),
                Some(body(schema_name, true)),
                responses(&[("200", "OK"), ("201", "Created")], schema_name, types),
            ),
            Method::Patch => self.operation(
                format!("partially update {what}"),
                id("patch"),
                "patch",
                gvk,
                patch_params(),
                Some(patch_body(self.builtin)),
                responses(&[("200", "OK"), ("201", "Created")], schema_name, types),
            ),
            Method::Post => self.operation(
                format!("create {what}"),
                id("create"),
                "post",
                gvk,
                write_params(),
                Some(body(schema_name, true)),
                responses(
                    &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                    schema_name,
                    types,
                ),
            ),
        }
    }
}

/// Adds the paths of one resource (collection, item, all-namespaces list, subresources).
pub(crate) fn add_resource(paths: &mut Map<String, Value>, target: &Target<'_>) {
    let r = target.resource;
    let has = |verb: &str| r.verbs.iter().any(|v| v == verb);
    let ctx = OpContext {
        tag: tag(&r.group, &r.version),
        gvk: Gvk::new(&r.group, &r.version, &r.kind),
        gv_camel: format!("{}{}", group_camel(&r.group), capitalize(&r.version)),
        scope: if r.namespaced { "Namespaced" } else { "" },
        kind: &r.kind,
        builtin: target.builtin,
    };
    let prefix = url_prefix(&r.group, &r.version);
    let collection = if r.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{prefix}/{}", r.plural)
    };
    let namespace_param = || path_param("namespace", "The namespace of the object.");
    let name_param = path_param("name", &format!("The name of the {}.", r.kind));
    let scope_params = |with_name: bool| {
        let mut params = Vec::new();
        if with_name {
            params.push(name_param.clone());
        }
        if r.namespaced {
            params.push(namespace_param());
        }
        params.push(pretty());
        params
    };

    // Collection: list, create, deletecollection.
    let mut item = Map::new();
    if has("list") {
        item.insert(
            "get".into(),
            ctx.operation(
                format!("list or watch objects of kind {}", r.kind),
                format!("list{}{}{}", ctx.gv_camel, ctx.scope, r.kind),
                "list",
                &ctx.gvk,
                list_params(true),
                None,
                responses(&[("200", "OK")], target.list_name, ctx.list_types()),
            ),
        );
    }
    if has("create") {
        item.insert(
            "post".into(),
            ctx.object_op(Method::Post, target.kind_name, &ctx.gvk, None),
        );
        // `create a X` reads better than `create the specified X` for a collection POST.
        item["post"]["description"] = Value::String(format!("create a {}", r.kind));
    }
    if has("deletecollection") {
        let mut params = delete_params();
        params.extend(list_params(false));
        item.insert(
            "delete".into(),
            ctx.operation(
                format!("delete collection of {}", r.kind),
                format!("delete{}Collection{}{}", ctx.gv_camel, ctx.scope, r.kind),
                "deletecollection",
                &ctx.gvk,
                params,
                Some(body(DELETE_OPTIONS, false)),
                responses(&[("200", "OK")], STATUS, ctx.object_types()),
            ),
        );
    }
    insert_path(paths, collection.clone(), item, scope_params(false));

    // All-namespaces list of a namespaced resource.
    if r.namespaced && has("list") {
        let mut item = Map::new();
        item.insert(
            "get".into(),
            ctx.operation(
                format!("list or watch objects of kind {}", r.kind),
                format!("list{}{}ForAllNamespaces", ctx.gv_camel, r.kind),
                "list",
                &ctx.gvk,
                list_params(true),
                None,
                responses(&[("200", "OK")], target.list_name, ctx.list_types()),
            ),
        );
        insert_path(
            paths,
            format!("{prefix}/{}", r.plural),
            item,
            vec![pretty()],
        );
    }

    // Item: read, replace, patch, delete.
    let object = format!("{collection}/{{name}}");
    let mut item = Map::new();
    if has("get") {
        item.insert(
            "get".into(),
            ctx.object_op(Method::Get, target.kind_name, &ctx.gvk, None),
        );
    }
    if has("update") {
        item.insert(
            "put".into(),
            ctx.object_op(Method::Put, target.kind_name, &ctx.gvk, None),
        );
    }
    if has("patch") {
        item.insert(
            "patch".into(),
            ctx.object_op(Method::Patch, target.kind_name, &ctx.gvk, None),
        );
    }
    if has("delete") {
        item.insert(
            "delete".into(),
            ctx.operation(
                format!("delete a {}", r.kind),
                format!("delete{}{}{}", ctx.gv_camel, ctx.scope, r.kind),
                "delete",
                &ctx.gvk,
                delete_params(),
                Some(body(DELETE_OPTIONS, false)),
                responses(
                    &[("200", "OK"), ("202", "Accepted")],
                    STATUS,
                    ctx.object_types(),
                ),
            ),
        );
    }
    insert_path(paths, object.clone(), item, scope_params(true));

    // Subresources.
    for sub in &r.subresources {
        let Some((schema, methods)) = subresource_spec(sub) else {
            continue;
        };
        let (schema_name, gvk) = match &schema {
            SubSchema::Parent => (target.kind_name, &ctx.gvk),
            SubSchema::Other(name, gvk) => (*name, gvk),
        };
        let mut item = Map::new();
        for method in methods {
            let key = match method {
                Method::Get => "get",
                Method::Post => "post",
                Method::Put => "put",
                Method::Patch => "patch",
            };
            item.insert(
                key.into(),
                ctx.object_op(*method, schema_name, gvk, Some(sub)),
            );
        }
        insert_path(paths, format!("{object}/{sub}"), item, scope_params(true));
    }
}

fn insert_path(
    paths: &mut Map<String, Value>,
    path: String,
    mut item: Map<String, Value>,
    params: Vec<Value>,
) {
    if item.is_empty() {
        return;
    }
    item.insert("parameters".into(), Value::Array(params));
    paths.insert(path, Value::Object(item));
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(group_camel(""), "Core");
        assert_eq!(
            group_camel("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(group_camel("example.com"), "ExampleCom");
        assert_eq!(
            tag("rbac.authorization.k8s.io", "v1"),
            "rbacAuthorization_v1"
        );
        assert_eq!(tag("", "v1"), "core_v1");
        assert_eq!(url_prefix("batch", "v1"), "/apis/batch/v1");
    }
}
