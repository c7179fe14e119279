//! A SyncTarget's spec as the sync feature reads it ([`TargetSpec`]), its validation, and
//! the names the feature uses (group, storage resource, finalizers, annotation).

use kplane_types::{Cause, ClusterName, UserInfo};
use serde_json::{json, Value};

use crate::label_selector;
use crate::meta;
use crate::options::ListParams;

/// The group of the sync API.
pub const SYNC_GROUP: &str = "sync.kplane.io";
/// The storage resource of SyncTargets.
pub const SYNC_TARGET_RESOURCE: &str = "sync.kplane.io/synctargets";
/// Holds a deleted SyncTarget until its syncer (or the sync controllers) drained it.
pub const DRAIN_FINALIZER: &str = "sync.kplane.io/drain";
/// The annotation that assigns an object to a target: `<target-cluster-path>/<name>`.
pub const TARGET_ANNOTATION: &str = "sync.kplane.io/target";
/// Holds a deleted synced object until the syncer removed its copy on the host.
pub const SYNCER_FINALIZER: &str = "sync.kplane.io/syncer";
/// `spec.heartbeatTimeoutSeconds` when not given.
pub const DEFAULT_HEARTBEAT_TIMEOUT_SECONDS: i64 = 30;

/// One synced resource: (group, version, resource); group `""` is the core group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SyncedResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// What the assignment needs of a SyncTarget's spec, read from a stored (defaulted) object.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetSpec {
    pub name: String,
    /// `spec.namespaceSelector`; `None` selects every namespace.
    pub namespace_selector: Option<Value>,
    pub include_descendants: bool,
    pub resources: Vec<SyncedResource>,
    /// The target carries a deletionTimestamp: it takes no new objects.
    pub deleting: bool,
    /// `spec.reflectPods`: host pods reflected into a covered logical cluster.
    pub reflect_pods: Vec<ReflectedPods>,
}

/// One entry of `spec.reflectPods` (defaults applied: the target's cluster, the host
/// namespace's name).
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectedPods {
    pub host_namespace: String,
    pub selector: Value,
    /// Empty: the target's own logical cluster.
    pub cluster: String,
    pub namespace: String,
}

impl TargetSpec {
    /// The spec of a stored SyncTarget (defaults applied where the object lacks them).
    pub fn of(obj: &Value) -> TargetSpec {
        let spec = obj.get("spec");
        let field = |f: &str| spec.and_then(|s| s.get(f));
        let mut resources: Vec<SyncedResource> = field("resources")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|r| {
                let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                SyncedResource {
                    group: s("group"),
                    version: s("version"),
                    resource: s("resource"),
                }
            })
            .collect();
        if resources.is_empty() {
            resources.push(SyncedResource {
                group: "batch".into(),
                version: "v1".into(),
                resource: "jobs".into(),
            });
        }
        TargetSpec {
            name: meta::name_of(obj).to_string(),
            namespace_selector: field("namespaceSelector")
                .filter(|v| v.is_object())
                .cloned(),
            include_descendants: field("includeDescendants")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            resources,
            deleting: meta::is_deleting(obj),
            reflect_pods: field("reflectPods")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|e| {
                    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    let host_namespace = s("hostNamespace");
                    let namespace = Some(s("namespace"))
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| host_namespace.clone());
                    ReflectedPods {
                        selector: e.get("selector").cloned().unwrap_or_else(|| json!({})),
                        cluster: s("cluster"),
                        host_namespace,
                        namespace,
                    }
                })
                .collect(),
        }
    }

    /// Whether `spec.reflectPods` reflects host pods into `namespace` of `cluster` (the
    /// target's own cluster is `target_cluster`).
    pub fn reflects_pods_into(&self, target_cluster: &str, cluster: &str, namespace: &str) -> bool {
        self.reflect_pods.iter().any(|r| {
            let c = if r.cluster.is_empty() {
                target_cluster
            } else {
                r.cluster.as_str()
            };
            c == cluster && r.namespace == namespace
        })
    }

    /// Whether the target syncs `group/version/resource`.
    pub fn syncs(&self, group: &str, version: &str, resource: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.group == group && r.version == version && r.resource == resource)
    }

    /// Whether the target syncs `group/resource` in any version (an object created
    /// through another version of a synced resource is the same object).
    pub fn syncs_resource(&self, group: &str, resource: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.group == group && r.resource == resource)
    }

    /// Whether the namespace with `labels` is selected (an unconvertible selector selects
    /// nothing).
    pub fn selects_namespace(&self, labels: &serde_json::Map<String, Value>) -> bool {
        match &self.namespace_selector {
            None => true,
            Some(sel) => label_selector::selector_matches(sel, labels).unwrap_or(false),
        }
    }
}

/// A string field at `path` that must be a DNS-1123 label: absent, null or empty is
/// `Required` when `required`, and fine otherwise.
fn dns_label_field(path: String, v: Option<&Value>, required: bool) -> Vec<Cause> {
    match v {
        None | Some(Value::Null) => required
            .then(|| Cause::required(path))
            .into_iter()
            .collect(),
        Some(Value::String(s)) if s.is_empty() => required
            .then(|| Cause::required(path))
            .into_iter()
            .collect(),
        Some(Value::String(s)) => kplane_types::validation::is_dns1123_label(s)
            .iter()
            .map(|msg| Cause::invalid(&path, &json!(s), msg))
            .collect(),
        Some(other) => vec![Cause::invalid(path, other, "must be a string")],
    }
}

/// One `spec.reflectPods` entry at `at`: `hostNamespace` and `namespace` (if given)
/// DNS-1123 labels, `selector` a valid label selector, `cluster` (if given) a logical
/// cluster name.
fn validate_reflected_pods(at: &str, e: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !e.is_object() {
        causes.push(Cause::invalid(at, e, "must be an object"));
        return causes;
    }
    for (key, required) in [("hostNamespace", true), ("namespace", false)] {
        causes.extend(dns_label_field(format!("{at}.{key}"), e.get(key), required));
    }
    match e.get("selector") {
        None | Some(Value::Null) => causes.push(Cause::required(format!("{at}.selector"))),
        Some(sel @ Value::Object(_)) => causes.extend(label_selector::validate_label_selector(
            sel,
            &format!("{at}.selector"),
            false,
        )),
        Some(other) => causes.push(Cause::invalid(
            format!("{at}.selector"),
            other,
            "must be a label selector",
        )),
    }
    match e.get("cluster") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() || kplane_types::ClusterName::parse(s).is_some() => {}
        Some(other) => causes.push(Cause::invalid(
            format!("{at}.cluster"),
            other,
            "must be a logical cluster name (segments of lower-case letters, digits and '-', joined by ':')",
        )),
    }
    causes
}

/// `spec.namespaceSelector` a valid label selector; each `spec.resources[i]` with a
/// `version` and a `resource` (a lower-case DNS-1123 label) and a string `group`, no entry
/// twice; `spec.heartbeatTimeoutSeconds` at least 1.
pub(crate) fn validate_spec(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec");
    let field = |f: &str| spec.and_then(|s| s.get(f)).filter(|v| !v.is_null());
    match field("namespaceSelector") {
        None => {}
        Some(sel @ Value::Object(_)) => causes.extend(label_selector::validate_label_selector(
            sel,
            "spec.namespaceSelector",
            false,
        )),
        Some(other) => causes.push(Cause::invalid(
            "spec.namespaceSelector",
            other,
            "must be a label selector",
        )),
    }
    match field("includeDescendants") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => causes.push(Cause::invalid(
            "spec.includeDescendants",
            other,
            "must be a boolean",
        )),
    }
    match field("resources") {
        None => causes.push(Cause::required("spec.resources")),
        Some(Value::Array(a)) if a.is_empty() => causes.push(Cause::required("spec.resources")),
        Some(Value::Array(a)) => {
            let mut seen = Vec::new();
            for (i, r) in a.iter().enumerate() {
                let at = format!("spec.resources[{i}]");
                if !r.is_object() {
                    causes.push(Cause::invalid(&at, r, "must be an object"));
                    continue;
                }
                match r.get("group") {
                    None | Some(Value::Null | Value::String(_)) => {}
                    Some(other) => causes.push(Cause::invalid(
                        format!("{at}.group"),
                        other,
                        "must be a string",
                    )),
                }
                for key in ["version", "resource"] {
                    causes.extend(dns_label_field(format!("{at}.{key}"), r.get(key), true));
                }
                let key = (r.get("group"), r.get("version"), r.get("resource"));
                if seen.contains(&key) {
                    causes.push(Cause::duplicate(&at, r));
                } else {
                    seen.push(key);
                }
            }
        }
        Some(other) => causes.push(Cause::invalid("spec.resources", other, "must be a list")),
    }
    match field("reflectPods") {
        None => {}
        Some(Value::Array(a)) => {
            for (i, e) in a.iter().enumerate() {
                causes.extend(validate_reflected_pods(
                    &format!("spec.reflectPods[{i}]"),
                    e,
                ));
            }
        }
        Some(other) => causes.push(Cause::invalid("spec.reflectPods", other, "must be a list")),
    }
    match field("heartbeatTimeoutSeconds") {
        None => causes.push(Cause::required("spec.heartbeatTimeoutSeconds")),
        Some(v) => match v.as_i64() {
            Some(n) if n >= 1 => {}
            Some(_) => causes.push(Cause::invalid(
                "spec.heartbeatTimeoutSeconds",
                v,
                "must be greater than or equal to 1",
            )),
            None => causes.push(Cause::invalid(
                "spec.heartbeatTimeoutSeconds",
                v,
                "must be an integer",
            )),
        },
    }
    causes
}

const CONDITION_STATUSES: &[&str] = &["True", "False", "Unknown"];

/// `status.syncedObjects` not negative; each condition with a `type` and a `status` of
/// True, False or Unknown, no type twice.
pub(crate) fn validate_status(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(status) = obj.get("status") else {
        return causes;
    };
    if let Some(n) = status.get("syncedObjects").filter(|v| !v.is_null()) {
        if n.as_i64().is_none_or(|n| n < 0) {
            causes.push(Cause::invalid(
                "status.syncedObjects",
                n,
                "must be greater than or equal to 0",
            ));
        }
    }
    let conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut seen = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        match c.get("type").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(format!("{at}.type"))),
            Some(t) if seen.contains(&t) => {
                causes.push(Cause::duplicate(format!("{at}.type"), &json!(t)))
            }
            Some(t) => seen.push(t),
        }
        match c.get("status") {
            Some(Value::String(s)) if CONDITION_STATUSES.contains(&s.as_str()) => {}
            None | Some(Value::Null) => causes.push(Cause::required(format!("{at}.status"))),
            Some(other) => causes.push(Cause::not_supported(
                format!("{at}.status"),
                other,
                CONDITION_STATUSES,
            )),
        }
    }
    causes
}

/// The prefix of the endpoint's internal identity (`<prefix><cluster>/<target>`).
pub const SYNCER_USER_PREFIX: &str = "system:kplane:syncer:";

/// One SyncTarget: its logical cluster and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRef {
    pub cluster: ClusterName,
    pub name: String,
}

impl TargetRef {
    /// `<cluster>/<name>`: the annotation value of the objects assigned to it.
    pub fn id(&self) -> String {
        format!("{}/{}", self.cluster, self.name)
    }

    /// The identity the endpoint serves its requests as, once its own checks passed.
    pub fn user(&self) -> UserInfo {
        UserInfo {
            username: format!("{SYNCER_USER_PREFIX}{}", self.id()),
            uid: String::new(),
            groups: vec![kplane_types::request::SYSTEM_AUTHENTICATED.to_string()],
            extra: Default::default(),
        }
    }

    /// The target id of an endpoint identity ([`TargetRef::user`]); `None` for any other user.
    pub fn id_of_user(user: &UserInfo) -> Option<&str> {
        user.username.strip_prefix(SYNCER_USER_PREFIX)
    }

    /// The list/watch restriction to the objects assigned to this target.
    pub fn list_filter(&self, p: &mut ListParams) {
        p.annotation = Some((TARGET_ANNOTATION.to_string(), self.id()));
    }

    /// Whether `obj` is assigned to this target.
    pub fn assigns(&self, obj: &Value) -> bool {
        obj.pointer("/metadata/annotations")
            .and_then(|a| a.get(TARGET_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|v| v == self.id())
    }
}

/// Whether objects of `cluster` can be assigned to `spec`'s target in `target_cluster`:
/// its own cluster, and with `includeDescendants` the clusters below it.
pub fn covers(spec: &TargetSpec, target_cluster: &ClusterName, cluster: &ClusterName) -> bool {
    if spec.include_descendants {
        cluster.is_within(target_cluster)
    } else {
        cluster == target_cluster
    }
}
