//! SyncTargets with the real kubectl: the kind is served (Table columns, status through
//! `/status`, the drain finalizer), and `kubectl create job` in a logical cluster with a
//! SyncTarget gets the assignment annotation and the syncer's finalizer (issue 15). A
//! target with `includeDescendants` also takes the Jobs of nested workspaces; an ordinary
//! user can neither change the assignment nor name a target that does not apply.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::Value;

const EAST: &str = r#"apiVersion: sync.kplane.io/v1alpha1
kind: SyncTarget
metadata:
  name: east
spec:
  namespaceSelector:
    matchExpressions:
    - {key: sync.example.com/off, operator: DoesNotExist}
"#;

fn json(out: &str) -> Result<Value> {
    serde_json::from_str(out).with_context(|| format!("not JSON: {out}"))
}

fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn kubectl_create_job_is_assigned_to_the_clusters_sync_target() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:acme", "root:acme:team"])?;
    let acme = server.kubectl_for("root:acme")?;
    let team = server.kubectl_for("root:acme:team")?;

    let out = acme.run_stdin(&["apply", "--server-side", "-f", "-"], EAST)?;
    ensure!(out.success(), "apply: {}", out.stderr);
    let st = json(&acme.ok(&["get", "synctarget", "east", "-o", "json"])?)?;
    assert_eq!(
        st["metadata"]["finalizers"][0], "sync.kplane.io/drain",
        "{st}"
    );
    assert_eq!(st["spec"]["resources"][0]["resource"], "jobs", "{st}");
    assert_eq!(st["spec"]["heartbeatTimeoutSeconds"], 30, "{st}");
    let table = rows(&acme.ok(&["get", "synctargets"])?);
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(table[0], ["NAME", "READY", "SYNCED", "HEARTBEAT", "AGE"]);
    assert_eq!(table[1][..4], ["east", "Unknown", "0", "<unknown>"]);

    // kubectl create job: assigned, held by the syncer's finalizer.
    acme.ok(&["create", "job", "pi", "--image=busybox", "--", "true"])?;
    let job = json(&acme.ok(&["get", "job", "pi", "-o", "json"])?)?;
    assert_eq!(
        job["metadata"]["annotations"]["sync.kplane.io/target"], "root:acme/east",
        "{job}"
    );
    assert_eq!(
        job["metadata"]["finalizers"],
        serde_json::json!(["sync.kplane.io/syncer"]),
        "{job}"
    );
    // Not in a namespace the selector leaves out, nor in the nested workspace (yet).
    acme.ok(&["create", "namespace", "local"])?;
    acme.ok(&["label", "namespace", "local", "sync.example.com/off=yes"])?;
    acme.ok(&["create", "job", "here", "-n", "local", "--image=busybox"])?;
    let job = json(&acme.ok(&["get", "job", "here", "-n", "local", "-o", "json"])?)?;
    ensure!(
        job["metadata"]["annotations"]
            .get("sync.kplane.io/target")
            .is_none(),
        "{job}"
    );
    team.ok(&["create", "job", "early", "--image=busybox"])?;
    let job = json(&team.ok(&["get", "job", "early", "-o", "json"])?)?;
    ensure!(job["metadata"].get("finalizers").is_none(), "{job}");

    // includeDescendants: the nested workspace's next Job goes to east too.
    acme.ok(&[
        "patch",
        "synctarget",
        "east",
        "--type=merge",
        "-p",
        r#"{"spec":{"includeDescendants":true}}"#,
    ])?;
    let st = json(&acme.ok(&["get", "synctarget", "east", "-o", "json"])?)?;
    assert_eq!(st["metadata"]["generation"], 2, "{st}");
    team.ok(&["create", "job", "late", "--image=busybox"])?;
    let job = json(&team.ok(&["get", "job", "late", "-o", "json"])?)?;
    assert_eq!(
        job["metadata"]["annotations"]["sync.kplane.io/target"], "root:acme/east",
        "{job}"
    );

    // A heartbeat through /status shows in the table.
    acme.ok(&[
        "patch",
        "synctarget",
        "east",
        "--subresource=status",
        "--type=merge",
        "-p",
        // With its time: a heartbeat without one is none (the sync controller drains a
        // target that never had a heartbeat at once, instead of holding it).
        &format!(
            r#"{{"status":{{"lastHeartbeatTime":"{now}","syncedObjects":2,"syncerVersion":"kplane test","conditions":[{{"type":"Ready","status":"True","reason":"HeartbeatReceived","message":"ok","lastTransitionTime":"{now}"}}]}}}}"#,
            now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
        ),
    ])?;
    let table = rows(&acme.ok(&["get", "synctargets", "--no-headers"])?);
    assert_eq!(table[0][..3], ["east", "True", "2"], "{table:?}");
    // Conditions are a map keyed by type: another manager's condition joins Ready.
    let drained = r#"apiVersion: sync.kplane.io/v1alpha1
kind: SyncTarget
metadata: {name: east}
status:
  conditions:
  - {type: Drained, status: "False", reason: NotDeleted, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}
"#;
    let out = acme.run_stdin(
        &[
            "apply",
            "--server-side",
            "--subresource=status",
            "--field-manager=sync-controller",
            "-f",
            "-",
        ],
        drained,
    )?;
    ensure!(out.success(), "{}", out.stderr);
    let types = acme.ok(&[
        "get",
        "synctarget",
        "east",
        "-o",
        "jsonpath={.status.conditions[*].type}",
    ])?;
    assert_eq!(types.trim(), "Ready Drained");

    // An ordinary user (cluster-admin through RBAC, not system:masters) may neither move
    // a Job to another target nor name one that does not apply.
    acme.ok(&[
        "create",
        "clusterrolebinding",
        "alice",
        "--clusterrole=cluster-admin",
        "--user=alice",
    ])?;
    let out = acme.run(&[
        "--as=alice",
        "annotate",
        "job",
        "pi",
        "--overwrite",
        "sync.kplane.io/target=root:acme/west",
    ])?;
    ensure!(!out.success(), "{}", out.stdout);
    ensure!(
        out.stderr.contains(
            "metadata.annotations[sync.kplane.io/target]: Invalid value: \"root:acme/west\": field is immutable"
        ),
        "{}",
        out.stderr
    );
    let job = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: elsewhere
  annotations: {sync.kplane.io/target: root:other/west}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"#;
    let out = acme.run_stdin(&["--as=alice", "create", "-f", "-"], job)?;
    ensure!(!out.success(), "{}", out.stdout);
    ensure!(
        out.stderr.contains("The Job \"elsewhere\" is invalid")
            && out.stderr.contains("(applicable: root:acme/east)"),
        "{}",
        out.stderr
    );
    // Naming the applicable one is fine.
    let out = acme.run_stdin(
        &["--as=alice", "create", "-f", "-"],
        &job.replace("root:other/west", "root:acme/east"),
    )?;
    ensure!(out.success(), "{}", out.stderr);
    // Applying a manifest without the annotation again (server-side and client-side)
    // keeps the assignment: the applier does not own what admission set.
    let plain = job.replace("elsewhere", "applied").replace(
        "  annotations: {sync.kplane.io/target: root:other/west}\n",
        "",
    );
    for (apply, second) in [
        (
            &["--as=alice", "apply", "--server-side", "-f", "-"][..],
            "ssa",
        ),
        (&["--as=alice", "apply", "-f", "-"][..], "csa"),
    ] {
        let manifest = plain.replace("applied", &format!("applied-{second}"));
        for labels in ["", "  labels: {round: two}\n"] {
            let body = manifest.replace(
                &format!("  name: applied-{second}\n"),
                &format!("  name: applied-{second}\n{labels}"),
            );
            let out = acme.run_stdin(apply, &body)?;
            ensure!(out.success(), "{second}: {}", out.stderr);
        }
        let got = json(&acme.ok(&["get", "job", &format!("applied-{second}"), "-o", "json"])?)?;
        assert_eq!(got["metadata"]["labels"]["round"], "two", "{got}");
        assert_eq!(
            got["metadata"]["annotations"]["sync.kplane.io/target"], "root:acme/east",
            "{got}"
        );
    }

    // Deleting the target: it is held by its drain finalizer while its syncer heartbeats
    // (30 s by default) and takes no new Jobs.
    acme.ok(&["delete", "synctarget", "east", "--wait=false"])?;
    acme.ok(&["create", "job", "after", "--image=busybox"])?;
    let job = json(&acme.ok(&["get", "job", "after", "-o", "json"])?)?;
    ensure!(job["metadata"].get("annotations").is_none(), "{job}");
    let st = json(&acme.ok(&["get", "synctarget", "east", "-o", "json"])?)?;
    ensure!(st["metadata"]["deletionTimestamp"].is_string(), "{st}");
    Ok(())
}
