//! [`Writer`]: frames a header and records, hashes the framed content, compresses it
//! (zstd, one frame) unless asked not to, and ends with the trailer. Each record is
//! framed in one reused buffer and handed to the output in one `write`; nothing else is
//! held, so memory is bounded by the largest record (plus zstd's window).

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::format::{Header, Record, Summary, FORMAT_VERSION, MAGIC};
use crate::frame::{self, HEADER, RECORD, TRAILER};
use crate::rules::Rules;

/// The zstd level: zstd's default, a good speed/size balance for JSON.
const ZSTD_LEVEL: i32 = 3;

/// Writes one archive to `W`.
pub struct Writer<W: Write> {
    out: Output<W>,
    hasher: Sha256,
    rules: Rules,
    /// The frame being built (reused).
    buf: Vec<u8>,
    /// The record payload being built (reused).
    payload: Vec<u8>,
    expected: u64,
    objects: u64,
}

/// Where framed bytes go: straight to `W`, or through zstd.
enum Output<W: Write> {
    Plain(Counting<W>),
    Zstd(zstd::stream::write::Encoder<'static, Counting<W>>),
}

impl<W: Write> Writer<W> {
    /// Starts an archive: writes the magic and `header` (compressed if `compress`).
    /// The header's `object_count` must be the number of records that will follow
    /// ([`Writer::finish`] checks it); its `format_version` must be [`FORMAT_VERSION`].
    pub fn new(out: W, header: &Header, compress: bool) -> Result<Self> {
        if header.format_version != FORMAT_VERSION {
            return Err(Error::Invalid(format!(
                "this kplane writes archive format version {FORMAT_VERSION}, not {}",
                header.format_version
            )));
        }
        let out = Counting {
            inner: out,
            bytes: 0,
        };
        let out = if compress {
            Output::Zstd(zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?)
        } else {
            Output::Plain(out)
        };
        let json = serde_json::to_vec(header)
            .map_err(|e| Error::Invalid(format!("the header does not serialize: {e}")))?;
        let mut buf = MAGIC.to_vec();
        frame::push_frame(&mut buf, HEADER, &json)?;
        let mut writer = Writer {
            out,
            hasher: Sha256::new(),
            rules: Rules::new(&header.cluster, header.recursive),
            buf,
            payload: Vec::new(),
            expected: header.object_count,
            objects: 0,
        };
        writer.emit()?;
        Ok(writer)
    }

    /// Appends one record. A record that breaks the format's rules (cluster outside the
    /// header's, out of order, value not a JSON object, too large) is refused with
    /// [`Error::Invalid`] and nothing is written for it.
    pub fn write(&mut self, rec: &Record) -> Result<()> {
        self.rules.check(rec).map_err(Error::Invalid)?;
        self.payload.clear();
        frame::push_record_payload(&mut self.payload, rec)?;
        self.buf.clear();
        frame::push_frame(&mut self.buf, RECORD, &self.payload)?;
        self.emit()?;
        self.objects += 1;
        Ok(())
    }

    /// Hashes and writes the frame in `buf`.
    fn emit(&mut self) -> Result<()> {
        self.hasher.update(&self.buf);
        match &mut self.out {
            Output::Plain(w) => w.write_all(&self.buf)?,
            Output::Zstd(w) => w.write_all(&self.buf)?,
        }
        Ok(())
    }

    /// Writes the trailer (object count and SHA-256), ends compression and flushes.
    /// Fails with [`Error::CountMismatch`] (and no trailer) when the number of records
    /// written differs from the header's `object_count`.
    pub fn finish(self) -> Result<Summary> {
        self.finish_into_inner().map(|(_, summary)| summary)
    }

    /// [`Writer::finish`], also giving back the output.
    pub fn finish_into_inner(mut self) -> Result<(W, Summary)> {
        if self.objects != self.expected {
            return Err(Error::CountMismatch {
                place: "header",
                expected: self.expected,
                actual: self.objects,
            });
        }
        let sha = self.hasher.finalize();
        let mut trailer = self.objects.to_be_bytes().to_vec();
        trailer.extend_from_slice(&sha);
        self.buf.clear();
        frame::push_frame(&mut self.buf, TRAILER, &trailer)?;
        let mut out = match self.out {
            Output::Plain(mut w) => {
                w.write_all(&self.buf)?;
                w
            }
            Output::Zstd(mut w) => {
                w.write_all(&self.buf)?;
                w.finish()?
            }
        };
        out.flush()?;
        let summary = Summary {
            objects: self.objects,
            bytes: out.bytes,
            sha256: hex::encode(sha),
        };
        Ok((out.inner, summary))
    }

    /// Bytes handed to the output so far (compressed bytes when compressing; zstd holds
    /// some back until it has a block).
    pub fn bytes_written(&self) -> u64 {
        match &self.out {
            Output::Plain(w) => w.bytes,
            Output::Zstd(w) => w.get_ref().bytes,
        }
    }

    /// Records written so far.
    pub fn objects_written(&self) -> u64 {
        self.objects
    }

    /// The output, e.g. to drain an in-memory buffer between records. With compression
    /// on, zstd may still hold bytes of records already written; [`Writer::flush`] pushes
    /// them out (at some cost in compression ratio).
    pub fn get_mut(&mut self) -> &mut W {
        match &mut self.out {
            Output::Plain(w) => &mut w.inner,
            Output::Zstd(w) => &mut w.get_mut().inner,
        }
    }

    /// Pushes everything written so far through to the output and flushes it.
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.out {
            Output::Plain(w) => w.flush()?,
            Output::Zstd(w) => w.flush()?,
        }
        Ok(())
    }
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("objects", &self.objects)
            .field("bytes", &self.bytes_written())
            .finish_non_exhaustive()
    }
}

/// A writer that counts what passes through.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
