//! Change streams: the puts and deletes of one logical cluster after a revision, in
//! revision order, as the online move's catch-up sends them from the source server to the
//! target (`GET /clusters/<path>/kplane/v1/changes?since=R`, docs/architecture.md
//! "Moving a logical cluster").
//!
//! A stream is [`CHANGES_MAGIC`], then one `C` frame per change, then one `E` frame, all
//! in the archive's framing (`frame.rs`: tag, length, payload, CRC-32), never compressed.
//! A `C` frame's payload is the revision (u64 BE), a flags byte (bit 0: delete) and a
//! record payload as in an archive (the value of a delete is the object's last state). The
//! `E` frame's payload is the revision the stream is complete through (u64 BE): the
//! receiver has every change of the cluster up to it. A stream without its `E` frame is
//! truncated and must not be taken as complete.

use std::io::Read;

use crate::error::{Error, Result};
use crate::format::Record;
use crate::frame::{self, FrameError, CHANGE, END};

/// The HTTP content type of a change stream.
pub const CHANGES_CONTENT_TYPE: &str = "application/vnd.kplane.changes";

/// The eight bytes a change stream starts with.
pub const CHANGES_MAGIC: [u8; 8] = *b"\x89KPLCHG\n";

/// One committed change of a stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The store revision the change was committed at.
    pub revision: u64,
    /// A delete (the record holds the object's last state) rather than a put.
    pub delete: bool,
    pub record: Record,
}

/// Encodes a change stream into byte buffers (the caller sends them as they fill).
#[derive(Debug, Default)]
pub struct ChangeStream {
    started: bool,
    last: u64,
}

impl ChangeStream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `change` (the magic first, on the first call). Revisions must increase.
    pub fn push(&mut self, out: &mut Vec<u8>, change: &Change) -> Result<()> {
        self.start(out);
        if change.revision <= self.last {
            return Err(Error::Invalid(format!(
                "change at revision {} after one at {}",
                change.revision, self.last
            )));
        }
        let mut payload = Vec::with_capacity(change.record.value.len() + 64);
        payload.extend_from_slice(&change.revision.to_be_bytes());
        payload.push(u8::from(change.delete));
        frame::push_record_payload(&mut payload, &change.record)?;
        frame::push_frame(out, CHANGE, &payload)?;
        self.last = change.revision;
        Ok(())
    }

    /// Appends the end frame: the stream is complete through `through`.
    pub fn end(mut self, out: &mut Vec<u8>, through: u64) -> Result<()> {
        self.start(out);
        frame::push_frame(out, END, &through.to_be_bytes())
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            out.extend_from_slice(&CHANGES_MAGIC);
            self.started = true;
        }
    }
}

/// Reads a change stream, checking each frame and the order of revisions.
#[derive(Debug)]
pub struct ChangeReader<R: Read> {
    input: R,
    payload: Vec<u8>,
    last: u64,
    through: Option<u64>,
    changes: u64,
}

impl<R: Read> ChangeReader<R> {
    /// Checks the magic.
    pub fn open(mut input: R) -> Result<Self> {
        let mut magic = [0u8; CHANGES_MAGIC.len()];
        input.read_exact(&mut magic).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::Truncated,
            _ => Error::Io(e),
        })?;
        if magic != CHANGES_MAGIC {
            return Err(Error::Corrupt(
                "not a kplane change stream (it does not start with the change stream magic)"
                    .into(),
            ));
        }
        Ok(ChangeReader {
            input,
            payload: Vec::new(),
            last: 0,
            through: None,
            changes: 0,
        })
    }

    /// The next change; `None` after the end frame (then [`ChangeReader::through`] is
    /// set). A stream that ends without it is [`Error::Truncated`].
    // Fallible, so not an `Iterator` (as `Reader::next`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Change>> {
        if self.through.is_some() {
            return Ok(None);
        }
        let place = format!("change {}", self.changes + 1);
        let f = match frame::read_frame(&mut self.input, &mut self.payload) {
            Ok(f) => f,
            Err(FrameError::EndOfInput) => return Err(Error::Truncated),
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(Error::Truncated)
            }
            Err(FrameError::Io(e)) => return Err(Error::Io(e)),
            Err(FrameError::Damaged(_, why)) => {
                return Err(Error::Corrupt(format!("{place}: {why}")))
            }
        };
        match f.tag {
            END => {
                let through = <[u8; 8]>::try_from(self.payload.as_slice())
                    .map(u64::from_be_bytes)
                    .map_err(|_| Error::Corrupt("end frame: not 8 bytes".into()))?;
                let mut rest = [0u8; 1];
                if self.input.read(&mut rest)? != 0 {
                    return Err(Error::Corrupt("data after the end frame".into()));
                }
                self.through = Some(through);
                Ok(None)
            }
            CHANGE => {
                let (rev, rest) = self
                    .payload
                    .split_first_chunk::<8>()
                    .ok_or_else(|| Error::Corrupt(format!("{place}: too short")))?;
                let revision = u64::from_be_bytes(*rev);
                let (flags, rest) = rest
                    .split_first()
                    .ok_or_else(|| Error::Corrupt(format!("{place}: too short")))?;
                if revision <= self.last {
                    return Err(Error::Corrupt(format!(
                        "{place}: revision {revision} after {}",
                        self.last
                    )));
                }
                let record = frame::decode_record(rest)
                    .map_err(|why| Error::Corrupt(format!("{place}: {why}")))?;
                self.last = revision;
                self.changes += 1;
                Ok(Some(Change {
                    revision,
                    delete: flags & 1 != 0,
                    record,
                }))
            }
            t => Err(Error::Corrupt(format!(
                "{place}: unexpected frame type 0x{t:02x}"
            ))),
        }
    }

    /// The revision the stream is complete through, once the end frame was read.
    pub fn through(&self) -> Option<u64> {
        self.through
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(rev: u64, delete: bool, name: &str) -> Change {
        Change {
            revision: rev,
            delete,
            record: Record {
                cluster: "root:a".into(),
                resource: "/configmaps".into(),
                namespace: "default".into(),
                name: name.into(),
                value: format!("{{\"n\":\"{name}\"}}").into_bytes(),
            },
        }
    }

    fn encode(changes: &[Change], through: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut s = ChangeStream::new();
        for c in changes {
            s.push(&mut out, c).unwrap();
        }
        s.end(&mut out, through).unwrap();
        out
    }

    fn read_all(bytes: &[u8]) -> Result<(Vec<Change>, u64)> {
        let mut r = ChangeReader::open(bytes)?;
        let mut v = Vec::new();
        while let Some(c) = r.next()? {
            v.push(c);
        }
        Ok((v, r.through().unwrap()))
    }

    #[test]
    fn a_stream_round_trips_and_an_empty_one_is_just_its_end() {
        let changes = vec![
            change(3, false, "a"),
            change(5, true, "a"),
            change(9, false, "b"),
        ];
        let (back, through) = read_all(&encode(&changes, 12)).unwrap();
        assert_eq!(back, changes);
        assert_eq!(through, 12);
        let (back, through) = read_all(&encode(&[], 7)).unwrap();
        assert!(back.is_empty());
        assert_eq!(through, 7);
    }

    #[test]
    fn truncation_damage_and_disorder_are_refused() {
        let bytes = encode(&[change(3, false, "a"), change(4, false, "b")], 4);
        for cut in [0, 4, CHANGES_MAGIC.len(), bytes.len() - 1, bytes.len() - 13] {
            assert!(read_all(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[CHANGES_MAGIC.len() + 20] ^= 1;
        assert!(matches!(read_all(&flipped), Err(Error::Corrupt(_))));
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(matches!(read_all(&extra), Err(Error::Corrupt(_))));
        let mut s = ChangeStream::new();
        let mut out = Vec::new();
        s.push(&mut out, &change(5, false, "a")).unwrap();
        assert!(s.push(&mut out, &change(5, false, "b")).is_err());
    }
}
