//! The deployment manifests of docs/deploy/ (see docs/deploy/README.md): every kustomize
//! base and overlay renders with the real `kubectl kustomize` (no server needed) into the
//! objects it promises, consistent with itself (arguments, mounts, probe ports, bindings,
//! namespaces) and with the host RBAC the syncer needs, which a kplane server standing in
//! for the host enforces as intended; kplane starts with the StatefulSet's
//! arguments (probes answer without credentials, the certificate names the Service, tokens
//! carry the Service's issuer); and the syncer's RBAC in kplane
//! (docs/deploy/kplane-rbac) applies to a real kplane, where the kubeconfig made by
//! docs/deploy/syncer-kubeconfig.sh is allowed `sync` on its SyncTarget (as `kubectl auth
//! can-i` shows, with the SyncTarget kind served) and nothing else.

mod live;
mod manifests;

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::Kubectl;
use serde_json::Value;

/// Every kustomization under docs/deploy/.
const KUSTOMIZATIONS: &[&str] = &[
    "kplane",
    "syncer/base",
    "syncer/namespaced",
    "syncer/cluster",
    "kplane-rbac",
];

/// What the syncer does on the host with each namespaced resource it handles
/// (group, resource): Jobs and the copies of what they reference.
const SYNCER_NAMESPACED: &[(&str, &str)] = &[
    ("batch", "jobs"),
    ("", "secrets"),
    ("", "configmaps"),
    ("", "serviceaccounts"),
];
const SYNCER_VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deploy")
}

/// The image `make image` builds and tags: the Makefile's `IMAGE ?=` default.
fn made_image() -> Result<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Makefile");
    let makefile =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    makefile
        .lines()
        .find_map(|line| line.strip_prefix("IMAGE ?="))
        .map(|image| image.trim().to_string())
        .filter(|image| !image.is_empty())
        .context("no `IMAGE ?= NAME` in the Makefile")
}

/// kubectl with an empty kubeconfig in a scratch directory: `kustomize` and
/// `patch --local` never contact a server.
struct Offline {
    kubectl: Kubectl,
    _dir: tempfile::TempDir,
}

impl Offline {
    fn new() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kplane-deploy-")
            .tempdir()?;
        let kubeconfig = dir.path().join("empty.kubeconfig");
        std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n")?;
        let kubectl = Kubectl::new(kubeconfig, dir.path().into(), dir.path().join("cache"));
        Ok(Self { kubectl, _dir: dir })
    }

    /// `kubectl kustomize docs/deploy/<dir>`, as JSON objects (kubectl itself converts the
    /// YAML, with a no-op local patch).
    fn render(&self, dir: &str) -> Result<Vec<Value>> {
        let path = deploy_dir().join(dir);
        let path = path.to_str().context("non-UTF-8 path")?;
        let yaml = self.kubectl.ok(&["kustomize", path])?;
        let json = self.kubectl.ok_stdin(
            &[
                "patch", "--local", "-f", "-", "--type", "merge", "-p", "{}", "-o", "json",
            ],
            &yaml,
        )?;
        let objects = serde_json::Deserializer::from_str(&json)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("parsing the rendering of {dir}"))?;
        ensure!(!objects.is_empty(), "{dir} renders nothing");
        Ok(objects)
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn find<'a>(objects: &'a [Value], kind: &str) -> Result<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .with_context(|| format!("no {kind} rendered"))
}

/// The flag's value in `args` (`--name=value`).
fn flag<'a>(args: &'a [Value], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    args.iter()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix(prefix.as_str()))
}
