//! Progress and health: counters the syncer updates, rendered in the Prometheus text format
//! on `/metrics`, and `/healthz`, served on `--metrics-bind`.

use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;

/// Upper bounds (seconds) of the round-trip histogram's buckets.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The syncer's metrics. See the module docs.
#[derive(Debug, Default)]
pub struct Metrics {
    synced_objects: AtomicI64,
    queue_depth: AtomicI64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Metrics {
    pub fn set_synced_objects(&self, n: usize) {
        self.synced_objects
            .store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    pub fn set_queue_depth(&self, n: usize) {
        self.queue_depth
            .store(i64::try_from(n).unwrap_or(i64::MAX), Ordering::Relaxed);
    }

    pub fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one round trip: from a change being seen to kplane and the host agreeing.
    pub fn observe_roundtrip(&self, d: Duration) {
        let secs = d.as_secs_f64();
        for (i, le) in BUCKETS.iter().enumerate() {
            if secs <= *le {
                self.buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(
            u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP kplane_syncer_synced_objects Objects synced to the host."
        );
        let _ = writeln!(out, "# TYPE kplane_syncer_synced_objects gauge");
        let _ = writeln!(
            out,
            "kplane_syncer_synced_objects {}",
            self.synced_objects.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP kplane_syncer_queue_depth Keys waiting for a reconcile."
        );
        let _ = writeln!(out, "# TYPE kplane_syncer_queue_depth gauge");
        let _ = writeln!(
            out,
            "kplane_syncer_queue_depth {}",
            self.queue_depth.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP kplane_syncer_errors_total Failed reconciles and watch errors."
        );
        let _ = writeln!(out, "# TYPE kplane_syncer_errors_total counter");
        let _ = writeln!(
            out,
            "kplane_syncer_errors_total {}",
            self.errors.load(Ordering::Relaxed)
        );
        let _ = writeln!(out, "# HELP kplane_syncer_roundtrip_seconds Time from a change seen (in kplane or on the host) to both sides written.");
        let _ = writeln!(out, "# TYPE kplane_syncer_roundtrip_seconds histogram");
        for (i, le) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "kplane_syncer_roundtrip_seconds_bucket{{le=\"{le}\"}} {}",
                self.buckets[i].load(Ordering::Relaxed)
            );
        }
        let count = self.count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "kplane_syncer_roundtrip_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "kplane_syncer_roundtrip_seconds_sum {sum}");
        let _ = writeln!(out, "kplane_syncer_roundtrip_seconds_count {count}");
        out
    }
}

/// The router of the metrics endpoint.
pub fn router(metrics: Arc<Metrics>) -> axum::Router {
    axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let m = Arc::clone(&metrics);
                async move { ([("content-type", "text/plain; version=0.0.4")], m.render()) }
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
}

/// Listens on `addr` (bound before this returns, so a bad address is an error at start-up)
/// and serves until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<impl Future<Output = std::io::Result<()>>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(address = %listener.local_addr()?, "serving /metrics and /healthz");
    Ok(async move {
        axum::serve(listener, router(metrics))
            .with_graceful_shutdown(shutdown)
            .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_format_has_every_series() {
        let m = Metrics::default();
        m.set_synced_objects(3);
        m.set_queue_depth(2);
        m.error();
        m.observe_roundtrip(Duration::from_millis(30));
        m.observe_roundtrip(Duration::from_secs(60));
        let text = m.render();
        for line in [
            "kplane_syncer_synced_objects 3",
            "kplane_syncer_queue_depth 2",
            "kplane_syncer_errors_total 1",
            "kplane_syncer_roundtrip_seconds_bucket{le=\"0.025\"} 0",
            "kplane_syncer_roundtrip_seconds_bucket{le=\"0.05\"} 1",
            "kplane_syncer_roundtrip_seconds_bucket{le=\"30\"} 1",
            "kplane_syncer_roundtrip_seconds_bucket{le=\"+Inf\"} 2",
            "kplane_syncer_roundtrip_seconds_count 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}
