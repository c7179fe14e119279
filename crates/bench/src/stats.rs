//! Latency samples, percentiles and error counts.
//!
//! Latencies are kept exactly (one `u64` of nanoseconds per sample, in a plain vector) and
//! sorted once when a summary is asked for; runs are bounded in time, so the vectors stay small
//! enough (a million samples is 8 MB).
//!
//! Percentiles use the **nearest-rank** definition: for `0 < p <= 100` and `n` sorted samples,
//! the p-th percentile is the sample at 1-based rank `ceil(p / 100 * n)`. It is always one of
//! the observed values (never interpolated), `p100` is the maximum, and `p0` is defined here as
//! the minimum (rank 1). An empty sample set has no percentiles.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

/// The nearest-rank `p`-th percentile of `sorted` (ascending). `None` when empty or when `p`
/// is outside `0..=100` or not a number.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let n = sorted.len();
    // ceil(p/100 * n), computed so that exact ranks are not pushed up by rounding noise.
    let exact = p / 100.0 * n as f64;
    let mut rank = exact.ceil() as usize;
    if rank > 0 && (exact - (rank - 1) as f64).abs() < 1e-9 {
        rank -= 1;
    }
    let rank = rank.clamp(1, n);
    sorted.get(rank - 1).copied()
}

/// Latency samples of one measurement.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    nanos: Vec<u64>,
}

impl Samples {
    /// Records one latency.
    pub fn record(&mut self, d: Duration) {
        self.nanos
            .push(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Appends all samples of `other`.
    pub fn merge(&mut self, other: Samples) {
        if self.nanos.is_empty() {
            self.nanos = other.nanos;
        } else {
            self.nanos.extend(other.nanos);
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.nanos.len()
    }

    /// Sorts the samples and summarises them.
    pub fn summary(mut self) -> Summary {
        self.nanos.sort_unstable();
        let s = &self.nanos;
        let ms = |p: f64| percentile(s, p).map(|v| v as f64 / 1e6);
        let mean = if s.is_empty() {
            None
        } else {
            let total: u128 = s.iter().map(|&v| u128::from(v)).sum();
            Some(total as f64 / s.len() as f64 / 1e6)
        };
        Summary {
            count: s.len() as u64,
            p50: ms(50.0),
            p90: ms(90.0),
            p99: ms(99.0),
            max: ms(100.0),
            mean,
        }
    }
}

/// Percentiles of a sample set, in milliseconds; `None` for an empty set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

impl Summary {
    /// `{"p50":..,"p90":..,"p99":..,"max":..,"mean":..}` in ms (null when there are no samples).
    pub fn to_json(self) -> Value {
        json!({
            "p50": round3(self.p50),
            "p90": round3(self.p90),
            "p99": round3(self.p99),
            "max": round3(self.max),
            "mean": round3(self.mean),
        })
    }
}

fn round3(v: Option<f64>) -> Option<f64> {
    v.map(|x| (x * 1000.0).round() / 1000.0)
}

/// Failures counted by key (`"409"`, `"transport"`, `"timeout"`, ...), with the first message
/// seen for each key so that a report can say what went wrong.
#[derive(Debug, Default, Clone)]
pub struct ErrorCounts {
    counts: BTreeMap<String, u64>,
    first: BTreeMap<String, String>,
}

impl ErrorCounts {
    /// Counts one failure under `key`, remembering `message` if it is the first of its kind.
    pub fn add(&mut self, key: &str, message: &str) {
        self.add_n(key, 1, message);
    }

    /// Counts `n` failures under `key`.
    pub fn add_n(&mut self, key: &str, n: u64, message: &str) {
        if n == 0 {
            return;
        }
        *self.counts.entry(key.to_string()).or_default() += n;
        if !self.first.contains_key(key) {
            let mut m: String = message.chars().take(300).collect();
            if m.len() < message.len() {
                m.push('…');
            }
            self.first.insert(key.to_string(), m);
        }
    }

    /// Adds all counts of `other`, each key prefixed with `prefix` (may be empty).
    pub fn merge_prefixed(&mut self, other: ErrorCounts, prefix: &str) {
        for (k, n) in other.counts {
            let msg = other.first.get(&k).cloned().unwrap_or_default();
            self.add_n(&format!("{prefix}{k}"), n, &msg);
        }
    }

    /// Adds all counts of `other`.
    pub fn merge(&mut self, other: ErrorCounts) {
        self.merge_prefixed(other, "");
    }

    /// Total number of failures.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Whether nothing failed.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// `(key, count, first message)` in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64, &str)> {
        self.counts.iter().map(|(k, n)| {
            let msg = self.first.get(k).map(String::as_str).unwrap_or("");
            (k.as_str(), *n, msg)
        })
    }

    /// `{"<key>": count, ...}`.
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.counts
                .iter()
                .map(|(k, n)| (k.clone(), Value::from(*n)))
                .collect(),
        )
    }

    /// `409=3 transport=1`, or `0`.
    pub fn short(&self) -> String {
        if self.counts.is_empty() {
            return "0".to_string();
        }
        self.counts
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn percentile_of_empty_is_none() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[], 100.0), None);
        let s = Samples::default().summary();
        assert_eq!(s.count, 0);
        assert_eq!(s.p50, None);
        assert_eq!(s.max, None);
        assert_eq!(s.mean, None);
    }

    #[test]
    fn percentile_of_one_sample_is_that_sample() {
        for p in [0.0, 1.0, 50.0, 99.0, 99.9, 100.0] {
            assert_eq!(percentile(&[7], p), Some(7), "p{p}");
        }
    }

    #[test]
    fn p100_is_max_and_p0_is_min() {
        let v = [1, 2, 3, 10, 1000];
        assert_eq!(percentile(&v, 100.0), Some(1000));
        assert_eq!(percentile(&v, 0.0), Some(1));
    }

    #[test]
    fn nearest_rank_definition() {
        // 1..=100: the p-th percentile is exactly p.
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 90.0), Some(90));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.5), Some(100));
        // Classic example: 15, 20, 35, 40, 50.
        let v = [15, 20, 35, 40, 50];
        assert_eq!(percentile(&v, 5.0), Some(15));
        assert_eq!(percentile(&v, 30.0), Some(20));
        assert_eq!(percentile(&v, 40.0), Some(20));
        assert_eq!(percentile(&v, 50.0), Some(35));
        assert_eq!(percentile(&v, 100.0), Some(50));
        // Ten samples: p90 is the 9th, p99 the 10th.
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&v, 90.0), Some(9));
        assert_eq!(percentile(&v, 99.0), Some(10));
    }

    #[test]
    fn percentile_rejects_out_of_range() {
        assert_eq!(percentile(&[1, 2], -1.0), None);
        assert_eq!(percentile(&[1, 2], 100.1), None);
        assert_eq!(percentile(&[1, 2], f64::NAN), None);
    }

    #[test]
    fn summary_sorts_and_converts_to_ms() {
        let mut s = Samples::default();
        for ms in [5u64, 1, 3, 2, 4] {
            s.record(Duration::from_millis(ms));
        }
        let mut other = Samples::default();
        other.record(Duration::from_millis(100));
        s.merge(other);
        assert_eq!(s.len(), 6);
        let sum = s.summary();
        assert_eq!(sum.count, 6);
        assert_eq!(sum.p50, Some(3.0));
        assert_eq!(sum.max, Some(100.0));
        assert_eq!(sum.p99, Some(100.0));
        let j = sum.to_json();
        assert_eq!(j["p90"], 100.0);
        assert!((j["mean"].as_f64().unwrap_or(0.0) - 19.167).abs() < 1e-9);
    }

    #[test]
    fn error_counts_merge_and_render() {
        let mut e = ErrorCounts::default();
        assert!(e.is_empty());
        assert_eq!(e.short(), "0");
        e.add("409", "conflict one");
        e.add("409", "conflict two");
        let mut other = ErrorCounts::default();
        other.add("500", "boom");
        e.merge_prefixed(other, "setup ");
        assert_eq!(e.total(), 3);
        assert_eq!(e.to_json(), json!({"409": 2, "setup 500": 1}));
        assert_eq!(e.short(), "409=2 setup 500=1");
        let first: Vec<_> = e.iter().map(|(_, _, m)| m.to_string()).collect();
        assert_eq!(first, vec!["conflict one", "boom"]);
        e.add_n("x", 0, "ignored");
        assert_eq!(e.total(), 3);
    }
}
