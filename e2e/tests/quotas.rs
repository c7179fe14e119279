//! Quotas at write time (issue 31): a Workspace's `spec.quota` limits its logical cluster;
//! the create that would exceed it is a 403 in upstream's `exceeded quota` wording and
//! nothing is written; a delete frees the slot; `--quota-resource` sets the server's
//! default for every cluster but `root`; refusals are counted in `/metrics`.

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::Secret;
use kplane_e2e::fixtures::{error_code, error_reason};
use kplane_e2e::{KplaneServer, ServerOptions};
use kube::api::{Api, DeleteParams, PostParams};

fn secret(name: &str) -> Secret {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name}, "stringData": {"k": "v"},
    }))
    .unwrap_or_default()
}

/// Applies Workspace `name` in `root` with `spec` (YAML, indented under `spec:`) and waits
/// until it is Ready.
fn apply_workspace(server: &KplaneServer, name: &str, spec: &str) -> Result<()> {
    let manifest = format!(
        "apiVersion: tenancy.kplane.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n{spec}"
    );
    server
        .kubectl_stdin(&["apply", "-f", "-"], &manifest)
        .and_then(|o| {
            ensure!(o.success(), "kubectl apply: {}", o.stderr);
            Ok(())
        })?;
    server.kubectl_ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        &format!("workspace/{name}"),
        "--timeout=30s",
    ])?;
    Ok(())
}

/// Creates secrets `names` in `default`, each of which must succeed.
async fn fill(api: &Api<Secret>, names: &[&str]) -> Result<()> {
    for n in names {
        api.create(&PostParams::default(), &secret(n))
            .await
            .with_context(|| format!("creating secret {n}"))?;
    }
    Ok(())
}

/// The create of secret `name` is refused as upstream's ResourceQuota admission refuses
/// it, and the secret does not exist afterwards.
async fn check_refused(api: &Api<Secret>, name: &str, quota: &str, n: u64) -> Result<()> {
    let err = api
        .create(&PostParams::default(), &secret(name))
        .await
        .err()
        .with_context(|| format!("secret {name} was admitted beyond the quota"))?;
    ensure!(error_code(&err) == Some(403), "{err}");
    ensure!(error_reason(&err) == Some("Forbidden"), "{err}");
    let want = format!(
        "secrets \"{name}\" is forbidden: exceeded quota: {quota}, requested: count/secrets=1, used: count/secrets={n}, limited: count/secrets={n}"
    );
    let kube::Error::Api(status) = &err else {
        anyhow::bail!("not a Status: {err}");
    };
    ensure!(status.message == want, "{} != {want}", status.message);
    let get = api
        .get(name)
        .await
        .err()
        .context("the refused secret exists")?;
    ensure!(error_code(&get) == Some(404), "{get}");
    Ok(())
}

#[tokio::test]
async fn quota_exceeded_is_403_and_nothing_is_written() -> Result<()> {
    let server = KplaneServer::start()?;
    apply_workspace(
        &server,
        "acme",
        "  quota:\n    resources:\n      secrets: 3\n",
    )?;
    let client = server.client_for("root:acme").await?;
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    fill(&secrets, &["s0", "s1", "s2"]).await?;
    check_refused(&secrets, "s3", "workspace", 3).await?;
    // A delete frees the slot.
    secrets.delete("s0", &DeleteParams::default()).await?;
    fill(&secrets, &["s3"]).await?;
    check_refused(&secrets, "s4", "workspace", 3).await?;
    // The tenant's own cluster cannot see, let alone raise, the limit: it is in the parent.
    let out = server.kubectl_ok(&[
        "get",
        "workspace",
        "acme",
        "-o",
        "jsonpath={.spec.quota.resources.secrets}",
    ])?;
    ensure!(out.trim() == "3", "{out}");
    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"])?;
    ensure!(
        metrics.contains("kplane_quota_rejections_total{resource=\"secrets\"} 2"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("quota"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}

#[tokio::test]
async fn a_restart_keeps_the_counts_and_a_namespace_deletion_frees_its_objects() -> Result<()> {
    let mut server = KplaneServer::start()?;
    apply_workspace(
        &server,
        "acme",
        "  quota:\n    resources:\n      secrets: 2\n",
    )?;
    let client = server.client_for("root:acme").await?;
    kplane_e2e::fixtures::create_namespace(&client, "shop").await?;
    let shop: Api<Secret> = Api::namespaced(client, "shop");
    fill(&shop, &["a", "b"]).await?;
    server.restart()?;
    let client = server.client_for("root:acme").await?;
    let shop: Api<Secret> = Api::namespaced(client.clone(), "shop");
    check_refused(&shop, "c", "workspace", 2).await?;
    // The namespace's deletion (the namespace controller empties it) frees its secrets.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces.delete("shop", &DeleteParams::default()).await?;
    kplane_e2e::eventually(
        std::time::Duration::from_secs(60),
        "namespace shop gone",
        || {
            let namespaces = namespaces.clone();
            async move { Ok(namespaces.get_opt("shop").await?.is_none()) }
        },
    )
    .await?;
    let default: Api<Secret> = Api::namespaced(client, "default");
    fill(&default, &["a", "b"]).await?;
    check_refused(&default, "c", "workspace", 2).await?;
    Ok(())
}

#[tokio::test]
async fn the_server_default_quota_limits_every_cluster_but_root() -> Result<()> {
    let server =
        KplaneServer::start_with(ServerOptions::default().arg("--quota-resource=secrets=2"))?;
    apply_workspace(&server, "team", "  {}\n")?;
    let team: Api<Secret> = Api::namespaced(server.client_for("root:team").await?, "default");
    fill(&team, &["a", "b"]).await?;
    check_refused(&team, "c", "server-default", 2).await?;
    // root has no parent, so no quota.
    let root: Api<Secret> = Api::namespaced(server.client().await?, "default");
    fill(&root, &["a", "b", "c"]).await?;
    // The Workspace's own field overrides the default, from its next write on.
    apply_workspace(
        &server,
        "team",
        "  quota:\n    resources:\n      secrets: 3\n",
    )?;
    fill(&team, &["c"]).await?;
    check_refused(&team, "d", "workspace", 3).await?;
    Ok(())
}
