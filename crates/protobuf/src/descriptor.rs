//! Types of the generated descriptor table (`generated.rs`): what the generic
//! wire decoder needs to know about each protobuf message and field.

/// How a field's value is encoded on the wire and rendered as JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `string` → JSON string.
    String,
    /// `bytes` → base64 JSON string.
    Bytes,
    /// `bool` (varint) → JSON bool.
    Bool,
    /// `int32` (varint, truncated) → JSON number.
    Int32,
    /// `int64` (varint) → JSON number.
    Int64,
    /// `double` (fixed64) → JSON number.
    Double,
    /// Embedded message, index into `MESSAGES`.
    Message(usize),
}

/// Cardinality of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    /// Singular (`optional` in proto2).
    Single,
    /// `repeated` → JSON array.
    Repeated,
    /// `map<string, V>` → JSON object.
    Map,
}

/// When a field appears in the JSON (mirrors Go's `encoding/json` on the Go
/// struct the message decodes into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Presence {
    /// Always emitted; its zero value when absent from the wire (Go field
    /// without `omitempty`; non-`Option` in k8s-openapi).
    Required,
    /// Scalar Go pointer: emitted iff present on the wire, zero included.
    Pointer,
    /// Scalar Go value with `omitempty`: emitted iff present and non-zero.
    OmitEmpty,
    /// Go struct embedded with `json:",inline"`: the message's JSON fields
    /// are merged into the parent object (`json` is empty).
    Inline,
    /// Message, repeated or map field: emitted iff present on the wire
    /// (Go writes value structs always and pointers when non-nil, matching
    /// Go JSON, which never omits structs; empty lists/maps are not written).
    Optional,
}

/// Messages with a JSON form other than "object of fields".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// Plain message → JSON object.
    None,
    /// `metav1.Time` → RFC 3339, seconds precision, UTC.
    Time,
    /// `metav1.MicroTime` → RFC 3339 with exactly 6 fractional digits, UTC.
    MicroTime,
    /// `bytes raw = 1` holding JSON (`RawExtension`, `FieldsV1`, `JSON`).
    RawJson,
    /// `resource.Quantity` → JSON string.
    Quantity,
    /// `intstr.IntOrString` → JSON number or string.
    IntOrString,
    /// Go named string slice (`ExtraValue`): `repeated string items = 1` →
    /// JSON array of strings.
    StringList,
    /// `JSONSchemaPropsOrArray` → schema object or array of schemas.
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool` → schema object or bool.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray` → schema object or array of strings.
    SchemaOrStringArray,
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct FieldDesc {
    pub tag: u32,
    pub json: &'static str,
    pub kind: Kind,
    pub label: Label,
    pub presence: Presence,
}

/// One protobuf message.
#[derive(Debug)]
pub(crate) struct MessageDesc {
    /// k8s-pb module path of the message (diagnostics only).
    pub name: &'static str,
    pub special: Special,
    /// Sorted by tag.
    pub fields: &'static [FieldDesc],
}

/// A decodable kind.
#[derive(Debug)]
pub(crate) struct Root {
    /// `*` matches any apiVersion.
    pub api_version: &'static str,
    pub kind: &'static str,
    pub message: usize,
}
