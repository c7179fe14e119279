//! `kplane`: the command-line front end of the kplane API server.
//!
//! `kplane serve --data-dir DIR --bind HOST:PORT` starts the server and writes
//! `DIR/admin.kubeconfig` once it is ready. All server behaviour lives in
//! `kplane-apiserver`; for it this binary only parses flags, sets up logging (see
//! [`logging`]) and handles signals.
//!
//! The client commands (`kplane ws ...`, `kplane kubeconfig PATH`) live in [`client`];
//! `kplane completion SHELL` prints a shell completion script. Invoked as `kubectl-ws` or
//! `kubectl-kplane` (symlinks that `make install` creates), the binary is a kubectl plugin.

mod client;
mod logging;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

/// mimalloc instead of the system allocator: profiles of the write path showed glibc
/// malloc/free at about a quarter of the server's CPU (see docs/performance.md).
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
    Serve(ServeArgs),
    /// Workspaces: create, list, delete, use (also `kubectl ws`).
    Ws(client::WsArgs),
    /// Print a self-contained kubeconfig for one workspace (logical cluster).
    Kubeconfig(client::KubeconfigArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Directory for the store, certificates and admin.kubeconfig.
    #[arg(long, default_value = "./kplane-data", env = "KPLANE_DATA_DIR")]
    data_dir: PathBuf,
    /// Address to listen on (port 0 picks a free port; the kubeconfig names the real one).
    #[arg(long, default_value = "127.0.0.1:6443", env = "KPLANE_BIND")]
    bind: SocketAddr,
    /// Extra subject alternative names for the serving certificate (DNS names or IPs).
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// How long watch and continue resumption history is kept, in seconds.
    #[arg(long, default_value_t = 300)]
    event_window_seconds: u64,
    /// How long Events live after their last update, in seconds (Kubernetes' --event-ttl).
    #[arg(long, default_value_t = 3600)]
    event_ttl_seconds: u64,
    /// Size of the storage page cache, in MiB. Lists of more data than this read pages
    /// back from the data files (see docs/performance.md).
    #[arg(long, default_value_t = 64)]
    storage_cache_mb: u64,
    /// Compress the history storage keeps for the event window (zstd; the latest values
    /// are never compressed). `=false` trades disk for a little less CPU per write.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    storage_compress_history: bool,
    /// Log verbosity, as kube-apiserver's `-v`: 0 start-up, shutdown, warnings and every
    /// 5xx with its cause; 2 adds a line per 4xx request; 3 a line per request; 5 kplane's
    /// debug lines. Dependencies only log warnings unless RUST_LOG names them.
    #[arg(short = 'v', long = "v", value_name = "N", default_value_t = 0)]
    verbosity: u8,
    /// Log format on stderr: `text`, or `json` (one object per line) for log shippers.
    #[arg(long, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
}

fn main() -> anyhow::Result<()> {
    let (plugin_name, argv) = client::plugin_argv(std::env::args_os().collect());
    let mut command = Cli::command();
    if let Some(name) = plugin_name {
        command = command.bin_name(name);
    }
    let cli = match Cli::from_arg_matches(&command.get_matches_from(argv)) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let args = match cli.command {
        Command::Serve(args) => args,
        Command::Completion { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kplane", &mut script);
            exit_on_error(client::out(&String::from_utf8_lossy(&script)));
        }
        Command::Ws(args) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_ws(args))))
        }
        Command::Kubeconfig(args) => {
            exit_on_error(client_runtime().and_then(|rt| rt.block_on(client::run_kubeconfig(args))))
        }
    };
    logging::init(args.verbosity, args.log_format)?;
    raise_open_file_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(args))
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

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    if args.event_window_seconds == 0 {
        anyhow::bail!("--event-window-seconds must be at least 1");
    }
    let server = kplane_apiserver::Server::builder()
        .data_dir(args.data_dir)
        .bind(args.bind)
        .tls_sans(args.tls_san)
        .event_window(Duration::from_secs(args.event_window_seconds))
        .event_ttl(Duration::from_secs(args.event_ttl_seconds.max(1)))
        .storage_cache_bytes(args.storage_cache_mb.max(1) * 1024 * 1024)
        .storage_compress_history(args.storage_compress_history)
        .build_info(build_info())
        .build();
    server
        .serve(shutdown_signal())
        .await
        .context("kplane server failed")?;
    Ok(())
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
