//! Which SyncTarget an object is assigned to (issue 15's contract, "Assignment"), written
//! once for everything that assigns: the `SyncAssignment` admission plugin on create and
//! the SyncTarget controller (`controllers::sync_target`) for objects that existed before
//! their target, or whose namespace's labels changed so that they now match.
//!
//! The rule: the applicable SyncTargets of an object are those of its own logical cluster,
//! then of each ancestor cluster whose target has `includeDescendants: true`, nearest
//! cluster first and by name within a cluster, that list the object's (group, version,
//! resource) in `spec.resources` (default: batch/v1 jobs), whose `spec.namespaceSelector`
//! (absent: every namespace) matches the labels of the object's namespace, and that are not
//! being deleted. The first one wins; an object is assigned to at most one target.
//! The names the sync path shares (annotation, finalizers) are the SyncTarget strategy's,
//! re-exported here with the condition type objects get.

use kplane_types::ClusterName;
use serde_json::{Map, Value};

pub use crate::strategies::sync_target::{
    SyncedResource, TargetSpec, DRAIN_FINALIZER, SYNCER_FINALIZER, SYNC_GROUP,
    SYNC_TARGET_RESOURCE, TARGET_ANNOTATION,
};

/// The served version of SyncTargets.
pub const SYNC_VERSION: &str = "v1alpha1";
/// The plural of SyncTargets.
pub const SYNC_TARGETS: &str = "synctargets";
/// The condition type on an assigned object's status saying whether it is synced.
pub const SYNCED_CONDITION: &str = "Synced";

/// The value of [`TARGET_ANNOTATION`] for target `name` of `cluster`.
pub fn target_ref(cluster: &ClusterName, name: &str) -> String {
    format!("{}/{name}", cluster.as_str())
}

/// The (cluster, name) a [`TARGET_ANNOTATION`] value names; `None` when it is malformed.
pub fn parse_target_ref(value: &str) -> Option<(ClusterName, &str)> {
    let (cluster, name) = value.split_once('/')?;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((ClusterName::parse(cluster)?, name))
}

/// The target an object is assigned to (its annotation), if any.
pub fn assigned_to(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(TARGET_ANNOTATION))
        .and_then(Value::as_str)
}

/// `spec.resources` of a SyncTarget, defaulted to batch/v1 jobs when absent or empty.
pub fn synced_resources(target: &Value) -> Vec<SyncedResource> {
    TargetSpec::of(target).resources
}

/// Whether the SyncTarget sends descendant workspaces' objects too.
pub fn includes_descendants(target: &Value) -> bool {
    TargetSpec::of(target).include_descendants
}

/// Whether `target` (stored in `target_cluster`) applies to an object of `resource` in
/// `object_cluster` whose namespace has `ns_labels` (the rule of the module doc, except the
/// order among targets).
pub fn applies(
    target: &Value,
    target_cluster: &ClusterName,
    object_cluster: &ClusterName,
    resource: &SyncedResource,
    ns_labels: &Map<String, Value>,
) -> bool {
    let spec = TargetSpec::of(target);
    if spec.deleting {
        return false;
    }
    if target_cluster != object_cluster
        && !(object_cluster.is_within(target_cluster) && spec.include_descendants)
    {
        return false;
    }
    spec.syncs(&resource.group, &resource.version, &resource.resource)
        && spec.selects_namespace(ns_labels)
}

/// The clusters whose SyncTargets may apply to an object of `cluster`, nearest first: the
/// cluster itself, then its ancestors up to the root.
pub fn candidate_clusters(cluster: &ClusterName) -> Vec<ClusterName> {
    std::iter::successors(Some(cluster.clone()), ClusterName::parent).collect()
}

/// The first applicable target of an object of `resource` in `object_cluster` whose
/// namespace has `ns_labels`, as the [`TARGET_ANNOTATION`] value. `targets_of` gives the
/// stored SyncTargets of a cluster (name, object), in name order.
pub fn first_applicable<'a, I>(
    object_cluster: &ClusterName,
    resource: &SyncedResource,
    ns_labels: &Map<String, Value>,
    mut targets_of: impl FnMut(&ClusterName) -> I,
) -> Option<String>
where
    I: IntoIterator<Item = (&'a str, &'a Value)>,
{
    for cluster in candidate_clusters(object_cluster) {
        for (name, target) in targets_of(&cluster) {
            if applies(target, &cluster, object_cluster, resource, ns_labels) {
                return Some(target_ref(&cluster, name));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn c(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    fn jobs() -> SyncedResource {
        SyncedResource {
            group: "batch".into(),
            version: "v1".into(),
            resource: "jobs".into(),
        }
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// Nearest cluster first; ancestors only with includeDescendants; names in order;
    /// the selector, the resource list and deletion exclude a target.
    #[test]
    fn the_nearest_applicable_target_wins() {
        let mut stored: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
        let mut add = |cluster: &str, name: &str, spec: Value| {
            stored.entry(cluster.to_string()).or_default().push((
                name.into(),
                json!({"metadata": {"name": name}, "spec": spec}),
            ));
        };
        add("root", "all", json!({"includeDescendants": true}));
        add("root:a", "b-plain", json!({}));
        add(
            "root:a",
            "a-gpu",
            json!({"namespaceSelector": {"matchLabels": {"gpu": "yes"}}}),
        );
        add(
            "root:a",
            "0-deployments",
            json!({"resources": [{"group": "apps", "version": "v1", "resource": "deployments"}]}),
        );
        add(
            "root:a:b",
            "x",
            json!({"namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}),
        );
        for v in stored.values_mut() {
            v.sort_by(|x, y| x.0.cmp(&y.0));
        }
        let pick = |cluster: &str, ns: Value, stored: &BTreeMap<String, Vec<(String, Value)>>| {
            first_applicable(&c(cluster), &jobs(), &labels(ns), |cl| {
                stored
                    .get(cl.as_str())
                    .into_iter()
                    .flatten()
                    .map(|(n, v)| (n.as_str(), v))
            })
        };
        assert_eq!(
            pick("root:a", json!({"gpu": "yes"}), &stored).as_deref(),
            Some("root:a/a-gpu")
        );
        assert_eq!(
            pick("root:a", json!({}), &stored).as_deref(),
            Some("root:a/b-plain")
        );
        // root:a's targets do not include descendants: root's does.
        assert_eq!(
            pick("root:a:b", json!({}), &stored).as_deref(),
            Some("root/all")
        );
        assert_eq!(
            pick("root", json!({}), &stored).as_deref(),
            Some("root/all")
        );
        assert_eq!(
            pick("root:z", json!({}), &stored).as_deref(),
            Some("root/all")
        );
        // A target being deleted is skipped.
        stored.get_mut("root").unwrap()[0].1["metadata"]["deletionTimestamp"] =
            json!("2026-01-01T00:00:00Z");
        assert_eq!(pick("root:z", json!({}), &stored), None);
        let deploy = SyncedResource {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
        };
        let t = &stored["root:a"][0].1;
        assert!(applies(t, &c("root:a"), &c("root:a"), &deploy, &Map::new()));
        assert!(!applies(
            t,
            &c("root:a"),
            &c("root:a"),
            &jobs(),
            &Map::new()
        ));
        // Not a descendant (a sibling whose name starts alike).
        let all = json!({"spec": {"includeDescendants": true}});
        assert!(!applies(
            &all,
            &c("root:a"),
            &c("root:ab"),
            &jobs(),
            &Map::new()
        ));
        assert!(applies(
            &all,
            &c("root:a"),
            &c("root:a:b"),
            &jobs(),
            &Map::new()
        ));
    }

    #[test]
    fn target_refs_round_trip() {
        let r = target_ref(&c("root:acme"), "east");
        assert_eq!(r, "root:acme/east");
        assert_eq!(parse_target_ref(&r), Some((c("root:acme"), "east")));
        assert_eq!(parse_target_ref("root:acme"), None);
        assert_eq!(parse_target_ref("root:acme/"), None);
        assert_eq!(parse_target_ref("Bad/east"), None);
        assert_eq!(parse_target_ref("root/a/b"), None);
        assert_eq!(
            synced_resources(&json!({"spec": {"resources": []}})),
            [jobs()]
        );
    }
}
