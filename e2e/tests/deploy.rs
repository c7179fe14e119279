//! The deployment manifests of docs/deploy/ (see docs/deploy/README.md): every kustomize
//! base and overlay renders with the real `kubectl kustomize` (no server needed) into the
//! objects it promises, consistent with itself (arguments, mounts, probe ports, bindings,
//! namespaces) and with the host RBAC the syncer needs; kplane starts with the StatefulSet's
//! arguments (probes answer without credentials, the certificate names the Service, tokens
//! carry the Service's issuer); and the syncer's RBAC in kplane
//! (docs/deploy/kplane-rbac) applies to a real kplane, where the kubeconfig made by
//! docs/deploy/syncer-kubeconfig.sh is allowed `sync` on its SyncTarget (as `kubectl auth
//! can-i` shows, with the SyncTarget kind served) and nothing else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl, ServerOptions};
use serde_json::{json, Value};

/// Every kustomization under docs/deploy/.
const KUSTOMIZATIONS: &[&str] = &[
    "kplane",
    "syncer/base",
    "syncer/namespaced",
    "syncer/cluster",
    "kplane-rbac",
];

/// What the syncer does on the host with each namespaced resource it handles
/// (group, resource): Jobs and the copies of what they reference.
const SYNCER_NAMESPACED: &[(&str, &str)] = &[
    ("batch", "jobs"),
    ("", "secrets"),
    ("", "configmaps"),
    ("", "serviceaccounts"),
];
const SYNCER_VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deploy")
}

/// kubectl with an empty kubeconfig in a scratch directory: `kustomize` and
/// `patch --local` never contact a server.
struct Offline {
    kubectl: Kubectl,
    _dir: tempfile::TempDir,
}

impl Offline {
    fn new() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kplane-deploy-")
            .tempdir()?;
        let kubeconfig = dir.path().join("empty.kubeconfig");
        std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n")?;
        let kubectl = Kubectl::new(kubeconfig, dir.path().into(), dir.path().join("cache"));
        Ok(Self { kubectl, _dir: dir })
    }

    /// `kubectl kustomize docs/deploy/<dir>`, as JSON objects (kubectl itself converts the
    /// YAML, with a no-op local patch).
    fn render(&self, dir: &str) -> Result<Vec<Value>> {
        let path = deploy_dir().join(dir);
        let path = path.to_str().context("non-UTF-8 path")?;
        let yaml = self.kubectl.ok(&["kustomize", path])?;
        let json = self.kubectl.ok_stdin(
            &[
                "patch", "--local", "-f", "-", "--type", "merge", "-p", "{}", "-o", "json",
            ],
            &yaml,
        )?;
        let objects = serde_json::Deserializer::from_str(&json)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("parsing the rendering of {dir}"))?;
        ensure!(!objects.is_empty(), "{dir} renders nothing");
        Ok(objects)
    }
}

fn kind_names(objects: &[Value]) -> BTreeSet<(String, String)> {
    objects
        .iter()
        .map(|o| (str_of(&o["kind"]), str_of(&o["metadata"]["name"])))
        .collect()
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn find<'a>(objects: &'a [Value], kind: &str) -> Result<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .with_context(|| format!("no {kind} rendered"))
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

/// The flag's value in `args` (`--name=value`).
fn flag<'a>(args: &'a [Value], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    args.iter()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix(prefix.as_str()))
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
    for c in containers {
        ensure!(
            c["image"] == "ghcr.io/kplane/kplane:latest",
            "{}",
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
