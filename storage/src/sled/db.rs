//! sled databases as this backend uses them: the segment sizes it gives them (the largest
//! sled 0.34 is safe with, the log's, a new latest database's), the segment size an existing
//! database has, and sled's errors as this crate's ([`backend`]).

use std::path::Path;

use crate::{Error, Result};

/// A sled error as this crate's [`Error::Backend`].
pub(crate) fn backend(e: sled::Error) -> Error {
    Error::Backend(e.to_string())
}

/// The largest sled segment size this backend uses: 8 MiB, half of what sled 0.34 accepts.
/// sled 0.34.7 keeps an IO buffer's fill offset in 24 bits of the buffer's header, and the
/// first buffer of a segment is as large as the segment. With 16 MiB (2^24-byte) segments,
/// a reservation that ends exactly at the end of such a buffer carries the offset into the
/// header's writer count: the buffer then waits for a writer that does not exist and is
/// never written, so every read of a page in it and every flush after it waits forever
/// (the stalls of sessions 12 and 13, spacejam/sled#1412), and later reservations start
/// again at offset 0 over data already given out (the rebuild's corrupted copy of session
/// 12). With 8 MiB segments the offset never passes 2^23 (docs/performance-history.md,
/// "The stall's cause").
pub(crate) const MAX_SEGMENT_SIZE: usize = 8 * 1024 * 1024;

/// sled's segment size for the log's databases: [`MAX_SEGMENT_SIZE`]. Large segments are
/// what keeps the log's files near its live size (docs/performance.md). Databases created
/// with larger segments by an older kplane are replaced as they are written: the log starts
/// a new generation at start-up, the latest database is rebuilt ([`super::latest`]).
pub(crate) const SEGMENT_SIZE: usize = MAX_SEGMENT_SIZE;

/// sled's segment size for a new latest database: [`MAX_SEGMENT_SIZE`], as the log's.
/// 2 MiB segments were measured under the churn of a whole server and held the latest
/// values in 4x the space (docs/performance-history.md, "Generations as databases of their own").
pub const LATEST_SEGMENT_SIZE: usize = MAX_SEGMENT_SIZE;

// sled 0.34.7's IO buffer header has 24 bits for the offset: a segment-sized buffer must
// end below 2^24.
const _: () = assert!(MAX_SEGMENT_SIZE < 1 << 24 && LATEST_SEGMENT_SIZE <= MAX_SEGMENT_SIZE);

/// Whether the sled database at `dir` has segments sled 0.34 can stop on
/// ([`MAX_SEGMENT_SIZE`]); a database not created yet has none.
pub(crate) fn has_unsafe_segments(dir: &Path) -> Result<bool> {
    Ok(existing_segment_size(dir, 0)? > MAX_SEGMENT_SIZE)
}

/// The segment size of the sled database at `path`: the one recorded in its `conf` when it
/// exists (databases of older kplanes have 16 MiB ones), else `new`.
pub(crate) fn existing_segment_size(path: &Path, new: usize) -> Result<usize> {
    let conf = path.join("conf");
    let text = match std::fs::read(&conf) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(new),
        Err(e) => {
            return Err(Error::Backend(format!(
                "cannot read {}: {e}",
                conf.display()
            )))
        }
    };
    text.lines()
        .find_map(|l| l.strip_prefix("segment_size: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::Backend(format!("no segment_size in {}", conf.display())))
}
