//! Candidate on-disk layouts for kplane's sled store under churn, measured on raw sled: which
//! layout keeps sled 0.34's data directory at a plateau within 3x the live data plus the
//! watch window's history (docs/performance-history.md, "Layouts that bound sled's space").
//!
//! Every layout gets the same stream: `N` revisions, `B` writes per batch and flush, the
//! key of revision `r` being `r * STRIDE % KEYS` (each key rewritten once per `KEYS`
//! revisions), values of `VAL` bytes behind kplane's 17-byte record header (so every write
//! really changes the stored bytes), kplane's key encoding, and per batch the revision meta
//! key (`M`) and a commit-time entry (`T rev`). History older than `WIN` revisions is
//! removed in batches once more than 1,024 revisions are due. `LAYOUT` chooses where things
//! go (`latest db` / `log db` when the layout uses two sled databases, in `DIR/latest` and
//! `DIR/log`):
//!
//! | `LAYOUT` | latest entry `L key` | history | per-key history index | event log |
//! |---|---|---|---|---|
//! | `kp` (kplane today) | the record | `H key ++ prev` = superseded record | (is the history) | `E rev` = key |
//! | `ptr` | the revision only | `H key ++ rev` = every version's record | (is the history) | `E rev` = key |
//! | `split` | as `kp`, `L`, `I`, `M` in the latest db | as `kp`, in the log db | | `E`, `T` in the log db |
//! | `log` | the record | `V rev` = key ++ record of every version | `X key ++ rev` (empty) | (is `V`) |
//! | `splitlog` | as `log`, `L`, `I`, `M` in the latest db | as `log`, `V`, `X`, `T` in the log db | | |
//! | `ptrlog` | the revision only | as `log` | as `log` | (is `V`) |
//!
//! `LFLUSH=0` (two-db layouts): flush only the log db per batch and leave the latest db to
//! sled's background flush (the log db is then the write-ahead log the latest db is
//! recovered from). `SEG`: sled's `segment_size` in bytes (power of two, default 512 KiB;
//! sled stores any log message above `SEG / 4` as a separate blob file). `MAXMB`: stop once
//! the directory's allocated size exceeds it (default 5,000). `READ=1`: read the latest
//! entry before each write, as kplane's compare-and-swap does. `GEN=g` (two-db layouts):
//! the log db keeps its entries in `g` generation trees per window, each holding `WIN / g`
//! revisions, and compaction drops a whole tree (`Db::drop_tree`) once all its revisions
//! are below the window instead of removing entries one by one (history retained: between
//! `WIN` and `WIN + WIN / g` revisions). `RATE`: at most that many revisions per second.
//!
//! Prints, every `STEP` revisions (default 100,000), sled's `size_on_disk` of each database,
//! the directory's allocated size (`du`) and the write rate; at the end sled's own space
//! amplification of each db (file size / logical size of its pages) and the timing of the read
//! paths of the layout (a GET of the latest value, a GET at a revision half a window back, a
//! LIST of all `KEYS` latest values, a watch replay of 1,000 events).
//!
//! ```sh
//! DIR=/tmp/sled-layouts LAYOUT=splitlog SEG=16777216 GEN=6 N=1800000 WIN=300000 cargo run --release -p kplane-storage --example sled_layouts
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]
// Raw-sled experiments of the batch-era layouts: batches on purpose.
#![allow(clippy::disallowed_methods)]

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Allocated bytes of every file under `dir` (what `du` counts).
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            total += du(&entry.path());
        } else {
            total += meta.blocks() * 512;
        }
    }
    total
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    Kp,
    Ptr,
    Split,
    Log,
    SplitLog,
    PtrLog,
}

impl Layout {
    fn parse(s: &str) -> Layout {
        match s {
            "kp" => Layout::Kp,
            "ptr" => Layout::Ptr,
            "split" => Layout::Split,
            "log" => Layout::Log,
            "splitlog" => Layout::SplitLog,
            "ptrlog" => Layout::PtrLog,
            other => panic!("unknown LAYOUT {other}"),
        }
    }
    fn two_dbs(self) -> bool {
        matches!(self, Layout::Split | Layout::SplitLog)
    }
    fn revision_log(self) -> bool {
        matches!(self, Layout::Log | Layout::SplitLog | Layout::PtrLog)
    }
    fn pointer(self) -> bool {
        matches!(self, Layout::Ptr | Layout::PtrLog)
    }
}

/// kplane's object key encoding: escaped, terminated cluster, resource, namespace, name.
fn object_key(tag: u8, k: u64) -> Vec<u8> {
    let mut v = vec![tag];
    for c in ["root", "/configmaps", "churn", &format!("cm-{k:05}")] {
        v.extend_from_slice(c.as_bytes());
        v.extend_from_slice(&[0, 1]);
    }
    v
}

fn with_rev(mut key: Vec<u8>, rev: u64) -> Vec<u8> {
    key.extend_from_slice(&rev.to_be_bytes());
    key
}

fn rev_key(tag: u8, rev: u64) -> Vec<u8> {
    with_rev(vec![tag], rev)
}

fn be64(raw: &[u8]) -> u64 {
    u64::from_be_bytes(raw[raw.len() - 8..].try_into().unwrap())
}

/// The databases of one layout: `latest` and `log` are the same tree for one-db layouts.
struct Store {
    latest_db: sled::Db,
    log_db: Option<sled::Db>,
    latest: sled::Tree,
    log: sled::Tree,
    /// `GEN`: revisions per generation tree of the log db (0: one tree `k`).
    gen_len: u64,
}

impl Store {
    fn open(dir: &Path, layout: Layout, segment: usize) -> Store {
        let open = |p: &Path| {
            sled::Config::new()
                .path(p)
                .cache_capacity(64 << 20)
                .flush_every_ms(Some(1000))
                .segment_size(segment)
                .open()
                .unwrap()
        };
        if layout.two_dbs() {
            let latest_db = open(&dir.join("latest"));
            let log_db = open(&dir.join("log"));
            let latest = latest_db.open_tree("k").unwrap();
            let log = log_db.open_tree("k").unwrap();
            Store {
                latest_db,
                log_db: Some(log_db),
                latest,
                log,
                gen_len: 0,
            }
        } else {
            let latest_db = open(dir);
            let latest = latest_db.open_tree("k").unwrap();
            Store {
                log: latest.clone(),
                latest_db,
                log_db: None,
                latest,
                gen_len: 0,
            }
        }
    }

    /// The log tree that holds revision `rev`.
    fn log_at(&self, rev: u64) -> sled::Tree {
        match (&self.log_db, self.gen_len) {
            (Some(db), g) if g > 0 => db.open_tree(format!("g{}", rev.max(1) / g)).unwrap(),
            _ => self.log.clone(),
        }
    }

    fn sizes(&self) -> (u64, u64) {
        let l = self.latest_db.size_on_disk().unwrap();
        let h = self
            .log_db
            .as_ref()
            .map_or(0, |d| d.size_on_disk().unwrap());
        (l, h)
    }
}

fn main() {
    let total = env("N", 1_200_000);
    let window = env("WIN", 300_000);
    let per_batch = env("B", 9);
    let keys = env("KEYS", 1000);
    let stride = env("STRIDE", 63);
    let val = env("VAL", 1700) as usize;
    let step = env("STEP", 100_000).max(1);
    let max_mb = env("MAXMB", 5_000);
    let read = env("READ", 0) == 1;
    let lflush = env("LFLUSH", 1) == 1;
    let segment = env("SEG", 512 * 1024) as usize;
    let layout = Layout::parse(&std::env::var("LAYOUT").unwrap_or_else(|_| "kp".into()));
    let dir = std::env::var("DIR").expect("DIR: a directory for the databases");
    let dir = Path::new(&dir);
    let mut s = Store::open(dir, layout, segment);
    if let Some(gen_len) = window.checked_div(env("GEN", 0)) {
        assert!(layout.two_dbs(), "GEN needs a two-db layout");
        s.gen_len = gen_len;
    }
    let mut dropped_gen = 0u64;
    // RATE: at most this many revisions per second (0: as fast as possible), to tell sled's
    // background segment cleaning (one flusher thread per db) falling behind apart from its
    // policy.
    let rate_cap = env("RATE", 0);
    println!("layout {layout:?}  window {window}  batch {per_batch}  value {val}  segment {segment}  latest flushed per batch: {lflush}");

    let payload = vec![b'x'; val];
    // kplane's record: tombstone byte, create revision, mod revision, value.
    let record = |create: u64, rev: u64| {
        let mut v = Vec::with_capacity(17 + val);
        v.push(0u8);
        v.extend_from_slice(&create.to_be_bytes());
        v.extend_from_slice(&rev.to_be_bytes());
        v.extend_from_slice(&payload);
        v
    };
    let mut last_rev = vec![0u64; keys as usize];
    let (mut rev, mut compacted) = (0u64, 0u64);
    let start = Instant::now();
    let mut step_start = (Instant::now(), 0u64);
    while rev < total {
        if rate_cap > 0 {
            let due = std::time::Duration::from_secs_f64(rev as f64 / rate_cap as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        // (key, value) pairs for the latest db and for the log db.
        let mut lb: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut hb: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..per_batch {
            rev += 1;
            let k = (rev * stride) % keys;
            let lk = object_key(b'L', k);
            if read {
                std::hint::black_box(s.latest.get(&lk).unwrap());
            }
            let prev = last_rev[k as usize];
            if prev == 0 {
                lb.push((object_key(b'I', k), vec![]));
            }
            let rec = record(1, rev);
            if layout.revision_log() {
                // One entry per version at the right end of the log, the key inside it.
                let mut entry = object_key(b'K', k);
                entry.extend_from_slice(&rec);
                hb.push((rev_key(b'V', rev), entry));
                hb.push((with_rev(object_key(b'X', k), rev), vec![]));
            } else {
                hb.push((rev_key(b'E', rev), object_key(b'K', k)));
                if layout.pointer() {
                    hb.push((with_rev(object_key(b'H', k), rev), rec.clone()));
                } else if prev > 0 {
                    hb.push((with_rev(object_key(b'H', k), prev), record(1, prev)));
                }
            }
            if layout.pointer() {
                lb.push((lk, rev.to_be_bytes().to_vec()));
            } else {
                lb.push((lk, rec));
            }
            last_rev[k as usize] = rev;
        }
        lb.push((b"Mrev".to_vec(), rev.to_be_bytes().to_vec()));
        hb.push((rev_key(b'T', rev), rev.to_be_bytes().to_vec()));
        if layout.two_dbs() {
            // The log first: it is the write-ahead log the latest db is recovered from.
            let log = s.log_at(rev + 1 - per_batch);
            log.apply_batch(to_batch(hb)).unwrap();
            log.flush().unwrap();
            s.latest.apply_batch(to_batch(lb)).unwrap();
            if lflush {
                s.latest.flush().unwrap();
            }
        } else {
            // One tree: one atomic batch.
            lb.extend(hb);
            s.latest.apply_batch(to_batch(lb)).unwrap();
            s.latest.flush().unwrap();
        }

        if s.gen_len > 0 {
            // Generations: drop a whole tree once every revision in it is below the window.
            while rev > window && rev - window >= (dropped_gen + 1) * s.gen_len + per_batch {
                let db = s.log_db.as_ref().unwrap();
                db.drop_tree(format!("g{dropped_gen}")).unwrap();
                dropped_gen += 1;
                compacted = dropped_gen * s.gen_len;
            }
        } else if rev > window && rev - window > compacted + 1024 {
            let upto = rev - window;
            let mut batch = sled::Batch::default();
            for r in compacted + 1..=upto {
                let k = (r * stride) % keys;
                if layout.revision_log() {
                    batch.remove(rev_key(b'V', r));
                    batch.remove(with_rev(object_key(b'X', k), r));
                } else {
                    batch.remove(with_rev(object_key(b'H', k), r));
                    batch.remove(rev_key(b'E', r));
                }
                batch.remove(rev_key(b'T', r));
            }
            s.log.apply_batch(batch).unwrap();
            compacted = upto;
        }

        if rev % step < per_batch || rev >= total {
            let (l, h) = s.sizes();
            let allocated = du(dir);
            let rate = (rev - step_start.1) as f64 / step_start.0.elapsed().as_secs_f64();
            step_start = (Instant::now(), rev);
            println!(
                "revision {rev:>9}  {:>5.0} s  {rate:>6.0} writes/s  size on disk {:>5} MiB (latest {:>5} + log {:>5})  du {:>5} MiB  bytes/write {:>5}",
                start.elapsed().as_secs_f64(),
                (l + h) >> 20,
                l >> 20,
                h >> 20,
                allocated >> 20,
                (l + h) / rev,
            );
            if allocated >> 20 > max_mb {
                println!("stopping: above MAXMB={max_mb}");
                break;
            }
        }
    }
    let amp = |db: &sled::Db| db.space_amplification().unwrap();
    println!(
        "sled space amplification (file / logical page sizes): latest db {:.2}, log db {:.2}",
        amp(&s.latest_db),
        s.log_db.as_ref().map_or(0.0, amp)
    );
    time_reads(&s, layout, keys, rev, window);
}

fn to_batch(entries: Vec<(Vec<u8>, Vec<u8>)>) -> sled::Batch {
    let mut b = sled::Batch::default();
    for (k, v) in entries {
        b.insert(k, v);
    }
    b
}

/// Times the read paths of `layout`: microseconds per GET of the latest value, per GET at
/// an older revision, per LIST of all keys and per replay of 1,000 logged events.
fn time_reads(s: &Store, layout: Layout, keys: u64, rev: u64, window: u64) {
    let reps = 20_000u64;
    let at = rev - (window / 2).min(rev / 2);
    // With generations, the tree holding `at` (a GET at a revision may have to look in
    // older generations too when the key was not written in this one).
    let log = s.log_at(at);
    let t = Instant::now();
    for i in 0..reps {
        let k = (i * 7919) % keys;
        let lk = object_key(b'L', k);
        let v = s.latest.get(&lk).unwrap().unwrap();
        let value = if layout.pointer() {
            // The latest entry holds a revision: a second lookup for the record.
            let r = be64(&v);
            if layout.revision_log() {
                log.get(rev_key(b'V', r)).unwrap().unwrap()
            } else {
                s.log
                    .get(with_rev(object_key(b'H', k), r))
                    .unwrap()
                    .unwrap()
            }
        } else {
            v
        };
        std::hint::black_box(value);
    }
    let get = t.elapsed().as_secs_f64() * 1e6 / reps as f64;

    // GET at a revision half a window back: the newest version at or below `at`.
    let t = Instant::now();
    for i in 0..reps {
        let k = (i * 7919) % keys;
        let value = if layout.revision_log() {
            // With generations, older generation trees when this one has no version.
            let mut probe = at;
            loop {
                let tree = s.log_at(probe);
                let idx = tree
                    .range(with_rev(object_key(b'X', k), 0)..=with_rev(object_key(b'X', k), at))
                    .next_back();
                if let Some(idx) = idx {
                    break tree
                        .get(rev_key(b'V', be64(&idx.unwrap().0)))
                        .unwrap()
                        .unwrap();
                }
                assert!(s.gen_len > 0 && probe >= s.gen_len, "no version at {at}");
                probe -= s.gen_len;
            }
        } else {
            // kp/split also read the latest entry first (it may be at or below `at`).
            std::hint::black_box(s.latest.get(object_key(b'L', k)).unwrap());
            let (_, v) = log
                .range(with_rev(object_key(b'H', k), 0)..=with_rev(object_key(b'H', k), at))
                .next_back()
                .unwrap()
                .unwrap();
            v
        };
        std::hint::black_box(value);
    }
    let get_at = t.elapsed().as_secs_f64() * 1e6 / reps as f64;

    let lists = 50;
    let t = Instant::now();
    for _ in 0..lists {
        let mut n = 0;
        for e in s.latest.scan_prefix(b"L") {
            let (lk, v) = e.unwrap();
            let value = if layout.pointer() {
                let r = be64(&v);
                if layout.revision_log() {
                    log.get(rev_key(b'V', r)).unwrap().unwrap()
                } else {
                    let mut hk = lk.to_vec();
                    hk[0] = b'H';
                    log.get(with_rev(hk, r)).unwrap().unwrap()
                }
            } else {
                v
            };
            std::hint::black_box(value);
            n += 1;
        }
        assert_eq!(n, keys);
    }
    let list = t.elapsed().as_secs_f64() * 1e6 / lists as f64;

    // Watch replay: 1,000 events from half a window back, with their values.
    let t = Instant::now();
    for _ in 0..lists {
        if layout.revision_log() {
            for e in log.range(rev_key(b'V', at)..).take(1000) {
                std::hint::black_box(e.unwrap());
            }
        } else {
            for e in log.range(rev_key(b'E', at)..).take(1000) {
                let (ek, key) = e.unwrap();
                let r = be64(&ek);
                let mut hk = key.to_vec();
                hk[0] = b'H';
                // Both key history by the revision that wrote the version (kp once it is
                // superseded; until then it is the latest entry).
                let v = match log.get(with_rev(hk, r)).unwrap() {
                    Some(v) => Some(v),
                    None => {
                        let mut lk = key.to_vec();
                        lk[0] = b'L';
                        s.latest.get(lk).unwrap()
                    }
                };
                std::hint::black_box(v);
            }
        }
    }
    let replay = t.elapsed().as_secs_f64() * 1e6 / lists as f64;
    println!(
        "reads: GET latest {get:.1} us, GET at revision {get_at:.1} us, LIST of {keys} {list:.0} us, replay of 1,000 events {replay:.0} us"
    );
}
