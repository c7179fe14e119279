//! `metav1.Status`: the one shape every error takes on the wire, with the reasons and
//! field-error causes Kubernetes defines (`k8s.io/apimachinery/pkg/api/errors`).

use serde::Serialize;
use serde_json::{json, Value};

/// `metav1.StatusReason` values kplane produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusReason {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Expired,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    UnsupportedMediaType,
    RequestEntityTooLarge,
    TooManyRequests,
    Timeout,
    InternalError,
    ServiceUnavailable,
    /// `StatusReasonUnknown` (""): what kube-apiserver answers, with code 500, for an error
    /// that carries no status of its own.
    Unknown,
}

impl StatusReason {
    pub fn as_str(self) -> &'static str {
        use StatusReason::*;
        match self {
            BadRequest => "BadRequest",
            Unauthorized => "Unauthorized",
            Forbidden => "Forbidden",
            NotFound => "NotFound",
            AlreadyExists => "AlreadyExists",
            Conflict => "Conflict",
            Gone => "Gone",
            Expired => "Expired",
            Invalid => "Invalid",
            MethodNotAllowed => "MethodNotAllowed",
            NotAcceptable => "NotAcceptable",
            UnsupportedMediaType => "UnsupportedMediaType",
            RequestEntityTooLarge => "RequestEntityTooLarge",
            TooManyRequests => "TooManyRequests",
            Timeout => "Timeout",
            InternalError => "InternalError",
            ServiceUnavailable => "ServiceUnavailable",
            Unknown => "",
        }
    }

    /// The HTTP code Kubernetes pairs with this reason.
    pub fn code(self) -> u16 {
        use StatusReason::*;
        match self {
            BadRequest => 400,
            Unauthorized => 401,
            Forbidden => 403,
            NotFound => 404,
            MethodNotAllowed => 405,
            NotAcceptable => 406,
            AlreadyExists | Conflict => 409,
            Gone | Expired => 410,
            RequestEntityTooLarge => 413,
            UnsupportedMediaType => 415,
            Invalid => 422,
            TooManyRequests => 429,
            InternalError | Unknown => 500,
            ServiceUnavailable => 503,
            Timeout => 504,
        }
    }
}

/// `metav1.CauseType` values (field errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CauseType {
    FieldValueNotFound,
    FieldValueRequired,
    FieldValueInvalid,
    FieldValueDuplicate,
    FieldValueNotSupported,
    FieldValueForbidden,
    FieldValueTooLong,
    FieldValueTooMany,
    FieldValueTypeInvalid,
    NamespaceTerminating,
    ResourceVersionTooLarge,
    FieldManagerConflict,
    UnexpectedServerResponse,
    /// kplane: the logical cluster lives elsewhere now; the message is its URL
    /// (`field` is `location`).
    Moved,
    /// A cause without a reason (`reason` omitted on the wire), as admission policies'
    /// refusals carry their message.
    Unspecified,
}

impl CauseType {
    pub fn as_str(self) -> &'static str {
        use CauseType::*;
        match self {
            FieldValueNotFound => "FieldValueNotFound",
            FieldValueRequired => "FieldValueRequired",
            FieldValueInvalid => "FieldValueInvalid",
            FieldValueDuplicate => "FieldValueDuplicate",
            FieldValueNotSupported => "FieldValueNotSupported",
            FieldValueForbidden => "FieldValueForbidden",
            FieldValueTooLong => "FieldValueTooLong",
            FieldValueTooMany => "FieldValueTooMany",
            FieldValueTypeInvalid => "FieldValueTypeInvalid",
            NamespaceTerminating => "NamespaceTerminating",
            ResourceVersionTooLarge => "ResourceVersionTooLarge",
            FieldManagerConflict => "FieldManagerConflict",
            UnexpectedServerResponse => "UnexpectedServerResponse",
            Moved => "Moved",
            Unspecified => "",
        }
    }
}

/// One `metav1.StatusCause`. For field errors, `message` is the full Kubernetes field-error
/// text (e.g. `Required value`) and `field` the path (e.g. `metadata.name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    pub reason: CauseType,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: CauseType, field: impl Into<String>, message: impl Into<String>) -> Self {
        Cause {
            reason,
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn required(field: impl Into<String>) -> Self {
        Cause::new(CauseType::FieldValueRequired, field, "Required value")
    }

    /// `Invalid value: <value>: <detail>` as Kubernetes prints it.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        let shown = match value {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        let message = if detail.is_empty() {
            format!("Invalid value: {shown}")
        } else {
            format!("Invalid value: {shown}: {detail}")
        };
        Cause::new(CauseType::FieldValueInvalid, field, message)
    }

    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Cause::new(
            CauseType::FieldValueForbidden,
            field,
            format!("Forbidden: {detail}"),
        )
    }

    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Cause::new(
            CauseType::FieldValueDuplicate,
            field,
            format!("Duplicate value: {value}"),
        )
    }

    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Cause::new(
            CauseType::FieldValueNotSupported,
            field,
            format!(
                "Unsupported value: {value}: supported values: {}",
                list.join(", ")
            ),
        )
    }

    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Cause::new(
            CauseType::FieldValueTooLong,
            field,
            format!("Too long: may not be more than {max} bytes"),
        )
    }

    /// `field: message`, the form used inside an Invalid status message.
    pub fn render(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// A failure `metav1.Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub reason: StatusReason,
    pub code: u16,
    pub message: String,
    pub details: Option<Details>,
    /// Seconds a client should wait before retrying (`details.retryAfterSeconds`).
    pub retry_after: Option<u32>,
    /// A continue token offered with the error (`metadata.continue`: the inconsistent
    /// continuation of a list whose snapshot is gone).
    pub list_continue: Option<String>,
}

/// `metav1.StatusDetails`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    pub group: String,
    /// Kubernetes puts the resource (plural) here for most errors, the Kind for Invalid.
    pub kind: String,
    pub uid: String,
    pub causes: Vec<Cause>,
}

#[derive(Serialize)]
struct WireCause<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    field: &'a str,
}

impl Status {
    pub fn new(reason: StatusReason, message: impl Into<String>) -> Self {
        Status {
            reason,
            code: reason.code(),
            message: message.into(),
            details: None,
            retry_after: None,
            list_continue: None,
        }
    }

    /// The same Status offering `token` as its `metadata.continue`.
    pub fn with_continue(mut self, token: String) -> Self {
        self.list_continue = Some(token);
        self
    }

    pub fn with_details(mut self, details: Details) -> Self {
        self.details = Some(details);
        self
    }

    /// `<resource>[.<group>] "<name>"` as Kubernetes qualifies names in messages.
    fn qualified(group: &str, resource: &str) -> String {
        if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        }
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let q = Self::qualified(group, resource);
        let msg = if name.is_empty() {
            format!("{q} not found")
        } else {
            format!("{q} \"{name}\" not found")
        };
        Status::new(StatusReason::NotFound, msg).with_details(Details {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let q = Self::qualified(group, resource);
        Status::new(
            StatusReason::AlreadyExists,
            format!("{q} \"{name}\" already exists"),
        )
        .with_details(Details {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let q = Self::qualified(group, resource);
        Status::new(
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on {q} \"{name}\": {why}"),
        )
        .with_details(Details {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// The standard optimistic-concurrency conflict.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// `<Kind>[.<group>] "<name>" is invalid: [causes]` (422).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let q = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        // The message lists each distinct error once (`ErrorList.ToAggregate`); the
        // causes keep every one.
        let mut rendered: Vec<String> = Vec::with_capacity(causes.len());
        for r in causes.iter().map(Cause::render) {
            if !rendered.contains(&r) {
                rendered.push(r);
            }
        }
        let list = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        Status::new(
            StatusReason::Invalid,
            format!("{q} \"{name}\" is invalid: {list}"),
        )
        .with_details(Details {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes,
            ..Default::default()
        })
    }

    /// 403: `<resource>[.<group>] ["<name>"] is forbidden: <why>`, or `forbidden: <why>`
    /// when no resource is concerned (a non-resource path).
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let msg = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {why}")
        } else {
            let q = Self::qualified(group, resource);
            if name.is_empty() {
                format!("{q} is forbidden: {why}")
            } else {
                format!("{q} \"{name}\" is forbidden: {why}")
            }
        };
        Status::new(StatusReason::Forbidden, msg).with_details(Details {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::new(StatusReason::BadRequest, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Status::new(
            StatusReason::InternalError,
            format!("Internal error occurred: {}", message.into()),
        )
    }

    pub fn method_not_allowed(verb: &str, resource: &str) -> Self {
        Status::new(
            StatusReason::MethodNotAllowed,
            format!("{verb} is not supported on resources of kind \"{resource}\""),
        )
    }

    /// 410 with reason `Expired` (too-old resourceVersion or continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Status::new(StatusReason::Expired, message)
    }

    /// The JSON body (`kind: Status`).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code,
        });
        if self.reason == StatusReason::Unknown {
            if let Some(o) = v.as_object_mut() {
                o.remove("reason");
            }
        }
        if let Some(c) = &self.list_continue {
            v["metadata"] = json!({"continue": c});
        }
        let mut details = serde_json::Map::new();
        if let Some(d) = &self.details {
            for (k, val) in [
                ("name", &d.name),
                ("group", &d.group),
                ("kind", &d.kind),
                ("uid", &d.uid),
            ] {
                if !val.is_empty() {
                    details.insert(k.into(), Value::String(val.clone()));
                }
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| {
                        serde_json::to_value(WireCause {
                            reason: c.reason.as_str(),
                            message: &c.message,
                            field: &c.field,
                        })
                        .unwrap_or(Value::Null)
                    })
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        if !details.is_empty() || self.details.is_some() {
            v["details"] = Value::Object(details);
        }
        v
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.reason.as_str(),
            self.message
        )
    }
}

impl std::error::Error for Status {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_kubernetes() {
        let s = Status::not_found("", "configmaps", "x").to_json();
        assert_eq!(s["message"], "configmaps \"x\" not found");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "configmaps");
        let s = Status::not_found("example.com", "widgets", "w").to_json();
        assert_eq!(s["message"], "widgets.example.com \"w\" not found");
    }

    #[test]
    fn invalid_lists_causes() {
        let s = Status::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                Cause::required("metadata.name"),
                Cause::invalid("data[a b]", &json!("a b"), "bad"),
            ],
        )
        .to_json();
        assert_eq!(
            s["message"],
            "ConfigMap \"x\" is invalid: [metadata.name: Required value, data[a b]: Invalid value: \"a b\": bad]"
        );
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(s["code"], 422);
    }

    #[test]
    fn forbidden_matches_kubernetes() {
        let s = Status::forbidden("", "configmaps", "", "User \"x\" cannot list").to_json();
        assert_eq!(
            s["message"],
            "configmaps is forbidden: User \"x\" cannot list"
        );
        assert_eq!(s["code"], 403);
        assert_eq!(s["reason"], "Forbidden");
        assert_eq!(s["details"], json!({"kind": "configmaps"}));
        let s = Status::forbidden("apps", "deployments", "d", "no").to_json();
        assert_eq!(s["message"], "deployments.apps \"d\" is forbidden: no");
        assert_eq!(s["details"]["name"], "d");
        let s = Status::forbidden("", "", "", "User \"x\" cannot get path \"/metrics\"").to_json();
        assert_eq!(
            s["message"],
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
        assert_eq!(s["details"], json!({}));
    }

    #[test]
    fn unknown_reason_is_a_500_without_reason() {
        let v = Status::new(StatusReason::Unknown, "boom").to_json();
        assert_eq!(v["code"], 500);
        assert!(v.get("reason").is_none(), "{v}");
        assert_eq!(v["message"], "boom");
    }
}
