//! `kubectl get events --field-selector`: the core/v1 and events.k8s.io/v1 field labels.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

/// Three events: one from a controller's source, one written through events.k8s.io/v1
/// (reporting controller, no source), one from the kubelet about another object.
const EVENTS: &str = r#"
apiVersion: v1
kind: Event
metadata: {name: started}
involvedObject: {kind: Pod, name: p1, namespace: default, uid: u-1, apiVersion: v1, fieldPath: "spec.containers{app}"}
reason: Started
type: Normal
message: started
source: {component: test-controller}
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: reported}
eventTime: "2024-01-01T00:00:00.000000Z"
reportingController: other-controller
reportingInstance: other-controller-1
action: Scaling
reason: Scaled
type: Normal
note: scaled
regarding: {kind: Deployment, name: p2, namespace: default}
---
apiVersion: v1
kind: Event
metadata: {name: failed}
involvedObject: {kind: Pod, name: p2, namespace: default}
reason: Failed
type: Warning
message: failed
source: {component: kubelet, host: node-1}
"#;

fn names(server: &KplaneServer, resource: &str, selector: &str) -> Result<Vec<String>> {
    let out = server.kubectl_ok(&[
        "get",
        resource,
        "--field-selector",
        selector,
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])?;
    let mut v: Vec<String> = out.split_whitespace().map(String::from).collect();
    v.sort();
    Ok(v)
}

#[test]
fn event_field_selectors_filter_as_upstream() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], EVENTS)?;
    ensure!(out.success(), "create events failed: {}", out.stderr);

    let core: &[(&str, &[&str])] = &[
        ("source=test-controller", &["started"]),
        // Without a source, `source` is the reporting controller.
        ("source=other-controller", &["reported"]),
        ("source!=kubelet", &["reported", "started"]),
        ("reason=Failed", &["failed"]),
        ("type=Warning", &["failed"]),
        ("involvedObject.name=p2", &["failed", "reported"]),
        (
            "involvedObject.kind=Pod,involvedObject.name=p2",
            &["failed"],
        ),
        ("involvedObject.uid=u-1", &["started"]),
        ("involvedObject.apiVersion=v1", &["started"]),
        (
            "involvedObject.fieldPath=spec.containers{app}",
            &["started"],
        ),
        (
            "involvedObject.namespace=default",
            &["failed", "reported", "started"],
        ),
        ("reportingComponent=other-controller", &["reported"]),
        ("metadata.name=failed", &["failed"]),
        (
            "metadata.namespace=default",
            &["failed", "reported", "started"],
        ),
        ("metadata.namespace=other", &[]),
    ];
    for (selector, want) in core {
        assert_eq!(
            names(&server, "events", selector)?,
            *want,
            "core {selector}"
        );
    }
    let v1: &[(&str, &[&str])] = &[
        ("reportingController=other-controller", &["reported"]),
        ("regarding.name=p1", &["started"]),
        ("regarding.kind=Deployment", &["reported"]),
        ("reason=Started", &["started"]),
        ("type=Normal", &["reported", "started"]),
    ];
    for (selector, want) in v1 {
        assert_eq!(
            names(&server, "events.events.k8s.io", selector)?,
            *want,
            "events.k8s.io {selector}"
        );
    }

    for (resource, selector, message) in [
        ("events", "foo=x", "field label not supported: foo"),
        (
            "events",
            "regarding.name=p1",
            "field label not supported: regarding.name",
        ),
        (
            "events.events.k8s.io",
            "source=kubelet",
            "field label not supported: source",
        ),
    ] {
        let out = server.kubectl(&["get", resource, "--field-selector", selector])?;
        ensure!(
            !out.success()
                && out.stderr.starts_with("Error from server (BadRequest): ")
                && out.stderr.trim().ends_with(&format!(": {message}")),
            "{resource} {selector}: {}",
            out.stderr
        );
    }
    Ok(())
}
