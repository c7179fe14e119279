//! The OpenAPI v2 (Swagger 2.0) document of `/openapi/v2`: one document for everything a
//! (logical) cluster serves, in JSON and in the protobuf form Go clients request
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, decoded by client-go's
//! `discovery.OpenAPISchema` and used by kubectl's validation when OpenAPI v3 does not know a
//! kind).
//!
//! It is made from the same group-version documents as `/openapi/v3` ([`crate::OpenApiV3`]),
//! converted to Swagger 2.0 ([`convert`]); custom resources get upstream's v2 conversion of
//! their CRD schema. Both forms are encoded once, in two parts: the built-in group-versions
//! (encoded once per process) and the others; the entity tag is the uppercase hex SHA-512 of
//! the JSON bytes, as upstream computes it for both forms.

mod convert;
pub mod gnostic;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use prost::Message as _;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};

use crate::kind_schema::{add_gvk, Gvk};
use crate::{canonical, custom, document, Error, SchemaSource, ServedResource, KUBERNETES_VERSION};

/// A piece of an encoded document, shared without copying.
pub type Chunk = Arc<[u8]>;

/// The paths and definitions of some group-versions, encoded for both forms.
#[derive(Debug, Default)]
struct Part {
    /// The entries of the `definitions` object, without braces (empty if none).
    definitions_json: Chunk,
    /// The entries of the `paths` object, without braces.
    paths_json: Chunk,
    /// Fields 8 (`paths`) and 9 (`definitions`) of a `Document`: decoders merge repeated
    /// occurrences of a message field, so parts concatenate.
    protobuf: Chunk,
    /// Definition names, to leave out of later parts.
    names: std::collections::BTreeSet<String>,
}

/// The `/openapi/v2` document in both encodings, with its entity tag; cheap to clone.
///
/// The group-versions made only of built-in kinds (the same in every catalog) are encoded
/// once per process and shared; each document owns only the encoding of its other
/// group-versions (those with custom resources), so a tenant's CRDs cost kilobytes, not a
/// copy of the whole document.
#[derive(Debug, Clone)]
pub struct OpenApiV2 {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Part>,
    own: Part,
    etag: String,
}

/// The fixed top-level members of the document: the JSON before the definitions, between
/// definitions and paths, and after the paths; and the protobuf fields other than paths and
/// definitions.
fn head_tail() -> &'static (Chunk, Chunk, Chunk, Chunk) {
    static PARTS: OnceLock<(Chunk, Chunk, Chunk, Chunk)> = OnceLock::new();
    PARTS.get_or_init(|| {
        let info = json!({"title": "Kubernetes", "version": KUBERNETES_VERSION});
        let security = json!([{"BearerToken": []}]);
        let security_definitions = json!({
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            },
        });
        let json_of = |v: &Value| canonical::to_json(v).unwrap_or_default();
        // Top-level keys in sorted order: definitions, info, paths, security,
        // securityDefinitions, swagger.
        let mut middle = b"},\"info\":".to_vec();
        middle.extend(json_of(&info));
        middle.extend(b",\"paths\":{");
        let mut tail = b"},\"security\":".to_vec();
        tail.extend(json_of(&security));
        tail.extend(b",\"securityDefinitions\":");
        tail.extend(json_of(&security_definitions));
        tail.extend(b",\"swagger\":\"2.0\"}");
        let frame = json!({
            "swagger": "2.0",
            "info": info,
            "security": security,
            "securityDefinitions": security_definitions,
        });
        let pb = gnostic::compile(&frame).encode_to_vec();
        (
            Arc::from(&b"{\"definitions\":{"[..]),
            middle.into(),
            tail.into(),
            pb.into(),
        )
    })
}

impl OpenApiV2 {
    /// Builds the document of every resource in `resources`.
    pub fn build(resources: &[ServedResource]) -> Result<OpenApiV2, Error> {
        let mut by_gv: BTreeMap<String, Vec<&ServedResource>> = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for resource in resources {
            document::validate(resource)?;
            let id = crate::served::resource_id(resource);
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
        let (builtin, custom): (Vec<_>, Vec<_>) = by_gv.into_values().partition(|members| {
            members
                .iter()
                .all(|r| matches!(r.schema, SchemaSource::BuiltIn(_)))
        });
        let shared = shared_part(&builtin)?;
        let own = build_part(&custom, &shared.names)?;

        let inner = Inner {
            shared,
            own,
            etag: String::new(),
        };
        let mut hasher = Sha512::new();
        for chunk in inner.json_chunks() {
            hasher.update(&chunk);
        }
        let etag = hex::encode_upper(hasher.finalize());
        Ok(OpenApiV2 {
            inner: Arc::new(Inner { etag, ..inner }),
        })
    }

    /// The Swagger 2.0 JSON document, as the chunks to send in order.
    pub fn json_chunks(&self) -> Vec<Chunk> {
        self.inner.json_chunks()
    }

    /// The gnostic `openapi.v2.Document` protobuf encoding of the same document, as the chunks
    /// to send in order.
    pub fn protobuf_chunks(&self) -> Vec<Chunk> {
        let (_, _, _, frame) = head_tail();
        let mut chunks = vec![Arc::clone(frame), Arc::clone(&self.inner.shared.protobuf)];
        if !self.inner.own.protobuf.is_empty() {
            chunks.push(Arc::clone(&self.inner.own.protobuf));
        }
        chunks
    }

    /// The whole JSON document in one buffer (tools and tests; servers send the chunks).
    pub fn json(&self) -> Vec<u8> {
        self.json_chunks().concat()
    }

    /// The whole protobuf document in one buffer (tools and tests; servers send the chunks).
    pub fn protobuf(&self) -> Vec<u8> {
        self.protobuf_chunks().concat()
    }

    /// The entity tag (unquoted): uppercase hex SHA-512 of the JSON bytes.
    pub fn etag(&self) -> &str {
        &self.inner.etag
    }

    /// Whether two documents share their encoding of the built-in group-versions.
    pub fn shares_builtins_with(&self, other: &OpenApiV2) -> bool {
        Arc::ptr_eq(&self.inner.shared, &other.inner.shared)
    }
}

impl Inner {
    fn json_chunks(&self) -> Vec<Chunk> {
        let (open, middle, tail, _) = head_tail();
        let mut chunks = vec![Arc::clone(open)];
        push_members(
            &mut chunks,
            &self.shared.definitions_json,
            &self.own.definitions_json,
        );
        chunks.push(Arc::clone(middle));
        push_members(&mut chunks, &self.shared.paths_json, &self.own.paths_json);
        chunks.push(Arc::clone(tail));
        chunks
    }
}

/// Appends the entries of two object bodies, with a comma between them when both are
/// non-empty.
fn push_members(chunks: &mut Vec<Chunk>, first: &Chunk, second: &Chunk) {
    static COMMA: OnceLock<Chunk> = OnceLock::new();
    if !first.is_empty() {
        chunks.push(Arc::clone(first));
    }
    if !first.is_empty() && !second.is_empty() {
        chunks.push(Arc::clone(COMMA.get_or_init(|| Arc::from(&b","[..]))));
    }
    if !second.is_empty() {
        chunks.push(Arc::clone(second));
    }
}

/// The part of the built-in-only group-versions, shared by every document that has the same
/// ones while any of them is alive.
fn shared_part(groups: &[Vec<&ServedResource>]) -> Result<Arc<Part>, Error> {
    static CACHE: OnceLock<Mutex<HashMap<String, Weak<Part>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let all: Vec<&ServedResource> = groups.iter().flatten().copied().collect();
    let key = crate::cache::fingerprint(&all)?;
    let lock = || {
        cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(part) = lock().get(&key).and_then(Weak::upgrade) {
        return Ok(part);
    }
    let built = Arc::new(build_part(groups, &Default::default())?);
    let mut map = lock();
    if let Some(existing) = map.get(&key).and_then(Weak::upgrade) {
        return Ok(existing);
    }
    map.retain(|_, weak| weak.strong_count() > 0);
    map.insert(key, Arc::downgrade(&built));
    Ok(built)
}

/// Encodes the paths and definitions of `groups`, leaving out definitions named in `skip`
/// (already in an earlier part).
fn build_part(
    groups: &[Vec<&ServedResource>],
    skip: &std::collections::BTreeSet<String>,
) -> Result<Part, Error> {
    let (paths, mut definitions) = convert_groups(groups)?;
    definitions.retain(|name, _| !skip.contains(name));
    let names = definitions.keys().cloned().collect();
    let inner_json = |map: Map<String, Value>| -> Result<Vec<u8>, Error> {
        let mut bytes = canonical::to_json(&Value::Object(map))?;
        // Strip the braces: parts are spliced into one object.
        bytes.pop();
        if !bytes.is_empty() {
            bytes.remove(0);
        }
        Ok(bytes)
    };
    let frame = json!({"paths": paths, "definitions": definitions});
    let doc = gnostic::compile(&frame);
    let mut protobuf = Vec::new();
    if let Some(p) = doc.paths.filter(|p| !p.path.is_empty()) {
        prost::encoding::message::encode(8, &p, &mut protobuf);
    }
    if let Some(d) = doc
        .definitions
        .filter(|d| !d.additional_properties.is_empty())
    {
        prost::encoding::message::encode(9, &d, &mut protobuf);
    }
    let Value::Object(mut frame) = frame else {
        return Ok(Part::default());
    };
    let take = |frame: &mut Map<String, Value>, key: &str| match frame.remove(key) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let paths = take(&mut frame, "paths");
    let definitions = take(&mut frame, "definitions");
    Ok(Part {
        definitions_json: inner_json(definitions)?.into(),
        paths_json: inner_json(paths)?.into(),
        protobuf: protobuf.into(),
        names,
    })
}

/// The `paths` and `definitions` members of a Swagger 2.0 document.
type PathsAndDefinitions = (Map<String, Value>, Map<String, Value>);

/// The v2 paths and definitions of `groups` (each one group-version's resources).
fn convert_groups(groups: &[Vec<&ServedResource>]) -> Result<PathsAndDefinitions, Error> {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for members in groups {
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
    Ok((paths, definitions))
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
