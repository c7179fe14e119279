//! OpenAPI value validation with kube-openapi's semantics and messages
//! (`k8s.io/kube-openapi/pkg/validation/validate`), mapped to field errors the way
//! apiextensions `ValidateCustomResource` maps them.
//!
//! Per value the validators run in kube-openapi's order: type, allOf/anyOf/oneOf/not,
//! string (maxLength, minLength, pattern: first failure only), format, number
//! (multipleOf, minimum, maximum), array (items, minItems, maxItems), enum, object
//! (min/maxProperties, additionalProperties, properties, required).

use kplane_types::validation::go_quote;
use kplane_types::Cause;
use serde_json::{Map, Number, Value};

use crate::errors::{
    go_float, go_value, invalid, not_supported, required, too_long, too_many, type_invalid,
};
use crate::node::{Additional, Checks, Node};
use crate::path::{join, PathStack, Seg};
use crate::ratchet::{self, MapList, Ratchet};

/// Rewrites RE2's ASCII-only Perl classes (`\d`, `\w`, `\s`, `\b`) for the `regex` crate,
/// whose classes are Unicode-aware by default, and RE2's negated Unicode classes
/// (`\p{^L}`); everything else, Unicode classes (`\pL`, `\p{L}`, `\p{Greek}`) included,
/// is the same syntax.
pub(crate) fn translate_re2(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                // RE2 negates a Unicode class as `\p{^Greek}` (and `\P{^Greek}` is the class
                // itself); the `regex` crate spells those `\P{Greek}` and `\p{Greek}`
                if matches!(n, 'p' | 'P') && chars.peek() == Some(&'{') {
                    let mut ahead = chars.clone();
                    ahead.next();
                    if ahead.peek() == Some(&'^') {
                        chars.next();
                        chars.next();
                        out.push('\\');
                        out.push(if n == 'p' { 'P' } else { 'p' });
                        out.push('{');
                        continue;
                    }
                }
                let rep = match (n, in_class) {
                    ('d', false) => Some("[0-9]"),
                    ('D', false) => Some("[^0-9]"),
                    ('w', false) => Some("[0-9A-Za-z_]"),
                    ('W', false) => Some("[^0-9A-Za-z_]"),
                    ('s', false) => Some("[\\t\\n\\f\\r ]"),
                    ('S', false) => Some("[^\\t\\n\\f\\r ]"),
                    ('b', false) => Some("(?-u:\\b)"),
                    ('B', false) => Some("(?-u:\\B)"),
                    ('d', true) => Some("0-9"),
                    ('w', true) => Some("0-9A-Za-z_"),
                    ('s', true) => Some("\\t\\n\\f\\r "),
                    _ => None,
                };
                match rep {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // POSIX class like [:alpha:] inside a bracket expression.
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

/// Validates values against nodes, appending field errors.
pub(crate) struct Validator<'e> {
    /// Field path the errors are relative to (empty for objects, `….default` for defaults).
    pub base: &'e str,
    pub out: &'e mut Vec<Cause>,
    /// On update: drops the errors of values unchanged from their correlated old values.
    pub ratchet: Option<&'e Ratchet>,
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.as_i64().is_some() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// swag `IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    let g = f.trunc();
    let fa = f.abs();
    if fa <= 1.0 {
        (f - g).abs() < 1e-9
    } else {
        (f - g).abs() / fa.max(g.abs()) < 1e-9
    }
}

impl Validator<'_> {
    fn field(&self, name: &str) -> String {
        join(self.base, name)
    }

    /// Validates `v` at `ps` against `n`. `old` is the correlated value of the old object on
    /// update: when `v` raised errors and is unchanged from it, they are dropped (CRD
    /// validation ratcheting: `ratchetingValueValidator.Validate`).
    pub(crate) fn node<'a>(
        &mut self,
        n: &'a Node,
        v: &'a Value,
        old: Option<&'a Value>,
        ps: &mut PathStack<'a>,
    ) {
        let mark = self.out.len();
        self.value(n, v, old, ps);
        if self.out.len() > mark {
            if let (Some(o), Some(r)) = (old, self.ratchet) {
                if r.unchanged(n, o, v) {
                    self.out.truncate(mark);
                }
            }
        }
    }

    fn value<'a>(
        &mut self,
        n: &'a Node,
        v: &'a Value,
        old: Option<&'a Value>,
        ps: &mut PathStack<'a>,
    ) {
        if v.is_null() {
            if let Some(types) = n.type_names() {
                if !n.nullable {
                    let name = ps.openapi();
                    let msg = format!("{name} in body must be of type {types}: \"null\"");
                    self.out
                        .push(type_invalid(self.field(&name), "\"null\"", &msg));
                }
            }
            if let Some(e) = n.checks.as_ref().and_then(|c| c.enumeration.as_ref()) {
                let name = ps.openapi();
                self.out.push(not_supported(
                    self.field(&name),
                    "\"null\"",
                    &enum_strings(&e.values),
                ));
            }
            return;
        }
        self.type_check(n, v, ps);
        if let Some(c) = &n.checks {
            self.schema_props(c, v, ps);
        }
        match v {
            Value::String(s) => {
                if let Some(c) = &n.checks {
                    self.string(c, s, ps);
                }
                if let Some((f, fname)) = &n.format {
                    if !f.check(s) {
                        let name = ps.openapi();
                        let msg =
                            format!("{name} in body must be of type {fname}: {}", go_quote(s));
                        self.out
                            .push(type_invalid(self.field(&name), &go_quote(s), &msg));
                    }
                }
            }
            Value::Number(num) => {
                if let Some(c) = &n.checks {
                    self.number(c, num, ps);
                }
            }
            _ => {}
        }
        if let Value::Array(a) = v {
            self.array(n, a, old, ps);
        }
        if let Some(e) = n.checks.as_ref().and_then(|c| c.enumeration.as_ref()) {
            if !e.contains(v) {
                let name = ps.openapi();
                self.out.push(not_supported(
                    self.field(&name),
                    &go_value(v),
                    &enum_strings(&e.values),
                ));
            }
        }
        if let Value::Object(m) = v {
            self.object(n, m, old.and_then(Value::as_object), ps);
        }
    }

    fn type_check(&mut self, n: &Node, v: &Value, ps: &PathStack<'_>) {
        let types = n.type_names();
        if types.is_none() && n.format.is_none() {
            return;
        }
        let types = types.unwrap_or("");
        let kind = kind_name(v);
        let has = |t: &str| types.split(',').any(|x| x == t);
        let float_int = matches!(v, Value::Number(num) if num.as_i64().is_none() && num.as_f64().is_some_and(is_json_integer))
            && has("integer");
        let int_float = kind == "integer" && has("number");
        let type_ok = has(kind) || float_int || int_float;
        if let Some((_, fname)) = &n.format {
            if !matches!(v, Value::String(_) | Value::Array(_)) && !type_ok {
                let data_fmt = match v {
                    Value::Number(num) if num.as_i64().is_some() => "int64",
                    Value::Number(_) => "float64",
                    _ => "",
                };
                let name = ps.openapi();
                let msg = format!(
                    "{name} in body must be of type {fname}: {}",
                    go_quote(data_fmt)
                );
                self.out
                    .push(type_invalid(self.field(&name), &go_quote(data_fmt), &msg));
                return;
            }
            if !has("number") && !has("integer") && matches!(v, Value::String(_) | Value::Array(_))
            {
                return;
            }
        }
        if !type_ok {
            let name = ps.openapi();
            let msg = format!("{name} in body must be of type {types}: {}", go_quote(kind));
            self.out
                .push(type_invalid(self.field(&name), &go_quote(kind), &msg));
        }
    }

    fn sub<'a>(&mut self, n: &'a Node, v: &'a Value, ps: &mut PathStack<'a>) -> Vec<Cause> {
        let mut errs = Vec::new();
        let mut sub = Validator {
            base: self.base,
            out: &mut errs,
            ratchet: None,
        };
        sub.node(n, v, None, ps);
        errs
    }

    fn composite(&mut self, msg: String) {
        self.out.push(invalid(self.base.to_string(), "\"\"", &msg));
    }

    fn schema_props<'a>(&mut self, c: &'a Checks, v: &'a Value, ps: &mut PathStack<'a>) {
        if !c.any_of.is_empty() {
            let mut first_failure: Option<Vec<Cause>> = None;
            let mut ok = false;
            for sub in &c.any_of {
                let errs = self.sub(sub, v, ps);
                if errs.is_empty() {
                    ok = true;
                    break;
                }
                first_failure.get_or_insert(errs);
            }
            if !ok {
                self.composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(&ps.openapi())
                ));
                self.out.extend(first_failure.unwrap_or_default());
            }
        }
        if !c.one_of.is_empty() {
            let mut valid = 0usize;
            let mut best: Option<Vec<Cause>> = None;
            for sub in &c.one_of {
                let errs = self.sub(sub, v, ps);
                if errs.is_empty() {
                    valid += 1;
                    best = None;
                } else if valid == 0 && best.is_none() {
                    best = Some(errs);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.composite(format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    go_quote(&ps.openapi())
                ));
                self.out.extend(best.unwrap_or_default());
            }
        }
        if !c.all_of.is_empty() {
            let mut valid = 0usize;
            for sub in &c.all_of {
                let errs = self.sub(sub, v, ps);
                if errs.is_empty() {
                    valid += 1;
                }
                self.out.extend(errs);
            }
            if valid != c.all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                self.composite(format!(
                    "{} must validate all the schemas (allOf){extra}",
                    go_quote(&ps.openapi())
                ));
            }
        }
        if let Some(not) = &c.not {
            if self.sub(not, v, ps).is_empty() {
                self.composite(format!(
                    "{} must not validate the schema (not)",
                    go_quote(&ps.openapi())
                ));
            }
        }
    }

    fn string(&mut self, c: &Checks, s: &str, ps: &PathStack<'_>) {
        let len = || s.chars().count() as i64;
        if let Some(max) = c.max_length {
            if len() > max {
                let name = ps.openapi();
                self.out.push(too_long(self.field(&name), max));
                return;
            }
        }
        if let Some(min) = c.min_length {
            if len() < min {
                let name = ps.openapi();
                let msg = format!("{name} in body should be at least {min} chars long");
                self.out
                    .push(invalid(self.field(&name), &go_quote(s), &msg));
                return;
            }
        }
        if let Some(p) = &c.pattern {
            if !p.re.is_match(s) {
                let name = ps.openapi();
                let msg = format!("{name} in body should match '{}'", p.src);
                self.out
                    .push(invalid(self.field(&name), &go_quote(s), &msg));
            }
        }
    }

    fn number(&mut self, c: &Checks, num: &Number, ps: &PathStack<'_>) {
        let repr = crate::errors::go_number(num);
        let int = num.as_i64();
        let data = num.as_f64().unwrap_or(f64::NAN);
        if let Some(factor) = c.multiple_of {
            let fail = match int {
                _ if factor < 0.0 => Some(format!(
                    "factor MultipleOf declared for {} must be positive: {}",
                    ps.openapi(),
                    go_float(factor)
                )),
                Some(i) if factor as i64 != 0 => {
                    let f = factor as i64;
                    (i.checked_rem(f).unwrap_or(0) != 0)
                        .then(|| format!("{} in body should be a multiple of {f}", ps.openapi()))
                }
                _ => {
                    let mult = if factor < 1.0 {
                        1.0 / factor * data
                    } else {
                        data / factor
                    };
                    (!is_json_integer(mult)).then(|| {
                        format!(
                            "{} in body should be a multiple of {}",
                            ps.openapi(),
                            go_float(factor)
                        )
                    })
                }
            };
            if let Some(msg) = fail {
                self.out
                    .push(invalid(self.field(&ps.openapi()), &repr, &msg));
            }
        }
        if let Some(min) = c.minimum {
            let excl = c.exclusive_minimum;
            let (bad, shown) = match int {
                Some(i) => {
                    let m = min as i64;
                    ((!excl && i < m) || (excl && i <= m), m.to_string())
                }
                None => (
                    (!excl && data < min) || (excl && data <= min),
                    go_float(min),
                ),
            };
            if bad {
                let rel = if excl {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                let name = ps.openapi();
                self.out.push(invalid(
                    self.field(&name),
                    &repr,
                    &format!("{name} in body should be {rel} {shown}"),
                ));
            }
        }
        if let Some(max) = c.maximum {
            let excl = c.exclusive_maximum;
            let (bad, shown) = match int {
                Some(i) => {
                    let m = max as i64;
                    ((!excl && i > m) || (excl && i >= m), m.to_string())
                }
                None => (
                    (!excl && data > max) || (excl && data >= max),
                    go_float(max),
                ),
            };
            if bad {
                let rel = if excl {
                    "less than"
                } else {
                    "less than or equal to"
                };
                let name = ps.openapi();
                self.out.push(invalid(
                    self.field(&name),
                    &repr,
                    &format!("{name} in body should be {rel} {shown}"),
                ));
            }
        }
    }

    fn array<'a>(
        &mut self,
        n: &'a Node,
        a: &'a [Value],
        old: Option<&'a Value>,
        ps: &mut PathStack<'a>,
    ) {
        if let Some(items) = &n.items {
            // only the items of map lists correlate, by their keys
            let old_items = MapList::of(n, old);
            for (i, x) in a.iter().enumerate() {
                ps.push(Seg::Index(i));
                self.node(items, x, old_items.as_ref().and_then(|l| l.get(x)), ps);
                ps.pop();
            }
        }
        let Some(c) = &n.checks else { return };
        let size = a.len() as i64;
        if let Some(min) = c.min_items {
            if size < min {
                let name = ps.openapi();
                self.out.push(invalid(
                    self.field(&name),
                    &size.to_string(),
                    &format!("{name} in body should have at least {min} items"),
                ));
            }
        }
        if let Some(max) = c.max_items {
            if size > max {
                let name = ps.openapi();
                self.out.push(too_many(self.field(&name), size, max));
            }
        }
    }

    fn object<'a>(
        &mut self,
        n: &'a Node,
        m: &'a Map<String, Value>,
        old: Option<&'a Map<String, Value>>,
        ps: &mut PathStack<'a>,
    ) {
        // apiVersion and kind of the resource are never ratcheted (both objects carry the
        // requested version's)
        let root = ps.is_empty();
        let at_root = |k: &str| root && (k == "apiVersion" || k == "kind");
        let num = m.len() as i64;
        if let Some(c) = &n.checks {
            if let Some(min) = c.min_properties {
                if num < min {
                    let name = ps.openapi();
                    self.out.push(invalid(
                        self.field(&name),
                        &num.to_string(),
                        &format!("{name} in body should have at least {min} properties"),
                    ));
                    return;
                }
            }
            if let Some(max) = c.max_properties {
                if num > max {
                    let name = ps.openapi();
                    self.out.push(too_many(self.field(&name), num, max));
                    return;
                }
            }
        }
        match &n.additional {
            Additional::Bool(false) => {
                for k in m.keys() {
                    if n.property(k).is_none() {
                        let name = ps.openapi();
                        let msg = format!("{name}.{k} in body is a forbidden property");
                        self.out
                            .push(invalid(self.field(&name), &go_quote(k), &msg));
                    }
                }
            }
            Additional::Schema(ap) => {
                for (k, x) in m {
                    if n.property(k).is_none() {
                        let ox = ratchet::field(n, old, k).filter(|_| !at_root(k));
                        ps.push(Seg::Key(k));
                        self.node(ap, x, ox, ps);
                        ps.pop();
                    }
                }
            }
            _ => {}
        }
        for (k, child) in &n.properties {
            if let Some(x) = m.get(k.as_ref()) {
                let ox = ratchet::field(n, old, k).filter(|_| !at_root(k));
                ps.push(Seg::Field(k));
                self.node(child, x, ox, ps);
                ps.pop();
            }
        }
        if let Some(c) = &n.checks {
            for k in &c.required {
                if !m.contains_key(k.as_ref()) {
                    let name = join(&ps.openapi(), k);
                    self.out.push(required(self.field(&name), ""));
                }
            }
        }
    }
}

/// Enum members as the `supported values` list shows them: strings raw, others as JSON.
fn enum_strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn re2_translation() {
        assert_eq!(translate_re2(r"^\d+$"), "^[0-9]+$");
        assert_eq!(translate_re2(r"[\d.]+"), "[0-9.]+");
        assert_eq!(translate_re2(r"\.\w"), r"\.[0-9A-Za-z_]");
        let re = regex::Regex::new(&translate_re2(r"^\d+$")).ok();
        assert!(re
            .as_ref()
            .is_some_and(|r| r.is_match("123") && !r.is_match("١٢٣")));
        assert!(regex::Regex::new(&translate_re2(r"\bfoo\b")).is_ok());
        // Unicode classes pass through; RE2's negation becomes the regex crate's
        assert_eq!(translate_re2(r"^[\p{L}\p{S}]+$"), r"^[\p{L}\p{S}]+$");
        assert_eq!(translate_re2(r"\pL\PN"), r"\pL\PN");
        assert_eq!(translate_re2(r"\p{^Greek}[\P{^L}]"), r"\P{Greek}[\p{L}]");
        assert_eq!(translate_re2(r"\\p{^L}"), r"\\p{^L}");
    }
}
