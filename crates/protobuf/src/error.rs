//! Error types of the protobuf decoder.

/// Why a protobuf request body could not be turned into JSON.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body is empty.
    #[error("protobuf body is empty")]
    Empty,
    /// The body does not start with the `k8s\0` magic prefix.
    #[error("protobuf body does not start with the Kubernetes magic prefix \"k8s\\x00\"")]
    BadMagic,
    /// The `runtime.Unknown` envelope is malformed or incomplete.
    #[error("invalid protobuf envelope: {0}")]
    Envelope(String),
    /// The envelope names a kind this crate cannot decode.
    #[error("protobuf decoding of kind {kind:?} in apiVersion {api_version:?} is not supported")]
    UnsupportedKind {
        /// apiVersion from the envelope.
        api_version: String,
        /// kind from the envelope.
        kind: String,
    },
    /// The embedded object's wire data is invalid.
    #[error("invalid protobuf data in {message}{}: {source}", field.map(|f| format!(" field {f}")).unwrap_or_default())]
    Wire {
        /// Protobuf message being decoded (k8s-pb path).
        message: &'static str,
        /// Field number, when the problem is tied to one field.
        field: Option<u32>,
        /// What is wrong.
        source: WireError,
    },
    /// Messages are nested deeper than [`crate::MAX_DEPTH`].
    #[error("protobuf message nesting exceeds {0} levels")]
    TooDeep(usize),
}

/// A problem with the bytes of one message.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Input ended inside a varint, length prefix or fixed-size value.
    #[error("unexpected end of data (truncated input or length prefix past the end)")]
    Truncated,
    /// A varint is longer than 10 bytes.
    #[error("varint longer than 10 bytes")]
    VarintOverflow,
    /// Field number 0 or above 2^29-1.
    #[error("invalid field number {0}")]
    BadFieldNumber(u64),
    /// Groups (wire types 3/4) or reserved wire types 6/7.
    #[error("unsupported wire type {0}")]
    UnsupportedWireType(u8),
    /// A known field arrived with the wrong wire type.
    #[error("wire type {found} where {expected} was expected")]
    WrongWireType {
        /// Wire type expected for the field's type.
        expected: &'static str,
        /// Wire type found.
        found: &'static str,
    },
    /// The value cannot be represented in Kubernetes JSON.
    #[error("{0}")]
    Value(String),
}
