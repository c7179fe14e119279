//! Establishing a CRD and what kubectl prints for it: `get crd`, printer columns, short names,
//! categories and `explain`.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Table};

use super::{
    apply_crd, apply_yaml, crd_condition, json, server_with_widgets, widget, GIZMOS, WIDGETS,
};

#[test]
fn crd_apply_wait_established_and_get_crd_lists_it() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    apply_crd(kubectl, "crds/widgets.yaml", WIDGETS)?;

    let table = Table::parse(&kubectl.ok(&["get", "crd"])?)?;
    assert_eq!(table.headers, ["NAME", "CREATED AT"]);
    ensure!(
        table.values("NAME")?.contains(&WIDGETS),
        "{WIDGETS} missing from {table:?}"
    );
    // `crds` short name and the single-object form agree.
    let table = Table::parse(&kubectl.ok(&["get", "crds", WIDGETS])?)?;
    assert_eq!(table.values("NAME")?, [WIDGETS]);

    let crd = json(kubectl, &["get", "crd", WIDGETS])?;
    let accepted = &crd["status"]["acceptedNames"];
    assert_eq!(accepted["plural"], "widgets");
    assert_eq!(accepted["singular"], "widget");
    assert_eq!(accepted["kind"], "Widget");
    assert_eq!(accepted["listKind"], "WidgetList");
    assert_eq!(accepted["shortNames"], serde_json::json!(["wd"]));
    assert_eq!(accepted["categories"], serde_json::json!(["all", "toys"]));
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));
    let names = crd_condition(&crd, "NamesAccepted").context("no NamesAccepted condition")?;
    assert_eq!(names["status"], "True", "{names}");
    assert_eq!(names["reason"], "NoConflicts", "{names}");
    let established = crd_condition(&crd, "Established").context("no Established condition")?;
    assert_eq!(established["status"], "True", "{established}");
    assert_eq!(
        established["reason"], "InitialNamesAccepted",
        "{established}"
    );
    Ok(())
}

#[test]
fn get_shows_additional_printer_columns_and_name_age_without_columns() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_crd(kubectl, "crds/gizmos.yaml", GIZMOS)?;
    apply_yaml(
        kubectl,
        &widget("w1", "{color: red, replicas: 2, code: abc}"),
    )?;
    apply_yaml(kubectl, &widget("w2", "{color: blue}"))?;
    apply_yaml(
        kubectl,
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g1}\nspec: {note: hi}\n",
    )?;

    let table = Table::parse(&kubectl.ok(&["get", "widgets"])?)?;
    // The priority-1 column (Code) is hidden without -o wide.
    assert_eq!(table.headers, ["NAME", "COLOR", "REPLICAS", "PHASE", "AGE"]);
    assert_eq!(table.cell("NAME", "w1", "COLOR")?, "red");
    assert_eq!(table.cell("NAME", "w1", "REPLICAS")?, "2");
    // A JSONPath that finds nothing is a null cell, which kubectl prints empty.
    assert_eq!(table.cell("NAME", "w1", "PHASE")?, "");
    assert_eq!(table.cell("NAME", "w2", "COLOR")?, "blue");
    assert_eq!(table.cell("NAME", "w2", "REPLICAS")?, "");
    let age = table.cell("NAME", "w1", "AGE")?;
    ensure!(
        age.ends_with('s') || age.ends_with('m'),
        "AGE is a short duration, got {age:?}"
    );

    let wide = Table::parse(&kubectl.ok(&["get", "widgets", "-o", "wide"])?)?;
    assert_eq!(
        wide.headers,
        ["NAME", "COLOR", "REPLICAS", "PHASE", "CODE", "AGE"]
    );
    assert_eq!(wide.cell("NAME", "w1", "CODE")?, "abc");

    // A single object prints the same columns.
    let one = Table::parse(&kubectl.ok(&["get", "widget", "w2"])?)?;
    assert_eq!(one.headers, table.headers);
    assert_eq!(one.values("NAME")?, ["w2"]);

    // A CRD without additionalPrinterColumns prints NAME and AGE.
    let gizmos = Table::parse(&kubectl.ok(&["get", "gizmos"])?)?;
    assert_eq!(gizmos.headers, ["NAME", "AGE"]);
    assert_eq!(gizmos.values("NAME")?, ["g1"]);
    Ok(())
}

#[test]
fn short_names_and_categories_work_in_kubectl_get() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_crd(kubectl, "crds/gizmos.yaml", GIZMOS)?;
    apply_yaml(kubectl, &widget("w1", "{color: red}"))?;
    apply_yaml(
        kubectl,
        "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g1}\nspec: {}\n",
    )?;

    // Short name.
    let table = Table::parse(&kubectl.ok(&["get", "wd"])?)?;
    assert_eq!(table.values("NAME")?, ["w1"]);
    assert_eq!(table.headers[1], "COLOR");

    // Category `all` (Widget has it, Gizmo does not).
    let all = kubectl.ok(&["get", "all"])?;
    ensure!(
        all.contains("widget.example.com/w1"),
        "`kubectl get all` lacks the Widget:\n{all}"
    );
    ensure!(
        !all.contains("g1"),
        "`kubectl get all` shows the Gizmo, which is not in category all:\n{all}"
    );

    // Category `toys` (both have it).
    let toys = kubectl.ok(&["get", "toys"])?;
    for want in ["widget.example.com/w1", "gizmo.example.com/g1"] {
        ensure!(
            toys.contains(want),
            "`kubectl get toys` lacks {want}:\n{toys}"
        );
    }
    // Fully qualified and singular forms resolve too.
    for resource in ["widgets.example.com", "widget", "widgets.v1.example.com"] {
        let t = Table::parse(&kubectl.ok(&["get", resource])?)?;
        assert_eq!(t.values("NAME")?, ["w1"], "kubectl get {resource}");
    }
    Ok(())
}

#[test]
fn explain_prints_kind_and_field_descriptions() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();

    let kind = kubectl.ok(&["explain", "widget"])?;
    for want in [
        "KIND:       Widget",
        "GROUP:      example.com",
        "VERSION:    v1",
        "A Widget is a small configurable test object.",
        "spec\t<Object>",
        "The desired state of the widget.",
        "status\t<Object>",
        "metadata\t<ObjectMeta>",
    ] {
        ensure!(
            kind.contains(want),
            "`kubectl explain widget` lacks {want:?}:\n{kind}"
        );
    }

    let spec = kubectl.ok(&["explain", "widgets.spec"])?;
    for want in [
        "FIELD: spec <Object>",
        "color\t<string> -required-",
        "size\t<integer>",
        "Size of the widget in centimetres.",
    ] {
        ensure!(
            spec.contains(want),
            "`kubectl explain widgets.spec` lacks {want:?}:\n{spec}"
        );
    }

    let size = kubectl.ok(&["explain", "widget.spec.size"])?;
    for want in [
        "FIELD: size <integer>",
        "Size of the widget in centimetres.",
    ] {
        ensure!(
            size.contains(want),
            "`kubectl explain widget.spec.size` lacks {want:?}:\n{size}"
        );
    }
    let color = kubectl.ok(&["explain", "widget.spec.color"])?;
    for want in [
        "FIELD: color <string>",
        "The colour of the widget.",
        "red",
        "blue",
    ] {
        ensure!(
            color.contains(want),
            "`kubectl explain widget.spec.color` lacks {want:?}:\n{color}"
        );
    }

    // A field that does not exist is an error.
    let out = kubectl.run(&["explain", "widget.spec.nope"])?;
    ensure!(
        !out.success(),
        "explain of a missing field succeeded: {}",
        out.stdout
    );
    ensure!(
        out.stderr.contains("nope"),
        "explain error does not name the field: {}",
        out.stderr
    );
    Ok(())
}
