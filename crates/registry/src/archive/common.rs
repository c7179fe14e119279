//! What the archive's import, journal and staged import share: the batch size, the
//! summary an import answers, and the re-stamping of an object's resourceVersion.

use serde_json::{json, Value};

/// Objects written per storage batch (one commit group each, and at most this many events
/// reach a watcher at once).
pub const IMPORT_BATCH: usize = 256;

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportSummary {
    /// The path the archive's root was imported as.
    pub cluster: String,
    /// Every cluster imported (the target and its re-rooted descendants).
    pub clusters: Vec<String>,
    pub objects: u64,
    /// The revision at which the import became visible: the clusters' new floor.
    pub revision: u64,
}

/// The archive's JSON `value` with `metadata.resourceVersion` set to `rev` (the target
/// re-assigns resourceVersions; everything else is kept as stored).
pub(crate) fn with_resource_version(value: &[u8], rev: u64) -> Result<Vec<u8>, String> {
    let mut obj: serde_json::Value = serde_json::from_slice(value).map_err(|e| e.to_string())?;
    if let Some(m) = obj
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        m.insert(
            "resourceVersion".into(),
            serde_json::Value::String(rev.to_string()),
        );
    }
    serde_json::to_vec(&obj).map_err(|e| e.to_string())
}

impl ImportSummary {
    /// The HTTP answer (`kind: ImportResult`).
    pub fn to_json(&self) -> Value {
        json!({"apiVersion": "kplane.io/v1alpha1", "kind": "ImportResult",
               "cluster": self.cluster, "clusters": self.clusters,
               "objects": self.objects, "revision": self.revision})
    }
}
