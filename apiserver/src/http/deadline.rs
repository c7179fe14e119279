//! The `timeout` query parameter, read as kube-apiserver's request deadline filter reads it
//! (`k8s.io/apiserver/pkg/endpoints/filters/request_deadline.go`, `parseTimeout`): on every
//! request that is not long-running ([`is_long_running`]: watches and the streaming
//! subresources), a `timeout` that is not a Go duration is a 400 `BadRequest`,
//! `invalid timeout specified in the request URL - <time.ParseDuration's error>`, answered
//! before authentication (the filter runs outside it). An empty value is no timeout;
//! long-running requests never read the parameter (watches use `timeoutSeconds`).
//!
//! kplane sets no server-side deadline from a valid `timeout`; only the validation is kept.

use kplane_registry::ApiError;
use kplane_types::RequestInfo;

use super::query::Query;
use super::request_info::is_long_running;

/// The prefix of the filter's message (`invalidTimeoutInURL`).
const INVALID_TIMEOUT: &str = "invalid timeout specified in the request URL";

/// Checks the request's `timeout` parameter; `query` is the raw query string.
pub fn check_timeout(info: &RequestInfo, query: Option<&str>) -> Result<(), ApiError> {
    if is_long_running(info) {
        return Ok(());
    }
    let q = Query::parse(query);
    match q.get("timeout") {
        None | Some("") => Ok(()),
        Some(t) => parse_go_duration(t)
            .map(|_| ())
            .map_err(|e| ApiError::bad_request(format!("{INVALID_TIMEOUT} - {e}"))),
    }
}

/// Go's duration units and their length in nanoseconds (`time.unitMap`).
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000), // U+00B5 micro sign
    ("μs", 1_000), // U+03BC Greek mu
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const LIMIT: u64 = 1 << 63;

/// Parses a duration as Go's `time.ParseDuration` does (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`,
/// or a bare `0`), into nanoseconds; the error is Go's message, word for word.
pub fn parse_go_duration(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(s));
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let first = rest.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, after) = split_digits(rest);
        let mut v = leading_int(whole).ok_or_else(invalid)?;
        rest = after;
        let mut fraction = (0, 1.0, false);
        if let Some(after_dot) = rest.strip_prefix('.') {
            let (digits, after) = split_digits(after_dot);
            fraction = leading_fraction(digits);
            rest = after;
        }
        let (f, scale, post) = fraction;
        if whole.is_empty() && !post {
            return Err(invalid());
        }
        let unit_len = rest
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(s)));
        }
        let (u, after) = rest.split_at(unit_len);
        rest = after;
        let Some(&(_, unit)) = UNITS.iter().find(|(name, _)| *name == u) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_quote(u),
                go_quote(s)
            ));
        };
        if v > LIMIT / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // Go computes the fraction in float64 and truncates it.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        // Go adds in uint64, which wraps; so does this.
        total = total.wrapping_add(v);
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // 2^63 becomes i64::MIN, as Go's -Duration(1<<63).
        return Ok((total as i64).wrapping_neg());
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    s.split_at(n)
}

/// The integer part; `None` past 2^63 (Go's `errLeadingInt`).
fn leading_int(digits: &str) -> Option<u64> {
    let mut x: u64 = 0;
    for c in digits.bytes() {
        if x > LIMIT / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > LIMIT {
            return None;
        }
    }
    Some(x)
}

/// The fraction's digits as an integer, its scale (10^digits kept) and whether there were
/// any; digits past what fits are ignored, as Go's `leadingFraction` does.
fn leading_fraction(digits: &str) -> (u64, f64, bool) {
    let (mut x, mut scale) = (0u64, 1.0f64);
    for c in digits.bytes() {
        if x > (LIMIT - 1) / 10 {
            break;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > LIMIT {
            break;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, !digits.is_empty())
}

/// Go's `time.quote`: double quotes, `"` and `\` escaped, control and non-ASCII characters
/// written byte by byte as `\xNN`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c < ' ' || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::{ClusterScope, Verb};

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn go_durations_parse_as_go_does() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("32s", 32 * SEC),
            ("1m30s", 90 * SEC),
            ("1.5h", 5400 * SEC),
            (".5s", SEC / 2),
            ("1.s", SEC),
            ("-2m", -120 * SEC),
            ("300ms", 300_000_000),
            ("1µs", 1_000),
            ("1μs", 1_000),
            ("1us1ns", 1_001),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.100000000000000000000h", 360 * SEC),
        ];
        for (s, want) in cases {
            assert_eq!(parse_go_duration(s), Ok(*want), "{s}");
        }
    }

    #[test]
    fn go_duration_errors_are_go_s_messages() {
        let cases: &[(&str, &str)] = &[
            ("invalid", r#"time: invalid duration "invalid""#),
            ("", r#"time: invalid duration """#),
            ("-", r#"time: invalid duration "-""#),
            (".s", r#"time: invalid duration ".s""#),
            ("s", r#"time: invalid duration "s""#),
            ("1", r#"time: missing unit in duration "1""#),
            ("1.5", r#"time: missing unit in duration "1.5""#),
            ("3d", r#"time: unknown unit "d" in duration "3d""#),
            ("1s2x", r#"time: unknown unit "x" in duration "1s2x""#),
            (
                "9223372036854775808ns",
                r#"time: invalid duration "9223372036854775808ns""#,
            ),
            ("3000000h", r#"time: invalid duration "3000000h""#),
            (
                "1é",
                r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#,
            ),
            ("a\"b", r#"time: invalid duration "a\"b""#),
        ];
        for (s, want) in cases {
            assert_eq!(parse_go_duration(s).unwrap_err(), *want, "{s}");
        }
    }

    fn info(verb: Verb, subresource: Option<&str>) -> RequestInfo {
        RequestInfo {
            cluster: ClusterScope::Wildcard,
            path: "/api/v1/namespaces/default/configmaps".into(),
            verb,
            is_resource_request: true,
            api_group: String::new(),
            api_version: "v1".into(),
            namespace: Some("default".into()),
            resource: "configmaps".into(),
            subresource: subresource.map(str::to_string),
            name: None,
        }
    }

    #[test]
    fn invalid_timeout_is_the_filter_s_bad_request() {
        for verb in [Verb::Get, Verb::List, Verb::Create, Verb::Delete] {
            let e = check_timeout(&info(verb.clone(), None), Some("timeout=invalid")).unwrap_err();
            assert_eq!(e.code(), 400, "{verb:?}");
            assert_eq!(
                e.0.message,
                r#"invalid timeout specified in the request URL - time: invalid duration "invalid""#
            );
        }
        let version = RequestInfo::non_resource(ClusterScope::Wildcard, Verb::Get, "/version");
        assert_eq!(
            check_timeout(&version, Some("timeout=1x"))
                .unwrap_err()
                .code(),
            400
        );
    }

    #[test]
    fn valid_empty_and_long_running_pass() {
        for q in ["timeout=3m", "timeout=0s", "timeout=", "limit=1"] {
            assert!(
                check_timeout(&info(Verb::List, None), Some(q)).is_ok(),
                "{q}"
            );
        }
        assert!(check_timeout(&info(Verb::Watch, None), Some("timeout=invalid")).is_ok());
        assert!(check_timeout(&info(Verb::Get, Some("log")), Some("timeout=invalid")).is_ok());
    }
}
