//! CustomResourceDefinitions driven by the real kubectl: establishing, printing, explaining,
//! validating, subresources, versions, deletion, logical-cluster isolation, a large
//! real-world-sized schema (`testdata/hive`) and OpenShift Hive's own 21 CRDs (`hive`, from
//! `../shared/fixtures/hive/crds`). The other CRDs live in `e2e/testdata/`.

mod big;
mod clusters;
mod hive;
mod lifecycle;
mod names;
mod openapi_v2;
mod printing;
mod ratcheting;
mod subresources;
mod validation;
mod versions;

use std::path::PathBuf;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl};
use serde_json::Value;

/// How long `kubectl wait` may take for a CRD condition.
const WAIT_TIMEOUT: &str = "--timeout=30s";

pub const WIDGETS: &str = "widgets.example.com";
pub const GIZMOS: &str = "gizmos.example.com";

/// `e2e/testdata/<rel>` as a path string kubectl can read.
fn testdata(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// `kubectl apply -f testdata/<file>` then `kubectl wait --for condition=established crd/<name>`.
pub(crate) fn apply_crd(kubectl: &Kubectl, file: &str, name: &str) -> Result<()> {
    let path = testdata(file);
    kubectl.ok(&["apply", "-f", &path])?;
    let out = kubectl.ok(&[
        "wait",
        "--for",
        "condition=established",
        WAIT_TIMEOUT,
        &format!("crd/{name}"),
    ])?;
    ensure!(
        out.contains("condition met"),
        "kubectl wait printed {out:?}"
    );
    Ok(())
}

/// A fresh server with the Widget CRD (`testdata/crds/widgets.yaml`) established in `root`.
pub(crate) fn server_with_widgets() -> Result<KplaneServer> {
    let server = KplaneServer::start()?;
    apply_crd(server.kubectl_root(), "crds/widgets.yaml", WIDGETS)?;
    Ok(server)
}

/// `kubectl <args> -o json`, parsed.
fn json(kubectl: &Kubectl, args: &[&str]) -> Result<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = kubectl.ok(&all)?;
    serde_json::from_str(&out).with_context(|| format!("kubectl output is not JSON: {out}"))
}

/// `kubectl apply -f -` of `yaml`; fails unless kubectl succeeds.
fn apply_yaml(kubectl: &Kubectl, yaml: &str) -> Result<String> {
    kubectl.ok_stdin(&["apply", "-f", "-"], yaml)
}

/// A Widget manifest named `name` with the given `spec` (a YAML flow mapping).
fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec: {spec}\n")
}

/// The condition `type_` of a CRD read as JSON (`status.conditions[type=type_]`).
fn crd_condition<'a>(crd: &'a Value, type_: &str) -> Option<&'a Value> {
    crd["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}
