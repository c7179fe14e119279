//! kplane on PostgreSQL (`kplane serve --storage postgres://...`), on a throwaway server
//! (`kplane_storage::testing::postgres`): kubectl creates, gets, lists, watches and deletes
//! a ConfigMap and a custom resource of a CRD, and everything survives a restart of kplane.
//! It needs PostgreSQL installed and fails without it.

use std::time::Duration;

use anyhow::{ensure, Result};
use kplane_e2e::{KplaneServer, ServerOptions};
use kplane_storage::testing::postgres::PgServer;

use crate::crds::{apply_crd, WIDGETS};

const WATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A throwaway PostgreSQL; the test fails rather than skips without one (`.ci/run`
/// installs it, `make test` checks for it first).
pub(crate) fn pg_server() -> PgServer {
    PgServer::start_required()
}

/// A watch line `EVENT NAME ...` for `kind` and `name`.
fn event(kind: &'static str, name: &'static str) -> impl Fn(&str) -> bool {
    move |line: &str| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        cols.first() == Some(&kind) && cols.get(1) == Some(&name)
    }
}

#[test]
fn kubectl_on_postgres() -> Result<()> {
    let pg = pg_server();
    let url = pg.create_database();
    let mut server = KplaneServer::start_with(ServerOptions::default().arg("--storage").arg(url))?;
    let k = server.kubectl_root();
    k.ok(&["create", "namespace", "pg"])?;
    let mut watch = k.spawn_watch(&[
        "get",
        "configmaps",
        "-n",
        "pg",
        "-w",
        "--output-watch-events",
    ])?;
    k.ok(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "pg",
        "--from-literal=a=1",
    ])?;
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED c1", event("ADDED", "c1"))?;
    k.ok(&[
        "patch",
        "configmap",
        "c1",
        "-n",
        "pg",
        "--type=merge",
        "-p",
        r#"{"data":{"b":"2"}}"#,
    ])?;
    watch.wait_for_line(WATCH_TIMEOUT, "MODIFIED c1", event("MODIFIED", "c1"))?;
    k.ok(&["create", "configmap", "c2", "-n", "pg"])?;
    let got = k.ok(&[
        "get",
        "configmap",
        "c1",
        "-n",
        "pg",
        "-o",
        "jsonpath={.data.b}",
    ])?;
    ensure!(got == "2", "c1.data.b = {got:?}");
    let names = k.ok(&[
        "get",
        "configmaps",
        "-n",
        "pg",
        "-o",
        "name",
        "--chunk-size=1",
    ])?;
    ensure!(
        names.contains("configmap/c1") && names.contains("configmap/c2"),
        "list: {names}"
    );
    k.ok(&["delete", "configmap", "c2", "-n", "pg"])?;
    watch.wait_for_line(WATCH_TIMEOUT, "DELETED c2", event("DELETED", "c2"))?;

    // A CRD and a custom resource.
    apply_crd(k, "crds/widgets.yaml", WIDGETS)?;
    let mut widget_watch =
        k.spawn_watch(&["get", "widgets", "-n", "pg", "-w", "--output-watch-events"])?;
    k.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: pg\nspec: {color: red}\n",
    )?;
    widget_watch.wait_for_line(WATCH_TIMEOUT, "ADDED w1", event("ADDED", "w1"))?;
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "-n",
        "pg",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"blue"}}"#,
    ])?;
    widget_watch.wait_for_line(WATCH_TIMEOUT, "MODIFIED w1", event("MODIFIED", "w1"))?;
    let widgets = k.ok(&["get", "widgets", "-n", "pg", "-o", "name"])?;
    ensure!(widgets.trim() == "widget.example.com/w1", "{widgets}");

    // Everything is in the database: a restarted kplane serves it.
    drop(watch);
    drop(widget_watch);
    server.restart()?;
    let k = server.kubectl_root();
    let names = k.ok(&["get", "configmaps", "-n", "pg", "-o", "name"])?;
    ensure!(
        names.contains("configmap/c1") && !names.contains("configmap/c2"),
        "after restart: {names}"
    );
    let widgets = k.ok(&["get", "widgets", "-n", "pg", "-o", "name"])?;
    ensure!(
        widgets.trim() == "widget.example.com/w1",
        "after restart: {widgets}"
    );
    k.ok(&["delete", "widget", "w1", "-n", "pg"])?;
    let widgets = k.ok(&["get", "widgets", "-n", "pg", "-o", "name"])?;
    ensure!(widgets.trim().is_empty(), "after delete: {widgets}");
    Ok(())
}
