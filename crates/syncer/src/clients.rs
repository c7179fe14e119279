//! kube-rs clients. kplane side: the kubeconfig's credentials with the base URL
//! `https://host:port/services/sync/<cluster>/<target>`, and one
//! client per path below it (`<base>/clusters/*` for the watches, `<base>/clusters/<c>` for
//! one cluster's reads and writes), created on first use and kept. kube-rs keeps a server
//! URL's path as the prefix of every request path (see the test below). Host side:
//! `--host-kubeconfig` or the in-cluster config.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::{Error, Result};
use crate::naming::cluster_of_path;

/// Where the kplane side is reached.
pub struct KplaneClients {
    base: String,
    config: Config,
    clients: Mutex<HashMap<String, Client>>,
}

impl std::fmt::Debug for KplaneClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KplaneClients")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// The logical cluster of the SyncTarget and the sync endpoint's base URL, from the
/// kubeconfig's server URL `https://host:port[/clusters/<cluster>]`.
pub fn sync_base(server: &http::Uri, target: &str) -> Result<(String, String)> {
    let scheme = server.scheme_str().unwrap_or("https");
    let authority = server.authority().ok_or_else(|| {
        Error::Config(format!("the kubeconfig's server URL {server} has no host"))
    })?;
    let cluster = cluster_of_path(server.path());
    let base = format!("{scheme}://{authority}/services/sync/{cluster}/{target}");
    Ok((cluster, base))
}

impl KplaneClients {
    /// Clients below `base` (no trailing slash) with `config`'s credentials and TLS.
    pub fn new(config: Config, base: &str) -> Self {
        KplaneClients {
            base: base.trim_end_matches('/').to_owned(),
            config,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The kube config the clients are made from (credentials, TLS, the server URL).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The client of logical cluster `cluster` (`*` for every cluster the base serves).
    pub fn cluster(&self, cluster: &str) -> Result<Client> {
        self.at(&format!("/clusters/{cluster}"))
    }

    /// The client of the endpoint itself (its own paths: the pod log requests).
    pub fn endpoint(&self) -> Result<Client> {
        self.at("")
    }

    /// The client whose requests go below `<base><suffix>`.
    fn at(&self, suffix: &str) -> Result<Client> {
        let url = format!("{}{suffix}", self.base);
        if let Ok(clients) = self.clients.lock() {
            if let Some(c) = clients.get(&url) {
                return Ok(c.clone());
            }
        }
        let mut config = self.config.clone();
        config.cluster_url = url
            .parse::<http::Uri>()
            .map_err(|e| Error::Config(format!("invalid URL {url}: {e}")))?;
        let client = Client::try_from(config).map_err(|source| Error::Kube {
            context: format!("building a client for {url}"),
            source,
        })?;
        if let Ok(mut clients) = self.clients.lock() {
            clients.insert(url, client.clone());
        }
        Ok(client)
    }
}

/// The kube config of a kubeconfig file (its current context, or `context`).
pub async fn from_kubeconfig(path: &Path, context: Option<&str>) -> Result<Config> {
    let kubeconfig = Kubeconfig::read_from(path)
        .map_err(|e| Error::Config(format!("reading {}: {e}", path.display())))?;
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| Error::Config(format!("loading {}: {e}", path.display())))
}

/// The host's client: from `path`, or the in-cluster config of the syncer's pod.
pub async fn host_client(path: Option<&Path>) -> Result<Client> {
    let config = match path {
        Some(path) => from_kubeconfig(path, None).await?,
        None => Config::incluster().map_err(|e| {
            Error::Config(format!(
                "no --host-kubeconfig and no in-cluster config (not running in a pod?): {e}"
            ))
        })?,
    };
    Client::try_from(config).map_err(|source| Error::Kube {
        context: "building the host client".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[test]
    fn the_sync_endpoint_is_derived_from_the_server_url() -> Result<()> {
        let uri: http::Uri = "https://kplane.example:6443/clusters/root:acme"
            .parse()
            .map_err(|e| Error::Config(format!("{e}")))?;
        assert_eq!(
            sync_base(&uri, "east")?,
            (
                "root:acme".to_owned(),
                "https://kplane.example:6443/services/sync/root:acme/east".to_owned()
            )
        );
        let root: http::Uri = "https://10.0.0.1:6443"
            .parse()
            .map_err(|e| Error::Config(format!("{e}")))?;
        assert_eq!(
            sync_base(&root, "west")?.1,
            "https://10.0.0.1:6443/services/sync/root/west"
        );
        Ok(())
    }

    /// kube-rs keeps the path of the server URL as the prefix of each request's path: the
    /// request line a plain-HTTP listener receives shows it.
    #[tokio::test]
    async fn kube_rs_keeps_the_base_path() -> Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let mut lines = Vec::new();
            for _ in 0..2 {
                let Ok((mut sock, _)) = listener.accept().await else {
                    break;
                };
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                lines.push(text.lines().next().unwrap_or_default().to_owned());
                let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"nope"}"#;
                let resp = format!(
                    "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            }
            lines
        });
        let config = Config::new(
            format!("http://{addr}")
                .parse::<http::Uri>()
                .map_err(|e| Error::Config(format!("{e}")))?,
        );
        let clients =
            KplaneClients::new(config, &format!("http://{addr}/services/sync/root/east/"));
        let api: kube::Api<k8s_openapi::api::batch::v1::Job> =
            kube::Api::namespaced(clients.cluster("root:a")?, "default");
        assert!(api.get_opt("pi").await.ok().flatten().is_none());
        let all: kube::Api<k8s_openapi::api::batch::v1::Job> =
            kube::Api::all(clients.cluster("*")?);
        assert!(all.list(&Default::default()).await.is_err());
        let lines = server.await.unwrap_or_default();
        assert_eq!(
            lines,
            [
                "GET /services/sync/root/east/clusters/root:a/apis/batch/v1/namespaces/default/jobs/pi HTTP/1.1",
                "GET /services/sync/root/east/clusters/*/apis/batch/v1/jobs? HTTP/1.1",
            ]
        );
        Ok(())
    }
}
