//! The entry points `main` calls for the client commands: each hands its parsed arguments
//! to the module that implements the command.

use super::args::{ExportCommand, ImportCommand, KubeconfigArgs, WsArgs};
use super::rewrite::{self, StorageArgs};
use super::{archive, export, ws};

/// Runs `kplane ws`.
pub async fn run_ws(args: WsArgs) -> anyhow::Result<()> {
    ws::run(&args.flags, args.command).await
}

/// `kplane storage ...`.
pub async fn run_storage(args: StorageArgs) -> anyhow::Result<()> {
    rewrite::run(args).await
}

/// Runs `kplane export`.
pub async fn run_export(cmd: ExportCommand) -> anyhow::Result<()> {
    archive::export(&cmd.flags, cmd.args).await
}

/// Runs `kplane import`.
pub async fn run_import(cmd: ImportCommand) -> anyhow::Result<()> {
    archive::import(&cmd.flags, cmd.args).await
}

/// Runs `kplane kubeconfig`.
pub async fn run_kubeconfig(args: KubeconfigArgs) -> anyhow::Result<()> {
    export::run(&args.flags, &args.path).await
}
