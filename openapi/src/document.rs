//! Assembly of one group-version document: the paths of its resources and every definition
//! they reference, transitively, under `components.schemas`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::catalog::{builtin_definitions, builtin_type_meta};
use crate::kind_schema::{add_gvk, has_gvk, list_definition, Gvk};
use crate::names::{DELETE_OPTIONS, WATCH_EVENT};
use crate::paths::{self, Target};
use crate::{custom, Error, SchemaSource, ServedResource, KUBERNETES_VERSION};

/// Checks the parts of a resource that end up in URLs and names.
pub(crate) fn validate(r: &ServedResource) -> Result<(), Error> {
    let id = format!("{}/{}/{}", r.group, r.version, r.plural);
    let invalid = |reason: &str| Error::InvalidResource {
        resource: id.clone(),
        reason: reason.to_owned(),
    };
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
    };
    if !segment_ok(&r.version) {
        return Err(invalid("the version must be a non-empty URL segment"));
    }
    if !segment_ok(&r.plural) {
        return Err(invalid("the plural must be a non-empty URL segment"));
    }
    if !r.group.is_empty() && !segment_ok(&r.group) {
        return Err(invalid("the group must be a URL segment"));
    }
    if !segment_ok(&r.kind) {
        return Err(invalid("the kind must be a non-empty name"));
    }
    Ok(())
}

/// Builds the document of one group-version from its (non-empty) resources.
pub(crate) fn build(members: &[&ServedResource]) -> Result<Value, Error> {
    let Some(first) = members.first() else {
        return Ok(Value::Null);
    };
    let (group, version) = (first.group.as_str(), first.version.as_str());
    let builtins = builtin_definitions();
    // Definitions of this document that are not (or differ from) the built-in ones.
    let mut local: BTreeMap<String, Value> = BTreeMap::new();
    let mut paths = Map::new();
    let (discovery_path, discovery_item) = paths::discovery_path(group, version);
    paths.insert(discovery_path, discovery_item);

    for r in members {
        let gvk = Gvk::new(&r.group, &r.version, &r.kind);
        let (kind_name, builtin) = match &r.schema {
            SchemaSource::BuiltIn(name) => {
                let def = builtins.get(name).ok_or_else(|| Error::UnknownDefinition {
                    resource: format!("{}/{}/{}", r.group, r.version, r.plural),
                    name: name.clone(),
                })?;
                if !has_gvk(def, &gvk) && !local.contains_key(name) {
                    let mut def = def.clone();
                    add_gvk(&mut def, &gvk);
                    local.insert(name.clone(), def);
                } else if let Some(def) = local.get_mut(name) {
                    add_gvk(def, &gvk);
                }
                (name.clone(), true)
            }
            SchemaSource::Custom { schema } => {
                let (name, def) = custom::kind_definition(r, schema)?;
                local.insert(name.clone(), def);
                (name, false)
            }
        };

        let list_name = format!("{kind_name}List");
        let list_gvk = Gvk::new(&r.group, &r.version, &format!("{}List", r.kind));
        let existing = local.get(&list_name).or_else(|| builtins.get(&list_name));
        let listed = r.verbs.iter().any(|v| v == "list");
        if listed && !existing.is_some_and(|def| has_gvk(def, &list_gvk)) {
            let list = list_definition(builtin_type_meta(), &kind_name, &r.kind, &list_gvk);
            local.insert(list_name.clone(), list);
        }

        paths::add_resource(
            &mut paths,
            &Target {
                resource: r,
                kind_name: &kind_name,
                list_name: &list_name,
                builtin,
            },
        );
    }

    let paths = Value::Object(paths);
    let mut roots = BTreeSet::new();
    roots.insert(WATCH_EVENT.to_owned());
    crate::convert::for_each_ref(&paths, &mut |name| {
        roots.insert(name.to_owned());
    });
    let mut schemas = closure(roots, &local, builtins, group, version)?;

    // Like upstream, the envelope kinds name the document's group-version too.
    for name in [DELETE_OPTIONS, WATCH_EVENT] {
        if let Some(def) = schemas.get_mut(name) {
            let kind = name.rsplit('.').next().unwrap_or(name);
            add_gvk(def, &Gvk::new(group, version, kind));
        }
    }

    Ok(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                },
            },
        },
        "security": [{"BearerToken": []}],
    }))
}

/// Every definition reachable from `roots`, looked up in `local` first.
fn closure(
    roots: BTreeSet<String>,
    local: &BTreeMap<String, Value>,
    builtins: &BTreeMap<String, Value>,
    group: &str,
    version: &str,
) -> Result<Map<String, Value>, Error> {
    let mut schemas = Map::new();
    let mut pending: Vec<String> = roots.into_iter().collect();
    while let Some(name) = pending.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let def = local
            .get(&name)
            .or_else(|| builtins.get(&name))
            .ok_or_else(|| Error::UnknownDefinition {
                resource: crate::group_version_path(group, version),
                name: name.clone(),
            })?;
        crate::convert::for_each_ref(def, &mut |target| {
            if !schemas.contains_key(target) {
                pending.push(target.to_owned());
            }
        });
        schemas.insert(name, def.clone());
    }
    Ok(schemas)
}
