//! Leader election over a `coordination.k8s.io/v1` Lease, done the way client-go's `LeaseLock`
//! does it: GET; 404 ⇒ create; otherwise replace carrying the observed resourceVersion, so a
//! contender acting on a stale read loses with 409 Conflict.
//!
//! Time is passed in explicitly (the server does not interpret lease times), which makes
//! expiry deterministic without sleeping.

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kplane_e2e::fixtures::{error_code, error_reason};
use kplane_e2e::KplaneServer;
use kube::api::{GetParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use serde_json::Value;

const LEASE: &str = "controller-leader";
const NAMESPACE: &str = "default";
const DURATION_SECS: i32 = 15;

#[derive(Debug, PartialEq)]
enum Outcome {
    Acquired,
    Renewed,
    HeldBy(String),
}

struct Contender {
    api: Api<Lease>,
    identity: String,
}

impl Contender {
    fn new(client: &Client, identity: &str) -> Self {
        Self {
            api: Api::namespaced(client.clone(), NAMESPACE),
            identity: identity.to_owned(),
        }
    }

    async fn read(&self) -> Result<Option<Lease>, kube::Error> {
        match self.api.get(LEASE).await {
            Ok(lease) => Ok(Some(lease)),
            Err(e) if error_code(&e) == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&self, now: Timestamp) -> Result<Outcome, kube::Error> {
        let observed = self.read().await?;
        self.write(observed, now).await
    }

    /// The write half, acting on a (possibly stale) observation.
    async fn write(&self, observed: Option<Lease>, now: Timestamp) -> Result<Outcome, kube::Error> {
        let Some(mut lease) = observed else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE.to_owned()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(DURATION_SECS),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            self.api.create(&PostParams::default(), &lease).await?;
            return Ok(Outcome::Acquired);
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let expires = spec.renew_time.as_ref().map(|t| {
            t.0 + SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(0).into())
        });
        let expired = expires.is_none_or(|e| e <= now);
        if holder != self.identity && !holder.is_empty() && !expired {
            return Ok(Outcome::HeldBy(holder));
        }
        let outcome = if holder == self.identity {
            Outcome::Renewed
        } else {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            Outcome::Acquired
        };
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(DURATION_SECS);
        // `lease.metadata.resourceVersion` is the observed one: the precondition.
        self.api
            .replace(LEASE, &PostParams::default(), &lease)
            .await?;
        Ok(outcome)
    }
}

/// How client-go (Go's `RFC3339Micro`) and k8s-openapi write a MicroTime.
fn micro(t: Timestamp) -> Result<String> {
    match serde_json::to_value(MicroTime(t))? {
        Value::String(s) => Ok(s),
        other => bail!("MicroTime serialised as {other}"),
    }
}

fn has_six_fraction_digits(s: &str) -> bool {
    // 2006-01-02T15:04:05.000000Z
    s.len() == 27
        && s.as_bytes()[19] == b'.'
        && s[20..26].bytes().all(|b| b.is_ascii_digit())
        && s.ends_with('Z')
}

/// The lease exactly as the server serialises it.
async fn raw_lease(client: &Client) -> Result<Value> {
    let url = format!("/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases");
    let request = kube::core::Request::new(url).get(LEASE, &GetParams::default())?;
    let text = client.request_text(request).await?;
    serde_json::from_str(&text).context("lease JSON")
}

async fn expect_times(client: &Client, acquire: Timestamp, renew: Timestamp) -> Result<Value> {
    let raw = raw_lease(client).await?;
    for (field, t) in [("acquireTime", acquire), ("renewTime", renew)] {
        let got = raw["spec"][field].as_str().unwrap_or_default();
        ensure!(
            has_six_fraction_digits(got),
            "{field} {got:?} lacks 6 fractional digits"
        );
        assert_eq!(got, micro(t)?, "{field} did not round-trip");
    }
    Ok(raw)
}

#[tokio::test]
async fn lease_lock_leader_election_with_conflicting_contenders() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    let a = Contender::new(&client, "candidate-a");
    let b = Contender::new(&client, "candidate-b");

    // Whole second + 120 ms: the trailing zeros of ".120000" must survive too.
    let t0 =
        Timestamp::from_second(Timestamp::now().as_second())? + SignedDuration::from_millis(120);
    let t = |micros: i64| t0 + SignedDuration::from_micros(micros);

    assert_eq!(a.try_acquire_or_renew(t0).await?, Outcome::Acquired);
    let raw = expect_times(&client, t0, t0).await?;
    assert_eq!(raw["spec"]["holderIdentity"], "candidate-a");
    assert_eq!(raw["spec"]["leaseDurationSeconds"], DURATION_SECS);
    assert_eq!(raw["spec"]["leaseTransitions"], 0);

    // A second contender that also saw "no lease" loses the create race.
    let lost = b.write(None, t(1_000_000)).await;
    let err = lost.err().context("second create of the lease succeeded")?;
    assert_eq!(
        (error_code(&err), error_reason(&err)),
        (Some(409), Some("AlreadyExists"))
    );

    // B sees a valid lease held by A.
    assert_eq!(
        b.try_acquire_or_renew(t(2_000_000)).await?,
        Outcome::HeldBy("candidate-a".to_owned())
    );
    // A renews; acquireTime stays.
    assert_eq!(
        a.try_acquire_or_renew(t(5_123_456)).await?,
        Outcome::Renewed
    );
    expect_times(&client, t0, t(5_123_456)).await?;

    // Much later (expired): B reads, then A renews before B writes. B's replace carries a
    // stale resourceVersion and must lose with 409 Conflict.
    let late = t(60_654_321);
    let seen_by_b = b.read().await?;
    assert_eq!(a.try_acquire_or_renew(late).await?, Outcome::Renewed);
    let lost = b.write(seen_by_b, late).await;
    let err = lost
        .err()
        .context("replace with a stale resourceVersion succeeded")?;
    assert_eq!(
        (error_code(&err), error_reason(&err)),
        (Some(409), Some("Conflict"))
    );
    let raw = expect_times(&client, t0, late).await?;
    assert_eq!(raw["spec"]["holderIdentity"], "candidate-a");

    // A stops renewing; once expired, B takes over and the transition is counted.
    let takeover = t(200_000_001);
    assert_eq!(b.try_acquire_or_renew(takeover).await?, Outcome::Acquired);
    let raw = expect_times(&client, takeover, takeover).await?;
    assert_eq!(raw["spec"]["holderIdentity"], "candidate-b");
    assert_eq!(raw["spec"]["leaseTransitions"], 1);
    assert_eq!(
        a.try_acquire_or_renew(takeover + SignedDuration::from_secs(1))
            .await?,
        Outcome::HeldBy("candidate-b".to_owned())
    );

    // Typed round trip as well.
    let lease = a.read().await?.context("lease vanished")?;
    let spec = lease.spec.context("lease without spec")?;
    assert_eq!(spec.acquire_time, Some(MicroTime(takeover)));
    assert_eq!(spec.renew_time, Some(MicroTime(takeover)));
    Ok(())
}
