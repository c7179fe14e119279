//! The one error type of the archive crate. Every message is one line that says what is
//! wrong and, for damage, where (`record N`, `header`, `trailer`).

/// `Result` with the archive [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an archive could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying reader or writer failed.
    #[error("archive I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The input does not start like a kplane archive (plain or zstd-compressed).
    #[error("not a kplane archive (it does not start with the archive magic)")]
    NotAnArchive,
    /// The archive was written by a newer kplane in a format this one cannot read.
    #[error("archive format version {found} is newer than this kplane supports ({supported}); upgrade kplane")]
    UnsupportedVersion { found: u32, supported: u32 },
    /// The content is damaged or breaks a rule of the format; the message says where.
    #[error("corrupt archive: {0}")]
    Corrupt(String),
    /// The input ended before the trailer was complete.
    #[error("truncated archive: the input ends before the archive's trailer")]
    Truncated,
    /// The trailer's SHA-256 does not match the content.
    #[error("archive checksum mismatch: the trailer says SHA-256 {expected}, the content hashes to {actual}")]
    ChecksumMismatch { expected: String, actual: String },
    /// The number of records does not match the header or the trailer.
    #[error("archive object count mismatch: the {place} says {expected} objects, the archive holds {actual}")]
    CountMismatch {
        /// `"header"` or `"trailer"`.
        place: &'static str,
        expected: u64,
        actual: u64,
    },
    /// The writer's caller passed something the format cannot hold (nothing was written
    /// for it); the message says what.
    #[error("invalid archive record: {0}")]
    Invalid(String),
}
