//! `metav1.LabelSelector` in its JSON form: validation (`ValidateLabelSelector`), matching
//! a label set (`LabelSelectorAsSelector(...).Matches`), and printing it as Go's `%#v`
//! does inside field errors (with `map[string]string` label maps).

use kplane_types::{validation, Cause};
use serde_json::{json, Map, Value};

use super::pod_template::required;

/// `metav1.ValidateLabelSelector`: the labels of `matchLabels`, then each expression.
/// `allow_invalid_values` skips the label value check of expression values
/// (`AllowInvalidLabelValueInSelector`, set when the stored object already has such values).
pub fn validate_label_selector(sel: &Value, path: &str, allow_invalid_values: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(Value::Object(ml)) = sel.get("matchLabels") {
        causes.extend(validation::validate_labels(
            ml,
            &format!("{path}.matchLabels"),
        ));
    }
    for (i, e) in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        let p = format!("{path}.matchExpressions[{i}]");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        match op {
            "In" | "NotIn" if values.is_empty() => causes.push(required(
                format!("{p}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(Cause::forbidden(
                format!("{p}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => causes.push(Cause::invalid(
                format!("{p}.operator"),
                &json!(other),
                "not a valid selector operator",
            )),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        causes.extend(validation::validate_qualified_name(
            key,
            &format!("{p}.key"),
        ));
        for (j, v) in values.iter().enumerate().filter(|_| !allow_invalid_values) {
            let s = v.as_str().unwrap_or("");
            for msg in validation::is_valid_label_value(s) {
                causes.push(Cause::invalid(format!("{p}.values[{j}]"), &json!(s), &msg));
            }
        }
    }
    causes
}

/// Whether any expression value is not a valid label value
/// (`LabelSelectorHasInvalidLabelValue`).
pub fn has_invalid_label_value(sel: Option<&Value>) -> bool {
    sel.and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
        .is_some_and(|es| {
            es.iter().any(|e| {
                e.get("values").and_then(Value::as_array).is_some_and(|vs| {
                    vs.iter().any(|v| {
                        !validation::is_valid_label_value(v.as_str().unwrap_or("")).is_empty()
                    })
                })
            })
        })
}

/// Whether a `metav1.LabelSelector` selects `labels` (`LabelSelectorAsSelector`); None when
/// the selector does not convert (an unknown operator), as upstream then skips the check.
pub fn selector_matches(sel: &Value, labels: &Map<String, Value>) -> Option<bool> {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let mut ok = true;
    if let Some(Value::Object(ml)) = sel.get("matchLabels") {
        for (k, v) in ml {
            ok &= label(k) == v.as_str();
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
        let have = label(key);
        ok &= match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" if !values.is_empty() => have.is_some_and(|h| values.contains(&h)),
            "NotIn" if !values.is_empty() => have.is_none_or(|h| !values.contains(&h)),
            "Exists" if values.is_empty() => have.is_some(),
            "DoesNotExist" if values.is_empty() => have.is_none(),
            _ => return None,
        };
    }
    Some(ok)
}

/// Go's `%#v` of a `map[string]string` (sorted keys; `(nil)` when absent).
pub fn go_string_map(m: Option<&Value>) -> String {
    let Some(Value::Object(m)) = m else {
        return "map[string]string(nil)".into();
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let items: Vec<String> = keys
        .iter()
        .map(|k| {
            let v = m[k.as_str()].as_str().unwrap_or("");
            format!("{}:{}", validation::go_quote(k), validation::go_quote(v))
        })
        .collect();
    format!("map[string]string{{{}}}", items.join(", "))
}

fn go_strings(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".into(),
        Some(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|s| validation::go_quote(s.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// Go's `%#v` of a `metav1.LabelSelector`.
pub fn go_label_selector(sel: &Value) -> String {
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        validation::go_quote(e.get("key").and_then(Value::as_str).unwrap_or("")),
                        validation::go_quote(
                            e.get("operator").and_then(Value::as_str).unwrap_or("")
                        ),
                        go_strings(e.get("values")),
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        go_string_map(sel.get("matchLabels"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::render).collect()
    }

    #[test]
    fn selectors_match_like_label_selector_as_selector() {
        let labels = json!({"app": "x", "tier": "web"});
        let labels = labels.as_object().unwrap();
        let cases = [
            (json!({}), Some(true)),
            (json!({"matchLabels": {"app": "x"}}), Some(true)),
            (json!({"matchLabels": {"app": "y"}}), Some(false)),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "db"]}]}),
                Some(true),
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}),
                Some(false),
            ),
            (
                json!({"matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}]}),
                Some(true),
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
                Some(true),
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
                None,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "Near"}]}),
                None,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(selector_matches(&sel, labels), want, "{sel}");
        }
        assert_eq!(
            rendered(&validate_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]}, {"key": "c", "operator": "Near"}]}), "spec.selector", false)),
            [
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
            ]
        );
        // matchLabels are checked before the expressions, as upstream orders them.
        let both = json!({"matchExpressions": [{"key": "a", "operator": "Near"}],
            "matchLabels": {"b": "bad value"}});
        let fields: Vec<String> = validate_label_selector(&both, "s", false)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(fields, ["s.matchLabels", "s.matchExpressions[0].operator"]);
    }
}
