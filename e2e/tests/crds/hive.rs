//! OpenShift Hive as its users install it: the 21 CRDs hive ships
//! (`../shared/fixtures/hive/crds`, relative to the repository root; hive c02e5173, which
//! kube-apiserver 1.32 accepts) applied server-side into a workspace, waited for, one
//! object of each kind created and listed, hive's CEL rules on a ClusterDeployment enforced
//! with kube-apiserver's 422 messages, and the same apply repeated without changing
//! anything.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::{KplaneServer, Kubectl};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::Api;
use serde_json::{json, Value};

use super::{json, WAIT_TIMEOUT};

/// The namespace the namespaced objects go to.
const NS: &str = "hive";

/// hive's CRD directory. Missing fixtures fail the test (CI has them).
fn hive_crds() -> Result<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/hive/crds");
    let count = std::fs::read_dir(&dir)
        .with_context(|| format!("the hive fixtures must exist at {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".yaml"))
        .count();
    ensure!(count == 21, "{} holds {count} CRDs, not 21", dir.display());
    Ok(dir)
}

/// What the test needs of one established CRD.
#[derive(Debug)]
struct Served {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
}

impl Served {
    fn from_crd(crd: &Value) -> Self {
        let spec = &crd["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Served {
            group: text(&spec["group"]),
            version: text(&spec["versions"][0]["name"]),
            kind: text(&spec["names"]["kind"]),
            plural: text(&spec["names"]["plural"]),
            namespaced: spec["scope"] == "Namespaced",
        }
    }
}

/// The `spec` of a minimal valid object of each hive kind: the fields its schema requires,
/// with values of the types, formats and shapes the schema asks for.
fn minimal_spec(kind: &str) -> Option<Value> {
    let cd_ref = json!({"name": "prod"});
    Some(match kind {
        "Checkpoint" => {
            json!({"lastBackupChecksum": "4f7a", "lastBackupTime": "2025-01-01T00:00:00Z",
            "lastBackupRef": {"name": "backup-1", "namespace": NS}})
        }
        "ClusterClaim" => json!({"clusterPoolName": "pool"}),
        "ClusterDeploymentCustomization" => json!({}),
        // hive's ingress CEL rules, satisfied: a duration of at most 15 minutes, and
        // maxConnections between 2000 and 2000000
        "ClusterDeployment" => json!({"baseDomain": "example.com", "clusterName": "prod",
            "platform": {"aws": {"region": "us-east-1"}},
            "ingress": [{"name": "default", "domain": "apps.prod.example.com",
                "tuningOptions": {"httpKeepAliveTimeout": "90s", "maxConnections": 50000}}]}),
        "ClusterDeprovision" => json!({"infraID": "prod-x7k2q"}),
        "ClusterImageSet" => {
            json!({"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.18.3-x86_64"})
        }
        "ClusterPool" => json!({"baseDomain": "example.com", "imageSetRef": {"name": "ocp-4.18"},
            "platform": {"aws": {"region": "us-east-1"}}, "size": 1}),
        "ClusterProvision" => json!({"attempt": 0, "stage": "initializing",
            "clusterDeploymentRef": cd_ref,
            "podSpec": {"containers": [{"name": "installer", "image": "installer:4.18"}]}}),
        "ClusterRelocate" => json!({"clusterDeploymentSelector": {"matchLabels": {"move": "yes"}},
            "kubeconfigSecretRef": {"name": "target", "namespace": NS}}),
        "ClusterState" => json!({}),
        "DNSZone" => json!({"zone": "prod.example.com"}),
        "HiveConfig" => json!({}),
        "MachinePoolNameLease" => json!({}),
        "MachinePool" => json!({"clusterDeploymentRef": cd_ref, "name": "worker",
            "platform": {"aws": {"type": "m5.xlarge", "rootVolume": {"size": 120, "type": "gp3"}}}}),
        "SelectorSyncIdentityProvider" => json!({"identityProviders": [{"name": "htpasswd",
            "type": "HTPasswd", "mappingMethod": "claim", "htpasswd": {"fileData": {"name": "htpass"}}}]}),
        "SelectorSyncSet" => json!({"clusterDeploymentSelector": {"matchLabels": {"env": "prod"}}}),
        "SyncIdentityProvider" => json!({"clusterDeploymentRefs": [cd_ref],
            "identityProviders": [{"name": "htpasswd", "type": "HTPasswd",
                "htpasswd": {"fileData": {"name": "htpass"}}}]}),
        "SyncSet" => json!({"clusterDeploymentRefs": [cd_ref]}),
        "ClusterSyncLease" => json!({"renewTime": "2025-01-01T00:00:00.000000Z"}),
        "ClusterSync" => json!({}),
        "FakeClusterInstall" => {
            json!({"clusterDeploymentRef": cd_ref, "imageSetRef": {"name": "ocp-4.18"}})
        }
        _ => return None,
    })
}

/// The object of `served`'s kind named after the kind (HiveConfig's name is `hive`).
fn object(served: &Served) -> Result<Value> {
    let spec = minimal_spec(&served.kind)
        .with_context(|| format!("no object for hive kind {}", served.kind))?;
    let name = match served.kind.as_str() {
        "HiveConfig" => "hive".to_string(),
        "ClusterDeployment" => "prod".to_string(),
        kind => kind.to_lowercase(),
    };
    let mut metadata = json!({"name": name});
    if served.namespaced {
        metadata["namespace"] = json!(NS);
    }
    Ok(
        json!({"apiVersion": format!("{}/{}", served.group, served.version),
        "kind": served.kind, "metadata": metadata, "spec": spec}),
    )
}

/// `kubectl apply --server-side -f <dir>`: one `serverside-applied` line per CRD.
fn apply_crds(kubectl: &Kubectl, dir: &str) -> Result<()> {
    let out = kubectl.ok(&["apply", "--server-side", "-f", dir])?;
    let applied = out
        .lines()
        .filter(|l| {
            l.starts_with("customresourcedefinition.apiextensions.k8s.io/")
                && l.ends_with(" serverside-applied")
        })
        .count();
    ensure!(applied == 21, "kubectl apply printed:\n{out}");
    Ok(())
}

/// The CRDs by name, with their resourceVersions.
fn crd_versions(kubectl: &Kubectl) -> Result<BTreeMap<String, String>> {
    let list = json(kubectl, &["get", "crds"])?;
    let items = list["items"].as_array().context("no items")?;
    Ok(items
        .iter()
        .map(|c| {
            let text = |p: &str| {
                c.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            (text("/metadata/name"), text("/metadata/resourceVersion"))
        })
        .collect())
}

#[tokio::test]
async fn hive_crds_apply_establish_serve_every_kind_and_reapply_unchanged() -> Result<()> {
    let dir = hive_crds()?;
    let dir = dir.to_string_lossy().into_owned();
    let server = KplaneServer::start()?;
    server.create_workspace("root:hive")?;
    let kubectl = server.kubectl_for("root:hive")?;

    apply_crds(&kubectl, &dir)?;
    let out = kubectl.ok(&[
        "wait",
        "--for",
        "condition=established",
        WAIT_TIMEOUT,
        "--all",
        "crd",
    ])?;
    ensure!(
        out.lines().filter(|l| l.ends_with("condition met")).count() == 21,
        "kubectl wait printed:\n{out}"
    );

    // one object of each kind, created together
    let crds = json(&kubectl, &["get", "crds"])?;
    let served: Vec<Served> = crds["items"]
        .as_array()
        .context("no CRDs")?
        .iter()
        .map(Served::from_crd)
        .collect();
    ensure!(served.len() == 21, "{served:#?}");
    kubectl.ok(&["create", "namespace", NS])?;
    let items = served.iter().map(object).collect::<Result<Vec<_>>>()?;
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let out = kubectl.ok_stdin(&["create", "-f", "-"], &list.to_string())?;
    ensure!(
        out.lines().filter(|l| l.ends_with(" created")).count() == 21,
        "kubectl create printed:\n{out}"
    );

    // each listed by `kubectl get <plural>`
    for s in &served {
        let name = object(s)?["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut args = vec!["get", s.plural.as_str()];
        if s.namespaced {
            args.extend(["-n", NS]);
        }
        let out = kubectl.ok(&args)?;
        let mut lines = out.lines();
        ensure!(
            lines.next().is_some_and(|h| h.starts_with("NAME")),
            "kubectl get {} printed:\n{out}",
            s.plural
        );
        ensure!(
            lines.any(|l| l.split_whitespace().next() == Some(name.as_str())),
            "kubectl get {} does not list {name}:\n{out}",
            s.plural
        );
    }
    let cd = json(&kubectl, &["get", "clusterdeployment", "prod", "-n", NS])?;
    assert_eq!(
        cd["spec"]["ingress"][0]["tuningOptions"]["maxConnections"],
        50000
    );

    refused_by_hive_cel_rules(&server, &kubectl).await?;

    // the same apply again is accepted and changes nothing
    let before = crd_versions(&kubectl)?;
    ensure!(before.len() == 21, "{before:#?}");
    apply_crds(&kubectl, &dir)?;
    assert_eq!(crd_versions(&kubectl)?, before, "the second apply wrote");
    Ok(())
}

/// A ClusterDeployment of `spec.ingress` entry `tuning` (and the rest of the valid one).
fn clusterdeployment(name: &str, tuning: Value) -> Value {
    json!({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"baseDomain": "example.com", "clusterName": name,
            "platform": {"aws": {"region": "us-east-1"}},
            "ingress": [{"name": "default", "domain": "apps.example.com", "tuningOptions": tuning}]}})
}

/// hive's `x-kubernetes-validations` on a ClusterDeployment's spec, each broken alone:
/// refused with kube-apiserver's 422 (its Status through kube-rs, kubectl's rendering).
async fn refused_by_hive_cel_rules(server: &KplaneServer, kubectl: &Kubectl) -> Result<()> {
    let field = "spec.ingress[0].tuningOptions";
    let cases = [
        (
            "few-connections",
            json!({"maxConnections": 100}),
            format!(
                r#"{field}.maxConnections: Invalid value: "integer": maxConnections must be 0, -1, or between 2000 and 2000000"#
            ),
        ),
        (
            "long-keepalive",
            json!({"httpKeepAliveTimeout": "20m"}),
            format!(
                r#"{field}.httpKeepAliveTimeout: Invalid value: "string": httpKeepAliveTimeout must be less than or equal to 15 minutes"#
            ),
        ),
        (
            "bad-keepalive",
            json!({"httpKeepAliveTimeout": "5h"}),
            format!(
                r#"{field}.httpKeepAliveTimeout: Invalid value: "string": httpKeepAliveTimeout must be a valid duration string composed of an unsigned integer value, optionally followed by a decimal fraction and a unit suffix (ms, s, m)"#
            ),
        ),
    ];
    let gvk = GroupVersionKind::gvk("hive.openshift.io", "v1", "ClusterDeployment");
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client_for("root:hive").await?, NS, &ar);
    for (name, tuning, want) in cases {
        let cd = clusterdeployment(name, tuning);
        let out = kubectl.run_stdin(&["create", "-f", "-"], &cd.to_string())?;
        ensure!(!out.success(), "{name} was accepted");
        let line = format!(r#"The ClusterDeployment "{name}" is invalid: {want}"#);
        ensure!(
            out.stderr.contains(&line),
            "kubectl's error lacks {line:?}:\n{}",
            out.stderr
        );
        let obj: DynamicObject = serde_json::from_value(cd)?;
        let err = api
            .create(&PostParams::default(), &obj)
            .await
            .err()
            .with_context(|| format!("{name} was accepted through kube-rs"))?;
        assert_eq!(error_code(&err), Some(422), "{err}");
        let kube::Error::Api(status) = &err else {
            anyhow::bail!("not an API error: {err}");
        };
        assert_eq!(status.reason, "Invalid");
        assert_eq!(
            status.message,
            format!(r#"ClusterDeployment.hive.openshift.io "{name}" is invalid: {want}"#)
        );
    }

    // the transition rule on vSphere's load balancer type: set once, then immutable
    let mut vsphere = clusterdeployment("onprem", json!({}));
    vsphere["spec"]["platform"] = json!({"vsphere": {
        "certificatesSecretRef": {"name": "vsphere-certs"},
        "credentialsSecretRef": {"name": "vsphere-creds"},
        "infrastructure": {"loadBalancer": {"type": "UserManaged"}}}});
    kubectl.ok_stdin(&["create", "-f", "-"], &vsphere.to_string())?;
    let patch = r#"{"spec":{"platform":{"vsphere":{"infrastructure":{"loadBalancer":{"type":"OpenShiftManagedDefault"}}}}}}"#;
    let out = kubectl.run(&[
        "patch",
        "clusterdeployment",
        "onprem",
        "-n",
        NS,
        "--type=merge",
        "-p",
        patch,
    ])?;
    ensure!(!out.success(), "the load balancer type changed");
    let line = r#"The ClusterDeployment "onprem" is invalid: spec.platform.vsphere.infrastructure.loadBalancer.type: Invalid value: "string": type is immutable once set"#;
    ensure!(
        out.stderr.contains(line),
        "kubectl's error lacks {line:?}:\n{}",
        out.stderr
    );
    Ok(())
}
