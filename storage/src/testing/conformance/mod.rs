//! The storage conformance suite: backend-independent checks that exercise a [`Storage`]
//! through the trait only. A backend runs all of them with one test:
//!
//! ```no_run
//! use std::sync::Arc;
//! use kplane_storage::{SledStorage, Storage};
//!
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_backend_conformance() {
//!     // Open the backend under test here.
//!     let store: Arc<dyn Storage> = SledStorage::open("db", Default::default()).unwrap();
//!     kplane_storage::testing::conformance::run_all(store.clone()).await;
//!     store.shutdown().await.unwrap();
//! }
//! ```
//!
//! Each check uses its own logical cluster names, so the store may hold other data, but
//! nothing else may write to it while the suite runs (some checks count revisions). The
//! checks that need compaction to happen, such as [`scan_outlasting_the_window_fails`],
//! are public on their own: a backend runs them on a store whose event window is short.
//! The helpers are public for a backend's own tests.

mod lists;
mod ranges;
mod subtrees;
mod watches;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use crate::{
    BatchWrite, Encoder, Event, Key, KeyValue, ListOptions, Precondition, Prefix, Revision,
    Storage, WatchEvent, WatchReceiver,
};

pub use ranges::scan_outlasting_the_window_fails;
pub use writes::write_batch_events_one_per_write;

/// Runs every backend-independent check against `s`, one after the other.
pub async fn run_all(s: Arc<dyn Storage>) {
    writes::crud_and_preconditions(&s).await;
    writes::encoder_errors_consume_no_revision(&s).await;
    writes::concurrent_writers(&s).await;
    lists::list_order_prefixes_filter_limit(&s).await;
    lists::wildcard_cluster_list(&s).await;
    subtrees::subtree_list_paging_and_siblings(&s).await;
    lists::paging_snapshot_under_writes(&s).await;
    lists::snapshots_match_model(&s).await;
    lists::count_after_crosses_chunks(&s).await;
    lists::count_after_under_writes(&s).await;
    watches::watch_replay_then_live(&s).await;
    watches::watch_prefixes_and_prev(&s).await;
    watches::watch_future_from_waits(&s).await;
    watches::watch_progress(&s).await;
    watches::watch_drop_unregisters(&s).await;
    subtrees::subtree_watch_filters(&s).await;
    writes::write_batch_is_writes_in_order(&s).await;
    writes::write_batch_events_one_per_write(&s, 300).await;
    ranges::delete_cluster_in_batches(&s, 1201, 256).await;
    ranges::delete_cluster_in_batches(&s, 1201, 500).await;
    ranges::delete_cluster_in_batches(&s, 3, 256).await;
    ranges::delete_cluster_errors_and_resumes(&s).await;
    ranges::scan_is_consistent_across_pages(&s).await;
    ranges::clusters_lists_clusters_with_keys(&s).await;
}

/// The resource the checks store their keys under.
pub const RES: &str = "/configmaps";

/// An encoder storing `"{v}@{revision}"`.
pub fn enc(v: &str) -> Encoder {
    let v = v.to_string();
    Box::new(move |rev| Ok(format!("{v}@{rev}").into_bytes()))
}

/// A stored value as text.
pub fn val(kv: &KeyValue) -> String {
    String::from_utf8(kv.value.to_vec()).unwrap()
}

/// A key of [`RES`].
pub fn key(cluster: &str, ns: &str, name: &str) -> Key {
    Key::new(cluster, RES, ns, name)
}

/// Creates `k` with value `v`, failing the test if it exists.
pub async fn create(s: &Arc<dyn Storage>, k: Key, v: &str) -> KeyValue {
    s.put(k, Precondition::MustNotExist, enc(v)).await.unwrap()
}

/// Every key under `p` at revision `at` (latest when `None`), in one list.
pub async fn list_all(s: &Arc<dyn Storage>, p: &Prefix, at: Option<Revision>) -> Vec<KeyValue> {
    let opts = ListOptions {
        at_revision: at,
        ..Default::default()
    };
    s.list(p, &opts, None).await.unwrap().items
}

/// Receives the next event, failing the test on timeout, close or progress noise.
pub async fn next_event(rx: &mut WatchReceiver) -> Arc<Event> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => return e,
            Ok(Some(WatchEvent::Progress(_))) => continue,
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

/// Asserts nothing (but progress) arrives for a short while.
pub async fn assert_quiet(rx: &mut WatchReceiver) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => return,
            Ok(Some(WatchEvent::Progress(_))) => continue,
            Ok(other) => panic!("expected nothing, got {other:?}"),
        }
    }
}

/// One write of a batch with an [`enc`] encoder.
pub fn bw(k: Key, delete: bool, precondition: Precondition, v: &str) -> BatchWrite {
    BatchWrite {
        key: k,
        delete,
        precondition,
        encode: enc(v),
    }
}
