//! Reading a kubeconfig: the current (or a named) context's server, TLS material and
//! credentials.
//!
//! Supported: `server` (with any path prefix, e.g. kplane's `/clusters/root`),
//! `certificate-authority-data` / `certificate-authority`, `insecure-skip-tls-verify`,
//! `tls-server-name`, `token` / `tokenFile`, `username` / `password`,
//! `client-certificate(-data)` / `client-key(-data)`. File paths are relative to the
//! kubeconfig's directory. Exec and auth-provider plugins are rejected with a clear error
//! rather than silently sending unauthenticated requests.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use base64::Engine as _;
use serde::Deserialize;

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Bearer(String),
    Basic { username: String, password: String },
}

/// Everything needed to talk to the API server of one kubeconfig context.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub server: ServerUrl,
    /// PEM bundle of trusted CAs; `None` means "no CA given" (only valid with `insecure`).
    pub ca_pem: Option<Vec<u8>>,
    pub insecure: bool,
    pub tls_server_name: Option<String>,
    pub auth: Auth,
    /// PEM client certificate chain and private key.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// A parsed `server` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    pub tls: bool,
    /// Host without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// `host:port` as written in the URL (for the `Host` header).
    pub authority: String,
    /// Path prefix without a trailing slash (`""` or e.g. `/clusters/root`).
    pub path: String,
}

impl ServerUrl {
    /// Parses `http(s)://host[:port][/path]`.
    pub fn parse(url: &str) -> Result<ServerUrl> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            bail!("server URL {url:?} must start with https:// or http://");
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains('?') || path.contains('#') {
            bail!("server URL {url:?} must not have a query or fragment");
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| anyhow!("unterminated IPv6 address in {url:?}"))?;
            let host = &v6[..end];
            let port = match &v6[end + 1..] {
                "" => default_port,
                p => parse_port(p.strip_prefix(':').unwrap_or(p), url)?,
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(p, url)?),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() {
            bail!("server URL {url:?} has no host");
        }
        Ok(ServerUrl {
            tls,
            host,
            port,
            authority: authority.to_string(),
            path: path.trim_end_matches('/').to_string(),
        })
    }

    /// For a kcp-style URL ending in `/clusters/<name>`: the prefix before it and the name.
    pub fn logical_cluster(&self) -> Option<(&str, &str)> {
        let i = self.path.rfind("/clusters/")?;
        let name = &self.path[i + "/clusters/".len()..];
        if name.is_empty() || name.contains('/') {
            return None;
        }
        Some((&self.path[..i], name))
    }

    /// The path prefix addressing logical cluster `<current>:<child>`, or `None` when the URL
    /// does not name a logical cluster.
    pub fn child_cluster_path(&self, child: &str) -> Option<String> {
        let (prefix, name) = self.logical_cluster()?;
        Some(format!("{prefix}/clusters/{name}:{child}"))
    }
}

fn parse_port(p: &str, url: &str) -> Result<u16> {
    p.parse()
        .with_context(|| format!("bad port {p:?} in server URL {url:?}"))
}

#[derive(Debug, Deserialize, Default)]
struct RawConfig {
    #[serde(default)]
    clusters: Vec<Named<RawCluster>>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<Named<RawContext>>,
    #[serde(rename = "current-context", default)]
    current_context: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "context")]
    value: T,
}

#[derive(Debug, Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: RawUser,
}

#[derive(Debug, Deserialize, Default)]
struct RawCluster {
    server: String,
    #[serde(rename = "certificate-authority-data", default)]
    ca_data: Option<String>,
    #[serde(rename = "certificate-authority", default)]
    ca_file: Option<String>,
    #[serde(rename = "insecure-skip-tls-verify", default)]
    insecure: Option<bool>,
    #[serde(rename = "tls-server-name", default)]
    tls_server_name: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
struct RawUser {
    #[serde(default)]
    token: Option<String>,
    #[serde(rename = "tokenFile", default)]
    token_file: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(rename = "client-certificate-data", default)]
    cert_data: Option<String>,
    #[serde(rename = "client-certificate", default)]
    cert_file: Option<String>,
    #[serde(rename = "client-key-data", default)]
    key_data: Option<String>,
    #[serde(rename = "client-key", default)]
    key_file: Option<String>,
    #[serde(default)]
    exec: Option<serde::de::IgnoredAny>,
    #[serde(rename = "auth-provider", default)]
    auth_provider: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize, Default)]
struct RawContext {
    cluster: String,
    #[serde(default)]
    user: Option<String>,
}

/// Reads `path` and resolves `context` (or the current context).
pub fn load(path: &Path, context: Option<&str>) -> Result<Endpoint> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &dir, context).with_context(|| format!("in kubeconfig {}", path.display()))
}

/// Parses kubeconfig `text`; relative file references are resolved against `dir`.
pub fn parse(text: &str, dir: &Path, context: Option<&str>) -> Result<Endpoint> {
    let raw: RawConfig = serde_saphyr::from_str(text).map_err(|e| anyhow!("parse error: {e}"))?;
    let ctx_name = match context {
        Some(c) => c.to_string(),
        None => raw
            .current_context
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| anyhow!("no current-context set (pass --context)"))?,
    };
    let ctx = raw
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .map(|c| &c.value)
        .ok_or_else(|| anyhow!("context {ctx_name:?} not found"))?;
    let cluster = raw
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .map(|c| &c.value)
        .ok_or_else(|| anyhow!("cluster {:?} not found", ctx.cluster))?;
    let user = match ctx.user.as_deref().filter(|u| !u.is_empty()) {
        None => None,
        Some(u) => Some(
            raw.users
                .iter()
                .find(|x| x.name == u)
                .map(|x| &x.user)
                .ok_or_else(|| anyhow!("user {u:?} not found"))?,
        ),
    };

    let server = ServerUrl::parse(&cluster.server)?;
    let ca_pem = match (&cluster.ca_data, &cluster.ca_file) {
        (Some(d), _) if !d.is_empty() => Some(b64(d, "certificate-authority-data")?),
        (_, Some(f)) if !f.is_empty() => Some(read_rel(dir, f)?),
        _ => None,
    };
    let insecure = cluster.insecure.unwrap_or(false);
    if server.tls && ca_pem.is_none() && !insecure {
        bail!(
            "cluster {:?} has neither certificate-authority(-data) nor insecure-skip-tls-verify",
            ctx.cluster
        );
    }

    let mut auth = Auth::None;
    let mut client_identity = None;
    if let Some(u) = user {
        if u.exec.is_some() || u.auth_provider.is_some() {
            bail!("exec and auth-provider credentials are not supported; use a token or client certificate");
        }
        if let Some(t) = u.token.as_deref().filter(|t| !t.is_empty()) {
            auth = Auth::Bearer(t.to_string());
        } else if let Some(f) = u.token_file.as_deref().filter(|f| !f.is_empty()) {
            let t = String::from_utf8(read_rel(dir, f)?).context("tokenFile is not UTF-8")?;
            auth = Auth::Bearer(t.trim().to_string());
        } else if let (Some(n), Some(p)) = (&u.username, &u.password) {
            auth = Auth::Basic {
                username: n.clone(),
                password: p.clone(),
            };
        }
        let cert = match (&u.cert_data, &u.cert_file) {
            (Some(d), _) if !d.is_empty() => Some(b64(d, "client-certificate-data")?),
            (_, Some(f)) if !f.is_empty() => Some(read_rel(dir, f)?),
            _ => None,
        };
        let key = match (&u.key_data, &u.key_file) {
            (Some(d), _) if !d.is_empty() => Some(b64(d, "client-key-data")?),
            (_, Some(f)) if !f.is_empty() => Some(read_rel(dir, f)?),
            _ => None,
        };
        client_identity = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => bail!("a client certificate needs both certificate and key"),
        };
    }
    Ok(Endpoint {
        server,
        ca_pem,
        insecure,
        tls_server_name: cluster.tls_server_name.clone().filter(|s| !s.is_empty()),
        auth,
        client_identity,
    })
}

fn b64(data: &str, what: &str) -> Result<Vec<u8>> {
    let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean)
        .with_context(|| format!("{what} is not valid base64"))
}

fn read_rel(dir: &Path, file: &str) -> Result<Vec<u8>> {
    let p = PathBuf::from(file);
    let p = if p.is_absolute() { p } else { dir.join(p) };
    std::fs::read(&p).with_context(|| format!("reading {}", p.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn enc(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn parses_kplane_admin_kubeconfig() {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kplane\n  cluster:\n    server: https://127.0.0.1:6443/clusters/root\n    certificate-authority-data: {}\nusers:\n- name: kplane-admin\n  user:\n    token: abc123\ncontexts:\n- name: kplane\n  context:\n    cluster: kplane\n    user: kplane-admin\ncurrent-context: kplane\n",
            enc("PEM")
        );
        let ep = parse(&text, Path::new("/"), None).unwrap();
        assert!(ep.server.tls);
        assert_eq!(ep.server.host, "127.0.0.1");
        assert_eq!(ep.server.port, 6443);
        assert_eq!(ep.server.authority, "127.0.0.1:6443");
        assert_eq!(ep.server.path, "/clusters/root");
        assert_eq!(ep.ca_pem.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(ep.auth, Auth::Bearer("abc123".into()));
        assert!(!ep.insecure);
        assert!(ep.client_identity.is_none());
        assert_eq!(
            ep.server.child_cluster_path("bench-17").as_deref(),
            Some("/clusters/root:bench-17")
        );
    }

    #[test]
    fn picks_named_context_and_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), "CA").unwrap();
        std::fs::write(dir.path().join("tok"), "  secret\n").unwrap();
        std::fs::write(dir.path().join("c.pem"), "CERT").unwrap();
        let text = format!(
            r#"
clusters:
- name: a
  cluster: {{server: "https://a.example:443"}}
- name: b
  cluster:
    server: https://[::1]:8443/
    certificate-authority: ca.pem
    tls-server-name: kubernetes
users:
- name: u1
  user: {{tokenFile: tok}}
- name: u2
  user:
    client-certificate: {}
    client-key-data: {}
contexts:
- name: one
  context: {{cluster: a, user: u1}}
- name: two
  context: {{cluster: b, user: u2, namespace: team}}
current-context: one
"#,
            dir.path().join("c.pem").display(),
            enc("KEY")
        );
        let ep = parse(&text, dir.path(), Some("two")).unwrap();
        assert_eq!(ep.server.host, "::1");
        assert_eq!(ep.server.port, 8443);
        assert_eq!(ep.server.authority, "[::1]:8443");
        assert_eq!(ep.server.path, "");
        assert!(ep.server.logical_cluster().is_none());
        assert_eq!(ep.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(ep.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(ep.auth, Auth::None);
        let (c, k) = ep.client_identity.unwrap();
        assert_eq!((c.as_slice(), k.as_slice()), (&b"CERT"[..], &b"KEY"[..]));
        // Cluster "a" has no CA and is not insecure.
        let err = parse(&text, dir.path(), None).unwrap_err();
        assert!(
            format!("{err:#}").contains("certificate-authority"),
            "{err:#}"
        );
    }

    #[test]
    fn token_file_and_insecure() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "  secret\n").unwrap();
        let text = "clusters:\n- name: c\n  cluster:\n    server: https://h\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    tokenFile: tok\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";
        let ep = parse(text, dir.path(), None).unwrap();
        assert!(ep.insecure);
        assert_eq!(ep.server.port, 443);
        assert_eq!(ep.auth, Auth::Bearer("secret".into()));
    }

    #[test]
    fn rejects_bad_configs() {
        let base = "clusters:\n- name: c\n  cluster:\n    server: http://h:8080\nusers:\n- name: u\n  user:\n    exec:\n      command: foo\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n";
        let err = parse(base, Path::new("/"), None).unwrap_err();
        assert!(err.to_string().contains("current-context"));
        let err = parse(base, Path::new("/"), Some("x")).unwrap_err();
        assert!(err.to_string().contains("exec"));
        let err = parse(base, Path::new("/"), Some("nope")).unwrap_err();
        assert!(err.to_string().contains("not found"));
        assert!(parse("{{{", Path::new("/"), None).is_err());
    }

    #[test]
    fn server_url_parsing() {
        let u = ServerUrl::parse("http://localhost:8080/prefix/").unwrap();
        assert!(!u.tls);
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("localhost", 8080, "/prefix")
        );
        assert!(ServerUrl::parse("ftp://x").is_err());
        assert!(ServerUrl::parse("https://:443").is_err());
        assert!(ServerUrl::parse("https://h:notaport").is_err());
        let u = ServerUrl::parse("https://h/a/clusters/root:org").unwrap();
        assert_eq!(u.logical_cluster(), Some(("/a", "root:org")));
        assert_eq!(
            u.child_cluster_path("x").as_deref(),
            Some("/a/clusters/root:org:x")
        );
        let u = ServerUrl::parse("https://h/clusters/").unwrap();
        assert_eq!(u.logical_cluster(), None);
    }
}
