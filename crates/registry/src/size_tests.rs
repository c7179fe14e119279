//! The fixed sizes of the registry, each tested below, at, just above and ~10x its value.
//! The list batch ([`LIST_BATCH`]) through every consumer of a list: a list without
//! `limit` in every representation, the initial events of a watch, deletecollection,
//! namespace deletion and CRD instance cleanup (when a list's first batch was a public
//! field, the internal consumers saw only it). The Event sweeper's page and per-sweep
//! bound (and the storage batch it deletes in), and the page of the informer's scan
//! (which builds the garbage collector's graph).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kplane_storage::{Prefix, SledStorageOptions};
use serde_json::{json, Value};

use super::builtin_types::builtin;
use super::catalog::Catalog;
use super::read::LIST_BATCH;
use super::{DeleteOutcome, DeleteParams, Registry, Target, WatchType};
use crate::options::{ListParams, WriteParams};
use crate::testing::{
    configmap, create_all, create_namespace, fixture, fixture_with, name_of, target,
};

/// List sizes around the batch: below, at, just above, two batches and one more, ~10x.
const SIZES: [usize; 5] = [
    LIST_BATCH - 1,
    LIST_BATCH,
    LIST_BATCH + 1,
    2 * LIST_BATCH + 1,
    10 * LIST_BATCH,
];

/// Objects in `prefix` now, straight from storage.
async fn stored(reg: &Registry, prefix: &Prefix) -> u64 {
    reg.storage.count(prefix).await.unwrap()
}

/// `got == want`, reported as a count or the first difference rather than two long lists.
fn assert_names(got: &[String], want: &[String], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: number of items");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: item {i} is {} instead of {}", got[i], want[i]);
    }
}

/// The events of a watch until it ends (each within a generous timeout).
async fn watch_events(reg: &Arc<Registry>, t: &Target, p: &ListParams) -> Vec<(WatchType, Bytes)> {
    let mut w = reg.watch(t, p).await.unwrap();
    let mut out = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(30), w.next()).await {
            Ok(Some(item)) => out.push((item.ty, item.object)),
            Ok(None) => return out,
            Err(_) => panic!("watch stalled after {} events", out.len()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_list_consumer_sees_every_item_around_the_batch_size() {
    let f = fixture().await;
    let reg = &f.reg;
    let t = create_namespace(reg, "lists").await;
    // The namespace starts with kube-root-ca.crt: grow it to each size in turn.
    let mut names = vec!["kube-root-ca.crt".to_string()];
    for total in SIZES {
        let new: Vec<String> = (names.len()..total).map(|i| format!("cm-{i:05}")).collect();
        create_all(reg, &t, new.iter().map(|n| configmap(n, "all")).collect()).await;
        names.extend(new);
        names.sort();
        assert_eq!(names.len(), total);

        // The complete list, collected and batch by batch.
        let all = ListParams::default();
        let list = reg.list(&t, &all).await.unwrap().collect().await.unwrap();
        let got: Vec<String> = list.items.iter().map(|i| name_of(i)).collect();
        assert_names(&got, &names, &format!("collect() at {total}"));
        let mut page = reg.list(&t, &all).await.unwrap();
        let mut seen = Vec::new();
        while let Some(batch) = page.next_batch().await.unwrap() {
            assert!(batch.len() <= LIST_BATCH, "a batch of {}", batch.len());
            seen.extend(batch.iter().map(|i| name_of(i)));
        }
        assert_names(&seen, &names, &format!("next_batch() at {total}"));

        // A selector that matches every item counts batches the same way.
        let selected = ListParams {
            label_selector: Some("group=all".into()),
            ..Default::default()
        };
        let list = reg.list(&t, &selected).await.unwrap().collect().await;
        assert_eq!(list.unwrap().items.len(), total - 1, "selected at {total}");

        // Watches with initial events: sendInitialEvents=true, resourceVersion 0, unset.
        let rv = list_rv(reg, &t).await;
        let initial_end = ListParams {
            watch: true,
            send_initial_events: Some(true),
            allow_bookmarks: true,
            resource_version: Some(rv),
            rv_match: Some(crate::options::RvMatch::NotOlderThan),
            timeout_seconds: Some(1),
            ..Default::default()
        };
        let zero = ListParams {
            watch: true,
            resource_version: Some("0".into()),
            timeout_seconds: Some(1),
            ..Default::default()
        };
        let unset = ListParams {
            watch: true,
            timeout_seconds: Some(1),
            ..Default::default()
        };
        for (what, p) in [
            ("sendInitialEvents", initial_end),
            ("rv=0", zero),
            ("no rv", unset),
        ] {
            let events = watch_events(reg, &t, &p).await;
            let added: Vec<String> = events
                .iter()
                .take_while(|(ty, _)| *ty == WatchType::Added)
                .map(|(_, o)| name_of(o))
                .collect();
            assert_names(&added, &names, &format!("{what} watch at {total}"));
            let rest: Vec<_> = events[added.len()..]
                .iter()
                .map(|(ty, o)| (*ty, o))
                .collect();
            if what == "sendInitialEvents" {
                assert_eq!(rest.len(), 1, "{what}: only the end bookmark follows");
                let (ty, o) = rest[0];
                assert_eq!(ty, WatchType::Bookmark);
                let v: Value = serde_json::from_slice(o).unwrap();
                assert_eq!(
                    v["metadata"]["annotations"]["k8s.io/initial-events-end"],
                    "true"
                );
            } else {
                assert!(rest.is_empty(), "{what}: nothing after the initial events");
            }
        }
    }
}

async fn list_rv(reg: &Registry, t: &Target) -> String {
    let p = ListParams {
        limit: Some(1),
        ..Default::default()
    };
    reg.list(t, &p).await.unwrap().revision().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_collection_deletes_every_match_around_the_batch_size() {
    let f = fixture().await;
    let reg = &f.reg;
    let t = create_namespace(reg, "doomed").await;
    // One namespace, one label value per size: each deletecollection's selection has
    // exactly that many items, with the other groups' items interleaved in key order.
    let mut objs = Vec::new();
    for (g, n) in SIZES.iter().enumerate() {
        objs.extend((0..*n).map(|i| configmap(&format!("cm-{i:05}-{g}"), &format!("g{g}"))));
    }
    create_all(reg, &t, objs).await;
    let mut left = SIZES.iter().sum::<usize>() + 1;
    for (g, n) in SIZES.iter().enumerate() {
        let p = ListParams {
            label_selector: Some(format!("group=g{g}")),
            ..Default::default()
        };
        let (deleted, _) = reg
            .delete_collection(&t, &p, &DeleteParams::default())
            .await
            .unwrap();
        assert_eq!(deleted.len(), *n, "deleted of group g{g}");
        left -= n;
        let prefix = Prefix::namespace("root", t.rt.storage_resource.clone(), "doomed");
        assert_eq!(stored(reg, &prefix).await, left as u64, "after group g{g}");
        let rest = reg.list(&t, &p).await.unwrap().collect().await.unwrap();
        assert!(rest.items.is_empty(), "group g{g} is gone");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_over_the_batch_size_is_emptied_in_one_pass() {
    let f = fixture().await;
    let reg = &f.reg;
    let n = 2 * LIST_BATCH + 201;
    let t = create_namespace(reg, "big").await;
    let objs = (0..n)
        .map(|i| configmap(&format!("cm-{i:05}"), "x"))
        .collect();
    create_all(reg, &t, objs).await;
    let nst = target(reg, "", "namespaces", None);
    let marked = reg
        .delete(&nst, "big", &DeleteParams::default())
        .await
        .unwrap();
    assert!(matches!(marked, DeleteOutcome::Marked(_)));
    // One pass of the namespace deleter empties it and removes it.
    assert!(crate::controllers::namespace::finalize_namespace(
        reg,
        &kplane_types::ClusterName::root(),
        "big"
    )
    .await
    .unwrap());
    let prefix = Prefix::namespace("root", t.rt.storage_resource.clone(), "big");
    assert_eq!(stored(reg, &prefix).await, 0);
    assert!(reg.get_stored(&nst, "big").await.unwrap().is_none());
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_with_instances_over_the_batch_size_is_cleaned_up_in_one_pass() {
    let f = fixture().await;
    let reg = &f.reg;
    let crds = target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    reg.create(&crds, widget_crd(), &WriteParams::default())
        .await
        .unwrap();
    let catalog = reg
        .cluster_catalog(&kplane_types::ClusterName::root())
        .await
        .unwrap();
    let rt = catalog.get("example.com", "v1", "widgets").unwrap().clone();
    let widgets = Target {
        cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
        rt: rt.clone(),
        namespace: Some("default".into()),
    };
    let n = 2 * LIST_BATCH + 201;
    let objs = (0..n)
        .map(|i| {
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": format!("w-{i:05}")}})
        })
        .collect();
    create_all(reg, &widgets, objs).await;
    let prefix = Prefix::resource("root", rt.storage_resource.clone());
    assert_eq!(stored(reg, &prefix).await, n as u64);
    let marked = reg
        .delete(&crds, "widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert!(matches!(marked, DeleteOutcome::Marked(_)));
    // One pass of the CRD cleanup deletes every instance and lets the CRD go.
    assert!(crate::controllers::crd_cleanup::cleanup_crd(
        reg,
        &kplane_types::ClusterName::root(),
        "widgets.example.com"
    )
    .await
    .unwrap());
    assert_eq!(stored(reg, &prefix).await, 0);
    assert!(reg
        .get_stored(&crds, "widgets.example.com")
        .await
        .unwrap()
        .is_none());
}

/// A core v1 Event about the `default` ServiceAccount.
fn event(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": name},
           "involvedObject": {"kind": "ServiceAccount", "namespace": "default", "name": "default"},
           "reason": "Tested", "message": "m", "type": "Normal"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_sweeper_deletes_every_expired_event_across_its_page_and_bound() {
    use super::controllers::event_ttl::{EVENT_SWEEP_BATCH, EVENT_SWEEP_PAGE};
    let f = fixture().await;
    let reg = &f.reg;
    let t = target(reg, "", "events", Some("default"));
    let prefix = Prefix::resource("root", t.rt.storage_resource.clone());
    let expired = Duration::ZERO;
    // (page, most per sweep, events): across the page, then across the bound.
    let (page, most) = (7, 30);
    let mut cases: Vec<(usize, usize, usize)> = [page - 1, page, page + 1, 10 * page]
        .into_iter()
        .map(|n| (page, usize::MAX, n))
        .collect();
    cases.extend([most - 1, most, most + 1, 10 * most].map(|n| (page, most, n)));
    // Around the storage batch expired Events are deleted in.
    let bulk = super::bulk_delete::BULK_DELETE_BATCH;
    cases.extend([bulk - 1, bulk, bulk + 1].map(|n| (EVENT_SWEEP_PAGE, usize::MAX, n)));
    // The real sizes, one page and one more event.
    cases.push((EVENT_SWEEP_PAGE, EVENT_SWEEP_BATCH, EVENT_SWEEP_PAGE + 1));
    for (round, (page, most, n)) in cases.into_iter().enumerate() {
        let objs = (0..n)
            .map(|i| event(&format!("ev-{round}-{i:05}")))
            .collect();
        create_all(reg, &t, objs).await;
        assert_eq!(stored(reg, &prefix).await, n as u64);
        let first = crate::controllers::event_ttl::sweep_events_in(reg, expired, page, most)
            .await
            .unwrap();
        assert_eq!(
            first,
            n.min(most),
            "first sweep of {n} (page {page}, most {most})"
        );
        let mut total = first;
        while total < n {
            let more = crate::controllers::event_ttl::sweep_events_in(reg, expired, page, most)
                .await
                .unwrap();
            assert!(more > 0 && more <= most, "a later sweep deleted {more}");
            total += more;
        }
        assert_eq!(total, n);
        assert_eq!(stored(reg, &prefix).await, 0, "{n} events left behind");
        assert_eq!(
            crate::controllers::event_ttl::sweep_events_in(reg, expired, page, most)
                .await
                .unwrap(),
            0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_informer_scan_feeds_every_owned_object_to_the_collector_across_its_page() {
    use super::controllers::gc::GraphFeed;
    use super::controllers::informer::{scan, InformerHandler, SCAN_PAGE};
    let f = fixture().await;
    let reg = &f.reg;
    let t = create_namespace(reg, "owned").await;
    let n = SCAN_PAGE + 1;
    let objs = (0..n)
        .map(|i| {
            let mut cm = configmap(&format!("cm-{i:05}"), "owned");
            cm["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": "owner", "uid": format!("owner-{}", i % 3)}]);
            cm
        })
        .collect();
    create_all(reg, &t, objs).await;
    let all = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: None,
        namespace: None,
    };
    let total = usize::try_from(stored(reg, &all).await).unwrap();
    assert!(total > n);
    let at = reg.storage.current_revision();
    for page in [total - 1, total, total + 1, total.div_ceil(10), SCAN_PAGE] {
        // A fresh collector over the same store.
        let catalog = Arc::new(Catalog::new(builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (fresh, _queue) = Registry::new(reg.storage.clone(), catalog, String::new(), shutdown);
        let feed: Arc<dyn InformerHandler> = Arc::new(GraphFeed::new(fresh.clone()));
        feed.on_resync();
        let replayed = scan(&*reg.storage, std::slice::from_ref(&feed), page, at)
            .await
            .unwrap();
        feed.on_synced();
        assert_eq!(replayed, total, "scan in pages of {page}");
        assert_eq!(
            fresh
                .controller::<crate::controllers::gc::GarbageCollector>()
                .unwrap()
                .owned_objects(),
            n,
            "scan in pages of {page}"
        );
        assert!(fresh
            .controller::<crate::controllers::gc::GarbageCollector>()
            .unwrap()
            .synced());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_outliving_the_event_window_fails_loudly_and_deletion_goes_on() {
    let f = fixture_with(SledStorageOptions {
        event_window: Duration::from_millis(300),
        compaction_interval: Duration::from_millis(20),
        ..Default::default()
    })
    .await;
    let reg = &f.reg;
    let t = create_namespace(reg, "slow").await;
    let objs = (0..2 * LIST_BATCH)
        .map(|i| configmap(&format!("cm-{i:05}"), "x"))
        .collect();
    create_all(reg, &t, objs).await;
    // A list, a watch's initial events and a deletion, each one batch in.
    let all = ListParams::default();
    let mut list = reg.list(&t, &all).await.unwrap();
    assert_eq!(
        list.next_batch().await.unwrap().map(|b| b.len()),
        Some(LIST_BATCH)
    );
    let initial = ListParams {
        watch: true,
        send_initial_events: Some(true),
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut watch = reg.watch(&t, &initial).await.unwrap();
    for _ in 0..LIST_BATCH {
        assert_eq!(watch.next().await.unwrap().ty, WatchType::Added);
    }
    let mut deletion = reg.list_to_delete(&t, &all).await.unwrap();
    assert_eq!(
        deletion.next_batch().await.unwrap().map(|b| b.len()),
        Some(LIST_BATCH)
    );
    // The window passes and a later write lets compaction go past the lists' revision.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let other = create_namespace(reg, "later").await;
    create_all(reg, &other, vec![configmap("late", "x")]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while reg.storage.compacted_revision() <= list.revision() {
        assert!(tokio::time::Instant::now() < deadline, "no compaction");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The snapshot is gone: the list fails (410) instead of ending early ...
    let err = list.next_batch().await.unwrap_err();
    assert_eq!(err.code(), 410, "{}", err.0.message);
    // ... the watch sends an ERROR event instead of the end bookmark, and ends ...
    let item = watch.next().await.unwrap();
    assert_eq!(item.ty, WatchType::Error);
    let status: Value = serde_json::from_slice(&item.object).unwrap();
    assert_eq!(status["code"], 410);
    assert!(watch.next().await.is_none());
    // ... and deletion, which reads the latest state, goes on to the end.
    let rest = deletion.next_batch().await.unwrap().unwrap();
    let mut seen = rest.len();
    while let Some(batch) = deletion.next_batch().await.unwrap() {
        seen += batch.len();
    }
    // The rest of the 2 x LIST_BATCH ConfigMaps and kube-root-ca.crt.
    assert_eq!(seen, LIST_BATCH + 1);
}
