//! Server-side apply with kubectl: create-on-apply, managedFields, a conflict between two
//! managers, `--force-conflicts`, and removal of fields a manager stops applying.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

fn cm(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n{data}")
}

#[test]
fn server_side_apply_tracks_owners_conflicts_and_removals() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(
        &["apply", "--server-side", "-f", "-"],
        &cm("  a: \"1\"\n  b: \"2\"\n"),
    )?;
    ensure!(
        out.success() && out.stdout.contains("serverside-applied"),
        "{out:?}"
    );
    let mf = server.kubectl_ok(&[
        "get",
        "cm",
        "ssa",
        "-o",
        "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}",
    ])?;
    ensure!(mf.trim() == "kubectl Apply", "managedFields: {mf}");

    // Another manager changing an owned field conflicts, naming the owner and the field.
    let other = cm("  a: \"other\"\n");
    let out = server.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &other,
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains("conflict with \"kubectl\"")
            && out.stderr.contains(".data.a"),
        "{out:?}"
    );
    let out = server.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &other,
    )?;
    ensure!(out.success(), "{out:?}");

    // kubectl stops applying b (it owned it alone: removed) and a (now owned by other: kept).
    let out = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &cm("  c: \"3\"\n"))?;
    ensure!(out.success(), "{out:?}");
    let data = server.kubectl_ok(&["get", "cm", "ssa", "-o", "jsonpath={.data}"])?;
    ensure!(
        data.trim() == r#"{"a":"other","c":"3"}"#,
        "data after the third apply: {data}"
    );
    Ok(())
}

#[test]
fn apply_requires_a_field_manager() -> Result<()> {
    let server = KplaneServer::start()?;
    // kubectl always sends a field manager; ask the API directly without one.
    let (_, body) = curl_patch(
        &server,
        "application/apply-patch+yaml",
        "x",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}",
    )?;
    ensure!(
        body.contains("\"code\":422")
            && body.contains("fieldManager: Required value: is required for apply patch"),
        "{body}"
    );
    Ok(())
}

/// `manager/operation` of every managedFields entry of `configmap/<name>`.
fn managers(server: &KplaneServer, name: &str) -> Result<Vec<String>> {
    let out = server.kubectl_ok(&[
        "get",
        "cm",
        name,
        "-o",
        r#"jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}{"\n"}{end}"#,
    ])?;
    Ok(out.lines().map(str::to_string).collect())
}

/// The field set one manager's entry owns, as JSON text.
fn owned(server: &KplaneServer, name: &str, manager: &str) -> Result<String> {
    server.kubectl_ok(&[
        "get",
        "cm",
        name,
        "-o",
        &format!("jsonpath={{.metadata.managedFields[?(@.manager==\"{manager}\")].fieldsV1}}"),
    ])
}

#[test]
fn every_write_records_its_manager_as_an_update_entry() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "mf", "--from-literal=a=1"])?;
    ensure!(
        managers(&server, "mf")? == ["kubectl-create/Update"],
        "after create: {:?}",
        managers(&server, "mf")?
    );
    ensure!(owned(&server, "mf", "kubectl-create")?.contains(r#""f:a""#));

    server.kubectl_ok(&["label", "cm", "mf", "env=dev"])?;
    server.kubectl_ok(&["label", "--overwrite", "cm", "mf", "env=prod"])?;
    server.kubectl_ok(&[
        "patch",
        "cm",
        "mf",
        "--type=merge",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ])?;
    server.kubectl_ok(&[
        "patch",
        "cm",
        "mf",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/data/c","value":"3"}]"#,
    ])?;
    server.kubectl_ok(&[
        "patch",
        "cm",
        "mf",
        "--type=strategic",
        "-p",
        r#"{"data":{"d":"4"}}"#,
    ])?;
    let out = server.kubectl_root().run_with(
        &["edit", "configmap", "mf"],
        None,
        &[("KUBE_EDITOR", "sed -i s/prod/edited/")],
    )?;
    ensure!(out.success(), "edit: {out:?}");

    let all = managers(&server, "mf")?;
    for want in [
        "kubectl-create/Update",
        "kubectl-label/Update",
        "kubectl-patch/Update",
        "kubectl-edit/Update",
    ] {
        ensure!(all.iter().any(|m| m == want), "{want} missing from {all:?}");
    }
    // Each patch's fields are owned by kubectl-patch; the label moved from kubectl-label
    // to kubectl-edit when edit changed its value.
    let patch = owned(&server, "mf", "kubectl-patch")?;
    for f in [r#""f:b""#, r#""f:c""#, r#""f:d""#] {
        ensure!(patch.contains(f), "kubectl-patch owns {patch}");
    }
    ensure!(owned(&server, "mf", "kubectl-edit")?.contains(r#""f:env""#));
    ensure!(!owned(&server, "mf", "kubectl-label")?.contains(r#""f:env""#));
    let data = server.kubectl_ok(&["get", "cm", "mf", "-o", "jsonpath={.data}"])?;
    ensure!(
        data.trim() == r#"{"a":"1","b":"2","c":"3","d":"4"}"#,
        "{data}"
    );

    // A write that changes nothing records nothing (and makes no new revision).
    let rv = server.kubectl_ok(&[
        "get",
        "cm",
        "mf",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ])?;
    server.kubectl_ok(&[
        "patch",
        "cm",
        "mf",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"1"}}"#,
    ])?;
    let rv2 = server.kubectl_ok(&[
        "get",
        "cm",
        "mf",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ])?;
    ensure!(rv == rv2, "a no-op patch wrote {rv} -> {rv2}");

    // Server-side apply of a field an Update manager owns conflicts with that manager.
    let out = server.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=deployer", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mf\n  namespace: default\ndata:\n  b: \"x\"\n",
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains("conflict with \"kubectl-patch\"")
            && out.stderr.contains(".data.b"),
        "{out:?}"
    );
    Ok(())
}

#[test]
fn client_side_apply_three_times_removes_what_the_manifest_dropped() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest = |labels: &str, data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  labels:\n{labels}data:\n{data}")
    };
    let first = manifest(
        "    app: web\n    tier: front\n",
        "  a: \"1\"\n  b: \"2\"\n  c: \"3\"\n",
    );
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &first)?;
    ensure!(out.success() && out.stdout.contains("created"), "{out:?}");
    // Somebody else adds a key; client-side apply must leave it alone.
    server.kubectl_ok(&[
        "patch",
        "cm",
        "csa",
        "--type=merge",
        "-p",
        r#"{"data":{"mine":"x"}}"#,
    ])?;
    let second = manifest("    app: web\n", "  a: \"1\"\n  b: \"2\"\n");
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &second)?;
    ensure!(
        out.success() && out.stdout.contains("configured"),
        "{out:?}"
    );
    let third = manifest("    app: api\n", "  a: \"10\"\n");
    let out = server.kubectl_stdin(&["apply", "-f", "-"], &third)?;
    ensure!(
        out.success() && out.stdout.contains("configured"),
        "{out:?}"
    );

    let data = server.kubectl_ok(&["get", "cm", "csa", "-o", "jsonpath={.data}"])?;
    ensure!(data.trim() == r#"{"a":"10","mine":"x"}"#, "data: {data}");
    let labels = server.kubectl_ok(&["get", "cm", "csa", "-o", "jsonpath={.metadata.labels}"])?;
    ensure!(labels.trim() == r#"{"app":"api"}"#, "labels: {labels}");
    let all = managers(&server, "csa")?;
    ensure!(
        all.iter().any(|m| m == "kubectl-client-side-apply/Update"),
        "{all:?}"
    );
    ensure!(owned(&server, "csa", "kubectl-client-side-apply")?.contains(r#""f:a""#));
    Ok(())
}

#[test]
fn server_side_apply_takes_over_from_client_side_apply() -> Result<()> {
    let server = KplaneServer::start()?;
    let cfg = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: up\n  namespace: default\ndata:\n{data}")
    };
    server.kubectl_stdin(&["apply", "-f", "-"], &cfg("  a: \"1\"\n  b: \"2\"\n"))?;
    ensure!(managers(&server, "up")? == ["kubectl-client-side-apply/Update"]);
    // kubectl migrates the client-side owner to its server-side manager first, so fields the
    // manifest no longer has are removed, not orphaned.
    let out = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &cfg("  a: \"1\"\n"))?;
    ensure!(out.success(), "{out:?}");
    let data = server.kubectl_ok(&["get", "cm", "up", "-o", "jsonpath={.data}"])?;
    ensure!(data.trim() == r#"{"a":"1"}"#, "data: {data}");
    // As on Kubernetes: kubectl's upgrade folds the client-side owner into `kubectl`; the
    // annotation kubectl keeps up to date is applied by `kubectl-last-applied`.
    let all = managers(&server, "up")?;
    ensure!(
        all.iter().any(|m| m == "kubectl/Apply")
            && !all
                .iter()
                .any(|m| m.starts_with("kubectl-client-side-apply")),
        "managers after the upgrade: {all:?}"
    );
    let la = owned(&server, "up", "kubectl-last-applied")?;
    ensure!(
        !la.contains("f:data") && la.contains("last-applied-configuration"),
        "kubectl-last-applied owns {la}"
    );
    Ok(())
}

/// `curl -X PATCH` of `configmaps/<name>` with `content_type`; returns (status line and
/// headers, body).
fn curl_patch(
    server: &KplaneServer,
    content_type: &str,
    name_and_query: &str,
    body: &str,
) -> Result<(String, String)> {
    let url = format!(
        "{}/api/v1/namespaces/default/configmaps/{name_and_query}",
        server.base_url()
    );
    let out = std::process::Command::new("curl")
        .args(["-sk", "-D", "-", "-X", "PATCH", "-H"])
        .arg(format!("Content-Type: {content_type}"))
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token()))
        .args(["--data-binary", body])
        .arg(url)
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.to_string(), body.to_string()))
}

/// An apply patch of `configmap/fv` as manager `t`.
fn curl_apply(server: &KplaneServer, query: &str, body: &str) -> Result<(String, String)> {
    let target = format!("fv?fieldManager=t{query}");
    curl_patch(server, "application/apply-patch+yaml", &target, body)
}

#[test]
fn apply_field_validation_for_undeclared_and_duplicate_fields() -> Result<()> {
    let server = KplaneServer::start()?;
    // An undeclared field fails the apply whatever fieldValidation says, as upstream does.
    let (head, body) = curl_apply(
        &server,
        "&fieldValidation=Ignore",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fv\nspec:\n  x: 1\n",
    )?;
    ensure!(
        head.starts_with("HTTP/2 500")
            && body.contains("failed to create typed patch object (default/fv; /v1, Kind=ConfigMap): .spec: field not declared in schema"),
        "{head}\n{body}"
    );
    ensure!(
        !server.kubectl(&["get", "cm", "fv"])?.success(),
        "a failed apply created the object"
    );

    let dup =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fv\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let (head, body) = curl_apply(&server, "&fieldValidation=Strict", dup)?;
    ensure!(
        head.starts_with("HTTP/2 400") && body.contains("error strict decoding YAML"),
        "{head}\n{body}"
    );
    ensure!(
        !server.kubectl(&["get", "cm", "fv"])?.success(),
        "a strict failure created the object"
    );
    let (head, _) = curl_apply(&server, "&fieldValidation=Warn", dup)?;
    ensure!(
        head.starts_with("HTTP/2 201")
            && head.contains(r#"299 - "line 7: key \"a\" already set in map""#),
        "{head}"
    );
    let data = server.kubectl_ok(&["get", "cm", "fv", "-o", "jsonpath={.data.a}"])?;
    ensure!(data.trim() == "2", "the last duplicate wins: {data}");
    let json_dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv"},"data":{"b":"1","b":"2"}}"#;
    let (head, _) = curl_apply(&server, "&fieldValidation=Ignore", json_dup)?;
    ensure!(
        head.starts_with("HTTP/2 200") && !head.to_ascii_lowercase().contains("warning"),
        "{head}"
    );
    let (head, body) = curl_apply(&server, "&fieldValidation=Strict", json_dup)?;
    ensure!(
        head.starts_with("HTTP/2 400") && body.contains(r#"key \"b\" already set in map"#),
        "{head}\n{body}"
    );
    Ok(())
}

/// Duplicate keys of a map list: upstream's typed conversion of the apply configuration
/// fails, and kube-apiserver answers 500 without a reason, naming the object as its field
/// manager does (`failed to create typed patch object (<ns>/<name>; <gvk>): ...`), as it
/// does for an undeclared field. Found applying a crossplane e2e manifest with two
/// pipeline steps of the same name; shown here on a Job's containers.
#[test]
fn apply_with_duplicate_map_list_keys_names_the_object() -> Result<()> {
    let server = KplaneServer::start()?;
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: dup\n  namespace: default\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - {name: a, image: x}\n      - {name: a, image: y}\n";
    let out = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], job)?;
    ensure!(
        !out.success()
            && out.stderr.contains(r#"Error from server: failed to create typed patch object (default/dup; batch/v1, Kind=Job): .spec.template.spec.containers: duplicate entries for key [name="a"]"#),
        "{}",
        out.stderr
    );
    ensure!(
        !server.kubectl(&["get", "job", "dup"])?.success(),
        "a failed apply created the object"
    );
    Ok(())
}

/// A merge patch of `configmap/pv`.
fn curl_merge_patch(server: &KplaneServer, query: &str, body: &str) -> Result<(String, String)> {
    curl_patch(
        server,
        "application/merge-patch+json",
        &format!("pv?{query}"),
        body,
    )
}

#[test]
fn patch_field_validation_for_unknown_and_duplicate_fields() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "pv", "--from-literal=a=1"])?;
    // Strict: an unknown field fails the patch as upstream words it (422 on the field
    // "patch", the patched object as the value) and changes nothing.
    let unknown = r#"{"spec":{"x":1},"data":{"a":"2"}}"#;
    let (head, body) = curl_merge_patch(&server, "fieldValidation=Strict", unknown)?;
    ensure!(
        head.starts_with("HTTP/2 422")
            && body.contains(r#"\"\" is invalid: patch: Invalid value: "#)
            && body.contains(r#"strict decoding error: unknown field \"spec\""#),
        "{head}\n{body}"
    );
    let data = server.kubectl_ok(&["get", "cm", "pv", "-o", "jsonpath={.data.a}"])?;
    ensure!(
        data.trim() == "1",
        "a refused patch changed the object: {data}"
    );
    // kubectl patch leaves fieldValidation at its default (Warn): a warning, and the
    // declared part of the patch applies.
    let out = server.kubectl(&["patch", "cm", "pv", "--type=merge", "-p", unknown])?;
    ensure!(
        out.success() && out.stderr.contains(r#"Warning: unknown field "spec""#),
        "{out:?}"
    );
    let data = server.kubectl_ok(&["get", "cm", "pv", "-o", "jsonpath={.data.a}"])?;
    ensure!(data.trim() == "2", "{data}");

    let dup = r#"{"data":{"b":"1","b":"2"}}"#;
    let (head, body) = curl_merge_patch(&server, "fieldValidation=Strict", dup)?;
    ensure!(
        head.starts_with("HTTP/2 422")
            && body.contains(r#"strict decoding error: duplicate field \"data.b\""#),
        "{head}\n{body}"
    );
    let (head, _) = curl_merge_patch(&server, "fieldValidation=Warn", dup)?;
    ensure!(
        head.starts_with("HTTP/2 200") && head.contains(r#"299 - "duplicate field \"data.b\"""#),
        "{head}"
    );
    let (head, _) = curl_merge_patch(
        &server,
        "fieldValidation=Ignore",
        r#"{"data":{"c":"1","c":"3"},"bogus":1}"#,
    )?;
    ensure!(
        head.starts_with("HTTP/2 200") && !head.contains("299"),
        "{head}"
    );
    let data = server.kubectl_ok(&["get", "cm", "pv", "-o", "jsonpath={.data}"])?;
    ensure!(data.trim() == r#"{"a":"2","b":"2","c":"3"}"#, "{data}");
    Ok(())
}
