//! docs/compatibility.md is true where a test can tell: its "Resources" table lists every
//! resource kube-apiserver 1.32 serves by default, each marked `served` or `not served` by
//! kplane. Against a running server, in `root` and in a Workspace's logical cluster:
//! - every served resource is in its group-version's discovery document;
//! - every resource not served is absent from discovery and answers 404 to a GET of its
//!   collection (`/api/v1/<resource>`, `/apis/<group>/<version>/<resource>`).
//!
//! The table's format (one row per resource, the first two cells in backticks, the third
//! starting with `served` or `not served`) is the contract; a row that breaks it fails the
//! test rather than being skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::KplaneServer;

/// One row of the Resources table.
#[derive(Debug, PartialEq)]
struct Row {
    group_version: String,
    resource: String,
    served: bool,
}

/// The text of a cell written as one code span (`` `v1` ``), or `None`.
fn code(cell: &str) -> Option<&str> {
    cell.strip_prefix('`')?.strip_suffix('`')
}

/// The rows of the "## Resources" section of `markdown` (up to the next `## ` heading).
fn resource_rows(markdown: &str) -> Result<Vec<Row>> {
    let (_, section) = markdown
        .split_once("\n## Resources\n")
        .context("no \"## Resources\" section")?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut rows = vec![];
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [gv, resource, kplane] = cells.as_slice() else {
            bail!("row {line:?}: expected three cells");
        };
        // The header and the separator have no code spans.
        let (Some(gv), Some(resource)) = (code(gv), code(resource)) else {
            if gv.starts_with('`') || resource.starts_with('`') {
                bail!("row {line:?}: a cell is not one code span");
            }
            continue;
        };
        let served = if kplane.starts_with("not served") {
            false
        } else if kplane.starts_with("served") {
            true
        } else {
            bail!("row {line:?}: the kplane cell must start with \"served\" or \"not served\"");
        };
        rows.push(Row {
            group_version: gv.to_string(),
            resource: resource.to_string(),
            served,
        });
    }
    Ok(rows)
}

/// `/api/v1` for the core group's `v1`, `/apis/<group>/<version>` otherwise.
fn group_version_path(gv: &str) -> String {
    if gv.contains('/') {
        format!("/apis/{gv}")
    } else {
        format!("/api/{gv}")
    }
}

/// The resources (not subresources) a group-version's discovery document lists, or `None`
/// when the server does not serve the group-version (404).
async fn discovered(client: &kube::Client, gv: &str) -> Result<Option<BTreeSet<String>>> {
    let path = group_version_path(gv);
    let request = http::Request::get(&path).body(Vec::new())?;
    let body = match client.request_text(request).await {
        Ok(body) => body,
        Err(e) if error_code(&e) == Some(404) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("GET {path}")),
    };
    let list: serde_json::Value = serde_json::from_str(&body)?;
    let names = list["resources"]
        .as_array()
        .with_context(|| format!("GET {path}: no resources in {body}"))?
        .iter()
        .filter_map(|r| r["name"].as_str())
        .filter(|name| !name.contains('/'))
        .map(str::to_string)
        .collect();
    Ok(Some(names))
}

/// The status code of a GET of `path`.
async fn get_status(client: &kube::Client, path: &str) -> Result<u16> {
    let request = http::Request::get(path).body(Vec::new())?;
    match client.request_text(request).await {
        Ok(_) => Ok(200),
        Err(e) => error_code(&e).with_context(|| format!("GET {path}: {e}")),
    }
}

/// What is wrong with the table's `rows` in logical cluster `cluster` (empty: nothing).
async fn check_cluster(server: &KplaneServer, cluster: &str, rows: &[Row]) -> Result<Vec<String>> {
    let client = server.client_for(cluster).await?;
    let mut discovery: BTreeMap<&str, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut wrong = vec![];
    for row in rows {
        let gv = row.group_version.as_str();
        if !discovery.contains_key(gv) {
            discovery.insert(gv, discovered(&client, gv).await?);
        }
        let listed = discovery
            .get(gv)
            .and_then(Option::as_ref)
            .is_some_and(|names| names.contains(&row.resource));
        let what = format!("{cluster}: {gv} {}", row.resource);
        if row.served {
            if !listed {
                wrong.push(format!(
                    "{what} is marked served but discovery does not list it"
                ));
            }
            continue;
        }
        if listed {
            wrong.push(format!(
                "{what} is marked not served but discovery lists it"
            ));
        }
        let path = format!("{}/{}", group_version_path(gv), row.resource);
        let status = get_status(&client, &path).await?;
        if status != 404 {
            wrong.push(format!(
                "{what} is marked not served but GET {path} answered {status}"
            ));
        }
    }
    Ok(wrong)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resources_table_matches_discovery_and_404s() -> Result<()> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/compatibility.md");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let rows = resource_rows(&text).context("docs/compatibility.md")?;
    // kube-apiserver 1.32 serves about 60 resources by default: finding far fewer rows
    // means the table or its parser broke.
    ensure!(rows.len() >= 50, "only {} resource rows found", rows.len());
    ensure!(
        rows.iter().any(|r| r.served) && rows.iter().any(|r| !r.served),
        "the table marks every resource alike"
    );

    let server = KplaneServer::start()?;
    server.create_workspace("root:compat")?;
    let mut wrong = vec![];
    for cluster in ["root", "root:compat"] {
        wrong.extend(check_cluster(&server, cluster, &rows).await?);
    }
    ensure!(
        wrong.is_empty(),
        "docs/compatibility.md's Resources table is not true:\n{}",
        wrong.join("\n")
    );
    Ok(())
}

#[test]
fn resource_rows_follow_the_table_format() -> Result<()> {
    let md = "# T\n\n## Resources\n\ntext\n\n| group/version | resource | kplane |\n\
              |---|---|---|\n| `v1` | `pods` | served (reflections) |\n\
              | `apps/v1` | `deployments` | not served |\n\n## Next\n\n| `v1` | `x` | served |\n";
    assert_eq!(
        resource_rows(md)?,
        vec![
            Row {
                group_version: "v1".into(),
                resource: "pods".into(),
                served: true,
            },
            Row {
                group_version: "apps/v1".into(),
                resource: "deployments".into(),
                served: false,
            },
        ]
    );
    let bad = "x\n## Resources\n| `v1` | `pods` | maybe |\n";
    assert!(resource_rows(bad).is_err());
    assert!(resource_rows("no table").is_err());
    assert_eq!(group_version_path("v1"), "/api/v1");
    assert_eq!(group_version_path("apps/v1"), "/apis/apps/v1");
    Ok(())
}
