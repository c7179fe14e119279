//! A validation rule's `fieldPath`: checked against the schema and normalized into the
//! field path appended to the rule's errors (`ValidFieldPath`).

use crate::node::Node;

/// Checks a rule's `fieldPath` (`ValidFieldPath`: `.a.b`, `['a.b']`, only through declared
/// properties and maps) and returns it as a field path (`a.b`, `[a.b]`).
pub(crate) fn valid_field_path(path: &str, n: &Node) -> Result<String, String> {
    let mut out = String::new();
    let mut node = n;
    let mut rest = path;
    let step = |out: &mut String, node: &mut &Node, name: String| -> Result<(), String> {
        if !node.properties.is_empty() {
            let child = node
                .property(&name)
                .ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            *node = child;
        } else if let Some(ap) = node.additional.schema() {
            out.push('[');
            out.push_str(&name);
            out.push(']');
            *node = ap;
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() {
                return Err("unexpected end of JSON path".into());
            }
            step(&mut out, &mut node, name.to_string())?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let mut end = None;
            let bytes = r.as_bytes();
            for i in 0..bytes.len() {
                if bytes[i] == b'\'' && (i == 0 || bytes[i - 1] != b'\\') {
                    end = Some(i);
                    break;
                }
            }
            let end = end.ok_or("unexpected end of JSON path")?;
            let name = unescape_single_quoted(&r[..end])?;
            let after = &r[end + 1..];
            rest = after.strip_prefix(']').ok_or("expected ]")?;
            step(&mut out, &mut node, name)?;
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
    }
    Ok(out)
}

fn unescape_single_quoted(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            other => return Err(format!("invalid escape char \\{}", other.unwrap_or(' '))),
        });
    }
    Ok(out)
}
