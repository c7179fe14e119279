//! CRD conversion webhooks with kubectl, against a TLS conversion webhook in this process
//! (rcgen certificate given as the CRD's `caBundle`): a `Widget` with `v1`
//! (`spec.hostPort: "host:port"`, the storage version) and `v2` (`spec.host`, `spec.port`).
//! Created in v1 and read in v2, changed in v2 and read back in v1, listed in both (a
//! list is one review), watched in both; a webhook that renames the object is refused;
//! a webhook that is down fails reads with upstream's message. A write in v2 is validated
//! against v2's schema, not the storage version's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use base64::Engine as _;
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

/// How many objects each review the webhook received carried.
type Reviews = Arc<Mutex<Vec<usize>>>;

/// One object converted to `desired` (`example.com/v1` or `example.com/v2`).
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    out["spec"] = if desired.ends_with("/v2") {
        let hp = spec["hostPort"].as_str().unwrap_or("");
        let (host, port) = hp.rsplit_once(':').unwrap_or((hp, "0"));
        json!({"host": host, "port": port.parse::<i64>().unwrap_or(0)})
    } else {
        let host = spec["host"].as_str().unwrap_or("");
        json!({"hostPort": format!("{host}:{}", spec["port"].as_i64().unwrap_or(0))})
    };
    out
}

/// The answer to one ConversionReview sent to `path` (`/convert`, or `/rename`, which
/// also changes each object's name).
fn answer(path: &str, review: &Value, reviews: &Reviews) -> Value {
    let req = &review["request"];
    let desired = req["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = req["objects"].as_array().cloned().unwrap_or_default();
    if let Ok(mut r) = reviews.lock() {
        r.push(objects.len());
    }
    let converted: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut c = convert(o, desired);
            if path == "/rename" {
                c["metadata"]["name"] = json!("renamed");
            }
            c
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": req["uid"], "result": {"status": "Success"},
            "convertedObjects": converted}})
}

/// Starts the webhook on a free loopback port; its base URL and its certificate's PEM.
async fn conversion_webhook(reviews: Reviews) -> Result<(String, String)> {
    crate::webhooks::tls_json_server(move |path, review| {
        let out = answer(&path, &review, &reviews);
        async move { out }
    })
    .await
}

/// The Widget CRD converting through `url`.
fn crd(url: &str, ca: &str) -> String {
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"hostPort": {"type": "string"}}}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"host": {"type": "string"}, "port": {"type": "integer"}}}}});
    crd_with(url, ca, v1, v2)
}

/// The Widget CRD converting through `url`, with these schemas of `v1` and `v2`.
fn crd_with(url: &str, ca: &str, v1: Value, v2: Value) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca);
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": v1}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": url, "caBundle": ca},
                "conversionReviewVersions": ["v1"]}}}})
    .to_string()
}

fn get_json(k: &kplane_e2e::Kubectl, args: &[&str]) -> Result<Value> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-n", "default", "-o", "json"]);
    let out = k.ok(&all)?;
    serde_json::from_str(&out).with_context(|| out)
}

#[tokio::test(flavor = "multi_thread")]
async fn conversion_webhook_converts_reads_writes_lists_and_watches() -> Result<()> {
    let reviews = Reviews::default();
    let (base, ca) = conversion_webhook(reviews.clone()).await?;
    let server = KplaneServer::start()?;
    let k = server.kubectl_for("root")?;
    k.ok_stdin(&["apply", "-f", "-"], &crd(&format!("{base}/convert"), &ca))?;
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.example.com",
    ])?;

    // Created in v1 (the storage version: no review), read in v2.
    for (name, hp) in [("a", "a.example:8080"), ("b", "b.example:9000")] {
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "w"}},
            "spec": {"hostPort": hp}});
        k.ok_stdin(&["create", "-f", "-"], &w.to_string())?;
    }
    let a2 = get_json(&k, &["widgets.v2.example.com", "a"])?;
    ensure!(a2["apiVersion"] == "example.com/v2", "{a2}");
    ensure!(
        a2["spec"] == json!({"host": "a.example", "port": 8080}),
        "{a2}"
    );
    ensure!(a2["metadata"]["labels"] == json!({"app": "w"}), "{a2}");

    // Changed in v2 (converted to v1 to be stored, back to v2 for the answer), read in v1.
    let out = k.ok(&[
        "patch",
        "widgets.v2.example.com",
        "a",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"port":9090}}"#,
        "-o",
        "json",
    ])?;
    let patched: Value = serde_json::from_str(&out)?;
    ensure!(
        patched["spec"] == json!({"host": "a.example", "port": 9090}),
        "{patched}"
    );
    let a1 = get_json(&k, &["widgets.v1.example.com", "a"])?;
    ensure!(a1["spec"] == json!({"hostPort": "a.example:9090"}), "{a1}");

    // A list in v2 is one review of both objects; in v1 none is needed.
    reviews
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clear();
    let list = get_json(&k, &["widgets.v2.example.com"])?;
    let ports: Vec<&Value> = list["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|i| &i["spec"]["port"])
        .collect();
    ensure!(ports == [&json!(9090), &json!(9000)], "{list}");
    ensure!(*reviews.lock().map_err(|_| anyhow::anyhow!("poisoned"))? == vec![2]);
    let list1 = get_json(&k, &["widgets.v1.example.com"])?;
    ensure!(
        list1["items"][1]["spec"] == json!({"hostPort": "b.example:9000"}),
        "{list1}"
    );

    // Watches in both versions see a change made in v1 in their own version.
    let jp = r#"jsonpath={.metadata.name} {.spec}{"\n"}"#;
    let mut w2 = k.spawn_watch(&[
        "get",
        "widgets.v2.example.com",
        "-n",
        "default",
        "-w",
        "-o",
        jp,
    ])?;
    let mut w1 = k.spawn_watch(&[
        "get",
        "widgets.v1.example.com",
        "-n",
        "default",
        "-w",
        "-o",
        jp,
    ])?;
    w2.wait_for_line(Duration::from_secs(20), "b initial", |l| {
        l.starts_with("b ")
    })?;
    w1.wait_for_line(Duration::from_secs(20), "b initial", |l| {
        l.starts_with("b ")
    })?;
    k.ok(&[
        "patch",
        "widgets.v1.example.com",
        "b",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"hostPort":"b.example:7000"}}"#,
    ])?;
    w2.wait_for_line(Duration::from_secs(20), "b in v2", |l| {
        l.starts_with("b ") && l.contains(r#""port":7000"#)
    })?;
    w1.wait_for_line(Duration::from_secs(20), "b in v1", |l| {
        l.contains(r#""hostPort":"b.example:7000""#)
    })?;
    drop((w1, w2));

    // A webhook that changes the name is refused, as upstream refuses it.
    k.ok_stdin(&["apply", "-f", "-"], &crd(&format!("{base}/rename"), &ca))?;
    let out = k.run(&["get", "widgets.v2.example.com", "a", "-n", "default"])?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                "Error from server: conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: a != renamed"
            ),
        "{}",
        out.stderr
    );

    // A webhook that is down fails the read with upstream's message.
    k.ok_stdin(
        &["apply", "-f", "-"],
        &crd("https://127.0.0.1:1/convert", &ca),
    )?;
    let out = k.run(&["get", "widgets.v2.example.com", "a", "-n", "default"])?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                r#"Error from server: conversion webhook for example.com/v1, Kind=Widget failed: Post "https://127.0.0.1:1/convert?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused"#
            ),
        "{}",
        out.stderr
    );
    // Writes in v2 need the webhook too; reads in the storage version do not.
    let out = k.run(&[
        "patch",
        "widgets.v2.example.com",
        "a",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"port":1}}"#,
    ])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains("conversion webhook for example.com/v1, Kind=Widget failed"),
        "{}",
        out.stderr
    );
    ensure!(
        get_json(&k, &["widgets.v1.example.com", "a"])?["spec"]["hostPort"] == "a.example:9090"
    );
    Ok(())
}

/// A write in `v2` is validated against `v2`'s schema (a `maximum` only `v2` has refuses
/// it), not `v1`'s (a CEL rule only `v1` has does not), then stored in `v1`.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_is_validated_in_the_request_version() -> Result<()> {
    let (base, ca) = conversion_webhook(Reviews::default()).await?;
    let server = KplaneServer::start()?;
    let k = server.kubectl_for("root")?;
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"hostPort": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "!self.hostPort.startsWith('bad')", "message": "no bad hosts"}]}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"host": {"type": "string"}, "port": {"type": "integer", "maximum": 9000}}}}});
    k.ok_stdin(
        &["apply", "-f", "-"],
        &crd_with(&format!("{base}/convert"), &ca, v1, v2),
    )?;
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.example.com",
    ])?;
    let v2_widget = |name: &str, host: &str, port: i64| {
        json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"host": host, "port": port}})
        .to_string()
    };
    let out = k.run_stdin(&["create", "-f", "-"], &v2_widget("a", "a.example", 9090))?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                r#"The Widget "a" is invalid: spec.port: Invalid value: 9090: spec.port in body should be less than or equal to 9000"#
            ),
        "{}",
        out.stderr
    );
    k.ok_stdin(&["create", "-f", "-"], &v2_widget("b", "bad.example", 80))?;
    let b1 = get_json(&k, &["widgets.v1.example.com", "b"])?;
    ensure!(b1["spec"] == json!({"hostPort": "bad.example:80"}), "{b1}");
    // v1's rule holds for v1's writes
    let out = k.run(&[
        "patch",
        "widgets.v1.example.com",
        "b",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"hostPort":"bad.example:81"}}"#,
    ])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains(r#"spec: Invalid value: "object": no bad hosts"#),
        "{}",
        out.stderr
    );
    Ok(())
}
