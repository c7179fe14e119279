//! `kplane ws move` between two real servers (docs/architecture.md "Moving a logical
//! cluster"): a move under a concurrent writer loses and duplicates nothing and the writer
//! sees only 429s (then the source's 410 naming the new location), also when the source is
//! two replicas on one PostgreSQL and the writer writes through the other; a move whose servers
//! were both killed after the fence continues when re-run; `--abort` rolls a fenced move
//! back.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::{fixtures, kplane_bin, KplaneServer};
use kube::api::{ListParams, PostParams};
use kube::Api;

/// Runs the kplane CLI with `KUBECONFIG` = `kubeconfig`; answers stdout, or the failure.
fn kplane(kubeconfig: &Path, args: &[&str]) -> Result<String> {
    let home = tempfile::tempdir()?;
    let out = Command::new(kplane_bin()?)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.path())
        .output()
        .context("running kplane")?;
    ensure!(
        out.status.success(),
        "kplane {args:?}: {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn configmaps(client: kube::Client) -> Api<ConfigMap> {
    Api::namespaced(client, "default")
}

/// A kube-rs client for `cluster` without kube-rs's own retries of 429s (which would wait
/// out a fence with growing backoff): the test sees every answer.
async fn no_retry(server: &KplaneServer, cluster: &str) -> Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig_for_cluster(cluster)?)?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// name → uid of the ConfigMaps of `cluster`'s default namespace.
async fn uids(server: &KplaneServer, cluster: &str) -> Result<BTreeMap<String, String>> {
    let list = configmaps(server.client_for(cluster).await?)
        .list(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|c| {
            (
                c.metadata.name.unwrap_or_default(),
                c.metadata.uid.unwrap_or_default(),
            )
        })
        .collect())
}

async fn seed(server: &KplaneServer, cluster: &str, n: usize) -> Result<()> {
    let api = configmaps(server.client_for(cluster).await?);
    for i in 0..n {
        api.create(
            &PostParams::default(),
            &fixtures::configmap(&format!("seed-{i}"), &[("i", "x")]),
        )
        .await?;
    }
    Ok(())
}

/// A raw request into `cluster` of `server`; answers the status and the body.
async fn raw(
    server: &KplaneServer,
    cluster: &str,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<(u16, String)> {
    let client = server.client_for(cluster).await?;
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/vnd.kplane.archive")
        .body(body)?;
    match client.request_text(req).await {
        Ok(text) => Ok((200, text)),
        Err(kube::Error::Api(e)) => Ok((e.code, e.message)),
        Err(e) => Err(e.into()),
    }
}

/// What the writer saw.
#[derive(Debug, Default)]
struct Written {
    /// name → uid of each acknowledged create.
    acked: BTreeMap<String, String>,
    throttled: usize,
    /// The 410's message that ended it.
    gone: Option<String>,
    other: Vec<String>,
}

/// Creates ConfigMaps one after the other until the cluster answers 410, retrying 429s.
async fn writer(api: Api<ConfigMap>, stop: Arc<AtomicBool>) -> Written {
    let mut w = Written::default();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w-{i}");
        match api
            .create(&PostParams::default(), &fixtures::configmap(&name, &[]))
            .await
        {
            Ok(cm) => {
                w.acked.insert(name, cm.metadata.uid.unwrap_or_default());
                i += 1;
            }
            Err(kube::Error::Api(e)) if e.code == 429 => {
                w.throttled += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(kube::Error::Api(e)) if e.code == 410 => {
                w.gone = Some(e.message);
                break;
            }
            Err(e) => {
                w.other.push(e.to_string());
                break;
            }
        }
    }
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_under_a_writer_loses_nothing_and_the_source_names_the_new_location() -> Result<()> {
    let src = KplaneServer::start()?;
    let dst = KplaneServer::start()?;
    src.create_workspace("root:team")?;
    move_under_a_writer(&src, &src, &dst).await
}

/// The same with the source two replicas on one PostgreSQL (issue 17): the move runs
/// through replica A while the writer writes through replica B, whose writes the store's
/// fence refuses (429) from the fence on, until B answers the 410 of the moved cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_through_one_replica_under_a_writer_on_the_other_loses_nothing() -> Result<()> {
    let src = crate::replicas::Replicas::start()?;
    let dst = KplaneServer::start()?;
    src.a.create_workspace("root:team")?;
    // B serves the new workspace once its event arrived.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while configmaps(src.b.client_for("root:team").await?)
        .list(&ListParams::default())
        .await
        .is_err()
    {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "replica B never served root:team"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    move_under_a_writer(&src.a, &src.b, &dst).await
}

/// Moves `root:team` (holding nothing yet) of `src` to `dst` while a writer creates
/// ConfigMaps in it through `write_through` (`src` or another replica of it), and checks
/// that the target holds exactly what the source acknowledged and the source answers 410.
async fn move_under_a_writer(
    src: &KplaneServer,
    write_through: &KplaneServer,
    dst: &KplaneServer,
) -> Result<()> {
    seed(src, "root:team", 300).await?;
    let before = uids(src, "root:team").await?;

    let stop = Arc::new(AtomicBool::new(false));
    let writing = tokio::spawn(writer(
        configmaps(no_retry(write_through, "root:team").await?),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (src_kc, dst_kc) = (
        src.kubeconfig().to_path_buf(),
        dst.kubeconfig().to_path_buf(),
    );
    let moved = tokio::task::spawn_blocking(move || {
        kplane(
            &src_kc,
            &[
                "ws",
                "move",
                "root:team",
                "--to",
                dst_kc.to_str().unwrap_or(""),
            ],
        )
    })
    .await??;
    let location = format!("{}/clusters/root:team", dst.base_url());
    ensure!(
        moved.contains(&format!("moved root:team to {location}")),
        "{moved}"
    );
    let w = tokio::time::timeout(Duration::from_secs(60), writing).await??;
    stop.store(true, Ordering::Relaxed);
    ensure!(
        w.other.is_empty(),
        "the writer saw other errors: {:?}",
        w.other
    );
    let gone = w.gone.as_deref().unwrap_or("");
    ensure!(
        gone.contains(&format!(
            "logical cluster \"root:team\" has moved to {location}"
        )),
        "the writer ended with {w:?}"
    );
    ensure!(!w.acked.is_empty(), "the writer wrote nothing: {w:?}");
    ensure!(w.throttled > 0, "the writer never met the fence: {w:?}");
    eprintln!(
        "writer: {} writes, {} answers 429",
        w.acked.len(),
        w.throttled
    );

    // The target holds exactly what the source acknowledged, with the same uids.
    let after = uids(dst, "root:team").await?;
    let mut want = before.clone();
    want.extend(w.acked.clone());
    ensure!(
        after == want,
        "{} objects on the target, {} acknowledged by the source; missing {:?}, extra {:?}",
        after.len(),
        want.len(),
        want.keys()
            .filter(|k| !after.contains_key(*k))
            .take(5)
            .collect::<Vec<_>>(),
        after
            .keys()
            .filter(|k| !want.contains_key(*k))
            .take(5)
            .collect::<Vec<_>>()
    );

    // The source: every request is the 410 naming the new location; its Workspace says so.
    let Err(err) = configmaps(src.client_for("root:team").await?)
        .list(&ListParams::default())
        .await
    else {
        anyhow::bail!("the source still serves the moved cluster");
    };
    ensure!(fixtures::error_code(&err) == Some(410), "{err}");
    ensure!(err.to_string().contains(&location), "{err}");
    let kubectl = src.kubectl_for("root")?;
    let mut url = String::new();
    for _ in 0..100 {
        url = kubectl.ok(&["get", "workspace", "team", "-o", "jsonpath={.status.URL}"])?;
        if url == location {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(url == location, "the source's Workspace says {url:?}");
    // The target serves it for writes too.
    configmaps(dst.client_for("root:team").await?)
        .create(
            &PostParams::default(),
            &fixtures::configmap("after-move", &[]),
        )
        .await?;
    // Re-running the finished move says where it is.
    let src_kc = src.kubeconfig().to_path_buf();
    let dst_kc = dst.kubeconfig().to_path_buf();
    let again = tokio::task::spawn_blocking(move || {
        kplane(
            &src_kc,
            &[
                "ws",
                "move",
                "root:team",
                "--to",
                dst_kc.to_str().unwrap_or(""),
            ],
        )
    })
    .await??;
    ensure!(again.contains("has moved to"), "{again}");
    Ok(())
}

/// Both servers killed (SIGKILL) after the fence, with the target holding a staged copy:
/// the source is still fenced after its restart (writes 429, reads served), the target's
/// copy still hidden; the re-run move continues from the copy and finishes. A fenced move
/// is rolled back by `--abort`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_after_the_fence_continues_and_abort_rolls_back() -> Result<()> {
    let mut src = KplaneServer::start()?;
    let mut dst = KplaneServer::start()?;
    src.create_workspaces(&["root:a", "root:b"])?;
    seed(&src, "root:a", 50).await?;
    seed(&src, "root:b", 20).await?;
    let scratch = tempfile::tempdir()?;

    // Steps 1 and 3 by hand: the bulk copy into a staged import, more writes, the fence.
    let file = scratch.path().join("a.kpa");
    stage(&src, &dst, "root:a", &file).await?;
    configmaps(src.client_for("root:a").await?)
        .create(&PostParams::default(), &fixtures::configmap("between", &[]))
        .await?;
    let (code, body) = raw(&src, "root:a", "POST", "/kplane/v1/fence", vec![]).await?;
    ensure!(code == 200, "{code} {body}");
    let want = uids(&src, "root:a").await?;
    src.kill()?;
    dst.kill()?;
    src.restart()?;
    dst.restart()?;
    let err = configmaps(no_retry(&src, "root:a").await?)
        .create(&PostParams::default(), &fixtures::configmap("fenced", &[]))
        .await
        .expect_err("a fenced cluster took a write");
    ensure!(fixtures::error_code(&err) == Some(429), "{err}");
    ensure!(
        uids(&src, "root:a").await? == want,
        "reads of the fenced cluster"
    );
    let err = uids(&dst, "root:a")
        .await
        .expect_err("the staged copy is visible");
    ensure!(
        err.to_string().contains("404") || err.to_string().contains("does not exist"),
        "{err:#}"
    );
    let out = kplane(
        src.kubeconfig(),
        &[
            "ws",
            "move",
            "root:a",
            "--to",
            dst.kubeconfig().to_str().unwrap_or(""),
        ],
    )?;
    ensure!(out.contains("moved root:a to"), "{out}");
    ensure!(
        uids(&dst, "root:a").await? == want,
        "the target after the resumed move"
    );

    // root:b: fenced with a staged copy, then rolled back.
    stage(&src, &dst, "root:b", &file).await?;
    let (code, body) = raw(&src, "root:b", "POST", "/kplane/v1/fence", vec![]).await?;
    ensure!(code == 200, "{code} {body}");
    let out = kplane(
        src.kubeconfig(),
        &[
            "ws",
            "move",
            "root:b",
            "--to",
            dst.kubeconfig().to_str().unwrap_or(""),
            "--abort",
        ],
    )?;
    ensure!(out.contains("rolled back"), "{out}");
    configmaps(src.client_for("root:b").await?)
        .create(
            &PostParams::default(),
            &fixtures::configmap("writable-again", &[]),
        )
        .await?;
    let (code, body) = raw(&dst, "root:b", "GET", "/kplane/v1/import/staged", vec![]).await?;
    ensure!(code == 404, "{code} {body}");
    Ok(())
}

/// The move's bulk copy by hand: `kplane export` of `cluster` from `src` into `file`, then
/// a staged import of it on `dst` (imported, not yet visible).
async fn stage(src: &KplaneServer, dst: &KplaneServer, cluster: &str, file: &Path) -> Result<()> {
    kplane(
        src.kubeconfig(),
        &["export", cluster, "-o", file.to_str().unwrap_or("")],
    )?;
    let (code, body) = raw(
        dst,
        cluster,
        "POST",
        "/kplane/v1/import?staged=true",
        std::fs::read(file)?,
    )
    .await?;
    ensure!(code == 200, "{code} {body}");
    Ok(())
}
