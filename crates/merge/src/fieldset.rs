//! Field sets: the trees of field paths that `metadata.managedFields` records per manager,
//! and their `FieldsV1` encoding.
//!
//! A path element is kept in its FieldsV1 spelling: `f:<field>` (a struct field or map
//! key), `k:<json>` (an item of a map-list, by its key fields, JSON with sorted keys),
//! `v:<json>` (an item of a set, by value), `i:<n>` (an item by index). In FieldsV1 a
//! node that is itself in the set and also has children carries a `.` entry; a leaf in
//! the set is `{}`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A set of field paths, as a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// No path at all (the root's own membership is ignored).
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    fn node_is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Whether this node is itself a member of its parent set.
    pub fn is_member(&self) -> bool {
        self.member
    }

    pub(crate) fn set_member(&mut self, m: bool) {
        self.member = m;
    }

    /// Child nodes by encoded path element.
    pub fn children(&self) -> &BTreeMap<String, FieldSet> {
        &self.children
    }

    pub(crate) fn child(&self, pe: &str) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    pub(crate) fn child_mut(&mut self, pe: &str) -> Option<&mut FieldSet> {
        self.children.get_mut(pe)
    }

    pub(crate) fn entry(&mut self, pe: String) -> &mut FieldSet {
        self.children.entry(pe).or_default()
    }

    /// Inserts a child subtree unless it is empty.
    pub(crate) fn put(&mut self, pe: String, child: FieldSet) {
        if !child.node_is_empty() {
            self.children.insert(pe, child);
        }
    }

    pub(crate) fn remove(&mut self, pe: &str) -> Option<FieldSet> {
        self.children.remove(pe)
    }

    /// Inserts a path (encoded elements).
    pub fn insert<S: AsRef<str>>(&mut self, path: &[S]) {
        let mut n = self;
        for pe in path {
            n = n.entry(pe.as_ref().to_string());
        }
        n.member = true;
    }

    /// Whether the path is a member.
    pub fn has<S: AsRef<str>>(&self, path: &[S]) -> bool {
        let mut n = self;
        for pe in path {
            match n.children.get(pe.as_ref()) {
                Some(c) => n = c,
                None => return false,
            }
        }
        !path.is_empty() && n.member
    }

    /// Adds every member of `other`.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (k, c) in &other.children {
            match self.children.get_mut(k) {
                Some(mine) => mine.union_with(c),
                None => {
                    self.children.insert(k.clone(), c.clone());
                }
            }
        }
    }

    /// Members of `self` that are not members of `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (k, c) in &self.children {
            match other.children.get(k) {
                Some(o) => {
                    let d = c.difference(o);
                    if !d.node_is_empty() {
                        out.children.insert(k.clone(), d);
                    }
                }
                None => {
                    out.children.insert(k.clone(), c.clone());
                }
            }
        }
        out
    }

    /// Removes the members of `other` in place.
    pub fn subtract(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (k, o) in &other.children {
            if let Some(c) = self.children.get_mut(k) {
                c.subtract(o);
                if c.node_is_empty() {
                    self.children.remove(k);
                }
            }
        }
    }

    /// Members of both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        let (small, big) = if self.children.len() <= other.children.len() {
            (&self.children, &other.children)
        } else {
            (&other.children, &self.children)
        };
        for (k, c) in small {
            if let Some(o) = big.get(k) {
                let i = c.intersection(o);
                if !i.node_is_empty() {
                    out.children.insert(k.clone(), i);
                }
            }
        }
        out
    }

    /// Member paths, in the order upstream iterates a set: at each node the member
    /// children first, then the subtrees.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect(&mut prefix, &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for (k, c) in &self.children {
            if c.member {
                let mut p = prefix.clone();
                p.push(k.clone());
                out.push(p);
            }
        }
        for (k, c) in &self.children {
            if !c.children.is_empty() {
                prefix.push(k.clone());
                c.collect(prefix, out);
                prefix.pop();
            }
        }
    }

    /// The FieldsV1 JSON of this set.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        self.encode_children(&mut m);
        Value::Object(m)
    }

    fn encode_children(&self, m: &mut Map<String, Value>) {
        for (k, c) in &self.children {
            let mut cm = Map::new();
            if c.member && !c.children.is_empty() {
                cm.insert(".".into(), Value::Object(Map::new()));
            }
            c.encode_children(&mut cm);
            m.insert(k.clone(), Value::Object(cm));
        }
    }

    /// Parses FieldsV1 JSON. `k:`/`v:` elements are re-encoded canonically.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let mut out = FieldSet::default();
        decode_into(v, &mut out, 0)?;
        out.member = false;
        Ok(out)
    }
}

const MAX_DECODE_DEPTH: usize = 256;

fn decode_into(v: &Value, node: &mut FieldSet, depth: usize) -> Result<(), String> {
    if depth > MAX_DECODE_DEPTH {
        return Err("fieldsV1 nested too deeply".into());
    }
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected an object in fieldsV1, got {v}"))?;
    if obj.is_empty() {
        node.member = true;
        return Ok(());
    }
    for (k, c) in obj {
        if k == "." {
            node.member = true;
            continue;
        }
        let pe = canonical_pe(k)?;
        let child = node.entry(pe);
        decode_into(c, child, depth + 1)?;
    }
    Ok(())
}

/// Validates and canonicalises one encoded path element.
pub(crate) fn canonical_pe(k: &str) -> Result<String, String> {
    let (prefix, rest) = k
        .split_once(':')
        .ok_or_else(|| format!("invalid path element {k:?} in fieldsV1"))?;
    match prefix {
        "f" => Ok(k.to_string()),
        "i" => rest
            .parse::<u64>()
            .map(|_| k.to_string())
            .map_err(|_| format!("invalid index in path element {k:?}")),
        "k" | "v" if looks_canonical(rest) => Ok(k.to_string()),
        "k" | "v" => {
            let parsed: Value = serde_json::from_str(rest)
                .map_err(|e| format!("invalid path element {k:?}: {e}"))?;
            if prefix == "k" && !parsed.is_object() {
                return Err(format!("invalid key in path element {k:?}"));
            }
            Ok(format!("{prefix}:{}", go_json(&parsed)))
        }
        _ => Err(format!("invalid path element {k:?} in fieldsV1")),
    }
}

/// Whether `json` is certainly already in canonical form (Go encoding, sorted keys): no
/// whitespace, escapes or characters Go escapes, no non-integral number syntax, and
/// object keys at the top level in increasing order. Anything else is re-encoded.
fn looks_canonical(json: &str) -> bool {
    let b = json.as_bytes();
    let (mut in_str, mut depth) = (false, 0usize);
    let mut key_start: Option<usize> = None;
    let mut prev_key: Option<&[u8]> = None;
    let mut expect_key = false;
    for (i, &c) in b.iter().enumerate() {
        if c < 0x20 || c == b'\\' || c == b'<' || c == b'>' || c == b'&' || c >= 0x80 {
            return false;
        }
        if in_str {
            if c == b'"' {
                in_str = false;
                if let Some(st) = key_start.take() {
                    let key = &b[st..i];
                    if prev_key.is_some_and(|p| p >= key) {
                        return false;
                    }
                    prev_key = Some(key);
                }
            }
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                if depth == 1 && expect_key {
                    key_start = Some(i + 1);
                }
                expect_key = false;
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1 && c == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => expect_key = depth == 1 && b.first() == Some(&b'{'),
            b' ' | b'.' | b'e' | b'E' => return false,
            _ => {}
        }
    }
    !in_str && depth == 0
}

/// JSON as Go's encoder writes it: compact, sorted object keys, HTML-safe escaping
/// (`<`, `>`, `&`, U+2028, U+2029 as `\uXXXX`), control characters as `\uXXXX` except
/// `\n`, `\r`, `\t`.
pub(crate) fn go_json(v: &Value) -> String {
    let mut s = String::new();
    push_go_json(&mut s, v);
    s
}

fn push_go_json(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => push_go_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_go_json(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_go_string(out, k);
                out.push(':');
                push_go_json(out, x);
            }
            out.push('}');
        }
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            // Go prints integral float64s without a fraction.
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => out.push_str(&format!("{f:.0}")),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

/// Appends a JSON string escaped as Go's `encoding/json` does.
pub(crate) fn push_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Renders a path as upstream prints it in conflicts: `.spec.containers[name="x"].image`,
/// `.metadata.finalizers[="a"]`, `.spec.args[0]`.
pub fn path_string<S: AsRef<str>>(path: &[S]) -> String {
    let mut s = String::new();
    for pe in path {
        let pe = pe.as_ref();
        let (prefix, rest) = pe.split_once(':').unwrap_or(("f", pe));
        match prefix {
            "k" => {
                let parsed: Value = serde_json::from_str(rest).unwrap_or(Value::Null);
                let parts: Vec<String> = match parsed.as_object() {
                    Some(m) => m
                        .iter()
                        .map(|(k, v)| format!("{k}={}", value_string(v)))
                        .collect(),
                    None => vec![rest.to_string()],
                };
                s.push('[');
                s.push_str(&parts.join(","));
                s.push(']');
            }
            "v" => {
                let parsed: Value = serde_json::from_str(rest).unwrap_or(Value::Null);
                s.push_str("[=");
                s.push_str(&value_string(&parsed));
                s.push(']');
            }
            "i" => {
                s.push('[');
                s.push_str(rest);
                s.push(']');
            }
            _ => {
                s.push('.');
                s.push_str(rest);
            }
        }
    }
    s
}

/// A value as upstream's `value.ToString` prints it (strings quoted).
fn value_string(v: &Value) -> String {
    match v {
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(value_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", value_string(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roundtrip_with_dot() {
        let v =
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(s.to_fields_v1(), v);
        assert!(s.has(&["f:spec", "f:containers", "k:{\"name\":\"a\"}"]));
        assert!(!s.has(&["f:spec"]));
    }

    #[test]
    fn canonical_keys() {
        let v = json!({"k:{ \"protocol\":\"TCP\", \"containerPort\": 80}": {}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert!(s.has(&["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]));
        let v = json!({"k:{\"protocol\":\"TCP\",\"containerPort\":80}": {}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert!(s.has(&["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]));
        let v = json!({"v:80.0": {}, "v:\"a<b\"": {}});
        let s = FieldSet::from_fields_v1(&v).unwrap();
        assert!(s.has(&["v:80"]) && s.has(&["v:\"a\\u003cb\""]));
        assert!(looks_canonical("{\"a\":1,\"b\":{\"z\":1,\"a\":2}}"));
        assert!(!looks_canonical("{\"b\":1,\"a\":2}"));
    }

    #[test]
    fn path_rendering() {
        let p = [
            "f:spec",
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}",
            "f:x",
            "v:\"a\"",
            "i:3",
        ];
        assert_eq!(
            path_string(&p),
            ".spec[containerPort=80,protocol=\"TCP\"].x[=\"a\"][3]"
        );
    }

    #[test]
    fn set_algebra() {
        let mut a = FieldSet::new();
        a.insert(&["f:a", "f:b"]);
        a.insert(&["f:a", "f:c"]);
        let mut b = FieldSet::new();
        b.insert(&["f:a", "f:c"]);
        assert_eq!(a.intersection(&b), b);
        let d = a.difference(&b);
        assert!(d.has(&["f:a", "f:b"]) && !d.has(&["f:a", "f:c"]));
        a.subtract(&b);
        assert_eq!(a, d);
    }
}
