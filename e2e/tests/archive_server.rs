//! The archive endpoints of the server (issue 16) driven over HTTP with curl and read back
//! with kube-rs: an export taken while a writer writes is one consistent snapshot and
//! imports into a second server with the same objects, uids, status and owner references;
//! SIGKILL in the middle of an import leaves nothing after the restart; a watch on a
//! replaced cluster gets 410. (The CLI's tests are in `ws_cli.rs` and its neighbours.)

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kplane_e2e::fixtures::{configmap, create_namespace};
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, PostParams};
use kube::{Api, Resource as _, ResourceExt as _};
use serde_json::Value;

/// `curl` as the admin: `(status code, body)`; `upload` is sent as the body of a POST,
/// the body is written to `download` when given.
fn curl(
    server: &KplaneServer,
    path: &str,
    upload: Option<&Path>,
    download: Option<&Path>,
) -> Result<(u16, Vec<u8>)> {
    let dir = tempfile::tempdir()?;
    let out_file = download.map_or_else(|| dir.path().join("body"), Path::to_path_buf);
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sk", "-w", "%{http_code}", "-o"])
        .arg(&out_file)
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token()));
    if let Some(file) = upload {
        cmd.args([
            "-X",
            "POST",
            "-H",
            "Content-Type: application/vnd.kplane.archive",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", file.display()));
    }
    let out = cmd.arg(format!("{}{path}", server.base_url())).output()?;
    ensure!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    Ok((code, std::fs::read(&out_file).unwrap_or_default()))
}

fn export(server: &KplaneServer, cluster: &str, file: &Path) -> Result<()> {
    let (code, body) = curl(
        server,
        &format!("/clusters/{cluster}/kplane/v1/export"),
        None,
        Some(file),
    )?;
    ensure!(
        code == 200,
        "export: {code}: {}",
        String::from_utf8_lossy(&body)
    );
    Ok(())
}

fn import(server: &KplaneServer, cluster: &str, query: &str, file: &Path) -> Result<(u16, Value)> {
    let path = format!("/clusters/{cluster}/kplane/v1/import{query}");
    let (code, body) = curl(server, &path, Some(file), None)?;
    Ok((code, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// What must survive an import: uid, creationTimestamp, data, owner references.
fn identity(cm: &ConfigMap) -> (String, String, String, String, String) {
    (
        cm.name_any(),
        cm.uid().unwrap_or_default(),
        format!("{:?}", cm.metadata.creation_timestamp),
        format!("{:?}", cm.data),
        format!("{:?}", cm.metadata.owner_references),
    )
}

async fn configmaps(client: kube::Client, ns: &str) -> Result<Vec<ConfigMap>> {
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    Ok(api.list(&ListParams::default()).await?.items)
}

async fn seed(client: &kube::Client, ns: &str, n: usize) -> Result<()> {
    create_namespace(client, ns).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let owner = api
        .create(
            &PostParams::default(),
            &configmap("owner", &[("role", "owner")]),
        )
        .await?;
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let owner = owner.clone();
            async move {
                let mut cm = configmap(&format!("cm-{i:05}"), &[("i", &i.to_string())]);
                cm.metadata.owner_references = Some(vec![owner
                    .controller_owner_ref(&())
                    .context("owner ref")?]);
                api.create(&PostParams::default(), &cm).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_during_writes_imports_into_another_server_unchanged() -> Result<()> {
    let a = KplaneServer::start()?;
    a.create_workspace("root:src")?;
    let client = a.client_for("root:src").await?;
    seed(&client, "app", 300).await?;
    // A writer adds w-0, w-1, ... one after the other while the export runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "app");
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                api.create(
                    &PostParams::default(),
                    &configmap(&format!("w-{i:05}"), &[]),
                )
                .await?;
                i += 1;
            }
            anyhow::Ok(i)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("src.karc");
    let exported = {
        let (server_file, a_ref) = (file.clone(), &a);
        tokio::task::block_in_place(|| export(a_ref, "root:src", &server_file))
    };
    exported?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.await??;
    ensure!(written > 0, "the writer wrote nothing");

    let b = KplaneServer::start()?;
    let (code, result) = tokio::task::block_in_place(|| import(&b, "root:src", "", &file))?;
    ensure!(code == 201, "import: {code}: {result}");
    ensure!(
        result["kind"] == "ImportResult" && result["cluster"] == "root:src",
        "{result}"
    );
    let imported = configmaps(b.client_for("root:src").await?, "app").await?;
    let source = configmaps(client.clone(), "app").await?;
    // One snapshot: the writer's objects are a prefix w-0..w-k of what it wrote.
    let writes: Vec<String> = imported
        .iter()
        .map(|c| c.name_any())
        .filter(|n| n.starts_with("w-"))
        .collect();
    let prefix: Vec<String> = (0..writes.len()).map(|i| format!("w-{i:05}")).collect();
    ensure!(writes == prefix, "not one snapshot: {writes:?}");
    // kube-root-ca.crt is each server's own (its root-CA publisher rewrites it).
    let own = |c: &&ConfigMap| c.name_any() != "kube-root-ca.crt";
    let want: Vec<_> = source
        .iter()
        .filter(own)
        .filter(|c| !c.name_any().starts_with("w-") || writes.contains(&c.name_any()))
        .map(identity)
        .collect();
    let got: Vec<_> = imported.iter().filter(own).map(identity).collect();
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        bail!(
            "imported object {i} differs: {:?} instead of {:?}",
            got[i],
            want[i]
        );
    }
    ensure!(
        got.len() == want.len(),
        "{} objects imported, {} expected",
        got.len(),
        want.len()
    );
    ensure!(got.len() >= 301, "{} objects", got.len());
    // Status and uid of the namespace too.
    let ns_a: Namespace = Api::all(client).get("app").await?;
    let ns_b: Namespace = Api::all(b.client_for("root:src").await?).get("app").await?;
    ensure!(
        ns_a.uid() == ns_b.uid() && ns_a.status == ns_b.status,
        "namespace differs"
    );
    // The Workspace in the parent exists and becomes Ready with B's URL.
    let root = b.kubectl_for("root")?;
    root.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        "workspace/src",
        "--timeout=30s",
    ])?;
    // A second import without replace is a 409.
    let (code, status) = tokio::task::block_in_place(|| import(&b, "root:src", "", &file))?;
    ensure!(
        code == 409 && status["reason"] == "AlreadyExists",
        "{code}: {status}"
    );
    Ok(())
}

/// The live value of a metric of `/metrics` (first sample of `name`).
fn metric(server: &KplaneServer, name: &str) -> Result<f64> {
    let (code, body) = curl(server, "/metrics", None, None)?;
    ensure!(code == 200, "metrics: {code}");
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no metric {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_an_import_leaves_nothing_after_restart() -> Result<()> {
    const OBJECTS: usize = 6000;
    let a = KplaneServer::start()?;
    a.create_workspace("root:big")?;
    seed(&a.client_for("root:big").await?, "app", OBJECTS).await?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("big.karc");
    tokio::task::block_in_place(|| export(&a, "root:big", &file))?;

    let mut b = KplaneServer::start()?;
    let before_objects = metric(&b, "apiserver_storage_objects{resource=\"configmaps\"}")?;
    let base = metric(&b, "kplane_storage_committed_writes_total")?;
    let upload = {
        let path = format!("{}/clusters/root:big/kplane/v1/import", b.base_url());
        std::process::Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-X", "POST", "-H"])
            .arg(format!("Authorization: Bearer {}", b.token()))
            .arg("--data-binary")
            .arg(format!("@{}", file.display()))
            .arg(path)
            .spawn()?
    };
    // SIGKILL once the import has written a good part of the objects, long before its end.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = metric(&b, "kplane_storage_committed_writes_total")?;
        if now - base > (OBJECTS / 4) as f64 {
            break;
        }
        ensure!(Instant::now() < deadline, "the import wrote nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    b.kill()?;
    let mut upload = upload;
    let _ = upload.wait();
    b.restart()?;
    let (code, status) = curl(&b, "/clusters/root:big/api/v1/namespaces", None, None)?;
    let status: Value = serde_json::from_slice(&status).unwrap_or(Value::Null);
    ensure!(
        code == 404,
        "the half-imported cluster is there after restart: {code} {status}"
    );
    // Every configmap in the store (staging pseudo-clusters included) is as before.
    let after = metric(&b, "apiserver_storage_objects{resource=\"configmaps\"}")?;
    ensure!(
        after == before_objects,
        "configmaps before {before_objects}, after {after}"
    );
    // And the import can be made again, in full.
    let (code, result) = tokio::task::block_in_place(|| import(&b, "root:big", "", &file))?;
    ensure!(code == 201, "{code}: {result}");
    let n = configmaps(b.client_for("root:big").await?, "app")
        .await?
        .len();
    // The seeded ones, their owner and the namespace's kube-root-ca.crt.
    ensure!(n == OBJECTS + 2, "{n} configmaps");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_on_a_replaced_cluster_gets_410() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:src", "root:dst"])?;
    seed(&server.client_for("root:src").await?, "app", 3).await?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("src.karc");
    tokio::task::block_in_place(|| export(&server, "root:src", &file))?;
    let dst = server.client_for("root:dst").await?;
    create_namespace(&dst, "app").await?;
    let api: Api<ConfigMap> = Api::namespaced(dst.clone(), "app");
    let old = api
        .create(&PostParams::default(), &configmap("old", &[]))
        .await?;
    let rv = old.resource_version().context("resourceVersion")?;
    let watch_path = format!(
        "/clusters/root:dst/api/v1/namespaces/app/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=60"
    );
    let watcher = {
        let (url, token) = (
            format!("{}{watch_path}", server.base_url()),
            server.token().to_string(),
        );
        std::thread::spawn(move || {
            std::process::Command::new("curl")
                .args(["-sk", "-N", "-H"])
                .arg(format!("Authorization: Bearer {token}"))
                .arg(url)
                .output()
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let (code, result) =
        tokio::task::block_in_place(|| import(&server, "root:dst", "?replace=true", &file))?;
    ensure!(code == 201, "{code}: {result}");
    let started = Instant::now();
    let out = watcher
        .join()
        .map_err(|_| anyhow::anyhow!("watcher panicked"))??;
    ensure!(
        started.elapsed() < Duration::from_secs(50),
        "the watch did not end at the flip"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let last: Value = text
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .transpose()?
        .context("no watch event")?;
    ensure!(
        last["type"] == "ERROR" && last["object"]["code"] == 410,
        "{text}"
    );
    // Lists from the old resourceVersion are 410 too; the new content is there.
    let e = api
        .list(
            &ListParams::default()
                .at(&rv)
                .matching(kube::api::VersionMatch::NotOlderThan),
        )
        .await;
    match e {
        Err(kube::Error::Api(s)) if s.code == 410 => {}
        other => bail!("list from the old resourceVersion: {other:?}"),
    }
    let names: Vec<String> = configmaps(dst, "app")
        .await?
        .iter()
        .map(|c| c.name_any())
        .collect();
    ensure!(
        !names.contains(&"old".to_string()) && names.contains(&"cm-00002".to_string()),
        "{names:?}"
    );
    Ok(())
}
