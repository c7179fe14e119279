//! The object rules of a TokenRequest (`POST .../serviceaccounts/<name>/token`, an
//! `authentication.k8s.io/v1` TokenRequest, what `kubectl create token` sends), as
//! kube-apiserver checks one: the body's kind, its name and namespace against the path, the
//! ServiceAccount it is for (404 when missing), `spec.expirationSeconds` (defaulted to 3600,
//! at least 600, at most 2^32), a bound object that must be a Secret that exists (and has
//! the uid given); and the answer, the request filled in with `status.token` and
//! `status.expirationTimestamp`. Signing the token is the server's (it holds the key);
//! nothing is stored.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::json_map::strings;
use crate::{Registry, Target};
use kplane_types::{Cause, Status};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// What `spec.expirationSeconds` defaults to (authentication/v1 defaulting).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a token may be requested for.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// A Secret a token is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundSecret {
    pub name: String,
    pub uid: String,
}

/// What a checked TokenRequest asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequestReview {
    /// The ServiceAccount's uid.
    pub uid: String,
    /// `spec.audiences` (empty: the server's default audiences).
    pub audiences: Vec<String>,
    /// `spec.expirationSeconds`, defaulted.
    pub expiration_seconds: i64,
    /// `spec.boundObjectRef`'s Secret, checked.
    pub secret: Option<BoundSecret>,
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::from(Status::invalid(GROUP, KIND, name, causes))
}

/// `spec.expirationSeconds` of a request (defaulted), or the validation errors.
fn expiration(spec: &Value) -> ApiResult<i64> {
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

/// What the `token` subresource's handler asks of the registry: the review of a
/// TokenRequest (the object rules above, and the ServiceAccount it is for and any bound
/// Secret looked up), so that the handler does not depend on the concrete [`Registry`].
#[async_trait::async_trait]
pub trait TokenRequests: Send + Sync {
    /// [`Registry::review_token_request`].
    async fn review_token_request(
        &self,
        sa: &Target,
        name: &str,
        req: &Value,
    ) -> ApiResult<TokenRequestReview>;
}

#[async_trait::async_trait]
impl TokenRequests for Registry {
    async fn review_token_request(
        &self,
        sa: &Target,
        name: &str,
        req: &Value,
    ) -> ApiResult<TokenRequestReview> {
        Registry::review_token_request(self, sa, name, req).await
    }
}

impl Registry {
    /// Checks TokenRequest `req` for ServiceAccount `name` (`sa` addresses serviceaccounts
    /// in the request's cluster and namespace): what the token is for, or the request's
    /// error (400 for a body of another kind, 422 for a name, namespace or lifetime that
    /// does not fit, 404 for a ServiceAccount or bound Secret that does not exist, 409 for
    /// a bound Secret's uid that does not match).
    pub async fn review_token_request(
        &self,
        sa: &Target,
        name: &str,
        req: &Value,
    ) -> ApiResult<TokenRequestReview> {
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
        let stored: Value = serde_json::from_slice(&self.get(sa, name).await?)
            .map_err(|e| ApiError::internal(format!("decoding ServiceAccount {name}: {e}")))?;
        let uid = stored
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
        let audiences = strings(spec.get("audiences"));
        let expiration_seconds = expiration(&spec)?;
        let secret = self
            .bound_secret(sa, &namespace, spec.get("boundObjectRef"))
            .await?;
        Ok(TokenRequestReview {
            uid,
            audiences,
            expiration_seconds,
            secret,
        })
    }

    /// The Secret a request binds its token to (upstream also binds to Pods and Nodes,
    /// which kplane does not serve).
    async fn bound_secret(
        &self,
        sa: &Target,
        namespace: &str,
        r: Option<&Value>,
    ) -> ApiResult<Option<BoundSecret>> {
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
        let catalog = self.catalog_for(&sa.cluster).await?;
        let Some(rt) = catalog.get("", "v1", "secrets").cloned() else {
            return Err(ApiError::internal("secrets are not served"));
        };
        let secrets = Target {
            cluster: sa.cluster.clone(),
            rt,
            namespace: Some(namespace.to_string()),
        };
        let stored: Value = serde_json::from_slice(&self.get(&secrets, &name).await?)
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
        Ok(Some(BoundSecret { name, uid: actual }))
    }
}

/// The token issued for a TokenRequest: what the answer reports.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    pub token: String,
    /// The audiences granted (the request's, or the server's default).
    pub audiences: Vec<String>,
    /// The lifetime granted (the request's, or the server's cap).
    pub expiration_seconds: i64,
    pub issued_at: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// The answer to TokenRequest `req` for ServiceAccount `name` in `namespace`: the request
/// with upstream's kind and metadata, its spec as granted (audiences, lifetime, the bound
/// object as asked) and the status (the token, its expiry), times in RFC 3339 to the
/// second.
pub fn token_request_answer(mut req: Value, name: &str, namespace: &str, t: &IssuedToken) -> Value {
    let rfc3339 =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut spec_out = json!({"audiences": t.audiences, "expirationSeconds": t.expiration_seconds});
    if let Some(r) = req.pointer("/spec/boundObjectRef").filter(|r| !r.is_null()) {
        spec_out["boundObjectRef"] = r.clone();
    }
    if let Some(o) = req.as_object_mut() {
        o.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
        o.insert("kind".into(), json!(KIND));
        o.insert(
            "metadata".into(),
            json!({"name": name, "namespace": namespace, "creationTimestamp": rfc3339(t.issued_at)}),
        );
        o.insert("spec".into(), spec_out);
        o.insert(
            "status".into(),
            json!({"token": t.token, "expirationTimestamp": rfc3339(t.expires_at)}),
        );
    }
    req
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

    /// A request for a missing ServiceAccount is its 404; one whose name or namespace
    /// differs from the path is 422; a bound Secret must exist with the uid given.
    #[tokio::test]
    async fn a_request_is_checked_against_what_is_stored() {
        use crate::testing::{create_namespace, fixture, target};
        let f = fixture().await;
        let reg = &f.reg;
        create_namespace(reg, "ns").await;
        let sa = target(reg, "", "serviceaccounts", Some("ns"));
        let e = reg
            .review_token_request(&sa, "robot", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 404, "{e:?}");
        let w = crate::options::WriteParams::default();
        let robot =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
        let robot: Value =
            serde_json::from_slice(&reg.create(&sa, robot, &w).await.unwrap()).unwrap();
        let e = reg
            .review_token_request(&sa, "robot", &json!({"metadata": {"name": "other"}}))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 422, "{e:?}");
        let e = reg
            .review_token_request(&sa, "robot", &json!({"kind": "Secret"}))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 400, "{e:?}");
        let got = reg
            .review_token_request(&sa, "robot", &json!({"spec": {"audiences": ["a"]}}))
            .await
            .unwrap();
        assert_eq!(
            got,
            TokenRequestReview {
                uid: robot["metadata"]["uid"].as_str().unwrap().to_string(),
                audiences: vec!["a".into()],
                expiration_seconds: DEFAULT_EXPIRATION_SECONDS,
                secret: None,
            }
        );
        let bound = |uid: &str| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": uid}}});
        let e = reg
            .review_token_request(&sa, "robot", &bound(""))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 404, "{e:?}");
        let secrets = target(reg, "", "secrets", Some("ns"));
        let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        let s: Value = serde_json::from_slice(&reg.create(&secrets, s, &w).await.unwrap()).unwrap();
        let uid = s["metadata"]["uid"].as_str().unwrap();
        let got = reg
            .review_token_request(&sa, "robot", &bound(uid))
            .await
            .unwrap();
        assert_eq!(
            got.secret,
            Some(BoundSecret {
                name: "s".into(),
                uid: uid.into()
            })
        );
        let e = reg
            .review_token_request(&sa, "robot", &bound("not-its-uid"))
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 409, "{e:?}");
    }
}
