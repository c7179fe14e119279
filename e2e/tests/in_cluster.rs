//! A pod's in-cluster configuration reaches its own logical cluster: client-go, kube-rs and
//! the Python client read `KUBERNETES_SERVICE_HOST`/`_PORT` and the token, `ca.crt` and
//! `namespace` files of `/var/run/secrets/kubernetes.io/serviceaccount`, and so send paths
//! without a `/clusters/` prefix. kplane serves such a request, when it carries a
//! ServiceAccount token, in the logical cluster the token is bound to; RBAC there decides.
//! The files are laid out in a temp dir exactly as a pod sees them.

use std::ffi::OsString;
use std::fs;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kplane_e2e::fixtures::list_refusal;
use kplane_e2e::KplaneServer;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::python::run_script;

const HOME: &str = "root:acme:team";

pub(crate) const ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmaps
  namespace: default
rules:
- apiGroups: [\"\"]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: runner-configmaps
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: configmaps
subjects:
- kind: ServiceAccount
  name: runner
  namespace: default
";

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.widgets.example.com
spec:
  group: widgets.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

fn names(list: &[ConfigMap]) -> Vec<String> {
    list.iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_token_without_a_cluster_path_reaches_its_own_cluster() -> Result<()> {
    let server = KplaneServer::start()?;
    let sa_dir = tempfile::tempdir()?;
    let token = tokio::task::block_in_place(|| -> Result<String> {
        server.create_workspaces(&["root:acme", HOME])?;
        server.kubectl_ok(&["create", "configmap", "in-root", "--from-literal=a=b"])?;
        let k = server.kubectl_for(HOME)?;
        k.ok(&["create", "serviceaccount", "runner"])?;
        k.ok_stdin(&["apply", "-f", "-"], ROLE)?;
        k.ok(&["create", "configmap", "in-home", "--from-literal=a=b"])?;
        // A group only the home cluster serves.
        k.ok_stdin(&["apply", "-f", "-"], WIDGET_CRD)?;
        k.ok(&[
            "wait",
            "--for=condition=established",
            "crd/widgets.widgets.example.com",
        ])?;
        Ok(k.ok(&["create", "token", "runner"])?.trim().to_owned())
    })?;
    // What a pod finds under /var/run/secrets/kubernetes.io/serviceaccount.
    fs::write(sa_dir.path().join("token"), &token)?;
    fs::write(sa_dir.path().join("ca.crt"), server.ca_pem()?)?;
    fs::write(sa_dir.path().join("namespace"), "default")?;
    let (host, port) = server
        .base_url()
        .trim_start_matches("https://")
        .rsplit_once(':')
        .context("the server's host and port")?;

    // kube-rs, configured from those files as its in-cluster loader does (server URL
    // without a path, the CA file, the token file).
    let pod = pod_client(server.base_url(), sa_dir.path())?;
    let cms: Api<ConfigMap> = Api::default_namespaced(pod.clone());
    let seen = names(&cms.list(&ListParams::default()).await?.items);
    ensure!(
        seen.contains(&"in-home".to_owned()) && !seen.contains(&"in-root".to_owned()),
        "{seen:?}"
    );
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "from-kube-rs"}}))?,
    )
    .await?;
    let api = Api::<Secret>::default_namespaced(pod.clone());
    let code = list_refusal(&api).await;
    ensure!(code == Some(403), "{code:?}");

    // The official Python client's load_incluster_config with the same files.
    let env: Vec<(&str, OsString)> = vec![
        ("KUBERNETES_SERVICE_HOST", host.into()),
        ("KUBERNETES_SERVICE_PORT", port.into()),
        ("KPLANE_SA_DIR", sa_dir.path().into()),
        ("KPLANE_HOME", HOME.into()),
    ];
    tokio::task::block_in_place(|| run_script("incluster.py", &env))?;

    // Both writes landed in the home cluster, none in root.
    tokio::task::block_in_place(|| -> Result<()> {
        let home = server.kubectl_for(HOME)?;
        home.ok(&["get", "configmap", "from-kube-rs", "from-python"])?;
        let out = server.kubectl(&["get", "configmap", "from-kube-rs"])?;
        ensure!(!out.success() && out.stderr.contains("NotFound"), "{out:?}");
        Ok(())
    })?;

    // A path that names a cluster is served there, as before: the token is a stranger in
    // root.
    let in_root = server.client_with_token("/clusters/root", &token).await?;
    let api = Api::<ConfigMap>::namespaced(in_root, "default");
    let code = list_refusal(&api).await;
    ensure!(code == Some(403), "{code:?}");
    // Discovery without a path is the home cluster's too: its own CRD's group is there.
    let groups = pod.list_api_groups().await?;
    ensure!(
        groups
            .groups
            .iter()
            .any(|g| g.name == "widgets.example.com"),
        "{:?}",
        groups.groups.iter().map(|g| &g.name).collect::<Vec<_>>()
    );
    Ok(())
}

/// A kube-rs client configured as its in-cluster loader configures one in a pod: the
/// server `url` (from `KUBERNETES_SERVICE_HOST`/`_PORT`, no path) and the `ca.crt`,
/// `token` (re-read as it is rotated) and `namespace` files of `sa_dir`.
pub(crate) fn pod_client(url: &str, sa_dir: &std::path::Path) -> Result<kube::Client> {
    let mut config = kube::Config::new(url.parse()?);
    config.root_cert = Some(vec![pem_der(&fs::read_to_string(sa_dir.join("ca.crt"))?)?]);
    config.auth_info.token_file = Some(sa_dir.join("token").display().to_string());
    config.default_namespace = fs::read_to_string(sa_dir.join("namespace"))?;
    Ok(kube::Client::try_from(config)?)
}

/// The DER bytes of the first certificate in `pem`.
pub(crate) fn pem_der(pem: &str) -> Result<Vec<u8>> {
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    kplane_e2e::base64_decode(&body).context("decoding the CA certificate")
}
