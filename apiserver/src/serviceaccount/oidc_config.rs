//! The `--oidc-*` flags ([`OidcConfig`]) and their start-up checks, read by the OIDC
//! authenticator ([`super::oidc`]) and by the provider-key source ([`super::oidc_keys`]).

use std::path::PathBuf;

use super::keys::KeyError;

/// The `--oidc-*` flags.
#[derive(Clone, Debug, Default)]
pub struct OidcConfig {
    /// `--oidc-issuer-url`: must be `https://`; tokens must carry exactly this `iss`.
    pub issuer_url: String,
    /// `--oidc-client-id`: the audience tokens must be issued for.
    pub client_id: String,
    /// `--oidc-username-claim` (default `sub`).
    pub username_claim: Option<String>,
    /// `--oidc-username-prefix`: `-` for none. Unset: `<issuer-url>#` unless the username
    /// claim is `email`.
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`: a string or a list of strings; unset, no groups.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: Option<String>,
    /// `--oidc-ca-file`: the CAs the issuer's HTTPS certificate must chain to (default: the
    /// system's roots).
    pub ca_file: Option<PathBuf>,
    /// `--oidc-jwks-file` (kplane's own): the provider's keys from a file, read at start-up,
    /// instead of fetching them from the issuer.
    pub jwks_file: Option<PathBuf>,
}

impl OidcConfig {
    /// The username claim, `sub` by default.
    pub fn username_claim(&self) -> &str {
        self.username_claim.as_deref().unwrap_or("sub")
    }

    /// The prefix of user names, as upstream: the flag (`-` = none), else the issuer URL and
    /// `#` for any claim but `email`.
    pub fn username_prefix(&self) -> String {
        match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(p) => p.to_string(),
            None if self.username_claim() == "email" => String::new(),
            None => format!("{}#", self.issuer_url),
        }
    }

    /// Start-up checks of the flags.
    pub(super) fn validate(&self) -> Result<(), KeyError> {
        if !self.issuer_url.starts_with("https://") {
            return Err(KeyError(format!(
                "--oidc-issuer-url {:?}: must use the https scheme",
                self.issuer_url
            )));
        }
        if self.client_id.is_empty() {
            return Err(KeyError(
                "--oidc-client-id is required with --oidc-issuer-url".into(),
            ));
        }
        Ok(())
    }
}
