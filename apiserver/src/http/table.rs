//! Server-side printing: turns objects into a `meta.k8s.io/v1` Table with the columns
//! kubectl users know for each kind (cells come from the `kplane-printers` crate).

use serde_json::{json, Value};

use super::query::Query;
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::ResourceType;

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    pub include: IncludeObject,
    pub no_headers: bool,
}

impl TableOptions {
    pub fn from_query(q: &Query) -> ApiResult<TableOptions> {
        let include = match q.get("includeObject") {
            None | Some("") | Some("Metadata") => IncludeObject::Metadata,
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "includeObject: unsupported value \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
                )))
            }
        };
        Ok(TableOptions {
            include,
            no_headers: false,
        })
    }
}

/// Builds a Table. `headers` = include columnDefinitions (false for later watch events).
pub fn build(
    rt: &ResourceType,
    objs: &[Value],
    rv: &str,
    cont: Option<&str>,
    remaining: Option<u64>,
    opts: &TableOptions,
    headers: bool,
) -> ApiResult<Value> {
    let now = chrono::Utc::now();
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let mut row = json!({"cells": row_cells(rt, o, now)});
            if rt.custom.is_none() {
                if let Some(c) = kplane_printers::row_conditions(&rt.group, &rt.kind, o) {
                    row["conditions"] = c;
                }
            }
            match opts.include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial_metadata(o),
                IncludeObject::Object => row["object"] = o.clone(),
            }
            row
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    if let Some(n) = remaining {
        meta["remainingItemCount"] = json!(n);
    }
    let cols = if headers && !opts.no_headers {
        column_definitions(rt)
    } else {
        json!([])
    };
    Ok(json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": cols,
        "rows": rows,
    }))
}

/// The column definitions of a type: built-in printers, or the CRD's
/// `additionalPrinterColumns` after `Name` (`Age` when the CRD declares none).
fn column_definitions(rt: &ResourceType) -> Value {
    let Some(info) = &rt.custom else {
        return kplane_printers::column_definitions_json(kplane_printers::columns(
            &rt.group, &rt.kind,
        ));
    };
    let name = kplane_printers::column_definitions_json(std::slice::from_ref(
        kplane_printers::name_column(),
    ));
    let mut cols: Vec<Value> = name.as_array().cloned().unwrap_or_default();
    if info.columns.is_empty() {
        cols.push(json!({"name": "Age", "type": "date", "format": "", "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp", "priority": 0}));
    }
    for c in &info.columns {
        let description = if c.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                c.json_path
            )
        } else {
            c.description.clone()
        };
        cols.push(json!({"name": c.name, "type": c.type_, "format": c.format, "description": description, "priority": c.priority}));
    }
    Value::Array(cols)
}

fn row_cells(rt: &ResourceType, o: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let Some(info) = &rt.custom else {
        return kplane_printers::cells(&rt.group, &rt.kind, o, now);
    };
    let mut cells = vec![o.pointer("/metadata/name").cloned().unwrap_or(Value::Null)];
    if info.columns.is_empty() {
        cells.push(kplane_printers::age_cell(o, now));
    }
    for c in &info.columns {
        cells.push(kplane_printers::custom_cell(o, &c.json_path, &c.type_, now));
    }
    cells
}
