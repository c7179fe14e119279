//! Built-in objects: objects every logical cluster holds without storing them (the RBAC
//! bootstrap ClusterRoles and ClusterRoleBindings), shared by content across clusters and
//! shown by the read path of one logical cluster wherever the cluster stores no object of
//! the same name.
//!
//! A type offers them through its strategy ([`crate::TypeStrategy::builtins`]); the generic
//! verbs merge them in here, without asking which type they serve:
//!
//! - get: a built-in object when storage has none of that name;
//! - list (and a watch's initial events): merged into each page in key order, after the
//!   selection, with `limit`/`continue` counting them like stored items (a continue token
//!   may point after a built-in name); a built-in object hidden by a stored one at the
//!   list's revision is left out;
//! - watch: the stored object that takes a built-in's place is a MODIFIED of it (not an
//!   ADDED), and its deletion a DELETED followed by the built-in's ADDED (re-created);
//! - update, patch and apply start from the built-in object when none is stored: the write
//!   creates the stored object (the "override"), a new object (its own uid and creation
//!   time: once it is deleted the built-in shows again, and the two must be told apart);
//!   create of a built-in name is a 409 AlreadyExists, delete a 403 (the object cannot go).
//!
//! A rendered object carries what is particular to its cluster, computed, never held: a uid
//! derived from (cluster, resource, name), the cluster's birth (the creation revision and
//! timestamp of its `default` namespace, which every bootstrapped cluster has) as
//! `resourceVersion` and `creationTimestamp`. Multi-cluster reads (`/clusters/*`) show
//! stored objects only.

use std::collections::HashSet;

use bytes::Bytes;
use kplane_storage::{Key, KeyValue, ListOptions, Prefix, Revision};
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::{storage_error, Registry, ResourceType, Target};

pub(crate) mod set;
pub use crate::meta::undeletable;
pub use set::{uid, Birth, Builtins};

/// Used when a cluster has no `default` namespace (clusters created on a first write in
/// development mode before it was bootstrapped).
const UNKNOWN_BIRTH_REVISION: Revision = 1;
const UNKNOWN_BIRTH_TIME: &str = "1970-01-01T00:00:00Z";

/// What a list or watch of one cluster needs to show its built-in objects.
#[derive(Debug, Clone)]
pub(crate) struct Overlay {
    pub builtins: &'static Builtins,
    pub cluster: String,
    pub birth: Birth,
    /// Built-in names the cluster stores an object of (at the list's revision).
    pub hidden: HashSet<String>,
}

impl Overlay {
    /// Built-in `name` with the cluster's birth revision.
    pub fn render(&self, rt: &ResourceType, name: &str) -> Option<Bytes> {
        self.builtins
            .render(rt, &self.cluster, name, &self.birth, self.birth.revision)
    }

    /// The shown built-in names after `after` (exclusive) up to `upto` (inclusive, `None`:
    /// no bound).
    pub fn names_between<'a>(
        &'a self,
        after: Option<&'a str>,
        upto: Option<&'a str>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.builtins
            .names()
            .filter(move |n| after.is_none_or(|a| *n > a))
            .filter(move |n| upto.is_none_or(|u| *n <= u))
            .filter(move |n| !self.hidden.contains(*n))
    }
}

impl Builtins {
    /// The objects (each with `metadata.name`).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Builtins {
        let by_name = objects
            .into_iter()
            .map(|o| (crate::meta::name_of(&o).to_string(), o))
            .collect();
        Builtins { by_name }
    }

    /// Built-in `name` as `cluster` serves it, with `resourceVersion` `rv`.
    pub fn render(
        &self,
        rt: &ResourceType,
        cluster: &str,
        name: &str,
        birth: &Birth,
        rv: Revision,
    ) -> Option<Bytes> {
        let mut obj = self.by_name.get(name)?.clone();
        let o = obj.as_object_mut()?;
        o.insert("apiVersion".into(), json!(rt.api_version()));
        o.insert("kind".into(), json!(rt.kind));
        let meta = o.entry("metadata").or_insert_with(|| json!({}));
        let m = meta.as_object_mut()?;
        m.insert(
            "uid".into(),
            json!(uid(cluster, &rt.storage_resource, name)),
        );
        m.insert("resourceVersion".into(), json!(rv.to_string()));
        m.insert("creationTimestamp".into(), json!(birth.created));
        serde_json::to_vec(&obj).ok().map(Bytes::from)
    }
}

impl Registry {
    /// The built-in objects `t` shows: its type's, for a request into one cluster.
    pub(crate) fn builtins_of(&self, t: &Target) -> Option<(&'static Builtins, String)> {
        let cluster = t.cluster.one()?;
        let b = t.rt.strategy.builtins(&t.rt)?;
        Some((b, cluster.as_str().to_string()))
    }

    /// When `cluster` was bootstrapped (see the module doc).
    pub(crate) async fn cluster_birth(&self, cluster: &str) -> ApiResult<Birth> {
        let key = Key::new(
            cluster,
            "/namespaces",
            "",
            crate::namespaces::DEFAULT_NAMESPACES[0],
        );
        let Some(kv) = self.storage.get(&key).await.map_err(ApiError::from)? else {
            return Ok(Birth {
                revision: UNKNOWN_BIRTH_REVISION,
                created: UNKNOWN_BIRTH_TIME.into(),
            });
        };
        let created = serde_json::from_slice::<Value>(&kv.value)
            .ok()
            .and_then(|v| {
                v.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| UNKNOWN_BIRTH_TIME.into());
        Ok(Birth {
            revision: kv.create_revision,
            created,
        })
    }

    /// Built-in `name` of `t` as a write's current object when storage has none: a
    /// [`KeyValue`] whose `create_revision` is 0 (no stored key), `mod_revision` the
    /// revision it is served with.
    pub(crate) async fn builtin_current(
        &self,
        t: &Target,
        name: &str,
    ) -> ApiResult<Option<KeyValue>> {
        let Some((b, cluster)) = self.builtins_of(t) else {
            return Ok(None);
        };
        if !b.contains(name) {
            return Ok(None);
        }
        let birth = self.cluster_birth(&cluster).await?;
        let Some(value) = b.render(&t.rt, &cluster, name, &birth, birth.revision) else {
            return Ok(None);
        };
        Ok(Some(KeyValue {
            key: t.key(name)?,
            value,
            create_revision: 0,
            mod_revision: birth.revision,
        }))
    }

    /// The stored object of `t` named `name`, or else its built-in object.
    pub(crate) async fn get_current(&self, t: &Target, name: &str) -> ApiResult<Option<KeyValue>> {
        match self.get_stored(t, name).await? {
            Some(kv) => Ok(Some(kv)),
            None => self.builtin_current(t, name).await,
        }
    }

    /// The overlay of a list of `t` read at `revision` (`None`: not a one-cluster read of
    /// a type with built-in objects).
    pub(crate) async fn list_overlay(
        &self,
        t: &Target,
        revision: Revision,
    ) -> ApiResult<Option<Overlay>> {
        let Some((builtins, cluster)) = self.builtins_of(t) else {
            return Ok(None);
        };
        let birth = self.cluster_birth(&cluster).await?;
        let prefix = Prefix::resource(cluster.as_str(), t.rt.storage_resource.as_str());
        let opts = ListOptions {
            at_revision: Some(revision),
            ..Default::default()
        };
        let filter = |kv: &KeyValue| builtins.contains(&kv.key.name);
        let res = self
            .storage
            .list(&prefix, &opts, Some(&filter))
            .await
            .map_err(|e| storage_error(e, &t.rt, ""))?;
        let hidden = res.items.into_iter().map(|kv| kv.key.name).collect();
        Ok(Some(Overlay {
            builtins,
            cluster,
            birth,
            hidden,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kplane_types::{ClusterName, ClusterScope};
    use serde_json::{json, Value};

    use crate::options::{ListParams, WriteParams};
    use crate::rbac::defaults;
    use crate::testing::{fixture, name_of, target};
    use crate::{Registry, Target, WatchType, LIST_BATCH};

    fn clusterroles(reg: &Registry) -> Target {
        target(reg, "rbac.authorization.k8s.io", "clusterroles", None)
    }

    fn parse(b: &[u8]) -> Value {
        serde_json::from_slice(b).unwrap()
    }

    fn role(name: &str, labels: Value, resource: &str) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name, "labels": labels},
               "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": [resource]}]})
    }

    async fn names(reg: &Registry, t: &Target, p: &ListParams) -> Vec<String> {
        let page = reg.list(t, p).await.unwrap().collect().await.unwrap();
        page.items.iter().map(|b| name_of(b)).collect()
    }

    /// Every page of a `limit` list, followed through its continue tokens.
    async fn paged(
        reg: &Registry,
        t: &Target,
        limit: usize,
        selector: Option<&str>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let p = ListParams {
                limit: Some(limit),
                continue_token: token.take(),
                label_selector: selector.map(str::to_string),
                ..Default::default()
            };
            let page = reg.list(t, &p).await.unwrap().collect().await.unwrap();
            assert!(page.items.len() <= limit);
            out.extend(page.items.iter().map(|b| name_of(b)));
            match page.continue_token {
                Some(c) => token = Some(c),
                None => return out,
            }
        }
    }

    #[tokio::test]
    async fn default_roles_read_as_objects_of_each_cluster() {
        let f = fixture().await;
        let t = clusterroles(&f.reg);
        let admin = parse(&f.reg.get(&t, "admin").await.unwrap());
        assert_eq!(admin["kind"], "ClusterRole");
        assert_eq!(admin["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(
            admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        assert_eq!(
            admin["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
            "true"
        );
        assert!(admin["metadata"]["creationTimestamp"].is_string());
        // Aggregated: admin's own rules, edit's and view's, as the authorizer sees them.
        let rules = admin["rules"].as_array().unwrap();
        let has = |res: &str| {
            rules.iter().any(|r| {
                r["resources"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x == res))
            })
        };
        assert!(has("rolebindings") && has("secrets") && has("configmaps"));
        assert!(admin["aggregationRule"]["clusterRoleSelectors"].is_array());
        // Stable: the same uid and resourceVersion on every read; another cluster's differ
        // in uid only by being another object.
        let again = parse(&f.reg.get(&t, "admin").await.unwrap());
        assert_eq!(again["metadata"], admin["metadata"]);
        let other = ClusterName::parse("root:other").unwrap();
        f.reg.ensure_cluster(&other).await.unwrap();
        let t2 = Target {
            cluster: ClusterScope::One(other),
            ..t.clone()
        };
        let admin2 = parse(&f.reg.get(&t2, "admin").await.unwrap());
        assert_ne!(admin2["metadata"]["uid"], admin["metadata"]["uid"]);
        assert_eq!(admin2["rules"], admin["rules"]);
        // Bindings too.
        let crb = target(
            &f.reg,
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            None,
        );
        let b = parse(&f.reg.get(&crb, "cluster-admin").await.unwrap());
        assert_eq!(b["subjects"][0]["name"], "system:masters");
        assert_eq!(b["roleRef"]["name"], "cluster-admin");
        // Not a built-in name: 404.
        assert_eq!(f.reg.get(&t, "nope").await.unwrap_err().code(), 404);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lists_merge_defaults_in_order_and_page_over_them() {
        let f = fixture().await;
        let t = clusterroles(&f.reg);
        // Stored roles around and between the default names, more than a list batch.
        let n = LIST_BATCH + 60;
        let objs: Vec<Value> = (0..n)
            .map(|i| {
                let prefix = ["a", "edit-x", "system:b", "v"][i % 4];
                role(&format!("{prefix}-{i:04}"), json!({"k": "v"}), "pods")
            })
            .collect();
        crate::testing::create_all(&f.reg, &t, objs).await;
        let all = names(&f.reg, &t, &ListParams::default()).await;
        assert_eq!(all.len(), n + defaults::cluster_role_objects().len());
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted, "key order");
        for d in defaults::cluster_role_objects().names() {
            assert!(all.iter().any(|x| x == d), "{d}");
        }
        for limit in [1, 3, 7, 500] {
            assert_eq!(paged(&f.reg, &t, limit, None).await, all, "limit {limit}");
        }
        // Label selectors apply to the defaults like to stored objects.
        let boot = "kubernetes.io/bootstrapping=rbac-defaults";
        let sel = ListParams {
            label_selector: Some(boot.into()),
            ..Default::default()
        };
        let want: Vec<String> = defaults::cluster_role_objects()
            .names()
            .map(str::to_string)
            .collect();
        assert_eq!(names(&f.reg, &t, &sel).await, want);
        assert_eq!(paged(&f.reg, &t, 2, Some(boot)).await, want);
        let by_name = ListParams {
            field_selector: Some("metadata.name=view".into()),
            ..Default::default()
        };
        assert_eq!(names(&f.reg, &t, &by_name).await, vec!["view".to_string()]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_over_a_default_create_its_override_and_deleting_that_restores_it() {
        let f = fixture().await;
        let t = clusterroles(&f.reg);
        let w = WriteParams::default();
        let default = parse(&f.reg.get(&t, "view").await.unwrap());
        let rv = default["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        // Create of a default name: it exists.
        let err = f
            .reg
            .create(&t, role("view", json!({}), "pods"), &w)
            .await
            .unwrap_err();
        assert_eq!(err.code(), 409);
        // Delete of a default that is not overridden: refused.
        let err = f
            .reg
            .delete(&t, "view", &Default::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), 403);
        // An update with a stale resourceVersion: conflict.
        let mut stale = role("view", json!({}), "pods");
        stale["metadata"]["resourceVersion"] = json!("999999");
        assert_eq!(
            f.reg
                .update(&t, "view", None, stale, &w)
                .await
                .unwrap_err()
                .code(),
            409
        );
        // An update with the default's resourceVersion replaces it by a stored object of
        // its own uid.
        let mut new = role(
            "view",
            json!({"kubernetes.io/bootstrapping": "rbac-defaults"}),
            "leases",
        );
        new["metadata"]["resourceVersion"] = json!(rv);
        let (out, created) = f.reg.update(&t, "view", None, new, &w).await.unwrap();
        assert!(!created, "an update of an existing object");
        let out = parse(&out);
        assert_ne!(out["metadata"]["uid"], default["metadata"]["uid"]);
        assert_ne!(out["metadata"]["resourceVersion"], json!(rv));
        let got = parse(&f.reg.get(&t, "view").await.unwrap());
        assert_eq!(got["rules"][0]["resources"][0], "leases");
        let all = names(&f.reg, &t, &ListParams::default()).await;
        assert_eq!(all.iter().filter(|n| *n == "view").count(), 1);
        // The authorizer sees the override (view's own rules are replaced).
        let layer = f.reg.rbac_layer(&ClusterName::root()).await.unwrap();
        let policy = crate::rbac::Policy {
            cluster: &layer,
            defaults: defaults::layer(),
        };
        assert_eq!(policy.cluster_role_rules("view").unwrap().len(), 1);
        // Deleting the override brings the default back.
        f.reg.delete(&t, "view", &Default::default()).await.unwrap();
        let back = parse(&f.reg.get(&t, "view").await.unwrap());
        assert_eq!(back, default);
        // A patch of the default creates the override too.
        let doc = crate::patch::Document {
            value: json!({"metadata": {"labels": {"team": "x"}}}),
            duplicates: Vec::new(),
        };
        let patched = f
            .reg
            .patch(&t, "edit", None, crate::patch::PatchType::Merge, doc, &w)
            .await
            .unwrap();
        let patched = parse(&patched);
        assert_eq!(patched["metadata"]["labels"]["team"], "x");
        assert!(f.reg.get_stored(&t, "edit").await.unwrap().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watches_show_defaults_and_overrides_as_modifications() {
        let f = fixture().await;
        let t = clusterroles(&f.reg);
        let reg: &Arc<Registry> = &f.reg;
        let mut watch = reg.watch(&t, &ListParams::default()).await.unwrap();
        let mut initial = Vec::new();
        for _ in 0..defaults::cluster_role_objects().len() {
            let ev = watch.next().await.unwrap();
            assert_eq!(ev.ty, WatchType::Added);
            initial.push(name_of(&ev.object));
        }
        let want: Vec<String> = defaults::cluster_role_objects()
            .names()
            .map(str::to_string)
            .collect();
        assert_eq!(initial, want);
        let w = WriteParams::default();
        reg.update(
            &t,
            "cluster-admin",
            None,
            role("cluster-admin", json!({}), "pods"),
            &w,
        )
        .await
        .unwrap();
        let ev = watch.next().await.unwrap();
        assert_eq!(
            (ev.ty, name_of(&ev.object)),
            (WatchType::Modified, "cluster-admin".into())
        );
        reg.create(&t, role("mine", json!({}), "pods"), &w)
            .await
            .unwrap();
        let ev = watch.next().await.unwrap();
        assert_eq!(
            (ev.ty, name_of(&ev.object)),
            (WatchType::Added, "mine".into())
        );
        reg.delete(&t, "cluster-admin", &Default::default())
            .await
            .unwrap();
        let ev = watch.next().await.unwrap();
        assert_eq!(
            (ev.ty, name_of(&ev.object)),
            (WatchType::Deleted, "cluster-admin".into())
        );
        let ev = watch.next().await.unwrap();
        assert_eq!(ev.ty, WatchType::Added);
        let back = parse(&ev.object);
        assert_eq!(back["rules"][0]["resources"][0], "*", "the default again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cluster_adding_to_a_default_aggregated_role_gets_it_stored() {
        let f = fixture().await;
        let t = clusterroles(&f.reg);
        let w = WriteParams::default();
        let root = ClusterName::root();
        assert!(
            crate::controllers::cr_aggregation::sync_cluster_role_aggregation(&f.reg, &root)
                .await
                .unwrap()
        );
        assert!(f.reg.get_stored(&t, "view").await.unwrap().is_none());
        let label = json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"});
        f.reg
            .create(&t, role("crontabs-view", label, "crontabs"), &w)
            .await
            .unwrap();
        assert!(
            crate::controllers::cr_aggregation::sync_cluster_role_aggregation(&f.reg, &root)
                .await
                .unwrap()
        );
        for name in ["view", "edit", "admin"] {
            let v = parse(&f.reg.get(&t, name).await.unwrap());
            let shows = v["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["resources"][0] == "crontabs");
            assert!(shows, "{name} shows the added rule");
            assert!(
                f.reg.get_stored(&t, name).await.unwrap().is_some(),
                "{name} stored"
            );
        }
        // Deleting the stored one shows the default again, under the default's uid.
        f.reg.delete(&t, "view", &Default::default()).await.unwrap();
        let uid = super::uid("root", "rbac.authorization.k8s.io/clusterroles", "view");
        let v = parse(&f.reg.get(&t, "view").await.unwrap());
        assert_eq!(v["metadata"]["uid"], json!(uid));
    }
}
