//! The seats, queues and refusals of [`super::FlowControl`], driven directly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_types::UserInfo;

use super::*;

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.into(),
        ..Default::default()
    }
}

fn small(queue: u32) -> Arc<FlowControl> {
    FlowControl::new(FlowConfig {
        max_seats: 20,
        max_seats_per_cluster: 10,
        max_queued_per_cluster: queue,
        queue_wait: Duration::from_secs(60),
        syncer_seats: 2,
        shared_window: Duration::from_millis(50),
    })
}

/// Holds `n` one-seat requests of `cluster`.
async fn hold(fc: &Arc<FlowControl>, cluster: &str, n: usize) -> Vec<Seat> {
    let mut seats = Vec::new();
    for _ in 0..n {
        seats.push(fc.admit(cluster, &user("u"), 1, None).await.unwrap());
    }
    seats
}

/// `n` one-seat requests of `cluster`, each admitted in a task of its own (they may
/// wait in its queue).
fn queue_up(
    fc: &Arc<FlowControl>,
    cluster: &'static str,
    n: usize,
) -> Vec<tokio::task::JoinHandle<Result<Seat, Rejection>>> {
    (0..n)
        .map(|_| {
            let fc = fc.clone();
            tokio::spawn(async move { fc.admit(cluster, &user("u"), 1, None).await })
        })
        .collect()
}

/// Lets spawned waiters reach their queue.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn seats_are_taken_and_given_back() {
    let fc = small(5);
    let held = hold(&fc, "a", 3).await;
    let list = fc.admit("b", &user("u"), 10, None).await.unwrap();
    assert_eq!((list.seats(), fc.seats_in_use()), (10, 13));
    drop(list);
    assert_eq!(fc.seats_in_use(), 3);
    drop(held);
    assert_eq!(fc.seats_in_use(), 0);
    assert_eq!(fc.waiting(), 0);
}

#[tokio::test]
async fn a_cluster_past_its_cap_queues_and_then_is_refused_while_another_runs() {
    let fc = small(5);
    // Another cluster holds a seat: the caps bind.
    let _bystander = hold(&fc, "bystander", 1).await;
    let _noisy = hold(&fc, "noisy", 10).await;
    // The noisy cluster is at its cap: its next five requests wait, the sixth and the
    // fiftieth are refused at once.
    let mut waiting = Vec::new();
    for _ in 0..5 {
        let fc = fc.clone();
        waiting.push(tokio::spawn(async move {
            fc.admit("noisy", &user("u"), 1, None)
                .await
                .map(|s| s.seats())
        }));
    }
    settle().await;
    assert_eq!(fc.waiting(), 5);
    for _ in 0..45 {
        assert_eq!(
            fc.admit("noisy", &user("u"), 1, None).await.err(),
            Some(Rejection::QueueFull)
        );
    }
    // The quiet cluster runs at once: the server has seats.
    let quiet = fc.admit("quiet", &user("u"), 1, None).await.unwrap();
    assert_eq!(quiet.seats(), 1);
    drop(quiet);
    // Releasing the noisy seats lets its queued requests run, one per release.
    drop(_noisy);
    for w in waiting {
        assert_eq!(w.await.unwrap(), Ok(1));
    }
    assert_eq!(fc.seats_in_use(), 1);
    assert_eq!(fc.waiting(), 0);
}

#[tokio::test]
async fn a_quiet_cluster_waits_for_one_release_at_most_when_the_server_is_full() {
    let fc = small(100);
    let mut a = hold(&fc, "a", 10).await;
    let _b = hold(&fc, "b", 10).await;
    assert_eq!(fc.seats_in_use(), 20);
    // Cluster a has a backlog; then the quiet cluster c asks.
    let mut backlog = Vec::new();
    for _ in 0..20 {
        let fc = fc.clone();
        backlog.push(tokio::spawn(async move {
            let _s = fc.admit("a", &user("u"), 1, None).await.unwrap();
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }));
    }
    settle().await;
    let quiet = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit("c", &user("u"), 1, None).await })
    };
    settle().await;
    assert_eq!(fc.waiting(), 21);
    // Two seats come free: c has run by then, ahead of a's backlog of twenty (one of
    // which runs at most).
    drop(a.pop());
    settle().await;
    drop(a.pop());
    let quiet = quiet.await.unwrap().unwrap();
    assert_eq!(quiet.seats(), 1);
    assert_eq!(fc.waiting(), 19);
    for t in backlog {
        t.abort();
    }
}

#[tokio::test]
async fn a_request_that_waits_too_long_is_refused_and_leaves_nothing_behind() {
    let fc = FlowControl::new(FlowConfig {
        max_seats: 10,
        max_seats_per_cluster: 10,
        max_queued_per_cluster: 10,
        queue_wait: Duration::from_millis(20),
        syncer_seats: 0,
        shared_window: Duration::from_millis(50),
    });
    let held = hold(&fc, "a", 10).await;
    assert_eq!(
        fc.admit("b", &user("u"), 1, None).await.err(),
        Some(Rejection::TimeOut)
    );
    // A shorter wait the request sets (a quarter of its timeout) wins.
    assert_eq!(
        fc.admit("b", &user("u"), 1, Some(Duration::from_millis(1)))
            .await
            .err(),
        Some(Rejection::TimeOut)
    );
    assert_eq!(fc.waiting(), 0);
    drop(held);
    assert_eq!(fc.seats_in_use(), 0);
    // The cluster's entry is usable again.
    assert_eq!(fc.admit("b", &user("u"), 1, None).await.unwrap().seats(), 1);
}

#[tokio::test]
async fn a_request_whose_client_goes_away_gives_its_place_and_seats_back() {
    let fc = small(10);
    let _bystander = hold(&fc, "bystander", 1).await;
    let held = hold(&fc, "a", 10).await;
    let gone = {
        let fc = fc.clone();
        tokio::spawn(async move {
            let _s = fc.admit("a", &user("u"), 1, None).await;
        })
    };
    settle().await;
    assert_eq!(fc.waiting(), 1);
    gone.abort();
    let _ = gone.await;
    assert_eq!(fc.waiting(), 0);
    drop(held);
    assert_eq!(fc.seats_in_use(), 1);
    // The cluster can use its whole cap again.
    let again = hold(&fc, "a", 10).await;
    assert_eq!(fc.seats_in_use(), 11);
    drop(again);
}

#[tokio::test]
async fn system_masters_never_wait_and_syncers_have_seats_of_their_own() {
    let fc = small(1);
    let _a = hold(&fc, "a", 10).await;
    let _b = hold(&fc, "b", 10).await;
    let admin = UserInfo {
        username: "admin".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    };
    for _ in 0..100 {
        assert_eq!(fc.admit("a", &admin, 10, None).await.unwrap().seats(), 0);
    }
    // Two seats of the syncers' own, then they queue like a tenant (one may wait).
    let s1 = fc.admit_syncer(&user("syncer")).await.unwrap();
    let s2 = fc.admit_syncer(&user("syncer")).await.unwrap();
    let third = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit_syncer(&user("syncer")).await.map(|s| s.seats()) })
    };
    settle().await;
    assert_eq!(fc.waiting(), 1);
    assert_eq!(
        fc.admit_syncer(&user("syncer")).await.err(),
        Some(Rejection::QueueFull)
    );
    drop((s1, s2));
    // Its own seats freed do not serve the queue; a server seat does.
    drop(_a);
    assert_eq!(third.await.unwrap(), Ok(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn under_a_thousand_racing_requests_the_limits_hold_and_every_seat_comes_back() {
    let fc = FlowControl::new(FlowConfig {
        max_seats: 30,
        max_seats_per_cluster: 12,
        max_queued_per_cluster: 1000,
        queue_wait: Duration::from_secs(60),
        syncer_seats: 0,
        shared_window: Duration::from_millis(50),
    });
    let mut tasks = Vec::new();
    for i in 0..1000u32 {
        let fc = fc.clone();
        tasks.push(tokio::spawn(async move {
            let cluster = format!("c{}", i % 10);
            let seats = 1 + i % 10;
            let s = fc
                .admit(&cluster, &user(&format!("u{}", i % 3)), seats, None)
                .await
                .unwrap();
            assert!(fc.seats_in_use() <= 30);
            tokio::task::yield_now().await;
            drop(s);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(fc.seats_in_use(), 0);
    assert_eq!(fc.waiting(), 0);
    for shard in fc.shards.iter() {
        for c in shard.lock().unwrap().values() {
            assert_eq!((c.executing, c.queued), (0, 0));
        }
    }
}

#[tokio::test]
async fn a_request_waiting_for_the_store_lends_its_seats_and_takes_them_back() {
    let fc = small(5);
    let bystander = hold(&fc, "bystander", 1).await;
    let writer = fc.admit("a", &user("u"), 10, None).await.unwrap();
    assert_eq!(fc.seats_in_use(), 11);
    // Cluster a is at its cap: another request of it waits.
    let next = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit("a", &user("u"), 10, None).await })
    };
    settle().await;
    assert_eq!(fc.waiting(), 1);
    // The first waits for the store: its seats go to the waiting one.
    let waiter = writer.io_waiter().unwrap();
    let commit = {
        let waiter = waiter.clone();
        async move {
            kplane_storage::io_wait::scope(waiter, async {
                kplane_storage::io_wait::waiting(async { settle().await }).await
            })
            .await
        }
    };
    commit.await;
    let second = next.await.unwrap().unwrap();
    assert_eq!(fc.waiting(), 0);
    // Both hold their seats now, past the cluster's cap for a moment.
    assert_eq!(fc.seats_in_use(), 21);
    drop(second);
    drop(writer);
    drop(bystander);
    assert_eq!(fc.seats_in_use(), 0);
    // A request dropped while its seats are lent gives back nothing twice.
    let lent = fc.admit("b", &user("u"), 3, None).await.unwrap();
    let w = lent.io_waiter().unwrap();
    w.begin();
    assert_eq!(fc.seats_in_use(), 0);
    drop(lent);
    w.end();
    assert_eq!(fc.seats_in_use(), 0);
    let mut out = String::new();
    fc.render_metrics(&mut out);
    assert!(
        out.contains("kplane_flowcontrol_seats_lent_total 2"),
        "{out}"
    );
    assert!(out.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"kplane-tenants\",priority_level=\"kplane-tenants\"} 0"), "{out}");
}

#[tokio::test]
async fn a_cluster_alone_may_pass_its_cap_and_the_cap_binds_once_another_holds_seats() {
    let fc = small(5);
    // Alone, a cluster takes the server's seats past its cap of ten.
    let mut alone = hold(&fc, "a", 15).await;
    assert_eq!((fc.seats_in_use(), fc.waiting()), (15, 0));
    // Another cluster arrives: it runs at once, and a's next request waits.
    let b = fc.admit("b", &user("u"), 1, None).await.unwrap();
    let next = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit("a", &user("u"), 1, None).await.map(|s| s.seats()) })
    };
    settle().await;
    assert_eq!(fc.waiting(), 1);
    // Back under its cap (nine seats), a's waiting request runs at the next release.
    alone.truncate(9);
    assert_eq!(next.await.unwrap(), Ok(1));
    // Once b holds nothing and the shared window (50 ms here) has passed since its
    // request, a is alone again and passes its cap at once.
    drop(b);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let more = hold(&fc, "a", 5).await;
    assert_eq!(fc.seats_in_use(), 9 + 5);
    drop((alone, more));
    assert_eq!((fc.seats_in_use(), fc.waiting()), (0, 0));
}

#[tokio::test]
async fn a_wide_request_waiting_for_the_server_is_not_overtaken_by_narrow_ones() {
    let fc = small(5);
    let mut a = hold(&fc, "a", 10).await;
    let _b = hold(&fc, "b", 9).await;
    // A LIST of ten seats of c finds one seat free: it waits for the server.
    let wide = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit("c", &user("u"), 10, None).await })
    };
    settle().await;
    // A narrow request of d arrives after it: it waits too, though a seat is free.
    let narrow = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit("d", &user("u"), 1, None).await })
    };
    settle().await;
    assert_eq!((fc.seats_in_use(), fc.waiting()), (19, 2));
    // Seats come free one by one: none goes to the narrow request before the wide one
    // has its ten.
    for _ in 0..8 {
        drop(a.pop());
        settle().await;
        assert_eq!(fc.waiting(), 2);
    }
    drop(a.pop());
    settle().await;
    let wide = wide.await.unwrap().unwrap();
    assert_eq!((wide.seats(), fc.seats_in_use(), fc.waiting()), (10, 20, 1));
    drop(a.pop());
    assert_eq!(narrow.await.unwrap().unwrap().seats(), 1);
}

#[tokio::test]
async fn idle_clusters_are_swept_so_the_counts_stay_bounded_past_the_sweep_size() {
    let fc = small(5);
    let held = hold(&fc, "kept", 3).await;
    // Ten times the clusters that fill every shard to its sweep size, each making one
    // request and going idle.
    let clusters = 10 * SHARDS * SHARD_SWEEP_AT;
    for i in 0..clusters {
        let s = fc
            .admit(&format!("c{i}"), &user("u"), 1, None)
            .await
            .unwrap();
        drop(s);
    }
    let entries: usize = fc.shards.iter().map(|s| s.lock().unwrap().len()).sum();
    assert!(
        entries <= SHARDS * (SHARD_SWEEP_AT + 1),
        "{entries} cluster entries kept for {clusters} clusters"
    );
    // A cluster holding seats is never swept: its seats still come back.
    assert_eq!(fc.seats_in_use(), 3);
    drop(held);
    assert_eq!((fc.seats_in_use(), fc.waiting()), (0, 0));
    assert_eq!(fc.busy.load(Ordering::SeqCst), 0);
}

#[test]
fn a_refusal_is_kube_apiservers_429() {
    let s = Rejection::QueueFull.status();
    assert_eq!(s.code, 429);
    assert_eq!(s.reason.as_str(), "TooManyRequests");
    assert_eq!(s.message, "Too many requests, please try again later.");
    assert_eq!(s.retry_after, Some(1));
}

#[test]
fn settings_below_the_widest_request_are_refused() {
    let ok = FlowConfig::default();
    assert!(ok.validate().is_ok());
    let mut c = ok.clone();
    c.max_seats_per_cluster = 9;
    assert!(c
        .validate()
        .unwrap_err()
        .contains("--max-seats-per-cluster"));
    let mut c = ok.clone();
    c.max_seats = 5;
    assert!(c.validate().is_err());
    let mut c = ok;
    c.queue_wait = Duration::ZERO;
    assert!(c.validate().is_err());
}

#[test]
fn metrics_name_the_upstream_series() {
    let fc = FlowControl::new(FlowConfig::default());
    let mut out = String::new();
    fc.render_metrics(&mut out);
    for series in [
        "apiserver_flowcontrol_current_executing_requests{",
        "apiserver_flowcontrol_current_executing_seats{",
        "apiserver_flowcontrol_current_inqueue_requests{",
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"kplane-tenants\"} 600",
        "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"kplane-tenants\",priority_level=\"kplane-tenants\",reason=\"queue-full\"} 0",
        "apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute=\"true\"",
    ] {
        assert!(out.contains(series), "{series} missing from\n{out}");
    }
}

/// A request that waited behind its cluster's cap (or behind requests of its cluster
/// already waiting) is past its cluster's share; one that found its seats free, or
/// waited only for the server's seats, is not; a cluster alone is never capped.
#[tokio::test]
async fn requests_that_queue_behind_their_clusters_cap_are_past_its_share() {
    // A queue of 100: ten times the cap of 10 may wait.
    let fc = small(100);
    // Alone, a cluster takes every seat it asks for: none past its share.
    let alone = hold(&fc, "noisy", 12).await;
    assert!(alone.iter().all(|s| !s.past_share()));
    drop(alone);
    tokio::time::sleep(Duration::from_millis(60)).await;

    let quiet = fc.admit("quiet", &user("q"), 1, None).await.unwrap();
    assert!(!quiet.past_share());
    let noisy = hold(&fc, "noisy", 10).await;
    assert!(noisy.iter().all(|s| !s.past_share()), "within the cap");
    // At its cap: the next requests wait, past the cluster's share, and get their seats
    // as the first ones end; at the boundary and ten times over it.
    let waiting = queue_up(&fc, "noisy", 100);
    settle().await;
    // The quiet cluster's own next request finds a seat: within its share.
    let quiet2 = fc.admit("quiet", &user("q"), 1, None).await.unwrap();
    assert!(!quiet2.past_share());
    drop(noisy);
    let mut past = 0;
    for w in waiting {
        let seat = w.await.unwrap().unwrap();
        past += usize::from(seat.past_share());
        drop(seat);
    }
    assert_eq!(past, 100);

    // Requests that wait only because the server is full are not past their share, the
    // second of a cluster's waiting requests no more than the first.
    drop((quiet, quiet2));
    let fc = small(50);
    let a = hold(&fc, "a", 10).await;
    let b = hold(&fc, "b", 10).await;
    let c = queue_up(&fc, "c", 2);
    settle().await;
    assert_eq!(fc.waiting(), 2);
    drop(a);
    for c in c {
        assert!(!c.await.unwrap().unwrap().past_share());
    }
    drop(b);
}

/// The sync endpoint's requests past its own seats queue like a tenant's, but its queue is
/// every syncer's: never lowered.
#[tokio::test]
async fn the_sync_endpoints_queue_is_never_past_a_share() {
    let fc = small(50);
    let _bystander = hold(&fc, "bystander", 1).await;
    let mut held = Vec::new();
    for _ in 0..(2 + 10) {
        held.push(fc.admit_syncer(&user("syncer")).await.unwrap());
    }
    let waiting = {
        let fc = fc.clone();
        tokio::spawn(async move { fc.admit_syncer(&user("syncer")).await.unwrap() })
    };
    settle().await;
    assert_eq!(fc.waiting(), 1, "the syncer's request waits behind its cap");
    held.pop();
    let seat = waiting.await.unwrap();
    assert!(!seat.past_share());
}
