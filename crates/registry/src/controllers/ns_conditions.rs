//! The `status.conditions` a Terminating namespace carries while it is emptied, with the
//! types, reasons and message formats of Kubernetes' namespace controller, so that
//! `kubectl describe namespace` and tools that parse the messages see what they expect.
//!
//! Pure: the deleter (`namespaces.rs`) gathers what remains and what failed, this module
//! turns it into conditions and merges them into the namespace's status.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The condition types the deleter maintains, in the order they are first added.
const TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// The `False` ("nothing wrong") variant of each condition type: reason and message.
fn ok_variant(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining" => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    }
}

/// What one pass of the deleter found.
#[derive(Debug, Default)]
pub struct DeletionReport {
    /// `<resource>.<group>` → instances still present.
    pub remaining: BTreeMap<String, usize>,
    /// finalizer → instances still carrying it.
    pub finalizers: BTreeMap<String, usize>,
    /// Errors deleting content, one per resource type.
    pub errors: Vec<String>,
}

impl DeletionReport {
    /// Records what is left of one served resource (`plural`, `group`).
    pub fn add_remaining(&mut self, plural: &str, group: &str, count: usize, fins: &[String]) {
        if count == 0 {
            return;
        }
        *self
            .remaining
            .entry(format!("{plural}.{group}"))
            .or_default() += count;
        for f in fins {
            *self.finalizers.entry(f.clone()).or_default() += 1;
        }
    }

    /// Whether the namespace's content is gone and nothing failed.
    pub fn is_clean(&self) -> bool {
        self.remaining.is_empty() && self.errors.is_empty()
    }

    /// The failing conditions (status `True`); types not listed here are healthy.
    fn failing(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut out = Vec::new();
        if !self.errors.is_empty() {
            let mut msgs = self.errors.clone();
            msgs.sort();
            out.push((
                "NamespaceDeletionContentFailure",
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    msgs.len(),
                    msgs.join(", ")
                ),
            ));
        }
        if !self.remaining.is_empty() {
            let mut parts: Vec<String> = self
                .remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect();
            parts.sort();
            out.push((
                "NamespaceContentRemaining",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", parts.join(", ")),
            ));
        }
        if !self.finalizers.is_empty() {
            let mut parts: Vec<String> = self
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            parts.sort();
            out.push((
                "NamespaceFinalizersRemaining",
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    parts.join(", ")
                ),
            ));
        }
        out
    }
}

/// Merges the report into `ns.status.conditions` as the namespace controller does: every
/// maintained type is present, `True` with details when failing, else its `False`
/// variant; `lastTransitionTime` changes only when the status flips. Returns whether
/// anything changed.
pub fn apply(ns: &mut Value, report: &DeletionReport, now: &str) -> bool {
    let failing = report.failing();
    let Some(status) = ns.as_object_mut().map(|o| {
        o.entry("status")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|s| s.entry("conditions").or_insert_with(|| json!([])))
    }) else {
        return false;
    };
    let Some(Value::Array(conds)) = status else {
        return false;
    };
    let mut changed = false;
    for kind in TYPES {
        let (st, reason, message) = match failing.iter().find(|(k, _, _)| *k == kind) {
            Some((_, r, m)) => ("True", *r, m.clone()),
            None => {
                let (r, m) = ok_variant(kind);
                ("False", r, m.to_string())
            }
        };
        let want = crate::conditions::Condition {
            ty: kind,
            status: st,
            reason,
            message: &message,
        };
        changed |= crate::conditions::set(conds, want, now, false);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond<'a>(ns: &'a Value, kind: &str) -> &'a Value {
        ns["status"]["conditions"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["type"] == kind))
            .unwrap()
    }

    #[test]
    fn remaining_content_with_finalizers_uses_upstream_wording() {
        let mut r = DeletionReport::default();
        r.add_remaining("configmaps", "", 1, &["example.com/block".into()]);
        let mut ns = json!({"status": {"phase": "Terminating"}});
        assert!(apply(&mut ns, &r, "2024-01-01T00:00:00Z"));
        let c = cond(&ns, "NamespaceContentRemaining");
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "SomeResourcesRemain");
        assert_eq!(
            c["message"],
            "Some resources are remaining: configmaps. has 1 resource instances"
        );
        let f = cond(&ns, "NamespaceFinalizersRemaining");
        assert_eq!(f["reason"], "SomeFinalizersRemain");
        assert_eq!(
            f["message"],
            "Some content in the namespace has finalizers remaining: example.com/block in 1 resource instances"
        );
        let d = cond(&ns, "NamespaceDeletionDiscoveryFailure");
        assert_eq!(d["status"], "False");
        assert_eq!(d["reason"], "ResourcesDiscovered");
        let types: Vec<&str> = ns["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, TYPES);
    }

    #[test]
    fn unchanged_report_is_not_a_change_and_flips_move_the_transition_time() {
        let mut r = DeletionReport::default();
        r.add_remaining("widgets", "example.com", 2, &["a".into(), "b".into()]);
        let mut ns = json!({});
        assert!(apply(&mut ns, &r, "t1"));
        assert!(!apply(&mut ns, &r, "t2"), "same report, no write");
        assert!(apply(&mut ns, &DeletionReport::default(), "t3"));
        let c = cond(&ns, "NamespaceContentRemaining");
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "ContentRemoved");
        assert_eq!(c["lastTransitionTime"], "t3");
        let f = cond(&ns, "NamespaceFinalizersRemaining");
        assert_eq!(f["reason"], "ContentHasNoFinalizers");
        assert_eq!(f["message"], "All content-preserving finalizers finished");
    }

    #[test]
    fn several_resources_and_errors_are_sorted() {
        let mut r = DeletionReport::default();
        r.add_remaining("widgets", "example.com", 2, &["x/b".into(), "x/a".into()]);
        r.add_remaining("configmaps", "", 1, &["x/b".into()]);
        r.errors = vec!["second".into(), "first".into()];
        let mut ns = json!({});
        apply(&mut ns, &r, "t");
        assert_eq!(
            cond(&ns, "NamespaceContentRemaining")["message"],
            "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 2 resource instances"
        );
        assert_eq!(
            cond(&ns, "NamespaceFinalizersRemaining")["message"],
            "Some content in the namespace has finalizers remaining: x/a in 1 resource instances, x/b in 2 resource instances"
        );
        let f = cond(&ns, "NamespaceDeletionContentFailure");
        assert_eq!(f["reason"], "ContentDeletionFailed");
        assert_eq!(
            f["message"],
            "Failed to delete all resource types, 2 remaining: first, second"
        );
    }
}
