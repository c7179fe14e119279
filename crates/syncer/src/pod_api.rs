//! Where synced pods reach kplane ([`PodApi`]): the address from `--pod-api-server` or the
//! kubeconfig, and the CA of kplane's serving certificate, as [`crate::api_access`]
//! writes them into host pod templates.

use base64::Engine as _;

use crate::error::{Error, Result};

/// Where host pods reach kplane, and the CA that signs kplane's serving certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodApi {
    pub host: String,
    pub port: String,
    pub ca_pem: String,
}

impl PodApi {
    /// From `server` (`https://HOST[:PORT]`; default: the kubeconfig's server URL) and the
    /// kubeconfig's CA (`config.root_cert`, DER).
    pub fn new(server: Option<&str>, config: &kube::Config) -> Result<Self> {
        let uri: http::Uri = match server {
            Some(s) => s
                .parse()
                .map_err(|e| Error::Config(format!("invalid --pod-api-server {s:?}: {e}")))?,
            None => config.cluster_url.clone(),
        };
        let host = uri
            .host()
            .ok_or_else(|| Error::Config(format!("the pod API server URL {uri} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("http") {
                80
            } else {
                443
            })
            .to_string();
        let ca_pem = config
            .root_cert
            .iter()
            .flatten()
            .map(|der| pem("CERTIFICATE", der))
            .collect::<String>();
        Ok(PodApi { host, port, ca_pem })
    }
}

/// `der` as a PEM block with `label`.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
