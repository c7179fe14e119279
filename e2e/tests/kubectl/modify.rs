//! Changing objects with kubectl: apply, edit, label, annotate, patch.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

use super::get_json;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn applied_manifest(data: &[(&str, &str)]) -> String {
    let mut text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n".to_owned();
    for (k, v) in data {
        text.push_str(&format!("  {k}: \"{v}\"\n"));
    }
    text
}

fn last_applied(cm: &Value) -> Result<Value> {
    let text = cm["metadata"]["annotations"][LAST_APPLIED]
        .as_str()
        .with_context(|| format!("{LAST_APPLIED} annotation missing: {cm}"))?;
    serde_json::from_str(text).context("last-applied annotation is not JSON")
}

#[test]
fn apply_three_times_removes_keys_dropped_from_the_manifest() -> Result<()> {
    let server = KplaneServer::start()?;
    let steps: [(&[(&str, &str)], &str); 3] = [
        (&[("a", "1"), ("b", "2"), ("c", "3")], "created"),
        (&[("a", "1"), ("b", "2")], "configured"),
        (&[("a", "10")], "configured"),
    ];
    for (data, verb) in steps {
        let manifest = applied_manifest(data);
        let out = server.kubectl_stdin(&["apply", "-f", "-"], &manifest)?;
        ensure!(out.success(), "apply failed: {}", out.stderr);
        assert_eq!(out.stdout.trim(), format!("configmap/applied {verb}"));

        let cm = get_json(&server, &["get", "configmap", "applied"])?;
        let want: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        assert_eq!(
            cm["data"],
            Value::Object(want.clone()),
            "after applying {data:?}"
        );
        assert_eq!(last_applied(&cm)?["data"], Value::Object(want));
    }
    Ok(())
}

#[test]
fn edit_with_a_non_interactive_editor_updates_the_object() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "editme",
        "--from-literal=color=value-before",
    ])?;
    let out = server.kubectl_root().run_with(
        &["edit", "configmap", "editme"],
        None,
        &[("KUBE_EDITOR", "sed -i s/value-before/value-after/")],
    )?;
    ensure!(out.success(), "edit failed: {}\n{}", out.stdout, out.stderr);
    assert_eq!(out.stdout.trim(), "configmap/editme edited");
    let cm = get_json(&server, &["get", "configmap", "editme"])?;
    assert_eq!(cm["data"]["color"], "value-after");
    Ok(())
}

#[test]
fn label_refuses_to_overwrite_without_flag_and_overwrites_with_it() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "lbl"])?;
    let out = server.kubectl_ok(&["label", "configmap", "lbl", "env=dev"])?;
    assert_eq!(out.trim(), "configmap/lbl labeled");

    let refused = server.kubectl(&["label", "configmap", "lbl", "env=prod"])?;
    ensure!(!refused.success(), "relabel without --overwrite succeeded");
    ensure!(
        refused.stderr.contains("already has a value (dev)"),
        "unexpected error: {}",
        refused.stderr
    );
    let cm = get_json(&server, &["get", "configmap", "lbl"])?;
    assert_eq!(cm["metadata"]["labels"]["env"], "dev");

    server.kubectl_ok(&["label", "configmap", "lbl", "env=prod", "--overwrite"])?;
    let cm = get_json(&server, &["get", "configmap", "lbl"])?;
    assert_eq!(cm["metadata"]["labels"]["env"], "prod");
    let selected = server.kubectl_ok(&["get", "configmaps", "-l", "env=prod", "-o", "name"])?;
    assert_eq!(selected.trim(), "configmap/lbl");

    let out = server.kubectl_ok(&["label", "configmap", "lbl", "env-"])?;
    assert_eq!(out.trim(), "configmap/lbl unlabeled");
    let cm = get_json(&server, &["get", "configmap", "lbl"])?;
    ensure!(
        cm["metadata"]["labels"].get("env").is_none(),
        "label not removed: {cm}"
    );
    Ok(())
}

#[test]
fn annotate_adds_overwrites_and_removes_annotations() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "ann"])?;
    let out = server.kubectl_ok(&["annotate", "configmap", "ann", "owner=team-a"])?;
    assert_eq!(out.trim(), "configmap/ann annotated");
    let cm = get_json(&server, &["get", "configmap", "ann"])?;
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-a");

    let refused = server.kubectl(&["annotate", "configmap", "ann", "owner=team-b"])?;
    ensure!(
        !refused.success(),
        "re-annotate without --overwrite succeeded"
    );
    server.kubectl_ok(&[
        "annotate",
        "configmap",
        "ann",
        "owner=team-b",
        "--overwrite",
    ])?;
    let cm = get_json(&server, &["get", "configmap", "ann"])?;
    assert_eq!(cm["metadata"]["annotations"]["owner"], "team-b");

    server.kubectl_ok(&["annotate", "configmap", "ann", "owner-"])?;
    let cm = get_json(&server, &["get", "configmap", "ann"])?;
    ensure!(
        cm["metadata"]["annotations"].get("owner").is_none(),
        "annotation not removed: {cm}"
    );
    Ok(())
}

#[test]
fn patch_merge_json_and_strategic_each_apply_their_semantics() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  finalizers:\n  \
                    - example.com/a\ndata:\n  keep: \"1\"\n  drop: \"2\"\n";
    server.kubectl_stdin(&["create", "-f", "-"], manifest)?;
    let patch = |kind: &str, body: &str| -> Result<Value> {
        let out = server.kubectl_ok(&["patch", "configmap", "p", "--type", kind, "-p", body])?;
        assert_eq!(out.trim(), "configmap/p patched", "{kind} patch {body}");
        get_json(&server, &["get", "configmap", "p"])
    };

    // Merge patch: null deletes a key.
    let cm = patch("merge", r#"{"data":{"drop":null,"added":"3"}}"#)?;
    assert_eq!(cm["data"], json!({"keep": "1", "added": "3"}));

    // JSON patch: explicit operations.
    let cm = patch(
        "json",
        r#"[{"op":"replace","path":"/data/keep","value":"one"},{"op":"add","path":"/data/j","value":"x"},{"op":"remove","path":"/data/added"}]"#,
    )?;
    assert_eq!(cm["data"], json!({"keep": "one", "j": "x"}));

    // Strategic merge patch: metadata.finalizers has patchStrategy=merge, so lists are merged ...
    let cm = patch(
        "strategic",
        r#"{"metadata":{"finalizers":["example.com/b"]}}"#,
    )?;
    // Upstream order (apimachinery strategicpatch normalizeElementOrder ->
    // mergeSortedSlice(serverOnly, patch, ...)): an item the live list does not order goes
    // before the server-only items.
    assert_eq!(
        cm["metadata"]["finalizers"],
        json!(["example.com/b", "example.com/a"])
    );
    // ... while a JSON merge patch replaces the list wholesale.
    let cm = patch("merge", r#"{"metadata":{"finalizers":["example.com/c"]}}"#)?;
    assert_eq!(cm["metadata"]["finalizers"], json!(["example.com/c"]));

    // Strategic is kubectl's default for built-in kinds.
    let out = server.kubectl_ok(&["patch", "configmap", "p", "-p", r#"{"data":{"s":"3"}}"#])?;
    assert_eq!(out.trim(), "configmap/p patched");
    let cm = get_json(&server, &["get", "configmap", "p"])?;
    assert_eq!(cm["data"], json!({"keep": "one", "j": "x", "s": "3"}));
    Ok(())
}
