//! ResourceQuota end to end inside the registry: validation, admission's counts at, above
//! and ten times the limit, concurrent creates, dry runs, and the controller's status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kplane_storage::{KeyValue, Prefix};
use kplane_types::ClusterName;
use serde_json::{json, Value};

use super::index::Indexer;
use crate::controllers::informer::InformerHandler;
use crate::options::WriteParams;
use crate::testing::{create_namespace, fixture, target};
use crate::Registry;

fn root() -> ClusterName {
    ClusterName::root()
}

fn quota(name: &str, hard: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota",
           "metadata": {"name": name}, "spec": {"hard": hard}})
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// Feeds the stored quotas to the index, as the informer does.
async fn index(reg: &Registry) {
    let items = reg
        .storage()
        .list(
            &Prefix::resource("root", super::RESOURCE),
            &Default::default(),
            None,
        )
        .await
        .unwrap()
        .items;
    let ix = Indexer(reg.quota_index().clone());
    for kv in &items {
        ix.on_object(kv, false, false);
    }
}

async fn stored_quota(reg: &Registry, ns: &str, name: &str) -> Value {
    let t = target(reg, "", "resourcequotas", Some(ns));
    let b = reg.get(&t, name).await.unwrap();
    serde_json::from_slice(&b).unwrap()
}

/// Creates a quota in `ns`, indexes it and lets the controller write its status.
async fn make_quota(reg: &Registry, ns: &str, q: Value) -> Value {
    let t = target(reg, "", "resourcequotas", Some(ns));
    let name = q["metadata"]["name"].as_str().unwrap().to_string();
    reg.create(&t, q, &WriteParams::default()).await.unwrap();
    index(reg).await;
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), ns)
            .await
            .unwrap()
    );
    stored_quota(reg, ns, &name).await
}

#[tokio::test]
async fn validation_refuses_what_upstream_refuses() {
    let f = fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "v").await;
    let t = target(reg, "", "resourcequotas", Some("v"));
    let w = WriteParams::default();
    for (hard, scopes, want) in [
        (json!({"foo": "1"}), json!(null), vec![
            "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
            "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
        ]),
        (json!({"storage": "1"}), json!(null), vec![
            "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
        ]),
        (json!({"pods": "-1"}), json!(null), vec![
            "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
        ]),
        (json!({"configmaps": "1500m"}), json!(null), vec![
            "spec.hard[configmaps]: Invalid value: \"1500m\": must be an integer",
        ]),
        (json!({"cpu": "x1"}), json!(null), vec![
            "spec.hard[cpu]: Invalid value: \"x1\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ]),
        (json!({"configmaps": "1"}), json!(["BestEffort"]), vec![
            "spec.scopes: Invalid value: [\"BestEffort\"]: unsupported scope applied to resource",
        ]),
        (json!({"pods": "1"}), json!(["Terminating", "NotTerminating"]), vec![
            "spec.scopes: Invalid value: [\"Terminating\",\"NotTerminating\"]: conflicting scopes",
        ]),
    ] {
        let mut q = quota("bad", hard.clone());
        if !scopes.is_null() {
            q["spec"]["scopes"] = scopes;
        }
        let e = reg.create(&t, q, &w).await.unwrap_err();
        assert_eq!(e.code(), 422, "{hard}");
        let got: Vec<String> = e.0.details.as_ref().unwrap().causes.iter().map(|c| c.render()).collect();
        assert_eq!(got, want, "{hard}");
    }
    // Qualified names, count names and huge pages are accepted; quantities are stored in
    // their canonical text and the status a client sends on create is dropped.
    let mut ok = quota(
        "ok",
        json!({"count/widgets.example.com": "5", "requests.example.com/dongle": "3",
        "hugepages-2Mi": "1Gi", "memory": "1024Mi", "cpu": "1000m", "configmaps": 10}),
    );
    ok["status"] = json!({"used": {"configmaps": "1"}});
    reg.create(&t, ok, &w).await.unwrap();
    let got = stored_quota(reg, "v", "ok").await;
    assert_eq!(got["spec"]["hard"]["memory"], "1Gi");
    assert_eq!(got["spec"]["hard"]["cpu"], "1");
    assert_eq!(got["spec"]["hard"]["configmaps"], "10");
    assert_eq!(got["status"], json!({}));
    // Scopes may not change.
    let mut scoped = quota("scoped", json!({"pods": "1"}));
    scoped["spec"]["scopes"] = json!(["BestEffort"]);
    reg.create(&t, scoped.clone(), &w).await.unwrap();
    scoped["spec"]["scopes"] = json!(["NotBestEffort"]);
    let e = reg
        .update(&t, "scoped", None, scoped, &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422);
    assert!(
        e.0.message
            .contains("spec.scopes: Invalid value: [\"NotBestEffort\"]: field is immutable"),
        "{}",
        e.0.message
    );
}

#[tokio::test]
async fn creates_are_counted_and_refused_past_the_limit_with_upstreams_message() {
    let f = fixture().await;
    let reg = &f.reg;
    let cms = create_namespace(reg, "q").await;
    let w = WriteParams::default();
    // The namespace's own ConfigMaps (kube-root-ca.crt) count.
    let start = reg
        .storage()
        .count(&Prefix {
            cluster: kplane_storage::Clusters::One("root".into()),
            resource: Some("/configmaps".into()),
            namespace: Some("q".into()),
        })
        .await
        .unwrap();
    let limit = start + 3;
    let q = make_quota(
        reg,
        "q",
        quota(
            "test-quota",
            json!({
        "configmaps": limit.to_string(), "count/configmaps": "100", "resourcequotas": "1",
        "services": "10", "cpu": "1", "count/widgets.example.com": "1"}),
        ),
    )
    .await;
    assert_eq!(q["status"]["hard"], q["spec"]["hard"]);
    let used = &q["status"]["used"];
    assert_eq!(used["configmaps"], start.to_string());
    assert_eq!(used["resourcequotas"], "1");
    assert_eq!(used["services"], "0");
    assert_eq!(used["cpu"], "0");
    assert!(
        used.get("count/widgets.example.com").is_none(),
        "an unserved resource has no usage"
    );

    // A dry run is checked, not recorded.
    let dry = WriteParams {
        dry_run: true,
        ..Default::default()
    };
    reg.create(&cms, cm("dry"), &dry).await.unwrap();
    assert_eq!(
        stored_quota(reg, "q", "test-quota").await["status"]["used"]["configmaps"],
        start.to_string()
    );

    for i in 0..3 {
        reg.create(&cms, cm(&format!("c{i}")), &w).await.unwrap();
    }
    let used = stored_quota(reg, "q", "test-quota").await["status"]["used"].clone();
    assert_eq!(used["configmaps"], limit.to_string());
    assert_eq!(used["count/configmaps"], limit.to_string());
    // One more is refused, with nothing written.
    let e = reg.create(&cms, cm("over"), &w).await.unwrap_err();
    assert_eq!(e.code(), 403);
    assert_eq!(
        e.0.message,
        format!("configmaps \"over\" is forbidden: exceeded quota: test-quota, requested: configmaps=1, used: configmaps={limit}, limited: configmaps={limit}")
    );
    assert!(reg.get(&cms, "over").await.is_err());
    // A generated name is named as generated (validating admission runs after it is).
    let e = reg
        .create(
            &cms,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}),
            &w,
        )
        .await
        .unwrap_err();
    assert!(
        e.0.message.starts_with("configmaps \"gen-")
            && e.0
                .message
                .contains("is forbidden: exceeded quota: test-quota"),
        "{}",
        e.0.message
    );
    // A second quota is refused by the first's resourcequotas limit.
    let rqs = target(reg, "", "resourcequotas", Some("q"));
    let e = reg
        .create(&rqs, quota("second", json!({"pods": "1"})), &w)
        .await
        .unwrap_err();
    assert_eq!(e.0.message, "resourcequotas \"second\" is forbidden: exceeded quota: test-quota, requested: resourcequotas=1, used: resourcequotas=1, limited: resourcequotas=1");
    // Another namespace is not limited.
    let other = create_namespace(reg, "free").await;
    reg.create(&other, cm("fine"), &w).await.unwrap();

    // A delete releases its usage once the controller counts again.
    reg.delete(&cms, "c0", &Default::default()).await.unwrap();
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), "q")
            .await
            .unwrap()
    );
    assert_eq!(
        stored_quota(reg, "q", "test-quota").await["status"]["used"]["configmaps"],
        (limit - 1).to_string()
    );
    reg.create(&cms, cm("again"), &w).await.unwrap();
    // The controller's count agrees with admission's.
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), "q")
            .await
            .unwrap()
    );
    assert_eq!(
        stored_quota(reg, "q", "test-quota").await["status"]["used"]["configmaps"],
        limit.to_string()
    );
}

#[tokio::test]
async fn a_quota_without_usage_for_a_counted_name_refuses_with_status_unknown() {
    let f = fixture().await;
    let reg = &f.reg;
    let cms = create_namespace(reg, "u").await;
    let mut q = make_quota(reg, "u", quota("q", json!({"configmaps": "5"}))).await;
    // A status whose hard names configmaps without a usage for it.
    q["status"] = json!({"hard": {"configmaps": "5"}});
    let t = target(reg, "", "resourcequotas", Some("u"));
    reg.update(&t, "q", Some("status"), q, &WriteParams::default())
        .await
        .unwrap();
    let e = reg
        .create(&cms, cm("x"), &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    assert_eq!(
        e.0.message,
        "configmaps \"x\" is forbidden: status unknown for quota: q, resources: configmaps"
    );
    // A new quota (no status yet) limits nothing until the controller has counted.
    let t2 = create_namespace(reg, "fresh").await;
    let rqs = target(reg, "", "resourcequotas", Some("fresh"));
    reg.create(
        &rqs,
        quota("q", json!({"configmaps": "0"})),
        &WriteParams::default(),
    )
    .await
    .unwrap();
    index(reg).await;
    reg.create(&t2, cm("before-count"), &WriteParams::default())
        .await
        .unwrap();
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), "fresh")
            .await
            .unwrap()
    );
    let e = reg
        .create(&t2, cm("after-count"), &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
}

/// Concurrent creates at ten times the limit: exactly the limit's worth succeed, every
/// other one is refused with 403 (none fails on a conflict), and the recorded usage is
/// exact; requests that are dropped do not stall the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_at_ten_times_the_limit_take_exactly_the_limit() {
    let f = fixture().await;
    let reg = f.reg.clone();
    let cms = create_namespace(&reg, "c").await;
    let base: u64 = reg
        .storage()
        .count(&Prefix {
            cluster: kplane_storage::Clusters::One("root".into()),
            resource: Some("/configmaps".into()),
            namespace: Some("c".into()),
        })
        .await
        .unwrap();
    const LIMIT: u64 = 50;
    make_quota(
        &reg,
        "c",
        quota("q", json!({"count/configmaps": (base + LIMIT).to_string()})),
    )
    .await;
    let tasks: Vec<_> = (0..LIMIT * 10)
        .map(|i| {
            let (reg, cms) = (reg.clone(), cms.clone());
            tokio::spawn(async move {
                reg.create(&cms, cm(&format!("p{i}")), &WriteParams::default())
                    .await
                    .map_err(|e| e.code())
            })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(403) => refused += 1,
            Err(code) => panic!("a create failed with {code}"),
        }
    }
    assert_eq!((ok, refused), (LIMIT, LIMIT * 9));
    let used = stored_quota(&reg, "c", "q").await["status"]["used"]["count/configmaps"].clone();
    assert_eq!(used, (base + LIMIT).to_string());
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(&reg, &root(), "c")
            .await
            .unwrap()
    );
    assert_eq!(
        stored_quota(&reg, "c", "q").await["status"]["used"]["count/configmaps"],
        used
    );

    // Requests cancelled while they wait or while they check the batch (a client gone)
    // leave the others answered, and the controller's recount is exact.
    let cms = create_namespace(&reg, "d").await;
    make_quota(&reg, "d", quota("q", json!({"count/configmaps": "100000"}))).await;
    let mut kept = Vec::new();
    for i in 0..LIMIT * 4 {
        let (r, t) = (reg.clone(), cms.clone());
        let task = tokio::spawn(async move {
            r.create(&t, cm(&format!("d{i}")), &WriteParams::default())
                .await
                .map(|_| ())
        });
        if i % 2 == 0 {
            tokio::task::yield_now().await;
            task.abort();
        } else {
            kept.push(task);
        }
    }
    for t in kept {
        tokio::time::timeout(std::time::Duration::from_secs(30), t)
            .await
            .expect("a create stalled behind a cancelled one")
            .unwrap()
            .unwrap();
    }
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(&reg, &root(), "d")
            .await
            .unwrap()
    );
    let stored = reg
        .storage()
        .count(&Prefix {
            cluster: kplane_storage::Clusters::One("root".into()),
            resource: Some("/configmaps".into()),
            namespace: Some("d".into()),
        })
        .await
        .unwrap();
    assert_eq!(
        stored_quota(&reg, "d", "q").await["status"]["used"]["count/configmaps"],
        stored.to_string()
    );
}

#[tokio::test]
async fn the_status_subresource_keeps_the_spec_and_the_main_endpoint_keeps_the_status() {
    let f = fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "s").await;
    let t = target(reg, "", "resourcequotas", Some("s"));
    let w = WriteParams::default();
    let mut q = make_quota(
        reg,
        "s",
        quota("q", json!({"cpu": "500m", "memory": "500Mi"})),
    )
    .await;
    q["spec"]["hard"]["cpu"] = json!("9");
    q["status"]["hard"] = json!({"cpu": "2", "memory": "2Gi"});
    let b = reg
        .update(&t, "q", Some("status"), q.clone(), &w)
        .await
        .unwrap()
        .0;
    let got: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(got["spec"]["hard"]["cpu"], "500m");
    assert_eq!(got["status"]["hard"]["cpu"], "2");
    // The controller puts the status back to the spec.
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), "s")
            .await
            .unwrap()
    );
    let got = stored_quota(reg, "s", "q").await;
    assert_eq!(
        got["status"]["hard"],
        json!({"cpu": "500m", "memory": "500Mi"})
    );
    // The main endpoint changes the spec, not the status.
    let mut upd = got.clone();
    upd["spec"]["hard"]["cpu"] = json!("1");
    upd["status"] = json!({"hard": {"cpu": "7"}});
    let b = reg.update(&t, "q", None, upd, &w).await.unwrap().0;
    let got: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(got["spec"]["hard"]["cpu"], "1");
    assert_eq!(got["status"]["hard"]["cpu"], "500m");
    // A /status write with a malformed quantity is refused.
    let mut bad = got.clone();
    bad["status"]["used"] = json!({"cpu": "lots"});
    assert_eq!(
        reg.update(&t, "q", Some("status"), bad, &w)
            .await
            .unwrap_err()
            .code(),
        422
    );
}

#[test]
fn the_index_follows_quotas_and_a_replay_swaps_in_whole() {
    let ix = std::sync::Arc::new(super::index::QuotaIndex::default());
    // Before the first replay has ended, every namespace may hold quotas.
    assert!(ix.has_quotas("root", "anything"));
    ix.mark_synced();
    let h = Indexer(ix.clone());
    let kv = |c: &str, ns: &str, name: &str| KeyValue {
        key: kplane_storage::Key::new(c, super::RESOURCE, ns, name),
        value: Default::default(),
        create_revision: 1,
        mod_revision: 1,
    };
    h.on_object(&kv("root", "a", "q1"), false, false);
    h.on_object(&kv("root", "a", "q2"), false, false);
    assert!(ix.has_quotas("root", "a"));
    h.on_object(&kv("root", "a", "q1"), true, false);
    assert!(ix.has_quotas("root", "a"));
    h.on_object(&kv("root", "a", "q2"), true, false);
    assert!(!ix.has_quotas("root", "a"));
    // Other resources are ignored.
    let mut other = kv("root", "b", "x");
    other.key.resource = "/configmaps".into();
    h.on_object(&other, false, false);
    assert!(!ix.has_quotas("root", "b"));
    // A replay keeps answering from the old map until it ends.
    h.on_object(&kv("root", "old", "q"), false, false);
    h.on_resync();
    h.on_object(&kv("root:w", "new", "q"), false, true);
    assert!(ix.has_quotas("root", "old") && !ix.has_quotas("root:w", "new"));
    h.on_synced();
    assert!(!ix.has_quotas("root", "old") && ix.has_quotas("root:w", "new"));
    assert_eq!(ix.namespaces(), 1);
}

#[test]
fn the_queue_map_is_swept_past_its_size() {
    let p = super::admission::ResourceQuotaAdmission::default();
    // Ten times the sweep size, each queue dropped after use: the map stays bounded.
    for i in 0..super::admission::SWEEP_AT * 10 {
        drop(p.queue_of("root", &format!("ns{i}")));
    }
    assert!(p.queues() <= super::admission::SWEEP_AT);
    // A queue in use is kept across a sweep.
    let held = p.queue_of("root", "held");
    for i in 0..super::admission::SWEEP_AT * 2 {
        drop(p.queue_of("root", &format!("more{i}")));
    }
    assert!(std::sync::Arc::ptr_eq(&held, &p.queue_of("root", "held")));
}

/// As on Kubernetes, quota admission runs after the webhooks and policies (a request they
/// refuse is not counted).
#[test]
fn the_quota_plugin_stays_last_when_webhooks_are_added() {
    let t = crate::webhooks::fake::FakeTransport::new(|_, _| async { Err("unused".to_string()) });
    let names = t.admission().plugin_names();
    assert_eq!(
        &names[names.len() - 3..],
        [
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionWebhook",
            "ResourceQuota"
        ]
    );
    let without = t
        .admission()
        .without(&["ResourceQuota".to_string()])
        .unwrap();
    assert!(!without.plugin_names().contains(&"ResourceQuota"));
}

/// Object counts never match a scoped quota (upstream's object-count evaluators match no
/// scope): it refuses no ConfigMap and reports none used. Events and the review kinds are
/// never counted.
#[tokio::test]
async fn scoped_quotas_and_ignored_resources_count_no_objects() {
    let f = fixture().await;
    let reg = &f.reg;
    let cms = create_namespace(reg, "sc").await;
    let mut scoped = quota("scoped", json!({"count/configmaps": "0", "pods": "3"}));
    scoped["spec"]["scopes"] = json!(["NotBestEffort"]);
    let q = make_quota(reg, "sc", scoped).await;
    assert_eq!(q["status"]["used"]["count/configmaps"], "0");
    assert_eq!(q["status"]["used"]["pods"], "0");
    reg.create(&cms, cm("free"), &WriteParams::default())
        .await
        .unwrap();
    make_quota(
        reg,
        "sc",
        quota(
            "events",
            json!({"count/events": "0", "count/events.events.k8s.io": "0"}),
        ),
    )
    .await;
    let ev = target(reg, "", "events", Some("sc"));
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "free", "namespace": "sc"}});
    reg.create(&ev, event, &WriteParams::default())
        .await
        .unwrap();
    let got = stored_quota(reg, "sc", "events").await;
    assert!(got["status"]["used"].get("count/events").is_none(), "{got}");
}

/// A status write that conflicts (the quota changed between the batch's read and its
/// write) reads the quota again and decides once more: no create fails with a conflict and
/// the usage admission records stays exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_racing_other_writes_of_the_quota_are_counted_exactly() {
    let f = fixture().await;
    let reg = f.reg.clone();
    let cms = create_namespace(&reg, "r").await;
    let base = reg
        .storage()
        .count(&Prefix {
            cluster: kplane_storage::Clusters::One("root".into()),
            resource: Some("/configmaps".into()),
            namespace: Some("r".into()),
        })
        .await
        .unwrap();
    make_quota(&reg, "r", quota("q", json!({"count/configmaps": "100000"}))).await;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let written = std::sync::Arc::new(AtomicU64::new(0));
    // Another writer relabels the quota over and over (each write a new resourceVersion).
    let writer = {
        let (reg, stop, written) = (reg.clone(), stop.clone(), written.clone());
        tokio::spawn(async move {
            let t = target(&reg, "", "resourcequotas", Some("r"));
            while !stop.load(Ordering::Relaxed) {
                let mut q = stored_quota(&reg, "r", "q").await;
                let n = written.load(Ordering::Relaxed);
                q["metadata"]["labels"] = json!({"n": n.to_string()});
                if reg
                    .update(&t, "q", None, q, &WriteParams::default())
                    .await
                    .is_ok()
                {
                    written.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        })
    };
    // The creates start once the writer is writing (on a loaded machine it may otherwise
    // not be scheduled before they are all done).
    crate::testing::until("the other writer wrote the quota", || async {
        written.load(Ordering::Relaxed) > 0
    })
    .await;
    let creates: Vec<_> = (0..200)
        .map(|i| {
            let (reg, cms) = (reg.clone(), cms.clone());
            tokio::spawn(async move {
                reg.create(&cms, cm(&format!("x{i}")), &WriteParams::default())
                    .await
                    .map(|_| ())
                    .map_err(|e| e.code())
            })
        })
        .collect();
    for c in creates {
        c.await.unwrap().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    assert_eq!(
        stored_quota(&reg, "r", "q").await["status"]["used"]["count/configmaps"],
        (base + 200).to_string()
    );
}

/// Pods are read a page ([`super::usage::PAGE`]) at a time: a namespace holding 2.5 pages
/// of pods (ten times a usual namespace's few hundred), some terminal, is counted whole.
#[tokio::test]
async fn pod_usage_is_counted_across_pages() {
    let f = fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "p").await;
    let pods = target(reg, "", "pods", Some("p"));
    let n = super::usage::PAGE * 5 / 2;
    let objs: Vec<Value> = (0..n)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}")},
                "spec": {"containers": [{"name": "c", "image": "x",
                    "resources": {"requests": {"cpu": "10m"}}}]}})
        })
        .collect();
    crate::testing::create_all(reg, &pods, objs).await;
    // A create keeps no status: the terminal phases are written through `/status`.
    for i in (0..n).step_by(10) {
        let name = format!("p{i}");
        let mut pod: Value = serde_json::from_slice(&reg.get(&pods, &name).await.unwrap()).unwrap();
        pod["status"] = json!({"phase": "Succeeded"});
        reg.update(&pods, &name, Some("status"), pod, &WriteParams::default())
            .await
            .unwrap();
    }
    let live = n - n / 10;
    let q = make_quota(
        reg,
        "p",
        quota(
            "pods",
            json!({"pods": "100000", "count/pods": "100000", "requests.cpu": "1000"}),
        ),
    )
    .await;
    assert_eq!(q["status"]["used"]["pods"], live.to_string());
    // `count/pods` counts every stored pod, terminal ones too (upstream's PodUsageFunc).
    assert_eq!(q["status"]["used"]["count/pods"], n.to_string());
    assert_eq!(
        q["status"]["used"]["requests.cpu"],
        crate::quantity::Quantity::parse(&format!("{}m", live * 10))
            .unwrap()
            .to_string()
    );
}

/// A scoped quota counts the pods its scopes and scope selector match, as upstream's pod
/// evaluator: `BestEffort` by QoS class, `Terminating` by `activeDeadlineSeconds`,
/// `PriorityClass` by class name, all of a quota's requirements at once.
#[tokio::test]
async fn scoped_quotas_count_the_pods_their_scopes_match() {
    let f = fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "sp").await;
    let pods = target(reg, "", "pods", Some("sp"));
    let pod = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["containers"][0]["name"] = json!("c");
        spec["containers"][0]["image"] = json!("x");
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    };
    let cpu = json!({"requests": {"cpu": "100m"}});
    crate::testing::create_all(
        reg,
        &pods,
        vec![
            pod("best", json!({"containers": [{}]})),
            pod("burst", json!({"containers": [{"resources": cpu}]})),
            pod(
                "deadline",
                json!({"activeDeadlineSeconds": 30, "containers": [{"resources": cpu}]}),
            ),
            pod(
                "high",
                json!({"priorityClassName": "high", "containers": [{"resources": cpu}]}),
            ),
        ],
    )
    .await;
    let scoped = |name: &str, hard: Value, spec: Value| {
        let mut q = quota(name, hard);
        for (k, v) in spec.as_object().unwrap() {
            q["spec"][k] = v.clone();
        }
        q
    };
    let hard = json!({"pods": "10", "requests.cpu": "10"});
    let cases = [
        ("best-effort", json!({"scopes": ["BestEffort"]}), "1", "0"),
        (
            "not-best-effort",
            json!({"scopes": ["NotBestEffort"]}),
            "3",
            "300m",
        ),
        (
            "terminating",
            json!({"scopes": ["Terminating"]}),
            "1",
            "100m",
        ),
        (
            "not-terminating-burstable",
            json!({"scopes": ["NotTerminating", "NotBestEffort"]}),
            "2",
            "200m",
        ),
        (
            "high",
            json!({"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
            "1",
            "100m",
        ),
        ("all", json!({}), "4", "300m"),
    ];
    for (name, spec, pods_used, cpu_used) in cases {
        // BestEffort quotas may limit only pods (upstream's validation).
        let hard = if name == "best-effort" {
            json!({"pods": "10"})
        } else {
            hard.clone()
        };
        let q = make_quota(reg, "sp", scoped(name, hard, spec)).await;
        assert_eq!(q["status"]["used"]["pods"], pods_used, "{name}: {q}");
        if name != "best-effort" {
            assert_eq!(q["status"]["used"]["requests.cpu"], cpu_used, "{name}: {q}");
        }
    }
}

#[tokio::test]
async fn claims_are_counted_and_their_storage_requests_are_not() {
    let f = fixture().await;
    let reg = &f.reg;
    let claims = create_namespace(reg, "pvcq").await;
    let claims = crate::Target {
        rt: target(reg, "", "persistentvolumeclaims", Some("pvcq")).rt,
        ..claims
    };
    let claim = |name: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
               "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}})
    };
    let w = WriteParams::default();
    reg.create(&claims, claim("first"), &w).await.unwrap();
    let q = make_quota(
        reg,
        "pvcq",
        quota(
            "claims",
            json!({"persistentvolumeclaims": "2", "count/persistentvolumeclaims": "5",
                   "requests.storage": "10Gi"}),
        ),
    )
    .await;
    let used = &q["status"]["used"];
    assert_eq!(used["persistentvolumeclaims"], "1");
    assert_eq!(used["count/persistentvolumeclaims"], "1");
    assert_eq!(used["requests.storage"], "0");
    reg.create(&claims, claim("second"), &w).await.unwrap();
    let e = reg.create(&claims, claim("third"), &w).await.unwrap_err();
    assert_eq!(e.code(), 403);
    assert_eq!(
        e.0.message,
        "persistentvolumeclaims \"third\" is forbidden: exceeded quota: claims, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=2, limited: persistentvolumeclaims=2"
    );
    assert!(
        crate::resource_quota::controller::sync_resource_quotas(reg, &root(), "pvcq")
            .await
            .is_ok()
    );
    let used = stored_quota(reg, "pvcq", "claims").await["status"]["used"].clone();
    assert_eq!(
        used["persistentvolumeclaims"], "2",
        "the recount keeps them"
    );
}
