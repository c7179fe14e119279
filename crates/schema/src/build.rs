//! Turns an `openAPIV3Schema` JSON value into compiled [`Node`]s while applying the CRD
//! schema checks of apiextensions `validation.go` (`ValidateCustomResourceDefinitionOpenAPISchema`
//! and `specStandardValidatorV3`): forbidden keywords, list/map type rules, the checks on
//! `x-kubernetes-validations` entries, plus kplane's own bounds on hostile schemas.
//! Structural-schema invariants are checked alongside (see [`crate::structural`]).

use std::collections::HashMap;
use std::sync::Arc;

use kplane_types::Cause;
use serde_json::{Map, Value};

use crate::errors::{forbidden, go_value, invalid, not_supported, too_many};
use crate::formats::Format;
use crate::node::{Additional, Checks, EnumSet, Node, Pattern, Ty};
use crate::options::CompileOptions;
use crate::path::join;
use crate::structural;
use crate::walk::{Level, Walk};

const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Collects errors while building the node tree.
pub(crate) struct Builder<'o> {
    pub opts: &'o CompileOptions,
    /// Errors of the CRD schema checks (kept in walk order, like upstream).
    pub schema_errs: Vec<Cause>,
    /// Structural-schema errors (sorted by the caller, like upstream).
    pub structural_errs: Vec<Cause>,
    pub nodes: usize,
    nodes_exceeded: bool,
    regexes: HashMap<String, Arc<regex::Regex>>,
}

impl<'o> Builder<'o> {
    pub(crate) fn new(opts: &'o CompileOptions) -> Builder<'o> {
        Builder {
            opts,
            schema_errs: Vec::new(),
            structural_errs: Vec::new(),
            nodes: 0,
            nodes_exceeded: false,
            regexes: HashMap::new(),
        }
    }

    pub(crate) fn bad_type(&mut self, path: &str, key: &str, v: &Value, what: &str) {
        self.schema_errs.push(invalid(
            join(path, key),
            &go_value(v),
            &format!("must be {what}"),
        ));
    }

    pub(crate) fn get_str<'v>(
        &mut self,
        o: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<&'v str> {
        match o.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(v) => {
                self.bad_type(path, key, v, "a string");
                None
            }
        }
    }

    pub(crate) fn get_bool(
        &mut self,
        o: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Option<bool> {
        match o.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(v) => {
                self.bad_type(path, key, v, "a boolean");
                None
            }
        }
    }

    pub(crate) fn get_f64(&mut self, o: &Map<String, Value>, path: &str, key: &str) -> Option<f64> {
        match o.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(v) => {
                self.bad_type(path, key, v, "a number");
                None
            }
        }
    }

    pub(crate) fn get_i64(&mut self, o: &Map<String, Value>, path: &str, key: &str) -> Option<i64> {
        match o.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
            Some(v) => {
                self.bad_type(path, key, v, "an integer");
                None
            }
        }
    }

    pub(crate) fn get_strings(
        &mut self,
        o: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Vec<String> {
        match o.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            Some(v) => {
                self.bad_type(path, key, v, "a list of strings");
                Vec::new()
            }
        }
    }

    fn compile_pattern(&mut self, path: &str, src: &str) -> Option<Pattern> {
        if let Some(re) = self.regexes.get(src) {
            return Some(Pattern {
                src: src.into(),
                re: re.clone(),
            });
        }
        let fail = |msg: String| {
            invalid(
                join(path, "pattern"),
                &kplane_types::validation::go_quote(src),
                &format!("must be a valid regular expression, but isn't: {msg}"),
            )
        };
        if src.len() > self.opts.max_pattern_length {
            self.structural_errs.push(fail(format!(
                "pattern longer than {} bytes",
                self.opts.max_pattern_length
            )));
            return None;
        }
        match regex::RegexBuilder::new(&crate::validate::translate_re2(src))
            .size_limit(self.opts.regex_size_limit)
            .dfa_size_limit(self.opts.regex_size_limit)
            .nest_limit(100)
            .build()
        {
            Ok(re) => {
                let re = Arc::new(re);
                self.regexes.insert(src.to_string(), re.clone());
                Some(Pattern {
                    src: src.into(),
                    re,
                })
            }
            Err(e) => {
                let detail = match &e {
                    regex::Error::Syntax(s) => {
                        let last = s
                            .lines()
                            .last()
                            .unwrap_or("")
                            .trim_start_matches("error: ")
                            .to_string();
                        format!("error parsing regexp: {last}: `{src}`")
                    }
                    regex::Error::CompiledTooBig(limit) => {
                        format!(
                            "compiled regular expression exceeds the size limit of {limit} bytes"
                        )
                    }
                    other => other.to_string(),
                };
                self.structural_errs.push(fail(detail));
                None
            }
        }
    }

    /// Builds the node for the schema object `v` at `w`.
    pub(crate) fn node(&mut self, v: &Value, w: &Walk) -> Node {
        self.nodes += 1;
        if self.nodes > self.opts.max_schema_nodes {
            if !self.nodes_exceeded {
                self.nodes_exceeded = true;
                self.schema_errs.push(forbidden(
                    w.path.clone(),
                    &format!(
                        "schema is too large: more than {} schema objects",
                        self.opts.max_schema_nodes
                    ),
                ));
            }
            return Node::default();
        }
        if w.depth > self.opts.max_depth {
            self.schema_errs.push(forbidden(
                w.path.clone(),
                &format!(
                    "must not be nested more than {} levels deep",
                    self.opts.max_depth
                ),
            ));
            return Node::default();
        }
        let Some(o) = v.as_object() else {
            self.schema_errs
                .push(invalid(w.path.clone(), &go_value(v), "must be an object"));
            return Node::default();
        };
        let p = w.path.as_str();
        let mut n = Node::default();

        // --- specStandardValidatorV3.validate ---
        let ty_str = self.get_str(o, p, "type");
        if let Some(t) = ty_str {
            if !t.is_empty() && !OPENAPI_TYPES.contains(&t) {
                self.schema_errs.push(not_supported(
                    join(p, "type"),
                    &go_value(&Value::String(t.into())),
                    &OPENAPI_TYPES,
                ));
            }
            n.ty = Ty::parse(t);
        }
        let default = o.get("default").filter(|d| !d.is_null());
        if default.is_some() && !w.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !w.disallow_defaults_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&w.disallow_defaults_reason);
            }
            self.schema_errs
                .push(forbidden(join(p, "default"), &detail));
        }
        if self.get_str(o, p, "id").is_some_and(|s| !s.is_empty()) {
            self.schema_errs
                .push(forbidden(join(p, "id"), "id is not supported"));
        }
        for (key, msg) in [
            ("additionalItems", "additionalItems is not supported"),
            ("patternProperties", "patternProperties is not supported"),
            ("definitions", "definitions is not supported"),
            ("dependencies", "dependencies is not supported"),
            ("$ref", "$ref is not supported"),
        ] {
            let present = match o.get(key) {
                None | Some(Value::Null) => false,
                Some(Value::Object(m)) if key == "patternProperties" || key == "definitions" => {
                    !m.is_empty()
                }
                Some(_) => true,
            };
            if present {
                self.schema_errs.push(forbidden(join(p, key), msg));
            }
        }
        if ty_str == Some("null") {
            self.schema_errs.push(forbidden(
                join(p, "type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        let items_is_array = matches!(o.get("items"), Some(Value::Array(_)));
        if items_is_array {
            self.schema_errs.push(forbidden(
                join(p, "items"),
                "items must be a schema object and not an array",
            ));
        }
        let embedded = self
            .get_bool(o, p, "x-kubernetes-embedded-resource")
            .unwrap_or(false);
        if w.inside_resource_meta && embedded {
            self.schema_errs.push(forbidden(
                join(p, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
        n.embedded = embedded;
        if self.get_bool(o, p, "uniqueItems") == Some(true) {
            self.schema_errs.push(forbidden(
                join(p, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ));
        }

        // --- additionalProperties / properties ---
        let props_obj = match o.get("properties") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                self.bad_type(p, "properties", other, "an object");
                None
            }
        };
        let has_props = props_obj.is_some_and(|m| !m.is_empty());
        match o.get("additionalProperties") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => {
                if has_props && !*b {
                    self.schema_errs.push(forbidden(
                        join(p, "additionalProperties"),
                        "additionalProperties and properties are mutual exclusive",
                    ));
                }
                n.additional = Additional::Bool(*b);
            }
            Some(ap @ Value::Object(_)) => {
                if has_props {
                    self.schema_errs.push(forbidden(
                        join(p, "additionalProperties"),
                        "additionalProperties and properties are mutual exclusive",
                    ));
                }
                let mut cw = w.child("additionalProperties", Level::Field);
                if w.inside_resource_meta {
                    cw.forbid_defaults("inside additionalProperties applying to object metadata");
                }
                n.additional = Additional::Schema(Box::new(self.node(ap, &cw)));
            }
            Some(other) => {
                self.bad_type(p, "additionalProperties", other, "a boolean or an object")
            }
        }
        let map_type_str = self.get_str(o, p, "x-kubernetes-map-type");
        if let Some(m) = props_obj {
            let mut props: Vec<(Box<str>, Node)> = Vec::with_capacity(m.len());
            for (k, sub) in m {
                let mut cw = w.child(&format!("properties[{k}]"), Level::Field);
                if map_type_str == Some("atomic") {
                    cw.forbid_old_self(p);
                }
                if (w.is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
                    cw.inside_resource_meta = true;
                    if w.is_root {
                        cw.forbid_defaults(&format!("in top-level {k}"));
                    }
                }
                let child = self.node(sub, &cw);
                props.push((k.as_str().into(), child));
            }
            props.sort_by(|a, b| a.0.cmp(&b.0));
            n.properties = props;
        }

        // --- value validation ---
        let mut c = Checks::default();
        let nested_walk = |w: &Walk, key: &str| {
            let mut cw = w.child(key, w.level);
            cw.nested = true;
            cw
        };
        if let Some(not) = o.get("not").filter(|v| !v.is_null()) {
            c.not = Some(Box::new(self.node(not, &nested_walk(w, "not"))));
        }
        let any_of_pattern = structural::is_int_or_string_any_of(o.get("anyOf"));
        let all_of_pattern = structural::is_int_or_string_all_of(o.get("allOf"));
        for (key, is_any) in [("allOf", false), ("oneOf", false), ("anyOf", true)] {
            match o.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(list)) => {
                    let mut out = Vec::with_capacity(list.len());
                    for (i, sub) in list.iter().enumerate() {
                        let mut cw = nested_walk(w, &format!("{key}[{i}]"));
                        cw.skip_any_of = key == "allOf" && i == 0 && all_of_pattern && !w.nested;
                        // The int-or-string anyOf entries may set `type`.
                        let skip_self = is_any && ((any_of_pattern && !w.nested) || w.skip_any_of);
                        out.push(self.node_nested(sub, &cw, skip_self));
                    }
                    match key {
                        "allOf" => c.all_of = out,
                        "oneOf" => c.one_of = out,
                        _ => c.any_of = out,
                    }
                }
                Some(other) => self.bad_type(p, key, other, "a list of schemas"),
            }
        }
        if let Some(items) = o.get("items").filter(|v| v.is_object()) {
            let mut cw = w.child("items", Level::Item);
            if self.get_str(o, p, "x-kubernetes-list-type") != Some("map") {
                cw.forbid_old_self(p);
            }
            n.items = Some(Box::new(self.node(items, &cw)));
        }
        c.max_length = self.get_i64(o, p, "maxLength");
        c.min_length = self.get_i64(o, p, "minLength");
        c.max_items = self.get_i64(o, p, "maxItems");
        c.min_items = self.get_i64(o, p, "minItems");
        c.max_properties = self.get_i64(o, p, "maxProperties");
        c.min_properties = self.get_i64(o, p, "minProperties");
        c.maximum = self.get_f64(o, p, "maximum");
        c.minimum = self.get_f64(o, p, "minimum");
        c.multiple_of = self.get_f64(o, p, "multipleOf");
        c.exclusive_maximum = self.get_bool(o, p, "exclusiveMaximum").unwrap_or(false);
        c.exclusive_minimum = self.get_bool(o, p, "exclusiveMinimum").unwrap_or(false);
        c.unique_items = self.get_bool(o, p, "uniqueItems").unwrap_or(false);
        c.required = self
            .get_strings(o, p, "required")
            .into_iter()
            .map(Into::into)
            .collect();
        if let Some(pat) = self.get_str(o, p, "pattern").filter(|s| !s.is_empty()) {
            c.pattern = self.compile_pattern(p, pat);
        }
        match o.get("enum") {
            None | Some(Value::Null) => {}
            Some(Value::Array(values)) => {
                if values.len() > self.opts.max_enum_values {
                    self.schema_errs.push(too_many(
                        join(p, "enum"),
                        values.len() as i64,
                        self.opts.max_enum_values as i64,
                    ));
                } else if !values.is_empty() {
                    c.enumeration = Some(EnumSet::new(values.clone()));
                }
            }
            Some(other) => self.bad_type(p, "enum", other, "a list"),
        }
        let fmt_str = self.get_str(o, p, "format");
        if let Some(f) = fmt_str {
            n.format = Format::parse(f).map(|parsed| (parsed, f.into()));
        }
        n.nullable = self.get_bool(o, p, "nullable").unwrap_or(false);
        if w.is_root && n.nullable {
            self.schema_errs.push(forbidden(
                join(p, "nullable"),
                "nullable cannot be true at the root",
            ));
        }
        let preserve = self.get_bool(o, p, "x-kubernetes-preserve-unknown-fields");
        if preserve == Some(false) {
            self.schema_errs.push(invalid(
                join(p, "x-kubernetes-preserve-unknown-fields"),
                "false",
                "must be true or undefined",
            ));
        }
        n.preserve_unknown = preserve == Some(true);
        n.int_or_string = self
            .get_bool(o, p, "x-kubernetes-int-or-string")
            .unwrap_or(false);
        self.list_and_map_types(o, w, &mut n, map_type_str);
        if let Some(d) = default {
            n.default = Some(d.clone());
        }
        let has_checks = c.max_length.is_some()
            || c.min_length.is_some()
            || c.pattern.is_some()
            || c.maximum.is_some()
            || c.minimum.is_some()
            || c.multiple_of.is_some()
            || c.max_items.is_some()
            || c.min_items.is_some()
            || c.unique_items
            || c.max_properties.is_some()
            || c.min_properties.is_some()
            || !c.required.is_empty()
            || c.enumeration.is_some()
            || !c.all_of.is_empty()
            || !c.any_of.is_empty()
            || !c.one_of.is_empty()
            || c.not.is_some();
        if has_checks {
            n.checks = Some(Box::new(c));
        }
        n.rules = self.validation_rules(o, w, &n);

        // --- structural schema invariants ---
        if w.nested {
            structural::nested_checks(o, w, &mut self.structural_errs);
        } else {
            structural::spine_checks(o, &n, w, &mut self.structural_errs);
        }
        n.cel_below = !n.rules.is_empty()
            || n.properties.iter().any(|(_, c)| c.cel_below)
            || n.additional.schema().is_some_and(|a| a.cel_below)
            || n.items.as_ref().is_some_and(|i| i.cel_below)
            || n.checks
                .as_ref()
                .is_some_and(|c| c.all_of.iter().any(|a| a.cel_below));
        n.defaults_below = n.default.is_some()
            || n.properties.iter().any(|(_, c)| c.defaults_below)
            || n.additional.schema().is_some_and(|a| a.defaults_below)
            || n.items.as_ref().is_some_and(|i| i.defaults_below);
        n
    }

    /// A node inside allOf/anyOf/oneOf/not; `allow_type` for the int-or-string pattern.
    fn node_nested(&mut self, v: &Value, w: &Walk, allow_type: bool) -> Node {
        let before = self.structural_errs.len();
        let n = self.node(v, w);
        if allow_type {
            let ty_path = join(&w.path, "type");
            let mut i = before;
            while i < self.structural_errs.len() {
                if self.structural_errs[i].field == ty_path {
                    self.structural_errs.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        n
    }
}
