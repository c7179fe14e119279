//! A database that went back in revisions, simulated without a failover: the log's tail,
//! the objects created there and the commit rows are deleted and the counter lowered by
//! SQL, exactly what a promoted standby that had not received the last commits holds.
//! (`failover_postgres.rs` does it with a real primary and standby.)
//!
//! The lost revisions become a gap that no write reuses: the next write takes a revision
//! above every one published; reads and watches at a lost revision get `Compacted` (410);
//! a watch replaying across the gap receives the next change after it, without waiting;
//! with several stores the highest published revision wins, a store that published none
//! of the lost revisions keeps its watchers, and one whose published revisions were
//! written over by another store records them as lost too.
//!
//! They need PostgreSQL installed (`.ci/run` installs it) and fail without it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::conformance::{self, key, list_all};
use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{
    CloseReason, Error, KeyValue, PostgresStorage, PostgresStorageOptions, Precondition, Prefix,
    Revision, Storage, WatchEvent, WatchReceiver,
};

fn server() -> PgServer {
    PgServer::start_required()
}

/// A store that follows the log only when told (`catch_up`) or when it writes, so each
/// test decides which store notices the loss first.
async fn open(url: &str) -> Arc<PostgresStorage> {
    PostgresStorage::open(
        url,
        PostgresStorageOptions {
            listen: false,
            tail_interval: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

async fn sql(url: &str, statements: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    client.batch_execute(statements).await.unwrap();
    drop(client);
    let _ = task.await;
}

async fn query_i64(url: &str, statement: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    let n: i64 = client.query_one(statement, &[]).await.unwrap().get(0);
    drop(client);
    let _ = task.await;
    n
}

/// The database loses every revision above `kept` (the tests only create keys).
async fn lose_after(url: &str, kept: Revision) {
    sql(
        url,
        &format!(
            "BEGIN; \
             DELETE FROM kplane_objects WHERE create_revision > {kept}; \
             DELETE FROM kplane_log WHERE revision > {kept}; \
             DELETE FROM kplane_commits WHERE revision > {kept}; \
             UPDATE kplane_meta SET revision = {kept} WHERE id = 1; \
             COMMIT",
        ),
    )
    .await;
}

/// Creates `n` keys `<name>NNNNN` through `s`, in batches; returns them in revision order.
async fn create_many(s: &PostgresStorage, cluster: &str, name: &str, n: usize) -> Vec<KeyValue> {
    let mut out = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let writes = chunk
            .iter()
            .map(|i| {
                conformance::bw(
                    key(cluster, "ns", &format!("{name}{i:05}")),
                    false,
                    Precondition::MustNotExist,
                    "v",
                )
            })
            .collect();
        for r in s.write_batch(writes).await {
            out.push(r.unwrap());
        }
    }
    out.sort_by_key(|kv| kv.mod_revision);
    out
}

async fn create_one(s: &PostgresStorage, cluster: &str, name: &str) -> KeyValue {
    s.put(
        key(cluster, "ns", name),
        Precondition::MustNotExist,
        conformance::enc("v"),
    )
    .await
    .unwrap()
}

fn is_gone(e: &Error, requested: Revision) -> bool {
    matches!(e, Error::Compacted { requested: r, .. } if *r == requested)
}

/// Lists `p` at `at` through `s`: its keys' revisions, or the error.
async fn list_at(s: &Arc<PostgresStorage>, p: &Prefix, at: Revision) -> Result<usize, Error> {
    let dyn_s: Arc<dyn Storage> = s.clone();
    let opts = kplane_storage::ListOptions {
        at_revision: Some(at),
        start_after: None,
        limit: None,
    };
    dyn_s.list(p, &opts, None).await.map(|r| r.items.len())
}

/// Receives events until one at `rev`; every event on the way must be the next of
/// `want`, in order.
async fn expect_events(rx: &mut WatchReceiver, want: &[Revision]) {
    for w in want {
        assert_eq!(conformance::next_event(rx).await.kv.mod_revision, *w);
    }
}

/// Waits for the watch to be closed (after any events it still had queued).
async fn expect_closed(rx: &mut WatchReceiver) {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(_) | WatchEvent::Progress(_))) => {}
            Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) => return,
            other => panic!("expected the watch to close, got {other:?}"),
        }
    }
}

/// One store: 600 kept revisions, 700 lost (each more than a tail page). The next write
/// takes the revision after the gap row, above every revision published; the watch is
/// closed, the cache forgets the lost writes; reads and watches at a lost revision get
/// `Compacted`; at the kept ones and the gap row's they see the kept state; a watch from
/// before the gap and one from revision 0 on a fresh store receive every kept change and
/// the next write in order. One gap row records the whole range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_revisions_are_never_reused() {
    let pg = server();
    let url = pg.create_database();
    let s = open(&url).await;
    let p = Prefix::cluster("gap");
    let kept = create_many(&s, "gap", "kept", 600).await;
    let kept_head = s.current_revision();
    assert_eq!(kept_head, 600);
    let mut rx = s.watch(&p, kept_head, None).await.unwrap();
    let lost = create_many(&s, "gap", "lost", 700).await;
    let published = s.current_revision();
    assert_eq!(published, kept_head + 700);
    assert_eq!(s.get(&lost[0].key).await.unwrap(), Some(lost[0].clone()));
    lose_after(&url, kept_head).await;

    let after = create_one(&s, "gap", "after").await;
    assert!(after.mod_revision > published);
    assert_eq!(
        after.mod_revision,
        published + 2,
        "one gap row, then the write"
    );
    assert_eq!(s.rewinds(), 1);
    assert_eq!(s.current_revision(), after.mod_revision);
    expect_closed(&mut rx).await;
    assert_eq!(s.get(&lost[0].key).await.unwrap(), None);
    assert_eq!(s.get(&kept[0].key).await.unwrap(), Some(kept[0].clone()));
    assert_eq!(
        query_i64(&url, "SELECT count(*) FROM kplane_log WHERE event = 3").await,
        1
    );
    assert_eq!(
        query_i64(
            &url,
            "SELECT create_revision FROM kplane_log WHERE event = 3"
        )
        .await,
        i64::try_from(kept_head + 1).unwrap()
    );

    // The lost revisions are gone for reads and watches: clients relist.
    for rev in [kept_head + 1, kept_head + 350, published] {
        assert!(is_gone(&list_at(&s, &p, rev).await.unwrap_err(), rev));
        assert!(is_gone(&s.watch(&p, rev, None).await.unwrap_err(), rev));
    }
    // Nothing happened at the gap row's revision: the kept state.
    assert_eq!(list_at(&s, &p, kept_head).await.unwrap(), 600);
    assert_eq!(list_at(&s, &p, published + 1).await.unwrap(), 600);
    let dyn_s: Arc<dyn Storage> = s.clone();
    assert_eq!(list_all(&dyn_s, &p, None).await.len(), 601);
    // A watch from before the gap passes over it without waiting.
    let mut from_kept = s.watch(&p, kept_head - 3, None).await.unwrap();
    expect_events(
        &mut from_kept,
        &[kept_head - 2, kept_head - 1, kept_head, after.mod_revision],
    )
    .await;
    let mut from_gap_row = s.watch(&p, published + 1, None).await.unwrap();
    let next = create_one(&s, "gap", "next").await;
    assert_eq!(next.mod_revision, after.mod_revision + 1);
    expect_events(&mut from_gap_row, &[after.mod_revision, next.mod_revision]).await;
    expect_events(&mut from_kept, &[next.mod_revision]).await;

    // A fresh store: knows the lost range at once, replays every row in order.
    let fresh = open(&url).await;
    assert_eq!(fresh.current_revision(), next.mod_revision);
    assert!(is_gone(
        &list_at(&fresh, &p, kept_head + 5).await.unwrap_err(),
        kept_head + 5
    ));
    let mut all = fresh.watch(&p, 0, None).await.unwrap();
    let want: Vec<Revision> = (1..=kept_head)
        .chain([after.mod_revision, next.mod_revision])
        .collect();
    expect_events(&mut all, &want).await;
    let last = create_one(&fresh, "gap", "last").await;
    expect_events(&mut all, &[last.mod_revision]).await;
    conformance::assert_quiet(&mut all).await;
    fresh.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// Millions of lost revisions are one gap row: a store at revision 2,000,005 loses
/// everything after revision 10.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn millions_of_lost_revisions_are_one_row() {
    let pg = server();
    let url = pg.create_database();
    let s = open(&url).await;
    create_many(&s, "big", "early", 10).await;
    s.shutdown().await.unwrap();
    drop(s);
    // Revisions 11..2,000,000 are an earlier gap (one row), so the counter is at 2,000,000.
    sql(
        &url,
        "INSERT INTO kplane_log (revision, event, cluster, resource, namespace, name, value, \
         create_revision) VALUES (2000000, 3, '', '', '', '', '', 11); \
         UPDATE kplane_meta SET revision = 2000000 WHERE id = 1",
    )
    .await;
    let s = open(&url).await;
    let late = create_many(&s, "big", "late", 5).await;
    assert_eq!(late[0].mod_revision, 2_000_001);
    // Everything since revision 10 is lost.
    sql(
        &url,
        "DELETE FROM kplane_objects WHERE create_revision > 10; \
         DELETE FROM kplane_log WHERE revision > 10; \
         DELETE FROM kplane_commits WHERE revision > 10; \
         UPDATE kplane_meta SET revision = 10 WHERE id = 1",
    )
    .await;
    s.catch_up().await.unwrap();
    assert_eq!(s.rewinds(), 1);
    assert_eq!(s.current_revision(), 2_000_006);
    assert_eq!(
        query_i64(&url, "SELECT count(*) FROM kplane_log WHERE revision > 10").await,
        1
    );
    assert_eq!(
        query_i64(&url, "SELECT revision FROM kplane_meta").await,
        2_000_006
    );
    let next = create_one(&s, "big", "next").await;
    assert_eq!(next.mod_revision, 2_000_007);
    // A fresh store knows the gap and passes over it.
    let fresh = open(&url).await;
    let p = Prefix::cluster("big");
    assert!(is_gone(&list_at(&fresh, &p, 11).await.unwrap_err(), 11));
    let mut rx = fresh.watch(&p, 9, None).await.unwrap();
    expect_events(&mut rx, &[10, next.mod_revision]).await;
    fresh.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// Three stores: `a` published up to 60, `b` up to 80, `c` only up to 40; the database
/// keeps 40. `a` notices first and raises the counter to 61; `b`, which published more,
/// finds it below its 80 and raises it to 81; `a` then closes its watchers again (the new
/// range covers its revision 61). `c` published none of the lost revisions: it keeps its
/// watch, which goes on past the gaps, and refuses a watch from a lost revision it has
/// not reached yet. Every store refuses the lost revisions, and the
/// next writes come after 81.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highest_published_revision_wins() {
    let pg = server();
    let url = pg.create_database();
    let (a, b, c) = (open(&url).await, open(&url).await, open(&url).await);
    let p = Prefix::cluster("hw");
    create_many(&a, "hw", "a", 40).await;
    c.catch_up().await.unwrap();
    create_many(&a, "hw", "b", 20).await;
    b.catch_up().await.unwrap();
    create_many(&b, "hw", "c", 20).await;
    assert_eq!(
        (
            a.current_revision(),
            b.current_revision(),
            c.current_revision()
        ),
        (60, 80, 40)
    );
    let mut a_rx = a.watch(&p, 60, None).await.unwrap();
    let mut b_rx = b.watch(&p, 80, None).await.unwrap();
    let mut c_rx = c.watch(&p, 40, None).await.unwrap();
    lose_after(&url, 40).await;

    a.catch_up().await.unwrap();
    assert_eq!((a.current_revision(), a.rewinds()), (61, 1));
    expect_closed(&mut a_rx).await;
    b.catch_up().await.unwrap();
    assert_eq!((b.current_revision(), b.rewinds()), (81, 1));
    expect_closed(&mut b_rx).await;
    a.catch_up().await.unwrap();
    assert_eq!((a.current_revision(), a.rewinds()), (81, 2));
    // A client of `b` resuming on `c`, which has not read that far: refused all the same.
    assert!(is_gone(&c.watch(&p, 70, None).await.unwrap_err(), 70));
    c.catch_up().await.unwrap();
    assert_eq!((c.current_revision(), c.rewinds()), (81, 0));
    assert_eq!(
        query_i64(&url, "SELECT count(*) FROM kplane_log WHERE event = 3").await,
        2
    );

    let x = create_one(&a, "hw", "x").await;
    assert_eq!(x.mod_revision, 82);
    let y = create_one(&b, "hw", "y").await;
    assert_eq!(y.mod_revision, 83);
    // `c` never published a lost revision: its watch goes on.
    c.catch_up().await.unwrap();
    expect_events(&mut c_rx, &[82, 83]).await;
    for s in [&a, &b, &c] {
        s.catch_up().await.unwrap();
        for rev in [41, 60, 61, 80] {
            assert!(is_gone(&list_at(s, &p, rev).await.unwrap_err(), rev));
        }
        assert_eq!(list_at(s, &p, 40).await.unwrap(), 40);
        assert_eq!(list_at(s, &p, 81).await.unwrap(), 40);
        assert_eq!(list_at(s, &p, 83).await.unwrap(), 42);
    }
    let mut all = c.watch(&p, 0, None).await.unwrap();
    let want: Vec<Revision> = (1..=40).chain([82, 83]).collect();
    expect_events(&mut all, &want).await;
    for s in [a, b, c] {
        s.shutdown().await.unwrap();
    }
}

/// A store that had not seen the lost revisions writes over them before the store that
/// published them notices (`b` at 40 writes 51..=55; `a` had published up to 60, the
/// database kept 50). `a` finds where the database differs from what it published
/// (revision 51) and records 51..=60 as lost; `b` learns it and closes its watchers: a
/// revision that meant two states is refused everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_written_over_are_lost_too() {
    let pg = server();
    let url = pg.create_database();
    let (a, b) = (open(&url).await, open(&url).await);
    let p = Prefix::cluster("ov");
    create_many(&a, "ov", "a", 40).await;
    b.catch_up().await.unwrap();
    create_many(&a, "ov", "b", 20).await;
    lose_after(&url, 50).await;
    let mut b_rx = b.watch(&p, 40, None).await.unwrap();
    let over = create_many(&b, "ov", "over", 5).await;
    assert_eq!(over[0].mod_revision, 51);
    assert_eq!(b.current_revision(), 55);
    expect_events(&mut b_rx, &(41..=55).collect::<Vec<_>>()).await;

    a.catch_up().await.unwrap();
    assert_eq!((a.current_revision(), a.rewinds()), (61, 1));
    assert_eq!(
        query_i64(
            &url,
            "SELECT create_revision FROM kplane_log WHERE event = 3"
        )
        .await,
        51
    );
    b.catch_up().await.unwrap();
    assert_eq!((b.current_revision(), b.rewinds()), (61, 1));
    expect_closed(&mut b_rx).await;
    for s in [&a, &b] {
        assert!(is_gone(&list_at(s, &p, 53).await.unwrap_err(), 53));
        assert_eq!(list_at(s, &p, 50).await.unwrap(), 50);
        assert_eq!(list_at(s, &p, 61).await.unwrap(), 55);
    }
    assert_eq!(create_one(&a, "ov", "z").await.mod_revision, 62);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// As above, but `b` writes past everything `a` published (`b` at 40 writes 51..=65, `a`
/// had published up to 60), so the counter is never below `a`'s position: `a` notices at
/// its next catch-up that the database's row at its position is not the one it
/// published, and records 51..=65 as lost with a gap row after the counter; `b` closes
/// its watchers when it reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_written_over_and_past_are_lost_too() {
    let pg = server();
    let url = pg.create_database();
    let (a, b) = (open(&url).await, open(&url).await);
    let p = Prefix::cluster("op");
    create_many(&a, "op", "a", 40).await;
    b.catch_up().await.unwrap();
    create_many(&a, "op", "b", 20).await;
    let mut a_rx = a.watch(&p, 60, None).await.unwrap();
    lose_after(&url, 50).await;
    let mut b_rx = b.watch(&p, 40, None).await.unwrap();
    create_many(&b, "op", "over", 15).await;
    assert_eq!(b.current_revision(), 65);
    expect_events(&mut b_rx, &(41..=65).collect::<Vec<_>>()).await;

    a.catch_up().await.unwrap();
    assert_eq!((a.current_revision(), a.rewinds()), (66, 1));
    expect_closed(&mut a_rx).await;
    assert_eq!(
        query_i64(
            &url,
            "SELECT create_revision FROM kplane_log WHERE event = 3 AND revision = 66"
        )
        .await,
        51
    );
    b.catch_up().await.unwrap();
    assert_eq!((b.current_revision(), b.rewinds()), (66, 1));
    expect_closed(&mut b_rx).await;
    for s in [&a, &b] {
        for rev in [51, 60, 63, 65] {
            assert!(is_gone(&list_at(s, &p, rev).await.unwrap_err(), rev));
        }
        assert_eq!(list_at(s, &p, 50).await.unwrap(), 50);
        assert_eq!(list_at(s, &p, 66).await.unwrap(), 65);
        // The cache holds no lost write: `a`'s key at 55 is gone.
        assert_eq!(s.get(&key("op", "ns", "b00014")).await.unwrap(), None);
    }
    assert_eq!(create_one(&b, "op", "z").await.mod_revision, 67);
    // Without a loss, every catch-up finds its position's row as published: no gap row.
    a.catch_up().await.unwrap();
    assert_eq!(a.current_revision(), 67);
    assert_eq!(
        query_i64(&url, "SELECT count(*) FROM kplane_log WHERE event = 3").await,
        1
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
