//! The subset of Kubernetes JSONPath used by `additionalPrinterColumns`: `.a.b`, escaped
//! dots (`.a\.b`), `['key']`, `[n]`, `[*]`, and filters `[?(@.k=="v")]` / `!=`. Returns the
//! matches in document order; the printer uses the first.

use serde_json::Value;

/// One step of a parsed path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter {
        path: Vec<String>,
        equal: bool,
        value: String,
    },
}

/// Parses `{.a.b}` or `.a.b`; `None` when the expression is outside the supported subset.
fn parse(expr: &str) -> Option<Vec<Step>> {
    let e = expr.trim();
    let e = e
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(e)
        .trim();
    let e = e.strip_prefix('$').unwrap_or(e);
    let chars: Vec<char> = e.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                let mut name = String::new();
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    name.push(chars[i]);
                    i += 1;
                }
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let end = chars[i..].iter().position(|c| *c == ']')? + i;
                let inner: String = chars[i + 1..end].iter().collect();
                steps.push(bracket(inner.trim())?);
                i = end + 1;
            }
            _ => return None,
        }
    }
    Some(steps)
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches(|c| c == '\'' || c == '"')
}

fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Ok(n) = inner.parse::<usize>() {
        return Some(Step::Index(n));
    }
    if let Some(f) = inner.strip_prefix("?(").and_then(|x| x.strip_suffix(')')) {
        let (lhs, rhs, equal) = if let Some((l, r)) = f.split_once("==") {
            (l, r, true)
        } else {
            let (l, r) = f.split_once("!=")?;
            (l, r, false)
        };
        let path = lhs
            .trim()
            .strip_prefix("@.")?
            .split('.')
            .map(str::to_string)
            .collect();
        return Some(Step::Filter {
            path,
            equal,
            value: unquote(rhs).to_string(),
        });
    }
    if inner.starts_with('\'') || inner.starts_with('"') {
        return Some(Step::Field(unquote(inner).to_string()));
    }
    None
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Evaluates `expr` against `obj`; an unsupported expression matches nothing.
pub fn find<'a>(obj: &'a Value, expr: &str) -> Vec<&'a Value> {
    let Some(steps) = parse(expr) else {
        return vec![];
    };
    let mut cur: Vec<&Value> = vec![obj];
    for step in &steps {
        let mut next = Vec::new();
        for v in cur {
            match step {
                Step::Field(f) => next.extend(v.get(f.as_str())),
                Step::Index(n) => next.extend(v.as_array().and_then(|a| a.get(*n))),
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { path, equal, value } => {
                    for item in v.as_array().into_iter().flatten() {
                        let got = path
                            .iter()
                            .try_fold(item, |x, k| x.get(k.as_str()))
                            .map(scalar_text);
                        if (got.as_deref() == Some(value.as_str())) == *equal {
                            next.push(item);
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_indices_and_filters() {
        let o = json!({"spec": {"color": "red", "items": [{"n": 1}, {"n": 2}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        assert_eq!(find(&o, ".spec.color"), vec![&json!("red")]);
        assert_eq!(find(&o, "{.spec.items[1].n}"), vec![&json!(2)]);
        assert_eq!(find(&o, ".spec.items[*].n"), vec![&json!(1), &json!(2)]);
        assert_eq!(
            find(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(
            find(&o, ".metadata.labels.app\\.kubernetes\\.io/name"),
            vec![&json!("x")]
        );
        assert_eq!(
            find(&o, ".metadata.labels['app.kubernetes.io/name']"),
            vec![&json!("x")]
        );
        assert!(find(&o, ".spec.missing").is_empty());
        assert!(find(&o, "garbage(").is_empty());
    }
}
