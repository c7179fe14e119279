//! `kplane ws move PATH --to KUBECONFIG [--as NEWPATH]`: moves a workspace (logical
//! cluster) to another kplane server while it keeps serving (docs/architecture.md "Moving
//! a logical cluster"). The command only drives the two servers; each keeps the durable
//! state of its own steps, so a re-run after a failure or a kill finds where the move
//! stopped and continues (after the fence) or rolls back and starts over (before it);
//! `--abort` rolls back a move that has not switched yet.
//!
//! Steps: the bulk copy (the source's export streamed into a staged import on the target,
//! through a temporary file), catch-up rounds of the source's change stream, the fence
//! (the source's writes answer 429), the final catch-up, the target's commit, the
//! source's "moved" mark. Every transfer goes through a temporary file (removed at the
//! end), so memory stays bounded.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

use super::api::{self, Session};
use super::args::{ClientFlags, MoveArgs};
use super::output::out;
use super::path::WsPath;
use super::transfer::{self, Refused, Transfer};

/// Catch-up rounds before the fence at most; the last round before it should be short.
const MAX_ROUNDS: usize = 10;
/// A round with at most this many changes is the last before the fence.
const SMALL_ROUND: u64 = 1000;
/// Bytes per chunk when uploading a file.
const UPLOAD_CHUNK: usize = 256 * 1024;

/// One side of the move: a workspace on a server.
struct Side {
    transfer: Transfer,
    path: WsPath,
}

impl Side {
    async fn open(session: &Session, path: WsPath) -> Result<Self> {
        let (config, url) = session.config(&path).await?;
        Ok(Side {
            transfer: Transfer::new(&config, url)?,
            path,
        })
    }

    /// A request with an empty body whose JSON answer is read; `Err(Refused)` (downcast)
    /// for an answer outside 2xx.
    async fn call(&mut self, method: Method, uri: &str) -> Result<Value> {
        let resp = self
            .transfer
            .send(
                method,
                uri,
                &[("accept", "application/json".into())],
                transfer::empty(),
            )
            .await?;
        json_answer(resp).await
    }

    /// Like [`Side::call`], but a refusal with `status` is `Ok(None)`.
    async fn call_unless(
        &mut self,
        method: Method,
        uri: &str,
        status: StatusCode,
    ) -> Result<Option<Value>> {
        match self.call(method, uri).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if refused_with(&e) == Some(status) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Streams a GET's answer into `file`.
    async fn download(&mut self, uri: &str, accept: &str, file: &Path) -> Result<u64> {
        let resp = self
            .transfer
            .send(
                Method::GET,
                uri,
                &[("accept", accept.into())],
                transfer::empty(),
            )
            .await?;
        let mut body = resp.into_body();
        let mut f = tokio::fs::File::create(file)
            .await
            .with_context(|| format!("creating {}", file.display()))?;
        let mut n = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.context("reading the server's answer")?;
            if let Ok(data) = frame.into_data() {
                n += data.len() as u64;
                f.write_all(&data)
                    .await
                    .context("writing a temporary file")?;
            }
        }
        f.flush().await.context("writing a temporary file")?;
        Ok(n)
    }

    /// POSTs `file` to `uri`; answers the JSON result.
    async fn upload(&mut self, uri: &str, content_type: &str, file: &Path) -> Result<Value> {
        let len = tokio::fs::metadata(file)
            .await
            .with_context(|| format!("reading {}", file.display()))?
            .len();
        let body = transfer::file_body(file, UPLOAD_CHUNK, |_| {}).await?;
        let resp = self
            .transfer
            .send(
                Method::POST,
                uri,
                &[
                    ("content-type", content_type.into()),
                    ("content-length", len.to_string()),
                    ("accept", "application/json".into()),
                ],
                body,
            )
            .await?;
        json_answer(resp).await
    }
}

async fn json_answer(resp: http::Response<hyper::body::Incoming>) -> Result<Value> {
    let bytes = transfer::read_limited(resp.into_body(), 4 << 20).await?;
    serde_json::from_slice(&bytes).context("the server's answer is not JSON")
}

/// The HTTP status of a refusal, if `e` is one.
fn refused_with(e: &anyhow::Error) -> Option<StatusCode> {
    e.downcast_ref::<Refused>().map(|r| r.status)
}

/// Where the source stands.
enum Source {
    Serving,
    Fenced,
    Moved(String),
}

/// Runs `kplane ws move`.
pub async fn run(flags: &ClientFlags, args: MoveArgs) -> Result<()> {
    let source_session = Session::load(flags)?;
    let target_session = Session::load(&ClientFlags {
        kubeconfig: Some(args.to.clone()),
        context: args.to_context.clone(),
    })
    .with_context(|| format!("reading the target's kubeconfig {}", args.to.display()))?;
    let path = api::resolve(&source_session, &args.path)?;
    if path.parent().is_none() {
        bail!("the root workspace cannot be moved");
    }
    let new_path = match &args.as_path {
        Some(p) => api::resolve(&target_session, p)?,
        None => path.clone(),
    };
    let mut src = Side::open(&source_session, path).await?;
    let mut dst = Side::open(&target_session, new_path).await?;
    let location = dst.transfer.url.clone();
    let tmp = tempfile_dir()?;

    let source = source_state(&mut src).await?;
    if let Source::Moved(to) = &source {
        if args.abort {
            bail!("{} has already moved to {to}: nothing to abort", src.path);
        }
        return out(&format!("{} has moved to {to}\n", src.path));
    }
    let staged = dst
        .call_unless(
            Method::GET,
            "/kplane/v1/import/staged",
            StatusCode::NOT_FOUND,
        )
        .await
        .context("asking the target about a staged copy")?;
    if args.abort {
        if staged.is_some() {
            dst.call(Method::POST, "/kplane/v1/import/abort").await?;
        }
        if matches!(source, Source::Fenced) {
            src.call(Method::POST, "/kplane/v1/unfence").await?;
        }
        return out(&format!(
            "the move of {} is rolled back; it is served by its source\n",
            src.path
        ));
    }
    let applied = match (&source, staged) {
        // Before the fence: roll back whatever a previous run left, start over.
        (Source::Serving, staged) => {
            if staged.is_some() {
                dst.call(Method::POST, "/kplane/v1/import/abort").await?;
            }
            let applied = bulk_copy(&mut src, &mut dst, &tmp).await?;
            match catch_up_rounds(&mut src, &mut dst, &tmp, applied).await {
                Ok(a) => a,
                Err(e) => {
                    // Nothing is paused yet: drop the copy (best effort), report.
                    let _ = dst.call(Method::POST, "/kplane/v1/import/abort").await;
                    return Err(e);
                }
            }
        }
        // Fenced, and the target has the staged copy: continue from where it is.
        (Source::Fenced, Some(s)) => s["applied"]
            .as_u64()
            .ok_or_else(|| anyhow!("the target's staged copy names no revision"))?,
        // Fenced, and no staged copy: either the target committed already (switch), or it
        // lost the copy (roll back: lift the fence and start over).
        (Source::Fenced, None) => {
            if target_serves(&mut dst).await? {
                return mark_moved(&mut src, &location, None).await;
            }
            src.call(Method::POST, "/kplane/v1/unfence").await?;
            return Box::pin(run(flags, args)).await;
        }
        (Source::Moved(_), _) => unreachable_moved()?,
    };
    // The fence: from here on a failure leaves the move to be continued by a re-run.
    let paused = Instant::now();
    let fence = src.call(Method::POST, "/kplane/v1/fence").await?;
    let fence = fence["revision"]
        .as_u64()
        .ok_or_else(|| anyhow!("the source's fence names no revision"))?;
    let fenced = || {
        format!("{} is fenced (its writes are paused); re-run the command to continue the move, or add --abort", src_name(&args))
    };
    let n = catch_up(&mut src, &mut dst, &tmp, applied, Some(fence))
        .await
        .with_context(fenced)?;
    dst.call(Method::POST, "/kplane/v1/import/commit")
        .await
        .with_context(fenced)?;
    let pause = paused.elapsed();
    mark_moved(&mut src, &location, Some((pause, n))).await
}

fn src_name(args: &MoveArgs) -> &str {
    &args.path
}

fn unreachable_moved() -> Result<u64> {
    bail!("the source has moved")
}

/// Records the switch on the source, and says so.
async fn mark_moved(src: &mut Side, location: &str, pause: Option<(Duration, u64)>) -> Result<()> {
    let uri = format!("/kplane/v1/moved?to={}", encode(location));
    match src.call(Method::POST, &uri).await {
        Ok(_) => {}
        // Marked by an earlier run.
        Err(e) if refused_with(&e) == Some(StatusCode::GONE) => {}
        Err(e) => {
            return Err(e.context(format!(
                "the target serves {location}, but the source could not be marked moved; re-run the command"
            )))
        }
    }
    let how = match pause {
        Some((d, n)) => format!(
            " (writes paused for {} ms, {n} changes in the final catch-up)",
            d.as_millis()
        ),
        None => String::new(),
    };
    out(&format!("moved {} to {location}{how}\n", src.path))
}

/// The source's state: serving, fenced or moved (its 410 names where).
async fn source_state(src: &mut Side) -> Result<Source> {
    match src.call(Method::GET, "/kplane/v1/state").await {
        Ok(v) => match v["state"].as_str() {
            Some("Fenced") => Ok(Source::Fenced),
            Some("Moved") => Ok(Source::Moved(
                v["location"].as_str().unwrap_or("").to_string(),
            )),
            _ => Ok(Source::Serving),
        },
        Err(e) if refused_with(&e) == Some(StatusCode::GONE) => {
            let msg = e.to_string();
            let to = msg
                .split(" has moved to ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .unwrap_or("another server")
                .to_string();
            Ok(Source::Moved(to))
        }
        Err(e) => Err(e.context(format!("asking {} about {}", src.transfer.url, src.path))),
    }
}

/// Whether the target serves the workspace (a committed copy).
async fn target_serves(dst: &mut Side) -> Result<bool> {
    Ok(dst
        .call_unless(Method::GET, "/kplane/v1/state", StatusCode::NOT_FOUND)
        .await?
        .is_some())
}

/// The source's export into a staged import on the target; answers the revision it is
/// complete through.
async fn bulk_copy(src: &mut Side, dst: &mut Side, tmp: &TempDir) -> Result<u64> {
    let file = tmp.0.join("bulk.kpa");
    src.download("/kplane/v1/export", kplane_archive::CONTENT_TYPE, &file)
        .await
        .with_context(|| format!("exporting {}", src.path))?;
    let staged = dst
        .upload(
            "/kplane/v1/import?staged=true",
            kplane_archive::CONTENT_TYPE,
            &file,
        )
        .await
        .with_context(|| format!("copying {} to {}", src.path, dst.transfer.url))?;
    let _ = std::fs::remove_file(&file);
    staged["applied"]
        .as_u64()
        .ok_or_else(|| anyhow!("the target's staged import names no revision"))
}

/// Catch-up rounds while the source keeps serving, until one is small.
async fn catch_up_rounds(
    src: &mut Side,
    dst: &mut Side,
    tmp: &TempDir,
    mut applied: u64,
) -> Result<u64> {
    for _ in 0..MAX_ROUNDS {
        let before = applied;
        let n = catch_up(src, dst, tmp, before, None).await?;
        applied = dst.call(Method::GET, "/kplane/v1/import/staged").await?["applied"]
            .as_u64()
            .unwrap_or(before);
        if n <= SMALL_ROUND {
            break;
        }
    }
    Ok(applied)
}

/// One catch-up: the source's changes after `since` (through `until`) applied to the
/// target; answers how many there were.
async fn catch_up(
    src: &mut Side,
    dst: &mut Side,
    tmp: &TempDir,
    since: u64,
    until: Option<u64>,
) -> Result<u64> {
    let file = tmp.0.join("changes");
    let uri = match until {
        Some(u) => format!("/kplane/v1/changes?since={since}&until={u}"),
        None => format!("/kplane/v1/changes?since={since}"),
    };
    src.download(&uri, kplane_archive::CHANGES_CONTENT_TYPE, &file)
        .await
        .with_context(|| format!("reading the changes of {} after revision {since}", src.path))?;
    let applied = dst
        .upload(
            &format!("/kplane/v1/import/changes?since={since}"),
            kplane_archive::CHANGES_CONTENT_TYPE,
            &file,
        )
        .await
        .context("applying the changes on the target")?;
    let _ = std::fs::remove_file(&file);
    Ok(applied["changes"].as_u64().unwrap_or(0))
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let p = base.join(format!("kplane-move-{}-{i}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(TempDir(p)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", p.display())),
        }
    }
    bail!("cannot create a temporary directory in {}", base.display())
}

/// Percent-encodes a URL for a query value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_query_encoded() {
        assert_eq!(
            encode("https://h:6443/clusters/root:a"),
            "https%3A%2F%2Fh%3A6443%2Fclusters%2Froot%3Aa"
        );
    }
}
