//! Which SyncTarget an object is assigned to (issue 15's contract, "Assignment"), as one
//! rule for everything that assigns: the `SyncAssignment` admission plugin on create and
//! the SyncTarget controller (`controllers::sync_target`) for objects that existed before
//! their target, or whose namespace's labels changed so that they now match.
//!
//! The rule, over a cluster's effective SyncTargets (`sync_targets`: its own, then each
//! ancestor's with `includeDescendants`, nearest cluster first, by name within one): the
//! first target that is not being deleted, syncs the object's group and resource, and
//! whose `namespaceSelector` (if any) matches the labels of the object's namespace (a
//! cluster-scoped object: only targets without a selector) wins. An object is assigned to
//! at most one target. The names the sync path shares (annotation, finalizers) are the
//! SyncTarget strategy's, re-exported here with the condition type objects get.

use std::borrow::Borrow;

use kplane_types::ClusterName;
use serde_json::{Map, Value};

pub use crate::sync::targets::Applicable;

pub use crate::sync::spec::{
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

/// Whether target `t` takes an object of `group`/`plural` (namespaced or not) whose
/// namespace has `ns_labels` (the rule of the module doc, except the order).
pub fn applies(
    t: &Applicable,
    group: &str,
    plural: &str,
    namespaced: bool,
    ns_labels: &Map<String, Value>,
) -> bool {
    !t.spec.deleting
        && t.spec.syncs_resource(group, plural)
        && match t.spec.namespace_selector {
            None => true,
            Some(_) => namespaced && t.spec.selects_namespace(ns_labels),
        }
}

/// The target an object of `group`/`plural` whose namespace has `ns_labels` goes to:
/// the first of `effective` (a cluster's effective SyncTargets) that applies.
pub fn first_applicable<'a, T: Borrow<Applicable>>(
    effective: &'a [T],
    group: &str,
    plural: &str,
    namespaced: bool,
    ns_labels: &Map<String, Value>,
) -> Option<&'a Applicable> {
    effective
        .iter()
        .map(Borrow::borrow)
        .find(|t| applies(t, group, plural, namespaced, ns_labels))
}

/// The clusters whose SyncTargets may apply to an object of `cluster`, nearest first: the
/// cluster itself, then its ancestors up to the root.
pub fn candidate_clusters(cluster: &ClusterName) -> Vec<ClusterName> {
    std::iter::successors(Some(cluster.clone()), ClusterName::parent).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    fn t(cluster: &str, name: &str, spec: Value) -> Applicable {
        Applicable {
            cluster: c(cluster),
            spec: TargetSpec::of(&json!({"metadata": {"name": name}, "spec": spec})),
        }
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// The first applicable target of the effective list wins; a selector, the resource
    /// list and deletion exclude a target; cluster-scoped objects only go to targets
    /// without a selector.
    #[test]
    fn the_first_applicable_target_wins() {
        let mut effective = vec![
            t(
                "root:a",
                "0-deployments",
                json!({"resources": [{"group": "apps", "version": "v1", "resource": "deployments"}]}),
            ),
            t(
                "root:a",
                "a-gpu",
                json!({"namespaceSelector": {"matchLabels": {"gpu": "yes"}}}),
            ),
            t("root:a", "b-plain", json!({})),
            t("root", "all", json!({"includeDescendants": true})),
        ];
        let pick = |e: &[Applicable], ns: Value, namespaced: bool| {
            first_applicable(e, "batch", "jobs", namespaced, &labels(ns)).map(Applicable::reference)
        };
        assert_eq!(
            pick(&effective, json!({"gpu": "yes"}), true).as_deref(),
            Some("root:a/a-gpu")
        );
        assert_eq!(
            pick(&effective, json!({}), true).as_deref(),
            Some("root:a/b-plain")
        );
        assert_eq!(
            pick(&effective, json!({"gpu": "yes"}), false).as_deref(),
            Some("root:a/b-plain")
        );
        effective[2].spec.deleting = true;
        assert_eq!(
            pick(&effective, json!({}), true).as_deref(),
            Some("root/all")
        );
        effective[3].spec.deleting = true;
        assert_eq!(pick(&effective, json!({}), true), None);
        assert!(applies(
            &effective[0],
            "apps",
            "deployments",
            true,
            &Map::new()
        ));
        assert!(!applies(&effective[0], "batch", "jobs", true, &Map::new()));
        assert_eq!(
            candidate_clusters(&c("root:a:b")),
            [c("root:a:b"), c("root:a"), c("root")]
        );
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
            synced_resources(&json!({"spec": {"resources": []}})).len(),
            1
        );
    }
}
