//! Conformance checks of writes: preconditions, encoders, concurrent writers, batches.

use std::collections::HashSet;
use std::sync::Arc;

use super::{assert_quiet, bw, create, enc, key, list_all, next_event, val, RES};
use crate::{
    BatchWrite, Encoder, Error, EventType, Key, KeyValue, Precondition, Prefix, Revision, Storage,
};

/// A batch behaves as its writes sent one by one: own preconditions, own revision, failed
/// writes consume no revision and do not stop the others, later writes see earlier ones.
pub(super) async fn write_batch_is_writes_in_order(s: &Arc<dyn Storage>) {
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
pub async fn write_batch_events_one_per_write(s: &Arc<dyn Storage>, n: usize) {
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

pub(super) async fn crud_and_preconditions(s: &Arc<dyn Storage>) {
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

pub(super) async fn encoder_errors_consume_no_revision(s: &Arc<dyn Storage>) {
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

pub(super) async fn concurrent_writers(s: &Arc<dyn Storage>) {
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
