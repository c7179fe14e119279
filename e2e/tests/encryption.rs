//! Encryption at rest with kubectl (`--encryption-provider-config`, docs/security.md): a
//! Secret's value is absent from every file of the data directory (a ConfigMap's, not
//! configured, is there: the search can find what is stored in the clear) and readable
//! through the API, and a PostgreSQL dump holds none either; a key rotation as Kubernetes documents it (a new first key, every
//! Secret replaced, the old key removed) leaves every Secret readable, and so does one with
//! `kplane storage rewrite` across logical clusters.

use std::path::Path;

use anyhow::{ensure, Result};
use base64::Engine as _;
use kplane_e2e::{KplaneServer, ServerOptions};

const K1: &str = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
const K2: &str = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=";

fn config(keys: &[(&str, &str)]) -> String {
    let mut out = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n",
    );
    for (name, secret) in keys {
        out.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    out.push_str("  - identity: {}\n");
    out
}

/// Whether any file under `dir` contains `needle`.
fn found_in(dir: &Path, needle: &[u8]) -> Result<bool> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if found_in(&path, needle)? {
                return Ok(true);
            }
        } else if std::fs::read(&path)?
            .windows(needle.len())
            .any(|w| w == needle)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn secret_value(server: &KplaneServer, name: &str) -> Result<String> {
    let b64 = server.kubectl_ok(&[
        "get",
        "secret",
        name,
        "-n",
        "default",
        "-o",
        "jsonpath={.data.password}",
    ])?;
    Ok(String::from_utf8(
        base64::engine::general_purpose::STANDARD.decode(b64.trim())?,
    )?)
}

fn create_secret(server: &KplaneServer, name: &str, password: &str) -> Result<()> {
    let literal = format!("--from-literal=password={password}");
    server.kubectl_ok(&[
        "create", "secret", "generic", name, "-n", "default", &literal,
    ])?;
    Ok(())
}

/// Secret `s1` holding `secret` and ConfigMap `c1` (not encrypted) holding `plain`, the
/// Secret read back through the API.
fn write_markers(server: &KplaneServer, secret: &str, plain: &str) -> Result<()> {
    create_secret(server, "s1", secret)?;
    let literal = format!("--from-literal=v={plain}");
    server.kubectl_ok(&["create", "configmap", "c1", "-n", "default", &literal])?;
    ensure!(secret_value(server, "s1")? == secret);
    Ok(())
}

#[test]
fn secrets_are_encrypted_at_rest_and_keys_rotate() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("k1", K1)]))?;
    let mut server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--encryption-provider-config")
            .arg(&cfg),
    )?;
    let secret = "marker-secret-7d1f3a";
    let plain_cm = "marker-configmap-42b9c0";
    write_markers(&server, secret, plain_cm)?;
    // An export holds the Secret in the clear, and says so.
    let archive = dir.path().join("root.kpa");
    let out = std::process::Command::new(kplane_e2e::kplane_bin()?)
        .args(["export", "root", "-o"])
        .arg(&archive)
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "export: {stderr}");
    ensure!(
        stderr
            .contains("holds in the clear the values of /secrets that the server encrypts at rest"),
        "no warning: {stderr}"
    );
    let (header, _) = kplane_archive::verify(std::fs::File::open(&archive)?)?;
    ensure!(header.decrypted == ["/secrets"], "{:?}", header.decrypted);
    server.stop()?;
    let data = server.data_dir().to_path_buf();
    let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
    ensure!(
        found_in(&data, plain_cm.as_bytes())?,
        "the unencrypted ConfigMap's value is in the data directory"
    );
    ensure!(
        !found_in(&data, secret.as_bytes())? && !found_in(&data, b64.as_bytes())?,
        "a Secret's value is in the data directory"
    );

    // Rotation: the new key first, the old one still there for reading.
    std::fs::write(&cfg, config(&[("k2", K2), ("k1", K1)]))?;
    server.restart()?;
    ensure!(secret_value(&server, "s1")? == secret);
    create_secret(&server, "s2", "second")?;
    // Every Secret written again, now with the new key (Kubernetes' documented step).
    let all = server.kubectl_ok(&["get", "secrets", "-n", "default", "-o", "json"])?;
    let out = server.kubectl_stdin(&["replace", "-f", "-"], &all)?;
    ensure!(out.success(), "replace: {}", out.stderr);
    // The old key removed: everything still reads.
    std::fs::write(&cfg, config(&[("k2", K2)]))?;
    server.restart()?;
    ensure!(secret_value(&server, "s1")? == secret);
    ensure!(secret_value(&server, "s2")? == "second");
    Ok(())
}

/// Rotation across logical clusters with `kplane storage rewrite`: every Secret of every
/// cluster is written under the new key, so the old key can go.
#[test]
fn kplane_storage_rewrite_rotates_every_clusters_secrets() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("k1", K1)]))?;
    let mut server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--encryption-provider-config")
            .arg(&cfg),
    )?;
    server.create_workspace("root:team")?;
    let team = server.kubectl_for("root:team")?;
    create_secret(&server, "s1", "root-secret")?;
    team.ok(&[
        "create",
        "secret",
        "generic",
        "t1",
        "-n",
        "default",
        "--from-literal=password=team-secret",
    ])?;

    std::fs::write(&cfg, config(&[("k2", K2), ("k1", K1)]))?;
    server.restart()?;
    let out = std::process::Command::new(kplane_e2e::kplane_bin()?)
        .args([
            "storage",
            "rewrite",
            "--resource",
            "secrets",
            "--chunk",
            "1",
        ])
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "rewrite: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rewritten: u64 = stdout
        .strip_prefix("rewrote ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("unexpected output {stdout}"))?;
    ensure!(
        rewritten >= 2 && stdout.contains("secrets in 2 logical clusters"),
        "{stdout}"
    );

    // The old key removed: both clusters' Secrets still read (they would be a 500 had
    // either been left under k1).
    std::fs::write(&cfg, config(&[("k2", K2)]))?;
    server.restart()?;
    ensure!(secret_value(&server, "s1")? == "root-secret");
    let team = server.kubectl_for("root:team")?;
    let b64 = team.ok(&[
        "get",
        "secret",
        "t1",
        "-n",
        "default",
        "-o",
        "jsonpath={.data.password}",
    ])?;
    ensure!(
        base64::engine::general_purpose::STANDARD.decode(b64.trim())? == b"team-secret",
        "the team's Secret reads {b64}"
    );
    // An unknown resource is a clear error.
    let out = std::process::Command::new(kplane_e2e::kplane_bin()?)
        .args([
            "storage",
            "rewrite",
            "--resource",
            "widgets.nowhere.example",
        ])
        .arg("--kubeconfig")
        .arg(server.kubeconfig())
        .output()?;
    ensure!(!out.status.success());
    ensure!(
        String::from_utf8_lossy(&out.stderr)
            .contains("API group \"nowhere.example\" is not served"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn a_bad_encryption_configuration_stops_the_server_with_its_fault() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("k1", "c2hvcnQ=")]))?;
    let out = std::process::Command::new(kplane_e2e::kplane_bin()?)
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--bind", "127.0.0.1:0", "--encryption-provider-config"])
        .arg(&cfg)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "started with a bad configuration");
    ensure!(
        stderr.contains("resources[0].providers[0].aesgcm.keys[0].secret")
            && stderr.contains("got 5, expected one of [16, 24, 32]"),
        "{stderr}"
    );
    Ok(())
}

/// On PostgreSQL: a dump of the database holds no Secret value (but the ConfigMap's).
#[test]
fn a_postgres_dump_holds_no_secret_value() -> Result<()> {
    let pg = crate::postgres::pg_server();
    let url = pg.create_database();
    let dir = tempfile::tempdir()?;
    let cfg = dir.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("k1", K1)]))?;
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--storage")
            .arg(&url)
            .arg("--encryption-provider-config")
            .arg(&cfg),
    )?;
    let secret = "marker-pg-secret-5e21";
    let plain_cm = "marker-pg-configmap-9a07";
    write_markers(&server, secret, plain_cm)?;
    let bindir = kplane_storage::testing::postgres::bindir()
        .ok_or_else(|| anyhow::anyhow!("no PostgreSQL binaries"))?;
    let dump = std::process::Command::new(bindir.join("pg_dump"))
        .arg("--dbname")
        .arg(&url)
        .output()?;
    ensure!(
        dump.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let text = dump.stdout;
    // Values are `bytea`, which a dump writes in hex: look for both forms.
    let has = |needle: &[u8]| {
        let hex: String = needle.iter().map(|b| format!("{b:02x}")).collect();
        [needle, hex.as_bytes()]
            .iter()
            .any(|n| text.windows(n.len()).any(|w| w == *n))
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
    ensure!(
        has(plain_cm.as_bytes()),
        "the dump holds the ConfigMap's value"
    );
    ensure!(
        !has(secret.as_bytes()) && !has(b64.as_bytes()),
        "the dump holds the Secret's value"
    );
    Ok(())
}
