//! The server side of the client commands: which server and workspace the kubeconfig
//! points at ([`Session`]), a kube-rs client per workspace ([`WsClient`]), the Workspace
//! calls they make, and kube-rs errors turned into messages a user can act on.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::config::KubeConfigOptions;
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{json, Value};

use super::args::ClientFlags;
use super::kubeconfig::{self, ContextInfo, Kubeconfigs};
use super::path::{self, WsPath};

/// How often `--wait` looks at a workspace.
const POLL: Duration = Duration::from_millis(100);

/// The kubeconfig context the command works with, and where it points.
#[derive(Debug)]
pub struct Session {
    pub kubeconfigs: Kubeconfigs,
    pub context: ContextInfo,
    /// The server URL without its `/clusters/<path>` suffix.
    pub base: String,
    /// The workspace the context points at.
    pub current: WsPath,
}

impl Session {
    /// Finds and reads the kubeconfig as kubectl does, and picks the context.
    pub fn load(flags: &ClientFlags) -> Result<Self> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env = std::env::var_os("KUBECONFIG");
        let paths =
            kubeconfig::locate(flags.kubeconfig.as_deref(), env.as_deref(), home.as_deref())?;
        let kubeconfigs = Kubeconfigs::load(&paths)?;
        let context = kubeconfigs.context(flags.context.as_deref())?;
        let (base, current) = path::split_server_url(&context.server).with_context(|| {
            format!(
                "context {:?} points at {}, which is not a kplane workspace URL",
                context.name, context.server
            )
        })?;
        Ok(Self {
            kubeconfigs,
            context,
            base,
            current,
        })
    }

    /// The workspace remembered for `kplane ws use -`, if any.
    pub fn previous(&self) -> Result<Option<WsPath>> {
        self.kubeconfigs
            .previous_workspace(&self.context.name)
            .map(|p| {
                WsPath::parse(&p)
                    .context("the previous workspace kept in the kubeconfig is invalid")
            })
            .transpose()
    }

    /// The kube-rs configuration (server, TLS, credentials) of the context, pointed at
    /// workspace `path`; also the URL, for messages.
    pub async fn config(&self, path: &WsPath) -> Result<(kube::Config, String)> {
        let url = path::server_url(&self.base, path);
        let options = KubeConfigOptions {
            context: Some(self.context.name.clone()),
            ..KubeConfigOptions::default()
        };
        let mut config = kube::Config::from_custom_kubeconfig(self.kubeconfigs.typed()?, &options)
            .await
            .with_context(|| format!("using context {:?} of the kubeconfig", self.context.name))?;
        config.cluster_url = url
            .parse()
            .with_context(|| format!("{url} is not a valid server URL"))?;
        Ok((config, url))
    }

    /// A client for workspace `path`, with the context's credentials.
    pub async fn client(&self, path: &WsPath) -> Result<WsClient> {
        let (config, url) = self.config(path).await?;
        let client = kube::Client::try_from(config).context("building the HTTP client")?;
        Ok(WsClient {
            api: Api::all_with(client, &workspace_resource()),
            url,
            path: path.clone(),
        })
    }

    /// Fails unless workspace `path` exists and is Ready (`root` always exists; for it
    /// this checks that the server answers).
    pub async fn check_ready(&self, path: &WsPath) -> Result<()> {
        let Some(parent) = path.parent() else {
            self.client(path).await?.list(1, None).await?;
            return Ok(());
        };
        let ws = self
            .client(&parent)
            .await?
            .get(path.name())
            .await?
            .ok_or_else(|| anyhow!("workspace {:?} not found", path.as_str()))?;
        match phase(&ws) {
            "Ready" => Ok(()),
            other => bail!(
                "workspace {:?} is not ready (phase {other:?}){}",
                path.as_str(),
                reason(&ws)
            ),
        }
    }
}

/// `tenancy.kplane.io/v1alpha1` Workspace.
fn workspace_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("tenancy.kplane.io", "v1alpha1", "Workspace");
    ApiResource::from_gvk_with_plural(&gvk, "workspaces")
}

/// The Workspaces of one logical cluster.
#[derive(Debug)]
pub struct WsClient {
    api: Api<DynamicObject>,
    /// `<base>/clusters/<path>`, for messages.
    url: String,
    pub path: WsPath,
}

impl WsClient {
    /// Workspace `name`, `None` when there is none.
    pub async fn get(&self, name: &str) -> Result<Option<Value>> {
        // Any 404 (also "this logical cluster does not exist") means there is none.
        match self.api.get(name).await {
            Ok(ws) => to_value(ws).map(Some),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// One page of at most `limit` Workspaces, and the token of the next.
    pub async fn list(
        &self,
        limit: u32,
        token: Option<String>,
    ) -> Result<(Vec<Value>, Option<String>)> {
        let mut params = ListParams::default().limit(limit);
        params.continue_token = token;
        let list = self.api.list(&params).await.map_err(|e| self.explain(e))?;
        let next = list.metadata.continue_.filter(|c| !c.is_empty());
        let items = list
            .items
            .into_iter()
            .map(to_value)
            .collect::<Result<_>>()?;
        Ok((items, next))
    }

    /// Every Workspace, read in pages of `chunk` (kubectl's `--chunk-size`).
    pub async fn list_all(&self, chunk: u32) -> Result<Vec<Value>> {
        let mut all = Vec::new();
        let mut token = None;
        loop {
            let (items, next) = self.list(chunk.max(1), token).await?;
            all.extend(items);
            match next {
                Some(t) => token = Some(t),
                None => return Ok(all),
            }
        }
    }

    /// Creates Workspace `name` (with `spec.template`, when given).
    pub async fn create(&self, name: &str, template: Option<&str>) -> Result<Value> {
        let mut obj = json!({
            "apiVersion": "tenancy.kplane.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name},
        });
        if let Some(t) = template {
            obj["spec"] = json!({"template": t});
        }
        let obj: DynamicObject = serde_json::from_value(obj).context("building the Workspace")?;
        let created = self
            .api
            .create(&PostParams::default(), &obj)
            .await
            .map_err(|e| self.explain(e))?;
        to_value(created)
    }

    /// Deletes Workspace `name`; `false` when there was none.
    pub async fn delete(&self, name: &str) -> Result<bool> {
        match self.api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(self.explain(e)),
        }
    }

    /// Waits until Workspace `name` is Ready; fails when it turns Failed, goes away or
    /// `timeout` passes.
    pub async fn wait_ready(&self, name: &str, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        let full = self.child(name);
        loop {
            let ws = self
                .get(name)
                .await?
                .ok_or_else(|| anyhow!("workspace {full:?} was deleted while waiting for it"))?;
            match phase(&ws) {
                "Ready" => return Ok(ws),
                "Failed" => bail!("workspace {full:?} failed{}", reason(&ws)),
                "Terminating" => bail!("workspace {full:?} is being deleted"),
                _ => {}
            }
            if Instant::now() >= deadline {
                bail!(
                    "timed out after {}s waiting for workspace {full:?} to be Ready (phase {:?})",
                    timeout.as_secs(),
                    phase(&ws)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until Workspace `name` is gone.
    pub async fn wait_deleted(&self, name: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while self.get(name).await?.is_some() {
            if Instant::now() >= deadline {
                bail!(
                    "timed out after {}s waiting for workspace {:?} to be deleted",
                    timeout.as_secs(),
                    self.child(name)
                );
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }

    /// The path of child `name` (for messages).
    pub fn child(&self, name: &str) -> String {
        format!("{}:{name}", self.path)
    }

    /// A kube-rs error as a message: the server's Status message, or that the server
    /// could not be reached at all.
    fn explain(&self, e: kube::Error) -> anyhow::Error {
        match e {
            kube::Error::Api(s) => {
                anyhow!(
                    "the server refused: {} ({} {})",
                    s.message,
                    s.code,
                    s.reason
                )
            }
            kube::Error::HyperError(inner) => {
                anyhow!("cannot reach the server at {}: {}", self.url, chain(&inner))
            }
            kube::Error::Service(inner) => {
                anyhow!(
                    "cannot reach the server at {}: {}",
                    self.url,
                    chain(inner.as_ref())
                )
            }
            other => anyhow!("talking to {}: {}", self.url, chain(&other)),
        }
    }
}

/// An error and its causes on one line.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

fn to_value(obj: DynamicObject) -> Result<Value> {
    serde_json::to_value(obj).context("decoding a Workspace")
}

/// `status.phase`, `""` when unset.
pub fn phase(ws: &Value) -> &str {
    ws.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `: <reason>: <message>` of the Ready condition, when it says something.
fn reason(ws: &Value) -> String {
    let ready = ws
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
    let Some(c) = ready else {
        return String::new();
    };
    let parts: Vec<&str> = [&c["reason"], &c["message"]]
        .into_iter()
        .filter_map(Value::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(": "))
    }
}

/// A target resolved against the context's current and previous workspace. An unquoted
/// `~` reaches us expanded by the shell: `$HOME` itself means home too.
pub(super) fn resolve(session: &Session, target: &str) -> Result<WsPath> {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    let target = if home.as_deref() == Some(target) {
        "~"
    } else {
        target
    };
    let previous = session.previous()?;
    Ok(path::resolve(target, &session.current, previous.as_ref())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_workspace_reports_its_condition() {
        let ws = json!({"status": {"phase": "Failed", "conditions": [
            {"type": "Other", "reason": "X"},
            {"type": "Ready", "status": "False", "reason": "TemplateFailed",
             "message": "applying ConfigMap x: invalid"},
        ]}});
        assert_eq!(phase(&ws), "Failed");
        assert_eq!(
            reason(&ws),
            ": TemplateFailed: applying ConfigMap x: invalid"
        );
        assert_eq!(reason(&json!({})), "");
        assert_eq!(phase(&json!({})), "");
    }
}
