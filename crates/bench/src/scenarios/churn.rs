//! `churn`: the steady write load of a control plane: a bounded live set of `--live-set`
//! ConfigMaps rewritten continuously, `--leases` Leases renewed, and Events created and
//! deleted once `--events-kept` newer ones exist (as the server's TTL expires them). Every
//! `--sample-every` it samples the write rate and the size of the server's data directory
//! (`--data-dir` or `--server-pid`; with kplane's split layout also its latest values
//! (`latest/`, or the rebuilt `latest.<n>`) and `log/` parts), so the report shows whether disk usage reaches a plateau and whether throughput
//! holds as the store ages. From kplane's `/metrics` each sample also takes the logical size
//! of what the store holds (`kplane_storage_logical_bytes`: the latest values and the
//! retained history; `kplane_storage_window_logical_bytes`: the history of the last event
//! window) and prints the ratios of the data directory to them: `disk_per_window` is the
//! directory over the live data plus the window's history (the issue's target: at most 3),
//! `disk_per_retained` over everything the store keeps.
//!
//! The ConfigMaps' data and the Events' messages (`--size` bytes) are random base64 text,
//! new at every write, so a store that compresses its data is measured on padding that
//! compresses no better than real binary data in base64 (not on a repeated character).
//!
//! Each client owns a disjoint share of the ConfigMaps and Leases (updates carry the
//! resourceVersion it last wrote, as a controller's do, so there are no conflicts by design)
//! and its own Events. One operation is one write: of every four, two update a ConfigMap,
//! one renews a Lease and one creates an Event (plus, once the client holds its share of
//! `--events-kept`, the delete of its oldest Event).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};

use super::crud::resource_version;
use super::{add_errors, fill, limits, progress};
use crate::client::{encode_query, Conn, Failure};
use crate::ctx::{Ctx, Scope, RUN_LABEL, SCENARIO_LABEL};
use crate::report::Report;
use crate::runner::{drive, Worker};
use crate::setup::{bulk_create, cleanup_objects, ensure_namespaces};
use crate::stats::ErrorCounts;

const SCENARIO: &str = "churn";

/// An object a client rewrites, with the resourceVersion of its last write.
struct Owned {
    path: String,
    name: String,
    rv: Option<String>,
}

struct ChurnWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    scope: Scope,
    id: u64,
    configmaps: Vec<Owned>,
    leases: Vec<Owned>,
    events: VecDeque<String>,
    events_kept: usize,
    step: u64,
    writes: Arc<AtomicU64>,
    updates: u64,
    /// Generates the random padding of this client's writes.
    rng: u64,
}

impl ChurnWorker {
    /// PUTs `body(rv, n)` to the object with its last resourceVersion (re-read after a
    /// failure, which is still reported).
    async fn rewrite(
        conn: &mut Conn,
        obj: &mut Owned,
        body: impl FnOnce(&str) -> Bytes,
    ) -> Result<(), Failure> {
        let rv = match obj.rv.take() {
            Some(rv) => rv,
            None => resource_version(&conn.call_ok(Method::GET, &obj.path, None).await?)?,
        };
        let b = conn
            .call_ok(Method::PUT, &obj.path, Some(body(&rv)))
            .await?;
        obj.rv = Some(resource_version(&b)?);
        Ok(())
    }

    async fn update_configmap(&mut self) -> Result<(), Failure> {
        if self.configmaps.is_empty() {
            return Ok(());
        }
        let i = (self.step / 4) as usize % self.configmaps.len();
        let n = self.step;
        let (ctx, scope) = (&self.ctx, &self.scope);
        let obj = &mut self.configmaps[i];
        let name = obj.name.clone();
        let pad = random_text(ctx.opts.size as usize, &mut self.rng);
        Self::rewrite(&mut self.conn, obj, |rv| {
            configmap_body(&ctx.run, scope, &name, rv, n, &pad)
        })
        .await?;
        self.updates += 1;
        Ok(())
    }

    async fn renew_lease(&mut self) -> Result<(), Failure> {
        if self.leases.is_empty() {
            return self.update_configmap().await;
        }
        let i = (self.step / 4) as usize % self.leases.len();
        let (ctx, scope) = (&self.ctx, &self.scope);
        let obj = &mut self.leases[i];
        let name = obj.name.clone();
        Self::rewrite(&mut self.conn, obj, |rv| {
            lease_body(&ctx.run, scope, &name, Some(rv))
        })
        .await
    }

    async fn event(&mut self) -> Result<(), Failure> {
        let name = self.ctx.name(&format!("e{}", self.id), self.step);
        let involved = self
            .configmaps
            .first()
            .map_or_else(|| name.clone(), |o| o.name.clone());
        let message = random_text(self.ctx.opts.size as usize, &mut self.rng);
        let body = event_body(&self.ctx.run, &self.scope, &name, &involved, &message);
        self.conn
            .call_ok(Method::POST, &events_path(&self.scope), Some(body))
            .await?;
        self.events.push_back(name);
        if self.events.len() > self.events_kept {
            if let Some(old) = self.events.pop_front() {
                let path = format!("{}/{old}", events_path(&self.scope));
                match self.conn.call_ok(Method::DELETE, &path, None).await {
                    Ok(_) | Err(Failure::Status(404, _)) => {}
                    Err(f) => return Err(f),
                }
            }
        }
        Ok(())
    }
}

impl Worker for ChurnWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        self.step += 1;
        let result = match self.step % 4 {
            0 | 1 => self.update_configmap().await,
            2 => self.renew_lease().await,
            _ if self.events_kept == 0 => self.update_configmap().await,
            _ => self.event().await,
        };
        self.writes.fetch_add(1, Ordering::Relaxed);
        result
    }
}

fn leases_path(scope: &Scope) -> String {
    format!(
        "{}/apis/coordination.k8s.io/v1/namespaces/{}/leases",
        scope.prefix, scope.namespace
    )
}

fn events_path(scope: &Scope) -> String {
    format!(
        "{}/api/v1/namespaces/{}/events",
        scope.prefix, scope.namespace
    )
}

fn labels(run: &str) -> Value {
    json!({RUN_LABEL: run, SCENARIO_LABEL: SCENARIO})
}

/// A Lease held by kplane-bench, renewed now.
fn lease_body(run: &str, scope: &Scope, name: &str, rv: Option<&str>) -> Bytes {
    let mut meta = json!({"name": name, "namespace": scope.namespace, "labels": labels(run)});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv);
    }
    let v = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": "kplane-bench",
            "leaseDurationSeconds": 15,
            "renewTime": micro_time(std::time::SystemTime::now()),
        },
    });
    Bytes::from(v.to_string())
}

/// `len` random base64 characters: padding that compresses no better than base64-encoded
/// binary data does (6 bits per character), so a store that compresses cannot look better
/// on it than on real data. Different at every call (`state`: the caller's generator).
pub(super) fn random_text(len: usize, state: &mut u64) -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            char::from(B64[(*state >> 58) as usize])
        })
        .collect()
}

/// A ConfigMap of this scenario rewritten with resourceVersion `rv`, its data value
/// `pad` (random, see [`random_text`]).
fn configmap_body(run: &str, scope: &Scope, name: &str, rv: &str, n: u64, pad: &str) -> Bytes {
    let v = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": scope.namespace,
            "resourceVersion": rv,
            "labels": labels(run),
        },
        "data": {"n": n.to_string(), "v": pad},
    });
    Bytes::from(v.to_string())
}

/// A core v1 Event about ConfigMap `involved`, with `message`.
fn event_body(run: &str, scope: &Scope, name: &str, involved: &str, message: &str) -> Bytes {
    let now = micro_time(std::time::SystemTime::now());
    let seconds = now.split('.').next().unwrap_or_default().to_string() + "Z";
    let v = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": scope.namespace, "labels": labels(run)},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": involved, "namespace": scope.namespace},
        "reason": "Churn",
        "message": message,
        "type": "Normal",
        "source": {"component": "kplane-bench"},
        "firstTimestamp": seconds,
        "lastTimestamp": seconds,
        "count": 1,
    });
    Bytes::from(v.to_string())
}

/// RFC 3339 UTC with microseconds (`metav1.MicroTime`).
fn micro_time(t: std::time::SystemTime) -> String {
    let d = t
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// Creates the Leases (`names`) in `scope`.
async fn create_leases(ctx: &Arc<Ctx>, scope: &Scope, names: &[String]) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    let mut conn = ctx.setup_conn();
    for name in names {
        let body = lease_body(&ctx.run, scope, name, None);
        if let Err(f) = conn
            .call_ok(Method::POST, &leases_path(scope), Some(body))
            .await
        {
            errors.add(&f.key(), &format!("creating lease: {f}"));
        }
    }
    errors
}

/// Deletes this run's Leases and Events (the ConfigMaps go through `cleanup_objects`).
async fn cleanup_leases_and_events(ctx: &Arc<Ctx>, scope: &Scope) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    if ctx.opts.keep {
        return errors;
    }
    let selector = encode_query(&ctx.selector(SCENARIO));
    let mut conn = ctx.setup_conn();
    for base in [leases_path(scope), events_path(scope)] {
        let path = format!("{base}?labelSelector={selector}");
        if let Err(f) = conn
            .call_discard(Method::DELETE, &path)
            .await
            .and_then(|r| {
                if (200..300).contains(&r.status) {
                    Ok(())
                } else {
                    r.ok().map(drop)
                }
            })
        {
            errors.add(&f.key(), &format!("deleting the run's leases/events: {f}"));
        }
    }
    errors
}

/// The value of one series (`name` or `name{labels}`) in a Prometheus text exposition.
fn series(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

const MIB: f64 = 1024.0 * 1024.0;

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The store's logical sizes from kplane's `/metrics`, and the data directory's ratios to
/// them, added to `sample` (nothing when the server does not expose them).
fn add_logical(sample: &mut Value, metrics: &str, disk_mib: Option<f64>) {
    let get = |name: &str| series(metrics, name).map(|b| b / MIB);
    let (Some(latest), Some(log), Some(window)) = (
        get("kplane_storage_logical_bytes{db=\"latest\"}"),
        get("kplane_storage_logical_bytes{db=\"log\"}"),
        get("kplane_storage_window_logical_bytes"),
    ) else {
        return;
    };
    sample["latest_logical_mib"] = json!(round1(latest));
    sample["log_logical_mib"] = json!(round1(log));
    sample["window_logical_mib"] = json!(round1(window));
    if let Some(disk) = disk_mib {
        if latest + window > 0.0 {
            sample["disk_per_window"] = json!(round2(disk / (latest + window)));
        }
        if latest + log > 0.0 {
            sample["disk_per_retained"] = json!(round2(disk / (latest + log)));
        }
    }
}

/// Samples the write rate and the data directory's size every `every` until `stop`.
fn start_sampler(
    ctx: &Arc<Ctx>,
    writes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<Value>> {
    let every = ctx.opts.sample_every.max(Duration::from_millis(100));
    let dir = crate::settle::data_dir(ctx);
    let mut conn = ctx.setup_conn();
    // Bounded: sampling ends with the phase, which is bounded by --duration (<= 7 days).
    let max_samples = (ctx.opts.warmup + ctx.opts.duration).as_secs_f64() / every.as_secs_f64();
    let max_samples = max_samples.ceil() as usize + 2;
    tokio::spawn(async move {
        let start = Instant::now();
        let mut samples = Vec::new();
        let mut last = (start, 0u64);
        while !stop.load(Ordering::Relaxed) && samples.len() < max_samples {
            tokio::time::sleep(every).await;
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = Instant::now();
            let w = writes.load(Ordering::Relaxed);
            let rate = (w - last.1) as f64 / (now - last.0).as_secs_f64().max(1e-3);
            last = (now, w);
            let disk = dir.as_deref().and_then(crate::settle::disk_mib);
            let mut sample = json!({
                "t_s": (now - start).as_secs_f64().round(),
                "writes_per_s": rate.round(),
                "disk_mib": disk,
            });
            // kplane's split layout: the latest values and the log of history.
            for part in ["latest", "log"] {
                if let Some(mib) = dir.as_deref().and_then(|d| part_mib(&d.join("db"), part)) {
                    sample[format!("{part}_disk_mib")] = json!(mib);
                }
            }
            if let Ok(body) = conn.call_ok(Method::GET, "/metrics", None).await {
                add_logical(&mut sample, &String::from_utf8_lossy(&body), disk);
            }
            samples.push(sample);
        }
        samples
    })
}

/// MiB on disk of the store's part `part` in `db`: the directory of that name and, for
/// the latest values, the databases `latest.<n>` a rebuild makes (`latest` is then a small
/// marker file).
fn part_mib(db: &std::path::Path, part: &str) -> Option<f64> {
    let mut total = crate::settle::disk_mib(&db.join(part))?;
    if part == "latest" {
        let prefix = format!("{part}.");
        for entry in std::fs::read_dir(db).ok()?.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                total += crate::settle::disk_mib(&entry.path()).unwrap_or(0.0);
            }
        }
    }
    Some(total)
}

/// Runs the churn load for the duration.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SCENARIO);
    let o = &ctx.opts;
    report.set("concurrency", o.concurrency);
    report.set("size", o.size);
    report.set("live_set", o.live_set);
    report.set("leases", o.leases);
    report.set("events_kept", o.events_kept);
    let scope = ctx.base_scope();
    add_errors(
        &mut report,
        ensure_namespaces(ctx, std::slice::from_ref(&scope)).await,
        "setup ",
    );
    let items: Vec<(Scope, String)> = (0..u64::from(o.live_set))
        .map(|i| (scope.clone(), ctx.name("l", i)))
        .collect();
    add_errors(
        &mut report,
        bulk_create(ctx, Arc::new(items.clone()), SCENARIO).await,
        "setup ",
    );
    let lease_names: Vec<String> = (0..u64::from(o.leases))
        .map(|i| ctx.name("lease", i))
        .collect();
    add_errors(
        &mut report,
        create_leases(ctx, &scope, &lease_names).await,
        "setup ",
    );
    let workers_n = u64::from(o.concurrency);
    let writes = Arc::new(AtomicU64::new(0));
    let workers: Vec<ChurnWorker> = (0..workers_n)
        .map(|id| {
            let owned = |path: String, name: String| Owned {
                path,
                name,
                rv: None,
            };
            ChurnWorker {
                ctx: ctx.clone(),
                conn: ctx.conn(),
                scope: scope.clone(),
                id,
                configmaps: items
                    .iter()
                    .skip(id as usize)
                    .step_by(workers_n as usize)
                    .map(|(s, n)| owned(s.configmap(n), n.clone()))
                    .collect(),
                leases: lease_names
                    .iter()
                    .skip(id as usize)
                    .step_by(workers_n as usize)
                    .map(|n| owned(format!("{}/{n}", leases_path(&scope)), n.clone()))
                    .collect(),
                events: VecDeque::new(),
                events_kept: (o.events_kept as usize).div_ceil(workers_n as usize),
                step: id,
                writes: writes.clone(),
                updates: 0,
                rng: 0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9),
            }
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = start_sampler(ctx, writes.clone(), stop.clone());
    let phase = drive(SCENARIO, progress(ctx), workers, limits(ctx)).await;
    stop.store(true, Ordering::Relaxed);
    let workers = fill(&mut report, phase);
    let samples = sampler.await.unwrap_or_default();
    let updates: u64 = workers.iter().map(|w| w.updates).sum();
    report.set(
        "live_set_rewrites",
        (updates as f64 / f64::from(o.live_set.max(1)) * 10.0).round() / 10.0,
    );
    summarize(&mut report, &samples);
    report.set("samples", Value::Array(samples));
    drop(workers);
    add_errors(
        &mut report,
        cleanup_leases_and_events(ctx, &scope).await,
        "cleanup ",
    );
    add_errors(
        &mut report,
        cleanup_objects(ctx, std::slice::from_ref(&scope), SCENARIO).await,
        "cleanup ",
    );
    report
}

/// Disk and rate at the start and end of the run (first and last quarter of the samples).
fn summarize(report: &mut Report, samples: &[Value]) {
    let quarter = (samples.len() / 4).max(1);
    let mean = |s: &[Value], k: &str| {
        let v: Vec<f64> = s.iter().filter_map(|x| x[k].as_f64()).collect();
        (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64).round())
    };
    if samples.len() >= 2 {
        let (first, last) = (&samples[..quarter], &samples[samples.len() - quarter..]);
        report.set(
            "writes_per_s_first_quarter",
            json!(mean(first, "writes_per_s")),
        );
        report.set(
            "writes_per_s_last_quarter",
            json!(mean(last, "writes_per_s")),
        );
        report.set("disk_mib_first_quarter", json!(mean(first, "disk_mib")));
        report.set("disk_mib_last_quarter", json!(mean(last, "disk_mib")));
    }
    let max = samples
        .iter()
        .filter_map(|x| x["disk_mib"].as_f64())
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    if let Some(m) = max {
        report.set("disk_mib_max", m);
    }
    // The ratio once the window has filled: the second half of the run.
    let second_half = &samples[samples.len() / 2..];
    let ratios: Vec<f64> = second_half
        .iter()
        .filter_map(|x| x["disk_per_window"].as_f64())
        .collect();
    if let Some(max) = ratios.iter().copied().reduce(f64::max) {
        report.set("disk_per_window_max_second_half", max);
        report.set(
            "disk_per_window_mean_second_half",
            round2(ratios.iter().sum::<f64>() / ratios.len() as f64),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_is_rfc3339_utc() {
        let t = std::time::UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        assert_eq!(micro_time(t), "2023-11-14T22:13:20.123456Z");
        assert_eq!(
            micro_time(std::time::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000Z"
        );
        let leap = std::time::UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(micro_time(leap), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn summary_compares_first_and_last_quarters() {
        let samples: Vec<Value> = (0..8)
            .map(|i| json!({"t_s": i, "writes_per_s": 100 + i, "disk_mib": 10 * i}))
            .collect();
        let mut r = Report::new("churn");
        summarize(&mut r, &samples);
        assert_eq!(r.extra["writes_per_s_first_quarter"], json!(101.0));
        assert_eq!(r.extra["writes_per_s_last_quarter"], json!(107.0));
        assert_eq!(r.extra["disk_mib_last_quarter"], json!(65.0));
        assert_eq!(r.extra["disk_mib_max"], json!(70.0));
        assert!(r.extra.get("disk_per_window_max_second_half").is_none());
    }

    #[test]
    fn padding_is_random_base64_and_new_each_time() {
        let mut state = 12345u64;
        let a = random_text(1024, &mut state);
        let b = random_text(1024, &mut state);
        assert_eq!((a.len(), b.len()), (1024, 1024));
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/'));
        // All 64 characters show up about equally often: 6 bits of entropy per character.
        let mut counts = [0usize; 256];
        for c in a.bytes().chain(b.bytes()) {
            counts[c as usize] += 1;
        }
        let used: Vec<usize> = counts.into_iter().filter(|n| *n > 0).collect();
        assert_eq!(used.len(), 64);
        assert!(used.iter().all(|n| (10..=60).contains(n)), "{used:?}");
        let scope = Scope {
            prefix: String::new(),
            namespace: "ns".into(),
        };
        let body = configmap_body("r", &scope, "cm", "7", 3, &a);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["data"]["v"], json!(a));
        assert_eq!(v["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn ratios_come_from_the_logical_sizes() {
        let metrics = "# HELP x\nkplane_storage_logical_bytes{db=\"latest\"} 1048576\n\
            kplane_storage_logical_bytes{db=\"log\"} 5242880\n\
            kplane_storage_window_logical_bytes 3145728\n";
        let mut s = json!({"disk_mib": 12.0});
        add_logical(&mut s, metrics, Some(12.0));
        assert_eq!(s["latest_logical_mib"], json!(1.0));
        assert_eq!(s["log_logical_mib"], json!(5.0));
        assert_eq!(s["window_logical_mib"], json!(3.0));
        assert_eq!(s["disk_per_window"], json!(3.0));
        assert_eq!(s["disk_per_retained"], json!(2.0));
        // A server without the figures (kube-apiserver) adds nothing.
        let mut s = json!({"disk_mib": 12.0});
        add_logical(&mut s, "kplane_storage_disk_bytes 5\n", Some(12.0));
        assert!(s.get("disk_per_window").is_none());

        let samples: Vec<Value> = [4.0, 9.0, 3.5, 2.5]
            .iter()
            .map(|r| json!({"writes_per_s": 1, "disk_mib": 1, "disk_per_window": r}))
            .collect();
        let mut r = Report::new("churn");
        summarize(&mut r, &samples);
        assert_eq!(r.extra["disk_per_window_max_second_half"], json!(3.5));
        assert_eq!(r.extra["disk_per_window_mean_second_half"], json!(3.0));
    }
}
