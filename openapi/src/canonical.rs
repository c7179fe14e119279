//! Deterministic JSON serialization and the document hash.
//!
//! Object keys are written in sorted order whatever map type `serde_json` was built with (its
//! `preserve_order` feature could be switched on by any crate in the build), so the bytes, and
//! therefore the hash, depend only on the content.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha512};

/// Serializes a [`Value`] with its object keys sorted.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(obj) => {
                let mut entries: Vec<(&String, &Value)> = obj.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, &Sorted(value))?;
                }
                map.end()
            }
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Compact JSON with sorted object keys.
pub(crate) fn to_json(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Sorted(value))
}

/// Uppercase hex SHA-512 of `bytes`, as the upstream server computes the `hash` of
/// `/openapi/v3/<gv>?hash=<H>`.
pub(crate) fn hash(bytes: &[u8]) -> String {
    hex::encode_upper(Sha512::digest(bytes))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_sorted_at_every_level() {
        let value = serde_json::json!({"b": 1, "a": [{"z": 1, "y": 2}]});
        let bytes = to_json(&value).unwrap();
        assert_eq!(bytes, br#"{"a":[{"y":2,"z":1}],"b":1}"#);
        assert_eq!(hash(&bytes).len(), 128);
        assert!(hash(&bytes)
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
    }
}
