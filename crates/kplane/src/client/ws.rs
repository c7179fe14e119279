//! `kplane ws`: create, list, delete and enter workspaces. The workspace a command works
//! in is the one the kubeconfig's context points at (`/clusters/<path>` of its server
//! URL); `use` moves the context, as kcp's `kubectl ws` does.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use anyhow::{bail, Result};
use serde_json::Value;

use super::api::{phase, resolve, Session};
use super::args::{ClientFlags, WsCommand};
use super::output::out;
use super::path::{self, WsPath};

/// Runs one `kplane ws` command.
pub async fn run(flags: &ClientFlags, command: Option<WsCommand>) -> Result<()> {
    let session = Session::load(flags)?;
    match command.unwrap_or(WsCommand::Current) {
        WsCommand::Current => out(&format!("{}\n", current_line(&session.current))),
        WsCommand::Use { target } => use_workspace(session, &target).await,
        WsCommand::Create {
            name,
            parent,
            template,
            wait,
            enter,
            timeout,
        } => {
            let parent = match parent {
                Some(p) => resolve(&session, &p)?,
                None => session.current.clone(),
            };
            create(
                &session,
                &parent,
                &name,
                template.as_deref(),
                wait || enter,
                timeout,
            )
            .await?;
            if enter {
                let target = parent.join(&name)?;
                return use_workspace(session, target.as_str()).await;
            }
            Ok(())
        }
        WsCommand::List { tree, chunk_size } => list(&session, tree, chunk_size).await,
        WsCommand::Export(args) => super::archive::export(flags, args).await,
        WsCommand::Import(args) => super::archive::import(flags, args).await,
        WsCommand::Move(args) => super::move_cmd::run(flags, args).await,
        WsCommand::Delete {
            name,
            wait,
            timeout,
        } => delete(&session, &name, wait, timeout).await,
    }
}

/// What `use` and `current` print.
fn current_line(path: &WsPath) -> String {
    format!("Current workspace is {:?}.", path.as_str())
}

async fn use_workspace(mut session: Session, target: &str) -> Result<()> {
    let path = resolve(&session, target)?;
    session.check_ready(&path).await?;
    if path != session.current {
        let server = path::server_url(&session.base, &path);
        let previous = session.current.to_string();
        session
            .kubeconfigs
            .set_server(&session.context.name, &server, Some(&previous))?;
        session.kubeconfigs.save()?;
    }
    out(&format!("{}\n", current_line(&path)))
}

async fn create(
    session: &Session,
    parent: &WsPath,
    name: &str,
    template: Option<&str>,
    wait: bool,
    timeout: Duration,
) -> Result<()> {
    let full = parent.join(name)?;
    // A Workspace must not be written into a cluster that does not exist.
    session.check_ready(parent).await?;
    let client = session.client(parent).await?;
    client.create(name, template).await?;
    out(&format!("Workspace {:?} created.\n", full.as_str()))?;
    if wait {
        client.wait_ready(name, timeout).await?;
        out(&format!("Workspace {:?} is ready.\n", full.as_str()))?;
    }
    Ok(())
}

async fn delete(session: &Session, name: &str, wait: bool, timeout: Duration) -> Result<()> {
    let full = session.current.join(name)?;
    let client = session.client(&session.current).await?;
    if !client.delete(name).await? {
        bail!("workspace {:?} not found", full.as_str());
    }
    if wait {
        client.wait_deleted(name, timeout).await?;
    }
    out(&format!("Workspace {:?} deleted.\n", full.as_str()))
}

async fn list(session: &Session, tree: bool, chunk: u32) -> Result<()> {
    if tree {
        let node = collect(session, session.current.clone(), "Ready".to_owned(), chunk).await?;
        return out(&render_tree(&node));
    }
    let items = session
        .client(&session.current)
        .await?
        .list_all(chunk)
        .await?;
    if items.is_empty() {
        eprintln!("No workspaces found in {:?}.", session.current.as_str());
        return Ok(());
    }
    let now = chrono::Utc::now();
    let mut rows = vec![["NAME", "PHASE", "URL", "AGE"].map(String::from).to_vec()];
    for ws in &items {
        let text = |p: &str| {
            ws.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let age = kplane_printers::age_cell(ws, now);
        rows.push(vec![
            text("/metadata/name"),
            phase(ws).to_owned(),
            text("/status/URL"),
            age.as_str().unwrap_or("<unknown>").to_owned(),
        ]);
    }
    out(&render_table(&rows))
}

/// Columns separated by three spaces, as kubectl's tab writer pads them.
fn render_table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - cell.chars().count() + 3;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A workspace and its descendants, for `list --tree`.
#[derive(Debug, PartialEq)]
struct Node {
    name: String,
    phase: String,
    children: Vec<Node>,
}

/// Lists `path`'s workspaces and, for each Ready one, its own, depth first.
fn collect(
    session: &Session,
    path: WsPath,
    phase_of_path: String,
    chunk: u32,
) -> Pin<Box<dyn Future<Output = Result<Node>> + '_>> {
    Box::pin(async move {
        let items = session.client(&path).await?.list_all(chunk).await?;
        let mut children = Vec::with_capacity(items.len());
        for ws in &items {
            let name = ws
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let child_phase = phase(ws).to_owned();
            if child_phase == "Ready" {
                let child = path.join(name)?;
                let mut node = collect(session, child, child_phase, chunk).await?;
                node.name = name.to_owned();
                children.push(node);
            } else {
                children.push(Node {
                    name: name.to_owned(),
                    phase: child_phase,
                    children: Vec::new(),
                });
            }
        }
        Ok(Node {
            name: path.to_string(),
            phase: phase_of_path,
            children,
        })
    })
}

/// The tree drawn with box characters; a workspace that is not Ready shows its phase.
fn render_tree(root: &Node) -> String {
    let mut out = format!("{}\n", label(root));
    draw_children(&root.children, "", &mut out);
    out
}

fn draw_children(children: &[Node], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        out.push_str(&format!("{prefix}{branch}{}\n", label(child)));
        draw_children(&child.children, &format!("{prefix}{next}"), out);
    }
}

fn label(node: &Node) -> String {
    if node.phase == "Ready" {
        node.name.clone()
    } else {
        format!(
            "{} ({})",
            node.name,
            if node.phase.is_empty() {
                "no phase"
            } else {
                &node.phase
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, phase: &str, children: Vec<Node>) -> Node {
        Node {
            name: name.into(),
            phase: phase.into(),
            children,
        }
    }

    #[test]
    fn the_tree_is_drawn_with_branches_and_phases() {
        let tree = node(
            "root",
            "Ready",
            vec![
                node(
                    "acme",
                    "Ready",
                    vec![
                        node("team-a", "Ready", vec![node("dev", "Ready", vec![])]),
                        node("team-b", "Initializing", vec![]),
                    ],
                ),
                node("shop", "Ready", vec![node("x", "Terminating", vec![])]),
            ],
        );
        let want = "root
├── acme
│   ├── team-a
│   │   └── dev
│   └── team-b (Initializing)
└── shop
    └── x (Terminating)
";
        assert_eq!(render_tree(&tree), want);
        assert_eq!(render_tree(&node("root:a", "Ready", vec![])), "root:a\n");
    }

    #[test]
    fn tables_are_padded_as_kubectl_pads_them() {
        let rows: Vec<Vec<String>> = [
            ["NAME", "PHASE", "AGE"],
            ["a", "Ready", "5s"],
            ["longer", "Initializing", "10m"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
        assert_eq!(
            render_table(&rows),
            "NAME     PHASE          AGE\na        Ready          5s\nlonger   Initializing   10m\n"
        );
    }

    #[test]
    fn current_is_quoted() {
        assert_eq!(
            current_line(&WsPath::parse("root:acme").unwrap()),
            "Current workspace is \"root:acme\"."
        );
    }
}
