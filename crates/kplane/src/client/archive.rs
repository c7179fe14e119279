//! `kplane export` and `kplane import` (also `kplane ws export|import`): one logical
//! cluster to an archive file (docs/archive-format.md) and back, over the server's
//! `/kplane/v1/export` and `/kplane/v1/import` endpoints.
//!
//! Export streams the answer through [`kplane_archive::Reader`] on its way to the file,
//! so a broken or truncated transfer is an error, never a bad file: the file is written
//! as `FILE.tmp`, fsynced, and renamed to `FILE` only once the trailer has been verified.
//! Import verifies the whole file locally first (nothing is sent for a bad one), then
//! streams it to the server from disk.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use kplane_archive::{Header, Summary, CONTENT_TYPE};
use serde_json::Value;
use tokio::sync::mpsc;

use super::api::{self, Session};
use super::args::{ClientFlags, ExportArgs, ImportArgs};
use super::output::out;
use super::path::WsPath;
use super::progress::Progress;
use super::transfer::{self, Refused, Transfer};

/// Chunks of the export stream in flight between the network and the check (memory
/// bound: this many of hyper's chunks, typically 16 KiB to 256 KiB each).
const IN_FLIGHT: usize = 16;

/// Bytes per chunk when uploading a file.
const UPLOAD_CHUNK: usize = 256 * 1024;

/// How long an export may go without a byte before it is given up (the server streams
/// continuously once it has started; this only catches a stalled connection).
const EXPORT_IDLE: Duration = Duration::from_secs(300);

/// Runs `kplane export`.
pub async fn export(flags: &ClientFlags, args: ExportArgs) -> Result<()> {
    use std::io::IsTerminal as _;
    if args.output == Path::new("-") && io::stdout().is_terminal() {
        bail!("not writing an archive to a terminal: redirect stdout, or use -o FILE");
    }
    let session = Session::load(flags)?;
    let path = api::resolve(&session, &args.path)?;
    let (config, url) = session.config(&path).await?;
    let mut transfer = Transfer::new(&config, url)?;
    let accept = [("accept", CONTENT_TYPE.to_owned())];
    let resp = transfer
        .send(Method::GET, &export_uri(&args), &accept, transfer::empty())
        .await
        .with_context(|| format!("exporting {path}"))?;
    let sink = Sink::open(&args.output)?;
    let progress = Progress::objects("exporting");
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let check = {
        let progress = progress.clone();
        tokio::task::spawn_blocking(move || check_and_write(rx, sink, &progress))
    };
    // Ctrl-C ends the transfer like a broken one: the check fails, FILE.tmp is removed.
    let streamed = tokio::select! {
        streamed = pump(resp.into_body(), tx, &progress) => streamed,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
    };
    let checked = check
        .await
        .map_err(|e| anyhow!("the archive check stopped: {e}"))?;
    progress.done();
    // A broken transfer explains more than what the check made of it.
    let (header, summary, sink) = match (streamed, checked) {
        (Ok(()), Ok(done)) => done,
        (Err(e), Ok((_, _, sink)) | Err((_, sink))) | (Ok(()), Err((e, sink))) => {
            sink.discard();
            return Err(e.context(format!("exporting {path}")));
        }
    };
    let to_stdout = matches!(sink, Sink::Stdout(_));
    let written = sink.commit()?;
    let line = format!(
        "exported {} ({} objects{}, revision {}) to {written}: {} bytes, sha256 {}\n",
        header.cluster,
        summary.objects,
        if header.recursive { ", recursive" } else { "" },
        header.revision,
        summary.bytes,
        summary.sha256,
    );
    if !header.decrypted.is_empty() {
        // Said on stderr whatever the output: the archive needs the protection the
        // server's encryption at rest gave these values.
        eprintln!(
            "warning: {written} holds in the clear the values of {} that the server encrypts at rest: protect it as you protect those",
            header.decrypted.join(", ")
        );
    }
    if to_stdout {
        eprint!("{line}");
        Ok(())
    } else {
        out(&line)
    }
}

/// `/kplane/v1/export` with the query `args` ask for.
fn export_uri(args: &ExportArgs) -> String {
    let mut query = Vec::new();
    if args.recursive {
        query.push("recursive=true");
    }
    if args.no_compress {
        query.push("compress=false");
    }
    if query.is_empty() {
        "/kplane/v1/export".to_owned()
    } else {
        format!("/kplane/v1/export?{}", query.join("&"))
    }
}

/// Forwards the response body to the check, chunk by chunk; a failure of the transfer
/// is passed on too (so the check stops) and returned.
async fn pump(
    mut body: Incoming,
    tx: mpsc::Sender<io::Result<Bytes>>,
    progress: &Progress,
) -> Result<()> {
    let mut bytes = 0u64;
    loop {
        let Ok(frame) = tokio::time::timeout(EXPORT_IDLE, body.frame()).await else {
            let msg = format!(
                "the transfer stalled: nothing arrived for {}s after {bytes} bytes",
                EXPORT_IDLE.as_secs()
            );
            let _ = tx.send(Err(io::Error::other(msg.clone()))).await;
            bail!(msg);
        };
        let Some(frame) = frame else {
            return Ok(());
        };
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Err(e) => {
                let msg = format!(
                    "the transfer broke off after {bytes} bytes: {}",
                    api::chain(&e)
                );
                let _ = tx.send(Err(io::Error::other(msg.clone()))).await;
                bail!(msg);
            }
        };
        bytes += data.len() as u64;
        progress.set_bytes(bytes);
        if tx.send(Ok(data)).await.is_err() {
            // The check stopped: it has the reason.
            return Ok(());
        }
    }
}

/// A check's failure, with the sink (to discard it).
type CheckError = (anyhow::Error, Sink);

/// Reads the archive from `rx` with the archive reader (every check of the format),
/// writing each chunk to `sink` as it passes.
fn check_and_write(
    rx: mpsc::Receiver<io::Result<Bytes>>,
    sink: Sink,
    progress: &Progress,
) -> Result<(Header, Summary, Sink), CheckError> {
    let mut tee = Tee {
        rx,
        chunk: Bytes::new(),
        sink,
        failed: None,
    };
    let result = read_through(&mut tee, progress);
    // A write failure of the sink explains more than the reader's error about it.
    let result = match (tee.failed.take(), result) {
        (Some(e), _) => Err(anyhow::Error::new(e).context(tee.sink.describe())),
        (None, Err(e)) => Err(e.context(match tee.sink {
            Sink::Stdout(_) => "the server sent a bad archive; the output is incomplete",
            Sink::File { .. } => "the server sent a bad archive; nothing was written",
        })),
        (None, Ok(done)) => Ok(done),
    };
    match result {
        Ok((header, summary)) => Ok((header, summary, tee.sink)),
        Err(e) => Err((e, tee.sink)),
    }
}

fn read_through(input: &mut Tee, progress: &Progress) -> Result<(Header, Summary)> {
    let mut reader = kplane_archive::Reader::open(input)?;
    progress.set_total(reader.header().object_count);
    while reader.next()?.is_some() {
        progress.add(1);
    }
    let summary = reader
        .summary()
        .cloned()
        .ok_or_else(|| anyhow!("the archive ended without its trailer"))?;
    Ok((reader.header().clone(), summary))
}

/// The export stream as a `Read`, copying every chunk to the sink on the way.
struct Tee {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    chunk: Bytes,
    sink: Sink,
    /// The sink's write error, if any (reported in place of the reader's).
    failed: Option<io::Error>,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                None => return Ok(0),
                Some(Err(e)) => return Err(e),
                Some(Ok(chunk)) => {
                    if let Err(e) = self.sink.write_all(&chunk) {
                        let copy = io::Error::new(e.kind(), e.to_string());
                        self.failed = Some(e);
                        return Err(copy);
                    }
                    self.chunk = chunk;
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        Ok(n)
    }
}

/// Where an export goes: `FILE.tmp` (renamed to `FILE` at the end), or stdout.
enum Sink {
    File {
        tmp: PathBuf,
        dest: PathBuf,
        file: BufWriter<File>,
    },
    Stdout(io::Stdout),
}

impl Sink {
    fn open(output: &Path) -> Result<Self> {
        if output == Path::new("-") {
            return Ok(Sink::Stdout(io::stdout()));
        }
        let mut tmp = output.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        Ok(Sink::File {
            tmp,
            dest: output.to_owned(),
            file: BufWriter::with_capacity(256 * 1024, file),
        })
    }

    fn describe(&self) -> String {
        match self {
            Sink::File { tmp, .. } => format!("writing {}", tmp.display()),
            Sink::Stdout(_) => "writing to stdout".into(),
        }
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Sink::File { file, .. } => file.write_all(data),
            Sink::Stdout(s) => s.write_all(data),
        }
    }

    /// Makes the export durable and visible under its name; returns that name.
    fn commit(self) -> Result<String> {
        match self {
            Sink::Stdout(mut s) => {
                s.flush().context("writing to stdout")?;
                Ok("stdout".into())
            }
            Sink::File { tmp, dest, file } => {
                let done = (|| -> io::Result<()> {
                    let file = file.into_inner().map_err(|e| e.into_error())?;
                    file.sync_all()?;
                    std::fs::rename(&tmp, &dest)?;
                    sync_dir(&dest);
                    Ok(())
                })();
                if let Err(e) = done {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e).with_context(|| format!("writing {}", dest.display()));
                }
                Ok(dest.display().to_string())
            }
        }
    }

    /// Removes the partial file.
    fn discard(self) {
        if let Sink::File { tmp, file, .. } = self {
            drop(file);
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Flushes the directory entry of a renamed file (best effort: not every platform or
/// file system can open a directory).
fn sync_dir(file: &Path) {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Runs `kplane import`.
pub async fn import(flags: &ClientFlags, args: ImportArgs) -> Result<()> {
    let session = Session::load(flags)?;
    let file = args.file;
    let (header, summary) = verify_file(&file).await?;
    let target = match &args.as_path {
        Some(p) => api::resolve(&session, p)?,
        None => WsPath::parse(&header.cluster).with_context(|| {
            format!(
                "the archive's cluster {:?} is not a workspace path; choose one with --as",
                header.cluster
            )
        })?,
    };
    let (config, url) = session.config(&target).await?;
    let mut transfer = Transfer::new(&config, url)?;
    let progress = Progress::bytes("uploading", summary.bytes);
    let body = {
        let progress = progress.clone();
        transfer::file_body(&file, UPLOAD_CHUNK, move |n| progress.add(n as u64)).await?
    };
    let uri = if args.replace {
        "/kplane/v1/import?replace=true"
    } else {
        "/kplane/v1/import"
    };
    let sent = transfer
        .send(
            Method::POST,
            uri,
            &[
                ("content-type", CONTENT_TYPE.to_owned()),
                ("content-length", summary.bytes.to_string()),
                ("accept", "application/json".to_owned()),
            ],
            body,
        )
        .await;
    progress.done();
    let resp = sent.map_err(|e| import_refused(e, &target, args.replace))?;
    let answer = transfer::read_limited(resp.into_body(), 4 << 20).await?;
    let result: Value =
        serde_json::from_slice(&answer).context("the server's answer to the import is not JSON")?;
    out(&format!("{}\n", import_line(&file, &result)))
}

/// Verifies the archive at `file` in full, with a progress line.
async fn verify_file(file: &Path) -> Result<(Header, Summary)> {
    let progress = Progress::objects("verifying");
    let check = {
        let (file, progress) = (file.to_owned(), progress.clone());
        tokio::task::spawn_blocking(move || -> Result<(Header, Summary)> {
            let input = File::open(&file).with_context(|| format!("opening {}", file.display()))?;
            let mut reader = kplane_archive::Reader::open(io::BufReader::new(input))?;
            progress.set_total(reader.header().object_count);
            while reader.next()?.is_some() {
                progress.add(1);
                progress.set_bytes(reader.bytes_read());
            }
            let summary = reader
                .summary()
                .cloned()
                .ok_or(kplane_archive::Error::Truncated)?;
            Ok((reader.header().clone(), summary))
        })
    };
    let result = check
        .await
        .map_err(|e| anyhow!("the archive check stopped: {e}"))?;
    progress.done();
    result.map_err(|e| {
        if e.downcast_ref::<kplane_archive::Error>().is_some() {
            anyhow!("{}: {e}; nothing was imported", file.display())
        } else {
            e
        }
    })
}

/// A refused import, with what to do about the usual refusals.
fn import_refused(e: anyhow::Error, target: &WsPath, replace: bool) -> anyhow::Error {
    let hint = match e.downcast_ref::<Refused>().map(|r| r.status.as_u16()) {
        Some(409) if !replace => {
            "; add --replace to replace its content, or choose another path with --as"
        }
        Some(404) => "; its parent workspace must exist",
        _ => "",
    };
    anyhow!("importing as {target}: {e:#}{hint}")
}

/// `imported FILE as root:b: 120 objects in 2 logical clusters (root:b, root:b:x), revision 4711`.
fn import_line(file: &Path, result: &Value) -> String {
    let clusters: Vec<&str> = result["clusters"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let n = clusters.len();
    format!(
        "imported {} as {}: {} objects in {n} logical cluster{} ({}), revision {}",
        file.display(),
        result["cluster"].as_str().unwrap_or("?"),
        result["objects"],
        if n == 1 { "" } else { "s" },
        clusters.join(", "),
        result["revision"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_import_line_names_the_clusters() {
        let result = json!({"apiVersion": "kplane.io/v1alpha1", "kind": "ImportResult",
            "cluster": "root:b", "clusters": ["root:b", "root:b:x"], "objects": 120, "revision": 4711});
        assert_eq!(
            import_line(Path::new("a.kpa"), &result),
            "imported a.kpa as root:b: 120 objects in 2 logical clusters (root:b, root:b:x), revision 4711"
        );
    }

    #[test]
    fn a_sink_is_a_tmp_file_until_committed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a.kpa");
        let mut sink = Sink::open(&dest).unwrap();
        sink.write_all(b"data").unwrap();
        assert!(dir.path().join("a.kpa.tmp").exists());
        assert!(!dest.exists());
        sink.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"data");
        assert!(!dir.path().join("a.kpa.tmp").exists());
        let sink = Sink::open(&dest).unwrap();
        sink.discard();
        assert!(!dir.path().join("a.kpa.tmp").exists());
        assert_eq!(std::fs::read(&dest).unwrap(), b"data");
    }
}
