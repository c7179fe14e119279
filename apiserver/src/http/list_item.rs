//! The items of a built-in type's LIST body as kube-apiserver writes them: without
//! `apiVersion` and `kind`. Upstream converts a list to its versioned Go type, whose items
//! carry an empty `TypeMeta` (both fields `omitempty`); custom resources, served as
//! unstructured objects, keep them, and so do kplane's own kinds (CRDs in kcp:
//! `ResourceType::is_typed`). client-go relies on it: its list-via-watch consistency check
//! compares a LIST's typed items with watch events decoded without their kind.
//!
//! The stored bytes are copied as they are, less the two top-level members, found by one
//! pass over the object that stops once both are seen (both sort early in the stored form).

use bytes::{BufMut, BytesMut};

/// Appends `item` to `buf` without its top-level `apiVersion` and `kind` members. An item
/// that is not a JSON object the scan understands is appended unchanged.
pub fn put_without_type_meta(buf: &mut BytesMut, item: &[u8]) {
    match type_meta_members(item) {
        Some(cut) if cut.count > 0 => put_cut(buf, item, &cut),
        _ => buf.put_slice(item),
    }
}

/// The members to leave out, as byte ranges of the item: each from its key's opening quote
/// to the end of its value.
#[derive(Debug, Default)]
struct Cut {
    ranges: [(usize, usize); 2],
    count: usize,
}

fn put_cut(buf: &mut BytesMut, item: &[u8], cut: &Cut) {
    // Copy what lies between the cut members, dropping the comma that separated each cut
    // member from its neighbour: the one after it, or (for the object's last member) the
    // one before it, which may already be in `buf`.
    let base = buf.len();
    let mut pos = 0;
    for &(start, end) in &cut.ranges[..cut.count] {
        buf.put_slice(&item[pos..start]);
        let after = skip_ws(item, end);
        if item.get(after) == Some(&b',') {
            pos = skip_ws(item, after + 1);
        } else {
            let mut len = buf.len();
            while len > base && buf[len - 1].is_ascii_whitespace() {
                len -= 1;
            }
            if len > base && buf[len - 1] == b',' {
                buf.truncate(len - 1);
            }
            pos = after;
        }
    }
    buf.put_slice(&item[pos..]);
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Finds the top-level `apiVersion` and `kind` members of a JSON object; `None` when the
/// bytes are not an object the scan can follow.
fn type_meta_members(s: &[u8]) -> Option<Cut> {
    let mut cut = Cut::default();
    let mut i = skip_ws(s, 0);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(s, i);
        match s.get(i)? {
            b'}' => return Some(cut),
            b'"' => {}
            _ => return None,
        }
        let key_start = i;
        let key_end = end_of_string(s, i)?;
        let key = &s[key_start + 1..key_end - 1];
        i = skip_ws(s, key_end);
        if s.get(i) != Some(&b':') {
            return None;
        }
        let value_end = end_of_value(s, skip_ws(s, i + 1))?;
        if key == b"apiVersion" || key == b"kind" {
            cut.ranges[cut.count] = (key_start, value_end);
            cut.count += 1;
            if cut.count == 2 {
                return Some(cut);
            }
        }
        i = skip_ws(s, value_end);
        match s.get(i)? {
            b',' => i += 1,
            b'}' => return Some(cut),
            _ => return None,
        }
    }
}

/// The index just past the string that opens at `s[i]` (a `"`).
fn end_of_string(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', s.get(j..)?)?;
        if s[j] == b'"' {
            return Some(j + 1);
        }
        j += 2; // an escape: skip the backslash and the character it escapes
    }
}

/// The index just past the value that starts at `s[i]`.
fn end_of_value(s: &[u8], i: usize) -> Option<usize> {
    match s.get(i)? {
        b'"' => end_of_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match s.get(j)? {
                    b'"' => {
                        j = end_of_string(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']') && !s[j].is_ascii_whitespace()
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn strip(s: &str) -> String {
        let mut buf = BytesMut::new();
        put_without_type_meta(&mut buf, s.as_bytes());
        String::from_utf8(buf.to_vec()).unwrap()
    }

    #[test]
    fn removes_top_level_type_meta_only() {
        let item = json!({
            "apiVersion": "v1",
            "data": {"kind": "x", "a": "{\"kind\":\"Job\",\"apiVersion\":\"v1\"}"},
            "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": "j"},
            "kind": "Event",
            "metadata": {"name": "e", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod"}]},
            "z": [1, "]", {"k": "}"}],
        });
        let out: Value = serde_json::from_str(&strip(&item.to_string())).unwrap();
        let mut want = item.clone();
        let o = want.as_object_mut().unwrap();
        o.remove("apiVersion");
        o.remove("kind");
        assert_eq!(out, want);
    }

    #[test]
    fn every_position_and_spacing_gives_valid_json() {
        for s in [
            r#"{"apiVersion":"v1","kind":"ConfigMap"}"#,
            r#"{"kind":"ConfigMap","apiVersion":"v1"}"#,
            r#"{"metadata":{},"kind":"ConfigMap","apiVersion":"v1"}"#,
            r#"{"apiVersion":"v1","metadata":{},"kind":"ConfigMap"}"#,
            r#"{ "a" : 1 , "apiVersion" : "v1" , "b" : true , "kind" : "K" , "c" : null }"#,
            r#"{"apiVersion":"v1"}"#,
            r#"{"a":-1.5e3,"kind":"K"}"#,
            r#"{}"#,
        ] {
            let out: Value = serde_json::from_str(&strip(s))
                .unwrap_or_else(|e| panic!("{s} gave {}: {e}", strip(s)));
            let mut want: Value = serde_json::from_str(s).unwrap();
            want.as_object_mut().unwrap().remove("apiVersion");
            want.as_object_mut().unwrap().remove("kind");
            assert_eq!(out, want, "{s}");
        }
    }

    #[test]
    fn what_the_scan_cannot_follow_is_copied_unchanged() {
        for s in [r#"[1,2]"#, r#"{"a":"#, r#"{"kind":"K""#, r#"{"a\"#, ""] {
            assert_eq!(strip(s), s);
        }
    }

    #[test]
    fn an_item_without_type_meta_is_copied_unchanged() {
        let s = r#"{"data":{"a":"b"},"metadata":{"name":"x"}}"#;
        assert_eq!(strip(s), s);
    }
}
