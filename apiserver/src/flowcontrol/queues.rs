//! The requests waiting for seats: one queue per logical cluster and, inside it, one per
//! user. Clusters are served by deficit round robin counted in seats (a cluster's turn
//! earns it one seat of credit; a request runs once its cluster has credit for all of its
//! seats), users inside a cluster by plain round robin. A cluster at its own seat cap is
//! passed over; when the server has no seats for the request whose turn it is, nothing
//! runs until seats free up, so that wide requests (large LISTs) are not starved by narrow
//! ones. Pure bookkeeping: no locks, clocks or tasks (the caller holds the lock).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// One waiting request.
#[derive(Debug)]
pub(super) struct Waiter<T> {
    pub id: u64,
    pub seats: u32,
    pub payload: T,
}

#[derive(Debug)]
struct UserQueue<T> {
    user: Arc<str>,
    items: VecDeque<Waiter<T>>,
}

#[derive(Debug)]
struct ClusterQueue<T> {
    /// Users with waiting requests; the front one is served next.
    users: VecDeque<UserQueue<T>>,
    len: usize,
    /// Seats of credit (deficit round robin).
    deficit: u32,
}

/// Whether the request whose turn it is may run now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fit {
    /// It runs (the caller has taken its seats).
    Yes,
    /// Its cluster is at its seat cap: the turn passes to the next cluster.
    ClusterFull,
    /// The server has too few free seats: nothing runs until some are released.
    ServerFull,
}

/// The waiting requests of every cluster.
#[derive(Debug)]
pub(super) struct Queues<T> {
    clusters: HashMap<Arc<str>, ClusterQueue<T>>,
    /// Clusters with waiting requests; the front one has the turn.
    ring: VecDeque<Arc<str>>,
    /// Whether the front cluster has been given its credit for this turn.
    credited: bool,
    len: usize,
    next_id: u64,
}

impl<T> Default for Queues<T> {
    fn default() -> Self {
        Queues {
            clusters: HashMap::new(),
            ring: VecDeque::new(),
            credited: false,
            len: 0,
            next_id: 0,
        }
    }
}

impl<T> Queues<T> {
    /// Requests waiting, all clusters together.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Requests `cluster` has waiting.
    pub fn cluster_len(&self, cluster: &str) -> usize {
        self.clusters.get(cluster).map_or(0, |c| c.len)
    }

    /// Queues a request of `seats` seats (at least one); `Err` gives the payload back when
    /// the cluster already has `limit` requests waiting.
    pub fn push(
        &mut self,
        cluster: &Arc<str>,
        user: &str,
        seats: u32,
        payload: T,
        limit: usize,
    ) -> Result<u64, T> {
        if self.cluster_len(cluster) >= limit {
            return Err(payload);
        }
        let id = self.next_id;
        self.next_id += 1;
        let waiter = Waiter {
            id,
            seats: seats.max(1),
            payload,
        };
        let cq = match self.clusters.get_mut(&**cluster) {
            Some(cq) => cq,
            None => {
                self.ring.push_back(cluster.clone());
                self.clusters
                    .entry(cluster.clone())
                    .or_insert(ClusterQueue {
                        users: VecDeque::new(),
                        len: 0,
                        deficit: 0,
                    })
            }
        };
        match cq.users.iter_mut().find(|u| &*u.user == user) {
            Some(u) => u.items.push_back(waiter),
            None => cq.users.push_back(UserQueue {
                user: Arc::from(user),
                items: VecDeque::from([waiter]),
            }),
        }
        cq.len += 1;
        self.len += 1;
        Ok(id)
    }

    /// Takes out the request `id` of `cluster` and `user` (it gave up waiting); `None` when
    /// it is no longer queued (it was dispatched).
    pub fn remove(&mut self, cluster: &str, user: &str, id: u64) -> Option<Waiter<T>> {
        let cq = self.clusters.get_mut(cluster)?;
        let ui = cq.users.iter().position(|u| &*u.user == user)?;
        let pos = cq.users[ui].items.iter().position(|w| w.id == id)?;
        let waiter = cq.users[ui].items.remove(pos)?;
        if cq.users[ui].items.is_empty() {
            cq.users.remove(ui);
        }
        cq.len -= 1;
        self.len -= 1;
        if cq.len == 0 {
            self.clusters.remove(cluster);
            if let Some(at) = self.ring.iter().position(|c| &**c == cluster) {
                self.ring.remove(at);
                if at == 0 {
                    self.credited = false;
                }
            }
        }
        Some(waiter)
    }

    /// The next request to run, if any may: `fit` is asked about the request whose turn it
    /// is and takes its seats when it answers [`Fit::Yes`].
    pub fn pop(&mut self, mut fit: impl FnMut(&str, u32) -> Fit) -> Option<(Arc<str>, Waiter<T>)> {
        // Every cluster may need up to its head's width in turns to earn its credit, and
        // every cluster may be at its cap: bound the walk by both.
        let max_width = self
            .clusters
            .values()
            .filter_map(|c| c.users.front()?.items.front().map(|w| w.seats))
            .max()
            .unwrap_or(1) as usize;
        let mut turns = self.ring.len() * (max_width + 1);
        // Once as many clusters as there are have answered that they are at their cap,
        // asking again this time is no use.
        let mut capped = 0;
        while turns > 0 {
            turns -= 1;
            let cluster = self.ring.front()?.clone();
            let Some(cq) = self.clusters.get_mut(&cluster) else {
                // Unreachable: the ring names only clusters with queues.
                self.ring.pop_front();
                self.credited = false;
                continue;
            };
            let Some(seats) = cq
                .users
                .front()
                .and_then(|u| u.items.front())
                .map(|w| w.seats)
            else {
                self.ring.pop_front();
                self.clusters.remove(&cluster);
                self.credited = false;
                continue;
            };
            if !self.credited {
                // Credit never exceeds what the head request needs, so that turns spent
                // at the cluster's cap or waiting for the server do not pile up.
                cq.deficit = cq.deficit.saturating_add(1).min(seats);
                self.credited = true;
            }
            if cq.deficit < seats {
                self.next_turn();
                continue;
            }
            match fit(&cluster, seats) {
                Fit::ServerFull => return None,
                Fit::ClusterFull => {
                    capped += 1;
                    if capped >= self.ring.len() {
                        return None;
                    }
                    self.next_turn();
                    continue;
                }
                Fit::Yes => {}
            }
            let mut user = cq.users.pop_front()?;
            let waiter = user.items.pop_front()?;
            if !user.items.is_empty() {
                cq.users.push_back(user);
            }
            cq.deficit -= seats;
            cq.len -= 1;
            self.len -= 1;
            if cq.len == 0 {
                self.clusters.remove(&cluster);
                self.ring.pop_front();
                self.credited = false;
            }
            return Some((cluster, waiter));
        }
        None
    }

    /// Ends the front cluster's turn.
    fn next_turn(&mut self) {
        self.ring.rotate_left(1.min(self.ring.len()));
        self.credited = false;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn name(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    /// Pops everything with unlimited seats, recording (cluster, payload).
    fn drain(q: &mut Queues<u32>) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        while let Some((c, w)) = q.pop(|_, _| Fit::Yes) {
            out.push((c.to_string(), w.payload));
        }
        out
    }

    #[test]
    fn clusters_take_turns_whatever_their_backlog() {
        let mut q = Queues::default();
        let (a, b) = (name("noisy"), name("quiet"));
        for i in 0..100 {
            q.push(&a, "u", 1, i, 1000).unwrap();
        }
        q.push(&b, "u", 1, 1000, 1000).unwrap();
        q.push(&b, "u", 1, 1001, 1000).unwrap();
        let order = drain(&mut q);
        // The quiet cluster's two requests run within its first two turns, not after the
        // noisy cluster's hundred.
        let quiet: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, (c, _))| c == "quiet")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(quiet, vec![1, 3]);
        assert_eq!(order.len(), 102);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn users_inside_a_cluster_take_turns() {
        let mut q = Queues::default();
        let c = name("c");
        for i in 0..5 {
            q.push(&c, "controller", 1, i, 1000).unwrap();
        }
        q.push(&c, "kubectl", 1, 100, 1000).unwrap();
        let order: Vec<u32> = drain(&mut q).into_iter().map(|(_, p)| p).collect();
        assert_eq!(order, vec![0, 100, 1, 2, 3, 4]);
    }

    #[test]
    fn a_cluster_queue_holds_at_most_its_limit() {
        let mut q = Queues::default();
        let c = name("c");
        for i in 0..10 {
            assert!(q.push(&c, "u", 1, i, 10).is_ok());
        }
        // One over the limit is refused, and ten times over too; other clusters still queue.
        for i in 10..100 {
            assert_eq!(q.push(&c, "u", 1, i, 10), Err(i));
        }
        assert!(q.push(&name("other"), "u", 1, 7, 10).is_ok());
        assert_eq!(q.cluster_len("c"), 10);
        assert_eq!(q.len(), 11);
    }

    #[test]
    fn seats_are_shared_fairly_between_wide_and_narrow_requests() {
        let mut q = Queues::default();
        let (wide, narrow) = (name("wide"), name("narrow"));
        for i in 0..20 {
            q.push(&wide, "u", 10, i, 1000).unwrap();
            q.push(&narrow, "u", 1, 100 + i, 1000).unwrap();
        }
        let order = drain(&mut q);
        // Over the first eleven dispatches the wide cluster's single LIST (ten seats) is
        // matched by ten narrow requests: equal seats, not equal requests.
        let first: Vec<&str> = order[..11].iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(first.iter().filter(|c| **c == "wide").count(), 1);
        assert_eq!(first.iter().filter(|c| **c == "narrow").count(), 10);
    }

    #[test]
    fn a_cluster_at_its_cap_is_passed_over_and_a_full_server_stops_everything() {
        let mut q = Queues::default();
        let (capped, other) = (name("capped"), name("other"));
        q.push(&capped, "u", 1, 1, 1000).unwrap();
        q.push(&other, "u", 1, 2, 1000).unwrap();
        let got = q.pop(|c, _| {
            if c == "capped" {
                Fit::ClusterFull
            } else {
                Fit::Yes
            }
        });
        assert_eq!(
            got.map(|(c, w)| (c.to_string(), w.payload)),
            Some(("other".into(), 2))
        );
        // Only the capped cluster is left: nothing runs, and the walk ends.
        assert!(q.pop(|_, _| Fit::ClusterFull).is_none());
        assert!(q.pop(|_, _| Fit::ServerFull).is_none());
        assert_eq!(q.len(), 1);
        assert_eq!(drain(&mut q), vec![("capped".to_string(), 1)]);
    }

    #[test]
    fn a_request_that_gives_up_leaves_no_trace() {
        let mut q = Queues::default();
        let (a, b) = (name("a"), name("b"));
        let id = q.push(&a, "u", 1, 1, 1000).unwrap();
        q.push(&b, "u", 1, 2, 1000).unwrap();
        assert_eq!(q.remove("a", "u", id).map(|w| w.payload), Some(1));
        assert!(q.remove("a", "u", id).is_none());
        assert_eq!(q.cluster_len("a"), 0);
        assert_eq!(drain(&mut q), vec![("b".to_string(), 2)]);
        // A queue of 10x a typical backlog drains completely after removals in the middle.
        let ids: Vec<(u64, String)> = (0..1000)
            .map(|i| {
                let user = format!("u{}", i % 7);
                (q.push(&a, &user, 1, i, 10_000).unwrap(), user)
            })
            .collect();
        for (id, user) in ids.iter().step_by(3) {
            assert!(q.remove("a", user, *id).is_some());
        }
        assert_eq!(drain(&mut q).len(), 1000 - ids.iter().step_by(3).count());
        assert_eq!(q.len(), 0);
    }
}
