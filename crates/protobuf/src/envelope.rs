//! The Kubernetes protobuf envelope: the `k8s\0` magic prefix followed by a
//! `runtime.Unknown { TypeMeta typeMeta = 1; bytes raw = 2;
//! string contentEncoding = 3; string contentType = 4 }` message.

use crate::error::Error;
use crate::wire::{Reader, WireValue};
use crate::TypeMeta;

/// The 4-byte prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\x00";

/// A parsed envelope.
pub(crate) struct Envelope<'a> {
    pub type_meta: TypeMeta,
    pub raw: &'a [u8],
}

fn string_of(value: WireValue<'_>, what: &str) -> Result<String, Error> {
    match value {
        WireValue::Len(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(Error::Envelope(format!(
            "{what} has wire type {}, expected length-delimited",
            other.wire_type().name()
        ))),
    }
}

fn bytes_of<'a>(value: WireValue<'a>, what: &str) -> Result<&'a [u8], Error> {
    match value {
        WireValue::Len(b) => Ok(b),
        other => Err(Error::Envelope(format!(
            "{what} has wire type {}, expected length-delimited",
            other.wire_type().name()
        ))),
    }
}

fn parse_type_meta(bytes: &[u8], tm: &mut TypeMeta) -> Result<(), Error> {
    let mut r = Reader::new(bytes);
    while let Some((number, value)) = r
        .field()
        .map_err(|e| Error::Envelope(format!("typeMeta: {e}")))?
    {
        match number {
            1 => tm.api_version = string_of(value, "typeMeta.apiVersion")?,
            2 => tm.kind = string_of(value, "typeMeta.kind")?,
            _ => {}
        }
    }
    Ok(())
}

/// Splits a body into its type and the object's protobuf bytes.
pub(crate) fn parse(body: &[u8]) -> Result<Envelope<'_>, Error> {
    if body.is_empty() {
        return Err(Error::Empty);
    }
    let Some(rest) = body.strip_prefix(MAGIC.as_slice()) else {
        return Err(Error::BadMagic);
    };
    let mut type_meta = TypeMeta::default();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    let mut content_type = String::new();
    let mut r = Reader::new(rest);
    while let Some((number, value)) = r.field().map_err(|e| Error::Envelope(e.to_string()))? {
        match number {
            1 => parse_type_meta(bytes_of(value, "typeMeta")?, &mut type_meta)?,
            2 => raw = bytes_of(value, "raw")?,
            3 => content_encoding = string_of(value, "contentEncoding")?,
            4 => content_type = string_of(value, "contentType")?,
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(Error::Envelope(format!(
            "unsupported contentEncoding {content_encoding:?}"
        )));
    }
    if !content_type.is_empty() && content_type != crate::MEDIA_TYPE {
        return Err(Error::Envelope(format!(
            "unsupported contentType {content_type:?} (only {} is decoded)",
            crate::MEDIA_TYPE
        )));
    }
    if type_meta.kind.is_empty() {
        return Err(Error::Envelope("typeMeta.kind is missing".to_string()));
    }
    Ok(Envelope { type_meta, raw })
}
