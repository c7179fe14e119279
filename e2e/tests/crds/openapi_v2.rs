//! `/openapi/v2`: what kubectl falls back to when OpenAPI v3 does not know a kind (a custom
//! resource applied in the same file as its CRD, a misspelt `apiVersion`, the items of a
//! `List`), and the document itself: protobuf and JSON, entity tag, CRD versions, and one
//! document per logical cluster.

use std::collections::BTreeSet;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl};
use kplane_openapi::v2::gnostic;
use prost::Message as _;
use serde_json::Value;

use super::WAIT_TIMEOUT;

/// A CRD of `things.example.com` with the given `versions:` entries (YAML, indented by 2).
fn things_crd(versions: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: things, singular: thing, kind: Thing, listKind: ThingList}}
  versions:
{versions}"
    )
}

fn thing_version(name: &str, served: bool, storage: bool) -> String {
    format!(
        "  - name: {name}
    served: {served}
    storage: {storage}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer, description: how big the thing is}}
"
    )
}

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: beside-the-crd, namespace: default}
data: {a: b}
";

const THING: &str = "apiVersion: example.com/v1
kind: Thing
metadata: {name: t1, namespace: default}
spec: {size: 3}
";

/// Writes `yaml` to a file in a fresh temporary directory (kubectl names the file in errors).
fn manifest(yaml: &str) -> Result<(tempfile::TempDir, String)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("all.yaml");
    std::fs::write(&path, yaml)?;
    Ok((dir, path.to_string_lossy().into_owned()))
}

/// The error kubectl printed before `/openapi/v2` was served.
fn assert_no_openapi_error(stderr: &str) -> Result<()> {
    ensure!(
        !stderr.contains("error validating data") && !stderr.contains("openapi"),
        "kubectl failed on OpenAPI: {stderr}"
    );
    Ok(())
}

#[test]
fn apply_of_a_crd_with_its_custom_resource_and_a_configmap_in_one_file() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    let yaml = format!(
        "{}---\n{THING}---\n{CONFIGMAP}",
        things_crd(&thing_version("v1", true, true))
    );
    let (_dir, path) = manifest(&yaml)?;

    // As with kube-apiserver: the CRD and the ConfigMap are applied, the custom resource has
    // no mapping yet.
    let first = k.run(&["apply", "-f", &path])?;
    ensure!(!first.success(), "first apply succeeded: {}", first.stdout);
    assert_no_openapi_error(&first.stderr)?;
    ensure!(
        first.stderr.contains(&format!(
            "resource mapping not found for name: \"t1\" namespace: \"default\" from \"{path}\": \
             no matches for kind \"Thing\" in version \"example.com/v1\""
        )) && first.stderr.contains("ensure CRDs are installed first"),
        "{}",
        first.stderr
    );
    ensure!(
        first
            .stdout
            .contains("customresourcedefinition.apiextensions.k8s.io/things.example.com created")
            && first.stdout.contains("configmap/beside-the-crd created"),
        "{}",
        first.stdout
    );
    k.ok(&["get", "configmap", "beside-the-crd"])?;
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        WAIT_TIMEOUT,
        "crd/things.example.com",
    ])?;

    // The second apply creates it.
    let second = k.ok(&["apply", "-f", &path])?;
    ensure!(second.contains("thing.example.com/t1 created"), "{second}");
    k.ok(&["get", "thing", "t1"])?;

    // explain reads the CRD's schema.
    let explained = k.ok(&["explain", "things.spec"])?;
    ensure!(
        explained.contains("size") && explained.contains("how big the thing is"),
        "{explained}"
    );
    let explained = k.ok(&["explain", "configmap.data"])?;
    ensure!(explained.contains("FIELD: data"), "{explained}");
    Ok(())
}

#[test]
fn misspelt_api_version_and_list_items_are_checked_through_openapi_v2() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    let (_dir, path) = manifest(&CONFIGMAP.replace("apiVersion: v1", "apiVersion: v1x"))?;
    let out = k.run(&["apply", "-f", &path])?;
    ensure!(!out.success(), "apply succeeded: {}", out.stdout);
    assert_no_openapi_error(&out.stderr)?;
    ensure!(
        out.stderr
            .contains("no matches for kind \"ConfigMap\" in version \"v1x\""),
        "{}",
        out.stderr
    );

    // The items of a List are validated by kubectl itself against the v2 definitions.
    let list = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed, namespace: default}
  dataa: {a: b}
";
    let out = k.run_stdin(&["apply", "-f", "-"], list)?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                "ValidationError(ConfigMap): unknown field \"dataa\" in io.k8s.api.core.v1.ConfigMap"
            ),
        "{}",
        out.stderr
    );
    let out = k.ok_stdin(&["apply", "-f", "-"], &list.replace("dataa", "data"))?;
    ensure!(out.contains("configmap/listed created"), "{out}");
    Ok(())
}

/// Response headers, names lower-cased.
type Headers = Vec<(String, String)>;

/// One `curl` of `/clusters/<cluster>/openapi/v2`: (status, headers, body).
fn fetch(
    server: &KplaneServer,
    cluster: &str,
    headers: &[String],
) -> Result<(u16, Headers, Vec<u8>)> {
    let dir = tempfile::tempdir()?;
    let head = dir.path().join("head");
    let body = dir.path().join("body");
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sk", "-D"])
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token()));
    for h in headers {
        cmd.arg("-H").arg(h);
    }
    let out = cmd
        .arg(format!(
            "{}/clusters/{cluster}/openapi/v2",
            server.base_url()
        ))
        .output()?;
    ensure!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = std::fs::read_to_string(&head)?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .context("no status line")?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = std::fs::read(&body).unwrap_or_default();
    Ok((status, headers, body))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

const PROTOBUF: &str = "Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The definition names of the cluster's v2 document, decoded from protobuf, and its ETag.
fn protobuf_definitions(
    server: &KplaneServer,
    cluster: &str,
) -> Result<(BTreeSet<String>, String)> {
    let (status, headers, body) = fetch(server, cluster, &[PROTOBUF.to_owned()])?;
    ensure!(status == 200, "status {status}");
    ensure!(
        header(&headers, "content-type")
            == Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        "{headers:?}"
    );
    let doc = gnostic::Document::decode(body.as_slice()).context("decoding the v2 protobuf")?;
    ensure!(doc.swagger == "2.0", "swagger {:?}", doc.swagger);
    let names = doc
        .definitions
        .context("no definitions")?
        .additional_properties
        .into_iter()
        .map(|d| d.name)
        .collect();
    let etag = header(&headers, "etag").context("no ETag")?.to_owned();
    Ok((names, etag))
}

/// The served group-version paths of the cluster's `/openapi/v3` index.
fn v3_paths(k: &Kubectl, cluster: &str) -> Result<Vec<String>> {
    let out = k.ok(&["get", "--raw", &format!("/clusters/{cluster}/openapi/v3")])?;
    let index: Value = serde_json::from_str(&out)?;
    Ok(index["paths"]
        .as_object()
        .context("no paths")?
        .keys()
        .cloned()
        .collect())
}

#[test]
fn openapi_v2_document_encodings_etag_crd_versions_and_clusters() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let a = server.kubectl_for("root:a")?;
    let crd = |versions: String| -> Result<()> {
        a.ok_stdin(&["apply", "-f", "-"], &things_crd(&versions))?;
        a.ok(&[
            "wait",
            "--for",
            "condition=established",
            WAIT_TIMEOUT,
            "crd/things.example.com",
        ])?;
        Ok(())
    };
    crd(thing_version("v1", true, true) + &thing_version("v1beta1", true, false))?;

    // Protobuf: built-ins and the CRD's kinds of every served version.
    let (defs, etag) = protobuf_definitions(&server, "root:a")?;
    for name in [
        "io.k8s.api.core.v1.ConfigMap",
        "com.example.v1.Thing",
        "com.example.v1.ThingList",
        "com.example.v1beta1.Thing",
    ] {
        ensure!(defs.contains(name), "root:a lacks {name}");
    }
    ensure!(etag.len() == 130 && etag.starts_with('"'), "ETag {etag}");

    // JSON: the same definitions and the same entity tag.
    let (status, headers, body) = fetch(&server, "root:a", &["Accept: application/json".into()])?;
    ensure!(status == 200 && header(&headers, "content-type") == Some("application/json"));
    ensure!(
        header(&headers, "etag") == Some(etag.as_str()),
        "{headers:?}"
    );
    let json: Value = serde_json::from_slice(&body)?;
    let json_defs: BTreeSet<String> = json["definitions"]
        .as_object()
        .context("no definitions")?
        .keys()
        .cloned()
        .collect();
    ensure!(json_defs == defs, "JSON and protobuf definitions differ");
    ensure!(json["swagger"] == "2.0");

    // Conditional requests, and an Accept it cannot serve.
    for accept in [PROTOBUF, "Accept: application/json"] {
        let (status, _, body) = fetch(
            &server,
            "root:a",
            &[accept.to_owned(), format!("If-None-Match: {etag}")],
        )?;
        ensure!(status == 304 && body.is_empty(), "{accept}: {status}");
    }
    let (status, _, _) = fetch(&server, "root:a", &[r#"If-None-Match: "stale""#.into()])?;
    ensure!(status == 200, "stale tag: {status}");
    let (status, _, _) = fetch(&server, "root:a", &["Accept: application/yaml".into()])?;
    ensure!(status == 406, "yaml: {status}");

    // Another logical cluster has no such CRD.
    let (defs_b, etag_b) = protobuf_definitions(&server, "root:b")?;
    ensure!(defs_b.contains("io.k8s.api.core.v1.ConfigMap"));
    ensure!(
        !defs_b.iter().any(|d| d.starts_with("com.example")),
        "root:b: {defs_b:?}"
    );
    ensure!(etag_b != etag);

    // Renaming the second version (v1beta1 → v1alpha1) renames its definitions, in v2 and v3.
    crd(thing_version("v1", true, true) + &thing_version("v1alpha1", true, false))?;
    let (defs, renamed_etag) = protobuf_definitions(&server, "root:a")?;
    ensure!(renamed_etag != etag);
    ensure!(defs.contains("com.example.v1alpha1.Thing"), "{defs:?}");
    ensure!(!defs.contains("com.example.v1beta1.Thing"), "{defs:?}");
    let v3 = v3_paths(&a, "root:a")?;
    ensure!(
        v3.contains(&"apis/example.com/v1alpha1".to_owned())
            && !v3.contains(&"apis/example.com/v1beta1".to_owned()),
        "{v3:?}"
    );

    // A version no longer served disappears.
    crd(thing_version("v1", true, true) + &thing_version("v1alpha1", false, false))?;
    let (defs, _) = protobuf_definitions(&server, "root:a")?;
    ensure!(defs.contains("com.example.v1.Thing"), "{defs:?}");
    ensure!(!defs.contains("com.example.v1alpha1.Thing"), "{defs:?}");
    let v3 = v3_paths(&a, "root:a")?;
    ensure!(
        !v3.contains(&"apis/example.com/v1alpha1".to_owned()),
        "{v3:?}"
    );

    // Deleting the CRD takes the custom kinds out: root:a serves what root:b serves.
    a.ok(&["delete", "crd", "things.example.com"])?;
    let mut after = (BTreeSet::new(), String::new());
    for _ in 0..50 {
        after = protobuf_definitions(&server, "root:a")?;
        if !after.0.iter().any(|d| d.starts_with("com.example")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    ensure!(after.0 == defs_b, "root:a still has: {:?}", after.0);
    ensure!(after.1 == etag_b, "same content, same ETag");
    Ok(())
}

/// `testdata/hive/clusterdeployment-valid.yaml` as the one item of a `v1` `List`.
fn clusterdeployment_list(extra_spec_line: &str) -> Result<String> {
    let object = std::fs::read_to_string(super::testdata("hive/clusterdeployment-valid.yaml"))?;
    let mut list = String::from("apiVersion: v1\nkind: List\nitems:\n");
    let mut first = true;
    for line in object
        .lines()
        .filter(|l| !l.starts_with('#') && *l != "---")
    {
        list.push_str(if first { "- " } else { "  " });
        first = false;
        list.push_str(line);
        list.push('\n');
        if line == "spec:" && !extra_spec_line.is_empty() {
            list.push_str(&format!("    {extra_spec_line}\n"));
        }
    }
    Ok(list)
}

#[test]
fn list_items_of_a_real_world_custom_resource_are_validated_with_its_v2_schema() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    super::apply_crd(
        k,
        "hive/clusterdeployments.hive.example.io.yaml",
        "clusterdeployments.hive.example.io",
    )?;
    k.ok(&["create", "namespace", "hive"])?;

    // kubectl validates List items itself, against the v2 definition converted from the
    // ~2,100-line CRD schema: an unknown field is found where it is...
    let out = k.run_stdin(
        &["apply", "-n", "hive", "-f", "-"],
        &clusterdeployment_list("bogusField: 1")?,
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                "ValidationError(ClusterDeployment.spec): unknown field \"bogusField\" in \
                 io.example.hive.v1.ClusterDeployment.spec"
            ),
        "{}",
        out.stderr
    );
    // ...and the valid object passes it (and the server's validation).
    let out = k.ok_stdin(
        &["apply", "-n", "hive", "-f", "-"],
        &clusterdeployment_list("")?,
    )?;
    ensure!(
        out.contains("clusterdeployment.hive.example.io/prod-eu-1 created"),
        "{out}"
    );
    Ok(())
}
