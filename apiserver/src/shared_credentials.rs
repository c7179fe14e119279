//! The credentials every replica on one database shares, so that one kubeconfig and every
//! ServiceAccount token work against any replica (docs/storage-postgres.md, "Running
//! several replicas"): the CA that signs each replica's serving certificate, the client
//! CA, the ServiceAccount signing key and the admin token.
//!
//! This module owns which files those are and the two steps around the database's shared
//! table: [`local_files`] makes the data directory's copies (created as on any first start
//! when missing) and [`adopt`] writes the set the table holds back into the data directory.
//! Everything after that reads the data directory exactly as with one server. The table
//! itself belongs to the storage backend (`PostgresStorage::share_files`).
//!
//! What stays per replica: the serving certificate and key (issued afresh at every start by
//! the shared CA for this replica's own names, `--tls-san`), and the admin's client
//! certificate (issued afresh by the shared client CA). Files named by flags
//! (`--client-ca-file`, `--service-account-signing-key-file`, `--service-account-key-file`)
//! are read from each replica's file system and never put in the database: they must be
//! the same files on every replica.

use std::collections::BTreeMap;
use std::path::Path;

use crate::server::ServerError;

/// The shared files, as paths relative to the data directory (also their names in the
/// database). A certificate and its key are always proposed and adopted together.
pub const SHARED_FILES: [&str; 6] = [
    "admin.token",
    "pki/ca.crt",
    "pki/ca.key",
    "pki/client-ca.crt",
    "pki/client-ca.key",
    "pki/sa.key",
];

/// The data directory's copies of [`SHARED_FILES`] as `(name, contents)`, each created
/// first if missing (exactly as a first start creates it).
pub fn local_files(data_dir: &Path) -> Result<Vec<(String, Vec<u8>)>, ServerError> {
    let pki = data_dir.join("pki");
    crate::tls::load_or_create(&pki, &[])?;
    crate::client_ca::load_or_create(&pki)?;
    crate::serviceaccount::keys::load(
        &crate::serviceaccount::KeySources::default(),
        &pki.join("sa.key"),
    )
    .map_err(|e| ServerError::Startup(format!("service account keys: {e}")))?;
    crate::server::load_or_create_token(&data_dir.join("admin.token"))?;
    SHARED_FILES
        .iter()
        .map(|name| {
            let path = data_dir.join(name);
            std::fs::read(&path)
                .map(|bytes| ((*name).to_owned(), bytes))
                .map_err(|source| ServerError::Io {
                    context: format!("reading {}", path.display()),
                    source,
                })
        })
        .collect()
}

/// Writes the adopted `shared` set into the data directory (mode 0600), replacing the
/// local copies that differ; returns the names replaced. Fails, writing nothing, unless
/// the set holds every file of [`SHARED_FILES`] as text.
pub fn adopt(
    data_dir: &Path,
    shared: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<&'static str>, ServerError> {
    let mut files = Vec::with_capacity(SHARED_FILES.len());
    for name in SHARED_FILES {
        let Some(bytes) = shared.get(name) else {
            return Err(ServerError::Startup(format!(
                "the database's shared credentials lack {name}"
            )));
        };
        let text = std::str::from_utf8(bytes).map_err(|_| {
            ServerError::Startup(format!("the database's shared {name} is not text"))
        })?;
        files.push((name, text));
    }
    let mut replaced = Vec::new();
    for (name, text) in files {
        let path = data_dir.join(name);
        if crate::tls_files::read_optional(&path)?.as_deref() == Some(text) {
            continue;
        }
        crate::tls_files::write_private(&path, text)?;
        replaced.push(name);
    }
    Ok(replaced)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn local_files_are_created_once_and_adopted_elsewhere() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let first = local_files(a.path()).unwrap();
        assert_eq!(first.len(), SHARED_FILES.len());
        // A second call reads the same files instead of making new ones.
        assert_eq!(local_files(a.path()).unwrap(), first);
        let from_b = local_files(b.path()).unwrap();
        assert!(first.iter().zip(&from_b).all(|(x, y)| x.1 != y.1));

        let set: BTreeMap<String, Vec<u8>> = first.iter().cloned().collect();
        let replaced = adopt(b.path(), &set).unwrap();
        assert_eq!(replaced, SHARED_FILES.to_vec());
        assert_eq!(local_files(b.path()).unwrap(), first);
        assert!(adopt(b.path(), &set).unwrap().is_empty());
        // The adopted CA signs B's serving certificate.
        let pki = crate::tls::load_or_create(&b.path().join("pki"), &[]).unwrap();
        assert_eq!(pki.ca_pem.as_bytes(), set["pki/ca.crt"].as_slice());
    }

    #[test]
    fn an_incomplete_set_is_refused_and_nothing_is_written() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let mut set: BTreeMap<String, Vec<u8>> =
            local_files(a.path()).unwrap().into_iter().collect();
        set.remove("pki/sa.key");
        let err = adopt(b.path(), &set).unwrap_err().to_string();
        assert!(err.contains("lack pki/sa.key"), "{err}");
        assert!(!b.path().join("admin.token").exists());
    }
}
