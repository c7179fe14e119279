//! Conversion of a data directory in the older single-database format (one sled database
//! directly in the data directory, history kept per key) to the two-database layout.
//!
//! It runs once, at start-up, before anything else opens the store: the latest values,
//! their wildcard index entries and the meta entries are copied into a new latest database
//! built under a temporary name, which is renamed into place (the commit point); then the
//! old files are deleted. The log starts empty, with the compaction point at the current
//! revision, so watchers from before the conversion get "too old" and relist. A crash
//! before the rename leaves the old store intact and the conversion is retried; a crash
//! after it only leaves old files, which the next start deletes.

use std::path::Path;

use super::db::backend;
use super::encoding::{
    decode_index_key, decode_u64, encode_u64, key_bytes, latest_key, meta_key, META_COMPACTED,
    META_REVISION, TAG_INDEX, TAG_LATEST,
};
use super::latest::{open_db, LATEST_DIR, LATEST_TREE};
use super::ops::Ops;
use super::options::SledStorageOptions;
use crate::{Error, Result};

/// Where a conversion builds the new latest database before renaming it.
const CONVERTING_DIR: &str = "latest.converting";

/// Entries buffered while copying.
const COPY_BATCH: usize = 4096;

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Backend(format!("cannot {what} {}: {e}", path.display()))
}

/// Whether `dir` holds a database in the older format.
fn has_old_files(dir: &Path) -> bool {
    dir.join("conf").exists() || dir.join("db").exists()
}

/// Converts `dir` when it is in the older format; finishes an interrupted conversion.
pub(crate) fn migrate_if_needed(dir: &Path, opts: &SledStorageOptions) -> Result<()> {
    let old = has_old_files(dir);
    if dir.join(LATEST_DIR).exists() {
        if old {
            remove_old_files(dir)?;
        }
        return Ok(());
    }
    if !old {
        return Ok(());
    }
    tracing::info!(dir = %dir.display(), "converting the data directory to the two-database layout");
    let tmp = dir.join(CONVERTING_DIR);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io("remove", &tmp, e))?;
    }
    copy_latest(dir, &tmp, opts)?;
    let target = dir.join(LATEST_DIR);
    std::fs::rename(&tmp, &target).map_err(|e| io("rename", &tmp, e))?;
    sync_dir(dir)?;
    remove_old_files(dir)
}

/// Copies the latest values, their index entries and the meta entries of the old database
/// in `dir` into a new latest database at `tmp`, flushed.
fn copy_latest(dir: &Path, tmp: &Path, opts: &SledStorageOptions) -> Result<()> {
    let old_db = sled::Config::new().path(dir).open().map_err(backend)?;
    let old = old_db.open_tree(LATEST_TREE).map_err(backend)?;
    let new_db = open_db(tmp, opts, opts.cache_capacity_bytes)?;
    let new = new_db.open_tree(LATEST_TREE).map_err(backend)?;
    // Plain writes, not batches (see `ops`): the rename is the commit point.
    let mut batch = Ops::default();
    for tag in [TAG_LATEST, TAG_INDEX] {
        for entry in old.scan_prefix([tag]) {
            let (k, v) = entry.map_err(backend)?;
            if tag == TAG_INDEX {
                // Keys with history only are gone with the history.
                let key = decode_index_key(&k[1..])?;
                if !old
                    .contains_key(latest_key(&key_bytes(&key)))
                    .map_err(backend)?
                {
                    continue;
                }
            }
            batch.insert(k, v);
            if batch.len() >= COPY_BATCH {
                std::mem::take(&mut batch)
                    .apply(&new, |_| Ok(()))
                    .map_err(backend)?;
            }
        }
    }
    let rev = match old.get(meta_key(META_REVISION)).map_err(backend)? {
        Some(v) => decode_u64(&v)?,
        None => 0,
    };
    batch.insert(meta_key(META_REVISION), encode_u64(rev));
    batch.insert(meta_key(META_COMPACTED), encode_u64(rev));
    batch.apply(&new, |_| Ok(())).map_err(backend)?;
    new.flush().map_err(backend)?;
    Ok(())
}

/// Deletes the older format's files (sled 0.34: `conf`, `db`, `snap.*`, `blobs/`).
fn remove_old_files(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| io("read", dir, e))? {
        let entry = entry.map_err(|e| io("read", dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if name == "blobs" {
            std::fs::remove_dir_all(&path).map_err(|e| io("remove", &path, e))?;
        } else if name == "conf" || name == "db" || name.starts_with("snap.") {
            std::fs::remove_file(&path).map_err(|e| io("remove", &path, e))?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("sync", dir, e))
}
