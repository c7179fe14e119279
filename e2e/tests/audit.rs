//! The audit log with kubectl: a Metadata-level policy writes one `ResponseComplete` line
//! per request with the user, verb, objectRef, response code and the logical cluster
//! annotation; an impersonated request records the impersonated user; a `None` rule
//! silences a user; `/metrics` counts the events.

use std::path::Path;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{base64_encode, poll_until, KplaneServer, Kubectl, ServerOptions};
use serde_json::{json, Value};

pub(crate) const POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [quiet]
- level: None
  nonResourceURLs: ['/healthz*', '/readyz*', '/livez*']
- level: Metadata
";

/// A kubectl authenticating with `token`.
fn kubectl_with_token(
    server: &KplaneServer,
    dir: &Path,
    name: &str,
    token: &str,
) -> Result<Kubectl> {
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": server.server_url(),
            "certificate-authority-data": base64_encode(server.ca_pem()?),
        }}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": name}}],
        "current-context": "kplane",
    });
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, kubeconfig.to_string())?;
    Ok(Kubectl::new(
        path,
        dir.join("home"),
        dir.join("cache").join(name),
    ))
}

/// The events written so far.
pub(crate) fn events(log: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).with_context(|| l.to_string()))
        .collect()
}

/// The events of requests for the configmap `name`.
pub(crate) fn about<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "configmaps" && e["objectRef"]["name"] == name)
        .collect()
}

#[test]
fn a_metadata_policy_writes_one_line_per_request() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY)?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "tok-alice,alice,uid-alice,\"system:masters\"\ntok-quiet,quiet,uid-quiet,\"system:masters\"\n",
    )?;
    let log = dir.path().join("logs").join("audit.log");
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--token-auth-file")
            .arg(&tokens)
            .arg("--audit-policy-file")
            .arg(&policy)
            .arg("--audit-log-path")
            .arg(&log),
    )?;
    let alice = kubectl_with_token(&server, dir.path(), "alice", "tok-alice")?;
    let quiet = kubectl_with_token(&server, dir.path(), "quiet", "tok-quiet")?;

    alice.ok(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "default",
        "--from-literal=a=b",
    ])?;
    alice.ok(&["get", "configmap", "c1", "-n", "default", "-o", "name"])?;
    let out = alice.run(&["get", "configmap", "c1", "-n", "default", "--as", "bob"])?;
    ensure!(
        !out.success(),
        "bob may not read configmaps: {}",
        out.stdout
    );
    quiet.ok(&["get", "configmap", "c1", "-n", "default", "-o", "name"])?;
    quiet.ok(&["label", "configmap", "c1", "-n", "default", "q=1"])?;
    // The last request: once its line is written, every earlier one's is.
    let out = alice.run(&["get", "configmap", "marker", "-n", "default"])?;
    ensure!(!out.success(), "no configmap marker");
    poll_until(
        std::time::Duration::from_secs(30),
        "the marker request's audit line",
        || Ok(!about(&events(&log)?, "marker").is_empty()),
    )?;
    let all = events(&log)?;

    // Every line is a ResponseComplete (RequestReceived is omitted), one per audit ID.
    let mut ids = std::collections::HashSet::new();
    for e in &all {
        ensure!(
            e["kind"] == "Event" && e["apiVersion"] == "audit.k8s.io/v1",
            "{e}"
        );
        ensure!(e["level"] == "Metadata", "{e}");
        ensure!(e["stage"] == "ResponseComplete", "{e}");
        ensure!(
            ids.insert(e["auditID"].as_str().unwrap_or("").to_string()),
            "{e}"
        );
        ensure!(e["annotations"]["kplane.io/cluster"] == "root", "{e}");
        ensure!(
            e.get("requestObject").is_none() && e.get("responseObject").is_none(),
            "{e}"
        );
        // The None rules: nothing from `quiet`, no health checks.
        ensure!(
            e["user"]["username"] != "quiet",
            "a silenced user was audited: {e}"
        );
        let uri = e["requestURI"].as_str().unwrap_or("");
        ensure!(!uri.contains("/readyz") && !uri.contains("/healthz"), "{e}");
    }

    let c1 = about(&all, "c1");
    ensure!(
        c1.len() == 3,
        "the create, the get as alice and as bob: {c1:#?}"
    );
    let get = c1[1];
    ensure!(get["verb"] == "get", "{get}");
    ensure!(get["user"]["username"] == "alice", "{get}");
    ensure!(get["user"]["uid"] == "uid-alice", "{get}");
    ensure!(get.get("impersonatedUser").is_none(), "{get}");
    ensure!(
        get["objectRef"]
            == json!({"resource": "configmaps", "namespace": "default", "name": "c1", "apiVersion": "v1"}),
        "{get}"
    );
    ensure!(
        get["responseStatus"] == json!({"metadata": {}, "code": 200}),
        "{get}"
    );
    ensure!(
        get["annotations"]["authorization.k8s.io/decision"] == "allow",
        "{get}"
    );
    ensure!(
        get["userAgent"]
            .as_str()
            .is_some_and(|a| a.starts_with("kubectl")),
        "{get}"
    );
    ensure!(get["sourceIPs"] == json!(["127.0.0.1"]), "{get}");
    ensure!(
        get["requestURI"].as_str().is_some_and(
            |u| u.starts_with("/clusters/root/api/v1/namespaces/default/configmaps/c1")
        ),
        "{get}"
    );

    let as_bob = c1[2];
    ensure!(
        as_bob["user"]["username"] == "alice",
        "the real user: {as_bob}"
    );
    ensure!(as_bob["impersonatedUser"]["username"] == "bob", "{as_bob}");
    ensure!(as_bob["responseStatus"]["code"] == 403, "{as_bob}");
    ensure!(
        as_bob["responseStatus"]["reason"] == "Forbidden",
        "{as_bob}"
    );
    ensure!(
        as_bob["annotations"]["authorization.k8s.io/decision"] == "forbid",
        "{as_bob}"
    );

    let creates: Vec<&Value> = all
        .iter()
        .filter(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps")
        .collect();
    ensure!(creates.len() == 1, "{creates:#?}");
    ensure!(
        creates[0]["responseStatus"]["code"] == 201,
        "{}",
        creates[0]
    );
    ensure!(creates[0]["user"]["username"] == "alice", "{}", creates[0]);
    // The created object's name completes the objectRef (the URL has none).
    ensure!(creates[0] == c1[0], "{}", creates[0]);
    ensure!(
        creates[0]["objectRef"]
            == json!({"resource": "configmaps", "namespace": "default", "name": "c1", "apiVersion": "v1"}),
        "{}",
        creates[0]
    );

    let marker = about(&all, "marker");
    ensure!(
        marker.len() == 1 && marker[0]["responseStatus"]["code"] == 404,
        "{marker:#?}"
    );
    ensure!(
        marker[0]["responseStatus"]["reason"] == "NotFound",
        "{marker:#?}"
    );

    // The admin's /metrics counts the events.
    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"])?;
    let count = metrics
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_audit_event_total "))
        .context("apiserver_audit_event_total")?;
    ensure!(count.trim().parse::<f64>()? >= all.len() as f64, "{count}");
    ensure!(
        metrics.contains("apiserver_audit_error_total{plugin=\"log\"} 0"),
        "no event dropped"
    );
    Ok(())
}

#[test]
fn request_response_level_and_a_watchs_two_stages() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
         - level: RequestResponse\n  resources: [{group: '', resources: [configmaps]}]\n  omitStages: [RequestReceived]\n",
    )?;
    let log = dir.path().join("audit.log");
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--audit-policy-file")
            .arg(&policy)
            .arg("--audit-log-path")
            .arg(&log)
            .arg("--audit-log-maxsize=1"),
    )?;
    // kubectl sends the ConfigMap as Protobuf: the event records it as JSON.
    server.kubectl_ok(&[
        "create",
        "configmap",
        "rr",
        "-n",
        "default",
        "--from-literal=k=v",
    ])?;
    // A watch the server ends after a second.
    server.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
    ])?;
    let done = |events: &[Value]| {
        events
            .iter()
            .any(|e| e["verb"] == "watch" && e["stage"] == "ResponseComplete")
    };
    poll_until(
        std::time::Duration::from_secs(30),
        "the watch's ResponseComplete",
        || Ok(done(&events(&log)?)),
    )?;
    let all = events(&log)?;
    let create = all
        .iter()
        .find(|e| e["verb"] == "create")
        .context("the create's event")?;
    ensure!(create["level"] == "RequestResponse", "{create}");
    ensure!(create["objectRef"]["name"] == "rr", "{create}");
    ensure!(
        create["requestObject"]["data"] == json!({"k": "v"}),
        "{create}"
    );
    ensure!(
        create["responseObject"]["metadata"]["name"] == "rr",
        "{create}"
    );
    ensure!(
        create["responseObject"]["metadata"]["uid"].is_string(),
        "{create}"
    );
    let watch: Vec<&Value> = all.iter().filter(|e| e["verb"] == "watch").collect();
    let stages: Vec<&str> = watch.iter().filter_map(|e| e["stage"].as_str()).collect();
    ensure!(
        stages == ["ResponseStarted", "ResponseComplete"],
        "{watch:#?}"
    );
    ensure!(watch[0]["auditID"] == watch[1]["auditID"], "{watch:#?}");
    ensure!(
        watch.iter().all(|e| e.get("responseObject").is_none()),
        "{watch:#?}"
    );
    Ok(())
}
