//! The checks of the Kubernetes vendor extensions on one schema object (apiextensions
//! `validation.go`): `x-kubernetes-list-type`/`-list-map-keys`/`-map-type` and the entries of
//! `x-kubernetes-validations` (their CEL is compiled later, once the schema is valid).

use serde_json::{Map, Value};

use crate::build::Builder;
use crate::cel::{CelRule, Reason};
use crate::errors::{forbidden, go_value, invalid, not_supported, required};
use crate::node::{ListType, MapType, Node};
use crate::path::join;
use crate::walk::Walk;

const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

impl Builder<'_> {
    pub(crate) fn list_and_map_types(
        &mut self,
        o: &Map<String, Value>,
        w: &Walk,
        n: &mut Node,
        map_type: Option<&str>,
    ) {
        let p = w.path.as_str();
        let ty = o.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(mt) = map_type {
            if ty != "object" {
                if ty.is_empty() {
                    self.schema_errs.push(required(
                        join(p, "type"),
                        "must be object if x-kubernetes-map-type is specified",
                    ));
                } else {
                    self.schema_errs.push(invalid(
                        join(p, "type"),
                        &go_value(&Value::String(ty.into())),
                        "must be object if x-kubernetes-map-type is specified",
                    ));
                }
            }
            match mt {
                "atomic" => n.map_type = Some(MapType::Atomic),
                "granular" => n.map_type = Some(MapType::Granular),
                other => self.schema_errs.push(not_supported(
                    join(p, "x-kubernetes-map-type"),
                    &go_value(&Value::String(other.into())),
                    &["atomic", "granular"],
                )),
            }
        }
        let list_type = self.get_str(o, p, "x-kubernetes-list-type");
        let keys = self.get_strings(o, p, "x-kubernetes-list-map-keys");
        let items = o.get("items").and_then(Value::as_object);
        let items_ty = items
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(lt) = list_type {
            if ty != "array" {
                if ty.is_empty() {
                    self.schema_errs.push(required(
                        join(p, "type"),
                        "must be array if x-kubernetes-list-type is specified",
                    ));
                } else {
                    self.schema_errs.push(invalid(
                        join(p, "type"),
                        &go_value(&Value::String(ty.into())),
                        "must be array if x-kubernetes-list-type is specified",
                    ));
                }
            } else if lt == "set" {
                if let Some(it) = items {
                    let item_lt = it.get("x-kubernetes-list-type").and_then(Value::as_str);
                    let item_mt = it.get("x-kubernetes-map-type").and_then(Value::as_str);
                    if items_ty == "array" && item_lt.is_some_and(|l| l != "atomic") {
                        self.schema_errs.push(invalid(
                            join(p, "items.x-kubernetes-list-type"),
                            &go_value(&Value::String(item_lt.unwrap_or("").into())),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                    if items_ty == "object" && item_mt != Some("atomic") {
                        let repr = item_lt
                            .map(|l| go_value(&Value::String(l.into())))
                            .unwrap_or_else(|| "\"null\"".into());
                        self.schema_errs.push(invalid(
                            join(p, "items.x-kubernetes-map-type"),
                            &repr,
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
            }
            match lt {
                "atomic" => n.list_type = Some(ListType::Atomic),
                "set" => n.list_type = Some(ListType::Set),
                "map" => n.list_type = Some(ListType::Map(keys.clone())),
                other => self.schema_errs.push(not_supported(
                    join(p, "x-kubernetes-list-type"),
                    &go_value(&Value::String(other.into())),
                    &["atomic", "set", "map"],
                )),
            }
        }
        if !keys.is_empty() {
            match list_type {
                None => self.schema_errs.push(required(
                    join(p, "x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
                Some("map") => {}
                Some(other) => self.schema_errs.push(invalid(
                    join(p, "x-kubernetes-list-type"),
                    &go_value(&Value::String(other.into())),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )),
            }
        }
        let keys_repr = || {
            let q: Vec<String> = keys
                .iter()
                .map(|k| kplane_types::validation::go_quote(k))
                .collect();
            format!("[]string{{{}}}", q.join(", "))
        };
        if list_type == Some("map") {
            if keys.is_empty() {
                self.schema_errs.push(required(
                    join(p, "x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match o.get("items") {
                None | Some(Value::Null) => self.schema_errs.push(required(
                    join(p, "items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(Value::Array(_)) => self.schema_errs.push(invalid(
                    join(p, "items"),
                    "[]",
                    "must only have a single schema if x-kubernetes-list-type is map",
                )),
                _ => {}
            }
            if let Some(it) = items {
                if items_ty != "object" {
                    self.schema_errs.push(invalid(
                        join(p, "items.type"),
                        &go_value(&Value::String(items_ty.into())),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let props = it.get("properties").and_then(Value::as_object);
                    let mut seen: Vec<&str> = Vec::new();
                    for k in &keys {
                        match props.and_then(|pr| pr.get(k)) {
                            Some(ks) => {
                                let kt = ks.get("type").and_then(Value::as_str).unwrap_or("");
                                if kt == "array" || kt == "object" {
                                    self.schema_errs.push(invalid(join(p, &format!("items.properties[{k}].type")), "\"object\"", "must be a scalar type if parent array's x-kubernetes-list-type is map"));
                                }
                            }
                            None => self.schema_errs.push(invalid(
                                join(p, "x-kubernetes-list-map-keys"),
                                &keys_repr(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(&k.as_str()) {
                            self.schema_errs.push(invalid(
                                join(p, "x-kubernetes-list-map-keys"),
                                &keys_repr(),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(k);
                    }
                }
            }
        }
        // validateMapListKeysMapSet
        if let (Some(lt @ ("set" | "map")), Some(it)) = (list_type, items) {
            if it.get("nullable").and_then(Value::as_bool) == Some(true) {
                self.schema_errs.push(forbidden(
                    join(p, "items.nullable"),
                    &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
                ));
            }
            if lt == "map" {
                let req: Vec<&str> = it
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let props = it.get("properties").and_then(Value::as_object);
                for k in &keys {
                    let Some(ks) = props.and_then(|pr| pr.get(k)) else {
                        continue;
                    };
                    if !req.contains(&k.as_str()) && ks.get("default").is_none_or(Value::is_null) {
                        self.schema_errs.push(required(join(p, &format!("items.properties[{k}].default")), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
                    }
                    if ks.get("nullable").and_then(Value::as_bool) == Some(true) {
                        self.schema_errs.push(forbidden(join(p, &format!("items.properties[{k}].nullable")), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"));
                    }
                }
            }
        }
    }

    /// Reads and checks `x-kubernetes-validations` (compiled later, once the schema is valid).
    pub(crate) fn validation_rules(
        &mut self,
        o: &Map<String, Value>,
        w: &Walk,
        n: &Node,
    ) -> Vec<CelRule> {
        let p = w.path.as_str();
        let list = match o.get("x-kubernetes-validations") {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(a)) => a,
            Some(other) => {
                self.bad_type(p, "x-kubernetes-validations", other, "a list");
                return Vec::new();
            }
        };
        let mut rules = Vec::with_capacity(list.len());
        for (i, r) in list.iter().enumerate() {
            let rp = join(p, &format!("x-kubernetes-validations[{i}]"));
            let Some(ro) = r.as_object() else {
                self.schema_errs
                    .push(invalid(rp, &go_value(r), "must be an object"));
                continue;
            };
            let rule = self.get_str(ro, &rp, "rule").unwrap_or("").to_string();
            let message = self.get_str(ro, &rp, "message").map(str::to_string);
            let message_expression = self
                .get_str(ro, &rp, "messageExpression")
                .map(str::to_string);
            let reason = self.get_str(ro, &rp, "reason").map(str::to_string);
            let field_path = self.get_str(ro, &rp, "fieldPath").map(str::to_string);
            let optional_old_self = self.get_bool(ro, &rp, "optionalOldSelf");
            let trimmed_rule = rule.trim();
            let trimmed_msg = message.as_deref().unwrap_or("").trim();
            let has_nl = |s: &str| s.contains('\n') || s.contains('\r');
            if trimmed_rule.is_empty() {
                self.schema_errs
                    .push(required(join(&rp, "rule"), "rule is not specified"));
            } else if message.as_deref().is_some_and(|m| !m.is_empty()) && trimmed_msg.is_empty() {
                self.schema_errs.push(invalid(
                    join(&rp, "message"),
                    &go_value(&Value::String(message.clone().unwrap_or_default())),
                    "message must be non-empty if specified",
                ));
            } else if has_nl(trimmed_msg) {
                self.schema_errs.push(invalid(
                    join(&rp, "message"),
                    &go_value(&Value::String(message.clone().unwrap_or_default())),
                    "message must not contain line breaks",
                ));
            } else if has_nl(trimmed_rule) && trimmed_msg.is_empty() {
                self.schema_errs.push(required(
                    join(&rp, "message"),
                    "message must be specified if rule contains line breaks",
                ));
            }
            if message_expression
                .as_deref()
                .is_some_and(|m| !m.is_empty() && m.trim().is_empty())
            {
                self.schema_errs.push(required(
                    join(&rp, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                ));
            }
            let reason = match reason.as_deref() {
                None => None,
                Some(r) if VALIDATION_REASONS.contains(&r) => Reason::parse(r),
                Some(r) => {
                    self.schema_errs.push(not_supported(
                        join(&rp, "reason"),
                        &go_value(&Value::String(r.into())),
                        &VALIDATION_REASONS,
                    ));
                    None
                }
            };
            let mut normalized_field_path = None;
            if let Some(fp) = field_path.as_deref() {
                if !fp.is_empty() && fp.trim().is_empty() {
                    self.schema_errs.push(invalid(
                        join(&rp, "fieldPath"),
                        &go_value(&Value::String(fp.into())),
                        "fieldPath must be non-empty if specified",
                    ));
                }
                if has_nl(fp) {
                    self.schema_errs.push(invalid(
                        join(&rp, "fieldPath"),
                        &go_value(&Value::String(fp.into())),
                        "fieldPath must not contain line breaks",
                    ));
                }
                if !fp.is_empty() {
                    match crate::cel::valid_field_path(fp, n) {
                        Ok(norm) => normalized_field_path = Some(norm),
                        Err(_) => self.schema_errs.push(invalid(
                            join(&rp, "fieldPath"),
                            &go_value(&Value::String(fp.into())),
                            "fieldPath must be a valid path",
                        )),
                    }
                }
            }
            for (what, src) in [
                ("rule", Some(&rule)),
                ("messageExpression", message_expression.as_ref()),
            ] {
                if let Some(src) = src {
                    if src.len() > self.opts.max_rule_length {
                        self.schema_errs.push(forbidden(
                            join(&rp, what),
                            &format!(
                                "must not be longer than {} bytes",
                                self.opts.max_rule_length
                            ),
                        ));
                    }
                }
            }
            rules.push(CelRule {
                rule,
                message,
                message_expression,
                reason,
                field_path: normalized_field_path,
                optional_old_self,
                uncorrelatable: w.uncorrelatable.clone(),
                path: rp,
                program: None,
            });
        }
        rules
    }
}
