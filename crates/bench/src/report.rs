//! Results: one [`Report`] per scenario, rendered as JSON (`--json`) or as a table.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::stats::{ErrorCounts, Summary};

/// A secondary measurement shown as its own table row (e.g. list pages, watch writes).
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub ops: u64,
    pub seconds: f64,
    pub latency: Summary,
    pub errors: String,
}

impl Row {
    /// `{"ops","seconds","throughput","latency_ms"}` of this row.
    pub fn to_json(&self) -> Value {
        json!({
            "ops": self.ops,
            "seconds": round(self.seconds, 3),
            "throughput": round(throughput(self.ops, self.seconds), 1),
            "latency_ms": self.latency.to_json(),
        })
    }
}

/// The result of one scenario.
#[derive(Debug, Clone)]
pub struct Report {
    pub scenario: String,
    pub ops: u64,
    pub seconds: f64,
    pub latency: Summary,
    pub errors: ErrorCounts,
    /// Scenario-specific fields, merged into the JSON object.
    pub extra: Map<String, Value>,
    /// Secondary table rows.
    pub rows: Vec<Row>,
}

impl Report {
    pub fn new(scenario: &str) -> Report {
        Report {
            scenario: scenario.to_string(),
            ops: 0,
            seconds: 0.0,
            latency: Summary::default(),
            errors: ErrorCounts::default(),
            extra: Map::new(),
            rows: Vec::new(),
        }
    }

    /// Adds a scenario-specific JSON field.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.extra.insert(key.to_string(), value.into());
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("scenario".into(), self.scenario.clone().into());
        m.insert("ops".into(), self.ops.into());
        m.insert("seconds".into(), round(self.seconds, 3).into());
        m.insert(
            "throughput".into(),
            round(throughput(self.ops, self.seconds), 1).into(),
        );
        m.insert("latency_ms".into(), self.latency.to_json());
        m.insert("errors".into(), self.errors.to_json());
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(m)
    }
}

fn throughput(ops: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        ops as f64 / seconds
    } else {
        0.0
    }
}

fn round(v: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (v * f).round() / f
}

fn ms(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

fn line(out: &mut String, label: &str, ops: u64, secs: f64, l: &Summary, errors: &str) {
    let _ = writeln!(
        out,
        "{label:<22} {ops:>9} {secs:>8.2} {:>10.1} {:>8} {:>8} {:>8} {:>8}  {errors}",
        throughput(ops, secs),
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.max)
    );
}

/// The human-readable table, with scenario notes and the first message of each error kind.
pub fn table(reports: &[Report]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<22} {:>9} {:>8} {:>10} {:>8} {:>8} {:>8} {:>8}  errors",
        "scenario", "ops", "seconds", "ops/s", "p50 ms", "p90 ms", "p99 ms", "max ms"
    );
    for r in reports {
        line(
            &mut out,
            &r.scenario,
            r.ops,
            r.seconds,
            &r.latency,
            &r.errors.short(),
        );
        for row in &r.rows {
            line(
                &mut out,
                &format!("  {}", row.label),
                row.ops,
                row.seconds,
                &row.latency,
                &row.errors,
            );
        }
    }
    for r in reports {
        let notes: Vec<String> = r
            .extra
            .iter()
            // Latencies and sub-measurements already have their own rows.
            .filter(|(k, _)| {
                !k.ends_with("latency_ms")
                    && !["paged", "verbs", "after_history", "history_updates"].contains(&k.as_str())
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(out, "{}: {}", r.scenario, notes.join(" "));
        }
    }
    for r in reports {
        for (k, n, msg) in r.errors.iter() {
            let _ = writeln!(out, "error {} [{k}] x{n}: {msg}", r.scenario);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::stats::Samples;
    use std::time::Duration;

    #[test]
    fn json_has_required_keys_and_table_renders() {
        let mut s = Samples::default();
        s.record(Duration::from_millis(2));
        let mut r = Report::new("create");
        r.ops = 10;
        r.seconds = 2.0;
        r.latency = s.summary();
        r.errors.add("500", "boom");
        r.set("size", 1024);
        r.rows.push(Row {
            label: "paged".into(),
            ops: 4,
            seconds: 1.0,
            latency: Summary::default(),
            errors: "0".into(),
        });
        let j = r.to_json();
        assert_eq!(j["scenario"], "create");
        assert_eq!(j["ops"], 10);
        assert_eq!(j["throughput"], 5.0);
        assert_eq!(j["latency_ms"]["p99"], 2.0);
        assert_eq!(j["errors"]["500"], 1);
        assert_eq!(j["size"], 1024);
        let t = table(&[r]);
        assert!(t.contains("create"), "{t}");
        assert!(t.contains("  paged"), "{t}");
        assert!(t.contains("500=1"), "{t}");
        assert!(t.contains("boom"), "{t}");
        assert!(t.contains("size=1024"), "{t}");
    }
}
