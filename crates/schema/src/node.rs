//! The compiled form of a structural schema: one [`Node`] per schema object, with regexes
//! compiled, enums indexed and CEL rules parsed, so validating an object never re-reads
//! the schema JSON.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::cel::CelRule;
use crate::formats::Format;

/// An OpenAPI type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl Ty {
    pub(crate) fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "object" => Ty::Object,
            "array" => Ty::Array,
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::Object => "object",
            Ty::Array => "array",
            Ty::String => "string",
            Ty::Integer => "integer",
            Ty::Number => "number",
            Ty::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type` of an array, with its map keys (what server-side apply needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListType {
    /// `atomic` (also the default when unset).
    Atomic,
    /// `set`: scalar items, unique.
    Set,
    /// `map`: object items identified by the listed key fields.
    Map(Vec<String>),
}

/// `x-kubernetes-map-type` of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapType {
    /// Merged field by field (the default).
    Granular,
    /// Replaced as a whole.
    Atomic,
}

/// One step of a path into an object, for [`crate::CompiledSchema::list_type_at`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathElem {
    /// An object field or map key.
    Field(String),
    /// An array index (any index selects the items schema).
    Index(usize),
}

/// `additionalProperties` of an object schema.
#[derive(Debug, Default)]
pub(crate) enum Additional {
    /// Not set.
    #[default]
    Unset,
    /// `additionalProperties: true|false`.
    Bool(bool),
    /// `additionalProperties: {schema}`.
    Schema(Box<Node>),
}

impl Additional {
    pub(crate) fn is_set(&self) -> bool {
        !matches!(self, Additional::Unset)
    }

    pub(crate) fn schema(&self) -> Option<&Node> {
        match self {
            Additional::Schema(n) => Some(n),
            _ => None,
        }
    }
}

/// A compiled `pattern`; identical patterns in one schema share the regex.
#[derive(Debug)]
pub(crate) struct Pattern {
    pub src: Box<str>,
    pub re: Arc<regex::Regex>,
}

/// An `enum`, indexed for constant-time lookup of strings.
#[derive(Debug)]
pub(crate) struct EnumSet {
    /// The values in schema order (for the `supported values` message).
    pub values: Vec<Value>,
    /// String members.
    pub strings: HashSet<Box<str>>,
    /// Whether any member is not a string (then those are compared one by one).
    pub has_other: bool,
}

impl EnumSet {
    pub(crate) fn new(values: Vec<Value>) -> EnumSet {
        let strings = values
            .iter()
            .filter_map(|v| v.as_str().map(Box::from))
            .collect();
        let has_other = values.iter().any(|v| !v.is_string());
        EnumSet {
            values,
            strings,
            has_other,
        }
    }

    /// kube-openapi's enum membership: equal after converting the value to the member's type.
    pub(crate) fn contains(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self.strings.contains(s.as_str()),
            Value::Null => false,
            _ if !self.has_other => false,
            Value::Number(n) => self.values.iter().any(|e| match e {
                Value::Number(m) => match (n.as_i64(), m.as_i64()) {
                    (Some(a), Some(b)) => a == b,
                    (Some(a), None) => m.as_f64() == Some(a as f64),
                    // Go converts the float to the member's int64 type (truncating) before comparing.
                    (None, Some(b)) => n.as_f64().is_some_and(|f| f as i64 == b),
                    (None, None) => n.as_f64() == m.as_f64(),
                },
                _ => false,
            }),
            other => self.values.iter().any(|e| e == other),
        }
    }
}

/// Value validations (the OpenAPI keywords that constrain a value without shaping it).
#[derive(Debug, Default)]
pub(crate) struct Checks {
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<Pattern>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<Box<str>>,
    pub enumeration: Option<EnumSet>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
}

/// One compiled schema object.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub ty: Option<Ty>,
    pub nullable: bool,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    /// A format kube-openapi validates (unsupported formats are dropped, as upstream).
    pub format: Option<(Format, Box<str>)>,
    /// The (pruned) default.
    pub default: Option<Value>,
    /// Properties sorted by name.
    pub properties: Vec<(Box<str>, Node)>,
    pub additional: Additional,
    pub items: Option<Box<Node>>,
    pub list_type: Option<ListType>,
    pub map_type: Option<MapType>,
    pub checks: Option<Box<Checks>>,
    pub rules: Vec<CelRule>,
    /// Whether this node or any node below it (structurally) has CEL rules.
    pub cel_below: bool,
    /// Whether this node or any node below it has a default.
    pub defaults_below: bool,
}

impl Node {
    pub(crate) fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .binary_search_by(|(k, _)| k.as_ref().cmp(name))
            .ok()
            .and_then(|i| self.properties.get(i))
            .map(|(_, n)| n)
    }

    /// The type list kube-openapi checks (`integer,string` for int-or-string).
    pub(crate) fn type_names(&self) -> Option<&'static str> {
        if self.int_or_string {
            Some("integer,string")
        } else {
            self.ty.map(Ty::name)
        }
    }

    /// The schema type as CEL error values show it (`sts.Type`).
    pub(crate) fn type_str(&self) -> &'static str {
        self.ty.map(Ty::name).unwrap_or("")
    }

    /// The node a map entry (or unknown object field) is described by.
    pub(crate) fn child_for_key(&self, key: &str) -> Option<&Node> {
        self.property(key).or_else(|| self.additional.schema())
    }

    /// Rough heap footprint, for sizing reports.
    pub(crate) fn heap_size(&self) -> usize {
        let mut n = std::mem::size_of::<Node>();
        n += self.default.as_ref().map(value_size).unwrap_or(0);
        for (k, p) in &self.properties {
            n += k.len() + p.heap_size() + std::mem::size_of::<Box<str>>();
        }
        if let Additional::Schema(s) = &self.additional {
            n += s.heap_size();
        }
        if let Some(i) = &self.items {
            n += i.heap_size();
        }
        if let Some(ListType::Map(keys)) = &self.list_type {
            n += keys.iter().map(|k| k.len() + 24).sum::<usize>();
        }
        if let Some(c) = &self.checks {
            n += std::mem::size_of::<Checks>();
            if let Some(p) = &c.pattern {
                n += p.src.len() + 64;
            }
            n += c.required.iter().map(|r| r.len() + 16).sum::<usize>();
            if let Some(e) = &c.enumeration {
                n += e.values.iter().map(value_size).sum::<usize>() * 2;
            }
            for sub in c.all_of.iter().chain(&c.any_of).chain(&c.one_of) {
                n += sub.heap_size();
            }
            if let Some(s) = &c.not {
                n += s.heap_size();
            }
        }
        n += self.rules.iter().map(CelRule::heap_size).sum::<usize>();
        n
    }
}

/// Rough heap footprint of a JSON value.
pub(crate) fn value_size(v: &Value) -> usize {
    match v {
        Value::String(s) => 32 + s.len(),
        Value::Array(a) => 32 + a.iter().map(value_size).sum::<usize>(),
        Value::Object(m) => {
            48 + m
                .iter()
                .map(|(k, v)| 32 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 32,
    }
}
