//! ServiceAccount tokens: the keys they are signed and verified with ([`keys`]), their
//! claims and checks ([`token`]), and the token authenticator ([`authenticator`]), which
//! asks the registry whether a token's ServiceAccount still exists
//! (`kplane_registry::token_bindings`: deleting it revokes its tokens). OIDC ID tokens ([`oidc`], keys in [`oidc_keys`]) share the
//! signature check ([`token::verify_signature`]). The HTTP side (`http/token_request.rs`: the `token` subresource of
//! serviceaccounts; `http/oidc_discovery.rs`: `/.well-known/openid-configuration` and
//! `/openid/v1/jwks`) uses [`ServiceAccounts`], which the server builds at start-up.

pub mod authenticator;
pub mod keys;
pub mod oidc;
pub mod oidc_keys;
pub mod token;

use std::sync::Arc;

pub use authenticator::ServiceAccountAuthenticator;
pub use keys::{KeySet, KeySources};
pub use oidc::{OidcAuthenticator, OidcConfig};
pub use token::Tokens;

/// The extra a ServiceAccount user carries: the logical cluster its token is bound to.
pub const CLUSTER_EXTRA: &str = "authentication.kplane.io/cluster";
/// The extra naming the credential (`JTI=<jti>`), as upstream.
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";

/// ServiceAccount token settings (`kplane serve`'s `--service-account-*` and
/// `--api-audiences` flags).
#[derive(Clone, Debug, Default)]
pub struct ServiceAccountConfig {
    pub keys: KeySources,
    /// `--service-account-issuer`: the base URL of issuers (`<base>/clusters/<path>`);
    /// default: the URL the server is reached at (`https://<bind address>`).
    pub issuer: Option<String>,
    /// `--api-audiences`; default: each logical cluster's issuer.
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration`, in seconds: longer requests are shortened.
    pub max_token_expiration_seconds: Option<i64>,
}

/// What the HTTP layer needs of ServiceAccount tokens.
#[derive(Clone, Debug)]
pub struct ServiceAccounts {
    pub tokens: Arc<Tokens>,
    pub max_token_expiration_seconds: Option<i64>,
}
