//! The files of the PKI directory: reading one that may be missing, writing one readable
//! only by the owner (atomically, through a temporary file), and [`TlsError`], what
//! certificate and TLS set-up fails with.

use std::path::Path;

/// Why certificates or the TLS configuration could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("reading or writing {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid PEM material: {0}")]
    Pem(String),
    #[error("TLS configuration failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The contents of `path`, or `None` if there is no such file.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, TlsError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TlsError::Io {
            path: path.display().to_string(),
            source: e,
        }),
    }
}

/// Writes `contents` to `path` with mode 0600, through a temporary file renamed over it.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), TlsError> {
    let io = |e| TlsError::Io {
        path: path.display().to_string(),
        source: e,
    };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}
