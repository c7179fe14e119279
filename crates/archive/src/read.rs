//! [`Reader`] and [`verify`]: read an archive, plain or zstd-compressed (told apart by
//! the first bytes), checking every frame as it arrives and the trailer at the end.
//! One frame is held at a time.

use std::io::{self, BufReader, Chain, Cursor, Read};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::format::{Header, Record, Summary, FORMAT_VERSION, MAGIC};
use crate::frame::{self, Frame, FrameError, HEADER, RECORD, TRAILER, TRAILER_LEN};
use crate::rules::Rules;

/// The first four bytes of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The input with the bytes read to detect its kind put back in front.
type Raw<R> = Chain<Cursor<Vec<u8>>, Tracked<R>>;

/// Reads one archive from `R`.
pub struct Reader<R: Read> {
    input: Input<R>,
    header: Header,
    hasher: Sha256,
    rules: Rules,
    /// The current frame's payload (reused).
    buf: Vec<u8>,
    objects: u64,
    state: State,
}

enum Input<R: Read> {
    Plain(BufReader<Raw<R>>),
    Zstd(Box<BufReader<zstd::stream::read::Decoder<'static, BufReader<Raw<R>>>>>),
}

/// Where the reader is.
#[derive(Debug)]
enum State {
    Records,
    /// The trailer was verified; holds what it proved.
    Done(Summary),
    /// An error was returned; the archive cannot be trusted further.
    Failed,
}

impl<R: Read> Reader<R> {
    /// Starts reading: detects compression, checks the magic, reads and checks the
    /// header. An archive of a newer format version fails with
    /// [`Error::UnsupportedVersion`].
    pub fn open(input: R) -> Result<Self> {
        let mut tracked = Tracked {
            inner: input,
            bytes: 0,
            failed: false,
        };
        let mut prefix = vec![0u8; MAGIC.len()];
        let got = read_up_to(&mut tracked, &mut prefix)?;
        prefix.truncate(got);
        let compressed = prefix.starts_with(&ZSTD_MAGIC);
        if !compressed && prefix != MAGIC {
            let partial = !prefix.is_empty()
                && (MAGIC.starts_with(&prefix) || ZSTD_MAGIC.starts_with(&prefix));
            return Err(if partial {
                Error::Truncated
            } else {
                Error::NotAnArchive
            });
        }
        let raw = Cursor::new(prefix).chain(tracked);
        let input = if compressed {
            let decoder = zstd::stream::read::Decoder::new(raw)?.single_frame();
            Input::Zstd(Box::new(BufReader::new(decoder)))
        } else {
            Input::Plain(BufReader::new(raw))
        };
        let mut reader = Reader {
            input,
            header: placeholder_header(),
            hasher: Sha256::new(),
            rules: Rules::new("", false),
            buf: Vec::new(),
            objects: 0,
            state: State::Records,
        };
        reader.header = reader.read_header()?;
        reader.rules = Rules::new(&reader.header.cluster, reader.header.recursive);
        Ok(reader)
    }

    fn read_header(&mut self) -> Result<Header> {
        let mut magic = [0u8; MAGIC.len()];
        match read_up_to(self.source(), &mut magic) {
            Ok(n) if n == MAGIC.len() && magic == MAGIC => {}
            Ok(n) if n < MAGIC.len() && MAGIC.starts_with(&magic[..n]) => {
                return Err(Error::Truncated)
            }
            Ok(_) => return Err(Error::NotAnArchive),
            Err(e) => return Err(self.io_error(e, "the start of the archive")),
        }
        self.hasher.update(MAGIC);
        let frame = self.read_frame("header")?;
        if frame.tag != HEADER {
            return Err(Error::Corrupt(
                "header: the first frame is not a header".into(),
            ));
        }
        self.hash(&frame);
        /// The part of the header every format version keeps.
        #[derive(Deserialize)]
        struct Version {
            #[serde(rename = "formatVersion")]
            format_version: u32,
        }
        let version: Version = serde_json::from_slice(&self.buf)
            .map_err(|e| Error::Corrupt(format!("header: no format version ({e})")))?;
        if version.format_version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version.format_version,
                supported: FORMAT_VERSION,
            });
        }
        if version.format_version == 0 {
            return Err(Error::Corrupt("header: format version 0".into()));
        }
        let header: Header = serde_json::from_slice(&self.buf)
            .map_err(|e| Error::Corrupt(format!("header: {e}")))?;
        if header.cluster.is_empty() {
            return Err(Error::Corrupt("header: the cluster is empty".into()));
        }
        Ok(header)
    }

    /// The archive's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record, or `None` once the trailer has been read and verified (object
    /// count, SHA-256, nothing after it). Any error is final: later calls fail too.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Record>> {
        match self.state {
            State::Records => {}
            State::Done(_) => return Ok(None),
            State::Failed => {
                return Err(Error::Corrupt(
                    "reading continued after the archive was found bad".into(),
                ))
            }
        }
        let step = self.step();
        if step.is_err() {
            self.state = State::Failed;
        }
        step
    }

    fn step(&mut self) -> Result<Option<Record>> {
        let n = self.objects + 1;
        let place = format!("record {n}");
        let frame = self.read_frame(&place)?;
        match frame.tag {
            RECORD => {
                self.hash(&frame);
                let rec = frame::decode_record(&self.buf)
                    .and_then(|rec| self.rules.check(&rec).map(|()| rec))
                    .map_err(|e| Error::Corrupt(format!("{place}: {e}")))?;
                self.objects = n;
                Ok(Some(rec))
            }
            TRAILER => {
                let summary = self.finish_trailer()?;
                self.state = State::Done(summary);
                Ok(None)
            }
            _ => Err(Error::Corrupt(format!("{place}: a second header"))),
        }
    }

    /// Checks the trailer in `buf` and that nothing follows it.
    fn finish_trailer(&mut self) -> Result<Summary> {
        if self.buf.len() != TRAILER_LEN as usize {
            return Err(Error::Corrupt(format!(
                "trailer: {} bytes long instead of {TRAILER_LEN}",
                self.buf.len()
            )));
        }
        let (count, sha) = self.buf.split_at(8);
        let mut count_bytes = [0u8; 8];
        count_bytes.copy_from_slice(count);
        let count = u64::from_be_bytes(count_bytes);
        if count != self.objects {
            return Err(Error::CountMismatch {
                place: "trailer",
                expected: count,
                actual: self.objects,
            });
        }
        let actual = hex::encode(self.hasher.clone().finalize());
        let expected = hex::encode(sha);
        if actual != expected {
            return Err(Error::ChecksumMismatch { expected, actual });
        }
        if self.header.object_count != self.objects {
            return Err(Error::CountMismatch {
                place: "header",
                expected: self.header.object_count,
                actual: self.objects,
            });
        }
        self.check_end()?;
        Ok(Summary {
            objects: self.objects,
            bytes: self.tracked().bytes,
            sha256: actual,
        })
    }

    /// Fails unless the input ends right after the trailer (and, compressed, right
    /// after the zstd frame).
    fn check_end(&mut self) -> Result<()> {
        const TRAILING: &str = "trailer: data follows the archive's trailer";
        let mut byte = [0u8; 1];
        let n = read_up_to(self.source(), &mut byte).map_err(|e| self.io_error(e, "trailer"))?;
        if n != 0 {
            return Err(Error::Corrupt(TRAILING.into()));
        }
        if let Input::Zstd(decoder) = &mut self.input {
            let rest = decoder.get_mut().get_mut();
            let n = read_up_to(rest, &mut byte)?;
            if n != 0 {
                return Err(Error::Corrupt(format!(
                    "{TRAILING} (after the compressed stream)"
                )));
            }
        }
        Ok(())
    }

    /// Reads one frame into `buf`; errors name `place` (or the trailer).
    fn read_frame(&mut self, place: &str) -> Result<Frame> {
        let mut buf = std::mem::take(&mut self.buf);
        let got = frame::read_frame(self.source(), &mut buf);
        self.buf = buf;
        got.map_err(|e| match e {
            FrameError::EndOfInput => Error::Truncated,
            FrameError::Io(e) => self.io_error(e, place),
            FrameError::Damaged(Some(TRAILER), m) => Error::Corrupt(format!("trailer: {m}")),
            FrameError::Damaged(_, m) => Error::Corrupt(format!("{place}: {m}")),
        })
    }

    fn hash(&mut self, frame: &Frame) {
        self.hasher.update(frame.head);
        self.hasher.update(&self.buf);
        self.hasher.update(frame.crc);
    }

    /// The decoded byte stream.
    fn source(&mut self) -> &mut dyn Read {
        match &mut self.input {
            Input::Plain(r) => r,
            Input::Zstd(r) => r.as_mut(),
        }
    }

    fn tracked(&self) -> &Tracked<R> {
        match &self.input {
            Input::Plain(r) => r.get_ref().get_ref().1,
            Input::Zstd(r) => r.get_ref().get_ref().get_ref().get_ref().1,
        }
    }

    /// An I/O error while reading `place`: the end of the input is truncation; a
    /// failure of the decompressor (not of the input) is damage.
    fn io_error(&self, e: io::Error, place: &str) -> Error {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated
        } else if matches!(self.input, Input::Zstd(_)) && !self.tracked().failed {
            Error::Corrupt(format!("{place}: the compressed data is damaged ({e})"))
        } else {
            Error::Io(e)
        }
    }

    /// Bytes read from the input so far (compressed bytes when compressed; read ahead
    /// in blocks, so a little more than the records returned so far).
    pub fn bytes_read(&self) -> u64 {
        self.tracked().bytes
    }

    /// Records returned so far.
    pub fn objects_read(&self) -> u64 {
        self.objects
    }

    /// What the trailer proved, once [`Reader::next`] has returned `None`.
    pub fn summary(&self) -> Option<&Summary> {
        match &self.state {
            State::Done(s) => Some(s),
            _ => None,
        }
    }
}

impl<R: Read> std::fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("header", &self.header)
            .field("objects", &self.objects)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// Reads the whole archive, checking everything, and returns its header and summary.
/// Memory stays bounded (one frame at a time) whatever the archive's size.
pub fn verify<R: Read>(input: R) -> Result<(Header, Summary)> {
    let mut reader = Reader::open(input)?;
    while reader.next()?.is_some() {}
    let summary = reader.summary().cloned().ok_or(Error::Truncated)?;
    Ok((reader.header, summary))
}

/// Fills as much of `buf` as the input has; returns how much.
fn read_up_to(input: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn placeholder_header() -> Header {
    Header {
        format_version: FORMAT_VERSION,
        kplane_version: String::new(),
        source_server: String::new(),
        cluster: String::new(),
        recursive: false,
        revision: 0,
        object_count: 0,
        created: String::new(),
        decrypted: Vec::new(),
    }
}

/// The caller's input, counting bytes and remembering whether it failed (to tell a
/// failing input from damaged compressed data).
struct Tracked<R> {
    inner: R,
    bytes: u64,
    failed: bool,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.bytes += n as u64;
                Ok(n)
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.failed = true;
                }
                Err(e)
            }
        }
    }
}
