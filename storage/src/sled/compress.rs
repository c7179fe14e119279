//! Compression of the records kept in the log (history): a log version's record is stored
//! as `be32(length) ++ zstd frame` when that is shorter than the record itself, and its
//! event type byte says which form follows ([`super::encoding`]). The latest values are
//! never compressed (they are the hot read path, and small against the history under
//! churn).
//!
//! Compressing happens in the writer thread with one reused context; decompressing in the
//! reader's thread with a reused context per thread.

use std::cell::RefCell;

use crate::{Error, Result};

/// zstd's fastest regular level: the writer thread is the store's bottleneck for writes.
const LEVEL: i32 = 1;

/// Records shorter than this are stored as they are. Each frame builds its own entropy
/// tables, which for a record of a few hundred bytes costs more of the writer's time than
/// the record's own compression (9% of the writer's samples while Workspaces were created,
/// most of their records being 300-900 bytes) and saves a few hundred bytes of history
/// that the event window drops soon after; longer records (1 KiB values and up) keep
/// most of the gain (docs/performance-history.md, "Creation rate: session 13").
const MIN_LEN: usize = 1024;

/// Largest record accepted when decompressing (sled's own values are bounded far below).
const MAX_LEN: usize = 1 << 30;

/// The writer's compression context.
pub(crate) struct Compressor(Option<zstd::bulk::Compressor<'static>>);

impl Compressor {
    /// A context, or one that stores everything uncompressed when `enabled` is false or
    /// zstd cannot allocate one.
    pub(crate) fn new(enabled: bool) -> Compressor {
        Compressor(
            enabled
                .then(|| zstd::bulk::Compressor::new(LEVEL).ok())
                .flatten(),
        )
    }

    /// `encoded` (a record's encoding) compressed, or `None` when it is stored as it is.
    pub(crate) fn compress(&mut self, encoded: &[u8]) -> Option<Vec<u8>> {
        let ctx = self.0.as_mut()?;
        if encoded.len() < MIN_LEN {
            return None;
        }
        let len = u32::try_from(encoded.len()).ok()?;
        let frame = ctx.compress(encoded).ok()?;
        if frame.len() + 4 >= encoded.len() {
            return None;
        }
        let mut out = Vec::with_capacity(4 + frame.len());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&frame);
        Some(out)
    }
}

/// The uncompressed length recorded in front of a compressed record.
pub(crate) fn original_len(stored: &[u8]) -> Result<usize> {
    let head: [u8; 4] = stored
        .get(..4)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| Error::Corrupt("short compressed record".into()))?;
    let len = u32::from_be_bytes(head) as usize;
    if len > MAX_LEN {
        return Err(Error::Corrupt(format!("compressed record of {len} bytes")));
    }
    Ok(len)
}

thread_local! {
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// The record encoding a compressed record holds.
pub(crate) fn decompress(stored: &[u8]) -> Result<Vec<u8>> {
    let len = original_len(stored)?;
    let frame = &stored[4..];
    let corrupt = |e: std::io::Error| Error::Corrupt(format!("compressed record: {e}"));
    let out = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(zstd::bulk::Decompressor::new().map_err(corrupt)?);
        }
        match slot.as_mut() {
            Some(d) => d.decompress(frame, len).map_err(corrupt),
            None => Err(Error::Corrupt("no decompression context".into())),
        }
    })?;
    if out.len() != len {
        return Err(Error::Corrupt(format!(
            "compressed record holds {} bytes, expected {len}",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_when_not_to_compress() {
        let mut c = Compressor::new(true);
        let text: Vec<u8> =
            b"{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"xxxxxxxxxxxxxxxx\"}}".repeat(20);
        let stored = c.compress(&text).unwrap();
        assert!(stored.len() < text.len() / 4, "{}", stored.len());
        assert_eq!(original_len(&stored).unwrap(), text.len());
        assert_eq!(decompress(&stored).unwrap(), text);
        // Short records and incompressible ones are kept as they are.
        assert!(c.compress(&text[..MIN_LEN - 1]).is_none());
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let random: Vec<u8> = (0..2000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(c.compress(&random).is_none());
        // Disabled: nothing is compressed.
        assert!(Compressor::new(false).compress(&text).is_none());
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let mut c = Compressor::new(true);
        let text = b"abcdefgh".repeat(200);
        let stored = c.compress(&text).unwrap();
        assert!(decompress(&stored[..3]).is_err());
        assert!(decompress(&stored[..stored.len() - 2]).is_err());
        let mut wrong_len = stored.clone();
        wrong_len[3] ^= 1;
        assert!(decompress(&wrong_len).is_err());
        let mut huge = stored;
        huge[0] = 0xFF;
        assert!(decompress(&huge).is_err());
    }
}
