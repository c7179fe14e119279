//! ServiceAccount token settings as `kplane serve` takes them ([`ServiceAccountConfig`]),
//! and what the server hands the HTTP layer once they are loaded ([`ServiceAccounts`]).

use std::sync::Arc;

use super::keys::KeySources;
use super::token::Tokens;

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
