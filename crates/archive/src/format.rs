//! The archive's vocabulary: the format version, magic and content type, and the
//! [`Header`], [`Record`] and [`Summary`] that the writer and the reader exchange with
//! their callers.

use serde::{Deserialize, Serialize};

/// The format version this kplane writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// The HTTP content type of an archive (the body may be compressed or plain).
pub const CONTENT_TYPE: &str = "application/vnd.kplane.archive";

/// The eight bytes every archive's framed content starts with (before compression).
pub const MAGIC: [u8; 8] = *b"\x89KPLARC\n";

/// The storage resource of CustomResourceDefinitions, whose records come first in each
/// cluster so that an importer knows every custom resource before its objects.
pub const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";

/// What the archive holds: the first frame of every archive, as JSON (camelCase keys).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The archive format version ([`FORMAT_VERSION`] when written by this kplane).
    pub format_version: u32,
    /// The exporting kplane's version, e.g. `v1.32.6-kplane.0.1.0+<commit>`.
    pub kplane_version: String,
    /// The external URL of the exporting server.
    pub source_server: String,
    /// The exported logical cluster path (the root of a recursive export).
    pub cluster: String,
    /// Whether the descendants of `cluster` are included.
    pub recursive: bool,
    /// The store revision every object was read at.
    pub revision: u64,
    /// How many records follow (the trailer repeats it).
    pub object_count: u64,
    /// When the export started, RFC 3339.
    pub created: String,
    /// The storage resources (`<group>/<plural>`) among the records whose values the
    /// source server encrypts at rest: the archive holds them in the clear. Optional
    /// (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decrypted: Vec<String>,
}

/// One stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The full source path of the object's logical cluster.
    pub cluster: String,
    /// The storage key's resource component (`"<group>/<plural>"`, core: `"/configmaps"`).
    pub resource: String,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// The object's JSON exactly as stored (a JSON object, incl. its resourceVersion).
    pub value: Vec<u8>,
}

/// What a finished write or a complete read saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Records in the archive.
    pub objects: u64,
    /// The archive's size as stored (compressed, if it is).
    pub bytes: u64,
    /// The SHA-256 of the framed content (the trailer's), lower-case hex.
    pub sha256: String,
}
