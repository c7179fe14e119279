//! A compiled type model: a graph of nodes (one per struct type, list or map) that both the
//! built-in table ([`crate::builtin`]) and CRD schemas ([`crate::schema`]) compile into,
//! and that answers [`TypeInfo`] questions by walking a type path.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use serde_json::Value;

use crate::types::{ListType, MapType, PatchMeta, PatchStrategy, PathElement, TypeInfo};

/// Node of fields nothing is known about, inside typed kinds: a struct with unknown
/// fields, atomic lists.
pub(crate) const UNKNOWN: usize = 0;
/// Node of schemaless ("deduced") data: every object a map with arbitrary keys, lists atomic.
pub(crate) const DEDUCED: usize = 1;

/// FNV-1a: field-name lookups on the hot path of every walk. The keys are schema field
/// names (trusted, few per node), so a non-randomised hash is fine here.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

pub(crate) type FieldMap = HashMap<String, usize, BuildHasherDefault<Fnv>>;

#[derive(Clone, Debug, Default)]
pub(crate) struct Node {
    /// Named fields (struct properties).
    pub fields: FieldMap,
    /// Named fields are those of another node as well (a named struct type).
    pub fields_from: Option<usize>,
    /// Element node: list items, or values of a map with arbitrary keys.
    pub elem: Option<usize>,
    /// A map with arbitrary keys (values are `elem`).
    pub is_map: bool,
    pub list: ListType,
    pub key_defaults: Vec<(String, Value)>,
    pub map: MapType,
    /// SMP metadata when this node is a list (`None`: replace).
    pub list_smp: Option<PatchMeta>,
    pub map_strategy: Option<PatchStrategy>,
}

/// The node graph. Nodes 0 and 1 are [`UNKNOWN`] and [`DEDUCED`].
#[derive(Clone, Debug)]
pub(crate) struct Model {
    pub nodes: Vec<Node>,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

impl Model {
    pub fn new() -> Self {
        let deduced = Node {
            is_map: true,
            elem: Some(DEDUCED),
            ..Node::default()
        };
        Model {
            nodes: vec![Node::default(), deduced],
        }
    }

    pub fn add(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn node(&self, i: usize) -> &Node {
        self.nodes.get(i).unwrap_or(&self.nodes[UNKNOWN])
    }

    fn field(&self, n: usize, name: &str) -> Option<usize> {
        let mut cur = Some(n);
        // `fields_from` chains are short (a wrapper node and its named type).
        for _ in 0..8 {
            let node = self.node(cur?);
            if let Some(&c) = node.fields.get(name) {
                return Some(c);
            }
            cur = node.fields_from;
        }
        None
    }

    fn child(&self, n: usize, seg: &PathElement<'_>) -> usize {
        let node = self.node(n);
        match seg {
            PathElement::Field(f) => match self.field(n, f) {
                Some(c) => c,
                None if node.is_map => node.elem.unwrap_or(UNKNOWN),
                None if n == DEDUCED => DEDUCED,
                None => UNKNOWN,
            },
            PathElement::Item => node
                .elem
                .unwrap_or(if n == DEDUCED { DEDUCED } else { UNKNOWN }),
        }
    }

    pub fn resolve(&self, root: usize, path: &[PathElement<'_>]) -> usize {
        path.iter().fold(root, |n, seg| self.child(n, seg))
    }
}

/// A [`TypeInfo`] backed by a compiled [`Model`] and a root node.
#[derive(Clone, Debug)]
pub struct ModelTypeInfo {
    pub(crate) model: Arc<Model>,
    pub(crate) root: usize,
    pub(crate) empty: Value,
}

impl ModelTypeInfo {
    fn at(&self, path: &[PathElement<'_>]) -> &Node {
        self.model.node(self.model.resolve(self.root, path))
    }
}

impl TypeInfo for ModelTypeInfo {
    fn list_type(&self, path: &[PathElement<'_>]) -> ListType {
        self.at(path).list.clone()
    }

    fn map_type(&self, path: &[PathElement<'_>]) -> MapType {
        self.at(path).map
    }

    fn is_map(&self, path: &[PathElement<'_>]) -> bool {
        self.at(path).is_map
    }

    fn key_default(&self, path: &[PathElement<'_>], key: &str) -> Option<Value> {
        self.at(path)
            .key_defaults
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn list_patch_meta(&self, path: &[PathElement<'_>]) -> PatchMeta {
        let n = self.at(path);
        match &n.list_smp {
            Some(m) => m.clone(),
            None => PatchMeta::replace(),
        }
    }

    fn map_patch_strategy(&self, path: &[PathElement<'_>]) -> PatchStrategy {
        self.at(path).map_strategy.unwrap_or(PatchStrategy::Merge)
    }

    fn empty_object(&self) -> Value {
        self.empty.clone()
    }
}
