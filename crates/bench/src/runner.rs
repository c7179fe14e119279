//! The timed worker loop shared by all scenarios, and the progress line.
//!
//! [`drive`] runs one task per worker. Each task repeats its worker's operation until the
//! warm-up plus the measured duration have passed or `--count` measured operations were
//! claimed; every operation is itself bounded by the request timeout, so a phase ends at the
//! latest one timeout after its deadline. Operations finished during warm-up are not
//! measured, but their failures are counted (failures are never dropped).

use std::future::Future;
use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Failure;
use crate::stats::{ErrorCounts, Samples};

/// One client of a scenario; owns its connection(s) and any scenario-specific state.
pub trait Worker: Send + 'static {
    /// Performs one operation. `measuring` is false during warm-up.
    fn op(&mut self, measuring: bool) -> impl Future<Output = Result<(), Failure>> + Send;
}

/// How long and how much to run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub warmup: Duration,
    pub duration: Duration,
    pub count: Option<u64>,
}

/// The outcome of one measured phase.
pub struct Phase<W> {
    pub samples: Samples,
    pub errors: ErrorCounts,
    pub ops: u64,
    pub seconds: f64,
    pub workers: Vec<W>,
    /// Each worker's measured operations, in the order of `workers`.
    pub per_worker_ops: Vec<u64>,
}

impl<W> Phase<W> {
    /// A phase in which nothing was done yet.
    fn empty() -> Self {
        Phase {
            samples: Samples::default(),
            errors: ErrorCounts::default(),
            ops: 0,
            seconds: 0.0,
            workers: Vec::new(),
            per_worker_ops: Vec::new(),
        }
    }
}

/// Runs `workers` concurrently within `limits`; `label` is shown in the progress line.
pub async fn drive<W: Worker>(
    label: &str,
    show_progress: bool,
    workers: Vec<W>,
    limits: Limits,
) -> Phase<W> {
    let start = Instant::now();
    let measure_start = start + limits.warmup;
    let deadline = measure_start + limits.duration;
    let claimed = Arc::new(AtomicU64::new(0));
    let progress = Progress::start(label, show_progress, limits.warmup + limits.duration);
    let mut handles = Vec::with_capacity(workers.len());
    for mut w in workers {
        let claimed = claimed.clone();
        let counters = progress.counters();
        handles.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            let mut errors = ErrorCounts::default();
            let mut ops = 0u64;
            let mut last_end = Instant::now();
            loop {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                let measuring = now >= measure_start;
                if measuring {
                    if let Some(max) = limits.count {
                        if claimed.fetch_add(1, Ordering::Relaxed) >= max {
                            break;
                        }
                    }
                }
                let t0 = Instant::now();
                let result = w.op(measuring).await;
                last_end = Instant::now();
                match result {
                    Ok(()) => {
                        if measuring {
                            samples.record(last_end - t0);
                            ops += 1;
                            counters.ops.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(f) => {
                        errors.add(&f.key(), &f.message());
                        counters.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            (w, samples, errors, ops, last_end)
        }));
    }
    let mut phase = Phase::empty();
    let mut end = measure_start;
    for h in handles {
        match h.await {
            Ok((w, s, e, ops, last)) => {
                phase.samples.merge(s);
                phase.errors.merge(e);
                phase.ops += ops;
                end = end.max(last);
                phase.workers.push(w);
                phase.per_worker_ops.push(ops);
            }
            Err(e) => phase.errors.add("panic", &e.to_string()),
        }
    }
    progress.finish();
    phase.seconds = end
        .saturating_duration_since(measure_start)
        .as_secs_f64()
        .max(1e-6);
    phase
}

/// [`drive`] on a runtime of its own (one thread, started for the phase): the phase's
/// clients and their connections are polled by that thread only, so their latency is not
/// spent queued behind other clients of this process (another tenant's load in the
/// noisy-neighbor scenario). A thread that cannot be started is reported as an error.
pub async fn drive_apart<W: Worker>(
    label: &str,
    show_progress: bool,
    workers: Vec<W>,
    limits: Limits,
) -> Phase<W> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let label = label.to_string();
    let started = std::thread::Builder::new()
        .name("bench-apart".into())
        .spawn(move || {
            let phase = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(drive(&label, show_progress, workers, limits)));
            let _ = tx.send(phase.map_err(|e| e.to_string()));
        });
    let failed = |message: String| {
        let mut phase = Phase::empty();
        phase.seconds = 1e-6;
        phase.errors.add("runtime", &message);
        phase
    };
    if let Err(e) = started {
        return failed(format!("starting a thread: {e}"));
    }
    match rx.await {
        Ok(Ok(phase)) => phase,
        Ok(Err(e)) => failed(format!("starting a runtime: {e}")),
        Err(_) => failed("the phase's thread ended without a result".into()),
    }
}

/// Counters the progress line shows.
#[derive(Debug, Default)]
pub struct Counters {
    pub ops: AtomicU64,
    pub errors: AtomicU64,
}

/// A once-a-second carriage-return line on stderr (only when stderr is a terminal).
pub struct Progress {
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Starts the line for a phase expected to last `total`.
    pub fn start(label: &str, enabled: bool, total: Duration) -> Progress {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let task = (enabled && std::io::stderr().is_terminal()).then(|| {
            let counters = counters.clone();
            let stop = stop.clone();
            let label = label.to_string();
            tokio::spawn(async move {
                let t0 = Instant::now();
                // Bounded: a phase never lasts a week (durations are capped at 7 days).
                for _ in 0..(7 * 86400) {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let secs = t0.elapsed().as_secs_f64();
                    let ops = counters.ops.load(Ordering::Relaxed);
                    let errs = counters.errors.load(Ordering::Relaxed);
                    let mut err = std::io::stderr().lock();
                    let _ = write!(
                        err,
                        "\r{label}: {secs:5.0}s/{:.0}s  {ops} ops  {:.0}/s  {errs} errors   ",
                        total.as_secs_f64(),
                        ops as f64 / secs.max(1e-3)
                    );
                    let _ = err.flush();
                }
            })
        });
        Progress {
            counters,
            stop,
            task,
        }
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Stops and clears the line.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.task {
            t.abort();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{:79}\r", "");
            let _ = err.flush();
        }
    }
}

/// A note on stderr (suppressed by nothing: setup steps of long runs should be visible).
pub fn note(msg: &str) {
    eprintln!("kplane-bench: {msg}");
}
