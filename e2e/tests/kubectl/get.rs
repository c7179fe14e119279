//! `kubectl get`: all namespaces, JSON/YAML output, watch.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{base64_encode, KplaneServer, Table};

use super::get_json;

#[test]
fn get_all_namespaces_shows_objects_across_namespaces() -> Result<()> {
    let server = KplaneServer::start()?;
    for (ns, cm) in [("alpha", "a-cm"), ("beta", "b-cm")] {
        server.kubectl_ok(&["create", "namespace", ns])?;
        server.kubectl_ok(&["create", "configmap", cm, "-n", ns, "--from-literal=k=v"])?;
    }
    let table = Table::parse(&server.kubectl_ok(&["get", "configmaps", "-A"])?)?;
    assert_eq!(table.headers, ["NAMESPACE", "NAME", "DATA", "AGE"]);
    let (ns, name) = (table.column("NAMESPACE")?, table.column("NAME")?);
    for (want_ns, want_name) in [("alpha", "a-cm"), ("beta", "b-cm")] {
        ensure!(
            table
                .rows
                .iter()
                .any(|r| r[ns] == want_ns && r[name] == want_name),
            "{want_ns}/{want_name} missing from {table:?}"
        );
    }
    // The all-namespaces JSON list agrees.
    let list = get_json(&server, &["get", "configmaps", "--all-namespaces"])?;
    let items = list["items"].as_array().context("items")?;
    for (want_ns, want_name) in [("alpha", "a-cm"), ("beta", "b-cm")] {
        ensure!(
            items.iter().any(
                |i| i["metadata"]["namespace"] == want_ns && i["metadata"]["name"] == want_name
            ),
            "{want_ns}/{want_name} missing from the -A JSON list"
        );
    }
    Ok(())
}

fn is_rfc3339_seconds(ts: &str) -> bool {
    // 2006-01-02T15:04:05Z
    let b = ts.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[test]
fn get_json_and_yaml_show_server_set_fields_and_round_trip() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "rt", "--from-literal=color=red"])?;

    let cm = get_json(&server, &["get", "configmap", "rt"])?;
    let uid = cm["metadata"]["uid"].as_str().context("uid missing")?;
    let rv = cm["metadata"]["resourceVersion"]
        .as_str()
        .context("resourceVersion missing")?;
    let created = cm["metadata"]["creationTimestamp"]
        .as_str()
        .context("creationTimestamp missing")?;
    ensure!(!uid.is_empty() && !rv.is_empty(), "empty uid/rv in {cm}");
    ensure!(is_rfc3339_seconds(created), "creationTimestamp {created:?}");
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["apiVersion"], "v1");
    assert_eq!(cm["metadata"]["namespace"], "default");

    let yaml = server.kubectl_ok(&["get", "configmap", "rt", "-o", "yaml"])?;
    for want in [
        "apiVersion: v1".to_owned(),
        "kind: ConfigMap".to_owned(),
        format!("  uid: {uid}"),
        format!("  resourceVersion: \"{rv}\""),
        format!("  creationTimestamp: \"{created}\""),
        "  color: red".to_owned(),
    ] {
        ensure!(
            yaml.lines().any(|l| l == want),
            "{want:?} missing from:\n{yaml}"
        );
    }

    // Round trip: the YAML kubectl printed is accepted back by `replace` (with an edit).
    let edited = yaml.replace("  color: red", "  color: blue");
    let out = server.kubectl_stdin(&["replace", "-f", "-"], &edited)?;
    ensure!(
        out.success(),
        "replace of the printed YAML failed: {}",
        out.stderr
    );
    assert_eq!(out.stdout.trim(), "configmap/rt replaced");
    let after = get_json(&server, &["get", "configmap", "rt"])?;
    assert_eq!(after["data"]["color"], "blue");
    assert_eq!(after["metadata"]["uid"], uid, "replace must keep the uid");
    ensure!(
        after["metadata"]["resourceVersion"] != rv,
        "resourceVersion did not change on update"
    );
    Ok(())
}

#[test]
fn secret_string_data_is_folded_into_base64_data() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: folded\n\
                    stringData:\n  password: s3cr3t\ndata:\n  user: YWRtaW4=\n";
    server.kubectl_stdin(&["create", "-f", "-"], manifest)?;
    let secret = get_json(&server, &["get", "secret", "folded"])?;
    assert_eq!(secret["data"]["password"], base64_encode("s3cr3t"));
    assert_eq!(secret["data"]["user"], base64_encode("admin"));
    ensure!(
        secret.get("stringData").is_none(),
        "stringData must not be stored or returned: {secret}"
    );
    assert_eq!(secret["type"], "Opaque");
    Ok(())
}

const WATCH_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn get_watch_shows_added_modified_deleted_from_another_kubectl() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "watched"])?;
    server.kubectl_ok(&["create", "configmap", "w0", "-n", "watched"])?;

    let mut watch = server.kubectl_root().spawn_watch(&[
        "get",
        "configmaps",
        "-n",
        "watched",
        "-w",
        "--output-watch-events",
    ])?;
    let event = |kind: &'static str, name: &'static str| {
        move |line: &str| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.first() == Some(&kind) && cols.get(1) == Some(&name)
        }
    };
    // The initial list is delivered as ADDED: once w0 shows, the watch is established.
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED w0", event("ADDED", "w0"))?;

    server.kubectl_ok(&[
        "create",
        "configmap",
        "w1",
        "-n",
        "watched",
        "--from-literal=a=1",
    ])?;
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED w1", event("ADDED", "w1"))?;
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "w1",
        "-n",
        "watched",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"2","b":"3"}}"#,
    ])?;
    let modified = watch.wait_for_line(WATCH_TIMEOUT, "MODIFIED w1", event("MODIFIED", "w1"))?;
    // EVENT NAME DATA AGE: the modified object has two keys now.
    assert_eq!(modified.split_whitespace().nth(2), Some("2"), "{modified}");
    server.kubectl_ok(&["delete", "configmap", "w1", "-n", "watched"])?;
    watch.wait_for_line(WATCH_TIMEOUT, "DELETED w1", event("DELETED", "w1"))?;

    let header = watch.seen().first().cloned().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["EVENT", "NAME", "DATA", "AGE"]
    );
    Ok(())
}
