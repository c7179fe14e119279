//! Storage conformance for the in-memory store of unit tests (`kplane_storage::memory`,
//! the `testing` feature), on its own and behind the fault-injecting wrapper with no fault
//! injected (`kplane_storage::faults`), which must pass every call through unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::faults::Faulty;
use kplane_storage::memory::{MemoryStorage, MemoryStorageOptions};
use kplane_storage::testing::conformance;
use kplane_storage::Storage;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conformance() {
    let s: Arc<dyn Storage> = MemoryStorage::new(MemoryStorageOptions::default());
    conformance::run_all(s.clone()).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_memory_conformance() {
    let inner: Arc<dyn Storage> = MemoryStorage::new(MemoryStorageOptions::default());
    let s: Arc<dyn Storage> = Faulty::new(inner);
    conformance::run_all(s.clone()).await;
    s.shutdown().await.unwrap();
}

/// The conformance check for scans that outlast the event window, with a short window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_scan_outlasting_the_window_fails() {
    let s: Arc<dyn Storage> = MemoryStorage::new(MemoryStorageOptions {
        event_window: Duration::from_millis(200),
        ..Default::default()
    });
    conformance::scan_outlasting_the_window_fails(&s).await;
    s.shutdown().await.unwrap();
}
