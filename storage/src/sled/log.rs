//! The log: every version once, keyed by the revision that wrote it, in generations, each
//! its own sled database.
//!
//! A generation is one sled database in its own directory under `log/`; it holds the versions (`V`), their per-key index (`X`) and the commit times (`T`) of the
//! revisions from its first one up to the next generation's first one, plus copies of
//! older versions that readers may still need (see [`super::compaction`]). The writer
//! starts a new generation every window / [`GENERATIONS`]; compaction drops the oldest one
//! as a whole once all of it is older than the window, so the compaction point moves in
//! steps and the log never deletes entries one by one (which is what makes sled's files
//! grow under churn, docs/performance.md). Dropping a generation deletes its directory, so
//! the space goes back to the file system at once: sled 0.34 never shortens a database's
//! file, so generations as trees of one database kept the size the busiest window needed.
//!
//! Files on disk, and what a crash can leave:
//! - `log/g<n>` (20 digits, a sequence number): a generation database. Its first revision
//!   is its entry `F` (written into the database when it becomes a generation, so it is
//!   durable with, and before, anything else written into it); a database without `F` is a
//!   spare. A background thread prepares the next spare (created as `g<n>.tmp`, flushed,
//!   closed, renamed, opened again: opening a sled database costs 10-100 ms, which the writer
//!   should not wait for), so starting a generation on the writer thread is one insert. A
//!   leftover `.tmp` is removed on open, a spare found on open is kept as the spare.
//! - A dropped generation is removed from the list at once, and its directory is renamed to
//!   `g<n>.dropping` and deleted when no reader holds it any more (readers take a
//!   snapshot of the list and read a dropped generation in full meanwhile). A leftover
//!   `.dropping` is removed on open; a generation dropped from the list but not renamed
//!   before a crash is found again and dropped again (the compactor resumes the drop).
//! - `log.legacy` (beside `log/`): the log of an older data directory, one sled database
//!   with a tree per generation. It is renamed there on the first open and read as the
//!   oldest generations until they age out (each dropped with `Db::drop_tree`); then the
//!   directory is deleted like a dropped generation. New revisions always go to a
//!   generation of its own.
//!
//! Each generation database has its own page cache (the log's budget split evenly over
//! the configured generations + 2 databases) and its own sled flusher thread, so the
//! threads are bounded by the number of generations (one window's, the one being filled,
//! one being dropped and the spare). On open, each generation's logical size is counted by
//! reading it whole, and the database is then opened again, so that the pages the count
//! read are not kept (sled 0.34 keeps the pages of a single pass beyond its cache size).
//!
//! The log also accounts for its logical size (the bytes of its entries' keys and values,
//! what sled's files hold before amplification), per generation and for the commits of the
//! last event window ([`Log::logical_bytes`], [`Log::window_bytes`]), so the data
//! directory's size can be compared with what it holds.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use super::db::{backend, existing_segment_size, has_unsafe_segments, SEGMENT_SIZE};
use super::encoding::{
    decode_u64, decode_version, encode_u64, rev_of_tagged, split_xref_key, time_key, version_key,
    version_logical_len, xref_key, Record, TAG_VERSION,
};
use super::ops::Ops;
use crate::{Error, Result, Revision};

/// Generation trees per event window: history is kept for between one window and one
/// window plus a generation.
pub(crate) const GENERATIONS: u32 = 6;

/// Tree-name prefix of the generations in a legacy log database.
const GEN_PREFIX: &[u8] = b"gen";

/// The log's directory in the data directory.
pub(crate) const LOG_DIR: &str = "log";
/// Where an older data directory's single log database is kept until it ages out.
pub(crate) const LEGACY_DIR: &str = "log.legacy";
/// The key of a generation database's first revision (no other keyspace uses `F`).
const FIRST_KEY: &[u8] = b"F";

/// Reopens of a just-created generation database (10 ms apart) before giving up.
const REOPEN_ATTEMPTS: u32 = 300;

/// Suffix of a generation directory being created.
const TMP_SUFFIX: &str = ".tmp";
/// Suffix of a directory being deleted.
pub(super) const DROPPING_SUFFIX: &str = ".dropping";

/// How the log's sled databases are opened.
#[derive(Clone, Debug)]
pub(crate) struct LogConfig {
    /// Page cache of each generation database.
    pub(crate) cache_per_db: u64,
    /// sled's background flush interval.
    pub(crate) flush_every_ms: Option<u64>,
}

/// The sled database holding one generation (or, for a legacy log, several), and its
/// directory.
pub(crate) struct GenStore {
    db: sled::Db,
    dir: PathBuf,
    /// The older single log database (generations are its trees, dropped one by one).
    legacy: bool,
}

/// One generation.
#[derive(Clone)]
pub(crate) struct Generation {
    /// The first revision written natively into this generation.
    pub first: Revision,
    pub tree: sled::Tree,
    /// When this process started the generation (or opened it).
    pub started: Instant,
    /// Logical bytes of the tree's entries (keys and values).
    pub bytes: Arc<AtomicU64>,
    /// The database holding the tree; its directory is deleted once the generation is
    /// dropped and no reader holds it.
    store: Arc<GenStore>,
}

impl Generation {
    fn new(first: Revision, tree: sled::Tree, bytes: u64, store: Arc<GenStore>) -> Generation {
        Generation {
            first,
            tree,
            started: Instant::now(),
            bytes: Arc::new(AtomicU64::new(bytes)),
            store,
        }
    }

    /// Counts `bytes` more logical bytes written into this generation.
    pub(crate) fn add_bytes(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Makes everything written into this generation durable.
    pub(crate) fn flush(&self) -> sled::Result<()> {
        self.store.db.flush().map(|_| ())
    }

    /// Whether this generation is a tree of the legacy log database.
    pub(crate) fn is_legacy(&self) -> bool {
        self.store.legacy
    }

    /// The directory of the database holding this generation.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.store.dir
    }
}

/// Granularity of the window accounting: commits within one bucket are summed.
const WINDOW_BUCKET_MS: u64 = 100;

/// The log's generations, oldest first.
pub(crate) struct Log {
    /// `log/` in the data directory.
    dir: PathBuf,
    config: LogConfig,
    gens: RwLock<Vec<Generation>>,
    /// Databases of dropped generations whose directories are deleted once no reader
    /// holds them.
    retired: Mutex<Vec<Arc<GenStore>>>,
    /// The database the next generation goes to, prepared in the background.
    spare: Arc<Mutex<Option<Arc<GenStore>>>>,
    /// Whether a background thread is preparing a spare.
    preparing: Arc<AtomicBool>,
    /// The next generation database's sequence number.
    next_seq: AtomicU64,
    /// Background threads preparing a spare or deleting dropped generations; joined when
    /// the log is dropped, so no database is open once the store is closed.
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// Logical bytes logged per commit-time bucket, oldest first (this process's commits
    /// only; older buckets are pruned by [`Log::window_bytes`]).
    recent: Mutex<VecDeque<(u64, u64)>>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Backend(format!("cannot {what} {}: {e}", path.display()))
}

/// Makes the entries of directory `dir` (creations, renames, removals) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("sync", dir, e))
}

/// The directory name of generation database number `seq`.
fn gen_dir_name(seq: u64) -> String {
    format!("g{seq:020}")
}

/// The sequence number of a generation database's directory name.
fn parse_gen_dir(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('g')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Opens (or creates) a log sled database at `path`: with the segment size it has, or
/// [`SEGMENT_SIZE`] when new.
fn open_log_db(path: &Path, cache: u64, flush_every_ms: Option<u64>) -> Result<sled::Db> {
    sled::Config::new()
        .path(path)
        .cache_capacity(cache)
        .segment_size(existing_segment_size(path, SEGMENT_SIZE)?)
        .flush_every_ms(flush_every_ms)
        .mode(sled::Mode::HighThroughput)
        .open()
        .map_err(backend)
}

/// Creates generation database number `seq` in `dir` (complete under a temporary name,
/// then renamed) and opens it.
fn create_store(dir: &Path, seq: u64, config: &LogConfig) -> Result<Arc<GenStore>> {
    let path = dir.join(gen_dir_name(seq));
    let tmp = dir.join(format!("{}{TMP_SUFFIX}", gen_dir_name(seq)));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io("remove", &tmp, e))?;
    }
    let db = open_log_db(&tmp, config.cache_per_db, None)?;
    db.flush().map_err(backend)?;
    drop(db);
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
    sync_dir(dir)?;
    let db = reopen_log_db(&path, config)?;
    Ok(Arc::new(GenStore {
        db,
        dir: path,
        legacy: false,
    }))
}

/// Opens the log database at `path` whose last handle was just dropped: sled releases a
/// closed database's file lock from its own threads, a little after the handle is
/// dropped, so the open is retried for a while.
fn reopen_log_db(path: &Path, config: &LogConfig) -> Result<sled::Db> {
    let mut attempt = 0;
    loop {
        match open_log_db(path, config.cache_per_db, config.flush_every_ms) {
            Ok(db) => return Ok(db),
            Err(e) if attempt >= REOPEN_ATTEMPTS => return Err(e),
            Err(_) => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

/// The generation database at `path`, freshly opened after [`tree_bytes`] counted it:
/// its first revision and logical bytes. The count reads every page, and sled 0.34 keeps
/// the pages a scan reads far beyond its `cache_capacity` (its LRU accounts accesses in
/// batches of 64 per shard, 256 shards): reopening drops them, so a restart does not hold
/// the whole history in memory (docs/performance.md, "To be measured").
/// `None` with the database when it records no first revision (not a generation).
fn open_counted(path: &Path, config: &LogConfig) -> Result<(sled::Db, Option<(Revision, u64)>)> {
    let db = open_log_db(path, config.cache_per_db, config.flush_every_ms)?;
    let Some(first) = db.get(FIRST_KEY).map_err(backend)? else {
        return Ok((db, None));
    };
    let first = decode_u64(&first)?;
    let bytes = tree_bytes(&db)?;
    drop(db);
    let db = reopen_log_db(path, config)?;
    Ok((db, Some((first, bytes))))
}

/// Closes `store` and deletes its directory.
fn close_and_delete(store: Arc<GenStore>) -> Result<()> {
    let dir = store.dir.clone();
    let started = Instant::now();
    // Closes the database (its flusher thread stops) before its files go.
    drop(store);
    delete_dir(&dir)?;
    tracing::debug!(dir = %dir.display(), micros = started.elapsed().as_micros() as u64, "log generation deleted");
    Ok(())
}

/// Renames `path` to `<path>.dropping`, then deletes it: a crash leaves either the
/// original (found again) or a `.dropping` directory (removed on open).
pub(super) fn delete_dir(path: &Path) -> Result<()> {
    let mut dropping = path.as_os_str().to_owned();
    dropping.push(DROPPING_SUFFIX);
    let dropping = PathBuf::from(dropping);
    std::fs::rename(path, &dropping).map_err(|e| io("rename", path, e))?;
    if let Some(parent) = path.parent() {
        sync_dir(parent)?;
    }
    std::fs::remove_dir_all(&dropping).map_err(|e| io("remove", &dropping, e))
}

/// Removes what an interrupted creation or deletion left in `dir`.
fn remove_leftovers(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| io("read", dir, e))? {
        let entry = entry.map_err(|e| io("read", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(TMP_SUFFIX) || name.ends_with(DROPPING_SUFFIX) {
            let path = entry.path();
            tracing::info!(path = %path.display(), "removing a leftover log directory");
            std::fs::remove_dir_all(&path).map_err(|e| io("remove", &path, e))?;
        }
    }
    Ok(())
}

/// The logical size of a tree: the bytes of its keys and values (log versions counted
/// with their records uncompressed).
pub(crate) fn tree_bytes(tree: &sled::Tree) -> Result<u64> {
    let mut total = 0u64;
    for entry in tree.iter() {
        let (k, v) = entry.map_err(backend)?;
        if k.as_ref() == FIRST_KEY {
            // Bookkeeping of a generation database, not history.
            continue;
        }
        let v_len = if k.first() == Some(&TAG_VERSION) {
            version_logical_len(&v)?
        } else {
            v.len()
        };
        total += (k.len() + v_len) as u64;
    }
    Ok(total)
}

/// Log writes under construction (applied in order, never as a sled batch: see
/// [`super::ops`]) with the logical bytes they write.
#[derive(Default)]
pub(crate) struct SizedBatch {
    pub(crate) ops: Ops,
    pub(crate) bytes: u64,
}

impl SizedBatch {
    pub(crate) fn insert(&mut self, k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) {
        let v_len = v.as_ref().len();
        self.insert_logical(k, v, v_len);
    }

    /// Inserts a value whose logical length is `v_len` (a compressed log version).
    pub(crate) fn insert_logical(
        &mut self,
        k: impl AsRef<[u8]>,
        v: impl AsRef<[u8]>,
        v_len: usize,
    ) {
        let (k, v) = (k.as_ref(), v.as_ref());
        self.bytes += (k.len() + v_len) as u64;
        self.ops.insert(k, v);
    }
}

/// The tree name of a generation in a legacy log database.
pub(crate) fn legacy_tree_name(first: Revision) -> Vec<u8> {
    let mut name = GEN_PREFIX.to_vec();
    name.extend_from_slice(&first.to_be_bytes());
    name
}

/// Reads that race with a generation drop see the dropped tree as empty.
fn live<T>(r: sled::Result<T>, empty: T) -> Result<T> {
    match r {
        Ok(v) => Ok(v),
        Err(sled::Error::CollectionNotFound(_)) => Ok(empty),
        Err(e) => Err(backend(e)),
    }
}

impl Log {
    /// Opens the log of data directory `data`: its generation databases and, for an
    /// older data directory, its single log database (moved to [`LEGACY_DIR`] first).
    /// Creates the first generation (starting at `next`) when there is none.
    pub(crate) fn open(data: &Path, config: LogConfig, next: Revision) -> Result<Log> {
        let dir = data.join(LOG_DIR);
        let legacy_dir = data.join(LEGACY_DIR);
        if dir.join("conf").exists() {
            // A single log database (one tree per generation): keep reading it as the
            // oldest generations until they age out.
            let has_generations = std::fs::read_dir(&dir)
                .map_err(|e| io("read", &dir, e))?
                .filter_map(|e| e.ok())
                .any(|e| parse_gen_dir(&e.file_name().to_string_lossy()).is_some());
            if legacy_dir.exists() || has_generations {
                // An older kplane was started on this directory after a newer one.
                return Err(Error::Backend(format!(
                    "{} holds both a single log database and generation databases (was an \
                     older kplane started on this data directory?); restore a copy taken \
                     before",
                    dir.display()
                )));
            }
            tracing::info!(dir = %dir.display(), "moving the single log database aside; it is read until its history ages out");
            std::fs::rename(&dir, &legacy_dir).map_err(|e| io("rename", &dir, e))?;
            sync_dir(data)?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
        remove_leftovers(&dir)?;
        let mut legacy_dropping = legacy_dir.as_os_str().to_owned();
        legacy_dropping.push(DROPPING_SUFFIX);
        let legacy_dropping = PathBuf::from(legacy_dropping);
        if legacy_dropping.exists() {
            std::fs::remove_dir_all(&legacy_dropping)
                .map_err(|e| io("remove", &legacy_dropping, e))?;
        }
        let mut gens = Vec::new();
        if legacy_dir.exists() {
            gens.extend(Self::open_legacy(&legacy_dir, &config)?);
        }
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| io("read", &dir, e))? {
            let entry = entry.map_err(|e| io("read", &dir, e))?;
            if let Some(seq) = parse_gen_dir(&entry.file_name().to_string_lossy()) {
                entries.push((seq, entry.path()));
            }
        }
        entries.sort();
        let next_seq = entries.last().map_or(0, |(seq, _)| seq + 1);
        let mut spare = None;
        for (_, path) in entries {
            let (db, counted) = open_counted(&path, &config)?;
            let store = Arc::new(GenStore {
                db,
                dir: path,
                legacy: false,
            });
            let Some((first, bytes)) = counted else {
                // Never a generation (a spare, or one started and never flushed); one with
                // segments sled 0.34 can stop on is not kept.
                match spare {
                    None if !has_unsafe_segments(&store.dir)? => spare = Some(store),
                    _ => close_and_delete(store)?,
                }
                continue;
            };
            let tree: sled::Tree = (*store.db).clone();
            gens.push(Generation::new(first, tree, bytes, store));
        }
        sync_dir(&dir)?;
        gens.sort_by_key(|g| g.first);
        let log = Log {
            dir,
            config,
            gens: RwLock::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            spare: Arc::new(Mutex::new(spare)),
            preparing: Arc::new(AtomicBool::new(false)),
            next_seq: AtomicU64::new(next_seq),
            workers: Mutex::new(Vec::new()),
            recent: Mutex::new(VecDeque::new()),
        };
        // New history goes to a database with safe segments: a current generation an older
        // kplane made with larger ones (super::db::MAX_SEGMENT_SIZE) is followed by a new one.
        let current_unsafe = match gens.last() {
            Some(g) => has_unsafe_segments(&g.store.dir)?,
            None => true,
        };
        if current_unsafe {
            gens.push(log.start(next)?);
        }
        *log.gens
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = gens;
        log.prepare_spare();
        Ok(log)
    }

    /// The generations of a legacy log database; the directory is deleted when it holds
    /// none.
    fn open_legacy(path: &Path, config: &LogConfig) -> Result<Vec<Generation>> {
        let db = open_log_db(path, config.cache_per_db, config.flush_every_ms)?;
        let mut trees = Vec::new();
        for name in db.tree_names() {
            let Some(first) = name.strip_prefix(GEN_PREFIX) else {
                continue;
            };
            let Ok(first) = decode_u64(first) else {
                continue;
            };
            let tree = db.open_tree(&name).map_err(backend)?;
            trees.push((first, tree));
        }
        if trees.is_empty() {
            drop(db);
            delete_dir(path)?;
            return Ok(Vec::new());
        }
        let store = Arc::new(GenStore {
            db,
            dir: path.to_path_buf(),
            legacy: true,
        });
        let mut gens = Vec::new();
        for (first, tree) in trees {
            let bytes = tree_bytes(&tree)?;
            gens.push(Generation::new(first, tree, bytes, store.clone()));
        }
        Ok(gens)
    }

    /// Makes the spare database (or, when none is ready, a new one) the generation
    /// starting at `first`: records `first` in it (durable with its first flush, before
    /// anything else written into it).
    fn start(&self, first: Revision) -> Result<Generation> {
        let ready = self
            .spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let store = match ready {
            Some(store) => store,
            None => {
                let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                create_store(&self.dir, seq, &self.config)?
            }
        };
        store
            .db
            .insert(FIRST_KEY, &encode_u64(first))
            .map_err(backend)?;
        let tree: sled::Tree = (*store.db).clone();
        Ok(Generation::new(first, tree, 0, store))
    }

    /// Prepares the next spare database in the background, unless one is ready or being
    /// prepared.
    fn prepare_spare(&self) {
        if self
            .spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
            || self.preparing.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let (dir, config, spare) = (self.dir.clone(), self.config.clone(), self.spare.clone());
        let preparing = self.preparing.clone();
        self.spawn("kplane-log-spare", move || {
            let made = create_store(&dir, seq, &config);
            preparing.store(false, Ordering::Release);
            let store = made?;
            let mut slot = spare
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match slot.as_ref() {
                // The writer made one itself meanwhile and has a spare again: not needed.
                Some(_) => {
                    drop(slot);
                    close_and_delete(store)
                }
                None => {
                    *slot = Some(store);
                    Ok(())
                }
            }
        });
    }

    /// Runs `work` on a background thread (joined when the log is dropped); errors are
    /// logged: a failed spare is made on the writer thread instead, a failed deletion is
    /// retried at the next start.
    fn spawn(&self, name: &str, work: impl FnOnce() -> Result<()> + Send + 'static) {
        let mut workers = self
            .workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        workers.retain(|w| !w.is_finished());
        let what = name.to_string();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Err(e) = work() {
                    tracing::warn!(error = %e, task = what, "log background task failed");
                }
            });
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(e) => tracing::warn!(error = %e, "cannot start a log background thread"),
        }
    }

    /// Starts a generation of its own when the newest one is a legacy tree (at start-up,
    /// once `current` is known: new revisions never go to the legacy database).
    pub(crate) fn ensure_own_current(&self, current: Revision) -> Result<()> {
        if self.current().is_legacy() {
            self.rotate(current + 1)?;
        }
        Ok(())
    }

    /// Makes every generation durable (shutdown).
    pub(crate) fn flush_all(&self) -> Result<()> {
        let gens = self.generations();
        let mut flushed: Vec<*const GenStore> = Vec::new();
        for g in &gens {
            let ptr = Arc::as_ptr(&g.store);
            if !flushed.contains(&ptr) {
                g.flush().map_err(backend)?;
                flushed.push(ptr);
            }
        }
        Ok(())
    }

    /// Bytes the log's databases take on disk (sled's size, dropped generations not yet
    /// deleted included).
    pub(crate) fn disk_bytes(&self) -> u64 {
        let mut stores: Vec<Arc<GenStore>> = self
            .retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for g in self.generations() {
            if !stores.iter().any(|s| Arc::ptr_eq(s, &g.store)) {
                stores.push(g.store);
            }
        }
        stores
            .iter()
            .map(|s| s.db.size_on_disk().unwrap_or(0))
            .sum()
    }

    /// Logical bytes of every retained generation.
    pub(crate) fn logical_bytes(&self) -> u64 {
        self.generations()
            .iter()
            .map(|g| g.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Records `bytes` logged by a commit at `millis` (writer thread).
    pub(crate) fn note_commit(&self, millis: u64, bytes: u64) {
        let bucket = millis / WINDOW_BUCKET_MS;
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match recent.back_mut() {
            Some((b, n)) if *b == bucket => *n += bytes,
            _ => recent.push_back((bucket, bytes)),
        }
    }

    /// Logical bytes logged by this process's commits of the last `window_ms`
    /// milliseconds before `now_ms` (to within one 100 ms bucket); drops older buckets.
    pub(crate) fn window_bytes(&self, now_ms: u64, window_ms: u64) -> u64 {
        let oldest = now_ms.saturating_sub(window_ms) / WINDOW_BUCKET_MS;
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while recent.front().is_some_and(|(b, _)| *b < oldest) {
            recent.pop_front();
        }
        recent.iter().map(|(_, n)| n).sum()
    }

    /// The generations, oldest first.
    pub(crate) fn generations(&self) -> Vec<Generation> {
        self.gens
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The generation new revisions go to.
    pub(crate) fn current(&self) -> Generation {
        let gens = self
            .gens
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // `open` leaves at least one generation and only the oldest is ever removed
        // while a newer one exists.
        gens[gens.len() - 1].clone()
    }

    /// Starts a new generation whose first revision is `first` when a spare database is
    /// ready (writer thread only). Otherwise asks for one and returns `None`: the current
    /// generation goes on a little longer rather than the writer waiting for a database
    /// to be created (10-200 ms on a loaded machine).
    pub(crate) fn try_rotate(&self, first: Revision) -> Result<Option<Generation>> {
        let ready = self
            .spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some();
        if !ready {
            self.prepare_spare();
            return Ok(None);
        }
        // Only the writer takes the spare: it is still there.
        self.rotate(first).map(Some)
    }

    /// Starts a new generation whose first revision is `first` (writer thread only),
    /// creating its database when no spare is ready.
    pub(crate) fn rotate(&self, first: Revision) -> Result<Generation> {
        let gen = self.start(first)?;
        self.gens
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(gen.clone());
        self.prepare_spare();
        Ok(gen)
    }

    /// Removes the oldest generation from the list (compaction only; never the current
    /// generation) and deletes its files once no reader holds it ([`Log::reap`]).
    pub(crate) fn drop_oldest(&self) -> Result<()> {
        let (gen, legacy_left) = {
            let mut gens = self
                .gens
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if gens.len() < 2 {
                return Ok(());
            }
            let gen = gens.remove(0);
            let left = gens.iter().any(|g| Arc::ptr_eq(&g.store, &gen.store));
            (gen, left)
        };
        if gen.store.legacy {
            gen.store
                .db
                .drop_tree(legacy_tree_name(gen.first))
                .map_err(backend)?;
        }
        if !legacy_left {
            self.retired
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(gen.store.clone());
        }
        drop(gen);
        self.reap()
    }

    /// Deletes the directories of dropped generations that no reader holds any more.
    pub(crate) fn reap(&self) -> Result<()> {
        let ready: Vec<Arc<GenStore>> = {
            let mut retired = self
                .retired
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (ready, held) = std::mem::take(&mut *retired)
                .into_iter()
                .partition(|s| Arc::strong_count(s) == 1);
            *retired = held;
            ready
        };
        if !ready.is_empty() {
            self.spawn("kplane-log-delete", move || {
                ready.into_iter().try_for_each(close_and_delete)
            });
        }
        Ok(())
    }

    /// Whether dropped generations still wait for readers before their files go.
    #[cfg(test)]
    pub(crate) fn retired_count(&self) -> usize {
        self.retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// The unix millis of the last commit logged in `gen`, if any.
    pub(crate) fn last_commit_millis(gen: &Generation) -> Result<Option<u64>> {
        let last = gen
            .tree
            .range(time_key(0)..=time_key(Revision::MAX))
            .next_back()
            .transpose();
        match live(last, None)? {
            Some((_, v)) => Ok(Some(decode_u64(&v)?)),
            None => Ok(None),
        }
    }

    /// The newest logged version of `kb` at or below `rev`, as (its revision, whether it is
    /// a tombstone, the generation holding it), over all generations.
    fn newest_xref(
        gens: &[Generation],
        kb: &[u8],
        rev: Revision,
    ) -> Result<Option<(Revision, bool, usize)>> {
        let mut best: Option<(Revision, bool, usize)> = None;
        for (i, gen) in gens.iter().enumerate() {
            let found = gen
                .tree
                .range(xref_key(kb, 0)..=xref_key(kb, rev))
                .next_back()
                .transpose();
            let Some((k, v)) = live(found, None)? else {
                continue;
            };
            let (_, r) = split_xref_key(&k)?;
            // On a tie (a version and its copy) the newer generation wins: it is dropped last.
            if best.is_none_or(|(b, _, _)| r >= b) {
                best = Some((r, v.first() == Some(&1), i));
            }
        }
        Ok(best)
    }

    /// The value of `kb` at `rev` according to the log alone (`None`: absent, or never
    /// logged). Exact for `rev` at or above the compaction point when the key's latest
    /// value is newer than `rev`.
    ///
    /// A generation may be dropped between finding a version's index entry in it and reading
    /// the version (a dropped tree reads as empty). Whatever a reader at or above the
    /// compaction point needs from it was copied to a newer generation before the drop, so
    /// the lookup is then repeated on a fresh list of generations; a version whose index
    /// entry exists is never reported absent because of a drop.
    pub(crate) fn version_at(&self, kb: &[u8], rev: Revision) -> Result<Option<Record>> {
        let mut dropped_under_us = 0;
        loop {
            let gens = self.generations();
            let Some((r, tombstone, i)) = Self::newest_xref(&gens, kb, rev)? else {
                return Ok(None);
            };
            if tombstone {
                return Ok(None);
            }
            if let Some(raw) = live(gens[i].tree.get(version_key(r)), None)? {
                return Ok(Some(decode_version(raw)?.record));
            }
            let still_there = self.generations().iter().any(|g| g.first == gens[i].first);
            // The entry without its version in a live tree, or drop after drop (each needs
            // a whole generation to age out, so this ends): report what the log holds.
            if still_there || dropped_under_us >= GENERATIONS {
                return Ok(None);
            }
            dropped_under_us += 1;
        }
    }

    /// The versions written after `after` and at or below `upto`, in revision order.
    pub(crate) fn entries(&self, after: Revision, upto: Revision) -> LogIter {
        LogIter {
            gens: self.generations(),
            next_gen: 0,
            current: None,
            after,
            upto,
        }
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let workers = std::mem::take(
            self.workers
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for w in workers {
            let _ = w.join();
        }
    }
}

/// Iterates the log's versions in revision order across generations (see [`Log::entries`]).
/// Copies of older versions kept in a newer generation are skipped.
pub(crate) struct LogIter {
    gens: Vec<Generation>,
    next_gen: usize,
    current: Option<sled::Iter>,
    after: Revision,
    upto: Revision,
}

impl Iterator for LogIter {
    type Item = Result<(Revision, sled::IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(iter) = &mut self.current {
                match iter.next() {
                    Some(Ok((k, v))) => {
                        return Some(rev_of_tagged(&k).map(|r| (r, v)));
                    }
                    Some(Err(sled::Error::CollectionNotFound(_))) | None => {
                        self.current = None;
                    }
                    Some(Err(e)) => return Some(Err(backend(e))),
                }
            }
            let gen = self.gens.get(self.next_gen)?;
            self.next_gen += 1;
            // Native revisions of a generation end where the next one begins.
            let end = self
                .gens
                .get(self.next_gen)
                .map_or(Revision::MAX, |g| g.first.saturating_sub(1))
                .min(self.upto);
            let start = gen.first.max(self.after.saturating_add(1));
            if start > end {
                continue;
            }
            self.current = Some(gen.tree.range(version_key(start)..=version_key(end)));
        }
    }
}

/// Appends the commit time of the group ending at `rev` to `batch`: the group's end marker
/// (written last, see [`super::ops`]).
pub(crate) fn log_commit_time(batch: &mut SizedBatch, rev: Revision, millis: u64) {
    let (k, v) = (time_key(rev), encode_u64(millis));
    batch.bytes += (k.len() + v.len()) as u64;
    batch.ops.insert_last(k, v);
}
