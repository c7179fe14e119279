//! The types kube-apiserver declares for `request` and `namespaceObject` in every admission
//! CEL environment (`BuildRequestType` and `BuildNamespaceType` of
//! `k8s.io/apiserver/pkg/admission/plugin/cel`), written as schemas the checker reads: a
//! field they do not declare is cel-go's `undefined field`, and each declared field has
//! its type (`request.userInfo.username` is a string, `request.dryRun` a bool,
//! `request.options` anything). Upstream's namespace type is a subset of a Namespace:
//! metadata without `uid` (it declares `UID`), `ownerReferences` or `managedFields`.

use std::sync::LazyLock;

use serde_json::{json, Value};

use crate::build::Builder;
use crate::node::Node;
use crate::options::CompileOptions;
use crate::walk::Walk;

fn string() -> Value {
    json!({"type": "string"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

fn node(schema: &Value) -> Node {
    Builder::new(&CompileOptions::default()).node(schema, &Walk::root(""))
}

static REQUEST: LazyLock<Node> = LazyLock::new(request_type);
static NAMESPACE: LazyLock<Node> = LazyLock::new(namespace_type);

/// `kubernetes.AdmissionRequest` (built once).
pub(crate) fn request() -> &'static Node {
    &REQUEST
}

/// `kubernetes.Namespace` (built once).
pub(crate) fn namespace() -> &'static Node {
    &NAMESPACE
}

fn request_type() -> Node {
    let gvk = object(json!({"group": string(), "version": string(), "kind": string()}));
    let gvr = object(json!({"group": string(), "version": string(), "resource": string()}));
    let user = object(json!({
        "username": string(),
        "uid": string(),
        "groups": strings(),
        "extra": {"type": "object", "additionalProperties": strings()},
    }));
    node(&object(json!({
        "kind": gvk,
        "resource": gvr,
        "subResource": string(),
        "requestKind": gvk,
        "requestResource": gvr,
        "requestSubResource": string(),
        "name": string(),
        "namespace": string(),
        "operation": string(),
        "userInfo": user,
        "dryRun": {"type": "boolean"},
        "options": {"x-kubernetes-preserve-unknown-fields": true},
    })))
}

fn namespace_type() -> Node {
    let time = json!({"type": "string", "format": "date-time"});
    let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let condition = object(json!({
        "status": string(),
        "type": string(),
        "lastTransitionTime": time,
        "message": string(),
        "reason": string(),
    }));
    node(&object(json!({
        "metadata": object(json!({
            "name": string(),
            "generateName": string(),
            "namespace": string(),
            "labels": map,
            "annotations": map,
            "UID": string(),
            "creationTimestamp": time,
            "deletionGracePeriodSeconds": {"type": "integer"},
            "deletionTimestamp": time,
            "generation": {"type": "integer"},
            "resourceVersion": string(),
            "finalizers": strings(),
        })),
        "spec": object(json!({"finalizers": strings()})),
        "status": object(json!({
            "conditions": {"type": "array", "items": condition},
            "phase": string(),
        })),
    })))
}
