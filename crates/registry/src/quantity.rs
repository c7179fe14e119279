//! Resource quantities (`resource.Quantity` of apimachinery): parsing, exact arithmetic,
//! comparison and the canonical text a Go client reads back.
//!
//! A quantity is held exactly, in units of 10⁻⁹ (upstream keeps at most nano precision
//! and rounds a finer value up, away from zero), with the format its text was written in:
//! a binary suffix (`Ki` … `Ei`), a decimal exponent (`e3`, `E-2`), or a decimal SI suffix
//! (`n` … `E`, or none). The canonical text (`Quantity.String()`) keeps that format:
//! decimal values take the largest SI suffix (or exponent) that leaves an integer
//! mantissa (`1000m` → `1`, `1500` → `1500`, `0.5` → `500m`); binary values of at least
//! 1024 that are whole take the largest binary suffix that leaves an integer (`1024Mi` →
//! `1Gi`, `1536` stays `1536`), others are written as decimal. Values beyond about 10²⁹
//! are refused as too large (upstream's bignum range is wider; no real quota reaches it).

use std::cmp::Ordering;
use std::fmt;

/// Nano units per unit.
const NANO: i128 = 1_000_000_000;

/// The message upstream's decoder gives a quantity that does not parse.
pub const FORMAT_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// How a quantity is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `Ki`, `Mi`, … (powers of 1024).
    BinarySi,
    /// `e3`, `E-6`, … (powers of ten).
    DecimalExponent,
    /// `n`, `u`, `m`, none, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSi,
}

/// An exact resource quantity.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    /// The value in units of 10⁻⁹.
    nanos: i128,
    format: Format,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Quantity {
    /// A whole count (`DecimalSI`).
    pub fn count(n: i64) -> Quantity {
        Quantity {
            nanos: i128::from(n) * NANO,
            format: Format::DecimalSi,
        }
    }

    /// Zero.
    pub fn zero() -> Quantity {
        Quantity::count(0)
    }

    /// Parses `s` as `resource.ParseQuantity` does; `None` when it does not parse or is
    /// out of range.
    pub fn parse(s: &str) -> Option<Quantity> {
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(split);
        let (negative, digits) = match number.as_bytes().first() {
            Some(b'+') => (false, &number[1..]),
            Some(b'-') => (true, &number[1..]),
            _ => (false, number),
        };
        if digits.is_empty()
            || digits == "."
            || digits.matches('.').count() > 1
            || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        {
            return None;
        }
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        // The digits as an integer and the power of ten they are scaled by.
        let all: String = format!("{int_part}{frac_part}");
        let all = all.trim_start_matches('0');
        if all.len() > 36 {
            return None;
        }
        let mantissa: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
        let frac_digits = i32::try_from(frac_part.len()).ok()?;
        let (format, base2, exp10) = match suffix {
            "" => (Format::DecimalSi, 0, 0),
            "n" => (Format::DecimalSi, 0, -9),
            "u" => (Format::DecimalSi, 0, -6),
            "m" => (Format::DecimalSi, 0, -3),
            "k" => (Format::DecimalSi, 0, 3),
            "M" => (Format::DecimalSi, 0, 6),
            "G" => (Format::DecimalSi, 0, 9),
            "T" => (Format::DecimalSi, 0, 12),
            "P" => (Format::DecimalSi, 0, 15),
            "E" => (Format::DecimalSi, 0, 18),
            "Ki" => (Format::BinarySi, 10, 0),
            "Mi" => (Format::BinarySi, 20, 0),
            "Gi" => (Format::BinarySi, 30, 0),
            "Ti" => (Format::BinarySi, 40, 0),
            "Pi" => (Format::BinarySi, 50, 0),
            "Ei" => (Format::BinarySi, 60, 0),
            e if e.starts_with(['e', 'E']) => {
                let rest = &e[1..];
                let unsigned = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let exp: i32 = rest.parse().ok()?;
                (Format::DecimalExponent, 0, exp)
            }
            _ => return None,
        };
        // value = mantissa * 2^base2 * 10^(exp10 - frac_digits), held in nanos.
        let scaled = mantissa.checked_mul(1i128.checked_shl(base2)?)?;
        let shift = exp10.checked_sub(frac_digits)?.checked_add(9)?;
        let nanos = if shift >= 0 {
            scaled.checked_mul(10i128.checked_pow(u32::try_from(shift).ok()?)?)?
        } else {
            let div = u32::try_from(-shift)
                .ok()
                .and_then(|d| 10i128.checked_pow(d));
            match div {
                // Finer than a nano: rounded up, away from zero.
                Some(div) => scaled / div + i128::from(scaled % div != 0),
                // Smaller than any nano: one nano unless it is zero.
                None => i128::from(scaled != 0),
            }
        };
        // Keep far from i128's edges so that sums of many quantities stay exact.
        if nanos > NANO * 10i128.pow(20) * 1_000_000_000 {
            return None;
        }
        // A binary value between 0 and 1 is decimal (`ParseQuantity`).
        let format = if format == Format::BinarySi && nanos > 0 && nanos < NANO {
            Format::DecimalSi
        } else {
            format
        };
        Some(Quantity {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The format the canonical text keeps.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the value is whole (`MilliValue() % 1000 == 0`, which is what upstream's
    /// integer resources check; sub-milli parts round up there as well).
    pub fn is_integer(&self) -> bool {
        // Milli value rounded up, as `MilliValue` does.
        let milli = self.nanos / 1_000_000 + i128::from(self.nanos % 1_000_000 > 0);
        milli % 1000 == 0
    }

    /// The format a sum or difference keeps: the left-hand one, or the right-hand one
    /// when the left is zero (`Quantity.Add`, `Sub`).
    fn format_with(&self, other: &Quantity) -> Format {
        if self.nanos == 0 {
            other.format
        } else {
            self.format
        }
    }

    /// The sum (see [`Self::format_with`] for its format); `None` on overflow.
    pub fn checked_add(&self, other: &Quantity) -> Option<Quantity> {
        Some(Quantity {
            nanos: self.nanos.checked_add(other.nanos)?,
            format: self.format_with(other),
        })
    }

    /// The difference; `None` on overflow.
    pub fn checked_sub(&self, other: &Quantity) -> Option<Quantity> {
        Some(Quantity {
            nanos: self.nanos.checked_sub(other.nanos)?,
            format: self.format_with(other),
        })
    }
}

/// The decimal suffix of a power of ten (a multiple of three).
fn decimal_suffix(exp: i32) -> Option<&'static str> {
    Some(match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    })
}

impl fmt::Display for Quantity {
    /// The canonical text (`Quantity.String()`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        let whole = abs.is_multiple_of(NANO as u128);
        if self.format == Format::BinarySi && whole && abs >= 1024 * NANO as u128 {
            let mut v = abs / NANO as u128;
            let mut exp = 0;
            while exp < 6 && v.is_multiple_of(1024) {
                v /= 1024;
                exp += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exp];
            return write!(f, "{sign}{v}{suffix}");
        }
        // Decimal: the largest exponent (a multiple of three) leaving an integer.
        let mut mantissa = abs;
        let mut exp: i32 = -9;
        while mantissa.is_multiple_of(1000) {
            mantissa /= 1000;
            exp += 3;
        }
        let suffix = match (self.format, decimal_suffix(exp)) {
            (Format::DecimalExponent, _) if exp == 0 => String::new(),
            (Format::DecimalExponent, _) => format!("e{exp}"),
            (_, Some(s)) => s.to_string(),
            (_, None) => format!("e{exp}"),
        };
        write!(f, "{sign}{mantissa}{suffix}")
    }
}

/// The canonical text of a quantity as JSON holds it (a string, or a number a client
/// sent), or `None` when it does not parse.
pub fn canonical(v: &serde_json::Value) -> Option<String> {
    parse_value(v).map(|q| q.to_string())
}

/// A quantity as JSON holds it: a string, or a number (upstream's decoder accepts both).
pub fn parse_value(v: &serde_json::Value) -> Option<Quantity> {
    match v {
        serde_json::Value::String(s) => Quantity::parse(s),
        serde_json::Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .unwrap_or_else(|| panic!("{s} does not parse"))
            .to_string()
    }

    #[test]
    fn canonical_text_is_upstreams() {
        for (input, want) in [
            ("0", "0"),
            ("0m", "0"),
            ("1", "1"),
            ("1000m", "1"),
            ("1500", "1500"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("100000", "100k"),
            ("2000", "2k"),
            ("1k", "1k"),
            ("1Ki", "1Ki"),
            ("1024", "1024"),
            ("1024Mi", "1Gi"),
            ("1536Ki", "1536Ki"),
            ("0.5Ki", "512"),
            ("500Mi", "500Mi"),
            ("10Gi", "10Gi"),
            ("1e3", "1e3"),
            ("12e2", "1200"),
            ("1E6", "1e6"),
            ("-1", "-1"),
            ("+5", "5"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("1.5", "1500m"),
            ("750Mi", "750Mi"),
            ("1e21", "1e21"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn malformed_quantities_do_not_parse() {
        for bad in [
            "", ".", "x", "1x", "1..0", "1.0.0", "--1", "1e", "1e+", "1Kii", "1 ", " 1", "1mi",
            "1e1000",
        ] {
            assert!(Quantity::parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn arithmetic_and_order_are_exact() {
        let a = Quantity::parse("1500m").unwrap();
        let b = Quantity::parse("0.5").unwrap();
        assert_eq!(a.checked_add(&b).unwrap().to_string(), "2");
        assert_eq!(a.checked_sub(&b).unwrap().to_string(), "1");
        assert!(Quantity::parse("1Ki").unwrap() > Quantity::parse("1k").unwrap());
        assert_eq!(
            Quantity::parse("1Gi").unwrap(),
            Quantity::parse("1073741824").unwrap()
        );
        assert!(Quantity::parse("3").unwrap().is_integer());
        assert!(!Quantity::parse("2500m").unwrap().is_integer());
        assert!(Quantity::parse("-1").unwrap().is_negative());
        assert_eq!(Quantity::count(7).to_string(), "7");
        // A zero takes the other's format; a binary value below one is decimal.
        let mi = Quantity::parse("64Mi").unwrap();
        assert_eq!(
            Quantity::zero().checked_add(&mi).unwrap().to_string(),
            "64Mi"
        );
        assert_eq!(
            mi.checked_add(&Quantity::zero()).unwrap().to_string(),
            "64Mi"
        );
        let half = Quantity::parse("0.5Ki").unwrap();
        assert_eq!(half.checked_add(&half).unwrap().to_string(), "1Ki");
        assert_eq!(
            Quantity::parse("0.0001Ki").unwrap().format(),
            Format::DecimalSi
        );
        assert_eq!(
            parse_value(&serde_json::json!(3)).unwrap(),
            Quantity::count(3)
        );
    }
}
