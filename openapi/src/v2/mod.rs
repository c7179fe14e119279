//! The OpenAPI v2 (Swagger 2.0) document of `/openapi/v2`: one document for everything a
//! (logical) cluster serves, in JSON and in the protobuf form Go clients request
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, decoded by client-go's
//! `discovery.OpenAPISchema` and used by kubectl's validation when OpenAPI v3 does not know a
//! kind).
//!
//! It is made from the same group-version documents as `/openapi/v3` ([`crate::OpenApiV3`]),
//! converted to Swagger 2.0 ([`convert`]); custom resources get upstream's v2 conversion of
//! their CRD schema. Both forms are encoded once; the entity tag is the uppercase hex SHA-512
//! of the JSON bytes, as upstream computes it for both forms.

mod convert;
pub mod gnostic;

use std::collections::BTreeMap;
use std::sync::Arc;

use prost::Message as _;
use serde_json::{json, Map, Value};

use crate::catalog::add_gvk;
use crate::catalog::Gvk;
use crate::{canonical, custom, document, Error, SchemaSource, ServedResource, KUBERNETES_VERSION};

/// The `/openapi/v2` document in both encodings, with its entity tag; cheap to clone.
#[derive(Debug, Clone)]
pub struct OpenApiV2 {
    json: Arc<[u8]>,
    protobuf: Arc<[u8]>,
    etag: Arc<str>,
}

impl OpenApiV2 {
    /// Builds the document of every resource in `resources`.
    pub fn build(resources: &[ServedResource]) -> Result<OpenApiV2, Error> {
        let doc = build_value(resources)?;
        let json = canonical::to_json(&doc)?;
        let etag = canonical::hash(&json);
        let protobuf = gnostic::compile(&doc).encode_to_vec();
        Ok(OpenApiV2 {
            json: json.into(),
            protobuf: protobuf.into(),
            etag: etag.into(),
        })
    }

    /// The Swagger 2.0 JSON document.
    pub fn json(&self) -> Arc<[u8]> {
        Arc::clone(&self.json)
    }

    /// The gnostic `openapi.v2.Document` protobuf encoding of the same document.
    pub fn protobuf(&self) -> Arc<[u8]> {
        Arc::clone(&self.protobuf)
    }

    /// The entity tag (unquoted): uppercase hex SHA-512 of the JSON bytes.
    pub fn etag(&self) -> &str {
        &self.etag
    }
}

/// The document as a JSON value.
fn build_value(resources: &[ServedResource]) -> Result<Value, Error> {
    let mut by_gv: BTreeMap<String, Vec<&ServedResource>> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for resource in resources {
        document::validate(resource)?;
        let id = crate::resource_id(resource);
        if !seen.insert(id.clone()) {
            return Err(Error::DuplicateResource(id));
        }
        by_gv
            .entry(crate::group_version_path(
                &resource.group,
                &resource.version,
            ))
            .or_default()
            .push(resource);
    }

    let mut paths = Map::new();
    let mut definitions = Map::new();
    for members in by_gv.values() {
        let v3 = document::build(members)?;
        // Custom kinds: upstream's v2 conversion of the CRD schema, not the v3 definition.
        let mut custom_defs = BTreeMap::new();
        for r in members {
            if let SchemaSource::Custom { schema } = &r.schema {
                custom_defs.insert(
                    custom::definition_name(&r.group, &r.version, &r.kind),
                    convert::custom_kind_definition(r, schema),
                );
            }
        }
        if let Some(Value::Object(gv_paths)) = v3.get("paths") {
            for (path, item) in gv_paths {
                paths.insert(path.clone(), convert::path_item_to_v2(item));
            }
        }
        let schemas = v3
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_object);
        for (name, schema) in schemas.into_iter().flatten() {
            let def = match custom_defs.remove(name) {
                Some(def) => def,
                None => {
                    let mut def = schema.clone();
                    convert::schema_to_v2(&mut def);
                    def
                }
            };
            merge_definition(&mut definitions, name, def);
        }
    }
    convert::fix_known_types(&mut definitions);

    Ok(json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            },
        },
        "security": [{"BearerToken": []}],
    }))
}

/// Adds a definition; one already present (shared by several group-versions, such as
/// `DeleteOptions`) gains the other's `x-kubernetes-group-version-kind` entries.
fn merge_definition(definitions: &mut Map<String, Value>, name: &str, def: Value) {
    match definitions.get_mut(name) {
        Some(existing) => {
            let gvks = def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for gvk in gvks {
                let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
                add_gvk(
                    existing,
                    &Gvk::new(part("group"), part("version"), part("kind")),
                );
            }
        }
        None => {
            definitions.insert(name.to_owned(), def);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
