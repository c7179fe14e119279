//! `kubectl version` and `kubectl cluster-info`: what kplane says about itself.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::Value;

#[test]
fn version_reports_the_real_build_as_kubernetes_1_32() -> Result<()> {
    let server = KplaneServer::start()?;
    let raw = server.kubectl_ok(&["get", "--raw", "/version"])?;
    let info: Value = serde_json::from_str(&raw).context("/version is not JSON")?;
    // The fields of upstream's version.Info, in its order.
    let keys: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .collect();
    assert_eq!(
        keys,
        [
            "major",
            "minor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform"
        ]
    );
    assert_eq!(info["major"], "1");
    assert_eq!(info["minor"], "32");
    let git_version = info["gitVersion"].as_str().context("no gitVersion")?;
    let kplane_version = env!("CARGO_PKG_VERSION");
    ensure!(
        git_version.starts_with(&format!("v1.32.0-kplane.{kplane_version}")),
        "gitVersion {git_version}"
    );
    // Built from this checkout: the commit is HEAD's (or a later one, if the binary is newer).
    let commit = info["gitCommit"].as_str().unwrap_or("");
    ensure!(
        commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "gitCommit {commit:?}"
    );
    ensure!(
        git_version.contains(&format!("+{}", &commit[..7])),
        "gitVersion {git_version} does not name commit {commit}"
    );
    ensure!(
        ["clean", "dirty"].contains(&info["gitTreeState"].as_str().unwrap_or("")),
        "{info}"
    );
    let date = info["buildDate"].as_str().unwrap_or("");
    ensure!(
        date.len() == 20 && date.ends_with('Z') && date.as_bytes()[10] == b'T',
        "buildDate {date:?}"
    );
    let rustc = info["goVersion"].as_str().unwrap_or("");
    ensure!(rustc.starts_with("rustc 1."), "goVersion {rustc:?}");
    assert_eq!(info["compiler"], "rustc");
    ensure!(
        info["platform"].as_str().unwrap_or("").contains('/'),
        "{info}"
    );

    // kubectl parses it and sees no version skew.
    let out = server.kubectl(&["version"])?;
    ensure!(out.success(), "kubectl version failed: {}", out.stderr);
    ensure!(
        out.stdout
            .contains(&format!("Server Version: {git_version}")),
        "kubectl version printed {:?}",
        out.stdout
    );
    ensure!(
        !out.stderr.contains("WARNING"),
        "kubectl warned: {}",
        out.stderr
    );
    let parsed: Value = serde_json::from_str(&server.kubectl_ok(&["version", "-o", "json"])?)?;
    assert_eq!(parsed["serverVersion"]["gitVersion"], git_version);
    assert_eq!(parsed["serverVersion"]["minor"], "32");
    Ok(())
}

/// kplane serves no Services (as kcp): `kubectl cluster-info` lists the control plane from
/// the Services labelled `kubernetes.io/cluster-service=true` in kube-system, so it fails
/// as it does against kcp.
#[test]
fn cluster_info_fails_on_services_as_against_kcp() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl(&["cluster-info"])?;
    ensure!(
        !out.success(),
        "kubectl cluster-info succeeded: {}",
        out.stdout
    );
    assert_eq!(
        out.stdout,
        "\nTo further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.\n"
    );
    assert_eq!(
        out.stderr.trim(),
        r#"error: the server doesn't have a resource type "services""#
    );
    Ok(())
}
