//! Field selectors: the `fieldSelector` query grammar of apimachinery's
//! `fields.ParseSelector` (`pkg/fields/selector.go`), with its error messages.
//!
//! A selector is a comma-separated AND of `field=value`, `field==value` and
//! `field!=value` terms. In values, `\,`, `\=` and `\\` stand for `,`, `=` and `\`; an
//! unescaped `,` splits terms and an unescaped `=` in a value is an error. A field the
//! object lacks reads as the empty string. Which fields exist is the server's business
//! ([`FieldSelector::unsupported_field`] finds the first one a type does not offer, for
//! `field label not supported: <f>`); [`object_field`] reads a dotted path of a JSON object.

use std::fmt;

use serde_json::Value;

pub use crate::labels::SelectorError;

/// Longest selector string accepted (a guard against hostile input).
pub const MAX_SELECTOR_LENGTH: usize = 128 * 1024;

/// A field-selector operator. `==` parses to [`FieldOperator::Equals`], as upstream does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

/// One `field op value` term; `value` is unescaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    /// Whether an object whose field reads `actual` (None: absent, i.e. `""`) matches.
    pub fn matches_value(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{}{}", self.field, op, escape_value(&self.value))
    }
}

/// A parsed field selector (an AND of requirements; empty matches everything).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Splits on commas that are not escaped; escapes stay in the terms.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    if s.is_empty() {
        return terms;
    }
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// The first `!=`, `==` or `=` (tried in that order at each position) splits a term.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if let Some(rhs) = rest.strip_prefix("!=") {
            return Some((&term[..i], FieldOperator::NotEquals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix("==") {
            return Some((&term[..i], FieldOperator::Equals, rhs));
        }
        if let Some(rhs) = rest.strip_prefix('=') {
            return Some((&term[..i], FieldOperator::Equals, rhs));
        }
    }
    None
}

/// Escapes `\`, `,` and `=` for use as a field-selector value (`fields.EscapeValue`).
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Undoes [`escape_value`] (`fields.UnescapeValue`), with upstream's errors.
pub fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                other => {
                    return Err(SelectorError(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )))
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its code point.
            ',' | '=' => {
                return Err(SelectorError(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )))
            }
            other => out.push(other),
        }
    }
    if in_slash {
        return Err(SelectorError(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

impl FieldSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Parses a `fieldSelector` query value (`fields.ParseSelector`). Terms are sorted
    /// as upstream sorts them; empty terms are skipped.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        if selector.len() > MAX_SELECTOR_LENGTH {
            return Err(SelectorError(format!(
                "field selector is too long: {} bytes, limit is {MAX_SELECTOR_LENGTH}",
                selector.len()
            )));
        }
        let mut parts = split_terms(selector);
        parts.sort_unstable();
        let mut requirements = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, operator, rhs)) = split_term(part) else {
                return Err(SelectorError(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                )));
            };
            requirements.push(FieldRequirement {
                field: lhs.to_string(),
                operator,
                value: unescape_value(rhs)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// A selector requiring `field` to equal `value`.
    pub fn one_term_equal(field: &str, value: &str) -> Self {
        FieldSelector {
            requirements: vec![FieldRequirement {
                field: field.to_string(),
                operator: FieldOperator::Equals,
                value: value.to_string(),
            }],
        }
    }

    /// True when nothing is restricted.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, in upstream's (sorted) order; the server checks each `field` against
    /// the fields its type supports.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Renames every field with `convert`, stopping at the first error (upstream
    /// `Selector.Transform` with a type's field label conversion function).
    pub fn transform<E, F: Fn(&str) -> Result<String, E>>(self, convert: F) -> Result<Self, E> {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for mut r in self.requirements {
            r.field = convert(&r.field)?;
            requirements.push(r);
        }
        Ok(FieldSelector { requirements })
    }

    /// The first field not accepted by `supported`, for `field label not supported: <f>`.
    pub fn unsupported_field<F: Fn(&str) -> bool>(&self, supported: F) -> Option<&str> {
        self.requirements
            .iter()
            .map(|r| r.field.as_str())
            .find(|f| !supported(f))
    }

    /// The value `field` is pinned to by an `=`/`==` term (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Matches using `get` to read a field (None: absent, compared as `""`).
    pub fn matches<F, S>(&self, get: F) -> bool
    where
        F: Fn(&str) -> Option<S>,
        S: AsRef<str>,
    {
        self.requirements.iter().all(|r| {
            let v = get(&r.field);
            r.matches_value(v.as_ref().map(AsRef::as_ref))
        })
    }

    /// Matches a JSON object, reading each field as a dotted path with [`object_field`].
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches(|f| object_field(obj, f))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

/// Reads a dotted path (`metadata.name`, `status.phase`, `involvedObject.kind`, `type`)
/// of a JSON object as the string a field selector compares: strings as is, integers in
/// decimal, booleans as `true`/`false`. Missing, null, object and array values are None.
pub fn object_field(obj: &Value, path: &str) -> Option<String> {
    let mut cur = obj;
    for seg in path.split('.') {
        cur = cur.as_object()?.get(seg)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            i.to_string()
        } else if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            match n.as_f64() {
                // Integral floats (e.g. from YAML) print as integers, as Go's int fields would.
                Some(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => {
                    format!("{}", f as i64)
                }
                _ => n.to_string(),
            }
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(s: &str) -> FieldSelector {
        match FieldSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn parse_err(s: &str) -> String {
        match FieldSelector::parse(s) {
            Ok(sel) => panic!("{s:?} parsed as {sel}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn parses_upstream_examples() {
        for (input, want) in [
            ("", ""),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a!=b", "a!=b"),
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("z=c,x=a", "x=a,z=c"),
            ("x=,z= ", "x=,z= "),
            ("x= ,z= ", "x= ,z= "),
            ("!x=a", "!x=a"),
            ("x=a||y\\=b", "x=a||y\\=b"),
            ("x=a\\=\\=b", "x=a\\=\\=b"),
            ("x!=a,y!=b", "x!=a,y!=b"),
            ("x=a\\,b", "x=a\\,b"),
            ("x=a\\=b", "x=a\\=b"),
            ("x=a\\\\b", "x=a\\\\b"),
            (",,a=b,,", "a=b"),
        ] {
            assert_eq!(parse(input).to_string(), want, "{input}");
        }
        let s = parse("metadata.name=a\\,b\\=c\\\\d");
        assert_eq!(s.requirements()[0].value, "a,b=c\\d");
        assert_eq!(s.requirements()[0].field, "metadata.name");
    }

    #[test]
    fn rejects_like_upstream() {
        assert_eq!(
            parse_err("x"),
            "invalid selector: 'x'; can't understand 'x'"
        );
        assert_eq!(
            parse_err("a=b,c"),
            "invalid selector: 'a=b,c'; can't understand 'c'"
        );
        assert_eq!(
            parse_err("x=a||y=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            parse_err("x==a==b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            parse_err("x in (a)"),
            "invalid selector: 'x in (a)'; can't understand 'x in (a)'"
        );
        assert_eq!(
            parse_err("x=a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            parse_err("x=a\\b"),
            "invalid field selector: invalid escape sequence: \\b"
        );
        assert_eq!(
            parse_err("x=a\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
        for (len, too_long) in [
            (MAX_SELECTOR_LENGTH - 1, false),
            (MAX_SELECTOR_LENGTH, false),
            (MAX_SELECTOR_LENGTH + 1, true),
            (10 * MAX_SELECTOR_LENGTH, true),
        ] {
            // Not a valid selector either way; only the length check may say "too long".
            let err = parse_err(&"a".repeat(len));
            assert_eq!(
                err.starts_with("field selector is too long"),
                too_long,
                "{len} bytes: {}",
                &err[..err.len().min(80)]
            );
        }
    }

    #[test]
    fn matches_objects() {
        let obj = json!({
            "metadata": {"name": "n1", "namespace": "ns"},
            "status": {"phase": "Active", "succeeded": 2, "ready": true},
            "type": "Opaque",
            "involvedObject": {"kind": "Pod"},
        });
        assert!(parse("metadata.name=n1,metadata.namespace=ns").matches_object(&obj));
        assert!(parse("status.phase==Active").matches_object(&obj));
        assert!(!parse("status.phase!=Active").matches_object(&obj));
        assert!(parse("status.succeeded=2,status.ready=true,type=Opaque").matches_object(&obj));
        assert!(parse("involvedObject.kind=Pod").matches_object(&obj));
        // Missing fields read as "".
        assert!(parse("spec.foo=").matches_object(&obj));
        assert!(parse("spec.foo!=x").matches_object(&obj));
        assert!(!parse("spec.foo=x").matches_object(&obj));
        assert!(FieldSelector::everything().matches_object(&obj));
        assert!(parse("a=b").matches(|f: &str| (f == "a").then_some("b")));
    }

    #[test]
    fn object_fields_stringify_like_go() {
        let obj = json!({"a": {"b": 5, "c": true, "d": null, "e": [1], "f": -3, "g": 2.0}});
        assert_eq!(object_field(&obj, "a.b").as_deref(), Some("5"));
        assert_eq!(object_field(&obj, "a.c").as_deref(), Some("true"));
        assert_eq!(object_field(&obj, "a.f").as_deref(), Some("-3"));
        assert_eq!(object_field(&obj, "a.g").as_deref(), Some("2"));
        assert_eq!(object_field(&obj, "a.d"), None);
        assert_eq!(object_field(&obj, "a.e"), None);
        assert_eq!(object_field(&obj, "a"), None);
        assert_eq!(object_field(&obj, "a.b.c"), None);
        assert_eq!(object_field(&obj, "x"), None);
    }

    #[test]
    fn supported_fields_and_exact_match() {
        let s = parse("metadata.name=x,spec.nodeName=n");
        assert_eq!(
            s.unsupported_field(|f| f.starts_with("metadata.")),
            Some("spec.nodeName")
        );
        assert_eq!(s.unsupported_field(|_| true), None);
        assert_eq!(s.requires_exact_match("metadata.name"), Some("x"));
        assert_eq!(
            parse("metadata.name!=x").requires_exact_match("metadata.name"),
            None
        );
        assert_eq!(escape_value("a,b=c\\"), "a\\,b\\=c\\\\");
        assert_eq!(
            unescape_value(&escape_value("a,b=c\\")).as_deref(),
            Ok("a,b=c\\")
        );
    }
}
