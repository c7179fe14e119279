//! The client subcommands of `kplane`: `kplane ws ...` (workspaces) and `kplane kubeconfig
//! PATH`, which talk to a running kplane through the kubeconfig as kubectl does. The same
//! binary is a kubectl plugin: invoked as `kubectl-ws` it is `kplane ws`, as
//! `kubectl-kplane` it is `kplane` ([`plugin_argv`]).
//!
//! - [`kubeconfig`]: finding, merging and rewriting kubeconfig files.
//! - [`path`]: workspace paths and how `use` targets resolve.
//! - [`api`]: the kube-rs client per workspace and the Workspace calls.
//! - [`transfer`]: raw requests with streamed bodies (the archive endpoints), with the
//!   same connection and credentials as kube-rs; [`progress`]: the progress line.
//! - [`args`]: the commands' arguments as clap parses them; [`output`]: writing to stdout.
//! - [`ws`], [`export`], [`archive`] (`kplane export`/`import`), [`move_cmd`]
//!   (`kplane ws move`), [`rewrite`] (`kplane storage rewrite`): the commands, entered
//!   through [`commands`]; [`plugin`]: the kubectl plugin names.
//!
//! Errors are `anyhow` (this is the binary) with messages that say what to do; `main`
//! prints them on one line and exits 1.

mod api;
mod archive;
#[cfg(test)]
mod archive_tests;
mod args;
mod commands;
mod export;
pub mod kubeconfig;
mod move_cmd;
mod output;
pub mod path;
mod plugin;
mod progress;
mod rewrite;
mod transfer;
mod ws;

pub use args::{ExportCommand, ImportCommand, KubeconfigArgs, WsArgs};
pub use commands::{run_export, run_import, run_kubeconfig, run_storage, run_ws};
pub use output::out;
pub use plugin::plugin_argv;
pub use rewrite::StorageArgs;
