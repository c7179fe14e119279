//! Label selectors: the `labelSelector` query grammar of apimachinery's `labels.Parse`
//! (`pkg/labels/selector.go`) and `metav1.LabelSelector` objects
//! (`LabelSelectorAsSelector`), with upstream's error messages.
//!
//! Grammar (comma = AND, whitespace ignored between tokens):
//! `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>5`, `k<5`.
//! `!=` and `notin` also match objects without the key; `>`/`<` compare integers and
//! never match a label value that is not one. The empty selector matches everything.
//!
//! Matching looks values up through a borrowed getter and allocates nothing.

use std::fmt;

use serde_json::{Map, Value};

use crate::validation::{go_quote, is_qualified_name, is_valid_label_value};

/// Longest selector string accepted (a guard against hostile input; upstream has none,
/// but the longest valid requirement is a few hundred bytes).
pub const MAX_SELECTOR_LENGTH: usize = 128 * 1024;

/// A selector that could not be parsed or built; the message is upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

impl SelectorError {
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// A requirement's operator (`selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// Upstream's spelling (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One `key op values` term of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    op: Operator,
    /// Sorted and deduplicated, so membership is a binary search.
    values: Vec<String>,
    /// The parsed bound of `>`/`<`.
    bound: i64,
}

/// Go's `%#v` of a `[]string` built with `append([]string(nil), ...)`.
fn go_string_slice(vals: &[String]) -> String {
    if vals.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = vals.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `<path>: Invalid value: <value>: <detail>`, as a Go `field.Error` prints.
fn field_invalid(path: &str, shown: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {shown}: {detail}")
}

/// Upstream's `validateLabelKey` error text at `path`, if the key is invalid.
fn key_error(key: &str, path: &str) -> Option<String> {
    let errs = is_qualified_name(key);
    if errs.is_empty() {
        None
    } else {
        Some(field_invalid(path, &go_quote(key), &errs.join("; ")))
    }
}

/// Most errors one message lists (upstream lists all; a hostile selector could otherwise
/// produce a response hundreds of times its own size).
const MAX_LISTED_ERRORS: usize = 100;

/// The message of a Go `utilerrors.Aggregate`: one error as is, several as `[a, b]`
/// (duplicates dropped).
fn aggregate(errs: Vec<String>) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut distinct: Vec<String> = Vec::new();
    for e in errs {
        if distinct.len() == MAX_LISTED_ERRORS {
            break;
        }
        if seen.insert(e.clone()) {
            distinct.push(e);
        }
    }
    match distinct.len() {
        0 => None,
        1 => distinct.pop(),
        _ => Some(format!("[{}]", distinct.join(", "))),
    }
}

impl Requirement {
    /// `labels.NewRequirement`: validates the key, the value count for the operator, the
    /// integer of `>`/`<`, and every value as a label value. Values are kept as a set.
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Requirement, SelectorError> {
        Self::build(key, op, values, true)
    }

    fn build(
        key: &str,
        op: Operator,
        mut values: Vec<String>,
        check_key: bool,
    ) -> Result<Requirement, SelectorError> {
        let mut errs = Vec::new();
        if check_key {
            if let Some(e) = key_error(key, "key") {
                errs.push(e);
            }
        }
        let mut bound = 0i64;
        match op {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(field_invalid(
                        "values",
                        &go_string_slice(&values),
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(field_invalid(
                        "values",
                        &go_string_slice(&values),
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(field_invalid(
                        "values",
                        &go_string_slice(&values),
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(field_invalid(
                        "values",
                        &go_string_slice(&values),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    match v.parse::<i64>() {
                        Ok(n) => bound = n,
                        _ => errs.push(field_invalid(
                            &format!("values[{i}]"),
                            &go_quote(v),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )),
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(field_invalid(
                    &format!("values[{i}][{key}]"),
                    &go_quote(v),
                    &msgs.join("; "),
                ));
            }
        }
        if let Some(msg) = aggregate(errs) {
            return Err(SelectorError(msg));
        }
        values.sort_unstable();
        values.dedup();
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
            bound,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.op
    }

    /// The values, sorted and without duplicates.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values
            .binary_search_by(|probe| probe.as_str().cmp(v))
            .is_ok()
    }

    /// Whether a label set whose value for this key is `value` (None: absent) matches.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match self.op {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                // `strconv.ParseInt(v, 10, 64)` and `i64::from_str` accept the same inputs.
                let Some(n) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    n > self.bound
                } else {
                    n < self.bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's `Requirement.String()`: `!k`, `k`, `k=v`, `k in (a,b)`, `k>5` ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (sep, paren) = match self.op {
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(sep)?;
        if paren {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if paren {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Lexer tokens (`labels.Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn literal_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// A scanned token and its text (a slice of the input, or an error description).
struct Item<'a> {
    tok: Token,
    lit: std::borrow::Cow<'a, str>,
}

/// Byte-wise scanner with upstream's quirks: a NUL byte reads like the end of input.
struct Lexer<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn read(&mut self) -> u8 {
        match self.s.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn item(tok: Token, lit: &'a str) -> Item<'a> {
        Item {
            tok,
            lit: std::borrow::Cow::Borrowed(lit),
        }
    }

    fn lex(&mut self) -> Item<'a> {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return Self::item(Token::End, "");
        }
        self.unread();
        if is_special(ch) {
            self.scan_special()
        } else {
            self.scan_identifier()
        }
    }

    fn scan_identifier(&mut self) -> Item<'a> {
        let start = self.pos;
        let end = loop {
            let before = self.pos;
            let ch = self.read();
            if ch == 0 {
                break before;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break self.pos;
            }
        };
        // Both ends sit next to ASCII bytes (or the ends of the input): char boundaries.
        let lit = self.s.get(start..end).unwrap_or("");
        Self::item(literal_token(lit).unwrap_or(Token::Identifier), lit)
    }

    fn scan_special(&mut self) -> Item<'a> {
        let start = self.pos;
        let mut found: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            match literal_token(self.s.get(start..self.pos).unwrap_or("")) {
                Some(tok) => found = Some((tok, self.pos)),
                None if found.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match found {
            Some((tok, end)) => Self::item(tok, self.s.get(start..end).unwrap_or("")),
            None => Item {
                tok: Token::Error,
                lit: std::borrow::Cow::Owned(format!(
                    "error expected: keyword found '{}'",
                    self.s.get(start..self.pos).unwrap_or("")
                )),
            },
        }
    }
}

/// Whether `in`/`notin` are operators (after a key) or plain identifiers (values, keys).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// Upstream's recursive-descent parser over the pre-scanned tokens.
struct Parser<'a> {
    items: Vec<Item<'a>>,
    pos: usize,
}

fn err(msg: String) -> SelectorError {
    SelectorError(msg)
}

impl<'a> Parser<'a> {
    fn new(input: &'a str) -> Self {
        let mut lexer = Lexer { s: input, pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.tok == Token::End;
            items.push(item);
            if end {
                break;
            }
        }
        Parser { items, pos: 0 }
    }

    fn at(&self, i: usize, ctx: Context) -> (Token, usize) {
        let i = i.min(self.items.len().saturating_sub(1));
        let tok = self.items.get(i).map_or(Token::End, |it| it.tok);
        let tok = match (ctx, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, t) => t,
        };
        (tok, i)
    }

    fn lookahead(&self, ctx: Context) -> (Token, usize) {
        self.at(self.pos, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, usize) {
        let r = self.at(self.pos, ctx);
        self.pos += 1;
        r
    }

    fn lit(&self, i: usize) -> &str {
        self.items.get(i).map_or("", |it| it.lit.as_ref())
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut reqs = Vec::new();
        loop {
            let (tok, i) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| err(format!("unable to parse requirement: {}", e.0)))?;
                    reqs.push(r);
                    let (t, j) = self.consume(Context::Values);
                    match t {
                        Token::End => return Ok(reqs),
                        Token::Comma => {
                            let (t2, k) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(err(format!(
                                    "found '{}', expected: identifier after ','",
                                    self.lit(k)
                                )));
                            }
                        }
                        _ => {
                            return Err(err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                self.lit(j)
                            )))
                        }
                    }
                }
                Token::End => return Ok(reqs),
                _ => {
                    return Err(err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        self.lit(i)
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = inferred {
            return Requirement::build(&key, op, Vec::new(), true);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::build(&key, op, values, true)
    }

    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(String, Option<Operator>), SelectorError> {
        let mut op = None;
        let (mut tok, mut i) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, i) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(err(format!(
                "found '{}', expected: identifier",
                self.lit(i)
            )));
        }
        let key = self.lit(i).to_string();
        if let Some(e) = key_error(&key, "<nil>") {
            return Err(err(e));
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::End || next == Token::Comma) && op != Some(Operator::DoesNotExist) {
            op = Some(Operator::Exists);
        }
        Ok((key, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, SelectorError> {
        let (tok, i) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    self.lit(i)
                )))
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, SelectorError> {
        let (tok, i) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(err(format!("found '{}' expected: '('", self.lit(i))));
        }
        let (tok, i) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(err(format!("found '{}', expected: ')'", self.lit(i))));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(err(format!(
                "found '{}', expected: ',', ')' or identifier",
                self.lit(i)
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, SelectorError> {
        let mut set: Vec<String> = Vec::new();
        loop {
            let (tok, i) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.push(self.lit(i).to_string());
                    let (t2, j) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(err(format!(
                                "found '{}', expected: ',' or ')'",
                                self.lit(j)
                            )))
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.push(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        set.push(String::new());
                        return Ok(set);
                    }
                    if t2 == Token::Comma {
                        self.consume(Context::Values);
                        set.push(String::new());
                    }
                }
                _ => {
                    return Err(err(format!(
                        "found '{}', expected: ',', or identifier",
                        self.lit(i)
                    )))
                }
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, SelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::End || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, i) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![self.lit(i).to_string()])
        } else {
            Err(err(format!(
                "found '{}', expected: identifier",
                self.lit(i)
            )))
        }
    }
}

/// A label selector: an AND of requirements, or "nothing" (a nil `metav1.LabelSelector`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// Matches no object.
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses a `labelSelector` query value (`labels.Parse`).
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        if selector.len() > MAX_SELECTOR_LENGTH {
            return Err(err(format!(
                "label selector is too long: {} bytes, limit is {MAX_SELECTOR_LENGTH}",
                selector.len()
            )));
        }
        let mut reqs = Parser::new(selector).parse()?;
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: reqs,
            nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` object (`{matchLabels, matchExpressions}`) like
    /// `LabelSelectorAsSelector`: `null` selects nothing, `{}` everything.
    pub fn from_label_selector_json(selector: &Value) -> Result<Self, SelectorError> {
        let obj = match selector {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(o) => o,
            other => {
                return Err(err(format!(
                    "label selector must be an object, not {other}"
                )))
            }
        };
        let labels = match obj.get("matchLabels") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => return Err(err(format!("matchLabels must be an object, not {other}"))),
        };
        let exprs = match obj.get("matchExpressions") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                return Err(err(format!("matchExpressions must be a list, not {other}")))
            }
        };
        let count = labels.map_or(0, |m| m.len()) + exprs.map_or(0, |a| a.len());
        if count == 0 {
            return Ok(Self::everything());
        }
        let mut reqs = Vec::with_capacity(count);
        for (k, v) in labels.into_iter().flatten() {
            let Some(v) = v.as_str() else {
                return Err(err(format!("matchLabels[{k}] must be a string, not {v}")));
            };
            reqs.push(Requirement::new(k, Operator::Equals, vec![v.to_string()])?);
        }
        for expr in exprs.into_iter().flatten() {
            let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
            let op_name = expr.get("operator").and_then(Value::as_str).unwrap_or("");
            let op = match op_name {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(err(format!(
                        "{} is not a valid label selector operator",
                        go_quote(other)
                    )))
                }
            };
            let values = match expr.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => {
                    let mut out = Vec::with_capacity(a.len());
                    for v in a {
                        match v.as_str() {
                            Some(s) => out.push(s.to_string()),
                            None => {
                                return Err(err(format!(
                                    "label selector values must be strings, not {v}"
                                )))
                            }
                        }
                    }
                    out
                }
                Some(other) => {
                    return Err(err(format!(
                        "label selector values must be a list, not {other}"
                    )))
                }
            };
            reqs.push(Requirement::new(key, op, values)?);
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: reqs,
            nothing: false,
        })
    }

    /// A selector requiring exactly these labels (`SelectorFromValidatedSet`: no checks).
    pub fn from_set<'a, I: IntoIterator<Item = (&'a str, &'a str)>>(set: I) -> Self {
        let mut reqs: Vec<Requirement> = set
            .into_iter()
            .map(|(k, v)| Requirement {
                key: k.to_string(),
                op: Operator::Equals,
                values: vec![v.to_string()],
                bound: 0,
            })
            .collect();
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements: reqs,
            nothing: false,
        }
    }

    /// Adds a requirement (kept sorted by key).
    pub fn add(&mut self, req: Requirement) {
        let at = self.requirements.partition_point(|r| r.key <= req.key);
        self.requirements.insert(at, req);
    }

    /// True when the selector does not restrict anything (upstream `Empty()`).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector of a nil `metav1.LabelSelector`.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Matches against labels looked up through `get` (None: label absent).
    pub fn matches_with<'v, F: Fn(&str) -> Option<&'v str>>(&self, get: F) -> bool {
        !self.nothing
            && self
                .requirements
                .iter()
                .all(|r| r.matches_value(get(&r.key)))
    }

    /// Matches a `metadata.labels` map (non-string values count as absent).
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.matches_with(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Matches an object by its `metadata.labels` (missing labels: an empty set).
    pub fn matches_object(&self, obj: &Value) -> bool {
        match obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
        {
            Some(labels) => self.matches(labels),
            None => self.matches_with(|_| None),
        }
    }

    /// The value this selector requires `label` to have, if it pins one (`=`, `==`, or
    /// `in` with one value) (upstream `RequiresExactMatch`).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match r.op {
            Operator::Equals | Operator::DoubleEquals | Operator::In if r.values.len() == 1 => {
                r.values.first().map(String::as_str)
            }
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// Upstream's `String()`: requirements joined by `,` (empty for everything/nothing).
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

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(s)
    }
}

/// `metav1.FormatLabelSelector`: the selector's string, `<none>` when it is empty (or
/// null), `<error>` when it cannot be converted.
pub fn format_label_selector(selector: &Value) -> String {
    match LabelSelector::from_label_selector_json(selector) {
        Ok(s) => {
            let out = s.to_string();
            if out.is_empty() {
                "<none>".to_string()
            } else {
                out
            }
        }
        Err(_) => "<error>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const QNAME_PART: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn parse(s: &str) -> LabelSelector {
        match LabelSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{:?}: {e}", s.get(..80).unwrap_or(s)),
        }
    }

    fn parse_err(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(_) => panic!("{:?} parsed", s.get(..80).unwrap_or(s)),
            Err(e) => e.0,
        }
    }

    fn set(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect()
    }

    #[test]
    fn good_selectors_from_upstream() {
        for s in [
            "x=a,y=b,z=c",
            "",
            "x!=a,y=b",
            "x=",
            "x= ",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
            "x>1 ,z< 5",
            "x in (a)",
            "x in (a,b,c)",
            "x notin (a)",
            "x in ()",
            "x in (,)",
            "notin=in",
            "  x  ,  !y  ",
            "x in (in),y notin (notin)",
        ] {
            parse(s);
        }
    }

    #[test]
    fn canonical_strings() {
        for (input, want) in [
            (
                "x in (foo,,baz),y,z notin ()",
                "x in (,baz,foo),y,z notin ()",
            ),
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("z=c,x=a", "x=a,z=c"),
            ("x==a", "x==a"),
            ("x!=a", "x!=a"),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x < 5", "x<5"),
            ("x in (b,a,b)", "x in (a,b)"),
            ("x in (a,)", "x in (,a)"),
            ("x=", "x="),
            ("example.com/app=web", "example.com/app=web"),
        ] {
            assert_eq!(parse(input).to_string(), want, "{input}");
        }
    }

    #[test]
    fn bad_selectors_with_upstream_messages() {
        assert_eq!(
            parse_err("x=a||y=b"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {LABEL_VALUE}"
            )
        );
        assert_eq!(
            parse_err("x==a==b"),
            "found '==', expected: ',' or 'end of string'"
        );
        assert_eq!(
            parse_err("!x=a"),
            "found '=', expected: ',' or 'end of string'"
        );
        assert_eq!(
            parse_err("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            parse_err("x>1.1"),
            "unable to parse requirement: values[0]: Invalid value: \"1.1\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            parse_err("x y"),
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            parse_err("x in a"),
            "unable to parse requirement: found 'a' expected: '('"
        );
        assert_eq!(
            parse_err("x in (a"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            parse_err("x in (a b)"),
            "unable to parse requirement: found 'b', expected: ',' or ')'"
        );
        assert_eq!(
            parse_err("x in (=)"),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            parse_err("x=("),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            parse_err("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(parse_err("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            parse_err("a,,b"),
            "found ',', expected: identifier after ','"
        );
        assert_eq!(
            parse_err("!=a"),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            parse_err("!!a"),
            "unable to parse requirement: found '!', expected: identifier"
        );
        // Upstream quirk: an even run of commas inside parentheses is an error.
        assert_eq!(
            parse_err("x in (,,)"),
            "unable to parse requirement: found ')', expected: ',', or identifier"
        );
        assert_eq!(
            parse_err("a b/c"),
            "unable to parse requirement: found 'b/c', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            parse_err("x/y/z=a"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"x/y/z\": a qualified name {QNAME_PART} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )
        );
        assert_eq!(
            parse_err("-x"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"-x\": name part {QNAME_PART}"
            )
        );
        assert_eq!(
            parse_err("x in (-a,-b)"),
            format!(
                "unable to parse requirement: [values[0][x]: Invalid value: \"-a\": {LABEL_VALUE}, values[1][x]: Invalid value: \"-b\": {LABEL_VALUE}]"
            )
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
                err.starts_with("label selector is too long"),
                too_long,
                "{len} bytes: {}",
                &err[..err.len().min(80)]
            );
        }
    }

    #[test]
    fn aggregated_errors_list_at_most_a_hundred() {
        for n in [
            MAX_LISTED_ERRORS - 1,
            MAX_LISTED_ERRORS,
            MAX_LISTED_ERRORS + 1,
            10 * MAX_LISTED_ERRORS,
        ] {
            // Each error twice: duplicates are dropped before counting.
            let errs: Vec<String> = (0..n)
                .flat_map(|i| [format!("e{i}"), format!("e{i}")])
                .collect();
            let msg = aggregate(errs).unwrap();
            let listed = msg
                .trim_matches(|c| c == '[' || c == ']')
                .split(", ")
                .count();
            assert_eq!(listed, n.min(MAX_LISTED_ERRORS), "{n} distinct errors");
        }
    }

    #[test]
    fn matching_like_upstream() {
        let yes = |s: &str, l: &[(&str, &str)]| {
            assert!(parse(s).matches(&set(l)), "{s} should match {l:?}")
        };
        let no = |s: &str, l: &[(&str, &str)]| {
            assert!(!parse(s).matches(&set(l)), "{s} should not match {l:?}")
        };
        yes("", &[("x", "y")]);
        yes("x=y", &[("x", "y")]);
        yes("x=y,z=w", &[("x", "y"), ("z", "w")]);
        yes("x!=y,z!=w", &[("x", "z"), ("z", "a")]);
        yes("notin=in", &[("notin", "in")]);
        yes("x", &[("x", "z")]);
        yes("!x", &[("y", "z")]);
        yes("x>1", &[("x", "2")]);
        yes("x<1", &[("x", "0")]);
        yes("x<1", &[("x", "-5")]);
        yes("x!=y", &[]);
        yes("x notin (a,b)", &[]);
        yes("x notin (a,b)", &[("x", "c")]);
        yes("x in (a,b)", &[("x", "b")]);
        yes("x in ()", &[("x", "")]);
        yes("x=", &[("x", "")]);
        no("x=z", &[]);
        no("x=y", &[("x", "z")]);
        no("x=y,z=w", &[("x", "w"), ("z", "w")]);
        no("x!=y,z!=w", &[("x", "z"), ("z", "w")]);
        no("x", &[("y", "z")]);
        no("!x", &[("x", "z")]);
        no("x>1", &[("x", "0")]);
        no("x<1", &[("x", "2")]);
        no("x>1", &[("x", "abc")]);
        no("x>1", &[]);
        no("x in (a,b)", &[]);
        no("x notin (a,b)", &[("x", "a")]);
        no("x=", &[]);
        let labels = [("foo", "bar"), ("baz", "blah")];
        yes("foo=bar", &labels);
        yes("baz=blah", &labels);
        yes("foo=bar,baz=blah", &labels);
        no("foo=blah", &labels);
        no("baz=bar", &labels);
        no("foo=bar,foobar=bar,baz=blah", &labels);
    }

    #[test]
    fn matches_objects_and_closures() {
        let obj = json!({"metadata": {"labels": {"app": "web"}}});
        assert!(parse("app=web").matches_object(&obj));
        assert!(parse("!tier").matches_object(&json!({"metadata": {}})));
        assert!(!parse("app").matches_object(&json!({})));
        assert!(parse("app=web").matches_with(|k| (k == "app").then_some("web")));
        assert!(!LabelSelector::nothing().matches_object(&obj));
        assert!(LabelSelector::everything().matches_object(&obj));
    }

    #[test]
    fn from_label_selector_objects() {
        let sel = LabelSelector::from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "x", "operator": "Exists"},
                {"key": "y", "operator": "DoesNotExist"}
            ]
        }));
        let sel = match sel {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            sel.to_string(),
            "app=web,env notin (prod),tier in (a,b),x,!y"
        );
        assert!(sel.matches(&set(&[("app", "web"), ("tier", "a"), ("x", "")])));
        assert!(!sel.matches(&set(&[("app", "web"), ("tier", "a"), ("x", ""), ("y", "")])));
        assert!(LabelSelector::from_label_selector_json(&json!({})).is_ok_and(|s| s.is_empty()));
        assert!(LabelSelector::from_label_selector_json(&json!(null))
            .is_ok_and(|s| s.matches_nothing()));
        let e = |v: Value| match LabelSelector::from_label_selector_json(&v) {
            Ok(s) => panic!("{v} gave {s}"),
            Err(e) => e.0,
        };
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "a", "operator": "Seriously"}]})),
            "\"Seriously\" is not a valid label selector operator"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "In", "values": []}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            e(json!({"matchExpressions": [{"key": "name", "operator": "Exists", "values": ["a", "b"]}]})),
            "values: Invalid value: []string{\"a\", \"b\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            e(json!({"matchLabels": {"a b": "c"}})),
            format!("key: Invalid value: \"a b\": name part {QNAME_PART}")
        );
        assert_eq!(
            format_label_selector(
                &json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
            ),
            "batch.kubernetes.io/controller-uid=u1"
        );
        assert_eq!(format_label_selector(&json!(null)), "<none>");
        assert_eq!(format_label_selector(&json!({})), "<none>");
        assert_eq!(
            format_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "X"}]})),
            "<error>"
        );
    }

    #[test]
    fn requirement_api() {
        let sel = parse("a in (x),b=y,c in (p,q)");
        assert_eq!(sel.requires_exact_match("a"), Some("x"));
        assert_eq!(sel.requires_exact_match("b"), Some("y"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(
            sel.requirements()[2].values(),
            ["p".to_string(), "q".to_string()]
        );
        assert_eq!(sel.requirements()[1].operator(), Operator::Equals);
        let mut s = LabelSelector::from_set([("b", "2"), ("a", "1")]);
        assert_eq!(s.to_string(), "a=1,b=2");
        s.add(match Requirement::new("ab", Operator::Exists, vec![]) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        });
        assert_eq!(s.to_string(), "a=1,ab,b=2");
        assert!(
            Requirement::new("k", Operator::GreaterThan, vec!["1".into(), "2".into()]).is_err()
        );
    }

    #[test]
    fn hostile_inputs_stay_linear() {
        // Many empty values, deeply repeated commas, long identifiers: all bounded.
        let many = format!("x in ({})", ",".repeat(59_999));
        assert_eq!(parse(&many).requirements()[0].values(), [String::new()]);
        let long_key = "a".repeat(100_000);
        assert!(LabelSelector::parse(&long_key).is_err());
        let many_reqs = vec!["a"; 30_000].join(",");
        assert_eq!(parse(&many_reqs).requirements().len(), 30_000);
        let vals: Vec<String> = (0..15_000).map(|i| format!("-{i}")).collect();
        let bad_values = format!("x in ({})", vals.join(","));
        assert!(parse_err(&bad_values).len() < 100 * 400);
        // A NUL byte reads as the end of a token, as upstream's lexer does.
        assert_eq!(parse("a=b\0").to_string(), "a=b");
    }
}
