//! Conformance checks of watches: replay then live without gap or duplicate, prefixes
//! and previous values, a `from` in the future, progress, dropped watchers.

use std::sync::Arc;
use std::time::Duration;

use super::{assert_quiet, create, enc, key, next_event, val, RES};
use crate::{EventType, Key, Precondition, Prefix, Storage, WatchEvent};

pub(super) async fn watch_replay_then_live(s: &Arc<dyn Storage>) {
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

pub(super) async fn watch_prefixes_and_prev(s: &Arc<dyn Storage>) {
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
        cluster: crate::Clusters::All,
        resource: Some("wp.example/things".into()),
        namespace: None,
    };
    let mut wild_rx = s.watch(&wild, from, None).await.unwrap();
    let everything = Prefix {
        cluster: crate::Clusters::All,
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

pub(super) async fn watch_future_from_waits(s: &Arc<dyn Storage>) {
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

pub(super) async fn watch_progress(s: &Arc<dyn Storage>) {
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

pub(super) async fn watch_drop_unregisters(s: &Arc<dyn Storage>) {
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
