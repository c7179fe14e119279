//! The query-string limits (docs/security.md, "Limits"), checked before authentication as
//! the request deadline filter is: the length of the query string (414) and the complexity
//! of label and field selectors (400): how many requirements, how many values in one
//! `in`/`notin`. kube-apiserver has neither limit; the defaults are far above what real
//! clients send.
//!
//! The selectors are counted lexically, without parsing them (the registry does that once):
//! a label selector's requirements are separated by commas outside parentheses and its set
//! values by commas inside them (label keys and values cannot hold either); a field
//! selector's requirements by commas not escaped with a backslash (upstream's
//! `splitTerms`).

use kplane_registry::ApiError;
use kplane_types::StatusReason;

use crate::limits::{Limits, Refusal};

/// Checks `query` against `limits`; the refusal says which limit it broke.
pub fn check(limits: &Limits, query: Option<&str>) -> Result<(), (Refusal, ApiError)> {
    let Some(query) = query else {
        return Ok(());
    };
    if query.len() > limits.max_query_length {
        let e = ApiError::new(
            StatusReason::BadRequest,
            format!(
                "the query string is {} bytes long, longer than the limit of {} bytes",
                query.len(),
                limits.max_query_length
            ),
        )
        .with_code(414);
        return Err((Refusal::QueryLength, e));
    }
    // Most requests carry no selector: look for one before decoding anything (a key
    // written with percent escapes is decoded like any other).
    if !query.contains("Selector=") && !query.contains('%') {
        return Ok(());
    }
    let selector_error = |m: String| (Refusal::SelectorComplexity, ApiError::bad_request(m));
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let counts = match k.as_ref() {
            "labelSelector" => label_counts(&v),
            "fieldSelector" => Counts {
                requirements: field_requirements(&v),
                largest_set: 0,
            },
            _ => continue,
        };
        if counts.requirements > limits.max_selector_requirements {
            return Err(selector_error(format!(
                "{k} has {} requirements, more than the limit of {}",
                counts.requirements, limits.max_selector_requirements
            )));
        }
        if counts.largest_set > limits.max_selector_values {
            return Err(selector_error(format!(
                "{k} has a requirement with {} values, more than the limit of {}",
                counts.largest_set, limits.max_selector_values
            )));
        }
    }
    Ok(())
}

/// What a selector asks for, counted.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    requirements: usize,
    /// The most values of one set requirement (`in`, `notin`).
    largest_set: usize,
}

fn label_counts(selector: &str) -> Counts {
    let mut counts = Counts {
        requirements: 0,
        largest_set: 0,
    };
    if selector.trim().is_empty() {
        return counts;
    }
    counts.requirements = 1;
    let mut set: Option<usize> = None;
    for c in selector.bytes() {
        match (c, set.as_mut()) {
            (b'(', None) => set = Some(1),
            (b')', Some(n)) => {
                counts.largest_set = counts.largest_set.max(*n);
                set = None;
            }
            (b',', Some(n)) => *n += 1,
            (b',', None) => counts.requirements += 1,
            _ => {}
        }
    }
    if let Some(n) = set {
        counts.largest_set = counts.largest_set.max(n);
    }
    counts
}

fn field_requirements(selector: &str) -> usize {
    if selector.trim().is_empty() {
        return 0;
    }
    let mut n = 1;
    let mut escaped = false;
    for c in selector.bytes() {
        match c {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b',' => n += 1,
            _ => {}
        }
    }
    n
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    fn encoded(k: &str, v: &str) -> String {
        form_urlencoded::Serializer::new(String::new())
            .append_pair(k, v)
            .finish()
    }

    fn refusal(query: &str) -> Option<(Refusal, u16, String)> {
        check(&limits(), Some(query))
            .err()
            .map(|(r, e)| (r, e.code(), e.0.message.clone()))
    }

    #[test]
    fn label_selectors_are_counted_by_requirement_and_set_size() {
        assert_eq!(
            label_counts("a=b,c in (x,y,z),!d,e notin (q)"),
            Counts {
                requirements: 4,
                largest_set: 3
            }
        );
        assert_eq!(label_counts("").requirements, 0);
        assert_eq!(field_requirements(r"a=b,c=x\,y,d!=e"), 3);
        assert_eq!(field_requirements(r"a=b\\,c=d"), 2);
    }

    #[test]
    fn query_length_at_above_and_ten_times_the_limit() {
        let max = limits().max_query_length;
        let at = format!("x={}", "a".repeat(max - 2));
        assert!(refusal(&at).is_none());
        let above = format!("x={}", "a".repeat(max - 1));
        let (r, code, message) = refusal(&above).unwrap();
        assert_eq!((r, code), (Refusal::QueryLength, 414));
        assert!(message.contains("limit of 32768 bytes"), "{message}");
        let ten = format!("x={}", "a".repeat(10 * max));
        assert_eq!(refusal(&ten).unwrap().1, 414);
    }

    #[test]
    fn selector_requirements_at_above_and_ten_times_the_limit() {
        let max = limits().max_selector_requirements;
        for (key, sep) in [("labelSelector", ","), ("fieldSelector", ",")] {
            let sel = |n: usize| {
                (0..n)
                    .map(|i| format!("k{i}=v"))
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            assert!(refusal(&encoded(key, &sel(max))).is_none());
            let (r, code, message) = refusal(&encoded(key, &sel(max + 1))).unwrap();
            assert_eq!((r, code), (Refusal::SelectorComplexity, 400));
            assert_eq!(
                message,
                format!("{key} has 101 requirements, more than the limit of 100")
            );
            assert!(refusal(&encoded(key, &sel(10 * max))).is_some());
        }
    }

    #[test]
    fn a_selector_key_written_with_percent_escapes_is_checked_too() {
        let sel: Vec<String> = (0..=limits().max_selector_requirements)
            .map(|i| format!("k{i}=v"))
            .collect();
        let query = encoded("labelSelector", &sel.join(",")).replacen(
            "labelSelector",
            "labelSelecto%72",
            1,
        );
        assert_eq!(
            refusal(&query).map(|(r, code, _)| (r, code)),
            Some((Refusal::SelectorComplexity, 400))
        );
    }

    #[test]
    fn set_values_at_above_and_ten_times_the_limit() {
        let max = limits().max_selector_values;
        let sel = |n: usize| {
            let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            format!("app in ({})", values.join(","))
        };
        assert!(refusal(&encoded("labelSelector", &sel(max))).is_none());
        let (r, _, message) = refusal(&encoded("labelSelector", &sel(max + 1))).unwrap();
        assert_eq!(r, Refusal::SelectorComplexity);
        assert_eq!(
            message,
            "labelSelector has a requirement with 1001 values, more than the limit of 1000"
        );
        assert!(refusal(&encoded("labelSelector", &sel(10 * max))).is_some());
    }

    #[test]
    fn requests_without_selectors_pass() {
        assert!(check(&limits(), None).is_ok());
        assert!(refusal("limit=500&watch=true").is_none());
    }
}
