//! Server-side printing: turns objects into a `meta.k8s.io/v1` Table with the columns
//! kubectl users know for each kind (cells come from the `kplane-printers` crate).

use serde_json::{json, Value};

use super::query::Query;
use super::response::partial_metadata;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
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
    opts: &TableOptions,
    headers: bool,
) -> ApiResult<Value> {
    let now = chrono::Utc::now();
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let mut row = json!({"cells": kplane_printers::cells(&rt.group, &rt.kind, o, now)});
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
    let cols = if headers && !opts.no_headers {
        kplane_printers::column_definitions_json(kplane_printers::columns(&rt.group, &rt.kind))
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
