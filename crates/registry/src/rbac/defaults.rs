//! The default ClusterRoles and ClusterRoleBindings kube-apiserver bootstraps
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), the part of them that makes sense
//! without Pods, nodes and kube-controller-manager: `cluster-admin`, the aggregated
//! `admin`/`edit`/`view` with the `system:aggregate-to-*` roles they gather,
//! `system:basic-user`, `system:discovery`, `system:public-info-viewer`,
//! `system:monitoring` and `system:auth-delegator`, and the bindings of the first ones to
//! `system:masters`, `system:authenticated` and `system:unauthenticated`.
//!
//! They are compiled once into one [`Layer`] shared by every logical cluster: each
//! cluster's own stored RBAC objects are evaluated above it (a stored object of the same
//! name takes the default's place), so 10,000 clusters hold no copy of them. They are also
//! served as objects, with upstream's label `kubernetes.io/bootstrapping: rbac-defaults`
//! and annotation `rbac.authorization.kubernetes.io/autoupdate: "true"`: built-in objects
//! of the ClusterRole and ClusterRoleBinding types ([`crate::builtins`]), rendered per
//! cluster on read from the one copy here.

use std::sync::{Arc, LazyLock};

use serde_json::{json, Value};

use super::policy::{Layer, Policy, Role};
use super::rules::Rule;
use crate::builtins::Builtins;

/// The label upstream puts on every bootstrapped object.
pub const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The aggregation labels of `admin`, `edit` and `view`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn role(name: &str, labels: &[(&str, &str)], rules: Vec<Rule>) -> Role {
    let mut l = serde_json::Map::new();
    l.insert(BOOTSTRAP_LABEL.0.into(), json!(BOOTSTRAP_LABEL.1));
    for (k, v) in labels {
        l.insert((*k).into(), json!(v));
    }
    Role {
        name: name.into(),
        rules: rules.into(),
        labels: l,
        aggregation: None,
    }
}

fn aggregated(name: &str, labels: &[(&str, &str)], select: &str) -> Role {
    let mut r = role(name, labels, Vec::new());
    r.aggregation = Some(vec![json!({"matchLabels": {select: "true"}})]);
    r
}

fn view_rules() -> Vec<Rule> {
    vec![
        Rule::resource(
            READ,
            &[""],
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        Rule::resource(
            READ,
            &[""],
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        Rule::resource(READ, &[""], &["namespaces"]),
        Rule::resource(READ, &["discovery.k8s.io"], &["endpointslices"]),
        Rule::resource(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
            ],
        ),
        Rule::resource(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        Rule::resource(
            READ,
            &["batch"],
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        Rule::resource(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        Rule::resource(
            READ,
            &["networking.k8s.io"],
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

fn edit_rules() -> Vec<Rule> {
    vec![
        Rule::resource(
            READ,
            &[""],
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        Rule::resource(&["impersonate"], &[""], &["serviceaccounts"]),
        Rule::resource(
            WRITE,
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        Rule::resource(&["create"], &[""], &["pods/eviction"]),
        Rule::resource(
            WRITE,
            &[""],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        Rule::resource(&["create"], &[""], &["serviceaccounts/token"]),
        Rule::resource(
            WRITE,
            &["apps"],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        Rule::resource(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        Rule::resource(WRITE, &["batch"], &["jobs", "cronjobs"]),
        Rule::resource(WRITE, &["policy"], &["poddisruptionbudgets"]),
        Rule::resource(
            WRITE,
            &["networking.k8s.io"],
            &["networkpolicies", "ingresses"],
        ),
    ]
}

fn admin_rules() -> Vec<Rule> {
    vec![
        Rule::resource(
            READ_WRITE,
            &["rbac.authorization.k8s.io"],
            &["roles", "rolebindings"],
        ),
        Rule::resource(
            &["create"],
            &["authorization.k8s.io"],
            &["localsubjectaccessreviews"],
        ),
    ]
}

/// The default ClusterRoles.
fn cluster_roles() -> Vec<Role> {
    let get = &["get"][..];
    vec![
        role(
            "cluster-admin",
            &[],
            vec![
                Rule::resource(&["*"], &["*"], &["*"]),
                Rule::urls(&["*"], &["*"]),
            ],
        ),
        aggregated("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            admin_rules(),
        ),
        role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            edit_rules(),
        ),
        role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            view_rules(),
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                Rule::resource(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                Rule::resource(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role(
            "system:discovery",
            &[],
            vec![Rule::urls(
                get,
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        role(
            "system:public-info-viewer",
            &[],
            vec![Rule::urls(
                get,
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![Rule::urls(
                get,
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        role(
            "system:auth-delegator",
            &[],
            vec![
                Rule::resource(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                Rule::resource(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
    ]
}

/// The default ClusterRoleBindings as stored objects would read: (name, role, groups).
pub const CLUSTER_ROLE_BINDINGS: &[(&str, &str, &[&str])] = &[
    ("cluster-admin", "cluster-admin", &["system:masters"]),
    (
        "system:basic-user",
        "system:basic-user",
        &["system:authenticated"],
    ),
    (
        "system:discovery",
        "system:discovery",
        &["system:authenticated"],
    ),
    (
        "system:public-info-viewer",
        "system:public-info-viewer",
        &["system:authenticated", "system:unauthenticated"],
    ),
    (
        "system:monitoring",
        "system:monitoring",
        &["system:monitoring"],
    ),
];

fn binding_json(name: &str, role: &str, groups: &[&str]) -> Value {
    json!({
        "metadata": {"name": name, "labels": {BOOTSTRAP_LABEL.0: BOOTSTRAP_LABEL.1}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": groups.iter().map(|g| json!({
            "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g,
        })).collect::<Vec<_>>(),
    })
}

static DEFAULTS: LazyLock<Arc<Layer>> = LazyLock::new(|| {
    let bindings: Vec<Value> = CLUSTER_ROLE_BINDINGS
        .iter()
        .map(|(n, r, g)| binding_json(n, r, g))
        .collect();
    Arc::new(Layer::build(
        cluster_roles().into_iter().map(Arc::new).collect(),
        Vec::new(),
        &bindings,
        &[],
        None,
    ))
});

/// The defaults, compiled once.
pub fn layer() -> &'static Arc<Layer> {
    &DEFAULTS
}

/// The annotation upstream puts on every bootstrapped object (its reconciler may rewrite
/// the object at start-up).
pub const AUTOUPDATE_ANNOTATION: (&str, &str) =
    ("rbac.authorization.kubernetes.io/autoupdate", "true");

fn with_autoupdate(mut obj: Value) -> Value {
    obj["metadata"]["annotations"] = json!({AUTOUPDATE_ANNOTATION.0: AUTOUPDATE_ANNOTATION.1});
    obj
}

/// A default ClusterRole as an object: an aggregated role with the rules the defaults
/// aggregate to (what RBAC evaluates it with in a cluster that adds no role to it).
fn role_json(role: &Role, policy: &Policy<'_>) -> Value {
    let rules: Vec<Value> = policy
        .cluster_role_rules(&role.name)
        .unwrap_or(&role.rules)
        .iter()
        .map(Rule::to_json)
        .collect();
    let mut obj = json!({
        "metadata": {"name": role.name, "labels": role.labels},
        "rules": rules,
    });
    if let Some(selectors) = &role.aggregation {
        obj["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
    }
    with_autoupdate(obj)
}

static ROLE_OBJECTS: LazyLock<Builtins> = LazyLock::new(|| {
    let empty = Layer::default();
    let policy = Policy {
        cluster: &empty,
        defaults: layer(),
    };
    Builtins::new(cluster_roles().iter().map(|r| role_json(r, &policy)))
});

static BINDING_OBJECTS: LazyLock<Builtins> = LazyLock::new(|| {
    Builtins::new(
        CLUSTER_ROLE_BINDINGS
            .iter()
            .map(|(n, r, g)| with_autoupdate(binding_json(n, r, g))),
    )
});

/// The default ClusterRoles as the objects every logical cluster shows.
pub fn cluster_role_objects() -> &'static Builtins {
    &ROLE_OBJECTS
}

/// The default ClusterRoleBindings as the objects every logical cluster shows.
pub fn cluster_role_binding_objects() -> &'static Builtins {
    &BINDING_OBJECTS
}

/// The default aggregated ClusterRoles (`admin`, `edit`, `view`).
pub fn aggregated_names() -> impl Iterator<Item = &'static str> {
    let objects = cluster_role_objects();
    objects.names().filter(|n| {
        objects
            .get(n)
            .is_some_and(|o| o.get("aggregationRule").is_some())
    })
}

/// How many rules `system:aggregate-to-view` has (tests).
#[cfg(test)]
pub fn layer_view_rules() -> usize {
    view_rules().len()
}
