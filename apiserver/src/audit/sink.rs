//! Where audit events go: a bounded queue to one writer thread that writes JSON lines to
//! the log file (or stdout) and rotates the file as kube-apiserver's log backend does
//! (lumberjack: at `maxsize` MB the file is renamed `<name>-<UTC time>.<ext>`, e.g.
//! `audit-2026-11-24T08-00-00.000.log`, and the backups beyond `maxbackup` or older than
//! `maxage` days are removed). A request never waits for the disk: when the queue is full
//! the event is dropped and counted.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use super::event::Event;

/// Events waiting for the writer at most; more are dropped.
pub const QUEUE_CAPACITY: usize = 10_000;

/// The bytes queued events may take at most (by their `weight`: request and response
/// objects can be megabytes); more are dropped.
pub const QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// The audit log settings (`--audit-log-*`).
#[derive(Clone, Debug, Default)]
pub struct LogConfig {
    /// The file, or `-` for stdout.
    pub path: PathBuf,
    /// Rotate at this many megabytes (0: lumberjack's default, 100).
    pub max_size_mb: u64,
    /// Keep at most this many rotated files (0: all).
    pub max_backups: usize,
    /// Remove rotated files older than this many days (0: never).
    pub max_age_days: u64,
}

/// Counters of the sink, for `/metrics`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Events handed to the sink.
    pub events: AtomicU64,
    /// Events dropped (queue full) or not written (I/O error).
    pub errors: AtomicU64,
    /// The weight of the events in the queue.
    pub queued_bytes: std::sync::atomic::AtomicUsize,
}

/// The sending end; dropping it lets the writer finish the queue and stop.
#[derive(Debug)]
pub struct Sink {
    tx: SyncSender<Event>,
    pub counters: Arc<Counters>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Sink {
    /// Opens the log (creating its directory) and starts the writer thread.
    pub fn start(config: LogConfig) -> std::io::Result<Sink> {
        Sink::start_with_capacity(config, QUEUE_CAPACITY)
    }

    pub fn start_with_capacity(config: LogConfig, capacity: usize) -> std::io::Result<Sink> {
        let out = if config.path.as_os_str() == "-" {
            Output::Stdout
        } else {
            Output::File(RotatingFile::open(&config)?)
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let writer = std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || write_loop(&rx, out, &c))?;
        Ok(Sink {
            tx,
            counters,
            writer: Some(writer),
        })
    }

    /// A sink whose queue nobody drains (tests of a full queue): the receiver is returned.
    #[cfg(test)]
    pub fn undrained(capacity: usize) -> (Sink, Receiver<Event>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
        let sink = Sink {
            tx,
            counters: Arc::default(),
            writer: None,
        };
        (sink, rx)
    }

    /// Stops taking events and waits until the writer has written the queued ones.
    pub fn close(self) {
        let Sink { tx, writer, .. } = self;
        drop(tx);
        if let Some(w) = writer {
            let _ = w.join();
        }
    }

    /// Queues an event without waiting; a full queue (by count or by bytes) drops it,
    /// counted as an error.
    pub fn send(&self, event: Event) {
        let c = &self.counters;
        c.events.fetch_add(1, Ordering::Relaxed);
        let weight = event.weight;
        let before = c.queued_bytes.fetch_add(weight, Ordering::Relaxed);
        if before.saturating_add(weight) > QUEUE_BYTES {
            c.queued_bytes.fetch_sub(weight, Ordering::Relaxed);
            c.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match self.tx.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                c.queued_bytes.fetch_sub(weight, Ordering::Relaxed);
                c.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

enum Output {
    Stdout,
    File(RotatingFile),
}

impl Output {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Output::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(line)?;
                out.flush()
            }
            Output::File(f) => f.write_line(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Stdout => Ok(()),
            Output::File(f) => f.flush(),
        }
    }
}

/// Writes queued events, flushing whenever the queue is empty.
fn write_loop(rx: &Receiver<Event>, mut out: Output, counters: &Counters) {
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(ev) = next {
            counters
                .queued_bytes
                .fetch_sub(ev.weight, Ordering::Relaxed);
            let written = serde_json::to_vec(&ev)
                .map_err(std::io::Error::other)
                .and_then(|mut line| {
                    line.push(b'\n');
                    out.write_line(&line)
                });
            if let Err(e) = written {
                counters.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "audit log: event not written");
            }
            next = rx.try_recv().ok();
        }
        if let Err(e) = out.flush() {
            tracing::warn!(error = %e, "audit log: flush failed");
        }
    }
    let _ = out.flush();
}

/// A log file rotated by size, lumberjack's way.
pub struct RotatingFile {
    path: PathBuf,
    file: BufWriter<File>,
    size: u64,
    max_size: u64,
    max_backups: usize,
    max_age: Option<std::time::Duration>,
}

impl RotatingFile {
    pub fn open(config: &LogConfig) -> std::io::Result<RotatingFile> {
        if let Some(dir) = config.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(&config.path)?;
        let size = file.metadata()?.len();
        let mb = if config.max_size_mb == 0 {
            100
        } else {
            config.max_size_mb
        };
        Ok(RotatingFile {
            path: config.path.clone(),
            file: BufWriter::new(file),
            size,
            max_size: mb.saturating_mul(1024 * 1024),
            max_backups: config.max_backups,
            max_age: (config.max_age_days > 0)
                .then(|| std::time::Duration::from_secs(config.max_age_days * 24 * 3600)),
        })
    }

    /// For tests: rotate at `bytes` instead of whole megabytes.
    #[cfg(test)]
    pub fn set_max_size_bytes(&mut self, bytes: u64) {
        self.max_size = bytes;
    }

    /// Appends a line, rotating first when it would take the file over the size.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.size > 0 && self.size + len > self.max_size {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let now = chrono::Utc::now();
        let mut backup = backup_name(&self.path, now);
        // Two rotations within a millisecond: do not overwrite the first backup.
        let mut n = 1;
        while backup.exists() {
            backup = backup_name(&self.path, now + chrono::Duration::milliseconds(n));
            n += 1;
        }
        std::fs::rename(&self.path, &backup)?;
        self.file = BufWriter::new(open_append(&self.path)?);
        self.size = 0;
        self.remove_old_backups(now);
        Ok(())
    }

    /// Removes the backups beyond `max_backups` (oldest first) and older than `max_age`.
    fn remove_old_backups(&self, now: chrono::DateTime<chrono::Utc>) {
        let mut backups = list_backups(&self.path);
        backups.sort_by_key(|b| std::cmp::Reverse(b.0)); // newest first
        for (i, (at, path)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = self
                .max_age
                .is_some_and(|age| (now - *at).to_std().is_ok_and(|elapsed| elapsed > age));
            if too_many || too_old {
                if let Err(e) = std::fs::remove_file(path) {
                    tracing::warn!(error = %e, file = %path.display(), "audit log: removing an old file");
                }
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// The time format of backup names (Go's `2006-01-02T15-04-05.000`).
const BACKUP_TIME: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// `<dir>/<stem>-<time>.<ext>` (lumberjack's backup name).
pub fn backup_name(path: &Path, at: chrono::DateTime<chrono::Utc>) -> PathBuf {
    let (stem, ext) = stem_ext(path);
    path.with_file_name(format!("{stem}-{}{ext}", at.format(BACKUP_TIME)))
}

fn stem_ext(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.extension() {
        Some(e) => {
            let ext = format!(".{}", e.to_string_lossy());
            (name[..name.len() - ext.len()].to_string(), ext)
        }
        None => (name, String::new()),
    }
}

/// The backups of `path` with the times in their names.
fn list_backups(path: &Path) -> Vec<(chrono::DateTime<chrono::Utc>, PathBuf)> {
    let (stem, ext) = stem_ext(path);
    let prefix = format!("{stem}-");
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let time = name.strip_prefix(&prefix)?.strip_suffix(&ext)?;
            let at = chrono::NaiveDateTime::parse_from_str(time, BACKUP_TIME).ok()?;
            Some((at.and_utc(), e.path()))
        })
        .collect()
}
