//! Defaulting (apiextensions `defaulting/algorithm.go`) and the CRD-time checks that every
//! `default` validates and is already pruned (`defaulting/validation.go`).

use kplane_types::Cause;
use serde_json::Value;

use crate::errors::{go_value, invalid};
use crate::node::Node;
use crate::path::{join, PathStack, MAX_WALK_DEPTH};
use crate::prune::pruned_copy;
use crate::validate::Validator;

/// Applies defaults of `s` to `x`: missing fields and non-nullable `null`s get the default,
/// also inside array items and additionalProperties; defaulted values are defaulted again
/// below (their own nested defaults).
pub(crate) fn apply(x: &mut Value, s: &Node, depth: usize) {
    if !s.defaults_below || depth > MAX_WALK_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                if let Some(d) = &prop.default {
                    let missing = match m.get(k.as_ref()) {
                        None => true,
                        Some(v) => v.is_null() && !prop.nullable,
                    };
                    if missing {
                        m.insert(k.to_string(), d.clone());
                    }
                }
            }
            let ap = s.additional.schema();
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.property(k) {
                    apply(v, prop, depth + 1);
                } else if let Some(ap) = ap {
                    if v.is_null() && !ap.nullable {
                        if let Some(d) = &ap.default {
                            *v = d.clone();
                        }
                    }
                    apply(v, ap, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = &s.items {
                for v in a.iter_mut() {
                    if v.is_null() && !items.nullable {
                        if let Some(d) = &items.default {
                            *v = d.clone();
                        }
                    }
                    apply(v, items, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Checks every default below `n` (at schema path `path`): pruned, valid against its own
/// schema (value validation, embedded ObjectMeta, list types and, when `cel`, the CEL rules).
pub(crate) fn validate_defaults(
    n: &Node,
    path: &str,
    inside_meta: bool,
    cel: bool,
    errs: &mut Vec<Cause>,
) {
    if !n.defaults_below {
        return;
    }
    if let Some(d) = &n.default {
        let dpath = join(path, "default");
        let before = errs.len();
        if !inside_meta && pruned_copy(d, n) != *d {
            errs.push(invalid(
                dpath.clone(),
                &go_value(d),
                "must not have unknown fields",
            ));
        }
        if errs.len() == before && n.embedded {
            crate::objectmeta::validate(n, d, &dpath, errs);
        }
        if errs.len() == before {
            let mut v = Validator {
                base: &dpath,
                out: errs,
                ratchet: None,
            };
            v.node(n, d, None, &mut PathStack::default());
        }
        if errs.len() == before {
            crate::listtype::validate(n, d, &dpath, errs);
        }
        if errs.len() == before && cel && n.cel_below {
            crate::cel::validate_value(n, d, None, &dpath, u64::MAX / 4, errs);
        }
    }
    for (k, prop) in &n.properties {
        let meta =
            inside_meta || (n.embedded && matches!(k.as_ref(), "metadata" | "apiVersion" | "kind"));
        validate_defaults(
            prop,
            &join(path, &format!("properties[{k}]")),
            meta,
            cel,
            errs,
        );
    }
    if let Some(items) = &n.items {
        validate_defaults(items, &join(path, "items"), inside_meta, cel, errs);
    }
    if let Some(ap) = n.additional.schema() {
        validate_defaults(
            ap,
            &join(path, "additionalProperties"),
            inside_meta,
            cel,
            errs,
        );
    }
}
