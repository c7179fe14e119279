//! Names on the host: the host namespace of a (logical cluster, namespace), the host name of
//! an object when every synced object shares one `--host-namespace`, and the label and
//! annotations that tie a host object to its source. All deterministic, so a restarted
//! syncer finds what an earlier one created instead of creating it again.

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

/// Label on every host object: the SyncTarget's name.
pub const TARGET_LABEL: &str = "sync.kplane.io/target";
/// Annotation on synced objects in kplane and on host objects: `<cluster>/<target>`.
pub const TARGET_ANNOTATION: &str = "sync.kplane.io/target";
/// Annotation kplane puts on objects read across clusters, and the syncer on host objects.
pub const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";
/// Host object annotations naming the source object.
pub const NAMESPACE_ANNOTATION: &str = "kplane.io/namespace";
pub const NAME_ANNOTATION: &str = "kplane.io/name";
pub const UID_ANNOTATION: &str = "kplane.io/uid";
/// The finalizer kplane adds to synced objects; the syncer releases it.
pub const SYNCER_FINALIZER: &str = "sync.kplane.io/syncer";

/// The longest DNS label (and the longest Job name, because of the `job-name` label).
const MAX_NAME: usize = 63;

/// The first `n` hex digits of sha256(`input`).
pub fn hash_hex(input: &str, n: usize) -> String {
    let mut hex = hex::encode(Sha256::digest(input.as_bytes()));
    hex.truncate(n);
    hex
}

/// The host namespace of the objects of namespace `namespace` in logical cluster `cluster`
/// when no `--host-namespace` is given: `kplane-<first 10 hex of sha256("<cluster>/<ns>")>`.
pub fn host_namespace(cluster: &str, namespace: &str) -> String {
    format!("kplane-{}", hash_hex(&format!("{cluster}/{namespace}"), 10))
}

/// The host name of object `name` of `cluster`/`namespace` inside one shared host namespace:
/// `<name>-<8 hex of sha256("<cluster>/<ns>/<name>")>`, the name part shortened so the result
/// stays a DNS label of at most 63 characters.
pub fn shared_namespace_name(cluster: &str, namespace: &str, name: &str) -> String {
    let hash = hash_hex(&format!("{cluster}/{namespace}/{name}"), 8);
    let keep = MAX_NAME - hash.len() - 1;
    let mut prefix: String = name.chars().take(keep).collect();
    // A DNS label or subdomain segment ends in an alphanumeric character.
    while prefix.ends_with(['-', '.']) {
        prefix.pop();
    }
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// Where the syncer puts host objects: one namespace per source namespace, or one shared
/// namespace with unique names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostLayout {
    PerNamespace,
    Shared(String),
}

impl HostLayout {
    /// The host namespace and name of source object `cluster`/`namespace`/`name` (Jobs and the
    /// Secrets, ConfigMaps and ServiceAccounts they reference alike).
    pub fn place(&self, cluster: &str, namespace: &str, name: &str) -> (String, String) {
        match self {
            HostLayout::PerNamespace => (host_namespace(cluster, namespace), name.to_owned()),
            HostLayout::Shared(ns) => (ns.clone(), shared_namespace_name(cluster, namespace, name)),
        }
    }
}

/// The identity of one SyncTarget: its logical cluster and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRef {
    pub cluster: String,
    pub name: String,
}

impl TargetRef {
    /// The value of the assignment annotation: `<cluster>/<name>`.
    pub fn annotation(&self) -> String {
        format!("{}/{}", self.cluster, self.name)
    }

    /// The label selector of this target's host objects.
    pub fn label_selector(&self) -> String {
        format!("{TARGET_LABEL}={}", self.name)
    }

    /// The name of the leader-election Lease in kube-system.
    pub fn lease_name(&self) -> String {
        format!("kplane-syncer-{}", self.name)
    }

    /// The label and annotations of a host object copied from `cluster`/`namespace`/`name`.
    pub fn host_marks(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let labels = BTreeMap::from([(TARGET_LABEL.to_owned(), self.name.clone())]);
        let mut annotations = BTreeMap::from([
            (CLUSTER_ANNOTATION.to_owned(), cluster.to_owned()),
            (NAMESPACE_ANNOTATION.to_owned(), namespace.to_owned()),
            (TARGET_ANNOTATION.to_owned(), self.annotation()),
        ]);
        if !name.is_empty() {
            annotations.insert(NAME_ANNOTATION.to_owned(), name.to_owned());
        }
        if !uid.is_empty() {
            annotations.insert(UID_ANNOTATION.to_owned(), uid.to_owned());
        }
        (labels, annotations)
    }
}

/// The logical cluster a kubeconfig's server URL path names: `/clusters/<path>[/...]`, or
/// `root` when the path names none.
pub fn cluster_of_path(path: &str) -> String {
    let rest = path.trim_start_matches('/');
    match rest.strip_prefix("clusters/") {
        Some(tail) => {
            let c = tail.split('/').next().unwrap_or_default();
            if c.is_empty() {
                "root".to_owned()
            } else {
                c.to_owned()
            }
        }
        None => "root".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dns_label(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    }

    #[test]
    fn host_namespaces_are_deterministic_dns_labels() {
        let a = host_namespace("root:acme", "default");
        assert_eq!(a, host_namespace("root:acme", "default"));
        assert_ne!(a, host_namespace("root:acme", "other"));
        assert_ne!(a, host_namespace("root:acme2", "default"));
        assert_eq!(a.len(), "kplane-".len() + 10);
        assert!(dns_label(&a), "{a}");
        // sha256("root:acme/default"), first 10 hex digits.
        assert_eq!(
            a,
            format!(
                "kplane-{}",
                &hex::encode(Sha256::digest(b"root:acme/default"))[..10]
            )
        );
    }

    #[test]
    fn shared_namespace_names_are_unique_and_short() {
        let a = shared_namespace_name("root:a", "default", "pi");
        let b = shared_namespace_name("root:b", "default", "pi");
        assert_ne!(a, b);
        assert!(a.starts_with("pi-") && a.len() == 11, "{a}");
        let long = "x".repeat(63);
        let n = shared_namespace_name("root:a", "default", &long);
        assert_eq!(n.len(), 63);
        assert!(dns_label(&n));
        // A cut that would end in '-' drops it.
        let dashy = format!("{}-{}", "y".repeat(53), "z".repeat(9));
        let n = shared_namespace_name("root:a", "default", &dashy);
        assert!(dns_label(&n), "{n}");
        assert!(n.len() <= 63);
    }

    #[test]
    fn layouts_place_objects() {
        let per = HostLayout::PerNamespace;
        assert_eq!(
            per.place("root:a", "ns", "job"),
            (host_namespace("root:a", "ns"), "job".to_owned())
        );
        let shared = HostLayout::Shared("jobs".into());
        let (ns, name) = shared.place("root:a", "ns", "job");
        assert_eq!(ns, "jobs");
        assert_eq!(name, shared_namespace_name("root:a", "ns", "job"));
    }

    #[test]
    fn clusters_from_server_paths() {
        assert_eq!(cluster_of_path(""), "root");
        assert_eq!(cluster_of_path("/"), "root");
        assert_eq!(cluster_of_path("/clusters/root:acme"), "root:acme");
        assert_eq!(cluster_of_path("/clusters/root:acme/"), "root:acme");
        assert_eq!(cluster_of_path("/clusters/"), "root");
    }

    #[test]
    fn target_marks() {
        let t = TargetRef {
            cluster: "root:acme".into(),
            name: "east".into(),
        };
        assert_eq!(t.annotation(), "root:acme/east");
        assert_eq!(t.lease_name(), "kplane-syncer-east");
        let (labels, ann) = t.host_marks("root:acme:t1", "default", "pi", "u-1");
        assert_eq!(labels[TARGET_LABEL], "east");
        assert_eq!(ann[CLUSTER_ANNOTATION], "root:acme:t1");
        assert_eq!(ann[UID_ANNOTATION], "u-1");
        assert_eq!(ann[TARGET_ANNOTATION], "root:acme/east");
    }
}
