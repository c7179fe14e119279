//! Framing: every piece of an archive after the magic is one frame,
//! `tag (1 byte) | payload length (u32 BE) | payload | CRC-32 (u32 BE)`, the CRC-32
//! (IEEE) covering tag, length and payload. Tags: `H` header (JSON), `R` record, `T`
//! trailer. A record's payload is four length-prefixed strings (u16 BE length, UTF-8)
//! `cluster, resource, namespace, name`, then the value (the rest of the payload).
//! The trailer's payload is the object count (u64 BE) and the 32-byte SHA-256.

use std::io::{self, Read};

use crate::error::{Error, Result};
use crate::format::Record;

/// The header frame's tag.
pub(crate) const HEADER: u8 = b'H';
/// A record frame's tag.
pub(crate) const RECORD: u8 = b'R';
/// The trailer frame's tag.
pub(crate) const TRAILER: u8 = b'T';
/// A change frame's tag (change streams, `changes.rs`).
pub(crate) const CHANGE: u8 = b'C';
/// The end frame's tag (change streams, `changes.rs`).
pub(crate) const END: u8 = b'E';

/// The largest payload of one frame (64 MiB): far above any stored object (request
/// bodies are capped at 3 MiB), and the bound on what a reader holds in memory at once.
pub const MAX_FRAME_LEN: u32 = 64 << 20;

/// The longest cluster, resource, namespace or name a record can hold (u16 length).
pub const MAX_NAME_LEN: usize = u16::MAX as usize;

/// The trailer's payload length: count (8) + SHA-256 (32).
pub(crate) const TRAILER_LEN: u32 = 40;

/// Bytes of a frame's tag and length.
pub(crate) const HEAD_LEN: usize = 5;

/// Appends one frame holding `payload` to `out`.
pub(crate) fn push_frame(out: &mut Vec<u8>, tag: u8, payload: &[u8]) -> Result<()> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|l| *l <= MAX_FRAME_LEN)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "a frame of {} bytes is larger than the format's limit of {MAX_FRAME_LEN} bytes",
                payload.len()
            ))
        })?;
    let start = out.len();
    out.push(tag);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// Appends `rec`'s record payload (not yet framed) to `out`.
pub(crate) fn push_record_payload(out: &mut Vec<u8>, rec: &Record) -> Result<()> {
    for (what, s) in [
        ("cluster", &rec.cluster),
        ("resource", &rec.resource),
        ("namespace", &rec.namespace),
        ("name", &rec.name),
    ] {
        let len = u16::try_from(s.len()).map_err(|_| {
            Error::Invalid(format!(
                "the {what} of {}/{} is {} bytes long, more than {MAX_NAME_LEN}",
                rec.resource,
                rec.name,
                s.len()
            ))
        })?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    out.extend_from_slice(&rec.value);
    Ok(())
}

/// Decodes a record payload; the error says what is wrong (the caller adds where).
pub(crate) fn decode_record(mut payload: &[u8]) -> Result<Record, String> {
    let mut strings = [String::new(), String::new(), String::new(), String::new()];
    for (s, what) in strings
        .iter_mut()
        .zip(["cluster", "resource", "namespace", "name"])
    {
        let (len, rest) = payload
            .split_first_chunk::<2>()
            .ok_or_else(|| format!("the payload ends inside its {what}"))?;
        let len = usize::from(u16::from_be_bytes(*len));
        if rest.len() < len {
            return Err(format!("the payload ends inside its {what}"));
        }
        let (bytes, rest) = rest.split_at(len);
        *s = String::from_utf8(bytes.to_vec()).map_err(|_| format!("its {what} is not UTF-8"))?;
        payload = rest;
    }
    let [cluster, resource, namespace, name] = strings;
    Ok(Record {
        cluster,
        resource,
        namespace,
        name,
        value: payload.to_vec(),
    })
}

/// The frame read by [`read_frame`]: its tag, the raw bytes around the payload (for
/// the content hash) and the payload in the caller's buffer.
pub(crate) struct Frame {
    pub(crate) tag: u8,
    pub(crate) head: [u8; HEAD_LEN],
    pub(crate) crc: [u8; 4],
}

/// Why [`read_frame`] failed.
pub(crate) enum FrameError {
    /// The input ended cleanly before the frame's first byte.
    EndOfInput,
    /// The input failed (truncation included: `UnexpectedEof`).
    Io(io::Error),
    /// The frame is damaged: its tag when it was a known one, and how.
    Damaged(Option<u8>, String),
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Reads one frame into `payload` (cleared first), checking its length limit and CRC.
pub(crate) fn read_frame(
    input: &mut (impl Read + ?Sized),
    payload: &mut Vec<u8>,
) -> Result<Frame, FrameError> {
    let mut head = [0u8; HEAD_LEN];
    let first = loop {
        match input.read(&mut head[..1]) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    };
    if first == 0 {
        return Err(FrameError::EndOfInput);
    }
    input.read_exact(&mut head[1..])?;
    let tag = head[0];
    if ![HEADER, RECORD, TRAILER, CHANGE, END].contains(&tag) {
        return Err(FrameError::Damaged(
            None,
            format!("unknown frame type 0x{tag:02x}"),
        ));
    }
    let [_, l0, l1, l2, l3] = head;
    let len = u32::from_be_bytes([l0, l1, l2, l3]);
    if len > MAX_FRAME_LEN {
        return Err(FrameError::Damaged(
            Some(tag),
            format!("frame length {len} is larger than the format's limit of {MAX_FRAME_LEN}"),
        ));
    }
    payload.clear();
    // Grows with the data actually read: a damaged length cannot allocate ahead of it.
    let got = Read::take(&mut *input, u64::from(len)).read_to_end(payload)?;
    if got < len as usize {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
    }
    let mut crc = [0u8; 4];
    input.read_exact(&mut crc)?;
    let mut state = crc32_update(!0, &head);
    state = crc32_update(state, payload);
    if !state != u32::from_be_bytes(crc) {
        return Err(FrameError::Damaged(
            Some(tag),
            "frame checksum (CRC-32) mismatch".into(),
        ));
    }
    Ok(Frame { tag, head, crc })
}

/// The CRC-32 (IEEE 802.3, reflected, as zlib and PNG use) of `data`: what ends every
/// frame (over its tag, length and payload).
pub fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

fn crc32_update(mut state: u32, data: &[u8]) -> u32 {
    for &b in data {
        state = CRC_TABLE[((state ^ u32::from(b)) & 0xff) as usize] ^ (state >> 8);
    }
    state
}

const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn records_round_trip_through_their_payload() {
        let rec = Record {
            cluster: "root:a".into(),
            resource: "/configmaps".into(),
            namespace: "default".into(),
            name: "x".into(),
            value: br#"{"a":1}"#.to_vec(),
        };
        let mut out = Vec::new();
        push_record_payload(&mut out, &rec).unwrap();
        assert_eq!(decode_record(&out).unwrap(), rec);
        assert!(decode_record(&out[..5]).is_err());
    }

    #[test]
    fn a_frame_reads_back_and_a_flipped_bit_is_caught() {
        let mut out = Vec::new();
        push_frame(&mut out, RECORD, b"payload").unwrap();
        let mut buf = Vec::new();
        let frame = read_frame(&mut out.as_slice(), &mut buf).ok().unwrap();
        assert_eq!((frame.tag, buf.as_slice()), (RECORD, &b"payload"[..]));
        out[7] ^= 1;
        assert!(matches!(
            read_frame(&mut out.as_slice(), &mut buf),
            Err(FrameError::Damaged(_, m)) if m.contains("CRC-32")
        ));
    }

    #[test]
    fn a_huge_length_is_refused_before_reading() {
        let mut out = vec![RECORD];
        out.extend_from_slice(&(MAX_FRAME_LEN + 1).to_be_bytes());
        let mut buf = Vec::new();
        assert!(matches!(
            read_frame(&mut out.as_slice(), &mut buf),
            Err(FrameError::Damaged(_, m)) if m.contains("limit")
        ));
    }
}
