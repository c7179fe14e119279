//! ServiceAccount tokens: the keys they are signed and verified with ([`keys`]), their
//! claims and checks ([`token`]), and the token authenticator ([`authenticator`]), which
//! asks the registry whether a token's ServiceAccount still exists
//! (`kplane_registry::token_bindings`: deleting it revokes its tokens). OIDC ID tokens ([`oidc`], keys in [`oidc_keys`]) share the
//! signature check ([`token::verify_signature`]). The HTTP side (`http/token_request.rs`: the `token` subresource of
//! serviceaccounts; `http/oidc_discovery.rs`: `/.well-known/openid-configuration` and
//! `/openid/v1/jwks`) uses [`ServiceAccounts`], which the server builds at start-up.

pub mod authenticator;
mod config;
pub mod keys;
pub mod oidc;
mod oidc_config;
pub mod oidc_keys;
pub mod token;

pub use authenticator::{ServiceAccountAuthenticator, CLUSTER_EXTRA, CREDENTIAL_ID_EXTRA};
pub use config::{ServiceAccountConfig, ServiceAccounts};
pub use keys::{KeySet, KeySources};
pub use oidc::{OidcAuthenticator, OidcConfig};
pub use token::Tokens;
