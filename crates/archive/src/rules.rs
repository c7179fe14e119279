//! The rules every record of an archive follows, checked by the writer (so it never
//! produces an archive the reader refuses) and by the reader:
//!
//! - its cluster is the header's cluster, or (recursive archives only) a descendant
//!   (`c == root || c.starts_with(root + ":")`);
//! - each cluster's records are contiguous, and come before any of its descendants';
//! - inside a cluster, the [`CRD_RESOURCE`] records come first, then every other record,
//!   each group in strictly increasing key order `(resource, namespace, name)` (which is
//!   also the storage's order); so no key appears twice;
//! - resource and name are not empty, and the value is one JSON object.

use std::collections::BTreeSet;

use crate::format::{Record, CRD_RESOURCE};

/// The state of the checks over one archive's records.
#[derive(Debug)]
pub(crate) struct Rules {
    root: String,
    recursive: bool,
    /// Clusters whose records have been seen (one entry per cluster, not per record).
    seen: BTreeSet<String>,
    /// The cluster of the previous record.
    current: Option<String>,
    /// The previous record's position in its cluster: (not a CRD, resource, namespace, name).
    last: Option<(bool, String, String, String)>,
}

impl Rules {
    pub(crate) fn new(root: &str, recursive: bool) -> Rules {
        Rules {
            root: root.to_owned(),
            recursive,
            seen: BTreeSet::new(),
            current: None,
            last: None,
        }
    }

    /// Checks the next record; the error says which rule it breaks.
    pub(crate) fn check(&mut self, rec: &Record) -> Result<(), String> {
        self.check_cluster(&rec.cluster)?;
        if rec.resource.is_empty() || rec.name.is_empty() {
            return Err(format!("{} has an empty resource or name", describe(rec)));
        }
        let pos = (
            rec.resource != CRD_RESOURCE,
            rec.resource.clone(),
            rec.namespace.clone(),
            rec.name.clone(),
        );
        if let Some(last) = &self.last {
            if pos <= *last {
                let why = if pos == *last {
                    "appears twice"
                } else {
                    "is out of order (inside a cluster: CustomResourceDefinitions first, then key order)"
                };
                return Err(format!("{} {why}", describe(rec)));
            }
        }
        check_value(&rec.value).map_err(|e| format!("the value of {} {e}", describe(rec)))?;
        self.last = Some(pos);
        Ok(())
    }

    fn check_cluster(&mut self, cluster: &str) -> Result<(), String> {
        if self.current.as_deref() == Some(cluster) {
            return Ok(());
        }
        let descendant = cluster
            .strip_prefix(self.root.as_str())
            .is_some_and(|rest| rest.starts_with(':') && rest.len() > 1);
        if cluster != self.root && !descendant {
            return Err(format!(
                "an object of cluster {cluster:?}, outside the archive's cluster {:?}",
                self.root
            ));
        }
        if descendant && !self.recursive {
            return Err(format!(
                "an object of cluster {cluster:?}, a descendant of {:?}, in an archive that is not recursive",
                self.root
            ));
        }
        if self.seen.contains(cluster) {
            return Err(format!(
                "the objects of cluster {cluster:?} are not contiguous (it appears again after other clusters)"
            ));
        }
        // Descendants of `cluster` sort in [cluster + ":", cluster + ";").
        let below = format!("{cluster}:");
        let above = format!("{cluster};");
        if let Some(d) = self.seen.range(below..above).next() {
            return Err(format!(
                "the objects of cluster {cluster:?} come after those of its descendant {d:?} (a cluster comes before its descendants)"
            ));
        }
        self.seen.insert(cluster.to_owned());
        self.current = Some(cluster.to_owned());
        self.last = None;
        Ok(())
    }
}

/// `root:a /configmaps default/x`.
fn describe(rec: &Record) -> String {
    if rec.namespace.is_empty() {
        format!("{} {} {}", rec.cluster, rec.resource, rec.name)
    } else {
        format!(
            "{} {} {}/{}",
            rec.cluster, rec.resource, rec.namespace, rec.name
        )
    }
}

/// Whether `value` is one JSON object (validated without building it).
fn check_value(value: &[u8]) -> Result<(), String> {
    let raw: &serde_json::value::RawValue =
        serde_json::from_slice(value).map_err(|e| format!("is not valid JSON ({e})"))?;
    if raw.get().starts_with('{') {
        Ok(())
    } else {
        Err("is not a JSON object".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(cluster: &str, resource: &str, namespace: &str, name: &str) -> Record {
        Record {
            cluster: cluster.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            value: b"{}".to_vec(),
        }
    }

    fn run(root: &str, recursive: bool, recs: &[Record]) -> Result<(), String> {
        let mut rules = Rules::new(root, recursive);
        recs.iter().try_for_each(|r| rules.check(r))
    }

    #[test]
    fn storage_order_and_depth_first_order_both_pass() {
        let storage_order = [
            rec("root:a", CRD_RESOURCE, "", "b.x.io"),
            rec("root:a", "/configmaps", "default", "x"),
            rec("root:a", "/configmaps", "default", "y"),
            rec("root:a", "/namespaces", "", "default"),
            rec("root:a-b", "/configmaps", "default", "x"),
            rec("root:a:x", CRD_RESOURCE, "", "a.x.io"),
            rec("root:a:x", "/configmaps", "default", "x"),
        ];
        run("root:a", true, &storage_order[..4]).unwrap();
        assert!(run("root:a", true, &storage_order)
            .unwrap_err()
            .contains("outside"));
        let mut depth_first = storage_order.to_vec();
        depth_first.remove(4);
        run("root:a", true, &depth_first).unwrap();
    }

    #[test]
    fn broken_rules_are_named() {
        let cases: Vec<(bool, Vec<Record>, &str)> = vec![
            (false, vec![rec("root:b", "/pods", "d", "x")], "outside"),
            (false, vec![rec("root:ab", "/pods", "d", "x")], "outside"),
            (
                false,
                vec![rec("root:a:x", "/pods", "d", "x")],
                "not recursive",
            ),
            (true, vec![rec("root:a:", "/pods", "d", "x")], "outside"),
            (
                true,
                vec![
                    rec("root:a:x", "/pods", "d", "x"),
                    rec("root:a", "/pods", "d", "x"),
                ],
                "descendant",
            ),
            (
                true,
                vec![
                    rec("root:a", "/pods", "d", "x"),
                    rec("root:a:x", "/pods", "d", "x"),
                    rec("root:a", "/pods", "d", "y"),
                ],
                "contiguous",
            ),
            (
                false,
                vec![
                    rec("root:a", "/pods", "d", "y"),
                    rec("root:a", "/pods", "d", "x"),
                ],
                "out of order",
            ),
            (
                false,
                vec![
                    rec("root:a", "/pods", "d", "x"),
                    rec("root:a", CRD_RESOURCE, "", "a.x.io"),
                ],
                "out of order",
            ),
            (
                false,
                vec![
                    rec("root:a", "/pods", "d", "x"),
                    rec("root:a", "/pods", "d", "x"),
                ],
                "twice",
            ),
            (false, vec![rec("root:a", "", "d", "x")], "empty"),
            (false, vec![rec("root:a", "/pods", "d", "")], "empty"),
        ];
        for (recursive, recs, want) in cases {
            let err = run("root:a", recursive, &recs).unwrap_err();
            assert!(err.contains(want), "{recs:?}: {err}");
        }
    }

    #[test]
    fn values_must_be_json_objects() {
        for (value, ok) in [
            (&b"{\"a\":[1]}"[..], true),
            (b" {}\n", true),
            (b"[]", false),
            (b"\"x\"", false),
            (b"{", false),
            (b"{} {}", false),
            (b"", false),
        ] {
            let mut r = rec("root", "/pods", "d", "x");
            r.value = value.to_vec();
            assert_eq!(run("root", false, &[r]).is_ok(), ok, "{value:?}");
        }
    }
}
