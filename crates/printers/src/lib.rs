//! kplane-printers: server-side Table printing (`meta.k8s.io/v1` Table) for the built-in
//! kinds, as kube-apiserver's printers produce it for `kubectl get`
//! (`k8s.io/kubernetes/pkg/printers/internalversion/printers.go`, Kubernetes 1.32).
//!
//! [`columns`] gives a kind's column definitions, [`cells`] one object's row in that
//! order. Rows are always generated "wide" (every column, priority 1 included), as the
//! API server does; kubectl hides priority > 0 unless `-o wide`. Kinds without a printer
//! (Role, ClusterRole, CustomResourceDefinition, anything unknown) get the default
//! convertor's `Name` + `Created At` (`apiserver pkg/registry/rest/table.go`).
//!
//! Ages and durations use [`human_duration`] (apimachinery `duration.HumanDuration`).

pub mod jsonpath;
mod pod;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

/// One `TableColumnDefinition`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i32,
}

const fn col(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "string",
        format: "",
        description,
        priority: 0,
    }
}

const fn wide(name: &'static str, description: &'static str) -> Column {
    Column {
        name,
        type_: "string",
        format: "",
        description,
        priority: 1,
    }
}

const fn name_col(priority: i32) -> Column {
    Column {
        name: "Name",
        type_: "string",
        format: "name",
        description: NAME_DESC,
        priority,
    }
}

const AGE: Column = col("Age", CREATION_DESC);

// Descriptions are the OpenAPI (SwaggerDoc) texts of the fields upstream points at.
const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS_DESC: &str = "Names of each container in the template.";
const IMAGES_DESC: &str = "Images referenced by each container in the template.";

const DEFAULT_COLUMNS: &[Column] = &[
    name_col(0),
    Column {
        name: "Created At",
        type_: "date",
        format: "",
        description: CREATION_DESC,
        priority: 0,
    },
];

const NAMESPACE_COLUMNS: &[Column] = &[
    name_col(0),
    col("Status", "The status of the namespace"),
    AGE,
];

const CONFIG_MAP_COLUMNS: &[Column] = &[
    name_col(0),
    col("Data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
    AGE,
];

const SECRET_COLUMNS: &[Column] = &[
    name_col(0),
    col("Type", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    col("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
    AGE,
];

const SERVICE_ACCOUNT_COLUMNS: &[Column] = &[
    name_col(0),
    col("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret"),
    AGE,
];

const EVENT_COLUMNS: &[Column] = &[
    col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    col("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    col("Object", "The object that this event is about."),
    wide("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object."),
    wide("Source", "The component reporting this event. Should be a short machine understandable string."),
    col("Message", "A human-readable description of the status of this operation."),
    wide("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
    wide("Count", "The number of times this event has occurred."),
    name_col(1),
];

const LEASE_COLUMNS: &[Column] = &[
    name_col(0),
    col("Holder", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
    AGE,
];

const RESOURCE_QUOTA_COLUMNS: &[Column] = &[
    name_col(0),
    AGE,
    col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
    col("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
];

// Upstream describes the column with extensions/v1beta1's text of the field.
const NETWORK_POLICY_COLUMNS: &[Column] = &[
    name_col(0),
    col("Pod-Selector", "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace."),
    AGE,
];

const ROLE_BINDING_COLUMNS: &[Column] = &[
    name_col(0),
    col("Role", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."),
    AGE,
    wide("Users", "Users in the roleBinding"),
    wide("Groups", "Groups in the roleBinding"),
    wide("ServiceAccounts", "ServiceAccounts in the roleBinding"),
];

const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &[
    name_col(0),
    col("Role", "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."),
    AGE,
    wide("Users", "Users in the clusterRoleBinding"),
    wide("Groups", "Groups in the clusterRoleBinding"),
    wide("ServiceAccounts", "ServiceAccounts in the clusterRoleBinding"),
];

const JOB_COLUMNS: &[Column] = &[
    name_col(0),
    col("Status", "Status of the job."),
    col("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
    col("Duration", "Time required to complete the job."),
    AGE,
    wide("Containers", CONTAINERS_DESC),
    wide("Images", IMAGES_DESC),
    wide("Selector", "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
];

// printPersistentVolumeClaim: VolumeMode only with -o wide.
const PVC_COLUMNS: &[Column] = &[
    name_col(0),
    col("Status", "phase represents the current phase of PersistentVolumeClaim."),
    col("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    col("Capacity", "capacity represents the actual resources of the underlying volume."),
    col("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
    col("StorageClass", "StorageClass of the pvc"),
    col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    AGE,
    wide("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec."),
];

// printPodTemplate: no Age column.
const POD_TEMPLATE_COLUMNS: &[Column] = &[
    name_col(0),
    col("Containers", CONTAINERS_DESC),
    col("Images", IMAGES_DESC),
    col("Pod Labels", "The labels for the pod template."),
];

const WORKSPACE_COLUMNS: &[Column] = &[
    name_col(0),
    col("Phase", "Initializing, Ready, Terminating or Failed."),
    col(
        "URL",
        "The full URL of the workspace's logical cluster on this server.",
    ),
    AGE,
];

const WORKSPACE_TEMPLATE_COLUMNS: &[Column] = &[
    name_col(0),
    Column {
        name: "Manifests",
        type_: "integer",
        format: "",
        description: "The number of manifests the template applies.",
        priority: 0,
    },
    AGE,
];

const SYNC_TARGET_COLUMNS: &[Column] = &[
    name_col(0),
    col(
        "Ready",
        "The status of the target's Ready condition: whether its syncer reports in.",
    ),
    Column {
        name: "Synced",
        type_: "integer",
        format: "",
        description: "The number of objects the syncer keeps on its cluster.",
        priority: 0,
    },
    col("Heartbeat", "The time since the syncer's last heartbeat."),
    AGE,
];

// printMutatingWebhook / printValidatingWebhook: the number of webhooks.
const WEBHOOK_CONFIGURATION_COLUMNS: &[Column] = &[
    name_col(0),
    Column {
        name: "Webhooks",
        type_: "integer",
        format: "",
        description: "Webhooks indicates the number of webhooks registered in this configuration",
        priority: 0,
    },
    AGE,
];

// printValidatingAdmissionPolicy: the number of validations and the param kind.
const ADMISSION_POLICY_COLUMNS: &[Column] = &[
    name_col(0),
    Column {
        name: "Validations",
        type_: "integer",
        format: "",
        description:
            "Validations indicates the number of validation rules defined in this configuration",
        priority: 0,
    },
    Column {
        name: "ParamKind",
        type_: "string",
        format: "",
        description: "ParamKind specifies the kind of resources used to parameterize this policy",
        priority: 0,
    },
    AGE,
];

// printValidatingAdmissionPolicyBinding: the policy and the param reference.
const ADMISSION_POLICY_BINDING_COLUMNS: &[Column] = &[
    name_col(0),
    Column {
        name: "PolicyName",
        type_: "string",
        format: "",
        description:
            "PolicyName indicates the policy definition which the policy binding binded to",
        priority: 0,
    },
    Column {
        name: "ParamRef",
        type_: "string",
        format: "",
        description: "ParamRef indicates the param resource which sets the configration param",
        priority: 0,
    },
    AGE,
];

/// The kinds with a dedicated printer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Printer {
    Namespace,
    ConfigMap,
    Secret,
    ServiceAccount,
    CoreEvent,
    EventsEvent,
    Lease,
    WebhookConfiguration,
    AdmissionPolicy,
    AdmissionPolicyBinding,
    NetworkPolicy,
    ResourceQuota,
    Pod,
    PodTemplate,
    PersistentVolumeClaim,
    RoleBinding,
    ClusterRoleBinding,
    Job,
    Workspace,
    WorkspaceTemplate,
    SyncTarget,
    Default,
}

fn printer(group: &str, kind: &str) -> Printer {
    match (group, kind) {
        ("", "Namespace") => Printer::Namespace,
        ("", "ConfigMap") => Printer::ConfigMap,
        ("", "Secret") => Printer::Secret,
        ("", "ServiceAccount") => Printer::ServiceAccount,
        ("", "Event") => Printer::CoreEvent,
        ("events.k8s.io", "Event") => Printer::EventsEvent,
        ("coordination.k8s.io", "Lease") => Printer::Lease,
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
        ) => Printer::WebhookConfiguration,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => Printer::AdmissionPolicy,
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            Printer::AdmissionPolicyBinding
        }
        ("networking.k8s.io", "NetworkPolicy") => Printer::NetworkPolicy,
        ("", "PodTemplate") => Printer::PodTemplate,
        ("", "PersistentVolumeClaim") => Printer::PersistentVolumeClaim,
        ("", "ResourceQuota") => Printer::ResourceQuota,
        ("", "Pod") => Printer::Pod,
        ("rbac.authorization.k8s.io", "RoleBinding") => Printer::RoleBinding,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => Printer::ClusterRoleBinding,
        ("batch", "Job") => Printer::Job,
        ("tenancy.kplane.io", "Workspace") => Printer::Workspace,
        ("tenancy.kplane.io", "WorkspaceTemplate") => Printer::WorkspaceTemplate,
        ("sync.kplane.io", "SyncTarget") => Printer::SyncTarget,
        _ => Printer::Default,
    }
}

/// A ResourceQuota's row (`printResourceQuota`): `<name>: <used>/<hard>` for each name of
/// `status.hard` in name order, `limits.*` names in the Limit column, the rest in Request.
fn resource_quota_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let empty = serde_json::Map::new();
    let hard = at(obj, &["status", "hard"])
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let used = at(obj, &["status", "used"]).and_then(Value::as_object);
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    for n in names {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(x)) => x.to_string(),
            _ => "0".to_string(),
        };
        let cell = format!(
            "{n}: {}/{}",
            text(used.and_then(|u| u.get(n))),
            text(hard.get(n))
        );
        if n.split('.').next() == Some("limits") && n.contains('.') {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    vec![
        name(obj),
        age(obj, now),
        Value::String(request.join(", ")),
        Value::String(limit.join(", ")),
    ]
}

/// Whether the kind has its own printer (otherwise [`columns`] gives the default pair).
pub fn has_printer(group: &str, kind: &str) -> bool {
    printer(group, kind) != Printer::Default
}

/// Column definitions for a built-in kind (group "" for core), or the default
/// (`Name`, `Created At`) when the kind has no printer.
pub fn columns(group: &str, kind: &str) -> &'static [Column] {
    match printer(group, kind) {
        Printer::Namespace => NAMESPACE_COLUMNS,
        Printer::ConfigMap => CONFIG_MAP_COLUMNS,
        Printer::Secret => SECRET_COLUMNS,
        Printer::ServiceAccount => SERVICE_ACCOUNT_COLUMNS,
        Printer::CoreEvent | Printer::EventsEvent => EVENT_COLUMNS,
        Printer::Lease => LEASE_COLUMNS,
        Printer::WebhookConfiguration => WEBHOOK_CONFIGURATION_COLUMNS,
        Printer::AdmissionPolicy => ADMISSION_POLICY_COLUMNS,
        Printer::AdmissionPolicyBinding => ADMISSION_POLICY_BINDING_COLUMNS,
        Printer::NetworkPolicy => NETWORK_POLICY_COLUMNS,
        Printer::PodTemplate => POD_TEMPLATE_COLUMNS,
        Printer::PersistentVolumeClaim => PVC_COLUMNS,
        Printer::ResourceQuota => RESOURCE_QUOTA_COLUMNS,
        Printer::Pod => pod::POD_COLUMNS,
        Printer::RoleBinding => ROLE_BINDING_COLUMNS,
        Printer::ClusterRoleBinding => CLUSTER_ROLE_BINDING_COLUMNS,
        Printer::Job => JOB_COLUMNS,
        Printer::Workspace => WORKSPACE_COLUMNS,
        Printer::WorkspaceTemplate => WORKSPACE_TEMPLATE_COLUMNS,
        Printer::SyncTarget => SYNC_TARGET_COLUMNS,
        Printer::Default => DEFAULT_COLUMNS,
    }
}

/// The `Name` column every table starts with.
pub fn name_column() -> &'static Column {
    &DEFAULT_COLUMNS[0]
}

/// The age of an object (`now - metadata.creationTimestamp`) as kubectl prints it.
pub fn age_cell(obj: &Value, now: DateTime<Utc>) -> Value {
    age(obj, now)
}

/// A custom resource column cell (`additionalPrinterColumns`, apiextensions' table
/// convertor): the first JSONPath match; `string` prints it, `integer`/`number`/`boolean`
/// keep the JSON value, `date` becomes a human duration; no match is `null`.
pub fn custom_cell(obj: &Value, json_path: &str, type_: &str, now: DateTime<Utc>) -> Value {
    let Some(v) = jsonpath::find(obj, json_path).into_iter().next() else {
        return Value::Null;
    };
    match type_ {
        "string" => match v {
            Value::String(s) => json!(s),
            Value::Null => Value::Null,
            other => json!(other.to_string()),
        },
        "integer" => v.as_i64().map(|n| json!(n)).unwrap_or(Value::Null),
        "number" => v.as_f64().map(|n| json!(n)).unwrap_or(Value::Null),
        "boolean" => v.as_bool().map(|b| json!(b)).unwrap_or(Value::Null),
        "date" => v
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| {
                json!(human_duration(
                    now.signed_duration_since(t.with_timezone(&Utc))
                ))
            })
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// `[{"name","type","format","description","priority"}, ...]`, every key always present.
pub fn column_definitions_json(cols: &[Column]) -> Value {
    Value::Array(
        cols.iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.type_,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

/// The cells of one row for that kind, in column order; `now` is the current time.
pub fn cells(group: &str, kind: &str, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    match printer(group, kind) {
        Printer::Namespace => vec![
            name(obj),
            s(str_at(obj, &["status", "phase"])),
            age(obj, now),
        ],
        Printer::ConfigMap => {
            vec![
                name(obj),
                json!(map_len(obj, "data") + map_len(obj, "binaryData")),
                age(obj, now),
            ]
        }
        Printer::Secret => vec![
            name(obj),
            s(str_at(obj, &["type"])),
            json!(map_len(obj, "data")),
            age(obj, now),
        ],
        Printer::ServiceAccount => {
            vec![name(obj), json!(list_len(obj, &["secrets"])), age(obj, now)]
        }
        Printer::CoreEvent => event_cells(&EventFields::CORE, obj, now),
        Printer::EventsEvent => event_cells(&EventFields::EVENTS_V1, obj, now),
        Printer::AdmissionPolicy => {
            let param_kind = match obj.pointer("/spec/paramKind") {
                Some(pk) if pk.is_object() => {
                    format!("{}/{}", str_at(pk, &["apiVersion"]), str_at(pk, &["kind"]))
                }
                _ => "<unset>".to_string(),
            };
            let validations = obj
                .pointer("/spec/validations")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            vec![name(obj), json!(validations), s(&param_kind), age(obj, now)]
        }
        Printer::AdmissionPolicyBinding => vec![
            name(obj),
            s(str_at(obj, &["spec", "policyName"])),
            s(&param_ref(obj.pointer("/spec/paramRef"))),
            age(obj, now),
        ],
        Printer::WebhookConfiguration => vec![
            name(obj),
            json!(obj
                .get("webhooks")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)),
            age(obj, now),
        ],
        Printer::Lease => vec![
            name(obj),
            s(str_at(obj, &["spec", "holderIdentity"])),
            age(obj, now),
        ],
        Printer::NetworkPolicy => vec![
            name(obj),
            Value::String(kplane_types::labels::format_label_selector(
                at(obj, &["spec", "podSelector"]).unwrap_or(&Value::Null),
            )),
            age(obj, now),
        ],
        Printer::ResourceQuota => resource_quota_cells(obj, now),
        Printer::Pod => pod::cells(obj, now),
        Printer::PodTemplate => pod_template_cells(obj),
        Printer::PersistentVolumeClaim => pvc_cells(obj, now),
        Printer::RoleBinding | Printer::ClusterRoleBinding => role_binding_cells(obj, now),
        Printer::Job => job_cells(obj, now),
        Printer::Workspace => vec![
            name(obj),
            s(str_at(obj, &["status", "phase"])),
            s(str_at(obj, &["status", "URL"])),
            age(obj, now),
        ],
        Printer::WorkspaceTemplate => vec![
            name(obj),
            json!(list_len(obj, &["spec", "manifests"])),
            age(obj, now),
        ],
        Printer::SyncTarget => sync_target_cells(obj, now),
        Printer::Default => vec![name(obj), json!(created_at(obj))],
    }
}

/// The `conditions` of a row of that kind, where its printer gives them (a finished Pod's
/// `Completed`); `None` otherwise.
pub fn row_conditions(group: &str, kind: &str, obj: &Value) -> Option<Value> {
    match printer(group, kind) {
        Printer::Pod => pod::row_conditions(obj),
        _ => None,
    }
}

/// A SyncTarget's row: its Ready condition's status, the synced object count, and the age
/// of the last heartbeat (`<unknown>` before the first).
fn sync_target_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ready = at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    vec![
        name(obj),
        s(ready),
        json!(int_at(obj, &["status", "syncedObjects"]).unwrap_or(0)),
        s(&since(
            parse_time(at(obj, &["status", "lastHeartbeatTime"])),
            now,
        )),
        age(obj, now),
    ]
}

/// apimachinery `duration.HumanDuration`: a short duration with about 2-3 significant
/// figures ("90s", "3m10s", "70m", "5h3m", "47h", "2d1h", "367d", "2y1d", "8y").
/// Up to a second in the future reads as "0s"; further is "<invalid>".
pub fn human_duration(d: Duration) -> String {
    // Whole seconds, truncated toward zero like Go's int(d.Seconds()).
    let secs = d.num_seconds();
    if secs < -1 {
        return "<invalid>".to_string();
    }
    if secs < 0 {
        return "0s".to_string();
    }
    if secs < 60 * 2 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// apimachinery `duration.ShortHumanDuration`: one unit only ("59s", "3m", "5h", "3d", "2y").
pub fn short_human_duration(d: Duration) -> String {
    let secs = d.num_seconds();
    if secs < -1 {
        "<invalid>".to_string()
    } else if secs < 0 {
        "0s".to_string()
    } else if secs < 60 {
        format!("{secs}s")
    } else if secs / 60 < 60 {
        format!("{}m", secs / 60)
    } else if secs / 3600 < 24 {
        format!("{}h", secs / 3600)
    } else if secs / 3600 < 24 * 365 {
        format!("{}d", secs / 3600 / 24)
    } else {
        format!("{}y", secs / 3600 / 24 / 365)
    }
}

/// Parses a `metav1.Time`/`MicroTime`; None for missing, malformed or Go's zero time.
fn parse_time(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(v?.as_str()?)
        .ok()?
        .with_timezone(&Utc);
    // Go's zero time (0001-01-01T00:00:00Z) prints as unknown, like a missing one.
    (t.timestamp() != ZERO_TIME_UNIX).then_some(t)
}

/// Unix seconds of 0001-01-01T00:00:00Z.
const ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// `translateTimestampSince`: the human duration since `t`, `<unknown>` when unset.
fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        Some(t) => human_duration(now.signed_duration_since(t)),
        None => "<unknown>".to_string(),
    }
}

fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |cur, seg| cur.get(seg))
}

/// A binding's `paramRef` as `printValidatingAdmissionPolicyBinding` shows it:
/// `<namespace>/<name>`, `*/<name>` without a namespace, the selector as Go's generated
/// `String()` writes it, `<unset>` without one.
fn param_ref(pr: Option<&Value>) -> String {
    let Some(pr) = pr.filter(|p| p.is_object()) else {
        return "<unset>".into();
    };
    let name = str_at(pr, &["name"]);
    let namespace = str_at(pr, &["namespace"]);
    match (name, namespace, pr.get("selector").filter(|s| !s.is_null())) {
        ("", _, Some(sel)) => go_label_selector(sel),
        ("", _, None) => "<unset>".into(),
        (n, "", _) => format!("*/{n}"),
        (n, ns, _) => format!("{ns}/{n}"),
    }
}

/// `metav1.LabelSelector.String()` (gogo-protobuf's generated form).
fn go_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| {
                    let values: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|v| v.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!(
                        "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                        str_at(e, &["key"]),
                        str_at(e, &["operator"]),
                        values.join(" ")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or("")
}

fn int_at(obj: &Value, path: &[&str]) -> Option<i64> {
    at(obj, path).and_then(Value::as_i64)
}

fn s(v: &str) -> Value {
    Value::String(v.to_string())
}

fn name(obj: &Value) -> Value {
    s(str_at(obj, &["metadata", "name"]))
}

fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::String(since(
        parse_time(at(obj, &["metadata", "creationTimestamp"])),
        now,
    ))
}

fn map_len(obj: &Value, field: &str) -> i64 {
    obj.get(field)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len() as i64)
}

fn list_len(obj: &Value, path: &[&str]) -> i64 {
    at(obj, path)
        .and_then(Value::as_array)
        .map_or(0, |a| a.len() as i64)
}

/// The default convertor's `Created At` cell: RFC 3339 in UTC, whole seconds (Go's zero
/// time when unset).
fn created_at(obj: &Value) -> String {
    match at(obj, &["metadata", "creationTimestamp"]).and_then(Value::as_str) {
        Some(raw) => match DateTime::parse_from_rfc3339(raw) {
            Ok(t) => t
                .with_timezone(&Utc)
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
            Err(_) => raw.to_string(),
        },
        None => "0001-01-01T00:00:00Z".to_string(),
    }
}

/// Where an Event version keeps what the event printer shows (events.k8s.io/v1 is
/// printed after conversion to the core shape, so only the field names differ).
struct EventFields {
    regarding: &'static str,
    message: &'static str,
    first_timestamp: &'static str,
    last_timestamp: &'static str,
    count: &'static str,
    source: &'static str,
    reporting_controller: &'static str,
}

impl EventFields {
    const CORE: EventFields = EventFields {
        regarding: "involvedObject",
        message: "message",
        first_timestamp: "firstTimestamp",
        last_timestamp: "lastTimestamp",
        count: "count",
        source: "source",
        reporting_controller: "reportingComponent",
    };
    const EVENTS_V1: EventFields = EventFields {
        regarding: "regarding",
        message: "note",
        first_timestamp: "deprecatedFirstTimestamp",
        last_timestamp: "deprecatedLastTimestamp",
        count: "deprecatedCount",
        source: "deprecatedSource",
        reporting_controller: "reportingController",
    };
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

/// `printEvent`, wide: Last Seen, Type, Reason, Object, Subobject, Source, Message,
/// First Seen, Count, Name.
fn event_cells(f: &EventFields, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let first_ts = parse_time(obj.get(f.first_timestamp));
    let first_seen = if first_ts.is_some() {
        since(first_ts, now)
    } else {
        since(parse_time(obj.get("eventTime")), now)
    };
    let mut last_seen = match parse_time(obj.get(f.last_timestamp)) {
        Some(t) => since(Some(t), now),
        None => first_seen.clone(),
    };
    let mut count = int_at(obj, &[f.count]).unwrap_or(0);
    match obj.get("series").filter(|v| v.is_object()) {
        Some(series) => {
            last_seen = since(parse_time(series.get("lastObservedTime")), now);
            count = int_at(series, &["count"]).unwrap_or(0);
        }
        // Singleton events of the new API carry no count.
        None if count == 0 => count = 1,
        None => {}
    }
    let kind = str_at(obj, &[f.regarding, "kind"]).to_lowercase();
    let obj_name = str_at(obj, &[f.regarding, "name"]);
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{kind}/{obj_name}")
    };
    let component = first_non_empty(
        str_at(obj, &[f.source, "component"]),
        str_at(obj, &[f.reporting_controller]),
    );
    let instance = first_non_empty(
        str_at(obj, &[f.source, "host"]),
        str_at(obj, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        Value::String(last_seen),
        s(str_at(obj, &["type"])),
        s(str_at(obj, &["reason"])),
        Value::String(target),
        s(str_at(obj, &[f.regarding, "fieldPath"])),
        Value::String(source),
        s(str_at(obj, &[f.message]).trim()),
        Value::String(first_seen),
        json!(count),
        name(obj),
    ]
}

/// `printRoleBinding`/`printClusterRoleBinding`, wide: Name, Role, Age, Users, Groups,
/// ServiceAccounts (service accounts as `namespace/name`; lists joined by ", ").
fn role_binding_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(obj, &["roleRef", "kind"]),
        str_at(obj, &["roleRef", "name"])
    );
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in at(obj, &["subjects"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let sub_name = str_at(subject, &["name"]);
        match str_at(subject, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{sub_name}", str_at(subject, &["namespace"]))),
            "User" => users.push(sub_name.to_string()),
            "Group" => groups.push(sub_name.to_string()),
            _ => {}
        }
    }
    vec![
        name(obj),
        Value::String(role),
        age(obj, now),
        Value::String(users.join(", ")),
        Value::String(groups.join(", ")),
        Value::String(sas.join(", ")),
    ]
}

/// `hasJobCondition`: the first condition of that type decides.
fn has_job_condition(obj: &Value, kind: &str) -> bool {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|conds| conds.iter().find(|c| str_at(c, &["type"]) == kind))
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

/// `printPersistentVolumeClaim`: the phase (`Terminating` while deleting), the volume and,
/// once one is named, the status's capacity and access modes (`GetAccessModesAsString`),
/// the class (the beta annotation first), the volume attributes class and mode
/// (`<unset>` when absent).
fn pvc_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let deleting = at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    let phase = if deleting {
        "Terminating"
    } else {
        str_at(obj, &["status", "phase"])
    };
    let volume = str_at(obj, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let held: Vec<&str> = at(obj, &["status", "accessModes"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let modes: Vec<&str> = [
            ("ReadWriteOnce", "RWO"),
            ("ReadOnlyMany", "ROX"),
            ("ReadWriteMany", "RWX"),
            ("ReadWriteOncePod", "RWOP"),
        ]
        .iter()
        .filter(|(m, _)| held.contains(m))
        .map(|(_, short)| *short)
        .collect();
        (
            str_at(obj, &["status", "capacity", "storage"]).to_string(),
            modes.join(","),
        )
    };
    let class = at(
        obj,
        &[
            "metadata",
            "annotations",
            "volume.beta.kubernetes.io/storage-class",
        ],
    )
    .and_then(Value::as_str)
    .unwrap_or_else(|| str_at(obj, &["spec", "storageClassName"]));
    let unset = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("<unset>").to_string();
    vec![
        name(obj),
        s(phase),
        s(volume),
        s(&capacity),
        s(&modes),
        s(class),
        s(&unset(at(obj, &["spec", "volumeAttributesClassName"]))),
        age(obj, now),
        s(&unset(at(obj, &["spec", "volumeMode"]))),
    ]
}

/// `layoutContainerCells`: the containers' names and their images, each joined by commas.
fn layout_container_cells(containers: Option<&Value>) -> (String, String) {
    let containers = containers.and_then(Value::as_array);
    let join = |field: &str| -> String {
        containers
            .into_iter()
            .flatten()
            .map(|c| str_at(c, &[field]))
            .collect::<Vec<_>>()
            .join(",")
    };
    (join("name"), join("image"))
}

/// `printPodTemplate`: the name, the containers' names and images joined by commas
/// (`layoutContainerCells`), and the template's labels as `labels.FormatLabels` writes them.
fn pod_template_cells(obj: &Value) -> Vec<Value> {
    let (names, images) = layout_container_cells(at(obj, &["template", "spec", "containers"]));
    let mut labels: Vec<String> = at(obj, &["template", "metadata", "labels"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    labels.sort();
    let labels = if labels.is_empty() {
        "<none>".to_string()
    } else {
        labels.join(",")
    };
    vec![
        name(obj),
        Value::String(names),
        Value::String(images),
        Value::String(labels),
    ]
}

/// `printJob`, wide: Name, Status, Completions, Duration, Age, Containers, Images, Selector.
fn job_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int_at(obj, &["status", "succeeded"]).unwrap_or(0);
    let completions = match int_at(obj, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(obj, &["spec", "parallelism"]).unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = parse_time(at(obj, &["status", "startTime"]));
    let duration = match (start, parse_time(at(obj, &["status", "completionTime"]))) {
        (None, _) => String::new(),
        (Some(st), None) => human_duration(now.signed_duration_since(st)),
        (Some(st), Some(done)) => human_duration(done.signed_duration_since(st)),
    };
    let deleting = at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    let status = if has_job_condition(obj, "Complete") {
        "Complete"
    } else if has_job_condition(obj, "Failed") {
        "Failed"
    } else if deleting {
        "Terminating"
    } else if has_job_condition(obj, "Suspended") {
        "Suspended"
    } else if has_job_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) =
        layout_container_cells(at(obj, &["spec", "template", "spec", "containers"]));
    let selector = at(obj, &["spec", "selector"]).unwrap_or(&Value::Null);
    vec![
        name(obj),
        s(status),
        Value::String(completions),
        Value::String(duration),
        age(obj, now),
        Value::String(names),
        Value::String(images),
        Value::String(kplane_types::labels::format_label_selector(selector)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        match DateTime::parse_from_rfc3339("2024-06-01T12:00:00Z") {
            Ok(t) => t.with_timezone(&Utc),
            Err(e) => panic!("{e}"),
        }
    }

    /// An RFC 3339 timestamp `secs` seconds before [`now`].
    fn ago(secs: i64) -> String {
        (now() - Duration::seconds(secs))
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }

    #[test]
    fn human_duration_matches_upstream() {
        let sec = Duration::seconds;
        let min = Duration::minutes;
        let hour = Duration::hours;
        for (d, want) in [
            (sec(-2), "<invalid>"),
            (Duration::milliseconds(-1999), "0s"),
            (sec(-1), "0s"),
            (sec(0), "0s"),
            (Duration::milliseconds(999), "0s"),
            (sec(1), "1s"),
            (sec(59), "59s"),
            (sec(70), "70s"),
            (sec(119), "119s"),
            (sec(120), "2m"),
            (sec(150), "2m30s"),
            (sec(190), "3m10s"),
            (sec(599), "9m59s"),
            (min(10), "10m"),
            (min(70), "70m"),
            (min(179), "179m"),
            (min(180), "3h"),
            (min(190), "3h10m"),
            (hour(7) + min(59), "7h59m"),
            (hour(8), "8h"),
            (hour(47), "47h"),
            (hour(48), "2d"),
            (hour(49), "2d1h"),
            (hour(8 * 24 - 1), "7d23h"),
            (hour(8 * 24 + 2), "8d"),
            (hour(367 * 24), "367d"),
            (hour(365 * 2 * 24 - 1), "729d"),
            (hour(365 * 2 * 24), "2y"),
            (hour(365 * 2 * 24 + 25), "2y1d"),
            (hour(365 * 8 * 24 - 1), "7y364d"),
            (hour(365 * 8 * 24 + 2), "8y"),
            (hour(365 * 30 * 24), "30y"),
        ] {
            assert_eq!(human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn short_human_duration_matches_upstream() {
        for (secs, want) in [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (60, "1m"),
            (3599, "59m"),
            (3600, "1h"),
            (86399, "23h"),
            (86400, "1d"),
            (365 * 86400 - 1, "364d"),
            (365 * 86400, "1y"),
        ] {
            assert_eq!(
                short_human_duration(Duration::seconds(secs)),
                want,
                "{secs}"
            );
        }
    }

    #[test]
    fn column_json_has_all_keys() {
        let cols = column_definitions_json(columns("", "ConfigMap"));
        assert_eq!(
            cols[0],
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESC, "priority": 0})
        );
        assert_eq!(cols[1]["format"], "");
        assert_eq!(cols[1]["name"], "Data");
        let names: Vec<&str> = columns("", "Event").iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        let prio: Vec<i32> = columns("", "Event").iter().map(|c| c.priority).collect();
        assert_eq!(prio, [0, 0, 0, 0, 1, 1, 0, 1, 1, 1]);
        assert_eq!(columns("", "Event"), columns("events.k8s.io", "Event"));
        assert!(!has_printer("rbac.authorization.k8s.io", "Role"));
        assert!(has_printer("batch", "Job"));
    }

    #[test]
    fn default_columns_for_kinds_without_printer() {
        for (g, k) in [
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("example.com", "Widget"),
        ] {
            let cols = columns(g, k);
            assert_eq!(cols.len(), 2);
            assert_eq!((cols[0].name, cols[0].format), ("Name", "name"));
            assert_eq!((cols[1].name, cols[1].type_), ("Created At", "date"));
        }
        let obj = json!({"metadata": {"name": "r", "creationTimestamp": "2024-01-02T03:04:05.123+02:00"}});
        assert_eq!(
            cells("rbac.authorization.k8s.io", "Role", &obj, now()),
            vec![json!("r"), json!("2024-01-02T01:04:05Z")]
        );
        assert_eq!(
            cells(
                "rbac.authorization.k8s.io",
                "Role",
                &json!({"metadata": {"name": "r"}}),
                now()
            ),
            vec![json!("r"), json!("0001-01-01T00:00:00Z")]
        );
    }

    #[test]
    fn namespace_config_map_secret_service_account_lease() {
        let ns = json!({"metadata": {"name": "default", "creationTimestamp": ago(300)}, "status": {"phase": "Active"}});
        assert_eq!(
            cells("", "Namespace", &ns, now()),
            vec![json!("default"), json!("Active"), json!("5m")]
        );
        let ns = json!({"metadata": {"name": "x"}});
        assert_eq!(
            cells("", "Namespace", &ns, now()),
            vec![json!("x"), json!(""), json!("<unknown>")]
        );
        let ns = json!({"metadata": {"name": "z", "creationTimestamp": "0001-01-01T00:00:00Z"}});
        assert_eq!(cells("", "Namespace", &ns, now())[2], json!("<unknown>"));

        let cm = json!({"metadata": {"name": "cm", "creationTimestamp": ago(3 * 86400 + 4 * 3600)},
            "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(
            cells("", "ConfigMap", &cm, now()),
            vec![json!("cm"), json!(3), json!("3d4h")]
        );
        let cm = json!({"metadata": {"name": "empty", "creationTimestamp": ago(10)}});
        assert_eq!(
            cells("", "ConfigMap", &cm, now()),
            vec![json!("empty"), json!(0), json!("10s")]
        );

        let secret = json!({"metadata": {"name": "s", "creationTimestamp": ago(90)}, "type": "Opaque", "data": {"k": "dg=="}});
        assert_eq!(
            cells("", "Secret", &secret, now()),
            vec![json!("s"), json!("Opaque"), json!(1), json!("90s")]
        );

        let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(2 * 365 * 86400 + 86400)},
            "secrets": [{"name": "t"}]});
        assert_eq!(
            cells("", "ServiceAccount", &sa, now()),
            vec![json!("default"), json!(1), json!("2y1d")]
        );
        let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(0)}});
        assert_eq!(
            cells("", "ServiceAccount", &sa, now()),
            vec![json!("default"), json!(0), json!("0s")]
        );

        let lease = json!({"metadata": {"name": "l", "creationTimestamp": ago(60)}, "spec": {"holderIdentity": "me"}});
        assert_eq!(
            cells("coordination.k8s.io", "Lease", &lease, now()),
            vec![json!("l"), json!("me"), json!("60s")]
        );
        let lease = json!({"metadata": {"name": "l", "creationTimestamp": ago(60)}, "spec": {}});
        assert_eq!(
            cells("coordination.k8s.io", "Lease", &lease, now())[1],
            json!("")
        );
    }

    #[test]
    fn admission_policies_and_bindings_print_as_upstream() {
        let g = "admissionregistration.k8s.io";
        let names = |kind: &str| -> Vec<&str> { columns(g, kind).iter().map(|c| c.name).collect() };
        assert_eq!(
            names("ValidatingAdmissionPolicy"),
            ["Name", "Validations", "ParamKind", "Age"]
        );
        assert_eq!(
            names("ValidatingAdmissionPolicyBinding"),
            ["Name", "PolicyName", "ParamRef", "Age"]
        );
        let p = json!({"metadata": {"name": "p", "creationTimestamp": ago(120)},
                       "spec": {"validations": [{"expression": "true"}],
                                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            cells(g, "ValidatingAdmissionPolicy", &p, now()),
            vec![json!("p"), json!(1), json!("v1/ConfigMap"), json!("2m")]
        );
        let bare = json!({"metadata": {"name": "p", "creationTimestamp": ago(120)}, "spec": {}});
        assert_eq!(
            cells(g, "ValidatingAdmissionPolicy", &bare, now())[2],
            json!("<unset>")
        );
        let b = |pr: Value| {
            let o = json!({"metadata": {"name": "b", "creationTimestamp": ago(120)},
                           "spec": {"policyName": "p", "paramRef": pr}});
            cells(g, "ValidatingAdmissionPolicyBinding", &o, now())
        };
        assert_eq!(
            b(json!({"name": "lim", "namespace": "ns"})),
            vec![json!("b"), json!("p"), json!("ns/lim"), json!("2m")]
        );
        assert_eq!(b(json!({"name": "lim"}))[2], json!("*/lim"));
        assert_eq!(b(Value::Null)[2], json!("<unset>"));
        assert_eq!(
            b(json!({"selector": {"matchLabels": {"a": "b"}}}))[2],
            json!("&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}")
        );
    }

    #[test]
    fn resource_quotas_print_used_over_hard_split_into_requests_and_limits() {
        let q = json!({"metadata": {"name": "q", "creationTimestamp": ago(120)},
            "status": {"hard": {"pods": "5", "limits.cpu": "2", "configmaps": "10", "cpu": "1"},
                       "used": {"pods": "1", "configmaps": "3", "limits.cpu": "500m"}}});
        assert_eq!(
            cells("", "ResourceQuota", &q, now()),
            vec![
                json!("q"),
                json!("2m"),
                json!("configmaps: 3/10, cpu: 0/1, pods: 1/5"),
                json!("limits.cpu: 500m/2")
            ]
        );
        let names: Vec<&str> = columns("", "ResourceQuota")
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["Name", "Age", "Request", "Limit"]);
    }

    #[test]
    fn webhook_configurations_print_their_webhook_count() {
        for kind in [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ] {
            let names: Vec<_> = columns("admissionregistration.k8s.io", kind)
                .iter()
                .map(|c| (c.name, c.type_))
                .collect();
            assert_eq!(
                names,
                [
                    ("Name", "string"),
                    ("Webhooks", "integer"),
                    ("Age", "string")
                ]
            );
            let obj = json!({"metadata": {"name": "hooks", "creationTimestamp": ago(120)},
                             "webhooks": [{"name": "a.b.c"}, {"name": "d.e.f"}]});
            assert_eq!(
                cells("admissionregistration.k8s.io", kind, &obj, now()),
                vec![json!("hooks"), json!(2), json!("2m")]
            );
            let bare = json!({"metadata": {"name": "none", "creationTimestamp": ago(120)}});
            assert_eq!(
                cells("admissionregistration.k8s.io", kind, &bare, now())[1],
                json!(0)
            );
        }
    }

    /// A kind's columns as (name, priority).
    fn headers(group: &str, kind: &str) -> Vec<(&'static str, i32)> {
        columns(group, kind)
            .iter()
            .map(|c| (c.name, c.priority))
            .collect()
    }

    #[test]
    fn claims_print_their_phase_and_once_bound_their_capacity_and_modes() {
        assert_eq!(
            headers("", "PersistentVolumeClaim"),
            [
                ("Name", 0),
                ("Status", 0),
                ("Volume", 0),
                ("Capacity", 0),
                ("Access Modes", 0),
                ("StorageClass", 0),
                ("VolumeAttributesClass", 0),
                ("Age", 0),
                ("VolumeMode", 1)
            ]
        );
        let pending = json!({"metadata": {"name": "data", "creationTimestamp": ago(120)},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                     "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"}});
        assert_eq!(
            cells("", "PersistentVolumeClaim", &pending, now()),
            vec![
                json!("data"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("fast"),
                json!("<unset>"),
                json!("2m"),
                json!("Filesystem")
            ]
        );
        let bound = json!({"metadata": {"name": "data", "creationTimestamp": ago(120),
                "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"},
                "deletionTimestamp": ago(1)},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast"},
            "status": {"phase": "Bound", "capacity": {"storage": "2Gi"},
                       "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        let row = cells("", "PersistentVolumeClaim", &bound, now());
        assert_eq!(
            row[1..6].to_vec(),
            vec![
                json!("Terminating"),
                json!("pv-1"),
                json!("2Gi"),
                json!("RWO,RWX"),
                json!("legacy")
            ]
        );
        assert_eq!(row[8], json!("<unset>"));
    }

    #[test]
    fn pod_templates_print_containers_images_and_pod_labels_without_an_age() {
        assert_eq!(
            headers("", "PodTemplate"),
            [
                ("Name", 0),
                ("Containers", 0),
                ("Images", 0),
                ("Pod Labels", 0)
            ]
        );
        let obj = json!({"metadata": {"name": "t", "creationTimestamp": ago(120)},
            "template": {"metadata": {"labels": {"tier": "web", "app": "a", "a": "z"}},
                "spec": {"containers": [{"name": "one", "image": "nginx"},
                                        {"name": "two", "image": "busybox:1"}]}}});
        assert_eq!(
            cells("", "PodTemplate", &obj, now()),
            vec![
                json!("t"),
                json!("one,two"),
                json!("nginx,busybox:1"),
                json!("a=z,app=a,tier=web")
            ]
        );
        let bare = json!({"metadata": {"name": "t"}});
        assert_eq!(
            cells("", "PodTemplate", &bare, now()),
            vec![json!("t"), json!(""), json!(""), json!("<none>")]
        );
    }

    #[test]
    fn network_policies_print_their_pod_selector() {
        assert_eq!(
            headers("networking.k8s.io", "NetworkPolicy"),
            [("Name", 0), ("Pod-Selector", 0), ("Age", 0)]
        );
        let np = |sel: Value| {
            let obj = json!({"metadata": {"name": "np", "creationTimestamp": ago(120)}, "spec": {"podSelector": sel}});
            cells("networking.k8s.io", "NetworkPolicy", &obj, now())
        };
        assert_eq!(
            np(json!({})),
            vec![json!("np"), json!("<none>"), json!("2m")]
        );
        assert_eq!(
            np(json!({"matchLabels": {"app": "db", "tier": "x"}}))[1],
            json!("app=db,tier=x")
        );
        assert_eq!(
            np(json!({"matchLabels": {"app": "db"},
                "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a", "b"]},
                                     {"key": "canary", "operator": "DoesNotExist"}]}))[1],
            json!("app=db,!canary,env notin (a,b)")
        );
        assert_eq!(
            np(json!({"matchExpressions": [{"key": "k", "operator": "Near"}]}))[1],
            json!("<error>")
        );
        let bare = json!({"metadata": {"name": "np", "creationTimestamp": ago(120)}});
        assert_eq!(
            cells("networking.k8s.io", "NetworkPolicy", &bare, now())[1],
            json!("<none>")
        );
    }

    #[test]
    fn workspaces() {
        let ws = json!({"metadata": {"name": "acme", "creationTimestamp": ago(90)},
                        "status": {"phase": "Ready", "URL": "https://h:1/clusters/root:acme"}});
        let cols: Vec<_> = columns("tenancy.kplane.io", "Workspace")
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(cols, ["Name", "Phase", "URL", "Age"]);
        assert_eq!(
            cells("tenancy.kplane.io", "Workspace", &ws, now()),
            vec![
                json!("acme"),
                json!("Ready"),
                json!("https://h:1/clusters/root:acme"),
                json!("90s")
            ]
        );
    }

    #[test]
    fn workspace_templates() {
        let t = json!({"metadata": {"name": "base", "creationTimestamp": ago(90)},
                       "spec": {"manifests": [{}, {}, {}]}});
        let cols: Vec<_> = columns("tenancy.kplane.io", "WorkspaceTemplate")
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(cols, ["Name", "Manifests", "Age"]);
        assert_eq!(
            cells("tenancy.kplane.io", "WorkspaceTemplate", &t, now()),
            vec![json!("base"), json!(3), json!("90s")]
        );
        let empty = json!({"metadata": {"name": "e", "creationTimestamp": ago(90)}});
        assert_eq!(
            cells("tenancy.kplane.io", "WorkspaceTemplate", &empty, now())[1],
            json!(0)
        );
    }

    #[test]
    fn sync_targets() {
        let t = json!({"metadata": {"name": "east", "creationTimestamp": ago(600)},
                       "status": {"lastHeartbeatTime": ago(5), "syncedObjects": 12,
                                  "conditions": [{"type": "Drained", "status": "False"},
                                                 {"type": "Ready", "status": "True"}]}});
        let cols: Vec<_> = columns("sync.kplane.io", "SyncTarget")
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(cols, ["Name", "Ready", "Synced", "Heartbeat", "Age"]);
        assert_eq!(
            cells("sync.kplane.io", "SyncTarget", &t, now()),
            vec![
                json!("east"),
                json!("True"),
                json!(12),
                json!("5s"),
                json!("10m")
            ]
        );
        let new = json!({"metadata": {"name": "west", "creationTimestamp": ago(90)}});
        assert_eq!(
            cells("sync.kplane.io", "SyncTarget", &new, now()),
            vec![
                json!("west"),
                json!(""),
                json!(0),
                json!("<unknown>"),
                json!("90s")
            ]
        );
    }

    #[test]
    fn core_events() {
        let ev = json!({
            "metadata": {"name": "pod.17a", "creationTimestamp": ago(600)},
            "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "type": "Normal", "message": "  pulled image \n",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(600), "lastTimestamp": ago(30), "count": 4
        });
        assert_eq!(
            cells("", "Event", &ev, now()),
            vec![
                json!("30s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web-1"),
                json!("spec.containers{app}"),
                json!("kubelet, node-1"),
                json!("pulled image"),
                json!("10m"),
                json!(4),
                json!("pod.17a"),
            ]
        );
        // New-style event: eventTime only, no count, reporting fields, a series.
        let ev = json!({
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Node"},
            "eventTime": "2024-06-01T11:59:00.000000Z",
            "reportingComponent": "ctrl", "reportingInstance": "ctrl-0",
            "type": "Warning", "reason": "R", "message": "m"
        });
        let row = cells("", "Event", &ev, now());
        assert_eq!(row[0], json!("60s"));
        assert_eq!(row[3], json!("node"));
        assert_eq!(row[5], json!("ctrl, ctrl-0"));
        assert_eq!(row[7], json!("60s"));
        assert_eq!(row[8], json!(1));
        let mut with_series = ev.clone();
        with_series["series"] = json!({"count": 7, "lastObservedTime": "2024-06-01T11:59:50.5Z"});
        let row = cells("", "Event", &with_series, now());
        assert_eq!((row[0].clone(), row[8].clone()), (json!("9s"), json!(7)));
        // Nothing known at all.
        let row = cells("", "Event", &json!({"metadata": {"name": "z"}}), now());
        assert_eq!(row[0], json!("<unknown>"));
        assert_eq!(row[7], json!("<unknown>"));
        assert_eq!(row[5], json!(""));
    }

    #[test]
    fn events_v1_events_use_their_own_field_names() {
        let ev = json!({
            "metadata": {"name": "e1"},
            "regarding": {"kind": "Deployment", "name": "web", "fieldPath": "spec"},
            "note": "scaled", "reason": "ScalingReplicaSet", "type": "Normal",
            "eventTime": "2024-06-01T11:00:00.000000Z",
            "reportingController": "deployment-controller", "reportingInstance": "kcm-1",
            "deprecatedFirstTimestamp": ago(7200), "deprecatedLastTimestamp": ago(120), "deprecatedCount": 3,
            "deprecatedSource": {"component": "old"}
        });
        assert_eq!(
            cells("events.k8s.io", "Event", &ev, now()),
            vec![
                json!("2m"),
                json!("Normal"),
                json!("ScalingReplicaSet"),
                json!("deployment/web"),
                json!("spec"),
                json!("old, kcm-1"),
                json!("scaled"),
                json!("120m"),
                json!(3),
                json!("e1"),
            ]
        );
    }

    #[test]
    fn role_bindings() {
        let rb = json!({
            "metadata": {"name": "rb", "creationTimestamp": ago(7 * 3600)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "ns1"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "ns2"},
                {"kind": "Other", "name": "x"}
            ]
        });
        let want = vec![
            json!("rb"),
            json!("ClusterRole/view"),
            json!("7h"),
            json!("alice, bob"),
            json!("devs"),
            json!("ns1/default, ns2/robot"),
        ];
        assert_eq!(
            cells("rbac.authorization.k8s.io", "RoleBinding", &rb, now()),
            want
        );
        assert_eq!(
            cells(
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                &rb,
                now()
            ),
            want
        );
        let bare = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"}});
        assert_eq!(
            cells("rbac.authorization.k8s.io", "RoleBinding", &bare, now()),
            vec![
                json!("b"),
                json!("Role/r"),
                json!("<unknown>"),
                json!(""),
                json!(""),
                json!("")
            ]
        );
    }

    #[test]
    fn jobs() {
        let job = json!({
            "metadata": {"name": "pi", "creationTimestamp": ago(400)},
            "spec": {
                "completions": 3, "parallelism": 2,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": {"spec": {"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "perl:5"}]}}
            },
            "status": {"succeeded": 3, "startTime": ago(400), "completionTime": ago(250),
                "conditions": [{"type": "Complete", "status": "True"}]}
        });
        assert_eq!(
            cells("batch", "Job", &job, now()),
            vec![
                json!("pi"),
                json!("Complete"),
                json!("3/3"),
                json!("2m30s"),
                json!("6m40s"),
                json!("a,b"),
                json!("busybox,perl:5"),
                json!("batch.kubernetes.io/controller-uid=u1"),
            ]
        );
        // An empty status prints Running with no duration; no selector prints <none>.
        let job = json!({"metadata": {"name": "j", "creationTimestamp": ago(5)}, "spec": {"template": {"spec": {}}}});
        assert_eq!(
            cells("batch", "Job", &job, now()),
            vec![
                json!("j"),
                json!("Running"),
                json!("0/1"),
                json!(""),
                json!("5s"),
                json!(""),
                json!(""),
                json!("<none>")
            ]
        );
        let with = |spec: Value, status: Value, meta: Value| {
            cells(
                "batch",
                "Job",
                &json!({"metadata": meta, "spec": spec, "status": status}),
                now(),
            )
        };
        let row = with(
            json!({"parallelism": 4}),
            json!({"succeeded": 1, "startTime": ago(3700)}),
            json!({}),
        );
        assert_eq!(
            (row[2].clone(), row[3].clone()),
            (json!("1/1 of 4"), json!("61m"))
        );
        let status_of = |conds: Value, meta: Value| {
            with(json!({}), json!({"conditions": conds}), meta)[1].clone()
        };
        assert_eq!(
            status_of(json!([{"type": "Failed", "status": "True"}]), json!({})),
            json!("Failed")
        );
        assert_eq!(
            status_of(
                json!([{"type": "Failed", "status": "True"}]),
                json!({"deletionTimestamp": ago(1)})
            ),
            json!("Failed")
        );
        assert_eq!(
            status_of(json!([]), json!({"deletionTimestamp": ago(1)})),
            json!("Terminating")
        );
        assert_eq!(
            status_of(json!([{"type": "Suspended", "status": "True"}]), json!({})),
            json!("Suspended")
        );
        assert_eq!(
            status_of(
                json!([{"type": "FailureTarget", "status": "True"}]),
                json!({})
            ),
            json!("FailureTarget")
        );
        assert_eq!(
            status_of(json!([{"type": "Complete", "status": "False"}]), json!({})),
            json!("Running")
        );
        // The first condition of a type decides.
        assert_eq!(
            status_of(
                json!([{"type": "Complete", "status": "False"}, {"type": "Complete", "status": "True"}]),
                json!({})
            ),
            json!("Running")
        );
        assert_eq!(
            status_of(
                json!([{"type": "SuccessCriteriaMet", "status": "True"}]),
                json!({})
            ),
            json!("Running")
        );
    }
}
