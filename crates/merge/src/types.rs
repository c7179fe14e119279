//! Type information the engines need: how each list and map at a path merges.
//!
//! Kubernetes keeps this next to its types: `+listType`/`+listMapKey`/`+mapType` markers
//! (published as `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
//! `x-kubernetes-map-type`) drive server-side apply, and `patchStrategy`/`patchMergeKey`
//! struct tags (published as `x-kubernetes-patch-strategy`/`-merge-key`) drive strategic
//! merge patch. Both engines ask a [`TypeInfo`] by *type path*: field names from the root,
//! with [`PathElement::Item`] standing for "any element of this list".

use serde_json::{json, Value};

/// One step of a type path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathElement<'a> {
    /// A named field of a struct, or a key of a map with arbitrary keys.
    Field(&'a str),
    /// Any element of a list.
    Item,
}

/// How a list merges under server-side apply (`x-kubernetes-list-type`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ListType {
    /// Replaced as a whole; owned as one field (the default).
    #[default]
    Atomic,
    /// Scalar items, each owned separately (`v:<value>`).
    Set,
    /// Object items identified by the values of `keys` (`k:{...}`).
    Map { keys: Vec<String> },
}

/// How an object merges under server-side apply (`x-kubernetes-map-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MapType {
    /// Each field owned and merged separately (the default).
    #[default]
    Granular,
    /// Replaced as a whole; owned as one field.
    Atomic,
}

/// Strategic-merge-patch strategy of a field (`patchStrategy` struct tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchStrategy {
    /// Lists: merge items (by `merge_key` for objects, by value for scalars). Maps: merge keys.
    Merge,
    /// The patch value replaces the original.
    Replace,
}

/// Strategic-merge-patch metadata of a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchMeta {
    pub strategy: PatchStrategy,
    /// `patchMergeKey` of a list of objects.
    pub merge_key: Option<String>,
    /// `retainKeys` was part of the strategy (informational: `$retainKeys` is honoured anywhere).
    pub retain_keys: bool,
}

impl PatchMeta {
    /// `patchStrategy: replace` (what a field without a strategy gets).
    pub fn replace() -> Self {
        PatchMeta {
            strategy: PatchStrategy::Replace,
            merge_key: None,
            retain_keys: false,
        }
    }

    /// `patchStrategy: merge` with an optional merge key.
    pub fn merge(merge_key: Option<String>) -> Self {
        PatchMeta {
            strategy: PatchStrategy::Merge,
            merge_key,
            retain_keys: false,
        }
    }
}

/// Type information for one kind, answered by type path. Implementations must be cheap:
/// the engines ask once per list or object they visit.
pub trait TypeInfo: Send + Sync {
    /// List type of the list at `path` ([`ListType::Atomic`] when unknown).
    fn list_type(&self, path: &[PathElement<'_>]) -> ListType;

    /// Map type of the object at `path` ([`MapType::Granular`] when unknown).
    fn map_type(&self, path: &[PathElement<'_>]) -> MapType;

    /// Whether the object at `path` is a map with arbitrary keys (`additionalProperties`,
    /// e.g. `metadata.labels`) rather than a struct with named fields. Server-side apply
    /// owns every key of such a map as a node of its own (`.` in FieldsV1), as upstream does.
    fn is_map(&self, _path: &[PathElement<'_>]) -> bool {
        false
    }

    /// Default of key field `key` for items of the map-list at `path`, used when an item
    /// omits it (e.g. `protocol: TCP` of container ports).
    fn key_default(&self, _path: &[PathElement<'_>], _key: &str) -> Option<Value> {
        None
    }

    /// Strategic-merge-patch metadata of the list at `path`. The default derives it from
    /// the list type: a map-list merges by its first key, a set merges by value, an atomic
    /// list is replaced.
    fn list_patch_meta(&self, path: &[PathElement<'_>]) -> PatchMeta {
        match self.list_type(path) {
            ListType::Atomic => PatchMeta::replace(),
            ListType::Set => PatchMeta::merge(None),
            ListType::Map { keys } => PatchMeta::merge(keys.into_iter().next()),
        }
    }

    /// Strategic-merge-patch strategy of the object at `path` (merge unless told otherwise).
    fn map_patch_strategy(&self, _path: &[PathElement<'_>]) -> PatchStrategy {
        PatchStrategy::Merge
    }

    /// The kind's zero object as Kubernetes serialises its empty Go struct (the "live"
    /// object a create is compared with), e.g. `{"spec":{"template":{"spec":{}}}}` for a
    /// Job. Decides which new intermediate fields an `Update` entry records with `.`.
    fn empty_object(&self) -> Value {
        json!({})
    }
}

/// Type information for a kind nothing is known about, with the semantics upstream gives
/// such ("deduced") types: objects are granular maps, lists are atomic.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultTypeInfo;

impl TypeInfo for DefaultTypeInfo {
    fn list_type(&self, _path: &[PathElement<'_>]) -> ListType {
        ListType::Atomic
    }

    fn map_type(&self, _path: &[PathElement<'_>]) -> MapType {
        MapType::Granular
    }

    fn is_map(&self, _path: &[PathElement<'_>]) -> bool {
        true
    }
}

/// Renders a type path for error messages (`.spec.containers[*].ports`).
pub(crate) fn render_type_path(path: &[PathElement<'_>]) -> String {
    let mut s = String::new();
    for p in path {
        match p {
            PathElement::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            PathElement::Item => s.push_str("[*]"),
        }
    }
    s
}
