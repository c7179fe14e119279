//! JSON decoding that notices duplicate object keys (serde_json's `Value` silently keeps
//! the last one), because `fieldValidation` must report them. serde_json's nesting limit
//! still applies, so hostile nesting is an error, not a stack overflow.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `bytes`, returning the value and the paths of duplicated keys.
pub fn parse_with_duplicates(bytes: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let dups = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Seed {
        path: String::new(),
        dups: &dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, dups.into_inner()))
}

struct Seed<'a> {
    path: String,
    dups: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Seed {
            path: format!("{}[{}]", self.path, out.len()),
            dups: self.dups,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            let v = map.next_value_seed(Seed {
                path: path.clone(),
                dups: self.dups,
            })?;
            if out.insert(k, v).is_some() {
                self.dups.borrow_mut().push(path);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_duplicates_with_paths() {
        let (v, d) =
            parse_with_duplicates(br#"{"a":1,"spec":{"r":1,"r":2},"l":[{"x":1,"x":2}],"a":3}"#)
                .unwrap();
        assert_eq!(v["a"], 3);
        assert_eq!(v["spec"]["r"], 2);
        assert_eq!(
            d,
            vec!["spec.r".to_string(), "l[0].x".to_string(), "a".to_string()]
        );
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        assert!(parse_with_duplicates(deep.as_bytes()).is_err());
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        assert!(parse_with_duplicates(b"{} x").is_err());
    }
}
