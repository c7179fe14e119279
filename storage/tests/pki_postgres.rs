//! The shared-files table of the PostgreSQL backend (`PostgresStorage::share_files`): the
//! first proposal of each name wins, later and simultaneous proposals adopt it, and a
//! name added later is still taken. Needs PostgreSQL installed (fails without it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{PostgresStorage, PostgresStorageOptions, Storage};

fn server() -> PgServer {
    PgServer::start_required()
}

/// A proposal of `names`, each valued `<tag>:<name>`.
fn proposal(tag: &str, names: &[&str]) -> Vec<(String, Vec<u8>)> {
    names
        .iter()
        .map(|n| ((*n).to_owned(), format!("{tag}:{n}").into_bytes()))
        .collect()
}

fn values_of(set: &BTreeMap<String, Vec<u8>>) -> Vec<(String, String)> {
    set.iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_proposal_wins_and_new_names_are_added() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, PostgresStorageOptions::default())
        .await
        .unwrap();
    let b = PostgresStorage::open(&url, PostgresStorageOptions::default())
        .await
        .unwrap();
    let first = a
        .share_files(&proposal("a", &["ca.crt", "ca.key"]))
        .await
        .unwrap();
    assert_eq!(
        values_of(&first),
        [("ca.crt", "a:ca.crt"), ("ca.key", "a:ca.key")].map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    // B proposes its own copies plus a name A did not have: it adopts A's, adds its own.
    let second = b
        .share_files(&proposal("b", &["ca.crt", "ca.key", "sa.key"]))
        .await
        .unwrap();
    assert_eq!(
        values_of(&second),
        [
            ("ca.crt", "a:ca.crt"),
            ("ca.key", "a:ca.key"),
            ("sa.key", "b:sa.key")
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    // An empty proposal reads the table.
    assert_eq!(a.share_files(&[]).await.unwrap(), second);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Many stores proposing at once all adopt one proposal, whole (never one store's
/// certificate with another's key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_first_proposals_adopt_one_whole_set() {
    let pg = server();
    let url = pg.create_database();
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(
            PostgresStorage::open(&url, PostgresStorageOptions::default())
                .await
                .unwrap(),
        );
    }
    let names = ["admin.token", "ca.crt", "ca.key", "sa.key"];
    let tasks: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let s: Arc<PostgresStorage> = s.clone();
            tokio::spawn(async move { s.share_files(&proposal(&format!("r{i}"), &names)).await })
        })
        .collect();
    let mut adopted = Vec::new();
    for t in tasks {
        adopted.push(t.await.unwrap().unwrap());
    }
    let winner = &adopted[0];
    assert!(adopted.iter().all(|a| a == winner), "{adopted:?}");
    let tags: Vec<String> = values_of(winner)
        .into_iter()
        .map(|(_, v)| v.split(':').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tags.len(), names.len());
    assert!(tags.iter().all(|t| t == &tags[0]), "a mixed set: {tags:?}");
    for s in stores {
        s.shutdown().await.unwrap();
    }
}
