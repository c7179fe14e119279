//! Conformance checks of reads: list order, prefixes, filters and limits, wildcard
//! lists, paging through one snapshot, exact state at every retained revision.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;

use super::{create, enc, key, list_all, val, RES};
use crate::{
    BatchWrite, Error, Key, KeyValue, ListOptions, Precondition, Prefix, Revision, Storage,
};

pub(super) async fn list_order_prefixes_filter_limit(s: &Arc<dyn Storage>) {
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
        cluster: crate::Clusters::One(cluster.into()),
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

pub(super) async fn wildcard_cluster_list(s: &Arc<dyn Storage>) {
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
        cluster: crate::Clusters::All,
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
        cluster: crate::Clusters::All,
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

pub(super) async fn paging_snapshot_under_writes(s: &Arc<dyn Storage>) {
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
pub(super) async fn snapshots_match_model(s: &Arc<dyn Storage>) {
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
    // What remains after each key at a revision, deleted and later-created keys included.
    let every: Vec<Key> = ["a", "b"]
        .iter()
        .flat_map(|r| (0..6).map(move |i| key(cluster, r, &format!("k{i}"))))
        .collect();
    for (rev, state) in states.iter().step_by(10) {
        for k in &every {
            let want = state.range::<Key, _>((Excluded(k), Unbounded)).count() as u64;
            let got = s.count_after(&p, k, *rev).await.unwrap();
            assert_eq!(got, want, "keys after {k:?} at {rev}");
        }
    }
}

/// `count_after` at ten times [`crate::COUNT_CHUNK`]: from the first key, at the chunk
/// boundary on both sides, at the last key, and at a revision before half of the keys
/// were deleted.
pub(super) async fn count_after_crosses_chunks(s: &Arc<dyn Storage>) {
    let cluster = "counting";
    let p = Prefix::resource(cluster, RES);
    let n = 10 * crate::COUNT_CHUNK + 1;
    let name = |i: usize| format!("k{i:05}");
    for start in (0..n).step_by(500) {
        let batch: Vec<BatchWrite> = (start..n.min(start + 500))
            .map(|i| BatchWrite {
                key: key(cluster, "ns", &name(i)),
                delete: false,
                precondition: Precondition::MustNotExist,
                encode: enc("v"),
            })
            .collect();
        for r in s.write_batch(batch).await {
            r.unwrap();
        }
    }
    let full = s.current_revision();
    let chunk = crate::COUNT_CHUNK;
    for (after, want) in [
        (0, n - 1),
        (n - chunk - 2, chunk + 1),
        (n - chunk - 1, chunk),
        (n - chunk, chunk - 1),
        (n - 1, 0),
    ] {
        let got = s
            .count_after(&p, &key(cluster, "ns", &name(after)), full)
            .await
            .unwrap();
        assert_eq!(got, want as u64, "after {}", name(after));
    }
    // A key before every stored one counts them all.
    let got = s
        .count_after(&p, &key(cluster, "a", "a"), full)
        .await
        .unwrap();
    assert_eq!(got, n as u64);
    // Deleting every other key changes the latest count, not the one at `full`.
    let evens: Vec<usize> = (0..n).step_by(2).collect();
    for chunk in evens.chunks(500) {
        let batch: Vec<BatchWrite> = chunk
            .iter()
            .map(|i| BatchWrite {
                key: key(cluster, "ns", &name(*i)),
                delete: true,
                precondition: Precondition::MustExist,
                encode: enc("d"),
            })
            .collect();
        for r in s.write_batch(batch).await {
            r.unwrap();
        }
    }
    let first = key(cluster, "ns", &name(0));
    let now = s.current_revision();
    assert_eq!(
        s.count_after(&p, &first, now).await.unwrap(),
        (n / 2) as u64
    );
    assert_eq!(
        s.count_after(&p, &first, full).await.unwrap(),
        (n - 1) as u64
    );
}

/// `count_after` while another task deletes and creates keys of the counted range: every
/// count equals what a list at the same revision holds after the key.
pub(super) async fn count_after_under_writes(s: &Arc<dyn Storage>) {
    let cluster = "counting-live";
    let p = Prefix::resource(cluster, RES);
    for i in 0..300 {
        create(s, key(cluster, "ns", &format!("k{i:03}")), "v").await;
    }
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..300 {
                let k = key(cluster, "ns", &format!("k{:03}", (i * 7) % 300));
                if s.delete(k.clone(), Precondition::MustExist, enc("d"))
                    .await
                    .is_err()
                {
                    let _ = s.put(k, Precondition::MustNotExist, enc("again")).await;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let first = key(cluster, "ns", "k000");
    let mut counts = 0;
    while !writer.is_finished() || counts < 5 {
        let rev = s.current_revision();
        let got = s.count_after(&p, &first, rev).await.unwrap();
        let want = list_all(s, &p, Some(rev))
            .await
            .iter()
            .filter(|kv| kv.key > first)
            .count() as u64;
        assert_eq!(got, want, "keys after k000 at {rev}");
        counts += 1;
    }
    writer.await.unwrap();
}
