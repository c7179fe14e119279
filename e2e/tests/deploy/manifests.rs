//! The rendered manifests, without a server: the objects each kustomization promises,
//! consistent in themselves and with what kplane and the syncer need.

use std::collections::BTreeSet;

use anyhow::{ensure, Context as _, Result};
use serde_json::{json, Value};

use super::{
    deploy_dir, find, flag, made_image, str_of, Offline, KUSTOMIZATIONS, SYNCER_NAMESPACED,
    SYNCER_VERBS,
};

fn kind_names(objects: &[Value]) -> BTreeSet<(String, String)> {
    objects
        .iter()
        .map(|o| (str_of(&o["kind"]), str_of(&o["metadata"]["name"])))
        .collect()
}

fn expect_kinds(objects: &[Value], expected: &[(&str, &str)]) -> Result<()> {
    let got = kind_names(objects);
    let want: BTreeSet<(String, String)> = expected
        .iter()
        .map(|(k, n)| ((*k).to_string(), (*n).to_string()))
        .collect();
    ensure!(got == want, "rendered {got:?}, expected {want:?}");
    Ok(())
}

/// Every namespaced object is in the rendered Namespace; cluster-scoped ones have none.
fn one_namespace(objects: &[Value]) -> Result<String> {
    let ns = str_of(&find(objects, "Namespace")?["metadata"]["name"]);
    for o in objects {
        let cluster_scoped = matches!(
            o["kind"].as_str(),
            Some("Namespace" | "ClusterRole" | "ClusterRoleBinding")
        );
        let got = &o["metadata"]["namespace"];
        if cluster_scoped {
            ensure!(got.is_null(), "cluster-scoped {o} has a namespace");
        } else {
            ensure!(*got == *ns, "{} is not in namespace {ns}", o["metadata"]);
        }
    }
    Ok(ns)
}

/// A pod template is consistent in itself and with the rendered objects: every `$(VAR)` in
/// the arguments is an env var of the container, every mount a volume (or claim template),
/// every named probe port a container port, and every ConfigMap key reference a rendered
/// ConfigMap with that key.
fn check_pod_template(workload: &Value, objects: &[Value]) -> Result<()> {
    let spec = &workload["spec"]["template"]["spec"];
    let mut volumes: BTreeSet<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| str_of(&v["name"]))
        .collect();
    volumes.extend(
        workload["spec"]["volumeClaimTemplates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| str_of(&v["metadata"]["name"])),
    );
    let containers = spec["containers"].as_array().context("no containers")?;
    let image = made_image()?;
    for c in containers {
        ensure!(
            c["image"] == image.as_str(),
            "{} is not {image}, the image `make image` builds",
            c["image"]
        );
        let env: Vec<&Value> = c["env"].as_array().into_iter().flatten().collect();
        let env_names: BTreeSet<String> = env.iter().map(|e| str_of(&e["name"])).collect();
        for arg in c["args"].as_array().into_iter().flatten() {
            let arg = arg.as_str().context("non-string arg")?;
            let mut rest = arg;
            while let Some(start) = rest.find("$(") {
                let after = &rest[start + 2..];
                let end = after
                    .find(')')
                    .with_context(|| format!("unclosed $( in {arg}"))?;
                let var = &after[..end];
                ensure!(env_names.contains(var), "{arg}: {var} is not an env var");
                rest = &after[end + 1..];
            }
        }
        for e in &env {
            if let Some(r) = e["valueFrom"]["configMapKeyRef"].as_object() {
                let name = r["name"].as_str().unwrap_or_default();
                let key = r["key"].as_str().unwrap_or_default();
                ensure!(
                    objects.iter().any(|o| o["kind"] == "ConfigMap"
                        && o["metadata"]["name"] == name
                        && o["data"][key].is_string()),
                    "env {} refers to ConfigMap {name} key {key}, which is not rendered",
                    e["name"]
                );
            }
        }
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            ensure!(
                volumes.contains(&str_of(&m["name"])),
                "mount {m} has no volume"
            );
        }
        let ports: BTreeSet<String> = c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| str_of(&p["name"]))
            .collect();
        for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
            if let Some(port) = c[probe]["httpGet"]["port"].as_str() {
                ensure!(ports.contains(port), "{probe} port {port} is not a port");
            }
        }
        let sc = &c["securityContext"];
        ensure!(sc["allowPrivilegeEscalation"] == false, "{sc}");
        ensure!(sc["readOnlyRootFilesystem"] == true, "{sc}");
    }
    ensure!(spec["securityContext"]["runAsNonRoot"] == true, "{spec}");
    Ok(())
}

/// The container port named `name`.
fn container_port(container: &Value, name: &str) -> Result<u64> {
    container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_u64())
        .with_context(|| format!("no port {name}"))
}

fn http_probe(container: &Value, probe: &str) -> Result<(String, String, String)> {
    let get = &container[probe]["httpGet"];
    ensure!(get.is_object(), "no {probe} httpGet");
    Ok((
        str_of(&get["path"]),
        str_of(&get["port"]),
        get["scheme"].as_str().unwrap_or("HTTP").to_string(),
    ))
}

/// Whether a set of RBAC rules allows `verb` on (group, resource), any name.
fn allows(rules: &Value, group: &str, resource: &str, verb: &str) -> bool {
    let has = |v: &Value, want: &str| {
        v.as_array()
            .is_some_and(|a| a.iter().any(|x| x == want || x == "*"))
    };
    rules.as_array().into_iter().flatten().any(|r| {
        has(&r["apiGroups"], group)
            && has(&r["resources"], resource)
            && has(&r["verbs"], verb)
            && r["resourceNames"].as_array().is_none_or(Vec::is_empty)
    })
}

/// The binding's role is rendered and its only subject is the rendered ServiceAccount
/// `sa` in its namespace; answers the role.
fn check_binding<'a>(
    objects: &'a [Value],
    binding_kind: &str,
    role_kind: &str,
    sa: &str,
) -> Result<&'a Value> {
    let binding = find(objects, binding_kind)?;
    ensure!(binding["roleRef"]["kind"] == role_kind, "{binding}");
    let role = objects
        .iter()
        .find(|o| o["kind"] == role_kind && o["metadata"]["name"] == binding["roleRef"]["name"])
        .with_context(|| format!("{binding_kind} refers to a {role_kind} not rendered"))?;
    let account = objects
        .iter()
        .find(|o| o["kind"] == "ServiceAccount" && o["metadata"]["name"] == sa)
        .with_context(|| format!("no ServiceAccount {sa}"))?;
    ensure!(
        binding["subjects"]
            == json!([{
                "kind": "ServiceAccount",
                "name": sa,
                "namespace": account["metadata"]["namespace"],
            }]),
        "{binding_kind} subjects: {}",
        binding["subjects"]
    );
    Ok(role)
}

#[test]
fn every_base_and_overlay_renders() -> Result<()> {
    let offline = Offline::new()?;
    for dir in KUSTOMIZATIONS {
        offline
            .render(dir)
            .with_context(|| format!("docs/deploy/{dir}"))?;
    }
    // Every directory with a kustomization is in the list above (a new one gets tested).
    let mut found = vec![];
    for dir in ["", "syncer"] {
        for entry in std::fs::read_dir(deploy_dir().join(dir))? {
            let path = entry?.path();
            if path.join("kustomization.yaml").is_file() {
                let rel = path
                    .strip_prefix(deploy_dir())?
                    .to_string_lossy()
                    .to_string();
                found.push(rel);
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = KUSTOMIZATIONS.iter().map(|s| (*s).to_string()).collect();
    listed.sort();
    ensure!(
        found == listed,
        "kustomizations {found:?}, tested {listed:?}"
    );
    Ok(())
}

#[test]
fn kplane_is_a_statefulset_with_a_volume_probes_and_a_service() -> Result<()> {
    let objects = Offline::new()?.render("kplane")?;
    expect_kinds(
        &objects,
        &[
            ("Namespace", "kplane"),
            ("ServiceAccount", "kplane"),
            ("Service", "kplane"),
            ("StatefulSet", "kplane"),
        ],
    )?;
    one_namespace(&objects)?;
    let sts = find(&objects, "StatefulSet")?;
    check_pod_template(sts, &objects)?;
    let service = find(&objects, "Service")?;
    ensure!(
        sts["spec"]["replicas"] == 1,
        "one writer per data directory"
    );
    ensure!(sts["spec"]["serviceName"] == service["metadata"]["name"]);

    let c = &sts["spec"]["template"]["spec"]["containers"][0];
    let args = c["args"].as_array().context("no args")?;
    ensure!(args.first() == Some(&json!("serve")), "{args:?}");
    // The data directory is the claim's mount.
    let data_dir = flag(args, "--data-dir").context("no --data-dir")?;
    let claim = &sts["spec"]["volumeClaimTemplates"][0];
    ensure!(
        claim["spec"]["accessModes"] == json!(["ReadWriteOnce"]),
        "{claim}"
    );
    ensure!(
        c["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["mountPath"] == data_dir && m["name"] == claim["metadata"]["name"]),
        "{data_dir} is not the claim's mount"
    );
    // Listens on all addresses on the port the probes and the Service use.
    let bind = flag(args, "--bind").context("no --bind")?;
    let port = container_port(c, "https")?;
    ensure!(bind == format!("0.0.0.0:{port}"), "{bind}");
    ensure!(service["spec"]["ports"][0]["targetPort"] == "https");
    ensure!(service["spec"]["ports"][0]["port"] == port);
    ensure!(
        service["spec"]["selector"]
            .as_object()
            .context("no selector")?
            .iter()
            .all(|(k, v)| sts["spec"]["template"]["metadata"]["labels"][k] == *v),
        "the Service does not select the pod"
    );
    // The serving certificate names the Service in whatever namespace it runs.
    let sans: Vec<&str> = args
        .iter()
        .filter_map(|a| a.as_str()?.strip_prefix("--tls-san="))
        .collect();
    ensure!(sans.contains(&"kplane.$(POD_NAMESPACE).svc"), "{sans:?}");
    ensure!(http_probe(c, "livenessProbe")? == ("/livez".into(), "https".into(), "HTTPS".into()));
    ensure!(http_probe(c, "readinessProbe")? == ("/readyz".into(), "https".into(), "HTTPS".into()));
    // kplane calls no host API.
    ensure!(sts["spec"]["template"]["spec"]["automountServiceAccountToken"] == false);
    ensure!(!objects
        .iter()
        .any(|o| o["kind"].as_str().is_some_and(|k| k.contains("Role"))));
    Ok(())
}

/// The syncer's Deployment in an overlay: answers its container's args.
fn check_syncer_deployment(objects: &[Value]) -> Result<Vec<Value>> {
    let deploy = find(objects, "Deployment")?;
    check_pod_template(deploy, objects)?;
    let spec = &deploy["spec"]["template"]["spec"];
    ensure!(spec["serviceAccountName"] == "kplane-syncer", "{spec}");
    let c = &spec["containers"][0];
    let args = c["args"].as_array().context("no args")?.clone();
    ensure!(args.first() == Some(&json!("syncer")), "{args:?}");
    ensure!(flag(&args, "--target").is_some(), "{args:?}");
    ensure!(flag(&args, "--id") == Some("$(POD_NAME)"), "{args:?}");
    // In-cluster config for the host.
    ensure!(flag(&args, "--host-kubeconfig").is_none(), "{args:?}");
    // The kplane kubeconfig is the Secret's file.
    let kubeconfig = flag(&args, "--kubeconfig").context("no --kubeconfig")?;
    let (dir, file) = kubeconfig
        .rsplit_once('/')
        .context("relative --kubeconfig")?;
    let mount = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["mountPath"] == dir)
        .with_context(|| format!("nothing mounted at {dir}"))?;
    let volume = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .context("no volume")?;
    ensure!(
        volume["secret"]["secretName"] == "kplane-syncer-kubeconfig",
        "{volume}"
    );
    ensure!(
        volume["secret"]["items"] == json!([{"key": "kubeconfig", "path": file}]),
        "{volume}"
    );
    // /healthz on the metrics port, reachable from the kubelet.
    let bind = flag(&args, "--metrics-bind").context("no --metrics-bind")?;
    let port = container_port(c, "metrics")?;
    ensure!(bind == format!("0.0.0.0:{port}"), "{bind}");
    for probe in ["livenessProbe", "readinessProbe"] {
        ensure!(http_probe(c, probe)? == ("/healthz".into(), "metrics".into(), "HTTP".into()));
    }
    ensure!(c["resources"]["requests"].is_object() && c["resources"]["limits"].is_object());
    Ok(args)
}

#[test]
fn syncer_namespaced_overlay_grants_one_namespace_only() -> Result<()> {
    let objects = Offline::new()?.render("syncer/namespaced")?;
    let config = find(&objects, "ConfigMap")?;
    expect_kinds(
        &objects,
        &[
            ("Namespace", "kplane-syncer"),
            ("ServiceAccount", "kplane-syncer"),
            (
                "ConfigMap",
                config["metadata"]["name"].as_str().unwrap_or(""),
            ),
            ("Deployment", "kplane-syncer"),
            ("Role", "kplane-syncer"),
            ("RoleBinding", "kplane-syncer"),
        ],
    )?;
    ensure!(config["data"]["target"] == "east", "{config}");
    one_namespace(&objects)?;
    let args = check_syncer_deployment(&objects)?;
    ensure!(
        flag(&args, "--host-namespace") == Some("$(POD_NAMESPACE)"),
        "{args:?}"
    );
    let role = check_binding(&objects, "RoleBinding", "Role", "kplane-syncer")?;
    for (group, resource) in SYNCER_NAMESPACED {
        for verb in SYNCER_VERBS {
            ensure!(
                allows(&role["rules"], group, resource, verb),
                "Role does not allow {verb} {group}/{resource}"
            );
        }
    }
    ensure!(!allows(&role["rules"], "", "namespaces", "create"));
    ensure!(!allows(&role["rules"], "", "pods", "create"));
    Ok(())
}

#[test]
fn syncer_cluster_overlay_creates_host_namespaces() -> Result<()> {
    let objects = Offline::new()?.render("syncer/cluster")?;
    let config = find(&objects, "ConfigMap")?;
    expect_kinds(
        &objects,
        &[
            ("Namespace", "kplane-syncer"),
            ("ServiceAccount", "kplane-syncer"),
            (
                "ConfigMap",
                config["metadata"]["name"].as_str().unwrap_or(""),
            ),
            ("Deployment", "kplane-syncer"),
            ("ClusterRole", "kplane-syncer"),
            ("ClusterRoleBinding", "kplane-syncer"),
        ],
    )?;
    one_namespace(&objects)?;
    let args = check_syncer_deployment(&objects)?;
    ensure!(flag(&args, "--host-namespace").is_none(), "{args:?}");
    let role = check_binding(
        &objects,
        "ClusterRoleBinding",
        "ClusterRole",
        "kplane-syncer",
    )?;
    for (group, resource) in SYNCER_NAMESPACED {
        for verb in SYNCER_VERBS {
            ensure!(
                allows(&role["rules"], group, resource, verb),
                "ClusterRole does not allow {verb} {group}/{resource}"
            );
        }
    }
    // Host namespaces are created per (cluster, namespace) and deleted on drain.
    for verb in ["get", "list", "watch", "create", "delete"] {
        ensure!(
            allows(&role["rules"], "", "namespaces", verb),
            "namespaces {verb}"
        );
    }
    ensure!(!allows(&role["rules"], "", "pods", "create"));
    Ok(())
}

#[test]
fn kplane_rbac_grants_sync_on_one_target() -> Result<()> {
    let objects = Offline::new()?.render("kplane-rbac")?;
    expect_kinds(
        &objects,
        &[
            ("ServiceAccount", "kplane-syncer-east"),
            ("ClusterRole", "kplane-syncer-east"),
            ("ClusterRoleBinding", "kplane-syncer-east"),
        ],
    )?;
    let role = check_binding(
        &objects,
        "ClusterRoleBinding",
        "ClusterRole",
        "kplane-syncer-east",
    )?;
    ensure!(
        role["rules"]
            == json!([{
                "apiGroups": ["sync.kplane.io"],
                "resources": ["synctargets"],
                "resourceNames": ["east"],
                "verbs": ["sync"],
            }]),
        "{}",
        role["rules"]
    );
    Ok(())
}
