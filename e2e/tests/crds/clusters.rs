//! CRDs belong to one logical cluster: discovery, OpenAPI and REST paths of other logical
//! clusters do not see them, and the same CRD name can mean different schemas in two clusters.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl, Table};
use serde_json::{json, Value};

use super::{apply_crd, apply_yaml, widget, GIZMOS, WIDGETS};

/// `kubectl get --raw /clusters/<cluster><path>`, parsed. (`--raw` takes an absolute path: it
/// ignores the kubeconfig's `/clusters/<name>` prefix, so the cluster is spelled out here.)
fn raw_json(kubectl: &Kubectl, cluster: &str, path: &str) -> Result<Value> {
    let path = format!("/clusters/{cluster}{path}");
    let out = kubectl.ok(&["get", "--raw", &path])?;
    serde_json::from_str(&out).with_context(|| format!("{path} is not JSON: {out}"))
}

/// The component schema names of the OpenAPI v3 document of `gv` (e.g. `apis/example.com/v1`),
/// fetched through the URL the `/openapi/v3` index names; `None` if the index lacks `gv`.
fn openapi_schemas(kubectl: &Kubectl, cluster: &str, gv: &str) -> Result<Option<Vec<String>>> {
    let index = raw_json(kubectl, cluster, "/openapi/v3")?;
    let Some(url) = index["paths"][gv]["serverRelativeURL"].as_str() else {
        return Ok(None);
    };
    let doc = raw_json(kubectl, cluster, url)?;
    let schemas = doc["components"]["schemas"]
        .as_object()
        .with_context(|| format!("{url} has no components.schemas"))?;
    Ok(Some(schemas.keys().cloned().collect()))
}

fn example_resources(kubectl: &Kubectl) -> Result<Vec<String>> {
    let out = kubectl.ok(&["api-resources", "--api-group=example.com", "-o", "name"])?;
    Ok(out.lines().map(str::to_owned).collect())
}

#[test]
fn crds_are_per_logical_cluster() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b", "root:c"])?;
    let a = server.kubectl_for("root:a")?;
    let b = server.kubectl_for("root:b")?;
    let c = server.kubectl_for("root:c")?;
    apply_crd(&a, "crds/widgets.yaml", WIDGETS)?;
    apply_crd(&b, "crds/gizmos.yaml", GIZMOS)?;
    // root:c only gets an ordinary object.
    c.ok(&["create", "configmap", "plain", "--from-literal=k=v"])?;
    apply_yaml(&a, &widget("only-in-a", "{color: red}"))?;

    // CRD objects.
    let crds_b = b.ok(&["get", "crds", "-o", "name"])?;
    assert_eq!(
        crds_b.trim(),
        "customresourcedefinition.apiextensions.k8s.io/gizmos.example.com"
    );
    let out = b.run(&["get", "crd", WIDGETS])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );

    // Discovery (aggregated, through kubectl api-resources) and legacy per-GV lists.
    assert_eq!(example_resources(&a)?, ["widgets.example.com"]);
    assert_eq!(example_resources(&b)?, ["gizmos.example.com"]);
    assert!(example_resources(&c)?.is_empty());
    let legacy_b = raw_json(&b, "root:b", "/apis/example.com/v1")?;
    let names: Vec<&str> = legacy_b["resources"]
        .as_array()
        .context("resources")?
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["gizmos"], "{legacy_b}");
    let out = c.run(&["get", "--raw", "/clusters/root:c/apis/example.com/v1"])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );
    let groups_c = raw_json(&c, "root:c", "/apis")?;
    ensure!(
        !groups_c.to_string().contains("example.com"),
        "root:c lists the group: {groups_c}"
    );

    // OpenAPI v3: each cluster publishes only its own CRD schemas.
    let schemas_a =
        openapi_schemas(&a, "root:a", "apis/example.com/v1")?.context("root:a index")?;
    let schemas_b =
        openapi_schemas(&b, "root:b", "apis/example.com/v1")?.context("root:b index")?;
    ensure!(
        schemas_a.iter().any(|s| s == "com.example.v1.Widget"),
        "{schemas_a:?}"
    );
    ensure!(
        !schemas_a.iter().any(|s| s.contains("Gizmo")),
        "{schemas_a:?}"
    );
    ensure!(
        schemas_b.iter().any(|s| s == "com.example.v1.Gizmo"),
        "{schemas_b:?}"
    );
    ensure!(
        !schemas_b.iter().any(|s| s.contains("Widget")),
        "root:b publishes root:a's Widget: {schemas_b:?}"
    );
    assert_eq!(openapi_schemas(&c, "root:c", "apis/example.com/v1")?, None);

    // REST paths of the CRD: served in root:a, 404 elsewhere.
    let list_a = raw_json(
        &a,
        "root:a",
        "/apis/example.com/v1/namespaces/default/widgets",
    )?;
    assert_eq!(
        list_a["items"][0]["metadata"]["name"], "only-in-a",
        "{list_a}"
    );
    for (kubectl, cluster) in [(&b, "root:b"), (&c, "root:c")] {
        let path = format!("/clusters/{cluster}/apis/example.com/v1/namespaces/default/widgets");
        let out = kubectl.run(&["get", "--raw", &path])?;
        ensure!(
            !out.success() && out.stderr.contains("NotFound"),
            "{}",
            out.stderr
        );
        let out = kubectl.run(&["get", "widgets"])?;
        ensure!(
            !out.success(),
            "widgets served outside root:a: {}",
            out.stdout
        );
    }
    // kubectl explain in root:b does not know Widget either.
    let out = b.run(&["explain", "widget"])?;
    ensure!(
        !out.success(),
        "explain widget works in root:b: {}",
        out.stdout
    );

    // The same CRD name in root:b with a looser schema: independent of root:a's.
    let loose = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": WIDGETS},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"color": {"type": "string"}}}
                }}}}]
        }
    });
    b.ok_stdin(&["apply", "-f", "-"], &loose.to_string())?;
    b.ok(&[
        "wait",
        "--for",
        "condition=established",
        super::WAIT_TIMEOUT,
        &format!("crd/{WIDGETS}"),
    ])?;
    apply_yaml(&b, &widget("green-in-b", "{color: green}"))?;
    let out = a.run_stdin(
        &["apply", "-f", "-"],
        &widget("green-in-a", "{color: green}"),
    )?;
    ensure!(
        !out.success() && out.stderr.contains("Unsupported value"),
        "root:a's enum no longer applies: {}",
        out.stderr
    );
    // Each cluster lists only its own Widgets; root:b has no printer columns (NAME, AGE).
    let ta = Table::parse(&a.ok(&["get", "widgets"])?)?;
    assert_eq!(ta.values("NAME")?, ["only-in-a"]);
    let tb = Table::parse(&b.ok(&["get", "widgets"])?)?;
    assert_eq!(tb.values("NAME")?, ["green-in-b"]);
    assert_eq!(tb.headers, ["NAME", "AGE"]);

    // Deleting root:b's CRD leaves root:a's alone.
    b.ok(&["delete", "crd", WIDGETS, "--timeout=60s"])?;
    let ta = Table::parse(&a.ok(&["get", "widgets"])?)?;
    assert_eq!(ta.values("NAME")?, ["only-in-a"]);
    Ok(())
}
