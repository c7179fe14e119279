//! Spooling a request body to a file under the data dir, within a size limit, for the
//! import endpoints ([`super::archive`], [`super::move_endpoints`]); the file is removed
//! when its [`Spooled`] handle goes.

use std::path::{Path, PathBuf};

use axum::body::Body;
use futures::StreamExt;
use kplane_registry::ApiError;
use kplane_types::StatusReason;
use tokio::io::AsyncWriteExt;

/// The largest import body accepted (413 above it): 8 GiB, spooled to disk, never held
/// in memory.
pub const IMPORT_BODY_LIMIT: u64 = 8 << 30;

/// Removes the spooled file however the import ends.
pub(super) struct Spooled(pub(super) PathBuf);

impl Drop for Spooled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the request body to a new file under `dir` (at most [`IMPORT_BODY_LIMIT`]).
pub(super) async fn spool_body(dir: &Path, body: Body) -> Result<Spooled, ApiError> {
    spool_body_within(dir, body, IMPORT_BODY_LIMIT).await
}

/// [`spool_body`] with the limit as a parameter: a body over `limit` bytes is a 413 and
/// leaves no file.
async fn spool_body_within(dir: &Path, body: Body, limit: u64) -> Result<Spooled, ApiError> {
    let io = |what: &str, e: std::io::Error| ApiError::internal(format!("{what}: {e}"));
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| io("creating the import spool directory", e))?;
    let spooled = Spooled(dir.join(format!("import-{}.karc", uuid::Uuid::new_v4())));
    let mut file = tokio::fs::File::create(&spooled.0)
        .await
        .map_err(|e| io("creating the import spool file", e))?;
    let mut stream = body.into_data_stream();
    let mut total: u64 = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            if crate::conn_timeouts::is_body_timeout(&e) {
                super::resources::body_error(&e)
            } else {
                ApiError::bad_request(format!("reading the request body failed: {e}"))
            }
        })?;
        total += chunk.len() as u64;
        if total > limit {
            return Err(ApiError::new(
                StatusReason::RequestEntityTooLarge,
                format!("the archive is larger than the import limit of {limit} bytes"),
            ));
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| io("writing the import spool file", e))?;
    }
    file.flush()
        .await
        .map_err(|e| io("writing the import spool file", e))?;
    Ok(spooled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let limit = 1024u64;
        for size in [0, limit - 1, limit, limit + 1, 10 * limit] {
            // Chunks of 100 bytes, as a streamed upload arrives.
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..size)
                .step_by(100)
                .map(|start| Ok(vec![7u8; (size - start).min(100) as usize]))
                .collect();
            let body = Body::from_stream(futures::stream::iter(chunks));
            let spooled = spool_body_within(dir.path(), body, limit).await;
            if size <= limit {
                let spooled = spooled.unwrap();
                assert_eq!(
                    std::fs::metadata(&spooled.0).unwrap().len(),
                    size,
                    "size {size}"
                );
            } else {
                let e = spooled.err().unwrap();
                assert_eq!(e.code(), 413, "size {size}");
            }
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                0,
                "size {size}: a file left"
            );
        }
    }
}
