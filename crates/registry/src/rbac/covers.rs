//! Rule coverage, as upstream's `pkg/registry/rbac/validation` (`Covers`, `BreakdownRule`,
//! `CompactRules`, `CompactString`): whether the rules a user holds cover the rules they
//! try to grant, and upstream's description of what is missing.
//!
//! Each granted rule is broken down into single tuples (one group, resource, verb and at
//! most one resourceName; or one nonResourceURL and verb); each tuple must be covered by one
//! held rule (`*` covers everything in its field, `*/sub` covers every resource's `sub`, a
//! held rule with resourceNames covers only tuples naming one of them, a nonResourceURL
//! ending in `*` covers by prefix).

use super::rules::{Rule, ALL};

/// `BreakdownRule`: `rule` as single tuples.
pub fn breakdown(rule: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = Rule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: one(verb),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(Rule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Rule {
                non_resource_urls: one(url),
                verbs: one(verb),
                ..Default::default()
            });
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resources_cover(held: &[String], wanted: &[String]) -> bool {
    if has(held, ALL) || has_all(held, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        if has(held, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(held, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn url_covers(held: &str, wanted: &str) -> bool {
    held == wanted
        || held
            .strip_suffix('*')
            .is_some_and(|_| wanted.starts_with(held.trim_end_matches('*')))
}

/// `ruleCovers`: whether `held` covers the single tuple `sub`.
fn rule_covers(held: &Rule, sub: &Rule) -> bool {
    let verbs = has(&held.verbs, ALL) || has_all(&held.verbs, &sub.verbs);
    let groups = has(&held.api_groups, ALL) || has_all(&held.api_groups, &sub.api_groups);
    let resources = resources_cover(&held.resources, &sub.resources);
    let urls = sub
        .non_resource_urls
        .iter()
        .all(|u| held.non_resource_urls.iter().any(|h| url_covers(h, u)));
    let names = if sub.resource_names.is_empty() {
        held.resource_names.is_empty()
    } else {
        held.resource_names.is_empty() || has_all(&held.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// `Covers`: the tuples of `wanted` that no rule of `held` covers (empty: covered).
pub fn uncovered(held: &[Rule], wanted: &[Rule]) -> Vec<Rule> {
    wanted
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !held.iter().any(|h| rule_covers(h, sub)))
        .collect()
}

/// `CompactRules`: tuples of one group, one resource and at most one resourceName that
/// differ only by verb are merged (verbs in order of appearance).
pub fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for r in rules {
        let is_simple = r.resource_names.len() <= 1
            && r.non_resource_urls.is_empty()
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r);
            continue;
        }
        let same = simple.iter_mut().find(|s| {
            s.api_groups == r.api_groups
                && s.resources == r.resources
                && s.resource_names == r.resource_names
        });
        match same {
            Some(s) => {
                for v in r.verbs {
                    if !s.verbs.contains(&v) {
                        s.verbs.push(v);
                    }
                }
            }
            None => simple.push(r),
        }
    }
    out.extend(simple);
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// `CompactString`: e.g. `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`.
pub fn compact_string(r: &Rule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", &r.api_groups),
        ("Resources", &r.resources),
        ("NonResourceURLs", &r.non_resource_urls),
        ("ResourceNames", &r.resource_names),
        ("Verbs", &r.verbs),
    ]
    .iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| format!("{k}:{}", go_quoted(v)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// `ConfirmNoEscalation`'s refusal when `held` does not cover `wanted`: `None` when it
/// does. `errors` are the rule resolution errors met while collecting `held`.
pub fn escalation_message(
    user: &str,
    groups: &[String],
    held: &[Rule],
    wanted: &[Rule],
    errors: &[String],
) -> Option<String> {
    let missing = uncovered(held, wanted);
    if missing.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let mut msg = format!(
        "user {user:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quoted(groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        Rule::resource(verbs, groups, resources)
    }

    /// Upstream's `TestCoversExactMatch` and friends, as (held, wanted, covered).
    #[test]
    fn coverage_as_upstream() {
        let cases: Vec<(Vec<Rule>, Vec<Rule>, bool)> = vec![
            (
                vec![r(&["get"], &[""], &["secrets"])],
                vec![r(&["get"], &[""], &["secrets"])],
                true,
            ),
            (
                vec![r(&["get"], &[""], &["secrets"])],
                vec![r(&["get", "list"], &[""], &["secrets"])],
                false,
            ),
            (
                vec![r(&["*"], &[""], &["secrets"])],
                vec![r(&["get", "list"], &[""], &["secrets"])],
                true,
            ),
            (
                vec![r(&["get"], &["*"], &["*"])],
                vec![r(&["get"], &["apps", ""], &["a", "b/c"])],
                true,
            ),
            (
                vec![r(&["get"], &[""], &["*/scale"])],
                vec![r(&["get"], &[""], &["deployments/scale"])],
                true,
            ),
            (
                vec![r(&["get"], &[""], &["*/scale"])],
                vec![r(&["get"], &[""], &["deployments"])],
                false,
            ),
            (
                vec![r(&["get"], &[""], &["deployments"])],
                vec![r(&["get"], &[""], &["deployments/scale"])],
                false,
            ),
            // resourceNames: a named held rule covers only those names.
            (
                vec![r(&["get"], &[""], &["cm"]).named(&["a"])],
                vec![r(&["get"], &[""], &["cm"]).named(&["a"])],
                true,
            ),
            (
                vec![r(&["get"], &[""], &["cm"]).named(&["a"])],
                vec![r(&["get"], &[""], &["cm"])],
                false,
            ),
            (
                vec![r(&["get"], &[""], &["cm"])],
                vec![r(&["get"], &[""], &["cm"]).named(&["a", "b"])],
                true,
            ),
            (
                vec![r(&["get"], &[""], &["cm"]).named(&["a"])],
                vec![r(&["get"], &[""], &["cm"]).named(&["a", "b"])],
                false,
            ),
            // nonResourceURLs.
            (
                vec![Rule::urls(&["get"], &["/api/*"])],
                vec![Rule::urls(&["get"], &["/api/v1", "/api/v1/x"])],
                true,
            ),
            (
                vec![Rule::urls(&["get"], &["/api/*"])],
                vec![Rule::urls(&["get"], &["/api"])],
                false,
            ),
            (
                vec![Rule::urls(&["get"], &["/api/*"])],
                vec![Rule::urls(&["get"], &["/apis"])],
                false,
            ),
            (
                vec![Rule::urls(&["*"], &["*"])],
                vec![Rule::urls(&["post"], &["/x"])],
                true,
            ),
            (
                vec![r(&["*"], &["*"], &["*"])],
                vec![Rule::urls(&["get"], &["/x"])],
                false,
            ),
            // A rule granting nothing is always covered.
            (vec![], vec![r(&[], &[""], &["cm"])], true),
        ];
        for (i, (held, wanted, covered)) in cases.iter().enumerate() {
            assert_eq!(uncovered(held, wanted).is_empty(), *covered, "case {i}");
        }
    }

    #[test]
    fn the_message_is_upstreams() {
        let held = vec![r(&["get"], &[""], &["configmaps"])];
        let wanted = vec![
            r(&["get", "list"], &[""], &["secrets"]),
            r(&["get"], &[""], &["configmaps"]),
            r(&["get"], &["apps"], &["deployments"]).named(&["a", "b"]),
            Rule::urls(&["get"], &["/metrics"]),
        ];
        let groups = vec!["dev".to_string(), "system:authenticated".to_string()];
        let msg = escalation_message("bob", &groups, &held, &wanted, &[]).unwrap();
        assert_eq!(
            msg,
            "user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"a\"], Verbs:[\"get\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], ResourceNames:[\"b\"], Verbs:[\"get\"]}\n\
             {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
        );
        assert!(escalation_message("bob", &groups, &held, &held, &[]).is_none());
        let errs = vec!["clusterroles.rbac.authorization.k8s.io \"x\" not found".to_string()];
        let msg = escalation_message("bob", &[], &[], &held, &errs).unwrap();
        assert!(msg.ends_with("Verbs:[\"get\"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io \"x\" not found]"), "{msg}");
    }
}
