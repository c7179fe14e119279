//! Server assembly and lifecycle: opens storage (sled in the data dir, or the backend
//! given to [`ServerBuilder::storage`]), creates certificates and the admin
//! credential, bootstraps the root logical cluster, serves HTTPS (HTTP/1.1 and HTTP/2),
//! writes `admin.kubeconfig` once `/readyz` answers 200, and shuts down gracefully
//! (stop accepting, end watches, finish in-flight requests, flush storage).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use kplane_storage::{SledStorage, SledStorageOptions, Storage};
use tokio::net::TcpListener;
use tower::ServiceExt;

use crate::connection;
use crate::http::auth::{AdminTokenAuthenticator, Authenticator, UnionAuthenticator};
use crate::http::authz::{Authorizer, SuperuserAuthorizer, UnionAuthorizer};
use crate::http::{self, AppState};
use crate::registry::admission::Admission;
use crate::registry::{catalog, controllers, Catalog, Registry};
use crate::tls;

/// Errors that stop the server from starting or stopping cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("storage: {0}")]
    Storage(#[from] kplane_storage::Error),
    #[error("tls: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("openapi: {0}")]
    OpenApi(String),
    #[error("start-up: {0}")]
    Startup(String),
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
    let context = context.into();
    move |source| ServerError::Io { context, source }
}

/// Validated server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub bind: SocketAddr,
    pub tls_sans: Vec<String>,
    /// How long the event log keeps history for watch and continue resumption.
    pub event_window: Duration,
    /// How long in-flight requests may take to finish on shutdown.
    pub shutdown_grace: Duration,
    /// Events older than this (since their last write) are removed.
    pub event_ttl: Duration,
    /// Size of the storage page cache (sled), in bytes.
    pub storage_cache_bytes: u64,
    /// Whether storage compresses the history it keeps (zstd).
    pub storage_compress_history: bool,
    /// What `/version` reports about this build.
    pub build_info: crate::BuildInfo,
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    config: ServerConfig,
    authenticator: Option<Arc<dyn Authenticator>>,
    authorizer: Option<Arc<dyn Authorizer>>,
    storage: Option<Arc<dyn Storage>>,
    admission: Admission,
}

/// Shows whether a storage backend was supplied (a backend has no `Debug` of its own).
fn debug_server(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    config: &ServerConfig,
    storage: &Option<Arc<dyn Storage>>,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("config", config)
        .field(
            "storage",
            &storage.as_ref().map_or("sled in data_dir", |_| "supplied"),
        )
        .finish()
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_server(f, "ServerBuilder", &self.config, &self.storage)
    }
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            storage: None,
            config: ServerConfig {
                data_dir: PathBuf::from("kplane-data"),
                bind: SocketAddr::from(([127, 0, 0, 1], 6443)),
                tls_sans: vec![],
                event_window: Duration::from_secs(300),
                shutdown_grace: Duration::from_secs(30),
                event_ttl: Duration::from_secs(3600),
                storage_cache_bytes: SledStorageOptions::default().cache_capacity_bytes,
                storage_compress_history: true,
                build_info: crate::BuildInfo::default(),
            },
            authenticator: None,
            authorizer: None,
            admission: Admission::recommended(),
        }
    }
}

impl ServerBuilder {
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.data_dir = dir.into();
        self
    }

    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.config.bind = addr;
        self
    }

    pub fn tls_sans(mut self, sans: Vec<String>) -> Self {
        self.config.tls_sans = sans;
        self
    }

    pub fn event_window(mut self, d: Duration) -> Self {
        self.config.event_window = d;
        self
    }

    pub fn event_ttl(mut self, d: Duration) -> Self {
        self.config.event_ttl = d;
        self
    }

    pub fn storage_cache_bytes(mut self, bytes: u64) -> Self {
        self.config.storage_cache_bytes = bytes;
        self
    }

    pub fn storage_compress_history(mut self, on: bool) -> Self {
        self.config.storage_compress_history = on;
        self
    }

    /// The build facts `/version` reports (the `kplane` binary records them at build time).
    pub fn build_info(mut self, info: crate::BuildInfo) -> Self {
        self.config.build_info = info;
        self
    }

    /// An authenticator asked after the admin token (which always authenticates, as
    /// kube-apiserver's own loopback token does: `admin.kubeconfig` keeps working). Default:
    /// none, so the admin token is the only credential.
    pub fn authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        self.authenticator = Some(authenticator);
        self
    }

    /// An authorizer asked after the superuser rule (the admin and `system:masters` may do
    /// everything, as kube-apiserver always allows its privileged group first). Default:
    /// none, so everyone else is forbidden everything.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Serves from this storage backend instead of opening sled in `<data_dir>/db` (the
    /// default). The storage settings of this builder (`event_window`,
    /// `storage_cache_bytes`) then do not apply: the backend was configured by whoever
    /// opened it. The server shuts the backend down when it stops, as it does its own.
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    /// The admission chain every write passes (default: [`Admission::recommended`]).
    pub fn admission(mut self, admission: Admission) -> Self {
        self.admission = admission;
        self
    }

    pub fn build(self) -> Server {
        Server {
            config: self.config,
            authenticator: self.authenticator,
            authorizer: self.authorizer,
            storage: self.storage,
            admission: self.admission,
        }
    }
}

/// A kplane API server.
pub struct Server {
    config: ServerConfig,
    authenticator: Option<Arc<dyn Authenticator>>,
    authorizer: Option<Arc<dyn Authorizer>>,
    /// A backend supplied with [`ServerBuilder::storage`]; sled in the data dir otherwise.
    storage: Option<Arc<dyn Storage>>,
    admission: Admission,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_server(f, "Server", &self.config, &self.storage)
    }
}

/// The server's authenticator chain: the admin token, then the configured one.
fn authenticator_chain(
    admin_token: String,
    configured: Option<Arc<dyn Authenticator>>,
) -> Arc<dyn Authenticator> {
    let mut chain: Vec<Arc<dyn Authenticator>> =
        vec![Arc::new(AdminTokenAuthenticator::new(admin_token))];
    chain.extend(configured);
    Arc::new(UnionAuthenticator::new(chain))
}

/// The server's authorizer chain: the superusers, then the configured one.
fn authorizer_chain(configured: Option<Arc<dyn Authorizer>>) -> Arc<dyn Authorizer> {
    let mut chain: Vec<Arc<dyn Authorizer>> = vec![Arc::new(SuperuserAuthorizer)];
    chain.extend(configured);
    Arc::new(UnionAuthorizer::new(chain))
}

fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

fn load_or_create_token(path: &Path) -> Result<String, ServerError> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        _ => {
            let t = random_token();
            write_atomic(path, t.as_bytes())?;
            Ok(t)
        }
    }
}

fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ServerError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).map_err(io_err(format!("writing {}", tmp.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(io_err(format!("chmod {}", tmp.display())))?;
    }
    std::fs::rename(&tmp, path).map_err(io_err(format!("renaming to {}", path.display())))
}

/// The host clients should use for a bind address (unspecified → loopback).
fn client_host(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => format!("127.0.0.1:{}", a.port()),
        SocketAddr::V6(a) if a.ip().is_unspecified() => format!("[::1]:{}", a.port()),
        other => other.to_string(),
    }
}

fn kubeconfig(server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kplane\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: kplane-admin\n  user:\n    token: {token}\ncontexts:\n- name: kplane\n  context:\n    cluster: kplane\n    user: kplane-admin\ncurrent-context: kplane\n"
    )
}

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Runs until `shutdown` resolves, then shuts down gracefully.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), ServerError> {
        let Server {
            config: cfg,
            authenticator: configured_authenticator,
            authorizer,
            storage,
            admission,
        } = self;
        let authorizer = authorizer_chain(authorizer);
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(io_err(format!("creating {}", cfg.data_dir.display())))?;
        let storage: Arc<dyn Storage> = match storage {
            Some(supplied) => supplied,
            None => {
                let storage_opts = SledStorageOptions {
                    event_window: cfg.event_window,
                    cache_capacity_bytes: cfg.storage_cache_bytes,
                    compress_history: cfg.storage_compress_history,
                    ..Default::default()
                };
                SledStorage::open(cfg.data_dir.join("db"), storage_opts)?
            }
        };
        let pki = tls::load_or_create(&cfg.data_dir.join("pki"), &cfg.tls_sans)?;
        let tls_config = tls::server_config(&pki)?;
        let token = load_or_create_token(&cfg.data_dir.join("admin.token"))?;

        let catalog = Arc::new(Catalog::new(catalog::builtin()));
        let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
        let (registry, work_queue) = Registry::with_admission(
            storage.clone(),
            catalog.clone(),
            pki.ca_pem.clone(),
            shutdown_rx,
            admission,
        );
        // The controllers, their shared informer and the resumption of unfinished
        // namespace/CRD deletions run in the background.
        let controllers = controllers::start(&registry, work_queue, cfg.event_ttl);
        registry
            .ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .map_err(|e| ServerError::Startup(e.0.to_string()))?;
        let surfaces = http::surface::Surfaces::default();
        // Build the built-in surface now so a broken schema fails start-up, not a request.
        surfaces
            .for_catalog(&catalog)
            .map_err(|e| ServerError::OpenApi(e.0.to_string()))?;
        let listener = TcpListener::bind(cfg.bind)
            .await
            .map_err(io_err(format!("binding {}", cfg.bind)))?;
        let local = listener
            .local_addr()
            .map_err(io_err("reading the bound address"))?;
        let host = client_host(&local);
        // Workspace URLs name the address clients reach this server at.
        registry.set_external_url(format!("https://{host}"));
        let state = Arc::new(AppState {
            registry: registry.clone(),
            surfaces,
            authenticator: authenticator_chain(token.clone(), configured_authenticator),
            authorizer,
            ready: false.into(),
            server_address: host.clone(),
            metrics: Arc::new(crate::metrics::Metrics::default()),
            object_counts: std::sync::Mutex::new(None),
            event_window: cfg.event_window,
            version: cfg.build_info.to_json(),
        });
        let app = http::router(state.clone());
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let protocols = Arc::new(connection::Protocols::default());

        state.ready.store(true, Ordering::Release);
        self_check_ready(&app).await?;
        let kc = kubeconfig(
            &format!("https://{host}/clusters/root"),
            &pki.ca_pem,
            &token,
        );
        write_atomic(&cfg.data_dir.join("admin.kubeconfig"), kc.as_bytes())?;
        tracing::info!(address = %local, kubeconfig = %cfg.data_dir.join("admin.kubeconfig").display(), "kplane is ready");

        tokio::pin!(shutdown);
        loop {
            let (tcp, peer) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(connection::serve(
                tcp,
                peer,
                tls_config.clone(),
                protocols.clone(),
                app.clone(),
                graceful.watcher(),
            ));
        }
        tracing::info!("shutting down: ending watches and finishing in-flight requests");
        drop(listener);
        let _ = shutdown_tx.send(true);
        if tokio::time::timeout(cfg.shutdown_grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("in-flight requests did not finish within the grace period");
        }
        controllers.stop();
        storage.shutdown().await?;
        tracing::info!("storage flushed; bye");
        Ok(())
    }
}

/// Asks the app's own `/readyz` (without a socket) before announcing readiness.
async fn self_check_ready(app: &axum::Router) -> Result<(), ServerError> {
    let req = axum::http::Request::builder()
        .uri("/readyz")
        .body(axum::body::Body::empty())
        .map_err(|e| ServerError::Startup(e.to_string()))?;
    let resp = app
        .clone()
        .oneshot(req)
        .await
        .map_err(|e| ServerError::Startup(e.to_string()))?;
    if resp.status() == axum::http::StatusCode::OK {
        Ok(())
    } else {
        Err(ServerError::Startup(format!(
            "/readyz answered {}",
            resp.status()
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kplane_storage::{Error, Key, Precondition, Prefix};

    /// A supplied backend is the one the server bootstraps, serves and shuts down; no sled
    /// database is opened in the data dir.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_from_a_supplied_storage_backend() {
        let data = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> =
            SledStorage::open(elsewhere.path(), SledStorageOptions::default()).unwrap();
        let builder = Server::builder()
            .data_dir(data.path())
            .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .storage(storage.clone());
        assert!(format!("{builder:?}").contains("supplied"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(builder.build().serve(async move {
            let _ = stopped.await;
        }));
        let kubeconfig = data.path().join("admin.kubeconfig");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !kubeconfig.exists() {
            assert!(tokio::time::Instant::now() < deadline, "server not ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The root cluster was bootstrapped into the supplied backend.
        let namespaces = storage
            .count(&Prefix::resource("root", "/namespaces"))
            .await
            .unwrap();
        assert!(namespaces >= 4, "{namespaces} namespaces");
        assert!(!data.path().join("db").exists());
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        // Stopping the server shut the backend down.
        let e = storage
            .put(
                Key::new("root", "/configmaps", "default", "late"),
                Precondition::MustNotExist,
                Box::new(|_| Ok(b"{}".to_vec())),
            )
            .await;
        assert!(matches!(e, Err(Error::ShuttingDown)), "{e:?}");
    }
}
