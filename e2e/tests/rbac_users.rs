//! RBAC enforced on real users with the real kubectl: users of a `--token-auth-file`, a
//! ServiceAccount token from `kubectl create token`, and a client certificate whose O is a
//! bound group. Covers a Role with resourceNames (get allowed, list/watch/other names 403
//! with upstream's message and no object), `kubectl auth can-i [--list]` agreeing with
//! enforcement, bindings that grant in their own workspace only, `/clusters/*` needing a
//! grant in `root`, a non-admin's workspace, `kubectl --as` with and without the
//! impersonate grant, and the escalation check on Role writes.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{
    base64_encode, kplane_bin, one_configmap_role as role_for, KplaneServer, Kubectl, ServerOptions,
};
use serde_json::{json, Value};

/// The token file: `token,user,uid` (no groups).
const TOKENS: &str = "alice-token,alice,1\nbob-token,bob,2\ncarol-token,carol,3\ndave-token,dave,4\neve-token,eve,5\nfrank-token,frank,6\n";

/// A ClusterRoleBinding `name` of `user` to ClusterRole `role`.
fn crb(name: &str, role: &str, user: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n- kind: User\n  name: {user}\n  apiGroup: rbac.authorization.k8s.io\n"
    )
}

/// A ClusterRole `name` with one rule.
fn cluster_role(name: &str, group: &str, resources: &str, verbs: &str, names: &str) -> String {
    let names = if names.is_empty() {
        String::new()
    } else {
        format!("  resourceNames: [{names}]\n")
    };
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules:\n- apiGroups: [\"{group}\"]\n  resources: [{resources}]\n  verbs: [{verbs}]\n{names}"
    )
}

fn start(dir: &Path) -> Result<KplaneServer> {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, TOKENS)?;
    KplaneServer::start_with(
        ServerOptions::default()
            .arg("--token-auth-file")
            .arg(tokens.as_os_str()),
    )
}

/// A kubectl for logical cluster `cluster` with the credential `user` (a kubeconfig user).
fn kubectl_with(
    server: &KplaneServer,
    dir: &Path,
    name: &str,
    cluster: &str,
    user: Value,
) -> Result<Kubectl> {
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": format!("{}/clusters/{cluster}", server.base_url()),
            "certificate-authority-data": base64_encode(server.ca_pem()?),
        }}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": name}}],
        "current-context": "kplane",
    });
    let file = format!("{name}-{}.kubeconfig", cluster.replace(['*', ':'], "_"));
    let path = dir.join(file);
    std::fs::write(&path, kubeconfig.to_string())?;
    Ok(Kubectl::new(
        path,
        dir.join("home"),
        dir.join("cache").join(name),
    ))
}

fn token_user(server: &KplaneServer, dir: &Path, user: &str, cluster: &str) -> Result<Kubectl> {
    kubectl_with(
        server,
        dir,
        user,
        cluster,
        json!({"token": format!("{user}-token")}),
    )
}

/// Runs a kubectl that must fail with `message` in its stderr and print nothing.
fn forbidden(k: &Kubectl, args: &[&str], message: &str) -> Result<()> {
    let out = k.run(args)?;
    ensure!(!out.success(), "kubectl {args:?} succeeded: {}", out.stdout);
    ensure!(
        out.stderr.contains(message),
        "kubectl {args:?}: want {message:?}, got {}",
        out.stderr
    );
    ensure!(
        out.stdout.trim().is_empty(),
        "kubectl {args:?} printed {}",
        out.stdout
    );
    Ok(())
}

/// `kubectl auth can-i ARGS`: the answer's first word (`yes`/`no`).
fn can_i(k: &Kubectl, args: &[&str]) -> Result<String> {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let out = k.run(&all)?;
    let answer = out.stdout.trim().to_string();
    ensure!(
        answer == "yes" || answer == "no",
        "kubectl {all:?}: {} {}",
        out.stdout,
        out.stderr
    );
    ensure!(out.success() == (answer == "yes"), "exit code of {all:?}");
    Ok(answer)
}

fn forbidden_cm(user: &str, verb: &str, name: Option<&str>) -> String {
    let what = match name {
        Some(n) => format!("configmaps \"{n}\""),
        None => "configmaps".into(),
    };
    format!(
        "{what} is forbidden: User \"{user}\" cannot {verb} resource \"configmaps\" in API group \"\" in the namespace \"default\""
    )
}

#[test]
fn token_users_get_what_their_workspaces_bindings_grant() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let server = start(dir.path())?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let admin_a = server.kubectl_for("root:a")?;
    let admin_b = server.kubectl_for("root:b")?;
    for k in [&admin_a, &admin_b] {
        k.ok(&["create", "configmap", "one", "--from-literal=k=v"])?;
        k.ok(&["create", "configmap", "two", "--from-literal=k=v"])?;
    }
    admin_a.ok_stdin(&["apply", "-f", "-"], &role_for("User", "alice"))?;
    admin_b.ok_stdin(&["apply", "-f", "-"], &role_for("User", "bob"))?;

    // (a) a Role with resourceNames.
    let alice = token_user(&server, dir.path(), "alice", "root:a")?;
    let got = alice.ok(&["get", "cm", "one", "-o", "name"])?;
    ensure!(got.trim() == "configmap/one", "{got}");
    forbidden(
        &alice,
        &["get", "cm", "two"],
        &forbidden_cm("alice", "get", Some("two")),
    )?;
    forbidden(&alice, &["get", "cm"], &forbidden_cm("alice", "list", None))?;
    forbidden(
        &alice,
        &["get", "cm", "-w", "--request-timeout=20s"],
        &forbidden_cm("alice", "list", None),
    )?;
    forbidden(
        &alice,
        &[
            "get",
            "--raw",
            "/clusters/root:a/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5",
        ],
        &forbidden_cm("alice", "watch", None),
    )?;

    // (b) can-i agrees with enforcement.
    ensure!(can_i(&alice, &["get", "cm/one"])? == "yes");
    ensure!(can_i(&alice, &["get", "cm/two"])? == "no");
    ensure!(can_i(&alice, &["list", "cm"])? == "no");
    ensure!(can_i(&alice, &["watch", "cm"])? == "no");
    let list = alice.ok(&["auth", "can-i", "--list", "-n", "default"])?;
    ensure!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["configmaps", "[]", "[one]", "[get]"]),
        "{list}"
    );

    // (c) the same-named RoleBinding in root:b is bob's, and grants alice nothing there;
    // bob's grants him nothing in root:a.
    let alice_b = token_user(&server, dir.path(), "alice", "root:b")?;
    forbidden(
        &alice_b,
        &["get", "cm", "one"],
        &forbidden_cm("alice", "get", Some("one")),
    )?;
    ensure!(can_i(&alice_b, &["get", "cm/one"])? == "no");
    let bob_b = token_user(&server, dir.path(), "bob", "root:b")?;
    bob_b.ok(&["get", "cm", "one"])?;
    let bob_a = token_user(&server, dir.path(), "bob", "root:a")?;
    forbidden(
        &bob_a,
        &["get", "cm", "one"],
        &forbidden_cm("bob", "get", Some("one")),
    )?;

    // (e) /clusters/* needs a cluster-wide grant in root.
    server.kubectl_stdin(&["apply", "-f", "-"], &crb("carol-view", "view", "carol"))?;
    admin_a.ok_stdin(&["apply", "-f", "-"], &crb("dave-view", "view", "dave"))?;
    // (`get --raw` takes an absolute path: the kubeconfig's /clusters/... is not used.)
    let carol = token_user(&server, dir.path(), "carol", "root")?;
    let all = carol.ok(&["get", "--raw", "/clusters/*/api/v1/configmaps"])?;
    let all: Value = serde_json::from_str(&all)?;
    let names: Vec<&str> = all["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    ensure!(
        names.iter().filter(|n| **n == "one").count() == 2,
        "{names:?}"
    );
    let dave_a = token_user(&server, dir.path(), "dave", "root:a")?;
    dave_a.ok(&["get", "cm", "two"])?;
    forbidden(
        &dave_a,
        &["get", "--raw", "/clusters/*/api/v1/configmaps"],
        "configmaps is forbidden: User \"dave\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope",
    )?;

    // (f) a workspace created by a non-admin user.
    let creator = cluster_role(
        "workspace-creator",
        "tenancy.kplane.io",
        "workspaces",
        "create, get, list, watch",
        "",
    );
    server.kubectl_stdin(&["apply", "-f", "-"], &creator)?;
    server.kubectl_stdin(
        &["apply", "-f", "-"],
        &crb("eve-creates", "workspace-creator", "eve"),
    )?;
    let eve = token_user(&server, dir.path(), "eve", "root")?;
    eve.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: tenancy.kplane.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: eves\n",
    )?;
    eve.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        "workspace/eves",
        "--timeout=30s",
    ])?;
    let eve_child = token_user(&server, dir.path(), "eve", "root:eves")?;
    eve_child.ok(&["create", "configmap", "mine"])?;
    eve_child.ok(&["create", "namespace", "eve-ns"])?;
    eve_child.ok(&["get", "cm", "mine"])?;
    ensure!(can_i(&eve_child, &["delete", "namespaces"])? == "yes");
    forbidden(&eve, &["get", "cm"], &forbidden_cm("eve", "list", None))?;
    ensure!(can_i(&eve, &["create", "cm"])? == "no");

    // (g) kubectl --as answers what alice's own token answers; impersonating needs the
    // impersonate grant.
    for (args, want) in [
        (&["get", "cm/one"][..], "yes"),
        (&["get", "cm/two"][..], "no"),
        (&["list", "cm"][..], "no"),
    ] {
        ensure!(can_i(&alice, args)? == want, "{args:?}");
        let mut as_alice = vec!["--as=alice"];
        as_alice.extend_from_slice(args);
        ensure!(can_i(&admin_a, &as_alice)? == want, "--as {args:?}");
    }
    forbidden(
        &bob_a,
        &["--as=alice", "get", "cm", "one"],
        "users \"alice\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
    )?;
    let impersonator = cluster_role("impersonate-alice", "", "users", "impersonate", "alice");
    admin_a.ok_stdin(&["apply", "-f", "-"], &impersonator)?;
    admin_a.ok_stdin(
        &["apply", "-f", "-"],
        &crb("bob-impersonates", "impersonate-alice", "bob"),
    )?;
    let got = bob_a.ok(&["--as=alice", "get", "cm", "one", "-o", "name"])?;
    ensure!(got.trim() == "configmap/one", "{got}");
    ensure!(can_i(&bob_a, &["--as=alice", "get", "cm/one"])? == "yes");
    forbidden(
        &bob_a,
        &["--as=alice", "get", "cm", "two"],
        &forbidden_cm("alice", "get", Some("two")),
    )?;
    // The grant is root:a's: bob may not impersonate in root:b.
    forbidden(
        &bob_b,
        &["--as=alice", "get", "cm", "one"],
        "users \"alice\" is forbidden: User \"bob\" cannot impersonate",
    )?;
    Ok(())
}

#[test]
fn service_account_tokens_and_certificate_groups() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let server = start(dir.path())?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let admin_a = server.kubectl_for("root:a")?;
    let admin_b = server.kubectl_for("root:b")?;
    for k in [&admin_a, &admin_b] {
        k.ok(&["create", "configmap", "one"])?;
        k.ok(&["create", "serviceaccount", "reader"])?;
        k.ok(&[
            "create",
            "rolebinding",
            "reader",
            "--clusterrole=view",
            "--serviceaccount=default:reader",
        ])?;
    }

    // (d) a ServiceAccount token of root:a reads there only.
    let token = admin_a.ok(&["create", "token", "reader"])?;
    let token = token.trim();
    let sa = json!({ "token": token });
    let sa_a = kubectl_with(&server, dir.path(), "sa", "root:a", sa.clone())?;
    sa_a.ok(&["get", "cm", "one"])?;
    sa_a.ok(&["get", "cm"])?;
    ensure!(can_i(&sa_a, &["list", "cm"])? == "yes");
    ensure!(can_i(&sa_a, &["create", "cm"])? == "no");
    // (kubectl's discovery is refused too, so the requests are raw.)
    let sa_b = kubectl_with(&server, dir.path(), "sa", "root:b", sa.clone())?;
    forbidden(
        &sa_b,
        &[
            "get",
            "--raw",
            "/clusters/root:b/api/v1/namespaces/default/configmaps/one",
        ],
        &forbidden_cm("system:serviceaccount:default:reader", "get", Some("one")),
    )?;
    forbidden(
        &sa_a,
        &["get", "--raw", "/clusters/*/api/v1/configmaps"],
        "configmaps is forbidden: User \"system:serviceaccount:default:reader\" cannot list resource \"configmaps\"",
    )?;
    // Even with a ClusterRoleBinding in root, the token stays in root:a.
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "reader-view",
        "--clusterrole=view",
        "--serviceaccount=default:reader",
    ])?;
    forbidden(
        &sa_a,
        &["get", "--raw", "/clusters/*/api/v1/configmaps"],
        "is forbidden",
    )?;
    ensure!(can_i(&sa_a, &["list", "cm"])? == "yes");

    // (h) a client certificate user bound through its group (O).
    let certs = dir.path().join("certs");
    let run = Command::new(kplane_bin()?)
        .args(["certs", "issue", "--user", "gina", "--group", "readers"])
        .arg("--data-dir")
        .arg(server.data_dir())
        .arg("-o")
        .arg(&certs)
        .env_remove("KPLANE_DATA_DIR")
        .output()?;
    ensure!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let cert = json!({
        "client-certificate": certs.join("gina.crt"),
        "client-key": certs.join("gina.key"),
    });
    let gina = kubectl_with(&server, dir.path(), "gina", "root:a", cert)?;
    forbidden(
        &gina,
        &["get", "cm", "one"],
        &forbidden_cm("gina", "get", Some("one")),
    )?;
    admin_a.ok_stdin(&["apply", "-f", "-"], &role_for("Group", "readers"))?;
    let got = gina.ok(&["get", "cm", "one", "-o", "name"])?;
    ensure!(got.trim() == "configmap/one", "{got}");
    ensure!(can_i(&gina, &["get", "cm/one"])? == "yes");
    ensure!(can_i(&gina, &["list", "cm"])? == "no");
    Ok(())
}

#[test]
fn escalation_is_refused_unless_granted() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let server = start(dir.path())?;
    server.create_workspaces(&["root:a"])?;
    let admin = server.kubectl_for("root:a")?;
    // frank may edit and write Roles and RoleBindings in default, nothing more.
    admin.ok(&[
        "create",
        "rolebinding",
        "frank-edit",
        "--clusterrole=edit",
        "--user=frank",
    ])?;
    admin.ok_stdin(
        &["apply", "-f", "-"],
        &cluster_role(
            "rbac-writer",
            "rbac.authorization.k8s.io",
            "roles, rolebindings",
            "create, get, update, patch",
            "",
        ),
    )?;
    admin.ok(&[
        "create",
        "rolebinding",
        "frank-rbac",
        "--clusterrole=rbac-writer",
        "--user=frank",
    ])?;
    let frank = token_user(&server, dir.path(), "frank", "root:a")?;

    // Within edit: allowed.
    frank.ok(&[
        "create",
        "role",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
    ])?;
    // More than edit: refused with upstream's message.
    let more = "roles.rbac.authorization.k8s.io \"quota-writer\" is forbidden: user \"frank\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"resourcequotas\"], Verbs:[\"create\" \"delete\"]}";
    // (kplane serves no resourcequotas, so the Role comes as YAML, not `create role`.)
    let quota_writer = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: quota-writer\nrules:\n- apiGroups: [\"\"]\n  resources: [resourcequotas]\n  verbs: [create, delete]\n";
    let out = frank.run_stdin(&["create", "-f", "-"], quota_writer)?;
    ensure!(
        !out.success() && out.stderr.contains(more),
        "{} {}",
        out.stdout,
        out.stderr
    );
    // Binding a role frank does not hold (admin has RBAC rights edit lacks): refused.
    forbidden(
        &frank,
        &[
            "create",
            "rolebinding",
            "frank-admin",
            "--clusterrole=admin",
            "--user=frank",
        ],
        "rolebindings.rbac.authorization.k8s.io \"frank-admin\" is forbidden: user \"frank\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:",
    )?;
    // Binding a role he holds: allowed.
    frank.ok(&[
        "create",
        "rolebinding",
        "others-read",
        "--role=cm-reader",
        "--user=someone",
    ])?;
    // Growing an existing role beyond his rights is refused too.
    let out = frank.run(&[
        "patch",
        "role",
        "cm-reader",
        "--type=json",
        "-p",
        "[{\"op\":\"add\",\"path\":\"/rules/0/verbs/-\",\"value\":\"escalate\"}]",
    ])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains("is attempting to grant RBAC permissions not currently held"),
        "{} {}",
        out.stdout,
        out.stderr
    );

    // With `escalate` on roles, and `bind` on the admin ClusterRole, he may.
    admin.ok_stdin(
        &["apply", "-f", "-"],
        &cluster_role(
            "rbac-escalator",
            "rbac.authorization.k8s.io",
            "roles",
            "escalate",
            "",
        ),
    )?;
    admin.ok_stdin(
        &["apply", "-f", "-"],
        &cluster_role(
            "admin-binder",
            "rbac.authorization.k8s.io",
            "clusterroles",
            "bind",
            "admin",
        ),
    )?;
    admin.ok(&[
        "create",
        "rolebinding",
        "frank-escalate",
        "--clusterrole=rbac-escalator",
        "--user=frank",
    ])?;
    admin.ok(&[
        "create",
        "rolebinding",
        "frank-bind",
        "--clusterrole=admin-binder",
        "--user=frank",
    ])?;
    frank.ok_stdin(&["create", "-f", "-"], quota_writer)?;
    frank.ok(&[
        "create",
        "rolebinding",
        "frank-admin",
        "--clusterrole=admin",
        "--user=frank",
    ])?;
    Ok(())
}
