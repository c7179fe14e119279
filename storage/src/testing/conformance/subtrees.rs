//! Conformance checks of cluster subtrees ([`Clusters::Subtree`]): lists and counts cover
//! the root cluster and its descendants only (not siblings whose names merely start with
//! the root's), in key order, paged with `limit` and `start_after` across the root and the
//! descendants, at older revisions too; watches deliver exactly the subtree's events, live
//! and replayed.

use std::sync::Arc;

use super::{assert_quiet, create, enc, key, list_all, next_event, RES};
use crate::{Clusters, EventType, Key, ListOptions, Precondition, Prefix, Revision, Storage};

fn subtree(root: &str, resource: Option<&str>, namespace: Option<&str>) -> Prefix {
    Prefix {
        cluster: Clusters::Subtree(root.into()),
        resource: resource.map(str::to_string),
        namespace: namespace.map(str::to_string),
    }
}

/// Pages through `p` at `at` with `limit`, checking each page's size and revision.
async fn paged(
    s: &Arc<dyn Storage>,
    p: &Prefix,
    at: Option<Revision>,
    limit: usize,
    start: Option<Key>,
) -> Vec<Key> {
    let mut opts = ListOptions {
        at_revision: at,
        start_after: start,
        limit: Some(limit),
    };
    let mut got = Vec::new();
    loop {
        let r = s.list(p, &opts, None).await.unwrap();
        assert!(r.items.len() <= limit);
        if let Some(at) = opts.at_revision {
            assert_eq!(r.revision, at);
        }
        got.extend(r.items.iter().map(|kv| kv.key.clone()));
        if !r.more {
            return got;
        }
        opts.start_after = Some(r.items.last().unwrap().key.clone());
        opts.at_revision = Some(r.revision);
    }
}

pub(super) async fn subtree_list_paging_and_siblings(s: &Arc<dyn Storage>) {
    // Inside: the root and its descendants. Outside: siblings sorting before the root
    // (`st-b`, `st.x`), between the root and its descendants (`st-b` sorts after the
    // root's exact range but before `st:`), after them (`stx`, `st0`), and a parent.
    let inside = ["st", "st:a", "st:a:b", "st:z"];
    let outside = ["st-b", "st.x", "stx", "st0", "s", "sta"];
    let mut want = Vec::new();
    for c in inside {
        for ns in ["", "n1", "n2"] {
            for i in 0..7 {
                let k = key(c, ns, &format!("k{i}"));
                create(s, k.clone(), "v").await;
                want.push(k);
            }
        }
        // Another resource in the subtree is not listed under RES.
        create(s, Key::new(c, "/secrets", "n1", "x"), "v").await;
    }
    for c in outside {
        create(s, key(c, "n1", "k0"), "v").await;
        create(s, key(c, "", "k0"), "v").await;
    }
    want.sort();
    let p = subtree("st", Some(RES), None);
    let got: Vec<Key> = list_all(s, &p, None)
        .await
        .into_iter()
        .map(|kv| kv.key)
        .collect();
    assert_eq!(got, want);
    assert_eq!(s.count(&p).await.unwrap(), want.len() as u64);
    for limit in [1, 7, 20, 21, 22, want.len() - 1, want.len(), want.len() + 1] {
        assert_eq!(paged(s, &p, None, limit, None).await, want, "limit {limit}");
    }

    // start_after outside the subtree: before it, between its two ranges, after it.
    for (after, from) in [
        (key("a", "", ""), 0),
        (key("st-b", "n1", "k0"), 21),
        (key("st.x", "", "k0"), 21),
        (key("st", "n2", "k6"), 21),
        (key("st:a:b", "", "k0"), 43),
        (key("stx", "", ""), want.len()),
    ] {
        assert_eq!(
            paged(s, &p, None, 5, Some(after.clone())).await,
            want[from..].to_vec(),
            "start after {after:?}"
        );
    }

    // A namespace in the subtree; a descendant's own subtree; no resource at all.
    let n1: Vec<Key> = want
        .iter()
        .filter(|k| k.namespace == "n1")
        .cloned()
        .collect();
    assert_eq!(
        paged(s, &subtree("st", Some(RES), Some("n1")), None, 4, None).await,
        n1
    );
    let st_a: Vec<Key> = want
        .iter()
        .filter(|k| k.cluster.starts_with("st:a"))
        .cloned()
        .collect();
    assert_eq!(
        paged(s, &subtree("st:a", Some(RES), None), None, 3, None).await,
        st_a
    );
    let everything = list_all(s, &subtree("st", None, None), None).await;
    assert_eq!(everything.len(), want.len() + inside.len());
    assert!(everything
        .iter()
        .all(|kv| inside.contains(&kv.key.cluster.as_str())));
    assert_eq!(
        s.count(&subtree("st", None, None)).await.unwrap(),
        everything.len() as u64
    );
    // A subtree nothing was written in.
    assert!(list_all(s, &subtree("st:none", Some(RES), None), None)
        .await
        .is_empty());

    // The state at an older revision: a key deleted and one created since.
    let before = s.current_revision();
    s.delete(key("st:a", "n1", "k3"), Precondition::MustExist, enc("d"))
        .await
        .unwrap();
    create(s, key("st:a:b", "n1", "new"), "v").await;
    create(s, key("stx", "n1", "new"), "v").await;
    for limit in [1, 6, want.len() + 1] {
        assert_eq!(
            paged(s, &p, Some(before), limit, None).await,
            want,
            "at {before}, limit {limit}"
        );
    }
    let mut now = want.clone();
    now.retain(|k| *k != key("st:a", "n1", "k3"));
    now.push(key("st:a:b", "n1", "new"));
    now.sort();
    assert_eq!(paged(s, &p, None, 4, None).await, now);
}

pub(super) async fn subtree_watch_filters(s: &Arc<dyn Storage>) {
    let from = s.current_revision();
    let mut tree = s
        .watch(&subtree("wst", Some(RES), None), from, None)
        .await
        .unwrap();
    let mut below = s
        .watch(&subtree("wst:a", None, None), from, None)
        .await
        .unwrap();
    let mut ns = s
        .watch(&subtree("wst", Some(RES), Some("n1")), from, None)
        .await
        .unwrap();

    let mut in_tree = Vec::new();
    let mut in_below = Vec::new();
    let mut in_ns = Vec::new();
    for (cluster, resource, namespace) in [
        ("wst", RES, "n1"),
        ("wst-b", RES, "n1"),
        ("wst:a", RES, "n2"),
        ("wstx", RES, "n1"),
        ("wst:a:b", RES, "n1"),
        ("wst:a", "/secrets", "n1"),
        ("ws", RES, "n1"),
        ("wst:ab", RES, "n1"),
        ("wst:a:b:c", "/secrets", "n2"),
    ] {
        let kv = create(s, Key::new(cluster, resource, namespace, "x"), "v").await;
        let within = |root: &str| {
            cluster == root || (cluster.starts_with(root) && cluster.as_bytes()[root.len()] == b':')
        };
        if within("wst") && resource == RES {
            in_tree.push(kv.mod_revision);
            if namespace == "n1" {
                in_ns.push(kv.mod_revision);
            }
        }
        if within("wst:a") {
            in_below.push(kv.mod_revision);
        }
    }
    let upd = s
        .put(
            Key::new("wst:a:b", RES, "n1", "x"),
            Precondition::MustExist,
            enc("2"),
        )
        .await
        .unwrap();
    for v in [&mut in_tree, &mut in_below, &mut in_ns] {
        v.push(upd.mod_revision);
    }
    assert_eq!(in_tree.len(), 5);
    assert_eq!(in_below.len(), 5);
    assert_eq!(in_ns.len(), 4);

    for (rx, want) in [
        (&mut tree, &in_tree),
        (&mut below, &in_below),
        (&mut ns, &in_ns),
    ] {
        let mut got = Vec::new();
        for _ in 0..want.len() {
            got.push(next_event(rx).await.kv.mod_revision);
        }
        assert_eq!(&got, want);
        assert_quiet(rx).await;
    }
    let e = {
        // The same events replayed from the log for a watcher that starts behind.
        let mut replay = s
            .watch(&subtree("wst", Some(RES), None), from, None)
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut last = None;
        for _ in 0..in_tree.len() {
            let e = next_event(&mut replay).await;
            got.push(e.kv.mod_revision);
            last = Some(e);
        }
        assert_eq!(got, in_tree);
        assert_quiet(&mut replay).await;
        last.unwrap()
    };
    assert_eq!(e.event_type, EventType::Modified);
    assert_eq!(e.kv.key.cluster, "wst:a:b");

    // Dropping a subtree watcher unregisters it; the others keep receiving.
    drop(tree);
    let kv = create(s, key("wst:a", "n1", "late"), "v").await;
    assert_eq!(
        next_event(&mut below).await.kv.mod_revision,
        kv.mod_revision
    );
    assert_eq!(next_event(&mut ns).await.kv.mod_revision, kv.mod_revision);
}
