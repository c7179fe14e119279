//! The table-driven encoder, the inverse of `decode.rs`: Kubernetes JSON → the wire
//! bytes of the object's protobuf message, walking the same [`MessageDesc`]s.
//!
//! Fields are written in tag order and map entries by key, as Go's generated marshallers
//! do; a field absent from the JSON (or `null`) is not written, which every protobuf
//! decoder reads as its zero value, so Go's client sees the object it would have read in
//! JSON. Messages with a special JSON form (`Time`, `Quantity`, `IntOrString`, raw JSON,
//! the schema unions) are turned back into their fields.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::descriptor::{FieldDesc, Kind, Label, MessageDesc, Presence, Special};
use crate::error::{Error, WireError};
use crate::generated::MESSAGES;
use crate::MAX_DEPTH;

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn write_tag(out: &mut Vec<u8>, tag: u32, wire: u32) {
    write_varint(out, u64::from(tag << 3 | wire));
}

/// Writes a length-delimited field.
pub(crate) fn write_bytes(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    write_tag(out, tag, LEN);
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn message_desc(index: usize) -> Result<&'static MessageDesc, Error> {
    MESSAGES.get(index).ok_or(Error::Wire {
        message: "descriptor table",
        field: None,
        source: WireError::Value(format!("no message #{index}")),
    })
}

fn value_err(desc: &MessageDesc, tag: Option<u32>, msg: String) -> Error {
    Error::Wire {
        message: desc.name,
        field: tag,
        source: WireError::Value(msg),
    }
}

/// Encodes `v` as message `index` (its fields only, no length prefix).
pub(crate) fn encode_message(index: usize, v: &Value, depth: usize) -> Result<Vec<u8>, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep(MAX_DEPTH));
    }
    let desc = message_desc(index)?;
    let mut out = Vec::new();
    match desc.special {
        Special::None => {
            let Value::Object(obj) = v else {
                return Err(value_err(
                    desc,
                    None,
                    format!("expected an object, got {v}"),
                ));
            };
            encode_fields(desc, obj, &mut out, depth)?;
        }
        _ => encode_special(desc, v, &mut out, depth)?,
    }
    Ok(out)
}

fn encode_fields(
    desc: &MessageDesc,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    for field in desc.fields {
        if field.presence == Presence::Inline {
            // The embedded struct's fields are the parent object's own.
            if let Kind::Message(m) = field.kind {
                if depth + 1 > MAX_DEPTH {
                    return Err(Error::TooDeep(MAX_DEPTH));
                }
                let mut inner = Vec::new();
                encode_fields(message_desc(m)?, obj, &mut inner, depth + 1)?;
                write_bytes(out, field.tag, &inner);
            }
            continue;
        }
        match obj.get(field.json) {
            None | Some(Value::Null) => {}
            Some(v) => encode_field(desc, field, v, out, depth)?,
        }
    }
    Ok(())
}

fn encode_field(
    desc: &MessageDesc,
    field: &FieldDesc,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    match field.label {
        Label::Single => encode_one(desc, field.tag, field.kind, v, out, depth),
        Label::Repeated => {
            let Value::Array(items) = v else {
                return Err(value_err(
                    desc,
                    Some(field.tag),
                    format!("expected an array, got {v}"),
                ));
            };
            for item in items {
                encode_one(desc, field.tag, field.kind, item, out, depth)?;
            }
            Ok(())
        }
        Label::Map => {
            let Value::Object(map) = v else {
                return Err(value_err(
                    desc,
                    Some(field.tag),
                    format!("expected an object, got {v}"),
                ));
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                let mut entry = Vec::new();
                write_bytes(&mut entry, 1, k.as_bytes());
                if let Some(val) = map.get(k).filter(|v| !v.is_null()) {
                    encode_one(desc, 2, field.kind, val, &mut entry, depth)?;
                }
                write_bytes(out, field.tag, &entry);
            }
            Ok(())
        }
    }
}

/// Writes one value of `kind` as field `tag`.
fn encode_one(
    desc: &MessageDesc,
    tag: u32,
    kind: Kind,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    let wrong = |what: &str| value_err(desc, Some(tag), format!("expected {what}, got {v}"));
    match kind {
        Kind::Message(m) => {
            if v.is_null() {
                return Ok(());
            }
            let inner = encode_message(m, v, depth + 1)?;
            write_bytes(out, tag, &inner);
        }
        Kind::String => write_bytes(
            out,
            tag,
            v.as_str().ok_or_else(|| wrong("a string"))?.as_bytes(),
        ),
        Kind::Bytes => {
            let s = v.as_str().ok_or_else(|| wrong("a base64 string"))?;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| value_err(desc, Some(tag), format!("invalid base64: {e}")))?;
            write_bytes(out, tag, &raw);
        }
        Kind::Bool => {
            write_tag(out, tag, VARINT);
            write_varint(
                out,
                u64::from(v.as_bool().ok_or_else(|| wrong("a boolean"))?),
            );
        }
        Kind::Int32 | Kind::Int64 => {
            let n = integer(v).ok_or_else(|| wrong("an integer"))?;
            let n = if kind == Kind::Int32 {
                i64::from(n as i32)
            } else {
                n
            };
            write_tag(out, tag, VARINT);
            // Negative numbers are ten-byte varints (two's complement), as Go writes them.
            write_varint(out, n as u64);
        }
        Kind::Double => {
            let x = v.as_f64().ok_or_else(|| wrong("a number"))?;
            write_tag(out, tag, FIXED64);
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
    }
    Ok(())
}

fn integer(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u as i64))
        .or_else(|| v.as_f64().filter(|x| x.fract() == 0.0).map(|x| x as i64))
}

#[inline(never)]
fn encode_special(
    desc: &MessageDesc,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), Error> {
    let as_object = |pairs: Vec<(&str, Value)>| {
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map<String, Value>>()
    };
    match desc.special {
        Special::None => {}
        Special::Time | Special::MicroTime => {
            let s = v
                .as_str()
                .ok_or_else(|| value_err(desc, None, format!("expected a time, got {v}")))?;
            let t = chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| value_err(desc, None, format!("invalid time {s:?}: {e}")))?;
            write_tag(out, 1, VARINT);
            write_varint(out, t.timestamp() as u64);
            write_tag(out, 2, VARINT);
            write_varint(out, u64::from(t.timestamp_subsec_nanos()));
        }
        Special::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(value_err(
                        desc,
                        None,
                        format!("expected a quantity, got {other}"),
                    ))
                }
            };
            write_bytes(out, 1, s.as_bytes());
        }
        Special::IntOrString => {
            // Go writes all three fields: type, intVal, strVal.
            let (ty, int, s) = match v {
                Value::String(s) => (1u64, 0i64, s.as_str()),
                other => match integer(other) {
                    Some(n) => (0, n, ""),
                    None => {
                        return Err(value_err(
                            desc,
                            None,
                            format!("expected an int or string, got {other}"),
                        ))
                    }
                },
            };
            write_tag(out, 1, VARINT);
            write_varint(out, ty);
            write_tag(out, 2, VARINT);
            write_varint(out, i64::from(int as i32) as u64);
            write_bytes(out, 3, s.as_bytes());
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(v)
                .map_err(|e| value_err(desc, Some(1), format!("unencodable JSON: {e}")))?;
            write_bytes(out, 1, &raw);
        }
        Special::StringList => {
            encode_fields(desc, &as_object(vec![("items", v.clone())]), out, depth)?;
        }
        Special::SchemaOrArray => {
            let obj = match v {
                Value::Array(_) => as_object(vec![("jsonSchemas", v.clone())]),
                _ => as_object(vec![("schema", v.clone())]),
            };
            encode_fields(desc, &obj, out, depth)?;
        }
        Special::SchemaOrBool => {
            let obj = match v {
                Value::Bool(b) => as_object(vec![("allows", Value::Bool(*b))]),
                _ => as_object(vec![("allows", Value::Bool(true)), ("schema", v.clone())]),
            };
            encode_fields(desc, &obj, out, depth)?;
        }
        Special::SchemaOrStringArray => {
            let obj = match v {
                Value::Array(_) => as_object(vec![("property", v.clone())]),
                _ => as_object(vec![("schema", v.clone())]),
            };
            encode_fields(desc, &obj, out, depth)?;
        }
    }
    Ok(())
}
