//! Admission webhooks with kubectl against a TLS webhook server in this process (its
//! certificate made with rcgen and given as the configurations' `caBundle`): a validating
//! webhook that denies ConfigMaps carrying a `deny` key and warns otherwise, a mutating
//! webhook that adds a label with a JSON patch, both limited by a namespaceSelector;
//! failurePolicy Fail and Ignore on a dead URL; a timeout; and a second logical cluster
//! that the first's webhooks do not touch; `matchConditions` that exclude objects, are
//! refused when they do not compile, and fail or are ignored when they do not evaluate;
//! a webhook's warning shown by kubectl before another webhook's denial.
//! An `#[ignore]`d bench measures the overhead of one webhook per ConfigMap create.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

/// Reviews received per path.
#[derive(Debug, Default)]
struct Seen {
    validate: AtomicUsize,
    mutate: AtomicUsize,
}

/// The answer to one AdmissionReview sent to `path`.
async fn answer(path: &str, review: &Value, seen: &Seen) -> Value {
    let req = &review["request"];
    let uid = req["uid"].clone();
    let obj = &req["object"];
    let response = match path {
        "/validate" => {
            seen.validate.fetch_add(1, Ordering::SeqCst);
            if obj.pointer("/data/deny").is_some() {
                json!({"uid": uid, "allowed": false,
                       "status": {"code": 403, "reason": "Forbidden", "message": "configmap says deny"}})
            } else {
                json!({"uid": uid, "allowed": true, "warnings": ["seen by validator"]})
            }
        }
        "/mutate" => {
            seen.mutate.fetch_add(1, Ordering::SeqCst);
            let patch = if obj.pointer("/metadata/labels").is_some() {
                json!([{"op": "add", "path": "/metadata/labels/webhook", "value": "mutated"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"webhook": "mutated"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/warn" => json!({"uid": uid, "allowed": true, "warnings": ["warned before the denial"]}),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            json!({"uid": uid, "allowed": true})
        }
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Starts the webhook server on a free loopback port; returns its base URL and the PEM of
/// its (self-signed) certificate.
async fn webhook_server(seen: Arc<Seen>) -> Result<(String, String)> {
    tls_json_server(move |path, review| {
        let seen = seen.clone();
        async move { answer(&path, &review, &seen).await }
    })
    .await
}

/// A TLS server on a free loopback port with a self-signed certificate for 127.0.0.1
/// that answers each POST with `handler(path, the body as JSON)` (as a webhook does);
/// its base URL and its certificate's PEM (the webhook's caBundle).
pub(crate) async fn tls_json_server<F, Fut>(handler: F) -> Result<(String, String)>
where
    F: Fn(String, Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Value> + Send,
{
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
    let pem = cert.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("https://127.0.0.1:{}", listener.local_addr()?.port());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, handler) = (acceptor.clone(), handler.clone());
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let handler = handler.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes());
                            let review: Value = body
                                .ok()
                                .and_then(|b| serde_json::from_slice(&b).ok())
                                .unwrap_or(Value::Null);
                            let out = handler(path, review).await;
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(
                                out.to_string(),
                            ))))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok((base, pem))
}

/// A webhook configuration of `kind` with one webhook for ConfigMap creates and updates.
fn configuration(kind: &str, name: &str, hook: &str, url: &str, ca: &str, extra: Value) -> String {
    let mut webhook = json!({
        "name": hook,
        "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Value::Object(e)) = (webhook.as_object_mut(), extra) {
        w.extend(e);
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": name}, "webhooks": [webhook]})
    .to_string()
}

fn configmap(ns: &str, name: &str, labels: Value, data: Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": ns, "labels": labels}, "data": data})
    .to_string()
}

fn labels(k: &kplane_e2e::Kubectl, ns: &str, name: &str) -> Result<Value> {
    let out = k.ok(&["get", "configmap", "-n", ns, name, "-o", "json"])?;
    let obj: Value = serde_json::from_str(&out)?;
    Ok(obj
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_deny_mutate_fail_time_out_and_stay_in_their_cluster() -> Result<()> {
    let seen = Arc::new(Seen::default());
    let (base, ca) = webhook_server(seen.clone()).await?;
    let server = KplaneServer::start()?;
    server.create_workspace("root:other")?;
    let k = server.kubectl_for("root")?;
    let other = server.kubectl_for("root:other")?;
    let selector = json!({"namespaceSelector": {"matchLabels": {"webhooks": "enabled"}}});
    for cfg in [
        configuration(
            "MutatingWebhookConfiguration",
            "mutate",
            "mutate.kplane.test",
            &format!("{base}/mutate"),
            &ca,
            selector.clone(),
        ),
        configuration(
            "ValidatingWebhookConfiguration",
            "validate",
            "deny.kplane.test",
            &format!("{base}/validate"),
            &ca,
            selector.clone(),
        ),
    ] {
        k.ok_stdin(&["apply", "-f", "-"], &cfg)?;
    }
    let table = k.ok(&["get", "validatingwebhookconfigurations"])?;
    ensure!(
        table.starts_with("NAME") && table.contains("WEBHOOKS") && table.contains("validate   1"),
        "{table}"
    );
    for kc in [&k, &other] {
        kc.ok(&["create", "namespace", "hooked"])?;
        kc.ok(&["label", "namespace", "hooked", "webhooks=enabled"])?;
        kc.ok(&["create", "namespace", "plain"])?;
    }

    // Allowed, mutated and warned about in the selected namespace.
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("hooked", "ok", json!({"app": "x"}), json!({"a": "1"})),
    )?;
    ensure!(out.success(), "{}", out.stderr);
    ensure!(
        out.stderr.contains("Warning: seen by validator"),
        "{}",
        out.stderr
    );
    ensure!(labels(&k, "hooked", "ok")? == json!({"app": "x", "webhook": "mutated"}));
    // Denied with the webhook's code and message.
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("hooked", "bad", json!({}), json!({"deny": "yes"})),
    )?;
    ensure!(!out.success());
    ensure!(
        out.stderr.contains("Error from server (Forbidden)")
            && out.stderr.contains(
                r#"admission webhook "deny.kplane.test" denied the request: configmap says deny"#
            ),
        "{}",
        out.stderr
    );
    // Outside the namespaceSelector: neither called.
    let before = (
        seen.validate.load(Ordering::SeqCst),
        seen.mutate.load(Ordering::SeqCst),
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        &configmap("plain", "bad", json!({}), json!({"deny": "yes"})),
    )?;
    ensure!(labels(&k, "plain", "bad")?.get("webhook").is_none());
    // Another logical cluster is untouched by root's webhooks.
    other.ok_stdin(
        &["create", "-f", "-"],
        &configmap("hooked", "bad", json!({}), json!({"deny": "yes"})),
    )?;
    ensure!(labels(&other, "hooked", "bad")?.get("webhook").is_none());
    ensure!(
        (
            seen.validate.load(Ordering::SeqCst),
            seen.mutate.load(Ordering::SeqCst)
        ) == before,
        "webhooks were called outside their selector or cluster"
    );

    // A dead URL: Fail refuses, Ignore lets the write through.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let dead_url = format!("https://127.0.0.1:{dead}/x");
    for (name, policy) in [("fail", "Fail"), ("ignore", "Ignore")] {
        let extra =
            json!({"failurePolicy": policy, "objectSelector": {"matchLabels": {"dead": name}}});
        k.ok_stdin(
            &["apply", "-f", "-"],
            &configuration(
                "ValidatingWebhookConfiguration",
                &format!("dead-{name}"),
                &format!("{name}.kplane.test"),
                &dead_url,
                &ca,
                extra,
            ),
        )?;
    }
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("plain", "dead-fail", json!({"dead": "fail"}), json!({})),
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains("Error from server (InternalError)")
            && out.stderr.contains(&format!(
                r#"Internal error occurred: failed calling webhook "fail.kplane.test": failed to call webhook: Post "{dead_url}?timeout=10s": dial tcp 127.0.0.1:{dead}: connect: connection refused"#
            )),
        "{}",
        out.stderr
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        &configmap("plain", "dead-ignore", json!({"dead": "ignore"}), json!({})),
    )?;

    // A webhook slower than its timeoutSeconds fails the request after the timeout.
    let extra = json!({"timeoutSeconds": 1, "objectSelector": {"matchLabels": {"slow": "yes"}}});
    k.ok_stdin(
        &["apply", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "slow",
            "slow.kplane.test",
            &format!("{base}/slow"),
            &ca,
            extra,
        ),
    )?;
    let started = Instant::now();
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("plain", "slow", json!({"slow": "yes"}), json!({})),
    )?;
    let took = started.elapsed();
    ensure!(
        !out.success()
            && out.stderr.contains("context deadline exceeded")
            && out
                .stderr
                .contains(r#"failed calling webhook "slow.kplane.test""#),
        "{}",
        out.stderr
    );
    ensure!(took < Duration::from_secs(3), "the timeout took {took:?}");

    // Removing a configuration takes effect on the next request (no stale cache).
    k.ok(&["delete", "validatingwebhookconfiguration", "validate"])?;
    k.ok_stdin(
        &["create", "-f", "-"],
        &configmap("hooked", "bad", json!({}), json!({"deny": "yes"})),
    )
    .context("the deleted webhook still denies")?;
    Ok(())
}

/// `matchConditions`: a false condition keeps the webhook from being called; one that
/// does not evaluate refuses the write (403) under `Fail` and skips the webhook under
/// `Ignore`; one that does not compile or is not a bool is refused at create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_match_conditions_exclude_objects_and_fail_or_ignore_errors() -> Result<()> {
    let seen = Arc::new(Seen::default());
    let (base, ca) = webhook_server(seen.clone()).await?;
    let server = KplaneServer::start()?;
    let k = server.kubectl_for("root")?;
    k.ok(&["create", "namespace", "conds"])?;
    let validate = format!("{base}/validate");
    let skip = json!({"objectSelector": {"matchLabels": {"case": "skip"}}, "matchConditions": [
        {"name": "not-skipped", "expression": "!object.metadata.name.startsWith('skip-')"},
        {"name": "creates", "expression": "request.operation == 'CREATE'"}]});
    k.ok_stdin(
        &["apply", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "conditional",
            "conditional.kplane.test",
            &validate,
            &ca,
            skip,
        ),
    )?;
    let deny = json!({"deny": "yes"});
    let skipped = json!({"case": "skip"});
    // Excluded by the condition: not called, so not denied.
    let before = seen.validate.load(Ordering::SeqCst);
    k.ok_stdin(
        &["create", "-f", "-"],
        &configmap("conds", "skip-me", skipped.clone(), deny.clone()),
    )?;
    ensure!(
        seen.validate.load(Ordering::SeqCst) == before,
        "an excluded object was sent"
    );
    // All conditions true: called and denied.
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("conds", "checked", skipped, deny.clone()),
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                r#"admission webhook "conditional.kplane.test" denied the request: configmap says deny"#
            ),
        "{}",
        out.stderr
    );

    // Conditions that do not evaluate (the object has no such key).
    for (name, policy) in [("fail", "Fail"), ("ignore", "Ignore")] {
        let extra = json!({"failurePolicy": policy,
            "objectSelector": {"matchLabels": {"case": name}},
            "matchConditions": [{"name": "broken", "expression": "object.data.missing == 'x'"}]});
        k.ok_stdin(
            &["apply", "-f", "-"],
            &configuration(
                "ValidatingWebhookConfiguration",
                &format!("broken-{name}"),
                &format!("broken-{name}.kplane.test"),
                &validate,
                &ca,
                extra,
            ),
        )?;
    }
    let before = seen.validate.load(Ordering::SeqCst);
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("conds", "broken", json!({"case": "fail"}), deny.clone()),
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                r#"Error from server (Forbidden): error when creating "STDIN": configmaps "broken" is forbidden: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"#
            ),
        "{}",
        out.stderr
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        &configmap("conds", "ignored", json!({"case": "ignore"}), deny),
    )?;
    ensure!(
        seen.validate.load(Ordering::SeqCst) == before,
        "a webhook was called"
    );

    // Validation at create.
    let bad = json!({"matchConditions": [{"name": "int", "expression": "1 + 2"},
        {"name": "int", "expression": "variables.x"}]});
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "invalid",
            "invalid.kplane.test",
            &validate,
            &ca,
            bad,
        ),
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains(r#"webhooks[0].matchConditions[0].expression: Invalid value: "1 + 2": must evaluate to bool but got int"#)
            && out.stderr.contains(r#"webhooks[0].matchConditions[1].name: Duplicate value: "int""#)
            && out.stderr.contains("undeclared reference to 'variables'"),
        "{}",
        out.stderr
    );
    Ok(())
}

/// A webhook's warning reaches kubectl with the refusal of the write that another
/// webhook denies (kube-apiserver's warning recorder writes its headers on every response).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warning_is_shown_before_the_error_of_a_refused_write() -> Result<()> {
    let seen = Arc::new(Seen::default());
    let (base, ca) = webhook_server(seen).await?;
    let server = KplaneServer::start()?;
    let k = server.kubectl_for("root")?;
    k.ok(&["create", "namespace", "warned"])?;
    for (kind, name, path) in [
        ("MutatingWebhookConfiguration", "warn", "/warn"),
        ("ValidatingWebhookConfiguration", "deny", "/validate"),
    ] {
        k.ok_stdin(
            &["apply", "-f", "-"],
            &configuration(
                kind,
                name,
                &format!("{name}.kplane.test"),
                &format!("{base}{path}"),
                &ca,
                json!({}),
            ),
        )?;
    }
    let out = k.run_stdin(
        &["create", "-f", "-"],
        &configmap("warned", "refused", json!({}), json!({"deny": "yes"})),
    )?;
    let warning = out.stderr.find("Warning: warned before the denial");
    let error = out.stderr.find(
        r#"Error from server (Forbidden): error when creating "STDIN": admission webhook "deny.kplane.test" denied the request: configmap says deny"#,
    );
    ensure!(
        !out.success() && matches!((warning, error), (Some(w), Some(e)) if w < e),
        "{}",
        out.stderr
    );
    Ok(())
}

/// Median of `samples`.
pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Times `n` ConfigMap creates through kube-rs in `ns`.
pub(crate) async fn time_creates(
    client: &kube::Client,
    ns: &str,
    prefix: &str,
    n: usize,
) -> Result<Vec<Duration>> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), ns);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("{prefix}-{i}")}, "data": {"k": "v"}}),
        )?;
        let t = Instant::now();
        api.create(&kube::api::PostParams::default(), &cm).await?;
        out.push(t.elapsed());
    }
    Ok(out)
}

/// The admission overhead of one validating webhook per write: median ConfigMap create
/// latency without a webhook and with one (allowing everything) on loopback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: run it by name to record the figures"]
async fn webhook_overhead_bench() -> Result<()> {
    let seen = Arc::new(Seen::default());
    let (base, ca) = webhook_server(seen.clone()).await?;
    let server = KplaneServer::start()?;
    let k = server.kubectl_for("root")?;
    k.ok(&["create", "namespace", "bench"])?;
    let client = server.client_for("root").await?;
    let n = 300;
    time_creates(&client, "bench", "warm", 20).await?;
    let without = median(time_creates(&client, "bench", "plain", n).await?);
    k.ok_stdin(
        &["apply", "-f", "-"],
        &configuration(
            "ValidatingWebhookConfiguration",
            "bench",
            "bench.kplane.test",
            &format!("{base}/validate"),
            &ca,
            json!({}),
        ),
    )?;
    time_creates(&client, "bench", "warm-hooked", 20).await?;
    let with = median(time_creates(&client, "bench", "hooked", n).await?);
    ensure!(seen.validate.load(Ordering::SeqCst) >= n);
    println!("ConfigMap create median over {n}: without webhook {without:?}, with one validating webhook {with:?}");
    Ok(())
}
