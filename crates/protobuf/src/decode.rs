//! The generic, table-driven decoder: walks a message's wire bytes using its
//! [`MessageDesc`] and renders Kubernetes (Go `encoding/json`) JSON, including
//! the special JSON forms of `Time`, `MicroTime`, `Quantity`, `IntOrString`,
//! raw JSON payloads and the apiextensions schema unions.

use base64::Engine as _;
use chrono::Datelike as _;
use serde_json::{Map, Number, Value};

use crate::descriptor::{FieldDesc, Kind, Label, MessageDesc, Presence, Special};
use crate::error::{Error, WireError};
use crate::generated::MESSAGES;
use crate::wire::{Reader, WireType, WireValue};
use crate::MAX_DEPTH;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds: a `Time`
/// carrying it is "unset" and renders as JSON `null`, like Go.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Everything seen on the wire for one field of the message being decoded.
enum Acc<'a> {
    /// Not on the wire.
    Absent,
    /// Singular scalar: the last occurrence wins (protobuf semantics).
    Scalar(WireValue<'a>),
    /// Singular message: every occurrence, merged when decoded.
    Chunks(Vec<&'a [u8]>),
    /// Repeated field, already rendered.
    List(Vec<Value>),
    /// Map field, already rendered (a repeated key: last wins).
    Map(Map<String, Value>),
}

fn message_desc(index: usize) -> Result<&'static MessageDesc, Error> {
    MESSAGES.get(index).ok_or(Error::Wire {
        message: "descriptor table",
        field: None,
        source: WireError::Value(format!("no message #{index}")),
    })
}

fn wire_err(desc: &MessageDesc, field: Option<u32>, source: WireError) -> Error {
    Error::Wire {
        message: desc.name,
        field,
        source,
    }
}

/// Decodes the concatenation of `chunks` (protobuf merge semantics) as
/// message `index` and returns its JSON. `Value::Null` means "unset" for the
/// special messages that Go renders as `null` (zero `Time`, empty raw JSON).
pub(crate) fn decode_message(index: usize, chunks: &[&[u8]], depth: usize) -> Result<Value, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::TooDeep(MAX_DEPTH));
    }
    let desc = message_desc(index)?;
    if matches!(desc.special, Special::Time | Special::MicroTime)
        && chunks.iter().all(|c| c.is_empty())
    {
        // Go marshals a zero Time as an empty message.
        return Ok(Value::Null);
    }
    let accs = collect(desc, chunks, depth)?;
    if desc.special == Special::None {
        Ok(Value::Object(render_object(desc, accs, depth)?))
    } else {
        render_special(desc, accs, depth)
    }
}

/// Renders a message with a special JSON form (kept out of the recursive
/// path's frame: debug builds give every local its own stack slot).
#[inline(never)]
fn render_special(desc: &MessageDesc, accs: Vec<Acc<'_>>, depth: usize) -> Result<Value, Error> {
    match desc.special {
        Special::None => Ok(Value::Object(render_object(desc, accs, depth)?)),
        Special::Time | Special::MicroTime => {
            let seconds = int_field(&accs, desc, 1)?.unwrap_or(0);
            let nanos = i64::from(int_field(&accs, desc, 2)?.unwrap_or(0) as i32);
            if seconds == GO_ZERO_TIME_UNIX && nanos == 0 {
                return Ok(Value::Null);
            }
            let micro = desc.special == Special::MicroTime;
            format_time(seconds, nanos, micro)
                .map(Value::String)
                .map_err(|e| wire_err(desc, None, e))
        }
        Special::Quantity => match take(desc, accs, 1) {
            Some(Acc::Scalar(v)) => {
                scalar_json(Kind::String, v).map_err(|e| wire_err(desc, Some(1), e))
            }
            _ => Ok(Value::String("0".to_string())),
        },
        Special::IntOrString => {
            let ty = int_field(&accs, desc, 1)?.unwrap_or(0);
            match ty {
                0 => Ok(Value::from(int_field(&accs, desc, 2)?.unwrap_or(0) as i32)),
                1 => match take(desc, accs, 3) {
                    Some(Acc::Scalar(v)) => {
                        scalar_json(Kind::String, v).map_err(|e| wire_err(desc, Some(3), e))
                    }
                    _ => Ok(Value::String(String::new())),
                },
                other => Err(wire_err(
                    desc,
                    Some(1),
                    WireError::Value(format!("impossible IntOrString type {other}")),
                )),
            }
        }
        Special::RawJson => match take(desc, accs, 1) {
            Some(Acc::Scalar(WireValue::Len(raw))) if !raw.is_empty() => {
                serde_json::from_slice(raw).map_err(|e| {
                    wire_err(
                        desc,
                        Some(1),
                        WireError::Value(format!("embedded raw JSON is invalid: {e}")),
                    )
                })
            }
            _ => Ok(Value::Null),
        },
        Special::StringList => match take(desc, accs, 1) {
            Some(Acc::List(items)) => Ok(Value::Array(items)),
            _ => Ok(Value::Array(Vec::new())),
        },
        Special::SchemaOrArray => {
            // Go: the array when non-empty, else the schema (null if unset).
            let mut obj = render_object(desc, accs, depth)?;
            Ok(match obj.remove("jsonSchemas") {
                Some(Value::Array(a)) if !a.is_empty() => Value::Array(a),
                _ => obj.remove("schema").unwrap_or(Value::Null),
            })
        }
        Special::SchemaOrBool => {
            // Go: the schema when set, else the bool.
            let mut obj = render_object(desc, accs, depth)?;
            Ok(match obj.remove("schema") {
                Some(schema) => schema,
                None => Value::Bool(matches!(obj.remove("allows"), Some(Value::Bool(true)))),
            })
        }
        Special::SchemaOrStringArray => {
            // Go: the strings when non-empty, else the schema, else null.
            let mut obj = render_object(desc, accs, depth)?;
            Ok(match obj.remove("property") {
                Some(Value::Array(a)) if !a.is_empty() => Value::Array(a),
                _ => obj.remove("schema").unwrap_or(Value::Null),
            })
        }
    }
}

/// Removes and returns the accumulator of field `tag`.
fn take<'a>(desc: &MessageDesc, mut accs: Vec<Acc<'a>>, tag: u32) -> Option<Acc<'a>> {
    let i = desc.fields.iter().position(|f| f.tag == tag)?;
    if i < accs.len() {
        Some(accs.swap_remove(i))
    } else {
        None
    }
}

/// The raw integer of a singular varint field `tag`, if present.
fn int_field(accs: &[Acc<'_>], desc: &MessageDesc, tag: u32) -> Result<Option<i64>, Error> {
    let Some(i) = desc.fields.iter().position(|f| f.tag == tag) else {
        return Ok(None);
    };
    match accs.get(i) {
        Some(Acc::Scalar(WireValue::Varint(v))) => Ok(Some(*v as i64)),
        Some(Acc::Scalar(other)) => Err(wire_err(
            desc,
            Some(tag),
            WireError::WrongWireType {
                expected: WireType::Varint.name(),
                found: other.wire_type().name(),
            },
        )),
        _ => Ok(None),
    }
}

/// Reads every field occurrence of `chunks` into per-field accumulators.
fn collect<'a>(
    desc: &'static MessageDesc,
    chunks: &[&'a [u8]],
    depth: usize,
) -> Result<Vec<Acc<'a>>, Error> {
    let mut accs: Vec<Acc<'a>> = desc.fields.iter().map(|_| Acc::Absent).collect();
    for chunk in chunks {
        let mut reader = Reader::new(chunk);
        while let Some((number, value)) = reader.field().map_err(|e| wire_err(desc, None, e))? {
            // Unknown fields are skipped, as Go's generated decoder does.
            let Ok(i) = desc.fields.binary_search_by_key(&number, |f| f.tag) else {
                continue;
            };
            let (Some(field), Some(acc)) = (desc.fields.get(i), accs.get_mut(i)) else {
                continue;
            };
            accumulate(field, acc, value, depth).map_err(|e| e.in_field(desc, number))?;
        }
    }
    Ok(accs)
}

/// An error while accumulating one field: either a wire problem in this
/// message (to be located) or an error from a nested message (already located).
enum FieldError {
    Wire(WireError),
    Nested(Error),
}

impl FieldError {
    fn in_field(self, desc: &MessageDesc, number: u32) -> Error {
        match self {
            FieldError::Wire(e) => wire_err(desc, Some(number), e),
            FieldError::Nested(e) => e,
        }
    }
}

impl From<WireError> for FieldError {
    fn from(e: WireError) -> Self {
        FieldError::Wire(e)
    }
}

impl From<Error> for FieldError {
    fn from(e: Error) -> Self {
        FieldError::Nested(e)
    }
}

fn expect_len<'a>(value: WireValue<'a>) -> Result<&'a [u8], WireError> {
    match value {
        WireValue::Len(b) => Ok(b),
        other => Err(WireError::WrongWireType {
            expected: WireType::Len.name(),
            found: other.wire_type().name(),
        }),
    }
}

fn accumulate<'a>(
    field: &FieldDesc,
    acc: &mut Acc<'a>,
    value: WireValue<'a>,
    depth: usize,
) -> Result<(), FieldError> {
    match field.label {
        Label::Single => match field.kind {
            Kind::Message(_) => {
                let bytes = expect_len(value)?;
                match acc {
                    Acc::Chunks(chunks) => chunks.push(bytes),
                    _ => *acc = Acc::Chunks(vec![bytes]),
                }
            }
            kind => {
                check_wire_type(kind, value)?;
                *acc = Acc::Scalar(value);
            }
        },
        Label::Repeated => {
            if !matches!(acc, Acc::List(_)) {
                *acc = Acc::List(Vec::new());
            }
            let Acc::List(list) = acc else {
                return Ok(());
            };
            match (field.kind, value) {
                (Kind::Message(m), value) => {
                    let bytes = expect_len(value)?;
                    list.push(decode_message(m, &[bytes], depth + 1)?);
                }
                (Kind::Bool | Kind::Int32 | Kind::Int64, WireValue::Len(packed)) => {
                    let mut r = Reader::new(packed);
                    while !r.is_empty() {
                        list.push(scalar_json(field.kind, WireValue::Varint(r.varint()?))?);
                    }
                }
                (Kind::Double, WireValue::Len(packed)) => {
                    if packed.len() % 8 != 0 {
                        return Err(WireError::Truncated.into());
                    }
                    for c in packed.chunks_exact(8) {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(c);
                        let v = WireValue::Fixed64(u64::from_le_bytes(a));
                        list.push(scalar_json(Kind::Double, v)?);
                    }
                }
                (kind, value) => list.push(scalar_json(kind, value)?),
            }
        }
        Label::Map => {
            let entry = expect_len(value)?;
            let (key, value) = decode_map_entry(field.kind, entry, depth)?;
            if !matches!(acc, Acc::Map(_)) {
                *acc = Acc::Map(Map::new());
            }
            if let Acc::Map(map) = acc {
                map.insert(key, value);
            }
        }
    }
    Ok(())
}

/// Decodes one `map<string, V>` entry message `{key = 1; value = 2}`.
fn decode_map_entry(
    value_kind: Kind,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), FieldError> {
    let mut key = String::new();
    let mut scalar: Option<WireValue<'_>> = None;
    let mut chunks: Vec<&[u8]> = Vec::new();
    let mut r = Reader::new(entry);
    while let Some((number, value)) = r.field()? {
        match number {
            1 => key = String::from_utf8_lossy(expect_len(value)?).into_owned(),
            2 => match value_kind {
                Kind::Message(_) => chunks.push(expect_len(value)?),
                kind => {
                    check_wire_type(kind, value)?;
                    scalar = Some(value);
                }
            },
            _ => {}
        }
    }
    let value = match value_kind {
        Kind::Message(m) => decode_message(m, &chunks, depth + 1)?,
        kind => match scalar {
            Some(v) => scalar_json(kind, v)?,
            None => zero_json(kind),
        },
    };
    Ok((key, value))
}

fn expected_wire_type(kind: Kind) -> WireType {
    match kind {
        Kind::String | Kind::Bytes | Kind::Message(_) => WireType::Len,
        Kind::Bool | Kind::Int32 | Kind::Int64 => WireType::Varint,
        Kind::Double => WireType::Fixed64,
    }
}

fn check_wire_type(kind: Kind, value: WireValue<'_>) -> Result<(), WireError> {
    let expected = expected_wire_type(kind);
    if value.wire_type() == expected {
        Ok(())
    } else {
        Err(WireError::WrongWireType {
            expected: expected.name(),
            found: value.wire_type().name(),
        })
    }
}

/// Renders a scalar wire value as JSON.
fn scalar_json(kind: Kind, value: WireValue<'_>) -> Result<Value, WireError> {
    check_wire_type(kind, value)?;
    Ok(match (kind, value) {
        (Kind::String, WireValue::Len(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
        (Kind::Bytes, WireValue::Len(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Kind::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        // Go truncates an int32 varint to its low 32 bits.
        (Kind::Int32, WireValue::Varint(v)) => Value::from(v as i32),
        (Kind::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (Kind::Double, WireValue::Fixed64(bits)) => double_json(f64::from_bits(bits))?,
        _ => {
            return Err(WireError::Value(
                "message field where a scalar was expected".to_string(),
            ))
        }
    })
}

/// Go renders float64 without a fraction when integral (`1`, not `1.0`).
fn double_json(x: f64) -> Result<Value, WireError> {
    if !x.is_finite() {
        return Err(WireError::Value(format!(
            "{x} cannot be represented in JSON"
        )));
    }
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return Ok(Value::from(x as i64));
    }
    Number::from_f64(x)
        .map(Value::Number)
        .ok_or_else(|| WireError::Value(format!("{x} cannot be represented in JSON")))
}

/// The JSON of a scalar's zero value.
fn zero_json(kind: Kind) -> Value {
    match kind {
        Kind::String | Kind::Bytes => Value::String(String::new()),
        Kind::Bool => Value::Bool(false),
        Kind::Int32 | Kind::Int64 | Kind::Double | Kind::Message(_) => Value::from(0),
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// Renders the fields of a plain message as a JSON object, applying each
/// field's Go presence rule.
fn render_object(
    desc: &MessageDesc,
    accs: Vec<Acc<'_>>,
    depth: usize,
) -> Result<Map<String, Value>, Error> {
    let mut obj = Map::new();
    for (field, acc) in desc.fields.iter().zip(accs) {
        let required = field.presence == Presence::Required;
        match (field.label, field.kind, acc) {
            (Label::Single, Kind::Message(m), acc) => {
                let chunks = match acc {
                    Acc::Chunks(c) => c,
                    _ if required || field.presence == Presence::Inline => Vec::new(),
                    _ => continue,
                };
                let value = decode_message(m, &chunks, depth + 1)?;
                if field.presence == Presence::Inline {
                    if let Value::Object(inner) = value {
                        for (k, v) in inner {
                            obj.entry(k).or_insert(v);
                        }
                    }
                } else if !value.is_null() || required {
                    obj.insert(field.json.to_string(), value);
                }
            }
            (Label::Single, kind, Acc::Scalar(v)) => {
                let value = scalar_json(kind, v).map_err(|e| wire_err(desc, Some(field.tag), e))?;
                if field.presence != Presence::OmitEmpty || !is_zero(&value) {
                    obj.insert(field.json.to_string(), value);
                }
            }
            (Label::Single, kind, _) => {
                if required {
                    obj.insert(field.json.to_string(), zero_json(kind));
                }
            }
            (Label::Repeated, _, Acc::List(list)) if !list.is_empty() => {
                obj.insert(field.json.to_string(), Value::Array(list));
            }
            (Label::Map, _, Acc::Map(map)) if !map.is_empty() => {
                obj.insert(field.json.to_string(), Value::Object(map));
            }
            (Label::Repeated, _, _) => {
                if required {
                    obj.insert(field.json.to_string(), Value::Array(Vec::new()));
                }
            }
            (Label::Map, _, _) => {
                if required {
                    obj.insert(field.json.to_string(), Value::Object(Map::new()));
                }
            }
        }
    }
    Ok(obj)
}

/// Formats a protobuf `Timestamp` like Go's `metav1.Time` (RFC 3339,
/// seconds) or `metav1.MicroTime` (RFC 3339, exactly 6 fractional digits),
/// always in UTC with a `Z` suffix.
fn format_time(seconds: i64, nanos: i64, micro: bool) -> Result<String, WireError> {
    let out_of_range = || WireError::Value("timestamp out of range".to_string());
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(out_of_range)?;
    let nanos = u32::try_from(nanos.rem_euclid(1_000_000_000)).map_err(|_| out_of_range())?;
    let t = chrono::DateTime::from_timestamp(seconds, nanos).ok_or_else(out_of_range)?;
    if !(0..=9999).contains(&t.year()) {
        return Err(out_of_range());
    }
    let layout = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(t.format(layout).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_formats() {
        assert_eq!(
            format_time(1_136_214_245, 0, false).ok().as_deref(),
            Some("2006-01-02T15:04:05Z")
        );
        assert_eq!(
            format_time(1_136_214_245, 999_999_999, false)
                .ok()
                .as_deref(),
            Some("2006-01-02T15:04:05Z")
        );
        assert_eq!(
            format_time(1_136_214_245, 0, true).ok().as_deref(),
            Some("2006-01-02T15:04:05.000000Z")
        );
        assert_eq!(
            format_time(1_136_214_245, 123_456_789, true)
                .ok()
                .as_deref(),
            Some("2006-01-02T15:04:05.123456Z")
        );
        // Negative nanos normalise like Go's time.Unix.
        assert_eq!(
            format_time(1, -1, true).ok().as_deref(),
            Some("1970-01-01T00:00:00.999999Z")
        );
        assert!(format_time(i64::MAX, 0, false).is_err());
        assert!(format_time(i64::MIN, -1, false).is_err());
        assert!(format_time(300_000_000_000, 0, false).is_err());
    }

    #[test]
    fn doubles_like_go() {
        assert_eq!(double_json(1.0).ok(), Some(Value::from(1)));
        assert_eq!(double_json(-3.0).ok(), Some(Value::from(-3)));
        assert_eq!(double_json(0.5).ok(), Some(serde_json::json!(0.5)));
        assert!(double_json(f64::NAN).is_err());
        assert!(double_json(f64::INFINITY).is_err());
    }

    #[test]
    fn every_message_decodes_from_empty_input() {
        // Catches cycles of required message fields and bad indices.
        for (i, m) in MESSAGES.iter().enumerate() {
            let v = decode_message(i, &[], 1);
            assert!(v.is_ok(), "{}: {v:?}", m.name);
        }
    }
}
