//! The ClusterRole aggregation controller (upstream's `clusterrole-aggregation-controller`
//! of kube-controller-manager): a stored ClusterRole with an `aggregationRule` gets its
//! `rules` written — the rules of every ClusterRole its selectors match in the same logical
//! cluster, per selector in name order, a rule already listed not repeated, its own rules
//! not counted — and rewritten whenever a ClusterRole of its cluster changes.
//!
//! The rules are the ones RBAC evaluates the role with ([`Policy::cluster_role_rules`]):
//! the cluster's ClusterRoles above the shared defaults (a stored role hides the default of
//! its name), nested aggregation followed. So the stored rules only show what is already
//! enforced; they never widen it. The defaults themselves are not stored and keep being
//! aggregated at evaluation.
//!
//! Fed by the shared informer ([`Feed`]): every change of a ClusterRole queues its cluster
//! ([`Aggregation`]); the replay of a scan queues only the clusters that
//! store an aggregated ClusterRole. A sync reads the cluster's ClusterRoles and updates
//! those whose rules differ, with the resourceVersion read as precondition, under upstream's
//! field manager ([`FIELD_MANAGER`]); its own write queues one more sync, which finds
//! nothing to do.
//!
//! The default `admin`, `edit` and `view` (not stored, [`defaults`]) are shown with the
//! rules the defaults aggregate to. Once a cluster's own ClusterRoles add rules to one
//! (a label `rbac.authorization.k8s.io/aggregate-to-*`), the controller writes that role
//! as a stored object in the default's place (from the default object, with its uid), so
//! what `kubectl get clusterrole admin -o yaml` shows stays what is enforced; from then on
//! it is an aggregated stored role like any other.

use std::sync::Arc;

use kplane_storage::{KeyValue, Prefix};
use kplane_types::{ClusterName, ClusterScope};
use serde_json::{json, Value};

use super::informer::InformerHandler;
use super::write_failed;
use super::Controller;
use crate::error::ApiResult;
use crate::options::WriteParams;
use crate::rbac::{defaults, Policy, Rule, CLUSTER_ROLES};
use crate::{meta, Registry, Target};

/// The field manager of the controller's writes, as upstream's.
pub const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// Whether a stored ClusterRole aggregates (has at least one cluster role selector).
fn aggregates(v: &Value) -> bool {
    v.pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// Whether a stored ClusterRole carries a label the default aggregated roles select
/// (`rbac.authorization.k8s.io/aggregate-to-admin|edit|view`; a byte search, most roles
/// carry none).
fn contributes_to_defaults(stored: &[u8]) -> bool {
    memchr::memmem::find(stored, b"rbac.authorization.k8s.io/aggregate-to-").is_some()
}

/// `rules` of a stored role in the normal form [`Rule::to_json`] writes.
fn normalized_rules(v: &Value) -> Vec<Value> {
    v.get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|r| Rule::from_json(r).to_json()).collect())
        .unwrap_or_default()
}

/// Writes the rules of every aggregated ClusterRole of `cluster`; `false` to be retried.
pub(crate) async fn sync_cluster_role_aggregation(
    reg: &Registry,
    cluster: &ClusterName,
) -> ApiResult<bool> {
    let prefix = Prefix::resource(cluster.as_str(), CLUSTER_ROLES);
    let res = reg
        .list_by_prefix(&prefix, &Default::default(), None)
        .await?;
    let aggregated: Vec<(&KeyValue, Value)> = res
        .items
        .iter()
        .filter_map(|kv| Some((kv, serde_json::from_slice::<Value>(&kv.value).ok()?)))
        .filter(|(_, v)| aggregates(v) && !meta::is_deleting(v))
        .collect();
    // The default aggregated roles this cluster does not store: written (as the
    // stored object in the default's place) once the cluster's own roles add to them.
    let unstored: Vec<&str> = defaults::aggregated_names()
        .filter(|n| !res.items.iter().any(|kv| kv.key.name == *n))
        .collect();
    let labelled = res
        .items
        .iter()
        .any(|kv| contributes_to_defaults(&kv.value));
    if aggregated.is_empty() && !labelled {
        return Ok(true);
    }
    let Some(rt) = reg
        .builtin_catalog()
        .get("rbac.authorization.k8s.io", "v1", "clusterroles")
        .cloned()
    else {
        return Ok(true);
    };
    let t = Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt,
        namespace: None,
    };
    let layer = reg.rbac_layer(cluster).await?;
    let policy = Policy {
        cluster: &layer,
        defaults: defaults::layer(),
    };
    let w = WriteParams::controller_named(FIELD_MANAGER);
    let mut done = true;
    for name in unstored {
        let Some(default) = defaults::cluster_role_objects().get(name) else {
            continue;
        };
        let want: Vec<Value> = policy
            .cluster_role_rules(name)
            .unwrap_or_default()
            .iter()
            .map(Rule::to_json)
            .collect();
        if want == normalized_rules(default) {
            continue;
        }
        let Some(current) = reg.builtin_current(&t, name).await? else {
            continue;
        };
        let mut updated: Value = serde_json::from_slice(&current.value)
            .map_err(|e| crate::error::ApiError::internal(e.to_string()))?;
        updated["rules"] = Value::Array(want);
        if let Err(e) = reg.update(&t, name, None, updated, &w).await {
            write_failed(FIELD_MANAGER, cluster.as_str(), &t.rt, "", name, &e);
            done = false;
        }
    }
    for (kv, role) in aggregated {
        let name = kv.key.name.as_str();
        let want: Vec<Value> = policy
            .cluster_role_rules(name)
            .unwrap_or_default()
            .iter()
            .map(Rule::to_json)
            .collect();
        if want == normalized_rules(&role) {
            continue;
        }
        let mut updated = role;
        updated["rules"] = Value::Array(want);
        meta::meta_mut(&mut updated)?
            .insert("resourceVersion".into(), json!(kv.mod_revision.to_string()));
        match reg.update(&t, name, None, updated, &w).await {
            Ok(_) => {}
            // Deleted meanwhile: nothing to write.
            Err(e) if e.code() == 404 => {}
            // Changed meanwhile: that change queued another sync; this one retries too.
            Err(e) => {
                write_failed(FIELD_MANAGER, cluster.as_str(), &t.rt, "", name, &e);
                done = false;
            }
        }
    }
    Ok(done)
}

/// The controller's [`InformerHandler`] (see the module doc).
pub(crate) struct Feed(pub(crate) Arc<Registry>);

impl InformerHandler for Feed {
    fn on_resync(&self) {}

    fn on_object(&self, kv: &KeyValue, _deleted: bool, replay: bool) {
        if kv.key.resource != CLUSTER_ROLES {
            return;
        }
        if replay
            && !contributes_to_defaults(&kv.value)
            && !serde_json::from_slice::<Value>(&kv.value).is_ok_and(|v| aggregates(&v))
        {
            return;
        }
        let Some(cluster) = super::stored_cluster(&kv.key) else {
            return;
        };
        self.0.enqueue::<Aggregation>(cluster);
    }
}

/// The ClusterRole aggregation controller, for one logical cluster's aggregated ClusterRoles.
pub struct Aggregation;

impl Controller<Registry> for Aggregation {
    type Key = ClusterName;

    fn name(&self) -> &'static str {
        FIELD_MANAGER
    }

    async fn reconcile(&self, registry: &Registry, key: &ClusterName) -> ApiResult<bool> {
        sync_cluster_role_aggregation(registry, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::testing::target;
    use kplane_storage::Storage;

    fn rule(resource: &str) -> Value {
        json!({"verbs": ["get"], "apiGroups": [""], "resources": [resource]})
    }

    async fn rules_of(reg: &Registry, t: &Target, name: &str) -> Value {
        let kv = reg.get_stored(t, name).await.unwrap().unwrap();
        let v: Value = serde_json::from_slice(&kv.value).unwrap();
        v["rules"].clone()
    }

    async fn managers(reg: &Registry, t: &Target, name: &str) -> Vec<String> {
        let kv = reg.get_stored(t, name).await.unwrap().unwrap();
        let v: Value = serde_json::from_slice(&kv.value).unwrap();
        v["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["manager"].as_str().map(str::to_string))
            .collect()
    }

    /// An aggregated ClusterRole gets the rules of the roles its selectors match (per
    /// selector, in name order, no duplicates, not its own), and picks up a new labelled
    /// role, a changed one and a removed one; the defaults it selects count too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn aggregated_roles_follow_their_selected_roles() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, _queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
        let cluster = ClusterName::root();
        reg.ensure_cluster(&cluster).await.unwrap();
        let t = target(&reg, "rbac.authorization.k8s.io", "clusterroles", None);
        let w = WriteParams::default();
        let create = |name: &str, labels: Value, rules: Vec<Value>| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": name, "labels": labels}, "rules": rules})
        };
        let mut agg = create("monitoring", json!({}), vec![rule("stale")]);
        agg["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {"example.com/aggregate-to-monitoring": "true"}},
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["ops"]}]},
        ]});
        reg.create(&t, agg, &w).await.unwrap();
        let sel = json!({"example.com/aggregate-to-monitoring": "true"});
        reg.create(
            &t,
            create("b-role", sel.clone(), vec![rule("secrets"), rule("pods")]),
            &w,
        )
        .await
        .unwrap();
        reg.create(&t, create("a-role", sel.clone(), vec![rule("pods")]), &w)
            .await
            .unwrap();
        reg.create(
            &t,
            create(
                "z-ops",
                json!({"tier": "ops"}),
                vec![rule("nodes"), rule("secrets")],
            ),
            &w,
        )
        .await
        .unwrap();
        reg.create(&t, create("unrelated", json!({}), vec![rule("leases")]), &w)
            .await
            .unwrap();
        assert!(sync_cluster_role_aggregation(&reg, &cluster).await.unwrap());
        assert_eq!(
            rules_of(&reg, &t, "monitoring").await,
            json!([rule("pods"), rule("secrets"), rule("nodes")])
        );
        assert!(managers(&reg, &t, "monitoring")
            .await
            .contains(&FIELD_MANAGER.to_string()));
        // A second sync writes nothing.
        let before = reg.get_stored(&t, "monitoring").await.unwrap().unwrap();
        assert!(sync_cluster_role_aggregation(&reg, &cluster).await.unwrap());
        let after = reg.get_stored(&t, "monitoring").await.unwrap().unwrap();
        assert_eq!(before.mod_revision, after.mod_revision);

        // A new labelled role is picked up; a removed one dropped.
        reg.create(
            &t,
            create("c-role", sel.clone(), vec![rule("configmaps")]),
            &w,
        )
        .await
        .unwrap();
        reg.delete(&t, "b-role", &Default::default()).await.unwrap();
        assert!(sync_cluster_role_aggregation(&reg, &cluster).await.unwrap());
        assert_eq!(
            rules_of(&reg, &t, "monitoring").await,
            json!([
                rule("pods"),
                rule("configmaps"),
                rule("nodes"),
                rule("secrets")
            ])
        );

        // Selecting the defaults' label takes the default roles' rules, as evaluated.
        let mut viewish = create("my-view", json!({}), vec![]);
        viewish["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {defaults::AGGREGATE_TO_VIEW: "true"}}]});
        reg.create(&t, viewish, &w).await.unwrap();
        assert!(sync_cluster_role_aggregation(&reg, &cluster).await.unwrap());
        let got = rules_of(&reg, &t, "my-view").await;
        assert_eq!(
            got.as_array().unwrap().len(),
            defaults::layer_view_rules(),
            "{got}"
        );
        storage.shutdown().await.unwrap();
    }

    /// Every change of a ClusterRole queues its cluster once; a replayed role queues it
    /// only when it aggregates; other resources queue nothing.
    #[tokio::test]
    async fn the_feed_queues_clusters_of_cluster_role_changes() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, mut queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
        let feed = Feed(reg.clone());
        let kv = |cluster: &str, resource: &str, body: &Value| KeyValue {
            key: kplane_storage::Key::new(cluster, resource, "", "x"),
            value: serde_json::to_vec(body).unwrap().into(),
            create_revision: 1,
            mod_revision: 1,
        };
        let plain = json!({"metadata": {"name": "x"}});
        let agg = json!({"metadata": {"name": "x"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        feed.on_object(&kv("root:a", "/configmaps", &plain), false, false);
        feed.on_object(&kv("root:b", CLUSTER_ROLES, &plain), false, true);
        assert_eq!(reg.queued_work(), 0);
        feed.on_object(&kv("root:c", CLUSTER_ROLES, &agg), false, true);
        feed.on_object(&kv("root:d", CLUSTER_ROLES, &plain), true, false);
        feed.on_object(&kv("root:d", CLUSTER_ROLES, &plain), false, false);
        assert_eq!(reg.queued_work(), 2);
        let mut got = Vec::new();
        while let Ok(w) = queue.try_recv() {
            got.push(w);
        }
        let c = |n: &str| {
            reg.work::<Aggregation>(ClusterName::parse(n).unwrap())
                .unwrap()
        };
        assert_eq!(got, [c("root:c"), c("root:d")]);
        storage.shutdown().await.unwrap();
    }
}
