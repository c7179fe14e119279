//! Export and import through the registry: round trips above every batch size, each kind
//! of refused archive leaving nothing behind, replace and the floor (410), hidden staging,
//! and crashes between the import's steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kplane_archive::{Header, Record, Writer, FORMAT_VERSION};
use kplane_storage::{BatchWrite, Key, Precondition, Prefix, Storage};
use kplane_types::{ClusterName, ClusterScope};
use serde_json::{json, Value};

use super::journal::{Journal, Step};
use super::{EXPORT_CHUNK, IMPORT_BATCH};
use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::options::{ListParams, WriteParams};
use crate::{Registry, Target, WatchType};

fn name(s: &str) -> ClusterName {
    ClusterName::parse(s).unwrap()
}

struct Env {
    dir: tempfile::TempDir,
    storage: Arc<dyn Storage>,
    reg: Arc<Registry>,
    _tx: tokio::sync::watch::Sender<bool>,
}

/// A registry over `storage` as after a restart: the journal resolved, the state loaded.
pub(super) async fn restart(
    storage: Arc<dyn Storage>,
) -> (Arc<Registry>, tokio::sync::watch::Sender<bool>) {
    let (tx, shutdown) = tokio::sync::watch::channel(false);
    let (reg, _queue) = Registry::new(
        storage,
        Arc::new(Catalog::new(builtin())),
        String::new(),
        shutdown,
    );
    reg.set_external_url("https://kplane.test:6443");
    reg.load_cluster_state().await.unwrap();
    reg.ensure_cluster(&ClusterName::root()).await.unwrap();
    (reg, tx)
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = crate::testing::memory_store();
    let (reg, _tx) = restart(storage.clone()).await;
    Env {
        dir,
        storage,
        reg,
        _tx,
    }
}

fn configmaps(reg: &Registry, cluster: &str) -> Target {
    let rt = reg
        .builtin_catalog()
        .get("", "v1", "configmaps")
        .unwrap()
        .clone();
    Target::new(&name(cluster), rt, Some("default".into()))
}

/// A stored-form ConfigMap with everything an import must keep.
fn stored_cm(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{i:05}"), "namespace": "default",
                        "uid": format!("00000000-0000-0000-0000-{i:012}"),
                        "creationTimestamp": "2025-01-02T03:04:05Z",
                        "resourceVersion": "7", "finalizers": ["example.com/keep"],
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                            "name": "owner", "uid": "11111111-0000-0000-0000-000000000000"}],
                        "managedFields": [{"manager": "m", "operation": "Update",
                            "apiVersion": "v1", "fieldsType": "FieldsV1",
                            "fieldsV1": {"f:data": {}}}]},
           "data": {"v": i.to_string()}})
}

/// Bootstraps `cluster` and stores `n` ConfigMaps in it (directly, in batches).
async fn seed(env: &Env, cluster: &str, n: usize) {
    env.reg.ensure_cluster(&name(cluster)).await.unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let writes = chunk
            .iter()
            .map(|i| {
                let v = stored_cm(*i);
                BatchWrite {
                    key: Key::new(cluster, "/configmaps", "default", format!("cm-{i:05}")),
                    delete: false,
                    precondition: Precondition::MustNotExist,
                    encode: Box::new(move |rev| {
                        super::common::with_resource_version(&v.to_string().into_bytes(), rev)
                    }),
                }
            })
            .collect();
        for r in env.storage.write_batch(writes).await {
            r.unwrap();
        }
    }
}

async fn export_to(
    reg: &Registry,
    cluster: &str,
    recursive: bool,
    compress: bool,
    path: &Path,
) -> u64 {
    let mut s = reg
        .export(&name(cluster), recursive, compress)
        .await
        .unwrap();
    let count = s.header().object_count;
    let mut out = Vec::new();
    let mut chunks = 0;
    while let Some(c) = s.next_chunk().await.unwrap() {
        assert!(
            c.len() < EXPORT_CHUNK + 64 * 1024,
            "chunk of {} bytes",
            c.len()
        );
        out.extend_from_slice(&c);
        chunks += 1;
    }
    // Chunks are about EXPORT_CHUNK each: a large archive comes in many.
    assert!(
        chunks > out.len() / (EXPORT_CHUNK + 64 * 1024),
        "{chunks} chunks"
    );
    if out.len() > 4 * EXPORT_CHUNK {
        assert!(
            chunks >= out.len() / EXPORT_CHUNK,
            "{chunks} chunks of {} bytes",
            out.len()
        );
    }
    std::fs::write(path, out).unwrap();
    count
}

/// The objects of a cluster, without their resourceVersions, by key (resource, ns, name).
async fn contents(storage: &dyn Storage, cluster: &str) -> Vec<(String, String, String, Value)> {
    let res = storage
        .list(&Prefix::cluster(cluster), &Default::default(), None)
        .await
        .unwrap();
    res.items
        .into_iter()
        .filter(|kv| kv.key.resource != crate::cluster_states::STATE_RESOURCE)
        .map(|kv| {
            let mut v: Value = serde_json::from_slice(&kv.value).unwrap();
            v["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
            (kv.key.resource, kv.key.namespace, kv.key.name, v)
        })
        .collect()
}

/// Every cluster holding keys (pseudo-clusters included).
async fn all_clusters(storage: &dyn Storage) -> Vec<String> {
    storage.clusters(None, 10_000).await.unwrap()
}

/// Round trips above every batch size (import batch, export page, list batch) and ten
/// times it: the target holds exactly the source's objects, uids, finalizers, owner
/// references and managedFields kept, resourceVersions the target's own; its Workspace
/// exists in the parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_import_keeps_every_object() {
    for n in [IMPORT_BATCH * 4 + 177, 12_010] {
        let env = env().await;
        seed(&env, "root:src", n).await;
        let file = env.dir.path().join("a.karc");
        // The large one plain, so that it spans many chunks.
        let compress = n < 10_000;
        let count = export_to(&env.reg, "root:src", false, compress, &file).await;
        // 4 namespaces, their ServiceAccounts and root-CA ConfigMaps are not stored by a
        // bare bootstrap in this test (no namespace controller), so count what is stored.
        let want = contents(&*env.storage, "root:src").await;
        assert_eq!(count as usize, want.len(), "n = {n}");
        let before = env.storage.current_revision();
        let sum = env
            .reg
            .import(&file, &name("root:dst"), false)
            .await
            .unwrap();
        assert_eq!(sum.objects as usize, want.len());
        assert_eq!(sum.clusters, ["root:dst"]);
        assert!(sum.revision > before);
        let got = contents(&*env.storage, "root:dst").await;
        assert_eq!(got, want, "n = {n}");
        assert!(env.reg.cluster_exists(&name("root:dst")));
        // resourceVersions are the target's.
        let kv = env
            .storage
            .get(&Key::new("root:dst", "/configmaps", "default", "cm-00000"))
            .await
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_slice(&kv.value).unwrap();
        assert_eq!(
            v["metadata"]["resourceVersion"],
            kv.mod_revision.to_string()
        );
        assert!(kv.mod_revision > before);
        // The Workspace in the parent.
        let ws = crate::testing::target(&env.reg, "tenancy.kplane.io", "workspaces", None);
        env.reg.get(&ws, "dst").await.unwrap();
        // Nothing left of the import's machinery.
        assert!(all_clusters(&*env.storage)
            .await
            .iter()
            .all(|c| !c.starts_with('~')));
    }
}

/// A recursive export re-rooted with `--as`: descendants land under the new path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_archives_are_re_rooted() {
    let env = env().await;
    seed(&env, "root:a", 3).await;
    seed(&env, "root:a:b", 2).await;
    seed(&env, "root:a-c", 1).await;
    let file = env.dir.path().join("r.karc");
    env.reg.set_server_version("v1.32.6-kplane.0.1.0+test");
    let s = env.reg.export(&name("root:a"), true, false).await.unwrap();
    let h = s.header();
    assert_eq!(h.kplane_version, "v1.32.6-kplane.0.1.0+test");
    assert_eq!(h.source_server, "https://kplane.test:6443");
    assert!(h.recursive && h.cluster == "root:a");
    export_to(&env.reg, "root:a", true, false, &file).await;
    let sum = env.reg.import(&file, &name("root:x"), false).await.unwrap();
    assert_eq!(sum.clusters, ["root:x", "root:x:b"]);
    assert_eq!(
        contents(&*env.storage, "root:x:b").await,
        contents(&*env.storage, "root:a:b").await
    );
    assert!(env.reg.cluster_exists(&name("root:x:b")));
    assert!(!env.reg.cluster_exists(&name("root:x-c")));
}

/// Writes a plain archive of `records` for `cluster`.
fn archive_of(path: &Path, cluster: &str, records: &[Record]) {
    let header = Header {
        format_version: FORMAT_VERSION,
        kplane_version: "test".into(),
        source_server: String::new(),
        cluster: cluster.into(),
        recursive: false,
        revision: 1,
        object_count: records.len() as u64,
        created: "2026-01-01T00:00:00Z".into(),
        decrypted: Vec::new(),
    };
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &header, false).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
}

fn record(resource: &str, ns: &str, name: &str, value: Value) -> Record {
    Record {
        cluster: "root:src".into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
        value: value.to_string().into_bytes(),
    }
}

/// Each kind of bad archive is refused with its code and a message naming the problem,
/// and nothing is written: the store's clusters and revision are unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_archives_are_refused_before_anything_is_written() {
    let env = env().await;
    let good = env.dir.path().join("good.karc");
    let cm = |i| {
        record(
            "/configmaps",
            "default",
            &format!("cm-{i:05}"),
            stored_cm(i),
        )
    };
    archive_of(&good, "root:src", &[cm(1), cm(2)]);
    let bytes = std::fs::read(&good).unwrap();
    let dir: PathBuf = env.dir.path().into();
    let case = |file: &str, data: Vec<u8>| {
        let p = dir.join(file);
        std::fs::write(&p, data).unwrap();
        p
    };
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    let mut cases: Vec<(PathBuf, u16, &str)> = vec![
        (case("flipped", flipped), 400, ""),
        (
            case("truncated", bytes[..bytes.len() - 10].to_vec()),
            400,
            "",
        ),
        (case("empty", Vec::new()), 400, ""),
    ];
    let bad = |file: &str, rec: Record| {
        let p = dir.join(file);
        archive_of(&p, "root:src", &[cm(1), rec]);
        p
    };
    let mut wrong_name = stored_cm(2);
    wrong_name["metadata"]["name"] = json!("other");
    cases.push((
        bad(
            "name",
            record("/configmaps", "default", "cm-00002", wrong_name),
        ),
        400,
        "metadata.name",
    ));
    cases.push((
        bad(
            "ns",
            record("/configmaps", "kube-system", "cm-00002", stored_cm(2)),
        ),
        400,
        "metadata.namespace",
    ));
    let mut wrong_kind = stored_cm(2);
    wrong_kind["kind"] = json!("Secret");
    cases.push((
        bad(
            "kind",
            record("/configmaps", "default", "cm-00002", wrong_kind),
        ),
        400,
        "kind",
    ));
    cases.push((
        bad(
            "unserved",
            record(
                "example.com/widgets",
                "default",
                "w",
                json!({"kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}),
            ),
        ),
        400,
        "not served",
    ));
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": "widgets.example.com"},
                     "spec": {"group": "example.com", "scope": "Namespaced",
                              "names": {"plural": "widgets", "kind": "Widget"}, "versions": []}});
    let p = dir.join("crd");
    archive_of(
        &p,
        "root:src",
        &[record(
            kplane_archive::CRD_RESOURCE,
            "",
            "widgets.example.com",
            crd,
        )],
    );
    cases.push((p, 422, "CustomResourceDefinition"));

    env.reg.ensure_cluster(&name("root:kept")).await.unwrap();
    let before = all_clusters(&*env.storage).await;
    for (path, code, says) in cases {
        let rev = env.storage.current_revision();
        for target in ["root:new", "root:kept"] {
            let e = env
                .reg
                .import(&path, &name(target), true)
                .await
                .unwrap_err();
            assert_eq!(e.code(), code, "{}: {}", path.display(), e.0.message);
            assert!(
                e.0.message.contains(says),
                "{}: {}",
                path.display(),
                e.0.message
            );
            if code == 400 && !says.is_empty() {
                assert!(e.0.message.contains("archive record 2"), "{}", e.0.message);
            }
        }
        assert_eq!(env.storage.current_revision(), rev, "{}", path.display());
        assert_eq!(all_clusters(&*env.storage).await, before);
        assert!(!env.reg.cluster_exists(&name("root:new")));
    }
    // And the good one imports.
    env.reg
        .import(&good, &name("root:new"), false)
        .await
        .unwrap();
}

/// A non-empty target is refused without replace (409) and its parent must exist (404);
/// an empty one (only its bootstrap, with or without its creator's binding) is imported
/// into.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_must_be_new_or_empty_unless_replaced() {
    let env = env().await;
    seed(&env, "root:src", 5).await;
    let file = env.dir.path().join("a.karc");
    export_to(&env.reg, "root:src", false, true, &file).await;
    let e = env
        .reg
        .import(&file, &name("root:src"), false)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409, "{}", e.0.message);
    assert_eq!(e.0.reason, kplane_types::StatusReason::AlreadyExists);
    let e = env
        .reg
        .import(&file, &name("root:nope:x"), false)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 404);
    assert_eq!(e.0.message, "logical cluster \"root:nope\" does not exist");
    env.reg.ensure_cluster(&name("root:empty")).await.unwrap();
    env.reg
        .import(&file, &name("root:empty"), false)
        .await
        .unwrap();
    assert_eq!(
        contents(&*env.storage, "root:empty").await,
        contents(&*env.storage, "root:src").await
    );
    // A Workspace made by an ordinary user also holds its creator's binding: still empty.
    let owned = name("root:owned");
    env.reg.ensure_cluster(&owned).await.unwrap();
    let ws = serde_json::json!({"metadata": {"name": "owned", "annotations": {
        crate::rbac::owner::OWNER_ANNOTATION: "alice"}}});
    env.reg
        .bind_workspace_owner(&owned, &ws, "test")
        .await
        .unwrap();
    env.reg.import(&file, &owned, false).await.unwrap();
}

/// Replacing: the old content is gone, the new one is there; lists, continues and
/// watches from a resourceVersion below the floor are 410 (also across restarts), and a
/// watch running across the flip ends with a 410 ERROR event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_sets_a_floor_that_expires_older_resource_versions() {
    let env = env().await;
    seed(&env, "root:src", 3).await;
    let file = env.dir.path().join("a.karc");
    export_to(&env.reg, "root:src", false, true, &file).await;
    env.reg.ensure_cluster(&name("root:dst")).await.unwrap();
    let t = configmaps(&env.reg, "root:dst");
    let old = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old"}});
    env.reg
        .create(&t, old, &WriteParams::default())
        .await
        .unwrap();
    let old_rv = env.storage.current_revision();
    let mut watch = env
        .reg
        .watch(
            &t,
            &ListParams {
                resource_version: Some(old_rv.to_string()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let all = Target {
        cluster: ClusterScope::Wildcard,
        ..t.clone()
    };
    let mut wild = env
        .reg
        .watch(
            &all,
            &ListParams {
                resource_version: Some(old_rv.to_string()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let sum = env
        .reg
        .import(&file, &name("root:dst"), true)
        .await
        .unwrap();
    assert!(env.reg.get(&t, "old").await.is_err());
    env.reg.get(&t, "cm-00001").await.unwrap();
    for w in [&mut watch, &mut wild] {
        let item = w.next().await.unwrap();
        assert_eq!(item.ty, WatchType::Error);
        let s: Value = serde_json::from_slice(&item.object).unwrap();
        assert_eq!(s["code"], 410, "{s}");
        assert!(w.next().await.is_none());
    }
    let check = |reg: Arc<Registry>, t: Target| async move {
        let p = ListParams {
            resource_version: Some(old_rv.to_string()),
            ..Default::default()
        };
        let e = reg.list(&t, &p).await.unwrap_err();
        assert_eq!(e.code(), 410);
        assert_eq!(
            e.0.message,
            format!("too old resource version: {old_rv} ({})", sum.revision)
        );
        let mut w = reg.watch(&t, &p).await.unwrap();
        assert_eq!(w.next().await.unwrap().ty, WatchType::Error);
        // From the floor on, reads work.
        let p = ListParams {
            resource_version: Some(sum.revision.to_string()),
            ..Default::default()
        };
        reg.list(&t, &p).await.unwrap().collect().await.unwrap();
    };
    check(env.reg.clone(), t.clone()).await;
    check(env.reg.clone(), all.clone()).await;
    // Another cluster's reads are not affected.
    let other = configmaps(&env.reg, "root:src");
    let p = ListParams {
        resource_version: Some(old_rv.to_string()),
        ..Default::default()
    };
    env.reg
        .list(&other, &p)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let (again, _tx) = restart(env.storage.clone()).await;
    check(again, t).await;
}

/// Staging pseudo-clusters and clusters being imported are invisible to wildcard lists
/// and to the start-up load of existing clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staging_and_importing_clusters_are_hidden() {
    let env = env().await;
    seed(&env, "root:seen", 2).await;
    for c in ["~import:root:x", "root:importing"] {
        let v = stored_cm(1);
        let w = BatchWrite {
            key: Key::new(c, "/configmaps", "default", "cm-00001"),
            delete: false,
            precondition: Precondition::MustNotExist,
            encode: Box::new(move |rev| {
                super::common::with_resource_version(&v.to_string().into_bytes(), rev)
            }),
        };
        env.storage
            .write_batch(vec![w])
            .await
            .pop()
            .unwrap()
            .unwrap();
    }
    env.reg.cluster_table().set_phase(
        "root:importing",
        Some(crate::cluster_states::Phase::Importing),
    );
    let t = configmaps(&env.reg, "root");
    for scope in [
        ClusterScope::Wildcard,
        ClusterScope::subtree(ClusterName::root()),
    ] {
        let all = Target {
            cluster: scope,
            namespace: None,
            ..t.clone()
        };
        for limit in [None, Some(1000)] {
            let p = ListParams {
                limit,
                ..Default::default()
            };
            let mut page = env.reg.list(&all, &p).await.unwrap();
            let mut clusters = Vec::new();
            while let Some(b) = page.next_batch().await.unwrap() {
                for o in b {
                    let v: Value = serde_json::from_slice(&o).unwrap();
                    clusters.push(
                        v["metadata"]["annotations"]["kplane.io/cluster"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    );
                }
            }
            assert!(clusters.contains(&"root:seen".to_string()), "{clusters:?}");
            assert!(
                clusters.iter().all(|c| c == "root:seen" || c == "root"),
                "{clusters:?}"
            );
        }
    }
    let (again, _tx) = restart(env.storage.clone()).await;
    assert!(again.cluster_exists(&name("root:seen")));
    assert!(
        again.cluster_exists(&name("root:importing")),
        "holds keys and no journal"
    );
    assert_eq!(again.existing_descendants(&ClusterName::root()).len(), 2);
}

/// A crash before the point of no return rolls back at start-up (a new target and the
/// staging of a replaced one are gone, the replaced target keeps its old content); a crash
/// after it rolls forward from every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_imports_are_resolved_at_start_up() {
    // Rolled back: stopped after the write pass, before the point of no return.
    for replace in [false, true] {
        let env = env().await;
        seed(&env, "root:src", IMPORT_BATCH + 10).await;
        let file = env.dir.path().join("a.karc");
        export_to(&env.reg, "root:src", false, true, &file).await;
        if replace {
            seed(&env, "root:dst", 4).await;
        }
        let old = contents(&*env.storage, "root:dst").await;
        let (mut j, claim, _) = env
            .reg
            .stage_import(&file, &name("root:dst"), replace)
            .await
            .unwrap();
        j.step = Step::Writing;
        env.reg.put_journal(&mut j, false).await.unwrap();
        // The import's process is gone: its claim with it.
        drop(claim);
        let (again, _tx) = restart(env.storage.clone()).await;
        assert_eq!(
            contents(&*env.storage, "root:dst").await,
            old,
            "replace {replace}"
        );
        assert_eq!(again.cluster_exists(&name("root:dst")), replace);
        assert!(all_clusters(&*env.storage)
            .await
            .iter()
            .all(|c| !c.starts_with('~')));
    }
    // Rolled forward: stopped once each step is recorded.
    for stop in [
        Step::DeletingOld,
        Step::Copying,
        Step::DroppingStaging,
        Step::Finishing,
    ] {
        let env = env().await;
        seed(&env, "root:src", IMPORT_BATCH + 10).await;
        let file = env.dir.path().join("a.karc");
        export_to(&env.reg, "root:src", false, true, &file).await;
        seed(&env, "root:dst", 4).await;
        let (j, claim, _) = env
            .reg
            .stage_import(&file, &name("root:dst"), true)
            .await
            .unwrap();
        if stop != Step::DeletingOld {
            let stopped: Option<u64> = env.reg.advance_import(j, &claim, Some(stop)).await.unwrap();
            assert!(stopped.is_none());
        }
        drop(claim);
        let (again, _tx) = restart(env.storage.clone()).await;
        assert_eq!(
            contents(&*env.storage, "root:dst").await,
            contents(&*env.storage, "root:src").await,
            "stopped at {stop:?}"
        );
        assert!(again.cluster_exists(&name("root:dst")));
        assert!(again.cluster_table().phase("root:dst").is_none());
        assert!(
            again
                .cluster_table()
                .floor(&kplane_storage::Clusters::One("root:dst".into()))
                > 0
        );
        assert!(
            all_clusters(&*env.storage)
                .await
                .iter()
                .all(|c| !c.starts_with('~')),
            "stopped at {stop:?}"
        );
    }
    let _ = Journal::clone;
}

/// A newer format version is a 415 naming both versions; other format errors are 400.
#[test]
fn format_errors_map_to_statuses() {
    let e = super::verify::archive_error(&kplane_archive::Error::UnsupportedVersion {
        found: 9,
        supported: FORMAT_VERSION,
    });
    assert_eq!(e.code(), 415);
    assert!(e.0.message.contains('9'), "{}", e.0.message);
    let e = super::verify::archive_error(&kplane_archive::Error::Truncated);
    assert_eq!(e.code(), 400);
}

/// A wildcard watch running while a new path is imported sees none of its objects (it is
/// hidden until the flip) and ends with a 410 at the flip; a new one from the floor on
/// sees later writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_watch_sees_no_half_import() {
    let env = env().await;
    seed(&env, "root:src", IMPORT_BATCH + 1).await;
    let file = env.dir.path().join("a.karc");
    export_to(&env.reg, "root:src", false, true, &file).await;
    let t = configmaps(&env.reg, "root");
    let all = Target {
        cluster: ClusterScope::Wildcard,
        namespace: None,
        ..t
    };
    let from = ListParams {
        resource_version: Some(env.storage.current_revision().to_string()),
        ..Default::default()
    };
    let mut w = env.reg.watch(&all, &from).await.unwrap();
    let sum = env
        .reg
        .import(&file, &name("root:new"), false)
        .await
        .unwrap();
    let item = w.next().await.unwrap();
    assert_eq!(
        item.ty,
        WatchType::Error,
        "{}",
        String::from_utf8_lossy(&item.object)
    );
    assert!(w.next().await.is_none());
    let p = ListParams {
        resource_version: Some(sum.revision.to_string()),
        ..Default::default()
    };
    let mut w = env.reg.watch(&all, &p).await.unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}});
    env.reg
        .create(
            &configmaps(&env.reg, "root:new"),
            cm,
            &WriteParams::default(),
        )
        .await
        .unwrap();
    let item = w.next().await.unwrap();
    assert_eq!(item.ty, WatchType::Added);
}
