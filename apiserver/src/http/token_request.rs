//! The `token` subresource of serviceaccounts (`POST .../serviceaccounts/<name>/token`, an
//! `authentication.k8s.io/v1` TokenRequest, what `kubectl create token` sends): checks the
//! request as kube-apiserver does (name and namespace match the path, the ServiceAccount
//! exists, `spec.expirationSeconds` defaults to 3600 and is at least 600, a bound object is
//! a Secret that exists), signs a token for the ServiceAccount of the request's logical
//! cluster (`serviceaccount::token`) and answers the TokenRequest with `status.token` and
//! `status.expirationTimestamp`. Nothing is stored.

use serde_json::{json, Value};

use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::warnings::Warnings;
use kplane_registry::Target;
use kplane_types::{Cause, Status};

use super::AppState;
use crate::serviceaccount::token::{Grant, ObjectRef};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// What `spec.expirationSeconds` defaults to (authentication/v1 defaulting).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a token may be requested for.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::from(Status::invalid(GROUP, KIND, name, causes))
}

/// `spec.expirationSeconds` of a request (defaulted), or the validation errors.
fn expiration(spec: &Value) -> Result<i64, ApiError> {
    let secs = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: spec.expirationSeconds: expected an integer, got {v}"
            ))
        })?,
    };
    let value = json!(secs);
    if secs < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            vec![Cause::invalid(
                "spec.expirationSeconds",
                &value,
                "may not specify a duration less than 10 minutes",
            )],
        ));
    }
    if secs > MAX_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            vec![Cause::invalid(
                "spec.expirationSeconds",
                &value,
                "may not specify a duration larger than 2^32 seconds",
            )],
        ));
    }
    Ok(secs)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Serves a TokenRequest for ServiceAccount `name` (`sa` addresses serviceaccounts in the
/// request's cluster and namespace). Returns the answer and its warnings.
pub async fn create(
    state: &AppState,
    sa: &Target,
    name: &str,
    mut req: Value,
) -> ApiResult<(Value, Warnings)> {
    let Some(service_accounts) = state.service_accounts.as_ref() else {
        return Err(ApiError::not_found_path());
    };
    let Some(cluster) = sa.cluster.one().cloned() else {
        return Err(ApiError::from(Status::method_not_allowed(
            "POST",
            "serviceaccounts",
        )));
    };
    let namespace = sa.namespace.clone().unwrap_or_default();
    if !req.is_object() {
        return Err(ApiError::bad_request("the object must be a JSON object"));
    }
    match (
        req.get("apiVersion").and_then(Value::as_str),
        req.get("kind").and_then(Value::as_str),
    ) {
        (None | Some("authentication.k8s.io/v1"), None | Some(KIND)) => {}
        (av, kind) => {
            return Err(ApiError::bad_request(format!(
                "the body of the request was of kind {}/{}, not authentication.k8s.io/v1, Kind=TokenRequest",
                av.unwrap_or(""),
                kind.unwrap_or("")
            )))
        }
    }
    let meta_str = |f: &str| {
        req.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (req_name, req_ns) = (meta_str("name"), meta_str("namespace"));
    if !req_name.is_empty() && req_name != name {
        return Err(invalid(
            name,
            vec![Cause::invalid(
                "metadata.name",
                &json!(req_name),
                "must match the service account name if specified",
            )],
        ));
    }
    if !req_ns.is_empty() && req_ns != namespace {
        return Err(invalid(
            name,
            vec![Cause::invalid(
                "metadata.namespace",
                &json!(req_ns),
                "must match the service account namespace if specified",
            )],
        ));
    }
    // The ServiceAccount (404 `serviceaccounts "<name>" not found` when missing).
    let stored: Value = serde_json::from_slice(&state.registry.get(sa, name).await?)
        .map_err(|e| ApiError::internal(format!("decoding ServiceAccount {name}: {e}")))?;
    let sa_uid = stored
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let tokens = &service_accounts.tokens;
    let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut audiences = strings(spec.get("audiences"));
    if audiences.is_empty() {
        audiences = tokens.api_audiences(&cluster);
    }
    let mut expiration_seconds = expiration(&spec)?;
    let secret = bound_secret(state, sa, &namespace, spec.get("boundObjectRef")).await?;
    let warnings = Warnings::default();
    if let Some(max) = service_accounts.max_token_expiration_seconds {
        if max > 0 && expiration_seconds > max {
            warnings.push(format!(
                "requested expiration of {expiration_seconds} seconds shortened to {max} seconds"
            ));
            expiration_seconds = max;
        }
    }
    let now = chrono::Utc::now();
    let grant = Grant {
        cluster: Some(cluster.clone()),
        namespace: namespace.clone(),
        name: name.to_string(),
        uid: sa_uid,
        audiences: audiences.clone(),
        expiration_seconds,
        secret,
    };
    let (token, exp) = tokens
        .issue(&grant, now.timestamp())
        .map_err(|e| ApiError::internal(e.0))?;
    let rfc3339 =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let expires = chrono::DateTime::from_timestamp(exp, 0).unwrap_or(now);
    let mut spec_out = json!({"audiences": audiences, "expirationSeconds": expiration_seconds});
    if let Some(r) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        spec_out["boundObjectRef"] = r.clone();
    }
    if let Some(o) = req.as_object_mut() {
        o.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
        o.insert("kind".into(), json!(KIND));
        o.insert(
            "metadata".into(),
            json!({"name": name, "namespace": namespace, "creationTimestamp": rfc3339(now)}),
        );
        o.insert("spec".into(), spec_out);
        o.insert(
            "status".into(),
            json!({"token": token, "expirationTimestamp": rfc3339(expires)}),
        );
    }
    Ok((req, warnings))
}

/// The Secret a request binds its token to (upstream also binds to Pods and Nodes, which
/// kplane does not serve).
async fn bound_secret(
    state: &AppState,
    sa: &Target,
    namespace: &str,
    r: Option<&Value>,
) -> ApiResult<Option<ObjectRef>> {
    let Some(r) = r.filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let field = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let (api_version, kind, name, uid) = (
        field("apiVersion"),
        field("kind"),
        field("name"),
        field("uid"),
    );
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    if !(group.is_empty() && kind == "Secret") {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for object of type {group}/{version}, Kind={kind}"
        )));
    }
    let catalog = state.registry.catalog_for(&sa.cluster).await?;
    let Some(rt) = catalog.get("", "v1", "secrets").cloned() else {
        return Err(ApiError::internal("secrets are not served"));
    };
    let secrets = Target {
        cluster: sa.cluster.clone(),
        rt,
        namespace: Some(namespace.to_string()),
    };
    let stored: Value = serde_json::from_slice(&state.registry.get(&secrets, &name).await?)
        .map_err(|e| ApiError::internal(format!("decoding Secret {name}: {e}")))?;
    let actual = stored
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !uid.is_empty() && uid != actual {
        return Err(ApiError::from(Status::conflict(
            "",
            "Secret",
            &name,
            &format!("the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"),
        )));
    }
    Ok(Some(ObjectRef { name, uid: actual }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn expiration_defaults_and_bounds() {
        assert_eq!(expiration(&json!({})).unwrap(), 3600);
        assert_eq!(
            expiration(&json!({"expirationSeconds": null})).unwrap(),
            3600
        );
        assert_eq!(expiration(&json!({"expirationSeconds": 600})).unwrap(), 600);
        let e = expiration(&json!({"expirationSeconds": 60})).unwrap_err();
        assert_eq!(
            e.0.message,
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        );
        assert_eq!(e.0.code, 422);
        let e = expiration(&json!({"expirationSeconds": (1i64 << 32) + 1})).unwrap_err();
        assert!(e
            .0
            .message
            .ends_with("may not specify a duration larger than 2^32 seconds"));
        assert_eq!(
            expiration(&json!({"expirationSeconds": 1i64 << 32})).unwrap(),
            1 << 32
        );
        assert_eq!(
            expiration(&json!({"expirationSeconds": "1h"}))
                .unwrap_err()
                .0
                .code,
            400
        );
    }
}
