//! String formats kube-openapi validates in CRD schemas (apiextensions `formats.go`:
//! the set supported since 1.0; any other `format` is ignored, as upstream strips it).
//! The checks follow go-openapi `strfmt` and the forked govalidator.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// A validated string format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    Duration,
    DateTime,
}

impl Format {
    /// The supported format named `name` (go-openapi normalizes by dropping dashes).
    pub(crate) fn parse(name: &str) -> Option<Format> {
        let norm: String = name.chars().filter(|c| *c != '-').collect();
        Some(match norm.as_str() {
            "bsonobjectid" => Format::BsonObjectId,
            "uri" => Format::Uri,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "cidr" => Format::Cidr,
            "mac" => Format::Mac,
            "uuid" => Format::Uuid,
            "uuid3" => Format::Uuid3,
            "uuid4" => Format::Uuid4,
            "uuid5" => Format::Uuid5,
            "isbn" => Format::Isbn,
            "isbn10" => Format::Isbn10,
            "isbn13" => Format::Isbn13,
            "creditcard" => Format::CreditCard,
            "ssn" => Format::Ssn,
            "hexcolor" => Format::HexColor,
            "rgbcolor" => Format::RgbColor,
            "byte" => Format::Byte,
            "password" => Format::Password,
            "date" => Format::Date,
            "duration" => Format::Duration,
            "datetime" => Format::DateTime,
            _ => return None,
        })
    }

    /// Whether `s` is valid in this format.
    pub(crate) fn check(self, s: &str) -> bool {
        match self {
            Format::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            Format::Uri => is_request_uri(s),
            Format::Email => is_email(s),
            Format::Hostname => is_hostname(s),
            Format::Ipv4 => {
                parse_ipv4_sloppy(s).is_some() || (s.contains('.') && s.parse::<Ipv6Addr>().is_ok())
            }
            Format::Ipv6 => s.contains(':') && s.parse::<Ipv6Addr>().is_ok(),
            Format::Cidr => is_cidr(s),
            Format::Mac => is_mac(s),
            Format::Uuid => matches(&UUID, s),
            Format::Uuid3 => matches(&UUID3, s),
            Format::Uuid4 => matches(&UUID4, s),
            Format::Uuid5 => matches(&UUID5, s),
            Format::Isbn => is_isbn10(s) || is_isbn13(s),
            Format::Isbn10 => is_isbn10(s),
            Format::Isbn13 => is_isbn13(s),
            Format::CreditCard => is_credit_card(s),
            Format::Ssn => s.len() == 11 && matches(&SSN, s),
            Format::HexColor => matches(&HEXCOLOR, s),
            Format::RgbColor => matches(&RGBCOLOR, s),
            Format::Byte => matches(&BASE64, s),
            Format::Password => true,
            Format::Date => parse_date(s).is_some(),
            Format::Duration => parse_duration(s).is_some(),
            Format::DateTime => is_date_time(s),
        }
    }
}

fn re(p: &str) -> Option<Regex> {
    Regex::new(p).ok()
}

fn matches(r: &LazyLock<Option<Regex>>, s: &str) -> bool {
    r.as_ref().is_some_and(|r| r.is_match(s))
}

static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEXCOLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let n = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    re(&format!(r"^rgb\(\s*{n}\s*,\s*{n}\s*,\s*{n}\s*\)$"))
});
static BASE64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$",
    )
});
static DATE_TIME_TAIL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});

fn is_hostname(s: &str) -> bool {
    matches(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// `net.ParseIP` for dotted IPv4, tolerating leading zeros (`ParseIPSloppy`).
pub(crate) fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = s.split('.');
    for o in octets.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 10 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = u8::try_from(p.parse::<u32>().ok()?).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(Ipv4Addr::from(octets))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u32>() else {
        return false;
    };
    if parse_ipv4_sloppy(ip).is_some() {
        bits <= 32
    } else {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    }
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
fn is_mac(s: &str) -> bool {
    let hex_group = |g: &str, n: usize| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit());
    let bytes = s.as_bytes();
    if bytes.len() < 14 {
        return false;
    }
    match bytes.get(2) {
        Some(b':') | Some(b'-') => {
            let sep = if bytes[2] == b':' { ':' } else { '-' };
            let groups: Vec<&str> = s.split(sep).collect();
            matches!(groups.len(), 6 | 8 | 20) && groups.iter().all(|g| hex_group(g, 2))
        }
        _ if bytes.get(4) == Some(&b'.') => {
            let groups: Vec<&str> = s.split('.').collect();
            matches!(groups.len(), 3 | 4 | 10) && groups.iter().all(|g| hex_group(g, 4))
        }
        _ => false,
    }
}

fn isbn_digits(s: &str) -> Vec<char> {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 10
        || !d[..9].iter().all(|c| c.is_ascii_digit())
        || !(d[9].is_ascii_digit() || d[9] == 'X')
    {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in d.iter().enumerate() {
        let v = if *c == 'X' {
            10
        } else {
            c.to_digit(10).unwrap_or(0)
        };
        sum += (i as u32 + 1) * v;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    if d.len() != 13 || !d.iter().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in d[..12].iter().enumerate() {
        let v = c.to_digit(10).unwrap_or(0);
        sum += if i % 2 == 0 { v } else { 3 * v };
    }
    let check = (10 - sum % 10) % 10;
    d[12].to_digit(10) == Some(check)
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if !matches(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.chars().rev() {
        let mut v = c.to_digit(10).unwrap_or(0);
        if double {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
        double = !double;
    }
    sum.is_multiple_of(10)
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(is_atext))
}

/// `net/mail.ParseAddress` for the common forms: `local@domain` and `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.find('<'), s.ends_with('>')) {
        (Some(i), true) => &s[i + 1..s.len() - 1],
        (None, false) => s,
        _ => return false,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let local_ok = is_dot_atom(local)
        || (local.len() >= 2
            && local.starts_with('"')
            && local.ends_with('"')
            && !local[1..local.len() - 1].contains('"'));
    let domain_ok = is_dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']'));
    local_ok && domain_ok
}

/// `url.ParseRequestURI` acceptance: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_ascii_control()) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // %-escapes must be well formed.
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok = b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    let rest = match scheme_end(s) {
        Some(end) => &s[end + 1..],
        None => {
            if s.starts_with(':') {
                return false;
            }
            return s.starts_with('/');
        }
    };
    if let Some(auth) = rest.strip_prefix("//") {
        let authority = auth.split(['/', '?']).next().unwrap_or("");
        let host = authority
            .rsplit_once('@')
            .map(|(_, h)| h)
            .unwrap_or(authority);
        let (host, port) = if host.starts_with('[') {
            match host.find(']') {
                Some(i) => (&host[..=i], host[i + 1..].strip_prefix(':')),
                None => return false,
            }
        } else {
            match host.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (host, None),
            }
        };
        if port.is_some_and(|p| !p.bytes().all(|c| c.is_ascii_digit())) {
            return false;
        }
        return host
            .chars()
            .all(|c| c.is_alphanumeric() || "-._~!$&'()*+,;=%[]:".contains(c));
    }
    true
}

/// The index of the `:` ending a URI scheme, if `s` starts with one.
fn scheme_end(s: &str) -> Option<usize> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i > 0 => return Some(i),
            _ => return None,
        }
    }
    None
}

/// A full date `YYYY-MM-DD` (RFC 3339), as (year, month, day).
pub(crate) fn parse_date(s: &str) -> Option<(i32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if d == 0 || d > days {
        return None;
    }
    Some((y as i32, m, d))
}

/// strfmt `IsDateTime`: a full date, `T`, and `hh:mm:ss[.frac](Z|±hh:mm)`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || parse_date(parts[0]).is_none() {
        return false;
    }
    let Some(re) = DATE_TIME_TAIL.as_ref() else {
        return false;
    };
    match re.captures(parts[1]) {
        Some(c) => {
            let g = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("");
            g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
        }
        None => false,
    }
}

/// Go's `time.ParseDuration`, then strfmt's lenient `<n> <unit>` form; nanoseconds.
pub(crate) fn parse_duration(s: &str) -> Option<i128> {
    go_parse_duration(s).or_else(|| lenient_duration(s))
}

fn go_parse_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return None;
        }
        let value: f64 = num.parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * mult;
    }
    if total > 9.3e18 {
        return None;
    }
    Some(if neg { -(total as i128) } else { total as i128 })
}

fn lenient_duration(s: &str) -> Option<i128> {
    const UNITS: &[(&[&str], i128)] = &[
        (&["ns", "nano"], 1),
        (&["us", "µs", "micro"], 1_000),
        (&["ms", "milli"], 1_000_000),
        (&["s", "sec"], 1_000_000_000),
        (&["m", "min"], 60_000_000_000),
        (&["h", "hr", "hour"], 3_600_000_000_000),
        (&["d", "day"], 86_400_000_000_000),
        (&["w", "wk", "week"], 604_800_000_000_000),
    ];
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut total: i128 = 0;
    let mut ok = false;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let factor: i128 = chars[start..i].iter().collect::<String>().parse().ok()?;
        let mut j = i;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        let ustart = j;
        while j < chars.len() && (chars[j].is_ascii_alphabetic() || chars[j] == 'µ') {
            j += 1;
        }
        if j == ustart {
            continue;
        }
        let unit = chars[ustart..j].iter().collect::<String>().to_lowercase();
        i = j;
        for (variants, mult) in UNITS {
            let last = variants.len() - 1;
            for (k, v) in variants.iter().enumerate() {
                if (k == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                    total = total.saturating_add(factor.saturating_mul(*mult));
                }
            }
        }
    }
    ok.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject() {
        let cases: &[(&str, &str, bool)] = &[
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "not-a-uuid", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+02:00", true),
            ("date-time", "2024-13-02T03:04:05Z", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("duration", "1h30m", true),
            ("duration", "5 days", true),
            ("duration", "soon", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "10.0.0", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "fd00::/64", true),
            ("mac", "01:23:45:67:89:ab", true),
            ("mac", "0123.4567.89ab", true),
            ("mac", "01:23:45", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad-.com", false),
            ("email", "a.b@example.com", true),
            ("email", "Jane <jane@example.com>", true),
            ("email", "nope", false),
            ("uri", "https://example.com:8443/x?y=1", true),
            ("uri", "/abs/path", true),
            ("uri", "relative/path", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("isbn", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("ssn", "123-45-6789", true),
            ("hexcolor", "#FFF", true),
            ("rgbcolor", "rgb(0, 128, 255)", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
        ];
        for (fmt, v, want) in cases {
            let f = Format::parse(fmt).unwrap_or(Format::Password);
            assert_eq!(f.check(v), *want, "{fmt} {v}");
        }
        assert_eq!(Format::parse("int32"), None);
        assert_eq!(Format::parse("date-time"), Some(Format::DateTime));
    }
}
