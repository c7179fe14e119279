//! `kplane storage rewrite --resource R[.G]`: writes every object of one resource again,
//! in every logical cluster, through the API, so that each is stored as the server now
//! stores it (under the first key of its `--encryption-provider-config`: the online step
//! of a key rotation, docs/security.md). The objects are read page by page with one
//! `/clusters/*` list and each is put back unchanged with its resourceVersion; the server
//! writes an unchanged object whose stored form uses an older key (and skips one that is
//! current). An object changed or deleted meanwhile (409, 404) was already written by
//! that change, or is gone, and is skipped.

use anyhow::{bail, Context as _, Result};
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::ApiResource;
use serde_json::Value;

use super::api::Session;
use super::args::ClientFlags;
use super::output::out;

/// The annotation a `/clusters/*` list puts on each object (kplane_registry::wildcard).
const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";

/// `kplane storage`.
#[derive(clap::Args, Debug)]
pub struct StorageArgs {
    #[command(flatten)]
    pub flags: ClientFlags,
    #[command(subcommand)]
    pub command: StorageCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum StorageCommand {
    /// Write every object of a resource again, in every logical cluster (after adding a
    /// new first encryption key, so that all are stored under it).
    Rewrite {
        /// The resource: `secrets`, `configmaps`, or `<plural>.<group>`.
        #[arg(long, value_name = "RESOURCE")]
        resource: String,
        /// Objects read per page.
        #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        chunk: u32,
    },
}

/// What a rewrite did.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    rewritten: u64,
    skipped: u64,
    clusters: std::collections::BTreeSet<String>,
}

pub async fn run(args: StorageArgs) -> Result<()> {
    let StorageCommand::Rewrite { resource, chunk } = args.command;
    let session = Session::load(&args.flags)?;
    let (config, _) = session.config(&session.current).await?;
    let here = kube::Client::try_from(config.clone()).context("building the HTTP client")?;
    let (plural, group) = match resource.split_once('.') {
        Some((p, g)) => (p.to_string(), g.to_string()),
        None => (resource.clone(), String::new()),
    };
    let version = preferred_version(&here, &group).await?;
    let api_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    let ar = ApiResource {
        group: group.clone(),
        version,
        api_version: api_version.clone(),
        kind: String::new(),
        plural: plural.clone(),
    };
    let mut every = config.clone();
    every.cluster_url = format!("{}/clusters/*", session.base)
        .parse()
        .context("the server URL")?;
    let all: Api<DynamicObject> = Api::all_with(
        kube::Client::try_from(every).context("building the HTTP client")?,
        &ar,
    );
    let mut base = config;
    base.cluster_url = session.base.parse().context("the server URL")?;
    let writer = kube::Client::try_from(base).context("building the HTTP client")?;
    let prefix = if group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{api_version}")
    };

    let mut counts = Counts::default();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(chunk);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = all
            .list(&params)
            .await
            .with_context(|| format!("listing {resource} in every logical cluster"))?;
        for obj in page.items {
            let mut obj = serde_json::to_value(&obj)?;
            let Some((cluster, path)) = target(&mut obj, &prefix, &plural) else {
                bail!("a listed object has no {CLUSTER_ANNOTATION} annotation or name");
            };
            obj["apiVersion"] = Value::String(api_version.clone());
            let body = serde_json::to_vec(&obj)?;
            let req = http::Request::put(format!("/clusters/{cluster}{path}"))
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .context("building the request")?;
            match writer.request::<Value>(req).await {
                Ok(_) => {
                    counts.rewritten += 1;
                    counts.clusters.insert(cluster);
                }
                Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => counts.skipped += 1,
                Err(e) => return Err(e).with_context(|| format!("writing {path} in {cluster}")),
            }
        }
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    out(&format!(
        "rewrote {} {resource} in {} logical clusters ({} changed or deleted meanwhile, skipped)",
        counts.rewritten,
        counts.clusters.len(),
        counts.skipped
    ))
}

/// The version a group is served in (its preferred one); `v1` for the core group.
async fn preferred_version(client: &kube::Client, group: &str) -> Result<String> {
    if group.is_empty() {
        return Ok("v1".into());
    }
    let req = http::Request::get(format!("/apis/{group}"))
        .body(Vec::new())
        .context("building the request")?;
    let found: Value = client
        .request(req)
        .await
        .with_context(|| format!("API group {group:?} is not served"))?;
    found["preferredVersion"]["version"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("API group {group:?} names no preferred version"))
}

/// Takes the cluster annotation off a listed object; its cluster and path below
/// `/clusters/<cluster>`.
fn target(obj: &mut Value, prefix: &str, plural: &str) -> Option<(String, String)> {
    let meta = obj.get_mut("metadata")?.as_object_mut()?;
    let annotations = meta.get_mut("annotations")?.as_object_mut()?;
    let cluster = annotations
        .remove(CLUSTER_ANNOTATION)?
        .as_str()?
        .to_string();
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    let name = meta.get("name")?.as_str()?.to_string();
    let path = match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) => format!("{prefix}/namespaces/{ns}/{plural}/{name}"),
        None => format!("{prefix}/{plural}/{name}"),
    };
    Some((cluster, path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listed_object_goes_back_to_its_cluster_without_the_annotation() {
        let mut o = json!({"metadata": {"name": "s", "namespace": "ns",
            "annotations": {"kplane.io/cluster": "root:a"}}});
        let (c, p) = target(&mut o, "/api/v1", "secrets").unwrap();
        assert_eq!(
            (c.as_str(), p.as_str()),
            ("root:a", "/api/v1/namespaces/ns/secrets/s")
        );
        assert_eq!(o, json!({"metadata": {"name": "s", "namespace": "ns"}}));

        let mut o = json!({"metadata": {"name": "x",
            "annotations": {"kplane.io/cluster": "root", "keep": "me"}}});
        let (_, p) = target(&mut o, "/apis/example.com/v1", "widgets").unwrap();
        assert_eq!(p, "/apis/example.com/v1/widgets/x");
        assert_eq!(o["metadata"]["annotations"], json!({"keep": "me"}));

        assert!(target(
            &mut json!({"metadata": {"name": "n"}}),
            "/api/v1",
            "secrets"
        )
        .is_none());
    }
}
