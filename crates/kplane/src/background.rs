//! The lowered runtimes of `kplane serve`: Tokio runtimes of their own whose threads'
//! OS scheduling priority is [`BACKGROUND_NICE`] steps below the server's (niceness +10,
//! at most 19). On a machine with few cores, work on the server's own runtime that no
//! tenant within its share waits for would otherwise hold a core in bursts, and a tenant's
//! request that arrives meanwhile waits for its time slice; at a lower priority the kernel
//! runs the request first. There are two:
//!
//! - the background runtime, one worker thread, for the controllers' work that no request
//!   waits for (workspace deletion, the namespace and garbage collection controllers);
//! - the runtime of requests past their cluster's share, a worker per core, for the
//!   handlers of a logical cluster whose requests queue behind its cap of seats while
//!   other clusters are served (`kplane_apiserver::flowcontrol::lowered`).
//!
//! The priority is lowered per thread with `setpriority(PRIO_PROCESS, tid, n)` through
//! `rustix` (safe bindings; the crate forbids `unsafe`). On Linux a thread id names that
//! thread alone, so the request-serving threads and the storage writer (which serves
//! tenants' writes too) keep the server's priority.

use anyhow::Context;

/// How many niceness steps the background runtime's threads run below the server's own
/// (niceness is -20 to 19; 19 is the lowest priority).
pub const BACKGROUND_NICE: i32 = 10;

/// Builds the background runtime: one worker thread (its blocking pool's threads are
/// lowered too), `nice` steps below the calling thread's priority.
pub fn runtime(nice: i32) -> anyhow::Result<tokio::runtime::Runtime> {
    lowered_runtime("kplane-background", 1, nice).context("starting the background runtime")
}

/// Builds the runtime of requests past their cluster's share: a worker per core, `nice`
/// steps below the calling thread's priority.
pub fn past_share_runtime(nice: i32) -> anyhow::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    lowered_runtime("kplane-past-share", cores, nice)
        .context("starting the runtime of requests past their cluster's share")
}

fn lowered_runtime(
    name: &str,
    workers: usize,
    nice: i32,
) -> std::io::Result<tokio::runtime::Runtime> {
    // Absolute, from the caller's: a thread starts at the priority of the thread that
    // spawned it, which for the blocking pool may be a lowered one already.
    let to = own_priority().saturating_add(nice).min(19);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .on_thread_start(move || set_priority(to))
        .enable_all()
        .build()
}

/// The calling thread's niceness (0 where it cannot be read).
#[cfg(target_os = "linux")]
fn own_priority() -> i32 {
    rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap_or(0)
}

/// Sets the calling thread's niceness to `to`; a failure is logged and the thread keeps its
/// priority (the work is the same, only the isolation is lost).
#[cfg(target_os = "linux")]
fn set_priority(to: i32) {
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), to) {
        tracing::warn!(error = %e, nice = to, "could not lower the background thread's priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn own_priority() -> i32 {
    0
}

#[cfg(not(target_os = "linux"))]
fn set_priority(_to: i32) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn background_threads_run_lowered_once_and_the_caller_is_not_lowered() {
        let own = own_priority();
        let rt = runtime(BACKGROUND_NICE).unwrap();
        let (worker, blocking) = rt.block_on(async {
            // Both seen from the worker: a blocking thread it spawns starts at its (lowered)
            // priority and must not be lowered a second time.
            tokio::spawn(async {
                let blocking = tokio::task::spawn_blocking(own_priority).await.unwrap();
                (own_priority(), blocking)
            })
            .await
            .unwrap()
        });
        let lowered = (own + BACKGROUND_NICE).min(19);
        assert_ne!(lowered, own, "a test run at niceness 19 shows nothing");
        assert_eq!(worker, lowered);
        assert_eq!(blocking, lowered);
        assert_eq!(own_priority(), own, "the calling thread keeps its priority");
        rt.shutdown_background();
    }

    #[test]
    fn the_past_share_runtime_has_a_lowered_worker_per_core() {
        let own = own_priority();
        let rt = past_share_runtime(BACKGROUND_NICE).unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(rt.metrics().num_workers(), cores);
        let (name, priority) = rt.block_on(async {
            tokio::spawn(async {
                let name = std::thread::current().name().map(str::to_string);
                (name, own_priority())
            })
            .await
            .unwrap()
        });
        assert_eq!(name.as_deref(), Some("kplane-past-share"));
        assert_eq!(priority, (own + BACKGROUND_NICE).min(19));
        rt.shutdown_background();
    }
}
