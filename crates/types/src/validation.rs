//! Kubernetes name, label, annotation and key validation, with the exact messages
//! apimachinery produces (`pkg/util/validation`, `pkg/api/validation/objectmeta.go`,
//! `pkg/api/validation/path`, `pkg/apis/meta/v1/validation`), as of Kubernetes 1.32.
//!
//! The `is_*` functions answer with the list of problems as plain messages (empty when the
//! value is valid), exactly like their Go counterparts; the `validate_*` functions turn
//! them into field errors ([`Cause`]) for a given field path. Name generation
//! (`metadata.generateName`) lives here too.

use rand::Rng;
use serde_json::{Map, Value};

use crate::status::Cause;

/// Longest DNS-1123 label (and label value, and qualified-name name part).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain (and ConfigMap/Secret key).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest name part of a qualified name.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Upper bound on the summed size of all annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;
/// Longest name a generated name may have.
pub const MAX_GENERATED_NAME_LENGTH: usize = 63;
/// Number of random characters appended to `generateName`.
pub const GENERATED_NAME_RANDOM_LENGTH: usize = 5;
/// Longest `generateName` prefix kept before the random suffix (63 - 5).
pub const MAX_GENERATE_NAME_PREFIX_LENGTH: usize =
    MAX_GENERATED_NAME_LENGTH - GENERATED_NAME_RANDOM_LENGTH;
/// The alphabet of generated-name suffixes (no vowels, no confusable digits).
pub const GENERATED_NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `must be no more than N characters`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// The explanation of a pattern mismatch: the message, optional examples, and the pattern.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = String::with_capacity(msg.len() + fmt.len() + 64);
    out.push_str(msg);
    if examples.is_empty() {
        out.push_str(" (regex used for validation is '");
    } else {
        out.push_str(" (e.g. ");
        for (i, ex) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push('\'');
            out.push_str(ex);
            out.push_str("', ");
        }
        out.push_str("regex used for validation is '");
    }
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` exactly.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Matches the DNS-1123 subdomain pattern: dot-separated DNS-1123 labels.
fn matches_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(matches_dns1123_label)
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` exactly.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether `value` is a DNS-1123 label (at most 63 characters); the problems otherwise.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain but not a label: the length was checked, so it has dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Whether `value` is a DNS-1035 label (at most 63 characters, starting with a letter);
/// the problems otherwise.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    let starts_with_letter = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Whether `value` is a DNS-1123 subdomain (at most 253 characters); the problems otherwise.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Whether `value` is a qualified name (label/annotation key): an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 characters.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.split('/');
    let first = parts.next().unwrap_or("");
    let second = parts.next();
    if parts.next().is_some() {
        errs.push(format!(
            "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
        return errs;
    }
    let name = match second {
        None => first,
        Some(name) => {
            if first.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(first)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Whether `value` is a valid label value (empty, or at most 63 characters of the
/// qualified-name alphabet starting and ending with an alphanumeric).
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !(value.is_empty() || matches_qualified_name_part(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Whether `value` is a valid ConfigMap or Secret key.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let charset_ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !charset_ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".to_string());
    } else if value == ".." {
        errs.push("must not be '..'".to_string());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// Same as [`is_config_map_key`] (the name the API server uses).
pub fn config_map_key_errors(value: &str) -> Vec<String> {
    is_config_map_key(value)
}

/// Names that can never be a path segment.
const NAME_MAY_NOT_BE: [&str; 2] = [".", ".."];
/// Substrings a path-segment name may not contain.
const NAME_MAY_NOT_CONTAIN: [&str; 2] = ["/", "%"];

/// Whether `name` can be safely used as a URL path segment (RBAC and generic names).
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for bad in NAME_MAY_NOT_BE {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// Whether `name` can prefix a path-segment name (no `.`/`..` check: a suffix follows).
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    NAME_MAY_NOT_CONTAIN
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Upstream's `maskTrailingDash`: a `generateName` may end in `-`, so the last characters
/// are replaced before checking the DNS rules (it drops two bytes and appends `a`).
fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() > 1 && name.ends_with('-') {
        // The byte before the dash may be part of a multi-byte character: cut at a
        // boundary (such a name is invalid either way).
        let mut cut = name.len() - 2;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        std::borrow::Cow::Owned(format!("{}a", &name[..cut]))
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// `NameIsDNSSubdomain`: validates a name (or, with `prefix`, a `generateName`).
pub fn name_is_dns1123_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// `NameIsDNSLabel`: validates a name (or, with `prefix`, a `generateName`).
pub fn name_is_dns1123_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// `ValidatePathSegmentName`: validates a name (or, with `prefix`, a `generateName`).
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_valid_path_segment_prefix(name)
    } else {
        is_valid_path_segment_name(name)
    }
}

fn invalid_str(field: &str, value: &str, msg: &str) -> Cause {
    Cause::invalid(field, &Value::String(value.to_string()), msg)
}

/// `field[key]`, the path of a map entry.
pub fn key_path(field: &str, key: &str) -> String {
    format!("{field}[{key}]")
}

/// Checks a `metadata.name`-like field with the given rule: `Required value: name or
/// generateName is required` when empty and `generate_name` is empty too.
pub fn validate_name(
    name: &str,
    generate_name: &str,
    field_path: &str,
    rule: fn(&str, bool) -> Vec<String>,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !generate_name.is_empty() {
        let field = format!("{field_path}.generateName");
        for msg in rule(generate_name, true) {
            causes.push(invalid_str(&field, generate_name, &msg));
        }
    }
    let field = format!("{field_path}.name");
    if name.is_empty() {
        causes.push(Cause::new(
            crate::status::CauseType::FieldValueRequired,
            field,
            "Required value: name or generateName is required",
        ));
    } else {
        for msg in rule(name, false) {
            causes.push(invalid_str(&field, name, &msg));
        }
    }
    causes
}

/// Validates a label map: every key a qualified name, every value a label value. Errors
/// carry `field_path` (e.g. `metadata.labels`) and the offending key or value.
pub fn validate_labels(labels: &Map<String, Value>, field_path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            causes.push(invalid_str(field_path, k, &msg));
        }
        match v {
            Value::String(s) => {
                for msg in is_valid_label_value(s) {
                    causes.push(invalid_str(field_path, s, &msg));
                }
            }
            other => causes.push(Cause::invalid(
                key_path(field_path, k),
                other,
                "must be a string",
            )),
        }
    }
    causes
}

/// Validates an annotation map: keys are qualified names (case-insensitively), and all
/// keys and values together may not exceed 256 KiB (`Too long: ...`).
pub fn validate_annotations(annotations: &Map<String, Value>, field_path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        for msg in is_qualified_name(&k.to_ascii_lowercase()) {
            causes.push(invalid_str(field_path, k, &msg));
        }
        total = total.saturating_add(k.len());
        match v {
            Value::String(s) => total = total.saturating_add(s.len()),
            other => causes.push(Cause::invalid(
                key_path(field_path, k),
                other,
                "must be a string",
            )),
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        causes.push(Cause::too_long(
            field_path,
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    causes
}

/// Validates one ConfigMap/Secret key; `field_path` is the map (`data`, `binaryData`),
/// and errors name the entry (`data[key]`).
pub fn validate_config_map_key(key: &str, field_path: &str) -> Vec<Cause> {
    let field = key_path(field_path, key);
    is_config_map_key(key)
        .into_iter()
        .map(|msg| invalid_str(&field, key, &msg))
        .collect()
}

/// Validates a qualified name at `field_path` (one cause per problem).
pub fn validate_qualified_name(value: &str, field_path: &str) -> Vec<Cause> {
    is_qualified_name(value)
        .into_iter()
        .map(|msg| invalid_str(field_path, value, &msg))
        .collect()
}

/// Five random characters from [`GENERATED_NAME_ALPHABET`].
pub fn generate_name_suffix() -> String {
    let alphabet = GENERATED_NAME_ALPHABET.as_bytes();
    let mut rng = rand::rng();
    (0..GENERATED_NAME_RANDOM_LENGTH)
        .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
        .collect()
}

/// The prefix kept from a `generateName`: at most 58 bytes (cut at a character boundary).
pub fn truncate_generate_name(prefix: &str) -> &str {
    if prefix.len() <= MAX_GENERATE_NAME_PREFIX_LENGTH {
        return prefix;
    }
    let mut cut = MAX_GENERATE_NAME_PREFIX_LENGTH;
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    &prefix[..cut]
}

/// A name generated from `generateName`: the prefix truncated to 58 bytes plus a
/// 5-character random suffix, so at most 63 bytes.
pub fn name_from_generate_name(prefix: &str) -> String {
    let mut name = String::with_capacity(MAX_GENERATED_NAME_LENGTH);
    name.push_str(truncate_generate_name(prefix));
    name.push_str(&generate_name_suffix());
    name
}

/// Go's `strconv.Quote` (`%q`), as field errors print string values.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            // Go escapes what `unicode.IsPrint` rejects: controls, spaces other than ' ',
            // and format characters (the common ones are listed).
            c if c.is_control()
                || (c.is_whitespace() && c != ' ')
                || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}') =>
            {
                let n = c as u32;
                if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::CauseType;
    use serde_json::json;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const QNAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    #[test]
    fn dns1123_subdomain_upstream_cases() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "a.a",
            "ab.a",
            "a-1.a",
            "0.a",
            "a.b.c.d.e",
            "aaaaa.bbbbb",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in [
            "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
            "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a..b", "1.", ".1", "1..2", " ", "a ",
            " a", "a b", "1 ", " 1", "1 2", "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1",
            "A1.A", "1A.a", "1.A", "1a.A", "1A.A", "a@b", "a,b", "a_b", "a;b", "a:b", "a%b", "a?b",
            "a$b",
        ] {
            assert!(!is_dns1123_subdomain(bad).is_empty(), "{bad:?}");
        }
        assert_eq!(is_dns1123_subdomain("Bad"), vec![SUBDOMAIN_MSG.to_string()]);
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn dns1123_label_upstream_cases() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            &"a".repeat(63),
        ] {
            assert!(is_dns1123_label(good).is_empty(), "{good}");
        }
        for bad in [
            "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
            "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ",
            " a", "a b", "1 ", " 1", "1 2",
        ] {
            assert!(!is_dns1123_label(bad).is_empty(), "{bad:?}");
        }
        // A valid subdomain that is not a label has dots: upstream says so (1.32).
        assert_eq!(
            is_dns1123_label("a.b"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(is_dns1123_label("a_b"), vec![LABEL_MSG.to_string()]);
        assert_eq!(is_dns1123_label(".a"), vec![LABEL_MSG.to_string()]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn dns1035_label_upstream_cases() {
        for good in ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", &"a".repeat(63)] {
            assert!(is_dns1035_label(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
        ] {
            assert!(!is_dns1035_label(bad).is_empty(), "{bad:?}");
        }
        assert_eq!(
            is_dns1035_label("1a"),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            is_dns1035_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn qualified_names_upstream_cases() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            &"a".repeat(63),
            &format!("{}/b", "a".repeat(253)),
        ] {
            assert!(is_qualified_name(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            &"a".repeat(64),
            &format!("{}/b", "a".repeat(254)),
        ] {
            assert!(!is_qualified_name(bad).is_empty(), "{bad}");
        }
        assert_eq!(is_qualified_name("a-"), vec![QNAME_MSG.to_string()]);
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            is_qualified_name("a/"),
            vec![
                "name part must be non-empty".to_string(),
                QNAME_MSG.to_string()
            ]
        );
        assert_eq!(
            is_qualified_name("Ex.com/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn label_values_upstream_cases() {
        for good in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            &"a".repeat(63),
            "",
            "A",
            "AB",
            "AbC",
            "A1",
            "1A",
            "a_b",
            "a.b",
        ] {
            assert!(is_valid_label_value(good).is_empty(), "{good}");
        }
        for bad in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            &"a".repeat(64),
        ] {
            assert!(!is_valid_label_value(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            is_valid_label_value("-a"),
            vec![LABEL_VALUE_MSG.to_string()]
        );
    }

    #[test]
    fn config_map_keys() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "a.a",
            "ab.a",
            "a-1.a",
            "0.a",
            "a.b.c.d.e",
            ".a",
            "_",
            "A_b",
            "KEY_NAME",
            &"a".repeat(253),
        ] {
            assert!(is_config_map_key(good).is_empty(), "{good}");
        }
        assert_eq!(is_config_map_key("a b"), vec![KEY_MSG.to_string()]);
        assert_eq!(is_config_map_key(""), vec![KEY_MSG.to_string()]);
        assert_eq!(is_config_map_key("."), vec!["must not be '.'".to_string()]);
        assert_eq!(
            is_config_map_key(".."),
            vec!["must not be '..'".to_string()]
        );
        assert_eq!(
            is_config_map_key("..a"),
            vec!["must not start with '..'".to_string()]
        );
        assert_eq!(
            is_config_map_key(&"a".repeat(254)),
            vec!["must be no more than 253 characters".to_string()]
        );
        let causes = validate_config_map_key("a b", "data");
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "data[a b]");
        assert_eq!(
            causes[0].message,
            format!("Invalid value: \"a b\": {KEY_MSG}")
        );
    }

    #[test]
    fn path_segment_names() {
        assert_eq!(
            is_valid_path_segment_name("."),
            vec!["may not be '.'".to_string()]
        );
        assert_eq!(
            is_valid_path_segment_name(".."),
            vec!["may not be '..'".to_string()]
        );
        assert_eq!(
            is_valid_path_segment_name("a/b%c"),
            vec![
                "may not contain '/'".to_string(),
                "may not contain '%'".to_string()
            ]
        );
        assert!(is_valid_path_segment_name("system:controller:Foo_Bar").is_empty());
        assert!(validate_path_segment_name(".", true).is_empty());
        assert_eq!(
            validate_path_segment_name("a%", true),
            vec!["may not contain '%'".to_string()]
        );
    }

    #[test]
    fn generate_name_prefix_may_end_with_dash() {
        assert!(name_is_dns1123_subdomain("foo-", true).is_empty());
        assert!(!name_is_dns1123_subdomain("foo-", false).is_empty());
        assert!(name_is_dns1123_label("pod-", true).is_empty());
        assert!(!name_is_dns1123_label("-", true).is_empty());
        assert!(!name_is_dns1123_subdomain("Foo-", true).is_empty());
    }

    #[test]
    fn name_causes() {
        let c = validate_name("", "", "metadata", name_is_dns1123_subdomain);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].reason, CauseType::FieldValueRequired);
        assert_eq!(
            c[0].render(),
            "metadata.name: Required value: name or generateName is required"
        );
        let c = validate_name("Bad", "", "metadata", name_is_dns1123_subdomain);
        assert_eq!(
            c[0].render(),
            format!("metadata.name: Invalid value: \"Bad\": {SUBDOMAIN_MSG}")
        );
        let c = validate_name("", "x_", "metadata", name_is_dns1123_subdomain);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].field, "metadata.generateName");
    }

    #[test]
    fn labels_and_annotations() {
        let labels = json!({"app": "web", "bad key": "x", "k": "-v"});
        let causes = validate_labels(labels.as_object().unwrap_or(&Map::new()), "metadata.labels");
        let rendered: Vec<String> = causes.iter().map(Cause::render).collect();
        assert_eq!(
            rendered,
            vec![
                format!("metadata.labels: Invalid value: \"bad key\": {QNAME_MSG}"),
                format!("metadata.labels: Invalid value: \"-v\": {LABEL_VALUE_MSG}"),
            ]
        );
        let ann = json!({"Example.COM/Key": "v", "a b": "v"});
        let causes = validate_annotations(
            ann.as_object().unwrap_or(&Map::new()),
            "metadata.annotations",
        );
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].render(),
            format!("metadata.annotations: Invalid value: \"a b\": {QNAME_MSG}")
        );
        let big = json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES)});
        let causes = validate_annotations(
            big.as_object().unwrap_or(&Map::new()),
            "metadata.annotations",
        );
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].reason, CauseType::FieldValueTooLong);
        assert_eq!(
            causes[0].render(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        let fits = json!({"k": "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1)});
        assert!(validate_annotations(
            fits.as_object().unwrap_or(&Map::new()),
            "metadata.annotations"
        )
        .is_empty());
    }

    #[test]
    fn generated_names() {
        let s = generate_name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| GENERATED_NAME_ALPHABET.contains(c)));
        let n = name_from_generate_name("web-");
        assert!(n.starts_with("web-") && n.len() == 9);
        let long = "a".repeat(100);
        let n = name_from_generate_name(&long);
        assert_eq!(n.len(), 63);
        assert!(n.starts_with(&"a".repeat(58)));
        assert!(is_dns1123_subdomain(&n).is_empty());
        assert_eq!(truncate_generate_name(&"é".repeat(40)).len(), 58);
    }

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\x01\"");
        assert_eq!(go_quote("rā"), "\"rā\"");
        assert_eq!(go_quote("a\u{a0}b\u{200b}"), "\"a\\u00a0b\\u200b\"");
    }
}
