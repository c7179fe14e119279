//! The `token` subresource of serviceaccounts (`POST .../serviceaccounts/<name>/token`, an
//! `authentication.k8s.io/v1` TokenRequest, what `kubectl create token` sends): the
//! registry checks the request (through its [`TokenRequests`] trait: kind, name, namespace,
//! the ServiceAccount, the lifetime, a bound Secret); this signs a token for the
//! ServiceAccount of the request's logical cluster (`serviceaccount::token`), with the
//! server's default audiences and lifetime cap, and answers with `status.token` and
//! `status.expirationTimestamp`. Nothing is stored.

use serde_json::Value;

use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::token_request::{token_request_answer, IssuedToken, TokenRequests};
use kplane_registry::warnings::Warnings;
use kplane_registry::Target;
use kplane_types::Status;

use super::AppState;
use crate::serviceaccount::token::{Grant, ObjectRef};

/// Serves a TokenRequest for ServiceAccount `name` (`sa` addresses serviceaccounts in the
/// request's cluster and namespace), reviewed by `reviews` (the registry). Returns the
/// answer and its warnings.
pub async fn create(
    state: &AppState,
    reviews: &dyn TokenRequests,
    sa: &Target,
    name: &str,
    req: Value,
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
    let review = reviews.review_token_request(sa, name, &req).await?;
    let tokens = &service_accounts.tokens;
    let mut audiences = review.audiences;
    if audiences.is_empty() {
        audiences = tokens.api_audiences(&cluster);
    }
    let mut expiration_seconds = review.expiration_seconds;
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
        uid: review.uid,
        audiences: audiences.clone(),
        expiration_seconds,
        secret: review.secret.map(|s| ObjectRef {
            name: s.name,
            uid: s.uid,
        }),
    };
    let (token, exp) = tokens
        .issue(&grant, now.timestamp())
        .map_err(|e| ApiError::internal(e.0))?;
    let expires = chrono::DateTime::from_timestamp(exp, 0).unwrap_or(now);
    let issued = IssuedToken {
        token,
        audiences,
        expiration_seconds,
        issued_at: now,
        expires_at: expires,
    };
    let answer = token_request_answer(req, name, &namespace, &issued);
    Ok((answer, warnings))
}
