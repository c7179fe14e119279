//! Whether a policy's `matchConstraints` or a binding's `matchResources` select a request
//! (`policy/matching.Matcher.Matches`): `excludeResourceRules` first, then
//! `resourceRules` (an empty list selects everything; `resourceNames` limit a rule to
//! those names), each under `matchPolicy: Equivalent` also against the resources that
//! share the request's storage; then the object and namespace selectors. The rules and
//! selectors themselves are the webhooks' (`webhooks::matching`).

use std::sync::Arc;

use super::model::{MatchResources, NamedRule};
use crate::catalog::{Catalog, ResourceType};
use crate::webhooks::matching::{equivalents, rule_matches, Request};

fn named_matches(rules: &[NamedRule], r: &Request<'_>, name: &str) -> bool {
    rules.iter().any(|n| {
        rule_matches(&n.rule, r) && (n.names.is_empty() || n.names.iter().any(|x| x == name))
    })
}

/// The resource the rules select the request through (`matchesResourceRules`): the
/// request's own, else an equivalent one (unless `exact`); `None` when none does.
fn rules_select(
    rules: &[NamedRule],
    exact: bool,
    r: &Request<'_>,
    name: &str,
    rt: &Arc<ResourceType>,
    catalog: &Catalog,
) -> Option<Arc<ResourceType>> {
    if named_matches(rules, r, name) {
        return Some(rt.clone());
    }
    if exact {
        return None;
    }
    let eqs = equivalents(rt, r.subresource, catalog);
    for rule in rules {
        for eq in &eqs {
            let other = Request {
                group: &eq.group,
                version: &eq.version,
                resource: &eq.plural,
                ..*r
            };
            if named_matches(std::slice::from_ref(rule), &other, name) {
                return Some(eq.clone());
            }
        }
    }
    None
}

/// The resource `mr`'s rules select the request `r` (of object `name`) through, or `None`
/// when they do not select it. The selectors are checked by the caller.
pub fn select(
    mr: &MatchResources,
    r: &Request<'_>,
    name: &str,
    rt: &Arc<ResourceType>,
    catalog: &Catalog,
) -> Option<Arc<ResourceType>> {
    if rules_select(&mr.exclude, mr.exact, r, name, rt, catalog).is_some() {
        return None;
    }
    if mr.rules.is_empty() {
        return Some(rt.clone());
    }
    rules_select(&mr.rules, mr.exact, r, name, rt, catalog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::chain::Operation;
    use crate::policies::model::match_resources;
    use serde_json::json;

    fn catalog() -> Catalog {
        Catalog::new(crate::builtin_types::builtin())
    }

    fn req(
        op: Operation,
        group: &'static str,
        resource: &'static str,
        ns: &'static str,
    ) -> Request<'static> {
        Request {
            operation: op,
            group,
            version: "v1",
            resource,
            subresource: "",
            namespace: ns,
            is_namespace: false,
        }
    }

    fn jobs(c: &Catalog) -> Arc<ResourceType> {
        c.get("batch", "v1", "jobs")
            .cloned()
            .expect("jobs are served")
    }

    #[test]
    fn rules_names_and_exclusions() {
        let c = catalog();
        let rt = jobs(&c);
        let r = req(Operation::Create, "batch", "jobs", "default");
        let mr = match_resources(&json!({
            "resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["batch"],
                               "apiVersions": ["v1"], "resources": ["jobs"]}]}));
        assert!(select(&mr, &r, "a", &rt, &c).is_some());
        let del = req(Operation::Delete, "batch", "jobs", "default");
        assert!(select(&mr, &del, "a", &rt, &c).is_none());
        let named = match_resources(&json!({
            "resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                               "resources": ["*"], "resourceNames": ["b"]}]}));
        assert!(select(&named, &r, "a", &rt, &c).is_none());
        assert!(select(&named, &r, "b", &rt, &c).is_some());
        let excluded = match_resources(&json!({
            "resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                               "resources": ["*"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["batch"],
                                      "apiVersions": ["*"], "resources": ["jobs"],
                                      "resourceNames": ["secret-job"]}]}));
        assert!(select(&excluded, &r, "a", &rt, &c).is_some());
        assert!(select(&excluded, &r, "secret-job", &rt, &c).is_none());
        // an empty rule list (a binding's matchResources without rules) selects everything
        let all = match_resources(&json!({"namespaceSelector": {}}));
        assert!(select(&all, &r, "x", &rt, &c).is_some());
        let scoped = match_resources(&json!({
            "resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                               "resources": ["*"], "scope": "Cluster"}]}));
        assert!(select(&scoped, &r, "a", &rt, &c).is_none());
    }

    #[test]
    fn equivalent_resources_unless_exact() {
        let c = catalog();
        let Some(core) = c.get("", "v1", "events").cloned() else {
            return;
        };
        let r = req(Operation::Create, "", "events", "default");
        let json_mr = |policy: &str| {
            match_resources(&json!({
                "matchPolicy": policy,
                "resourceRules": [{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"],
                                   "apiVersions": ["v1"], "resources": ["events"]}]}))
        };
        let via = select(&json_mr("Equivalent"), &r, "e", &core, &c).expect("equivalent");
        assert_eq!(via.group, "events.k8s.io");
        assert!(select(&json_mr("Exact"), &r, "e", &core, &c).is_none());
    }
}
