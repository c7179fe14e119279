//! The audit event (`audit.k8s.io/v1` `Event`), as one JSON line of the log.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use kplane_types::{RequestInfo, UserInfo};

/// The user fields of an event (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct User {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for User {
    fn from(u: &UserInfo) -> Self {
        User {
            username: u.username.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// What object a request is about (`ObjectReference`).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The fields of a request object's metadata that complete an `objectRef`.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub resource_version: String,
}

impl ObjectRef {
    /// The object of a resource request; none for a non-resource request.
    pub fn of(r: &RequestInfo) -> Option<ObjectRef> {
        r.is_resource_request.then(|| ObjectRef {
            resource: r.resource.clone(),
            namespace: r.namespace.clone().unwrap_or_default(),
            name: r.name.clone().unwrap_or_default(),
            uid: String::new(),
            api_group: r.api_group.clone(),
            api_version: r.api_version.clone(),
            resource_version: String::new(),
            subresource: r.subresource.clone().unwrap_or_default(),
        })
    }

    /// Fills the fields the URL did not give from the request's object (upstream's
    /// `LogRequestObject`).
    pub fn complete(&mut self, m: &ObjectMeta) {
        for (field, value) in [
            (&mut self.namespace, &m.namespace),
            (&mut self.name, &m.name),
            (&mut self.uid, &m.uid),
            (&mut self.resource_version, &m.resource_version),
        ] {
            if field.is_empty() {
                field.clone_from(value);
            }
        }
    }
}

/// The response's status (a `metav1.Status`): the code, and for a failure the Status the
/// response carried (status, message, reason, details).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ResponseStatus {
    pub metadata: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub code: u16,
}

impl ResponseStatus {
    /// The status of a response with `code` whose body was `status` (a failure's Status).
    pub fn new(code: u16, status: Option<&Value>) -> ResponseStatus {
        let text = |k: &str| {
            status
                .and_then(|s| s.get(k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        ResponseStatus {
            metadata: BTreeMap::new(),
            status: text("status"),
            message: text("message"),
            reason: text("reason"),
            details: status.and_then(|s| s.get("details")).cloned(),
            code,
        }
    }
}

/// One audit event.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// About how many bytes the event takes while queued (not written).
    #[serde(skip)]
    pub weight: usize,
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: &'static str,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: &'static str,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: User,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<User>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A time as audit events write it: RFC 3339 in UTC with microseconds.
pub fn timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Removes `metadata.managedFields` from an object, and from each of a list's items
/// (`omitManagedFields`).
pub fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for i in items {
            strip_managed_fields(i);
        }
    }
}
