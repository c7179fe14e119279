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

use crate::client_ca;
use crate::connection;
use crate::http::auth::{
    AdminTokenAuthenticator, AuthenticatedGroupAdder, Authenticator, UnionAuthenticator,
};
use crate::http::authz::{Authorizer, RbacAuthorizer, SuperuserAuthorizer, UnionAuthorizer};
use crate::http::token_file::TokenFileAuthenticator;
use crate::http::x509::X509Authenticator;
use crate::http::{self, AppState};
use crate::tls;
use kplane_registry::admission::Admission;
use kplane_registry::{builtin_types, controllers, Catalog, Registry};

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
    /// The process exits once its storage has been unhealthy this long
    /// ([`crate::watchdog`]); `None`: never.
    pub storage_stall_exit: Option<Duration>,
    /// What `/version` reports about this build.
    pub build_info: crate::BuildInfo,
    /// Development and testing only: unknown logical clusters answer, and the first write
    /// into one bootstraps it (`Registry::set_auto_create_clusters`).
    pub auto_create_clusters: bool,
    /// The client CA bundle (`--client-ca-file`); default: the CA kplane creates in
    /// `<data_dir>/pki/client-ca.{crt,key}` on first start, which also issues the admin's
    /// client certificate.
    pub client_ca_file: Option<PathBuf>,
    /// A static token file (`--token-auth-file`).
    pub token_auth_file: Option<PathBuf>,
    /// Whether requests without credentials reach the public endpoints
    /// (`--anonymous-auth`, default true).
    pub anonymous_auth: bool,
    /// ServiceAccount token keys, issuer and audiences.
    pub service_accounts: crate::serviceaccount::ServiceAccountConfig,
    /// OIDC ID tokens (`--oidc-*`); `None`: off.
    pub oidc: Option<crate::serviceaccount::OidcConfig>,
    /// The audit log (`--audit-policy-file`, `--audit-log-*`); none: no audit.
    pub audit: Option<AuditConfig>,
    /// Scheduled backups (`--backup-*`, `crate::backup`); `None`: off.
    pub backup: Option<crate::backup::BackupConfig>,
    /// Encryption at rest (`--encryption-provider-config`); `None`: values are stored as
    /// they are.
    pub encryption: Option<Arc<kplane_storage::EncryptionRules>>,
    /// Fair queuing of requests per logical cluster (`crate::flowcontrol`).
    pub flow_control: crate::flowcontrol::FlowConfig,
    /// A runtime whose threads yield to request handling (a lower OS priority), for the
    /// controllers' work no request waits for (`controllers::start`); `None`: the server's
    /// own runtime runs everything.
    pub background: Option<tokio::runtime::Handle>,
    /// A runtime whose threads yield to request handling (a lower OS priority), for the
    /// handlers of requests whose logical cluster is past its share
    /// (`crate::flowcontrol::lowered`); `None`: they run on the server's own runtime.
    pub lowered: Option<tokio::runtime::Handle>,
    /// The protective limits (`crate::limits`, docs/security.md "Limits").
    pub limits: crate::limits::Limits,
    /// The quota of every logical cluster but `root`, where its Workspace sets no other
    /// (`--quota-*`; `kplane_registry::quota`). Default: no limit.
    pub quota: kplane_registry::quota::Limits,
}

/// The audit policy file and the log the events go to.
#[derive(Clone, Debug)]
pub struct AuditConfig {
    pub policy_file: PathBuf,
    pub log: crate::audit::sink::LogConfig,
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
                storage_stall_exit: Some(Duration::from_secs(120)),
                build_info: crate::BuildInfo::default(),
                auto_create_clusters: false,
                client_ca_file: None,
                token_auth_file: None,
                anonymous_auth: true,
                service_accounts: Default::default(),
                audit: None,
                oidc: None,
                backup: None,
                encryption: None,
                flow_control: Default::default(),
                background: None,
                lowered: None,
                limits: crate::limits::Limits::default(),
                quota: Default::default(),
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

    /// The quota of every logical cluster but `root` where its Workspace sets none.
    pub fn quota(mut self, limits: kplane_registry::quota::Limits) -> Self {
        self.config.quota = limits;
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

    /// Exit the process once its storage has been unhealthy for `after` (`None`: never).
    pub fn storage_stall_exit(mut self, after: Option<Duration>) -> Self {
        self.config.storage_stall_exit = after;
        self
    }

    /// The build facts `/version` reports (the `kplane` binary records them at build time).
    pub fn build_info(mut self, info: crate::BuildInfo) -> Self {
        self.config.build_info = info;
        self
    }

    /// Development and testing only: every logical cluster answers and the first write into
    /// an unknown one creates it, as kplane did before Workspaces (default: off, so a
    /// request into a cluster no Workspace created is a 404).
    pub fn auto_create_clusters(mut self, on: bool) -> Self {
        self.config.auto_create_clusters = on;
        self
    }

    /// Trusts the client CA bundle in `path` instead of the CA kplane manages in the data
    /// directory (kube-apiserver's `--client-ca-file`). kplane then issues no admin client
    /// certificate: `admin.kubeconfig` holds the token only.
    pub fn client_ca_file(mut self, path: Option<PathBuf>) -> Self {
        self.config.client_ca_file = path;
        self
    }

    /// Authenticates the bearer tokens of a static token file (kube-apiserver's
    /// `--token-auth-file`: CSV `token,user,uid[,"group1,group2"]`), read at start-up.
    pub fn token_auth_file(mut self, path: Option<PathBuf>) -> Self {
        self.config.token_auth_file = path;
        self
    }

    /// Whether requests without credentials reach the public endpoints (health, `/version`,
    /// OIDC discovery) as `system:anonymous` (default: true). Off, they are a 401 too.
    pub fn anonymous_auth(mut self, on: bool) -> Self {
        self.config.anonymous_auth = on;
        self
    }

    /// ServiceAccount token settings: the signing key (default: `<data_dir>/pki/sa.key`,
    /// created on first start), more verification keys, the issuer base URL (default: the
    /// URL the server is reached at) and the API audiences (default: each cluster's issuer).
    pub fn service_accounts(mut self, config: crate::serviceaccount::ServiceAccountConfig) -> Self {
        self.config.service_accounts = config;
        self
    }

    /// Writes an audit log of the requests the policy file selects (kube-apiserver's
    /// `--audit-policy-file` and `--audit-log-*`). Default: none, no audit.
    pub fn audit(mut self, audit: Option<AuditConfig>) -> Self {
        self.config.audit = audit;
        self
    }

    /// Encryption at rest of the resources `rules` cover (`--encryption-provider-config`):
    /// whichever backend the server uses is wrapped in `kplane_storage::EncryptedStorage`.
    pub fn encryption(mut self, rules: Option<Arc<kplane_storage::EncryptionRules>>) -> Self {
        self.config.encryption = rules;
        self
    }

    /// Seats, caps and queues of the per-cluster fair queuing (`crate::flowcontrol`;
    /// `--max-requests-inflight` and the other flags of docs/security.md).
    pub fn flow_control(mut self, config: crate::flowcontrol::FlowConfig) -> Self {
        self.config.flow_control = config;
        self
    }

    /// OIDC ID tokens of one issuer (`--oidc-*`), checked after the token file.
    pub fn oidc(mut self, config: Option<crate::serviceaccount::OidcConfig>) -> Self {
        self.config.oidc = config;
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
    /// everything, as kube-apiserver always allows its privileged group first) and RBAC.
    /// Default: none, so what RBAC does not allow is forbidden.
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

    /// Scheduled backups of every logical cluster (`crate::backup`); `None`: off.
    pub fn backup(mut self, backup: Option<crate::backup::BackupConfig>) -> Self {
        self.config.backup = backup;
        self
    }

    /// The runtime for background controller work ([`ServerConfig::background`]).
    pub fn background(mut self, background: tokio::runtime::Handle) -> Self {
        self.config.background = Some(background);
        self
    }

    /// The runtime for the handlers of requests past their cluster's share
    /// ([`ServerConfig::lowered`]).
    pub fn lowered(mut self, lowered: tokio::runtime::Handle) -> Self {
        self.config.lowered = Some(lowered);
        self
    }

    /// The protective limits: timeouts, header, query, selector and page sizes (default:
    /// [`crate::limits::Limits::default`]).
    pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
        self.config.limits = limits;
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

/// The server's authenticator chain: the admin token, ServiceAccount tokens, client
/// certificates, the token file, OIDC, then the configured one; every user it accepts joins
/// `system:authenticated`.
fn authenticator_chain(
    cfg: &ServerConfig,
    admin_token: String,
    service_accounts: Arc<dyn Authenticator>,
    x509: Arc<X509Authenticator>,
    configured: Option<Arc<dyn Authenticator>>,
) -> Result<Arc<dyn Authenticator>, ServerError> {
    let mut chain: Vec<Arc<dyn Authenticator>> = vec![
        Arc::new(AdminTokenAuthenticator::new(admin_token)),
        service_accounts,
        x509,
    ];
    if let Some(path) = &cfg.token_auth_file {
        let tokens = TokenFileAuthenticator::from_file(path)
            .map_err(|e| ServerError::Startup(e.to_string()))?;
        chain.push(Arc::new(tokens));
    }
    if let Some(oidc) = &cfg.oidc {
        let oidc = crate::serviceaccount::OidcAuthenticator::new(oidc.clone())
            .map_err(|e| ServerError::Startup(e.to_string()))?;
        chain.push(Arc::new(oidc));
    }
    chain.extend(configured);
    Ok(Arc::new(AuthenticatedGroupAdder(Arc::new(
        UnionAuthenticator::new(chain),
    ))))
}

/// The server's authorizer chain: the superusers, the self reviews every authenticated user
/// may make (`system:basic-user`, also granted by RBAC's defaults), RBAC, then the
/// configured one.
fn authorizer_chain(
    configured: Option<Arc<dyn Authorizer>>,
    registry: &Arc<Registry>,
) -> Arc<dyn Authorizer> {
    let mut chain: Vec<Arc<dyn Authorizer>> = vec![
        Arc::new(SuperuserAuthorizer),
        Arc::new(crate::http::self_review_authz::SelfReviewAuthorizer),
        Arc::new(RbacAuthorizer::new(registry.clone())),
    ];
    chain.extend(configured);
    Arc::new(UnionAuthorizer::new(chain))
}

fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

/// The admin token kept at `path`, created (32 random bytes, hex) when missing or empty.
pub(crate) fn load_or_create_token(path: &Path) -> Result<String, ServerError> {
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

/// The admin kubeconfig: the admin token and, when kplane manages the client CA, the
/// admin's client certificate too (either authenticates the admin).
fn kubeconfig(
    server: &str,
    ca_pem: &str,
    token: &str,
    client_cert: Option<&client_ca::IssuedCert>,
) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let ca = b64(ca_pem);
    let cert = client_cert.map_or(String::new(), |c| {
        format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&c.cert_pem),
            b64(&c.key_pem)
        )
    });
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kplane\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: kplane-admin\n  user:\n    token: {token}\n{cert}contexts:\n- name: kplane\n  context:\n    cluster: kplane\n    user: kplane-admin\ncurrent-context: kplane\n"
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
        cfg.flow_control.validate().map_err(ServerError::Startup)?;
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(io_err(format!("creating {}", cfg.data_dir.display())))?;
        // Import bodies being received when the process last stopped are useless now.
        let spool_dir = cfg.data_dir.join("import-spool");
        let _ = std::fs::remove_dir_all(&spool_dir);
        let audit = match &cfg.audit {
            Some(a) => Some(Arc::new(
                crate::audit::Auditor::from_files(&a.policy_file, a.log.clone())
                    .map_err(ServerError::Startup)?,
            )),
            None => None,
        };
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
        let storage: Arc<dyn Storage> = match &cfg.encryption {
            Some(rules) => kplane_storage::EncryptedStorage::new(storage, rules.clone()),
            None => storage,
        };
        if let Some(after) = cfg.storage_stall_exit {
            crate::watchdog::spawn(&storage, after)
                .map_err(io_err("starting the storage watchdog".to_string()))?;
        }
        let pki_dir = cfg.data_dir.join("pki");
        let pki = tls::load_or_create(&pki_dir, &cfg.tls_sans)?;
        let client_ca = match &cfg.client_ca_file {
            Some(path) => client_ca::load_bundle(path)?,
            None => client_ca::load_or_create(&pki_dir)?,
        };
        let admin_cert = match &client_ca.signer {
            Some(signer) => Some(client_ca::issue_admin(signer, &pki_dir)?),
            None => None,
        };
        let x509 = Arc::new(X509Authenticator::new(&client_ca).map_err(tls::TlsError::from)?);
        let tls_files = crate::tls_reload::TlsFiles {
            cert: pki_dir.join(tls::SERVING_CERT_FILE),
            key: pki_dir.join(tls::SERVING_KEY_FILE),
            client_ca: cfg
                .client_ca_file
                .clone()
                .unwrap_or_else(|| pki_dir.join(client_ca::CA_CERT_FILE)),
        };
        let tls_reloader = Arc::new(crate::tls_reload::Reloader::new(
            tls_files,
            pki.ca_pem.clone(),
            tls::server_config(&pki, Some(&client_ca))?,
            x509.clone(),
        ));
        let token = load_or_create_token(&cfg.data_dir.join("admin.token"))?;
        let sa_keys = Arc::new(
            crate::serviceaccount::keys::load(
                &cfg.service_accounts.keys,
                &cfg.data_dir.join("pki").join("sa.key"),
            )
            .map_err(|e| ServerError::Startup(format!("service account keys: {e}")))?,
        );

        let catalog = Arc::new(Catalog::new(builtin_types::builtin()));
        let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
        let (registry, work_queue) = Registry::with_admission(
            storage.clone(),
            catalog.clone(),
            pki.ca_pem.clone(),
            shutdown_rx,
            admission,
        );
        registry
            .logical_clusters()
            .set_auto_create(cfg.auto_create_clusters);
        registry.quotas().set_default(cfg.quota.clone());
        let authorizer = authorizer_chain(authorizer, &registry);
        // Which logical clusters exist and which are terminating, before anything is served
        // or any controller runs.
        registry
            .logical_clusters()
            .load_state()
            .await
            .map_err(|e| ServerError::Startup(e.0.to_string()))?;
        // The controllers and their shared informer (whose replay also queues the
        // namespace, CRD and Workspace work an earlier run left) run in the background.
        let controllers =
            controllers::start(&registry, work_queue, cfg.event_ttl, cfg.background.clone());
        let backup_metrics = cfg.backup.as_ref().map(|b| {
            let metrics = Arc::new(crate::backup::BackupMetrics::default());
            tokio::spawn(crate::backup::run(
                registry.clone(),
                b.clone(),
                metrics.clone(),
                shutdown_tx.subscribe(),
            ));
            metrics
        });
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
        registry.set_server_version(cfg.build_info.git_version());
        let sa_tokens = Arc::new(crate::serviceaccount::Tokens::new(
            sa_keys,
            cfg.service_accounts
                .issuer
                .as_deref()
                .unwrap_or(&format!("https://{host}")),
            cfg.service_accounts.api_audiences.clone(),
        ));
        let sa_authenticator = Arc::new(crate::serviceaccount::ServiceAccountAuthenticator::new(
            sa_tokens.clone(),
            registry.clone(),
        ));
        let authenticator = authenticator_chain(
            &cfg,
            token.clone(),
            sa_authenticator,
            x509.clone(),
            configured_authenticator,
        )?;
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let state = Arc::new(AppState {
            registry: registry.clone(),
            surfaces,
            authenticator,
            authorizer,
            anonymous: cfg.anonymous_auth,
            ready: false.into(),
            server_address: host.clone(),
            metrics: metrics.clone(),
            limits: cfg.limits.clone(),
            watches: Default::default(),
            object_counts: std::sync::Mutex::new(None),
            event_window: cfg.event_window,
            version: cfg.build_info.to_json(),
            service_accounts: Some(Arc::new(crate::serviceaccount::ServiceAccounts {
                tokens: sa_tokens,
                max_token_expiration_seconds: cfg.service_accounts.max_token_expiration_seconds,
            })),
            audit: audit.clone(),
            spool_dir: spool_dir.clone(),
            backup: backup_metrics.clone(),
            pod_logs: Default::default(),
            flow: crate::flowcontrol::FlowControl::new(cfg.flow_control.clone()),
            lowered: cfg.lowered.clone(),
        });
        let app = http::router(state.clone());
        tokio::spawn(tls_reloader.clone().run(shutdown_tx.subscribe()));
        // Every connection holds a receiver until it ends: the shutdown signals them all,
        // then waits for the last to close.
        let (drain, _) = tokio::sync::watch::channel(());
        let mut protocols =
            connection::Protocols::new(cfg.limits.clone(), metrics.limit_refusals.clone());
        protocols.always_peer = audit.is_some();
        let protocols = Arc::new(protocols);

        state.ready.store(true, Ordering::Release);
        self_check_ready(&app, &token).await?;
        let kc = kubeconfig(
            &format!("https://{host}/clusters/root"),
            &pki.ca_pem,
            &token,
            admin_cert.as_ref(),
        );
        write_atomic(&cfg.data_dir.join("admin.kubeconfig"), kc.as_bytes())?;
        tracing::info!(address = %local, kubeconfig = %cfg.data_dir.join("admin.kubeconfig").display(), "kplane is ready");

        let connections = Arc::new(crate::quotas::ConnectionCounts::default());
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
            let permit = connections.acquire(&peer.ip(), cfg.limits.max_connections_per_ip);
            if permit.is_none() {
                state
                    .metrics
                    .limit_refusals
                    .count(crate::limits::Refusal::ConnectionsPerIp);
            }
            tokio::spawn(connection::serve(
                tcp,
                (peer, permit),
                tls_reloader.config(),
                protocols.clone(),
                app.clone(),
                drain.subscribe(),
            ));
        }
        tracing::info!("shutting down: ending watches and finishing in-flight requests");
        drop(listener);
        let _ = shutdown_tx.send(true);
        let _ = drain.send(());
        if tokio::time::timeout(cfg.shutdown_grace, drain.closed())
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
async fn self_check_ready(app: &axum::Router, token: &str) -> Result<(), ServerError> {
    let req = axum::http::Request::builder()
        .uri("/readyz")
        .header(axum::http::header::AUTHORIZATION, format!("Bearer {token}"))
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
