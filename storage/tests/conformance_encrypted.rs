//! The storage conformance suite through the encrypting decorator: every read, list, scan,
//! watch and write of the suite's resource passes through AES-GCM (`encryption`), and the
//! backend underneath holds only the encrypted form.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kplane_storage::testing::conformance::{self, enc, key};
use kplane_storage::{
    EncryptedStorage, EncryptionRules, Precondition, SledStorage, SledStorageOptions, Storage,
};

fn rules(first: &str) -> Arc<EncryptionRules> {
    let k1 = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="; // 32 bytes of 1
    let k2 = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="; // 32 bytes of 2
    let keys = match first {
        "k2" => format!(
            "      - name: k2\n        secret: {k2}\n      - name: k1\n        secret: {k1}\n"
        ),
        _ => format!("      - name: k1\n        secret: {k1}\n"),
    };
    EncryptionRules::parse(&format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps]\n  providers:\n  - aesgcm:\n      keys:\n{keys}  - identity: {{}}\n"
    ))
    .map(Arc::new)
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_sled_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    let s = EncryptedStorage::new(sled.clone(), rules("k1"));
    conformance::run_all(s.clone()).await;
    s.shutdown().await.unwrap();
}

/// The backend holds the encrypted form; a rotation (a new first key, the old one kept)
/// reads both and writes with the new one; values stored before encryption was configured
/// are read through `identity`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_holds_only_ciphertext_and_rotation_reads_old_keys() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    let raw: Arc<dyn Storage> = sled.clone();
    raw.put(
        key("root", "ns", "before"),
        Precondition::MustNotExist,
        enc("plain"),
    )
    .await
    .unwrap();
    let s = EncryptedStorage::new(raw.clone(), rules("k1"));
    let kv = s
        .put(
            key("root", "ns", "a"),
            Precondition::MustNotExist,
            enc("secret-a"),
        )
        .await
        .unwrap();
    assert!(
        kv.value.starts_with(b"secret-a@"),
        "the caller sees the plain value"
    );
    let stored = raw.get(&key("root", "ns", "a")).await.unwrap().unwrap();
    assert!(stored.value.starts_with(b"k8s:enc:aesgcm:v1:k1:"));
    assert!(!stored.value.windows(8).any(|w| w == b"secret-a"));
    let before = s.get(&key("root", "ns", "before")).await.unwrap().unwrap();
    assert!(before.value.starts_with(b"plain@"));
    let rotated = EncryptedStorage::new(raw.clone(), rules("k2"));
    let a = rotated.get(&key("root", "ns", "a")).await.unwrap().unwrap();
    assert!(a.value.starts_with(b"secret-a@"));
    rotated
        .put(
            key("root", "ns", "b"),
            Precondition::MustNotExist,
            enc("secret-b"),
        )
        .await
        .unwrap();
    let b = raw.get(&key("root", "ns", "b")).await.unwrap().unwrap();
    assert!(b.value.starts_with(b"k8s:enc:aesgcm:v1:k2:"));
    // The old configuration cannot read what the new key wrote: a Corrupt error.
    assert!(matches!(
        s.get(&key("root", "ns", "b")).await,
        Err(kplane_storage::Error::Corrupt(_))
    ));
    sled.shutdown().await.unwrap();
}
