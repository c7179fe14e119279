//! The command-line arguments of the client commands, as clap parses them: the flags every
//! client command takes ([`ClientFlags`]), `kplane ws` and its subcommands, `kplane
//! export`/`import`, `kplane kubeconfig` and `kplane ws move`.

use std::path::PathBuf;
use std::time::Duration;

/// Where the server is: the flags every client command takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientFlags {
    /// The kubeconfig file (default: the files of $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current-context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

/// `kplane ws`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Create, list, delete and enter workspaces (also `kubectl ws`)",
    long_about = "Create, list, delete and enter workspaces: child logical clusters.\n\n\
        The current workspace is the `/clusters/<path>` of the kubeconfig context's server \
        URL; `kplane ws use` rewrites it. Without a subcommand, prints the current workspace."
)]
pub struct WsArgs {
    #[command(flatten)]
    pub flags: ClientFlags,
    #[command(subcommand)]
    pub command: Option<WsCommand>,
}

/// The `kplane ws` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum WsCommand {
    /// Create a workspace in the current workspace (or in --parent).
    Create {
        /// The workspace's name, a DNS-1123 label; the child is `<parent>:<name>`.
        name: String,
        /// The parent workspace (absolute `root:...`, or relative to the current one).
        #[arg(long, value_name = "PATH")]
        parent: Option<String>,
        /// A WorkspaceTemplate to apply to the new workspace (`spec.template`).
        #[arg(long, value_name = "NAME")]
        template: Option<String>,
        /// Wait until the workspace is Ready; fail if it turns Failed.
        #[arg(long)]
        wait: bool,
        /// Wait, then make the new workspace the current one.
        #[arg(long)]
        enter: bool,
        /// How long --wait waits (e.g. 90s, 5m).
        #[arg(long, default_value = "5m", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// List the workspaces of the current workspace (NAME PHASE URL AGE).
    #[command(visible_alias = "ls")]
    List {
        /// Draw the whole tree below the current workspace.
        #[arg(long)]
        tree: bool,
        /// Workspaces per list request, as kubectl's --chunk-size.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
        chunk_size: u32,
    },
    /// Delete a workspace of the current workspace, with everything in it.
    Delete {
        name: String,
        /// Wait until the workspace and its content are gone (--wait=false to return at once).
        #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true",
              action = clap::ArgAction::Set)]
        wait: bool,
        /// How long --wait waits.
        #[arg(long, default_value = "5m", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Make another workspace the current one: root:a:b, a child name, .., - (previous), ~ (root).
    Use {
        #[arg(value_name = "PATH|NAME|..|-|~", allow_hyphen_values = true)]
        target: String,
    },
    /// Print the current workspace.
    Current,
    /// Export a workspace (logical cluster) to an archive file (as `kplane export`).
    Export(ExportArgs),
    /// Import an archive file into a workspace (as `kplane import`).
    Import(ImportArgs),
    /// Move a workspace to another kplane server while it keeps serving (resumable).
    Move(MoveArgs),
}

/// What `kplane export` and `kplane ws export` take.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The workspace (absolute `root:...`, or relative to the current one, as for `ws use`).
    #[arg(value_name = "PATH")]
    pub path: String,
    /// The archive file to write (`-` for stdout). Written as FILE.tmp, renamed when complete.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Include the workspace's descendant workspaces.
    #[arg(long)]
    pub recursive: bool,
    /// Write the archive without zstd compression.
    #[arg(long)]
    pub no_compress: bool,
}

/// What `kplane import` and `kplane ws import` take.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The archive file (compressed or not).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Import as this workspace instead of the archive's own path (absolute, or relative
    /// to the current workspace). Its parent must exist.
    #[arg(long = "as", value_name = "PATH")]
    pub as_path: Option<String>,
    /// Replace the content of the target workspace if it has any (otherwise refused).
    #[arg(long)]
    pub replace: bool,
}

/// `kplane export`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Export a workspace (logical cluster) to an archive file (also `kubectl ws export`)",
    long_about = "Export a workspace (logical cluster) to an archive file: every object as \
        stored (status, uids, finalizers, ownerReferences, managedFields), read at one \
        revision while the workspace keeps serving. The format is docs/archive-format.md."
)]
pub struct ExportCommand {
    #[command(flatten)]
    pub flags: ClientFlags,
    #[command(flatten)]
    pub args: ExportArgs,
}

/// `kplane import`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Import an archive file into a workspace (also `kubectl ws import`)",
    long_about = "Import an archive file written by `kplane export`: the file is verified in \
        full first, then restored as one atomic step, keeping uids, status and owner \
        references (resourceVersions are new). An existing non-empty workspace is only \
        replaced with --replace."
)]
pub struct ImportCommand {
    #[command(flatten)]
    pub flags: ClientFlags,
    #[command(flatten)]
    pub args: ImportArgs,
}

/// `kplane kubeconfig`.
#[derive(clap::Args, Debug)]
pub struct KubeconfigArgs {
    #[command(flatten)]
    pub flags: ClientFlags,
    /// The workspace (absolute `root:...`, or relative to the current one).
    #[arg(value_name = "PATH")]
    pub path: String,
}

/// What `kplane ws move` takes.
#[derive(clap::Args, Debug)]
pub struct MoveArgs {
    /// The workspace to move (absolute `root:...`, or relative to the current one).
    #[arg(value_name = "PATH")]
    pub path: String,
    /// The kubeconfig of the target server (its current context, or --to-context).
    #[arg(long, value_name = "KUBECONFIG")]
    pub to: PathBuf,
    /// The context of --to's kubeconfig to use.
    #[arg(long, value_name = "NAME")]
    pub to_context: Option<String>,
    /// The workspace path on the target (default: the same path). Its parent must exist.
    #[arg(long = "as", value_name = "NEWPATH")]
    pub as_path: Option<String>,
    /// Roll back a move that has not switched yet: drop the target's staged copy and lift
    /// the source's fence.
    #[arg(long)]
    pub abort: bool,
}

/// `90`, `90s`, `5m`, `1h`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a duration such as 90s or 5m"))?;
    let secs = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        _ => return Err(format!("{s:?} is not a duration such as 90s or 5m")),
    };
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("5 m").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("1d").is_err());
    }
}
