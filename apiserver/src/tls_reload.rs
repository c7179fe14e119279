//! Reloading the serving certificate, its key and the client CA from their files while the
//! server runs (kube-apiserver's dynamic serving and client-CA content): the files are read
//! every [`POLL`], and when one has changed and together they are valid (PEM that parses, a
//! key that matches the certificate, at least one CA), a new rustls configuration is built
//! and the X.509 authenticator trusts the new CAs. New TLS handshakes take the new
//! configuration; established connections, and the watches on them, keep theirs. Files
//! caught half-written are refused with a warning and read again on the next poll.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::client_ca;
use crate::http::x509::X509Authenticator;
use crate::tls::{self, Pki, TlsError};

/// How often the files are read.
pub const POLL: Duration = Duration::from_secs(1);

/// The files the TLS configuration comes from.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: PathBuf,
}

/// The current TLS configuration and what it was built from.
#[derive(Debug)]
pub struct Reloader {
    files: TlsFiles,
    /// The PKI's CA (unchanged by reloads: it is not one of the files).
    ca_pem: String,
    config: RwLock<Arc<rustls::ServerConfig>>,
    x509: Arc<X509Authenticator>,
    /// The files' contents the current configuration was built from (or last refused).
    seen: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl Reloader {
    /// Starts from `config`, built from `files` as they are now.
    pub fn new(
        files: TlsFiles,
        ca_pem: String,
        config: Arc<rustls::ServerConfig>,
        x509: Arc<X509Authenticator>,
    ) -> Self {
        let seen = read_all(&files).unwrap_or_default();
        Reloader {
            files,
            ca_pem,
            config: RwLock::new(config),
            x509,
            seen: std::sync::Mutex::new(seen),
        }
    }

    /// The configuration new connections use.
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the files; when they changed, builds and installs the new configuration.
    /// `Ok(true)`: installed; `Ok(false)`: unchanged.
    pub fn check(&self) -> Result<bool, TlsError> {
        let contents = read_all(&self.files)?;
        {
            let mut seen = match self.seen.lock() {
                Ok(s) => s,
                Err(poisoned) => poisoned.into_inner(),
            };
            if *seen == contents {
                return Ok(false);
            }
            *seen = contents.clone();
        }
        let text = |i: usize| {
            String::from_utf8(contents[i].clone())
                .map_err(|_| TlsError::Pem("a TLS file is not UTF-8 PEM".into()))
        };
        let pki = Pki {
            ca_pem: self.ca_pem.clone(),
            serving_cert_pem: text(0)?,
            serving_key_pem: text(1)?,
        };
        let ca = client_ca::from_bundle(&text(2)?)?;
        let config = tls::server_config(&pki, Some(&ca))?;
        self.x509.reload(&ca)?;
        match self.config.write() {
            Ok(mut c) => *c = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
        Ok(true)
    }

    /// Polls the files until `shutdown` says so.
    pub async fn run(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                () = tokio::time::sleep(POLL) => {}
            }
            let me = self.clone();
            match tokio::task::spawn_blocking(move || me.check()).await {
                Ok(Ok(true)) => tracing::info!(
                    cert = %self.files.cert.display(),
                    client_ca = %self.files.client_ca.display(),
                    "reloaded the serving certificate and the client CA"
                ),
                Ok(Ok(false)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "TLS files not reloaded; keeping the previous ones")
                }
                Err(e) => tracing::warn!(error = %e, "TLS reload failed"),
            }
        }
    }
}

fn read_all(files: &TlsFiles) -> Result<Vec<Vec<u8>>, TlsError> {
    [&files.cert, &files.key, &files.client_ca]
        .into_iter()
        .map(|p| {
            std::fs::read(p).map_err(|e| TlsError::Io {
                path: p.display().to_string(),
                source: e,
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn reloader(dir: &std::path::Path) -> Reloader {
        let pki = tls::load_or_create(dir, &[]).unwrap();
        let ca = client_ca::load_or_create(dir).unwrap();
        let config = tls::server_config(&pki, Some(&ca)).unwrap();
        let x509 = Arc::new(X509Authenticator::new(&ca).unwrap());
        let files = TlsFiles {
            cert: dir.join("serving.crt"),
            key: dir.join("serving.key"),
            client_ca: dir.join(client_ca::CA_CERT_FILE),
        };
        Reloader::new(files, pki.ca_pem, config, x509)
    }

    #[test]
    fn unchanged_files_keep_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let r = reloader(dir.path());
        let before = r.config();
        assert!(!r.check().unwrap());
        assert!(Arc::ptr_eq(&before, &r.config()));
    }

    #[test]
    fn a_new_certificate_is_installed_and_a_mismatched_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = reloader(dir.path());
        let before = r.config();
        // A new serving certificate and key (load_or_create issues a fresh pair).
        let old_key = std::fs::read(dir.path().join("serving.key")).unwrap();
        tls::load_or_create(dir.path(), &["example.com".into()]).unwrap();
        // First only the certificate: it does not match the old key.
        let new_key = std::fs::read(dir.path().join("serving.key")).unwrap();
        std::fs::write(dir.path().join("serving.key"), &old_key).unwrap();
        assert!(r.check().is_err());
        assert!(Arc::ptr_eq(&before, &r.config()));
        // Then the key: installed.
        std::fs::write(dir.path().join("serving.key"), &new_key).unwrap();
        assert!(r.check().unwrap());
        assert!(!Arc::ptr_eq(&before, &r.config()));
    }

    #[test]
    fn a_client_ca_file_that_holds_no_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = reloader(dir.path());
        let before = r.config();
        std::fs::write(dir.path().join(client_ca::CA_CERT_FILE), "").unwrap();
        assert!(r.check().is_err());
        assert!(Arc::ptr_eq(&before, &r.config()));
    }
}
