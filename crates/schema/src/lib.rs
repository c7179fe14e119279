//! kplane-schema: the structural-schema engine behind kplane's CustomResourceDefinitions.
//!
//! [`compile`] checks an `openAPIV3Schema` the way apiextensions-apiserver does (structural
//! schema rules, forbidden keywords, list/map types, defaults, CEL rules) and compiles it
//! into an immutable [`CompiledSchema`]: regexes built once, enums indexed, CEL parsed and
//! cost-checked. A compiled schema then prunes, defaults and validates objects with the
//! exact field paths and messages Kubernetes clients expect. [`SchemaCache`] shares one
//! compiled schema between every logical cluster that installs an identical schema.
//!
//! Hostile schemas are refused or bounded: nesting depth, number of schema objects, enum
//! size, pattern size (the `regex` crate is linear-time, so no catastrophic backtracking),
//! CEL rule size, expression depth and estimated cost; CEL evaluation runs under a per-call
//! and a per-request budget on a thread with a large stack.

mod build;
mod cache;
mod cel;
mod compiled;
mod defaults;
mod errors;
mod extensions;
mod formats;
mod listtype;
mod node;
mod objectmeta;
mod options;
mod path;
mod prune;
mod ratchet;
mod structural;
mod validate;
mod walk;

pub use cache::SchemaCache;
pub use cel::is_reserved_word;
pub use cel::policy;
pub use cel::typecheck;
pub use compiled::{compile, CompiledSchema, Validation};
pub use node::{ListType, MapType, PathElem};
pub use options::CompileOptions;
