//! kube-rs (typed `Api`, runtime watcher/reflector, event recorder) against kplane.

mod apply;
mod events;
mod gc;
mod lease;
mod list_watch;
mod namespace_delete;
mod patch;
mod reflector;
