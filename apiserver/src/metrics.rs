//! Prometheus metrics (`GET /metrics`, text format 0.0.4) with kube-apiserver's names where
//! the meaning is the same, so existing dashboards work. No metric carries a logical
//! cluster label: the number of series does not grow with the number of clusters.
//!
//! Hot-path cost is one read-locked map lookup and a few atomic adds per request.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use kplane_types::{RequestInfo, Verb};

/// `apiserver_request_duration_seconds` buckets (kube-apiserver 1.32).
const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// The labels of one request series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestLabels {
    /// Kubernetes verb in upper case as kube-apiserver reports it (`GET`, `LIST`, `WATCH`, `POST`, ...).
    pub verb: &'static str,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    /// `resource` (named object), `namespace`, `cluster` (all namespaces / cluster-scoped).
    pub scope: &'static str,
}

impl RequestLabels {
    /// The labels of a resource request, from its attributes (`apply`: a PATCH with the
    /// apply content type, which kube-apiserver reports as the verb `APPLY`). No logical
    /// cluster, namespace or name goes into a label.
    pub fn of(info: &RequestInfo, apply: bool) -> RequestLabels {
        let verb = match info.verb {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Create => "POST",
            Verb::Update => "PUT",
            Verb::Patch if apply => "APPLY",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
            Verb::DeleteCollection => "DELETECOLLECTION",
            _ => "OTHER",
        };
        let scope = if info.name.is_some() {
            "resource"
        } else if info.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
        RequestLabels {
            verb,
            group: info.api_group.clone(),
            version: info.api_version.clone(),
            resource: info.resource.clone(),
            subresource: info.subresource.clone().unwrap_or_default(),
            scope,
        }
    }
}

#[derive(Debug)]
struct Histogram {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// Sum in microseconds (integer atomics).
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(n: usize) -> Histogram {
        Histogram {
            buckets: (0..n).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, bounds: &[f64], secs: f64) {
        if let Some(i) = bounds.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((secs * 1e6) as u64, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct RequestSeries {
    /// Counts by HTTP code.
    codes: RwLock<HashMap<u16, AtomicU64>>,
    duration: Histogram,
}

/// All metrics of one server.
#[derive(Debug)]
pub struct Metrics {
    requests: RwLock<HashMap<RequestLabels, Arc<RequestSeries>>>,
    watchers: RwLock<HashMap<(String, String, String), AtomicI64>>,
    started: std::time::Instant,
    /// `kplane_limit_refusals_total` (`crate::limits`), shared with the connections.
    pub limit_refusals: Arc<crate::limits::Refusals>,
    /// The health checks' results (`/metrics/slis`).
    pub health: crate::health_metrics::HealthChecks,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: RwLock::new(HashMap::new()),
            watchers: RwLock::new(HashMap::new()),
            started: std::time::Instant::now(),
            limit_refusals: Arc::default(),
            health: Default::default(),
        }
    }
}

/// Storage-level figures the server adds to `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct StorageFigures {
    pub revision: u64,
    pub compacted_revision: u64,
    /// Objects per `group/resource` (`apiserver_storage_objects`).
    pub objects: Vec<(String, u64)>,
    pub logical_clusters: u64,
    pub event_window_seconds: u64,
    pub stats: kplane_storage::StorageStats,
    pub extra: Vec<(String, String, f64)>,
}

/// `kplane_quota_rejections_total{resource}`: writes a logical cluster's quota refused, by
/// the resource of the object refused (one series per resource, whatever the number of
/// clusters).
pub fn render_quota_rejections(
    out: &mut String,
    by_resource: &std::collections::BTreeMap<String, u64>,
) {
    let _ = writeln!(out, "# HELP kplane_quota_rejections_total Writes refused because they would exceed a logical cluster's quota, by resource.\n# TYPE kplane_quota_rejections_total counter");
    for (resource, n) in by_resource {
        let _ = writeln!(
            out,
            "kplane_quota_rejections_total{{resource=\"{}\"}} {n}",
            escape(resource)
        );
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// Records one finished request.
    pub fn observe_request(&self, labels: RequestLabels, code: u16, secs: f64) {
        let series = {
            let read = self
                .requests
                .read()
                .ok()
                .and_then(|m| m.get(&labels).cloned());
            match read {
                Some(s) => s,
                None => {
                    let Ok(mut w) = self.requests.write() else {
                        return;
                    };
                    w.entry(labels.clone())
                        .or_insert_with(|| {
                            Arc::new(RequestSeries {
                                codes: RwLock::new(HashMap::new()),
                                duration: Histogram::new(DURATION_BUCKETS.len()),
                            })
                        })
                        .clone()
                }
            }
        };
        let counted = series.codes.read().ok().is_some_and(|c| {
            c.get(&code)
                .map(|n| n.fetch_add(1, Ordering::Relaxed))
                .is_some()
        });
        if !counted {
            if let Ok(mut c) = series.codes.write() {
                c.entry(code)
                    .or_insert_with(|| AtomicU64::new(0))
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        if labels.verb != "WATCH" {
            series.duration.observe(DURATION_BUCKETS, secs);
        }
    }

    /// Counts a watcher in or out (`apiserver_registered_watchers`).
    pub fn watcher(&self, group: &str, version: &str, kind: &str, delta: i64) {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        if let Some(g) = self.watchers.read().ok().as_ref().and_then(|m| m.get(&key)) {
            g.fetch_add(delta, Ordering::Relaxed);
            return;
        }
        if let Ok(mut m) = self.watchers.write() {
            m.entry(key)
                .or_insert_with(|| AtomicI64::new(0))
                .fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// Renders everything in Prometheus text format.
    pub fn render(&self, storage: &StorageFigures) -> String {
        let mut out = String::with_capacity(16 * 1024);
        self.render_requests(&mut out);
        self.limit_refusals.render(&mut out);
        let _ = writeln!(out, "# HELP apiserver_registered_watchers Number of currently registered watchers for a given resources");
        let _ = writeln!(out, "# TYPE apiserver_registered_watchers gauge");
        if let Ok(w) = self.watchers.read() {
            let mut rows: Vec<_> = w.iter().collect();
            rows.sort_by(|a, b| a.0.cmp(b.0));
            for ((g, v, k), n) in rows {
                let _ =
                    writeln!(
                    out,
                    "apiserver_registered_watchers{{group=\"{}\",kind=\"{}\",version=\"{}\"}} {}",
                    escape(g), escape(k), escape(v), n.load(Ordering::Relaxed)
                );
            }
        }
        let _ = writeln!(out, "# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.");
        let _ = writeln!(out, "# TYPE apiserver_storage_objects gauge");
        for (res, n) in &storage.objects {
            let _ = writeln!(
                out,
                "apiserver_storage_objects{{resource=\"{}\"}} {n}",
                escape(res)
            );
        }
        let gauges: [(&str, &str, f64); 5] = [
            (
                "kplane_storage_revision",
                "The latest committed revision.",
                storage.revision as f64,
            ),
            (
                "kplane_storage_compacted_revision",
                "Revisions at or below this are compacted.",
                storage.compacted_revision as f64,
            ),
            (
                "kplane_storage_event_window_seconds",
                "How long the event log keeps history.",
                storage.event_window_seconds as f64,
            ),
            (
                "kplane_logical_clusters",
                "Logical clusters that exist.",
                storage.logical_clusters as f64,
            ),
            (
                "process_uptime_seconds",
                "Seconds since the server started.",
                self.started.elapsed().as_secs_f64(),
            ),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let st = &storage.stats;
        let counters: [(&str, &str, f64); 3] = [
            (
                "kplane_storage_commit_groups_total",
                "Durable write groups (one fsync each).",
                st.commit_groups as f64,
            ),
            (
                "kplane_storage_committed_writes_total",
                "Writes committed; divided by groups it is the mean group size.",
                st.committed_writes as f64,
            ),
            (
                "kplane_storage_commit_seconds_total",
                "Time spent applying and flushing write groups.",
                st.commit_micros as f64 / 1e6,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
            );
        }
        let _ = writeln!(out, "# HELP kplane_storage_max_commit_group Largest write group so far.\n# TYPE kplane_storage_max_commit_group gauge\nkplane_storage_max_commit_group {}", st.max_group);
        let _ = writeln!(out, "# HELP kplane_storage_watchers Watchers registered with storage.\n# TYPE kplane_storage_watchers gauge\nkplane_storage_watchers {}", st.watchers);
        let _ = writeln!(out, "# HELP kplane_storage_disk_bytes Bytes the store's files take on disk.\n# TYPE kplane_storage_disk_bytes gauge\nkplane_storage_disk_bytes {}", st.disk_bytes);
        let _ = writeln!(out, "# HELP kplane_storage_db_disk_bytes Bytes on disk per database of the store (latest values, log of history).\n# TYPE kplane_storage_db_disk_bytes gauge\nkplane_storage_db_disk_bytes{{db=\"latest\"}} {}\nkplane_storage_db_disk_bytes{{db=\"log\"}} {}", st.disk_bytes.saturating_sub(st.log_disk_bytes), st.log_disk_bytes);
        let _ = writeln!(out, "# HELP kplane_storage_logical_bytes Bytes of the keys and values the store holds, before space amplification: latest values with their index, and the retained history (the event window plus what is kept beyond it until compaction).\n# TYPE kplane_storage_logical_bytes gauge\nkplane_storage_logical_bytes{{db=\"latest\"}} {}\nkplane_storage_logical_bytes{{db=\"log\"}} {}", st.latest_logical_bytes, st.log_logical_bytes);
        let _ = writeln!(out, "# HELP kplane_storage_window_logical_bytes Bytes of the history committed within the last event window (since the server started): the watch window part of the retained history.\n# TYPE kplane_storage_window_logical_bytes gauge\nkplane_storage_window_logical_bytes {}", st.window_logical_bytes);
        let _ = writeln!(out, "# HELP kplane_storage_compaction_backlog_revisions Revisions below the compaction point whose history is not removed yet (0: compaction idle).\n# TYPE kplane_storage_compaction_backlog_revisions gauge\nkplane_storage_compaction_backlog_revisions {}", st.compaction_backlog);
        let _ = writeln!(out, "# HELP kplane_storage_get_cache_total GETs answered from the store's cache of latest values (hit) or read from its database (miss); PostgreSQL only.\n# TYPE kplane_storage_get_cache_total counter\nkplane_storage_get_cache_total{{result=\"hit\"}} {}\nkplane_storage_get_cache_total{{result=\"miss\"}} {}", st.get_cache_hits, st.get_cache_misses);
        let _ = writeln!(out, "# HELP kplane_storage_history_rows Rows of history the store keeps for the event window (PostgreSQL: the planner's count of the log table's rows; 0 on sled, which does not count them).\n# TYPE kplane_storage_history_rows gauge\nkplane_storage_history_rows {}", st.history_rows);
        let _ = writeln!(out, "# HELP kplane_storage_retained_revisions Revisions kept for watches and continue tokens (current minus compacted revision).\n# TYPE kplane_storage_retained_revisions gauge\nkplane_storage_retained_revisions {}", storage.revision.saturating_sub(storage.compacted_revision));
        for (name, help, v) in &storage.extra {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        out
    }

    fn render_requests(&self, out: &mut String) {
        let Ok(reqs) = self.requests.read() else {
            return;
        };
        let mut rows: Vec<_> = reqs.iter().collect();
        rows.sort_by(|a, b| {
            (
                a.0.verb,
                &a.0.group,
                &a.0.resource,
                &a.0.subresource,
                a.0.scope,
            )
                .cmp(&(
                    b.0.verb,
                    &b.0.group,
                    &b.0.resource,
                    &b.0.subresource,
                    b.0.scope,
                ))
        });
        let base = |l: &RequestLabels| {
            format!(
                "component=\"apiserver\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                escape(&l.group), escape(&l.resource), l.scope, escape(&l.subresource), l.verb, escape(&l.version)
            )
        };
        let _ = writeln!(out, "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.");
        let _ = writeln!(out, "# TYPE apiserver_request_total counter");
        for (l, s) in &rows {
            if let Ok(codes) = s.codes.read() {
                let mut cs: Vec<_> = codes.iter().collect();
                cs.sort_by_key(|(c, _)| **c);
                for (code, n) in cs {
                    let _ = writeln!(
                        out,
                        "apiserver_request_total{{code=\"{code}\",{}}} {}",
                        base(l),
                        n.load(Ordering::Relaxed)
                    );
                }
            }
        }
        let _ = writeln!(out, "# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.");
        let _ = writeln!(out, "# TYPE apiserver_request_duration_seconds histogram");
        for (l, s) in &rows {
            if l.verb == "WATCH" {
                continue;
            }
            let b = base(l);
            let mut cum = 0u64;
            for (i, bound) in DURATION_BUCKETS.iter().enumerate() {
                cum += s.duration.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{b},le=\"{bound}\"}} {cum}"
                );
            }
            let count = s.duration.count.load(Ordering::Relaxed);
            let sum = s.duration.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{b},le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(out, "apiserver_request_duration_seconds_sum{{{b}}} {sum}");
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_count{{{b}}} {count}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(verb: &'static str) -> RequestLabels {
        RequestLabels {
            verb,
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            subresource: String::new(),
            scope: "namespace",
        }
    }

    #[test]
    fn counts_and_histograms_render() {
        let m = Metrics::default();
        m.observe_request(labels("POST"), 201, 0.003);
        m.observe_request(labels("POST"), 201, 0.03);
        m.observe_request(labels("POST"), 409, 0.001);
        m.observe_request(labels("WATCH"), 200, 30.0);
        m.watcher("", "v1", "ConfigMap", 1);
        let text = m.render(&StorageFigures {
            objects: vec![("configmaps".into(), 7)],
            revision: 120,
            compacted_revision: 100,
            stats: kplane_storage::StorageStats {
                disk_bytes: 4096,
                log_disk_bytes: 1024,
                latest_logical_bytes: 300,
                log_logical_bytes: 900,
                window_logical_bytes: 800,
                compaction_backlog: 7,
                history_rows: 42,
                get_cache_hits: 5,
                get_cache_misses: 2,
                ..Default::default()
            },
            ..Default::default()
        });
        for line in [
            "kplane_storage_disk_bytes 4096",
            "kplane_storage_db_disk_bytes{db=\"latest\"} 3072",
            "kplane_storage_db_disk_bytes{db=\"log\"} 1024",
            "kplane_storage_logical_bytes{db=\"latest\"} 300",
            "kplane_storage_logical_bytes{db=\"log\"} 900",
            "kplane_storage_window_logical_bytes 800",
            "kplane_storage_compaction_backlog_revisions 7",
            "kplane_storage_history_rows 42",
            "kplane_storage_get_cache_total{result=\"hit\"} 5",
            "kplane_storage_get_cache_total{result=\"miss\"} 2",
            "kplane_storage_retained_revisions 20",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing: {text}");
        }
        assert!(text.contains("apiserver_request_total{code=\"201\",component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"POST\",version=\"v1\"} 2"), "{text}");
        assert!(
            text.contains("verb=\"POST\",version=\"v1\",le=\"0.005\"} 2"),
            "{text}"
        );
        assert!(text.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"POST\",version=\"v1\"} 3"));
        // WATCH requests are counted but have no duration histogram.
        assert!(text.contains("verb=\"WATCH\",version=\"v1\"} 1"), "{text}");
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("apiserver_request_duration_seconds")
                    && l.contains("verb=\"WATCH\"")),
            "{text}"
        );
        assert!(text.contains(
            "apiserver_registered_watchers{group=\"\",kind=\"ConfigMap\",version=\"v1\"} 1"
        ));
        assert!(text.contains("apiserver_storage_objects{resource=\"configmaps\"} 7"));
    }

    #[test]
    fn request_labels_come_from_the_request_info() {
        use crate::http::request_info::{parse, request_info};
        // `METHOD path[?query] [apply] => VERB scope`
        for row in [
            "GET /api/v1/namespaces/a/configmaps => LIST namespace",
            "GET /api/v1/namespaces/a/configmaps?watch=true => WATCH namespace",
            "GET /api/v1/watch/configmaps => WATCH cluster",
            "GET /api/v1/namespaces/a/configmaps/x => GET resource",
            "POST /api/v1/namespaces/a/configmaps => POST namespace",
            "PUT /api/v1/namespaces/a/configmaps/x => PUT resource",
            "PATCH /api/v1/namespaces/a/configmaps/x => PATCH resource",
            "PATCH /api/v1/namespaces/a/configmaps/x apply => APPLY resource",
            "DELETE /api/v1/namespaces/a/configmaps/x => DELETE resource",
            "DELETE /api/v1/namespaces/a/configmaps => DELETECOLLECTION namespace",
            "OPTIONS /api/v1/namespaces/a/configmaps => OTHER namespace",
            "GET /api/v1/namespaces => LIST cluster",
            "GET /api/v1/namespaces/a => GET resource",
        ] {
            let (request, want) = row.split_once(" => ").unwrap();
            let mut words = request.split(' ');
            let method = words.next().unwrap();
            let uri = words.next().unwrap();
            let apply = words.next() == Some("apply");
            let (path, query) = match uri.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (uri, None),
            };
            let info = request_info(&method.parse().unwrap(), &parse(path).unwrap(), query);
            let l = RequestLabels::of(&info, apply);
            assert_eq!(format!("{} {}", l.verb, l.scope), want, "{row}");
        }
        let info = request_info(
            &"PUT".parse().unwrap(),
            &parse("/clusters/root:a/apis/apps/v1/namespaces/a/deployments/d/scale").unwrap(),
            None,
        );
        assert_eq!(
            RequestLabels::of(&info, false),
            RequestLabels {
                verb: "PUT",
                group: "apps".into(),
                version: "v1".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                scope: "resource",
            }
        );
    }
}
