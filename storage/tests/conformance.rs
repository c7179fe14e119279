//! Storage conformance tests.
//!
//! [`conformance_suite`] exercises any [`Storage`] through the trait only; a new backend
//! runs it by adding one test that opens the backend and calls it. The tests after the
//! suite cover sled-specific behaviour: compaction with a tiny window, slow watchers with a
//! tiny channel, restart, shutdown and durability across `kill -9`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{
    BatchWrite, CloseReason, Encoder, Error, EventType, Key, KeyValue, ListOptions, Precondition,
    Prefix, Revision, SledStorage, SledStorageOptions, Storage, WatchEvent, WatchReceiver,
};

const RES: &str = "/configmaps";

fn enc(v: &str) -> Encoder {
    let v = v.to_string();
    Box::new(move |rev| Ok(format!("{v}@{rev}").into_bytes()))
}

fn val(kv: &KeyValue) -> String {
    String::from_utf8(kv.value.to_vec()).unwrap()
}

fn key(cluster: &str, ns: &str, name: &str) -> Key {
    Key::new(cluster, RES, ns, name)
}

async fn create(s: &Arc<dyn Storage>, k: Key, v: &str) -> KeyValue {
    s.put(k, Precondition::MustNotExist, enc(v)).await.unwrap()
}

async fn list_all(s: &Arc<dyn Storage>, p: &Prefix, at: Option<Revision>) -> Vec<KeyValue> {
    let opts = ListOptions {
        at_revision: at,
        ..Default::default()
    };
    s.list(p, &opts, None).await.unwrap().items
}

/// Receives the next event, failing the test on timeout, close or progress noise.
async fn next_event(rx: &mut WatchReceiver) -> Arc<kplane_storage::Event> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => return e,
            Ok(Some(WatchEvent::Progress(_))) => continue,
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

/// Asserts nothing (but progress) arrives for a short while.
async fn assert_quiet(rx: &mut WatchReceiver) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => return,
            Ok(Some(WatchEvent::Progress(_))) => continue,
            Ok(other) => panic!("expected nothing, got {other:?}"),
        }
    }
}

/// Runs every backend-independent check against `s`. Uses its own cluster names, so the
/// store may hold other data.
pub async fn conformance_suite(s: Arc<dyn Storage>) {
    crud_and_preconditions(&s).await;
    encoder_errors_consume_no_revision(&s).await;
    concurrent_writers(&s).await;
    list_order_prefixes_filter_limit(&s).await;
    wildcard_cluster_list(&s).await;
    paging_snapshot_under_writes(&s).await;
    snapshots_match_model(&s).await;
    watch_replay_then_live(&s).await;
    watch_prefixes_and_prev(&s).await;
    watch_future_from_waits(&s).await;
    watch_progress(&s).await;
    watch_drop_unregisters(&s).await;
    write_batch_is_writes_in_order(&s).await;
    write_batch_events_one_per_write(&s, 300).await;
}

fn bw(k: Key, delete: bool, precondition: Precondition, v: &str) -> BatchWrite {
    BatchWrite {
        key: k,
        delete,
        precondition,
        encode: enc(v),
    }
}

/// A batch behaves as its writes sent one by one: own preconditions, own revision, failed
/// writes consume no revision and do not stop the others, later writes see earlier ones.
async fn write_batch_is_writes_in_order(s: &Arc<dyn Storage>) {
    assert!(s.write_batch(vec![]).await.is_empty());
    let a = key("batch", "ns", "a");
    let b = key("batch", "ns", "b");
    let old = create(s, key("batch", "ns", "old"), "o").await;
    let before = s.current_revision();
    let failing = BatchWrite {
        key: key("batch", "ns", "enc"),
        delete: false,
        precondition: Precondition::MustNotExist,
        encode: Box::new(|_| Err("boom".to_string())),
    };
    let res = s
        .write_batch(vec![
            bw(a.clone(), false, Precondition::MustNotExist, "a1"),
            bw(a.clone(), false, Precondition::MustNotExist, "dup"),
            failing,
            bw(a.clone(), false, Precondition::MustExist, "a2"),
            bw(b.clone(), true, Precondition::MustExist, "nob"),
            bw(
                old.key.clone(),
                true,
                Precondition::ModRevision(old.mod_revision + 100),
                "x",
            ),
            bw(
                old.key.clone(),
                true,
                Precondition::ModRevision(old.mod_revision),
                "gone",
            ),
            bw(b.clone(), false, Precondition::MustNotExist, "b1"),
        ])
        .await;
    assert_eq!(res.len(), 8);
    let a1 = res[0].as_ref().unwrap();
    assert_eq!(a1.mod_revision, before + 1);
    assert_eq!(val(a1), format!("a1@{}", before + 1));
    assert!(matches!(res[1], Err(Error::AlreadyExists)), "{:?}", res[1]);
    assert!(matches!(&res[2], Err(Error::Encode(m)) if m == "boom"));
    let a2 = res[3].as_ref().unwrap();
    assert_eq!(
        (a2.mod_revision, a2.create_revision),
        (before + 2, before + 1)
    );
    assert!(matches!(res[4], Err(Error::NotFound)), "{:?}", res[4]);
    assert!(matches!(res[5], Err(Error::Conflict { current }) if current == old.mod_revision));
    let gone = res[6].as_ref().unwrap();
    assert_eq!(gone.mod_revision, before + 3);
    assert_eq!(val(gone), format!("gone@{}", before + 3));
    assert_eq!(res[7].as_ref().unwrap().mod_revision, before + 4);
    assert_eq!(s.current_revision(), before + 4);
    let names: Vec<String> = list_all(s, &Prefix::namespace("batch", RES, "ns"), None)
        .await
        .into_iter()
        .map(|kv| format!("{}={}", kv.key.name, val(&kv)))
        .collect();
    assert_eq!(
        names,
        vec![
            format!("a=a2@{}", before + 2),
            format!("b=b1@{}", before + 4)
        ]
    );
}

/// Creates then deletes `n` keys with two batches; a watch from before sees one event per
/// write, in revision order, revisions one apart, and the deletes carry their tombstones.
async fn write_batch_events_one_per_write(s: &Arc<dyn Storage>, n: usize) {
    let cluster = format!("batchn{n}");
    let p = Prefix::namespace(cluster.as_str(), RES, "ns");
    let start = s.current_revision();
    let keys: Vec<Key> = (0..n)
        .map(|i| key(&cluster, "ns", &format!("k{i:06}")))
        .collect();
    let created = s
        .write_batch(
            keys.iter()
                .map(|k| bw(k.clone(), false, Precondition::MustNotExist, "v"))
                .collect(),
        )
        .await;
    let created: Vec<KeyValue> = created.into_iter().map(Result::unwrap).collect();
    let deletes = created
        .iter()
        .map(|kv| {
            bw(
                kv.key.clone(),
                true,
                Precondition::ModRevision(kv.mod_revision),
                "tomb",
            )
        })
        .collect();
    let deleted: Vec<KeyValue> = s
        .write_batch(deletes)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let revs: Vec<Revision> = created
        .iter()
        .chain(&deleted)
        .map(|kv| kv.mod_revision)
        .collect();
    let want: Vec<Revision> = (start + 1..=start + 2 * n as Revision).collect();
    assert_eq!(revs, want, "one revision per write, in order");
    assert!(list_all(s, &p, None).await.is_empty());
    assert_eq!(s.count(&p).await.unwrap(), 0);
    let mut rx = s.watch(&p, start, None).await.unwrap();
    for (i, want) in created.iter().chain(&deleted).enumerate() {
        let e = next_event(&mut rx).await;
        let ty = if i < n {
            EventType::Added
        } else {
            EventType::Deleted
        };
        assert_eq!((e.event_type, &e.kv), (ty, want), "event {i}");
    }
    assert_quiet(&mut rx).await;
}

async fn crud_and_preconditions(s: &Arc<dyn Storage>) {
    let k = key("crud", "ns", "a");
    assert!(s.get(&k).await.unwrap().is_none());
    let c = create(s, k.clone(), "v1").await;
    assert_eq!(c.create_revision, c.mod_revision);
    assert_eq!(val(&c), format!("v1@{}", c.mod_revision));
    assert!(s.current_revision() >= c.mod_revision);
    assert_eq!(s.get(&k).await.unwrap().unwrap(), c);

    let e = s
        .put(k.clone(), Precondition::MustNotExist, enc("x"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AlreadyExists), "{e:?}");

    let u = s
        .put(
            k.clone(),
            Precondition::ModRevision(c.mod_revision),
            enc("v2"),
        )
        .await
        .unwrap();
    assert!(u.mod_revision > c.mod_revision);
    assert_eq!(u.create_revision, c.create_revision);

    let e = s
        .put(
            k.clone(),
            Precondition::ModRevision(c.mod_revision),
            enc("v3"),
        )
        .await;
    assert!(matches!(e, Err(Error::Conflict { current }) if current == u.mod_revision));

    let u2 = s
        .put(k.clone(), Precondition::MustExist, enc("v3"))
        .await
        .unwrap();
    assert_eq!(
        val(&s.get(&k).await.unwrap().unwrap()),
        format!("v3@{}", u2.mod_revision)
    );

    let missing = key("crud", "ns", "missing");
    let e = s
        .put(missing.clone(), Precondition::MustExist, enc("x"))
        .await;
    assert!(matches!(e, Err(Error::NotFound)));
    let e = s
        .put(missing.clone(), Precondition::ModRevision(1), enc("x"))
        .await;
    assert!(matches!(e, Err(Error::NotFound)));
    let e = s.delete(missing, Precondition::MustExist, enc("x")).await;
    assert!(matches!(e, Err(Error::NotFound)));

    let e = s
        .delete(
            k.clone(),
            Precondition::ModRevision(c.mod_revision),
            enc("gone"),
        )
        .await;
    assert!(matches!(e, Err(Error::Conflict { .. })));
    let d = s
        .delete(
            k.clone(),
            Precondition::ModRevision(u2.mod_revision),
            enc("gone"),
        )
        .await
        .unwrap();
    assert!(d.mod_revision > u2.mod_revision);
    assert_eq!(d.create_revision, c.create_revision);
    assert_eq!(val(&d), format!("gone@{}", d.mod_revision));
    assert!(s.get(&k).await.unwrap().is_none());

    // Re-create starts a new life.
    let c2 = create(s, k.clone(), "again").await;
    assert_eq!(c2.create_revision, c2.mod_revision);
    assert!(c2.mod_revision > d.mod_revision);
}

async fn encoder_errors_consume_no_revision(s: &Arc<dyn Storage>) {
    let k = key("encerr", "ns", "a");
    let a = create(s, k.clone(), "v").await;
    let failing: Encoder = Box::new(|_| Err("boom".to_string()));
    let e = s.put(k.clone(), Precondition::MustExist, failing).await;
    assert!(matches!(e, Err(Error::Encode(m)) if m == "boom"));
    let b = s
        .put(k.clone(), Precondition::MustExist, enc("w"))
        .await
        .unwrap();
    // Nobody else writes to this store concurrently in the suite.
    assert_eq!(b.mod_revision, a.mod_revision + 1);
    assert_eq!(s.current_revision(), b.mod_revision);
}

async fn concurrent_writers(s: &Arc<dyn Storage>) {
    let before = s.current_revision();
    let tasks = 32;
    let per_task = 20;
    let n = tasks * per_task * 2;
    let mut watcher = s
        .watch(&Prefix::cluster("conc"), before, None)
        .await
        .unwrap();
    // Read concurrently: the channel holds fewer events than this test writes.
    let collector = tokio::spawn(async move {
        let mut seen = Vec::new();
        while seen.len() < n {
            seen.push(next_event(&mut watcher).await.kv.mod_revision);
        }
        seen
    });
    let monitor_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let monitor = {
        let s = s.clone();
        let stop = monitor_stop.clone();
        tokio::spawn(async move {
            let mut last = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = s.current_revision();
                assert!(r >= last, "current_revision went backwards");
                last = r;
                tokio::task::yield_now().await;
            }
        })
    };
    let mut handles = Vec::new();
    for t in 0..tasks {
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            // Each task creates its own keys and updates one shared key with CAS retries.
            let shared = key("conc", "ns", "shared");
            for i in 0..per_task {
                let kv = create(&s, key("conc", "ns", &format!("t{t}-{i}")), "x").await;
                revs.push(kv.mod_revision);
                loop {
                    let pre = match s.get(&shared).await.unwrap() {
                        Some(cur) => Precondition::ModRevision(cur.mod_revision),
                        None => Precondition::MustNotExist,
                    };
                    match s.put(shared.clone(), pre, enc("s")).await {
                        Ok(kv) => {
                            revs.push(kv.mod_revision);
                            break;
                        }
                        Err(Error::Conflict { .. } | Error::AlreadyExists) => continue,
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
            revs
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let revs = h.await.unwrap();
        assert!(
            revs.windows(2).all(|w| w[0] < w[1]),
            "per-task revisions not increasing"
        );
        all.extend(revs);
    }
    monitor_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    monitor.await.unwrap();
    assert_eq!(all.len(), n);
    let unique: HashSet<_> = all.iter().copied().collect();
    assert_eq!(unique.len(), n, "duplicate revisions");
    assert!(all
        .iter()
        .all(|r| *r > before && *r <= s.current_revision()));
    // The watch sees every write exactly once, in revision order, with mod revisions
    // matching the acknowledged ones.
    let seen = collector.await.unwrap();
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    let seen: HashSet<_> = seen.into_iter().collect();
    assert_eq!(seen, unique);
    // The shared key's final value is the last acknowledged update.
    let shared = s.get(&key("conc", "ns", "shared")).await.unwrap().unwrap();
    assert!(unique.contains(&shared.mod_revision));
}

async fn list_order_prefixes_filter_limit(s: &Arc<dyn Storage>) {
    // Names chosen so that naive string concatenation would mis-order or leak.
    let cluster = "order";
    let names = ["b", "a", "a-b", "ab", "a\u{0}", "a.b", "z", "A", "0"];
    let namespaces = ["", "ns", "ns-x", "nsa", "n"];
    let mut expected = Vec::new();
    for ns in namespaces {
        for n in names {
            create(s, key(cluster, ns, n), "v").await;
            expected.push(key(cluster, ns, n));
        }
    }
    // Noise that must not show up: neighbouring cluster and resource names.
    create(s, key("order-x", "ns", "a"), "v").await;
    create(s, key("orde", "ns", "a"), "v").await;
    create(s, Key::new(cluster, "/configmapsx", "ns", "a"), "v").await;
    create(s, Key::new(cluster, "/configmap", "ns", "a"), "v").await;
    expected.sort();

    let got: Vec<Key> = list_all(s, &Prefix::resource(cluster, RES), None)
        .await
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        s.count(&Prefix::resource(cluster, RES)).await.unwrap(),
        expected.len() as u64
    );

    let ns_only: Vec<Key> = list_all(s, &Prefix::namespace(cluster, RES, "ns"), None)
        .await
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    let want: Vec<Key> = expected
        .iter()
        .filter(|k| k.namespace == "ns")
        .cloned()
        .collect();
    assert_eq!(ns_only, want);
    assert_eq!(
        s.count(&Prefix::namespace(cluster, RES, "ns"))
            .await
            .unwrap(),
        names.len() as u64
    );

    let whole_cluster = list_all(s, &Prefix::cluster(cluster), None).await;
    assert_eq!(whole_cluster.len(), expected.len() + 2);
    assert!(whole_cluster.windows(2).all(|w| w[0].key < w[1].key));
    assert_eq!(
        s.count(&Prefix::cluster(cluster)).await.unwrap(),
        expected.len() as u64 + 2
    );

    // A namespace across resources (odd but legal prefix).
    let odd = Prefix {
        cluster: Some(cluster.into()),
        resource: None,
        namespace: Some("ns".into()),
    };
    assert_eq!(list_all(s, &odd, None).await.len(), names.len() + 2);

    // Filter + limit: limit counts matching items; paging with start_after visits all.
    let filter = |kv: &KeyValue| kv.key.name.starts_with('a');
    let want: Vec<Key> = expected
        .iter()
        .filter(|k| k.name.starts_with('a'))
        .cloned()
        .collect();
    let mut got = Vec::new();
    let mut opts = ListOptions {
        limit: Some(4),
        ..Default::default()
    };
    let mut rev = None;
    loop {
        let r = s
            .list(&Prefix::resource(cluster, RES), &opts, Some(&filter))
            .await
            .unwrap();
        assert!(r.items.len() <= 4);
        if let Some(rev) = rev {
            assert_eq!(r.revision, rev);
        }
        rev = Some(r.revision);
        got.extend(r.items.iter().map(|kv| kv.key.clone()));
        if !r.more {
            break;
        }
        opts.start_after = Some(r.items.last().unwrap().key.clone());
        opts.at_revision = Some(r.revision);
    }
    assert_eq!(got, want);

    // start_after outside the prefix (before / after it).
    let opts = ListOptions {
        start_after: Some(key("a", "", "")),
        ..Default::default()
    };
    assert_eq!(
        s.list(&Prefix::resource(cluster, RES), &opts, None)
            .await
            .unwrap()
            .items
            .len(),
        expected.len()
    );
    let opts = ListOptions {
        start_after: Some(key("zzz", "", "")),
        ..Default::default()
    };
    let r = s
        .list(&Prefix::resource(cluster, RES), &opts, None)
        .await
        .unwrap();
    assert!(r.items.is_empty() && !r.more);

    // Exact limit at the end: `more` is false.
    let opts = ListOptions {
        limit: Some(expected.len()),
        ..Default::default()
    };
    let r = s
        .list(&Prefix::resource(cluster, RES), &opts, None)
        .await
        .unwrap();
    assert_eq!(r.items.len(), expected.len());
    assert!(!r.more);
    let opts = ListOptions {
        limit: Some(expected.len() - 1),
        ..Default::default()
    };
    assert!(
        s.list(&Prefix::resource(cluster, RES), &opts, None)
            .await
            .unwrap()
            .more
    );

    // Future revision.
    let opts = ListOptions {
        at_revision: Some(s.current_revision() + 10),
        ..Default::default()
    };
    let e = s
        .list(&Prefix::resource(cluster, RES), &opts, None)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::FutureRevision { .. }), "{e:?}");
}

async fn wildcard_cluster_list(s: &Arc<dyn Storage>) {
    let res = "wild.example.com/things";
    let mut expected = Vec::new();
    for c in ["w1", "w2", "w10", "w\u{0}"] {
        for ns in ["a", "b"] {
            let k = Key::new(c, res, ns, "x");
            create(s, k.clone(), "v").await;
            expected.push(k);
        }
        create(s, Key::new(c, "other/things", "a", "x"), "v").await;
    }
    expected.sort();
    let all = Prefix {
        cluster: None,
        resource: Some(res.into()),
        namespace: None,
    };
    let got: Vec<Key> = list_all(s, &all, None)
        .await
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(s.count(&all).await.unwrap(), expected.len() as u64);
    let ns_a = Prefix {
        cluster: None,
        resource: Some(res.into()),
        namespace: Some("a".into()),
    };
    assert_eq!(list_all(s, &ns_a, None).await.len(), 4);

    // Paging through the wildcard list, with a delete in between that must not show.
    let r1 = s
        .list(
            &all,
            &ListOptions {
                limit: Some(3),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert!(r1.more);
    let victim = expected[5].clone();
    s.delete(victim.clone(), Precondition::MustExist, enc("d"))
        .await
        .unwrap();
    let opts = ListOptions {
        at_revision: Some(r1.revision),
        start_after: Some(r1.items.last().unwrap().key.clone()),
        limit: None,
    };
    let r2 = s.list(&all, &opts, None).await.unwrap();
    let got: Vec<Key> = r1
        .items
        .iter()
        .chain(r2.items.iter())
        .map(|kv| kv.key.clone())
        .collect();
    assert_eq!(got, expected, "the snapshot still holds the deleted key");
    let now: Vec<Key> = list_all(s, &all, None)
        .await
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert!(!now.contains(&victim));
}

async fn paging_snapshot_under_writes(s: &Arc<dyn Storage>) {
    let cluster = "paging";
    let p = Prefix::resource(cluster, RES);
    for i in 0..200 {
        create(s, key(cluster, "ns", &format!("k{i:03}")), "orig").await;
    }
    let first = s
        .list(
            &p,
            &ListOptions {
                limit: Some(10),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let snap = first.revision;
    let expected = list_all(s, &p, Some(snap)).await;
    assert_eq!(expected.len(), 200);

    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let k = key(cluster, "ns", &format!("k{:03}", (i * 7) % 200));
                match i % 3 {
                    0 => {
                        let _ = s.delete(k, Precondition::MustExist, enc("del")).await;
                    }
                    1 => {
                        let _ = s.put(k, Precondition::MustExist, enc("upd")).await;
                    }
                    _ => {
                        let _ = s
                            .put(
                                key(cluster, "ns", &format!("k{i:03}x")),
                                Precondition::MustNotExist,
                                enc("new"),
                            )
                            .await;
                    }
                }
            }
        })
    };
    let mut got = first.items.clone();
    let mut last = first.items.last().unwrap().key.clone();
    loop {
        let opts = ListOptions {
            at_revision: Some(snap),
            start_after: Some(last.clone()),
            limit: Some(7),
        };
        let r = s.list(&p, &opts, None).await.unwrap();
        assert_eq!(r.revision, snap);
        got.extend(r.items.iter().cloned());
        if !r.more {
            break;
        }
        last = r.items.last().unwrap().key.clone();
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    assert_eq!(got, expected, "paged snapshot differs from the snapshot");
    // And once more after all writes, at the old revision (history path).
    assert_eq!(list_all(s, &p, Some(snap)).await, expected);
}

/// Random writes on a few keys; the state at every retained revision must be exact.
async fn snapshots_match_model(s: &Arc<dyn Storage>) {
    let cluster = "model";
    let p = Prefix::cluster(cluster);
    let mut model: BTreeMap<Key, KeyValue> = BTreeMap::new();
    let mut states: Vec<(Revision, BTreeMap<Key, KeyValue>)> = Vec::new();
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let k = key(
            cluster,
            ["a", "b"][(rnd() % 2) as usize],
            &format!("k{}", rnd() % 6),
        );
        let res = if let Some(cur) = model.get(&k) {
            if rnd() % 3 == 0 {
                s.delete(
                    k.clone(),
                    Precondition::ModRevision(cur.mod_revision),
                    enc("d"),
                )
                .await
            } else {
                s.put(
                    k.clone(),
                    Precondition::ModRevision(cur.mod_revision),
                    enc("u"),
                )
                .await
            }
        } else {
            s.put(k.clone(), Precondition::MustNotExist, enc("c")).await
        };
        let kv = res.unwrap();
        if model.contains_key(&k) && val(&kv).starts_with('d') {
            model.remove(&k);
        } else {
            model.insert(k, kv.clone());
        }
        states.push((kv.mod_revision, model.clone()));
    }
    for (rev, state) in &states {
        let got = list_all(s, &p, Some(*rev)).await;
        let want: Vec<KeyValue> = state.values().cloned().collect();
        assert_eq!(got, want, "state at {rev}");
    }
}

async fn watch_replay_then_live(s: &Arc<dyn Storage>) {
    let p = Prefix::resource("wrl", RES);
    let start = s.current_revision();
    let mut acked = Vec::new();
    for i in 0..20 {
        acked.push(
            create(s, key("wrl", "ns", &format!("k{i}")), "v")
                .await
                .mod_revision,
        );
    }
    // Writers keep going while the watch is established.
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 20..120 {
                revs.push(
                    create(&s, key("wrl", "ns", &format!("k{i}")), "v")
                        .await
                        .mod_revision,
                );
            }
            revs
        })
    };
    let mut rx = s.watch(&p, start, None).await.unwrap();
    acked.extend(writer.await.unwrap());
    let mut got = Vec::new();
    while got.len() < acked.len() {
        let e = next_event(&mut rx).await;
        assert_eq!(e.event_type, EventType::Added);
        got.push(e.kv.mod_revision);
    }
    assert_eq!(got, acked, "gap, duplicate or reordering");
    assert_quiet(&mut rx).await;

    // Watch from the middle.
    let mid = acked[49];
    let mut rx = s.watch(&p, mid, None).await.unwrap();
    for want in &acked[50..] {
        assert_eq!(next_event(&mut rx).await.kv.mod_revision, *want);
    }
    assert_quiet(&mut rx).await;
}

async fn watch_prefixes_and_prev(s: &Arc<dyn Storage>) {
    let from = s.current_revision();
    let mut ns_a = s
        .watch(&Prefix::namespace("wp1", RES, "a"), from, None)
        .await
        .unwrap();
    let mut res = s
        .watch(&Prefix::resource("wp1", RES), from, None)
        .await
        .unwrap();
    let mut cl = s.watch(&Prefix::cluster("wp1"), from, None).await.unwrap();
    let wild = Prefix {
        cluster: None,
        resource: Some("wp.example/things".into()),
        namespace: None,
    };
    let mut wild_rx = s.watch(&wild, from, None).await.unwrap();
    let everything = Prefix {
        cluster: None,
        resource: None,
        namespace: None,
    };
    let mut all_rx = s.watch(&everything, from, None).await.unwrap();

    let a1 = create(s, key("wp1", "a", "x"), "1").await;
    let b1 = create(s, key("wp1", "b", "x"), "1").await;
    let ab = create(s, key("wp1", "ab", "x"), "1").await; // not in namespace "a"
    let other = create(s, Key::new("wp1", "/secrets", "a", "x"), "1").await;
    let w1 = create(s, Key::new("wp-c1", "wp.example/things", "a", "x"), "1").await;
    let w2 = create(s, Key::new("wp-c2", "wp.example/things", "b", "y"), "1").await;
    let a2 = s
        .put(key("wp1", "a", "x"), Precondition::MustExist, enc("2"))
        .await
        .unwrap();
    let a3 = s
        .delete(key("wp1", "a", "x"), Precondition::MustExist, enc("3"))
        .await
        .unwrap();

    let e = next_event(&mut ns_a).await;
    assert_eq!(
        (e.event_type, e.kv.mod_revision, e.prev.clone()),
        (EventType::Added, a1.mod_revision, None)
    );
    let e = next_event(&mut ns_a).await;
    assert_eq!(
        (e.event_type, e.kv.mod_revision),
        (EventType::Modified, a2.mod_revision)
    );
    assert_eq!(e.prev.as_deref(), Some(a1.value.as_ref()));
    let e = next_event(&mut ns_a).await;
    assert_eq!(
        (e.event_type, e.kv.mod_revision),
        (EventType::Deleted, a3.mod_revision)
    );
    assert_eq!(e.prev.as_deref(), Some(a2.value.as_ref()));
    assert_eq!(val(&e.kv), format!("3@{}", a3.mod_revision));
    assert_quiet(&mut ns_a).await;

    let mut revs = Vec::new();
    for _ in 0..5 {
        revs.push(next_event(&mut res).await.kv.mod_revision);
    }
    assert_eq!(
        revs,
        vec![
            a1.mod_revision,
            b1.mod_revision,
            ab.mod_revision,
            a2.mod_revision,
            a3.mod_revision
        ]
    );
    assert_quiet(&mut res).await;

    let mut revs = Vec::new();
    for _ in 0..6 {
        revs.push(next_event(&mut cl).await.kv.mod_revision);
    }
    assert!(revs.contains(&other.mod_revision));
    assert_quiet(&mut cl).await;

    assert_eq!(
        next_event(&mut wild_rx).await.kv.mod_revision,
        w1.mod_revision
    );
    assert_eq!(
        next_event(&mut wild_rx).await.kv.mod_revision,
        w2.mod_revision
    );
    assert_quiet(&mut wild_rx).await;

    for _ in 0..8 {
        next_event(&mut all_rx).await;
    }
    assert_quiet(&mut all_rx).await;

    // Replayed events carry prev values too (recovered from history).
    let mut replay = s
        .watch(&Prefix::namespace("wp1", RES, "a"), from, None)
        .await
        .unwrap();
    let e1 = next_event(&mut replay).await;
    assert!(e1.prev.is_none());
    let e2 = next_event(&mut replay).await;
    assert_eq!(e2.prev.as_deref(), Some(a1.value.as_ref()));
    let e3 = next_event(&mut replay).await;
    assert_eq!(e3.event_type, EventType::Deleted);
    assert_eq!(e3.prev.as_deref(), Some(a2.value.as_ref()));
    assert_eq!(e3.kv.value, a3.value);
}

async fn watch_future_from_waits(s: &Arc<dyn Storage>) {
    let now = s.current_revision();
    let mut rx = s
        .watch(
            &Prefix::cluster("wf"),
            now + 3,
            Some(Duration::from_millis(20)),
        )
        .await
        .unwrap();
    // Nothing (not even progress below `from`) while the store has not reached `from`.
    let quiet = tokio::time::timeout(Duration::from_millis(150), rx.recv()).await;
    assert!(quiet.is_err(), "{quiet:?}");
    let mut revs = Vec::new();
    for i in 0..5 {
        revs.push(
            create(s, key("wf", "ns", &format!("k{i}")), "v")
                .await
                .mod_revision,
        );
    }
    assert_eq!(revs[0], now + 1, "nobody else writes during the suite");
    assert_eq!(next_event(&mut rx).await.kv.mod_revision, now + 4);
    assert_eq!(next_event(&mut rx).await.kv.mod_revision, now + 5);
}

async fn watch_progress(s: &Arc<dyn Storage>) {
    let now = s.current_revision();
    let mut rx = s
        .watch(
            &Prefix::cluster("wprog"),
            now,
            Some(Duration::from_millis(30)),
        )
        .await
        .unwrap();
    // Writes elsewhere advance the progress revision.
    let other = create(s, key("wprog-other", "ns", "x"), "v").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("no progress")
        {
            Some(WatchEvent::Progress(r)) if r >= other.mod_revision => break,
            Some(WatchEvent::Progress(r)) => assert!(r >= now),
            other => panic!("unexpected {other:?}"),
        }
    }
    let mine = create(s, key("wprog", "ns", "x"), "v").await;
    assert_eq!(next_event(&mut rx).await.kv.mod_revision, mine.mod_revision);
    match tokio::time::timeout_at(deadline, rx.recv())
        .await
        .expect("no progress")
    {
        Some(WatchEvent::Progress(r)) => assert!(r >= mine.mod_revision),
        other => panic!("unexpected {other:?}"),
    }
}

async fn watch_drop_unregisters(s: &Arc<dyn Storage>) {
    // Many watchers dropped right away must not hold anything up.
    for i in 0..200 {
        let rx = s
            .watch(
                &Prefix::namespace("wdrop", RES, format!("n{i}")),
                s.current_revision(),
                None,
            )
            .await
            .unwrap();
        drop(rx);
    }
    create(s, key("wdrop", "n1", "x"), "v").await;
}

// ---------------------------------------------------------------------------------------
// sled backend

fn sled_opts() -> SledStorageOptions {
    SledStorageOptions {
        compaction_interval: Duration::from_millis(50),
        ..Default::default()
    }
}

/// Opens, retrying while a previous instance in this process still releases the lock.
fn open_retry(path: &std::path::Path, opts: SledStorageOptions) -> Arc<SledStorage> {
    let mut last = None;
    for _ in 0..100 {
        match SledStorage::open(path, opts.clone()) {
            Ok(s) => return s,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot reopen: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), sled_opts()).unwrap();
    conformance_suite(s.clone()).await;
    s.shutdown().await.unwrap();
}

/// Batches below, at and above the group size (and across two chunks) commit with one
/// flush per chunk and still give one revision and one event per write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_write_batch_group_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let max = kplane_storage::MAX_WRITE_GROUP;
    for n in [max - 1, max, max + 1, 2 * max + 1] {
        let groups_before = s.stats().commit_groups;
        write_batch_events_one_per_write(&dyn_s, n).await;
        let groups = s.stats().commit_groups - groups_before;
        // Two batches (creates, deletes) of ceil(n / max) chunks each.
        let chunks = n.div_ceil(max) as u64;
        assert!(
            groups <= 2 * chunks,
            "{n} writes took {groups} flushes, want at most {}",
            2 * chunks
        );
    }
    s.shutdown().await.unwrap();
}

/// The figures `/metrics` shows: the store's size on disk, and a compaction backlog that
/// is bounded by the compaction point and drains to 0 once compaction caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_stats_show_disk_size_and_compaction_backlog() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        event_window: Duration::from_secs(3),
        compaction_interval: Duration::from_millis(20),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    // Three compaction chunks (1024 event-log entries each) of creates and deletes.
    write_batch_events_one_per_write(&dyn_s, 1600).await;
    assert!(s.stats().disk_bytes > 0);
    let written = s.current_revision();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut max_backlog = 0;
    loop {
        let st = s.stats();
        assert!(st.compaction_backlog <= s.compacted_revision(), "{st:?}");
        max_backlog = max_backlog.max(st.compaction_backlog);
        if s.compacted_revision() >= written && st.compaction_backlog == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "compaction did not finish: {st:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    eprintln!("largest compaction backlog seen: {max_backlog}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        event_window: Duration::from_millis(300),
        compaction_interval: Duration::from_millis(20),
        ..Default::default()
    };
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), opts).unwrap();
    let p = Prefix::cluster("c");
    let k1 = key("c", "ns", "k1");
    let k2 = key("c", "ns", "k2");
    let v1 = create(&s, k1.clone(), "1").await;
    let v2 = s
        .put(k1.clone(), Precondition::MustExist, enc("2"))
        .await
        .unwrap();
    let d = create(&s, k2.clone(), "x").await;
    let snap_old = s.current_revision();
    let gone = s
        .delete(k2.clone(), Precondition::MustExist, enc("gone"))
        .await
        .unwrap();
    let state_at_c = list_all(&s, &p, None).await;
    let c_rev = s.current_revision();
    assert_eq!(s.compacted_revision(), 0);

    // Wait for the window to pass, then write newer data that stays in the window.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let v3 = s
        .put(k1.clone(), Precondition::MustExist, enc("3"))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s.compacted_revision() < c_rev {
        assert!(tokio::time::Instant::now() < deadline, "no compaction");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        s.compacted_revision(),
        c_rev,
        "newer writes are still in the window"
    );

    // Reads below the compaction point fail; at and above it they are exact.
    let e = s
        .list(
            &p,
            &ListOptions {
                at_revision: Some(snap_old),
                ..Default::default()
            },
            None,
        )
        .await;
    assert!(matches!(e, Err(Error::Compacted { .. })), "{e:?}");
    let e = s.watch(&p, v1.mod_revision, None).await;
    assert!(matches!(e, Err(Error::Compacted { .. })));
    assert_eq!(list_all(&s, &p, Some(c_rev)).await, state_at_c);
    assert_eq!(
        list_all(&s, &p, Some(c_rev)).await[0].mod_revision,
        v2.mod_revision
    );
    let now = list_all(&s, &p, None).await;
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].mod_revision, v3.mod_revision);
    // Watching from the compaction point replays exactly the later write, with prev.
    let mut rx = s.watch(&p, c_rev, None).await.unwrap();
    let e = next_event(&mut rx).await;
    assert_eq!(e.kv.mod_revision, v3.mod_revision);
    assert_eq!(e.prev.as_deref(), Some(v2.value.as_ref()));
    assert_quiet(&mut rx).await;
    let _ = (d, gone);

    // Everything ages out eventually; the latest state survives.
    tokio::time::sleep(Duration::from_millis(400)).await;
    create(&s, key("c", "ns", "k3"), "x").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s.compacted_revision() < v3.mod_revision {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no second compaction"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s.get(&k1).await.unwrap().unwrap(), v3);
    assert_eq!(list_all(&s, &p, None).await.len(), 2);
    let wild = Prefix {
        cluster: None,
        resource: Some(RES.into()),
        namespace: None,
    };
    assert_eq!(list_all(&s, &wild, None).await.len(), 2);

    // The compaction point survives a restart.
    let compacted = s.compacted_revision();
    s.shutdown().await.unwrap();
    drop(s);
    let s = open_retry(dir.path(), SledStorageOptions::default());
    assert_eq!(s.compacted_revision(), compacted);
    s.shutdown().await.unwrap();
}

/// A store whose watch queues hold only `capacity` entries (to make watchers slow).
fn open_with_watch_capacity(dir: &std::path::Path, capacity: usize) -> Arc<SledStorage> {
    let opts = SledStorageOptions {
        watch_channel_capacity: capacity,
        ..Default::default()
    };
    SledStorage::open(dir, opts).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_slow_watcher_is_closed_and_writer_not_blocked() {
    const WRITES: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    // The slow watcher never reads, so it overflows after a handful of events whatever the
    // capacity; the fast one needs enough room to ride out scheduling noise on a loaded
    // machine (one slot is always kept for the close notice).
    let sled = open_with_watch_capacity(dir.path(), 16);
    let s: Arc<dyn Storage> = sled.clone();
    let mut slow = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let mut fast = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let fast_reader = tokio::spawn(async move {
        let mut n = 0;
        while n < WRITES {
            match fast.recv().await {
                Some(WatchEvent::Event(_)) => n += 1,
                Some(WatchEvent::Progress(_)) => {}
                other => panic!("fast watcher: {other:?}"),
            }
        }
    });
    let writes = async {
        for i in 0..WRITES {
            create(&s, key("c", "ns", &format!("k{i}")), "v").await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), writes)
        .await
        .expect("writer blocked");
    fast_reader.await.unwrap();
    let mut events = 0;
    loop {
        match slow.recv().await {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::TooSlow)) => break,
            other => panic!("slow watcher: {other:?}"),
        }
    }
    assert!(events < WRITES);
    assert!(slow.recv().await.is_none(), "closed watcher must end");
    // It is unregistered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while sled.watcher_count() > 1 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_restart_keeps_data_and_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let a = create(&s, key("c", "ns", "a"), "1").await;
    let b = s
        .put(key("c", "ns", "a"), Precondition::MustExist, enc("2"))
        .await
        .unwrap();
    let d = create(&s, key("c", "ns", "d"), "1").await;
    let gone = s
        .delete(key("c", "ns", "d"), Precondition::MustExist, enc("x"))
        .await
        .unwrap();
    let rev = s.current_revision();
    assert_eq!(rev, gone.mod_revision);
    s.shutdown().await.unwrap();
    // After shutdown: writes and watches are refused.
    let e = s
        .put(key("c", "ns", "z"), Precondition::MustNotExist, enc("1"))
        .await;
    assert!(matches!(e, Err(Error::ShuttingDown)));
    assert!(matches!(
        s.watch(&Prefix::cluster("c"), 0, None).await,
        Err(Error::ShuttingDown)
    ));
    drop(s);

    let s: Arc<dyn Storage> = open_retry(dir.path(), sled_opts());
    assert_eq!(s.current_revision(), rev);
    assert_eq!(s.get(&key("c", "ns", "a")).await.unwrap().unwrap(), b);
    assert!(s.get(&key("c", "ns", "d")).await.unwrap().is_none());
    let next = create(&s, key("c", "ns", "e"), "1").await;
    assert_eq!(next.mod_revision, rev + 1);
    // History and the event log survive too: replay with prev values.
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let revs: Vec<_> = [
        a.mod_revision,
        b.mod_revision,
        d.mod_revision,
        gone.mod_revision,
        next.mod_revision,
    ]
    .to_vec();
    for (i, want) in revs.iter().enumerate() {
        let e = next_event(&mut rx).await;
        assert_eq!(e.kv.mod_revision, *want);
        if i == 1 {
            assert_eq!(e.prev.as_deref(), Some(a.value.as_ref()));
        }
    }
    let old = list_all(&s, &Prefix::cluster("c"), Some(d.mod_revision)).await;
    assert_eq!(old.len(), 2);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_shutdown_finishes_pending_and_closes_watchers() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let mut pending = Vec::new();
    for i in 0..50 {
        let s = s.clone();
        pending.push(tokio::spawn(async move {
            s.put(
                key("c", "ns", &format!("k{i}")),
                Precondition::MustNotExist,
                enc("v"),
            )
            .await
        }));
    }
    tokio::task::yield_now().await;
    s.shutdown().await.unwrap();
    let mut ok = 0;
    for p in pending {
        match p.await.unwrap() {
            Ok(_) => ok += 1,
            Err(Error::ShuttingDown) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    let mut events = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
        {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::ShuttingDown)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        events, ok,
        "every acknowledged write was published before closing"
    );
    assert!(rx.recv().await.is_none());
    drop(s);
    let s = open_retry(dir.path(), sled_opts());
    assert_eq!(s.count(&Prefix::cluster("c")).await.unwrap(), ok as u64);
    s.shutdown().await.unwrap();
}

/// Kills the child process if the test fails before doing so itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const CRASH_ENV: &str = "KPLANE_STORAGE_CRASH_CHILD_DIR";

/// Child role of [`sled_acknowledged_writes_survive_kill_9`]: writes forever, printing each
/// acknowledged write. A no-op in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CRASH_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let s: Arc<dyn Storage> = SledStorage::open(&dir, SledStorageOptions::default()).unwrap();
        let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let s = s.clone();
            let out = out.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0u64.. {
                    let name = format!("t{t}-{i}");
                    let kv = create(&s, key("crash", "ns", &name), &name).await;
                    let mut o = out.lock().unwrap();
                    use std::io::Write;
                    writeln!(o, "ACK {name} {}", kv.mod_revision).unwrap();
                    o.flush().unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut floor: Revision = 0;
    for round in 0..2 {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CRASH_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = KillOnDrop(child);
        let stdout = child.0.stdout.take().unwrap();
        let mut acked = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("ACK ") {
                let (name, rev) = rest.split_once(' ').unwrap();
                acked.push((name.to_string(), rev.parse::<Revision>().unwrap()));
                if acked.len() == 300 {
                    child.0.kill().unwrap(); // SIGKILL, mid-stream
                    break;
                }
            }
        }
        child.0.wait().unwrap();
        assert_eq!(acked.len(), 300, "child died early (round {round})");
        // The recovered store continued the revision sequence.
        assert!(acked.iter().all(|(_, r)| *r > floor));
        let s = open_retry(dir.path(), SledStorageOptions::default());
        let max = acked.iter().map(|(_, r)| *r).max().unwrap();
        assert!(s.current_revision() >= max);
        for (name, rev) in &acked {
            let kv = s.get(&key("crash", "ns", name)).await.unwrap();
            let kv = kv.unwrap_or_else(|| panic!("acknowledged write {name}@{rev} lost"));
            assert_eq!(kv.mod_revision, *rev);
            assert_eq!(val(&kv), format!("{name}@{rev}"));
        }
        s.shutdown().await.unwrap();
        drop(s);
        // Round two reuses the key names: delete them first.
        if round == 0 {
            let s = open_retry(dir.path(), SledStorageOptions::default());
            let p = Prefix::cluster("crash");
            let items = list_all(&(s.clone() as Arc<dyn Storage>), &p, None).await;
            for kv in items {
                s.delete(kv.key, Precondition::MustExist, enc("x"))
                    .await
                    .unwrap();
            }
            floor = s.current_revision();
            s.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_watcher_stalled_during_replay_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let sled = open_with_watch_capacity(dir.path(), 4);
    let s: Arc<dyn Storage> = sled.clone();
    for i in 0..10 {
        create(&s, key("c", "ns", &format!("old{i}")), "v").await;
    }
    // Replay blocks on the full channel; live events pile up until the watcher is closed.
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let writes = async {
        for i in 0..100 {
            create(&s, key("c", "ns", &format!("new{i}")), "v").await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), writes)
        .await
        .expect("writer blocked");
    let mut events = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
        {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::TooSlow)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(events < 110);
    assert!(rx.recv().await.is_none());
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_live_watchers_have_no_task() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let s: Arc<dyn Storage> = sled.clone();
    let old = create(&s, key("t", "ns", "old"), "v").await;
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = tasks();
    // Watchers at the current revision are live at once: no task each.
    let mut live = Vec::new();
    for i in 0..100 {
        let prefix = Prefix::namespace("t", RES, format!("n{}", i % 3));
        let progress = (i % 2 == 0).then_some(Duration::from_millis(20));
        live.push(
            s.watch(&prefix, s.current_revision(), progress)
                .await
                .unwrap(),
        );
    }
    assert_eq!(tasks(), before);
    // A watcher with history to replay has a task until it is live.
    let mut replaying = s.watch(&Prefix::cluster("t"), 0, None).await.unwrap();
    assert_eq!(
        next_event(&mut replaying).await.kv.mod_revision,
        old.mod_revision
    );
    let fresh = create(&s, key("t", "n1", "x"), "v").await;
    assert_eq!(
        next_event(&mut replaying).await.kv.mod_revision,
        fresh.mod_revision
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tasks() != before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "replay task did not end"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for rx in live.iter_mut().skip(1).step_by(3) {
        assert_eq!(next_event(rx).await.kv.mod_revision, fresh.mod_revision);
    }
    // A watcher with progress gets it from its own receiver.
    match tokio::time::timeout(Duration::from_secs(5), live[0].recv()).await {
        Ok(Some(WatchEvent::Progress(r))) => assert!(r >= fresh.mod_revision),
        other => panic!("{other:?}"),
    }
    assert_eq!(sled.watcher_count(), 101);
    drop(live);
    drop(replaying);
    assert_eq!(sled.watcher_count(), 0);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_many_watchers() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    let s: Arc<dyn Storage> = sled.clone();
    let from = s.current_revision();
    // 1,000 watchers on one namespace, 20,000 single-cluster watchers, one wildcard.
    let mut same_ns = Vec::new();
    for _ in 0..1000 {
        same_ns.push(
            s.watch(&Prefix::namespace("hot", RES, "ns"), from, None)
                .await
                .unwrap(),
        );
    }
    let mut per_cluster = Vec::new();
    for i in 0..20_000 {
        per_cluster.push(
            s.watch(&Prefix::cluster(format!("tenant-{i}")), from, None)
                .await
                .unwrap(),
        );
    }
    let wild = Prefix {
        cluster: None,
        resource: Some(RES.into()),
        namespace: None,
    };
    let mut wild_rx = s.watch(&wild, from, None).await.unwrap();
    assert_eq!(sled.watcher_count(), 21_001);

    let start = std::time::Instant::now();
    let mut revs = Vec::new();
    for i in 0..20 {
        revs.push(
            create(&s, key("hot", "ns", &format!("k{i}")), "v")
                .await
                .mod_revision,
        );
        create(&s, key(&format!("tenant-{i}"), "ns", "x"), "v").await;
    }
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    for rx in &mut same_ns {
        for want in &revs {
            assert_eq!(next_event(rx).await.kv.mod_revision, *want);
        }
    }
    for (i, rx) in per_cluster.iter_mut().enumerate() {
        if i < 20 {
            assert_eq!(next_event(rx).await.kv.key.cluster, format!("tenant-{i}"));
        }
        assert!(rx.try_recv().is_none());
    }
    for _ in 0..40 {
        next_event(&mut wild_rx).await;
    }
    drop(same_ns);
    drop(per_cluster);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sled.watcher_count() > 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "dropped watchers not unregistered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown().await.unwrap();
}
