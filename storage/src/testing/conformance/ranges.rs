//! Conformance checks of whole-range operations: deleting a logical cluster in batches
//! ([`Storage::delete_cluster`]), scanning a prefix at one revision ([`Storage::scan`]) and
//! listing the logical clusters that hold keys ([`Storage::clusters`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{assert_quiet, bw, create, enc, key, list_all, next_event, val};
use crate::{
    CloseReason, Error, Event, EventType, Key, KeyValue, Precondition, Prefix, RangeScan, Revision,
    Storage, Tombstone, WatchEvent, WatchReceiver,
};

/// Resources the range checks spread their keys over (cluster-scoped and namespaced).
const RESOURCES: [&str; 3] = ["/configmaps", "apps/deployments", "example.com/widgets"];

/// Creates `n` keys in `cluster` across [`RESOURCES`] and three namespaces (one of them
/// cluster-scoped), in batches of 100; returns them in key order.
async fn fill(s: &Arc<dyn Storage>, cluster: &str, n: usize, v: &str) -> Vec<KeyValue> {
    let keys: Vec<Key> = (0..n)
        .map(|i| {
            let ns = ["", "ns-a", "ns-b"][i % 3];
            Key::new(cluster, RESOURCES[(i / 3) % 3], ns, format!("k{i:05}"))
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for chunk in keys.chunks(100) {
        let writes = chunk
            .iter()
            .map(|k| bw(k.clone(), false, Precondition::MustNotExist, v))
            .collect();
        for r in s.write_batch(writes).await {
            out.push(r.unwrap());
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The tombstone the checks use: the last value, marked, with the delete's revision.
fn tombstone() -> Tombstone {
    Arc::new(|kv: &KeyValue, rev: Revision| {
        Ok(format!("gone({})@{rev}", String::from_utf8_lossy(&kv.value)).into_bytes())
    })
}

/// Clusters whose names border `cluster`'s (a child workspace, longer and shorter names):
/// the range delete must not touch them.
fn neighbours(cluster: &str) -> Vec<String> {
    let shorter = &cluster[..cluster.len() - 1];
    vec![
        format!("{cluster}:child"),
        format!("{cluster}-x"),
        format!("{cluster}\u{0}"),
        shorter.to_string(),
    ]
}

/// Deletes a cluster of `n` keys in batches of `batch`: every key goes, each at its own
/// revision with a `Deleted` event carrying its tombstone and its last value, watchers of
/// the cluster see every delete, snapshots before the delete still hold every key, and
/// other clusters (including ones with bordering names) are untouched.
pub(super) async fn delete_cluster_in_batches(s: &Arc<dyn Storage>, n: usize, batch: usize) {
    let cluster = format!("rdel{n}b{batch}");
    let others = neighbours(&cluster);
    let mut other_state = Vec::new();
    for o in &others {
        create(s, key(o, "ns-a", "keep"), "keep").await;
        create(
            s,
            Key::new(o.as_str(), "apps/deployments", "", "keep"),
            "keep",
        )
        .await;
        other_state.push(list_all(s, &Prefix::cluster(o.as_str()), None).await);
    }
    let before = fill(s, &cluster, n, "v").await;
    let p = Prefix::cluster(cluster.as_str());
    let start = s.current_revision();
    assert_eq!(list_all(s, &p, None).await, before);

    // A live watcher of the cluster, read concurrently (the deletes outnumber a watch
    // queue), and one of every bordering cluster, which must stay quiet.
    let rx = s.watch(&p, start, None).await.unwrap();
    let collector = tokio::spawn(collect(s.clone(), p.clone(), rx, start, n));
    let mut other_rx = Vec::new();
    for o in &others {
        other_rx.push(
            s.watch(&Prefix::cluster(o.as_str()), start, None)
                .await
                .unwrap(),
        );
    }

    let deleted = s
        .delete_cluster(&cluster, batch, tombstone())
        .await
        .unwrap();
    assert_eq!(deleted, n as u64, "keys deleted");
    let end = s.current_revision();
    assert_eq!(end, start + n as Revision, "one revision per deleted key");
    assert!(list_all(s, &p, None).await.is_empty());
    assert_eq!(s.count(&p).await.unwrap(), 0);
    for kv in before.iter().step_by(97) {
        assert!(s.get(&kv.key).await.unwrap().is_none(), "{:?}", kv.key);
    }
    // Resumable: nothing is left for a second call.
    assert_eq!(
        s.delete_cluster(&cluster, batch, tombstone())
            .await
            .unwrap(),
        0
    );
    assert_eq!(s.current_revision(), end);

    // The events: one Deleted per key, revisions one apart, tombstone and last value.
    let (seen, mut rx) = tokio::time::timeout(Duration::from_secs(60), collector)
        .await
        .expect("the watcher did not see every delete")
        .unwrap();
    assert_quiet(&mut rx).await;
    check_delete_events(&seen, &before, start);
    // The same from the event log, replayed after the fact.
    let mut replay = s.watch(&p, start, None).await.unwrap();
    let mut replayed = Vec::with_capacity(n);
    while replayed.len() < n {
        replayed.push(next_event(&mut replay).await);
    }
    assert_quiet(&mut replay).await;
    check_delete_events(&replayed, &before, start);

    // Snapshot reads before the delete still see every key.
    assert_eq!(list_all(s, &p, Some(start)).await, before);
    // Other clusters are untouched and saw no event.
    for ((o, state), orx) in others.iter().zip(&other_state).zip(&mut other_rx) {
        assert_eq!(
            &list_all(s, &Prefix::cluster(o.as_str()), None).await,
            state
        );
        assert_quiet(orx).await;
    }
}

/// Reads `n` events from `rx` (a watch of `p` from `from`). A watcher that is closed as
/// too slow watches again from its last revision, as clients do.
async fn collect(
    s: Arc<dyn Storage>,
    p: Prefix,
    mut rx: WatchReceiver,
    from: Revision,
    n: usize,
) -> (Vec<Arc<Event>>, WatchReceiver) {
    let mut seen: Vec<Arc<Event>> = Vec::with_capacity(n);
    while seen.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => seen.push(e),
            Ok(Some(WatchEvent::Progress(_))) => {}
            Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) | Ok(None) => {
                let last = seen.last().map_or(from, |e| e.kv.mod_revision);
                rx = s.watch(&p, last, None).await.unwrap();
            }
            other => panic!("after {} events: {other:?}", seen.len()),
        }
    }
    (seen, rx)
}

/// `events` delete every key of `before` once, at consecutive revisions after `start`.
fn check_delete_events(events: &[Arc<Event>], before: &[KeyValue], start: Revision) {
    let last: BTreeMap<&Key, &KeyValue> = before.iter().map(|kv| (&kv.key, kv)).collect();
    let mut keys = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        let rev = start + 1 + i as Revision;
        assert_eq!(e.event_type, EventType::Deleted, "event {i}");
        assert_eq!(e.kv.mod_revision, rev, "event {i}: revisions one apart");
        let old = last.get(&e.kv.key).expect("a deleted key existed before");
        assert_eq!(e.kv.create_revision, old.create_revision);
        assert_eq!(val(&e.kv), format!("gone({})@{rev}", val(old)));
        assert_eq!(
            e.prev.as_deref(),
            Some(old.value.as_ref()),
            "event {i}: prev"
        );
        keys.push(e.kv.key.clone());
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), before.len(), "every key deleted exactly once");
}

/// A batch size of 0 still makes progress; a tombstone error stops the delete with
/// [`Error::Encode`] and leaves that key, and a later call finishes the job.
pub(super) async fn delete_cluster_errors_and_resumes(s: &Arc<dyn Storage>) {
    let cluster = "rdel-resume";
    let p = Prefix::cluster(cluster);
    let before = fill(s, cluster, 30, "v").await;
    let poison = before[10].key.clone();
    let failing: Tombstone = {
        let poison = poison.clone();
        Arc::new(move |kv: &KeyValue, rev: Revision| {
            if kv.key == poison {
                Err("no tombstone".to_string())
            } else {
                Ok(format!("gone@{rev}").into_bytes())
            }
        })
    };
    let e = s.delete_cluster(cluster, 4, failing).await.unwrap_err();
    assert!(
        matches!(&e, Error::Encode(m) if m == "no tombstone"),
        "{e:?}"
    );
    let left = list_all(s, &p, None).await;
    assert!(
        left.iter().any(|kv| kv.key == poison),
        "the failed key stays"
    );
    assert!(
        left.len() < before.len(),
        "batches before the failure stay deleted"
    );
    // Batch 0 is taken as 1.
    let rest = s.delete_cluster(cluster, 0, tombstone()).await.unwrap();
    assert_eq!(rest, left.len() as u64);
    assert!(list_all(s, &p, None).await.is_empty());
    // An empty or unknown cluster deletes nothing.
    assert_eq!(
        s.delete_cluster("rdel-none", 10, tombstone())
            .await
            .unwrap(),
        0
    );
}

/// Reads a whole scan, checking each page's size and the key order.
async fn read_scan(scan: &mut Box<dyn RangeScan>, page_size: usize) -> Vec<KeyValue> {
    let mut out: Vec<KeyValue> = Vec::new();
    while let Some(page) = scan.next_page().await.unwrap() {
        assert!(
            !page.is_empty() && page.len() <= page_size,
            "{}",
            page.len()
        );
        out.extend(page);
    }
    // Finished stays finished.
    assert!(scan.next_page().await.unwrap().is_none());
    out
}

/// Changes `cluster` a little: updates one key of `keys`, deletes another, creates one.
async fn churn(s: &Arc<dyn Storage>, cluster: &str, keys: &[KeyValue], step: usize) {
    let i = (step * 13) % keys.len();
    let _ = s
        .put(keys[i].key.clone(), Precondition::MustExist, enc("new"))
        .await;
    let j = (step * 31 + 5) % keys.len();
    let _ = s
        .delete(keys[j].key.clone(), Precondition::MustExist, enc("del"))
        .await;
    let _ = s
        .put(
            key(cluster, "ns-a", &format!("new-{step:05}")),
            Precondition::MustNotExist,
            enc("new"),
        )
        .await;
}

/// Scans a cluster at one revision in pages of several sizes (1, a few, and one below, at
/// and above the number of keys) while the cluster changes between pages: the pages hold
/// exactly the state at the scan's revision, in key order, and never a write made during
/// the scan.
pub(super) async fn scan_is_consistent_across_pages(s: &Arc<dyn Storage>) {
    let cluster = "scan";
    let p = Prefix::cluster(cluster);
    for o in neighbours(cluster) {
        create(s, key(&o, "ns-a", "x"), "v").await;
    }
    fill(s, cluster, 300, "v").await;
    let mut step = 0;
    for size in 0..6 {
        let rev = s.current_revision();
        let want = list_all(s, &p, Some(rev)).await;
        let n = want.len();
        let page_size = [1, 7, 64, n - 1, n, n + 1][size];
        let mut scan = s.scan(&p, None, page_size).await.unwrap();
        assert_eq!(scan.revision(), rev);
        let mut got: Vec<KeyValue> = Vec::new();
        let mut pages = 0;
        loop {
            // Change the cluster before the first pages and then now and again (every
            // change is a durable write).
            if pages < 8 || pages % 32 == 0 {
                step += 1;
                churn(s, cluster, &want, step).await;
            }
            match scan.next_page().await.unwrap() {
                Some(page) => {
                    assert!(!page.is_empty() && page.len() <= page_size);
                    got.extend(page);
                }
                None => break,
            }
            pages += 1;
        }
        assert!(scan.next_page().await.unwrap().is_none());
        assert!(
            s.current_revision() > rev,
            "the cluster changed during the scan"
        );
        assert_eq!(pages, n.div_ceil(page_size), "pages of {page_size}");
        assert!(got.windows(2).all(|w| w[0].key < w[1].key), "key order");
        assert_eq!(got, want, "scan in pages of {page_size} at {rev}");
    }

    // An explicit older revision, a prefix narrower than a cluster, other clusters.
    let old = s.current_revision();
    let want_old = list_all(s, &p, Some(old)).await;
    s.delete_cluster(cluster, 100, tombstone()).await.unwrap();
    let mut scan = s.scan(&p, Some(old), 50).await.unwrap();
    assert_eq!(scan.revision(), old);
    assert_eq!(read_scan(&mut scan, 50).await, want_old);
    let ns = Prefix::namespace(cluster, RESOURCES[1], "ns-b");
    let mut scan = s.scan(&ns, Some(old), 9).await.unwrap();
    let want_ns = list_all(s, &ns, Some(old)).await;
    assert!(!want_ns.is_empty());
    assert_eq!(read_scan(&mut scan, 9).await, want_ns);
    let mut scan = s.scan(&p, None, 10).await.unwrap();
    assert!(read_scan(&mut scan, 10).await.is_empty(), "deleted by now");
    let mut scan = s
        .scan(&Prefix::cluster("scan:child"), None, 10)
        .await
        .unwrap();
    assert_eq!(read_scan(&mut scan, 10).await.len(), 1);

    // A revision the store has not reached.
    let future = s.current_revision() + 10;
    match s.scan(&p, Some(future), 10).await {
        Err(Error::FutureRevision { requested, .. }) => assert_eq!(requested, future),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("a scan at a future revision started"),
    }
}

/// For a store whose event window is short (a second or less): a scan that outlasts the
/// window fails with [`Error::Compacted`] on its next page and every page after, and a
/// scan cannot start below the compaction point.
pub async fn scan_outlasting_the_window_fails(s: &Arc<dyn Storage>) {
    let cluster = "scan-compacted";
    let p = Prefix::cluster(cluster);
    fill(s, cluster, 20, "v").await;
    let mut scan = s.scan(&p, None, 5).await.unwrap();
    let rev = scan.revision();
    assert_eq!(scan.next_page().await.unwrap().unwrap().len(), 5);
    // Move the compaction point past the scan's revision: a later write must age out.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while s.compacted_revision() <= rev {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the compaction point did not pass {rev}"
        );
        create(s, key("scan-compacted-tick", "ns", "t"), "t").await;
        s.delete(
            key("scan-compacted-tick", "ns", "t"),
            Precondition::MustExist,
            enc("d"),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for _ in 0..2 {
        match scan.next_page().await {
            Err(Error::Compacted { requested, .. }) => assert_eq!(requested, rev),
            other => panic!("expected Compacted, got {other:?}"),
        }
    }
    match s.scan(&p, Some(rev), 5).await {
        Err(Error::Compacted { requested, .. }) => assert_eq!(requested, rev),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("a scan below the compaction point started"),
    }
    // At the current revision it works again.
    let mut scan = s.scan(&p, None, 5).await.unwrap();
    assert_eq!(read_scan(&mut scan, 5).await.len(), 20);
}

/// Every cluster [`Storage::clusters`] lists whose name starts with `prefix`, read in pages
/// of `limit`.
async fn clusters_paged(s: &Arc<dyn Storage>, prefix: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = s.clusters(after.as_deref(), limit).await.unwrap();
        assert!(
            page.len() <= limit.max(1),
            "page of {} > {limit}",
            page.len()
        );
        let Some(last) = page.last().cloned() else {
            break;
        };
        out.extend(page.into_iter().filter(|c| c.starts_with(prefix)));
        after = Some(last);
    }
    out
}

/// [`Storage::clusters`] lists each cluster holding keys once, in key order, in pages below,
/// at and above the number of clusters; bordering names (children, longer names, an escaped
/// byte) are distinct clusters; a cluster whose keys are deleted (one by one or with
/// [`Storage::delete_cluster`]) is no longer listed; `start_after` need not be a cluster.
pub(super) async fn clusters_lists_clusters_with_keys(s: &Arc<dyn Storage>) {
    let p = "lc-";
    let mut names: Vec<String> = vec![
        "lc-a".into(),
        "lc-a:b".into(),
        "lc-a:b:c".into(),
        "lc-a-x".into(),
        "lc-a\u{0}".into(),
        "lc-ab".into(),
        "lc-b".into(),
    ];
    for (i, c) in names.iter().enumerate() {
        // Different shapes: one key, keys in several resources and namespaces.
        for j in 0..=i {
            create(s, key(c, &format!("ns{j}"), "k"), "v").await;
            create(
                s,
                Key::new(c.as_str(), "apps/deployments", "", format!("d{j}")),
                "v",
            )
            .await;
        }
    }
    names.sort();
    let n = names.len();
    for limit in [1, 2, n - 1, n, n + 1, 10 * n] {
        assert_eq!(clusters_paged(s, p, limit).await, names, "limit {limit}");
    }
    // `start_after` between two clusters, and past the last one.
    let page = s.clusters(Some("lc-a:b:"), 2).await.unwrap();
    assert_eq!(page, ["lc-a:b:c", "lc-ab"]);
    let tail = s.clusters(Some("lc-b"), 10 * n).await.unwrap();
    assert!(tail.iter().all(|c| c.as_str() > "lc-b"), "{tail:?}");

    // Deleting the one key of `lc-a` removes it; the others stay.
    s.delete(key("lc-a", "ns0", "k"), Precondition::MustExist, enc("x"))
        .await
        .unwrap();
    s.delete(
        Key::new("lc-a", "apps/deployments", "", "d0"),
        Precondition::MustExist,
        enc("x"),
    )
    .await
    .unwrap();
    names.retain(|c| c != "lc-a");
    assert_eq!(clusters_paged(s, p, 2).await, names);
    // A range delete removes `lc-a:b`, not its child.
    s.delete_cluster("lc-a:b", 256, tombstone()).await.unwrap();
    names.retain(|c| c != "lc-a:b");
    assert_eq!(clusters_paged(s, p, 3).await, names);
    assert!(names.contains(&"lc-a:b:c".to_string()));
}
