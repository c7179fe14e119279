//! The kplane archive format: one logical cluster (optionally with its descendants) as a
//! self-describing, checksummed stream of the objects exactly as stored. The byte-level
//! format, its version rule and its stability promise are in docs/archive-format.md.
//!
//! This crate owns the format and nothing else: it knows no HTTP, no storage and no
//! server. Both directions stream over `std::io` with bounded memory (one frame at a
//! time, frames capped at [`MAX_FRAME_LEN`]); async callers run it on `spawn_blocking`
//! or over in-memory buffers.
//!
//! - [`Writer`] frames a [`Header`] and [`Record`]s, zstd-compressed by default, and
//!   ends with a trailer holding the object count and the SHA-256 of the framed content.
//! - [`Reader`] autodetects compressed or plain input and checks everything while it
//!   reads: magic, format version, each frame's CRC-32, the record rules (clusters
//!   inside the header's cluster, the ordering rule, values that are JSON objects), the
//!   trailer (count, SHA-256) and that nothing follows it. [`Reader::next`] only returns
//!   `Ok(None)` once the whole archive has been proven intact, so a caller that must not
//!   act on a bad archive runs [`verify`] first (or buffers until `Ok(None)`).
//!
//! Layout: `format` (version, magic, header, record, summary), `frame` (framing,
//! CRC-32, limits), `rules` (the record rules shared by the writer and the reader),
//! `write`, `read`, `changes` (change streams), `error`.

mod changes;
mod error;
mod format;
mod frame;
mod read;
mod rules;
mod write;

#[cfg(test)]
mod tests;

pub use changes::{Change, ChangeReader, ChangeStream, CHANGES_CONTENT_TYPE, CHANGES_MAGIC};
pub use error::{Error, Result};
pub use format::{Header, Record, Summary, CONTENT_TYPE, CRD_RESOURCE, FORMAT_VERSION, MAGIC};
pub use frame::{crc32, MAX_FRAME_LEN, MAX_NAME_LEN};
pub use read::{verify, Reader};
pub use write::Writer;
