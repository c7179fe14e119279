//! The stored bytes of an object written through the registry, made by the writing task.
//!
//! A write's bytes carry its resourceVersion, which only the storage's writer knows (it
//! assigns revisions, one thread for every write of the process). So that the writer does
//! not serialize objects, the object is serialized here, before the write is handed over,
//! with an empty slot for `metadata.resourceVersion`; the writer's encoder only copies the
//! revision's digits into it. The bytes are exactly `serde_json::to_vec` of the object
//! with `metadata.resourceVersion` set to the revision (the map's own order, compact).

use kplane_storage::{Encoder, Revision};
use serde_json::{Map, Value};

/// An object serialized around the value of its `metadata.resourceVersion`.
struct Slotted {
    bytes: Vec<u8>,
    /// Where the revision's digits go (between the string's quotes); `None` for an object
    /// without a `metadata` map, stored as it is.
    slot: Option<usize>,
}

impl Slotted {
    fn new(mut obj: Value) -> serde_json::Result<Slotted> {
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Ok(Slotted {
                bytes: serde_json::to_vec(&obj)?,
                slot: None,
            });
        };
        // In the map, where the revision will be (its place in the map's order).
        meta.insert("resourceVersion".into(), Value::String(String::new()));
        let Value::Object(top) = &obj else {
            return Ok(Slotted {
                bytes: serde_json::to_vec(&obj)?,
                slot: None,
            });
        };
        let mut out = Vec::with_capacity(1024);
        let mut slot = None;
        out.push(b'{');
        for (i, (k, v)) in top.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, k)?;
            out.push(b':');
            match v {
                Value::Object(meta) if k == "metadata" => {
                    slot = Some(write_meta(&mut out, meta)?);
                }
                v => serde_json::to_writer(&mut out, v)?,
            }
        }
        out.push(b'}');
        Ok(Slotted { bytes: out, slot })
    }

    fn with_revision(self, rev: Revision) -> Vec<u8> {
        let Some(slot) = self.slot else {
            return self.bytes;
        };
        let digits = rev.to_string();
        let mut out = Vec::with_capacity(self.bytes.len() + digits.len());
        out.extend_from_slice(&self.bytes[..slot]);
        out.extend_from_slice(digits.as_bytes());
        out.extend_from_slice(&self.bytes[slot..]);
        out
    }
}

/// Writes the `metadata` map; returns the offset of the empty resourceVersion's inside.
fn write_meta(out: &mut Vec<u8>, meta: &Map<String, Value>) -> serde_json::Result<usize> {
    let mut slot = 0;
    out.push(b'{');
    for (i, (k, v)) in meta.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k)?;
        out.push(b':');
        if k == "resourceVersion" {
            out.push(b'"');
            slot = out.len();
            out.push(b'"');
        } else {
            serde_json::to_writer(&mut *out, v)?;
        }
    }
    out.push(b'}');
    Ok(slot)
}

/// The encoder of a write of `obj` (its stored form): serialized now, by the caller; the
/// storage's writer adds the revision.
pub(crate) fn encoder(obj: Value) -> Encoder {
    match Slotted::new(obj) {
        Ok(s) => Box::new(move |rev: Revision| Ok(s.with_revision(rev))),
        Err(e) => {
            let e = e.to_string();
            Box::new(move |_| Err(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the writer used to do: set the revision, then serialize.
    fn reference(mut obj: Value, rev: Revision) -> Vec<u8> {
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rev.to_string()));
        }
        serde_json::to_vec(&obj).unwrap()
    }

    #[test]
    fn the_bytes_are_those_of_the_object_with_its_revision() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "namespace": "default", "uid": "u"},
                   "data": {"k": "v \" \\ \n é 😀 \u{1}"}}),
            // An old resourceVersion is replaced.
            json!({"kind": "X", "metadata": {"resourceVersion": "17", "name": "b", "zz": 1}}),
            // resourceVersion keys elsewhere are left alone.
            json!({"aa": {"resourceVersion": ""}, "metadata": {"annotations": {"resourceVersion": "x"}},
                   "spec": {"metadata": {"resourceVersion": "9"}}, "zz": [{"resourceVersion": 1}]}),
            json!({"metadata": {}}),
            json!({"metadata": "not a map", "x": 1}),
            json!({"kind": "NoMetadata"}),
            json!([1, 2]),
            Value::Null,
            json!({"metadata": {"managedFields": [{"fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}],
                                "labels": {"a\"b": "c"}, "name": "n"}, "status": {"x": 1.5, "y": null, "z": false}}),
        ];
        for obj in objects {
            for rev in [1, 42, 1_000_000_007, u64::MAX] {
                let got = (encoder(obj.clone()))(rev).unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(reference(obj.clone(), rev)).unwrap(),
                    "{obj} at {rev}"
                );
            }
        }
    }
}
