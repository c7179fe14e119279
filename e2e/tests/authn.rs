//! Authentication with real clients: anonymous requests (401 with kube-apiserver's Status,
//! public endpoints reachable), client certificates minted with `kplane certs issue` (CN =
//! user, O = groups; a certificate of another CA refused), the admin's client certificate,
//! the static token file, and impersonation (`kubectl --as`, `--as-group`, `--as-uid`,
//! `Impersonate-Extra-*`), each seen through `kubectl auth whoami`.
//!
//! Until RBAC is enforced only `system:masters` is authorized, so the users whose whoami is
//! checked carry that group; users without it show their identity through the 403 message
//! and TokenReview.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{base64_encode, kplane_bin, KplaneServer, Kubectl, ServerOptions};
use serde_json::{json, Value};

/// kube-apiserver's body of a 401.
fn unauthorized_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
}

/// One `curl` GET of `url` with extra arguments: (status code, body text).
fn curl(url: &str, args: &[&str]) -> Result<(u16, String)> {
    let dir = tempfile::tempdir()?;
    let body = dir.path().join("body");
    let out = Command::new("curl")
        .args(["-sk", "-w", "%{http_code}", "-o"])
        .arg(&body)
        .args(args)
        .arg(url)
        .output()?;
    ensure!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    Ok((code, std::fs::read_to_string(&body).unwrap_or_default()))
}

/// `kplane certs issue` into `out`: the paths of the certificate and key.
fn issue(data_dir: &Path, user: &str, groups: &[&str], out: &Path) -> Result<(PathBuf, PathBuf)> {
    let mut cmd = Command::new(kplane_bin()?);
    cmd.args(["certs", "issue", "--user", user, "--data-dir"])
        .arg(data_dir)
        .arg("-o")
        .arg(out)
        .env_remove("KPLANE_DATA_DIR");
    for g in groups {
        cmd.args(["--group", g]);
    }
    let run = cmd.output()?;
    ensure!(
        run.status.success(),
        "kplane certs issue: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    Ok((
        out.join(format!("{user}.crt")),
        out.join(format!("{user}.key")),
    ))
}

/// A kubectl whose kubeconfig has the server's URL and CA and the given `user` entry.
fn kubectl_as(server: &KplaneServer, dir: &Path, name: &str, user: Value) -> Result<Kubectl> {
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": server.server_url(),
            "certificate-authority-data": base64_encode(server.ca_pem()?),
        }}],
        "users": [{"name": name, "user": user}],
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

fn cert_user(crt: &Path, key: &Path) -> Value {
    json!({"client-certificate": crt, "client-key": key})
}

/// `kubectl auth whoami -o json` (with extra flags): the status' userInfo.
fn whoami(kubectl: &Kubectl, flags: &[&str]) -> Result<Value> {
    let mut args = vec!["auth", "whoami", "-o", "json"];
    args.extend_from_slice(flags);
    let out = kubectl.ok(&args)?;
    let review: Value = serde_json::from_str(&out).with_context(|| out.clone())?;
    Ok(review["status"]["userInfo"].clone())
}

/// The stderr of a kubectl run that must fail.
fn fails(kubectl: &Kubectl, args: &[&str]) -> Result<String> {
    let out = kubectl.run(args)?;
    ensure!(!out.success(), "kubectl {args:?} succeeded: {}", out.stdout);
    Ok(out.stderr)
}

/// `/metrics/slis` as kube-apiserver serves it (upstream's "should grab all metrics slis
/// from API server"): authenticated like `/metrics`, with each health check's last result
/// and counts once an endpoint has run its list.
#[test]
fn health_check_slis_are_served_at_metrics_slis() -> Result<()> {
    let server = KplaneServer::start()?;
    let base = server.base_url();
    let (code, _) = curl(&format!("{base}/metrics/slis"), &[])?;
    ensure!(code == 401, "anonymous /metrics/slis: {code}");
    for path in ["/readyz", "/readyz", "/livez"] {
        let (code, body) = curl(&format!("{base}{path}"), &[])?;
        ensure!(code == 200, "{path}: {code} {body}");
    }
    let auth = format!("Authorization: Bearer {}", server.token());
    let (code, body) = curl(&format!("{base}/metrics/slis"), &["-H", &auth])?;
    ensure!(code == 200, "/metrics/slis: {code} {body}");
    for line in [
        "# TYPE kubernetes_healthcheck gauge",
        "kubernetes_healthcheck{name=\"storage\",type=\"readyz\"} 1",
        "kubernetes_healthcheck{name=\"ping\",type=\"livez\"} 1",
    ] {
        ensure!(body.lines().any(|l| l == line), "no {line:?} in:\n{body}");
    }
    // the two `/readyz` above, and whatever the start-up's readiness polls added
    let total = "kubernetes_healthchecks_total{name=\"bootstrap-namespaces\",status=\"success\",type=\"readyz\"} ";
    let count = body
        .lines()
        .find_map(|l| l.strip_prefix(total))
        .and_then(|n| n.parse::<u64>().ok());
    ensure!(
        count.is_some_and(|n| n >= 2),
        "{total}: {count:?} in:\n{body}"
    );
    Ok(())
}

#[test]
fn anonymous_requests_reach_only_the_public_endpoints() -> Result<()> {
    let server = KplaneServer::start()?;
    let base = server.base_url();
    for path in [
        "/api/v1/namespaces",
        "/clusters/root/api",
        "/clusters/root/apis/apps/v1/namespaces/default/deployments",
        "/clusters/*/api/v1/configmaps",
        "/metrics",
        "/openapi/v2",
        "/",
    ] {
        let (code, body) = curl(&format!("{base}{path}"), &[])?;
        ensure!(code == 401, "{path}: {code} {body}");
        let status: Value = serde_json::from_str(&body).with_context(|| body.clone())?;
        ensure!(status == unauthorized_status(), "{path}: {status}");
    }
    for path in [
        "/healthz",
        "/livez",
        "/readyz",
        "/readyz/ping",
        "/version",
        "/clusters/root/healthz",
        "/clusters/root/version",
    ] {
        let (code, body) = curl(&format!("{base}{path}"), &[])?;
        ensure!(code == 200, "{path}: {code} {body}");
    }
    // OIDC discovery is public (served by the ServiceAccount issuer): never a 401.
    for path in [
        "/.well-known/openid-configuration",
        "/openid/v1/jwks",
        "/clusters/root/.well-known/openid-configuration",
    ] {
        let (code, body) = curl(&format!("{base}{path}"), &[])?;
        ensure!(code != 401 && code != 403, "{path}: {code} {body}");
    }
    // A credential that is presented but invalid is a 401, also on public paths.
    for path in ["/healthz", "/api/v1/namespaces"] {
        let (code, body) = curl(
            &format!("{base}{path}"),
            &["-H", "Authorization: Bearer not-a-token"],
        )?;
        ensure!(code == 401, "{path}: {code} {body}");
    }
    Ok(())
}

#[test]
fn certificates_tokens_and_impersonation() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "tok-alice,alice,uid-alice,\"dev,ops\"\ntok-dave,dave,uid-dave,\"system:masters\"\n",
    )?;
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--token-auth-file")
            .arg(&tokens),
    )?;
    let certs = dir.path().join("certs");

    // A client certificate from `kplane certs issue`: CN is the user, each O a group.
    let (crt, key) = issue(
        server.data_dir(),
        "carol",
        &["dev", "system:masters"],
        &certs,
    )?;
    let carol = kubectl_as(&server, dir.path(), "carol", cert_user(&crt, &key))?;
    let me = whoami(&carol, &[])?;
    ensure!(me["username"] == "carol", "{me}");
    ensure!(
        me["groups"] == json!(["dev", "system:masters", "system:authenticated"]),
        "{me}"
    );
    let id = me["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap_or("");
    ensure!(id.starts_with("X509SHA256="), "{me}");
    carol.ok(&["get", "namespaces"])?;

    // A certificate of another CA (same subject, other key) is refused.
    let other = dir.path().join("other-data");
    let (crt, key) = issue(&other, "mallory", &["system:masters"], &certs)?;
    let mallory = kubectl_as(&server, dir.path(), "mallory", cert_user(&crt, &key))?;
    let err = fails(&mallory, &["get", "--raw", "/api/v1/namespaces"])?;
    ensure!(err.contains("Unauthorized"), "{err}");
    let url = format!("{}/api/v1/namespaces", server.base_url());
    let (code, body) = curl(
        &url,
        &[
            "--cert",
            crt.to_str().unwrap_or(""),
            "--key",
            key.to_str().unwrap_or(""),
        ],
    )?;
    ensure!(code == 401, "{code}: {body}");
    ensure!(
        serde_json::from_str::<Value>(&body)? == unauthorized_status(),
        "{body}"
    );

    // admin.kubeconfig's client certificate alone authenticates the admin.
    let admin_crt = server.data_dir().join("pki/admin.crt");
    let admin_key = server.data_dir().join("pki/admin.key");
    let admin = kubectl_as(
        &server,
        dir.path(),
        "admin-cert",
        cert_user(&admin_crt, &admin_key),
    )?;
    let me = whoami(&admin, &[])?;
    ensure!(me["username"] == "kplane-admin", "{me}");
    ensure!(me["groups"][0] == "system:masters", "{me}");

    // Token-file users.
    let dave = kubectl_as(&server, dir.path(), "dave", json!({"token": "tok-dave"}))?;
    let me = whoami(&dave, &[])?;
    ensure!(me["username"] == "dave" && me["uid"] == "uid-dave", "{me}");
    ensure!(
        me["groups"] == json!(["system:masters", "system:authenticated"]),
        "{me}"
    );
    let review = server.kubectl_stdin(
        &["create", "-o", "json", "-f", "-"],
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": "tok-alice"}})
        .to_string(),
    )?;
    ensure!(review.success(), "{}", review.stderr);
    let review: Value = serde_json::from_str(&review.stdout)?;
    ensure!(
        review["status"]["user"]
            == json!({"username": "alice", "uid": "uid-alice",
                      "groups": ["dev", "ops", "system:authenticated"]}),
        "{review}"
    );
    let unknown = kubectl_as(
        &server,
        dir.path(),
        "unknown",
        json!({"token": "tok-nobody"}),
    )?;
    let err = fails(&unknown, &["get", "--raw", "/api/v1/namespaces"])?;
    ensure!(err.contains("Unauthorized"), "{err}");

    // Alice is authenticated but not authorized; she may not impersonate either.
    let alice = kubectl_as(&server, dir.path(), "alice", json!({"token": "tok-alice"}))?;
    let err = fails(&alice, &["get", "--raw", "/api/v1/namespaces"])?;
    ensure!(
        err.contains(r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#),
        "{err}"
    );
    let err = fails(
        &alice,
        &["get", "--raw", "/api/v1/namespaces", "--as", "bob"],
    )?;
    ensure!(
        err.contains(r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{err}"
    );

    // The admin (system:masters) may impersonate anyone; the request then is theirs.
    let me = whoami(
        server.kubectl_root(),
        &[
            "--as",
            "bob",
            "--as-group",
            "system:masters",
            "--as-group",
            "qa",
            "--as-uid",
            "u-7",
        ],
    )?;
    ensure!(
        me == json!({"username": "bob", "uid": "u-7",
                     "groups": ["system:masters", "qa", "system:authenticated"]}),
        "{me}"
    );
    let me = whoami(
        server.kubectl_root(),
        &[
            "--as",
            "system:serviceaccount:default:robot",
            "--as-group",
            "system:masters",
        ],
    )?;
    ensure!(
        me["username"] == "system:serviceaccount:default:robot",
        "{me}"
    );
    let err = fails(
        server.kubectl_root(),
        &["get", "--raw", "/api/v1/namespaces", "--as", "bob"],
    )?;
    ensure!(
        err.contains(r#"User "bob" cannot list resource "namespaces""#),
        "{err}"
    );
    // Extras through the raw headers (kubectl has no flag for them).
    let ssr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, body) = curl(
        &format!(
            "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            server.server_url()
        ),
        &[
            "-X",
            "POST",
            "-H",
            &format!("Authorization: Bearer {}", server.token()),
            "-H",
            "Content-Type: application/json",
            "-H",
            "Impersonate-User: erin",
            "-H",
            "Impersonate-Group: system:masters",
            "-H",
            "Impersonate-Extra-Scopes: view",
            "-H",
            "Impersonate-Extra-Scopes: edit",
            "-d",
            &ssr.to_string(),
        ],
    )?;
    ensure!(code == 201, "{code}: {body}");
    let review: Value = serde_json::from_str(&body)?;
    ensure!(
        review["status"]["userInfo"]["extra"] == json!({"scopes": ["view", "edit"]}),
        "{review}"
    );
    Ok(())
}
