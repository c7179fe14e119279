//! The manifests against real servers: kplane started with the StatefulSet's arguments,
//! the syncer's host RBAC on a kplane standing in for the host, and the syncer's RBAC in
//! kplane with the kubeconfig `syncer-kubeconfig.sh` makes.

use std::process::Command;

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl, ServerOptions};
use serde_json::{json, Value};

use super::{deploy_dir, find, Offline, SYNCER_NAMESPACED, SYNCER_VERBS};

/// `curl -sS -o /dev/null -w %{http_code} <args>`: the status code, or `None` when curl
/// fails (e.g. the certificate does not verify).
fn curl_code(args: &[&str]) -> Result<Option<u16>> {
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .output()
        .context("running curl")?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).trim().parse()?))
}

#[test]
fn kplane_serves_with_the_statefulsets_arguments() -> Result<()> {
    let objects = Offline::new()?.render("kplane")?;
    let sts = find(&objects, "StatefulSet")?;
    let args = sts["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .context("no args")?;
    // The harness gives `serve --data-dir D --bind 127.0.0.1:0` itself; the rest as the
    // kubelet passes them, with the pod's namespace expanded.
    let mut options = ServerOptions::default();
    for arg in args.iter().skip(1).filter_map(Value::as_str) {
        if !arg.starts_with("--data-dir=") && !arg.starts_with("--bind=") {
            options = options.arg(arg.replace("$(POD_NAMESPACE)", "kplane"));
        }
    }
    let server = KplaneServer::start_with(options)?;
    let port = server.base_url().rsplit(':').next().context("no port")?;

    // The probes: no credentials, and the kubelet does not verify the certificate.
    for path in ["/livez", "/readyz"] {
        let url = format!("{}{path}", server.base_url());
        ensure!(curl_code(&["-k", &url])? == Some(200), "{path}");
    }
    // The serving certificate names the Service, in the pod's namespace.
    let scratch = tempfile::Builder::new()
        .prefix("kplane-deploy-")
        .tempdir()?;
    let ca = scratch.path().join("ca.crt");
    std::fs::write(&ca, server.ca_pem()?)?;
    let ca = ca.to_str().context("non-UTF-8 path")?;
    for (host, verifies) in [
        ("kplane", true),
        ("kplane.kplane", true),
        ("kplane.kplane.svc", true),
        ("kplane.kplane.svc.cluster.local", true),
        ("kplane.other.svc", false),
    ] {
        let resolve = format!("{host}:{port}:127.0.0.1");
        let url = format!("https://{host}:{port}/readyz");
        let code = curl_code(&["--cacert", ca, "--resolve", &resolve, &url])?;
        ensure!(code.is_some() == verifies, "{host}: {code:?}");
    }
    // ServiceAccount tokens are issued by the Service's URL, and authenticate.
    let discovery: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/.well-known/openid-configuration",
    ])?)?;
    ensure!(
        discovery["issuer"] == "https://kplane.kplane.svc:6443/clusters/root",
        "{discovery}"
    );
    let token = server.kubectl_ok(&["create", "token", "default", "-n", "default"])?;
    let whoami = server.kubectl_ok(&[
        "--token",
        token.trim(),
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ])?;
    ensure!(
        whoami == "system:serviceaccount:default:default",
        "{whoami}"
    );

    // The admin kubeconfig published as docs/deploy/README.md says: `kplane kubeconfig`
    // as `kubectl exec` runs it (no HOME, no KUBECONFIG), the Service's URL, no client
    // certificate; the token alone authenticates the admin.
    let published = scratch.path().join("in-cluster.kubeconfig");
    let out = Command::new(kplane_e2e::kplane_bin()?)
        .args(["kubeconfig", "root", "--kubeconfig"])
        .arg(server.kubeconfig())
        .env_clear()
        .output()?;
    ensure!(
        out.status.success(),
        "kplane kubeconfig: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&published, &out.stdout)?;
    let k = Kubectl::new(
        published.clone(),
        scratch.path().into(),
        scratch.path().join("cache"),
    );
    let service_url = format!("https://kplane.kplane.svc:{port}/clusters/root");
    k.ok(&["config", "set-cluster", "root", "--server", &service_url])?;
    for field in ["client-certificate-data", "client-key-data"] {
        k.ok(&["config", "unset", &format!("users.kplane-admin.{field}")])?;
    }
    let text = std::fs::read_to_string(&published)?;
    ensure!(!text.contains("client-"), "{text}");
    let whoami = k.ok(&[
        "--server",
        &format!("{}/clusters/root", server.base_url()),
        "--tls-server-name",
        "kplane.kplane.svc",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ])?;
    ensure!(whoami == "kplane-admin", "{whoami}");
    Ok(())
}

/// `kubectl auth can-i VERB RESOURCE --as <the syncer's ServiceAccount> <extra>` on `host`.
fn syncer_can(host: &KplaneServer, verb: &str, resource: &str, extra: &[&str]) -> Result<bool> {
    let mut args = vec![
        "auth",
        "can-i",
        verb,
        resource,
        "--as",
        "system:serviceaccount:kplane-syncer:kplane-syncer",
    ];
    args.extend(extra);
    let out = host.kubectl(&args)?;
    match out.stdout.trim() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => bail!("kubectl {}: {out:?}", args.join(" ")),
    }
}

/// The overlays' RBAC under a real authorizer: a kplane server stands in for the host (as
/// in the syncer's tests) and gets every rendered object but the Deployment (kplane does
/// not serve apps/v1); the syncer's ServiceAccount may then do exactly what it needs.
#[test]
fn syncer_host_rbac_on_a_stand_in_host() -> Result<()> {
    let offline = Offline::new()?;
    for (overlay, cluster_wide) in [("syncer/namespaced", false), ("syncer/cluster", true)] {
        let host = KplaneServer::start()?;
        let items: Vec<Value> = offline
            .render(overlay)?
            .into_iter()
            .filter(|o| o["kind"] != "Deployment")
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        let out = host
            .kubectl_root()
            .ok_stdin(&["apply", "-f", "-"], &list.to_string())?;
        ensure!(out.lines().count() == items.len(), "{overlay}: {out}");
        host.kubectl_ok(&["create", "namespace", "elsewhere"])?;

        for (_, resource) in SYNCER_NAMESPACED {
            for verb in SYNCER_VERBS {
                ensure!(
                    syncer_can(&host, verb, resource, &["-n", "kplane-syncer"])?,
                    "{overlay}: {verb} {resource} in its namespace"
                );
                ensure!(
                    syncer_can(&host, verb, resource, &["-n", "elsewhere"])? == cluster_wide,
                    "{overlay}: {verb} {resource} in another namespace"
                );
            }
        }
        for verb in ["create", "delete", "list"] {
            ensure!(
                syncer_can(&host, verb, "namespaces", &[])? == cluster_wide,
                "{overlay}: {verb} namespaces"
            );
        }
        // Nothing else: no pods, no RBAC, not the host Job controller's status.
        let ns = ["-n", "kplane-syncer"];
        ensure!(
            !syncer_can(&host, "create", "pods", &ns)?,
            "{overlay}: pods"
        );
        ensure!(
            !syncer_can(&host, "create", "roles", &ns)?,
            "{overlay}: roles"
        );
        let status = ["-n", "kplane-syncer", "--subresource", "status"];
        ensure!(
            !syncer_can(&host, "update", "jobs", &status)?,
            "{overlay}: jobs/status"
        );
    }
    Ok(())
}

/// A SelfSubjectAccessReview with `kubectl` as the kubeconfig's user: allowed?
fn self_review(k: &Kubectl, attrs: Value) -> Result<bool> {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    });
    // Client-side validation would list CRDs, which this user may not do.
    let out = k.ok_stdin(
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review.to_string(),
    )?;
    let v: Value = serde_json::from_str(&out).with_context(|| out.clone())?;
    Ok(v["status"]["allowed"] == true)
}

fn sync_attrs(name: &str) -> Value {
    json!({"verb": "sync", "group": "sync.kplane.io", "resource": "synctargets", "name": name})
}

#[test]
fn kplane_rbac_applies_and_the_syncer_kubeconfig_may_sync_only_its_target() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:acme"])?;
    let acme = server.kubectl_for("root:acme")?;
    let dir = deploy_dir().join("kplane-rbac");
    let dir = dir.to_str().context("non-UTF-8 path")?;

    let out = acme.ok(&["apply", "-k", dir])?;
    ensure!(out.matches(" created").count() == 3, "{out}");
    let out = acme.ok(&["apply", "-k", dir])?;
    ensure!(out.matches(" unchanged").count() == 3, "{out}");
    let out = acme.ok(&["apply", "--server-side", "-k", dir])?;
    ensure!(out.matches("serverside-applied").count() == 3, "{out}");

    // The documented way to make the syncer's kubeconfig, with this server's address.
    let scratch = tempfile::Builder::new()
        .prefix("kplane-deploy-")
        .tempdir()?;
    let out = Command::new("bash")
        .arg(deploy_dir().join("syncer-kubeconfig.sh"))
        .args(["east", server.base_url(), "1h"])
        .env("KUBECONFIG", acme.kubeconfig())
        .env("HOME", scratch.path())
        .output()
        .context("running syncer-kubeconfig.sh")?;
    ensure!(
        out.status.success(),
        "syncer-kubeconfig.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kubeconfig = scratch.path().join("syncer.kubeconfig");
    std::fs::write(&kubeconfig, &out.stdout)?;
    let syncer = Kubectl::new(
        kubeconfig,
        scratch.path().into(),
        scratch.path().join("cache"),
    );
    let server_url = syncer.ok(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ])?;
    ensure!(
        server_url == format!("{}/clusters/root:acme", server.base_url()),
        "{server_url}"
    );
    let whoami = syncer.ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ])?;
    ensure!(
        whoami == "system:serviceaccount:kube-system:kplane-syncer-east",
        "{whoami}"
    );

    // `sync` on its own target, nothing else; kubectl knows the verb's resource.
    acme.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: sync.kplane.io/v1alpha1\nkind: SyncTarget\nmetadata:\n  name: east\n",
    )?;
    let can = syncer.ok(&["auth", "can-i", "sync", "synctargets/east"])?;
    ensure!(can.trim() == "yes", "{can}");
    let can = syncer.run(&["auth", "can-i", "sync", "synctargets/west"])?;
    ensure!(!can.success() && can.stdout.trim() == "no", "{can:?}");
    ensure!(
        self_review(&syncer, sync_attrs("east"))?,
        "sync east denied"
    );
    ensure!(
        !self_review(&syncer, sync_attrs("west"))?,
        "sync west allowed"
    );
    ensure!(
        !self_review(
            &syncer,
            json!({"verb": "get", "group": "sync.kplane.io", "resource": "synctargets", "name": "east"})
        )?,
        "get synctargets allowed"
    );
    let out = syncer.run(&["get", "secrets", "-n", "default"])?;
    ensure!(
        !out.success() && out.stderr.contains("Forbidden"),
        "{out:?}"
    );

    // The grant is the logical cluster's: the same ServiceAccount name in root gets nothing.
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:kube-system:kplane-syncer-east",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
            "resourceAttributes": sync_attrs("east"),
        },
    });
    for (kubectl, allowed) in [(&acme, true), (server.kubectl_root(), false)] {
        let out = kubectl.ok_stdin(&["create", "-f", "-", "-o", "json"], &review.to_string())?;
        let v: Value = serde_json::from_str(&out)?;
        if v["status"]["allowed"] != allowed {
            bail!("{}: {}", kubectl.kubeconfig().display(), v["status"]);
        }
    }
    Ok(())
}
