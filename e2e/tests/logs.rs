//! Server logs: the request line (`-v 3`) in text and JSON, what the default verbosity
//! writes (no request lines, every 5xx once with its cause), `RUST_LOG=debug` limited to
//! kplane's own targets, and no ANSI colour when stderr is not a terminal.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, ServerOptions};
use serde_json::Value;

/// A ConfigMap with a field ConfigMaps do not declare: a server-side apply of it is a 500
/// on kube-apiserver 1.32 too (`failed to create typed patch object`, docs/compatibility.md).
const UNDECLARED_FIELD: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
spec:
  a: 1
";

/// The server's own lines (the harness adds `==== ... ====` markers).
fn server_lines(server: &KplaneServer) -> Vec<String> {
    server
        .log_tail(usize::MAX)
        .lines()
        .filter(|l| !l.starts_with("===="))
        .map(str::to_string)
        .collect()
}

fn request_lines(server: &KplaneServer) -> Vec<String> {
    server_lines(server)
        .into_iter()
        .filter(|l| l.contains("kplane_apiserver::httplog"))
        .collect()
}

/// Options with nothing inherited that changes logging: no `RUST_LOG`, and no `NO_COLOR`
/// (the harness sets it), so the absence of colour comes from stderr not being a terminal.
fn options() -> ServerOptions {
    ServerOptions::default()
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
}

#[test]
fn v3_writes_a_text_line_per_request_with_its_fields_and_no_colour() -> Result<()> {
    let server = KplaneServer::start_with(options().arg("--v=3"))?;
    let missing = server.kubectl(&["get", "configmap", "nope"])?;
    ensure!(!missing.success(), "get of a missing ConfigMap succeeded");
    server.kubectl_ok(&["create", "configmap", "logged", "--from-literal=a=b"])?;

    let lines = request_lines(&server);
    let created = lines
        .iter()
        .find(|l| l.contains("verb=POST") && l.contains("/configmaps?"))
        .with_context(|| format!("no line for the create in {lines:#?}"))?;
    for field in [
        " DEBUG ",
        "HTTP cluster=root user=kplane-admin verb=POST uri=/clusters/root/api/v1/namespaces/default/configmaps?",
        "status=201 latency_ms=",
        "user_agent=\"kubectl/v1.32",
        "src_ip=127.0.0.1:",
    ] {
        ensure!(created.contains(field), "{field:?} not in {created}");
    }
    let not_found = lines
        .iter()
        .find(|l| l.contains("status=404"))
        .with_context(|| format!("no 404 line in {lines:#?}"))?;
    ensure!(
        not_found.contains(" INFO ")
            && not_found.contains("uri=/clusters/root/api/v1/namespaces/default/configmaps/nope "),
        "{not_found}"
    );
    let log = server.log_tail(usize::MAX);
    ensure!(
        !log.contains('\u{1b}'),
        "ANSI escape in piped output:\n{log}"
    );
    Ok(())
}

#[test]
fn json_lines_parse_and_carry_the_request_fields() -> Result<()> {
    let server = KplaneServer::start_with(options().arg("--v=3").arg("--log-format=json"))?;
    server.create_workspace("root:acme")?;
    let acme = server.kubectl_for("root:acme")?;
    acme.run(&["create", "namespace", "team-a"])?;
    let missing = acme.run(&["get", "configmap", "nope", "-n", "team-a"])?;
    ensure!(!missing.success(), "get of a missing ConfigMap succeeded");

    let mut parsed = vec![];
    for line in server_lines(&server) {
        let v: Value =
            serde_json::from_str(&line).with_context(|| format!("not a JSON line: {line}"))?;
        parsed.push(v);
    }
    ensure!(
        parsed
            .iter()
            .any(|v| v["message"] == "kplane is ready" && v["level"] == "INFO"),
        "no ready line in {parsed:#?}"
    );
    let line = parsed
        .iter()
        // (Creating the workspace had its own 404s in root: kubectl apply's GET.)
        .find(|v| v["message"] == "HTTP" && v["status"] == 404 && v["cluster"] != "root")
        .with_context(|| format!("no 404 request line in {parsed:#?}"))?;
    assert_eq!(line["target"], "kplane_apiserver::httplog");
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["cluster"], "root:acme");
    assert_eq!(line["user"], "kplane-admin");
    assert_eq!(line["verb"], "GET");
    assert_eq!(
        line["uri"],
        "/clusters/root:acme/api/v1/namespaces/team-a/configmaps/nope"
    );
    ensure!(line["latency_ms"].as_f64().is_some(), "{line}");
    ensure!(
        line["user_agent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with("kubectl/")),
        "{line}"
    );
    ensure!(line.get("error").is_none(), "a 404 has no error: {line}");
    Ok(())
}

#[test]
fn default_verbosity_writes_no_request_lines_but_each_5xx_once_with_its_cause() -> Result<()> {
    let server = KplaneServer::start_with(options())?;
    server.kubectl_ok(&["create", "configmap", "quiet", "--from-literal=a=b"])?;
    server.kubectl_ok(&["get", "configmap", "quiet"])?;
    let missing = server.kubectl(&["get", "configmap", "nope"])?;
    ensure!(!missing.success(), "get of a missing ConfigMap succeeded");
    let broken = server
        .kubectl_root()
        .run_stdin(&["apply", "--server-side", "-f", "-"], UNDECLARED_FIELD)?;
    ensure!(
        !broken.success() && broken.stderr.contains("field not declared in schema"),
        "expected the apply to fail with a 500: {broken:?}"
    );

    let lines = request_lines(&server);
    ensure!(lines.len() == 1, "expected only the 5xx line: {lines:#?}");
    let line = &lines[0];
    for field in [
        " ERROR ",
        "HTTP cluster=root user=kplane-admin verb=PATCH uri=/clusters/root/api/v1/namespaces/default/configmaps/broken?",
        "status=500",
        "error=failed to create typed patch object",
        "field not declared in schema",
    ] {
        ensure!(line.contains(field), "{field:?} not in {line}");
    }
    let all = server_lines(&server);
    ensure!(
        !all.iter().any(|l| l.contains(" DEBUG ")),
        "debug lines at the default verbosity: {all:#?}"
    );
    Ok(())
}

#[test]
fn rust_log_debug_shows_kplane_debug_lines_and_no_dependency_internals() -> Result<()> {
    let server = KplaneServer::start_with(options().env("RUST_LOG", "debug"))?;
    server.kubectl_ok(&["get", "namespaces"])?;
    let lines = server_lines(&server);
    ensure!(
        lines
            .iter()
            .any(|l| l.contains(" DEBUG kplane_apiserver::httplog: HTTP ")),
        "no kplane debug line: {lines:#?}"
    );
    let foreign: Vec<&String> = lines
        .iter()
        .filter(|l| {
            (l.contains(" DEBUG ") || l.contains(" TRACE ") || l.contains(" INFO "))
                && !l.contains(" kplane")
        })
        .collect();
    ensure!(
        foreign.is_empty(),
        "dependency lines below WARN: {foreign:#?}"
    );
    Ok(())
}
