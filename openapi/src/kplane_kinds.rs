//! The definitions of kplane's own built-in kinds (the `tenancy.kplane.io/v1alpha1`
//! Workspace and WorkspaceTemplate, the `sync.kplane.io/v1alpha1` SyncTarget), which `k8s-openapi` cannot provide. They are declared
//! here by hand, in the shape the generated definitions have (`$ref`s to the shared
//! ObjectMeta and Condition definitions, `x-kubernetes-group-version-kind`, a `<Kind>List`
//! definition), and added to [`crate::builtin_definitions`], so that OpenAPI v2/v3, typed
//! decoding (pruning) and server-side apply treat them exactly like the Kubernetes
//! built-ins. A template's manifests are embedded resources whose unknown fields are kept.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::convert::schema_ref;
use crate::kind_schema::{add_gvk, list_definition, Gvk, TypeMeta};

/// The definition name of the Workspace kind.
pub const WORKSPACE: &str = "io.kplane.tenancy.v1alpha1.Workspace";
/// The definition name of the WorkspaceTemplate kind.
pub const WORKSPACE_TEMPLATE: &str = "io.kplane.tenancy.v1alpha1.WorkspaceTemplate";
/// The definition name of the SyncTarget kind.
pub const SYNC_TARGET: &str = "io.kplane.sync.v1alpha1.SyncTarget";
const CONDITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Condition";
const LABEL_SELECTOR: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";

/// Adds the kplane kinds (and their lists) to `defs`.
pub(crate) fn add(defs: &mut BTreeMap<String, Value>, type_meta: &TypeMeta) {
    for (group, name, kind, def) in [
        (
            "tenancy.kplane.io",
            WORKSPACE,
            "Workspace",
            workspace(type_meta),
        ),
        (
            "tenancy.kplane.io",
            WORKSPACE_TEMPLATE,
            "WorkspaceTemplate",
            workspace_template(type_meta),
        ),
        (
            "sync.kplane.io",
            SYNC_TARGET,
            "SyncTarget",
            sync_target(type_meta),
        ),
    ] {
        let mut def = def;
        add_gvk(&mut def, &Gvk::new(group, "v1alpha1", kind));
        defs.insert(name.into(), def);
        let list_kind = format!("{kind}List");
        let list_gvk = Gvk::new(group, "v1alpha1", &list_kind);
        defs.insert(
            format!("{name}List"),
            list_definition(type_meta, name, kind, &list_gvk),
        );
    }
}

fn workspace_template(type_meta: &TypeMeta) -> Value {
    json!({
        "description": "WorkspaceTemplate is a named, ordered list of manifests applied (server-side apply, field manager kplane-template) into the logical cluster of every Workspace that names it in spec.template, before the Workspace turns Ready.",
        "type": "object",
        "properties": {
            "apiVersion": type_meta.api_version,
            "kind": type_meta.kind,
            "metadata": type_meta.object_meta,
            "spec": {
                "description": "What the template installs.",
                "type": "object",
                "properties": {
                    "manifests": {
                        "description": "The objects to apply, in order: each a full object with apiVersion, kind and metadata.name (and metadata.namespace for a namespaced kind, default \"default\"). A custom resource may follow the CustomResourceDefinition that defines it.",
                        "type": "array",
                        "items": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true,
                        },
                        "x-kubernetes-list-type": "atomic",
                    },
                },
            },
        },
    })
}

fn sync_target(type_meta: &TypeMeta) -> Value {
    json!({
        "description": "SyncTarget sends the objects of the listed resources in its logical cluster (optionally those of its descendant workspaces too) to a syncer, which runs them on a real cluster and reports their status back. Objects are assigned on create (annotation sync.kplane.io/target).",
        "type": "object",
        "properties": {
            "apiVersion": type_meta.api_version,
            "kind": type_meta.kind,
            "metadata": type_meta.object_meta,
            "spec": {
                "description": "Which objects the target receives.",
                "type": "object",
                "properties": {
                    "namespaceSelector": {
                        "description": "Only objects in namespaces whose labels match; absent: every namespace.",
                        "allOf": [{"$ref": schema_ref(LABEL_SELECTOR)}],
                    },
                    "includeDescendants": {
                        "description": "Also the objects of the workspaces nested below this logical cluster.",
                        "type": "boolean",
                    },
                    "resources": {
                        "description": "The synced resources; default batch/v1 jobs.",
                        "type": "array",
                        "items": {
                            "description": "One synced resource (group \"\" is the core group).",
                            "type": "object",
                            "properties": {
                                "group": {"type": "string"},
                                "version": {"type": "string"},
                                "resource": {"type": "string"},
                            },
                        },
                        "x-kubernetes-list-type": "atomic",
                    },
                    "heartbeatTimeoutSeconds": {
                        "description": "Seconds without a heartbeat after which the target is not Ready; default 30, at least 1.",
                        "type": "integer",
                        "format": "int32",
                    },
                    "reflectPods": {
                        "description": "Host pods that are not synced objects' but are reflected into a logical cluster the target covers (e.g. an operator's own pod, which it reads by POD_NAME and POD_NAMESPACE).",
                        "type": "array",
                        "items": {
                            "description": "The pods of one host namespace that a label selector matches.",
                            "type": "object",
                            "required": ["hostNamespace", "selector"],
                            "properties": {
                                "hostNamespace": {"description": "The host namespace of the pods.", "type": "string"},
                                "selector": {
                                    "description": "Which of its pods.",
                                    "allOf": [{"$ref": schema_ref(LABEL_SELECTOR)}],
                                },
                                "cluster": {"description": "The logical cluster they are reflected into: the target's own (default) or, with includeDescendants, one below it.", "type": "string"},
                                "namespace": {"description": "The namespace they are reflected into; default hostNamespace.", "type": "string"},
                            },
                        },
                        "x-kubernetes-list-type": "atomic",
                    },
                },
            },
            "status": {
                "description": "What the syncer last reported.",
                "type": "object",
                "properties": {
                    "lastHeartbeatTime": {
                        "description": "When the syncer last reported in.",
                        "allOf": [{"$ref": schema_ref(TIME)}],
                    },
                    "syncerVersion": {
                        "description": "The syncer's version.",
                        "type": "string",
                    },
                    "syncerIdentity": {
                        "description": "The syncer holding the target's Lease.",
                        "type": "string",
                    },
                    "syncedObjects": {
                        "description": "The number of objects the syncer keeps on its cluster.",
                        "type": "integer",
                        "format": "int64",
                    },
                    "conditions": {
                        "description": "The target's current conditions (Ready, Drained).",
                        "type": "array",
                        "items": {"allOf": [{"$ref": schema_ref(CONDITION)}], "default": {}},
                        "x-kubernetes-list-map-keys": ["type"],
                        "x-kubernetes-list-type": "map",
                    },
                },
            },
        },
    })
}

fn workspace(type_meta: &TypeMeta) -> Value {
    json!({
        "description": "Workspace is a logical cluster nested in the one the object lives in: a Workspace NAME in logical cluster PARENT creates the logical cluster PARENT:NAME, served under /clusters/PARENT:NAME.",
        "type": "object",
        "properties": {
            "apiVersion": type_meta.api_version,
            "kind": type_meta.kind,
            "metadata": type_meta.object_meta,
            "spec": {
                "description": "What the workspace should be.",
                "type": "object",
                "properties": {
                    "template": {
                        "description": "The name of a WorkspaceTemplate to initialise the workspace from.",
                        "type": "string",
                    },
                    "quota": {
                        "description": "Limits of the workspace's logical cluster, enforced at write time; a field not set takes the server's default (kplane serve --quota-*).",
                        "type": "object",
                        "properties": {
                            "objects": {
                                "description": "How many objects the logical cluster may hold, in all.",
                                "type": "integer",
                                "format": "int64",
                            },
                            "bytes": {
                                "description": "How many bytes its objects may take, as stored (their serialized JSON).",
                                "type": "integer",
                                "format": "int64",
                            },
                            "resources": {
                                "description": "How many objects of a resource it may hold, by resource name (configmaps, deployments.apps).",
                                "type": "object",
                                "additionalProperties": {"type": "integer", "format": "int64"},
                            },
                        },
                    },
                },
            },
            "status": {
                "description": "What the workspace is, as its controller last observed it.",
                "type": "object",
                "properties": {
                    "phase": {
                        "description": "Initializing, Ready, Terminating or Failed.",
                        "type": "string",
                    },
                    "URL": {
                        "description": "The full URL of the workspace's logical cluster on this server.",
                        "type": "string",
                    },
                    "quota": {
                        "description": "The limits in force and what the logical cluster holds, by quota resource name (count/*, storage/bytes, count/<resource>), refreshed a few seconds after they change.",
                        "type": "object",
                        "properties": {
                            "hard": {
                                "description": "The limits in force.",
                                "type": "object",
                                "additionalProperties": {"type": "integer", "format": "int64"},
                            },
                            "used": {
                                "description": "What the logical cluster holds.",
                                "type": "object",
                                "additionalProperties": {"type": "integer", "format": "int64"},
                            },
                        },
                    },
                    "conditions": {
                        "description": "The workspace's current conditions (Ready).",
                        "type": "array",
                        "items": {"allOf": [{"$ref": schema_ref(CONDITION)}], "default": {}},
                        "x-kubernetes-list-map-keys": ["type"],
                        "x-kubernetes-list-type": "map",
                    },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_definitions;

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn the_workspace_and_its_list_are_defined_and_every_reference_resolves() {
        let defs = builtin_definitions();
        for name in [
            WORKSPACE.to_string(),
            format!("{WORKSPACE}List"),
            WORKSPACE_TEMPLATE.to_string(),
            format!("{WORKSPACE_TEMPLATE}List"),
            SYNC_TARGET.to_string(),
            format!("{SYNC_TARGET}List"),
        ] {
            let def = defs.get(&name).expect(&name);
            let mut found = Vec::new();
            refs(def, &mut found);
            assert!(!found.is_empty(), "{name}");
            for r in found {
                let target = r.trim_start_matches("#/components/schemas/");
                assert!(defs.contains_key(target), "{name}: {r} does not resolve");
            }
        }
        let gvk = &defs[WORKSPACE]["x-kubernetes-group-version-kind"][0];
        assert_eq!(gvk["group"], "tenancy.kplane.io");
        assert_eq!(gvk["kind"], "Workspace");
        let gvk = &defs[WORKSPACE_TEMPLATE]["x-kubernetes-group-version-kind"][0];
        assert_eq!(gvk["kind"], "WorkspaceTemplate");
        let gvk = &defs[SYNC_TARGET]["x-kubernetes-group-version-kind"][0];
        assert_eq!(gvk["group"], "sync.kplane.io");
        assert_eq!(gvk["kind"], "SyncTarget");
        let items =
            &defs[WORKSPACE_TEMPLATE]["properties"]["spec"]["properties"]["manifests"]["items"];
        assert_eq!(items["x-kubernetes-embedded-resource"], true);
        assert_eq!(items["x-kubernetes-preserve-unknown-fields"], true);
    }

    /// Manifests keep every field (typed decoding prunes nothing inside them).
    #[test]
    fn template_manifests_are_not_pruned() {
        let mut obj = serde_json::json!({
            "apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "WorkspaceTemplate",
            "metadata": {"name": "t"},
            "spec": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "c"}, "data": {"k": "v"}}],
                     "bogus": 1},
        });
        let report = crate::typed::prune_and_check(WORKSPACE_TEMPLATE, &mut obj);
        assert_eq!(report.unknown, ["spec.bogus"]);
        assert_eq!(obj["spec"]["manifests"][0]["data"]["k"], "v");
    }
}
