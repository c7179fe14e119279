//! CRD validation ratcheting with the real kubectl: a Gadget stored while its CRD's schema
//! was looser, the schema tightened, then updates. As with kube-apiserver 1.32
//! (`CRDValidationRatcheting` on by default), an update that leaves the now-invalid values
//! unchanged is accepted, with a Warning for the CEL rule it ratcheted, and one that
//! changes them is refused.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

use super::{apply_yaml, json};

const GADGETS: &str = "gadgets.example.com";

/// The Gadget CRD; `tags` and `name` constrained only when `tight`.
fn crd(tight: bool) -> String {
    let (max_items, rules) = if tight {
        (
            "\n                maxItems: 2",
            "\n                x-kubernetes-validations:\n                - rule: self.startsWith('k8s')\n                  message: must start with k8s",
        )
    } else {
        ("", "")
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {GADGETS}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              tags:
                type: array{max_items}
                items: {{type: string}}
              name:
                type: string{rules}
              size: {{type: integer}}
"
    )
}

/// Gadget `g` with the given `spec` (a YAML flow mapping).
fn gadget(spec: &str) -> String {
    named("g", spec)
}

fn named(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec: {spec}\n")
}

#[test]
fn an_update_leaving_values_invalid_since_the_schema_tightened_is_accepted() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &crd(false))?;
    kubectl.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        &format!("crd/{GADGETS}"),
    ])?;
    apply_yaml(kubectl, &gadget("{tags: [a, b, c], name: gadget, size: 1}"))?;
    apply_yaml(kubectl, &crd(true))?;

    // a new object is held to the tightened schema
    let out = kubectl.run_stdin(&["create", "-f", "-"], &named("h", "{tags: [a, b, c]}"))?;
    ensure!(!out.success(), "a new invalid Gadget was accepted");
    ensure!(
        out.stderr
            .contains("spec.tags: Too many: 3: must have at most 2 items"),
        "{}",
        out.stderr
    );

    // the stored one stays updatable while its invalid values are left alone; the CEL
    // failure it ratchets comes back as a warning
    let out = kubectl.run_stdin(
        &["apply", "-f", "-"],
        &gadget("{tags: [a, b, c], name: gadget, size: 2}"),
    )?;
    ensure!(out.success(), "the update was refused: {}", out.stderr);
    ensure!(
        out.stderr
            .contains(r#"Warning: spec.name: Invalid value: "string": must start with k8s"#),
        "no warning for the ratcheted rule: {:?}",
        out.stderr
    );
    let g = json(kubectl, &["get", "gadget", "g"])?;
    assert_eq!(g["spec"]["size"], 2);

    // changing an invalid value is refused: the list, then the name
    let out = kubectl.run_stdin(
        &["apply", "-f", "-"],
        &gadget("{tags: [a, b, d], name: gadget, size: 2}"),
    )?;
    ensure!(!out.success(), "a changed invalid list was accepted");
    ensure!(
        out.stderr
            .contains("spec.tags: Too many: 3: must have at most 2 items"),
        "{}",
        out.stderr
    );
    let out = kubectl.run_stdin(
        &["apply", "-f", "-"],
        &gadget("{tags: [a, b, c], name: widget, size: 2}"),
    )?;
    ensure!(!out.success(), "a changed invalid name was accepted");
    ensure!(
        out.stderr
            .contains(r#"spec.name: Invalid value: "string": must start with k8s"#),
        "{}",
        out.stderr
    );
    Ok(())
}
