//! The health checks' service-level metrics, served at `/metrics/slis` as kube-apiserver
//! serves them (component-base's `slis` registry): the last result of each check of
//! `/healthz`, `/livez` and `/readyz` (`kubernetes_healthcheck`, 1 or 0) and how often each
//! passed and failed (`kubernetes_healthchecks_total`), recorded when an endpoint runs its
//! whole list (a single check's own path, `/livez/ping`, records nothing, as upstream's).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One check's record: its last verdict and its counts.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    last_ok: bool,
    success: u64,
    error: u64,
}

/// The records of every check run so far, by endpoint (`healthz`, `livez`, `readyz`) and
/// check name. A handful of series: the check lists are fixed.
#[derive(Debug)]
pub struct HealthChecks {
    records: Mutex<BTreeMap<(&'static str, String), Record>>,
    started: SystemTime,
}

impl Default for HealthChecks {
    fn default() -> Self {
        HealthChecks {
            records: Mutex::new(BTreeMap::new()),
            started: SystemTime::now(),
        }
    }
}

impl HealthChecks {
    /// Records that check `name` of endpoint `kind` passed (`ok`) or failed.
    pub fn observe(&self, kind: &'static str, name: &str, ok: bool) {
        let Ok(mut records) = self.records.lock() else {
            return;
        };
        let r = records.entry((kind, name.to_string())).or_default();
        r.last_ok = ok;
        if ok {
            r.success += 1;
        } else {
            r.error += 1;
        }
    }

    /// The `/metrics/slis` body (Prometheus text format 0.0.4).
    pub fn render(&self) -> String {
        let records: Vec<_> = match self.records.lock() {
            Ok(r) => r.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Err(_) => Vec::new(),
        };
        let mut out = String::new();
        out.push_str(
            "# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single healthcheck.\n\
             # TYPE kubernetes_healthcheck gauge\n",
        );
        for ((kind, name), r) in &records {
            let v = u8::from(r.last_ok);
            let _ = writeln!(
                out,
                "kubernetes_healthcheck{{name=\"{name}\",type=\"{kind}\"}} {v}"
            );
        }
        out.push_str(
            "# HELP kubernetes_healthchecks_total [STABLE] This metric records the results of all healthcheck.\n\
             # TYPE kubernetes_healthchecks_total counter\n",
        );
        for ((kind, name), r) in &records {
            for (status, n) in [("error", r.error), ("success", r.success)] {
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "kubernetes_healthchecks_total{{name=\"{name}\",status=\"{status}\",type=\"{kind}\"}} {n}"
                    );
                }
            }
        }
        let start = self
            .started
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs_f64();
        out.push_str(
            "# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.\n\
             # TYPE process_start_time_seconds gauge\n",
        );
        let _ = writeln!(out, "process_start_time_seconds {start}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_each_checks_last_result_and_counts() {
        let h = HealthChecks::default();
        h.observe("livez", "ping", true);
        h.observe("readyz", "storage", true);
        h.observe("readyz", "storage", false);
        let text = h.render();
        assert!(text.contains("kubernetes_healthcheck{name=\"ping\",type=\"livez\"} 1\n"));
        assert!(text.contains("kubernetes_healthcheck{name=\"storage\",type=\"readyz\"} 0\n"));
        assert!(text.contains(
            "kubernetes_healthchecks_total{name=\"storage\",status=\"error\",type=\"readyz\"} 1\n"
        ));
        assert!(text.contains(
            "kubernetes_healthchecks_total{name=\"storage\",status=\"success\",type=\"readyz\"} 1\n"
        ));
        assert!(!text.contains("status=\"error\",type=\"livez\""));
        assert!(text.contains("# TYPE kubernetes_healthchecks_total counter\n"));
        assert!(text.contains("process_start_time_seconds "));
    }
}
