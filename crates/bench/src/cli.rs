//! Command-line options and the scenario names `--scenario` accepts (the invocation is a
//! stable interface: scripts and docs use it). Depends on no other module of the crate.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Load and scale benchmark for Kubernetes API servers (kplane or kube-apiserver).
///
/// Talks only standard Kubernetes REST, configured by a kubeconfig. Objects are ConfigMaps
/// labelled `kplane-bench/run=<id>`; they are deleted at the end unless --keep.
#[derive(Parser, Debug, Clone)]
#[command(name = "kplane-bench", version)]
pub struct Opts {
    /// Kubeconfig file (default: $KUBECONFIG).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: PathBuf,
    /// Context to use instead of current-context.
    #[arg(long)]
    pub context: Option<String>,
    /// Kubeconfigs of more servers on the same store (replicas of the kubeconfig's server,
    /// with the same path prefix; each may have its own credentials). The clients of create,
    /// get, update and mixed are spread round-robin over all servers (client i on server
    /// i mod N); the watches of watch and mixed are spread over the servers but the first,
    /// and watch's writers write through the first (delivery latency across servers).
    /// Setup, the list scenario's lists and cleanup use the first server.
    #[arg(long, value_delimiter = ',')]
    pub replica_kubeconfig: Vec<PathBuf>,
    /// Scenarios to run, in order: create, get, update, list, watch, mixed, clusters, churn,
    /// workspaces, workspace-delete, wildcard-watch, noisy-neighbor, tenant-share
    /// (comma-separated or repeated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "create",
        required = false
    )]
    pub scenario: Vec<Scenario>,
    /// Concurrent clients (one connection each).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Measured time per scenario (phase), e.g. 10s, 500ms, 2m.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Stop a measurement after this many operations (whichever of --count and --duration
    /// comes first).
    #[arg(long)]
    pub count: Option<u64>,
    /// Unmeasured warm-up before each measurement.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Size in bytes of each ConfigMap's data value.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub size: u32,
    /// Namespace for the objects (created if missing, deleted at the end if created).
    #[arg(long, default_value = "kplane-bench")]
    pub namespace: String,
    /// Spread create/get/update/mixed over N namespaces (<namespace>-0 .. -N-1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub namespace_spread: u32,
    /// Spread create/get/update/mixed over N logical clusters (<cluster>:kb-<run>-s<i>);
    /// needs a server URL ending in /clusters/<name>.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub cluster_spread: u32,
    /// Objects read by get and mixed.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub pool: u32,
    /// Objects in the namespace listed by the list scenario.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub list_size: u32,
    /// Page size (limit) of paged lists; 0 skips the paged phase.
    #[arg(long, default_value_t = 500)]
    pub page_size: u32,
    /// List scenario: after the first measurement, make this many updates spread evenly
    /// over the listed ConfigMaps (with --history-clients clients), then measure the same
    /// lists again: LIST cost with that much history vs a fresh store, in one run. Keep
    /// the server's history window (--event-window-seconds) longer than the run so the
    /// history is really kept.
    #[arg(long, default_value_t = 0)]
    pub list_history: u64,
    /// Concurrent clients making the --list-history updates.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub history_clients: u32,
    /// List scenario with --list-history: how long to wait after the updates before the
    /// lists are measured again (lets the store's background work on the new history,
    /// e.g. PostgreSQL's autovacuum and analyze, finish, so the second measurement is of
    /// the history's cost and not of that work running beside it).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub history_settle: Duration,
    /// Concurrent watchers (watch scenario; mixed uses at most 10).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub watchers: u32,
    /// Writes per second while watchers listen (watch scenario). 0: no writes; the watches
    /// stay idle for --duration (with --server-pid: the server's memory per idle watch).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub watch_rate: u32,
    /// Multiplex the watches (watch and mixed scenarios) over shared HTTP/2 connections (at
    /// most 500 streams each), as client-go does, instead of one HTTP/1.1 connection each.
    #[arg(long)]
    pub watch_http2: bool,
    /// Logical clusters to create (clusters scenario).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub clusters: u32,
    /// Clusters scenario: a bearer token of a user without admin rights (e.g. from the
    /// server's `--token-auth-file`). Each new cluster then gets a RoleBinding of that user
    /// (`--rbac-user`) to the ClusterRole `view` in `--namespace`, and the user lists the
    /// cluster's ConfigMaps once it is populated and again in the list phase, so that every
    /// cluster's RBAC policy is compiled and cached (issue 14's memory figure).
    #[arg(long)]
    pub rbac_token: Option<String>,
    /// The user name `--rbac-token` authenticates as (the RoleBindings' subject).
    #[arg(long, default_value = "kb-reader")]
    pub rbac_user: String,
    /// The quiet tenant's clients (noisy-neighbor).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub quiet_concurrency: u32,
    /// Workspaces to create (workspaces, wildcard-watch, tenant-share: one tenant each) or
    /// delete (workspace-delete).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub workspaces: u32,
    /// ConfigMaps per logical cluster (clusters and workspace-delete scenarios).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub objects_per_cluster: u32,
    /// ConfigMaps rewritten continuously (churn scenario).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub live_set: u32,
    /// Leases renewed (churn scenario).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub leases: u32,
    /// Events kept alive (churn scenario): each new Event beyond this deletes the oldest
    /// (0: no Events; those writes update ConfigMaps).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub events_kept: u32,
    /// How often the churn scenario samples the write rate and the data directory's size.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub sample_every: Duration,
    /// Timeout of one request (and of connecting).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Bound on each setup and cleanup step (creating fixtures, waiting for watchers, deleting).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub setup_timeout: Duration,
    /// Keep created objects and namespaces.
    #[arg(long)]
    pub keep: bool,
    /// Print a JSON array (one object per scenario) on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// PID of a server on this machine: report its resident memory before/after each scenario.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// The server's data directory (default with --server-pid: read from that process's
    /// command line): report its disk usage before/after each scenario.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// A benchmark scenario (`--scenario NAME[,NAME...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// POST ConfigMaps of --size bytes.
    Create,
    /// GET single ConfigMaps from a pool of --pool objects.
    Get,
    /// PUT (with resourceVersion) one ConfigMap per client.
    Update,
    /// LIST a namespace of --list-size ConfigMaps, full and paged (--page-size).
    List,
    /// --watchers watches; latency from write acknowledgement to receipt at every watcher.
    Watch,
    /// A controller-like mix of get, list, update, create, delete with a few watchers.
    Mixed,
    /// Create --clusters logical clusters (each through a Workspace) with
    /// --objects-per-cluster ConfigMaps each.
    Clusters,
    /// Create --workspaces Workspaces, each until Ready (creations/s, memory per Workspace).
    Workspaces,
    /// Delete --workspaces Workspaces holding --objects-per-cluster ConfigMaps each while
    /// another tenant's GETs run (time until all gone, the tenant's p99 idle vs during).
    WorkspaceDelete,
    /// Rewrite --live-set ConfigMaps, renew --leases Leases, create and expire Events;
    /// samples write rate and disk usage every --sample-every.
    Churn,
    /// One watch on `/clusters/*` and one on a subtree while --concurrency clients write
    /// ConfigMaps spread over --workspaces Workspaces: each write delivered once, in
    /// resourceVersion order, with its cluster annotation.
    WildcardWatch,
    /// A quiet tenant's GETs (--quiet-concurrency clients) alone, then while a noisy
    /// tenant's --concurrency clients create and LIST (--list-size ConfigMaps) flat out.
    NoisyNeighbor,
    /// --workspaces tenants, one client each, GET flat out: each one's share (Jain's index).
    TenantShare,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Create => "create",
            Scenario::Get => "get",
            Scenario::Update => "update",
            Scenario::List => "list",
            Scenario::Watch => "watch",
            Scenario::Mixed => "mixed",
            Scenario::Clusters => "clusters",
            Scenario::Churn => "churn",
            Scenario::Workspaces => "workspaces",
            Scenario::WorkspaceDelete => "workspace-delete",
            Scenario::WildcardWatch => "wildcard-watch",
            Scenario::NoisyNeighbor => "noisy-neighbor",
            Scenario::TenantShare => "tenant-share",
        }
    }
}

/// Parses `10s`, `1.5s`, `250ms`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?} (use e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("bad duration unit in {s:?} (use ms, s, m or h)")),
    };
    if !secs.is_finite() || !(0.0..=7.0 * 86400.0).contains(&secs) {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("99999h").is_err());
    }

    #[test]
    fn stable_invocation_parses() {
        let o = Opts::try_parse_from([
            "kplane-bench",
            "--kubeconfig",
            "k",
            "--scenario",
            "create,get",
            "--concurrency",
            "64",
            "--duration",
            "10s",
            "--size",
            "1024",
            "--json",
        ])
        .unwrap();
        assert_eq!(o.scenario, vec![Scenario::Create, Scenario::Get]);
        assert_eq!(o.concurrency, 64);
        assert!(o.json);
        assert!(!o.watch_http2);
        let idle = Opts::try_parse_from([
            "kplane-bench",
            "--kubeconfig",
            "k",
            "--scenario",
            "watch",
            "--watchers",
            "10000",
            "--watch-rate",
            "0",
            "--watch-http2",
        ])
        .unwrap();
        assert_eq!((idle.watchers, idle.watch_rate), (10_000, 0));
        assert!(idle.watch_http2);
        let replicas = Opts::try_parse_from([
            "kplane-bench",
            "--kubeconfig",
            "a",
            "--replica-kubeconfig",
            "b,c",
            "--replica-kubeconfig",
            "d",
            "--scenario",
            "list",
            "--list-history",
            "1000000",
        ])
        .unwrap();
        assert_eq!(
            replicas.replica_kubeconfig,
            vec![PathBuf::from("b"), PathBuf::from("c"), PathBuf::from("d")]
        );
        assert_eq!(
            (replicas.list_history, replicas.history_clients),
            (1_000_000, 64)
        );
        assert!(o.replica_kubeconfig.is_empty());
        assert_eq!(o.list_history, 0);
        assert!(
            Opts::try_parse_from(["kplane-bench", "--kubeconfig", "k", "--scenario", "nope"])
                .is_err()
        );
    }
}
