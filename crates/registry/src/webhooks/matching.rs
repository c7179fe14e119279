//! Which webhooks a request calls (`generic.Webhook.ShouldCallHook` and the predicates
//! under `admission/plugin/webhook/predicates`): a rule's operations, API groups,
//! versions, resources (with `res/sub`, `*/sub`, `res/*`, `*/*`) and scope; under
//! `matchPolicy: Equivalent`, the same rules against the other resources that share the
//! request's storage (another version of a custom resource, core and events.k8s.io
//! Events); the object selector against the new or the old object's labels; the namespace
//! selector against the labels of the request's namespace.

use std::sync::Arc;

use kplane_types::labels::LabelSelector;
use serde_json::{Map, Value};

use super::model::{Rule, Webhook};
use crate::admission::chain::Operation;
use crate::catalog::{Catalog, ResourceType};

/// What a rule is matched against.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    /// "" without a subresource.
    pub subresource: &'a str,
    /// The namespace; for a Namespace itself, its name (as upstream's attributes carry
    /// it).
    pub namespace: &'a str,
    /// Whether the resource is core v1 `namespaces`.
    pub is_namespace: bool,
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// `rules.Matcher.Matches`.
pub fn rule_matches(rule: &Rule, r: &Request<'_>) -> bool {
    let scope = match rule.scope.as_str() {
        "Namespaced" => !r.is_namespace && !r.namespace.is_empty(),
        "Cluster" => r.is_namespace || r.namespace.is_empty(),
        _ => true,
    };
    let op = r.operation.as_str();
    scope
        && rule.operations.iter().any(|o| o == "*" || o == op)
        && exact_or_wildcard(&rule.api_groups, r.group)
        && exact_or_wildcard(&rule.api_versions, r.version)
        && rule.resources.iter().any(|res_sub| {
            let (res, sub) = res_sub.split_once('/').unwrap_or((res_sub, ""));
            (res == "*" || res == r.resource) && (sub == "*" || sub == r.subresource)
        })
}

/// The resource a webhook is called for: the request's own when a rule matches it, else
/// (under `matchPolicy: Equivalent`) the first equivalent resource a rule matches, in rule
/// order. `None`: the webhook is not called.
pub fn matched_resource(
    hook: &Webhook,
    r: &Request<'_>,
    rt: &Arc<ResourceType>,
    catalog: Option<&Catalog>,
) -> Option<Arc<ResourceType>> {
    if hook.rules.iter().any(|rule| rule_matches(rule, r)) {
        return Some(rt.clone());
    }
    if hook.exact {
        return None;
    }
    let equivalents = equivalents(rt, r.subresource, catalog?);
    for rule in &hook.rules {
        for eq in &equivalents {
            let other = Request {
                group: &eq.group,
                version: &eq.version,
                resource: &eq.plural,
                ..*r
            };
            if rule_matches(rule, &other) {
                return Some(eq.clone());
            }
        }
    }
    None
}

/// The other served resources stored as `rt` is (kube-apiserver keys its equivalent
/// resource registry by storage prefix), that have `subresource` when one is asked.
pub(crate) fn equivalents(
    rt: &ResourceType,
    subresource: &str,
    catalog: &Catalog,
) -> Vec<Arc<ResourceType>> {
    catalog
        .all()
        .iter()
        .filter(|o| o.storage_resource == rt.storage_resource)
        .filter(|o| !(o.group == rt.group && o.version == rt.version && o.plural == rt.plural))
        .filter(|o| subresource.is_empty() || o.has_subresource(subresource))
        .cloned()
        .collect()
}

/// An object's labels.
pub fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `object.Matcher.MatchObjectSelector`: an empty selector matches; otherwise the new or
/// the old object must match (neither present: no match).
pub fn object_selector_matches(
    sel: &LabelSelector,
    new: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    sel.is_empty()
        || [new, old]
            .into_iter()
            .flatten()
            .any(|o| sel.matches(&labels_of(o)))
}

/// Whether the namespace selector needs the namespace's labels at all
/// (`MatchNamespaceSelector`: a cluster-scoped request other than a Namespace's, or an
/// empty selector, matches).
pub fn needs_namespace_labels(sel: &LabelSelector, r: &Request<'_>) -> bool {
    !sel.is_empty() && (r.is_namespace || !r.namespace.is_empty())
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
