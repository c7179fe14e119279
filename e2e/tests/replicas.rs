//! Two kplane replicas on one PostgreSQL (issue 17, "Replicas"): two real
//! `kplane serve --storage postgres://...` processes, each with its own data directory and
//! port, on one throwaway database (`kplane_storage::testing::postgres`).
//!
//! Here: kubectl writes through replica A and `kubectl get -w` on replica B sees every
//! event in order; A's admin kubeconfig (its CA, token and client certificate) and
//! ServiceAccount tokens minted by either replica work on the other; a CRD created through
//! A is served by B. The failure cases (kill -9 of a replica during concurrent writes, the
//! database restarted under load, a watch resumed on the other replica) are in
//! [`failures`]. Every test needs PostgreSQL installed and fails without it.

mod failures;

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{poll_until, KplaneServer, Kubectl, ServerOptions};
use kplane_storage::testing::postgres::PgServer;

use crate::crds::{apply_crd, WIDGETS};
use crate::postgres::pg_server;

/// How long a watcher on one replica may take to see a write through the other; far above
/// the tailer's poll interval (docs/storage-postgres.md), a bound against hangs only.
const WATCH_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a replica may take to serve what another replica changed in its in-memory
/// state (a CRD, a ServiceAccount): far above the documented bound.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The ServiceAccount issuer every replica is given (the address clients would use: a
/// load balancer's), so tokens of one replica are the other's too.
const ISSUER: &str = "https://kplane-replicas.test";
/// The ConfigMap the root-CA publisher puts in every namespace (whenever it runs).
const ROOT_CA: &str = "kube-root-ca.crt";

/// Two replicas on one fresh database. Fields drop in order: the servers stop before
/// the database does.
pub(crate) struct Replicas {
    pub(crate) a: KplaneServer,
    pub(crate) b: KplaneServer,
    pub(crate) pg: PgServer,
    /// Kubeconfigs and kubectl homes the test writes; removed on drop.
    scratch: tempfile::TempDir,
}

impl Replicas {
    /// Starts PostgreSQL, then replica A, then replica B on a new database of it.
    pub(crate) fn start() -> Result<Replicas> {
        let pg = pg_server();
        let url = pg.create_database();
        let options = ServerOptions::default()
            .arg("--storage")
            .arg(&url)
            .arg("--service-account-issuer")
            .arg(ISSUER);
        let a = KplaneServer::start_with(options.clone()).context("starting replica A")?;
        let b = KplaneServer::start_with(options).context("starting replica B")?;
        let scratch = tempfile::Builder::new()
            .prefix("kplane-replicas-")
            .tempdir()?;
        Ok(Replicas { a, b, pg, scratch })
    }

    /// kubectl with the kubeconfig `text` (written to `<scratch>/<name>.kubeconfig`).
    fn kubectl_with(&self, name: &str, text: &str) -> Result<Kubectl> {
        let path = self.scratch.path().join(format!("{name}.kubeconfig"));
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(Kubectl::new(
            path,
            self.scratch.path().join("home"),
            self.scratch.path().join("cache").join(name),
        ))
    }
}

/// `<kind> <name>` of a `kubectl get -w --output-watch-events` line (not the header).
fn watch_event(line: &str) -> Option<(String, String)> {
    let mut cols = line.split_whitespace();
    let kind = cols.next()?;
    let name = cols.next()?;
    (kind != "EVENT").then(|| (kind.to_owned(), name.to_owned()))
}

#[test]
fn kubectl_watch_on_one_replica_sees_every_write_through_the_other_in_order() -> Result<()> {
    let r = Replicas::start()?;
    let ka = r.a.kubectl_root();
    let kb = r.b.kubectl_root();
    ka.ok(&["create", "namespace", "rep"])?;
    // The watch lists `start` first; everything after it is written once B watches.
    ka.ok(&["create", "configmap", "start", "-n", "rep"])?;
    let mut watch = kb.spawn_watch(&[
        "get",
        "configmaps",
        "-n",
        "rep",
        "-w",
        "--output-watch-events",
    ])?;
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED start", |l| {
        watch_event(l) == Some(("ADDED".into(), "start".into()))
    })?;
    let mut expected: Vec<(String, String)> = Vec::new();
    for i in 0..8 {
        let name = format!("c{i}");
        ka.ok(&[
            "create",
            "configmap",
            &name,
            "-n",
            "rep",
            "--from-literal=v=0",
        ])?;
        expected.push(("ADDED".into(), name.clone()));
        ka.ok(&[
            "patch",
            "configmap",
            &name,
            "-n",
            "rep",
            "--type=merge",
            "-p",
            r#"{"data":{"v":"1"}}"#,
        ])?;
        expected.push(("MODIFIED".into(), name.clone()));
        if i % 2 == 0 {
            ka.ok(&["delete", "configmap", &name, "-n", "rep"])?;
            expected.push(("DELETED".into(), name));
        }
    }
    let last = expected.last().cloned();
    watch.wait_for_line(WATCH_TIMEOUT, "the last write", |l| watch_event(l) == last)?;
    let seen: Vec<(String, String)> = watch
        .seen()
        .iter()
        .filter_map(|l| watch_event(l))
        .filter(|(_, name)| name != "start" && name != ROOT_CA)
        .collect();
    ensure!(
        seen == expected,
        "replica B's watch saw\n{seen:?}\nexpected\n{expected:?}"
    );
    // And B serves the resulting state.
    let names = kb.ok(&["get", "configmaps", "-n", "rep", "-o", "name"])?;
    let mut names: Vec<&str> = names.lines().filter(|n| !n.ends_with(ROOT_CA)).collect();
    names.sort_unstable();
    ensure!(
        names
            == [
                "configmap/c1",
                "configmap/c3",
                "configmap/c5",
                "configmap/c7",
                "configmap/start"
            ],
        "{names:?}"
    );
    Ok(())
}

/// A kubeconfig (JSON) for `server_url` trusting the CA `ca_data` (base64 PEM) with the
/// bearer `token` and nothing else.
fn token_kubeconfig(server_url: &str, ca_data: &str, token: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": server_url,
            "certificate-authority-data": ca_data,
        }}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": "user"}}],
        "current-context": "kplane",
    })
    .to_string()
}

/// `kubectl auth whoami`'s user name, `None` if the request failed.
fn whoami(kubectl: &Kubectl) -> Result<Option<String>> {
    let out = kubectl.run(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ])?;
    Ok(out.success().then(|| out.stdout.trim().to_owned()))
}

/// The `certificate-authority-data` of the kubeconfig at `path`.
fn ca_data(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path)?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data: "))
        .map(str::to_owned)
        .context("no certificate-authority-data in the kubeconfig")
}

#[test]
fn one_kubeconfig_and_service_account_tokens_work_against_every_replica() -> Result<()> {
    let r = Replicas::start()?;
    ensure!(r.a.ca_pem()? == r.b.ca_pem()?, "the replicas' CAs differ");
    ensure!(r.a.token() == r.b.token(), "the admin tokens differ");

    // A's admin.kubeconfig with B's address: B's serving certificate is trusted by A's CA,
    // and the token and the client certificate each authenticate the admin.
    let text = fs::read_to_string(r.a.kubeconfig())?;
    ensure!(text.contains(r.a.base_url()), "{text}");
    let on_b = text.replace(r.a.base_url(), r.b.base_url());
    let is_cert = |l: &str| l.contains("client-certificate-data") || l.contains("client-key-data");
    let is_token = |l: &str| l.trim_start().starts_with("token:");
    let variants: [(&str, String); 3] = [
        ("as-is", on_b.clone()),
        (
            "token-only",
            on_b.lines()
                .filter(|l| !is_cert(l))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (
            "cert-only",
            on_b.lines()
                .filter(|l| !is_token(l))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    ];
    for (name, kubeconfig) in &variants {
        let kubectl = r.kubectl_with(name, kubeconfig)?;
        let user = whoami(&kubectl)?;
        ensure!(
            user.as_deref() == Some("kplane-admin"),
            "A's kubeconfig ({name}) on B: {user:?}"
        );
        kubectl
            .ok(&["get", "namespaces"])
            .with_context(|| format!("A's kubeconfig ({name}) on B"))?;
    }

    // A ServiceAccount token minted by A works on B, one minted by B works on A.
    let ka = r.a.kubectl_root();
    let kb = r.b.kubectl_root();
    ka.ok(&["create", "serviceaccount", "robot", "-n", "default"])?;
    let ca = ca_data(r.a.kubeconfig())?;
    let expected = "system:serviceaccount:default:robot";
    let from_a = ka.ok(&["create", "token", "robot", "-n", "default"])?;
    let sa_on_b = r.kubectl_with(
        "sa-on-b",
        &token_kubeconfig(r.b.server_url(), &ca, from_a.trim()),
    )?;
    poll_until(CONVERGE_TIMEOUT, "B to accept A's token", || {
        Ok(whoami(&sa_on_b)?.as_deref() == Some(expected))
    })?;
    let mut from_b = String::new();
    poll_until(CONVERGE_TIMEOUT, "B to mint a token for robot", || {
        let out = kb.run(&["create", "token", "robot", "-n", "default"])?;
        let ok = out.success();
        from_b = out.stdout;
        Ok(ok)
    })?;
    let sa_on_a = r.kubectl_with(
        "sa-on-a",
        &token_kubeconfig(r.a.server_url(), &ca, from_b.trim()),
    )?;
    ensure!(
        whoami(&sa_on_a)?.as_deref() == Some(expected),
        "A refused B's token"
    );
    // Deleting the ServiceAccount through B invalidates the token A minted, on A too.
    kb.ok(&["delete", "serviceaccount", "robot", "-n", "default"])?;
    let sa_token_on_a = r.kubectl_with(
        "a-token-on-a",
        &token_kubeconfig(r.a.server_url(), &ca, from_a.trim()),
    )?;
    poll_until(
        CONVERGE_TIMEOUT,
        "A to refuse the deleted robot's token",
        || Ok(whoami(&sa_token_on_a)?.is_none()),
    )?;
    Ok(())
}

#[test]
fn a_crd_created_through_one_replica_is_served_by_the_other() -> Result<()> {
    let r = Replicas::start()?;
    let ka = r.a.kubectl_root();
    let kb = r.b.kubectl_root();
    apply_crd(ka, "crds/widgets.yaml", WIDGETS)?;
    // B learns the CRD from the change log (a bounded delay): poll, no timing assertion.
    poll_until(CONVERGE_TIMEOUT, "B to serve widgets", || {
        Ok(kb.run(&["get", "widgets", "-n", "default"])?.success())
    })?;
    let resources = kb.ok(&["api-resources", "--api-group=example.com", "-o", "name"])?;
    ensure!(
        resources.lines().any(|l| l == "widgets.example.com"),
        "B's discovery: {resources}"
    );
    kb.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec: {color: red}\n",
    )?;
    poll_until(WATCH_TIMEOUT, "A to serve B's widget", || {
        let out = ka.run(&["get", "widget", "w1", "-n", "default", "-o", "name"])?;
        Ok(out.success() && out.stdout.trim() == "widget.example.com/w1")
    })?;
    // Deleting the CRD through A ends it on B too.
    ka.ok(&["delete", "crd", WIDGETS])?;
    poll_until(CONVERGE_TIMEOUT, "B to stop serving widgets", || {
        let out = kb.run(&["get", "widgets", "-n", "default"])?;
        Ok(!out.success())
    })?;
    Ok(())
}
