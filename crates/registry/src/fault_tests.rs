//! What the registry promises when storage fails, checked over the fault-injecting store
//! (`kplane_storage::faults::Faulty` around the in-memory one): a write the store refuses
//! is a Status with the storage error mapped as `storage_error` maps it and leaves nothing
//! stored; a write that is durable but reported failed (the ambiguous commit) leaves the
//! derived state right once the informer has seen it; a controller item whose write fails
//! is retried until it goes through.

use std::sync::Arc;

use kplane_storage::faults::{Fault, Faulty, Op};
use kplane_storage::{Error, Key, Storage};
use kplane_types::{ClusterName, ClusterScope, RequestInfo, StatusReason, UserInfo, Verb};
use serde_json::{json, Value};

use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::options::WriteParams;
use crate::rbac::Verdict;
use crate::testing::{configmap, create_namespace, fixture_over, memory_store, target, until};
use crate::Registry;

fn faulty() -> Arc<Faulty> {
    Faulty::new(memory_store())
}

/// A create the store fails answers the Status kube-apiserver gives for that storage
/// error, stores nothing, and leaves the name free: the same create succeeds once the
/// store works again.
#[tokio::test]
async fn a_create_the_store_fails_is_a_status_and_stores_nothing() {
    let store = faulty();
    let f = fixture_over(store.clone()).await;
    let t = create_namespace(&f.reg, "d").await;
    type MakeError = fn() -> Error;
    let cases: [(MakeError, u16, StatusReason, &str); 3] = [
        (
            || Error::Backend("disk full".into()),
            500,
            StatusReason::InternalError,
            "disk full",
        ),
        (
            || Error::Timeout("no reply in 5s".into()),
            504,
            StatusReason::Timeout,
            "no reply in 5s",
        ),
        (
            || Error::ShuttingDown,
            503,
            StatusReason::ServiceUnavailable,
            "shutting down",
        ),
    ];
    for (i, (error, code, reason, message)) in cases.into_iter().enumerate() {
        let name = format!("cm-{i}");
        let before = store.current_revision();
        store.fail_next(&Op::WRITES, 1, error);
        let e = f
            .reg
            .create(&t, configmap(&name, "g"), &WriteParams::default())
            .await
            .unwrap_err();
        assert_eq!(
            store.injected(Op::Put) + store.injected(Op::WriteBatch),
            i as u64 + 1
        );
        store.clear();
        assert_eq!((e.code(), &e.0.reason), (code, &reason), "{e:?}");
        assert!(e.0.message.contains(message), "{}", e.0.message);
        if code == 504 {
            assert!(e.0.retry_after.is_some(), "a timeout says when to retry");
        }
        assert_eq!(store.current_revision(), before, "nothing was written");
        let key = Key::new("root", "/configmaps", "d", name.as_str());
        assert!(store.inner().get(&key).await.unwrap().is_none());
        assert_eq!(f.reg.get(&t, &name).await.unwrap_err().code(), 404);
        f.reg
            .create(&t, configmap(&name, "g"), &WriteParams::default())
            .await
            .unwrap();
    }
}

/// A RoleBinding whose create is durable but reported failed (a timeout after the commit)
/// is not in the RBAC cache the write path keeps (the create did not succeed), but the
/// informer sees the stored binding and the cache follows: the grant holds, and the
/// client's retry finds the binding there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_commit_reaches_the_derived_state_through_the_informer() {
    let store = faulty();
    let f = fixture_over(store.clone()).await;
    let informer = tokio::spawn(crate::derived::informer(&f.reg).run());
    let rbac = |plural: &str| {
        let rt = f
            .reg
            .builtin_catalog()
            .get("rbac.authorization.k8s.io", "v1", plural)
            .cloned()
            .unwrap();
        crate::Target::new(&ClusterName::root(), rt, Some("default".into()))
    };
    let alice = UserInfo {
        username: "alice".into(),
        ..Default::default()
    };
    let get = RequestInfo {
        cluster: ClusterScope::One(ClusterName::root()),
        path: String::new(),
        verb: Verb::parse("get"),
        is_resource_request: true,
        api_group: String::new(),
        api_version: "v1".into(),
        namespace: Some("default".into()),
        resource: "configmaps".into(),
        subresource: None,
        name: Some("x".into()),
    };
    let allowed =
        || async { matches!(f.reg.rbac_authorize(&alice, &get).await, Verdict::Allow(_)) };
    let w = WriteParams::default();
    let role = json!({"metadata": {"name": "r", "namespace": "default"},
        "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]});
    f.reg.create(&rbac("roles"), role, &w).await.unwrap();
    // The cache holds the layer without the binding.
    assert!(!allowed().await);

    for op in Op::WRITES {
        store.inject(
            op,
            Fault::commit_then_fail(|| Error::Timeout("no reply".into())).times(1),
        );
    }
    let binding = json!({"metadata": {"name": "rb", "namespace": "default"},
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice"}]});
    let e = f
        .reg
        .create(&rbac("rolebindings"), binding.clone(), &w)
        .await
        .unwrap_err();
    store.clear();
    assert_eq!(e.code(), 504, "{e:?}");
    let key = Key::new(
        "root",
        "rbac.authorization.k8s.io/rolebindings",
        "default",
        "rb",
    );
    assert!(store.inner().get(&key).await.unwrap().is_some(), "durable");

    until(
        "the informer brings the binding into the RBAC cache",
        allowed,
    )
    .await;
    let retry = f.reg.create(&rbac("rolebindings"), binding, &w).await;
    assert_eq!(retry.unwrap_err().code(), 409, "the retry finds it stored");
    let stored: Value =
        serde_json::from_slice(&f.reg.get(&rbac("rolebindings"), "rb").await.unwrap()).unwrap();
    assert_eq!(stored["subjects"][0]["name"], "alice");
    informer.abort();
}

/// A namespace's deletion (its controller item empties it and removes its finalizer) whose
/// writes fail is retried ([`crate::controllers::runtime::RETRY_EVERY`]) and completes once the
/// store takes writes again; until then the namespace is still there, Terminating.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_item_whose_writes_fail_is_retried_until_they_succeed() {
    let store = faulty();
    let (_tx, shutdown) = tokio::sync::watch::channel(false);
    let catalog = Arc::new(Catalog::new(builtin()));
    let (reg, queue) = Registry::new(store.clone(), catalog, String::new(), shutdown);
    reg.ensure_cluster(&ClusterName::root()).await.unwrap();
    let cms = create_namespace(&reg, "doomed").await;
    for i in 0..3 {
        reg.create(
            &cms,
            configmap(&format!("cm-{i}"), "g"),
            &WriteParams::default(),
        )
        .await
        .unwrap();
    }
    let nst = target(&reg, "", "namespaces", None);
    reg.delete(&nst, "doomed", &Default::default())
        .await
        .unwrap();

    // The item is queued; every write fails from the moment the worker starts.
    for op in Op::WRITES {
        store.inject(op, Fault::fail(|| Error::Backend("disk full".into())));
    }
    let worker = tokio::spawn(crate::controllers::run_worker(reg.clone(), queue));
    let failed = || Op::WRITES.iter().map(|op| store.injected(*op)).sum::<u64>();
    let writes = || Op::WRITES.iter().map(|op| store.calls(*op)).sum::<u64>();
    until("the item's first write failed", || async { failed() > 0 }).await;
    let ns: Value = serde_json::from_slice(&reg.get(&nst, "doomed").await.unwrap()).unwrap();
    assert_eq!(ns["status"]["phase"], "Terminating");
    let calls = writes();
    store.clear();

    until("the namespace is gone", || async {
        reg.get(&nst, "doomed")
            .await
            .is_err_and(|e| e.code() == 404)
    })
    .await;
    for i in 0..3 {
        let key = Key::new("root", "/configmaps", "doomed", format!("cm-{i}"));
        assert!(store.inner().get(&key).await.unwrap().is_none());
    }
    assert!(
        writes() > calls,
        "the item ran again after its writes failed"
    );
    worker.abort();
}

/// An update without a resourceVersion whose commit loses to another write (the write
/// lands between its read and its commit, so the store's compare-and-swap fails) reads the
/// object again and is applied to it, as kube-apiserver's `GuaranteedUpdate` retries; an
/// update with a resourceVersion is an optimistic lock and answers 409 instead, and so does
/// a conflict while the object has not moved. (Upstream's "should be able to update and
/// delete ResourceQuota" updates without one while the quota controller writes status.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconditional_update_that_loses_a_race_is_retried() {
    let store = faulty();
    let f = fixture_over(store.clone()).await;
    let t = create_namespace(&f.reg, "u").await;
    f.reg
        .create(&t, configmap("cm", "g"), &WriteParams::default())
        .await
        .unwrap();
    let body = |data: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "cm"}, "data": {"k": data}})
    };
    let stored = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).unwrap();

    // The unconditional update's commit waits; meanwhile another writer commits.
    let puts = store.calls(Op::Put);
    store.inject(
        Op::Put,
        Fault::delay(std::time::Duration::from_secs(3)).times(1),
    );
    let reg = f.reg.clone();
    let (t2, racing) = (t.clone(), body("unconditional"));
    let slow = tokio::spawn(async move {
        reg.update(&t2, "cm", None, racing, &WriteParams::default())
            .await
    });
    until("the unconditional update's commit is under way", || {
        let started = store.calls(Op::Put) > puts;
        async move { started }
    })
    .await;
    let current = stored(&f.reg.get(&t, "cm").await.unwrap());
    let mut other = body("other");
    other["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    f.reg
        .update(&t, "cm", None, other, &WriteParams::default())
        .await
        .unwrap();
    let (out, created) = slow.await.unwrap().unwrap();
    assert!(!created);
    assert_eq!(
        store.calls(Op::Put) - puts,
        3,
        "lost once, read again, committed"
    );
    assert_eq!(stored(&out)["data"]["k"], "unconditional");
    let now = stored(&f.reg.get(&t, "cm").await.unwrap());
    assert_eq!(now["data"]["k"], "unconditional");

    // with the resourceVersion the client read, a lost race is the client's conflict
    let mut locked = body("locked");
    locked["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let e = f
        .reg
        .update(&t, "cm", None, locked, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!((e.code(), &e.0.reason), (409, &StatusReason::Conflict));

    // a conflict while the object has not moved is the answer, not retried
    let puts = store.calls(Op::Put);
    store.fail_next(&[Op::Put], 1, || Error::Conflict { current: 0 });
    let e = f
        .reg
        .update(&t, "cm", None, body("never"), &WriteParams::default())
        .await
        .unwrap_err();
    store.clear();
    assert_eq!((e.code(), &e.0.reason), (409, &StatusReason::Conflict));
    assert_eq!(store.calls(Op::Put) - puts, 1, "not retried");
    let now = stored(&f.reg.get(&t, "cm").await.unwrap());
    assert_eq!(now["data"]["k"], "unconditional");
}

/// An unconditional update that loses every race (another writer commits while each of
/// its commits waits) gives up after its retries with the 409, having tried exactly
/// `UPDATE_RETRIES` times more than once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconditional_update_that_keeps_losing_gives_up_after_its_retries() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let store = faulty();
    let f = fixture_over(store.clone()).await;
    let t = create_namespace(&f.reg, "u").await;
    f.reg
        .create(&t, configmap("cm", "g"), &WriteParams::default())
        .await
        .unwrap();
    let key = Key::new("root", "/configmaps", "u", "cm");
    store.inject(Op::Put, Fault::delay(std::time::Duration::from_secs(1)));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (inner, key, stop) = (store.inner().clone(), key.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let kv = inner.get(&key).await.unwrap().unwrap();
                let value = kv.value.to_vec();
                inner
                    .put(
                        key.clone(),
                        kplane_storage::Precondition::MustExist,
                        Box::new(move |_| Ok(value)),
                    )
                    .await
                    .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    let puts = store.calls(Op::Put);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cm"}, "data": {"k": "never"}});
    let e = f
        .reg
        .update(&t, "cm", None, body, &WriteParams::default())
        .await
        .unwrap_err();
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    store.clear();
    assert_eq!((e.code(), &e.0.reason), (409, &StatusReason::Conflict));
    assert_eq!(
        store.calls(Op::Put) - puts,
        crate::write::UPDATE_RETRIES as u64 + 1
    );
    let now: Value = serde_json::from_slice(&f.reg.get(&t, "cm").await.unwrap()).unwrap();
    assert_eq!(now["data"]["k"], "v");
}
