//! Process-wide sharing of compiled schemas: identical schemas (by canonical content hash
//! and compile options other than the static CEL cost limits) compile once and are shared
//! by every logical cluster; entries are weak, so a schema no cluster uses any more is
//! freed. The cost limits are applied to the shared schema per request, so a CRD written
//! under the limits, one updated without its schema changing (kube-apiserver then skips
//! the per-rule limit) and one being served (no static limits) share one compiled schema.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use kplane_types::Cause;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::compiled::{compile_without_cost_limits, CompiledSchema};
use crate::listtype::canonical_json;
use crate::options::CompileOptions;

/// A cache of compiled schemas keyed by content.
#[derive(Debug, Default)]
pub struct SchemaCache {
    entries: Mutex<HashMap<[u8; 32], Weak<CompiledSchema>>>,
}

fn key(schema: &Value, opts: &CompileOptions) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(canonical_json(schema).as_bytes());
    h.update(format!("\n{opts:?}").as_bytes());
    h.finalize().into()
}

impl SchemaCache {
    /// An empty cache.
    pub fn new() -> SchemaCache {
        SchemaCache::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], Weak<CompiledSchema>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The compiled schema for `schema`, compiling it only if no identical schema is alive,
    /// refused with the errors [`compile`] would report under `opts` (its cost limits
    /// included). Errors are not cached (they carry `field_prefix`).
    ///
    /// [`compile`]: crate::compile
    pub fn get_or_compile(
        &self,
        schema: &Value,
        field_prefix: &str,
        opts: &CompileOptions,
    ) -> Result<Arc<CompiledSchema>, Vec<Cause>> {
        let compiled = self.shared(schema, field_prefix, opts)?;
        let errs = compiled.cost_limit_errors(field_prefix, opts);
        if errs.is_empty() {
            Ok(compiled)
        } else {
            Err(errs)
        }
    }

    /// The shared schema, compiled without `opts`' cost limits.
    fn shared(
        &self,
        schema: &Value,
        field_prefix: &str,
        opts: &CompileOptions,
    ) -> Result<Arc<CompiledSchema>, Vec<Cause>> {
        let k = key(schema, &opts.without_cost_limits());
        if let Some(hit) = self.lock().get(&k).and_then(Weak::upgrade) {
            return Ok(hit);
        }
        let compiled = Arc::new(compile_without_cost_limits(schema, field_prefix, opts)?);
        let mut entries = self.lock();
        if let Some(hit) = entries.get(&k).and_then(Weak::upgrade) {
            return Ok(hit);
        }
        entries.insert(k, Arc::downgrade(&compiled));
        if entries.len() > 64 && entries.len().is_power_of_two() {
            entries.retain(|_, w| w.strong_count() > 0);
        }
        Ok(compiled)
    }

    /// Number of cached schemas still in use.
    pub fn len(&self) -> usize {
        self.lock()
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// Whether no cached schema is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
