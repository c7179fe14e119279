//! Shared run state: options, the connection target, the run id, where objects go (scopes:
//! logical cluster × namespace) and how ConfigMap bodies and names are made.

use std::sync::{Arc, Mutex};

use anyhow::{bail, Result};
use bytes::Bytes;

use crate::cli::Opts;
use crate::client::{Conn, Target};
use crate::kubeconfig::Endpoint;

/// Label holding the run id on every object the benchmark creates.
pub const RUN_LABEL: &str = "kplane-bench/run";
/// Label holding the scenario name.
pub const SCENARIO_LABEL: &str = "kplane-bench/scenario";

/// One place objects live in: a path prefix (`""`, `/clusters/root:x`, ...) and a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub prefix: String,
    pub namespace: String,
}

impl Scope {
    /// `{prefix}/api/v1/namespaces/{ns}/configmaps`.
    pub fn configmaps(&self) -> String {
        format!(
            "{}/api/v1/namespaces/{}/configmaps",
            self.prefix, self.namespace
        )
    }

    /// `{prefix}/api/v1/namespaces/{ns}/configmaps/{name}`.
    pub fn configmap(&self, name: &str) -> String {
        format!("{}/{name}", self.configmaps())
    }

    /// `{prefix}/api/v1/namespaces`.
    pub fn namespaces(&self) -> String {
        format!("{}/api/v1/namespaces", self.prefix)
    }

    /// `{prefix}/api/v1/namespaces/{ns}`.
    pub fn namespace_path(&self) -> String {
        format!("{}/api/v1/namespaces/{}", self.prefix, self.namespace)
    }
}

/// Everything the scenarios share.
pub struct Ctx {
    pub opts: Opts,
    pub endpoint: Endpoint,
    pub target: Arc<Target>,
    /// Every server: `target` first, then the `--replica-kubeconfig` servers.
    pub targets: Vec<Arc<Target>>,
    /// The `--rbac-token` user's target (the endpoint with that token, no client certificate).
    pub rbac_target: Option<Arc<Target>>,
    /// Short random id that makes names and labels of this run unique.
    pub run: String,
    /// Spread scopes for create/get/update/mixed (clusters × namespaces); first is the base.
    pub scopes: Vec<Scope>,
    /// The data value, `--size` bytes.
    pad: String,
    /// Namespaces this run created (deleted at the end unless --keep).
    pub created_namespaces: Mutex<Vec<Scope>>,
    /// Namespaces deleted at the end (waited for until gone).
    pub deleted_namespaces: Mutex<Vec<Scope>>,
    /// Time the last scenario's cleanup took, until its objects were gone, in ms.
    pub last_cleanup_ms: std::sync::atomic::AtomicU64,
}

impl Ctx {
    /// `replicas`: endpoints of more servers on the same store (same path prefix).
    pub fn new(opts: Opts, endpoint: Endpoint, replicas: &[Endpoint]) -> Result<Ctx> {
        let target = Arc::new(Target::new(&endpoint, opts.request_timeout)?);
        let mut targets = vec![target.clone()];
        for r in replicas {
            if r.server.path != endpoint.server.path {
                bail!(
                    "a replica's server URL must have the first server's path prefix ({:?}, got {:?})",
                    endpoint.server.path,
                    r.server.path
                );
            }
            targets.push(Arc::new(Target::new(r, opts.request_timeout)?));
        }
        let rbac_target = match &opts.rbac_token {
            Some(token) => {
                let ep = Endpoint {
                    auth: crate::kubeconfig::Auth::Bearer(token.clone()),
                    client_identity: None,
                    ..endpoint.clone()
                };
                Some(Arc::new(Target::new(&ep, opts.request_timeout)?))
            }
            None => None,
        };
        let run = run_id();
        let base_prefix = endpoint.server.path.clone();
        let clusters: Vec<String> = if opts.cluster_spread <= 1 {
            vec![base_prefix]
        } else {
            let mut v = Vec::new();
            for i in 0..opts.cluster_spread {
                match endpoint
                    .server
                    .child_cluster_path(&format!("kb-{run}-s{i}"))
                {
                    Some(p) => v.push(p),
                    None => bail!(
                        "--cluster-spread needs a server URL ending in /clusters/<name> (got {:?})",
                        endpoint.server.path
                    ),
                }
            }
            v
        };
        let namespaces: Vec<String> = if opts.namespace_spread <= 1 {
            vec![opts.namespace.clone()]
        } else {
            (0..opts.namespace_spread)
                .map(|i| format!("{}-{i}", opts.namespace))
                .collect()
        };
        let mut scopes = Vec::new();
        for c in &clusters {
            for n in &namespaces {
                scopes.push(Scope {
                    prefix: c.clone(),
                    namespace: n.clone(),
                });
            }
        }
        let pad = "x".repeat(opts.size as usize);
        Ok(Ctx {
            opts,
            endpoint,
            target,
            targets,
            rbac_target,
            run,
            scopes,
            pad,
            created_namespaces: Mutex::new(Vec::new()),
            deleted_namespaces: Mutex::new(Vec::new()),
            last_cleanup_ms: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// A fresh connection (opened on first use).
    pub fn conn(&self) -> Conn {
        Conn::new(self.target.clone())
    }

    /// A fresh connection to server `i` modulo the number of servers (client `i`'s server
    /// when clients are spread over replicas).
    pub fn conn_at(&self, i: usize) -> Conn {
        Conn::new(self.targets[i % self.targets.len()].clone())
    }

    /// Number of servers (1 without `--replica-kubeconfig`).
    pub fn servers(&self) -> usize {
        self.targets.len()
    }

    /// A fresh connection as the `--rbac-token` user, if one was given.
    pub fn rbac_conn(&self) -> Option<Conn> {
        self.rbac_target.clone().map(Conn::new)
    }

    /// A connection for setup and cleanup requests (bounded by the setup timeout, which may
    /// be longer than the request timeout: deleting 100,000 objects is one request).
    pub fn setup_conn(&self) -> Conn {
        Conn::with_timeout(self.target.clone(), self.opts.setup_timeout)
    }

    /// The base scope: the kubeconfig's cluster and `--namespace`.
    pub fn base_scope(&self) -> Scope {
        Scope {
            prefix: self.endpoint.server.path.clone(),
            namespace: self.opts.namespace.clone(),
        }
    }

    /// A name unique in this run: `kb-<run>-<tag>-<n>`.
    pub fn name(&self, tag: &str, n: u64) -> String {
        format!("kb-{}-{tag}-{n}", self.run)
    }

    /// `kplane-bench/run=<run>,kplane-bench/scenario=<scenario>`.
    pub fn selector(&self, scenario: &str) -> String {
        format!("{RUN_LABEL}={},{SCENARIO_LABEL}={scenario}", self.run)
    }

    /// JSON body of a new ConfigMap with the padded data value.
    pub fn configmap_body(&self, scope: &Scope, name: &str, scenario: &str) -> Bytes {
        self.body(scope, name, scenario, None, 0)
    }

    /// JSON body of an update (`resourceVersion` precondition, counter `n` in the data).
    pub fn update_body(
        &self,
        scope: &Scope,
        name: &str,
        scenario: &str,
        rv: &str,
        n: u64,
    ) -> Bytes {
        self.body(scope, name, scenario, Some(rv), n)
    }

    /// An update's JSON body like [`Ctx::update_body`], with `pad` as the data value.
    pub fn update_body_padded(
        &self,
        scope: &Scope,
        name: &str,
        scenario: &str,
        rv: &str,
        n: u64,
        pad: &str,
    ) -> Bytes {
        Bytes::from(configmap_json(
            &self.run,
            pad,
            scope,
            name,
            scenario,
            Some(rv),
            n,
        ))
    }

    fn body(&self, scope: &Scope, name: &str, scenario: &str, rv: Option<&str>, n: u64) -> Bytes {
        Bytes::from(configmap_json(
            &self.run, &self.pad, scope, name, scenario, rv, n,
        ))
    }
}

/// The JSON of a benchmark ConfigMap (names and labels are DNS-safe by construction).
fn configmap_json(
    run: &str,
    pad: &str,
    scope: &Scope,
    name: &str,
    scenario: &str,
    rv: Option<&str>,
    n: u64,
) -> String {
    let rv = match rv {
        Some(rv) => format!(",\"resourceVersion\":\"{}\"", json_escape(rv)),
        None => String::new(),
    };
    format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{name}\",\"namespace\":\"{}\"{rv},\"labels\":{{\"{RUN_LABEL}\":\"{run}\",\"{SCENARIO_LABEL}\":\"{scenario}\"}}}},\"data\":{{\"n\":\"{n}\",\"v\":\"{pad}\"}}}}",
        scope.namespace
    )
}

fn json_escape(s: &str) -> String {
    serde_json::to_string(s)
        .map(|q| q.trim_matches('"').to_string())
        .unwrap_or_default()
}

/// 8 lowercase hex characters from the clock and the process id (DNS-label safe).
fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut x = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    // splitmix64 finaliser, so consecutive runs differ in every digit.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    format!("{:08x}", x as u32)
}

/// A tiny deterministic PRNG (xorshift64*) for choosing operations and objects.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_valid_json_with_padded_value() {
        let scope = Scope {
            prefix: "/clusters/root".into(),
            namespace: "ns".into(),
        };
        assert_eq!(
            scope.configmap("a"),
            "/clusters/root/api/v1/namespaces/ns/configmaps/a"
        );
        let pad = "x".repeat(10);
        let v: serde_json::Value = serde_json::from_str(&configmap_json(
            "abc",
            &pad,
            &scope,
            "n",
            "s",
            Some("4\"2"),
            7,
        ))
        .unwrap();
        assert_eq!(v["data"]["v"].as_str().unwrap().len(), 10);
        assert_eq!(v["data"]["n"], "7");
        assert_eq!(v["metadata"]["resourceVersion"], "4\"2");
        assert_eq!(v["metadata"]["labels"][RUN_LABEL], "abc");
        let v: serde_json::Value =
            serde_json::from_str(&configmap_json("abc", "", &scope, "n", "s", None, 0)).unwrap();
        assert!(v["metadata"].get("resourceVersion").is_none());
        assert_eq!(json_escape("12\"3"), "12\\\"3");
        assert_eq!(run_id().len(), 8);
        let mut r = Rng::new(1);
        assert!(r.below(10) < 10);
    }
}
