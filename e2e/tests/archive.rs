//! `kplane export` and `kplane import` (issue 16) as a user runs them: the real binary
//! against real servers. A cluster exported while a writer keeps writing is imported
//! into a second server with everything that makes objects themselves (uids, status,
//! owner references, finalizers, managedFields) intact; `--as` and `--replace`; a watch
//! on a replaced cluster gets 410; every kind of damaged archive, and one of a newer
//! format, is refused with nothing imported. (Server-level behaviour of the endpoints,
//! such as a crash in the middle of an import, is tested with the endpoints.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::configmap;
use kplane_e2e::{kplane_bin, KplaneServer};

use crate::ws_cli::{run, Run};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::ResourceExt as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Runs `kplane ARGS` with `server`'s admin kubeconfig, in `dir`.
fn kplane(server: &KplaneServer, dir: &Path, args: &[&str]) -> Result<Run> {
    kplane_with(server.kubeconfig(), dir, args)
}

/// Runs `kplane ARGS` with `kubeconfig`, in `dir`.
fn kplane_with(kubeconfig: &Path, dir: &Path, args: &[&str]) -> Result<Run> {
    let mut cmd = Command::new(kplane_bin()?);
    cmd.args(args)
        .current_dir(dir)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", dir);
    run(cmd, &dir.join("cli-run"))
}

/// [`kplane`] on a blocking thread (the tests' kube-rs writers keep running meanwhile).
async fn kplane_async(server: &Arc<KplaneServer>, dir: &Path, args: &[&str]) -> Result<Run> {
    let (server, dir) = (server.clone(), dir.to_owned());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        kplane(&server, &dir, &args)
    })
    .await?
}

/// The revision `kplane export` reports: `(... objects, revision R)`.
fn exported_revision(stdout: &str) -> Result<u64> {
    let rest = stdout
        .split("revision ")
        .nth(1)
        .with_context(|| format!("no revision in {stdout:?}"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Ok(digits.parse()?)
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}, "note": {"type": "string"}}}}}}}]}
}"#;

/// Fills `cluster` with objects that carry what an import must keep: a CRD and a custom
/// resource with status, an owner and a dependent, a finalizer, and `n` plain ConfigMaps.
fn fill(server: &KplaneServer, cluster: &str, n: usize) -> Result<()> {
    let k = server.kubectl_for(cluster)?;
    let out = k.run_stdin(&["apply", "-f", "-"], WIDGET_CRD)?;
    ensure!(out.success(), "{}", out.stderr);
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ])?;
    let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}"#;
    let mut created = None;
    for _ in 0..100 {
        let out = k.run_stdin(&["create", "-f", "-"], widget)?;
        if out.success() {
            created = Some(());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    created.context("creating the Widget")?;
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true,"note":"from the source"}}"#,
    ])?;
    k.ok(&["create", "configmap", "owner", "--from-literal=role=owner"])?;
    let uid = k.ok(&[
        "get",
        "configmap",
        "owner",
        "-o",
        "jsonpath={.metadata.uid}",
    ])?;
    let dependent = format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"dependent",
            "ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"{uid}"}}]}},
            "stringData":{{"k":"v"}}}}"#
    );
    let out = k.run_stdin(&["create", "-f", "-"], &dependent)?;
    ensure!(out.success(), "{}", out.stderr);
    let held = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/keep"]}}"#;
    let out = k.run_stdin(&["create", "-f", "-"], held)?;
    ensure!(out.success(), "{}", out.stderr);
    for i in 0..n {
        k.ok(&[
            "create",
            "configmap",
            &format!("base-{i:04}"),
            "--from-literal=i=x",
        ])?;
    }
    Ok(())
}

/// Items of `kubectl get KINDS -o json` by `kind/name`, without resourceVersion (the
/// target assigns its own) and with managedFields kept.
fn objects(server: &KplaneServer, cluster: &str, kinds: &str) -> Result<BTreeMap<String, Value>> {
    let out =
        server
            .kubectl_for(cluster)?
            .ok(&["get", kinds, "-o", "json", "--show-managed-fields"])?;
    let list: Value = serde_json::from_str(&out)?;
    let mut by_name = BTreeMap::new();
    for mut item in list["items"].as_array().cloned().unwrap_or_default() {
        if let Some(meta) = item["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let key = format!(
            "{}/{}",
            item["kind"].as_str().unwrap_or(""),
            item["metadata"]["name"].as_str().unwrap_or("")
        );
        by_name.insert(key, item);
    }
    Ok(by_name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_under_writes_imports_exactly_into_another_server() -> Result<()> {
    let source = Arc::new(KplaneServer::start()?);
    let target = Arc::new(KplaneServer::start()?);
    let dir = tempfile::tempdir()?;
    source.create_workspace("root:shop")?;
    fill(&source, "root:shop", 300)?;

    // A writer that keeps creating ConfigMaps through the whole export.
    let cms: Api<ConfigMap> = Api::namespaced(source.client_for("root:shop").await?, "default");
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (cms, stop, written) = (cms.clone(), stop.clone(), written.clone());
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let cm = configmap(&format!("w-{i:06}"), &[("i", "x")]);
                cms.create(&PostParams::default(), &cm).await?;
                i += 1;
                written.store(i, Ordering::SeqCst);
            }
            anyhow::Ok(i)
        })
    };
    while written.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let export = kplane_async(
        &source,
        dir.path(),
        &["export", "root:shop", "-o", "shop.kpa"],
    )
    .await?
    .ok()?;
    let during = written.load(Ordering::SeqCst);
    // A few more after the export ended, so the snapshot has a "later" to leave out.
    while written.load(Ordering::SeqCst) < during + 5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let total = writer.await??;
    let revision = exported_revision(&export)?;
    ensure!(!dir.path().join("shop.kpa.tmp").exists());

    // The archive holds exactly the writer's objects created at or before its revision.
    let mut expected_w = BTreeSet::new();
    for cm in cms.list(&ListParams::default()).await?.items {
        let rv: u64 = cm.resource_version().unwrap_or_default().parse()?;
        if cm.name_any().starts_with("w-") && rv <= revision {
            expected_w.insert(cm.name_any());
        }
    }
    ensure!(
        expected_w.len() < total,
        "every write was before the snapshot"
    );

    let import = kplane_async(&target, dir.path(), &["import", "shop.kpa"])
        .await?
        .ok()?;
    ensure!(
        import.starts_with("imported shop.kpa as root:shop: "),
        "{import}"
    );

    // kube-rs: the same ConfigMaps, with the same uids and creation times.
    let imported: Api<ConfigMap> =
        Api::namespaced(target.client_for("root:shop").await?, "default");
    let got: BTreeMap<String, ConfigMap> = imported
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|cm| (cm.name_any(), cm))
        .collect();
    let got_w: BTreeSet<String> = got
        .keys()
        .filter(|n| n.starts_with("w-"))
        .cloned()
        .collect();
    ensure!(
        got_w == expected_w,
        "imported {} writer objects, expected {}",
        got_w.len(),
        expected_w.len()
    );
    for (name, cm) in &got {
        let original = cms.get(name).await?;
        ensure!(cm.uid() == original.uid(), "{name}: uid changed");
        ensure!(
            cm.creation_timestamp() == original.creation_timestamp(),
            "{name}: creationTimestamp changed"
        );
    }

    // kubectl: the special objects are identical but for resourceVersion.
    let kinds = "widgets,secrets,configmaps";
    let before = objects(&source, "root:shop", kinds)?;
    let after = objects(&target, "root:shop", kinds)?;
    for key in [
        "Widget/w1",
        "Secret/dependent",
        "ConfigMap/owner",
        "ConfigMap/held",
    ] {
        let (b, a) = (before.get(key), after.get(key));
        ensure!(
            b.is_some() && a == b,
            "{key} differs:\nsource {b:?}\ntarget {a:?}"
        );
    }
    let w1 = &after["Widget/w1"];
    ensure!(w1["status"]["note"] == "from the source", "{w1}");
    ensure!(after["Secret/dependent"]["metadata"]["ownerReferences"][0]["name"] == "owner");
    ensure!(after["ConfigMap/held"]["metadata"]["finalizers"][0] == "example.com/keep");
    ensure!(w1["metadata"]["managedFields"]
        .as_array()
        .is_some_and(|m| !m.is_empty()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_as_another_path_and_replace_with_410_for_old_watches() -> Result<()> {
    let server = Arc::new(KplaneServer::start()?);
    let dir = tempfile::tempdir()?;
    server.create_workspace("root:shop")?;
    fill(&server, "root:shop", 5)?;
    kplane_async(
        &server,
        dir.path(),
        &["export", "root:shop", "-o", "v1.kpa"],
    )
    .await?
    .ok()?;

    // --as: a copy next to the original, through the kubectl plugin's spelling too.
    kplane_async(
        &server,
        dir.path(),
        &["ws", "import", "v1.kpa", "--as", "copy"],
    )
    .await?
    .ok()?;
    let original = objects(&server, "root:shop", "configmaps,secrets,widgets")?;
    let copy = objects(&server, "root:copy", "configmaps,secrets,widgets")?;
    ensure!(original == copy, "the copy differs");

    // Into a non-empty path: refused without --replace, and nothing changes.
    let k = server.kubectl_for("root:copy")?;
    k.ok(&["create", "configmap", "added-later"])?;
    kplane_async(
        &server,
        dir.path(),
        &["import", "v1.kpa", "--as", "root:copy"],
    )
    .await?
    .fails_with("already exists")?;
    ensure!(k.run(&["get", "configmap", "added-later"])?.success());

    // A watch from before the replace gets 410 Gone.
    let cms: Api<ConfigMap> = Api::namespaced(server.client_for("root:copy").await?, "default");
    let rv = cms
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("no rv")?;
    let mut watch = cms
        .watch(&WatchParams::default().timeout(120), &rv)
        .await?
        .boxed();
    kplane_async(
        &server,
        dir.path(),
        &["import", "v1.kpa", "--as", "root:copy", "--replace"],
    )
    .await?
    .ok()?;
    ensure!(
        !k.run(&["get", "configmap", "added-later"])?.success(),
        "the replaced content is still there"
    );
    ensure!(objects(&server, "root:copy", "configmaps,secrets,widgets")? == original);
    let gone = loop {
        let event = tokio::time::timeout(Duration::from_secs(60), watch.next())
            .await
            .context("no event on the replaced cluster's watch")?;
        match event {
            Some(Ok(WatchEvent::Error(e))) => break e.code == 410,
            Some(Ok(WatchEvent::Bookmark(_))) => {}
            // The replace's own changes may come first; then the watch must end in a 410.
            Some(Ok(_)) => {}
            Some(Err(e)) => bail!("watch failed: {e}"),
            // Closed: watching again from the old resourceVersion must be a 410.
            None => break resumed_is_gone(&cms, &rv).await?,
        }
    };
    ensure!(gone, "the old watch did not get 410");
    Ok(())
}

/// Whether a watch from `rv` is refused with 410 Gone.
async fn resumed_is_gone(cms: &Api<ConfigMap>, rv: &str) -> Result<bool> {
    match cms.watch(&WatchParams::default().timeout(10), rv).await {
        Err(kube::Error::Api(s)) => Ok(s.code == 410),
        Err(e) => Err(e.into()),
        Ok(stream) => {
            let mut stream = stream.boxed();
            match stream.next().await {
                Some(Ok(WatchEvent::Error(e))) => Ok(e.code == 410),
                other => bail!("a watch from the old resourceVersion went on: {other:?}"),
            }
        }
    }
}

/// The frames of a plain archive (docs/archive-format.md): `(tag, payload)`.
fn frames(plain: &[u8]) -> Result<Vec<(u8, Vec<u8>)>> {
    ensure!(
        plain.starts_with(&kplane_archive::MAGIC),
        "not a plain archive"
    );
    let mut rest = &plain[8..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[1..5].try_into()?) as usize;
        out.push((rest[0], rest[5..5 + len].to_vec()));
        rest = &rest[5 + len + 4..];
    }
    Ok(out)
}

/// Frames back into an archive, each with its CRC-32; with `fix_trailer` the trailer's
/// count and SHA-256 are recomputed for the frames before it.
fn assemble(frames: &[(u8, Vec<u8>)], fix_trailer: bool) -> Vec<u8> {
    let mut out = kplane_archive::MAGIC.to_vec();
    for (tag, payload) in frames {
        let mut payload = payload.clone();
        if *tag == b'T' && fix_trailer {
            let records = frames.iter().filter(|(t, _)| *t == b'R').count() as u64;
            payload = records.to_be_bytes().to_vec();
            payload.extend_from_slice(&Sha256::digest(&out));
        }
        let start = out.len();
        out.push(*tag);
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
        let crc = kplane_archive::crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    out
}

/// A record payload's four strings and value.
fn split_record(payload: &[u8]) -> (Vec<String>, Vec<u8>) {
    let mut rest = payload;
    let mut strings = Vec::new();
    for _ in 0..4 {
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        strings.push(String::from_utf8_lossy(&rest[2..2 + len]).into_owned());
        rest = &rest[2 + len..];
    }
    (strings, rest.to_vec())
}

fn join_record(strings: &[String], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in strings {
        out.extend_from_slice(&(s.len() as u16).to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    out.extend_from_slice(value);
    out
}

/// The index of the record frame of ConfigMap `name`.
fn record_of(frames: &[(u8, Vec<u8>)], name: &str) -> Result<usize> {
    frames
        .iter()
        .position(|(t, p)| {
            *t == b'R' && {
                let (s, _) = split_record(p);
                s[1] == "/configmaps" && s[3] == name
            }
        })
        .with_context(|| format!("no record of ConfigMap {name}"))
}

#[test]
fn damaged_archives_and_newer_formats_are_refused_with_nothing_imported() -> Result<()> {
    let server = KplaneServer::start()?;
    let dir = tempfile::tempdir()?;
    server.create_workspace("root:src")?;
    let k = server.kubectl_for("root:src")?;
    for name in ["a", "b", "c"] {
        k.ok(&["create", "configmap", name, "--from-literal=k=v"])?;
    }
    kplane(
        &server,
        dir.path(),
        &["export", "root:src", "--no-compress", "-o", "good.kpa"],
    )?
    .ok()?;
    let good = std::fs::read(dir.path().join("good.kpa"))?;
    let parsed = frames(&good)?;
    ensure!(
        assemble(&parsed, false) == good,
        "the test's framing disagrees with the archive"
    );
    let b = record_of(&parsed, "b")?;
    let trailer = parsed.len() - 1;

    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut flipped = good.clone();
    let mid = good.len() / 2;
    flipped[mid] ^= 0x04;
    cases.push(("flipped byte", flipped, "corrupt archive: record "));
    cases.push((
        "truncated",
        good[..good.len() - 30].to_vec(),
        "truncated archive",
    ));
    cases.push((
        "missing trailer",
        assemble(&parsed[..trailer], false),
        "truncated archive",
    ));
    let mut tampered = parsed.clone();
    let (strings, value) = split_record(&tampered[b].1);
    let value = String::from_utf8(value)?.replace("\"v\"", "\"w\"");
    tampered[b].1 = join_record(&strings, value.as_bytes());
    cases.push((
        "wrong checksum",
        assemble(&tampered, false),
        "archive checksum mismatch",
    ));
    let mut short = parsed.clone();
    short.remove(b);
    cases.push((
        "a record removed",
        assemble(&short, false),
        "object count mismatch",
    ));
    let mut garbage = good.clone();
    garbage.extend_from_slice(b"\n");
    cases.push((
        "trailing garbage",
        garbage,
        "data follows the archive's trailer",
    ));
    let mut foreign = parsed.clone();
    let (mut strings, value) = split_record(&foreign[b].1);
    strings[0] = "root:other".into();
    foreign[b].1 = join_record(&strings, &value);
    cases.push((
        "another cluster's object",
        assemble(&foreign, true),
        "outside the archive's cluster",
    ));
    let mut not_object = parsed.clone();
    let (strings, _) = split_record(&not_object[b].1);
    not_object[b].1 = join_record(&strings, b"[1]");
    cases.push((
        "a value that is not an object",
        assemble(&not_object, true),
        "is not a JSON object",
    ));
    let mut newer = parsed.clone();
    let mut header: Value = serde_json::from_slice(&newer[0].1)?;
    header["formatVersion"] = 2.into();
    newer[0].1 = serde_json::to_vec(&header)?;
    cases.push((
        "a newer format",
        assemble(&newer, true),
        "archive format version 2 is newer than this kplane supports (1); upgrade kplane",
    ));
    cases.push((
        "not an archive",
        b"apiVersion: v1\nkind: List\n".to_vec(),
        "not a kplane archive",
    ));

    for (i, (what, bytes, want)) in cases.iter().enumerate() {
        let file = format!("bad-{i}.kpa");
        std::fs::write(dir.path().join(&file), bytes)?;
        let run = kplane(
            &server,
            dir.path(),
            &["import", &file, "--as", &format!("root:bad-{i}")],
        )?;
        run.fails_with(want).with_context(|| what.to_string())?;
        ensure!(
            run.stderr.contains("nothing was imported"),
            "{what}: {}",
            run.stderr
        );
    }
    // Nothing new: no workspace, no cluster, and the source as it was.
    let workspaces = server.kubectl_ok(&["get", "workspaces", "-o", "name"])?;
    ensure!(!workspaces.contains("bad-"), "{workspaces}");
    let probe = server
        .kubectl_for("root:bad-0")?
        .run(&["get", "configmaps"])?;
    ensure!(!probe.success(), "root:bad-0 exists: {}", probe.stdout);
    let names = k.ok(&["get", "configmaps", "-o", "name"])?;
    ensure!(names.contains("configmap/b"), "{names}");
    // The good archive still imports (the damage was the only difference).
    kplane(
        &server,
        dir.path(),
        &["import", "good.kpa", "--as", "root:good"],
    )?
    .ok()?;
    let v = server.kubectl_for("root:good")?.ok(&[
        "get",
        "configmap",
        "b",
        "-o",
        "jsonpath={.data.k}",
    ])?;
    ensure!(v == "v", "{v}");
    Ok(())
}

/// `kplane export -o FILE` of a cluster that does not exist fails cleanly, with the
/// server's message and no file.
#[test]
fn a_refused_export_leaves_no_file() -> Result<()> {
    let server = KplaneServer::start()?;
    let dir = tempfile::tempdir()?;
    kplane(&server, dir.path(), &["export", "root:nope", "-o", "x.kpa"])?
        .fails_with("logical cluster \"root:nope\" does not exist")?;
    ensure!(!dir.path().join("x.kpa").exists() && !dir.path().join("x.kpa.tmp").exists());
    Ok(())
}

/// A kubeconfig for `server` whose only credential is a client certificate of `user`
/// (in `groups`) from `kplane certs issue`.
fn certificate_kubeconfig(
    server: &KplaneServer,
    dir: &Path,
    user: &str,
    groups: &[&str],
) -> Result<std::path::PathBuf> {
    let mut cmd = Command::new(kplane_bin()?);
    cmd.args(["certs", "issue", "--user", user, "--data-dir"])
        .arg(server.data_dir())
        .arg("-o")
        .arg(dir)
        .env_remove("KPLANE_DATA_DIR");
    for g in groups {
        cmd.args(["--group", g]);
    }
    let run = cmd.output()?;
    ensure!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, server.ca_pem()?)?;
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": server.server_url(), "certificate-authority": ca}}],
        "users": [{"name": user, "user": {
            "client-certificate": dir.join(format!("{user}.crt")),
            "client-key": dir.join(format!("{user}.key"))}}],
        "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": user}}],
        "current-context": "kplane",
    });
    let path = dir.join(format!("{user}.kubeconfig"));
    std::fs::write(&path, kubeconfig.to_string())?;
    Ok(path)
}

/// The CLI presents the kubeconfig's client certificate (no token anywhere), and the
/// server's authorization decides: an admin group exports and imports, a user without
/// a grant gets the server's 403.
#[test]
fn client_certificates_are_credentials_and_rbac_decides() -> Result<()> {
    let server = KplaneServer::start()?;
    let dir = tempfile::tempdir()?;
    server.create_workspace("root:src")?;
    server
        .kubectl_for("root:src")?
        .ok(&["create", "configmap", "a", "--from-literal=k=v"])?;
    let admin = certificate_kubeconfig(&server, dir.path(), "ops", &["system:masters"])?;
    kplane_with(&admin, dir.path(), &["export", "root:src", "-o", "src.kpa"])?.ok()?;
    kplane_with(
        &admin,
        dir.path(),
        &["import", "src.kpa", "--as", "root:dst"],
    )?
    .ok()?;
    let v = server.kubectl_for("root:dst")?.ok(&[
        "get",
        "configmap",
        "a",
        "-o",
        "jsonpath={.data.k}",
    ])?;
    ensure!(v == "v", "{v}");

    let nobody = certificate_kubeconfig(&server, dir.path(), "nobody", &[])?;
    kplane_with(&nobody, dir.path(), &["export", "root:src", "-o", "no.kpa"])?
        .fails_with("(403 Forbidden)")?;
    ensure!(!dir.path().join("no.kpa").exists() && !dir.path().join("no.kpa.tmp").exists());
    kplane_with(
        &nobody,
        dir.path(),
        &["import", "src.kpa", "--as", "root:other"],
    )?
    .fails_with("(403 Forbidden)")?;
    let workspaces = server.kubectl_ok(&["get", "workspaces", "-o", "name"])?;
    ensure!(!workspaces.contains("other"), "{workspaces}");
    Ok(())
}
