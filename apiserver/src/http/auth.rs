//! Authentication: bearer tokens from the `Authorization` header. Until the security issue
//! adds ServiceAccount tokens, client certificates and RBAC enforcement, the admin token
//! written into `admin.kubeconfig` is the one credential, and it is all-powerful.

use super::error::StatusResponse;
use axum::http::HeaderMap;
use axum::response::Response;
use kplane_types::{Status, StatusReason};

use kplane_registry::error::ApiError;

/// Who is making a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
}

/// Checks bearer tokens.
#[derive(Debug)]
pub struct Authenticator {
    admin_token: String,
}

impl Authenticator {
    pub fn new(admin_token: String) -> Self {
        Authenticator { admin_token }
    }

    /// The user behind the request's credentials, or `None` when they are missing or wrong.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<UserInfo> {
        let value = headers
            .get(axum::http::header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))?
            .trim();
        if constant_time_eq(token.as_bytes(), self.admin_token.as_bytes()) {
            Some(UserInfo {
                username: "kplane-admin".into(),
                uid: String::new(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
            })
        } else {
            None
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 401 `Unauthorized`, as kubectl expects it.
pub fn unauthorized() -> Response {
    ApiError::from(Status::new(StatusReason::Unauthorized, "Unauthorized")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_checked() {
        let a = Authenticator::new("secret".into());
        let mut h = HeaderMap::new();
        assert!(a.authenticate(&h).is_none());
        h.insert("authorization", "Bearer wrong".parse().unwrap());
        assert!(a.authenticate(&h).is_none());
        h.insert("authorization", "Bearer secret".parse().unwrap());
        assert_eq!(a.authenticate(&h).unwrap().username, "kplane-admin");
    }
}
