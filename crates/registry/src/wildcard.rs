//! Multi-cluster reads: what `/clusters/*` and `/clusters/<root>:*` (a workspace and its
//! descendants) serve, and how their objects are marked.
//!
//! - The catalog of a multi-cluster scope: the built-in types plus every custom resource
//!   type (group, version, plural) that an established CRD serves in at least one cluster of
//!   the scope. It is built from one paged storage list of the scope's CRDs (the
//!   resource-first index, so no per-cluster work), deduplicated by CRD content, and cached
//!   per scope until any cluster's CRDs change ([`MultiCatalogs::invalidate`], called where
//!   a cluster's own catalog is refreshed or forgotten). The custom types carry no
//!   conversion: each object is returned as stored in its cluster. When clusters disagree
//!   on a type (same group, version and plural, different CRDs), the first cluster in key
//!   order decides its kind and scope.
//! - [`annotate`]: every object such a read returns carries the `kplane.io/cluster`
//!   annotation naming its cluster. It is added when serving, never stored; reads of one
//!   cluster never pass through here.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use kplane_storage::{Clusters, ListOptions, Prefix};
use kplane_types::ClusterScope;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::catalog::{Catalog, ResourceType};
use super::crd::{self, CRD_RESOURCE};
use super::{corrupt, Registry};
use crate::error::{ApiError, ApiResult};

/// The annotation naming the logical cluster of each object a multi-cluster list or watch
/// returns.
pub const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";

/// CRDs read per storage list while building a multi-cluster catalog.
pub(crate) const CRD_PAGE: usize = 500;

/// The object with `metadata.annotations["kplane.io/cluster"] = cluster`.
pub(crate) fn annotate(obj: &[u8], cluster: &str) -> ApiResult<Bytes> {
    let mut v: Value = serde_json::from_slice(obj).map_err(|e| corrupt(&e))?;
    let Some(o) = v.as_object_mut() else {
        return Err(corrupt(&"a stored object is not a JSON object"));
    };
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return Err(corrupt(&"a stored object's metadata is not a JSON object"));
    };
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !ann.is_object() {
        *ann = Value::Object(Default::default());
    }
    if let Some(ann) = ann.as_object_mut() {
        ann.insert(CLUSTER_ANNOTATION.into(), Value::String(cluster.into()));
    }
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| corrupt(&e))
}

impl Registry {
    /// The catalog serving a multi-cluster scope (built-ins plus the custom resource types
    /// of the scope's CRDs); for one cluster, its own catalog.
    pub(crate) async fn multi_cluster_catalog(
        &self,
        scope: &ClusterScope,
    ) -> ApiResult<Arc<Catalog>> {
        let (key, clusters) = match scope {
            ClusterScope::One(c) => return self.cluster_catalog(c).await,
            ClusterScope::Wildcard => (None, Clusters::All),
            ClusterScope::Subtree { root, .. } => {
                (Some(root.clone()), Clusters::Subtree(root.as_str().into()))
            }
        };
        let generation = match self.catalogs.multi.lookup(&key) {
            Ok(c) => return Ok(c),
            Err(g) => g,
        };
        let c = self.build_multi_catalog(clusters).await?;
        self.catalogs.multi.store(key, generation, c.clone());
        Ok(c)
    }

    /// Reads the scope's established CRDs (each distinct content once) and builds the
    /// catalog, shared with any other catalog of the same content.
    async fn build_multi_catalog(&self, clusters: Clusters) -> ApiResult<Arc<Catalog>> {
        let prefix = Prefix {
            cluster: clusters,
            resource: Some(CRD_RESOURCE.into()),
            namespace: None,
        };
        let mut opts = ListOptions {
            limit: Some(CRD_PAGE),
            ..Default::default()
        };
        let mut seen = HashSet::new();
        let mut distinct: Vec<Value> = Vec::new();
        let mut h = Sha256::new();
        loop {
            let page = self
                .storage
                .list(&prefix, &opts, None)
                .await
                .map_err(ApiError::from)?;
            for kv in &page.items {
                let c: Value = serde_json::from_slice(&kv.value).map_err(|e| corrupt(&e))?;
                if !crd::is_established(&c) {
                    continue;
                }
                let content = super::catalogs::serving_content(&c).to_string();
                let digest = Sha256::digest(content.as_bytes());
                if seen.insert(digest) {
                    h.update(digest);
                    distinct.push(c);
                }
            }
            match (page.more, page.items.last()) {
                (true, Some(last)) => {
                    opts.start_after = Some(last.key.clone());
                    opts.at_revision = Some(page.revision);
                }
                _ => break,
            }
        }
        let builtin = self.catalogs.builtin().clone();
        if distinct.is_empty() {
            return Ok(builtin);
        }
        let fingerprint = format!("multi:{}", hex::encode(h.finalize()));
        Ok(self.catalogs.intern(fingerprint.clone(), move || {
            union(&builtin, &distinct, fingerprint)
        }))
    }
}

/// Built-ins plus each CRD's types, the first definition of a (group, version, plural)
/// winning, without conversions.
fn union(builtin: &Catalog, crds: &[Value], fingerprint: String) -> Catalog {
    let mut types: Vec<Arc<ResourceType>> = builtin.all().to_vec();
    let mut taken: HashSet<(String, String, String)> = types
        .iter()
        .map(|t| (t.group.clone(), t.version.clone(), t.plural.clone()))
        .collect();
    let mut custom: Vec<ResourceType> = Vec::new();
    for c in crds {
        // Without conversion webhooks: the scope's clusters may define the type with other
        // CRDs, each with its own webhook, and no cluster's objects may reach another's.
        for mut t in crd::served::resource_types(c, crd::schema_cache()) {
            if taken.insert((t.group.clone(), t.version.clone(), t.plural.clone())) {
                t.conversion = None;
                t.custom = t
                    .custom
                    .as_deref()
                    .map(|c| Arc::new(c.without_webhook(&c.storage_version)));
                custom.push(t);
            }
        }
    }
    custom.sort_by(|a, b| {
        a.group
            .cmp(&b.group)
            .then(crd::version_priority_cmp(&a.version, &b.version))
            .then(a.plural.cmp(&b.plural))
    });
    types.extend(custom.into_iter().map(Arc::new));
    Catalog::from_arcs(types, fingerprint)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::options::{ListParams, WriteParams};
    use crate::testing::{create_all, fixture, target};
    use crate::{Target, WatchType, LIST_BATCH};
    use kplane_types::ClusterName;
    use serde_json::json;

    fn name(c: &str) -> ClusterName {
        ClusterName::parse(c).unwrap()
    }

    fn widget_crd(kind: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": kind,
                          "listKind": format!("{kind}List")},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]
            }
        })
    }

    /// (cluster annotation, name) of each item; `None` when not annotated.
    fn marks(items: &[Bytes]) -> Vec<(Option<String>, String)> {
        items
            .iter()
            .map(|b| {
                let v: Value = serde_json::from_slice(b).unwrap();
                let c = v["metadata"]["annotations"][CLUSTER_ANNOTATION]
                    .as_str()
                    .map(str::to_string);
                (c, v["metadata"]["name"].as_str().unwrap().to_string())
            })
            .collect()
    }

    /// The next `n` events of `w`, all ADDED, as [`marks`].
    async fn next(n: usize, w: &mut crate::WatchSetup) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        for _ in 0..n {
            let item = w.next().await.unwrap();
            assert_eq!(item.ty, WatchType::Added);
            out.push(item.object);
        }
        marks(&out)
    }

    fn scoped(t: &Target, cluster: ClusterScope) -> Target {
        Target {
            cluster,
            ..t.clone()
        }
    }

    #[test]
    fn annotate_adds_to_existing_or_missing_annotations() {
        for (obj, others) in [
            (json!({"metadata": {"name": "a"}}), 0),
            (
                json!({"metadata": {"name": "a", "annotations": {"x": "y"}}}),
                1,
            ),
            (json!({"metadata": {"name": "a", "annotations": null}}), 0),
            (json!({"kind": "X"}), 0),
        ] {
            let out = annotate(obj.to_string().as_bytes(), "root:a").unwrap();
            let v: Value = serde_json::from_slice(&out).unwrap();
            let ann = v["metadata"]["annotations"].as_object().unwrap();
            assert_eq!(ann[CLUSTER_ANNOTATION], "root:a");
            assert_eq!(ann.len(), others + 1, "{obj}");
        }
        assert!(annotate(b"[1]", "root").is_err());
        assert!(annotate(b"{\"metadata\": 1}", "root").is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lists_span_clusters_annotated_and_subtrees_stop_at_their_root() {
        let f = fixture().await;
        let reg = &f.reg;
        let cm = target(reg, "", "configmaps", Some("default"));
        // Each cluster holds more than a list batch together with the others.
        let clusters = ["root", "root:a", "root:a:x", "root:ab", "root:a-b"];
        let per = LIST_BATCH / 3 + 1;
        for c in clusters {
            reg.ensure_cluster(&name(c)).await.unwrap();
            let objs = (0..per)
                .map(|i| crate::testing::configmap(&format!("cm-{i:04}"), "g"))
                .collect();
            create_all(reg, &scoped(&cm, ClusterScope::One(name(c))), objs).await;
        }
        let root_ca = |items: &[Bytes]| {
            marks(items)
                .into_iter()
                .filter(|(_, n)| n.starts_with("cm-"))
                .collect::<Vec<_>>()
        };
        let want = |cs: &[&str]| {
            let mut w: Vec<(Option<String>, String)> = Vec::new();
            for c in cs {
                for i in 0..per {
                    w.push((Some(c.to_string()), format!("cm-{i:04}")));
                }
            }
            w
        };
        // Key order: cluster, then namespace and name.
        let mut all = clusters.to_vec();
        all.sort();
        let wild = scoped(&cm, ClusterScope::Wildcard);
        let page = reg.list(&wild, &ListParams::default()).await.unwrap();
        let items = page.collect().await.unwrap().items;
        assert!(items.len() > LIST_BATCH);
        assert_eq!(root_ca(&items), want(&all));

        let sub = scoped(&cm, ClusterScope::subtree(name("root:a")));
        let items = reg
            .list(&sub, &ListParams::default())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .items;
        assert_eq!(root_ca(&items), want(&["root:a", "root:a:x"]));

        // Pages of a limit with continue tokens give the same list, across clusters.
        let mut got = Vec::new();
        let mut p = ListParams {
            limit: Some(per - 3),
            ..Default::default()
        };
        loop {
            let page = reg.list(&sub, &p).await.unwrap();
            let token = page.continue_token().map(str::to_string);
            got.extend(page.collect().await.unwrap().items);
            match token {
                Some(t) => p.continue_token = Some(t),
                None => break,
            }
        }
        assert_eq!(root_ca(&got), want(&["root:a", "root:a:x"]));

        // One cluster's list is not annotated.
        let one = scoped(&cm, ClusterScope::One(name("root:a")));
        let items = reg
            .list(&one, &ListParams::default())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .items;
        assert_eq!(items.len(), per + 1, "the ConfigMaps and kube-root-ca.crt");
        assert!(marks(&items).iter().all(|(c, _)| c.is_none()));

        // Only list and watch: other verbs are 405.
        for t in [&wild, &sub] {
            let e = reg.get(t, "cm-0000").await.unwrap_err();
            assert_eq!(e.code(), 405);
            let e = reg
                .create(
                    t,
                    crate::testing::configmap("n", "g"),
                    &WriteParams::default(),
                )
                .await
                .unwrap_err();
            assert_eq!(e.code(), 405);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watches_annotate_and_filter_by_subtree() {
        let f = fixture().await;
        let reg = &f.reg;
        let cm = target(reg, "", "configmaps", Some("default"));
        for c in ["root:w", "root:w:x", "root:wx"] {
            reg.ensure_cluster(&name(c)).await.unwrap();
        }
        let now = ListParams {
            resource_version: Some(reg.storage.current_revision().to_string()),
            ..Default::default()
        };
        let mut wild = reg
            .watch(&scoped(&cm, ClusterScope::Wildcard), &now)
            .await
            .unwrap();
        let mut sub = reg
            .watch(&scoped(&cm, ClusterScope::subtree(name("root:w"))), &now)
            .await
            .unwrap();
        for c in ["root:wx", "root:w:x", "root", "root:w"] {
            let t = scoped(&cm, ClusterScope::One(name(c)));
            reg.create(
                &t,
                crate::testing::configmap("e", "g"),
                &WriteParams::default(),
            )
            .await
            .unwrap();
        }
        let e = |c: &str| (Some(c.to_string()), "e".to_string());
        assert_eq!(
            next(4, &mut wild).await,
            vec![e("root:wx"), e("root:w:x"), e("root"), e("root:w")]
        );
        assert_eq!(next(2, &mut sub).await, vec![e("root:w:x"), e("root:w")]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn custom_resources_are_served_where_any_cluster_has_the_crd() {
        let f = fixture().await;
        let reg = &f.reg;
        let crds = target(
            reg,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
        );
        for c in ["root:c1", "root:c2", "root:c3"] {
            reg.ensure_cluster(&name(c)).await.unwrap();
        }
        let has = |c: &Arc<Catalog>| c.get("example.com", "v1", "widgets").cloned();
        assert!(has(&reg.catalog_for(&ClusterScope::Wildcard).await.unwrap()).is_none());
        for (c, kind) in [("root:c1", "Widget"), ("root:c2", "Gadget")] {
            let t = scoped(&crds, ClusterScope::One(name(c)));
            reg.create(&t, widget_crd(kind), &WriteParams::default())
                .await
                .unwrap();
        }
        let wild = reg.catalog_for(&ClusterScope::Wildcard).await.unwrap();
        let rt = has(&wild).expect("served across clusters");
        assert_eq!(rt.kind, "Widget", "the first cluster in key order decides");
        assert!(rt.conversion.is_none());
        assert!(has(&reg
            .catalog_for(&ClusterScope::subtree(name("root:c2")))
            .await
            .unwrap())
        .is_some());
        assert!(has(&reg
            .catalog_for(&ClusterScope::subtree(name("root:c3")))
            .await
            .unwrap())
        .is_none());
        assert_eq!(reg.catalogs.multi.cached(), 3);

        for c in ["root:c1", "root:c2"] {
            let cat = reg.cluster_catalog(&name(c)).await.unwrap();
            let t = Target::new(&name(c), has(&cat).unwrap(), Some("default".into()));
            let kind = &t.rt.kind;
            let obj = json!({"apiVersion": "example.com/v1", "kind": kind,
                             "metadata": {"name": format!("in-{}", name(c).base_name())}});
            reg.create(&t, obj, &WriteParams::default()).await.unwrap();
        }
        let wt = Target {
            cluster: ClusterScope::Wildcard,
            rt,
            namespace: None,
        };
        let items = reg
            .list(&wt, &ListParams::default())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .items;
        assert_eq!(
            marks(&items),
            vec![
                (Some("root:c1".into()), "in-c1".into()),
                (Some("root:c2".into()), "in-c2".into())
            ]
        );
        // As stored in each cluster: the second keeps its own kind.
        let kinds: Vec<String> = items
            .iter()
            .map(|b| serde_json::from_slice::<Value>(b).unwrap()["kind"].to_string())
            .collect();
        assert_eq!(kinds, ["\"Widget\"", "\"Gadget\""]);

        // A CRD change anywhere drops the cached multi-cluster catalogs.
        let t = scoped(&crds, ClusterScope::One(name("root:c3")));
        reg.create(&t, widget_crd("Widget"), &WriteParams::default())
            .await
            .unwrap();
        assert_eq!(reg.catalogs.multi.cached(), 0);
        assert!(has(&reg
            .catalog_for(&ClusterScope::subtree(name("root:c3")))
            .await
            .unwrap())
        .is_some());
        // Gone from every cluster: no longer served across them.
        for c in ["root:c1", "root:c2", "root:c3"] {
            let t = scoped(&crds, ClusterScope::One(name(c)));
            reg.delete(&t, "widgets.example.com", &crate::DeleteParams::default())
                .await
                .unwrap();
            assert!(crate::controllers::crd_cleanup::cleanup_crd(
                reg,
                &name(c),
                "widgets.example.com"
            )
            .await
            .unwrap());
        }
        assert!(has(&reg.catalog_for(&ClusterScope::Wildcard).await.unwrap()).is_none());
    }

    /// One resourceVersion orders every cluster: a multi-cluster watch from a list's
    /// revision gets later writes of any cluster in order, a continue token spans clusters,
    /// and both are 410 once compaction passes them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn revisions_are_global_and_expire_past_the_window() {
        use std::time::Duration;
        let f = crate::testing::fixture_with(kplane_storage::SledStorageOptions {
            event_window: Duration::from_millis(300),
            compaction_interval: Duration::from_millis(20),
            ..Default::default()
        })
        .await;
        let reg = &f.reg;
        let cm = target(reg, "", "configmaps", Some("default"));
        for c in ["root:g1", "root:g2"] {
            reg.ensure_cluster(&name(c)).await.unwrap();
            let t = scoped(&cm, ClusterScope::One(name(c)));
            let objs = (0..3)
                .map(|i| crate::testing::configmap(&format!("cm-{i}"), "g"))
                .collect();
            create_all(reg, &t, objs).await;
        }
        for scope in [ClusterScope::Wildcard, ClusterScope::subtree(name("root"))] {
            let t = scoped(&cm, scope.clone());
            let first = reg
                .list(
                    &t,
                    &ListParams {
                        limit: Some(1),
                        label_selector: Some("group=g".into()),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            let token = first.continue_token().unwrap().to_string();
            let rv = first.revision();
            let rest = reg
                .list(
                    &t,
                    &ListParams {
                        continue_token: Some(token.clone()),
                        label_selector: Some("group=g".into()),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            let whole = reg
                .list(
                    &t,
                    &ListParams {
                        label_selector: Some("group=g".into()),
                        resource_version: Some(rv.to_string()),
                        rv_match: Some(crate::options::RvMatch::Exact),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .collect()
                .await
                .unwrap()
                .items;
            assert!(whole.len() >= 6);
            assert_eq!(
                marks(&rest.items),
                marks(&whole[1..]),
                "{scope}: the rest, across clusters"
            );
            assert_eq!(rest.revision, rv);

            // A watch from the list's revision sees later writes of both clusters in order.
            let from = ListParams {
                resource_version: Some(rv.to_string()),
                ..Default::default()
            };
            let mut w = reg.watch(&t, &from).await.unwrap();
            for c in ["root:g2", "root:g1"] {
                let one = scoped(&cm, ClusterScope::One(name(c)));
                let n = format!("late-{}", scope.as_str().len());
                reg.create(
                    &one,
                    crate::testing::configmap(&n, "g"),
                    &WriteParams::default(),
                )
                .await
                .unwrap();
            }
            let got = next(2, &mut w).await;
            let clusters: Vec<_> = got.into_iter().map(|(c, _)| c.unwrap()).collect();
            assert_eq!(clusters, ["root:g2", "root:g1"]);

            // Past the window: both are 410.
            tokio::time::sleep(Duration::from_millis(400)).await;
            let t1 = scoped(&cm, ClusterScope::One(name("root:g1")));
            let n = format!("later-{}", scope.as_str().len());
            reg.create(
                &t1,
                crate::testing::configmap(&n, "g"),
                &WriteParams::default(),
            )
            .await
            .unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            while reg.storage.compacted_revision() <= rv {
                assert!(tokio::time::Instant::now() < deadline, "no compaction");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let e = reg
                .list(
                    &t,
                    &ListParams {
                        continue_token: Some(token),
                        ..Default::default()
                    },
                )
                .await
                .unwrap_err();
            assert_eq!(e.code(), 410, "{scope}");
            let mut w = reg.watch(&t, &from).await.unwrap();
            let item = w.next().await.unwrap();
            assert_eq!(item.ty, WatchType::Error);
            let status: Value = serde_json::from_slice(&item.object).unwrap();
            assert_eq!(status["code"], 410, "{scope}");
        }
    }

    /// Two clusters define the same type with different CRDs, each with its own conversion
    /// webhook: a multi-cluster list in the version neither stores calls neither webhook
    /// (objects are served as stored), so no cluster's objects reach another's webhook.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn multi_cluster_reads_call_no_conversion_webhook() {
        use crate::webhooks::fake::FakeTransport;
        let fake = FakeTransport::new(|_, _| async { Err("no webhook may be called".into()) });
        let f = crate::testing::fixture_with_admission(fake.admission()).await;
        let reg = &f.reg;
        let crds = target(
            reg,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
        );
        for (c, kind) in [("root:c1", "Widget"), ("root:c2", "Gadget")] {
            reg.ensure_cluster(&name(c)).await.unwrap();
            let mut crd = widget_crd(kind);
            let v1 = crd["spec"]["versions"][0].clone();
            let mut v2 = v1.clone();
            v2["name"] = json!("v2");
            v2["storage"] = json!(false);
            crd["spec"]["versions"] = json!([v1, v2]);
            crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": format!("https://{c}.test/convert")},
                "conversionReviewVersions": ["v1"]}});
            let t = scoped(&crds, ClusterScope::One(name(c)));
            reg.create(&t, crd, &WriteParams::default()).await.unwrap();
            let cat = reg.cluster_catalog(&name(c)).await.unwrap();
            let rt = cat.get("example.com", "v1", "widgets").cloned().unwrap();
            assert!(rt.custom.as_ref().unwrap().webhook.is_some());
            let t = Target::new(&name(c), rt, Some("default".into()));
            let obj = json!({"apiVersion": "example.com/v1", "kind": kind,
                             "metadata": {"name": format!("in-{}", name(c).base_name())}});
            reg.create(&t, obj, &WriteParams::default()).await.unwrap();
        }
        let wild = reg.catalog_for(&ClusterScope::Wildcard).await.unwrap();
        let rt = wild.get("example.com", "v2", "widgets").cloned().unwrap();
        let custom = rt.custom.as_ref().unwrap();
        assert!(custom.webhook.is_none() && custom.storage_schema.is_none());
        let wt = Target {
            cluster: ClusterScope::Wildcard,
            rt,
            namespace: None,
        };
        let items = reg
            .list(&wt, &ListParams::default())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .items;
        assert_eq!(items.len(), 2);
        assert_eq!(fake.urls(), Vec::<String>::new());
    }
}
