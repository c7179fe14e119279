//! `kplane`: the command-line front end of the kplane API server.
//!
//! `kplane serve --data-dir DIR --bind HOST:PORT` starts the server and writes
//! `DIR/admin.kubeconfig` once it is ready. All server behaviour lives in
//! `kplane-apiserver`; for it this binary only parses flags (and `--config FILE`, the same
//! settings in YAML: [`config`]), sets up logging (see [`logging`]) and handles signals.
//!
//! `kplane syncer --kubeconfig K --target NAME --host-kubeconfig H` runs the syncer of one
//! SyncTarget (all of its behaviour lives in `kplane-syncer`).
//!
//! The client commands (`kplane ws ...`, `kplane kubeconfig PATH`, `kplane export`,
//! `kplane import`) live in [`client`];
//! `kplane completion SHELL` prints a shell completion script. Invoked as `kubectl-ws` or
//! `kubectl-kplane` (symlinks that `make install` creates), the binary is a kubectl plugin.

mod background;
mod certs;
mod client;
mod config;
mod logging;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

/// mimalloc instead of the system allocator: profiles of the write path showed glibc
/// malloc/free at about a quarter of the server's CPU (see docs/performance-history.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "kplane",
    version,
    about = "A Kubernetes-compatible API server with logical clusters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the API server.
    Serve(Box<ServeArgs>),
    /// Workspaces: create, list, delete, use (also `kubectl ws`).
    Ws(client::WsArgs),
    /// Print a self-contained kubeconfig for one workspace (logical cluster).
    Kubeconfig(client::KubeconfigArgs),
    /// Export a workspace to an archive file (docs/archive-format.md).
    Export(client::ExportCommand),
    /// Import an archive file into a workspace.
    Import(client::ImportCommand),
    /// Stored objects: write a resource's objects again in every logical cluster (key
    /// rotation of encryption at rest).
    Storage(client::StorageArgs),
    /// Client certificates: issue one signed by the server's client CA.
    #[command(subcommand)]
    Certs(certs::CertsCommand),
    /// Run the syncer of one SyncTarget: its Jobs run on a host cluster, status flows back.
    Syncer(Box<SyncerArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// A YAML file of these settings, keyed by the flags' long names (`data-dir:
    /// /var/lib/kplane`, `tls-san: [a, b]`, `v: 2`); flags on the command line and their
    /// environment variables override its fields. An unknown field is an error.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory for the store, certificates and admin.kubeconfig.
    #[arg(long, default_value = "./kplane-data", env = "KPLANE_DATA_DIR")]
    data_dir: PathBuf,
    /// Admission plugins to turn off, by name (kube-apiserver's flag), e.g.
    /// `PodReflection` on a kplane standing in for a host cluster in tests.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    disable_admission_plugins: Vec<String>,
    /// Where admission webhooks' `service` references go (kplane has no Services):
    /// `NAMESPACE/NAME[:PORT]=HOST:PORT`, repeatable; the webhook's certificate is
    /// verified for `NAME.NAMESPACE.svc`. A reference without an entry fails as a missing
    /// Service does (docs/admission-webhooks.md).
    #[arg(long = "webhook-service", value_name = "NS/NAME[:PORT]=HOST:PORT")]
    webhook_services: Vec<String>,
    /// Address to listen on (port 0 picks a free port; the kubeconfig names the real one).
    #[arg(long, default_value = "127.0.0.1:6443", env = "KPLANE_BIND")]
    bind: SocketAddr,
    /// Extra subject alternative names for the serving certificate (DNS names or IPs).
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// Where the store lives: `sled` (the default: `<data-dir>/db`) or a PostgreSQL
    /// database, `postgres://user[:password]@host[:port]/database` (see
    /// docs/storage-postgres.md). Certificates and tokens stay in `--data-dir` either way;
    /// on PostgreSQL the CAs, the ServiceAccount signing key and the admin token are also
    /// kept in the database, so every replica on it uses the first replica's.
    #[arg(
        long,
        default_value = "sled",
        env = "KPLANE_STORAGE",
        value_name = "sled|URL"
    )]
    storage: String,
    /// How long watch and continue resumption history is kept, in seconds.
    #[arg(long, default_value_t = 300)]
    event_window_seconds: u64,
    /// How long Events live after their last update, in seconds (Kubernetes' --event-ttl).
    #[arg(long, default_value_t = 3600)]
    event_ttl_seconds: u64,
    /// How many objects each logical cluster but `root` may hold, in all, unless its
    /// Workspace's `spec.quota.objects` says otherwise; 0: no limit (docs/security.md).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    quota_objects: u64,
    /// How many bytes each logical cluster's objects may take, as stored (their serialized
    /// JSON), unless its Workspace's `spec.quota.bytes` says otherwise; 0: no limit.
    #[arg(long, default_value_t = 4 << 30, value_name = "BYTES")]
    quota_bytes: u64,
    /// How many objects of one resource each logical cluster may hold, unless its
    /// Workspace's `spec.quota.resources` names it: `RESOURCE=N` (`configmaps=1000`,
    /// `deployments.apps=100`), repeatable; none by default.
    #[arg(long = "quota-resource", value_name = "RESOURCE=N")]
    quota_resources: Vec<String>,
    /// Size of the storage page cache, in MiB. Lists of more data than this read pages
    /// back from the data files (see docs/performance.md).
    #[arg(long, default_value_t = 64)]
    storage_cache_mb: u64,
    /// Compress the history storage keeps for the event window (zstd; the latest values
    /// are never compressed). `=false` trades disk for a little less CPU per write.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    storage_compress_history: bool,
    /// Exit (status 70) once the storage has reported itself unhealthy (a writer stuck
    /// inside the storage engine, a replica cut off from its database) for this many
    /// seconds, so that a supervisor restarts the server; 0: never. Acknowledged writes are
    /// durable, and a restart recovers them.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    storage_stall_exit_seconds: u64,
    /// Log verbosity, as kube-apiserver's `-v`: 0 start-up, shutdown, warnings and every
    /// 5xx with its cause; 2 adds a line per 4xx request; 3 a line per request; 5 kplane's
    /// debug lines. Dependencies only log warnings unless RUST_LOG names them.
    #[arg(short = 'v', long = "v", value_name = "N", default_value_t = 0)]
    verbosity: u8,
    /// Development and testing only: serve every logical cluster, creating one on its first
    /// write, instead of answering 404 for clusters no Workspace created.
    #[arg(long)]
    auto_create_clusters: bool,
    /// A PEM bundle of CAs whose client certificates authenticate (CN = user, O = groups).
    /// Default: the client CA kplane creates in `<data-dir>/pki` on first start, which also
    /// signs the admin's client certificate in admin.kubeconfig.
    #[arg(long, value_name = "FILE")]
    client_ca_file: Option<PathBuf>,
    /// A static token file: CSV lines `token,user,uid[,"group1,group2"]`, read at start-up.
    #[arg(long, value_name = "FILE")]
    token_auth_file: Option<PathBuf>,
    /// Let requests without credentials reach the public endpoints (health, /version, OIDC
    /// discovery) as system:anonymous; with false they are a 401 like everything else.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL",
        num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    anonymous_auth: bool,
    /// Log format on stderr: `text`, or `json` (one object per line) for log shippers.
    #[arg(long, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
    /// PEM private key (PKCS#8 EC P-256 or RSA, or PKCS#1 RSA) that signs ServiceAccount
    /// tokens. Default: DATA_DIR/pki/sa.key, created (P-256) on first start.
    #[arg(long, value_name = "PATH")]
    service_account_signing_key_file: Option<PathBuf>,
    /// PEM file of more keys that verify ServiceAccount tokens (public keys or private keys
    /// whose public half is used), e.g. the previous signing key during a rotation.
    /// Repeatable.
    #[arg(long, value_name = "PATH")]
    service_account_key_file: Vec<PathBuf>,
    /// Base URL of the ServiceAccount token issuers: a logical cluster's tokens are issued
    /// by `<URL>/clusters/<path>`. Default: `https://<the address the server listens on>`.
    #[arg(long, value_name = "URL")]
    service_account_issuer: Option<String>,
    /// Audiences the API accepts in ServiceAccount tokens (comma-separated, repeatable).
    /// Default: the issuer of the token's logical cluster.
    #[arg(long, value_name = "AUDIENCES", value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// The longest lifetime of a requested ServiceAccount token (a Go duration such as
    /// `24h` or `90m`); longer requests are shortened with a warning. Default: no limit.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    service_account_max_token_expiration: Option<Duration>,
    /// An audit.k8s.io/v1 Policy file choosing which requests are audited and how much of
    /// them is recorded. Without it nothing is audited.
    #[arg(long, value_name = "FILE")]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events are written as JSON lines; `-` is stdout. Without it nothing is
    /// audited.
    #[arg(long, value_name = "PATH")]
    audit_log_path: Option<PathBuf>,
    /// An apiserver.config.k8s.io/v1 EncryptionConfiguration: the resources whose values
    /// are encrypted at rest (aesgcm, secretbox) and the keys, the first provider writing.
    /// Without it values are stored as they are.
    #[arg(long, value_name = "FILE")]
    encryption_provider_config: Option<PathBuf>,
    /// Seats for requests that do not write (kube-apiserver's flag); with
    /// --max-mutating-requests-inflight, the seats of the whole server, shared fairly
    /// between logical clusters (docs/security.md, "Fair queuing").
    #[arg(long, value_name = "N", default_value_t = 400)]
    max_requests_inflight: u32,
    /// Seats for writes (kube-apiserver's flag), added to --max-requests-inflight.
    #[arg(long, value_name = "N", default_value_t = 200)]
    max_mutating_requests_inflight: u32,
    /// The most seats one logical cluster holds at once (at least 10); past them, and
    /// when the server has none free, its requests wait in its queue. Default: 8 per core,
    /// at least 10.
    #[arg(long, value_name = "N")]
    max_seats_per_cluster: Option<u32>,
    /// The most requests one logical cluster has waiting for seats; past them a request
    /// is refused with 429 and Retry-After.
    #[arg(long, value_name = "N", default_value_t = 128)]
    max_queued_per_cluster: u32,
    /// How long a request waits for seats before it is refused with 429 (a quarter of its
    /// `timeout` parameter, when shorter).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    queue_wait: Duration,
    /// Seats of the sync endpoint's own (the syncers' requests), before its requests
    /// queue like a tenant's.
    #[arg(long, value_name = "N", default_value_t = 50)]
    syncer_seats: u32,
    /// Rotate the audit log when it reaches this many megabytes (0: 100).
    #[arg(long, value_name = "MB", default_value_t = 0)]
    audit_log_maxsize: u64,
    /// Keep at most this many rotated audit log files (0: all).
    #[arg(long, value_name = "N", default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Remove rotated audit log files older than this many days (0: never).
    #[arg(long, value_name = "DAYS", default_value_t = 0)]
    audit_log_maxage: u64,
    /// Scheduled backups: one archive per logical cluster every --backup-interval, at
    /// DIR/<cluster>/<UTC timestamp>.kpa (restore one with `kplane import`).
    #[arg(long, value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    /// How often the scheduled backups run (e.g. 1h, 30m, 2s).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    backup_interval: Duration,
    /// Archives kept per logical cluster; older ones are removed.
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..))]
    backup_keep: u32,
    /// OIDC: the issuer whose ID tokens authenticate (https; must equal their `iss`).
    #[arg(long, value_name = "URL")]
    oidc_issuer_url: Option<String>,
    /// OIDC: the client id ID tokens must carry in `aud`.
    #[arg(long, value_name = "ID")]
    oidc_client_id: Option<String>,
    /// OIDC: the claim naming the user (default `sub`). Claims other than `email` are
    /// prefixed with the issuer URL and `#` unless --oidc-username-prefix is set.
    #[arg(long, value_name = "CLAIM")]
    oidc_username_claim: Option<String>,
    /// OIDC: prefix of user names (`-` for none).
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    oidc_username_prefix: Option<String>,
    /// OIDC: the claim listing the user's groups (a string or a list of strings).
    #[arg(long, value_name = "CLAIM")]
    oidc_groups_claim: Option<String>,
    /// OIDC: prefix of group names.
    #[arg(long, value_name = "PREFIX")]
    oidc_groups_prefix: Option<String>,
    /// OIDC: PEM CAs the issuer's HTTPS certificate must chain to (default: system roots).
    #[arg(long, value_name = "FILE")]
    oidc_ca_file: Option<PathBuf>,
    /// OIDC (kplane extension): the provider's JWKS from a file instead of fetching it from
    /// the issuer's discovery document.
    #[arg(long, value_name = "FILE")]
    oidc_jwks_file: Option<PathBuf>,
    /// Limits (docs/security.md "Limits"): how long a request head may take from its first
    /// byte (a new connection: from its start; also bounds the TLS handshake, to at most
    /// 10s). Go's ReadHeaderTimeout in kube-apiserver.
    #[arg(long, value_name = "DURATION", default_value = "32s", value_parser = parse_duration)]
    request_header_timeout: Duration,
    /// Limits: each window of this length must bring 16 KiB of a request body, or its end.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    request_body_timeout: Duration,
    /// Limits: a connection without a request in flight is closed after this long (Go's
    /// IdleTimeout in kube-apiserver).
    #[arg(long, value_name = "DURATION", default_value = "90s", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Limits: the largest request head (request line and headers, or an HTTP/2 header
    /// list), in bytes; larger is a 431 (Go's MaxHeaderBytes in kube-apiserver).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20,
        value_parser = clap::value_parser!(u64).range(8192..=(1 << 30)))]
    max_header_bytes: u64,
    /// Limits: the longest query string, in bytes; longer is a 414.
    #[arg(long, value_name = "BYTES", default_value_t = 32 * 1024,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_query_length: u64,
    /// Limits: the most requirements of one label or field selector; more is a 400.
    #[arg(long, value_name = "N", default_value_t = 100,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_selector_requirements: u64,
    /// Limits: the most values of one `in`/`notin` selector requirement; more is a 400.
    #[arg(long, value_name = "N", default_value_t = 1000,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_selector_values: u64,
    /// Limits: the most objects of one LIST page; a larger `limit` is served as this one,
    /// with a continue token when more remain.
    #[arg(long, value_name = "N", default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_list_page: u64,
    /// Limits: the most watches one user may hold open (system:masters exempt); more is a
    /// 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 1000,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_watches_per_user: u64,
    /// Limits: the most connections one client IP address may hold open; more are answered
    /// 429 with Retry-After and closed.
    #[arg(long, value_name = "N", default_value_t = 20_000,
        value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_ip: u64,
}

impl ServeArgs {
    /// The `--request-*`, `--idle-timeout` and `--max-*` limits.
    fn limits(&self) -> kplane_apiserver::limits::Limits {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        kplane_apiserver::limits::Limits {
            request_header_timeout: self.request_header_timeout,
            request_body_timeout: self.request_body_timeout,
            idle_timeout: self.idle_timeout,
            max_header_bytes: size(self.max_header_bytes),
            max_query_length: size(self.max_query_length),
            max_selector_requirements: size(self.max_selector_requirements),
            max_selector_values: size(self.max_selector_values),
            max_list_page: size(self.max_list_page),
            max_watches_per_user: size(self.max_watches_per_user),
            max_connections_per_ip: size(self.max_connections_per_ip),
        }
    }
}

#[derive(clap::Args, Debug)]
struct SyncerArgs {
    /// kubeconfig of the logical cluster that holds the SyncTarget; its server URL is
    /// `https://HOST:PORT/clusters/<cluster>` and its credential must be granted `sync` on
    /// the target.
    #[arg(long, env = "KPLANE_KUBECONFIG", value_name = "FILE")]
    kubeconfig: PathBuf,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// The SyncTarget's name.
    #[arg(long, env = "KPLANE_SYNC_TARGET", value_name = "NAME")]
    target: String,
    /// kubeconfig of the host cluster. Default: the in-cluster config of the syncer's pod.
    #[arg(long, env = "KPLANE_HOST_KUBECONFIG", value_name = "FILE")]
    host_kubeconfig: Option<PathBuf>,
    /// Put every host object into this one (existing) host namespace, with unique names,
    /// instead of one host namespace per logical cluster and namespace.
    #[arg(long, value_name = "NS")]
    host_namespace: Option<String>,
    /// Serve /metrics and /healthz on this address.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_bind: Option<SocketAddr>,
    /// How often every synced object is checked again and orphans removed.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    resync: Duration,
    /// How often the SyncTarget's status gets a heartbeat.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    heartbeat: Duration,
    /// How long the leader Lease lasts without renewal before another syncer takes it.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    lease_duration: Duration,
    /// The identity holding the leader Lease. Default: $POD_NAME, else the host name.
    #[arg(long, env = "KPLANE_SYNCER_ID", value_name = "IDENTITY")]
    id: Option<String>,
    /// Objects reconciled at once (each waits on kplane or the host most of the time).
    #[arg(long, default_value_t = 32)]
    workers: usize,
    /// The URL under which pods on the host reach kplane, `https://HOST[:PORT]` (e.g.
    /// kplane's Service in its host namespace): synced pods' in-cluster configuration
    /// (`KUBERNETES_SERVICE_HOST`/`_PORT`) names it. Default: the kubeconfig's server URL.
    #[arg(long, value_name = "URL")]
    pod_api_server: Option<String>,
    /// Leave synced pods' in-cluster API to the host (their pod templates unchanged but
    /// for the renamed references) instead of pointing it at their logical cluster.
    #[arg(long)]
    no_pod_api_access: bool,
    /// Do not reflect the host pods of synced Jobs into kplane as core/v1 Pods.
    #[arg(long)]
    no_pod_reflection: bool,
    /// Host namespaces whose pods a SyncTarget's `spec.reflectPods` may reflect into kplane
    /// (e.g. the namespace of an operator that reads its own Pod); none by default.
    #[arg(long, value_name = "NS", value_delimiter = ',')]
    reflect_host_namespaces: Vec<String>,
    /// Log verbosity (as `kplane serve -v`).
    #[arg(short = 'v', long = "v", value_name = "N", default_value_t = 0)]
    verbosity: u8,
    /// Log format on stderr: `text` or `json`.
    #[arg(long, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
}

/// The syncer's identity: the flag, the pod name, the host name.
fn syncer_identity(id: Option<String>) -> String {
    id.or_else(|| std::env::var("POD_NAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_owned())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("kplane-syncer-{}", std::process::id()))
}

fn run_syncer(args: SyncerArgs) -> anyhow::Result<()> {
    logging::init(args.verbosity, args.log_format)?;
    let info = build_info();
    let short: String = info.git_commit.chars().take(7).collect();
    let settings = kplane_syncer::Settings {
        kubeconfig: args.kubeconfig,
        context: args.context,
        target: args.target,
        host_kubeconfig: args.host_kubeconfig,
        host_namespace: args.host_namespace,
        metrics_bind: args.metrics_bind,
        resync: args.resync,
        heartbeat: args.heartbeat,
        lease_duration: args.lease_duration,
        identity: syncer_identity(args.id),
        version: format!("kplane {} ({short})", info.kplane_version),
        workers: args.workers,
        pod_api_access: !args.no_pod_api_access,
        pod_reflection: !args.no_pod_reflection,
        reflect_host_namespaces: args.reflect_host_namespaces,
        pod_api_server: args.pod_api_server,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(kplane_syncer::run(settings, shutdown_signal()))
        .context("kplane syncer")
}

/// A Go-style duration: one or more `<number><unit>` with units `h`, `m`, `s`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (e.g. 24h, 90m, 3600s)");
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let n: u64 = number.parse().map_err(|_| bad())?;
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        total = total
            .checked_add(n.checked_mul(unit).ok_or_else(bad)?)
            .ok_or_else(bad)?;
        number.clear();
    }
    if !number.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

fn main() -> anyhow::Result<()> {
    let (plugin_name, argv) = client::plugin_argv(std::env::args_os().collect());
    let mut command = Cli::command();
    if let Some(name) = plugin_name {
        command = command.bin_name(name);
    }
    let matches = command.clone().get_matches_from(&argv);
    let matches = match config::apply(&command, matches, &argv) {
        Ok(matches) => matches,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2)
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let args = match cli.command {
        Command::Serve(args) => *args,
        Command::Completion { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kplane", &mut script);
            exit_on_error(client::out(&String::from_utf8_lossy(&script)));
        }
        Command::Ws(args) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_ws(args))))
        }
        Command::Certs(command) => exit_on_error(certs::run(command)),
        Command::Syncer(args) => exit_on_error(run_syncer(*args)),
        Command::Kubeconfig(args) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_kubeconfig(args))))
        }
        Command::Export(cmd) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_export(cmd))))
        }
        Command::Import(cmd) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_import(cmd))))
        }
        Command::Storage(args) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_storage(args))))
        }
    };
    logging::init(args.verbosity, args.log_format)?;
    raise_open_file_limit();
    let background = background::runtime(background::BACKGROUND_NICE)?;
    let past_share = background::past_share_runtime(background::BACKGROUND_NICE)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let lowered = Lowered {
        background: background.handle().clone(),
        past_share: past_share.handle().clone(),
    };
    let served = runtime.block_on(serve(args, lowered));
    // Their tasks were the server's controllers and requests, stopped with it.
    background.shutdown_background();
    past_share.shutdown_background();
    served
}

/// A small runtime for one client command.
fn client_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Ends a client command: exit 0, or the error on one line and exit 1 (no backtrace).
fn exit_on_error(result: anyhow::Result<()>) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1)
        }
    }
}

/// The server's default quota from `--quota-objects`, `--quota-bytes` (0: no limit) and
/// `--quota-resource RESOURCE=N`.
fn quota_limits(
    objects: u64,
    bytes: u64,
    resources: &[String],
) -> anyhow::Result<kplane_apiserver::registry::quota::Limits> {
    let mut limits = kplane_apiserver::registry::quota::Limits {
        objects: (objects > 0).then_some(objects),
        bytes: (bytes > 0).then_some(bytes),
        ..Default::default()
    };
    for entry in resources {
        let parsed = entry
            .split_once('=')
            .and_then(|(r, n)| Some((r.trim(), n.trim().parse::<u64>().ok()?)))
            .filter(|(r, _)| !r.is_empty() && !r.contains('/'));
        let Some((resource, n)) = parsed else {
            anyhow::bail!("--quota-resource {entry:?}: expected RESOURCE=N, e.g. configmaps=1000 or deployments.apps=100");
        };
        limits.resources.insert(resource.to_string(), n);
    }
    Ok(limits)
}

/// The lowered runtimes' handles ([`background`]).
struct Lowered {
    background: tokio::runtime::Handle,
    past_share: tokio::runtime::Handle,
}

async fn serve(args: ServeArgs, lowered: Lowered) -> anyhow::Result<()> {
    let flow = flow_config(&args)?;
    let limits = args.limits();
    if let Some(path) = &args.config {
        tracing::info!(file = %path.display(), "settings from the config file, under the flags");
    }
    if args.event_window_seconds == 0 {
        anyhow::bail!("--event-window-seconds must be at least 1");
    }
    let oidc = match args.oidc_issuer_url {
        Some(issuer_url) => Some(kplane_apiserver::serviceaccount::OidcConfig {
            issuer_url,
            client_id: args.oidc_client_id.unwrap_or_default(),
            username_claim: args.oidc_username_claim,
            username_prefix: args.oidc_username_prefix,
            groups_claim: args.oidc_groups_claim,
            groups_prefix: args.oidc_groups_prefix,
            ca_file: args.oidc_ca_file,
            jwks_file: args.oidc_jwks_file,
        }),
        None if args.oidc_client_id.is_some() || args.oidc_jwks_file.is_some() => {
            anyhow::bail!("the --oidc-* flags need --oidc-issuer-url")
        }
        None => None,
    };
    let data_dir = args.data_dir.clone();
    let issuer_set = args.service_account_issuer.is_some();
    let mut services = kplane_apiserver::webhook_client::ServiceAddresses::new();
    for entry in &args.webhook_services {
        let (service, target) = kplane_apiserver::webhook_client::parse_service_address(entry)
            .map_err(|e| anyhow::anyhow!("--webhook-service: {e}"))?;
        services.insert(service, target);
    }
    let transport = std::sync::Arc::new(kplane_apiserver::webhook_client::HttpsTransport::new(
        services,
    ));
    let admission = kplane_apiserver::registry::admission::Admission::recommended()
        .with_webhooks(transport)
        .without(&args.disable_admission_plugins)
        .map_err(|e| anyhow::anyhow!("--disable-admission-plugins: {e}"))?;
    let quota = quota_limits(args.quota_objects, args.quota_bytes, &args.quota_resources)?;
    let server = kplane_apiserver::Server::builder()
        .limits(limits)
        .admission(admission)
        .quota(quota)
        .data_dir(args.data_dir)
        .bind(args.bind)
        .tls_sans(args.tls_san)
        .event_window(Duration::from_secs(args.event_window_seconds))
        .event_ttl(Duration::from_secs(args.event_ttl_seconds.max(1)))
        .storage_cache_bytes(args.storage_cache_mb.max(1) * 1024 * 1024)
        .storage_compress_history(args.storage_compress_history)
        .storage_stall_exit(
            (args.storage_stall_exit_seconds > 0)
                .then(|| Duration::from_secs(args.storage_stall_exit_seconds)),
        )
        .build_info(build_info())
        .auto_create_clusters(args.auto_create_clusters)
        .client_ca_file(args.client_ca_file)
        .token_auth_file(args.token_auth_file)
        .anonymous_auth(args.anonymous_auth)
        .service_accounts(kplane_apiserver::serviceaccount::ServiceAccountConfig {
            keys: kplane_apiserver::serviceaccount::KeySources {
                signing_key_file: args.service_account_signing_key_file,
                key_files: args.service_account_key_file,
            },
            issuer: args.service_account_issuer,
            api_audiences: args.api_audiences,
            max_token_expiration_seconds: args
                .service_account_max_token_expiration
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        })
        .encryption(encryption_rules(
            args.encryption_provider_config.as_deref(),
        )?)
        .flow_control(flow)
        .audit(audit_config(
            args.audit_policy_file,
            args.audit_log_path,
            args.audit_log_maxsize,
            args.audit_log_maxbackup,
            args.audit_log_maxage,
        ))
        .oidc(oidc)
        .background(lowered.background)
        .lowered(lowered.past_share)
        .backup(
            args.backup_dir
                .map(|dir| kplane_apiserver::backup::BackupConfig {
                    dir,
                    interval: args.backup_interval.max(Duration::from_secs(1)),
                    keep: args.backup_keep as usize,
                }),
        );
    let server = match storage_backend(&args.storage, args.event_window_seconds).await? {
        Some(storage) => {
            share_credentials(&storage, &data_dir).await?;
            if !issuer_set {
                tracing::warn!(
                    "several replicas on one database accept each other's ServiceAccount \
                     tokens only with the same --service-account-issuer (the address clients \
                     use, e.g. the load balancer's); without it each replica issues as its own \
                     address"
                );
            }
            server.storage(storage)
        }
        None => server,
    }
    .build();
    server
        .serve(shutdown_signal())
        .await
        .context("kplane server failed")?;
    Ok(())
}

/// Makes the data directory hold the credentials every replica on the database shares
/// (`kplane_apiserver::shared_credentials`): proposes this directory's copies, writes back
/// the set the database adopted (the first replica's).
async fn share_credentials(
    storage: &kplane_storage::PostgresStorage,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    use kplane_apiserver::shared_credentials::{adopt, local_files};
    let local = local_files(data_dir).context("preparing the shared credentials")?;
    let shared = storage
        .share_files(&local)
        .await
        .context("sharing the credentials through the database")?;
    let replaced = adopt(data_dir, &shared).context("adopting the shared credentials")?;
    if !replaced.is_empty() {
        tracing::info!(
            files = %replaced.join(", "),
            "adopted the credentials other replicas of the database use"
        );
    }
    Ok(())
}

/// The backend `--storage` names: `None` for sled (the server opens it in the data
/// directory), or an opened PostgreSQL store.
async fn storage_backend(
    storage: &str,
    event_window_seconds: u64,
) -> anyhow::Result<Option<std::sync::Arc<kplane_storage::PostgresStorage>>> {
    if storage == "sled" {
        return Ok(None);
    }
    if !(storage.starts_with("postgres://") || storage.starts_with("postgresql://")) {
        anyhow::bail!(
            "--storage must be `sled` or a postgres://user@host:port/database address, not {storage:?}"
        );
    }
    let opts = kplane_storage::PostgresStorageOptions {
        event_window: Duration::from_secs(event_window_seconds),
        ..Default::default()
    };
    let store = kplane_storage::PostgresStorage::open(storage, opts)
        .await
        .context("opening the PostgreSQL storage")?;
    Ok(Some(store))
}

/// The encryption configuration of `--encryption-provider-config`, read and checked.
/// The fair-queuing settings of the flags, checked.
fn flow_config(args: &ServeArgs) -> anyhow::Result<kplane_apiserver::flowcontrol::FlowConfig> {
    let config = kplane_apiserver::flowcontrol::FlowConfig {
        max_seats: args
            .max_requests_inflight
            .saturating_add(args.max_mutating_requests_inflight),
        max_seats_per_cluster: args
            .max_seats_per_cluster
            .unwrap_or_else(kplane_apiserver::flowcontrol::FlowConfig::default_seats_per_cluster),
        max_queued_per_cluster: args.max_queued_per_cluster,
        queue_wait: args.queue_wait,
        syncer_seats: args.syncer_seats,
        shared_window: kplane_apiserver::flowcontrol::FlowConfig::default().shared_window,
    };
    config.validate().map_err(|e| anyhow::anyhow!(e))?;
    Ok(config)
}

fn encryption_rules(
    path: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::sync::Arc<kplane_storage::EncryptionRules>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display()))?;
    let rules = kplane_storage::EncryptionRules::parse(&text)
        .map_err(|e| anyhow::anyhow!("--encryption-provider-config {}: {e}", path.display()))?;
    Ok(Some(std::sync::Arc::new(rules)))
}

/// The audit settings: a policy and a log path audit, either alone does nothing (as
/// kube-apiserver, which warns about a policy without a backend).
fn audit_config(
    policy_file: Option<PathBuf>,
    path: Option<PathBuf>,
    max_size_mb: u64,
    max_backups: usize,
    max_age_days: u64,
) -> Option<kplane_apiserver::server::AuditConfig> {
    match (policy_file, path) {
        (Some(policy_file), Some(path)) => Some(kplane_apiserver::server::AuditConfig {
            policy_file,
            log: kplane_apiserver::audit::sink::LogConfig {
                path,
                max_size_mb,
                max_backups,
                max_age_days,
            },
        }),
        (Some(_), None) => {
            tracing::warn!("--audit-policy-file without --audit-log-path: nothing is audited");
            None
        }
        (None, Some(_)) => {
            tracing::warn!("--audit-log-path without --audit-policy-file: nothing is audited");
            None
        }
        (None, None) => None,
    }
}

/// This build, as `build.rs` recorded it, for `/version`.
fn build_info() -> kplane_apiserver::BuildInfo {
    kplane_apiserver::BuildInfo {
        kplane_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("KPLANE_GIT_COMMIT").to_string(),
        git_tree_state: env!("KPLANE_GIT_TREE_STATE").to_string(),
        build_date: env!("KPLANE_BUILD_DATE").to_string(),
        rustc_version: env!("KPLANE_RUSTC_VERSION").to_string(),
        platform: env!("KPLANE_PLATFORM").to_string(),
    }
}

/// Raises the soft open-file limit to the hard limit (as Go programs, kube-apiserver among
/// them, do): every client connection and every watch on its own connection is a file
/// descriptor, and the common soft limit of 1,024 would refuse the 1,025th.
#[cfg(unix)]
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current == lim.maximum {
        return;
    }
    let raised = Rlimit {
        current: lim.maximum,
        maximum: lim.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => tracing::debug!(limit = ?lim.maximum, "raised the open-file limit"),
        Err(e) => {
            tracing::warn!(error = %e, soft = ?lim.current, "could not raise the open-file limit")
        }
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit() {}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_flags_make_the_default_limits() {
        let l = quota_limits(
            0,
            100,
            &["secrets=3".into(), " deployments.apps = 2 ".into()],
        )
        .unwrap();
        assert_eq!(l.objects, None, "0 is no limit");
        assert_eq!(l.bytes, Some(100));
        assert_eq!(l.resources["secrets"], 3);
        assert_eq!(l.resources["deployments.apps"], 2);
        for bad in [
            "secrets",
            "=3",
            "secrets=-1",
            "count/secrets=1",
            "secrets=x",
        ] {
            let e = quota_limits(1, 1, &[bad.into()]).unwrap_err();
            assert!(e.to_string().contains("expected RESOURCE=N"), "{bad}: {e}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("600s"), Ok(Duration::from_secs(600)));
        for bad in ["", "10", "5d", "h", "0s", "1.5h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
