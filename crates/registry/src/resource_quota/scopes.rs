//! Which pods a scoped quota counts (upstream's pod evaluator, `podMatchesScopeFunc`): a
//! quota's `spec.scopes` (each an `Exists` requirement) and `spec.scopeSelector`'s
//! `matchExpressions`, all of which a pod must match:
//!
//! - `Terminating` / `NotTerminating`: `spec.activeDeadlineSeconds` set and at least 0, or
//!   not;
//! - `BestEffort` / `NotBestEffort`: the pod's QoS class (`qos.GetPodQOS`) is
//!   `BestEffort`, or not;
//! - `PriorityClass`: `spec.priorityClassName` under the requirement's operator (`Exists`,
//!   `DoesNotExist`, `In`, `NotIn` over its values; an empty name is no class);
//! - `CrossNamespacePodAffinity`: a pod (anti-)affinity term, required or preferred, that
//!   names namespaces or has a namespace selector.
//!
//! Object counts never match a scope (upstream's object-count evaluators match none).

use serde_json::Value;

/// One requirement on the pods a quota counts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    scope: String,
    operator: String,
    values: Vec<String>,
}

/// A quota's scopes, as requirements on pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodScopes(Vec<Requirement>);

impl PodScopes {
    /// The scopes of `quota` (none: every pod matches).
    pub fn of(quota: &Value) -> PodScopes {
        let str_of =
            |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let mut out = Vec::new();
        for s in quota
            .pointer("/spec/scopes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            out.push(Requirement {
                scope: s.to_string(),
                operator: "Exists".into(),
                values: Vec::new(),
            });
        }
        for e in quota
            .pointer("/spec/scopeSelector/matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push(Requirement {
                scope: str_of(e, "scopeName"),
                operator: str_of(e, "operator"),
                values: e
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            });
        }
        PodScopes(out)
    }

    /// Whether the quota has scopes.
    pub fn is_scoped(&self) -> bool {
        !self.0.is_empty()
    }

    /// Whether `pod` matches every scope.
    pub fn matches(&self, pod: &Value) -> bool {
        self.0.iter().all(|r| r.matches(pod))
    }
}

impl Requirement {
    fn matches(&self, pod: &Value) -> bool {
        let spec = pod.get("spec").unwrap_or(&Value::Null);
        match self.scope.as_str() {
            "Terminating" => terminating(spec),
            "NotTerminating" => !terminating(spec),
            "BestEffort" => best_effort(spec),
            "NotBestEffort" => !best_effort(spec),
            "PriorityClass" => {
                let class = spec
                    .get("priorityClassName")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty());
                match self.operator.as_str() {
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    "In" => class.is_some_and(|c| self.values.iter().any(|v| v == c)),
                    "NotIn" => class.is_none_or(|c| !self.values.iter().any(|v| v == c)),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
            _ => false,
        }
    }
}

/// `isTerminating`: an `activeDeadlineSeconds` of 0 or more.
fn terminating(spec: &Value) -> bool {
    spec.get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

fn best_effort(spec: &Value) -> bool {
    crate::pod::qos_class(spec) == "BestEffort"
}

/// `usesCrossNamespacePodAffinity`: a pod affinity or anti-affinity term (required, or the
/// term of a preferred one) with namespaces or a namespace selector.
fn cross_namespace_affinity(spec: &Value) -> bool {
    let term_crosses = |t: &Value| {
        t.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(a) = spec.pointer(&format!("/affinity/{kind}")) else {
            return false;
        };
        let required = a
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(term_crosses);
        let preferred = a
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm"))
            .any(term_crosses);
        required || preferred
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> Value {
        json!({"spec": spec})
    }

    #[test]
    fn each_scope_matches_the_pods_upstream_counts() {
        let burstable =
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]});
        let best = json!({"containers": [{"name": "c"}]});
        let deadline = json!({"activeDeadlineSeconds": 0, "containers": [{"name": "c"}]});
        let quota = |scopes: Value| json!({"spec": {"scopes": scopes}});
        let m = |q: &Value, spec: &Value| PodScopes::of(q).matches(&pod(spec.clone()));

        assert!(m(&quota(json!(["BestEffort"])), &best));
        assert!(!m(&quota(json!(["BestEffort"])), &burstable));
        assert!(m(&quota(json!(["NotBestEffort"])), &burstable));
        assert!(m(&quota(json!(["Terminating"])), &deadline));
        assert!(!m(&quota(json!(["Terminating"])), &best));
        assert!(m(&quota(json!(["NotTerminating"])), &best));
        assert!(!m(
            &quota(json!(["NotTerminating", "BestEffort"])),
            &deadline
        ));
        assert!(m(&quota(json!(["Terminating", "BestEffort"])), &deadline));
        assert!(PodScopes::of(&json!({"spec": {}})).matches(&pod(best.clone())));
        assert!(!PodScopes::of(&json!({"spec": {}})).is_scoped());
    }

    #[test]
    fn priority_class_requirements_are_a_label_selector_over_the_class() {
        let sel = |op: &str, values: Value| {
            json!({"spec": {"scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": op, "values": values}]}}})
        };
        let high = pod(json!({"priorityClassName": "high", "containers": []}));
        let none = pod(json!({"priorityClassName": "", "containers": []}));
        let m = |q: Value, p: &Value| PodScopes::of(&q).matches(p);
        assert!(m(sel("In", json!(["high", "x"])), &high));
        assert!(!m(sel("In", json!(["low"])), &high));
        assert!(!m(sel("In", json!(["high"])), &none));
        assert!(m(sel("NotIn", json!(["low"])), &high));
        assert!(m(sel("NotIn", json!(["high"])), &none));
        assert!(!m(sel("NotIn", json!(["high"])), &high));
        assert!(m(sel("Exists", json!([])), &high));
        assert!(!m(sel("Exists", json!([])), &none));
        assert!(m(sel("DoesNotExist", json!([])), &none));
    }

    #[test]
    fn cross_namespace_affinity_is_a_term_naming_namespaces_or_a_selector() {
        let q = json!({"spec": {"scopeSelector": {"matchExpressions": [
            {"scopeName": "CrossNamespacePodAffinity", "operator": "Exists"}]}}});
        let scopes = PodScopes::of(&q);
        let with = |affinity: Value| pod(json!({"affinity": affinity, "containers": []}));
        assert!(scopes.matches(&with(json!({"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "namespaces": ["a"]}]}}))));
        assert!(scopes.matches(&with(json!({"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}}))));
        assert!(!scopes.matches(&with(json!({"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "namespaces": []}]}}))));
        assert!(!scopes.matches(&pod(json!({"containers": []}))));
    }
}
