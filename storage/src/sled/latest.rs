//! The latest database, and its rebuild into a fresh database when sled's files grow far
//! beyond what it holds.
//!
//! sled 0.34 never shortens a database's file and reclaims a segment only once at most
//! half of it is live, so under churn (every value rewritten entry by entry, Events
//! created and deleted) the latest database's file kept growing while it held ~13 MiB
//! (docs/performance-history.md, "Quiet machine, session 10"). So when its size on disk passes
//! `rebuild_factor` times its logical size (and at least `rebuild_min_bytes`), the writer
//! copies it, a chunk between write groups, into a fresh database, and then switches
//! readers and writes to the copy and deletes the old one:
//!
//! - A background thread prepares the empty target (created under a temporary name,
//!   flushed, closed, renamed, opened again), so the writer never waits for a database to
//!   be created.
//! - The copy walks the old database's tree in key order behind a cursor. Every later
//!   write of the writer thread (a group's latest values, compaction's index removals and
//!   its compaction point) goes to the old database and, for keys at or below the cursor,
//!   to the target too; keys above it are copied later with their value at that time. No
//!   sled batch or transaction is used ([`super::ops`]).
//! - The old database's chunks are read on a thread of the copy's own, never on the
//!   writer: a sled 0.34 read can wait forever for a log buffer to become durable (seen
//!   once here, half-way through a copy, under 20 minutes of churn; the cause, 16 MiB
//!   segments, is avoided since ([`super::db::MAX_SEGMENT_SIZE`]), and the guard stays against
//!   any other), and the writer must not stop with it. The writer asks for a chunk and
//!   waits for it (at most [`COPY_READ_TIMEOUT`]); it writes nothing meanwhile and is the only thread that writes
//!   the latest database, so the chunk is exact. A chunk that does not come in time gives
//!   the rebuild up (logged as an error), and no rebuild starts while that read has not
//!   returned.
//! - Once the cursor has passed the last key, the writer writes the target's completion
//!   marker (last: sled recovers a prefix of what was written, so a recovered marker means
//!   the whole copy is there) and swaps the database readers get, between two groups. A
//!   reader holding the old database keeps reading it: it holds every write up to the swap,
//!   and a reader takes its revision before the database ([`super::shared::Shared::latest`]).
//! - The old database is deleted once no reader holds it and the target has been flushed
//!   (so its marker is durable first).
//!
//! Files in the data directory, and what a crash can leave:
//! - `latest/`: the latest database as every kplane before this one made it; used while no
//!   rebuild has completed. One an older kplane made with 16 MiB segments is rebuilt at the
//!   first write group after start-up, whatever the size policy says
//!   ([`super::db::MAX_SEGMENT_SIZE`]).
//! - `latest.<n>` (20 digits, a sequence number): a rebuilt database; the newest one with
//!   its completion marker is the latest database. Others (older ones, or one whose copy
//!   was cut short) are deleted on open. A crash before the marker is durable reopens the
//!   old database, which lacks the writes made after the swap: they are replayed from the
//!   log like any group the latest database missed ([`super::recovery::replay`]).
//! - Once a rebuilt database is in use, `latest` is a small file saying so, so that an
//!   older kplane (which would open `latest/` as an empty database) fails to start instead.
//! - `.tmp` (a target being created) and `.dropping` (being deleted) are removed on open.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use sled::IVec;

use super::db::{backend, existing_segment_size, has_unsafe_segments};
use super::log::{delete_dir, sync_dir, DROPPING_SUFFIX};
use super::ops::Ops;
use super::options::SledStorageOptions;
use crate::{Error, Result};

/// The latest database's directory in the data directory, while no rebuild has completed.
pub(crate) const LATEST_DIR: &str = "latest";

/// The tree of the latest database that holds its data.
pub(super) const LATEST_TREE: &str = "kplane";

/// Opens the latest database at `path`, with the segment size it has or, when new,
/// `opts.latest_segment_size`.
pub(crate) fn open_db(path: &Path, opts: &SledStorageOptions, cache: u64) -> Result<sled::Db> {
    let segment_size = existing_segment_size(path, opts.latest_segment_size)?;
    sled::Config::new()
        .path(path)
        .cache_capacity(cache)
        .segment_size(segment_size)
        .flush_every_ms(opts.flush_every_ms)
        .mode(sled::Mode::HighThroughput)
        .open()
        .map_err(backend)
}

/// Key of the completion marker, in a rebuilt database's default tree.
const BUILT_KEY: &[u8] = b"kplane-latest-built";

/// What the marker file `latest` says.
const MARKER_TEXT: &str = "kplane: the latest values are in the newest latest.<n> directory \
     (rebuilt databases); a kplane older than 2026-11 cannot open this data directory.\n";

/// Entries copied per step of a rebuild (one step between two write groups).
const COPY_STEP: usize = 512;

/// How often the writer compares the latest database's size with its logical size (or
/// the rebuilds' minimum interval, when shorter).
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// How long the writer waits for one chunk of a copy (normally milliseconds) before it
/// gives the rebuild up.
const COPY_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Reopens of a just-created database (10 ms apart) before giving up.
const REOPEN_ATTEMPTS: u32 = 300;

const TMP_SUFFIX: &str = ".tmp";

/// One latest database.
pub(crate) struct LatestDb {
    db: sled::Db,
    /// The tree holding the latest values, the wildcard index and the meta entries.
    pub(crate) tree: sled::Tree,
    dir: PathBuf,
}

impl LatestDb {
    fn open(dir: &Path, opts: &SledStorageOptions, cache: u64) -> Result<LatestDb> {
        let db = open_db(dir, opts, cache)?;
        let tree = db.open_tree(LATEST_TREE).map_err(backend)?;
        Ok(LatestDb {
            db,
            tree,
            dir: dir.to_path_buf(),
        })
    }

    fn is_built(&self) -> Result<bool> {
        self.db.contains_key(BUILT_KEY).map_err(backend)
    }

    /// Removes the completion marker, as a crash before it was durable would (tests).
    #[cfg(test)]
    pub(crate) fn forget_built(&self) {
        self.db.remove(BUILT_KEY).map(|_| ()).unwrap_or_default();
    }

    /// The database's directory.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn flush(&self) -> sled::Result<()> {
        self.db.flush().map(|_| ())
    }

    fn disk_bytes(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

/// When the latest database is rebuilt.
#[derive(Clone, Debug)]
pub(crate) struct RebuildPolicy {
    /// Rebuild once the database's size on disk passes this many times its logical size
    /// (0: never).
    pub(crate) factor: u64,
    /// ... and at least this many bytes.
    pub(crate) min_bytes: u64,
    /// At most once per this interval.
    pub(crate) min_interval: Duration,
}

/// A copy in progress.
struct Copy {
    target: Arc<LatestDb>,
    /// The last key copied (`None`: none yet).
    cursor: Option<IVec>,
    started: Instant,
    copied: u64,
    reader: ChunkReader,
}

type Chunk = sled::Result<Vec<(IVec, IVec)>>;

/// The thread reading a copy's source, a chunk after a cursor per request; it ends when
/// its requests' sender is dropped.
struct ChunkReader {
    requests: std::sync::mpsc::Sender<Option<IVec>>,
    replies: std::sync::mpsc::Receiver<Chunk>,
    handle: std::thread::JoinHandle<()>,
}

impl ChunkReader {
    fn spawn(source: Arc<LatestDb>, stall: Arc<AtomicBool>) -> std::io::Result<ChunkReader> {
        let (requests, asked) = std::sync::mpsc::channel::<Option<IVec>>();
        let (answer, replies) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("kplane-latest-read".into())
            .spawn(move || {
                while let Ok(cursor) = asked.recv() {
                    // Test hook: a read that does not return until released.
                    while stall.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    if answer.send(read_chunk(&source.tree, cursor)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(ChunkReader {
            requests,
            replies,
            handle,
        })
    }
}

/// Up to [`COPY_STEP`] entries of `tree` after `cursor`, in key order.
fn read_chunk(tree: &sled::Tree, cursor: Option<IVec>) -> Chunk {
    let range = match cursor {
        Some(c) => (std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded),
        None => (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
    };
    tree.range::<IVec, _>(range).take(COPY_STEP).collect()
}

/// The writer thread's rebuild state.
struct State {
    last_check: Option<Instant>,
    last_rebuild: Option<Instant>,
    /// A rebuild is due and waits for its target to be prepared.
    wanted: bool,
    copy: Option<Copy>,
}

/// The latest database in use, and its rebuilds.
pub(crate) struct Latest {
    /// The data directory.
    dir: PathBuf,
    opts: SledStorageOptions,
    cache: u64,
    policy: RebuildPolicy,
    current: RwLock<Arc<LatestDb>>,
    /// The writer thread's rebuild state (held only by it, and briefly).
    state: Mutex<State>,
    /// The target of the copy in progress, for [`Latest::disk_bytes`] (which must not wait
    /// for the writer).
    target: Mutex<Option<Arc<LatestDb>>>,
    /// Replaced databases, deleted once no reader holds them.
    retired: Mutex<Vec<Arc<LatestDb>>>,
    /// The target of the next rebuild, prepared in the background.
    spare: Arc<Mutex<Option<Arc<LatestDb>>>>,
    preparing: Arc<AtomicBool>,
    next_seq: AtomicU64,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// The reader of the last copy given up, until it has returned: no rebuild starts
    /// meanwhile.
    stalled: Mutex<Option<std::thread::JoinHandle<()>>>,
    rebuilds: AtomicU64,
    /// Test hook: the copy's reads wait while this is set.
    read_stall: Arc<AtomicBool>,
    /// How long the writer waits for a chunk (tests shorten it).
    read_timeout: Mutex<Duration>,
    /// Test hook: replaced databases are kept (a crash before their deletion).
    #[cfg(test)]
    pub(crate) keep_retired: AtomicBool,
    /// Test hook: entries the copy may still copy (a crash part-way through it).
    #[cfg(test)]
    pub(crate) copy_budget: std::sync::atomic::AtomicUsize,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Backend(format!("cannot {what} {}: {e}", path.display()))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn db_dir_name(seq: u64) -> String {
    format!("{LATEST_DIR}.{seq:020}")
}

fn parse_db_dir(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(LATEST_DIR)?.strip_prefix('.')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Writes the marker file `latest` (once `latest/` is gone).
fn write_marker(dir: &Path) -> Result<()> {
    let path = dir.join(LATEST_DIR);
    if path.exists() {
        return Ok(());
    }
    std::fs::write(&path, MARKER_TEXT).map_err(|e| io("write", &path, e))?;
    sync_dir(dir)
}

impl Latest {
    /// Opens the latest database of data directory `dir`: the newest complete rebuilt one,
    /// else `latest/` (created when new); removes what interrupted rebuilds left.
    pub(crate) fn open(
        dir: &Path,
        opts: &SledStorageOptions,
        cache: u64,
        policy: RebuildPolicy,
    ) -> Result<Latest> {
        let mut seqs = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io("read", dir, e))? {
            let entry = entry.map_err(|e| io("read", dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let is_ours = name.starts_with(&format!("{LATEST_DIR}."));
            if is_ours && (name.ends_with(TMP_SUFFIX) || name.ends_with(DROPPING_SUFFIX)) {
                let path = entry.path();
                tracing::info!(path = %path.display(), "removing a leftover latest database");
                std::fs::remove_dir_all(&path).map_err(|e| io("remove", &path, e))?;
            } else if let Some(seq) = parse_db_dir(&name) {
                seqs.push(seq);
            }
        }
        seqs.sort_unstable_by(|a, b| b.cmp(a));
        let next_seq = seqs.first().map_or(1, |s| s + 1);
        let mut chosen: Option<LatestDb> = None;
        for seq in seqs {
            let path = dir.join(db_dir_name(seq));
            if chosen.is_none() {
                let db = LatestDb::open(&path, opts, cache)?;
                if db.is_built()? {
                    chosen = Some(db);
                    continue;
                }
                tracing::info!(path = %path.display(), "removing a latest database whose rebuild was cut short");
                drop(db);
            }
            delete_dir(&path)?;
        }
        let legacy = dir.join(LATEST_DIR);
        let db = match chosen {
            Some(db) => {
                if legacy.is_dir() {
                    delete_dir(&legacy)?;
                }
                write_marker(dir)?;
                db
            }
            None if legacy.exists() && !legacy.is_dir() => {
                return Err(Error::Backend(format!(
                    "{} says the latest values are in a rebuilt database, and there is none \
                     complete: restore a copy of the data directory",
                    legacy.display()
                )))
            }
            None => LatestDb::open(&legacy, opts, cache)?,
        };
        // A database an older kplane made with segments sled 0.34 can stop on
        // (MAX_SEGMENT_SIZE) is rebuilt with the configured size, whatever the policy says.
        let unsafe_segments = has_unsafe_segments(&db.dir)?;
        if unsafe_segments {
            tracing::info!(
                path = %db.dir.display(),
                "rebuilding the latest database with smaller segments (sled 0.34 can stop on these)"
            );
        }
        Ok(Latest {
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            cache,
            policy,
            current: RwLock::new(Arc::new(db)),
            state: Mutex::new(State {
                last_check: None,
                last_rebuild: None,
                wanted: unsafe_segments,
                copy: None,
            }),
            target: Mutex::new(None),
            retired: Mutex::new(Vec::new()),
            spare: Arc::new(Mutex::new(None)),
            preparing: Arc::new(AtomicBool::new(false)),
            next_seq: AtomicU64::new(next_seq),
            workers: Mutex::new(Vec::new()),
            stalled: Mutex::new(None),
            rebuilds: AtomicU64::new(0),
            read_stall: Arc::new(AtomicBool::new(false)),
            read_timeout: Mutex::new(COPY_READ_TIMEOUT),
            #[cfg(test)]
            keep_retired: AtomicBool::new(false),
            #[cfg(test)]
            copy_budget: std::sync::atomic::AtomicUsize::new(usize::MAX),
        })
    }

    /// The latest database in use. Readers take their revision first, then this.
    pub(crate) fn current(&self) -> Arc<LatestDb> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Bytes on disk of the latest database, a rebuild's target and replaced databases not
    /// yet deleted.
    pub(crate) fn disk_bytes(&self) -> u64 {
        let mut total = self.current().disk_bytes();
        if let Some(target) = lock(&self.target).as_ref() {
            total += target.disk_bytes();
        }
        total += lock(&self.retired)
            .iter()
            .map(|d| d.disk_bytes())
            .sum::<u64>();
        total
    }

    /// Rebuilds completed by this process.
    #[cfg(test)]
    pub(crate) fn rebuilds(&self) -> u64 {
        self.rebuilds.load(Ordering::Relaxed)
    }

    /// Whether a rebuild is under way (the writer then steps it without waiting for work).
    pub(crate) fn rebuilding(&self) -> bool {
        let st = lock(&self.state);
        st.copy.is_some() || st.wanted
    }

    /// Writes `ops` into the latest database (writer thread), and into a rebuild's target
    /// where it has copied already. `before` runs before each write to the database in use.
    pub(crate) fn apply(
        &self,
        ops: Ops,
        before: impl FnMut(usize) -> sled::Result<()>,
    ) -> sled::Result<()> {
        let current = self.current();
        let mirror = lock(&self.state).copy.as_ref().and_then(|c| {
            c.cursor
                .as_ref()
                .map(|cursor| (c.target.clone(), ops.clone_upto(cursor)))
        });
        ops.apply(&current.tree, before)?;
        if let Some((target, mirror)) = mirror {
            if let Err(e) = mirror.apply(&target.tree, |_| Ok(())) {
                self.abandon(&mut lock(&self.state), &e);
            }
        }
        Ok(())
    }

    /// Inserts one entry (see [`Latest::apply`]); returns the value it replaced.
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> sled::Result<Option<IVec>> {
        let prev = self.current().tree.get(key)?;
        let mut ops = Ops::default();
        ops.insert(key, value);
        self.apply(ops, |_| Ok(()))?;
        Ok(prev)
    }

    /// Gives up the rebuild in progress (its target is deleted; a later check may start
    /// another).
    fn abandon(&self, st: &mut State, e: &dyn std::fmt::Display) {
        *lock(&self.target) = None;
        if let Some(copy) = st.copy.take() {
            tracing::warn!(error = %e, dir = %copy.target.dir.display(), "latest database rebuild abandoned");
            lock(&self.retired).push(copy.target);
            // Its reader ends once it sees the requests' sender gone (at once, unless a
            // read is stuck).
            drop(copy.reader.requests);
            *lock(&self.stalled) = Some(copy.reader.handle);
        }
        st.last_rebuild = Some(Instant::now());
    }

    /// Whether the reader of a copy given up has not returned yet.
    pub(crate) fn reader_stuck(&self) -> bool {
        let mut stalled = lock(&self.stalled);
        if stalled.as_ref().is_some_and(|h| h.is_finished()) {
            *stalled = None;
        }
        stalled.is_some()
    }

    /// Test hooks: holds the copy's reads (`true`) or lets them go; the writer's wait.
    #[cfg(test)]
    pub(crate) fn stall_reads(&self, stall: bool, timeout: Duration) {
        self.read_stall.store(stall, Ordering::Release);
        *lock(&self.read_timeout) = timeout;
    }

    /// The writer's work between groups: checks whether a rebuild is due, copies one chunk
    /// of a rebuild in progress, swaps in a finished copy, deletes replaced databases.
    /// `logical` is the latest database's logical size.
    pub(crate) fn step(&self, logical: u64) -> Result<()> {
        let mut st = lock(&self.state);
        if st.copy.is_some() {
            self.copy_chunk(&mut st)?;
        } else if self.reader_stuck() {
            // A read of the last copy has not returned: sled may be stuck on this database.
            st.wanted = false;
        } else if st.wanted {
            self.try_start(&mut st);
        } else if self.policy.factor > 0
            && st
                .last_check
                .is_none_or(|t| t.elapsed() >= CHECK_EVERY.min(self.policy.min_interval))
            && st
                .last_rebuild
                .is_none_or(|t| t.elapsed() >= self.policy.min_interval)
        {
            st.last_check = Some(Instant::now());
            let disk = self.current().disk_bytes();
            let limit = logical
                .saturating_mul(self.policy.factor)
                .max(self.policy.min_bytes);
            if disk > limit {
                tracing::info!(
                    disk_bytes = disk,
                    logical_bytes = logical,
                    "latest database rebuild due"
                );
                st.wanted = true;
                self.try_start(&mut st);
            }
        }
        drop(st);
        self.delete_retired();
        Ok(())
    }

    /// Starts a rebuild now, whatever the sizes (tests).
    #[cfg(test)]
    pub(crate) fn force_rebuild(&self) {
        let mut st = lock(&self.state);
        if st.copy.is_none() {
            st.wanted = true;
        }
    }

    /// Starts the copy when the target is ready, else asks for one.
    fn try_start(&self, st: &mut State) {
        let ready = lock(&self.spare).take();
        match ready {
            Some(target) => {
                let reader = match ChunkReader::spawn(self.current(), self.read_stall.clone()) {
                    Ok(r) => r,
                    Err(e) => {
                        // The target stays the spare for a later attempt.
                        *lock(&self.spare) = Some(target);
                        st.wanted = false;
                        st.last_rebuild = Some(Instant::now());
                        tracing::warn!(error = %e, "cannot start the latest database rebuild's reader");
                        return;
                    }
                };
                *lock(&self.target) = Some(target.clone());
                st.wanted = false;
                st.copy = Some(Copy {
                    target,
                    cursor: None,
                    started: Instant::now(),
                    copied: 0,
                    reader,
                });
            }
            None => self.prepare_spare(),
        }
    }

    /// Copies the next chunk; swaps when done.
    fn copy_chunk(&self, st: &mut State) -> Result<()> {
        let current = self.current();
        let Some(copy) = st.copy.as_mut() else {
            return Ok(());
        };
        let timeout = *lock(&self.read_timeout);
        let chunk = match copy.reader.requests.send(copy.cursor.clone()) {
            Err(_) => Err(None),
            Ok(()) => match copy.reader.replies.recv_timeout(timeout) {
                Ok(Ok(chunk)) => Ok(chunk),
                Ok(Err(e)) => Err(Some(e.to_string())),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    tracing::error!(
                        waited_ms = timeout.as_millis() as u64,
                        copied = copy.copied,
                        "a read of the latest database did not return in time (sled stuck?); \
                         the rebuild is given up and none starts until that read returns"
                    );
                    Err(Some(format!("no chunk within {timeout:?}")))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(None),
            },
        };
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                let e = e.unwrap_or_else(|| "the copy's reader ended".to_string());
                self.abandon(st, &e);
                return Ok(());
            }
        };
        let full = chunk.len() == COPY_STEP;
        let mut failed = None;
        for (k, v) in chunk {
            #[cfg(test)]
            if self
                .copy_budget
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| b.checked_sub(1))
                .is_err()
            {
                return Ok(());
            }
            if let Err(e) = copy.target.tree.insert(&k, v) {
                failed = Some(e);
                break;
            }
            copy.cursor = Some(k);
            copy.copied += 1;
        }
        if let Some(e) = failed {
            self.abandon(st, &e);
            return Ok(());
        }
        if full {
            return Ok(());
        }
        // Past the last key: the copy is complete.
        let Some(copy) = st.copy.take() else {
            return Ok(());
        };
        if let Err(e) = copy.target.db.insert(BUILT_KEY, &[1u8]) {
            st.copy = Some(copy);
            self.abandon(st, &e);
            return Ok(());
        }
        let old_disk = current.disk_bytes();
        {
            let mut cur = self
                .current
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *cur = copy.target.clone();
        }
        *lock(&self.target) = None;
        st.last_rebuild = Some(Instant::now());
        self.rebuilds.fetch_add(1, Ordering::Relaxed);
        drop(copy.reader.requests);
        *lock(&self.stalled) = Some(copy.reader.handle);
        tracing::info!(
            entries = copy.copied,
            millis = copy.started.elapsed().as_millis() as u64,
            old_disk_bytes = old_disk,
            new_disk_bytes = copy.target.disk_bytes(),
            dir = %copy.target.dir.display(),
            "latest database rebuilt"
        );
        lock(&self.retired).push(current);
        Ok(())
    }

    /// Prepares a rebuild's target in the background, unless one is ready or on its way.
    fn prepare_spare(&self) {
        if lock(&self.spare).is_some() || self.preparing.swap(true, Ordering::AcqRel) {
            return;
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let (dir, opts, cache) = (self.dir.clone(), self.opts.clone(), self.cache);
        let (spare, preparing) = (self.spare.clone(), self.preparing.clone());
        self.spawn("kplane-latest-spare", move || {
            let made = create_db(&dir, seq, &opts, cache);
            preparing.store(false, Ordering::Release);
            *lock(&spare) = Some(Arc::new(made?));
            Ok(())
        });
    }

    /// Deletes replaced databases no reader holds any more, after making the one in use
    /// durable (its completion marker first).
    fn delete_retired(&self) {
        #[cfg(test)]
        if self.keep_retired.load(Ordering::Acquire) {
            return;
        }
        let ready: Vec<Arc<LatestDb>> = {
            let mut retired = lock(&self.retired);
            if retired.is_empty() {
                return;
            }
            let (ready, held) = std::mem::take(&mut *retired)
                .into_iter()
                .partition(|d| Arc::strong_count(d) == 1);
            *retired = held;
            ready
        };
        if ready.is_empty() {
            return;
        }
        let current = self.current();
        let dir = self.dir.clone();
        self.spawn("kplane-latest-delete", move || {
            current.flush().map_err(backend)?;
            drop(current);
            for db in ready {
                let path = db.dir.clone();
                // Closes the database (its flusher thread stops) before its files go.
                drop(db);
                delete_dir(&path)?;
                if path == dir.join(LATEST_DIR) {
                    write_marker(&dir)?;
                }
                tracing::debug!(dir = %path.display(), "replaced latest database deleted");
            }
            Ok(())
        });
    }

    /// Runs `work` on a background thread, joined when this is dropped; errors are logged
    /// (a failed target is asked for again later, a failed deletion redone on open).
    fn spawn(&self, name: &str, work: impl FnOnce() -> Result<()> + Send + 'static) {
        let mut workers = lock(&self.workers);
        workers.retain(|w| !w.is_finished());
        let what = name.to_string();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Err(e) = work() {
                    tracing::warn!(error = %e, task = what, "latest database background task failed");
                }
            });
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a latest database background thread")
            }
        }
    }
}

impl Drop for Latest {
    fn drop(&mut self) {
        let workers = std::mem::take(&mut *lock(&self.workers));
        for w in workers {
            let _ = w.join();
        }
        // A copy's reader ends once its requests' sender is gone; one stuck in sled is
        // left behind.
        if let Some(copy) = lock(&self.state).copy.take() {
            drop(copy.reader.requests);
            *lock(&self.stalled) = Some(copy.reader.handle);
        }
        if let Some(reader) = lock(&self.stalled).take() {
            let deadline = Instant::now() + Duration::from_secs(1);
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }
}

/// Creates the empty database `latest.<seq>` in `dir` (complete under a temporary name,
/// then renamed) and opens it.
fn create_db(dir: &Path, seq: u64, opts: &SledStorageOptions, cache: u64) -> Result<LatestDb> {
    let path = dir.join(db_dir_name(seq));
    let tmp = dir.join(format!("{}{TMP_SUFFIX}", db_dir_name(seq)));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io("remove", &tmp, e))?;
    }
    let tmp_opts = SledStorageOptions {
        flush_every_ms: None,
        ..opts.clone()
    };
    let db = LatestDb::open(&tmp, &tmp_opts, cache)?;
    db.flush().map_err(backend)?;
    drop(db);
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
    sync_dir(dir)?;
    // sled releases a closed database's file lock from its own threads, a little after
    // the handle is dropped: retry the reopen for a while.
    let mut attempt = 0;
    loop {
        match LatestDb::open(&path, opts, cache) {
            Ok(db) => return Ok(db),
            Err(e) if attempt >= REOPEN_ATTEMPTS => return Err(e),
            Err(_) => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
