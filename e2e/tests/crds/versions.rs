//! A CRD with several served versions, conversion strategy `None`, and deprecated versions.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl, Table};
use serde_json::{json, Value};

use super::{apply_crd, json};

const GADGETS: &str = "gadgets.example.com";
const BETA_WARNING: &str =
    "Warning: example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget";
const ALPHA_WARNING: &str = "Warning: example.com/v1alpha1 Gadget is going away, move to v1";

fn server_with_gadgets() -> Result<KplaneServer> {
    let server = KplaneServer::start()?;
    apply_crd(
        server.kubectl_root(),
        "crds/gadgets-multiversion.yaml",
        GADGETS,
    )?;
    Ok(server)
}

fn gadget(version: &str, name: &str, size: i64) -> String {
    format!(
        "apiVersion: example.com/{version}\nkind: Gadget\nmetadata:\n  name: {name}\n\
         spec:\n  size: {size}\n  label: made-at-{version}\n"
    )
}

/// `kubectl get gadgets.<version>.example.com <name> -o json` with its stderr.
fn get_at(kubectl: &Kubectl, version: &str, name: &str) -> Result<(Value, String)> {
    let resource = format!("gadgets.{version}.example.com");
    let out = kubectl.run(&["get", &resource, name, "-o", "json"])?;
    ensure!(out.success(), "get {resource}/{name}: {}", out.stderr);
    let obj = serde_json::from_str(&out.stdout).context("get output is not JSON")?;
    Ok((obj, out.stderr))
}

#[test]
fn objects_are_served_at_every_version_with_api_version_rewritten() -> Result<()> {
    let server = server_with_gadgets()?;
    let kubectl = server.kubectl_root();
    kubectl.ok_stdin(&["apply", "-f", "-"], &gadget("v1beta1", "from-beta", 1))?;
    kubectl.ok_stdin(&["apply", "-f", "-"], &gadget("v1", "from-v1", 2))?;

    for (version, name, size) in [
        ("v1", "from-beta", 1),
        ("v1beta1", "from-beta", 1),
        ("v1alpha1", "from-beta", 1),
        ("v1", "from-v1", 2),
        ("v1beta1", "from-v1", 2),
        ("v1alpha1", "from-v1", 2),
    ] {
        let (obj, _) = get_at(kubectl, version, name)?;
        assert_eq!(obj["apiVersion"], format!("example.com/{version}"), "{obj}");
        assert_eq!(obj["kind"], "Gadget");
        assert_eq!(obj["spec"]["size"], size, "{obj}");
    }
    // The body is otherwise untouched (strategy None only rewrites apiVersion).
    let (v1, _) = get_at(kubectl, "v1", "from-beta")?;
    let (beta, _) = get_at(kubectl, "v1beta1", "from-beta")?;
    assert_eq!(v1["spec"], beta["spec"]);
    assert_eq!(v1["metadata"]["uid"], beta["metadata"]["uid"]);
    assert_eq!(v1["spec"]["label"], "made-at-v1beta1");

    // Lists at one version carry that version on every item.
    let out = kubectl.run(&["get", "gadgets.v1beta1.example.com", "-o", "json"])?;
    ensure!(out.success(), "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout)?;
    let items = list["items"].as_array().context("items")?;
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(item["apiVersion"], "example.com/v1beta1", "{item}");
    }

    // An update at one version is visible at the others.
    kubectl.ok(&[
        "patch",
        "gadgets.v1beta1.example.com",
        "from-v1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":20}}"#,
    ])?;
    let (obj, _) = get_at(kubectl, "v1", "from-v1")?;
    assert_eq!(obj["spec"]["size"], 20);

    // Objects are stored once, at the storage version.
    let crd = json(kubectl, &["get", "crd", GADGETS])?;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Discovery: all served versions, v1 preferred, kube-aware order.
    let group: Value =
        serde_json::from_str(&kubectl.ok(&["get", "--raw", "/clusters/root/apis/example.com"])?)?;
    assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .context("versions")?
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1", "v1alpha1"]);

    // Each version has its own printer columns: v1 declares Size, v1beta1 none.
    let t = Table::parse(&kubectl.ok(&["get", "gadgets"])?)?;
    assert_eq!(t.headers, ["NAME", "SIZE", "AGE"]);
    assert_eq!(t.cell("NAME", "from-v1", "SIZE")?, "20");
    let t = Table::parse(&kubectl.ok(&["get", "gadgets.v1beta1.example.com"])?)?;
    assert_eq!(t.headers, ["NAME", "AGE"]);
    Ok(())
}

#[test]
fn deprecated_versions_print_the_deprecation_warning() -> Result<()> {
    let server = server_with_gadgets()?;
    let kubectl = server.kubectl_root();

    // Default warning text for a deprecated version without deprecationWarning.
    let out = kubectl.run_stdin(&["apply", "-f", "-"], &gadget("v1beta1", "old", 1))?;
    ensure!(out.success(), "{}", out.stderr);
    ensure!(
        out.stderr.contains(BETA_WARNING),
        "no deprecation warning on create:\n{}",
        out.stderr
    );
    let (_, stderr) = get_at(kubectl, "v1beta1", "old")?;
    ensure!(
        stderr.contains(BETA_WARNING),
        "no deprecation warning on get:\n{stderr}"
    );

    // The version's own deprecationWarning.
    let (_, stderr) = get_at(kubectl, "v1alpha1", "old")?;
    ensure!(
        stderr.contains(ALPHA_WARNING),
        "no custom deprecation warning:\n{stderr}"
    );

    // The storage version is not deprecated: no warning at all.
    let out = kubectl.run(&["get", "gadgets.v1.example.com", "old", "-o", "name"])?;
    ensure!(out.success(), "{}", out.stderr);
    ensure!(
        !out.stderr.contains("Warning"),
        "warning for a non-deprecated version: {}",
        out.stderr
    );
    // Discovery never warns either.
    let out = kubectl.run(&["api-resources", "--api-group=example.com"])?;
    ensure!(
        out.success() && !out.stderr.contains("deprecated"),
        "{}",
        out.stderr
    );
    Ok(())
}
